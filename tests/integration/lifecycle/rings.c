/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, rings enabled and disabled by the guest: only the
 * rings concerned are suspended or resumed (the RQT following them, in a
 * power of two), rings set up but never enabled stay out of RDY, pairs
 * the front end never sets up are never touched, and new kick and call
 * fds of a running ring are the ones used.
 */
#include <inttypes.h>
#include <poll.h>

#include "lifecycle.h"

static void
test_disabling_pairs_suspends_only_them_and_shrinks_the_rqt(void **state)
{
	struct tc *t = *state;
	const unsigned int want_small = 2, want_full = 4;
	uint32_t rx_ids[4], bases[8];
	const struct lmh_cmd *rqt;
	struct vu_guest *g;
	struct lmh_pump pump;
	uint64_t sent;
	unsigned int i;
	size_t mark;

	g = tc_start(t, 4, NULL);
	tc_traffic(g, 0xf, 200);
	for (i = 0; i < 4; i++)
		rx_ids[i] = tc_vq_id(t, 2 * i);

	/* Pairs 0-1 carry traffic the whole time. */
	tc_pump_start(&pump, g, 0x3);
	sent = vu_guest_tx_sent(g, -1);
	mark = tc_mark(t);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	/* set_vring_state runs after vhost's ack: wait for its commands. */
	assert_true(tc_wait_trace(t, mark, tc_p_suspend, NULL, 4));
	assert_true(tc_wait_trace(t, mark, tc_p_rqt_size, &want_small, 1));
	tc_barrier(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		/* Exactly the disabled queues, state only; the others untouched. */
		assert_int_equal(tc_count(t, mark, tc_p_suspend, &q), i >= 4);
		assert_int_equal(tc_count(t, mark, tc_p_vq_any, &q), i >= 4);
		assert_int_equal(tc_vq_state(t, i), i >= 4 ? PRM_VIRTQ_STATE_SUSPEND :
				 PRM_VIRTQ_STATE_RDY);
	}
	rqt = tc_last_rqt_modify(t, mark);
	assert_non_null(rqt);
	assert_int_equal(tc_rqt_size(rqt), 2);
	assert_int_equal(tc_rqt_entry(rqt, 0), rx_ids[0]);
	assert_int_equal(tc_rqt_entry(rqt, 1), rx_ids[1]);

	mark = tc_mark(t);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_rdy, NULL, 4));
	assert_true(tc_wait_trace(t, mark, tc_p_rqt_size, &want_full, 1));
	tc_barrier(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		/* Resumed from SUSPEND with the state bit alone: nothing re-created. */
		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), i >= 4);
		assert_int_equal(tc_count(t, mark, tc_p_vq_any, &q), i >= 4);
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	for (i = (unsigned int)mark; i < t->tr.n; i++)
		if (tc_p_rdy(&t->tr.c[i], NULL))
			assert_true(tc_mod_bits(&t->tr.c[i]) == PRM_VIRTQ_MODIFY_STATE);
	rqt = tc_last_rqt_modify(t, mark);
	assert_non_null(rqt);
	assert_int_equal(tc_rqt_size(rqt), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(tc_rqt_entry(rqt, i), rx_ids[i]);
	tc_pump_stop(&pump);
	assert_true(vu_guest_tx_sent(g, -1) > sent);
	/* And the resumed pairs work again. */
	tc_traffic(g, 0xf, 200);
	tc_fe_stop(t, 8, bases);
	tc_check_bases(g, bases, 4, false, 256);
}

/*
 * Three of four pairs enabled: the RQT lists a power of two entries, the
 * three RX queues repeated in order (PRM: the device indexes the RQT by
 * hash & (size - 1); Linux mlx5_vdpa rounds up and repeats the same way),
 * and every enabled pair still carries traffic.
 */
