/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared harness of the in-process integration tests (test_lifecycle,
 * test_faults, test_hostile, test_soak, test_events, test_caps): the PMD
 * linked statically with EAL and vhost in the test process, emulated
 * devices, vhost-user sockets served by DPDK, the built-in front end and
 * guest (app/test-lm/vu), every DPDK log line captured, the DevX trace read
 * back, bounded waits only.
 *
 * Two ways into the device: emu=<profile> (the default), or,
 * with LM_BACKEND=rdma in the environment and the program run under
 * tools/with-emulated-rdma, the PMD's rdma back end on the emulated
 * rdma-core: ibdev=mlx5_<i> with the same other devargs. The emulator is
 * then inside that library: its test hooks (live objects, queue state,
 * fault arming, forced queue errors) go through the control socket the
 * library serves for each open device (MLX5_LM_ERDMA_CONTROL), and
 * removal's leak count comes from the library's summary of the closed
 * device (MLX5_LM_ERDMA_SUMMARY, its leak lines put into the log), which
 * the wrapper also turns into exit status 3.
 */
#ifndef LM_HARNESS_H
#define LM_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"
#include "mlx5_lm.h"
#include "vu_client.h"
#include "vu_guest.h"

#define LMH_DEADLINE_MS 10000
#define LMH_MAX_SOCKS 4

/* ---- process ---- */
/*
 * EAL (no hugepages, own file prefix), log capture, and nsocks vhost-user
 * sockets registered at once (DPDK's vhost thread may take a second to
 * serve a new one: register early, reuse). 0 or -1.
 */
int lmh_init(const char *argv0, const char *name, unsigned int nsocks);
/*
 * What a test program's main does first: SIGPIPE ignored (guest frames
 * must not be lost to it when a socket closes), stdout line buffered, the
 * cmocka test filter from filter (NULL: every test), then lmh_init.
 */
int lmh_main_init(const char *argv0, const char *filter, const char *name,
		  unsigned int nsocks);
void lmh_fini(void);
/*
 * A test program's whole main: lmh_main_init (argv[1], if given, the
 * filter), the cmocka group, lmh_fini. The group's result, 1 if the set-up
 * failed. Needs cmocka.h included first; LMH_RUN_MAIN counts the tests.
 */
#ifdef cmocka_unit_test
int lmh_run_main(int argc, char **argv, const char *name, unsigned int nsocks,
		 const char *group, const struct CMUnitTest *tests, size_t ntests,
		 CMFixtureFunction setup, CMFixtureFunction teardown);
#define LMH_RUN_MAIN(argc, argv, name, nsocks, group, tests, setup, teardown) \
	lmh_run_main((argc), (argv), (name), (nsocks), (group), (tests), \
		     sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))
/* A test program's main that runs the cmocka_unit_test()s given after teardown. */
#define LMH_TEST_MAIN(name, nsocks, group, setup, teardown, ...) \
	int \
	main(int argc, char **argv) \
	{ \
		const struct CMUnitTest tests[] = { __VA_ARGS__ }; \
		return LMH_RUN_MAIN(argc, argv, name, nsocks, group, tests, setup, teardown); \
	}
#endif
const char *lmh_sock(unsigned int i);
/*
 * The run's temporary directory (/tmp/<name>-XXXXXX, or inside
 * $LMH_TMPDIR_PARENT for a child process of a test), removed by lmh_fini.
 */
const char *lmh_tmpdir(void);
/* Remove a directory tree (best effort: what cannot be removed stays). */
void lmh_rm_tree(const char *path);
int64_t lmh_now_ms(void);
/* A short pause between two looks at a condition (never a wait on its own). */
void lmh_tick(void);

/* The devices run on the rdma back end (LM_BACKEND=rdma, checked by lmh_init). */
bool lmh_rdma(void);
/*
 * On rdma, a check that needs the emulator itself: print why it is skipped
 * (the same line each time: grep-able) and return true.
 */
bool lmh_skip_on_rdma(const char *check, const char *why);

