/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Process-wide worker pool with per-batch concurrency limits.
 *
 * A FIFO of batches, each with its FIFO of tasks: a worker takes the next
 * task of the first batch that is below its limit, so a serial batch
 * (limit 1) and a wide one can share the pool without the serial one
 * gaining parallelism. The queue holds batches, not tasks, so that finding
 * work costs the number of batches waiting: a preparation queues 256
 * tasks per device at once, and a scan of every task under the pool's
 * lock (three per task run) made that lock the MKEY workers' first wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/queue.h>

#include <rte_lcore.h>

#include "devx.h"
#include "mlx5_lm_pool.h"

struct mlx5_lm_task {
	TAILQ_ENTRY(mlx5_lm_task) next;
	struct mlx5_lm_batch *batch;
	mlx5_lm_task_fn fn;
	void *arg;
};

#define MAX_WORKERS 256

/*
 * A worker's own wake-up: each idle worker waits on a condition variable
 * of its own, and a wake takes one worker off the idle queue and signals
 * it alone. glibc's condition variables can lose a pthread_cond_signal
 * among several waiters (sourceware bug 25847, in the condvar design of
 * 2.25; the changelog of Debian 12's 2.36 lists no fix): with one shared
 * condition variable a task would sit queued beside idle workers until the
 * next submit. One waiter and a flag under the pool's lock cannot lose it.
 * The longest idle worker goes first, as glibc's queue of waiters roughly
 * did: waking the most recently idle one first instead spread seed-mkey's
 * downtimes wider (median 30.8 against 30.0 ms over 17 runs).
 */
struct pool_worker {
	pthread_cond_t cv;
	int woken;                  /* pool.lock: taken off the idle queue by a wake */
	struct pool_worker *next;   /* pool.lock: the idle queue */
};

/* Set in pool threads: nested batches run inline there. */
static __thread int in_worker;
/* Set while this thread does background work (a background task, the restore thread). */
static __thread int in_background;
/* ...and the work it belongs to, which may be promoted meanwhile (or NULL). */
static __thread struct mlx5_lm_bg_work *cur_work;


static struct {
	pthread_mutex_t lock;      /* guards everything below */
	TAILQ_HEAD(, mlx5_lm_batch) queue; /* batches with tasks not yet taken */
	pthread_t threads[MAX_WORKERS];
	struct pool_worker slots[MAX_WORKERS]; /* threads[i]'s wake-up */
	struct pool_worker *idle_head;         /* idle workers, the longest idle first */
	struct pool_worker **idle_tail;        /* where the next idle worker goes */
	unsigned int nthreads;
	unsigned int refs;
	unsigned int wanted;       /* sum of the workers its devices asked for */
	unsigned int stopping;     /* the last put joins the threads */
	pthread_cond_t stopped;    /* stopping dropped to 0 */
	unsigned int fg;           /* devices starting or stopping (written atomically) */
	unsigned int bg_running;   /* background tasks being executed */
	unsigned int bg_paused;    /* background threads waiting at a checkpoint */
	uint64_t wakeups;          /* workers woken (tests: no thundering herd) */
	uint64_t wake_requests;    /* workers asked to wake by fg_exit */
	unsigned int idle;         /* workers on the idle queue */
	pthread_cond_t fg_idle;    /* fg dropped to 0 */
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fg_idle = PTHREAD_COND_INITIALIZER,
	.stopped = PTHREAD_COND_INITIALIZER,
	.queue = TAILQ_HEAD_INITIALIZER(pool.queue),
	.idle_tail = &pool.idle_head,
};

static struct mlx5_lm_task *pick_task_pass(int background, int take);

/* Under pool.lock: wake the longest idle worker; 0 if none is idle. */
static int
wake_one(void)
{
	struct pool_worker *w = pool.idle_head;

	if (w == NULL)
		return 0;
	pool.idle_head = w->next;
	if (pool.idle_head == NULL)
		pool.idle_tail = &pool.idle_head;
	pool.idle--;
	w->woken = 1;
	pthread_cond_signal(&w->cv);
	return 1;
}

/* Under pool.lock: b is still background work (its work, if any, not promoted). */
static int
batch_background(const struct mlx5_lm_batch *b)
{
	return b->background && (b->work == NULL || !b->work->fg);
}

