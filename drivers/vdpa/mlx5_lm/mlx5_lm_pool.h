/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Worker pool shared by every device of the process.
 *
 * DevX commands are synchronous ioctls that mostly wait for the firmware;
 * the only way a user-space driver gets the firmware's command-slot
 * parallelism is to issue them from several threads. Work is submitted in
 * batches; each batch has its own concurrency limit (a device's workers=,
 * 1 for serial behaviour) and its completion is signalled through a
 * condition variable, never polled.
 */
#ifndef MLX5_LM_POOL_H
#define MLX5_LM_POOL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

typedef int (*mlx5_lm_task_fn)(void *arg);

/*
 * Start one of the driver's own threads (workers, configuration, deferred
 * work, notifications) as a DPDK control thread named `name` (at most 15
 * characters): it runs on EAL's control CPU set, never on the CPU of a
 * data-plane lcore, which would otherwise be the CPU it inherits from the
 * thread that created it. attr may be NULL (a CPU set in attr wins). Never
 * waits for the new thread to run. Outside an initialised EAL (unit
 * tests) a plain thread. Returns 0 or a positive errno, as pthread_create.
 */
int mlx5_lm_thread_create(pthread_t *th, const char *name, const pthread_attr_t *attr,
			  void *(*fn)(void *), void *arg);
/*
 * Threads made through rte_ctrl_thread_create so far: only the first one
 * is, the others start on its CPUs without anybody waiting for them to run
 * (tests: a stop in vhost's thread must make none).
 */
uint64_t mlx5_lm_ctrl_thread_creates(void);

struct mlx5_lm_task;

/*
 * Background work that may be needed before it is done (a device's
 * restore, which its DRIVER_OK or its removal then waits for): zeroed, it
 * is background work; mlx5_lm_bg_promote makes it foreground from then on.
 */
struct mlx5_lm_bg_work {
	int fg;                 /* promoted: counted in the pool's fg (pool's lock; atomic reads) */
};

struct mlx5_lm_batch {
	/* The pool's lock guards these two: its tasks not yet taken, its place in the queue. */
	TAILQ_HEAD(, mlx5_lm_task) tasks;
	TAILQ_ENTRY(mlx5_lm_batch) qnext;
	pthread_mutex_t lock;   /* guards the fields below */
	pthread_cond_t done;
	unsigned int pending;   /* submitted, not finished */
	unsigned int running;   /* being executed by a worker */
	unsigned int limit;     /* max running at once (>= 1) */
	int first_err;          /* first non-zero task result */
	int background;         /* work off the critical path: yields to other batches */
	int bulk;               /* background outside MLX5_LM_BG_BUDGET (init_bulk) */
	struct mlx5_lm_bg_work *work; /* background until this work is promoted (or NULL) */
	unsigned int failed;
};

/*
 * Take a reference on the process pool for a device that wants `workers`
 * threads: the pool grows to the sum over its devices (at most 256), so
 * that several devices configured at once each get their share.
 * Returns 0 or a negative errno.
 */
int mlx5_lm_pool_get(unsigned int workers);
/* Drop a reference taken with the same count; the last one joins the threads. */
void mlx5_lm_pool_put(unsigned int workers);

void mlx5_lm_batch_init(struct mlx5_lm_batch *b, unsigned int limit);
void mlx5_lm_batch_fini(struct mlx5_lm_batch *b);
/*
 * Queue fn(arg) in batch b. With no pool, or from a pool worker (a task
 * waiting on tasks could starve a small pool), the task runs in the
 * caller. Returns 0 or -ENOMEM (the task did not run).
 */
int mlx5_lm_batch_submit(struct mlx5_lm_batch *b, mlx5_lm_task_fn fn, void *arg);
/* Wait for every task of b; returns the first error (0 when all succeeded). */
int mlx5_lm_batch_wait(struct mlx5_lm_batch *b);

/*
 * A batch of background work (restoring blank queues, deferred deletion).
 * Foreground first (a start or stop waits for at most one command of
 * each background task): background tasks
 * - run only when no other batch has a task waiting,
 * - never more than MLX5_LM_BG_BUDGET at once in the process, so that
 *   they hold few workers and few command slots,
 * - do not start while any device of the process is starting or stopping
 *   (mlx5_lm_fg_enter), and one already running stops before its next
 *   command until that is over (mlx5_lm_bg_checkpoint, called by the
 *   transport before every command): a foreground batch waits for at most
 *   the one command each running background task has in flight.
 */
void mlx5_lm_batch_init_background(struct mlx5_lm_batch *b, unsigned int limit);

#define MLX5_LM_BG_BUDGET 4

/*
 * Background work of a size the budget would stretch past its use: a
 * preparation (mlx5_lm_prereg.c) registers a VM's whole memory before its
 * switch-over, 1024 chunks for 4 devices of 256 GiB. It yields to the
 * foreground as every background batch does (no task starts while a
 * device starts or stops; a running one stops at its next command), but
 * runs up to `limit` tasks, on the command slots of its own device, the
 * budget's tasks apart.
 */
void mlx5_lm_batch_init_bulk(struct mlx5_lm_batch *b, unsigned int limit);

/* A device starts (DRIVER_OK) or stops (GET_VRING_BASE): background work waits. */
void mlx5_lm_fg_enter(void);
void mlx5_lm_fg_exit(void);
/*
 * The calling thread does background work outside the pool (the restore
 * and garbage threads): its commands yield to the foreground too.
 */
void mlx5_lm_bg_thread(int on);
/* In a background thread or task: wait while foreground work runs. */
void mlx5_lm_bg_checkpoint(void);
/*
 * The calling thread does w as background work (NULL: it is done): its
 * commands yield to the foreground, and so do the background batches it
 * makes meanwhile, tasks running included, until w is promoted.
 */
void mlx5_lm_bg_thread_work(struct mlx5_lm_bg_work *w);
/*
 * w is needed now: its thread, its batches and their tasks are foreground
 * work from here on, and w counts as a device starting (mlx5_lm_fg_enter)
 * until mlx5_lm_bg_work_end, so other background work yields to it. A
 * leaf of the lock order: callable under any lock of the caller's.
 */
void mlx5_lm_bg_promote(struct mlx5_lm_bg_work *w);
/* w is over: background again for its next run; the fg_exit of its promotion if any. */
void mlx5_lm_bg_work_end(struct mlx5_lm_bg_work *w);

/* Background work paused at a checkpoint, and background tasks running (tests). */
unsigned int mlx5_lm_bg_paused(void);
unsigned int mlx5_lm_bg_running(void);

/* Threads currently in the pool (for logs and tests). */
unsigned int mlx5_lm_pool_size(void);
/* Workers waiting for a task (tests). */
unsigned int mlx5_lm_pool_idle(void);
/* The last put is joining the threads (tests). */
unsigned int mlx5_lm_pool_stopping(void);
/* Times a worker was woken up since the process started (tests). */
uint64_t mlx5_lm_pool_wakeups(void);
/* Workers fg_exit asked to wake (at most one per exit; tests). */
uint64_t mlx5_lm_pool_wake_requests(void);

#endif /* MLX5_LM_POOL_H */
