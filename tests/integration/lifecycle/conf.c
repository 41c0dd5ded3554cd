/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, configuration at DRIVER_OK: one MODIFY per pre-created
 * queue carrying only what differs from a blank queue, a queue re-created
 * only when its ring has another size, rings outside guest memory, and a
 * configuration failing mid-way (asynchronous, serial, and in the isolated
 * tests of main.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "rte_pmd_mlx5_lm.h"

#include "lifecycle.h"

/* Check the MODIFYs of dev_conf since `from`: one per ring, only what differs. */
static void
check_conf_modifies(struct tc *t, size_t from, struct vu_guest *g, unsigned int nrings,
		    const uint32_t *bases, uint64_t extra_bits)
{
	unsigned int i;
	size_t k;

	/* Pre-created queues of the right size: no virtq is created or destroyed. */
	assert_int_equal(tc_count(t, from, tc_p_vq_create, NULL), 0);
	assert_int_equal(tc_count(t, from, tc_p_vq_destroy, NULL), 0);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;
		const struct lmh_cmd *m = NULL;
		struct vu_ring_info ri;
		uint64_t want = BITS_FRESH | extra_bits;

		assert_int_equal(tc_count(t, from, tc_p_vq_modify, &q), 1);
		for (k = from; k < t->tr.n; k++)
			if (tc_p_vq_modify(&t->tr.c[k], &q))
				m = &t->tr.c[k];
		assert_int_equal(m->status, 0);
		/* The hardware indices are sent only where vhost's base is not the blank 0. */
		if (bases != NULL && bases[i] != 0)
			want |= BITS_INDEX;
		if (tc_mod_bits(m) != want)
			print_error("queue %u: modify_field_select 0x%" PRIx64 ", want 0x%" PRIx64
				    "\n", i, tc_mod_bits(m), want);
		assert_true(tc_mod_bits(m) == want);
		assert_int_equal(tc_mod_state(m), PRM_VIRTQ_STATE_RDY);
		/* And the values are the guest's rings, through a real mkey. */
		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		assert_true(PRM_GET(virtio_q, tc_vq_q(m), desc_addr) == ri.desc_gpa);
		assert_true(PRM_GET(virtio_q, tc_vq_q(m), available_addr) == ri.avail_gpa);
		assert_true(PRM_GET(virtio_q, tc_vq_q(m), used_addr) == ri.used_gpa);
		assert_true(PRM_GET(virtio_q, tc_vq_q(m), virtio_q_mkey) != 0);
		if (bases != NULL && bases[i] != 0)
			assert_int_equal(PRM_GET(virtio_net_q, tc_vq_obj(m), hw_available_index),
					 bases[i]);
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
}

/*
 * The RQT made at probe lists every RX queue, in order: a front end that
 * enables all its pairs finds it as it must be at DRIVER_OK (no
 * MODIFY_RQT inside the downtime).
 */
static void
check_rqt_made_with_every_rx_queue(struct tc *t, unsigned int pairs)
{
	const struct lmh_cmd *c = NULL;
	const uint8_t *ctx, *list;
	unsigned int i;
	size_t k;

	tc_sync(t);
	for (k = 0; k < t->tr.n && c == NULL; k++)
		if (t->tr.c[k].opcode == PRM_CMD_CREATE_RQT && t->tr.c[k].status == 0)
			c = &t->tr.c[k];
	assert_non_null(c);
	assert_non_null(c->in);
	ctx = PRM_CADDR(create_rqt_in, c->in, rqt_context);
	list = PRM_CADDR(rqtc, ctx, rq_num);
	assert_int_equal(PRM_GET(rqtc, ctx, rqt_actual_size), pairs);
	for (i = 0; i < pairs; i++)
		assert_int_equal(PRM_GET(rq_num, list + i * PRM_SIZE(rq_num), rq_num),
				 tc_vq_id(t, 2 * i));
}

static void
run_driver_ok_and_close(struct tc *t, bool packed)
{
	const uint16_t modify_rqt = PRM_CMD_MODIFY_RQT;
	const unsigned int pairs = 4, nrings = 2 * pairs;
	const uint16_t size = 256;
	struct vu_start_opts o = { 0 };
	uint32_t bases[MAX_RINGS];
	struct vu_guest *g;
	size_t mark;
	int q;

	tc_probe(t, pairs, NULL);
	/* Every virtq exists before any front end connects. */
	assert_int_equal(tc_count(t, 0, tc_p_vq_create, NULL), nrings);
	for (q = 0; q < (int)nrings; q++) {
		assert_int_equal(tc_count(t, 0, tc_p_vq_create, &q), 1);
		assert_int_equal(tc_vq_state(t, (unsigned int)q), PRM_VIRTQ_STATE_INIT);
	}
	g = tc_guest(t, 0, pairs, size, packed);
	tc_connect(t);
	mark = tc_mark(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	/*
	 * A packed ring differs from a blank queue in its type, and vhost's
	 * fresh packed base (wrap counter set) in the indices.
	 */
	check_conf_modifies(t, mark, g, nrings, NULL,
			    packed ? PRM_VIRTQ_MODIFY_Q_TYPE | BITS_INDEX : 0);
	check_rqt_made_with_every_rx_queue(t, pairs);
	assert_int_equal(tc_count(t, mark, tc_p_opcode, &modify_rqt), 0);
	tc_traffic(g, 0xf, 300);

	/* Stop ring by ring: the first reply already follows suspend + query. */
	mark = tc_mark(t);
	assert_int_equal(vu_get_vring_base(t->c, 0, &bases[0]), 0);
	tc_check_close_suspends_then_queries(t, mark, nrings, g, packed);
	for (q = 1; q < (int)nrings; q++)
		assert_int_equal(vu_get_vring_base(t->c, (uint32_t)q, &bases[q]), 0);
	tc_check_bases(g, bases, pairs, packed, size);

	/*
	 * Restart from those bases: again MODIFY only, now with the indices.
	 * QEMU (7.2, vhost_dev_stop) resets the status after stopping, so that
	 * the next DRIVER_OK is what starts the device again.
	 */
	assert_int_equal(vu_set_status(t->c, 0), 0);
	tc_wait_restored(t);
	mark = tc_mark(t);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	tc_wait_running(t);
	check_conf_modifies(t, mark, g, nrings, bases, packed ? PRM_VIRTQ_MODIFY_Q_TYPE : 0);
	tc_traffic(g, 0xf, 200);
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	tc_check_bases(g, bases, pairs, packed, size);
}

static void
test_driver_ok_modifies_each_queue_once_and_close_suspends_and_queries(void **state)
{
	run_driver_ok_and_close(*state, false);
}

static void
test_packed_rings_are_configured_and_stopped_as_split_ones_are(void **state)
{
	run_driver_ok_and_close(*state, true);
}

static void
test_ring_of_another_size_recreates_only_its_queue(void **state)
{
	struct tc *t = *state;
	const unsigned int nrings = 8;
	/* Rings 0, 1 and 5 come from a guest whose rings have 1024 entries. */
	const uint32_t big = 1u << 0 | 1u << 1 | 1u << 5;
	struct tc_ring rings[8];
	uint32_t bases[8];
	struct vu_guest *a, *b;
	unsigned int i;
	size_t mark, k;

	tc_probe(t, 4, NULL);
	a = tc_guest(t, 0, 4, 256, false);
	b = tc_guest(t, 1, 3, 1024, false);
	tc_rings_of(rings, nrings, a);
	for (i = 0; i < nrings; i++)
		if (big & (1u << i))
			rings[i].g = b;
	tc_connect(t);
	mark = tc_mark(t);
	tc_fe_start(t, rings, nrings, 0xff);
	tc_wait_running(t);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;
		bool recreate = big & (1u << i);

		/* Destroy + create for the mismatched queues only, and one MODIFY each. */
		assert_int_equal(tc_count(t, mark, tc_p_vq_create, &q), recreate);
		assert_int_equal(tc_count(t, mark, tc_p_vq_destroy, &q), recreate);
		assert_int_equal(tc_count(t, mark, tc_p_vq_modify, &q), 1);
		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 1);
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
		for (k = mark; k < t->tr.n; k++)
			if (tc_p_vq_create(&t->tr.c[k], &q))
				assert_int_equal(PRM_GET(virtio_q, tc_vq_q(&t->tr.c[k]),
							 queue_size), 1024);
	}
	/* The re-created queues carry traffic: B's pairs 0 and 2 (ring 5 alone). */
	tc_traffic(b, 1u << 0 | 1u << 2, 2000);
	tc_fe_stop(t, nrings, bases);
	assert_int_equal(bases[1], 2000);
	assert_int_equal(bases[5], 2000);
}

