/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live-migration support: the device's dirty-page logging into vhost's
 * log area while VHOST_F_LOG_ALL is negotiated. The log is registered
 * like guest memory (memory regions under an indirect mkey) and every
 * queue's dirty bitmap points at it, so the device marks each guest page
 * it writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

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
		 * The new objects are sized from the umem parameters of now.
		 */
		mlx5_lm_umem_params_read(dev, "queues re-created for the dirty log");
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
	struct mlx5_lm_mem_region r = { .gpa = 0, .fd = -1 };
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

/*
 * A SET_LOG_BASE while the device logs: QEMU sends one when the guest's
 * memory grows during a migration (a larger log), and one may come while a
 * DRIVER_OK with the log on is being configured. vhost maps the new area
 * and unmaps the old one with no callback to the driver, replies, and the
 * front end then reads the old log into its own bitmap and frees it: every
 * bit the device sets after that is lost. So before vhost handles the
 * message (the vetting's pre_msg_handle, on vhost's thread) the device
 * moves to the new log, mapped by the driver itself from the message's fd:
 * from the reply on, the front end's new log is the one the device marks.
 * Called for every SET_LOG_BASE; 0 when the device does not log (nothing
 * to move), a negative errno when the move failed (the message is then
 * refused: better a failed migration than a destination missing pages).
 */
int
mlx5_lm_log_rebase(int vid, int fd, uint64_t size)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	struct mlx5_lm_mem_region r = { .gpa = 0, .fd = -1 };
	struct mlx5_lm_mr *old, *mr = NULL;
	size_t len = (size + 4095) & ~(size_t)4095;
	uint64_t old_size;
	void *map;
	int ret = 0;

	if (dev == NULL)
		return 0;
	pthread_mutex_lock(&dev->lock);
	/*
	 * A configuration in progress does not log: one that logs keeps
	 * vhost's thread in dev_conf until it is done, so no message of this
	 * front end is handled meanwhile. Nothing to wait for.
	 */
	if (dev->conf.busy || !dev->running || dev->log_mr == NULL || dev->vid != vid)
		goto out;
	/*
	 * From offset 0: vhost logs at its map + mmap_offset, and the vetting
	 * refused every SET_LOG_BASE whose mmap_offset is not 0 (compat,
	 * vet_log_base), so this is the very area vhost marks.
	 */
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		DRV_LOG(ERR, dev, "new log of %" PRIu64 " bytes (SET_LOG_BASE): cannot map it: %s",
			size, strerror(errno));
		goto out;
	}
	r.size = len;
	r.hva = (uint64_t)(uintptr_t)map;
	r.page_size = 4096;
	ret = mlx5_lm_mr_create(dev, &r, 1, &mr);
	if (ret < 0) {
		munmap(map, len);
		DRV_LOG(ERR, dev, "new log of %" PRIu64 " bytes (SET_LOG_BASE): cannot register it",
			size);
		goto out;
	}
	mr->own_map = map;
	mr->own_map_len = len;
	old = dev->log_mr;
	old_size = dev->log_size;
	dev->log_mr = mr;
	dev->log_size = size;
	ret = dirty_log_all(dev, 1);
	if (ret < 0) {
		/* Back to the old log on every queue: this SET_LOG_BASE is refused. */
		dev->log_mr = old;
		dev->log_size = old_size;
		dirty_log_all(dev, 1);
		mlx5_lm_mr_release(mr);
		DRV_LOG(ERR, dev, "new log of %" PRIu64 " bytes (SET_LOG_BASE): the queues would "
			"not move to it", size);
		goto out;
	}
	mlx5_lm_mr_release(old);
	DRV_LOG(INFO, dev, "dirty-page logging moved to a new log: %" PRIu64 " bytes", size);
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
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

