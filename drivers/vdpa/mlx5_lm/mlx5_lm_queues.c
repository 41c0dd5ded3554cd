/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device's queues before and after a front end uses them: every queue
 * pre-created blank (INIT) at probe with all its resources, plus the
 * steering, in parallel on the worker pool; after a stop, the queues that
 * left INIT put back to blank (Linux's rule: reset only used queues). And
 * what every phase of the lifecycle shares: batches over the queues, the
 * steering around a queue being re-created, the device's owner.
 */
#include <errno.h>

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"

/*
 * Commands in flight for a batch of queue work. Twice the device's slots
 * (workers=, 16 = a CX6 Dx's slots): the excess waits for a slot in the
 * command interface (the kernel's command semaphore; the emulator's slot
 * queue), so the next wave starts as soon as a slot frees instead of after
 * a round trip through the pool. seed-precreate, destination queues:
 * 5.8-6.4 ms with workers in flight, 4.9-5.2 ms with twice as many.
 */
unsigned int
mlx5_lm_batch_limit(const struct mlx5_lm_dev *dev)
{
	return dev->args.parallel ? dev->args.workers * MLX5_LM_MR_PIPELINE : 1;
}

int
mlx5_lm_pairs_fill_slots(const struct mlx5_lm_dev *dev)
{
	return dev->nr_vq / 2 >= dev->args.workers;
}

int
mlx5_lm_for_each_vq(struct mlx5_lm_dev *dev, mlx5_lm_task_fn fn, int all, int background)
{
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret;

	if (background)
		mlx5_lm_batch_init_background(&b, mlx5_lm_batch_limit(dev));
	else
		mlx5_lm_batch_init(&b, mlx5_lm_batch_limit(dev));
	for (i = 0; i < dev->nr_vq; i++)
		if (all || dev->vq[i].obj != NULL)
			mlx5_lm_batch_submit(&b, fn, &dev->vq[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	return ret;
}

static int
task_precreate(void *arg)
{
	struct mlx5_lm_virtq *vq = arg;

	return mlx5_lm_virtq_create(vq, vq->dev->args.queue_size, NULL, 0);
}

static int
task_destroy(void *arg)
{
	struct mlx5_lm_virtq *vq = arg;

	mlx5_lm_virtq_destroy(vq);
	return vq->obj != NULL ? -EBUSY : 0;
}

void
mlx5_lm_queues_destroy(struct mlx5_lm_dev *dev)
{
	mlx5_lm_steer_destroy(dev);
	mlx5_lm_for_each_vq(dev, task_destroy, 0, 0);
}

int
mlx5_lm_virtqs_precreate(struct mlx5_lm_dev *dev)
{
	double t0 = mlx5_lm_now_ms();
	int ret;

	if (dev->args.precreate && !mlx5_lm_can_modify_blank(dev)) {
		/*
		 * A blank queue is configured at DRIVER_OK by MODIFY of its
		 * addresses, indices, mkey, features and event mode: without
		 * vnet_modify_ext, virtio_net_q_addr_modify and
		 * virtio_q_index_modify the device refuses that (DPDK vdpa/mlx5
		 * pre-creates only with all three), so queues are created with
		 * their full configuration at DRIVER_OK instead.
		 */
		DRV_LOG(INFO, dev, "device lacks vnet_modify_ext/virtio_net_q_addr_modify/"
			"virtio_q_index_modify (%u/%u/%u): no pre-creation, queues are created at "
			"DRIVER_OK with their full configuration", dev->caps.vnet_modify_ext,
			dev->caps.virtio_net_q_addr_modify, dev->caps.virtio_q_index_modify);
		dev->args.precreate = 0;
	}
	if (!dev->args.precreate)
		return 0;
	ret = mlx5_lm_for_each_vq(dev, task_precreate, 1, 0);
	if (ret == 0)
		ret = mlx5_lm_steer_create(dev);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "pre-creating %u queues failed", dev->nr_vq);
		mlx5_lm_queues_destroy(dev);
		return ret;
	}
	DRV_LOG(INFO, dev, "pre-created %u queues of size %u in %.1f ms", dev->nr_vq,
		dev->args.queue_size, mlx5_lm_now_ms() - t0);
	return 0;
}

void
mlx5_lm_virtqs_destroy(struct mlx5_lm_dev *dev)
{
	mlx5_lm_queues_destroy(dev);
	mlx5_lm_mr_release(dev->mr);
	dev->mr = NULL;
	/* Released registrations do not outlive their device. */
	mlx5_lm_mr_gc_flush(dev);
}

/* A queue the restore re-creates: it left INIT, or its re-creation failed earlier. */
static bool
restore_needed(const struct mlx5_lm_virtq *vq)
{
	return vq->obj == NULL || vq->used || vq->size != vq->dev->args.queue_size;
}

/*
 * Destroy and re-create blank a queue that left INIT (Linux: reset only
 * used queues). The caller has taken the steering down: an RQT must not
 * name a queue being destroyed.
 */
static int
task_restore(void *arg)
{
	struct mlx5_lm_virtq *vq = arg;
	struct mlx5_lm_dev *dev = vq->dev;

	if (!restore_needed(vq))
		return 0;
	/* Also a queue whose re-creation failed earlier: pre-created again. */
	return mlx5_lm_virtq_recreate(vq, dev->args.queue_size, NULL, 0);
}

void
mlx5_lm_queues_restore_blank(struct mlx5_lm_dev *dev, int background)
{
	uint16_t i;

	/*
	 * The new blank queues are sized from the umem parameters the device
	 * reports now, read once for them all, in the background with them
	 * (usually), so that a DRIVER_OK finding them blank needs no read.
	 */
	for (i = 0; i < dev->nr_vq; i++) {
		if (restore_needed(&dev->vq[i])) {
			mlx5_lm_umem_params_read(dev, "blank queues re-created after a stop");
			break;
		}
	}
	mlx5_lm_steer_destroy(dev);
	if (mlx5_lm_for_each_vq(dev, task_restore, 1, background) < 0)
		DRV_LOG(ERR, dev, "some queues could not be put back to blank");
	if (mlx5_lm_steer_create(dev) < 0)
		DRV_LOG(ERR, dev, "cannot rebuild the receive steering");
}

void
mlx5_lm_steer_detach_ids(struct mlx5_lm_dev *dev, const uint32_t *ids, uint32_t n, int *rebuild)
{
	int ret;

	if (n == 0 || dev->steer == NULL)
		return;
	ret = mlx5_lm_steer_forget(dev, ids, n);
	if (ret == 0)
		return;
	/*
	 * No RQT without them (-EBUSY), or the device refused the MODIFY: the
	 * steering goes, and comes back once the new queues exist. Left in
	 * place, it would hold their destroys back (the device refuses to
	 * destroy a virtq an RQT names) and the re-creations would fail.
	 */
	if (ret != -EBUSY)
		DRV_LOG(WARNING, dev, "the RQT could not let go of %u RX queues (%d): the steering "
			"is rebuilt around them", n, ret);
	mlx5_lm_steer_destroy(dev);
	*rebuild = 1;
}

void
mlx5_lm_steer_detach(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int *rebuild)
{
	uint32_t id;

	if (vq->index % 2 || vq->obj == NULL)
		return;
	id = devx_obj_id(vq->obj);
	mlx5_lm_steer_detach_ids(dev, &id, 1, rebuild);
}

int
mlx5_lm_steer_reattach(struct mlx5_lm_dev *dev, int rebuild)
{
	int ret = 0;

	if (rebuild || dev->steer == NULL)
		ret = mlx5_lm_steer_create(dev);
	return ret;
}

int
mlx5_lm_owner(struct mlx5_lm_dev *dev, int vid, const char *what)
{
	if (dev->vid == vid)
		return 0;
	if (dev->vid < 0) {
		/* Stored atomically: the host-notifier callbacks read it without the lock. */
		__atomic_store_n(&dev->vid, vid, __ATOMIC_RELEASE);
		__atomic_store_n(&dev->held_vid, vid, __ATOMIC_RELEASE);
		DRV_LOG(INFO, dev, "vhost device %d owns the device", vid);
		return 0;
	}
	DRV_LOG(ERR, dev, "%s from vhost device %d refused: the device is owned by vhost "
		"device %d (one front end per device)", what, vid, dev->vid);
	return -EBUSY;
}
