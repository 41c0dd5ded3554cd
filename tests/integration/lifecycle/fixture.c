/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixture of test_lifecycle's phases: see lifecycle.h. */
#include <dirent.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "lifecycle.h"

extern char **environ;

bool
tc_wait_log(size_t from, const char *needle)
{
	return lmh_wait_log(from, needle, DEADLINE_MS);
}

/* ---- the device's DevX trace -------------------------------------------------- */

void
tc_sync(struct tc *t)
{
	assert_int_equal(lmh_trace_sync(&t->tr), 0);
	assert_int_equal(t->tr.err, 0);
}

size_t
tc_mark(struct tc *t)
{
	tc_sync(t);
	return t->tr.n;
}

unsigned int
tc_count(struct tc *t, size_t from, lmh_trace_pred p, const void *arg)
{
	tc_sync(t);
	return lmh_trace_count(&t->tr, from, p, arg);
}

bool
tc_wait_trace(struct tc *t, size_t from, lmh_trace_pred p, const void *arg, unsigned int want)
{
	bool ok = lmh_wait_trace(&t->tr, from, p, arg, want, DEADLINE_MS);

	assert_int_equal(t->tr.err, 0);
	return ok;
}

const void *
tc_vq_obj(const struct lmh_cmd *c)
{
	return PRM_CADDR(virtq_cmd, c->in, obj);
}

const void *
tc_vq_q(const struct lmh_cmd *c)
{
	return PRM_CADDR(virtq_cmd, c->in, q);
}

uint64_t
tc_mod_bits(const struct lmh_cmd *c)
{
	return PRM_GET(virtio_net_q, tc_vq_obj(c), modify_field_select);
}

unsigned int
tc_mod_state(const struct lmh_cmd *c)
{
	return (unsigned int)PRM_GET(virtio_net_q, tc_vq_obj(c), state);
}

/* c is a virtq command on queue *qidx (any queue when qidx is NULL). */
static bool
on_queue(const struct lmh_cmd *c, const void *qidx)
{
	return lmh_cmd_is_vq(c) && (qidx == NULL || c->qidx == *(const int *)qidx);
}

bool
tc_p_vq_create(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx) && c->opcode == PRM_CMD_CREATE_GENERAL_OBJECT;
}

bool
tc_p_vq_destroy(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx) && c->opcode == PRM_CMD_DESTROY_GENERAL_OBJECT;
}

bool
tc_p_vq_modify(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx) && c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT;
}

bool
tc_p_vq_any(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx);
}

/* A MODIFY that moves a queue to `state` (STATE bit set), successfully. */
bool
tc_is_state_modify(const struct lmh_cmd *c, unsigned int state)
{
	return lmh_cmd_is_vq(c) && c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT &&
	       c->status == 0 && (tc_mod_bits(c) & PRM_VIRTQ_MODIFY_STATE) &&
	       tc_mod_state(c) == state;
}

bool
tc_p_rdy(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx) && tc_is_state_modify(c, PRM_VIRTQ_STATE_RDY);
}

bool
tc_p_suspend(const struct lmh_cmd *c, const void *qidx)
{
	return on_queue(c, qidx) && tc_is_state_modify(c, PRM_VIRTQ_STATE_SUSPEND);
}

bool
tc_p_failed_vq_cmd(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return lmh_cmd_is_vq(c) && c->status != 0;
}

bool
tc_p_opcode(const struct lmh_cmd *c, const void *opcode)
{
	return c->opcode == *(const uint16_t *)opcode;
}

/* Entries of a MODIFY_RQT command. */
unsigned int
tc_rqt_size(const struct lmh_cmd *c)
{
	return (unsigned int)PRM_GET(rqtc, PRM_CADDR(modify_rqt_in, c->in, ctx), rqt_actual_size);
}

uint32_t
tc_rqt_entry(const struct lmh_cmd *c, unsigned int i)
{
	const uint8_t *list = PRM_CADDR(rqtc, PRM_CADDR(modify_rqt_in, c->in, ctx), rq_num);

	return (uint32_t)PRM_GET(rq_num, list + i * PRM_SIZE(rq_num), rq_num);
}

/* The last successful MODIFY_RQT since from, or NULL. */
const struct lmh_cmd *
tc_last_rqt_modify(struct tc *t, size_t from)
{
	size_t i;

	tc_sync(t);
	for (i = t->tr.n; i-- > from;)
		if (t->tr.c[i].opcode == PRM_CMD_MODIFY_RQT && t->tr.c[i].status == 0)
			return &t->tr.c[i];
	return NULL;
}

