/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue lifecycle of the vdpa_mlx5_lm PMD (issue 3), proved in one process
 * through the shared harness (lm_harness.c): the PMD is linked statically
 * with EAL and runs on an emulated ConnectX (emu=fast), or, with
 * LM_BACKEND=rdma under tools/with-emulated-rdma, on the emulated
 * rdma-core through its rdma back end (ibdev=mlx5_<i>, profile fast; meson
 * test lifecycle_rdma). DPDK's vhost library serves a vhost-user socket for
 * it; the built-in front end (app/test-lm/vu) drives that socket like QEMU
 * and its guest virtio-net driver sends frames that the emulated data path
 * loops back. What the driver asked of the device is read from the DevX
 * trace (devx_trace=, one JSON line per command with its mailbox, flushed
 * per line), what the device holds from the emulator's test hooks (emu=:
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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "prm.h"
#include "lm_harness.h"
#include "mlx5_lm_pool.h"
#include "mlx5_lm_test.h"
#include "rte_pmd_mlx5_lm.h"

#define DEADLINE_MS LMH_DEADLINE_MS
#define MAX_QP 4
#define MAX_RINGS (2 * MAX_QP)
#define MIB (1ull << 20)

/* What a fresh split ring's first MODIFY must carry: the rest equals a blank queue. */
#define BITS_FRESH (PRM_VIRTQ_MODIFY_STATE | PRM_VIRTQ_MODIFY_ADDRS | PRM_VIRTQ_MODIFY_Q_MKEY)
#define BITS_INDEX (PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX | PRM_VIRTQ_MODIFY_HW_USED_INDEX)

static const char *self_exe;
extern char **environ;

static bool
wait_log(size_t from, const char *needle)
{
	return lmh_wait_log(from, needle, DEADLINE_MS);
}

/* ---- DevX trace ------------------------------------------------------------ */

/*
 * Read here rather than with lmh_trace: these checks look into each
 * command's input mailbox (modify_field_select, ring addresses, RQT
 * entries) and follow virtq ids to queue indexes, which lmh_cmd does not
 * keep. The trace is the driver's (devx_trace=), the same on either back end.
 */
struct tcmd {
	char op[24];
	uint16_t opcode;
	uint16_t obj_type;
	uint32_t obj_id;
	int status;
	int qidx;               /* virtq commands: the queue index; -1 otherwise */
	uint8_t *in;
	size_t inlen;
};

struct idmap {
	uint32_t id;
	int qidx;
};

/* The trace read so far, parsed incrementally; virtq ids mapped to queue indexes. */
struct trace {
	char path[PATH_MAX];
	long off;
	struct tcmd *c;
	size_t n, cap;
	struct idmap *map;
	size_t nmap, capmap;
};

static bool
is_vq_cmd(const struct tcmd *c)
{
	return c->opcode >= PRM_CMD_CREATE_GENERAL_OBJECT &&
	       c->opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT && c->obj_type == PRM_OBJ_VIRTIO_NET_Q;
}

static const void *
vq_obj(const struct tcmd *c)
{
	return PRM_CADDR(virtq_cmd, c->in, obj);
}

static const void *
vq_q(const struct tcmd *c)
{
	return PRM_CADDR(virtq_cmd, c->in, q);
}

static int
map_get(const struct trace *tr, uint32_t id)
{
	size_t i;

	for (i = tr->nmap; i-- > 0;)
		if (tr->map[i].id == id)
			return tr->map[i].qidx;
	return -1;
}

static void
map_put(struct trace *tr, uint32_t id, int qidx)
{
	if (tr->nmap == tr->capmap) {
		tr->capmap = tr->capmap ? 2 * tr->capmap : 64;
		tr->map = realloc(tr->map, tr->capmap * sizeof(*tr->map));
		assert_non_null(tr->map);
	}
	tr->map[tr->nmap].id = id;
	tr->map[tr->nmap].qidx = qidx;
	tr->nmap++;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

static void
trace_parse_line(struct trace *tr, const char *line)
{
	json_error_t err;
	json_t *j = json_loads(line, 0, &err);
	const char *op, *hex;
	struct tcmd c;
	size_t i, len;

	if (j == NULL) {
		print_error("bad trace line: %s (%s)\n", line, err.text);
		fail();
	}
	memset(&c, 0, sizeof(c));
	op = json_string_value(json_object_get(j, "op"));
	snprintf(c.op, sizeof(c.op), "%s", op != NULL ? op : "");
	c.opcode = (uint16_t)json_integer_value(json_object_get(j, "opcode"));
	c.obj_type = (uint16_t)json_integer_value(json_object_get(j, "obj_type"));
	c.obj_id = (uint32_t)json_integer_value(json_object_get(j, "obj_id"));
	c.status = (int)json_integer_value(json_object_get(j, "status"));
	c.qidx = -1;
	hex = json_string_value(json_object_get(j, "in"));
	len = hex != NULL ? strlen(hex) / 2 : 0;
	/* Room for the largest layout we read, whatever the input length. */
	c.in = calloc(1, len + PRM_SIZE(virtq_cmd));
	assert_non_null(c.in);
	for (i = 0; i < len; i++)
		c.in[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	c.inlen = len;
	json_decref(j);
	if (is_vq_cmd(&c)) {
		if (c.opcode == PRM_CMD_CREATE_GENERAL_OBJECT) {
			c.qidx = (int)PRM_GET(virtio_q, vq_q(&c), queue_index);
			if (c.status == 0)
				map_put(tr, c.obj_id, c.qidx);
		} else {
			c.qidx = map_get(tr, c.obj_id);
		}
	}
	if (tr->n == tr->cap) {
		tr->cap = tr->cap ? 2 * tr->cap : 256;
		tr->c = realloc(tr->c, tr->cap * sizeof(*tr->c));
		assert_non_null(tr->c);
	}
	tr->c[tr->n++] = c;
}

/* Read the lines written since the last call (whole lines only). */
static void
trace_sync(struct trace *tr)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	f = fopen(tr->path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, tr->off, SEEK_SET), 0);
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break; /* being written: next time */
		line[n - 1] = '\0';
		trace_parse_line(tr, line);
		tr->off += n;
	}
	free(line);
	fclose(f);
}

static void
trace_free(struct trace *tr)
{
	size_t i;

	for (i = 0; i < tr->n; i++)
		free(tr->c[i].in);
	free(tr->c);
	free(tr->map);
	memset(tr, 0, sizeof(*tr));
}

typedef bool (*tpred)(const struct tcmd *c, const void *arg);

static unsigned int
trace_count(struct trace *tr, size_t from, tpred p, const void *arg)
{
	unsigned int n = 0;
	size_t i;

	trace_sync(tr);
	for (i = from; i < tr->n; i++)
		if (p(&tr->c[i], arg))
			n++;
	return n;
}

/* Wait until at least `want` commands since `from` satisfy p. */
static bool
wait_trace(struct trace *tr, size_t from, tpred p, const void *arg, unsigned int want)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;

	while (trace_count(tr, from, p, arg) < want) {
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
	return true;
}

static size_t
trace_mark(struct trace *tr)
{
	trace_sync(tr);
	return tr->n;
}

static uint64_t
mod_bits(const struct tcmd *c)
{
	return PRM_GET(virtio_net_q, vq_obj(c), modify_field_select);
}

static unsigned int
mod_state(const struct tcmd *c)
{
	return (unsigned int)PRM_GET(virtio_net_q, vq_obj(c), state);
}

static bool
p_vq_create(const struct tcmd *c, const void *qidx)
{
	return is_vq_cmd(c) && c->opcode == PRM_CMD_CREATE_GENERAL_OBJECT &&
	       (qidx == NULL || c->qidx == *(const int *)qidx);
}

static bool
p_vq_destroy(const struct tcmd *c, const void *qidx)
{
	return is_vq_cmd(c) && c->opcode == PRM_CMD_DESTROY_GENERAL_OBJECT &&
	       (qidx == NULL || c->qidx == *(const int *)qidx);
}

static bool
p_vq_modify(const struct tcmd *c, const void *qidx)
{
	return is_vq_cmd(c) && c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT &&
	       (qidx == NULL || c->qidx == *(const int *)qidx);
}

static bool
p_vq_any(const struct tcmd *c, const void *qidx)
{
	return is_vq_cmd(c) && (qidx == NULL || c->qidx == *(const int *)qidx);
}

/* A MODIFY that moves a queue to `state` (STATE bit set), successfully. */
static bool
is_state_modify(const struct tcmd *c, unsigned int state)
{
	return is_vq_cmd(c) && c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT && c->status == 0 &&
	       (mod_bits(c) & PRM_VIRTQ_MODIFY_STATE) && mod_state(c) == state;
}

static bool
p_rdy(const struct tcmd *c, const void *qidx)
{
	return is_state_modify(c, PRM_VIRTQ_STATE_RDY) &&
	       (qidx == NULL || c->qidx == *(const int *)qidx);
}

static bool
p_suspend(const struct tcmd *c, const void *qidx)
{
	return is_state_modify(c, PRM_VIRTQ_STATE_SUSPEND) &&
	       (qidx == NULL || c->qidx == *(const int *)qidx);
}

static bool
p_failed_vq_cmd(const struct tcmd *c, const void *arg)
{
	(void)arg;
	return is_vq_cmd(c) && c->status != 0;
}

static bool
p_opcode(const struct tcmd *c, const void *opcode)
{
	return c->opcode == *(const uint16_t *)opcode;
}

/* Entries of a MODIFY_RQT command. */
static unsigned int
rqt_size(const struct tcmd *c)
{
	return (unsigned int)PRM_GET(rqtc, PRM_CADDR(modify_rqt_in, c->in, ctx), rqt_actual_size);
}

static uint32_t
rqt_entry(const struct tcmd *c, unsigned int i)
{
	const uint8_t *list = PRM_CADDR(rqtc, PRM_CADDR(modify_rqt_in, c->in, ctx), rq_num);

	return (uint32_t)PRM_GET(rq_num, list + i * PRM_SIZE(rq_num), rq_num);
}

/* The last successful MODIFY_RQT since from, or NULL. */
static const struct tcmd *
last_rqt_modify(struct trace *tr, size_t from)
{
	size_t i;

	trace_sync(tr);
	for (i = tr->n; i-- > from;)
		if (tr->c[i].opcode == PRM_CMD_MODIFY_RQT && tr->c[i].status == 0)
			return &tr->c[i];
	return NULL;
}

static bool
p_rqt_size(const struct tcmd *c, const void *n)
{
	return c->opcode == PRM_CMD_MODIFY_RQT && c->status == 0 &&
	       rqt_size(c) == *(const unsigned int *)n;
}

/* ---- one test's device, front end and guest -------------------------------- */

struct tc {
	struct lmh_dev d;
	bool probed;
	struct trace tr;
	struct vu_mem *mem;
	struct vu_guest *g[2];
	struct vu_client *c;
};