/* This thread's background work was promoted: it goes on as foreground work. */
static int
promoted(void)
{
	return cur_work != NULL && __atomic_load_n(&cur_work->fg, __ATOMIC_ACQUIRE);
}

/*
 * Under pool.lock: the next task of the first batch that may run one more,
 * background last; with take, it is dequeued and counted as running, else
 * only found.
 */
static struct mlx5_lm_task *
pick_task(int take)
{
	struct mlx5_lm_task *t;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		t = pick_task_pass(pass, take);
		if (t != NULL)
			return t;
	}
	return NULL;
}

static struct mlx5_lm_task *
pick_task_pass(int background, int take)
{
	struct mlx5_lm_batch *b;
	struct mlx5_lm_task *t;

	/* Foreground first: background waits for a quiet pool and a free budget. */
	if (background && pool.fg > 0)
		return NULL;
	TAILQ_FOREACH(b, &pool.queue, qnext) {
		int ok;

		if (batch_background(b) != background)
			continue;
		if (background && !b->bulk && pool.bg_running >= MLX5_LM_BG_BUDGET)
			continue;
		pthread_mutex_lock(&b->lock);
		ok = b->running < b->limit;
		if (ok && take)
			b->running++;
		pthread_mutex_unlock(&b->lock);
		if (!ok)
			continue;
		t = TAILQ_FIRST(&b->tasks);
		if (take) {
			TAILQ_REMOVE(&b->tasks, t, next);
			if (TAILQ_EMPTY(&b->tasks))
				TAILQ_REMOVE(&pool.queue, b, qnext);
			pool.bg_running += background && !b->bulk;
		}
		return t;
	}
	return NULL;
}

static void
finish_task(struct mlx5_lm_batch *b, int rc)
{
	pthread_mutex_lock(&b->lock);
	b->running--;
	b->pending--;
	if (rc != 0) {
		b->failed++;
		if (b->first_err == 0)
			b->first_err = rc;
	}
	if (b->pending == 0)
		pthread_cond_broadcast(&b->done);
	pthread_mutex_unlock(&b->lock);
}

static void *
worker(void *arg)
{
	struct pool_worker *me = arg;

	in_worker = 1;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct mlx5_lm_task *t = pick_task(1);
		struct mlx5_lm_batch *b;
		struct mlx5_lm_bg_work *work;
		int rc, bg, budgeted;

		if (t == NULL) {
			if (pool.stopping)
				break;
			me->woken = 0;
			me->next = NULL;
			*pool.idle_tail = me;
			pool.idle_tail = &me->next;
			pool.idle++;
			while (!me->woken)
				pthread_cond_wait(&me->cv, &pool.lock);
			pool.wakeups++;
			continue;
		}
		/*
		 * Another task may run too: one more worker for it. One at a time
		 * and only when there is one, never a broadcast: the pool has up
		 * to 256 threads, and waking all of them for every task cost each
		 * device stop milliseconds of CPU on a small host.
		 */
		if (pick_task(0) != NULL)
			wake_one();
		b = t->batch;
		/*
		 * Read with the pick, under the pool's lock: a promotion may
		 * change it at any time, and bg_running counted what the pick saw.
		 * b may be gone once finished: its waiter owns it.
		 */
		bg = batch_background(b);
		budgeted = bg && !b->bulk;
		work = b->work;
		pthread_mutex_unlock(&pool.lock);
		in_background = bg;
		cur_work = work;
		rc = t->fn(t->arg);
		in_background = 0;
		cur_work = NULL;
		free(t);
		finish_task(b, rc);
		pthread_mutex_lock(&pool.lock);
		pool.bg_running -= budgeted;
		/*
		 * A batch slot (or background budget) is free again: this worker
		 * looks for the task that may go now at the top of the loop.
		 */
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/*
 * The CPUs of DPDK's control threads, read off the first thread made with
 * rte_ctrl_thread_create (ctrl_lock). rte_ctrl_thread_create waits for
 * its new thread to run, polling with 1 us sleeps (eal_common_thread.c):
 * on a busy host that is milliseconds of the caller's time, and the
 * caller of the restore thread is vhost's thread inside a downtime
 * (dev_close; measured: 2.6 ms of each of 8 simultaneous stops on 2
 * CPUs). Every later thread is made with pthread_create on those CPUs,
 * named by itself, and nobody waits for it.
 */
static pthread_mutex_t ctrl_lock = PTHREAD_MUTEX_INITIALIZER;
static rte_cpuset_t ctrl_cpus;
static int ctrl_cpus_known;
static uint64_t ctrl_creates;

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	char name[16];
};