bool
tc_p_rqt_size(const struct lmh_cmd *c, const void *n)
{
	return c->opcode == PRM_CMD_MODIFY_RQT && c->status == 0 &&
	       tc_rqt_size(c) == *(const unsigned int *)n;
}

/* ---- one test's device, front end and guest -------------------------------- */

int
tc_setup(void **state)
{
	struct tc *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -1;
	t->d.sock = -1;
	*state = t;
	return 0;
}

/*
 * Probe a device with `queues` pre-created pairs of 256 entries and attach
 * it to the socket. mr_gc_ms=0 releases guest memory registrations in the
 * caller, so that the emulator's object count is exact after each step.
 */
void
tc_probe_profile(struct tc *t, const char *profile, unsigned int queues, const char *extra)
{
	char args[256];

	/* mr_gc_ms=0 unless the test gives its own (a key may appear once). */
	snprintf(args, sizeof(args), "queues=%u,workers=4%s%s%s", queues,
		 extra != NULL && strstr(extra, "mr_gc_ms=") != NULL ? "" : ",mr_gc_ms=0",
		 extra != NULL ? "," : "", extra != NULL ? extra : "");
	assert_int_equal(lmh_probe_profile(&t->d, 0, profile, args), 0);
	t->probed = true;
	lmh_trace_open(&t->tr, t->d.trace);
	assert_int_not_equal(t->d.live0, UINT_MAX);
}

void
tc_probe(struct tc *t, unsigned int queues, const char *extra)
{
	tc_probe_profile(t, "fast", queues, extra);
}

/* Guest memory (1 GiB at GPA 0, sparse) and up to two guests sharing it. */
struct vu_guest *
tc_guest(struct tc *t, unsigned int slot, unsigned int pairs, uint16_t size, bool packed)
{
	struct vu_guest_cfg cfg = { .queue_pairs = pairs, .ring_size = size, .packed = packed };

	if (t->mem == NULL)
		assert_int_equal(vu_mem_create_qemu(&t->mem, 1), 0);
	assert_int_equal(vu_guest_create(&t->g[slot], t->mem, &cfg), 0);
	return t->g[slot];
}

void
tc_connect(struct tc *t)
{
	assert_null(t->c);
	assert_int_equal(vu_connect(&t->c, lmh_sock(0), 5000), 0);
	lmh_conn_opened(0);
	vu_set_reply_timeout(t->c, DEADLINE_MS);
}

/*
 * Close the front end and wait until vhost (and so the driver) is done with
 * it: DPDK 22.11 calls destroy_connection before vhost_destroy_device, which
 * still uses the vDPA device (and calls the driver's dev_cleanup), so the
 * harness also waits for the driver's "front end disconnected" line.
 */
void
tc_disconnect(struct tc *t)
{
	if (t->c == NULL)
		return;
	vu_disconnect(t->c);
	t->c = NULL;
	assert_true(lmh_wait_closed(0));
}

bool
tc_running(struct tc *t)
{
	return lmh_running(&t->d);
}

/* dev_conf runs after vhost replied to DRIVER_OK: wait until it has configured. */
void
tc_wait_running(struct tc *t)
{
	if (!lmh_wait_running(&t->d, DEADLINE_MS)) {
		print_error("%s: not running %d ms after DRIVER_OK\n", t->d.name, DEADLINE_MS);
		fail();
	}
}

/*
 * Probe a device with `pairs` queue pairs (tc_probe's extra devargs), a
 * guest of as many pairs with 256-entry split rings, connect.
 */
struct vu_guest *
tc_attach(struct tc *t, unsigned int pairs, const char *extra)
{
	struct vu_guest *g;

	tc_probe(t, pairs, extra);
	g = tc_guest(t, 0, pairs, 256, false);
	tc_connect(t);
	return g;
}

/* tc_attach, then DRIVER_OK: the device is running when it returns. */
struct vu_guest *
tc_start(struct tc *t, unsigned int pairs, const char *extra)
{
	struct vu_guest *g = tc_attach(t, pairs, extra);

	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	return g;
}

/*
 * Every vhost-facing operation of the driver holds dev->lock from start to
 * end: once a command it sent is in the trace, taking the lock waits for
 * that operation to return.
 */
void
tc_barrier(struct tc *t)
{
	lmh_barrier(&t->d);
}

/* Queues go back to blank in the background after dev_close: wait for it. */
void
tc_wait_restored(struct tc *t)
{
	assert_true(lmh_wait_restored(&t->d));
}

uint32_t
tc_vq_id(struct tc *t, unsigned int i)
{
	return lmh_vq_id(&t->d, i);
}

