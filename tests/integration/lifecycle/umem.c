/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, the umem parameters of the virtio emulation caps
 * (umem_N_buffer_param_a/b) changed by the firmware at runtime, as when
 * the PF's MTU is set to 9000 after the switch to switchdev (Linux commit
 * abb0dcf9938c "vdpa/mlx5: Fix firmware error on creation of 1k VQs"):
 * every queue created after probe - re-created at DRIVER_OK for another
 * ring size, re-created from ERR, put back to blank by the restore after a
 * stop, re-created when enabled after DRIVER_OK - is sized from the values
 * the device reports at that time, read once per batch of creations; a
 * creation refused for its umems all the same is retried once after
 * reading them again. The emulator refuses a queue sized from stale values
 * with BAD_RESOURCE, as that firmware does (emu_dev_set_umem_params).
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>

#include "lifecycle.h"
#include "mlx5_lm_test.h"

#define NRINGS 4

/* Commands since from that the device refused, each printed. */
static unsigned int
refusals(struct tc *t, size_t from)
{
	unsigned int n = 0;
	size_t k;

	tc_sync(t);
	for (k = from; k < t->tr.n; k++) {
		const struct lmh_cmd *c = &t->tr.c[k];

		if (!c->is_cmd || c->status == 0)
			continue;
		print_error("%s: refused: %s (opcode 0x%x, obj_type 0x%x, queue %d) status 0x%x "
			    "syndrome 0x%08x\n", t->d.name, c->op, c->opcode, c->obj_type, c->qidx,
			    c->status, c->syndrome);
		n++;
	}
	return n;
}

/*
 * The virtq CREATEs since from, each checked: umem N of a queue of
 * queue_size entries sized a[N] * queue_size + b[N] exactly, what the
 * device reports now. Refused ones are not counted (refusals() names them).
 */
static unsigned int
creates_sized(struct tc *t, size_t from, const uint32_t a[3], const uint32_t b[3])
{
	unsigned int made;

	tc_sync(t);
	assert_int_equal(lmh_vq_creates_missized(&t->tr, from, a, b, &made), 0);
	return made;
}

static const uint16_t query_hca_cap = PRM_CMD_QUERY_HCA_CAP;

/* QUERY_HCA_CAPs since from. */
static unsigned int
queries(struct tc *t, size_t from)
{
	return tc_count(t, from, tc_p_opcode, &query_hca_cap);
}

/* Index of the first command since from satisfying p, SIZE_MAX if none. */
static size_t
first(struct tc *t, size_t from, lmh_trace_pred p, const void *arg)
{
	size_t k;

	tc_sync(t);
	for (k = from; k < t->tr.n; k++)
		if (p(&t->tr.c[k], arg))
			return k;
	return SIZE_MAX;
}

/* The device's parameters read before the batch's first creation, once. */
static void
check_read_once_before_creating(struct tc *t, size_t from)
{
	assert_int_equal(queries(t, from), 1);
	assert_true(first(t, from, tc_p_opcode, &query_hca_cap) <
		    first(t, from, tc_p_vq_create, NULL));
}

/* A successful RDY of a queue, or a refused virtq command: what a batch ends with. */
static bool
p_rdy_or_refused(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return tc_p_rdy(c, NULL) || tc_p_failed_vq_cmd(c, NULL);
}

/* A successful RDY of queue a[0] on an object other than a[1]: its recovery's. */
static bool
p_rdy_new(const struct lmh_cmd *c, const void *arg)
{
	const uint32_t *a = arg;

	return tc_p_rdy(c, NULL) && c->qidx == (int)a[0] && c->obj_id != a[1];
}

static bool
p_recovered_or_refused(const struct lmh_cmd *c, const void *arg)
{
	return p_rdy_new(c, arg) || tc_p_failed_vq_cmd(c, NULL);
}

/*
 * Running after DRIVER_OK; if not, say why: the configuration failed
 * (logged) on what the device refused (printed).
 */
