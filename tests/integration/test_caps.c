/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver's fallbacks for devices that lack optional capabilities
 * (freeze_to_rdy, the modify caps, counters, MRG_RXBUF, VERSION_1, a mappable
 * doorbell), in process through lm_harness: the PMD on an emulated device
 * whose profile (tests/profiles/) turns a capability off, the built-in
 * vhost-user front end and guest. On each profile the device must forward
 * both ways, resume a pair the guest disabled and enabled again, start
 * dirty-page logging while running with a complete log, stop, and leave
 * nothing alive - and no command it sent may have been refused: the
 * emulator refuses whatever the caps do not announce.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_vdpa.h>

#include "prm.h"
#include "devx_priv.h"
#include "lm_harness.h"
#include "mlx5_lm_test.h"

#define PAIRS 2
#define NRINGS (2 * PAIRS)
#define F_MRG_RXBUF_BIT (1ull << 15)
#define PF_HOST_NOTIFIER_BIT (1ull << 11)
/* vhost-user protocol features the host notifiers travel with. */
#define PF_SLAVE_REQ_BIT (1ull << 5)
#define PF_SLAVE_SEND_FD_BIT (1ull << 10)

static struct vu_mem *mem;
static struct vu_guest *guest;
/* What a test holds; the teardown releases what a failed test left behind. */
static struct vu_client *client;
static struct lmh_dev *probed;
static struct lmh_trace *traced;
/* The device and trace of the running test (static: a failed test's teardown reads them). */
static struct lmh_dev d;
static struct lmh_trace t;

static char profile_path[PATH_MAX];

static const char *
profile(const char *file)
{
	snprintf(profile_path, sizeof(profile_path), "%s/%s", TEST_PROFILES_DIR, file);
	return profile_path;
}

/*
 * Commands since from refused other than with status st: each printed. A
 * virtq CREATE refused for its umems is BAD_RES (EMU_SYND_VQ_UMEM_BELOW_PARAMS).
 */
static size_t
refused_but(struct lmh_trace *tr, size_t from, int st)
{
	size_t k, n = 0;

	lmh_trace_sync(tr);
	for (k = from; k < tr->n; k++) {
		if (!tr->c[k].is_cmd || tr->c[k].status == 0 || tr->c[k].status == st)
			continue;
		print_error("refused: %s (opcode 0x%x, obj_type 0x%x) status 0x%x syndrome "
			    "0x%08x\n", tr->c[k].op, tr->c[k].opcode, tr->c[k].obj_type,
			    tr->c[k].status, tr->c[k].syndrome);
		n++;
	}
	return n;
}

/* Commands of the device's trace so far that the emulated firmware refused. */
static size_t
failed_cmds(struct lmh_trace *tr)
{
	return refused_but(tr, 0, 0);
}

/* Commands since from creating a general object of obj_type. */
static size_t
creates_of(struct lmh_trace *tr, size_t from, uint16_t obj_type)
{
	size_t k, n = 0;

	lmh_trace_sync(tr);
	for (k = from; k < tr->n; k++)
		if (tr->c[k].opcode == PRM_CMD_CREATE_GENERAL_OBJECT &&
		    tr->c[k].obj_type == obj_type && tr->c[k].status == 0)
			n++;
	return n;
}

/* Commands from (to, excluded) modifying a general object of obj_type. */
static size_t
modifies_in(struct lmh_trace *tr, size_t from, size_t to, uint16_t obj_type)
{
	size_t k, n = 0;

	lmh_trace_sync(tr);
	for (k = from; k < to && k < tr->n; k++)
		if (tr->c[k].opcode == PRM_CMD_MODIFY_GENERAL_OBJECT &&
		    tr->c[k].obj_type == obj_type && tr->c[k].status == 0)
			n++;
	return n;
}

static size_t
creates_in(struct lmh_trace *tr, size_t from, size_t to, uint16_t obj_type)
{
	return creates_of(tr, from, obj_type) - creates_of(tr, to, obj_type);
}

/*
 * The trace windows of the last forward_reenable_log: LOG_ALL set until
 * "dirty-page logging on", LOG_ALL cleared until "dirty-page logging off",
 * and their wall times (the front end's SET_FEATURES to the driver's line).
 */
static size_t log_on_from, log_on_to, log_off_from, log_off_to;
static double log_on_ms, log_off_ms;
/* Commands the next forward_reenable_log may see refused (its profile's point). */
static size_t refusals_allowed;

/*
 * Probe on the profile, then what a migration source goes through: start,
 * forward both ways, a pair disabled and enabled again (SUSPEND then RDY),
 * dirty logging started on running queues with a complete log, stop,
 * remove. Returns with the device removed; *d and *t stay readable.
 */
