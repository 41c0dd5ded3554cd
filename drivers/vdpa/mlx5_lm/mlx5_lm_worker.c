/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's own worker thread, started at probe and joined at removal.
 * It does, in this order, what the device was asked to do:
 *
 *   restore    a stop's putting back to blank of the queues that left INIT,
 *              mr_gc_ms after the stop (deferred like the registrations, so
 *              that it stays out of the stops and starts of the other
 *              devices of a host being drained), at once when the device is
 *              needed: its DRIVER_OK (which needs blank queues) or removal;
 *   preconf    the registration of prepared memory for queues configured
 *              ahead of their DRIVER_OK (mlx5_lm_preconf.c);
 *   conf       the configuration of a DRIVER_OK (mlx5_lm_conf.c), which
 *              vhost's dev_conf queued before returning;
 *   recover    the ERR recovery of the queues the notification thread saw go
 *              to ERR (mlx5_lm_rings.c);
 *   stop ahead a sibling device's stop (sibling_stop, mlx5_lm_stop.c): first
 *              of all, as it is inside a VM's downtime; and, once stopped
 *              ahead, the resume at its deadline if its own stop never came.
 *
 * One thread per device for all of it: no thread is made per stop, and the
 * notification thread posts a recovery without waiting for a configuration
 * that holds dev->lock. worker.lock guards what was posted and is never
 * held while taking another lock but the pool's (a leaf, to promote a
 * running restore); the jobs themselves run under dev->lock,
 * except the swap of queue objects of a restore (restore.swapping), so that
 * vhost's messages of this device and every other go on meanwhile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_prereg.h"

/*
 * worker.lock held: blank queues are needed now (a DRIVER_OK, the removal).
 * A restore already running in the background would go on yielding to
 * every other device starting or stopping, and what waits for it with it:
 * from here on it is foreground work, as a restore taken when needed is.
 */
static void
restore_needed_locked(struct mlx5_lm_worker *w)
{
	w->restore_now = 1;
	if (w->restoring)
		mlx5_lm_bg_promote(&w->restore_bg);
}