static int
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
static void
tc_probe_profile(struct tc *t, const char *profile, unsigned int queues, const char *extra)
{
	char args[256];

	/* mr_gc_ms=0 unless the test gives its own (a key may appear once). */
	snprintf(args, sizeof(args), "queues=%u,workers=4%s%s%s", queues,
		 extra != NULL && strstr(extra, "mr_gc_ms=") != NULL ? "" : ",mr_gc_ms=0",
		 extra != NULL ? "," : "", extra != NULL ? extra : "");
	assert_int_equal(lmh_probe_profile(&t->d, 0, profile, args), 0);
	t->probed = true;
	snprintf(t->tr.path, sizeof(t->tr.path), "%s", t->d.trace);
	assert_int_not_equal(t->d.live0, UINT_MAX);
}

static void
tc_probe(struct tc *t, unsigned int queues, const char *extra)
{
	tc_probe_profile(t, "fast", queues, extra);
}

/* Guest memory (1 GiB at GPA 0, sparse) and up to two guests sharing it. */
static struct vu_guest *
tc_guest(struct tc *t, unsigned int slot, unsigned int pairs, uint16_t size, bool packed)
{
	struct vu_guest_cfg cfg = { .queue_pairs = pairs, .ring_size = size, .packed = packed };

	if (t->mem == NULL)
		assert_int_equal(vu_mem_create_qemu(&t->mem, 1), 0);
	assert_int_equal(vu_guest_create(&t->g[slot], t->mem, &cfg), 0);
	return t->g[slot];
}

static void
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
static void
tc_disconnect(struct tc *t)
{
	if (t->c == NULL)
		return;
	vu_disconnect(t->c);
	t->c = NULL;
	assert_true(lmh_wait_closed(0));
}

static bool
tc_running(struct tc *t)
{
	return lmh_running(&t->d);
}

/* dev_conf runs after vhost replied to DRIVER_OK: wait until it has configured. */
static void
wait_running(struct tc *t)
{
	if (!lmh_wait_running(&t->d, DEADLINE_MS)) {
		print_error("%s: not running %d ms after DRIVER_OK\n", t->d.name, DEADLINE_MS);
		fail();
	}
}

/*
 * Probe a device with `pairs` queue pairs (tc_probe's extra devargs), a
 * guest of as many pairs with 256-entry split rings, connect, DRIVER_OK:
 * the device is running when it returns.
 */
static struct vu_guest *
tc_start(struct tc *t, unsigned int pairs, const char *extra)
{
	struct vu_guest *g;

	tc_probe(t, pairs, extra);
	g = tc_guest(t, 0, pairs, 256, false);
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	return g;
}

/*
 * Every vhost-facing operation of the driver holds dev->lock from start to
 * end: once a command it sent is in the trace, taking the lock waits for
 * that operation to return.
 */
static void
dev_barrier(struct tc *t)
{
	lmh_barrier(&t->d);
}

/* Queues go back to blank in the background after dev_close: wait for it. */
static void
wait_restored(struct tc *t)
{
	assert_true(lmh_wait_restored(&t->d));
}

static uint32_t
vq_id(struct tc *t, unsigned int i)
{
	return lmh_vq_id(&t->d, i);
}

/* The state the emulated device holds for queue i (QUERY, not traced); -1 if none. */
static int
vq_state(struct tc *t, unsigned int i)
{
	int st = lmh_vq_state(&t->d, i);

	assert_true(st >= -1);
	return st;
}

/* Objects alive on the device, as many as right after probe. */
static void
check_live_as_probed(struct tc *t)
{
	assert_int_equal(lmh_live(&t->d), t->d.live0);
}

static void
tc_remove(struct tc *t)
{
	if (!t->probed)
		return;
	t->probed = false;
	/* Zero live objects at teardown: nothing was left for the emulator to reap. */
	assert_int_equal(lmh_remove(&t->d), 0);
}

static int
tc_teardown(void **state)
{
	struct tc *t = *state;
	unsigned int i;

	tc_disconnect(t);
	if (t->probed && t->d.dev != NULL)
		wait_restored(t);
	tc_remove(t);
	for (i = 0; i < RTE_DIM(t->g); i++)
		if (t->g[i] != NULL)
			vu_guest_destroy(t->g[i]);
	if (t->mem != NULL)
		vu_mem_destroy(t->mem);
	if (t->tr.path[0] != '\0')
		unlink(t->tr.path);
	trace_free(&t->tr);
	free(t);
	return 0;
}

/* ---- front end helpers ------------------------------------------------------ */

/* Which guest ring backs device ring i (rings of several guests may be mixed). */
struct fe_ring {
	struct vu_guest *g;
	unsigned int ring;
	uint64_t bad_desc;      /* != 0: send this front-end address as the descriptor ring */
};

static uint64_t
fe_features(struct tc *t, bool packed)
{
	uint64_t f = (1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
		     (1ULL << VU_F_NET_MQ);

	if (packed)
		f |= 1ULL << VU_F_RING_PACKED;
	return f & vu_backend_features(t->c);
}

static void
fe_ring_setup(struct tc *t, unsigned int i, const struct fe_ring *r)
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
static void
fe_start(struct tc *t, const struct fe_ring *rings, unsigned int n, uint32_t enable_mask)
{
	uint64_t feat;
	unsigned int i;

	assert_int_equal(vu_device_init(t->c, NULL), 0);
	feat = fe_features(t, false);
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
static void
fe_stop(struct tc *t, unsigned int n, uint32_t *bases)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(vu_get_vring_base(t->c, i, &bases[i]), 0);
}

/* ---- traffic (lm_harness.c; here a failure says where each pair stands) ------ */

static void
traffic_fail(struct vu_guest *g, uint32_t mask)
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
static void
traffic(struct vu_guest *g, uint32_t mask, unsigned int npp)
{
	if (!lmh_traffic(g, mask, npp, DEADLINE_MS))
		traffic_fail(g, mask);
}

/* Poll (no kick) until no TX chain of the pairs in mask is in flight (bounded). */
static bool
tx_complete(struct vu_guest *g, uint32_t mask)
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
static void
traffic_settle(struct vu_guest *g, uint32_t mask)
{
	traffic(g, mask, 0);
}

/* Traffic in a thread, while the main thread drives vhost-user messages. */
static void
pump_start(struct lmh_pump *p, struct vu_guest *g, uint32_t mask)
{
	assert_int_equal(lmh_pump_start(p, g, mask), 0);
}

static void
pump_stop(struct lmh_pump *p)
{
	if (!lmh_pump_stop(p))
		traffic_fail(p->g, p->mask);
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
static void
check_bases(struct vu_guest *g, const uint32_t *bases, unsigned int pairs, bool packed,
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

/* ---- 1. DRIVER_OK: one MODIFY per queue; close: suspend + query ------------ */

/* Check the MODIFYs of dev_conf since `from`: one per ring, only what differs. */
static void
check_conf_modifies(struct tc *t, size_t from, struct vu_guest *g, unsigned int nrings,
		    const uint32_t *bases, uint64_t extra_bits)
{
	unsigned int i;
	size_t k;

	/* Pre-created queues of the right size: no virtq is created or destroyed. */
	assert_int_equal(trace_count(&t->tr, from, p_vq_create, NULL), 0);
	assert_int_equal(trace_count(&t->tr, from, p_vq_destroy, NULL), 0);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;
		const struct tcmd *m = NULL;
		struct vu_ring_info ri;
		uint64_t want = BITS_FRESH | extra_bits;

		assert_int_equal(trace_count(&t->tr, from, p_vq_modify, &q), 1);
		for (k = from; k < t->tr.n; k++)
			if (p_vq_modify(&t->tr.c[k], &q))
				m = &t->tr.c[k];
		assert_int_equal(m->status, 0);
		/* The hardware indices are sent only where vhost's base is not the blank 0. */
		if (bases != NULL && bases[i] != 0)
			want |= BITS_INDEX;
		if (mod_bits(m) != want)
			print_error("queue %u: modify_field_select 0x%" PRIx64 ", want 0x%" PRIx64
				    "\n", i, mod_bits(m), want);
		assert_true(mod_bits(m) == want);
		assert_int_equal(mod_state(m), PRM_VIRTQ_STATE_RDY);
		/* And the values are the guest's rings, through a real mkey. */
		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		assert_true(PRM_GET(virtio_q, vq_q(m), desc_addr) == ri.desc_gpa);
		assert_true(PRM_GET(virtio_q, vq_q(m), available_addr) == ri.avail_gpa);
		assert_true(PRM_GET(virtio_q, vq_q(m), used_addr) == ri.used_gpa);
		assert_true(PRM_GET(virtio_q, vq_q(m), virtio_q_mkey) != 0);
		if (bases != NULL && bases[i] != 0)
			assert_int_equal(PRM_GET(virtio_net_q, vq_obj(m), hw_available_index),
					 bases[i]);
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
}

/*
 * GET_VRING_BASE of ring 0 makes vhost call dev_close before it replies:
 * when the reply is here, every running queue must have been suspended and
 * then queried, nothing else done to the queues yet.
 */
static void
check_close_suspends_then_queries(struct tc *t, size_t from, unsigned int nrings,
				  struct vu_guest *g, bool packed)
{
	size_t k, last_query = from;
	unsigned int i;

	trace_sync(&t->tr);
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

		assert_int_equal(trace_count(&t->tr, from, p_suspend, &q), 1);
		for (k = from; k < t->tr.n; k++) {
			const struct tcmd *c = &t->tr.c[k];

			if (p_suspend(c, &q))
				suspend = k;
			else if (c->qidx == q && c->opcode == PRM_CMD_QUERY_GENERAL_OBJECT &&
				 suspend != SIZE_MAX && query == SIZE_MAX)
				query = k;
		}
		assert_true(suspend != SIZE_MAX);
		assert_true(mod_bits(&t->tr.c[suspend]) == PRM_VIRTQ_MODIFY_STATE);
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
		assert_false(p_vq_destroy(&t->tr.c[k], NULL));
}

static void
run_driver_ok_and_close(struct tc *t, bool packed)
{
	const unsigned int pairs = 4, nrings = 2 * pairs;
	const uint16_t size = 256;
	struct vu_start_opts o = { 0 };
	uint32_t bases[MAX_RINGS];
	struct vu_guest *g;
	size_t mark;
	int q;

	tc_probe(t, pairs, NULL);
	/* Every virtq exists before any front end connects. */
	assert_int_equal(trace_count(&t->tr, 0, p_vq_create, NULL), nrings);
	for (q = 0; q < (int)nrings; q++) {
		assert_int_equal(trace_count(&t->tr, 0, p_vq_create, &q), 1);
		assert_int_equal(vq_state(t, (unsigned int)q), PRM_VIRTQ_STATE_INIT);
	}
	g = tc_guest(t, 0, pairs, size, packed);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	/*
	 * A packed ring differs from a blank queue in its type, and vhost's
	 * fresh packed base (wrap counter set) in the indices.
	 */
	check_conf_modifies(t, mark, g, nrings, NULL,
			    packed ? PRM_VIRTQ_MODIFY_Q_TYPE | BITS_INDEX : 0);
	traffic(g, 0xf, 300);

	/* Stop ring by ring: the first reply already follows suspend + query. */
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_get_vring_base(t->c, 0, &bases[0]), 0);
	check_close_suspends_then_queries(t, mark, nrings, g, packed);
	for (q = 1; q < (int)nrings; q++)
		assert_int_equal(vu_get_vring_base(t->c, (uint32_t)q, &bases[q]), 0);
	check_bases(g, bases, pairs, packed, size);

	/*
	 * Restart from those bases: again MODIFY only, now with the indices.
	 * QEMU (7.2, vhost_dev_stop) resets the status after stopping, so that
	 * the next DRIVER_OK is what starts the device again.
	 */
	assert_int_equal(vu_set_status(t->c, 0), 0);
	wait_restored(t);
	mark = trace_mark(&t->tr);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	wait_running(t);
	check_conf_modifies(t, mark, g, nrings, bases, packed ? PRM_VIRTQ_MODIFY_Q_TYPE : 0);
	traffic(g, 0xf, 200);
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	check_bases(g, bases, pairs, packed, size);
}

static void
test_driver_ok_modifies_each_queue_once_and_close_suspends_and_queries(void **state)
{
	run_driver_ok_and_close(*state, false);
}

static void
test_packed_rings_driver_ok_and_close(void **state)
{
	run_driver_ok_and_close(*state, true);
}

/* ---- 2. size mismatch: only that queue is re-created ------------------------ */

static void
test_ring_of_another_size_recreates_only_its_queue(void **state)
{
	struct tc *t = *state;
	const unsigned int nrings = 8;
	/* Rings 0, 1 and 5 come from a guest whose rings have 1024 entries. */
	const uint32_t big = 1u << 0 | 1u << 1 | 1u << 5;
	struct fe_ring rings[8];
	uint32_t bases[8];
	struct vu_guest *a, *b;
	unsigned int i;
	size_t mark, k;

	tc_probe(t, 4, NULL);
	a = tc_guest(t, 0, 4, 256, false);
	b = tc_guest(t, 1, 3, 1024, false);
	for (i = 0; i < nrings; i++) {
		rings[i].g = big & (1u << i) ? b : a;
		rings[i].ring = i;
		rings[i].bad_desc = 0;
	}
	tc_connect(t);
	mark = trace_mark(&t->tr);
	fe_start(t, rings, nrings, 0xff);
	wait_running(t);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;
		bool recreate = big & (1u << i);

		/* Destroy + create for the mismatched queues only, and one MODIFY each. */
		assert_int_equal(trace_count(&t->tr, mark, p_vq_create, &q), recreate);
		assert_int_equal(trace_count(&t->tr, mark, p_vq_destroy, &q), recreate);
		assert_int_equal(trace_count(&t->tr, mark, p_vq_modify, &q), 1);
		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 1);
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_RDY);
		for (k = mark; k < t->tr.n; k++)
			if (p_vq_create(&t->tr.c[k], &q))
				assert_int_equal(PRM_GET(virtio_q, vq_q(&t->tr.c[k]), queue_size),
						 1024);
	}
	/* The re-created queues carry traffic: B's pairs 0 and 2 (ring 5 alone). */
	traffic(b, 1u << 0 | 1u << 2, 2000);
	fe_stop(t, nrings, bases);
	assert_int_equal(bases[1], 2000);
	assert_int_equal(bases[5], 2000);
}