/* ---- log (every DPDK log line, kept and still printed unless quiet) ---- */
void lmh_log_quiet(bool quiet);
size_t lmh_log_mark(void);
bool lmh_log_has(size_t from, const char *needle);
bool lmh_wait_log(size_t from, const char *needle, int timeout_ms);
/* A line since from containing every needle (NULL-terminated list). */
bool lmh_log_line_has_all(size_t from, const char *const *needles);
/* Copy of the log since from (free it). */
char *lmh_log_since(size_t from);
/* Forget the log kept so far (long runs); earlier marks become invalid. */
void lmh_log_trim(void);

/* ---- vhost connections, per socket ---- */
/* Connections a front end made to socket i (the harness counts them). */
void lmh_conn_opened(unsigned int sock);
/*
 * A front end's connection to socket i, counted (lmh_conn_opened), its
 * replies bounded by LMH_DEADLINE_MS; NULL if it cannot connect in 5 s.
 */
struct vu_client *lmh_fe_connect(unsigned int sock);
/*
 * Every connection made to socket i has been torn down by vhost (bounded):
 * its destroy_connection callback ran and, since vhost calls the driver's
 * dev_cleanup only after that callback and still uses the vDPA device
 * then, the attached device logged "front end disconnected" for each. A
 * device removed before that is a use after free in librte_vhost.
 */
bool lmh_wait_closed(unsigned int sock);

/*
 * New connections get the PMD's message vetting (rte_pmd_mlx5_lm_vhost_vet,
 * as dpdk-test-lm serve registers it) unless turned off, to test what the
 * driver and the device do on their own. On by default.
 */
void lmh_vet(bool on);
/*
 * New connections get a receive timeout of ms for vhost's reads
 * (rte_pmd_mlx5_lm_vhost_msg_timeout, as serve --msg-timeout); 0, the
 * default, leaves DPDK's blocking reads.
 */
void lmh_msg_timeout(unsigned int ms);
/*
 * The application's new_device callback fails (vhost then calls the
 * driver's dev_conf anyway, and never its dev_close).
 */
void lmh_new_device_fails(bool fail);

/* ---- devices ---- */
struct lmh_dev {
	char name[32];
	char trace[PATH_MAX];
	int sock;                 /* attached socket, -1 */
	struct mlx5_lm_dev *dev;
	struct emu_dev *emu;      /* NULL on rdma */
	char ibdev[16];           /* rdma: "mlx5_<i>" */
	long summary_off;         /* rdma: the library's leak summary before probe */
	struct rte_vdpa_device *vdpa;
	unsigned long leaked0;
	unsigned int live0;       /* emulator objects right after probe */
	unsigned int conns;       /* connections made while attached */
	unsigned int cleanups;    /* "front end disconnected" lines seen */
	size_t scan;              /* log offset scanned for them */
};

/*
 * Probe vdpa_mlx5_lmN with "emu=fast,<args>,devx_trace=<tmp>/<name>.trace"
 * (rdma: "ibdev=mlx5_<i>,<args>,devx_trace=..." with the emulated devices
 * taken in turn) and attach it to socket sock (< 0: none). Returns
 * rte_eal_hotplug_add's result; on failure d->dev is NULL.
 */
int lmh_probe(struct lmh_dev *d, int sock, const char *args);
/*
 * The same with emu=<profile> (a built-in name or a path, e.g. tests/profiles/);
 * on rdma the profile the emulated rdma-core gives the device it opens next.
 */
int lmh_probe_profile(struct lmh_dev *d, int sock, const char *profile, const char *args);
/* rdma: the next probe takes prev's RDMA device again (a re-probe of the same function). */
void lmh_reuse_ibdev(const struct lmh_dev *prev);
/*
 * Detach and remove; returns the objects the emulator found alive (>= 0), or < 0
 * (rdma: the device's line in the library's summary; < 0 when there is none).
 */
long lmh_remove(struct lmh_dev *d);
/*
 * After a probe that failed: the objects its device was closed with (emu:
 * the emulator's leak count since; rdma: the library's summary line), or < 0.
 */
long lmh_failed_probe_left(struct lmh_dev *d);
bool lmh_running(struct lmh_dev *d);
bool lmh_wait_running(struct lmh_dev *d, int timeout_ms);
/* Wait for any vhost-facing operation of the driver in progress to return. */
void lmh_barrier(struct lmh_dev *d);
/* Background restore of blank queues after dev_close finished (bounded). */
bool lmh_wait_restored(struct lmh_dev *d);
/*
 * Objects alive on the device: the emulator's count (rdma: asked through the
 * control socket; without one, created and not destroyed in its trace).
 */
