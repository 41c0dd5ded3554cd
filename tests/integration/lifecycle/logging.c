/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, dirty-page logging: logging starting leaves disabled
 * pairs suspended and rings every running queue once, a DRIVER_OK with
 * the log on logs before any queue runs, a queue never enabled but given
 * the log is put back to blank at the stop, and a new log base (while
 * logging, or during a held configuration) is the log the device marks, a
 * queue recovered from ERR while logging logs, and so does a ring enabled
 * late while logging whose queue is re-created.
 */
#include <inttypes.h>
#include <time.h>

#include "mlx5_lm_test.h"

#include "lifecycle.h"

/*
 * The front end turns dirty-page logging on (a log area, then LOG_ALL);
 * set_features runs after vhost's ack: wait for the driver to say it logs
 * and to be done. Returns the log.
 */
static struct vu_log *
log_on(struct tc *t)
{
	struct vu_log *log;
	size_t lmark = lmh_log_mark();

	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log(t->c, log), 0);
	assert_true(tc_wait_log(lmark, "dirty-page logging on"));
	tc_barrier(t);
	return log;
}

/* The device wrote pages since vu_guest_dirty_mark, every one of them marked in log. */
static void
check_written_pages_logged(struct vu_guest *g, const struct vu_log *log)
{
	int64_t pages;
	uint64_t missing = lmh_dirty_pages_missing(g, log, &pages);

	assert_true(pages > 0);
	assert_int_equal(missing, 0);
}

/*
 * Every ring stopped with the log still on (QEMU's order at the end of a
 * migration), then every page the device wrote since vu_guest_dirty_mark
 * in the log: the rings' own pages are marked at the stop (the emulator's
 * firmware logs only the buffers it fills), so not checked before it.
 * Then logging off, the front end gone, the log freed.
 */
static void
stop_check_and_leave(struct tc *t, struct vu_guest *g, unsigned int nrings,
		     struct vu_log *log)
{
	uint32_t bases[MAX_RINGS];

	tc_fe_stop(t, nrings, bases);
	check_written_pages_logged(g, log);
	assert_int_equal(vu_clear_log(t->c), 0);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/* Logging off, every ring's base, the front end gone, the log freed. */
static void
log_off_and_leave(struct tc *t, unsigned int nrings, struct vu_log *log)
{
	uint32_t bases[MAX_RINGS];

	assert_int_equal(vu_clear_log(t->c), 0);
	tc_fe_stop(t, nrings, bases);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/*
 * Dirty logging starting while pairs are disabled must not resume them; the
 * running ones take the bitmap as they run (DPDK vdpa/mlx5 mlx5_vdpa_lm.c:
 * no SUSPEND, no transition at all).
 */
static void
test_disabled_pairs_stay_suspended_when_logging_starts(void **state)
{
	struct tc *t = *state;
	struct vu_guest *g;
	struct vu_log *log;
	unsigned int i;
	size_t mark;

	g = tc_start(t, 4, NULL);
	mark = tc_mark(t);
	for (i = 4; i < 8; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, false), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_suspend, NULL, 4));
	tc_barrier(t);

	mark = tc_mark(t);
	log = log_on(t);
	tc_traffic(g, 0x3, 200);
	for (i = 0; i < 8; i++) {
		int q = (int)i;

		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 0);
		assert_int_equal(tc_count(t, mark, tc_p_suspend, &q), 0);
		assert_int_equal(tc_vq_state(t, i), i < 4 ? PRM_VIRTQ_STATE_RDY :
				 PRM_VIRTQ_STATE_SUSPEND);
	}
	log_off_and_leave(t, 8, log);
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
	struct vu_guest *g;
	struct vu_log *log;

	g = tc_start(t, 1, NULL);
	tc_traffic(g, 0x1, 50);
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
	log = log_on(t);
	/* Only polls from here: the device must fetch the chain by itself. */
	assert_true(tc_tx_complete(g, 0x1));
	log_off_and_leave(t, 2, log);
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
	uint32_t bases[2];
	struct vu_log *log;
	struct vu_guest *g;

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
	tc_wait_running(t);
	tc_traffic(g, 0x1, 32);
	tc_fe_stop(t, 2, bases);
	check_written_pages_logged(g, log);
	tc_disconnect(t);
	vu_log_destroy(log);
}