/* ---- 3. queue pairs disabled / enabled by the guest ------------------------- */

static void
test_disabling_pairs_suspends_only_them_and_shrinks_the_rqt(void **state)
{
	struct tc *t = *state;
	const unsigned int want_small = 2, want_full = 4;
	uint32_t rx_ids[4], bases[8];
	const struct tcmd *rqt;
	struct vu_guest *g;
	struct lmh_pump pump;
	uint64_t sent;
	unsigned int i;
	size_t mark;

	g = tc_start(t, 4, NULL);
	traffic(g, 0xf, 200);
	for (i = 0; i < 4; i++)
		rx_ids[i] = vq_id(t, 2 * i);

	/* Pairs 0-1 carry traffic the whole time. */
	pump_start(&pump, g, 0x3);
	sent = vu_guest_tx_sent(g, -1);
	mark = trace_mark(&t->tr);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	/* set_vring_state runs after vhost's ack: wait for its commands. */
	assert_true(wait_trace(&t->tr, mark, p_suspend, NULL, 4));
	assert_true(wait_trace(&t->tr, mark, p_rqt_size, &want_small, 1));
	dev_barrier(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		/* Exactly the disabled queues, state only; the others untouched. */
		assert_int_equal(trace_count(&t->tr, mark, p_suspend, &q), i >= 4);
		assert_int_equal(trace_count(&t->tr, mark, p_vq_any, &q), i >= 4);
		assert_int_equal(vq_state(t, i), i >= 4 ? PRM_VIRTQ_STATE_SUSPEND :
				 PRM_VIRTQ_STATE_RDY);
	}
	rqt = last_rqt_modify(&t->tr, mark);
	assert_non_null(rqt);
	assert_int_equal(rqt_size(rqt), 2);
	assert_int_equal(rqt_entry(rqt, 0), rx_ids[0]);
	assert_int_equal(rqt_entry(rqt, 1), rx_ids[1]);

	mark = trace_mark(&t->tr);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_true(wait_trace(&t->tr, mark, p_rdy, NULL, 4));
	assert_true(wait_trace(&t->tr, mark, p_rqt_size, &want_full, 1));
	dev_barrier(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		/* Resumed from SUSPEND with the state bit alone: nothing re-created. */
		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), i >= 4);
		assert_int_equal(trace_count(&t->tr, mark, p_vq_any, &q), i >= 4);
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	for (i = (unsigned int)mark; i < t->tr.n; i++)
		if (p_rdy(&t->tr.c[i], NULL))
			assert_true(mod_bits(&t->tr.c[i]) == PRM_VIRTQ_MODIFY_STATE);
	rqt = last_rqt_modify(&t->tr, mark);
	assert_non_null(rqt);
	assert_int_equal(rqt_size(rqt), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(rqt_entry(rqt, i), rx_ids[i]);
	pump_stop(&pump);
	assert_true(vu_guest_tx_sent(g, -1) > sent);
	/* And the resumed pairs work again. */
	traffic(g, 0xf, 200);
	fe_stop(t, 8, bases);
	check_bases(g, bases, 4, false, 256);
}

/*
 * Three of four pairs enabled: the RQT lists a power of two entries, the
 * three RX queues repeated in order (PRM: the device indexes the RQT by
 * hash & (size - 1); Linux mlx5_vdpa rounds up and repeats the same way;
 * issue 10, B3), and every enabled pair still carries traffic.
 */
static void
test_three_enabled_pairs_fill_a_power_of_two_rqt(void **state)
{
	struct tc *t = *state;
	const unsigned int want = 4;
	uint32_t rx_ids[4], bases[8];
	const struct tcmd *rqt;
	struct vu_guest *g;
	unsigned int i;
	size_t mark;

	g = tc_start(t, 4, NULL);
	traffic(g, 0xf, 100);
	for (i = 0; i < 4; i++)
		rx_ids[i] = vq_id(t, 2 * i);
	mark = trace_mark(&t->tr);
	for (i = 6; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	assert_true(wait_trace(&t->tr, mark, p_suspend, NULL, 2));
	assert_true(wait_trace(&t->tr, mark, p_rqt_size, &want, 1));
	dev_barrier(t);
	rqt = last_rqt_modify(&t->tr, mark);
	assert_non_null(rqt);
	assert_int_equal(rqt_size(rqt), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(rqt_entry(rqt, i), rx_ids[i % 3]);
	traffic(g, 0x7, 200);
	fe_stop(t, 8, bases);
	check_bases(g, bases, 3, false, 256);
}

/* ---- 4. a ring the guest never enabled is never made RDY -------------------- */

/*
 * DPDK's vhost (builtin net) calls dev_conf as soon as rings 0 and 1 are
 * ready and DRIVER_OK is set, whatever the state of the other rings: QEMU
 * starts a multiqueue device that way, with the pairs the guest has not
 * yet asked for set up but disabled. Those must stay out of RDY until the
 * guest enables them.
 */
static void
test_rings_set_up_but_not_enabled_stay_out_of_rdy(void **state)
{
	struct tc *t = *state;
	struct fe_ring rings[8];
	uint32_t bases[8];
	struct vu_guest *g;
	unsigned int i;
	size_t mark;

	tc_probe(t, 4, NULL);
	g = tc_guest(t, 0, 4, 256, false);
	for (i = 0; i < 8; i++) {
		rings[i].g = g;
		rings[i].ring = i;
		rings[i].bad_desc = 0;
	}
	tc_connect(t);
	mark = trace_mark(&t->tr);
	/* All 8 rings set up, only pairs 0-1 enabled. */
	fe_start(t, rings, 8, 0x0f);
	wait_running(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), i < 4);
		if (i >= 4)
			assert_int_not_equal(vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	traffic(g, 0x3, 300);

	/* The guest enables pairs 2-3 now: they start, and carry traffic. */
	mark = trace_mark(&t->tr);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_true(wait_trace(&t->tr, mark, p_rdy, NULL, 4));
	dev_barrier(t);
	for (i = 0; i < 8; i++)
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	traffic(g, 0xf, 300);
	fe_stop(t, 8, bases);
}

/* Pairs the front end never sets up are never touched: they stay INIT. */
static void
test_pairs_beyond_the_front_end_stay_init(void **state)
{
	struct tc *t = *state;
	uint32_t bases[4];
	struct vu_guest *g;
	unsigned int i;
	size_t mark;

	tc_probe(t, 4, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), i < 4);
		if (i >= 4) {
			assert_int_equal(trace_count(&t->tr, mark, p_vq_any, &q), 0);
			assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_INIT);
		}
	}
	check_bases(g, bases, 2, false, 256);
}

/*
 * Dirty logging starting while pairs are disabled must not resume them; the
 * running ones take the bitmap as they run (issue 19 item 8: no SUSPEND,
 * no transition at all).
 */
