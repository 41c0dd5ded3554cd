/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, queues in ERR: re-created (query, destroy, create, RDY)
 * at most three times and then left stopped, alone; one stopped before
 * its recovery runs hands over what it completed; a descriptor outside
 * guest memory errs the queue, not the process; a failed recovery (in an
 * isolated test of main.c) leaves the device usable.
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_vdpa.h>

#include "lifecycle.h"
#include "mlx5_lm_test.h"

static bool
p_rdy_new(const struct lmh_cmd *c, const void *arg)
{
	const uint32_t *a = arg; /* { qidx, old id } */

	return tc_is_state_modify(c, PRM_VIRTQ_STATE_RDY) && c->qidx == (int)a[0] &&
	       c->obj_id != a[1];
}

/* Since from, queue q was queried, destroyed, created and resumed, in that order. */
static void
check_recovery_sequence(struct tc *t, size_t from, int q, uint32_t old)
{
	size_t k, step = 0;

	for (k = from; k < t->tr.n && step < 4; k++) {
		const struct lmh_cmd *c = &t->tr.c[k];

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
		else if (step == 3 && tc_p_rdy(c, &q) && c->obj_id != old)
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
	tc_traffic(g, 0x3, 200);
	for (k = 1; k <= 3; k++) {
		arg[0] = (uint32_t)q;
		arg[1] = tc_vq_id(t, q);
		mark = tc_mark(t);
		lmark = lmh_log_mark();
		assert_int_equal(lmh_vq_force_error(&t->d, arg[1], EMU_VQ_ERROR_BAD_DESC), 0);
		assert_true(tc_wait_trace(t, mark, p_rdy_new, arg, 1));
		tc_barrier(t);
		check_recovery_sequence(t, mark, q, arg[1]);
		/* The other queues are not touched by the recovery. */
		for (i = 0; i < 4; i++) {
			int other = (int)i;

			if (other != q)
				assert_int_equal(tc_count(t, mark, tc_p_vq_any, &other), 0);
		}
		/* Logged with the queue and the error type. */
		snprintf(line, sizeof(line), "queue 3 (tx 1): in ERR (error_type %u",
			 EMU_VQ_ERROR_BAD_DESC);
		assert_true(lmh_log_has(lmark, line));
		snprintf(line, sizeof(line), "(recovery %u/3)", k);
		assert_true(lmh_log_has(lmark, line));
		assert_int_equal(tc_vq_state(t, q), PRM_VIRTQ_STATE_RDY);
		/* Both pairs work: the recovered queue included. */
		tc_traffic(g, 0x3, 200);
	}
	/* A 4th error: the queue is left stopped, and nothing else stops. */
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, q), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_true(tc_wait_log(lmark, "after 3 recoveries: left stopped"));
	tc_barrier(t);
	assert_int_equal(tc_count(t, mark, tc_p_vq_create, NULL), 0);
	assert_int_equal(tc_count(t, mark, tc_p_vq_destroy, NULL), 0);
	assert_int_equal(tc_vq_state(t, q), PRM_VIRTQ_STATE_ERR);
	tc_traffic(g, 0x1, 300);
	tc_fe_stop(t, 4, bases);
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
	tc_traffic(g, 0x3, 100);

	/* Park the TX ring so the device cannot read the descriptor before we spoil it. */
	mark = tc_mark(t);
	assert_int_equal(vu_set_vring_enable(t->c, q, false), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_suspend, &q, 1));
	tc_barrier(t);
	assert_int_equal(vu_guest_tx(g, 1, 1), 1);
	assert_int_equal(vu_guest_ring_info(g, q, &ri), 0);
	memcpy(&aidx, (uint8_t *)ri.avail + 2, 2);
	memcpy(&id, (uint8_t *)ri.avail + 4 + 2 * ((aidx - 1) & (ri.num - 1)), 2);
	memcpy((uint8_t *)ri.desc + 16 * id, &bad, 8);

	mark = tc_mark(t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_vring_enable(t->c, q, true), 0);
	assert_true(tc_wait_log(lmark, "after 3 recoveries: left stopped"));
	tc_barrier(t);
	assert_true(lmh_log_has(lmark, "queue 3 (tx 1): in ERR (error_type 1"));
	assert_int_equal(tc_count(t, mark, tc_p_vq_create, &q), 3);
	assert_int_equal(tc_vq_state(t, q), PRM_VIRTQ_STATE_ERR);
	/* The device counted the bad descriptor on the queue's counter set. */
	n = rte_vdpa_get_stats(t->d.vdpa, q, stats, RTE_DIM(stats));
	assert_int_equal(n, 6);
	/* Upstream's order: 2 "bad descriptor errors", 4 "invalid buffer". */
	assert_true(stats[2].value + stats[4].value >= 1);
	tc_traffic(g, 0x1, 300);
	tc_fe_stop(t, 4, bases);
	/* What the device completed before the bad chain is what vhost gets back. */
	assert_int_equal(bases[q], 100);
}