/*
 * Every RX queue of a two-pair device re-created at DRIVER_OK (the front
 * end's rings have 1024 entries, the pre-created queues 256): the RQT,
 * which cannot be empty, must not be parked on a queue about to be
 * destroyed as well, whose destroy the device would refuse (an RQT names
 * it). It used to be, and such a front end never got its device running.
 */
static void
test_every_rx_queue_of_another_size_is_recreated(void **state)
{
	struct tc *t = *state;
	const unsigned int nrings = 4;
	struct tc_ring rings[4];
	uint32_t bases[4];
	struct vu_guest *b;
	unsigned int i;
	size_t mark;

	tc_probe(t, 2, NULL);
	b = tc_guest(t, 0, 2, 1024, false);
	tc_rings_of(rings, nrings, b);
	tc_connect(t);
	mark = tc_mark(t);
	tc_fe_start(t, rings, nrings, 0xf);
	tc_wait_running(t);
	assert_int_equal(tc_count(t, mark, tc_p_failed_vq_cmd, NULL), 0);
	for (i = 0; i < nrings; i++) {
		int q = (int)i;

		assert_int_equal(tc_count(t, mark, tc_p_vq_create, &q), 1);
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_RDY);
	}
	/* Both RX queues receive: the steering was rebuilt around the new ones. */
	tc_traffic(b, 0x3, 500);
	tc_fe_stop(t, nrings, bases);
	tc_check_bases(b, bases, 2, false, 1024);
}

