/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event path, in process: the PMD on an emulated
 * device whose event CQ/QP rules are the firmware's (a CQ names a
 * completion EQ and a UAR page, the QP pair is in force loopback with
 * retries, every notification consumes a receive credit of the driver's
 * QP, CQEs are written to the CQ and an event is raised only when the CQ
 * is armed). The built-in front end sends one frame at a time and waits
 * for its call eventfds before the next: every used buffer must be
 * signalled through event QP -> CQ -> event channel -> callfd, for more
 * notifications than one event ring holds (MLX5_LM_EVENTQ_SIZE), which
 * only works when the driver hands credits back and re-arms the CQ.
 * The same in each of DPDK vdpa/mlx5's event modes (devarg event_mode):
 * interrupts, a fixed-period poller, a dynamic-period poller that falls
 * back to interrupts when traffic stops.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "prm.h"
#include "lm_harness.h"
#include "call_wait.h"

/* Rounds of one frame: three event rings' worth of notifications per queue. */
#define ROUNDS (3 * MLX5_LM_EVENTQ_SIZE)

static struct lmh_dev dev;
static struct vu_mem *mem;
static struct vu_guest *g;
/* The device's trace, for its CQ arms (opened at probe by the tests that count them). */
static struct lmh_trace arms_tr;

/* Bounded wait for ring's call eventfd; consumes the signal. */
/* Connect to the device's socket and start it with the guest: running, or fail. */
static struct vu_client *
connect_and_start(void)
{
	struct vu_client *c;

	assert_non_null(c = lmh_fe_connect(0));
	assert_int_equal(vu_start_device(c, g, NULL), 0);
	assert_true(lmh_wait_running(&dev, LMH_DEADLINE_MS));
	return c;
}

static bool
wait_call(unsigned int ring)
{
	return lm_wait_call(g, ring, LMH_DEADLINE_MS);
}

/*
 * Through ring's call eventfd only (1: TX, 0: RX), until the guest has seen
 * round + 1 buffers of that ring used, st their count. A call may come
 * late for the previous round's buffer (virtio allows spurious
 * notifications): it is consumed here, and the round then waits for a
 * call of its own.
 */
static void
called_for_round(unsigned int ring, const char *args, unsigned int round,
		 struct vu_guest_stats *st)
{
	do {
		if (!wait_call(ring)) {
			print_error("%s: round %u: no call for the used %s buffer\n",
				    args, round, ring == 1 ? "TX" : "RX");
			fail();
		}
		vu_guest_poll(g);
		vu_guest_stats(g, 0, st);
	} while ((ring == 1 ? st->tx_completed : st->rx_received) < round + 1);
}

/* UAR doorbells (CQ arms) in the device's trace since entry from. */
static unsigned int
arms_since(struct lmh_trace *t, size_t from)
{
	unsigned int n = 0;
	size_t i;

	lmh_trace_sync(t);
	for (i = from; i < t->n; i++)
		n += strcmp(t->c[i].op, "UAR_DOORBELL") == 0;
	return n;
}

/* Bounded wait for a CQ arm after trace entry from (a poller gone idle). */
static bool
wait_arm(struct lmh_trace *t, size_t from)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

	while (arms_since(t, from) == 0) {
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
	return true;
}

/*
 * What the notification thread can read from an event CQ: the emulator
 * rewrote the collapsed CQE in place (zeroes, then the fields, the
 * opcode byte last) while the driver read the opcode, then wqe_counter:
 * the previous completion's opcode beside a wqe_counter of 0. Taken as a
 * count, that is 1 - ci completions (mod 2^16): ci jumps past the CQ's
 * producer for good, every arm finds "new" CQEs and the event comes back
 * at once, forever; the thread spins on events and never relays a kick
 * again. One such reading forced on the RX queue in the e2e migration
 * test (qemu_migration_rxq1024) stopped the guest's traffic for good,
 * as in its rare failure: 2 million guest interrupts, TX timeouts.
 * Here the device is idle (every notification so far drained, nothing
 * writes the CQE), the entry is put in that state and drained, as the
 * thread would have: the reading is refused, ci stays, and the rounds
 * after it go on.
 */