static void
test_disabled_pairs_stay_suspended_when_logging_starts(void **state)
{
	struct tc *t = *state;
	uint32_t bases[8];
	struct vu_guest *g;
	struct vu_log *log;
	unsigned int i;
	size_t mark, lmark;

	g = tc_start(t, 4, NULL);
	mark = trace_mark(&t->tr);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	assert_true(wait_trace(&t->tr, mark, p_suspend, NULL, 4));
	dev_barrier(t);

	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log(t->c, log), 0);
	/* set_features runs after vhost's ack: wait for the driver to say it logs. */
	assert_true(wait_log(lmark, "dirty-page logging on"));
	dev_barrier(t);
	traffic(g, 0x3, 200);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 0);
		assert_int_equal(trace_count(&t->tr, mark, p_suspend, &q), 0);
		assert_int_equal(vq_state(t, i), i < 4 ? PRM_VIRTQ_STATE_RDY :
				 PRM_VIRTQ_STATE_SUSPEND);
	}
	assert_int_equal(vu_clear_log(t->c), 0);
	fe_stop(t, 8, bases);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/*
 * Dirty logging starts on running queues: each takes the bitmap as it
 * runs (or, on firmware that refuses that, goes SUSPEND, takes it, and RDY
 * again). The device fetches at doorbells (emu_virtq.c;
 * DPDK's vdpa/mlx5 rings one after setting a queue up), so a chain the
 * guest posted without a kick - the device had asked not to be notified
 * (VRING_USED_F_NO_NOTIFY), or the kick reached a queue not RDY - waited
 * for the guest's next kick, which a guest waiting for that completion
 * never sends. The driver rings every running queue once after the change.
 */
static void
test_log_start_rings_every_running_queue(void **state)
{
	struct tc *t = *state;
	struct vu_ring_info ri;
	uint32_t bases[2];
	struct vu_guest *g;
	struct vu_log *log;
	size_t lmark;

	g = tc_start(t, 1, NULL);
	traffic(g, 0x1, 50);
	assert_true(lmh_dp_idle(&t->d));
	/* One TX chain posted while the used ring says "do not notify": no kick. */
	assert_int_equal(vu_guest_ring_info(g, 1, &ri), 0);
	__atomic_store_n((uint16_t *)ri.used, 1, __ATOMIC_RELEASE);
	assert_int_equal(vu_guest_tx(g, 0, 1), 1);
	__atomic_store_n((uint16_t *)ri.used, 0, __ATOMIC_RELEASE);
	assert_true(lmh_dp_idle(&t->d));
	/*
	 * Not fetched: no doorbell. On rdma the emulated rdma-core sees
	 * doorbell writes by polling and, when two merge, rings every queue:
	 * a late relay of the guest's last RX kick may fetch it there.
	 */
	if (!lmh_skip_on_rdma("the chain waits for a doorbell",
			      "the doorbell watcher may ring every queue")) {
		vu_guest_poll(g);
		assert_int_equal(vu_guest_tx_inflight(g, 0), 1);
	}
	lmark = lmh_log_mark();
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log(t->c, log), 0);
	assert_true(wait_log(lmark, "dirty-page logging on"));
	dev_barrier(t);
	/* Only polls from here: the device must fetch the chain by itself. */
	assert_true(tx_complete(g, 0x1));
	assert_int_equal(vu_clear_log(t->c), 0);
	fe_stop(t, 2, bases);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/*
 * A guest that resets its NIC while it migrates: DRIVER_OK comes with
 * VHOST_F_LOG_ALL already negotiated and the log area set. Frames the
 * guest posted before are sent and received at the queues' first
 * doorbells: every page the device writes must be in the log, so the
 * queues may not run before they log. Under cx6dx the log's
 * registration takes its modelled time: queues made RDY first (as
 * before) wrote the first frames' buffers unlogged.
 */
static void
test_log_on_at_driver_ok_logs_before_any_queue_runs(void **state)
{
	struct tc *t = *state;
	uint64_t missing = 0, first = 0;
	uint32_t bases[2];
	struct vu_log *log;
	struct vu_guest *g;
	int64_t pages;

	tc_probe_profile(t, "cx6dx", 1, NULL);
	g = tc_guest(t, 0, 1, 256, false);
	tc_connect(t);
	assert_int_equal(vu_device_init(t->c, NULL), 0);
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log(t->c, log), 0);
	/* From here every page the device writes is recorded, to be found in the log. */
	vu_guest_dirty_mark(g);
	vu_guest_rx_refill(g);
	assert_int_equal(vu_guest_tx(g, 0, 32), 32);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	traffic(g, 0x1, 32);
	fe_stop(t, 2, bases);
	pages = vu_guest_dirty_check(g, log, &missing, &first);
	assert_true(pages > 0);
	if (missing != 0)
		print_error("%" PRIu64 " of %" PRId64 " written pages not logged (first: gpa 0x%"
			    PRIx64 ")\n", missing, pages, first);
	assert_int_equal(missing, 0);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/*
 * vhost calls dev_conf whatever the application's new_device answered,
 * but dev_close only for a device new_device accepted. A front end whose
 * new_device failed, leaving, must leave nothing running on its rings and
 * none of its fds with the driver, and the next front end is configured.
 */
static void
test_front_end_gone_after_new_device_failed_leaves_nothing_running(void **state)
{
	struct tc *t = *state;
	uint32_t bases[2];
	struct vu_guest *g;
	unsigned int i;

	lmh_new_device_fails(true);
	g = tc_start(t, 1, NULL);
	traffic(g, 0x1, 32);
	lmh_new_device_fails(false);
	tc_disconnect(t);
	assert_false(lmh_running(&t->d));
	for (i = 0; i < 2; i++) {
		/* The guest's own copy of each eventfd is all that is left. */
		assert_true(lmh_wait_fds_of_file(vu_guest_kickfd(g, i), 1));
		assert_true(lmh_wait_fds_of_file(vu_guest_callfd(g, i), 1));
	}
	/* Stopped, then put back to blank (objects are swapped until then: wait). */
	wait_restored(t);
	for (i = 0; i < 2; i++)
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	check_live_as_probed(t);
	/* The next front end's DRIVER_OK configures the device again. */
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	traffic(g, 0x1, 32);
	fe_stop(t, 2, bases);
}

/* Pages the device wrote since vu_guest_dirty_mark that log does not show (0 expected). */
static uint64_t
pages_missing(struct vu_guest *g, const struct vu_log *log)
{
	uint64_t missing = 0, first = 0;
	int64_t pages = vu_guest_dirty_check(g, log, &missing, &first);

	assert_true(pages > 0);
	if (missing != 0)
		print_error("%" PRIu64 " of %" PRId64 " written pages not in the log (first: gpa 0x%"
			    PRIx64 ")\n", missing, pages, first);
	return missing;
}

/*
 * A new SET_LOG_BASE while the device logs (QEMU resizes the log when the
 * guest's memory grows during a migration): vhost maps the new log and
 * unmaps the old one, with no callback, and the front end reads and frees
 * the old one once vhost replied. Every page written from then on must be
 * in the new log: the device moves to it before vhost handles the message.
 */