static void
forward_reenable_log(const char *prof, struct lmh_dev *dv, struct lmh_trace *tr,
		     uint64_t *protocol_features)
{
	struct vu_start_opts o = { .mrg_rxbuf = true };
	uint32_t bases[NRINGS];
	struct vu_client *c;
	struct vu_log *log = NULL;
	uint64_t missing;
	int64_t pages, t0;
	size_t lmark;
	unsigned int i;
	uint8_t status;

	probed = dv;
	assert_int_equal(lmh_probe_profile(dv, 0, prof, "queues=2,workers=2,mr_gc_ms=0"), 0);
	lmh_trace_open(tr, dv->trace);
	traced = tr;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(c = lmh_fe_connect(0));
	client = c;
	assert_int_equal(vu_start_device(c, guest, &o), 0);
	if (protocol_features != NULL)
		*protocol_features = vu_protocol_features(c);
	assert_true(lmh_wait_running(dv, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));

	/* The guest disables pair 1 and enables it again: it must forward again. */
	for (i = 2; i < 4; i++)
		assert_int_equal(vu_set_vring_enable(c, i, false), 0);
	/* vhost acks an enable before telling the driver: a round trip, then the barrier. */
	assert_int_equal(vu_get_status(c, &status), 0);
	lmh_barrier(dv);
	assert_true(lmh_traffic(guest, 0x1, 50, LMH_DEADLINE_MS));
	for (i = 2; i < 4; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_get_status(c, &status), 0);
	lmh_barrier(dv);
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));

	/* Migration starts: logging on running queues, every written page logged. */
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(mem)), 0);
	lmark = lmh_log_mark();
	log_on_from = lmh_trace_mark(tr);
	t0 = lmh_now_ms();
	assert_int_equal(vu_set_log(c, log), 0);
	assert_true(lmh_wait_log(lmark, "dirty-page logging on", LMH_DEADLINE_MS));
	log_on_ms = (double)(lmh_now_ms() - t0);
	log_on_to = lmh_trace_mark(tr);
	lmh_barrier(dv);
	vu_guest_dirty_mark(guest);
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	missing = lmh_dirty_buffers_missing(guest, log, &pages);
	assert_true(pages > 0);
	assert_int_equal(missing, 0);
	lmark = lmh_log_mark();
	log_off_from = lmh_trace_mark(tr);
	t0 = lmh_now_ms();
	assert_int_equal(vu_clear_log(c), 0);
	assert_true(lmh_wait_log(lmark, "dirty-page logging off", LMH_DEADLINE_MS));
	log_off_ms = (double)(lmh_now_ms() - t0);
	log_off_to = lmh_trace_mark(tr);

	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	vu_log_destroy(log);
	assert_true(lmh_wait_restored(dv));
	/* The only refusals a profile may cause: the ones its test expects. */
	assert_true(failed_cmds(tr) <= refusals_allowed);
	refusals_allowed = 0;
	probed = NULL;
	assert_int_equal(lmh_remove(dv), 0);
}

/* Probe without a socket; the teardown removes the device if the test fails. */
static void
probe_alone(struct lmh_dev *d, const char *prof, const char *args)
{
	probed = d;
	assert_int_equal(lmh_probe_profile(d, -1, prof, args), 0);
}

static void
remove_alone(struct lmh_dev *d)
{
	probed = NULL;
	assert_int_equal(lmh_remove(d), 0);
}

static int
teardown(void **state)
{
	(void)state;
	/* A test that failed while holding the configuration lets it go. */
	if (probed != NULL && probed->dev != NULL)
		mlx5_lm_worker_hold(probed->dev, 0);
	if (client != NULL) {
		vu_disconnect(client);
		client = NULL;
		lmh_wait_closed(0);
	}
	if (probed != NULL && probed->dev != NULL)
		lmh_remove(probed);
	probed = NULL;
	if (traced != NULL)
		lmh_trace_free(traced);
	traced = NULL;
	return 0;
}

/*
 * Running queues take the dirty-bitmap fields as they run
 * (DPDK vdpa/mlx5 mlx5_vdpa_lm.c): one MODIFY per queue to start logging
 * and one to stop, no SUSPEND, no re-creation, the steering untouched.
 */
static void
assert_logging_on_running_queues(struct lmh_trace *tr)
{
	assert_int_equal(modifies_in(tr, log_on_from, log_on_to, PRM_OBJ_VIRTIO_NET_Q), NRINGS);
	assert_int_equal(modifies_in(tr, log_off_from, log_off_to, PRM_OBJ_VIRTIO_NET_Q), NRINGS);
	assert_int_equal(creates_in(tr, log_on_from, log_on_to, PRM_OBJ_VIRTIO_NET_Q), 0);
	assert_int_equal(creates_in(tr, log_off_from, log_off_to, PRM_OBJ_VIRTIO_NET_Q), 0);
}

