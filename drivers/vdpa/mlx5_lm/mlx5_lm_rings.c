/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A ring of a running device enabled or disabled by the guest
 * (SET_VRING_ENABLE, and vhost's disable-then-enable when the front end
 * replaces a ring's fds), and a queue's recovery from ERR.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <rte_vhost.h>

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"

/*
 * A ring enabled after DRIVER_OK: plan it now and send its one MODIFY (or
 * re-create it). While logging, a queue that does not carry the log's
 * bitmap already (re-created: a ring size other than the pre-created one,
 * a queue in ERR, no MODIFY of a blank queue; or given no bitmap when
 * logging started) runs only once it logs, as at a DRIVER_OK with the log
 * on: configured without RDY, the dirty bitmap set, then RDY. Made RDY at
 * once, the new object's writes reached the guest unlogged and the
 * destination missed those pages.
 *
 * A ring enabled again (started, suspended at its disable) is resumed
 * where it was, unless the front end moved it meanwhile (SET_VRING_ADDR,
 * _NUM or _BASE while it was disabled; vhost tells the driver nothing
 * until the enable): then the queue is configured from vhost's state as
 * a late ring is. Resumed, it ran on the ring the front end had left,
 * the device reading and writing memory the guest may have given to
 * something else. The addresses and indices of a SUSPENDed queue take a
 * MODIFY (PRM: fields only in INIT or SUSPEND; Linux mlx5_vdpa modifies
 * them in SUSPEND when the device can resume, freeze_to_rdy_supported,
 * and offers VHOST_BACKEND_F_CHANGEABLE_VQ_ADDR_IN_SUSPEND on that
 * ground); without that, or its modify caps, the queue is re-created.
 */
static int
start_late_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct rte_vhost_memory *mem = NULL;
	struct mlx5_lm_vq_plan plan;
	uint32_t log_mkey = 0;
	int ret, rebuild = 0, log_later = 0, moved = 0, umem_read = 0;

	if (rte_vhost_get_mem_table(dev->vid, &mem) < 0)
		return -EINVAL;
	ret = mlx5_lm_plan_ring(dev, mem, vq->index, &plan);
	free(mem);
	if (ret < 0)
		return ret;
	if (vq->started) {
		if (!mlx5_lm_plan_moves_ring(&plan))
			return vq->hw_state != PRM_VIRTQ_STATE_RDY ?
			       mlx5_lm_resume_ring(dev, vq, &umem_read) : 0;
		moved = 1;
		VQ_LOG(INFO, vq, "moved by the front end while disabled (desc 0x%" PRIx64 " -> 0x%"
		       PRIx64 ", size %u -> %u, base %u -> %u): configured again, not resumed",
		       vq->fe.desc, plan.cfg.desc, vq->fe.size, plan.size, vq->fe.avail_idx,
		       plan.cfg.hw_available_index);
	}
	mlx5_lm_plan_finish(dev, &plan);
	if (moved && (vq->hw_state != PRM_VIRTQ_STATE_SUSPEND || !mlx5_lm_can_resume(dev) ||
		      !mlx5_lm_can_modify_blank(dev)))
		plan.recreate = 1;
	if (moved && !plan.recreate) {
		uint16_t avail, used;

		/*
		 * The object's indices moved on since it was configured: read
		 * them, so that the MODIFY carries the new base whatever it is.
		 */
		ret = mlx5_lm_virtq_query(vq, NULL, NULL, &avail, &used);
		if (ret < 0)
			return ret;
		vq->cur.hw_available_index = avail;
		vq->cur.hw_used_index = used;
	}
	/* A new object: sized from the umem parameters the device reports now. */
	if (plan.recreate)
		mlx5_lm_umem_params_once(dev, &umem_read, "a ring enabled re-creates its queue");
	if (dev->log_mr != NULL) {
		log_mkey = mlx5_lm_mr_mkey(dev->log_mr);
		log_later = plan.recreate ||
			    __atomic_load_n(&vq->log_mkey, __ATOMIC_ACQUIRE) != log_mkey;
		plan.ready = !log_later;
	}
	mlx5_lm_plans_detach(dev, &plan, 1, &rebuild);
	ret = mlx5_lm_task_configure(&plan);
	if (ret == 0 && log_later) {
		ret = mlx5_lm_virtq_set_dirty_log(vq, log_mkey, 0, (uint32_t)dev->log_size, 1);
		if (ret == 0)
			ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
		if (ret < 0) {
			VQ_LOG(ERR, vq, "configured, but its dirty log or RDY refused: left stopped");
			/* Not started: the guest's next enable starts it again, logging. */
			vq->started = 0;
		}
	}
	if (mlx5_lm_steer_reattach(dev, rebuild) < 0 && ret == 0)
		ret = -EIO;
	return ret;
}

