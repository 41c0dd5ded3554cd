/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker pool's foreground-first rules: background
 * tasks are held back while a device starts or stops, preempted between
 * two commands, and never more than MLX5_LM_BG_BUDGET run at once; the
 * pool grows with each device that asks for workers. Waits are bounded
 * condition waits, never sleeps standing for synchronisation.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "mlx5_lm_pool.h"
#include "mlx5_lm_mr.h"

#define DEADLINE_S 10

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned int count, cur, max_cur, started, after;
static int go, release;

static void
reset(void)
{
	pthread_mutex_lock(&mu);
	count = cur = max_cur = started = after = 0;
	go = release = 0;
	pthread_mutex_unlock(&mu);
}

/* Wait (bounded) until *v >= want, under mu. */
static int
wait_at_least(unsigned int *v, unsigned int want)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_S;
	pthread_mutex_lock(&mu);
	while (*v < want)
		if (pthread_cond_timedwait(&cv, &mu, &ts) == ETIMEDOUT)
			break;
	ok = *v >= want;
	pthread_mutex_unlock(&mu);
	return ok;
}

/* Poll (bounded) a pool figure that has no condition variable of its own. */
static int
wait_figure(unsigned int (*fn)(void), unsigned int want)
{
	const struct timespec tick = { .tv_nsec = 1000000 };
	unsigned int i;

	for (i = 0; i < DEADLINE_S * 1000; i++) {
		if (fn() == want)
			return 1;
		nanosleep(&tick, NULL);
	}
	return 0;
}

static int
task_count(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	count++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* n tasks fn into batch b, every one taken. */
static void
submit_n(struct mlx5_lm_batch *b, unsigned int n, mlx5_lm_task_fn fn)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(mlx5_lm_batch_submit(b, fn, NULL), 0);
}

static int
setup(void **state)
{
	(void)state;
	reset();
	return mlx5_lm_pool_get(8);
}

static int
teardown(void **state)
{
	(void)state;
	mlx5_lm_pool_put(8);
	return 0;
}

/* A device starting or stopping: no background task starts meanwhile. */
static void
test_background_held_back_while_a_device_starts(void **state)
{
	struct mlx5_lm_batch bg, fg;

	(void)state;
	mlx5_lm_batch_init_background(&bg, 4);
	mlx5_lm_batch_init(&fg, 4);
	mlx5_lm_fg_enter();
	submit_n(&bg, 3, task_count);
	submit_n(&fg, 4, task_count);
	assert_int_equal(mlx5_lm_batch_wait(&fg), 0);
	/* The foreground batch ran to completion with the background one still queued. */
	pthread_mutex_lock(&mu);
	assert_int_equal(count, 4);
	pthread_mutex_unlock(&mu);
	assert_int_equal(mlx5_lm_bg_running(), 0);
	mlx5_lm_fg_exit();
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	assert_int_equal(count, 7);
	mlx5_lm_batch_fini(&bg);
	mlx5_lm_batch_fini(&fg);
}

/* A background task: started, then (once allowed) its next "command". */
static int
task_two_commands(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_broadcast(&cv);
	while (!go)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	/* What the transport calls before every command (devx_set_cmd_gate). */
	mlx5_lm_bg_checkpoint();
	pthread_mutex_lock(&mu);
	after++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return 0;
}

/* A running background task stops before its next command while a device starts. */
static void
test_background_preempted_between_commands(void **state)
{
	struct mlx5_lm_batch bg;

	(void)state;
	mlx5_lm_batch_init_background(&bg, 1);
	assert_int_equal(mlx5_lm_batch_submit(&bg, task_two_commands, NULL), 0);
	assert_true(wait_at_least(&started, 1));
	mlx5_lm_fg_enter();
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_true(wait_figure(mlx5_lm_bg_paused, 1));
	pthread_mutex_lock(&mu);
	assert_int_equal(after, 0);
	pthread_mutex_unlock(&mu);
	mlx5_lm_fg_exit();
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	assert_int_equal(after, 1);
	assert_int_equal(mlx5_lm_bg_paused(), 0);
	mlx5_lm_batch_fini(&bg);
}

/*
 * Background work needed before it is done (a restore a DRIVER_OK waits
 * for): promoted, its task paused at a checkpoint and those not taken yet
 * run while a device still starts, its own thread's commands go on, and
 * other background work yields to it until it ends.
 */