/* The control: the CX6 Dx caps (fast profile) go through the same steps. */
static void
test_all_caps_forward_reenable_and_log(void **state)
{
	(void)state;
	forward_reenable_log("fast", &d, &t, NULL);
	assert_logging_on_running_queues(&t);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * Completion EQs past 255 (the CQ's c_eqn written as the
 * kernel reads it, 32 bits: mlx5_core_create_cq), a device with real-time
 * timestamps only (the event QPs ask for the format the caps allow:
 * Linux mlx5_get_qp_default_ts, DPDK mlx5_ts_format_conv) and no cq_oi
 * (no overrun ignore asked for): the same steps as the control.
 */
static void
test_eqns_past_255_real_time_only_and_no_cq_oi(void **state)
{
	(void)state;
	forward_reenable_log(profile("caps-eqn-rt.json"), &d, &t, NULL);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * Without freeze_to_rdy_supported a suspended queue cannot go back to
 * RDY (PRM state machine); re-enabling a ring re-creates the queue from
 * its queried indices instead. The dirty log needs no SUSPEND: the running
 * queues take it as they run (DPDK vdpa/mlx5 mlx5_vdpa_lm.c).
 */
static void
test_without_freeze_to_rdy_queues_are_recreated_not_resumed(void **state)
{

	(void)state;
	forward_reenable_log(profile("caps-no-freeze.json"), &d, &t, NULL);
	/* 4 pre-created, 2 re-created for the re-enabled pair, 4 put back to blank after the stop. */
	assert_true(creates_of(&t, 0, PRM_OBJ_VIRTIO_NET_Q) >= 10);
	assert_logging_on_running_queues(&t);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * Firmware that takes only STATE on a RDY queue and has no freeze_to_rdy:
 * the driver says once that it falls back, and starting and stopping the
 * log re-create every running queue (with the steering off meanwhile),
 * every written page still logged.
 */
static void
test_without_rdy_dirty_log_queues_are_recreated_for_logging(void **state)
{
	size_t lmark = lmh_log_mark();

	(void)state;
	/* The dirty bitmap on each running queue, refused until the driver knows (BAD_RES_STATE). */
	refusals_allowed = NRINGS;
	forward_reenable_log(profile("caps-no-rdy-dirty-log.json"), &d, &t, NULL);
	assert_true(lmh_log_has(lmark, "dirty logging falls back to re-creating every running "
				"queue"));
	assert_int_equal(creates_in(&t, log_on_from, log_on_to, PRM_OBJ_VIRTIO_NET_Q), NRINGS);
	assert_int_equal(creates_in(&t, log_off_from, log_off_to, PRM_OBJ_VIRTIO_NET_Q), NRINGS);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * What starting and stopping the dirty log costs a device under the CX6 Dx
 * model (the front end's SET_FEATURES with or without LOG_ALL to the
 * driver's "logging on/off" line), printed, not asserted: a measurement.
 */
static void
test_dirty_log_toggle_cost_on_cx6dx(void **state)
{
	(void)state;
	forward_reenable_log("cx6dx", &d, &t, NULL);
	print_message("cx6dx, %u rings: dirty log on in %.1f ms, off in %.1f ms\n", NRINGS,
		      log_on_ms, log_off_ms);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * Without vnet_modify_ext / virtio_net_q_addr_modify /
 * virtio_q_index_modify a blank queue cannot be configured by MODIFY: no
 * queue is pre-created at probe, each is created with its full
 * configuration at DRIVER_OK, and the device says so once.
 */
static void
test_without_modify_caps_queues_are_created_at_driver_ok(void **state)
{
	size_t lmark = lmh_log_mark();
	char *log;
	const char *p;
	unsigned int lines = 0;

	(void)state;
	forward_reenable_log(profile("caps-no-modify.json"), &d, &t, NULL);
	log = lmh_log_since(lmark);
	for (p = log; (p = strstr(p, "queues are created at DRIVER_OK")) != NULL; p++)
		lines++;
	free(log);
	assert_int_equal(lines, 1);
	/* Probe created no virtq: the first one follows the front end's memory table. */
	assert_true(creates_of(&t, 0, PRM_OBJ_VIRTIO_NET_Q) >= NRINGS);
	lmh_trace_free(&t);
	traced = NULL;
	probe_alone(&d, profile("caps-no-modify.json"),
					   "queues=2,workers=2,mr_gc_ms=0");
	lmh_trace_open(&t, d.trace);
	assert_int_equal(creates_of(&t, 0, PRM_OBJ_VIRTIO_NET_Q), 0);
	remove_alone(&d);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * Without VIRTIO_Q_COUNTERS in general_obj_types no counter set is
 * created; the stats names are still listed (they describe the device
 * type) but reading them fails with -ENOTSUP, so that a caller of
 * rte_vdpa_get_stats() tells "not supported" from "zero".
 */
static void
test_without_counters_stats_say_not_supported(void **state)
{
	struct rte_vdpa_stat_name names[16];
	struct rte_vdpa_stat stats[16];

	(void)state;
	forward_reenable_log(profile("caps-no-counters.json"), &d, &t, NULL);
	assert_int_equal(creates_of(&t, 0, PRM_OBJ_VIRTIO_Q_COUNTERS), 0);
	lmh_trace_free(&t);
	traced = NULL;
	probe_alone(&d, profile("caps-no-counters.json"),
					   "queues=2,workers=2,mr_gc_ms=0");
	assert_int_equal(rte_vdpa_get_stats_names(d.vdpa, names, 16), 6);
	assert_int_equal(rte_vdpa_get_stats(d.vdpa, 0, stats, 16), -ENOTSUP);
	assert_int_equal(rte_vdpa_reset_stats(d.vdpa, 0), -ENOTSUP);
	remove_alone(&d);
	/* With counters, the same calls read them. */
	probe_alone(&d, "fast", "queues=2,workers=2,mr_gc_ms=0");
	assert_int_equal(rte_vdpa_get_stats(d.vdpa, 0, stats, 16), 6);
	/* DPDK vdpa/mlx5's names in its order (mlx5_vdpa.c, mlx5_vdpa_stats_names). */
	assert_int_equal(rte_vdpa_get_stats_names(d.vdpa, names, 16), 6);
	assert_string_equal(names[0].name, "received_descriptors");
	assert_string_equal(names[1].name, "completed_descriptors");
	assert_string_equal(names[2].name, "bad descriptor errors");
	assert_string_equal(names[3].name, "exceed max chain");
	assert_string_equal(names[4].name, "invalid buffer");
	assert_string_equal(names[5].name, "completion errors");
	remove_alone(&d);
}

/* Every fallback at once. */
static void
test_minimal_caps_forward_reenable_and_log(void **state)
{

	(void)state;
	forward_reenable_log(profile("caps-minimal.json"), &d, &t, NULL);
	assert_int_equal(creates_of(&t, 0, PRM_OBJ_VIRTIO_Q_COUNTERS), 0);
	lmh_trace_free(&t);
	traced = NULL;
}

/* d probed on prof (traced), the guest fresh, its front end started with o: running. */
static struct vu_client *
fe_start(const char *prof, const struct vu_start_opts *o)
{
	struct vu_client *c;

	probed = &d;
	assert_int_equal(lmh_probe_profile(&d, 0, prof, "queues=2,workers=2,mr_gc_ms=0"), 0);
	lmh_trace_open(&t, d.trace);
	traced = &t;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(c = lmh_fe_connect(0));
	client = c;
	assert_int_equal(vu_start_device(c, guest, o), 0);
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	return c;
}

/* fe_start's front end stopped and gone, no command refused, d removed. */
static void
fe_end(struct vu_client *c)
{
	uint32_t bases[NRINGS];

	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&d));
	assert_int_equal(failed_cmds(&t), 0);
	lmh_trace_free(&t);
	traced = NULL;
	probed = NULL;
	assert_int_equal(lmh_remove(&d), 0);
}

/*
 * ERR recovery on a device with none of the optional caps: the queue is
 * re-created whole from what it completed (a blank queue cannot be
 * modified without the modify caps), and forwarding resumes on both pairs
 * with no command refused.
 */
static void
test_minimal_caps_recover_a_queue_in_err(void **state)
{
	struct vu_start_opts o = { .mrg_rxbuf = true };
	struct vu_client *c;
	size_t lmark;
	unsigned int q;

	(void)state;
	if (lmh_skip_on_rdma("queue put in ERR by the device",
			     "emu_virtq_force_error reaches only the emulator linked into this "
			     "program, not the emulated rdma-core's"))
		skip();
	c = fe_start(profile("caps-minimal.json"), &o);
	assert_true(lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS));
	for (q = 0; q < 2; q++) {
		lmark = lmh_log_mark();
		assert_int_equal(emu_virtq_force_error(d.emu, lmh_vq_id(&d, q),
						       EMU_VQ_ERROR_BAD_DESC), 0);
		assert_true(lmh_wait_log(lmark, "re-creating it", LMH_DEADLINE_MS));
		lmh_barrier(&d);
	}
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	fe_end(c);
}

/*
 * Virtq CREATEs since from, each with umem N sized a[N] * queue_size + b[N]:
 * what the device reports when they are made.
 */
static unsigned int
creates_sized(struct lmh_trace *tr, size_t from, const uint32_t a[3], const uint32_t b[3])
{
	unsigned int made;

	assert_int_equal(lmh_vq_creates_missized(tr, from, a, b, &made), 0);
	return made;
}

/*
 * The fallbacks re-create running queues too: without freeze_to_rdy a
 * ring enabled again, and where the firmware takes no dirty bitmap on a
 * RDY queue every running queue when logging starts. Those are creations
 * after probe like the others, sized from the umem parameters the device
 * reports when they happen: firmware changes them at runtime (the PF's
 * MTU, Linux commit abb0dcf9938c) and refuses a queue sized from older
 * ones (BAD_RES). The parameters grow before each step; nothing is refused
 * but the dirty bitmap on each RDY queue this profile is about.
 */
static void
test_fallback_re_creations_are_sized_from_the_umem_params_of_then(void **state)
{
	static const uint32_t a[3][3] = { { 192, 128, 24 }, { 256, 160, 32 }, { 320, 192, 40 } };
	static const uint32_t b[3][3] = {
		{ 8192, 12288, 16384 }, { 12288, 16384, 20480 }, { 16384, 20480, 24576 },
	};
	struct vu_start_opts o = { .mrg_rxbuf = true };
	struct vu_log *log = NULL;
	uint32_t bases[NRINGS];
	struct vu_client *c;
	size_t mark, lmark;
	unsigned int i;
	uint8_t status;

	(void)state;
	c = fe_start(profile("caps-no-rdy-dirty-log.json"), &o);
	assert_true(lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS));

	/* Pair 1 disabled and enabled again: re-created from the indices it reached. */
	for (i = 2; i < 4; i++)
		assert_int_equal(vu_set_vring_enable(c, i, false), 0);
	assert_int_equal(vu_get_status(c, &status), 0);
	lmh_barrier(&d);
	assert_int_equal(lmh_set_umem_params(&d, a[0], b[0]), 0);
	mark = lmh_trace_mark(&t);
	for (i = 2; i < 4; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_get_status(c, &status), 0);
	lmh_barrier(&d);
	assert_int_equal(refused_but(&t, mark, 0), 0);
	assert_int_equal(creates_sized(&t, mark, a[0], b[0]), 2);
	assert_true(lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS));

	/* Logging starts: every running queue re-created with the dirty bitmap. */
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(mem)), 0);
	assert_int_equal(lmh_set_umem_params(&d, a[1], b[1]), 0);
	mark = lmh_trace_mark(&t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_log(c, log), 0);
	assert_true(lmh_wait_log(lmark, "dirty-page logging on", LMH_DEADLINE_MS));
	lmh_barrier(&d);
	assert_int_equal(refused_but(&t, mark, PRM_STATUS_BAD_RES_STATE), 0);
	assert_int_equal(creates_sized(&t, mark, a[1], b[1]), NRINGS);
	assert_true(lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS));

	/* And when it stops. */
	assert_int_equal(lmh_set_umem_params(&d, a[2], b[2]), 0);
	mark = lmh_trace_mark(&t);
	lmark = lmh_log_mark();
	assert_int_equal(vu_clear_log(c), 0);
	assert_true(lmh_wait_log(lmark, "dirty-page logging off", LMH_DEADLINE_MS));
	lmh_barrier(&d);
	assert_int_equal(refused_but(&t, mark, PRM_STATUS_BAD_RES_STATE), 0);
	assert_int_equal(creates_sized(&t, mark, a[2], b[2]), NRINGS);
	assert_true(lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS));

	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	vu_log_destroy(log);
	assert_true(lmh_wait_restored(&d));
	assert_int_equal(refused_but(&t, 0, PRM_STATUS_BAD_RES_STATE), 0);
	lmh_trace_free(&t);
	traced = NULL;
	probed = NULL;
	assert_int_equal(lmh_remove(&d), 0);
}