/*
 * The device's own ring writes (used elements and used->idx; packed: the
 * used descriptors) are the driver's to mark at the stop: the emulator's
 * default firmware (caps dirty_bitmap_logs_rings 0) records only the
 * buffers it fills. A packed ring with the log address QEMU sends (the
 * device area, not the descriptors the device writes), logging on, RX and
 * TX: after the stop every page the device wrote is in the log. Marking
 * relative to the log address (rte_vhost_log_used_vring) left the packed
 * descriptor ring's pages out.
 */
static void
run_rings_marked_at_the_stop(struct tc *t, bool packed)
{
	struct vu_start_opts o = { .qemu_log_addr = true };
	struct vu_log *log;
	struct vu_guest *g;

	tc_probe(t, 1, NULL);
	g = tc_guest(t, 0, 1, 256, packed);
	tc_connect(t);
	assert_int_equal(vu_device_init(t->c, &o), 0);
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	tc_wait_running(t);
	log = log_on(t);
	vu_guest_dirty_mark(g);
	tc_traffic(g, 0x1, 64);
	stop_check_and_leave(t, g, 2, log);
}

static void
test_packed_rings_the_device_wrote_are_in_the_log_after_the_stop(void **state)
{
	run_rings_marked_at_the_stop(*state, true);
}

static void
test_split_rings_the_device_wrote_are_in_the_log_after_the_stop(void **state)
{
	run_rings_marked_at_the_stop(*state, false);
}

/*
 * From here the device must mark log2, the latest log base, and have said
 * it moved there (since lmark): every page it writes for 64 more frames
 * and the stop is in log2. Then the front end leaves and frees both logs.
 */
static void
check_the_new_log_is_marked(struct tc *t, struct vu_guest *g, size_t lmark,
			    struct vu_log *log1, struct vu_log *log2)
{
	uint32_t bases[2];

	vu_guest_dirty_mark(g);
	tc_traffic(g, 0x1, 64);
	tc_fe_stop(t, 2, bases);
	check_written_pages_logged(g, log2);
	assert_true(lmh_log_has(lmark, "dirty-page logging moved to a new log"));
	tc_disconnect(t);
	vu_log_destroy(log1);
	vu_log_destroy(log2);
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
	size_t lmark;

	g = tc_start(t, 1, NULL);
	tc_traffic(g, 0x1, 32);
	assert_int_equal(vu_log_create(&log1, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_log_create(&log2, vu_mem_gpa_end(t->mem)), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_log(t->c, log1), 0);
	assert_true(tc_wait_log(lmark, "dirty-page logging on"));
	/* Answered once vhost mapped it: from here the device must mark log2. */
	assert_int_equal(vu_set_log_base(t->c, log2->fd, log2->size, 0), 0);
	check_the_new_log_is_marked(t, g, lmark, log1, log2);
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
	size_t lmark;

	g = tc_attach(t, 1, NULL);
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
	tc_wait_running(t);
	assert_true(vu_recv_raw(t->c, &hdr, &reply, sizeof(reply), DEADLINE_MS) >= 0);
	assert_int_equal(hdr.request, VU_SET_LOG_BASE);
	assert_int_equal(reply, 0);
	check_the_new_log_is_marked(t, g, lmark, log1, log2);
}

/*
 * Logging starts while a ring is set up but not enabled: that queue stays
 * INIT for its enable, yet its object now names the log's key (its dirty
 * bitmap), so it is no longer blank. The front end leaves with the log on:
 * the stop must put that queue back to blank too, or the log's
 * registration stays named by it, and so alive, after its front end has
 * gone (found by fuzz_vhost_msg: two objects left after every teardown).
 */
static void
test_log_on_ring_never_enabled_leaves_nothing_after_the_front_end(void **state)
{
	struct timespec pause = { 0, 1000000 };
	struct tc *t = *state;
	struct tc_ring rings[4];
	uint32_t bases[4];
	struct vu_guest *g;
	struct vu_log *log;
	size_t lmark;
	int waited;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 256, false);
	tc_rings_of(rings, 4, g);
	tc_connect(t);
	/* Rings 0, 1 and 3 enabled; ring 2 (RX of pair 1) set up only. */
	tc_fe_start(t, rings, 4, 0x0b);
	tc_wait_running(t);
	assert_int_equal(tc_vq_state(t, 2), PRM_VIRTQ_STATE_INIT);
	/* LOG_ALL added to the features tc_fe_start negotiated, as QEMU does. */
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_log_base(t->c, log->fd, log->size, 0), 0);
	assert_int_equal(vu_set_features(t->c, tc_fe_features(t, false) |
					 (1ULL << VU_F_LOG_ALL)), 0);
	assert_true(tc_wait_log(lmark, "dirty-page logging on"));
	tc_barrier(t);
	assert_int_equal(tc_vq_state(t, 2), PRM_VIRTQ_STATE_INIT);
	tc_traffic(g, 0x1, 50);
	tc_fe_stop(t, 4, bases);
	tc_disconnect(t);
	tc_wait_restored(t);
	/* Released registrations a queue still names are retried: bounded wait. */
	for (waited = 0; lmh_live(&t->d) != t->d.live0 && waited < DEADLINE_MS; waited++)
		nanosleep(&pause, NULL);
	tc_check_live_as_probed(t);
	vu_log_destroy(log);
}