/*
 * A suspended ring enabled again. SUSPEND -> RDY needs freeze_to_rdy_supported
 * (PRM); without it the queue is re-created from the indices it reached,
 * with the RQT kept off an RX queue meanwhile.
 */
int
mlx5_lm_resume_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int *umem_read)
{
	int ret, rebuild = 0;

	if (mlx5_lm_can_resume(dev))
		return mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
	VQ_LOG(DEBUG, vq, "no freeze_to_rdy: re-creating the queue to resume it");
	mlx5_lm_umem_params_once(dev, umem_read, "suspended queues resumed by re-creation");
	mlx5_lm_steer_detach(dev, vq, &rebuild);
	ret = mlx5_lm_virtq_recreate_suspended(vq, dev->log_mr != NULL ?
					       mlx5_lm_mr_mkey(dev->log_mr) : 0,
					       (uint32_t)dev->log_size, dev->log_mr != NULL, 1);
	if (mlx5_lm_steer_reattach(dev, rebuild) < 0 && ret == 0)
		ret = -EIO;
	return ret;
}

/* vhost's current kick and call fds of a ring (a running ring may get new ones). */
static void
refresh_fds(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct rte_vhost_vring vr;

	if (rte_vhost_get_vhost_vring(dev->vid, vq->index, &vr) == 0) {
		vq->kickfd = vr.kickfd;
		vq->callfd = vr.callfd;
	}
}

/*
 * A ring enabled again, its queue RDY: its kick and call fds relayed or,
 * when they cannot be (their duplicates refused: EMFILE), the queue
 * suspended again and the enable refused. Left running, its kicks would
 * never reach the device nor its completions the guest, while vhost was
 * told the ring runs.
 */
static int
relay_or_suspend(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	int ret = mlx5_lm_notify_add_ring(dev, vq);

	if (ret == 0)
		return 0;
	/* A call fd taken without its kick (epoll refused it) goes too. */
	mlx5_lm_notify_del_ring(dev, vq);
	if (vq->obj != NULL && vq->hw_state == PRM_VIRTQ_STATE_RDY &&
	    mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND) < 0)
		VQ_LOG(ERR, vq, "its kick and call fds cannot be relayed (%s), and its queue "
		       "refused to suspend again", strerror(-ret));
	else
		VQ_LOG(ERR, vq, "its kick and call fds cannot be relayed (%s): its queue "
		       "suspended again, the enable refused", strerror(-ret));
	/* An RX queue not RDY leaves the receive steering. */
	(void)mlx5_lm_steer_update(dev);
	return ret;
}

int
mlx5_lm_set_vring_state(int vid, int vring, int state)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	struct mlx5_lm_virtq *vq;
	int ret = 0;

	if (dev == NULL)
		return -ENODEV;
	if (vring < 0 || vring >= dev->nr_vq) {
		DRV_LOG(ERR, dev, "ring %d does not exist (the device has %u)", vring, dev->nr_vq);
		return -EINVAL;
	}
	pthread_mutex_lock(&dev->lock);
	/* An enable or disable applies to the configured device, not to one being configured. */
	mlx5_lm_wait_configured(dev);
	ret = mlx5_lm_owner(dev, vid, "SET_VRING_ENABLE");
	if (ret < 0)
		goto out;
	/* The guest runs: the stop guessed from a sibling's was not its VM's pause. */
	if (dev->stopped_ahead)
		mlx5_lm_stop_ahead_undo(dev, "the guest enabled or disabled a ring");
	vq = &dev->vq[vring];
	vq->enabled = !!state;
	VQ_LOG(DEBUG, vq, "guest %s the ring%s", state ? "enabled" : "disabled",
	       dev->running ? "" : " (not running)");
	if (!dev->running || !vq->configured)
		goto out;
	if (state) {
		/*
		 * vhost reports new kick/call fds of a running ring as a disable
		 * then an enable: take them again.
		 */
		refresh_fds(dev, vq);
		ret = start_late_ring(dev, vq);
		if (ret == 0)
			ret = relay_or_suspend(dev, vq);
	} else {
		mlx5_lm_notify_del_ring(dev, vq);
		if (vq->obj != NULL && vq->hw_state == PRM_VIRTQ_STATE_RDY)
			ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
	}
	if (ret == 0)
		ret = mlx5_lm_steer_update(dev);
	VQ_LOG(INFO, vq, "%s by the guest%s", state ? "enabled" : "disabled",
	       ret < 0 ? ", but the device refused" : "");
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/* ---- ERR recovery (the device's worker, for the notification thread) -------- */