/*
 * MRG_RXBUF is offered only when device_features_bits_mask has it (bit
 * 2), as Linux mlx5_vdpa maps the mask to virtio feature bits.
 */
static void
test_mrg_rxbuf_is_offered_only_when_the_device_mask_has_it(void **state)
{
	uint64_t f = 0;

	(void)state;
	probe_alone(&d, "fast", "queues=1");
	assert_int_equal(rte_vdpa_get_features(d.vdpa, &f), 0);
	assert_true(f & F_MRG_RXBUF_BIT);
	remove_alone(&d);
	probe_alone(&d, profile("caps-no-mrg.json"), "queues=1");
	assert_int_equal(rte_vdpa_get_features(d.vdpa, &f), 0);
	assert_false(f & F_MRG_RXBUF_BIT);
	remove_alone(&d);
}

/*
 * What upstream vdpa/mlx5 offers, this driver offers. The offloads follow
 * device_features_bits_mask (CSUM bit 10, GUEST_CSUM bit 9, HOST_TSO4/6
 * bits 12/11, the TSOs only with CSUM, virtio 1.1 5.1.3.1); GUEST_TSO4/6
 * never (upstream neither); GUEST_ANNOUNCE and ORDER_PLATFORM always.
 */
static void
test_offloads_follow_the_device_mask_and_upstream_features_are_offered(void **state)
{
	const uint64_t csum = 1ull << 0 | 1ull << 1;
	const uint64_t host_tso = 1ull << 11 | 1ull << 12, guest_tso = 1ull << 7 | 1ull << 8;
	const uint64_t always = 1ull << 21 | 1ull << 36;
	uint64_t f = 0;

	(void)state;
	probe_alone(&d, "fast", "queues=1");
	assert_int_equal(rte_vdpa_get_features(d.vdpa, &f), 0);
	assert_true((f & csum) == csum);
	assert_true((f & host_tso) == host_tso);
	assert_true((f & always) == always);
	assert_false(f & guest_tso);
	remove_alone(&d);
	probe_alone(&d, profile("caps-no-csum.json"), "queues=1");
	assert_int_equal(rte_vdpa_get_features(d.vdpa, &f), 0);
	assert_false(f & (csum | host_tso | guest_tso));
	assert_true((f & always) == always);
	remove_alone(&d);
}