static void
worker_post(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *conf, int restore, int urgent)
{
	struct mlx5_lm_worker *w = &dev->worker;

	pthread_mutex_lock(&w->lock);
	if (conf != NULL) {
		w->conf = conf;
		/* A configuration needs blank queues: a deferred restore goes first, now. */
		restore_needed_locked(w);
	}
	if (restore) {
		w->restore = 1;
		w->restore_now = urgent;
		w->restore_deadline_ms = mlx5_lm_now_ms() + dev->args.mr_gc_ms;
	}
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

void
mlx5_lm_worker_conf(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *job)
{
	worker_post(dev, job, 0, 0);
}

struct mlx5_lm_preconf_mem *
mlx5_lm_worker_preconf(struct mlx5_lm_dev *dev, struct mlx5_lm_preconf_mem *job)
{
	struct mlx5_lm_worker *w = &dev->worker;
	struct mlx5_lm_preconf_mem *old;

	pthread_mutex_lock(&w->lock);
	/* The job of a start that ended before the worker took it: the caller drops it. */
	old = w->preconf;
	w->preconf = job;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
	return old;
}

void
mlx5_lm_worker_restore(struct mlx5_lm_dev *dev)
{
	worker_post(dev, NULL, 1, dev->args.mr_gc_ms == 0);
}

void
mlx5_lm_worker_recover(struct mlx5_lm_dev *dev, uint16_t index)
{
	struct mlx5_lm_worker *w = &dev->worker;

	if (index >= dev->nr_vq)
		return;
	pthread_mutex_lock(&w->lock);
	w->recover[index] = 1;
	w->recover_pending = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

void
mlx5_lm_worker_stop_ahead(struct mlx5_lm_dev *dev, int vid, int pid)
{
	struct mlx5_lm_worker *w = &dev->worker;

	pthread_mutex_lock(&w->lock);
	w->ahead_posted = 1;
	w->ahead_vid = vid;
	w->ahead_pid = pid;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

/* A device stopped ahead whose own stop did not come: it runs again. */
static void
run_ahead_deadline(struct mlx5_lm_dev *dev)
{
	pthread_mutex_lock(&dev->lock);
	if (dev->stopped_ahead && dev->running && !dev->removing)
		mlx5_lm_stop_ahead_undo(dev, "its own stop did not come within "
					RTE_STR(MLX5_LM_STOP_AHEAD_MS) " ms");
	pthread_mutex_unlock(&dev->lock);
}

void
mlx5_lm_wait_configured(struct mlx5_lm_dev *dev)
{
	dev->conf.waiters++;
	while (dev->conf.busy)
		pthread_cond_wait(&dev->conf.done, &dev->lock);
	dev->conf.waiters--;
}

/*
 * The restore: every queue that left INIT back to blank, then the stop's
 * registrations released. Without dev->lock while queue objects are
 * swapped: running is 0 and restore.pending 1, so dev_conf and removal
 * wait for it, recovery stays away, statistics too (restore.swapping),
 * set_vring_state only records enables. Needed now (a DRIVER_OK or the
 * removal waits), it is the foreground work of that start; otherwise
 * background work, which yields to every device starting or stopping,
 * until it is needed (restore_needed_locked promotes it).
 */
static void
run_restore(struct mlx5_lm_dev *dev, int urgent)
{
	struct mlx5_lm_worker *w = &dev->worker;
	double t0 = mlx5_lm_now_ms();

	pthread_mutex_lock(&dev->lock);
	dev->restore.swapping = 1;
	pthread_mutex_unlock(&dev->lock);
	if (urgent) {
		mlx5_lm_fg_enter();
		mlx5_lm_queues_restore_blank(dev, 0);
		mlx5_lm_fg_exit();
	} else {
		/*
		 * Its own commands (steering) yield to any device starting or
		 * stopping, too, and so does its batch of queues: all of it
		 * until promoted.
		 */
		mlx5_lm_bg_thread_work(&w->restore_bg);
		mlx5_lm_queues_restore_blank(dev, 1);
		/* Never paused while holding the device lock. */
		mlx5_lm_bg_thread_work(NULL);
		/* No promotion after this: the one it had, if any, ends with it. */
		pthread_mutex_lock(&w->lock);
		w->restoring = 0;
		pthread_mutex_unlock(&w->lock);
		mlx5_lm_bg_work_end(&w->restore_bg);
	}
	pthread_mutex_lock(&dev->lock);
	/* No queue references the registrations any more: deferred deletion, or reuse. */
	mlx5_lm_log_stop(dev);
	mlx5_lm_mr_release(dev->mr);
	dev->mr = NULL;
	dev->restore.pending = 0;
	dev->restore.swapping = 0;
	pthread_cond_broadcast(&dev->restore.done);
	DRV_LOG(DEBUG, dev, "queues back to blank in %.1f ms", mlx5_lm_now_ms() - t0);
	pthread_mutex_unlock(&dev->lock);
}

static void
run_recoveries(struct mlx5_lm_dev *dev, const uint8_t *which)
{
	int umem_read = 0;  /* the recoveries posted together are one batch */
	uint16_t i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < dev->nr_vq; i++)
		if (which[i])
			mlx5_lm_recover_locked(&dev->vq[i], &umem_read);
	pthread_mutex_unlock(&dev->lock);
}

/* worker.lock held: wait for the next thing to do; 0 when stopping with nothing left. */
static int
wait_work(struct mlx5_lm_worker *w)
{
	for (;;) {
		double now = mlx5_lm_now_ms();

		if (w->restore && (w->restore_now || w->stop || now >= w->restore_deadline_ms))
			return 1;
		if ((w->ahead_posted && w->hold < 2) ||
		    (w->ahead_armed && (w->stop || now >= w->ahead_deadline_ms)))
			return 1;
		if (w->preconf != NULL || (w->conf != NULL && !w->hold))
			return 1;
		if (w->recover_pending && w->hold < 3)
			return 1;
		if (w->stop)
			return 0;
		if (w->restore || w->ahead_armed) {
			double until = w->restore ? w->restore_deadline_ms : w->ahead_deadline_ms;
			struct timespec ts;
			uint64_t ns;

			if (w->ahead_armed && w->ahead_deadline_ms < until)
				until = w->ahead_deadline_ms;
			ns = (uint64_t)(until * 1e6);
			ts.tv_sec = (time_t)(ns / 1000000000u);
			ts.tv_nsec = (long)(ns % 1000000000u);
			pthread_cond_timedwait(&w->cv, &w->lock, &ts);
		} else {
			pthread_cond_wait(&w->cv, &w->lock);
		}
	}
}

static void *
worker_main(void *arg)
{
	struct mlx5_lm_dev *dev = arg;
	struct mlx5_lm_worker *w = &dev->worker;
	uint8_t recover[MLX5_LM_MAX_VIRTQS];

	pthread_mutex_lock(&w->lock);
	while (wait_work(w)) {
		struct mlx5_lm_conf_job *conf = NULL;
		struct mlx5_lm_preconf_mem *preconf = NULL;
		int restore = 0, urgent = 0, recovering = 0, ahead = 0, ahead_vid = -1;
		int ahead_pid = 0;

		if (w->ahead_posted && w->hold < 2) {
			/* Inside a VM's downtime: before anything else. */
			ahead = 1;
			ahead_vid = w->ahead_vid;
			ahead_pid = w->ahead_pid;
			w->ahead_posted = 0;
		} else if (w->ahead_armed && (w->stop || mlx5_lm_now_ms() >= w->ahead_deadline_ms)) {
			ahead = 2;
			w->ahead_armed = 0;
		} else if (w->restore && (w->restore_now || w->stop ||
				   mlx5_lm_now_ms() >= w->restore_deadline_ms)) {
			restore = 1;
			urgent = w->restore_now || w->stop;
			/* Promoted, under this lock, once needed (restore_needed_locked). */
			w->restoring = !urgent;
			w->restore = 0;
			w->restore_now = 0;
		} else if (w->preconf != NULL) {
			/* Posted at a start's first kick: before that start's DRIVER_OK. */
			preconf = w->preconf;
			w->preconf = NULL;
		} else if (w->conf != NULL && !w->hold) {
			conf = w->conf;
			w->conf = NULL;
		} else if (w->recover_pending && w->hold < 3) {
			memcpy(recover, w->recover, sizeof(recover));
			memset(w->recover, 0, sizeof(w->recover));
			w->recover_pending = 0;
			recovering = 1;
		}
		pthread_mutex_unlock(&w->lock);
		if (ahead == 1) {
			if (mlx5_lm_stop_ahead(dev, ahead_vid, ahead_pid)) {
				pthread_mutex_lock(&w->lock);
				w->ahead_armed = 1;
				w->ahead_deadline_ms = mlx5_lm_now_ms() + MLX5_LM_STOP_AHEAD_MS;
				pthread_mutex_unlock(&w->lock);
			}
		} else if (ahead == 2) {
			run_ahead_deadline(dev);
		} else if (restore) {
			run_restore(dev, urgent);
		} else if (preconf != NULL) {
			mlx5_lm_preconf_memory(dev, preconf);
		} else if (conf != NULL) {
			struct mlx5_lm_prereg *left;

			pthread_mutex_lock(&dev->lock);
			left = mlx5_lm_conf_run_job(dev, conf);
			pthread_mutex_unlock(&dev->lock);
			/* Possibly the last reference: deregistered by the garbage thread. */
			mlx5_lm_prereg_put(left);
		} else if (recovering) {
			run_recoveries(dev, recover);
		}
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int
mlx5_lm_worker_start(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_worker *w = &dev->worker;
	pthread_condattr_t cattr;

	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	/* The restore's deadline is on mlx5_lm_now_ms()'s clock. */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_cond_init(&dev->conf.done, NULL);
	pthread_cond_init(&dev->restore.done, NULL);
	pthread_mutex_init(&dev->report.lock, NULL);
	dev->report.state = RTE_PMD_MLX5_LM_STATE_STOPPED;
	if (mlx5_lm_thread_create(&w->thread, "mlx5-lm-dev", NULL, worker_main, dev) != 0) {
		DRV_LOG(ERR, dev, "cannot start the device's worker thread");
		pthread_mutex_destroy(&dev->report.lock);
		pthread_cond_destroy(&dev->restore.done);
		pthread_cond_destroy(&dev->conf.done);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->lock);
		return -EAGAIN;
	}
	w->up = 1;
	w->made = 1;
	return 0;
}

void
mlx5_lm_worker_stop(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_worker *w = &dev->worker;

	if (!w->up)
		return;
	/* A configuration queued or running finishes first (removal waits for it). */
	pthread_mutex_lock(&w->lock);
	w->hold = 0;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
	pthread_mutex_lock(&dev->lock);
	mlx5_lm_wait_configured(dev);
	/* Queues configured ahead of a DRIVER_OK that will not come: restored below. */
	dev->removing = 1;
	mlx5_lm_preconf_abort(dev);
	pthread_mutex_unlock(&dev->lock);
	/* A deferred restore runs now, a running one as foreground work; then the thread ends. */
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	if (w->restoring)
		mlx5_lm_bg_promote(&w->restore_bg);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->up = 0;
}

/*
 * After the notification thread is gone too: until then it may post a
 * recovery (an OBJECT_CHANGE event), under w->lock, to the stopped worker.
 */
void
mlx5_lm_worker_fini(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_worker *w = &dev->worker;

	if (!w->made)
		return;
	w->made = 0;
	pthread_mutex_destroy(&dev->report.lock);
	pthread_cond_destroy(&dev->restore.done);
	pthread_cond_destroy(&dev->conf.done);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->lock);
}

/* ---- test seams (tests/integration: mlx5_lm_test.h) ------------------------- */

void
mlx5_lm_worker_hold(struct mlx5_lm_dev *dev, int on)
{
	struct mlx5_lm_worker *w = &dev->worker;

	pthread_mutex_lock(&w->lock);
	w->hold = on;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

unsigned int
mlx5_lm_conf_waiters(struct mlx5_lm_dev *dev)
{
	unsigned int n;

	pthread_mutex_lock(&dev->lock);
	n = dev->conf.waiters;
	pthread_mutex_unlock(&dev->lock);
	return n;
}

int
mlx5_lm_restore_pending(struct mlx5_lm_dev *dev)
{
	int pending;

	pthread_mutex_lock(&dev->lock);
	pending = dev->restore.pending;
	pthread_mutex_unlock(&dev->lock);
	return pending;
}

int
mlx5_lm_restore_wait(struct mlx5_lm_dev *dev, unsigned int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	/* Needed now: a deferred restore starts at once, a running one is foreground work. */
	pthread_mutex_lock(&dev->worker.lock);
	if (dev->worker.restore || dev->worker.restoring) {
		restore_needed_locked(&dev->worker);
		pthread_cond_signal(&dev->worker.cv);
	}
	pthread_mutex_unlock(&dev->worker.lock);
	mlx5_lm_deadline_ts(&ts, timeout_ms);
	pthread_mutex_lock(&dev->lock);
	while (dev->restore.pending && ret == 0)
		ret = pthread_cond_timedwait(&dev->restore.done, &dev->lock, &ts);
	ret = dev->restore.pending ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}
