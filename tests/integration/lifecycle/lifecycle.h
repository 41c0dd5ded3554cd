/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fixture of test_lifecycle (fixture.c): the queue lifecycle of the
 * vdpa_mlx5_lm PMD, proved in one process through the shared harness
 * (lm_harness.h). The PMD is linked statically with EAL and runs on an
 * emulated ConnectX (emu=fast), or, with LM_BACKEND=rdma under
 * tools/with-emulated-rdma, on the emulated rdma-core through its rdma
 * back end (ibdev=mlx5_<i>, profile fast; meson test lifecycle_rdma).
 * DPDK's vhost library serves a vhost-user socket for it; the built-in
 * front end (app/test-lm/vu) drives that socket like QEMU and its guest
 * virtio-net driver sends frames that the emulated data path loops back.
 * What the driver asked of the device is read from the DevX trace
 * (lmh_trace: each command with its input mailbox, virtqs by queue
 * index), what the device holds from the emulator's test hooks (emu=:
 * directly; rdma: through the library's control socket, lmh_vq_state,
 * lmh_live, lmh_fault_inject, lmh_vq_force_error).
 *
 * Every test probes its own device, attaches it to the one socket that is
 * registered for the whole run (DPDK's vhost thread takes up to a second to
 * serve a newly registered socket), and at teardown removes the device and
 * checks that the emulator found no object alive (rdma: the library's
 * summary line for the closed device).
 *
 * Every wait is a deadline on a condition: a trace line, a log line, a
 * vhost callback counter or a driver state flag.
 *
 * One file per phase of the driver, each running its tests as one cmocka
 * group (main.c runs them all): conf.c (DRIVER_OK), rings.c (rings
 * enabled and disabled, fds changed), stop.c (stop, restore, removal),
 * recovery.c (queues in ERR), async.c (the asynchronous configuration and
 * what races it), logging.c (dirty-page logging), threads.c (the driver's
 * threads and fds), umem.c (queues created after the firmware changed the
 * umem parameters).
 */
#ifndef TEST_LIFECYCLE_H
#define TEST_LIFECYCLE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "prm.h"
#include "lm_harness.h"

#define DEADLINE_MS LMH_DEADLINE_MS
#define MAX_QP 4
#define MAX_RINGS (2 * MAX_QP)

/* What a fresh split ring's first MODIFY must carry: the rest equals a blank queue. */
#define BITS_FRESH (PRM_VIRTQ_MODIFY_STATE | PRM_VIRTQ_MODIFY_ADDRS | PRM_VIRTQ_MODIFY_Q_MKEY)
#define BITS_INDEX (PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX | PRM_VIRTQ_MODIFY_HW_USED_INDEX)

/* ---- one test's device, front end and guest ---- */
struct tc {
	struct lmh_dev d;
	bool probed;
	struct lmh_trace tr;
	struct vu_mem *mem;
	struct vu_guest *g[2];
	struct vu_client *c;
};

/* cmocka setup and teardown of every test taking a struct tc as its state. */
int tc_setup(void **state);
int tc_teardown(void **state);
#define TC_TEST(f) cmocka_unit_test_setup_teardown(f, tc_setup, tc_teardown)

bool tc_wait_log(size_t from, const char *needle);
/*
 * Probe a device with `queues` pre-created pairs of 256 entries and attach
 * it to the socket (mr_gc_ms=0 unless extra gives one).
 */
void tc_probe_profile(struct tc *t, const char *profile, unsigned int queues, const char *extra);
void tc_probe(struct tc *t, unsigned int queues, const char *extra);
/* Guest memory (1 GiB at GPA 0, sparse) and up to two guests sharing it. */
struct vu_guest *tc_guest(struct tc *t, unsigned int slot, unsigned int pairs, uint16_t size,
			  bool packed);
void tc_connect(struct tc *t);
/* Close the front end and wait until vhost (and so the driver) is done with it. */
void tc_disconnect(struct tc *t);
bool tc_running(struct tc *t);
/* dev_conf runs after vhost replied to DRIVER_OK: wait until it has configured. */
void tc_wait_running(struct tc *t);
/* Probe with `pairs` pairs, a guest of as many 256-entry split rings, connect. */
struct vu_guest *tc_attach(struct tc *t, unsigned int pairs, const char *extra);
/* tc_attach, then DRIVER_OK: the device is running when it returns. */
struct vu_guest *tc_start(struct tc *t, unsigned int pairs, const char *extra);
/* Wait for the driver's vhost-facing operation in progress to return (lmh_barrier). */
void tc_barrier(struct tc *t);
/* Queues go back to blank in the background after dev_close: wait for it. */
void tc_wait_restored(struct tc *t);
uint32_t tc_vq_id(struct tc *t, unsigned int i);
/* The state the emulated device holds for queue i (QUERY, not traced); -1 if none. */
int tc_vq_state(struct tc *t, unsigned int i);
/* Objects alive on the device, as many as right after probe. */
void tc_check_live_as_probed(struct tc *t);
/* Remove the device: zero live objects at teardown. */
void tc_remove(struct tc *t);

/* ---- the device's DevX trace (lmh_trace; unreadable or not JSON fails the test) ---- */
void tc_sync(struct tc *t);
size_t tc_mark(struct tc *t);
/* Commands since from satisfying p. */
unsigned int tc_count(struct tc *t, size_t from, lmh_trace_pred p, const void *arg);
/* Wait until at least `want` commands since `from` satisfy p. */
bool tc_wait_trace(struct tc *t, size_t from, lmh_trace_pred p, const void *arg,
		   unsigned int want);