static void
wait_running(struct tc *t, size_t mark, size_t lmark)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;

	while (!tc_running(t) && !lmh_log_has(lmark, "DRIVER_OK failed") &&
	       lmh_now_ms() < deadline)
		lmh_tick();
	assert_int_equal(refusals(t, mark), 0);
	tc_wait_running(t);
}

/*
 * Probed with blank queues of 128 entries (the probe's parameters), the
 * guest's rings of 256: the firmware grows the parameters before each step
 * (the figures are the test's own, each larger than the last, as with a
 * 9000-byte MTU), and each step's creations must be sized from what it
 * reports then: DRIVER_OK re-creating every queue (another size), an ERR
 * recovery, the restore after a stop (in the background, mr_gc_ms after
 * it), a DRIVER_OK with pair 1 not enabled, then pair 1 enabled. Nothing
 * refused, traffic after each.
 */
static void
test_queues_created_after_the_umem_params_grew_are_sized_from_them(void **state)
{
	static const uint32_t a[5][3] = {
		{ 192, 128, 24 }, { 256, 160, 32 }, { 320, 192, 40 }, { 384, 224, 48 },
		{ 448, 256, 56 },
	};
	static const uint32_t b[5][3] = {
		{ 8192, 12288, 16384 }, { 12288, 16384, 20480 }, { 16384, 20480, 24576 },
		{ 20480, 24576, 28672 }, { 24576, 28672, 32768 },
	};
	struct tc_ring rings[NRINGS];
	uint32_t bases[NRINGS], arg[2];
	struct tc *t = *state;
	struct vu_guest *g;
	size_t mark, lmark;
	int64_t deadline;
	unsigned int i;

	tc_probe(t, 2, "queue_size=128,mr_gc_ms=50");
	g = tc_guest(t, 0, 2, 256, false);
	tc_connect(t);

	/* DRIVER_OK: every queue re-created with 256 entries. */
	assert_int_equal(lmh_set_umem_params(&t->d, a[0], b[0]), 0);
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_running(t, mark, lmark);
	assert_int_equal(creates_sized(t, mark, a[0], b[0]), NRINGS);
	check_read_once_before_creating(t, mark);
	tc_traffic(g, 0x3, 200);

	/* A queue in ERR, re-created by its recovery. */
	assert_int_equal(lmh_set_umem_params(&t->d, a[1], b[1]), 0);
	arg[0] = 3;
	arg[1] = tc_vq_id(t, 3);
	mark = tc_mark(t);
	assert_int_equal(lmh_vq_force_error(&t->d, arg[1], EMU_VQ_ERROR_BAD_DESC), 0);
	assert_true(tc_wait_trace(t, mark, p_recovered_or_refused, arg, 1));
	tc_barrier(t);
	assert_int_equal(refusals(t, mark), 0);
	assert_int_equal(creates_sized(t, mark, a[1], b[1]), 1);
	check_read_once_before_creating(t, mark);
	assert_int_equal(tc_vq_state(t, 3), PRM_VIRTQ_STATE_RDY);
	tc_traffic(g, 0x3, 200);

	/* The stop: its restore puts every queue back to blank, in the background. */
	assert_int_equal(lmh_set_umem_params(&t->d, a[2], b[2]), 0);
	mark = tc_mark(t);
	tc_fe_stop(t, NRINGS, bases);
	deadline = lmh_now_ms() + DEADLINE_MS;
	while (mlx5_lm_restore_pending(t->d.dev) && lmh_now_ms() < deadline)
		lmh_tick();
	assert_false(mlx5_lm_restore_pending(t->d.dev));
	assert_int_equal(refusals(t, mark), 0);
	assert_int_equal(creates_sized(t, mark, a[2], b[2]), NRINGS);
	check_read_once_before_creating(t, mark);
	for (i = 0; i < NRINGS; i++)
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_INIT);

	/* The next front end: DRIVER_OK with pair 0 only, then pair 1 enabled. */
	tc_disconnect(t);
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	tc_connect(t);
	tc_rings_of(rings, NRINGS, g);
	assert_int_equal(lmh_set_umem_params(&t->d, a[3], b[3]), 0);
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	tc_fe_start(t, rings, NRINGS, 0x3);
	wait_running(t, mark, lmark);
	assert_int_equal(creates_sized(t, mark, a[3], b[3]), 2);
	check_read_once_before_creating(t, mark);
	tc_traffic(g, 0x1, 100);
	assert_int_equal(lmh_set_umem_params(&t->d, a[4], b[4]), 0);
	mark = tc_mark(t);
	for (i = 2; i < NRINGS; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_true(tc_wait_trace(t, mark, p_rdy_or_refused, NULL, 2));
	tc_barrier(t);
	assert_int_equal(refusals(t, mark), 0);
	assert_int_equal(creates_sized(t, mark, a[4], b[4]), 2);
	/* Each enable is a batch of its own: one read each. */
	assert_int_equal(queries(t, mark), 2);
	tc_traffic(g, 0x3, 200);
	tc_fe_stop(t, NRINGS, bases);
}