static void
test_new_log_base_while_logging_is_the_log_the_device_marks(void **state)
{
	struct tc *t = *state;
	struct vu_log *log1, *log2;
	struct vu_guest *g;
	uint32_t bases[2];
	size_t lmark;

	g = tc_start(t, 1, NULL);
	traffic(g, 0x1, 32);
	assert_int_equal(vu_log_create(&log1, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_log_create(&log2, vu_mem_gpa_end(t->mem)), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_log(t->c, log1), 0);
	assert_true(wait_log(lmark, "dirty-page logging on"));
	/* Answered once vhost mapped it: from here the device must mark log2. */
	assert_int_equal(vu_set_log_base(t->c, log2->fd, log2->size, 0), 0);
	vu_guest_dirty_mark(g);
	traffic(g, 0x1, 64);
	fe_stop(t, 2, bases);
	assert_int_equal(pages_missing(g, log2), 0);
	assert_true(lmh_log_has(lmark, "dirty-page logging moved to a new log"));
	tc_disconnect(t);
	vu_log_destroy(log1);
	vu_log_destroy(log2);
}

/*
 * The same while a DRIVER_OK that comes with the log on is being
 * configured (held): the SET_LOG_BASE waits for the configuration, which
 * logs into the first log, then moves the device to the latest.
 */
static void
test_new_log_base_during_a_held_configuration_is_the_log_registered(void **state)
{
	uint64_t payload[2], reply = 0;
	struct tc *t = *state;
	struct vu_log *log1, *log2;
	struct vu_msg_hdr hdr;
	struct vu_guest *g;
	uint32_t bases[2];
	size_t lmark;

	tc_probe(t, 1, NULL);
	g = tc_guest(t, 0, 1, 256, false);
	tc_connect(t);
	assert_int_equal(vu_device_init(t->c, NULL), 0);
	assert_int_equal(vu_log_create(&log1, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_log_create(&log2, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log(t->c, log1), 0);
	lmark = lmh_log_mark();
	mlx5_lm_worker_hold(t->d.dev, 1);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	/* Sent now, answered once vhost's thread is past the held DRIVER_OK. */
	payload[0] = log2->size;
	payload[1] = 0;
	assert_int_equal(vu_send_raw(t->c, VU_SET_LOG_BASE, VU_FLAG_VERSION, payload,
				     sizeof(payload), &log2->fd, 1), 0);
	mlx5_lm_worker_hold(t->d.dev, 0);
	wait_running(t);
	assert_true(vu_recv_raw(t->c, &hdr, &reply, sizeof(reply), DEADLINE_MS) >= 0);
	assert_int_equal(hdr.request, VU_SET_LOG_BASE);
	assert_int_equal(reply, 0);
	vu_guest_dirty_mark(g);
	traffic(g, 0x1, 64);
	fe_stop(t, 2, bases);
	assert_int_equal(pages_missing(g, log2), 0);
	assert_true(lmh_log_has(lmark, "dirty-page logging moved to a new log"));
	tc_disconnect(t);
	vu_log_destroy(log1);
	vu_log_destroy(log2);
}

/* ---- 5. ERR recovery ---------------------------------------------------------- */

static bool
p_rdy_new(const struct tcmd *c, const void *arg)
{
	const uint32_t *a = arg; /* { qidx, old id } */

	return is_state_modify(c, PRM_VIRTQ_STATE_RDY) && c->qidx == (int)a[0] &&
	       c->obj_id != a[1];
}

/* Since from, queue q was queried, destroyed, created and resumed, in that order. */
static void
check_recovery_sequence(struct tc *t, size_t from, int q, uint32_t old)
{
	size_t k, step = 0;

	for (k = from; k < t->tr.n && step < 4; k++) {
		const struct tcmd *c = &t->tr.c[k];

		if (c->qidx != q)
			continue;
		if (step == 0 && c->opcode == PRM_CMD_QUERY_GENERAL_OBJECT && c->obj_id == old)
			step = 1;
		else if (step == 1 && c->opcode == PRM_CMD_DESTROY_GENERAL_OBJECT &&
			 c->obj_id == old)
			step = 2;
		else if (step == 2 && c->opcode == PRM_CMD_CREATE_GENERAL_OBJECT &&
			 c->status == 0)
			step = 3;
		else if (step == 3 && p_rdy(c, &q) && c->obj_id != old)
			step = 4;
	}
	assert_int_equal(step, 4);
}

static void
test_queue_in_err_is_recreated_at_most_three_times(void **state)
{
	struct tc *t = *state;
	const int q = 3; /* TX of pair 1 */
	char line[128];
	uint32_t bases[4], arg[2];
	struct vu_guest *g;
	unsigned int k, i;
	size_t mark, lmark;

	g = tc_start(t, 2, NULL);
	traffic(g, 0x3, 200);
	for (k = 1; k <= 3; k++) {
		arg[0] = (uint32_t)q;
		arg[1] = vq_id(t, q);
		mark = trace_mark(&t->tr);
		lmark = lmh_log_mark();
		assert_int_equal(lmh_vq_force_error(&t->d, arg[1], EMU_VQ_ERROR_BAD_DESC), 0);
		assert_true(wait_trace(&t->tr, mark, p_rdy_new, arg, 1));
		dev_barrier(t);
		check_recovery_sequence(t, mark, q, arg[1]);
		/* The other queues are not touched by the recovery. */
		for (i = 0; i < 4; i++) {
			int other = (int)i;

			if (other != q)
				assert_int_equal(trace_count(&t->tr, mark, p_vq_any, &other), 0);
		}
		/* Logged with the queue and the error type. */
		snprintf(line, sizeof(line), "queue 3 (tx 1): in ERR (error_type %u",
			 EMU_VQ_ERROR_BAD_DESC);
		assert_true(lmh_log_has(lmark, line));
		snprintf(line, sizeof(line), "(recovery %u/3)", k);
		assert_true(lmh_log_has(lmark, line));
		assert_int_equal(vq_state(t, q), PRM_VIRTQ_STATE_RDY);
		/* Both pairs work: the recovered queue included. */
		traffic(g, 0x3, 200);
	}
	/* A 4th error: the queue is left stopped, and nothing else stops. */
	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	assert_int_equal(lmh_vq_force_error(&t->d, vq_id(t, q), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_true(wait_log(lmark, "after 3 recoveries: left stopped"));
	dev_barrier(t);
	assert_int_equal(trace_count(&t->tr, mark, p_vq_create, NULL), 0);
	assert_int_equal(trace_count(&t->tr, mark, p_vq_destroy, NULL), 0);
	assert_int_equal(vq_state(t, q), PRM_VIRTQ_STATE_ERR);
	traffic(g, 0x1, 300);
	fe_stop(t, 4, bases);
}

/*
 * A TX descriptor pointing outside guest memory: the emulated data path
 * puts the queue in ERR (OBJECT_CHANGE), the driver re-creates it from the
 * used index, the device meets the same descriptor again, three times,
 * and then the queue stays stopped. No crash; pair 0 keeps working.
 */
static void
test_descriptor_outside_guest_memory_errs_the_queue_not_the_process(void **state)
{
	struct tc *t = *state;
	const int q = 3;
	struct rte_vdpa_stat stats[8];
	struct vu_ring_info ri;
	uint32_t bases[4];
	struct vu_guest *g;
	uint16_t aidx, id;
	uint64_t bad = 2ull << 30; /* guest memory is [0, 1 GiB) */
	size_t mark, lmark;
	int n;

	g = tc_start(t, 2, NULL);
	traffic(g, 0x3, 100);

	/* Park the TX ring so the device cannot read the descriptor before we spoil it. */
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_set_vring_enable(t->c, q, false), 0);
	assert_true(wait_trace(&t->tr, mark, p_suspend, &q, 1));
	dev_barrier(t);
	assert_int_equal(vu_guest_tx(g, 1, 1), 1);
	assert_int_equal(vu_guest_ring_info(g, q, &ri), 0);
	memcpy(&aidx, (uint8_t *)ri.avail + 2, 2);
	memcpy(&id, (uint8_t *)ri.avail + 4 + 2 * ((aidx - 1) & (ri.num - 1)), 2);
	memcpy((uint8_t *)ri.desc + 16 * id, &bad, 8);

	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_vring_enable(t->c, q, true), 0);
	assert_true(wait_log(lmark, "after 3 recoveries: left stopped"));
	dev_barrier(t);
	assert_true(lmh_log_has(lmark, "queue 3 (tx 1): in ERR (error_type 1"));
	assert_int_equal(trace_count(&t->tr, mark, p_vq_create, &q), 3);
	assert_int_equal(vq_state(t, q), PRM_VIRTQ_STATE_ERR);
	/* The device counted the bad descriptor on the queue's counter set. */
	n = rte_vdpa_get_stats(t->d.vdpa, q, stats, RTE_DIM(stats));
	assert_int_equal(n, 6);
	/* Upstream's order: 2 "bad descriptor errors", 4 "invalid buffer". */
	assert_true(stats[2].value + stats[4].value >= 1);
	traffic(g, 0x1, 300);
	fe_stop(t, 4, bases);
	/* What the device completed before the bad chain is what vhost gets back. */
	assert_int_equal(bases[q], 100);
}

/* ---- 6. dev_conf failing mid-way -------------------------------------------- */

/* After a failed DRIVER_OK: nothing RDY, every object back to the probe state. */
static void
check_clean_after_failed_conf(struct tc *t, unsigned int nrings)
{
	unsigned int i;

	assert_false(tc_running(t));
	for (i = 0; i < nrings; i++)
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	check_live_as_probed(t);
}

static void
reconnect_and_run(struct tc *t, struct vu_guest *g, unsigned int pairs)
{
	uint32_t bases[MAX_RINGS];
	size_t mark;
	unsigned int i;

	tc_disconnect(t);
	wait_restored(t);
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	for (i = 0; i < 2 * pairs; i++) {
		int q = (int)i;

		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 1);
	}
	traffic(g, (1u << pairs) - 1, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 2 * pairs), 0);
	check_bases(g, bases, pairs, false, 256);
}

static void
test_driver_ok_failing_midway_leaves_no_queue_ready(void **state)
{
	struct tc *t = *state;
	struct vu_guest *g;
	size_t mark, lmark;
	char fault[64];

	/* The 2nd virtq MODIFY of the device fails: the first is already RDY by then. */
	snprintf(fault, sizeof(fault), "%#x:2:%#x:%#x", PRM_CMD_MODIFY_GENERAL_OBJECT,
		 PRM_STATUS_BAD_RES_STATE, PRM_OBJ_VIRTIO_NET_Q);
	assert_int_equal(setenv("MLX5_LM_EMU_FAULT", fault, 1), 0);
	tc_probe(t, 4, NULL);
	assert_int_equal(unsetenv("MLX5_LM_EMU_FAULT"), 0);
	g = tc_guest(t, 0, 4, 256, false);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	/* vhost acks DRIVER_OK before dev_conf: the failure shows only in the trace. */
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	assert_true(wait_trace(&t->tr, mark, p_failed_vq_cmd, NULL, 1));
	dev_barrier(t);
	assert_true(lmh_log_has(lmark, "DRIVER_OK failed"));
	/* Some queue had reached RDY before the failure: it must not stay so. */
	assert_true(trace_count(&t->tr, mark, p_rdy, NULL) >= 1);
	check_clean_after_failed_conf(t, 8);
	/* A new front end on the same device: DRIVER_OK works, traffic flows. */
	reconnect_and_run(t, g, 4);
}

/*
 * The configuration runs in the device's worker after dev_conf returned
 * (issue 12 item 3): vhost never learns of a failure there, so it does not
 * call dev_conf again. The failure is the PMD's to report: the device is
 * not running, and rte_pmd_mlx5_lm_get_state() says FAILED with the reason
 * and the error, counted. The front end's next start finds a clean device.
 */
static void
test_driver_ok_failure_reported_through_the_public_api(void **state)
{
	struct tc *t = *state;
	struct rte_pmd_mlx5_lm_state st;
	struct vu_guest *g;
	size_t mark;

	tc_probe(t, 2, NULL);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_STOPPED);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 3, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	assert_true(wait_trace(&t->tr, mark, p_failed_vq_cmd, NULL, 1));
	dev_barrier(t);
	check_clean_after_failed_conf(t, 4);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_FAILED);
	assert_true(st.last_error < 0);
	assert_non_null(strstr(st.last_error_msg, "queue configuration failed"));
	assert_int_equal(st.conf_failures, 1);
	assert_int_equal(st.conf_count, 0);
	/* A new start of the front end: DRIVER_OK works, traffic flows. */
	reconnect_and_run(t, g, 2);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_STOPPED);
	assert_int_equal(st.conf_count, 1);
	assert_int_equal(st.conf_failures, 1);
	assert_int_equal(st.last_error, -EIO);
}

/*
 * parallel=0 (the old driver, the baseline of the benchmarks) configures
 * in vhost's thread and returns the result: vhost calls dev_conf again
 * after every later message of a front end whose DRIVER_OK failed, and
 * the retry finds a clean device and succeeds.
 */
static void
test_serial_driver_ok_retried_by_vhost_after_a_failure_succeeds(void **state)
{
	struct tc *t = *state;
	uint32_t bases[4];
	struct vu_guest *g;
	uint8_t status;
	size_t mark;

	tc_probe(t, 2, "parallel=0");
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 3, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	assert_true(wait_trace(&t->tr, mark, p_failed_vq_cmd, NULL, 1));
	dev_barrier(t);
	check_clean_after_failed_conf(t, 4);
	/* Any message: vhost calls dev_conf again after handling it. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	wait_running(t);
	traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	check_bases(g, bases, 2, false, 256);
}

/* ---- 6b. the asynchronous configuration (issue 12 item 3) ------------------- */

/* Hold the device's worker before its next configuration (a test seam), or let it go. */
static void
conf_hold(struct tc *t, int on)
{
	mlx5_lm_worker_hold(t->d.dev, on);
}

/* rte_pmd_mlx5_lm_get_state() reports `state` (bounded). */
static void
wait_state(struct tc *t, int state)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	struct rte_pmd_mlx5_lm_state st;

	for (;;) {
		assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
		if (st.state == state)
			return;
		if (lmh_now_ms() > deadline) {
			print_error("%s: state %d, expected %d\n", t->d.name, st.state, state);
			fail();
		}
		lmh_tick();
	}
}

/* Some thread waits for the configuration to finish (bounded). */
static void
wait_conf_waiter(struct tc *t)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	unsigned int n;

	for (;;) {
		n = mlx5_lm_conf_waiters(t->d.dev);
		if (n > 0)
			return;
		if (lmh_now_ms() > deadline) {
			print_error("%s: nothing waits for the configuration\n", t->d.name);
			fail();
		}
		lmh_tick();
	}
}

/* DRIVER_OK sent and taken by the PMD, the configuration held before its first command. */
static size_t
start_held(struct tc *t, struct vu_guest *g)
{
	size_t mark;

	conf_hold(t, 1);
	mark = trace_mark(&t->tr);
	/* vhost replies to DRIVER_OK, then calls dev_conf: which hands the work over. */
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_state(t, RTE_PMD_MLX5_LM_STATE_CONFIGURING);
	assert_int_equal(trace_count(&t->tr, mark, p_rdy, NULL), 0);
	assert_false(tc_running(t));
	return mark;
}