unsigned int lmh_live(struct lmh_dev *d);
/*
 * Wait until the device's data path has nothing pending (every doorbell,
 * RDY transition and frame handled): on rdma through the emulated
 * rdma-core's control socket. False on timeout or without a control socket.
 */
bool lmh_dp_idle(struct lmh_dev *d);
/* The virtq object id of ring i (0 if none). */
uint32_t lmh_vq_id(struct lmh_dev *d, unsigned int i);

/*
 * ---- the emulator's test hooks (emu.h), on either back end ----
 * emu=: called on the device's emulator. rdma: the emulator is inside the
 * emulated rdma-core: sent to the control socket it serves for the open
 * device (MLX5_LM_ERDMA_CONTROL/<ibdev>, doc/emulated-rdma.md), which runs
 * the same hook and replies once it has.
 */
/* emu_fault_inject(): the nth next command of opcode (obj_type, 0xffff any) fails. */
int lmh_fault_inject(struct lmh_dev *d, uint16_t opcode, uint16_t obj_type, unsigned int nth,
		     uint8_t status, uint32_t syndrome);
/* emu_event_inject(): event type of the object created by create_opcode (obj_type), id. */
int lmh_event_inject(struct lmh_dev *d, uint16_t create_opcode, uint16_t obj_type, uint32_t id,
		     uint16_t type);
/* emu_virtq_force_error(). 0 or < 0. */
int lmh_vq_force_error(struct lmh_dev *d, uint32_t virtq_id, uint8_t error_type);
/*
 * emu_dev_set_umem_params(): the umem parameters of the virtio emulation
 * caps change, as firmware changes them at runtime (the PF's MTU). 0 or < 0.
 */
int lmh_set_umem_params(struct lmh_dev *d, const uint32_t a[3], const uint32_t b[3]);
/*
 * The device's event channels bounded to depth queued events and their
 * reader held back (emu_evch_hold; rdma: the kernel's list, the control
 * socket's evch_hold) until lmh_evch_release; lmh_evch_overflows: the
 * events dropped so far (< 0: could not be asked).
 */
int lmh_evch_hold(struct lmh_dev *d, unsigned int depth);
int lmh_evch_release(struct lmh_dev *d);
long lmh_evch_overflows(struct lmh_dev *d);
/*
 * The state the device holds for ring i's virtq (a QUERY through the test
 * hook, not traced); -1 when the ring has no object, < -1 when the query failed.
 */
int lmh_vq_state(struct lmh_dev *d, unsigned int i);

/*
 * ---- DevX trace (lm_harness_trace.c) ----
 * The one reader of the driver's trace (devx_trace=, one JSON line per
 * command or operation, the same on either back end), read incrementally:
 * lmh_trace_sync appends the whole lines written since the last call.
 */
struct lmh_cmd {
	char op[40];
	/* UMEM_REG / UMEM_DEREG: 0xa08 / 0xa0a, ROOT_FLOW_CREATE / _DESTROY: 0x936 / 0x938 */
	uint16_t opcode;          /* (as the emulator counts them) */
	uint16_t obj_type;        /* general objects; 0xffff otherwise */
	uint32_t obj_id;
	int status;
	uint32_t syndrome;
	bool is_cmd;              /* a command, umem or root flow operation (not a doorbell) */
	/*
	 * A virtq command (lmh_cmd_is_vq): the queue index its object was
	 * created for, from the CREATE's mailbox; -1 otherwise.
	 */
	int qidx;
	/*
	 * A PRM command's input mailbox as sent (NULL for other lines), followed
	 * by zeroes: a virtq command's layout (PRM_SIZE(virtq_cmd)) read from
	 * any mailbox stays inside.
	 */
	uint8_t *in;
	size_t inlen;
	/* Doorbells (DOORBELL, UAR_DOORBELL) and other operations on an address. */
	uint64_t addr, value;
	/* When it was sent and when it ended, in the tracer's microseconds. */
	uint64_t t_start_us, t_end_us;
};

