/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sibling_stop=1, in process through vhost-user: two devices whose front
 * ends are the same process (one VM's two NICs: every front end of this
 * test is this process).
 *
 *   - the first device stopped while both log (a migration's pause) has the
 *     other one suspend and query its queues at once, before any message
 *     reaches it; the other's own GET_VRING_BASEs then send no command and
 *     return the bases the guest saw consumed, its dirty log complete;
 *   - a device stopped ahead whose own stop never comes runs again after
 *     MLX5_LM_STOP_AHEAD_MS, its frames flow, its later stop is a normal one;
 *   - a device whose front end is another process is never asked;
 *   - nothing is stopped ahead without dirty logging on the other device, or
 *     without sibling_stop on it, or when vhost calls dev_close for a new
 *     memory table rather than a GET_VRING_BASE, or for a teardown after a
 *     GET_VRING_BASE that vhost refused; a sibling whose DRIVER_OK is
 *     still queued on its worker is left to it;
 *   - at every removal the emulator finds nothing alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lm_harness.h"
#include "mlx5_lm_test.h"
#include "prm.h"
#include "rte_pmd_mlx5_lm.h"

#define MIB (UINT64_C(1) << 20)
#define PAIRS 2
#define RINGS (2 * PAIRS)
/* MLX5_LM_STOP_AHEAD_MS of the driver (mlx5_lm.h). */
#define STOP_AHEAD_MS 500
#define ARGS "queues=2,workers=2,mr_chunk_mb=16,mr_gc_ms=50,sibling_stop=1"

static const struct vu_mem_region layout[] = {
	{ .gpa = 0, .size = 32 * MIB, .offset = 0 },
};

struct nic {
	struct lmh_dev d;
	struct vu_mem *m;
	struct vu_guest *g;
	struct vu_client *c;
	struct vu_log *log;
	struct lmh_trace t;
};

/*
 * Probed (on profile, a file of tests/profiles/, or the fast one), its front
 * end connected and its DRIVER_OK sent (held: not waited for).
 */
static void
nic_start_on(struct nic *n, unsigned int sock, const char *profile, const char *args,
	     bool held)
{
	struct vu_guest_cfg cfg = { .queue_pairs = PAIRS, .ring_size = 256 };
	char path[512];

	memset(n, 0, sizeof(*n));
	if (profile != NULL) {
		snprintf(path, sizeof(path), "%s/%s", TEST_PROFILES_DIR, profile);
		assert_int_equal(lmh_probe_profile(&n->d, (int)sock, path, args), 0);
	} else {
		assert_int_equal(lmh_probe(&n->d, (int)sock, args), 0);
	}
	assert_int_equal(vu_mem_create(&n->m, 32 * MIB, layout, 1), 0);
	assert_int_equal(vu_guest_create(&n->g, n->m, &cfg), 0);
	lmh_trace_open(&n->t, n->d.trace);
	assert_non_null(n->c = lmh_fe_connect(sock));
	/* A test seam: the device's worker takes no configuration until let go. */
	if (held)
		mlx5_lm_worker_hold(n->d.dev, 1);
	assert_int_equal(vu_start_device(n->c, n->g, NULL), 0);
}

static void
nic_start(struct nic *n, unsigned int sock, const char *args, bool held)
{
	nic_start_on(n, sock, NULL, args, held);
}

static void
nic_up_on(struct nic *n, unsigned int sock, const char *profile, const char *args)
{
	nic_start_on(n, sock, profile, args, false);
	assert_true(lmh_wait_running(&n->d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(n->g, (1u << PAIRS) - 1, 64, 3000));
}

static void
nic_up(struct nic *n, unsigned int sock, const char *args)
{
	nic_up_on(n, sock, NULL, args);
}

/* Dirty logging on, as a migration's first pass turns it on; set_features runs after the ack. */
static void
nic_log_on(struct nic *n)
{
	size_t mark = lmh_log_mark();

	assert_int_equal(vu_log_create(&n->log, vu_mem_gpa_end(n->m)), 0);
	assert_int_equal(vu_set_log(n->c, n->log), 0);
	assert_true(lmh_wait_log(mark, "dirty-page logging on", LMH_DEADLINE_MS));
	lmh_barrier(&n->d);
	vu_guest_dirty_mark(n->g);
}

/* One VM's two NICs (b on b_profile, or the fast one), both running and logging. */
static void
vm_up_logging(struct nic *a, struct nic *b, const char *b_profile)
{
	nic_up(a, 0, ARGS);
	nic_up_on(b, 1, b_profile, ARGS);
	nic_log_on(a);
	nic_log_on(b);
}

/* Both NICs running and logging, frames through both since logging began. */
static void
vm_up_logging_traffic(struct nic *a, struct nic *b)
{
	vm_up_logging(a, b, NULL);
	assert_true(lmh_traffic(a->g, (1u << PAIRS) - 1, 64, 3000));
	assert_true(lmh_traffic(b->g, (1u << PAIRS) - 1, 64, 3000));
}

static void
nic_down(struct nic *n, unsigned int sock)
{
	vu_disconnect(n->c);
	assert_true(lmh_wait_closed(sock));
	assert_true(lmh_wait_restored(&n->d));
	lmh_trace_free(&n->t);
	vu_guest_destroy(n->g);
	vu_mem_destroy(n->m);
	if (n->log != NULL)
		vu_log_destroy(n->log);
	assert_int_equal(lmh_remove(&n->d), 0);
}

static bool
is_suspend_or_query(const struct lmh_cmd *c, const void *arg)
{
	const uint8_t *obj;

	(void)arg;
	if (!lmh_cmd_is_vq(c) || c->status != 0)
		return false;
	if (c->opcode == PRM_CMD_QUERY_GENERAL_OBJECT)
		return true;
	if (c->opcode != PRM_CMD_MODIFY_GENERAL_OBJECT)
		return false;
	obj = PRM_CADDR(virtq_cmd, c->in, obj);
	return (PRM_GET(virtio_net_q, obj, modify_field_select) & PRM_VIRTQ_MODIFY_STATE) &&
	       PRM_GET(virtio_net_q, obj, state) == PRM_VIRTQ_STATE_SUSPEND;
}

static bool
is_vq_create(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return lmh_cmd_is_vq(c) && c->opcode == PRM_CMD_CREATE_GENERAL_OBJECT && c->status == 0;
}

/* Bounded wait until every ring of n's device is in state. */
static bool
wait_states(struct nic *n, int state)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	unsigned int q;

	for (;;) {
		for (q = 0; q < RINGS; q++)
			if (lmh_vq_state(&n->d, q) != state)
				break;
		if (q == RINGS)
			return true;
		if (lmh_now_ms() > end) {
			printf("  %s: ring %u in state %d, not %d\n", n->d.name, q,
			       lmh_vq_state(&n->d, q), state);
			return false;
		}
		lmh_tick();
	}
}

/* Bases equal what the guest saw the device consume (split rings). */
static void
check_bases(struct nic *n, const uint32_t *bases)
{
	struct vu_guest_stats st;
	unsigned int q;

	for (q = 0; q < PAIRS; q++) {
		vu_guest_stats(n->g, (int)q, &st);
		assert_int_equal(bases[2 * q], (uint32_t)(st.rx_received & 0xffff));
		assert_int_equal(bases[2 * q + 1],
				 (uint32_t)(vu_guest_tx_sent(n->g, (int)q) & 0xffff));
	}
}

static void
check_dirty_log(struct nic *n)
{
	int64_t written;

	assert_int_equal(lmh_dirty_pages_missing(n->g, n->log, &written), 0);
	assert_true(written > 0);
}

/* Nothing of b stopped since its trace's mark: no SUSPEND nor QUERY, its queues run. */
static void
check_not_stopped(struct nic *b, size_t mark)
{
	lmh_barrier(&b->d);
	assert_int_equal(lmh_trace_sync(&b->t), 0);
	assert_int_equal(lmh_trace_count(&b->t, mark, is_suspend_or_query, NULL), 0);
	assert_true(wait_states(b, PRM_VIRTQ_STATE_RDY));
	assert_true(lmh_traffic(b->g, (1u << PAIRS) - 1, 64, 3000));
}

static void
test_first_stop_of_a_logging_vm_stops_its_sibling_ahead(void **state)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t mark, lmark;

	(void)state;
	vm_up_logging_traffic(&a, &b);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	lmark = lmh_log_mark();
	/* The VM pauses: its front end stops the first NIC, ring by ring. */
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	check_bases(&a, bases);
	/* The second NIC's queues stop without a message of its own. */
	assert_true(lmh_wait_log(lmark, "queues stopped ahead in", LMH_DEADLINE_MS));
	assert_true(wait_states(&b, PRM_VIRTQ_STATE_SUSPEND));
	assert_true(lmh_trace_count(&b.t, mark, is_suspend_or_query, NULL) >= RINGS);
	/* Its own stop then sends nothing: the bases were handed to vhost already. */
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	assert_int_equal(vu_stop_device(b.c, bases, RINGS), 0);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	assert_int_equal(lmh_trace_count(&b.t, mark, is_suspend_or_query, NULL), 0);
	assert_true(lmh_log_has(lmark,
				"(its queues were stopped ahead, at a sibling device's stop)"));
	check_bases(&b, bases);
	check_dirty_log(&a);
	check_dirty_log(&b);
	/* Past the deadline nothing resumes a device that was stopped. */
	assert_false(lmh_wait_log(lmark, "queues stopped ahead resumed",
				  2 * STOP_AHEAD_MS));
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/* How many log lines since mark hold needle. */
static unsigned int
log_count(size_t mark, const char *needle)
{
	char *all = lmh_log_since(mark), *p = all;
	unsigned int n = 0;

	while (p != NULL && (p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	free(all);
	return n;
}

/*
 * The second NIC's own stop comes before its worker got to the stop ahead
 * that the first one's asked for (a worker held here, a busy one in QEMU's
 * e2e run): it is not the VM's first stop, and asks nobody in turn.
 */
static void
test_a_sibling_asked_already_asks_nobody(void **state)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t lmark;

	(void)state;
	vm_up_logging_traffic(&a, &b);
	mlx5_lm_worker_hold(b.d.dev, 2);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	assert_int_equal(vu_stop_device(b.c, bases, RINGS), 0);
	check_bases(&b, bases);
	mlx5_lm_worker_hold(b.d.dev, 0);
	lmh_barrier(&b.d);
	assert_int_equal(log_count(lmark, "asked to stop ahead"), 1);
	assert_true(lmh_log_line_has_all(lmark, (const char *const[]){ a.d.name,
				"1 other devices of front end pid", NULL }));
	assert_false(lmh_log_has(lmark, "queues stopped ahead in"));
	check_dirty_log(&a);
	check_dirty_log(&b);
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/*
 * The second NIC's stop ahead fails inside the VM's pause (a SUSPEND the
 * device refuses): what it had suspended runs again, and its own stop,
 * which follows, suspends and queries everything itself. It is not the
 * VM's first stop: it asks nobody in turn (the first NIC, stopped, would
 * be asked again).
 */
static void
test_a_sibling_whose_stop_ahead_fails_is_stopped_by_its_own_stop(void **state)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t mark, lmark;

	(void)state;
	vm_up_logging_traffic(&a, &b);
	/* The second SUSPEND of the stop ahead is refused. */
	assert_int_equal(lmh_fault_inject(&b.d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 2, PRM_STATUS_NO_RESOURCES, 0), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	check_bases(&a, bases);
	assert_true(lmh_wait_log(lmark, "a queue could not be suspended", LMH_DEADLINE_MS));
	assert_false(lmh_log_has(lmark, "queues stopped ahead in"));
	assert_true(wait_states(&b, PRM_VIRTQ_STATE_RDY));
	/* Its own stop: every queue suspended and queried by it, the bases right. */
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	assert_int_equal(vu_stop_device(b.c, bases, RINGS), 0);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	assert_true(lmh_trace_count(&b.t, mark, is_suspend_or_query, NULL) >= RINGS);
	assert_true(wait_states(&b, PRM_VIRTQ_STATE_SUSPEND));
	check_bases(&b, bases);
	assert_true(lmh_log_line_has_all(lmark, (const char *const[]){ b.d.name,
				": stopped in", "idle split rings needed no QUERY", NULL }));
	/* Asked once, by the first NIC's stop. */
	assert_int_equal(log_count(lmark, "asked to stop ahead"), 1);
	assert_true(lmh_log_line_has_all(lmark, (const char *const[]){ a.d.name,
				"1 other devices of front end pid", NULL }));
	check_dirty_log(&a);
	check_dirty_log(&b);
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/* b_profile: NULL (SUSPEND -> RDY) or a device that re-creates instead (no freeze_to_rdy). */
static void
never_comes(const char *b_profile)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t mark, lmark;

	vm_up_logging(&a, &b, b_profile);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	lmark = lmh_log_mark();
	/* Only the first NIC stops (its guest reset it while the VM migrates). */
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	assert_true(lmh_wait_log(lmark, "queues stopped ahead in", LMH_DEADLINE_MS));
	assert_true(lmh_wait_log(lmark, "queues stopped ahead resumed (4): its own stop did "
				 "not come", LMH_DEADLINE_MS));
	assert_true(wait_states(&b, PRM_VIRTQ_STATE_RDY));
	/* Resumed by SUSPEND -> RDY, or re-created where the device cannot. */
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	assert_int_equal(lmh_trace_count(&b.t, mark, is_vq_create, NULL),
			 b_profile != NULL ? RINGS : 0);
	/* It runs: frames flow, and its later stop is a normal one. */
	vu_guest_dirty_mark(b.g);
	assert_true(lmh_traffic(b.g, (1u << PAIRS) - 1, 64, 3000));
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(b.c, bases, RINGS), 0);
	assert_true(lmh_log_has(lmark, "idle split rings needed no QUERY"));
	check_bases(&b, bases);
	check_dirty_log(&b);
	nic_down(&b, 1);
	nic_down(&a, 0);
}

static void
test_a_sibling_whose_stop_never_comes_runs_again(void **state)
{
	(void)state;
	never_comes(NULL);
	never_comes("caps-no-freeze.json");
}

/*
 * The second NIC logs or not, has sibling_stop or not: untouched by the
 * first's stop. Asked (same process, the devarg) but not logging, it says
 * so; without the devarg it is not asked at all.
 */
static void
untouched(const char *b_args, bool b_logs)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t mark, lmark;

	nic_up(&a, 0, ARGS);
	nic_up(&b, 1, b_args);
	nic_log_on(&a);
	if (b_logs)
		nic_log_on(&b);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	if (b_logs)
		assert_false(lmh_log_has(lmark, "asked to stop ahead"));
	else
		assert_true(lmh_wait_log(lmark, "does not log dirty pages (not migrating)",
					 LMH_DEADLINE_MS));
	check_not_stopped(&b, mark);
	assert_false(lmh_log_has(lmark, "queues stopped ahead"));
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/*
 * vhost calls dev_close for a new memory table of a running device too (memory
 * hot-plugged while migrating): that stops the device, and says nothing of
 * the VM's pause.
 */
static void
test_a_memory_table_change_stops_no_sibling(void **state)
{
	struct vu_mem *other;
	struct nic a, b;
	size_t mark, lmark;

	(void)state;
	vm_up_logging(&a, &b, NULL);
	assert_int_equal(vu_mem_create(&other, 32 * MIB, layout, 1), 0);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_mem_table(a.c, other), 0);
	lmh_barrier(&a.d);
	/* The first NIC was stopped by it (vhost's dev_close), the second one not asked. */
	assert_true(lmh_log_line_has_all(lmark, (const char *const[]){ a.d.name, ": stopped in",
								       NULL }));
	assert_false(lmh_log_has(lmark, "asked to stop ahead"));
	check_not_stopped(&b, mark);
	nic_down(&b, 1);
	nic_down(&a, 0);
	vu_mem_destroy(other);
}

/*
 * A GET_VRING_BASE that vhost refuses (an fd attached: it takes none) never
 * reaches the driver's dev_close, nor the vetting's post-handler: the teardown
 * that follows (vhost drops the connection) is not a stop, and stops no sibling.
 */
static void
test_a_refused_get_vring_base_stops_no_sibling(void **state)
{
	const uint32_t ring0[2] = { 0, 0 };
	struct nic a, b;
	size_t mark, lmark;
	int fd;

	(void)state;
	vm_up_logging(&a, &b, NULL);
	assert_int_equal(lmh_trace_sync(&b.t), 0);
	mark = lmh_trace_mark(&b.t);
	lmark = lmh_log_mark();
	assert_true((fd = eventfd(0, EFD_CLOEXEC)) >= 0);
	assert_int_equal(vu_send_raw(a.c, VU_GET_VRING_BASE, VU_FLAG_VERSION, ring0,
				     sizeof(ring0), &fd, 1), 0);
	close(fd);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&a.d));
	assert_true(lmh_log_has(lmark, "GET_VRING_BASE (request 11) with 1 fd(s), which it never "
				"carries"));
	assert_false(lmh_log_has(lmark, "asked to stop ahead"));
	check_not_stopped(&b, mark);
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/*
 * A sibling whose DRIVER_OK is queued on its worker when the stop ahead is
 * posted: the worker takes the stop ahead first, and waiting there for the
 * configuration (which only it can run) would hold it, and vhost's thread
 * at the device's next message, for ever. It is left to its configuration.
 */