/* The state the emulated device holds for queue i (QUERY, not traced); -1 if none. */
int
tc_vq_state(struct tc *t, unsigned int i)
{
	int st = lmh_vq_state(&t->d, i);

	assert_true(st >= -1);
	return st;
}

/* Objects alive on the device, as many as right after probe. */
void
tc_check_live_as_probed(struct tc *t)
{
	assert_int_equal(lmh_live(&t->d), t->d.live0);
}

void
tc_remove(struct tc *t)
{
	if (!t->probed)
		return;
	t->probed = false;
	/* Zero live objects at teardown: nothing was left for the emulator to reap. */
	assert_int_equal(lmh_remove(&t->d), 0);
}

int
tc_teardown(void **state)
{
	struct tc *t = *state;
	unsigned int i;

	tc_disconnect(t);
	if (t->probed && t->d.dev != NULL)
		tc_wait_restored(t);
	tc_remove(t);
	for (i = 0; i < RTE_DIM(t->g); i++)
		if (t->g[i] != NULL)
			vu_guest_destroy(t->g[i]);
	if (t->mem != NULL)
		vu_mem_destroy(t->mem);
	if (t->tr.path[0] != '\0')
		unlink(t->tr.path);
	lmh_trace_free(&t->tr);
	free(t);
	return 0;
}

/* ---- front end ---------------------------------------------------------------- */

uint64_t
tc_fe_features(struct tc *t, bool packed)
{
	uint64_t f = (1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
		     (1ULL << VU_F_NET_MQ);

	if (packed)
		f |= 1ULL << VU_F_RING_PACKED;
	return f & vu_backend_features(t->c);
}

void
tc_rings_of(struct tc_ring *rings, unsigned int n, struct vu_guest *g)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rings[i] = (struct tc_ring){ .g = g, .ring = i, .bad_desc = 0 };
}

void
tc_fe_ring_addr(struct tc *t, unsigned int i, struct vu_guest *g)
{
	struct vu_ring_info ri;

	assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
	assert_int_equal(vu_set_vring_addr(t->c, i, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
					   (uintptr_t)ri.avail, ri.log_gpa), 0);
}

static void
fe_ring_setup(struct tc *t, unsigned int i, const struct tc_ring *r)
{
	struct vu_ring_info ri;

	assert_int_equal(vu_guest_ring_info(r->g, r->ring, &ri), 0);
	assert_int_equal(vu_set_vring_num(t->c, i, ri.num), 0);
	assert_int_equal(vu_set_vring_base(t->c, i, ri.fresh_base), 0);
	assert_int_equal(vu_set_vring_addr(t->c, i, 0, r->bad_desc != 0 ? r->bad_desc :
					   (uintptr_t)ri.desc, (uintptr_t)ri.used,
					   (uintptr_t)ri.avail, ri.log_gpa), 0);
	assert_int_equal(vu_set_vring_kick(t->c, i, vu_guest_kickfd(r->g, r->ring)), 0);
	assert_int_equal(vu_set_vring_call(t->c, i, vu_guest_callfd(r->g, r->ring)), 0);
}

/*
 * QEMU's start sequence with a ring-by-ring choice: which guest ring backs
 * each device ring, and which rings are enabled before DRIVER_OK.
 */