/* After a failed DRIVER_OK: nothing RDY, every object back to the probe state. */
static void
check_clean_after_failed_conf(struct tc *t, unsigned int nrings)
{
	unsigned int i;

	assert_false(tc_running(t));
	for (i = 0; i < nrings; i++)
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	tc_check_live_as_probed(t);
}

/*
 * Connect and DRIVER_OK on a device whose configuration is set to fail
 * (a fault armed at probe): vhost acks DRIVER_OK before dev_conf, so the
 * failure shows only in the trace; back once the worker is done with it.
 * The trace mark before DRIVER_OK, and the log's in *lmark.
 */
static size_t
start_failing_conf(struct tc *t, struct vu_guest *g, size_t *lmark)
{
	size_t mark;

	tc_connect(t);
	mark = tc_mark(t);
	*lmark = lmh_log_mark();
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	assert_true(tc_wait_trace(t, mark, tc_p_failed_vq_cmd, NULL, 1));
	tc_barrier(t);
	return mark;
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
	mark = start_failing_conf(t, g, &lmark);
	assert_true(lmh_log_has(lmark, "DRIVER_OK failed"));
	/* Some queue had reached RDY before the failure: it must not stay so. */
	assert_true(tc_count(t, mark, tc_p_rdy, NULL) >= 1);
	check_clean_after_failed_conf(t, 8);
	/* A new front end on the same device: DRIVER_OK works, traffic flows. */
	tc_reconnect_and_run(t, g, 4);
}

/*
 * The configuration runs in the device's worker after dev_conf returned
 * (so that vhost's one thread goes on): vhost never learns of a failure
 * there, so it does not call dev_conf again. The failure is the PMD's to
 * report: the device is not running, and rte_pmd_mlx5_lm_get_state() says
 * FAILED with the reason and the error, counted. The front end's next
 * start finds a clean device.
 */
static void
test_driver_ok_failure_reported_through_the_public_api(void **state)
{
	struct tc *t = *state;
	struct rte_pmd_mlx5_lm_state st;
	struct vu_guest *g;
	size_t lmark;

	tc_probe(t, 2, NULL);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_STOPPED);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 3, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 2, 256, false);
	start_failing_conf(t, g, &lmark);
	check_clean_after_failed_conf(t, 4);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_FAILED);
	assert_true(st.last_error < 0);
	assert_non_null(strstr(st.last_error_msg, "queue configuration failed"));
	assert_int_equal(st.conf_failures, 1);
	assert_int_equal(st.conf_count, 0);
	/* A new start of the front end: DRIVER_OK works, traffic flows. */
	tc_reconnect_and_run(t, g, 2);
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
	struct vu_guest *g;
	uint8_t status;
	size_t lmark;

	tc_probe(t, 2, "parallel=0");
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 3, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 2, 256, false);
	start_failing_conf(t, g, &lmark);
	check_clean_after_failed_conf(t, 4);
	/* Any message: vhost calls dev_conf again after handling it. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	tc_wait_running(t);
	tc_traffic_and_stop(t, g, 2, 300);
}

/*
 * A device and a guest of `pairs` pairs, connected, and the guest's rings
 * for tc_fe_start with ring's descriptor ring at an address no memory
 * region covers.
 */
static struct vu_guest *
attach_with_ring_outside(struct tc *t, unsigned int pairs, struct tc_ring *rings,
			 unsigned int ring)
{
	static uint8_t not_guest[65536] __rte_aligned(4096);
	struct vu_guest *g = tc_attach(t, pairs, NULL);

	tc_rings_of(rings, 2 * pairs, g);
	rings[ring].bad_desc = (uintptr_t)not_guest;
	return g;
}

/*
 * The front end corrects ring's address: vhost enables the ring, which
 * starts; traffic on all of the guest's `pairs` pairs, then the stop's
 * bases checked.
 */