struct lmh_vq_id {
	uint32_t id;
	int qidx;
};

struct lmh_trace {
	char path[PATH_MAX];
	long off;
	struct lmh_cmd *c;
	size_t n, cap;
	/* Virtq ids created so far and their queue indexes (ids are reused: last wins). */
	struct lmh_vq_id *vq;
	size_t nvq, capvq;
	/* The first failure: the trace could not be read (-errno) or a line was not JSON. */
	int err;
};

void lmh_trace_open(struct lmh_trace *t, const char *path);
/* Read the lines written since the last call: 0, or why not (also kept in t->err). */
int lmh_trace_sync(struct lmh_trace *t);
size_t lmh_trace_mark(struct lmh_trace *t);
void lmh_trace_free(struct lmh_trace *t);
/* A general-object command on a VIRTIO_NET_Q object. */
bool lmh_cmd_is_vq(const struct lmh_cmd *c);
typedef bool (*lmh_trace_pred)(const struct lmh_cmd *c, const void *arg);
/* Entries since from for which p holds, the trace read up to date first. */
unsigned int lmh_trace_count(struct lmh_trace *t, size_t from, lmh_trace_pred p,
			     const void *arg);
/*
 * Virtq CREATEs since from that succeeded: their number in *made; returned,
 * how many of them have a umem N not sized a[N] * queue_size + b[N] exactly
 * (the first one named on stderr). The trace read up to date first.
 */
unsigned int lmh_vq_creates_missized(struct lmh_trace *t, size_t from, const uint32_t a[3],
				     const uint32_t b[3], unsigned int *made);
/* Bounded wait until at least want entries since from satisfy p. */
bool lmh_wait_trace(struct lmh_trace *t, size_t from, lmh_trace_pred p, const void *arg,
		    unsigned int want, int timeout_ms);
/* A command since from whose status is not 0 (bounded wait); its index or -1. */
long lmh_wait_failed_cmd(struct lmh_trace *t, size_t from, int timeout_ms);
/* Name of a general object type. */
const char *lmh_obj_type_name(uint16_t obj_type);

/* ---- traffic (guest frames looped back by the emulated wire) ---- */
/* Send npp frames per pair in mask; true when all came back in time. */
bool lmh_traffic(struct vu_guest *g, uint32_t mask, unsigned int npp, int timeout_ms);

/* A thread pumping frames on a guest until stopped. */
struct lmh_pump {
	struct vu_guest *g;
	uint32_t mask;
	bool stop;              /* atomic */
	void *thread;
};
int lmh_pump_start(struct lmh_pump *p, struct vu_guest *g, uint32_t mask);
/* Stop, then wait until nothing is missing or in flight; true if settled clean. */
bool lmh_pump_stop(struct lmh_pump *p);
uint64_t lmh_rx_received(struct vu_guest *g);
/*
 * Pages the device wrote since vu_guest_dirty_mark() that log does not
 * mark (how many and the first are printed); *written: how many it wrote.
 */
uint64_t lmh_dirty_pages_missing(struct vu_guest *g, const struct vu_log *log, int64_t *written);
/*
 * The same for the pages of the buffers the device filled only, before
 * the stop: the rings' own pages (used ring; packed: the descriptors) are
 * the driver's to mark at the stop (the emulator's firmware records only
 * the buffers, caps dirty_bitmap_logs_rings), so counted as marked here.
 */
uint64_t lmh_dirty_buffers_missing(struct vu_guest *g, const struct vu_log *log,
				   int64_t *written);

/* ---- process figures ---- */
/*
 * How many fds of this process share fd's open file (dups, and copies
 * received over a socket): kcmp(KCMP_FILE). -1 when the kernel has no kcmp.
 */
int lmh_fds_of_file(int fd);
/* The same, with the first max of those fds' numbers in out. */
int lmh_fds_sharing(int fd, int *out, int max);
/* Wait (bounded) until n fds share fd's file; true when so, or when kcmp is missing. */
bool lmh_wait_fds_of_file(int fd, int n);
unsigned int lmh_open_fds(void);
uint64_t lmh_rss_bytes(void);

#endif /* LM_HARNESS_H */