static void
test_promoted_background_work_runs_while_a_device_starts(void **state)
{
	struct mlx5_lm_bg_work w = { 0 };
	struct mlx5_lm_batch bg, other;
	int paused, ran, held;

	(void)state;
	mlx5_lm_bg_thread_work(&w);
	/* Made by the work's thread: promoted with it. */
	mlx5_lm_batch_init_background(&bg, 1);
	mlx5_lm_bg_thread_work(NULL);
	mlx5_lm_batch_init_background(&other, 1);
	assert_int_equal(mlx5_lm_batch_submit(&bg, task_two_commands, NULL), 0);
	assert_true(wait_at_least(&started, 1));
	submit_n(&bg, 2, task_count);
	/* A device starts: no assertion until its fg_exit below. */
	mlx5_lm_fg_enter();
	pthread_mutex_lock(&mu);
	go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	paused = wait_figure(mlx5_lm_bg_paused, 1);
	mlx5_lm_bg_promote(&w);
	ran = paused && wait_at_least(&after, 1) && wait_at_least(&count, 2);
	mlx5_lm_fg_exit();
	assert_true(paused);
	assert_true(ran);
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	/* Still counted as a device starting: other background work waits for its end. */
	assert_int_equal(mlx5_lm_batch_submit(&other, task_count, NULL), 0);
	pthread_mutex_lock(&mu);
	held = count == 2;
	pthread_mutex_unlock(&mu);
	mlx5_lm_bg_work_end(&w);
	assert_true(held);
	assert_int_equal(mlx5_lm_batch_wait(&other), 0);
	assert_int_equal(count, 3);
	mlx5_lm_batch_fini(&bg);
	mlx5_lm_batch_fini(&other);
}

static int
task_hold(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	cur++;
	if (cur > max_cur)
		max_cur = cur;
	started++;
	pthread_cond_broadcast(&cv);
	while (!release)
		pthread_cond_wait(&cv, &mu);
	cur--;
	pthread_mutex_unlock(&mu);
	return 0;
}