struct fe_call {
	struct tc *t;
	struct vu_mem *mem;
	uint32_t bases[MAX_RINGS];
	unsigned int n;
	int ret;
	pthread_t th;
};

static void *
fe_stop_main(void *arg)
{
	struct fe_call *f = arg;

	f->ret = vu_stop_device(f->t->c, f->bases, f->n);
	return NULL;
}

/*
 * vhost calls dev_close for a GET_VRING_BASE arriving while the
 * configuration runs: it waits for the configuration, then stops the queues
 * it made RDY, with their real bases; vhost's thread is never told about
 * queues that are not there yet.
 */
static void
test_stop_during_async_configuration_waits_for_it(void **state)
{
	struct tc *t = *state;
	struct fe_call f = { .t = t, .n = 4 };
	struct vu_guest *g;
	size_t mark;
	int q;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	mark = start_held(t, g);
	assert_int_equal(pthread_create(&f.th, NULL, fe_stop_main, &f), 0);
	wait_conf_waiter(t);
	conf_hold(t, 0);
	pthread_join(f.th, NULL);
	assert_int_equal(f.ret, 0);
	for (q = 0; q < 4; q++) {
		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 1);
		assert_int_equal(trace_count(&t->tr, mark, p_suspend, &q), 1);
	}
	assert_false(tc_running(t));
	wait_state(t, RTE_PMD_MLX5_LM_STATE_STOPPED);
	check_bases(g, f.bases, 2, false, 256);
	reconnect_and_run(t, g, 2);
}

static void *
fe_mem_main(void *arg)
{
	struct fe_call *f = arg;

	f->ret = vu_set_mem_table(f->t->c, f->mem);
	return NULL;
}

/*
 * A memory-table change arriving while the configuration runs: vhost 22.11
 * stops a configured device before it unmaps the old memory (dev_close
 * from SET_MEM_TABLE), so the stop waits for the configuration and then
 * undoes it, before vhost unmaps what the queues were given.
 */
static void
test_memory_table_change_during_async_configuration_waits_for_it(void **state)
{
	struct tc *t = *state;
	struct fe_call f = { .t = t };
	struct vu_guest *g;
	size_t mark, lmark;
	int q;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	assert_int_equal(vu_mem_create_qemu(&f.mem, 1), 0);
	tc_connect(t);
	mark = start_held(t, g);
	lmark = lmh_log_mark();
	assert_int_equal(pthread_create(&f.th, NULL, fe_mem_main, &f), 0);
	wait_conf_waiter(t);
	conf_hold(t, 0);
	pthread_join(f.th, NULL);
	assert_int_equal(f.ret, 0);
	/* Configured first (every ring RDY once), then stopped for the new table. */
	for (q = 0; q < 4; q++) {
		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 1);
		assert_int_equal(trace_count(&t->tr, mark, p_suspend, &q), 1);
	}
	assert_true(lmh_log_has(lmark, "configured in"));
	assert_true(lmh_log_has(lmark, "stopped in"));
	/* (vhost may configure the device again with the new table: not ours to check.) */
	tc_disconnect(t);
	wait_restored(t);
	tc_remove(t);
	vu_mem_destroy(f.mem);
}

static void *
fe_leave_main(void *arg)
{
	struct fe_call *f = arg;

	vu_disconnect(f->t->c);
	f->t->c = NULL;
	return NULL;
}

/*
 * The front end leaves and the device is removed while the configuration
 * runs: vhost's dev_close and dev_cleanup wait for it, removal waits for
 * the device's worker, and nothing is left behind (tc_remove checks the
 * emulator's live objects).
 */
static void
test_front_end_gone_and_removal_during_async_configuration(void **state)
{
	struct tc *t = *state;
	struct fe_call f = { .t = t };
	struct vu_guest *g;
	size_t mark, lmark;
	int q;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	mark = start_held(t, g);
	lmark = lmh_log_mark();
	assert_int_equal(pthread_create(&f.th, NULL, fe_leave_main, &f), 0);
	pthread_join(f.th, NULL);
	/* vhost's thread, in dev_close for the lost connection, waits for the worker. */
	wait_conf_waiter(t);
	conf_hold(t, 0);
	assert_true(lmh_wait_closed(0));
	assert_true(wait_log(lmark, "front end disconnected"));
	for (q = 0; q < 4; q++)
		assert_int_equal(trace_count(&t->tr, mark, p_rdy, &q), 1);
	assert_false(tc_running(t));
	wait_restored(t);
	tc_remove(t);
}

/*
 * Kicks of the guest while its device is being configured are not lost:
 * frames sent (and kicked) before the queues are RDY go out once they are,
 * without a further kick (the first doorbell after RDY covers them).
 */
static void
test_kicks_during_async_configuration_not_lost(void **state)
{
	struct tc *t = *state;
	struct vu_guest_stats st;
	uint32_t bases[4];
	struct vu_guest *g;
	unsigned int q;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);
	start_held(t, g);
	assert_int_equal(vu_guest_tx(g, 0, 16), 16);
	assert_int_equal(vu_guest_tx(g, 1, 16), 16);
	conf_hold(t, 0);
	wait_running(t);
	/*
	 * Only polls from here, no TX kick: every chain posted while held must
	 * complete. Their frames loop back to the device's own RX queues,
	 * which the configuration makes RDY in parallel with the TX queues:
	 * a frame sent before its RX queue is RDY is dropped by the wire, as
	 * by a NIC whose receive queue is not ready (seen once in the
	 * parallel suite: pair 0's 16 frames). What arrives is whole and
	 * once; what is lost is the wire's, not a kick's.
	 */
	assert_true(tx_complete(g, 0x3));
	for (q = 0; q < 2; q++) {
		vu_guest_stats(g, (int)q, &st);
		assert_int_equal(vu_guest_tx_sent(g, (int)q), 16);
		assert_int_equal(st.tx_completed, 16);
	}
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	/* Stopped: the used rings are final; reap what the device wrote last. */
	vu_guest_poll(g);
	vu_guest_stats(g, -1, &st);
	assert_int_equal(st.rx_bad + st.duplicates + st.dev_errors, 0);
	check_bases(g, bases, 2, false, 256);
}

/* ---- 7. ring address outside guest memory ----------------------------------- */

static void
test_ring_outside_guest_memory_fails_driver_ok_cleanly(void **state)
{
	struct tc *t = *state;
	static uint8_t not_guest[65536] __rte_aligned(4096);
	struct fe_ring rings[4];
	struct vu_ring_info ri;
	uint32_t bases[4];
	struct vu_guest *g;
	unsigned int i;
	size_t mark, lmark;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	for (i = 0; i < 4; i++) {
		rings[i].g = g;
		rings[i].ring = i;
		rings[i].bad_desc = 0;
	}
	/* Ring 2's descriptor ring at an address no memory region covers. */
	rings[2].bad_desc = (uintptr_t)not_guest;
	tc_connect(t);
	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	fe_start(t, rings, 4, 0xf);
	/*
	 * vhost cannot translate ring 2, so it never reports it ready: the
	 * device starts with the rings that are, leaves queue 2 blank and says
	 * which ring and why.
	 */
	assert_true(wait_log(lmark, "not in guest memory"));
	dev_barrier(t);
	assert_true(lmh_log_has(lmark, "queue 2 (rx 1)"));
	wait_running(t);
	/* Rings 0, 1 and 3 start; ring 2 stays blank. */
	assert_int_equal(trace_count(&t->tr, mark, p_vq_modify, NULL), 3);
	traffic(g, 0x1, 300);
	/* The front end corrects the address: vhost enables the ring, which starts. */
	assert_int_equal(vu_guest_ring_info(g, 2, &ri), 0);
	assert_int_equal(vu_set_vring_addr(t->c, 2, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
					   (uintptr_t)ri.avail, ri.log_gpa), 0);
	wait_running(t);
	traffic(g, 0x3, 300);
	fe_stop(t, 4, bases);
	check_bases(g, bases, 2, false, 256);
}

/* Ring 0 outside guest memory: vhost never starts the device, nothing happens to it. */
static void
test_first_ring_outside_guest_memory_never_configures(void **state)
{
	struct tc *t = *state;
	static uint8_t not_guest[65536] __rte_aligned(4096);
	struct fe_ring rings[2];
	struct vu_ring_info ri;
	uint32_t bases[2];
	struct vu_guest *g;
	uint8_t status;
	size_t mark;

	tc_probe(t, 1, NULL);
	g = tc_guest(t, 0, 1, 256, false);
	rings[0] = (struct fe_ring){ .g = g, .ring = 0, .bad_desc = (uintptr_t)not_guest };
	rings[1] = (struct fe_ring){ .g = g, .ring = 1 };
	tc_connect(t);
	mark = trace_mark(&t->tr);
	fe_start(t, rings, 2, 0x3);
	/* A round trip: vhost has handled DRIVER_OK and everything before it. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	dev_barrier(t);
	assert_false(tc_running(t));
	assert_int_equal(trace_count(&t->tr, mark, p_vq_any, NULL), 0);
	check_live_as_probed(t);
	assert_int_equal(vu_guest_ring_info(g, 0, &ri), 0);
	assert_int_equal(vu_set_vring_addr(t->c, 0, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
					   (uintptr_t)ri.avail, ri.log_gpa), 0);
	wait_running(t);
	traffic(g, 0x1, 300);
	fe_stop(t, 2, bases);
	check_bases(g, bases, 1, false, 256);
}

/* ---- 8. front end leaving mid-configuration --------------------------------- */

static void
test_front_end_leaving_midway_leaves_device_reusable(void **state)
{
	struct tc *t = *state;
	struct vu_ring_info ri;
	struct vu_guest *g;
	uint16_t create_mkey = PRM_CMD_CREATE_MKEY;
	unsigned int i;
	size_t mark;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);

	/* (a) Gone after SET_MEM_TABLE and some ring messages, before DRIVER_OK. */
	tc_connect(t);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_device_init(t->c, NULL), 0);
	assert_int_equal(vu_set_features(t->c, fe_features(t, false)), 0);
	assert_int_equal(vu_set_mem_table(t->c, t->mem), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		assert_int_equal(vu_set_vring_num(t->c, i, ri.num), 0);
		assert_int_equal(vu_set_vring_addr(t->c, i, 0, (uintptr_t)ri.desc,
						   (uintptr_t)ri.used, (uintptr_t)ri.avail,
						   ri.log_gpa), 0);
	}
	tc_disconnect(t);
	dev_barrier(t);
	assert_false(tc_running(t));
	assert_int_equal(trace_count(&t->tr, mark, p_vq_any, NULL), 0);
	assert_int_equal(trace_count(&t->tr, mark, p_opcode, &create_mkey), 0);
	check_live_as_probed(t);

	/* (b) Gone after DRIVER_OK, with traffic, without GET_VRING_BASE. */
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	traffic(g, 0x3, 300);
	mark = trace_mark(&t->tr);
	tc_disconnect(t);
	/* vhost's teardown closed the device: every queue suspended and queried. */
	check_close_suspends_then_queries(t, mark, 4, g, false);
	assert_false(tc_running(t));
	wait_restored(t);
	for (i = 0; i < 4; i++)
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	check_live_as_probed(t);

	/* (c) The next front end finds a working device. */
	reconnect_and_run(t, g, 2);
}