/*
 * An RX queue in ERR whose re-creation fails: the queue stays stopped, the
 * other pair keeps receiving, the device stops and restarts cleanly.
 */
void
isolated_failed_rx_recovery(void **state)
{
	struct tc *t = *state;
	uint32_t bases[4];
	struct vu_guest *g;
	size_t lmark;

	g = tc_start(t, 2, NULL);
	tc_traffic(g, 0x3, 200);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_CREATE_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 1, PRM_STATUS_NO_RESOURCES, 0), 0);
	lmark = lmh_log_mark();
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, 0), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_true(tc_wait_log(lmark, "cannot create the virtq"));
	tc_barrier(t);
	tc_traffic(g, 0x3, 200);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	tc_reconnect_and_run(t, g, 2);
}

static void
test_failed_recovery_of_an_rx_queue_leaves_device_usable(void **state)
{
	(void)state;
	tc_run_isolated("isolated_failed_rx_recovery");
}

/*
 * An RX queue in ERR whose recovery finds the RQT unable to let go of it
 * (the device refuses the MODIFY_RQT): the steering is rebuilt around
 * the new queue. The refusal used to be ignored: the destroy of a queue
 * the RQT still named was refused in turn and the recovery failed, the
 * device tearing down the event channel of a queue still alive.
 */
static void
test_recovery_whose_rqt_modify_is_refused_rebuilds_the_steering(void **state)
{
	struct tc *t = *state;
	uint32_t bases[4];
	struct vu_guest *g;
	size_t lmark, mark;
	int q = 0;

	g = tc_start(t, 2, NULL);
	tc_traffic(g, 0x3, 200);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_MODIFY_RQT, 0xffff, 1,
					  PRM_STATUS_NO_RESOURCES, 0), 0);
	lmark = lmh_log_mark();
	mark = tc_mark(t);
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, 0), EMU_VQ_ERROR_BAD_DESC), 0);
	/* The new queue 0 runs (the old code never got there: its destroy was refused). */
	assert_true(tc_wait_trace(t, mark, tc_p_rdy, &q, 1));
	tc_barrier(t);
	assert_true(lmh_log_has(lmark, "the steering is rebuilt around them"));
	assert_int_equal(tc_vq_state(t, 0), PRM_VIRTQ_STATE_RDY);
	assert_false(lmh_log_has(lmark, "cannot destroy the virtq"));
	/* Both pairs receive again: the rebuilt RQT names the new queue 0. */
	tc_traffic(g, 0x3, 200);
	tc_fe_stop(t, 4, bases);
}

/*
 * A queue goes to ERR and GET_VRING_BASE comes before its recovery (the
 * worker busy: held here). The driver's record still says RDY; the
 * device refuses SUSPEND for the state. The stop used to give up on the
 * queue there: never queried, vhost replied with its old base (the
 * start's, 0) and the destination restarted the ring from it, sending
 * again what was sent. Now the queue is queried and what it completed
 * handed over, and the recovery, once it runs, leaves the stopped device
 * alone: no queue re-created or made RDY behind the handed-over base.
 */
static void
test_stop_before_a_queue_s_recovery_hands_over_what_it_completed(void **state)
{
	struct tc *t = *state;
	const int q = 3; /* TX of pair 1 */
	struct vu_guest *g;
	uint32_t bases[4];
	size_t mark, lmark;

	g = tc_start(t, 2, NULL);
	tc_traffic(g, 0x3, 200);
	mlx5_lm_worker_hold(t->d.dev, 3);
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, q), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_int_equal(tc_vq_state(t, q), PRM_VIRTQ_STATE_ERR);
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	tc_fe_stop(t, 4, bases);
	/* Every ring's base is what the device completed: ring 3's too. */
	tc_check_bases(g, bases, 2, false, 256);
	assert_true(lmh_log_has(lmark, "queue 3 (tx 1): in ERR at the stop"));
	assert_false(lmh_log_has(lmark, "some vring bases may be stale"));
	/* The recovery runs now, after the stop: it must touch nothing. */
	mlx5_lm_worker_hold(t->d.dev, 0);
	assert_true(tc_wait_log(lmark, "queue 3 (tx 1): recovery not run: the device was "
				"stopped"));
	tc_barrier(t);
	/* Re-created blank by the restore at most: never made RDY. */
	assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 0);
	tc_reconnect_and_run(t, g, 2);
}

int
tc_run_recovery(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_queue_in_err_is_recreated_at_most_three_times),
		TC_TEST(test_recovery_whose_rqt_modify_is_refused_rebuilds_the_steering),
		TC_TEST(test_stop_before_a_queue_s_recovery_hands_over_what_it_completed),
		TC_TEST(test_descriptor_outside_guest_memory_errs_the_queue_not_the_process),
		cmocka_unit_test(test_failed_recovery_of_an_rx_queue_leaves_device_usable),
	};

	return cmocka_run_group_tests_name("lifecycle: recovery", tests, NULL, NULL);
}