static void *
thread_trampoline(void *p)
{
	struct thread_start st = *(struct thread_start *)p;

	free(p);
	pthread_setname_np(pthread_self(), st.name);
	return st.fn(st.arg);
}

int
mlx5_lm_thread_create(pthread_t *th, const char *name, const pthread_attr_t *attr,
		      void *(*fn)(void *), void *arg)
{
	struct thread_start *st;
	pthread_attr_t a;
	int ret, detach = PTHREAD_CREATE_JOINABLE;
	cpu_set_t given;

	/* EAL counts its lcores at init: none before (or without) it. */
	if (rte_lcore_count() == 0)
		return pthread_create(th, attr, fn, arg);
	pthread_mutex_lock(&ctrl_lock);
	if (!ctrl_cpus_known) {
		ret = rte_ctrl_thread_create(th, name, attr, fn, arg);
		/* DPDK 22.11 returns a negative errno here. */
		ret = ret < 0 ? -ret : ret;
		if (ret == 0) {
			ctrl_creates++;
			/* Set by the thread before rte_ctrl_thread_create returned. */
			if (pthread_getaffinity_np(*th, sizeof(ctrl_cpus), &ctrl_cpus) == 0)
				ctrl_cpus_known = 1;
		}
		pthread_mutex_unlock(&ctrl_lock);
		return ret;
	}
	pthread_mutex_unlock(&ctrl_lock);
	st = malloc(sizeof(*st));
	if (st == NULL)
		return ENOMEM;
	st->fn = fn;
	st->arg = arg;
	snprintf(st->name, sizeof(st->name), "%s", name);
	ret = pthread_attr_init(&a);
	if (ret != 0)
		goto out;
	/* The caller's detach state and CPUs (a given set wins, as it does in EAL). */
	if (attr != NULL)
		pthread_attr_getdetachstate(attr, &detach);
	pthread_attr_setdetachstate(&a, detach);
	if (attr == NULL || pthread_attr_getaffinity_np(attr, sizeof(given), &given) != 0 ||
	    CPU_COUNT(&given) == 0 || CPU_COUNT(&given) == CPU_SETSIZE)
		given = ctrl_cpus;
	ret = pthread_attr_setaffinity_np(&a, sizeof(given), &given);
	if (ret == 0)
		ret = pthread_create(th, &a, thread_trampoline, st);
	pthread_attr_destroy(&a);
out:
	if (ret != 0)
		free(st);
	return ret;
}

uint64_t
mlx5_lm_ctrl_thread_creates(void)
{
	uint64_t n;

	pthread_mutex_lock(&ctrl_lock);
	n = ctrl_creates;
	pthread_mutex_unlock(&ctrl_lock);
	return n;
}

int
mlx5_lm_pool_get(unsigned int workers)
{
	int ret = 0;

	pthread_mutex_lock(&pool.lock);
	/*
	 * The last put (another device's removal) is joining the threads and
	 * then empties the pool: counted in it now, this device's workers
	 * would be reset with it, the device left with none. It goes first.
	 */
	while (pool.stopping)
		pthread_cond_wait(&pool.stopped, &pool.lock);
	pool.wanted += workers;
	while (pool.nthreads < pool.wanted && pool.nthreads < MAX_WORKERS) {
		struct pool_worker *w = &pool.slots[pool.nthreads];
		char name[16];

		snprintf(name, sizeof(name), "mlx5-lm-w%u", pool.nthreads);
		if (pthread_cond_init(&w->cv, NULL) != 0) {
			ret = -EAGAIN;
			break;
		}
		if (mlx5_lm_thread_create(&pool.threads[pool.nthreads], name, NULL, worker,
					  w) != 0) {
			pthread_cond_destroy(&w->cv);
			ret = -EAGAIN;
			break;
		}
		pool.nthreads++;
	}
	if (ret == 0 || pool.nthreads > 0) {
		pool.refs++;
		ret = 0;
	} else {
		pool.wanted -= workers;
	}
	pthread_mutex_unlock(&pool.lock);
	/* Background work yields to the foreground before each of its commands. */
	devx_set_cmd_gate(mlx5_lm_bg_checkpoint);
	return ret;
}

