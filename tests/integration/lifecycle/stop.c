/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, stop and what follows it: a front end leaving at any
 * point leaves the device reusable, the restore of blank queues deferred
 * until the device is needed (and then not waiting for other devices), a
 * restart without a status reset, and a re-probe waiting for the front
 * end to release the previous probe's doorbell page.
 */
#include <pthread.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_vdpa.h>

#include "mlx5_lm_pool.h"
#include "mlx5_lm_test.h"

#include "lifecycle.h"

static void
test_front_end_leaving_midway_leaves_device_reusable(void **state)
{
	struct tc *t = *state;
	struct vu_ring_info ri;
	struct vu_guest *g;
	uint16_t create_mkey = PRM_CMD_CREATE_MKEY;
	unsigned int i;
	size_t mark;

	/* (a) Gone after SET_MEM_TABLE and some ring messages, before DRIVER_OK. */
	g = tc_attach(t, 2, NULL);
	mark = tc_mark(t);
	assert_int_equal(vu_device_init(t->c, NULL), 0);
	assert_int_equal(vu_set_features(t->c, tc_fe_features(t, false)), 0);
	assert_int_equal(vu_set_mem_table(t->c, t->mem), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		assert_int_equal(vu_set_vring_num(t->c, i, ri.num), 0);
		tc_fe_ring_addr(t, i, g);
	}
	tc_disconnect(t);
	tc_barrier(t);
	assert_false(tc_running(t));
	assert_int_equal(tc_count(t, mark, tc_p_vq_any, NULL), 0);
	assert_int_equal(tc_count(t, mark, tc_p_opcode, &create_mkey), 0);
	tc_check_live_as_probed(t);

	/* (b) Gone after DRIVER_OK, with traffic, without GET_VRING_BASE. */
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	tc_traffic(g, 0x3, 300);
	mark = tc_mark(t);
	tc_disconnect(t);
	/* vhost's teardown closed the device: every queue suspended and queried. */
	tc_check_close_suspends_then_queries(t, mark, 4, g, false);
	assert_false(tc_running(t));
	tc_wait_restored(t);
	for (i = 0; i < 4; i++)
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	tc_check_live_as_probed(t);

	/* (c) The next front end finds a working device. */
	tc_reconnect_and_run(t, g, 2);
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
	tc_traffic(g, 0x1, 32);
	lmh_new_device_fails(false);
	tc_disconnect(t);
	assert_false(lmh_running(&t->d));
	for (i = 0; i < 2; i++) {
		/* The guest's own copy of each eventfd is all that is left. */
		assert_true(lmh_wait_fds_of_file(vu_guest_kickfd(g, i), 1));
		assert_true(lmh_wait_fds_of_file(vu_guest_callfd(g, i), 1));
	}
	/* Stopped, then put back to blank (objects are swapped until then: wait). */
	tc_wait_restored(t);
	for (i = 0; i < 2; i++)
		assert_int_equal(tc_vq_state(t, i), PRM_VIRTQ_STATE_INIT);
	tc_check_live_as_probed(t);
	/* The next front end's DRIVER_OK configures the device again. */
	tc_restart_front_end(t, g);
	tc_traffic(g, 0x1, 32);
	tc_fe_stop(t, 2, bases);
}

/*
 * The fd vhost held of the guest's eventfd fd and closed since before[]
 * was taken (the fds sharing its file then): its number, or -1 after a
 * bounded wait.
 */
static int
vhost_copy_closed(int fd, const int *before, int nb)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	int now[8], n, i, k;

	while (lmh_now_ms() < end) {
		n = lmh_fds_sharing(fd, now, 8);
		assert_true(n >= 0 && n <= 8);
		for (i = 0; i < nb; i++) {
			for (k = 0; k < n && now[k] != before[i]; k++)
				;
			if (k == n)
				return before[i];
		}
		lmh_tick();
	}
	return -1;
}

/*
 * vhost closes a ring's kick and call fds at GET_VRING_BASE before it
 * tells the driver anything when the application's new_device refused the
 * device (no dev_close; the ring's disable comes after, and waits for the
 * configuration), and the process may give those numbers to anything
 * meanwhile. A configuration still to run must hand the relay the
 * duplicates made on vhost's thread at DRIVER_OK, never duplicate vhost's
 * numbers later. Here the configuration is held until ring 0's numbers,
 * closed by vhost, name a stranger's files: /dev/null (which epoll
 * refuses: a relay given it says "cannot watch") and an eventfd.
 */