void
tc_fe_start(struct tc *t, const struct tc_ring *rings, unsigned int n, uint32_t enable_mask)
{
	uint64_t feat;
	unsigned int i;

	assert_int_equal(vu_device_init(t->c, NULL), 0);
	feat = tc_fe_features(t, false);
	for (i = 0; i < RTE_DIM(t->g); i++)
		if (t->g[i] != NULL)
			vu_guest_set_features(t->g[i], feat);
	assert_int_equal(vu_set_features(t->c, feat), 0);
	assert_int_equal(vu_set_mem_table(t->c, t->mem), 0);
	for (i = 0; i < n; i++)
		fe_ring_setup(t, i, &rings[i]);
	for (i = 0; i < n; i++)
		if (enable_mask & (1u << i))
			assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_int_equal(vu_set_status(t->c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
}

/* GET_VRING_BASE on rings 0..n-1, as QEMU stops a device. */
void
tc_fe_stop(struct tc *t, unsigned int n, uint32_t *bases)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(vu_get_vring_base(t->c, i, &bases[i]), 0);
}

/* ---- traffic ------------------------------------------------------------------ */

void
tc_traffic_fail(struct vu_guest *g, uint32_t mask)
{
	struct vu_guest_stats st;
	unsigned int q;

	for (q = 0; q < MAX_QP; q++) {
		if (!(mask & (1u << q)))
			continue;
		vu_guest_stats(g, (int)q, &st);
		print_error("qp %u: sent %" PRIu64 " completed %" PRIu64 " inflight %" PRIu64
			    " lost %" PRIu64 " rx %" PRIu64 " bad %" PRIu64 " dup %" PRIu64
			    " dev_errors %" PRIu64 "\n", q, vu_guest_tx_sent(g, (int)q),
			    st.tx_completed, vu_guest_tx_inflight(g, (int)q),
			    vu_guest_lost(g, (int)q), st.rx_received, st.rx_bad, st.duplicates,
			    st.dev_errors);
	}
	fail();
}

/*
 * Send npp more frames on every pair in mask and wait until each came back
 * (the emulated uplink is a loopback), every TX descriptor completed, and
 * nothing bad, duplicated or in error was seen.
 */
void
tc_traffic(struct vu_guest *g, uint32_t mask, unsigned int npp)
{
	if (!lmh_traffic(g, mask, npp, DEADLINE_MS))
		tc_traffic_fail(g, mask);
}

/* Poll (no kick) until no TX chain of the pairs in mask is in flight (bounded). */
bool
tc_tx_complete(struct vu_guest *g, uint32_t mask)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	unsigned int q;
	uint64_t n;

	for (;;) {
		vu_guest_poll(g);
		for (q = 0, n = 0; q < MAX_QP; q++)
			if (mask & (1u << q))
				n += vu_guest_tx_inflight(g, (int)q);
		if (n == 0)
			return true;
		if (lmh_now_ms() > deadline)
			return false;
		vu_guest_wait(g, 2);
	}
}

/* Wait until nothing sent on the pairs in mask is missing or in flight (no new frame). */
void
tc_traffic_settle(struct vu_guest *g, uint32_t mask)
{
	tc_traffic(g, mask, 0);
}

/* Traffic in a thread, while the main thread drives vhost-user messages. */
void
tc_pump_start(struct lmh_pump *p, struct vu_guest *g, uint32_t mask)
{
	assert_int_equal(lmh_pump_start(p, g, mask), 0);
}

void
tc_pump_stop(struct lmh_pump *p)
{
	if (!lmh_pump_stop(p))
		tc_traffic_fail(p->g, p->mask);
}

/* The base GET_VRING_BASE must return after `consumed` chains (test_vu's rule). */
static uint32_t
expect_base(bool packed, uint16_t size, uint64_t consumed)
{
	if (!packed)
		return (uint32_t)(consumed & 0xffff);
	return (uint32_t)(consumed % size) | (((consumed / size) & 1) ? 0 : 0x8000);
}

/* Bases of every ring equal what the guest saw the device consume. */
void
tc_check_bases(struct vu_guest *g, const uint32_t *bases, unsigned int pairs, bool packed,
	       uint16_t size)
{
	struct vu_guest_stats st;
	unsigned int q;

	for (q = 0; q < pairs; q++) {
		vu_guest_stats(g, (int)q, &st);
		/* RX: one buffer per received frame; TX: every frame sent completed. */
		assert_int_equal(bases[2 * q], expect_base(packed, size, st.rx_received));
		assert_int_equal(bases[2 * q + 1],
				 expect_base(packed, size, vu_guest_tx_sent(g, (int)q)));
	}
}

void
tc_traffic_and_stop(struct tc *t, struct vu_guest *g, unsigned int pairs, unsigned int npp)
{
	uint32_t bases[MAX_RINGS];

	tc_traffic(g, (1u << pairs) - 1, npp);
	assert_int_equal(vu_stop_device(t->c, bases, 2 * pairs), 0);
	tc_check_bases(g, bases, pairs, false, 256);
}

/* ---- checks and sequences more than one phase uses ---------------------------- */

/*
 * GET_VRING_BASE of ring 0 makes vhost call dev_close before it replies:
 * when the reply is here, every running queue must have been suspended and
 * then queried, nothing else done to the queues yet.
 */
void
tc_check_close_suspends_then_queries(struct tc *t, size_t from, unsigned int nrings,
				     struct vu_guest *g, bool packed)
{
	size_t k, last_query = from;
	unsigned int i;

	tc_sync(t);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;
		size_t suspend = SIZE_MAX, query = SIZE_MAX;
		bool idle = false;
		struct vu_ring_info ri;

		/*
		 * A split ring whose avail and used indices in guest memory are
		 * equal after the stop needs no QUERY: the device's are equal too
		 * (dev_close, idle_split_ring). Every other ring is queried.
		 */
		if (!packed && vu_guest_ring_info(g, i, &ri) == 0)
			idle = ((volatile uint16_t *)ri.avail)[1] ==
			       ((volatile uint16_t *)ri.used)[1];

