/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, the asynchronous configuration: DRIVER_OK hands the
 * queues' configuration to the device's worker and vhost's thread goes
 * on; what races it (a stop, a memory-table change, the front end leaving
 * and the device's removal, the guest's kicks) waits for it or is kept.
 * The configuration is held before its first command (a test seam of the
 * driver, mlx5_lm_worker_hold) to make each race happen.
 */
#include <pthread.h>

#include "mlx5_lm_test.h"
#include "rte_pmd_mlx5_lm.h"

#include "lifecycle.h"

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
	mark = tc_mark(t);
	/* vhost replies to DRIVER_OK, then calls dev_conf: which hands the work over. */
	assert_int_equal(vu_start_device(t->c, g, NULL), 0);
	wait_state(t, RTE_PMD_MLX5_LM_STATE_CONFIGURING);
	assert_int_equal(tc_count(t, mark, tc_p_rdy, NULL), 0);
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

/* f's call, made from another thread, waits for the held configuration, which is let go. */
static void
call_during_held_configuration(struct tc *t, struct fe_call *f, void *(*call)(void *))
{
	assert_int_equal(pthread_create(&f->th, NULL, call, f), 0);
	wait_conf_waiter(t);
	conf_hold(t, 0);
	pthread_join(f->th, NULL);
	assert_int_equal(f->ret, 0);
}

/* Since mark, every one of the nrings queues was made RDY once, then suspended once. */
static void
check_configured_then_stopped(struct tc *t, size_t mark, int nrings)
{
	int q;

	for (q = 0; q < nrings; q++) {
		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 1);
		assert_int_equal(tc_count(t, mark, tc_p_suspend, &q), 1);
	}
}

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

	g = tc_attach(t, 2, NULL);
	mark = start_held(t, g);
	call_during_held_configuration(t, &f, fe_stop_main);
	check_configured_then_stopped(t, mark, 4);
	assert_false(tc_running(t));
	wait_state(t, RTE_PMD_MLX5_LM_STATE_STOPPED);
	tc_check_bases(g, f.bases, 2, false, 256);
	tc_reconnect_and_run(t, g, 2);
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

	g = tc_attach(t, 2, NULL);
	/* The new table: other memory. */
	assert_int_equal(vu_mem_create_qemu(&f.mem, 1), 0);
	mark = start_held(t, g);
	lmark = lmh_log_mark();
	call_during_held_configuration(t, &f, fe_mem_main);
	/* Configured first (every ring RDY once), then stopped for the new table. */
	check_configured_then_stopped(t, mark, 4);
	assert_true(lmh_log_has(lmark, "configured in"));
	assert_true(lmh_log_has(lmark, "stopped in"));
	/* (vhost may configure the device again with the new table: not ours to check.) */
	tc_disconnect(t);
	tc_wait_restored(t);
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

	g = tc_attach(t, 2, NULL);
	mark = start_held(t, g);
	lmark = lmh_log_mark();
	assert_int_equal(pthread_create(&f.th, NULL, fe_leave_main, &f), 0);
	pthread_join(f.th, NULL);
	/* vhost's thread, in dev_close for the lost connection, waits for the worker. */
	wait_conf_waiter(t);
	conf_hold(t, 0);
	assert_true(lmh_wait_closed(0));
	assert_true(tc_wait_log(lmark, "front end disconnected"));
	for (q = 0; q < 4; q++)
		assert_int_equal(tc_count(t, mark, tc_p_rdy, &q), 1);
	assert_false(tc_running(t));
	tc_wait_restored(t);
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

	g = tc_attach(t, 2, NULL);
	start_held(t, g);
	assert_int_equal(vu_guest_tx(g, 0, 16), 16);
	assert_int_equal(vu_guest_tx(g, 1, 16), 16);
	conf_hold(t, 0);
	tc_wait_running(t);
	/*
	 * Only polls from here, no TX kick: every chain posted while held must
	 * complete. Their frames loop back to the device's own RX queues,
	 * which the configuration makes RDY in parallel with the TX queues:
	 * a frame sent before its RX queue is RDY is dropped by the wire, as
	 * by a NIC whose receive queue is not ready (seen once in the
	 * parallel suite: pair 0's 16 frames). What arrives is whole and
	 * once; what is lost is the wire's, not a kick's.
	 */
	assert_true(tc_tx_complete(g, 0x3));
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
	tc_check_bases(g, bases, 2, false, 256);
}

int
tc_run_async(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_stop_during_async_configuration_waits_for_it),
		TC_TEST(test_memory_table_change_during_async_configuration_waits_for_it),
		TC_TEST(test_front_end_gone_and_removal_during_async_configuration),
		TC_TEST(test_kicks_during_async_configuration_not_lost),
	};

	return cmocka_run_group_tests_name("lifecycle: asynchronous configuration", tests, NULL,
					   NULL);
}