/* ---- ring fds changed while the device runs ---------------------------------- */

/*
 * QEMU sends SET_VRING_CALL (and KICK) to a running device, e.g. when the
 * guest masks or unmasks a vector; vhost tells the driver through
 * set_vring_state(0) then (1). Kicks must then come from the new kickfd
 * and completions go to the new callfd.
 */
static void
test_ring_fds_changed_while_running_are_used(void **state)
{
	struct tc *t = *state;
	struct pollfd pfd;
	uint32_t bases[2];
	struct vu_guest *g;
	uint8_t status;
	unsigned int i;

	g = tc_start(t, 1, NULL);
	traffic(g, 0x1, 300);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(vu_set_vring_kick(t->c, i, vu_guest_kickfd(g, i)), 0);
		assert_int_equal(vu_set_vring_call(t->c, i, vu_guest_callfd(g, i)), 0);
	}
	/* A round trip: vhost has told the driver about every change. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	dev_barrier(t);
	assert_int_equal(vq_state(t, 0), PRM_VIRTQ_STATE_RDY);
	assert_int_equal(vq_state(t, 1), PRM_VIRTQ_STATE_RDY);
	/* Frames kicked through the new kickfd are sent; the new TX callfd fires. */
	assert_int_equal(vu_guest_tx(g, 0, 8), 8);
	pfd.fd = vu_guest_callfd(g, 1);
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, DEADLINE_MS) != 1)
		print_error("no completion signalled on the new callfd of ring 1 "
			    "(TX inflight %" PRIu64 ")\n", vu_guest_tx_inflight(g, 0));
	assert_true(pfd.revents & POLLIN);
	traffic_settle(g, 0x1);
	traffic(g, 0x1, 300);
	fe_stop(t, 2, bases);
	check_bases(g, bases, 1, false, 256);
}

/*
 * A front end that restarts a stopped device without resetting the status
 * (DRIVER_OK still set, as before QEMU 7.2 or the vu library's restart):
 * vhost calls dev_conf as soon as rings 0-1 are back, while the others are
 * still being set up. Every ring must run once it is complete.
 */
static void
test_restart_without_status_reset_runs_every_ring(void **state)
{
	struct tc *t = *state;
	struct vu_start_opts o = { 0 };
	uint32_t bases[4];
	struct vu_guest *g;

	g = tc_start(t, 2, NULL);
	traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	wait_restored(t);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	wait_running(t);
	traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	check_bases(g, bases, 2, false, 256);
}

/* ---- isolated cases: a crash there must not take the other tests down ------- */

/*
 * A re-creation (ring of 1024 on queues of 256) whose CREATE fails: the
 * device is left clean (nothing RDY, every pre-created queue back, no
 * leak) and the next DRIVER_OK re-creates the queues and runs.
 */
static void
run_failed_recreation(struct tc *t, unsigned int queues)
{
	/* Serial configuration: the RX queue's CREATE is the one that fails. */
	const char *serial = "parallel=0";
	uint32_t bases[2];
	struct vu_guest *g;
	unsigned int i;
	size_t mark, lmark;

	tc_probe(t, queues, serial);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_CREATE_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 1, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 1, 1024, false);
	tc_connect(t);
	mark = trace_mark(&t->tr);
	lmark = lmh_log_mark();
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	assert_true(wait_trace(&t->tr, mark, p_failed_vq_cmd, NULL, 1));
	dev_barrier(t);
	assert_true(lmh_log_has(lmark, "DRIVER_OK failed"));
	assert_false(tc_running(t));
	for (i = 0; i < 2 * queues; i++)
		assert_int_equal(vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	check_live_as_probed(t);
	tc_disconnect(t);
	wait_restored(t);
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t);
	traffic(g, 0x1, 2000);
	fe_stop(t, 2, bases);
	assert_int_equal(bases[1], 2000);
}

static void
isolated_failed_recreation_two_pairs(void **state)
{
	run_failed_recreation(*state, 2);
}

static void
isolated_failed_recreation_single_pair(void **state)
{
	run_failed_recreation(*state, 1);
}

/*
 * An RX queue in ERR whose re-creation fails: the queue stays stopped, the
 * other pair keeps receiving, the device stops and restarts cleanly.
 */
static void
isolated_failed_rx_recovery(void **state)
{
	struct tc *t = *state;
	uint32_t bases[4];
	struct vu_guest *g;
	size_t lmark;

	g = tc_start(t, 2, NULL);
	traffic(g, 0x3, 200);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_CREATE_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 1, PRM_STATUS_NO_RESOURCES, 0), 0);
	lmark = lmh_log_mark();
	assert_int_equal(lmh_vq_force_error(&t->d, vq_id(t, 0), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_true(wait_log(lmark, "cannot create the virtq"));
	dev_barrier(t);
	traffic(g, 0x3, 200);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	reconnect_and_run(t, g, 2);
}

static const struct CMUnitTest isolated_tests[] = {
	cmocka_unit_test_setup_teardown(isolated_failed_recreation_two_pairs, tc_setup,
					tc_teardown),
	cmocka_unit_test_setup_teardown(isolated_failed_recreation_single_pair, tc_setup,
					tc_teardown),
	cmocka_unit_test_setup_teardown(isolated_failed_rx_recovery, tc_setup, tc_teardown),
};

/*
 * Run one isolated test in a fresh process of this program: a driver crash
 * in a vhost or pool thread would otherwise end the whole run.
 */
static void
run_isolated(const char *name)
{
	char *argv[] = { (char *)self_exe, (char *)"--isolated", (char *)name, NULL };
	int64_t deadline = lmh_now_ms() + 4 * DEADLINE_MS;
	char child_eal_dir[PATH_MAX], parent[PATH_MAX];
	int wstatus = 0;
	pid_t pid, r;

	/* The child's directory inside ours: removed with ours even if it crashes. */
	assert_int_equal(setenv("LMH_TMPDIR_PARENT", lmh_tmpdir(), 1), 0);
	assert_int_equal(posix_spawn(&pid, self_exe, NULL, NULL, argv, environ), 0);
	assert_int_equal(unsetenv("LMH_TMPDIR_PARENT"), 0);
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

static void
test_failed_recreation_during_driver_ok_unwinds_cleanly(void **state)
{
	(void)state;
	run_isolated("isolated_failed_recreation_two_pairs");
}

static void
test_failed_rx_recreation_on_single_pair_device_unwinds_cleanly(void **state)
{
	(void)state;
	run_isolated("isolated_failed_recreation_single_pair");
}

static void
test_failed_recovery_of_an_rx_queue_leaves_device_usable(void **state)
{
	(void)state;
	run_isolated("isolated_failed_rx_recovery");
}

/*
 * The driver's threads whose name starts with prefix: none may run on the
 * main lcore's CPU when the machine has another (EAL's control CPUs are
 * the others). Returns how many there are.
 */
static unsigned int
driver_threads_off_the_lcore(const char *prefix)
{
	rte_cpuset_t lcore = rte_lcore_cpuset(rte_get_main_lcore());
	bool several = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	unsigned int threads = 0;
	struct dirent *e;
	DIR *dir;

	dir = opendir("/proc/self/task");
	assert_non_null(dir);
	while ((e = readdir(dir)) != NULL) {
		char path[300], comm[32] = "";
		cpu_set_t set, both;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;  /* the thread ended meanwhile */
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		if (strncmp(comm, prefix, strlen(prefix)) != 0)
			continue;
		assert_int_equal(sched_getaffinity(atoi(e->d_name), sizeof(set), &set), 0);
		CPU_AND(&both, &set, &lcore);
		if (several && CPU_COUNT(&both) != 0) {
			print_error("thread %s (%s) may run on the lcore's CPU\n", e->d_name, comm);
			fail();
		}
		threads++;
	}
	closedir(dir);
	return threads;
}

/*
 * The driver's threads name themselves once they run, and nobody waits for
 * that: look (bounded) until at least n threads named prefix* run off the
 * lcore. Returns how many there are then.
 */
static unsigned int
wait_driver_threads(const char *prefix, unsigned int n)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	unsigned int seen;

	while ((seen = driver_threads_off_the_lcore(prefix)) < n && lmh_now_ms() < deadline)
		lmh_tick();
	return seen;
}

/*
 * The PMD's threads (pool workers, configuration, deferred work,
 * notifications) are DPDK control threads: none runs on the CPU of an lcore,
 * where an application polls (the harness's EAL has lcore 0 only). Created
 * with plain pthread_create they inherited the main lcore's CPU: the whole
 * driver then shared one CPU with the application (issue 12, measured).
 */
static void
test_driver_threads_stay_off_the_lcores(void **state)
{
	const unsigned int pairs = 2;
	struct tc *t = *state;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		print_message("one CPU: EAL's control CPUs are the lcore's, nothing to check\n");
		skip();
	}
	t->g[0] = tc_start(t, pairs, NULL);
	/* At least a worker, the configuration thread and the notification thread. */
	assert_true(wait_driver_threads("mlx5-lm-", 3) >= 3);
	tc_disconnect(t);
	tc_remove(t);
}