static void
test_a_sibling_being_configured_is_left_to_its_configuration(void **state)
{
	uint32_t bases[RINGS];
	struct nic a, b;
	size_t lmark;

	(void)state;
	nic_up(&a, 0, ARGS);
	nic_log_on(&a);
	nic_start(&b, 1, ARGS, true);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	assert_true(lmh_log_has(lmark, "1 other devices of front end pid"));
	mlx5_lm_worker_hold(b.d.dev, 0);
	assert_true(lmh_wait_running(&b.d, LMH_DEADLINE_MS));
	assert_false(lmh_log_has(lmark, "queues stopped ahead in"));
	assert_true(lmh_traffic(b.g, (1u << PAIRS) - 1, 64, 3000));
	/* Nothing was stopped ahead: its own stop, logging, is a first one and asks. */
	nic_log_on(&b);
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(b.c, bases, RINGS), 0);
	assert_true(lmh_log_line_has_all(lmark, (const char *const[]){ b.d.name,
				"1 other devices of front end pid", NULL }));
	nic_down(&b, 1);
	nic_down(&a, 0);
}

/* Bounded read of fd until needle is in what came (NUL-terminated in buf). */
static bool
read_until(int fd, const char *needle, char *buf, size_t len)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	size_t got = 0;

	buf[0] = '\0';
	while (strstr(buf, needle) == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - lmh_now_ms();
		ssize_t n;

		if (left <= 0 || got + 1 >= len || poll(&p, 1, (int)left) <= 0)
			return false;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return true;
}