/*
 * A front end that asks for every offload (CSUM, GUEST_CSUM, HOST_TSO4,
 * HOST_TSO6 acked whenever offered, as QEMU acks what its device wants)
 * against a device whose mask has no checksum offload (caps-no-csum: mask
 * bits 10 and 9 clear, 12 and 11 set): it gets none of them (no TSO
 * without CSUM, virtio 1.1 5.1.3.1), every queue is configured with
 * features inside the mask (the emulator refuses any other, at CREATE and
 * MODIFY), both directions forward, nothing is refused. The control, the
 * CX6 Dx mask: all four negotiated, the same steps.
 */
/*
 * Probe on prof, a front end started with o forwards both ways on both
 * pairs and stops, nothing refused, nothing left. *offered: what its
 * GET_FEATURES got; *acked: what it acked.
 */
static void
forward_once(const char *prof, const struct vu_start_opts *o, uint64_t *offered,
	     uint64_t *acked)
{
	struct vu_client *c = fe_start(prof, o);

	*offered = vu_backend_features(c);
	*acked = vu_acked_features(c);
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	fe_end(c);
}

static void
forward_asking_every_offload(const char *prof, uint64_t *acked)
{
	const uint64_t offloads = 1ull << 0 | 1ull << 1 | 1ull << 11 | 1ull << 12;
	struct vu_start_opts o = { .mrg_rxbuf = true, .extra_features = offloads };
	uint64_t offered;

	forward_once(prof, &o, &offered, acked);
	*acked &= offloads;
}