/* The size of this process's fd table (/proc/self/status FDSize), or 0. */
static unsigned long
fd_table_size(void)
{
	char line[128];
	unsigned long n = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "FDSize: %lu", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

/*
 * Descriptors vhost receives in its thread (a kick and a call eventfd per
 * ring) must not make the kernel grow the fd table there: expand_fdtable
 * waits for an RCU grace period (15 ms measured with 8 VMs starting at
 * once, in the downtime of all of them). The driver sizes the table at
 * probe for every ring of every probed device: both ends of each eventfd
 * and the relay's duplicates of the kick and call fds, 6 per ring.
 */
static void
test_fd_table_sized_at_probe_for_every_ring(void **state)
{
	const unsigned int pairs = 64;
	struct tc *t = *state;
	int low;

	tc_probe(t, pairs, NULL);
	low = open("/dev/null", O_RDONLY);
	assert_true(low >= 0);
	close(low);
	if (fd_table_size() < (unsigned long)low + 6 * 2 * pairs) {
		print_error("fd table of %lu for %u rings above fd %d\n", fd_table_size(),
			    2 * pairs, low);
		fail();
	}
	tc_remove(t);
}

/*
 * A stop runs in vhost's thread, inside the downtime of every VM whose
 * messages queue behind it: it must not wait for a thread to be scheduled
 * (rte_ctrl_thread_create polls until its new thread runs: 2.6 ms of each
 * stop measured with 8 VMs stopping at once on 2 CPUs), nor make one at
 * all: the deferred restore is the device's worker's job, and the worker
 * is the one thread of the device it was before the stop.
 */
static void
test_stop_makes_no_thread(void **state)
{
	const unsigned int pairs = 2, nrings = 2 * pairs;
	struct tc *t = *state;
	uint32_t bases[MAX_RINGS];
	unsigned int before;
	uint64_t made;

	tc_start(t, pairs, "mr_gc_ms=600000");
	before = wait_driver_threads("mlx5-lm-", 3);
	made = mlx5_lm_ctrl_thread_creates();
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	assert_int_equal(mlx5_lm_ctrl_thread_creates(), made);
	/* Deferred (ten minutes): the worker holds it, no thread waits for it. */
	assert_int_equal(mlx5_lm_restore_pending(t->d.dev), 1);
	assert_int_equal(driver_threads_off_the_lcore("mlx5-lm-"), before);
	tc_disconnect(t);
	tc_remove(t);
}

/*
 * A DRIVER_OK that needs the deferred restore makes it foreground work of
 * its own start: background work pauses before each command while any
 * device of the process is starting or stopping (mlx5_lm_fg_enter), and
 * with other devices busy the restore, and so this start, waited for all
 * of them. Another device's start is stood in for by holding the
 * foreground from the test for the whole DRIVER_OK.
 */
static void
test_driver_ok_waiting_for_the_restore_does_not_wait_for_other_devices(void **state)
{
	const unsigned int pairs = 2, nrings = 2 * pairs;
	struct vu_start_opts o = { 0 };
	uint32_t bases[MAX_RINGS];
	struct tc *t = *state;
	struct vu_guest *g;
	bool running;

	g = tc_start(t, pairs, "mr_gc_ms=600000");
	traffic(g, 0x3, 50);
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	assert_int_equal(vu_set_status(t->c, 0), 0);
	mlx5_lm_fg_enter();
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	running = lmh_wait_running(&t->d, DEADLINE_MS);
	mlx5_lm_fg_exit();
	if (!running)
		print_error("DRIVER_OK waited for the restore behind another device's start\n");
	assert_true(running);
	traffic(g, 0x3, 50);
	tc_disconnect(t);
	tc_remove(t);
}

/* ---- main ------------------------------------------------------------------- */

/*
 * The restore of blank queues after a stop is deferred like the
 * registrations (mr_gc_ms), so that it stays out of the downtime of the
 * devices stopping and starting meanwhile (issue 12, evacuate), and runs
 * at once when the device is needed: a DRIVER_OK, a removal. mr_gc_ms is
 * ten minutes here: the test finishes only if those two start it.
 */
static void
test_restore_deferred_until_the_device_is_needed(void **state)
{
	const unsigned int pairs = 2, nrings = 2 * pairs;
	struct vu_start_opts o = { 0 };
	uint32_t bases[MAX_RINGS];
	struct rte_vdpa_stat stats[16];
	struct tc *t = *state;
	uint64_t completed;
	struct vu_guest *g;
	unsigned int q;
	size_t mark;
	int restoring;

	g = tc_start(t, pairs, "mr_gc_ms=600000");
	traffic(g, 0x3, 50);
	mark = trace_mark(&t->tr);
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	/* Stopped: the restore waits (set before dev_close returned), nothing destroyed. */
	restoring = mlx5_lm_restore_pending(t->d.dev);
	assert_int_equal(restoring, 1);
	trace_sync(&t->tr);
	assert_int_equal(trace_count(&t->tr, mark, p_vq_destroy, NULL), 0);
	/*
	 * While the restore is only deferred, the stopped queues' counters
	 * are there to read (a monitoring tool polling a stopped VM's device
	 * got -EBUSY for mr_gc_ms after every stop): 50 frames each way on
	 * both pairs, every one completed on a TX and an RX queue.
	 */
	for (q = 0, completed = 0; q < nrings; q++) {
		assert_int_equal(rte_vdpa_get_stats(t->d.vdpa, (int)q, stats, RTE_DIM(stats)), 6);
		completed += stats[1].value;
	}
	assert_true(completed >= 4 * 50);
	/* DRIVER_OK needs blank queues: the restore runs now, then the configuration. */
	assert_int_equal(vu_set_status(t->c, 0), 0);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	wait_running(t);
	trace_sync(&t->tr);
	assert_true(trace_count(&t->tr, mark, p_vq_destroy, NULL) > 0);
	traffic(g, 0x3, 50);
	/* The disconnect stops it again; the removal does not wait ten minutes either. */
	tc_disconnect(t);
	tc_remove(t);
}

struct unmapper {
	void *addr;
	size_t len;
	size_t mark;
	bool seen;
};

/* The front end lets the old notifier go once the new probe waits for it. */
static void *
unmap_when_waited_for(void *arg)
{
	struct unmapper *u = arg;

	u->seen = lmh_wait_log(u->mark, "no VAR free (mlx5dv_alloc_var: ENOSPC), attempt",
			       LMH_DEADLINE_MS);
	munmap(u->addr, u->len);
	return NULL;
}

/* The front end's host-notifier mapping of d's doorbell page (QEMU mmaps what vhost sends). */
static void *
map_notifier(struct lmh_dev *d, size_t *len)
{
	uint64_t off, size;
	void *p;
	int fd;

	assert_int_equal(devx_db_mmap_info(d->dev->db, &fd, &off, &size), 0);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	assert_true(p != MAP_FAILED);
	*len = size;
	return p;
}

/*
 * Issue 19 item 5: the kernel keeps a VAR (and its context) while any
 * mapping of it lasts, QEMU's host notifier included (Linux main.c
 * mlx5_ib_mmap_free), and the device has one: a re-probe of the function
 * while the front end still maps the previous probe's doorbell page finds
 * none free (ENOSPC). The driver waits for it as DPDK vdpa/mlx5 does (7
 * attempts, 100 ms << n apart): released meanwhile, the probe succeeds;
 * never released, it fails with an error naming the cause, leaving
 * nothing behind; released then, the next probe succeeds.
 */
static void
test_reprobe_waits_for_the_front_end_to_release_the_notifier(void **state)
{
	struct lmh_dev d1, d2, d3;
	struct unmapper u = { 0 };
	pthread_t th;
	size_t mark, len;
	void *map;

	(void)state;
	if (!lmh_rdma()) {
		printf("  skipped on emu=: the emu back end maps no VAR (lifecycle_rdma does)\n");
		skip();
	}
	assert_int_equal(lmh_probe(&d1, -1, "queues=1,mr_gc_ms=0"), 0);
	u.addr = map_notifier(&d1, &u.len);
	assert_int_equal(lmh_remove(&d1), 0);
	lmh_reuse_ibdev(&d1);
	u.mark = lmh_log_mark();
	assert_int_equal(pthread_create(&th, NULL, unmap_when_waited_for, &u), 0);
	assert_int_equal(lmh_probe(&d2, -1, "queues=1,mr_gc_ms=0"), 0);
	pthread_join(th, NULL);
	assert_true(u.seen);
	assert_true(lmh_log_has(u.mark, "VAR allocated after"));

	/* Never released: the probe gives up, saying why. */
	map = map_notifier(&d2, &len);
	assert_int_equal(lmh_remove(&d2), 0);
	lmh_reuse_ibdev(&d2);
	mark = lmh_log_mark();
	assert_int_not_equal(lmh_probe(&d3, -1, "queues=1,mr_gc_ms=0"), 0);
	assert_true(lmh_log_has(mark, "no VAR free after 7 attempts"));
	assert_true(lmh_log_has(mark, "still maps it"));
	assert_int_equal(lmh_failed_probe_left(&d3), 0);
	munmap(map, len);
	lmh_reuse_ibdev(&d2);
	assert_int_equal(lmh_probe(&d3, -1, "queues=1,mr_gc_ms=0"), 0);
	assert_int_equal(lmh_remove(&d3), 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reprobe_waits_for_the_front_end_to_release_the_notifier),
		cmocka_unit_test_setup_teardown(
			test_driver_ok_modifies_each_queue_once_and_close_suspends_and_queries,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_packed_rings_driver_ok_and_close,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_ring_of_another_size_recreates_only_its_queue,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_disabling_pairs_suspends_only_them_and_shrinks_the_rqt,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_three_enabled_pairs_fill_a_power_of_two_rqt,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_pairs_beyond_the_front_end_stay_init,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_rings_set_up_but_not_enabled_stay_out_of_rdy,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_disabled_pairs_stay_suspended_when_logging_starts,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_queue_in_err_is_recreated_at_most_three_times,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_descriptor_outside_guest_memory_errs_the_queue_not_the_process,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_driver_ok_failing_midway_leaves_no_queue_ready,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_driver_ok_failure_reported_through_the_public_api,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_serial_driver_ok_retried_by_vhost_after_a_failure_succeeds,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_stop_during_async_configuration_waits_for_it,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_memory_table_change_during_async_configuration_waits_for_it,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_front_end_gone_and_removal_during_async_configuration,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_kicks_during_async_configuration_not_lost,
						tc_setup, tc_teardown),
		cmocka_unit_test(test_failed_recreation_during_driver_ok_unwinds_cleanly),
		cmocka_unit_test(test_failed_rx_recreation_on_single_pair_device_unwinds_cleanly),
		cmocka_unit_test(test_failed_recovery_of_an_rx_queue_leaves_device_usable),
		cmocka_unit_test_setup_teardown(
			test_ring_outside_guest_memory_fails_driver_ok_cleanly,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_first_ring_outside_guest_memory_never_configures,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_front_end_leaving_midway_leaves_device_reusable,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_ring_fds_changed_while_running_are_used,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_restart_without_status_reset_runs_every_ring,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_restore_deferred_until_the_device_is_needed,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_driver_ok_waiting_for_the_restore_does_not_wait_for_other_devices,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_driver_threads_stay_off_the_lcores,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_fd_table_sized_at_probe_for_every_ring,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_stop_makes_no_thread, tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_log_start_rings_every_running_queue,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(test_log_on_at_driver_ok_logs_before_any_queue_runs,
						tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_new_log_base_while_logging_is_the_log_the_device_marks,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_new_log_base_during_a_held_configuration_is_the_log_registered,
			tc_setup, tc_teardown),
		cmocka_unit_test_setup_teardown(
			test_front_end_gone_after_new_device_failed_leaves_nothing_running,
			tc_setup, tc_teardown),
	};
	int ret;

	self_exe = "/proc/self/exe";
	/* Guest frames must not be lost to a SIGPIPE when a socket closes. */
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && strcmp(argv[1], "--isolated") == 0) {
		cmocka_set_test_filter(argv[2]);
		/* One socket for the whole run; each test attaches its own device to it. */
		if (lmh_init(argv[0], "test-lifecycle", 1) < 0)
			return 1;
		ret = cmocka_run_group_tests_name("isolated", isolated_tests, NULL, NULL);
		lmh_fini();
		return ret;
	}
	if (argc == 2)
		cmocka_set_test_filter(argv[1]);
	if (lmh_init(argv[0], "test-lifecycle", 1) < 0)
		return 1;
	ret = cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
	lmh_fini();
	return ret;
}
