/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live-migration support: the device's dirty-page logging into vhost's
 * log area while VHOST_F_LOG_ALL is negotiated. The log is registered
 * like guest memory (umem + mkey) and every queue's dirty bitmap points
 * at it, so the device marks each guest page it writes.
 */
#include <errno.h>
#include <inttypes.h>

#include <rte_vhost.h>

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_pool.h"

struct log_task {
	struct mlx5_lm_virtq *vq;
	uint32_t mkey;
	uint32_t size;
	int enable;
	int recreate;   /* the device refused it on the running queue, no freeze_to_rdy */
};

static int
task_dirty_log(void *arg)
{
	struct log_task *t = arg;
	int ret;

	/*
	 * A running queue takes the dirty-bitmap fields as it runs
	 * (mlx5_lm_virtq_set_dirty_log); where the device refuses that, through
	 * SUSPEND and back to RDY, or without freeze_to_rdy_supported it is
	 * re-created with them (below, with the steering off meanwhile).
	 */
	ret = mlx5_lm_virtq_set_dirty_log(t->vq, t->mkey, 0, t->size, t->enable);
	if (ret == -ENOTSUP) {
		t->recreate = 1;
		return 0;
	}
	return ret;
}

static int
task_recreate(void *arg)
{
	struct log_task *t = arg;

	return mlx5_lm_virtq_recreate_suspended(t->vq, t->mkey, t->size, t->enable, 1);
}

/* Point every configured queue's dirty bitmap at vhost's log (or stop), in parallel. */
static int
dirty_log_all(struct mlx5_lm_dev *dev, int enable)
{
	struct log_task tasks[MLX5_LM_MAX_VIRTQS];
	struct mlx5_lm_batch b;
	uint16_t i, n = 0, nre = 0;
	int ret, r;

	memset(tasks, 0, sizeof(tasks));
	mlx5_lm_batch_init(&b, (dev->args.parallel ? dev->args.workers : 1));
	for (i = 0; i < dev->nr_vq; i++) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];

		if (!vq->configured || vq->obj == NULL || vq->hw_state == PRM_VIRTQ_STATE_ERR)
			continue;
		tasks[n].vq = vq;
		tasks[n].mkey = enable ? mlx5_lm_mr_mkey(dev->log_mr) : 0;
		tasks[n].size = (uint32_t)dev->log_size;
		tasks[n].enable = enable;
		mlx5_lm_batch_submit(&b, task_dirty_log, &tasks[n]);
		n++;
	}
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	for (i = 0; i < n; i++)
		nre += tasks[i].recreate;
	if (nre > 0) {
		/*
		 * Queues re-created in parallel (no freeze_to_rdy) change ids under
		 * the RQT: the steering goes away first and comes back around them.
		 */
		mlx5_lm_steer_destroy(dev);
		mlx5_lm_batch_init(&b, (dev->args.parallel ? dev->args.workers : 1));
		for (i = 0; i < n; i++)
			if (tasks[i].recreate)
				mlx5_lm_batch_submit(&b, task_recreate, &tasks[i]);
		r = mlx5_lm_batch_wait(&b);
		mlx5_lm_batch_fini(&b);
		if (ret == 0)
			ret = r;
		r = mlx5_lm_steer_create(dev);
		if (r == 0)
			r = mlx5_lm_steer_update(dev);
		if (r < 0) {
			DRV_LOG(ERR, dev, "cannot rebuild the receive steering");
			if (ret == 0)
				ret = r;
		}
	}
	/*
	 * The device fetches at doorbells: one the guest rang while a queue
	 * went through SUSPEND (or a re-creation) reached a queue that was not
	 * RDY, and a chain posted without a kick (the device had asked not to
	 * be notified) waits for one. Ring each running queue once, as at
	 * DRIVER_OK, once the steering is back (a looped frame needs its RX
	 * queue): a doorbell write, nothing for a queue that missed nothing.
	 */
	for (i = 0; i < n; i++)
		if (tasks[i].vq->hw_state == PRM_VIRTQ_STATE_RDY)
			mlx5_lm_vq_doorbell(dev, tasks[i].vq->index);
	return ret;
}

int
mlx5_lm_log_area(struct mlx5_lm_dev *dev, int vid, uint64_t *base, uint64_t *size)
{
	if (rte_vhost_get_log_base(vid, base, size) < 0 || *base == 0 || *size == 0) {
		DRV_LOG(ERR, dev, "logging requested without a log area (SET_LOG_BASE missing)");
		return -EINVAL;
	}
	return 0;
}

/* VHOST_F_LOG_ALL on: register vhost's log area and let the device mark it. */
int
mlx5_lm_log_start(struct mlx5_lm_dev *dev, uint64_t base, uint64_t size)
{
	/* No file identity (file_ino 0): never taken back as guest memory. */
	struct mlx5_lm_mem_region r = { .gpa = 0 };
	int ret;

	r.gpa = 0;
	/* The log is mapped in whole pages; the device addresses it from 0. */
	r.size = (size + 4095) & ~4095ull;
	r.hva = base;
	r.page_size = 4096;
	ret = mlx5_lm_mr_create(dev, &r, 1, &dev->log_mr);
	if (ret < 0)
		return ret;
	dev->log_size = size;
	ret = dirty_log_all(dev, 1);
	if (ret < 0) {
		dirty_log_all(dev, 0);
		mlx5_lm_mr_release(dev->log_mr);
		dev->log_mr = NULL;
		return ret;
	}
	DRV_LOG(INFO, dev, "dirty-page logging on: %" PRIu64 " bytes of log", size);
	return 0;
}

void
mlx5_lm_log_stop(struct mlx5_lm_dev *dev)
{
	if (dev->log_mr == NULL)
		return;
	if (dev->running)
		dirty_log_all(dev, 0);
	mlx5_lm_mr_release(dev->log_mr);
	dev->log_mr = NULL;
	DRV_LOG(INFO, dev, "dirty-page logging off");
}