/* However wide a background batch, at most MLX5_LM_BG_BUDGET of its tasks run at once. */
static void
test_background_batch_runs_its_budget_at_most(void **state)
{
	struct mlx5_lm_batch bg, fg;

	(void)state;
	mlx5_lm_batch_init_background(&bg, 8);
	mlx5_lm_batch_init(&fg, 1);
	submit_n(&bg, 6, task_hold);
	assert_true(wait_at_least(&started, MLX5_LM_BG_BUDGET));
	/* The other workers stay free for the foreground. */
	assert_int_equal(mlx5_lm_batch_submit(&fg, task_count, NULL), 0);
	assert_int_equal(mlx5_lm_batch_wait(&fg), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(max_cur, MLX5_LM_BG_BUDGET);
	assert_int_equal(started, MLX5_LM_BG_BUDGET);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	assert_int_equal(max_cur, MLX5_LM_BG_BUDGET);
	assert_int_equal(started, 6);
	mlx5_lm_batch_fini(&bg);
	mlx5_lm_batch_fini(&fg);
}

/*
 * A bulk batch (a preparation) runs beyond the budget, up to its limit,
 * beside a budgeted one that keeps its own budget; and like every
 * background batch it starts nothing while a device starts or stops.
 */
static void
test_bulk_batch_runs_past_the_budget_and_yields_to_the_foreground(void **state)
{
	struct mlx5_lm_batch bulk, bg;
	unsigned int i;

	(void)state;
	mlx5_lm_batch_init_bulk(&bulk, 6);
	mlx5_lm_batch_init_background(&bg, 1);
	mlx5_lm_fg_enter();
	for (i = 0; i < 6; i++)
		assert_int_equal(mlx5_lm_batch_submit(&bulk, task_hold, NULL), 0);
	/* Held back: the pool's figure says no background task runs. */
	assert_int_equal(mlx5_lm_bg_running(), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(started, 0);
	pthread_mutex_unlock(&mu);
	mlx5_lm_fg_exit();
	assert_true(wait_at_least(&started, 6));
	/* The budget is the budgeted batches' still: one of them runs beside. */
	assert_int_equal(mlx5_lm_batch_submit(&bg, task_count, NULL), 0);
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(max_cur, 6);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_int_equal(mlx5_lm_batch_wait(&bulk), 0);
	mlx5_lm_batch_fini(&bulk);
	mlx5_lm_batch_fini(&bg);
}

/*
 * A batch at its limit with many tasks queued holds back none of the
 * batches queued after it (the pool queues batches, each with its tasks):
 * a serial batch of 200 tasks whose first one is held, then a second
 * batch of 8, all of whose tasks run meanwhile; and the serial batch never
 * runs two at once.
 */
static void
test_a_full_batch_holds_back_no_batch_behind_it(void **state)
{
	struct mlx5_lm_batch serial, other;

	(void)state;
	mlx5_lm_batch_init(&serial, 1);
	mlx5_lm_batch_init(&other, 4);
	submit_n(&serial, 200, task_hold);
	assert_true(wait_at_least(&started, 1));
	submit_n(&other, 8, task_count);
	assert_int_equal(mlx5_lm_batch_wait(&other), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(count, 8);
	assert_int_equal(started, 1);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_int_equal(mlx5_lm_batch_wait(&serial), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(started, 200);
	assert_int_equal(max_cur, 1);
	pthread_mutex_unlock(&mu);
	mlx5_lm_batch_fini(&serial);
	mlx5_lm_batch_fini(&other);
}

/* Several devices configured at once: the pool holds the workers of each. */
static void
test_pool_sized_for_every_device(void **state)
{
	(void)state;
	assert_int_equal(mlx5_lm_pool_size(), 8);
	assert_int_equal(mlx5_lm_pool_get(16), 0);
	assert_int_equal(mlx5_lm_pool_get(16), 0);
	assert_int_equal(mlx5_lm_pool_size(), 40);
	mlx5_lm_pool_put(16);
	mlx5_lm_pool_put(16);
	/* Threads stay until the last reference: idle ones cost nothing. */
	assert_int_equal(mlx5_lm_pool_size(), 40);
}

/*
 * A task finishing wakes at most one more worker, never all of them: with
 * a pool of 72 threads and a batch of 32 tasks 4 at a time, the workers
 * are woken about once per task (at submit), not 72 times per task (a
 * broadcast per completion cost each device stop milliseconds of CPU).
 */
static void
test_no_thundering_herd(void **state)
{
	struct mlx5_lm_batch b;
	uint64_t w0;

	(void)state;
	assert_int_equal(mlx5_lm_pool_get(64), 0);
	/* Every thread waiting for work (bounded look): each can be woken. */
	assert_true(wait_figure(mlx5_lm_pool_idle, mlx5_lm_pool_size()));
	mlx5_lm_batch_init(&b, 4);
	w0 = mlx5_lm_pool_wakeups();
	submit_n(&b, 32, task_count);
	assert_int_equal(mlx5_lm_batch_wait(&b), 0);
	assert_int_equal(count, 32);
	print_message("wakeups %lu\n", (unsigned long)(mlx5_lm_pool_wakeups() - w0));
	/* Up to two per task (its submit, and the chain of a pick), never 72. */
	assert_true(mlx5_lm_pool_wakeups() - w0 <= 2 * 32);
	mlx5_lm_batch_fini(&b);
	mlx5_lm_pool_put(64);
}

/*
 * The end of a device's stop or start wakes no idle worker when no
 * background task waits, and one (which chains to the next) when some do:
 * a broadcast to the 128 idle workers of 8 devices cost each source stop
 * 2.1 ms on vhost's critical path (measured in a trace of the seed-mkey
 * scenario).
 */
static void
test_fg_exit_wakes_one_worker_at_most(void **state)
{
	struct mlx5_lm_batch bg;
	uint64_t r0;

	(void)state;
	assert_int_equal(mlx5_lm_pool_get(64), 0);
	assert_true(wait_figure(mlx5_lm_pool_idle, mlx5_lm_pool_size()));
	r0 = mlx5_lm_pool_wake_requests();
	mlx5_lm_fg_enter();
	mlx5_lm_fg_exit();
	/* Nothing held back: nobody to wake. */
	assert_int_equal(mlx5_lm_pool_wake_requests() - r0, 0);
	mlx5_lm_batch_init_background(&bg, 8);
	mlx5_lm_fg_enter();
	submit_n(&bg, 6, task_count);
	assert_int_equal(mlx5_lm_bg_running(), 0);
	mlx5_lm_fg_exit();
	/* One worker asked; the six tasks still all run (each picker wakes the next). */
	assert_int_equal(mlx5_lm_pool_wake_requests() - r0, 1);
	assert_int_equal(mlx5_lm_batch_wait(&bg), 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(count, 6);
	pthread_mutex_unlock(&mu);
	mlx5_lm_batch_fini(&bg);
	mlx5_lm_pool_put(64);
}

static int
task_block(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_broadcast(&cv);
	while (!release)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return 0;
}

static pthread_t task_thread;

static int
task_where(void *arg)
{
	(void)arg;
	task_thread = pthread_self();
	return 0;
}

static void *
put_one(void *arg)
{
	(void)arg;
	mlx5_lm_pool_put(1);
	return NULL;
}

static void *
get_one(void *arg)
{
	*(int *)arg = mlx5_lm_pool_get(1);
	return NULL;
}

/*
 * A device probed while the last device's removal joins the pool's
 * threads (a worker still busy with a task): its get waits for the join,
 * then starts its own worker. It used to count itself in the stopping
 * pool, which the put then emptied: the device was left with no thread,
 * its tasks run in the caller, its workers= lost.
 */
static void
test_a_get_while_the_last_put_joins_keeps_its_workers(void **state)
{
	struct mlx5_lm_batch b;
	pthread_t put, get;
	int got = -1;

	(void)state;
	reset();
	assert_int_equal(mlx5_lm_pool_get(1), 0);
	mlx5_lm_batch_init(&b, 1);
	assert_int_equal(mlx5_lm_batch_submit(&b, task_block, NULL), 0);
	assert_true(wait_at_least(&started, 1));
	assert_int_equal(pthread_create(&put, NULL, put_one, NULL), 0);
	assert_true(wait_figure(mlx5_lm_pool_stopping, 1));
	assert_int_equal(pthread_create(&get, NULL, get_one, &got), 0);
	pthread_mutex_lock(&mu);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	assert_int_equal(pthread_join(put, NULL), 0);
	assert_int_equal(pthread_join(get, NULL), 0);
	assert_int_equal(got, 0);
	assert_int_equal(mlx5_lm_batch_wait(&b), 0);
	mlx5_lm_batch_fini(&b);
	assert_int_equal(mlx5_lm_pool_size(), 1);
	/* Its tasks run on its worker, not in the caller. */
	mlx5_lm_batch_init(&b, 1);
	assert_int_equal(mlx5_lm_batch_submit(&b, task_where, NULL), 0);
	assert_int_equal(mlx5_lm_batch_wait(&b), 0);
	mlx5_lm_batch_fini(&b);
	assert_false(pthread_equal(task_thread, pthread_self()));
	mlx5_lm_pool_put(1);
}

/* Garbage-thread work that blocks until released, counting where it ran. */
static pthread_t gc_ran_on;
static int gc_ran_background;

static void
gc_work_block(void *arg, int background)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	started++;
	gc_ran_on = pthread_self();
	gc_ran_background = background;
	pthread_cond_broadcast(&cv);
	while (!release)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void
gc_work_count(void *arg, int background)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	count++;
	gc_ran_on = pthread_self();
	gc_ran_background = background;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void *
gc_put_one(void *arg)
{
	(void)arg;
	mlx5_lm_mr_gc_put();
	return NULL;
}

static void *
gc_get_one(void *arg)
{
	*(int *)arg = mlx5_lm_mr_gc_get();
	return NULL;
}

/*
 * The garbage thread has the pool's race: a device probed while the last
 * device's removal joins the thread (busy with deferred work) waits for
 * the join, then starts a thread of its own, which runs the work handed
 * to it. Had the get cleared the stop the put set, the old thread would
 * run on beside the new one, whose id the next put would not join.
 */
static void
test_a_gc_get_while_the_last_put_joins_gets_a_thread(void **state)
{
	struct mlx5_lm_gc_work w1 = { .fn = gc_work_block }, w2 = { .fn = gc_work_count };
	pthread_t put, get;
	struct timespec ts;
	int got = -1;

	(void)state;
	reset();
	assert_int_equal(mlx5_lm_mr_gc_get(), 0);
	mlx5_lm_mr_gc_defer(&w1);
	assert_true(wait_at_least(&started, 1));
	assert_int_equal(gc_ran_background, 1);
	assert_int_equal(pthread_create(&put, NULL, gc_put_one, NULL), 0);
	assert_true(wait_figure(mlx5_lm_mr_gc_joining, 1));
	assert_int_equal(pthread_create(&get, NULL, gc_get_one, &got), 0);
	pthread_mutex_lock(&mu);
	release = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	/* Bounded: a put joining a thread told to run on would never return. */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_S;
	assert_int_equal(pthread_timedjoin_np(put, NULL, &ts), 0);
	assert_int_equal(pthread_timedjoin_np(get, NULL, &ts), 0);
	assert_int_equal(got, 0);
	assert_int_equal(mlx5_lm_mr_gc_joining(), 0);
	/* The new thread serves deferred work. */
	mlx5_lm_mr_gc_defer(&w2);
	assert_true(wait_at_least(&count, 1));
	assert_int_equal(gc_ran_background, 1);
	assert_false(pthread_equal(gc_ran_on, pthread_self()));
	mlx5_lm_mr_gc_put();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_background_held_back_while_a_device_starts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_preempted_between_commands,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_promoted_background_work_runs_while_a_device_starts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_batch_runs_its_budget_at_most,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_bulk_batch_runs_past_the_budget_and_yields_to_the_foreground, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_a_full_batch_holds_back_no_batch_behind_it,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_sized_for_every_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_thundering_herd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fg_exit_wakes_one_worker_at_most, setup,
						teardown),
		cmocka_unit_test(test_a_get_while_the_last_put_joins_keeps_its_workers),
		cmocka_unit_test(test_a_gc_get_while_the_last_put_joins_gets_a_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