/*
 * The CQE is device memory the emulator writes a dword at a time: the test
 * reads and rewrites it the same way (it stands in for the device), and
 * reads the driver's consumer index under the event queue's lock.
 */
static void
cqe_copy(uint8_t *dst, const uint8_t *src)
{
	size_t i;

	for (i = 0; i < PRM_SIZE(cqe64); i += 4)
		__atomic_store_n((uint32_t *)(dst + i),
				 __atomic_load_n((const uint32_t *)(src + i), __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
}

static uint32_t
eq_ci(struct mlx5_lm_eventq *eq)
{
	uint32_t ci;

	pthread_mutex_lock(&eq->lock);
	ci = eq->ci;
	pthread_mutex_unlock(&eq->lock);
	return ci;
}

static void
torn_cqe_read(const char *args, unsigned int round)
{
	struct mlx5_lm_virtq *vq = &dev.dev->vq[0];
	struct mlx5_lm_eventq *eq = &vq->eq;
	uint8_t saved[PRM_SIZE(cqe64)], torn[PRM_SIZE(cqe64)];
	uint32_t ci = eq_ci(eq), ci_after;
	int n;

	assert_true(ci >= 2);
	cqe_copy(saved, eq->cqe);
	assert_int_equal(PRM_GET(cqe64, saved, opcode), PRM_CQE_RESP_SEND);
	memcpy(torn, saved, sizeof(torn));
	PRM_SET(cqe64, torn, wqe_counter, 0);
	cqe_copy(eq->cqe, torn);
	/* Polled (no arm): no doorbell, so the storm cannot start whatever the outcome. */
	n = mlx5_lm_eventq_drain(vq, 0);
	ci_after = eq_ci(eq);
	/* What the device wrote goes back; the next completion rewrites the entry anyway. */
	cqe_copy(eq->cqe, saved);
	if (ci_after != ci || n != 0) {
		/* Put ci back too, so that the teardown is not caught in the storm. */
		pthread_mutex_lock(&eq->lock);
		eq->ci = ci;
		pthread_mutex_unlock(&eq->lock);
		print_error("%s: round %u: a torn CQE read (wqe_counter 0 after %u completions) "
			    "was taken as %d completions (ci %u -> %u)\n", args, round, ci, n, ci,
			    ci_after);
		fail();
	}
	assert_true(lmh_log_has(0, "not a count of completions"));
}

/*
 * ROUNDS frames, one at a time, each signalled on both call eventfds, on
 * a device probed with args. With idle_every, after every idle_every
 * rounds the traffic pauses until the driver armed a CQ (a poller that
 * went back to interrupts). With torn_at, after that round torn_cqe_read().
 * Returns the CQ arms after the first round.
 */
static unsigned int
rounds(const char *args, unsigned int idle_every, unsigned int torn_at)
{
	struct vu_client *c;
	struct vu_guest_stats st;
	struct lmh_trace t;
	uint32_t bases[2];
	unsigned int i, arms = 0;
	size_t mark = 0;

	assert_int_equal(lmh_probe(&dev, 0, args), 0);
	assert_int_equal(vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 1,
									   .ring_size = 256 }), 0);
	lmh_trace_open(&t, dev.trace);
	c = connect_and_start();
	/* RX buffers for the looped-back frames. */
	vu_guest_rx_refill(g);
	for (i = 0; i < ROUNDS; i++) {
		size_t round_mark;

		/* Marked before the frame: an arm after it cannot have been missed. */
		lmh_trace_sync(&t);
		round_mark = t.n;
		assert_int_equal(vu_guest_tx(g, 0, 1), 1);
		/*
		 * The frame's TX completion, then its reception on the loopback.
		 * Every round needs at least one call, and a used buffer with no
		 * call after it fails.
		 */
		called_for_round(1, args, i, &st);
		called_for_round(0, args, i, &st);
		assert_int_equal(st.tx_completed, i + 1);
		assert_int_equal(st.rx_received, i + 1);
		if (i == 0) {
			lmh_trace_sync(&t);
			mark = t.n;
		}
		if (torn_at != 0 && i == torn_at)
			torn_cqe_read(args, i);
		if (idle_every != 0 && i % idle_every == idle_every - 1) {
			if (!wait_arm(&t, round_mark)) {
				print_error("%s: round %u: the poller never went idle\n", args, i);
				fail();
			}
		}
	}
	arms = arms_since(&t, mark);
	assert_int_equal(vu_guest_lost(g, 0), 0);
	/* Every event named its queue's CQ (rdma: the CQN from the EQE data). */
	assert_false(lmh_log_has(0, "completion event names CQ"));
	printf("  %s: %u frames, each signalled on both call eventfds (%u event ring "
	       "entries), %u CQ arms after the first\n", args, ROUNDS, MLX5_LM_EVENTQ_SIZE, arms);
	assert_int_equal(vu_stop_device(c, bases, 2), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	lmh_trace_free(&t);
	(void)lmh_wait_restored(&dev);
	assert_int_equal(lmh_remove(&dev), 0);
	vu_guest_destroy(g);
	g = NULL;
	return arms;
}

/* event_mode=2 (the default here): every notification is an armed CQ's event. */
static void
test_every_used_buffer_reaches_the_call_eventfd(void **state)
{
	(void)state;
	/* Each notification raised an event, and each event re-armed its CQ. */
	assert_true(rounds("queues=1,mr_gc_ms=0", 0, 0) >= 2 * (ROUNDS - 1));
}

/*
 * event_mode=1 (DPDK vdpa/mlx5's default, doc/guides/vdpadevs/mlx5.rst): a
 * fixed-period poller. With no_traffic_time far longer than the test, the
 * first completion event starts the polling and every later notification
 * is found by polling: no CQ is armed again.
 */
static void
test_fixed_timer_polls_the_cqs(void **state)
{
	(void)state;
	assert_int_equal(rounds("queues=1,mr_gc_ms=0,event_mode=1,event_us=100,"
				"no_traffic_time=1000000", 0, 0), 0);
}

/* event_mode=1, event_us=0 (upstream's default period): polling without sleeping. */
static void
test_fixed_timer_without_period_polls_and_yields(void **state)
{
	(void)state;
	assert_int_equal(rounds("queues=1,mr_gc_ms=0,event_mode=1,event_us=0,"
				"no_traffic_time=1000000", 0, 0), 0);
}

/*
 * event_mode=0, a dynamic period, falling back to interrupts after a few
 * empty polls (no_traffic_time=2): every 32 frames the traffic pauses
 * until the poller has armed the CQs and gone to sleep; the next
 * completion's event brings it back to polling. Nothing is lost either way.
 */
static void
test_dynamic_timer_falls_back_to_interrupts_when_idle(void **state)
{
	(void)state;
	assert_true(rounds("queues=1,mr_gc_ms=0,event_mode=0,event_us=20,no_traffic_time=2",
			   32, 0) >= ROUNDS / 32 - 1);
}

/*
 * A reading of the collapsed event CQE that counts more completions than
 * the receive credits handed out (a torn read, above) is refused, and the
 * traffic after it is signalled like the rest (interrupt mode, where the
 * e2e test lost it).
 */
static void
test_torn_event_cqe_read_is_no_count(void **state)
{
	(void)state;
	assert_true(rounds("queues=1,mr_gc_ms=0", 0, 8) >= 2 * (ROUNDS - 1));
}

/* Stop the device's nrings rings, disconnect, remove the device, drop the guest. */
static void
stop_and_remove(struct vu_client *c, unsigned int nrings)
{
	uint32_t bases[4];

	assert_true(nrings <= RTE_DIM(bases));
	assert_int_equal(vu_stop_device(c, bases, nrings), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	(void)lmh_wait_restored(&dev);
	assert_int_equal(lmh_remove(&dev), 0);
	lmh_trace_free(&arms_tr);
	vu_guest_destroy(g);
	g = NULL;
}

/*
 * The arm sequence numbers of CQ cqn's arms (UAR_DOORBELL at the CQ
 * doorbell, value (sn << 28 | cmd << 24 | ci) << 32 | cqn) in the
 * device's trace, in order; returns how many (at most max are kept).
 */
static unsigned int
cq_arm_sns(uint32_t cqn, uint8_t *sn, unsigned int max)
{
	unsigned int n = 0;
	size_t i;

	lmh_trace_sync(&arms_tr);
	for (i = 0; i < arms_tr.n; i++) {
		const struct lmh_cmd *c = &arms_tr.c[i];

		if (strcmp(c->op, "UAR_DOORBELL") != 0 || c->addr != DEVX_UAR_CQ_DOORBELL ||
		    (c->value & 0xffffff) != cqn)
			continue;
		if (n < max)
			sn[n] = (uint8_t)((c->value >> 60) & 3);
		n++;
	}
	return n;
}

/*
 * Bounded wait for CQ cqn's arms in the device's trace to reach n, the
 * last one carrying sn (any when sn < 0).
 */
static bool
wait_cq_arms(uint32_t cqn, unsigned int n, int sn)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	uint8_t got[256];

	for (;;) {
		unsigned int k = cq_arm_sns(cqn, got, RTE_DIM(got));

		if (k >= n && (sn < 0 || (k <= RTE_DIM(got) && got[k - 1] == sn)))
			return true;
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
}

/*
 * One frame on queue pair qp, its TX buffer signalled on the call eventfd,
 * then (the poller gone idle again) one more arm of CQ cqn, carrying sn
 * (any when sn < 0): the next frame finds the CQ armed. Its reception (on
 * whichever RX queue) is not waited for: the TX queue's CQ is the one
 * looked at.
 */
static void
frame_then_idle(unsigned int qp, uint32_t cqn, unsigned int round, int sn)
{
	uint8_t none[1];
	unsigned int arms = cq_arm_sns(cqn, none, 0);
	struct vu_guest_stats st;
	uint64_t sent;

	vu_guest_stats(g, (int)qp, &st);
	sent = st.tx_completed;
	assert_int_equal(vu_guest_tx(g, qp, 1), 1);
	do {
		if (!wait_call(2 * qp + 1)) {
			print_error("round %u: no call for the used TX buffer of pair %u\n",
				    round, qp);
			fail();
		}
		vu_guest_poll(g);
		vu_guest_stats(g, (int)qp, &st);
	} while (st.tx_completed < sent + 1);
	if (!wait_cq_arms(cqn, arms + 1, sn)) {
		print_error("round %u: CQ 0x%x not armed again (with sn %d)\n", round, cqn, sn);
		fail();
	}
}

/*
 * The CQ arm sequence number counts completion events, not arms (Linux
 * mlx5_cq_completion / mlx5_cq_arm, rdma-core mlx5_cq_event /
 * mlx5_arm_cq; DPDK vdpa/mlx5 arms a CQ once per event), and an arm whose
 * event has not come stands: it is not sent again. event_mode=0 falling
 * back to interrupts after 2 empty polls. In the first IDLE_ONLY rounds
 * only pair 0 carries frames: each time the poller goes idle it arms the
 * CQs whose events it read (virtq 1's, waited for), never pair 1's TX
 * queue (virtq 3), armed once at DRIVER_OK with sn 0 and idle since (the
 * driver once re-armed every CQ at every idle, moving the sn each time:
 * 0, 1, 2, 3, 0, ..., the fourth arm after an event carrying the number of
 * the arm the device had served; then re-armed them with the same sn, the
 * same request twice, which a device serving the first before the second
 * arrived answered with two events, the sn moving twice for one frame).
 * Then EVENT_ROUNDS frames on pair 1, each finding the CQ armed: one event
 * each, and one arm after each, carrying the next number.
 */
static void
test_arm_sn_counts_events_not_arms(void **state)
{
	enum { IDLE_ONLY = 6, EVENT_ROUNDS = 9, MAX_ARMS = 256 };
	struct vu_client *c;
	uint32_t cqn, cqn1;
	uint8_t sn[MAX_ARMS];
	unsigned int i, n;

	(void)state;
	assert_int_equal(lmh_probe(&dev, 0, "queues=2,mr_gc_ms=0,event_mode=0,event_us=20,"
				   "no_traffic_time=2"), 0);
	lmh_trace_open(&arms_tr, dev.trace);
	assert_int_equal(vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 2,
									   .ring_size = 256 }), 0);
	c = connect_and_start();
	vu_guest_rx_refill(g);
	cqn = dev.dev->vq[3].eq.cqn;
	cqn1 = dev.dev->vq[1].eq.cqn;
	assert_true(wait_cq_arms(cqn, 1, 0));
	for (i = 0; i < IDLE_ONLY; i++)
		frame_then_idle(0, cqn1, i, -1);
	n = cq_arm_sns(cqn, sn, MAX_ARMS);
	if (n != 1) {
		print_error("CQ 0x%x (virtq 3, no event yet): armed %u times, not once (its "
			    "first arm stands)\n", cqn, n);
		fail();
	}
	for (i = 0; i < EVENT_ROUNDS; i++)
		frame_then_idle(1, cqn, IDLE_ONLY + i, (int)((i + 1) & 3));
	n = cq_arm_sns(cqn, sn, MAX_ARMS);
	printf("  virtq 3's CQ: %u arms for %u events, sn", n, EVENT_ROUNDS);
	for (i = 0; i < n && i < MAX_ARMS; i++)
		printf(" %u", sn[i]);
	printf("\n");
	assert_int_equal(n, 1 + EVENT_ROUNDS);
	for (i = 0; i < n; i++) {
		if (sn[i] != (i & 3)) {
			print_error("CQ 0x%x: arm %u carries sn %u, not %u (one per event read)\n",
				    cqn, i, sn[i], i & 3);
			fail();
		}
	}
	assert_false(lmh_log_has(0, "completion event names CQ"));
	stop_and_remove(c, 4);
}