static void
test_fds_vhost_closed_before_the_configuration_ran_are_not_taken(void **state)
{
	struct tc *t = *state;
	const uint32_t ring0[2] = { 0, 0 };
	int before[2][8], nb[2], stranger[2], src[2], fd, i;
	struct rte_pmd_mlx5_lm_state st;
	struct vu_msg_hdr hdr;
	struct vu_guest *g;
	uint32_t reply[2];
	size_t lmark;

	g = tc_attach(t, 1, NULL);
	lmark = lmh_log_mark();
	mlx5_lm_worker_hold(t->d.dev, 1);
	lmh_new_device_fails(true);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	for (i = 0; i < 2; i++) {
		fd = i ? vu_guest_callfd(g, 0) : vu_guest_kickfd(g, 0);
		nb[i] = lmh_fds_sharing(fd, before[i], 8);
		assert_true(nb[i] >= 2 && nb[i] <= 8);
	}
	/* The strangers' files, open before vhost frees any number. */
	src[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	src[1] = eventfd(0, EFD_CLOEXEC);
	assert_true(src[0] >= 0 && src[1] >= 0);
	/* Not waiting for the reply: vhost's thread waits for the configuration. */
	assert_int_equal(vu_send_raw(t->c, VU_GET_VRING_BASE, VU_FLAG_VERSION, ring0,
				     sizeof(ring0), NULL, 0), 0);
	for (i = 0; i < 2; i++) {
		fd = i ? vu_guest_callfd(g, 0) : vu_guest_kickfd(g, 0);
		stranger[i] = vhost_copy_closed(fd, before[i], nb[i]);
		assert_true(stranger[i] >= 0);
		assert_int_equal(dup2(src[i], stranger[i]), stranger[i]);
	}
	for (i = 0; i < 2; i++)
		close(src[i]);
	assert_int_equal(rte_pmd_mlx5_lm_get_state(t->d.name, &st), 0);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_STATE_CONFIGURING);
	mlx5_lm_worker_hold(t->d.dev, 0);
	assert_true(vu_recv_raw(t->c, &hdr, reply, sizeof(reply), DEADLINE_MS) ==
		    (int)sizeof(reply));
	assert_int_equal(hdr.request, VU_GET_VRING_BASE);
	lmh_new_device_fails(false);
	tc_wait_running(t);
	tc_barrier(t);
	assert_false(lmh_log_has(lmark, "cannot watch kickfd"));
	for (i = 0; i < 2; i++) {
		assert_int_equal(lmh_fds_of_file(stranger[i]), 1);
		close(stranger[i]);
	}
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
	tc_traffic(g, 0x3, 300);
	assert_int_equal(vu_stop_device(t->c, bases, 4), 0);
	tc_wait_restored(t);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	tc_wait_running(t);
	tc_traffic_and_stop(t, g, 2, 300);
}

/*
 * Without reposting, the guest's whole RX ring of pair 0 fills: one frame
 * sent per buffer posted, and the device uses every one of them. A buffer
 * the device skipped (fetched, never used, handed over past) is never
 * used: used->idx stops short of avail->idx until the deadline.
 */
static void
rx_ring_fills_without_reposting(struct vu_guest *g, uint16_t size)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	volatile uint16_t *avail, *used;
	struct vu_ring_info ri;
	uint16_t want;

	tc_traffic_settle(g, 0x1);
	assert_int_equal(vu_guest_ring_info(g, 0, &ri), 0);
	avail = (volatile uint16_t *)ri.avail + 1;
	used = (volatile uint16_t *)ri.used + 1;
	want = *avail;
	/* Settled and refilled: every buffer of the ring posted, none used. */
	assert_int_equal((uint16_t)(want - *used), size);
	assert_int_equal(vu_guest_tx(g, 0, size), size);
	while (__atomic_load_n(used, __ATOMIC_ACQUIRE) != want) {
		if (lmh_now_ms() > deadline) {
			print_error("rx ring: avail %u, used %u: %u posted buffers never used\n",
				    want, *used, (uint16_t)(want - *used));
			tc_traffic_fail(g, 0x1);
		}
		/* A wait on the device's call (bounded), no reap: nothing reposted. */
		vu_guest_wait(g, 2);
	}
	tc_traffic_settle(g, 0x1);
}

/*
 * Firmware that fetches RX chains ahead of frames (rx-prefetch.json):
 * at the stop the device has fetched chains it never used, and its
 * hw_available_index counts them. The driver hands vhost the used index as
 * both (Linux mlx5_vnet's rule): GET_VRING_BASE returns what the guest saw
 * consumed, and the restarted device fetches those chains again, so every
 * buffer the guest posted is used and the ring keeps its whole capacity.
 * The base is what a migration carries: a destination that trusts it
 * (vhost-net, another vDPA device) would never return the buffers
 * between. DPDK's vhost itself resets both indices to used->idx when they
 * differ at SET_VRING_ADDR ("some packets maybe resent"), so a restart
 * here survives a wrong base: the base check is what catches it.
 */