static void
ring_corrected_runs(struct tc *t, struct vu_guest *g, unsigned int ring, unsigned int pairs)
{
	uint32_t bases[2 * MAX_QP];

	tc_fe_ring_addr(t, ring, g);
	tc_wait_running(t);
	tc_traffic(g, (1u << pairs) - 1, 300);
	tc_fe_stop(t, 2 * pairs, bases);
	tc_check_bases(g, bases, pairs, false, 256);
}

static void
test_ring_outside_guest_memory_fails_driver_ok_cleanly(void **state)
{
	struct tc *t = *state;
	struct tc_ring rings[4];
	struct vu_guest *g;
	size_t mark, lmark;

	g = attach_with_ring_outside(t, 2, rings, 2);
	mark = tc_mark(t);
	lmark = lmh_log_mark();
	tc_fe_start(t, rings, 4, 0xf);
	/*
	 * vhost cannot translate ring 2, so it never reports it ready: the
	 * device starts with the rings that are, leaves queue 2 blank and says
	 * which ring and why.
	 */
	assert_true(tc_wait_log(lmark, "not in guest memory"));
	tc_barrier(t);
	assert_true(lmh_log_has(lmark, "queue 2 (rx 1)"));
	tc_wait_running(t);
	/* Rings 0, 1 and 3 start; ring 2 stays blank. */
	assert_int_equal(tc_count(t, mark, tc_p_vq_modify, NULL), 3);
	tc_traffic(g, 0x1, 300);
	ring_corrected_runs(t, g, 2, 2);
}

/* Ring 0 outside guest memory: vhost never starts the device, nothing happens to it. */
static void
test_first_ring_outside_guest_memory_never_configures(void **state)
{
	struct tc *t = *state;
	struct tc_ring rings[2];
	struct vu_guest *g;
	uint8_t status;
	size_t mark;

	g = attach_with_ring_outside(t, 1, rings, 0);
	mark = tc_mark(t);
	tc_fe_start(t, rings, 2, 0x3);
	/* A round trip: vhost has handled DRIVER_OK and everything before it. */
	assert_int_equal(vu_get_status(t->c, &status), 0);
	tc_barrier(t);
	assert_false(tc_running(t));
	assert_int_equal(tc_count(t, mark, tc_p_vq_any, NULL), 0);
	tc_check_live_as_probed(t);
	ring_corrected_runs(t, g, 0, 1);
}

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
	size_t lmark;

	tc_probe(t, queues, serial);
	assert_int_equal(lmh_fault_inject(&t->d, PRM_CMD_CREATE_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 1, PRM_STATUS_NO_RESOURCES, 0), 0);
	g = tc_guest(t, 0, 1, 1024, false);
	start_failing_conf(t, g, &lmark);
	assert_true(lmh_log_has(lmark, "DRIVER_OK failed"));
	check_clean_after_failed_conf(t, 2 * queues);
	tc_disconnect(t);
	tc_wait_restored(t);
	tc_restart_front_end(t, g);
	tc_traffic(g, 0x1, 2000);
	tc_fe_stop(t, 2, bases);
	assert_int_equal(bases[1], 2000);
}

void
isolated_failed_recreation_two_pairs(void **state)
{
	run_failed_recreation(*state, 2);
}

void
isolated_failed_recreation_single_pair(void **state)
{
	run_failed_recreation(*state, 1);
}

static void
test_failed_recreation_during_driver_ok_unwinds_cleanly(void **state)
{
	(void)state;
	tc_run_isolated("isolated_failed_recreation_two_pairs");
}

static void
test_failed_rx_recreation_on_single_pair_device_unwinds_cleanly(void **state)
{
	(void)state;
	tc_run_isolated("isolated_failed_recreation_single_pair");
}

int
tc_run_conf(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_driver_ok_modifies_each_queue_once_and_close_suspends_and_queries),
		TC_TEST(test_packed_rings_are_configured_and_stopped_as_split_ones_are),
		TC_TEST(test_ring_of_another_size_recreates_only_its_queue),
		TC_TEST(test_every_rx_queue_of_another_size_is_recreated),
		TC_TEST(test_driver_ok_failing_midway_leaves_no_queue_ready),
		TC_TEST(test_driver_ok_failure_reported_through_the_public_api),
		TC_TEST(test_serial_driver_ok_retried_by_vhost_after_a_failure_succeeds),
		cmocka_unit_test(test_failed_recreation_during_driver_ok_unwinds_cleanly),
		cmocka_unit_test(test_failed_rx_recreation_on_single_pair_device_unwinds_cleanly),
		TC_TEST(test_ring_outside_guest_memory_fails_driver_ok_cleanly),
		TC_TEST(test_first_ring_outside_guest_memory_never_configures),
	};

	return cmocka_run_group_tests_name("lifecycle: configuration", tests, NULL, NULL);
}