/* Both pairs' counts: TX completed, RX received (whichever RX queue). */
static void
pair_counts(uint64_t *tx, uint64_t *rx)
{
	struct vu_guest_stats st;
	int qp;

	*tx = *rx = 0;
	for (qp = 0; qp < 2; qp++) {
		vu_guest_stats(g, qp, &st);
		*tx += st.tx_completed;
		*rx += st.rx_received;
	}
}

/* Bounded wait, each ring's call eventfd in turn, until the guest sees tx and rx. */
static bool
wait_counts(uint64_t tx, uint64_t rx)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	uint64_t t, r;

	for (;;) {
		vu_guest_poll(g);
		pair_counts(&t, &r);
		if (t >= tx && r >= rx)
			return true;
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
}

/*
 * The kernel loses an event it cannot queue and says so once: the next
 * read of the channel fails with EOVERFLOW (Linux devx.c deliver_event,
 * devx_async_event_read). Here the channel's list holds one event and its
 * reader is held back while both pairs send a frame: the TX and RX
 * completions raise three or more events, all but one lost. Released, the
 * driver reads EOVERFLOW and must look at every queue: every ring's call
 * eventfd written (the guest then finds every used buffer: nothing lost),
 * every CQ armed again (a later frame on each pair is signalled by its
 * own event), the event left in the list read as usual.
 */