static void
test_offloads_asked_by_the_front_end_stay_within_the_device_mask(void **state)
{
	const uint64_t all = 1ull << 0 | 1ull << 1 | 1ull << 11 | 1ull << 12;
	uint64_t acked = 0;

	(void)state;
	forward_asking_every_offload("fast", &acked);
	assert_true(acked == all);
	forward_asking_every_offload(profile("caps-no-csum.json"), &acked);
	assert_true(acked == 0);
}

/*
 * VERSION_1 is offered only when the virtio emulation caps report
 * virtio_version_1_0 (Linux mlx5_vdpa get_supported_features, DPDK
 * mlx5_vdpa_get_vdpa_features), and a queue is VERSION_1 only when the
 * front end negotiated it. On caps-no-v1 the front end's GET_FEATURES has
 * no VERSION_1, and a legacy front end forwards both ways with the legacy
 * header - 10 bytes, and 12 with MRG_RXBUF (virtio 1.1, 5.1.6; the guest
 * checks every frame's length) - with no command refused: the emulator
 * refuses any queue with virtio_version_1_0 there, blank ones at probe
 * included. The control: a legacy front end on the CX6 Dx caps is offered
 * VERSION_1, acks it not, and forwards (its queues, pre-created VERSION_1,
 * made legacy at DRIVER_OK).
 */
static void
test_without_virtio_version_1_0_a_legacy_front_end_forwards(void **state)
{
	const uint64_t v1 = 1ull << VU_F_VERSION_1;
	struct vu_start_opts o = { .legacy = true };
	uint64_t offered = 0, acked = 0, f = 0;

	(void)state;
	probe_alone(&d, profile("caps-no-v1.json"), "queues=1");
	assert_int_equal(rte_vdpa_get_features(d.vdpa, &f), 0);
	assert_false(f & v1);
	remove_alone(&d);

	/* Legacy header of 10 bytes (no MRG_RXBUF), then 12 (MRG_RXBUF). */
	forward_once(profile("caps-no-v1.json"), &o, &offered, &acked);
	assert_false(offered & v1);
	assert_false(acked & v1);
	assert_false(acked & F_MRG_RXBUF_BIT);
	o.mrg_rxbuf = true;
	forward_once(profile("caps-no-v1.json"), &o, &offered, &acked);
	assert_false(acked & v1);
	assert_true(acked & F_MRG_RXBUF_BIT);

	o.mrg_rxbuf = false;
	forward_once("fast", &o, &offered, &acked);
	assert_true(offered & v1);
	assert_false(acked & v1);
}

/*
 * DPDK vdpa/mlx5's devarg max_conf_threads is the worker pool here:
 * N threads give N workers, 0 (upstream: no internal threads, the caller
 * configures) gives one.
 */
static void
test_max_conf_threads_sizes_the_worker_pool(void **state)
{
	(void)state;
	probe_alone(&d, "fast", "queues=1,max_conf_threads=3");
	assert_int_equal(d.dev->args.workers, 3);
	remove_alone(&d);
	probe_alone(&d, "fast", "queues=1,max_conf_threads=0");
	assert_int_equal(d.dev->args.workers, 1);
	remove_alone(&d);
}

/*
 * The emulated device has no doorbell page to map, so the host
 * notifier protocol feature must not be offered - and the guest's kicks
 * then reach the device as doorbells the driver relays.
 */
static void
test_host_notifier_is_offered_only_with_a_mappable_doorbell(void **state)
{
	uint64_t pf = 0;
	size_t k, doorbells = 0;

	(void)state;
	forward_reenable_log("fast", &d, &t, &pf);
	assert_false(pf & PF_HOST_NOTIFIER_BIT);
	for (k = 0; k < t.n; k++)
		if (strcmp(t.c[k].op, "DOORBELL") == 0)
			doorbells++;
	assert_true(doorbells > 0);
	lmh_trace_free(&t);
	traced = NULL;
}

/*
 * The same on a back end whose doorbell page can be mapped, as the rdma back
 * end's VAR: stood in for here by a memfd page given to the device's
 * doorbell area before any front end connects. The feature is then
 * offered, and once the queues are RDY the driver hands the notifiers to
 * the front end (rte_vhost_host_notifier_ctrl). This front end opened no
 * slave channel, so vhost cannot deliver them: the driver must say kicks
 * stay on the relay, and traffic keeps flowing through it.
 */