		assert_int_equal(tc_count(t, from, tc_p_suspend, &q), 1);
		for (k = from; k < t->tr.n; k++) {
			const struct lmh_cmd *c = &t->tr.c[k];

			if (tc_p_suspend(c, &q))
				suspend = k;
			else if (c->qidx == q && c->opcode == PRM_CMD_QUERY_GENERAL_OBJECT &&
				 suspend != SIZE_MAX && query == SIZE_MAX)
				query = k;
		}
		assert_true(suspend != SIZE_MAX);
		assert_true(tc_mod_bits(&t->tr.c[suspend]) == PRM_VIRTQ_MODIFY_STATE);
		if (idle) {
			assert_true(query == SIZE_MAX);
			query = suspend;
		}
		assert_true(query != SIZE_MAX && suspend <= query);
		if (query > last_query)
			last_query = query;
	}
	/*
	 * Restoring blank queues (destroy + create) runs in the background once
	 * dev_close returned: none of it is interleaved with suspend + query.
	 */
	for (k = from; k < last_query; k++)
		assert_false(tc_p_vq_destroy(&t->tr.c[k], NULL));
}

size_t
tc_restart_front_end(struct tc *t, struct vu_guest *g)
{
	size_t mark;

	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	tc_connect(t);
	mark = tc_mark(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	return mark;
}

void
tc_reconnect_and_run(struct tc *t, struct vu_guest *g, unsigned int pairs)
{
	size_t mark;
	unsigned int i;

	tc_disconnect(t);
	tc_wait_restored(t);
	mark = tc_restart_front_end(t, g);
	for (i = 0; i < 2 * pairs; i++) {
		int q = (int)i;

		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 1);
	}
	tc_traffic_and_stop(t, g, pairs, 300);
}

void
tc_run_isolated(const char *name)
{
	static const char *const self_exe = "/proc/self/exe";
	char *argv[] = { (char *)self_exe, (char *)"--isolated", (char *)name, NULL };
	int64_t deadline = lmh_now_ms() + 4 * DEADLINE_MS;
	char child_eal_dir[PATH_MAX], parent[PATH_MAX];
	posix_spawn_file_actions_t fa;
	int wstatus = 0;
	pid_t pid, r;

	/*
	 * Nothing of ours but stdio: DPDK opens vhost's sockets without
	 * close-on-exec, and a child holding a copy of a connection keeps it
	 * open after vhost closed its end (tc_check_inherited_fds).
	 */
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addclosefrom_np(&fa, 3), 0);
	/* The child's directory inside ours: removed with ours even if it crashes. */
	assert_int_equal(setenv("LMH_TMPDIR_PARENT", lmh_tmpdir(), 1), 0);
	assert_int_equal(posix_spawn(&pid, self_exe, &fa, NULL, argv, environ), 0);
	assert_int_equal(unsetenv("LMH_TMPDIR_PARENT"), 0);
	posix_spawn_file_actions_destroy(&fa);
	/* Bounded: the child's own waits are bounded too, this is the backstop. */
	while ((r = waitpid(pid, &wstatus, WNOHANG)) == 0) {
		if (lmh_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &wstatus, 0);
			print_error("%s: still running after %d ms\n", name, 4 * DEADLINE_MS);
			fail();
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	assert_int_equal(r, pid);
	/* A child that crashed left its EAL runtime directory: it is ours to remove. */
	snprintf(parent, sizeof(parent), "%s", rte_eal_get_runtime_dir());
	snprintf(child_eal_dir, sizeof(child_eal_dir), "%s/test-lifecycle-%d", dirname(parent),
		 (int)pid);
	lmh_rm_tree(child_eal_dir);
	if (WIFSIGNALED(wstatus))
		print_error("%s: killed by signal %d (%s)\n", name, WTERMSIG(wstatus),
			    strsignal(WTERMSIG(wstatus)));
	else if (WEXITSTATUS(wstatus) != 0)
		print_error("%s: exited with status %d (255: a crash caught by cmocka's "
			    "signal handler; its stack is in the child's output above)\n", name,
			    WEXITSTATUS(wstatus));
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
}

int
tc_check_inherited_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int bad = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char link[64] = "", path[300];
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd < 3 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		if (readlink(path, link, sizeof(link) - 1) > 0 && strncmp(link, "socket:", 7) == 0) {
			print_error("isolated test: fd %d (%s) inherited from the parent: a copy of "
				    "one of its vhost sockets\n", fd, link);
			bad = 1;
		}
	}
	closedir(d);
	return bad ? -1 : 0;
}