void
mlx5_lm_pool_put(unsigned int workers)
{
	unsigned int i, n;

	pthread_mutex_lock(&pool.lock);
	if (pool.refs == 0) {
		pthread_mutex_unlock(&pool.lock);
		return;
	}
	pool.wanted -= workers < pool.wanted ? workers : pool.wanted;
	if (--pool.refs > 0) {
		/* Threads stay until the last device goes: they are idle, and cheap. */
		pthread_mutex_unlock(&pool.lock);
		return;
	}
	pool.stopping = 1;
	/* Every idle worker, to see stopping; the busy ones see it at their next pick. */
	while (wake_one())
		;
	n = pool.nthreads;
	pthread_mutex_unlock(&pool.lock);
	for (i = 0; i < n; i++)
		pthread_join(pool.threads[i], NULL);
	pthread_mutex_lock(&pool.lock);
	for (i = 0; i < n; i++)
		pthread_cond_destroy(&pool.slots[i].cv);
	pool.nthreads = 0;
	pool.wanted = 0;
	pool.stopping = 0;
	pthread_cond_broadcast(&pool.stopped);
	pthread_mutex_unlock(&pool.lock);
}

void
mlx5_lm_fg_enter(void)
{
	pthread_mutex_lock(&pool.lock);
	__atomic_store_n(&pool.fg, pool.fg + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pool.lock);
}

void
mlx5_lm_fg_exit(void)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.fg > 0 && __atomic_sub_fetch(&pool.fg, 1, __ATOMIC_RELEASE) == 0) {
		/* Only the background threads paused at a checkpoint wait on fg_idle. */
		if (pool.bg_paused > 0)
			pthread_cond_broadcast(&pool.fg_idle);
		/*
		 * A background task held back may go now: one worker, which wakes
		 * the next itself (worker()). Never a broadcast: with every
		 * device's workers idle (128 threads for 8 devices), waking them
		 * all at the end of each stop cost that stop 2.1 ms of the 5.5 ms
		 * between GET_VRING_BASE and its reply (seed-mkey trace), all
		 * before vhost's thread could send the reply.
		 */
		if (pool.idle > 0 && pick_task(0) != NULL) {
			pool.wake_requests++;
			wake_one();
		}
	}
	pthread_mutex_unlock(&pool.lock);
}

void
mlx5_lm_bg_thread(int on)
{
	in_background = on;
}

void
mlx5_lm_bg_thread_work(struct mlx5_lm_bg_work *w)
{
	in_background = w != NULL;
	cur_work = w;
}

void
mlx5_lm_bg_promote(struct mlx5_lm_bg_work *w)
{
	pthread_mutex_lock(&pool.lock);
	if (!w->fg) {
		__atomic_store_n(&w->fg, 1, __ATOMIC_RELEASE);
		/* Other background work yields to it, as to a device starting. */
		__atomic_store_n(&pool.fg, pool.fg + 1, __ATOMIC_RELEASE);
		/* Its thread or tasks paused at a checkpoint go on (the others wait again). */
		if (pool.bg_paused > 0)
			pthread_cond_broadcast(&pool.fg_idle);
		/* Its tasks not taken yet are foreground now: one worker, which wakes the next. */
		if (pool.idle > 0 && pick_task(0) != NULL)
			wake_one();
	}
	pthread_mutex_unlock(&pool.lock);
}

void
mlx5_lm_bg_work_end(struct mlx5_lm_bg_work *w)
{
	int fg;

	pthread_mutex_lock(&pool.lock);
	fg = w->fg;
	__atomic_store_n(&w->fg, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pool.lock);
	if (fg)
		mlx5_lm_fg_exit();
}