static void
test_offered_host_notifier_is_handed_to_the_front_end(void **state)
{
	struct vu_start_opts o = {
		.protocol_features = VU_PROTO_EXPLICIT | VU_PROTO_DEFAULT | PF_SLAVE_REQ_BIT |
				     PF_SLAVE_SEND_FD_BIT | PF_HOST_NOTIFIER_BIT,
	};
	uint32_t bases[NRINGS];
	struct vu_client *c;
	size_t lmark;
	int mfd;

	(void)state;
	mfd = memfd_create("test-caps-doorbell", 0);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	probed = &d;
	assert_int_equal(lmh_probe_profile(&d, 0, "fast", "queues=2,workers=2,mr_gc_ms=0"), 0);
	d.dev->db->mmap_fd = mfd;
	d.dev->db->mmap_offset = 0;
	d.dev->db->mmap_size = 4096;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(c = lmh_fe_connect(0));
	client = c;
	lmark = lmh_log_mark();
	assert_int_equal(vu_start_device(c, guest, &o), 0);
	assert_true(vu_protocol_features(c) & PF_HOST_NOTIFIER_BIT);
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	assert_true(lmh_wait_log(lmark, "did not take the host notifiers", LMH_DEADLINE_MS));
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&d));
	d.dev->db->mmap_fd = -1;
	close(mfd);
	probed = NULL;
	assert_int_equal(lmh_remove(&d), 0);
}

/* Backend-channel requests and payload (vhost-user.rst, "Back-end message types"). */
#define SET_SLAVE_REQ_FD 21
#define BACKEND_VRING_HOST_NOTIFIER_MSG 3

/*
 * Read the back end's requests on our end of its channel for up to
 * timeout_ms, answering each as QEMU does (REPLY_ACK 0) and closing the fd
 * it carries; returns how many VRING_HOST_NOTIFIER_MSG came.
 */
static unsigned int
serve_backend_channel(int fd, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;
	unsigned int notifiers = 0;

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int) * 8)];
		struct { uint32_t req, flags, size; uint8_t payload[64]; } __attribute__((packed)) m;
		struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - lmh_now_ms();
		struct cmsghdr *cm;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) != 1)
			return notifiers;
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 12)
			return notifiers;
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
			int k, nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (k = 0; k < nfd; k++) {
				int got;

				memcpy(&got, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
				close(got);
			}
		}
		notifiers += m.req == BACKEND_VRING_HOST_NOTIFIER_MSG;
		if (m.flags & VU_FLAG_NEED_REPLY) {
			struct { uint32_t req, flags, size; uint64_t ok; } __attribute__((packed)) r = {
				m.req, VU_FLAG_VERSION | VU_FLAG_REPLY, 8, 0 };

			assert_int_equal(write(fd, &r, sizeof(r)), (ssize_t)sizeof(r));
		}
	}
}

/* SET_SLAVE_REQ_FD with one end of a new socket pair; returns our end. */
static int
new_backend_channel(struct vu_client *c)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(vu_send_raw(c, SET_SLAVE_REQ_FD, VU_FLAG_VERSION, NULL, 0, &sv[1], 1), 0);
	close(sv[1]);
	return sv[0];
}

/* The same, vhost's end handed over with its send buffer full: a send there blocks. */
static int
new_full_backend_channel(struct vu_client *c)
{
	uint8_t junk[4096] = { 0 };
	int sv[2], fl;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fl = fcntl(sv[1], F_GETFL);
	assert_int_equal(fcntl(sv[1], F_SETFL, fl | O_NONBLOCK), 0);
	while (send(sv[1], junk, sizeof(junk), MSG_NOSIGNAL) > 0)
		;
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(sv[1], F_SETFL, fl), 0);
	assert_int_equal(vu_send_raw(c, SET_SLAVE_REQ_FD, VU_FLAG_VERSION, NULL, 0, &sv[1], 1), 0);
	close(sv[1]);
	return sv[0];
}

/*
 * The host notifiers go to the front end over vhost's channel to it, which
 * vhost closes, with no callback, when the front end sends a new
 * SET_SLAVE_REQ_FD. The device's configuration worker used that channel
 * once the configuration was done, however many messages later: here the
 * worker is held and the notifiers must come at once, from dev_conf on
 * vhost's thread. A new channel sent while the configuration is held then
 * carries nothing: the old one was used before vhost closed it, and the
 * configuration itself never touches it.
 */
static void
test_host_notifiers_go_out_on_vhosts_thread_before_a_held_configuration(void **state)
{
	struct vu_start_opts o = {
		.protocol_features = VU_PROTO_EXPLICIT | VU_PROTO_DEFAULT | PF_SLAVE_REQ_BIT |
				     PF_SLAVE_SEND_FD_BIT | PF_HOST_NOTIFIER_BIT,
	};
	uint32_t bases[NRINGS];
	struct vu_client *c;
	int mfd, chan, chan2;

	(void)state;
	mfd = memfd_create("test-caps-doorbell", 0);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	probed = &d;
	assert_int_equal(lmh_probe_profile(&d, 0, "fast", "queues=2,workers=2,mr_gc_ms=0"), 0);
	d.dev->db->mmap_fd = mfd;
	d.dev->db->mmap_offset = 0;
	d.dev->db->mmap_size = 4096;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(c = lmh_fe_connect(0));
	client = c;
	assert_int_equal(vu_device_init(c, &o), 0);
	assert_true(vu_protocol_features(c) & PF_HOST_NOTIFIER_BIT);
	chan = new_backend_channel(c);
	mlx5_lm_worker_hold(d.dev, 1);
	assert_int_equal(vu_start_device(c, guest, &o), 0);
	/* One notifier per ring, while the configuration has not even started. */
	assert_int_equal(serve_backend_channel(chan, LMH_DEADLINE_MS / 4), NRINGS);
	chan2 = new_backend_channel(c);
	mlx5_lm_worker_hold(d.dev, 0);
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	assert_int_equal(serve_backend_channel(chan, 100), 0);
	assert_int_equal(serve_backend_channel(chan2, 100), 0);
	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&d));
	close(chan);
	close(chan2);
	d.dev->db->mmap_fd = -1;
	close(mfd);
	probed = NULL;
	assert_int_equal(lmh_remove(&d), 0);
}