/*
 * The parameters may change between the read and the CREATE: here the
 * read before DRIVER_OK's batch fails (an injected QUERY_HCA_CAP failure),
 * so the batch is sized from the probe's values and the device refuses
 * the first CREATE with BAD_RESOURCE. That queue reads them again and is
 * retried once, sized from the new values, with a line naming the device
 * and the queue; the next queue is sized from what that read found. The
 * device runs.
 */
static void
test_a_create_refused_for_its_umems_is_retried_after_reading_them_again(void **state)
{
	static const uint32_t a[3] = { 256, 160, 32 }, b[3] = { 20480, 16384, 24576 };
	struct tc *t = *state;
	const char *retried[3] = { t->d.name, "queue 0 (rx 0): CREATE refused for its umems",
				   NULL };
	unsigned int refused = 0;
	uint32_t bases[2];
	struct vu_guest *g;
	size_t mark, lmark, k;

	/* One pair, configured one queue after the other: queue 0 meets the refusal. */
	tc_probe(t, 1, "queue_size=128,parallel=0");
	g = tc_guest(t, 0, 1, 256, false);
	tc_connect(t);
	assert_int_equal(lmh_set_umem_params(&t->d, a, b), 0);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_QUERY_HCA_CAP, 0xffff, 1,
					  PRM_STATUS_INTERNAL_ERR, 0x5e0c7e57), 0);
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	tc_sync(t);
	/* The read refused as injected, then queue 0's CREATE too small for the new values. */
	for (k = mark; k < t->tr.n; k++) {
		const struct lmh_cmd *c = &t->tr.c[k];

		if (!c->is_cmd || c->status == 0)
			continue;
		if (refused++ == 0) {
			assert_int_equal(c->opcode, PRM_CMD_QUERY_HCA_CAP);
			continue;
		}
		assert_true(tc_p_vq_create(c, NULL));
		assert_int_equal(c->qidx, 0);
		assert_int_equal(c->status, PRM_STATUS_BAD_RES);
		assert_int_equal(c->syndrome, EMU_SYND_VQ_UMEM_BELOW_PARAMS);
	}
	assert_int_equal(refused, 2);
	assert_int_equal(creates_sized(t, mark, a, b), 2);
	assert_true(lmh_log_line_has_all(lmark, retried));
	/* The failed read, and queue 0's. */
	assert_int_equal(queries(t, mark), 2);
	tc_traffic(g, 0x1, 200);
	tc_fe_stop(t, 2, bases);
}

int
tc_run_umem(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_queues_created_after_the_umem_params_grew_are_sized_from_them),
		TC_TEST(test_a_create_refused_for_its_umems_is_retried_after_reading_them_again),
	};

	return cmocka_run_group_tests_name("lifecycle: umem parameters", tests, NULL, NULL);
}