static void
test_event_overflow_loses_no_notification(void **state)
{
	struct vu_client *c;
	uint32_t cqn[4];
	uint64_t tx0, rx0;
	unsigned int arms[4], i;
	uint8_t none[1];
	size_t mark;

	(void)state;
	assert_int_equal(lmh_probe(&dev, 0, "queues=2,mr_gc_ms=0"), 0);
	lmh_trace_open(&arms_tr, dev.trace);
	assert_int_equal(vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 2,
									   .ring_size = 256 }), 0);
	c = connect_and_start();
	vu_guest_rx_refill(g);
	for (i = 0; i < 4; i++) {
		cqn[i] = dev.dev->vq[i].eq.cqn;
		assert_true(wait_cq_arms(cqn[i], 1, -1));
	}
	/* One frame each first: the event path works. */
	assert_int_equal(vu_guest_tx(g, 0, 1), 1);
	assert_int_equal(vu_guest_tx(g, 1, 1), 1);
	assert_true(wait_counts(2, 2));
	assert_true(lmh_dp_idle(&dev));
	/* Calls so far consumed: each one after the hold is the driver's doing. */
	for (i = 0; i < 4; i++) {
		uint64_t v;

		(void)!read(vu_guest_callfd(g, i), &v, sizeof(v));
	}
	pair_counts(&tx0, &rx0);
	for (i = 0; i < 4; i++)
		arms[i] = cq_arm_sns(cqn[i], none, 0);
	mark = lmh_log_mark();

	assert_int_equal(lmh_evch_hold(&dev, 1), 0);
	assert_int_equal(vu_guest_tx(g, 0, 1), 1);
	assert_int_equal(vu_guest_tx(g, 1, 1), 1);
	{
		int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

		while (lmh_evch_overflows(&dev) < 2 || !lmh_dp_idle(&dev)) {
			assert_true(lmh_now_ms() < deadline);
			lmh_tick();
		}
	}
	/*
	 * Calls so far consumed (one for an event read just before the hold
	 * may have come late): each one from now on follows the release.
	 */
	for (i = 0; i < 4; i++) {
		uint64_t v;

		(void)!read(vu_guest_callfd(g, i), &v, sizeof(v));
	}
	assert_int_equal(lmh_evch_release(&dev), 0);
	for (i = 0; i < 4; i++) {
		if (!wait_call(i)) {
			print_error("ring %u: no call after the overflow\n", i);
			fail();
		}
	}
	assert_true(wait_counts(tx0 + 2, rx0 + 2));
	assert_true(lmh_wait_log(mark, "event channel overflowed", LMH_DEADLINE_MS));
	/* Every CQ armed again since the hold. */
	for (i = 0; i < 4; i++) {
		if (!wait_cq_arms(cqn[i], arms[i] + 1, -1)) {
			print_error("CQ 0x%x (ring %u) not armed again after the overflow\n",
				    cqn[i], i);
			fail();
		}
	}
	/* And its events come again: one more frame each, signalled. */
	assert_int_equal(vu_guest_tx(g, 0, 1), 1);
	assert_int_equal(vu_guest_tx(g, 1, 1), 1);
	assert_true(wait_call(1));
	assert_true(wait_call(3));
	assert_true(wait_counts(tx0 + 4, rx0 + 4));
	assert_int_equal(vu_guest_lost(g, 0), 0);
	assert_int_equal(vu_guest_lost(g, 1), 0);
	assert_false(lmh_log_has(0, "completion event names CQ"));
	printf("  %ld events lost in the overflow, every ring called and every CQ armed again\n",
	       lmh_evch_overflows(&dev));
	stop_and_remove(c, 4);
}

static int
group_setup(void **state)
{
	(void)state;
	return vu_mem_create_qemu(&mem, 1);
}

static int
group_teardown(void **state)
{
	(void)state;
	vu_mem_destroy(mem);
	return 0;
}

LMH_TEST_MAIN("test-events", 1, "events", group_setup, group_teardown,
	cmocka_unit_test(test_every_used_buffer_reaches_the_call_eventfd),
	cmocka_unit_test(test_fixed_timer_polls_the_cqs),
	cmocka_unit_test(test_fixed_timer_without_period_polls_and_yields),
	cmocka_unit_test(test_dynamic_timer_falls_back_to_interrupts_when_idle),
	cmocka_unit_test(test_torn_event_cqe_read_is_no_count),
	cmocka_unit_test(test_arm_sn_counts_events_not_arms),
	cmocka_unit_test(test_event_overflow_loses_no_notification))