static void
test_three_enabled_pairs_fill_a_power_of_two_rqt(void **state)
{
	struct tc *t = *state;
	const unsigned int want = 4;
	uint32_t rx_ids[4], bases[8];
	const struct lmh_cmd *rqt;
	struct vu_guest *g;
	unsigned int i;
	size_t mark;

	g = tc_start(t, 4, NULL);
	tc_traffic(g, 0xf, 100);
	for (i = 0; i < 4; i++)
		rx_ids[i] = tc_vq_id(t, 2 * i);
	mark = tc_mark(t);
	for (i = 6; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_suspend, NULL, 2));
	assert_true(tc_wait_trace(t, mark, tc_p_rqt_size, &want, 1));
	tc_barrier(t);
	rqt = tc_last_rqt_modify(t, mark);
	assert_non_null(rqt);
	assert_int_equal(tc_rqt_size(rqt), 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(tc_rqt_entry(rqt, i), rx_ids[i % 3]);
	tc_traffic(g, 0x7, 200);
	tc_fe_stop(t, 8, bases);
	tc_check_bases(g, bases, 3, false, 256);
}

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
	struct tc_ring rings[8];
	uint32_t bases[8];
	struct vu_guest *g;
	unsigned int i;
	size_t mark;

	tc_probe(t, 4, NULL);
	g = tc_guest(t, 0, 4, 256, false);
	tc_rings_of(rings, 8, g);
	tc_connect(t);
	mark = tc_mark(t);
	/* All 8 rings set up, only pairs 0-1 enabled. */
	tc_fe_start(t, rings, 8, 0x0f);
	tc_wait_running(t);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), i < 4);
		if (i >= 4)
			assert_int_not_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	tc_traffic(g, 0x3, 300);

	/* The guest enables pairs 2-3 now: they start, and carry traffic. */
	mark = tc_mark(t);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_rdy, NULL, 4));
	tc_barrier(t);
	for (i = 0; i < 8; i++)
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	tc_traffic(g, 0xf, 300);
	tc_fe_stop(t, 8, bases);
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
	mark = tc_mark(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	tc_traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), i < 4);
		if (i >= 4) {
			assert_int_equal(tc_count(t, mark, tc_p_vq_any, &q), 0);
			assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_INIT);
		}
	}
	tc_check_bases(g, bases, 2, false, 256);
}

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
	tc_traffic(g, 0x1, 300);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(vu_set_vring_kick(t->c, i, vu_guest_kickfd(g, i)), 0);
		assert_int_equal(vu_set_vring_call(t->c, i, vu_guest_callfd(g, i)), 0);
	}
	/* A round trip: vhost has told the driver about every change. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	tc_barrier(t);
	assert_int_equal(tc_vq_state(t, 0), PRM_VIRTQ_STATE_RDY);
	assert_int_equal(tc_vq_state(t, 1), PRM_VIRTQ_STATE_RDY);
	/* Frames kicked through the new kickfd are sent; the new TX callfd fires. */
	assert_int_equal(vu_guest_tx(g, 0, 8), 8);
	pfd.fd = vu_guest_callfd(g, 1);
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, DEADLINE_MS) != 1)
		print_error("no completion signalled on the new callfd of ring 1 "
			    "(TX inflight %" PRIu64 ")\n", vu_guest_tx_inflight(g, 0));
	assert_true(pfd.revents & POLLIN);
	tc_traffic_settle(g, 0x1);
	tc_traffic(g, 0x1, 300);
	tc_fe_stop(t, 2, bases);
	tc_check_bases(g, bases, 1, false, 256);
}

int
tc_run_rings(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_disabling_pairs_suspends_only_them_and_shrinks_the_rqt),
		TC_TEST(test_three_enabled_pairs_fill_a_power_of_two_rqt),
		TC_TEST(test_pairs_beyond_the_front_end_stay_init),
		TC_TEST(test_rings_set_up_but_not_enabled_stay_out_of_rdy),
		TC_TEST(test_ring_fds_changed_while_running_are_used),
	};

	return cmocka_run_group_tests_name("lifecycle: rings", tests, NULL, NULL);
}
