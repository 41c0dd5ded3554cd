/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, rings enabled and disabled by the guest: only the
 * rings concerned are suspended or resumed (the RQT following them, in a
 * power of two), rings set up but never enabled stay out of RDY, pairs
 * the front end never sets up are never touched, and new kick and call
 * fds of a running ring are the ones used, and a ring the front end moves
 * while it is disabled runs where it points at its enable.
 */
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "lifecycle.h"
#include "vu_vring.h"

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

/*
 * A ring the front end moves while it is disabled (SET_VRING_ADDR and
 * SET_VRING_BASE between SET_VRING_ENABLE 0 and 1; vhost tells the driver
 * nothing until the enable) runs where the front end points now, from the
 * base it gave: the queue is modified in SUSPEND (the device can resume)
 * or re-created (it cannot), never resumed on the ring it left, whose
 * memory the guest may have given to something else.
 */
struct ring_at {
	int q;
	uint64_t desc;
};

/* A successful CREATE or ADDRS MODIFY of queue r->q that names r->desc. */
static bool
p_vq_takes_desc(const struct lmh_cmd *c, const void *arg)
{
	const struct ring_at *r = arg;

	if (!tc_p_vq_any(c, &r->q) || c->status != 0)
		return false;
	if (c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT) {
		if (!(tc_mod_bits(c) & PRM_VIRTQ_MODIFY_ADDRS))
			return false;
	} else if (c->opcode != PRM_CMD_CREATE_GENERAL_OBJECT) {
		return false;
	}
	return PRM_GET(virtio_q, tc_vq_q(c), desc_addr) == r->desc;
}

static void
ring_moved_while_disabled(struct tc *t, const char *profile, bool recreated)
{
	const uint16_t n = 256;
	struct vu_ring_info ri;
	struct ring_at at = { .q = 1 };
	struct vu_vring nr;
	struct vu_vbuf vb;
	struct vu_vused u;
	struct vu_guest *g;
	uint64_t gpa, buf_gpa, one = 1;
	int64_t end;
	uint32_t bases[2];
	uint8_t *area, *buf;
	int got = 0, q = 1;
	size_t mark;

	tc_probe_profile(t, profile, 1, NULL);
	g = tc_guest(t, 0, 1, n, false);
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	tc_traffic(g, 0x1, 200);
	mark = tc_mark(t);
	assert_int_equal(vu_set_vring_enable(t->c, 1, false), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_suspend, &q, 1));

	/* A new, empty TX ring elsewhere in guest memory, from base 0. */
	assert_int_equal(vu_mem_alloc(t->mem, 3 * 4096 + 16 * n, 4096, &gpa), 0);
	area = vu_mem_gpa_to_hva(t->mem, gpa, 3 * 4096 + 16 * n);
	assert_non_null(area);
	memset(area, 0, 3 * 4096 + 16 * n);
	assert_int_equal(vu_vring_init(&nr, false, n, area, area + 16 * n,
				       area + 16 * n + 4096), 0);
	assert_int_equal(vu_mem_alloc(t->mem, 4096, 4096, &buf_gpa), 0);
	buf = vu_mem_gpa_to_hva(t->mem, buf_gpa, 4096);
	assert_non_null(buf);
	/* A virtio-net header, then a broadcast frame of a local experimental type. */
	memset(buf, 0, 12 + 64);
	memset(buf + 12, 0xff, 6);
	buf[12 + 6] = 0x02;
	buf[12 + 12] = 0x88;
	buf[12 + 13] = 0xb5;
	assert_int_equal(vu_guest_ring_info(g, 1, &ri), 0);
	assert_int_equal(vu_set_vring_addr(t->c, 1, 0, (uintptr_t)area,
					   (uintptr_t)(area + 16 * n + 4096),
					   (uintptr_t)(area + 16 * n), gpa + 16 * n + 4096), 0);
	assert_int_equal(vu_set_vring_base(t->c, 1, 0), 0);

	mark = tc_mark(t);
	assert_int_equal(vu_set_vring_enable(t->c, 1, true), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_rdy, &q, 1));
	tc_barrier(t);
	at.desc = gpa;
	assert_int_equal(tc_count(t, mark, p_vq_takes_desc, &at), 1);
	assert_int_equal(tc_count(t, mark, tc_p_vq_create, &q), recreated ? 1 : 0);
	assert_int_equal(tc_vq_state(t, 1), PRM_VIRTQ_STATE_RDY);

	/* A frame posted on the new ring is sent, and completed there. */
	vb.addr = buf_gpa;
	vb.len = 12 + 64;
	vb.flags = 0;
	vu_vring_post(&nr, 0, &vb, 1);
	vu_vring_publish(&nr);
	assert_int_equal(write(vu_guest_kickfd(g, 1), &one, sizeof(one)), (ssize_t)sizeof(one));
	end = lmh_now_ms() + DEADLINE_MS;
	while (got == 0 && lmh_now_ms() < end) {
		struct pollfd pfd = { .fd = vu_guest_callfd(g, 1), .events = POLLIN };

		got = vu_vring_reap(&nr, &u);
		if (got == 0)
			(void)poll(&pfd, 1, (int)(end - lmh_now_ms()));
	}
	if (got != 1)
		print_error("nothing completed on the moved ring (old ring's used idx %u)\n",
			    *(volatile uint16_t *)((uint8_t *)ri.used + 2));
	assert_int_equal(got, 1);
	assert_int_equal(u.id, 0);
	tc_fe_stop(t, 2, bases);
	/* The device's base is the new ring's: one buffer from 0. */
	assert_int_equal(bases[1], 1);
	vu_vring_fini(&nr);
}

static void
test_a_ring_moved_while_disabled_runs_where_the_front_end_points(void **state)
{
	ring_moved_while_disabled(*state, "fast", false);
}

static void
test_a_ring_moved_while_disabled_is_re_created_without_freeze_to_rdy(void **state)
{
	ring_moved_while_disabled(*state, TEST_PROFILES_DIR "/caps-no-freeze.json", true);
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
		TC_TEST(test_a_ring_moved_while_disabled_runs_where_the_front_end_points),
		TC_TEST(test_a_ring_moved_while_disabled_is_re_created_without_freeze_to_rdy),
	};

	return cmocka_run_group_tests_name("lifecycle: rings", tests, NULL, NULL);
}