/* A virtq command's object and queue contexts, in its mailbox. */
const void *tc_vq_obj(const struct lmh_cmd *c);
const void *tc_vq_q(const struct lmh_cmd *c);
uint64_t tc_mod_bits(const struct lmh_cmd *c);
unsigned int tc_mod_state(const struct lmh_cmd *c);
/* A MODIFY that moves a queue to `state` (STATE bit set), successfully. */
bool tc_is_state_modify(const struct lmh_cmd *c, unsigned int state);
/* Predicates: arg is a queue index (const int *), NULL for any queue. */
bool tc_p_vq_create(const struct lmh_cmd *c, const void *qidx);
bool tc_p_vq_destroy(const struct lmh_cmd *c, const void *qidx);
bool tc_p_vq_modify(const struct lmh_cmd *c, const void *qidx);
bool tc_p_vq_any(const struct lmh_cmd *c, const void *qidx);
bool tc_p_rdy(const struct lmh_cmd *c, const void *qidx);
bool tc_p_suspend(const struct lmh_cmd *c, const void *qidx);
bool tc_p_failed_vq_cmd(const struct lmh_cmd *c, const void *arg);
/* arg: the opcode (const uint16_t *). */
bool tc_p_opcode(const struct lmh_cmd *c, const void *opcode);
/* A successful MODIFY_RQT of *(const unsigned int *)n entries. */
bool tc_p_rqt_size(const struct lmh_cmd *c, const void *n);
/* Entries of a MODIFY_RQT command. */
unsigned int tc_rqt_size(const struct lmh_cmd *c);
uint32_t tc_rqt_entry(const struct lmh_cmd *c, unsigned int i);
/* The last successful MODIFY_RQT since from, or NULL. */
const struct lmh_cmd *tc_last_rqt_modify(struct tc *t, size_t from);

/* ---- front end ---- */
/* Which guest ring backs device ring i (rings of several guests may be mixed). */
struct tc_ring {
	struct vu_guest *g;
	unsigned int ring;
	uint64_t bad_desc;      /* != 0: send this front-end address as the descriptor ring */
};

/* Device ring i backed by guest g's ring i, for i < n. */
void tc_rings_of(struct tc_ring *rings, unsigned int n, struct vu_guest *g);
uint64_t tc_fe_features(struct tc *t, bool packed);
/* SET_VRING_ADDR of device ring i: the addresses of guest g's ring i. */
void tc_fe_ring_addr(struct tc *t, unsigned int i, struct vu_guest *g);
/* QEMU's start sequence, ring by ring; the rings in enable_mask enabled before DRIVER_OK. */
void tc_fe_start(struct tc *t, const struct tc_ring *rings, unsigned int n,
		 uint32_t enable_mask);
/* GET_VRING_BASE on rings 0..n-1, as QEMU stops a device. */
void tc_fe_stop(struct tc *t, unsigned int n, uint32_t *bases);

/* ---- traffic (lm_harness.c; here a failure says where each pair stands) ---- */
void tc_traffic_fail(struct vu_guest *g, uint32_t mask);
/* npp more frames on every pair in mask, each back, every TX completed, nothing bad. */
void tc_traffic(struct vu_guest *g, uint32_t mask, unsigned int npp);
/* Poll (no kick) until no TX chain of the pairs in mask is in flight (bounded). */
bool tc_tx_complete(struct vu_guest *g, uint32_t mask);
/* Wait until nothing sent on the pairs in mask is missing or in flight (no new frame). */
void tc_traffic_settle(struct vu_guest *g, uint32_t mask);
/* Traffic in a thread, while the main thread drives vhost-user messages. */
void tc_pump_start(struct lmh_pump *p, struct vu_guest *g, uint32_t mask);
void tc_pump_stop(struct lmh_pump *p);
/*
 * npp frames on each of the guest's pairs of 256-entry split rings, the
 * device stopped (every ring's base), the bases what the guest saw consumed.
 */
void tc_traffic_and_stop(struct tc *t, struct vu_guest *g, unsigned int pairs, unsigned int npp);
/* Bases of every ring equal what the guest saw the device consume. */
void tc_check_bases(struct vu_guest *g, const uint32_t *bases, unsigned int pairs, bool packed,
		    uint16_t size);

/* ---- checks and sequences more than one phase uses ---- */
/* Since from, the stop suspended then queried every running queue, nothing else. */
void tc_check_close_suspends_then_queries(struct tc *t, size_t from, unsigned int nrings,
					  struct vu_guest *g, bool packed);
/*
 * The next front end on the same device, after the last one stopped it: the
 * guest's rings and eventfds fresh, connect, DRIVER_OK; running when it
 * returns. The trace mark before DRIVER_OK.
 */
size_t tc_restart_front_end(struct tc *t, struct vu_guest *g);
/* A new front end on the same device: DRIVER_OK makes every ring RDY once, traffic flows. */
void tc_reconnect_and_run(struct tc *t, struct vu_guest *g, unsigned int pairs);

/*
 * ---- isolated tests ----
 * Run one test of main.c's isolated group in a fresh process of this
 * program: a driver crash in a vhost or pool thread would otherwise end
 * the whole run.
 */
void tc_run_isolated(const char *name);
/* In the isolated child, first: -1 (named) if it holds a socket of its parent's. */
int tc_check_inherited_fds(void);

/* ---- the phases (one cmocka group each); the isolated tests main.c runs ---- */
int tc_run_conf(void);
int tc_run_rings(void);
int tc_run_stop(void);
int tc_run_recovery(void);
int tc_run_async(void);
int tc_run_logging(void);
int tc_run_threads(void);
int tc_run_umem(void);

void isolated_failed_recreation_two_pairs(void **state);
void isolated_failed_recreation_single_pair(void **state);
void isolated_failed_rx_recovery(void **state);

#endif /* TEST_LIFECYCLE_H */