/*
 * A front end that opens a back-end channel and never answers on it: vhost
 * reads the answer to each host notifier with a blocking read on its one
 * thread. The vetting gives that read a timeout, so vhost's thread goes on
 * (its next message answered), the driver says the notifiers were not
 * taken, and kicks reach the device through the relay. With full, the
 * front end fills vhost's end of the channel before handing it over: vhost
 * sends each notifier with a blocking sendmsg, which the vetting bounds
 * too (without, vhost's thread never came back).
 */
static void
silent_channel(bool full)
{
	struct vu_start_opts o = {
		.protocol_features = VU_PROTO_EXPLICIT | VU_PROTO_DEFAULT | PF_SLAVE_REQ_BIT |
				     PF_SLAVE_SEND_FD_BIT | PF_HOST_NOTIFIER_BIT,
	};
	uint32_t bases[NRINGS];
	struct vu_client *c;
	int mfd, chan;
	int64_t t0;
	uint8_t status;
	size_t lmark;

	mfd = memfd_create("test-caps-doorbell", 0);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 4096), 0);
	probed = &d;
	assert_int_equal(lmh_probe_profile(&d, 0, "fast", "queues=2,workers=2,mr_gc_ms=0"), 0);
	d.dev->db->mmap_fd = mfd;
	d.dev->db->mmap_offset = 0;
	d.dev->db->mmap_size = 4096;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(c = lmh_fe_connect(0));
	client = c;
	assert_int_equal(vu_device_init(c, &o), 0);
	chan = full ? new_full_backend_channel(c) : new_backend_channel(c);
	lmark = lmh_log_mark();
	t0 = lmh_now_ms();
	assert_int_equal(vu_start_device(c, guest, &o), 0);
	/* vhost's next answer: after its bounded waits on the silent channel. */
	assert_int_equal(vu_get_status(c, &status), 0);
	printf("  vhost answered again %" PRId64 " ms after DRIVER_OK\n", lmh_now_ms() - t0);
	assert_true(lmh_wait_log(lmark, "did not take the host notifiers", LMH_DEADLINE_MS));
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(guest, 0x3, 200, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	client = NULL;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&d));
	close(chan);
	d.dev->db->mmap_fd = -1;
	close(mfd);
	probed = NULL;
	assert_int_equal(lmh_remove(&d), 0);
}

static void
test_front_end_silent_on_its_channel_holds_vhost_for_a_bounded_time(void **state)
{
	(void)state;
	silent_channel(false);
}

static void
test_front_end_channel_full_holds_vhost_for_a_bounded_time(void **state)
{
	(void)state;
	silent_channel(true);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_teardown(f, teardown)
		T(test_all_caps_forward_reenable_and_log),
		T(test_eqns_past_255_real_time_only_and_no_cq_oi),
		T(test_without_freeze_to_rdy_queues_are_recreated_not_resumed),
		T(test_without_rdy_dirty_log_queues_are_recreated_for_logging),
		T(test_dirty_log_toggle_cost_on_cx6dx),
		T(test_without_modify_caps_queues_are_created_at_driver_ok),
		T(test_without_counters_stats_say_not_supported),
		T(test_minimal_caps_forward_reenable_and_log),
		T(test_minimal_caps_recover_a_queue_in_err),
		T(test_fallback_re_creations_are_sized_from_the_umem_params_of_then),
		T(test_mrg_rxbuf_is_offered_only_when_the_device_mask_has_it),
		T(test_offloads_follow_the_device_mask_and_upstream_features_are_offered),
		T(test_offloads_asked_by_the_front_end_stay_within_the_device_mask),
		T(test_without_virtio_version_1_0_a_legacy_front_end_forwards),
		T(test_max_conf_threads_sizes_the_worker_pool),
		T(test_host_notifier_is_offered_only_with_a_mappable_doorbell),
		T(test_offered_host_notifier_is_handed_to_the_front_end),
		T(test_host_notifiers_go_out_on_vhosts_thread_before_a_held_configuration),
		T(test_front_end_silent_on_its_channel_holds_vhost_for_a_bounded_time),
		T(test_front_end_channel_full_holds_vhost_for_a_bounded_time),
#undef T
	};
	int ret;

	if (lmh_main_init(argv[0], argc == 2 ? argv[1] : NULL, "test-caps", 1) < 0)
		return 1;
	if (vu_mem_create_qemu(&mem, 1) != 0 ||
	    vu_guest_create(&guest, mem, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
							     .ring_size = 256 }) != 0)
		return 1;
	ret = cmocka_run_group_tests_name("caps", tests, NULL, NULL);
	vu_guest_destroy(guest);
	vu_mem_destroy(mem);
	lmh_fini();
	return ret;
}