/* Queue ERR recoveries allowed per DRIVER_OK before the queue is left in ERR. */
#define MAX_RECOVERIES 3

/*
 * An OBJECT_CHANGE event said vq went to ERR: re-create it from what the
 * device completed, at most MAX_RECOVERIES times per DRIVER_OK. On the
 * device's worker, under dev->lock: the relay posted it and went on.
 */
void
mlx5_lm_recover_locked(struct mlx5_lm_virtq *vq, int *umem_read)
{
	struct mlx5_lm_dev *dev = vq->dev;
	struct mlx5_lm_vq_cfg cfg;
	uint16_t avail, used;
	uint8_t state, err;
	int ret, rebuild = 0;

	if (!dev->running) {
		/*
		 * Stopped since the event: its stop handed the indices the queue
		 * reached to vhost (ERR or not), and the restore owns the queue.
		 */
		VQ_LOG(INFO, vq, "recovery not run: the device was stopped since");
		return;
	}
	if (!vq->configured || vq->obj == NULL ||
	    mlx5_lm_virtq_query(vq, &state, &err, &avail, &used) < 0 ||
	    state != PRM_VIRTQ_STATE_ERR)
		return;
	vq->hw_state = PRM_VIRTQ_STATE_ERR;
	/*
	 * Queried by a sibling's stop ahead, its indices kept for its own
	 * stop: a queue re-created and running now would move past them, and
	 * run on after that stop (which only hands them over). Recovered if
	 * the stop ahead is undone (mlx5_lm_stop_ahead_undo).
	 */
	if (dev->stopped_ahead) {
		VQ_LOG(WARNING, vq, "in ERR (error_type %u) while stopped ahead: recovered only "
		       "if the stop ahead is undone", err);
		return;
	}
	if (vq->recoveries >= MAX_RECOVERIES) {
		VQ_LOG(ERR, vq, "in ERR (error_type %u) after %u recoveries: left stopped", err,
		       vq->recoveries);
		mlx5_lm_steer_update(dev);
		return;
	}
	vq->recoveries++;
	VQ_LOG(ERR, vq, "in ERR (error_type %u, avail %u used %u): re-creating it (recovery %u/%u)",
	       err, avail, used, vq->recoveries, MAX_RECOVERIES);
	cfg = vq->cur;
	/* Restart from what the device completed: the rest is processed again. */
	cfg.hw_available_index = used;
	cfg.hw_used_index = used;
	mlx5_lm_steer_detach(dev, vq, &rebuild);
	mlx5_lm_umem_params_once(dev, umem_read, "queues in ERR re-created");
	/*
	 * While logging (a migration), the new object marks the log before it
	 * runs: made RDY only once it has the dirty bitmap, or its writes
	 * would reach the guest unlogged and the destination miss them.
	 */
	ret = mlx5_lm_virtq_recreate(vq, vq->size ? vq->size : dev->args.queue_size, &cfg,
				     dev->log_mr != NULL ? 0 : vq->enabled);
	if (ret == 0 && dev->log_mr != NULL) {
		ret = mlx5_lm_virtq_set_dirty_log(vq, mlx5_lm_mr_mkey(dev->log_mr), 0,
						  (uint32_t)dev->log_size, 1);
		if (ret == 0 && vq->enabled)
			ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
		if (ret < 0)
			VQ_LOG(ERR, vq, "re-created, but not logging dirty pages: left stopped");
	}
	mlx5_lm_steer_reattach(dev, rebuild);
	mlx5_lm_steer_update(dev);
	if (ret == 0 && vq->kickfd >= 0)
		mlx5_lm_vq_doorbell(dev, vq->index);
}