static void
test_rx_chains_fetched_ahead_are_not_lost_at_the_stop(void **state)
{
	struct tc *t = *state;
	struct vu_start_opts o = { 0 };
	uint32_t bases[2];
	struct vu_guest *g;

	tc_probe_profile(t, TEST_PROFILES_DIR "/rx-prefetch.json", 1, NULL);
	g = tc_guest(t, 0, 1, 256, false);
	tc_connect(t);
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	tc_wait_running(t);
	tc_traffic(g, 0x1, 300);
	rx_ring_fills_without_reposting(g, 256);
	tc_traffic(g, 0x1, 100);
	assert_int_equal(vu_stop_device(t->c, bases, 2), 0);
	/* RX: one buffer per frame received, none of those fetched ahead. */
	tc_check_bases(g, bases, 1, false, 256);
	tc_wait_restored(t);
	o.bases = bases;
	assert_int_equal(vu_start_device(t->c, g, &o), 0);
	tc_wait_running(t);
	tc_traffic(g, 0x1, 300);
	rx_ring_fills_without_reposting(g, 256);
	tc_traffic_and_stop(t, g, 1, 100);
}

/*
 * The restore of blank queues after a stop is deferred like the
 * registrations (mr_gc_ms), so that it stays out of the downtime of the
 * devices stopping and starting meanwhile (a host evacuation stops and
 * starts many at once: dpdk-test-lm migrate --scenario evacuate), and
 * runs at once when the device is needed: a DRIVER_OK, a removal.
 * mr_gc_ms is ten minutes here: the test finishes only if those two start
 * it.
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
	tc_traffic(g, 0x3, 50);
	mark = tc_mark(t);
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	/* Stopped: the restore waits (set before dev_close returned), nothing destroyed. */
	restoring = mlx5_lm_restore_pending(t->d.dev);
	assert_int_equal(restoring, 1);
	tc_sync(t);
	assert_int_equal(tc_count(t, mark, tc_p_vq_destroy, NULL), 0);
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
	tc_wait_running(t);
	tc_sync(t);
	assert_true(tc_count(t, mark, tc_p_vq_destroy, NULL) > 0);
	tc_traffic(g, 0x3, 50);
	/* The disconnect stops it again; the removal does not wait ten minutes either. */
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
	tc_traffic(g, 0x3, 50);
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
	tc_traffic(g, 0x3, 50);
	tc_disconnect(t);
	tc_remove(t);
}

/* Background work paused behind the foreground (mlx5_lm_bg_checkpoint), within timeout_ms. */
static bool
wait_background_paused(int timeout_ms)
{
	int64_t end = lmh_now_ms() + timeout_ms;

	while (mlx5_lm_bg_paused() == 0) {
		if (lmh_now_ms() >= end)
			return false;
		lmh_tick();
	}
	return true;
}

/*
 * The restore already running in the background when DRIVER_OK comes: its
 * deferral is over and it is paused behind another device's start or stop.
 * The DRIVER_OK needs it, so it goes on as foreground work: the device runs
 * without waiting for the other device to be done.
 */
static void
test_driver_ok_during_a_background_restore_does_not_wait_for_other_devices(void **state)
{
	const unsigned int pairs = 2, nrings = 2 * pairs;
	struct vu_start_opts o = { 0 };
	bool stopped, paused, started, running;
	uint32_t bases[MAX_RINGS];
	struct tc *t = *state;
	struct vu_guest *g;

	g = tc_start(t, pairs, "mr_gc_ms=30");
	tc_traffic(g, 0x3, 50);
	/* Another device starting or stopping: no assertion until it is done (fg_exit below). */
	mlx5_lm_fg_enter();
	stopped = vu_stop_device(t->c, bases, nrings) == 0 && vu_set_status(t->c, 0) == 0;
	/* mr_gc_ms after the stop the restore starts, in the background, and pauses. */
	paused = stopped && wait_background_paused(DEADLINE_MS) &&
		 mlx5_lm_restore_pending(t->d.dev);
	o.bases = bases;
	started = paused && vu_start_device(t->c, g, &o) == 0;
	running = started && lmh_wait_running(&t->d, DEADLINE_MS);
	mlx5_lm_fg_exit();
	assert_true(stopped);
	if (!paused)
		print_error("the restore did not start and pause behind the other device\n");
	assert_true(paused);
	assert_true(started);
	if (!running)
		print_error("DRIVER_OK waited for the background restore behind another device\n");
	assert_true(running);
	tc_traffic(g, 0x3, 50);
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
 * The kernel keeps a VAR (and its context) while any
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
tc_run_stop(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reprobe_waits_for_the_front_end_to_release_the_notifier),
		TC_TEST(test_front_end_leaving_midway_leaves_device_reusable),
		TC_TEST(test_restart_without_status_reset_runs_every_ring),
		TC_TEST(test_rx_chains_fetched_ahead_are_not_lost_at_the_stop),
		TC_TEST(test_restore_deferred_until_the_device_is_needed),
		TC_TEST(test_driver_ok_waiting_for_the_restore_does_not_wait_for_other_devices),
		TC_TEST(test_driver_ok_during_a_background_restore_does_not_wait_for_other_devices),
		TC_TEST(test_front_end_gone_after_new_device_failed_leaves_nothing_running),
		TC_TEST(test_fds_vhost_closed_before_the_configuration_ran_are_not_taken),
	};

	return cmocka_run_group_tests_name("lifecycle: stop", tests, NULL, NULL);
}