void
mlx5_lm_bg_checkpoint(void)
{
	if (!in_background || promoted())
		return;
	/*
	 * Every command of background work passes here: 1024 for a
	 * preparation of 4 devices, from up to 128 threads. Without a device
	 * starting or stopping the pool's lock is not taken (a start that
	 * begins just after this read is the same as one that begins just
	 * after the command is sent: the command was already on its way).
	 */
	if (__atomic_load_n(&pool.fg, __ATOMIC_ACQUIRE) == 0)
		return;
	pthread_mutex_lock(&pool.lock);
	/* Promoted meanwhile (mlx5_lm_bg_promote wakes it): foreground work goes on. */
	if (pool.fg > 0 && !promoted()) {
		pool.bg_paused++;
		while (pool.fg > 0 && !promoted())
			pthread_cond_wait(&pool.fg_idle, &pool.lock);
		pool.bg_paused--;
	}
	pthread_mutex_unlock(&pool.lock);
}

/* A read of one pool counter under the pool's lock (tests, benchmarks, logs). */
#define POOL_COUNTER(type, fn, field)			\
type							\
fn(void)						\
{							\
	type n;						\
							\
	pthread_mutex_lock(&pool.lock);			\
	n = pool.field;					\
	pthread_mutex_unlock(&pool.lock);		\
	return n;					\
}

POOL_COUNTER(unsigned int, mlx5_lm_bg_paused, bg_paused)
POOL_COUNTER(unsigned int, mlx5_lm_pool_idle, idle)
POOL_COUNTER(uint64_t, mlx5_lm_pool_wake_requests, wake_requests)
POOL_COUNTER(uint64_t, mlx5_lm_pool_wakeups, wakeups)
POOL_COUNTER(unsigned int, mlx5_lm_bg_running, bg_running)
POOL_COUNTER(unsigned int, mlx5_lm_pool_size, nthreads)
POOL_COUNTER(unsigned int, mlx5_lm_pool_stopping, stopping)

void
mlx5_lm_batch_init(struct mlx5_lm_batch *b, unsigned int limit)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->done, NULL);
	b->pending = 0;
	b->running = 0;
	b->limit = limit ? limit : 1;
	b->first_err = 0;
	b->failed = 0;
	b->background = 0;
	b->bulk = 0;
	b->work = NULL;
	TAILQ_INIT(&b->tasks);
}

void
mlx5_lm_batch_init_background(struct mlx5_lm_batch *b, unsigned int limit)
{
	mlx5_lm_batch_init(b, limit);
	b->background = 1;
	/* Made by promotable work (the restore): promoted with it, tasks running included. */
	b->work = cur_work;
}

void
mlx5_lm_batch_init_bulk(struct mlx5_lm_batch *b, unsigned int limit)
{
	mlx5_lm_batch_init_background(b, limit);
	b->bulk = 1;
}

void
mlx5_lm_batch_fini(struct mlx5_lm_batch *b)
{
	pthread_cond_destroy(&b->done);
	pthread_mutex_destroy(&b->lock);
}

int
mlx5_lm_batch_submit(struct mlx5_lm_batch *b, mlx5_lm_task_fn fn, void *arg)
{
	struct mlx5_lm_task *t;
	int has_pool;

	pthread_mutex_lock(&pool.lock);
	has_pool = pool.nthreads > 0 && !pool.stopping && !in_worker;
	pthread_mutex_unlock(&pool.lock);
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	if (!has_pool) {
		/* No pool (not started, or shutting down): run in the caller. */
		pthread_mutex_lock(&b->lock);
		b->running++;
		pthread_mutex_unlock(&b->lock);
		finish_task(b, fn(arg));
		return 0;
	}
	t = malloc(sizeof(*t));
	if (t == NULL) {
		pthread_mutex_lock(&b->lock);
		b->pending--;
		pthread_mutex_unlock(&b->lock);
		return -ENOMEM;
	}
	t->batch = b;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&pool.lock);
	if (TAILQ_EMPTY(&b->tasks))
		TAILQ_INSERT_TAIL(&pool.queue, b, qnext);
	TAILQ_INSERT_TAIL(&b->tasks, t, next);
	/* A batch at its limit gets its next task run by the worker that frees a slot. */
	if (pick_task(0) != NULL)
		wake_one();
	pthread_mutex_unlock(&pool.lock);
	return 0;
}

int
mlx5_lm_batch_wait(struct mlx5_lm_batch *b)
{
	int err;

	pthread_mutex_lock(&b->lock);
	while (b->pending > 0)
		pthread_cond_wait(&b->done, &b->lock);
	err = b->first_err;
	pthread_mutex_unlock(&b->lock);
	return err;
}