/*
 * RX queue 0, in ERR since lmark, recovered (re-created RDY): the device's
 * writes from here are all in the log. Then the front end leaves.
 */
static void
recovered_and_logging(struct tc *t, struct vu_guest *g, struct vu_log *log, size_t lmark)
{
	assert_true(tc_wait_log(lmark, "re-creating it (recovery 1/3)"));
	tc_barrier(t);
	assert_int_equal(tc_vq_state(t, 0), PRM_VIRTQ_STATE_RDY);
	vu_guest_dirty_mark(g);
	tc_traffic(g, 0x1, 200);
	stop_check_and_leave(t, g, 2, log);
}

/*
 * A queue that goes to ERR while logging is re-created with the dirty
 * bitmap before it runs again: the device's writes after the recovery are
 * in the log (the recovery used to re-create it from its configuration
 * alone, unlogged, and the destination would miss those pages).
 */
static void
test_a_queue_recovered_while_logging_still_logs(void **state)
{
	struct tc *t = *state;
	struct vu_guest *g;
	struct vu_log *log;
	size_t lmark;

	g = tc_start(t, 1, NULL);
	tc_traffic(g, 0x1, 100);
	log = log_on(t);
	lmark = lmh_log_mark();
	/* RX queue 0: the device writes the guest's buffers, the writes the log must hold. */
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, 0), EMU_VQ_ERROR_BAD_DESC), 0);
	recovered_and_logging(t, g, log, lmark);
}

/*
 * A queue gone to ERR whose OBJECT_CHANGE is not handled yet (the worker
 * held) when logging starts: the device refuses its dirty bitmap for its
 * state, which says nothing of the device (it used to switch every queue to
 * the SUSPEND-and-resume fallback, and fail the start). Its recovery then
 * re-creates it logging.
 */
static void
test_a_queue_in_err_when_logging_starts_is_left_to_its_recovery(void **state)
{
	struct tc *t = *state;
	struct vu_guest *g;
	struct vu_log *log;
	size_t lmark;

	g = tc_start(t, 1, NULL);
	tc_traffic(g, 0x1, 100);
	mlx5_lm_worker_hold(t->d.dev, 3);
	assert_int_equal(lmh_vq_force_error(&t->d, tc_vq_id(t, 0), EMU_VQ_ERROR_BAD_DESC), 0);
	assert_int_equal(tc_vq_state(t, 0), PRM_VIRTQ_STATE_ERR);
	lmark = lmh_log_mark();
	log = log_on(t);
	assert_true(lmh_log_has(lmark, "queue 0 (rx 0): in ERR before its dirty log was set"));
	assert_false(lmh_log_has(lmark, "does not take the dirty bitmap on a running queue"));
	mlx5_lm_worker_hold(t->d.dev, 0);
	recovered_and_logging(t, g, log, lmark);
}