/*
 * The second NIC's front end is another process (peer_frontend, beside this
 * program): the first NIC's stop, logging, asks nothing of it - where the
 * same process, not logging, is asked (untouched() below).
 */
static void
test_another_processs_device_is_never_asked(void **state)
{
	char exe[PATH_MAX], fe[PATH_MAX + 16], out[512];
	posix_spawn_file_actions_t fa;
	int in_p[2], out_p[2], ws;
	uint32_t bases[RINGS];
	struct lmh_dev bd;
	struct nic a;
	size_t lmark;
	ssize_t n;
	pid_t pid;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(fe, sizeof(fe), "%s/peer_frontend", dirname(exe));
	nic_up(&a, 0, ARGS);
	nic_log_on(&a);
	memset(&bd, 0, sizeof(bd));
	assert_int_equal(lmh_probe(&bd, 1, ARGS), 0);
	assert_int_equal(pipe2(in_p, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out_p, O_CLOEXEC), 0);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, in_p[0], 0), 0);
	assert_int_equal(posix_spawn_file_actions_adddup2(&fa, out_p[1], 1), 0);
	assert_int_equal(posix_spawn_file_actions_addclosefrom_np(&fa, 3), 0);
	assert_int_equal(posix_spawn(&pid, fe, &fa, NULL,
				     (char *const[]){ fe, (char *)lmh_sock(1), (char *)"1", NULL },
				     environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	lmh_conn_opened(1);
	close(in_p[0]);
	close(out_p[1]);
	assert_true(read_until(out_p[0], "peer_frontend: started", out, sizeof(out)));
	assert_true(lmh_wait_running(&bd, LMH_DEADLINE_MS));
	lmark = lmh_log_mark();
	assert_int_equal(vu_stop_device(a.c, bases, RINGS), 0);
	assert_false(lmh_log_has(lmark, "asked to stop ahead"));
	assert_int_equal(lmh_vq_state(&bd, 0), PRM_VIRTQ_STATE_RDY);
	/* It runs its round (one frame through the device, both calls signalled). */
	assert_true(write(in_p[1], "go\n", 3) == 3);
	assert_true(read_until(out_p[0], "each signalled on both call eventfds", out,
			       sizeof(out)));
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	close(in_p[1]);
	close(out_p[0]);
	assert_true(lmh_wait_closed(1));
	assert_true(lmh_wait_restored(&bd));
	assert_int_equal(lmh_remove(&bd), 0);
	nic_down(&a, 0);
}

static void
test_siblings_without_logging_or_the_devarg_are_untouched(void **state)
{
	(void)state;
	/* Not logging: not migrating, whatever the first NIC does. */
	untouched(ARGS, false);
	/* Logging, but not asked to stop ahead. */
	untouched("queues=2,workers=2,mr_chunk_mb=16,mr_gc_ms=50", true);
}

LMH_TEST_MAIN("test-sibling-stop", 2, "sibling_stop", NULL, NULL,
	cmocka_unit_test(test_first_stop_of_a_logging_vm_stops_its_sibling_ahead),
	cmocka_unit_test(test_a_sibling_whose_stop_never_comes_runs_again),
	cmocka_unit_test(test_a_sibling_asked_already_asks_nobody),
	cmocka_unit_test(test_a_sibling_whose_stop_ahead_fails_is_stopped_by_its_own_stop),
	cmocka_unit_test(test_a_memory_table_change_stops_no_sibling),
	cmocka_unit_test(test_a_refused_get_vring_base_stops_no_sibling),
	cmocka_unit_test(test_another_processs_device_is_never_asked),
	cmocka_unit_test(test_a_sibling_being_configured_is_left_to_its_configuration),
	cmocka_unit_test(test_siblings_without_logging_or_the_devarg_are_untouched))