/* Since from, queue q's object got its dirty bitmap before any RDY (its first RDY is after it). */
static void
check_logs_before_rdy(struct tc *t, size_t from, int q)
{
	size_t k, bitmap = SIZE_MAX, rdy = SIZE_MAX;

	for (k = from; k < t->tr.n; k++) {
		const struct lmh_cmd *c = &t->tr.c[k];

		if (c->qidx != q || c->opcode != PRM_CMD_MODIFY_GENERAL_OBJECT || c->status != 0)
			continue;
		if (bitmap == SIZE_MAX && (tc_mod_bits(c) & PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS))
			bitmap = k;
		if (rdy == SIZE_MAX && tc_p_rdy(c, &q))
			rdy = k;
	}
	assert_true(bitmap != SIZE_MAX && rdy != SIZE_MAX);
	assert_true(bitmap < rdy);
}

/*
 * A pair enabled after DRIVER_OK while logging, on rings of 512 entries
 * (the queues are pre-created with 256): its queues are re-created for
 * the size, and the new objects must log before they run, as at a
 * DRIVER_OK with the log on. They used to be made RDY at once, with no
 * dirty bitmap (the old objects' went with them): the pages the device
 * wrote for that pair were missing from the log, so from the destination.
 */
static void
test_a_ring_enabled_late_while_logging_logs_before_it_runs(void **state)
{
	struct tc *t = *state;
	struct tc_ring rings[4];
	struct vu_guest *g;
	struct vu_log *log;
	size_t mark, lmark;
	unsigned int i;
	uint64_t feat;
	uint8_t status;

	tc_probe(t, 2, NULL);
	g = tc_guest(t, 0, 2, 512, false);
	tc_connect(t);
	tc_rings_of(rings, 4, g);
	/* Pair 0 only at DRIVER_OK: pair 1's queues stay blank, size 256. */
	tc_fe_start(t, rings, 4, 0x3);
	tc_wait_running(t);
	tc_traffic(g, 0x1, 50);
	/* Logging on as log_on does, with the features tc_fe_start negotiated. */
	feat = tc_fe_features(t, false);
	lmark = lmh_log_mark();
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(t->mem)), 0);
	assert_int_equal(vu_set_log_base(t->c, log->fd, log->size, 0), 0);
	assert_int_equal(vu_set_features(t->c, feat | (1ULL << VU_F_LOG_ALL)), 0);
	assert_true(tc_wait_log(lmark, "dirty-page logging on"));
	tc_barrier(t);
	/* From the enable on, every page the device writes must be in the log. */
	vu_guest_dirty_mark(g);
	mark = tc_mark(t);
	for (i = 2; i < 4; i++)
		assert_int_equal(vu_set_vring_enable(t->c, i, true), 0);
	/*
	 * A round trip: DPDK 22.11 acks SET_VRING_ENABLE before it calls
	 * set_vring_state; once the next answer is back, it has.
	 */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	tc_barrier(t);
	for (i = 2; i < 4; i++) {
		int q = (int)i;

		/* Re-created (the size), given the log, then running. */
		assert_int_equal(tc_count(t, mark, tc_p_vq_create, &q), 1);
		check_logs_before_rdy(t, mark, q);
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	tc_traffic(g, 0x2, 200);
	stop_check_and_leave(t, g, 4, log);
}

int
tc_run_logging(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_disabled_pairs_stay_suspended_when_logging_starts),
		TC_TEST(test_a_ring_enabled_late_while_logging_logs_before_it_runs),
		TC_TEST(test_log_start_rings_every_running_queue),
		TC_TEST(test_log_on_at_driver_ok_logs_before_any_queue_runs),
		TC_TEST(test_packed_rings_the_device_wrote_are_in_the_log_after_the_stop),
		TC_TEST(test_split_rings_the_device_wrote_are_in_the_log_after_the_stop),
		TC_TEST(test_log_on_ring_never_enabled_leaves_nothing_after_the_front_end),
		TC_TEST(test_new_log_base_while_logging_is_the_log_the_device_marks),
		TC_TEST(test_new_log_base_during_a_held_configuration_is_the_log_registered),
		TC_TEST(test_a_queue_recovered_while_logging_still_logs),
		TC_TEST(test_a_queue_in_err_when_logging_starts_is_left_to_its_recovery),
	};

	return cmocka_run_group_tests_name("lifecycle: logging", tests, NULL, NULL);
}
