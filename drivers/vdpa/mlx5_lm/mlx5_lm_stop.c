/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GET_VRING_BASE. vhost's dev_close runs on vhost's one thread, inside the
 * downtime of every VM whose messages queue behind it: only what the reply
 * needs happens before it returns. Every ready queue is suspended and
 * queried in parallel and its indices handed to vhost (the used ring
 * logged while the device logs); putting used queues back to blank is the
 * device's worker's job, after the reply, deferred (mlx5_lm_worker.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rte_vhost.h>

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"

/*
 * The indices of a split ring the device has just suspended, without a
 * QUERY, when the guest's ring shows nothing outstanding. used->idx in
 * guest memory is a value the device wrote, so at most its
 * hw_used_index; hw_used_index <= hw_available_index <= the guest's
 * avail->idx, read after the SUSPEND completed (the device fetches
 * nothing once suspended). If the guest's two indices are equal, all four
 * are. A paused guest's TX rings are in that state at every stop: half
 * the QUERYs of a stop, one wave of 16 command slots (0.35 ms per device
 * on cx6dx). Anything else (packed rings, RX rings with posted buffers,
 * a guest still adding) is queried.
 */
/*
 * A ring index from guest memory, read so that a page the front end took
 * away is an error rather than a signal: vhost maps the front end's file,
 * and a front end may shrink it after SET_MEM_TABLE (QEMU seals its
 * memfds; nothing obliges a front end to). A plain load of a lost page is
 * a SIGBUS that ends every VM of the process; process_vm_readv() on
 * ourselves returns EFAULT instead. Two system calls per ring per stop,
 * next to a SUSPEND of 0.8 ms.
 */
static int
guest_index_read(const uint16_t *p, uint16_t *v)
{
	struct iovec local = { .iov_base = v, .iov_len = sizeof(*v) };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)p, .iov_len = sizeof(*v) };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == sizeof(*v) ? 0 : -errno;
}

static int
idle_split_ring(struct mlx5_lm_virtq *vq, uint16_t *idx)
{
	struct mlx5_lm_dev *dev = vq->dev;
	struct rte_vhost_vring vr;
	uint16_t used, avail;
	int ret;

	if ((dev->features & (1ull << VIRTIO_F_RING_PACKED)) ||
	    rte_vhost_get_vhost_vring(dev->vid, vq->index, &vr) < 0 ||
	    vr.used == NULL || vr.avail == NULL)
		return 0;
	/*
	 * used first: avail only grows, so equal means nothing in between
	 * (each read is a system call: ordered, and after the SUSPEND).
	 */
	ret = guest_index_read(&vr.used->idx, &used);
	if (ret == 0)
		ret = guest_index_read(&vr.avail->idx, &avail);
	if (ret < 0) {
		VQ_LOG(ERR, vq, "ring indices unreadable in guest memory (%s: the front end "
		       "shrank or unmapped it?): asking the device", strerror(-ret));
		return 0;
	}
	if (avail != used)
		return 0;
	*idx = used;
	return 1;
}

/* What a stop does with a suspended queue's indices (dev->stop_handover). */
#define STOP_HANDOVER_NONE 0     /* the front end is gone */
#define STOP_HANDOVER_NOW 1      /* to vhost, which waits in dev_close */
#define STOP_HANDOVER_LATER 2    /* kept in the queue (a stop ahead), handed over at dev_close */

static void hand_over(struct mlx5_lm_virtq *vq, uint16_t avail, uint16_t used);

static int
task_suspend_query(void *arg)
{
	struct mlx5_lm_virtq *vq = arg;
	struct mlx5_lm_dev *dev = vq->dev;
	uint16_t avail, used;
	uint8_t state;
	int ret = 0, suspended = 0;

	if (vq->hw_state == PRM_VIRTQ_STATE_RDY) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
		if (ret < 0) {
			/*
			 * A queue gone to ERR whose OBJECT_CHANGE is not handled yet
			 * (its recovery posted, the worker busy or behind this stop)
			 * refuses SUSPEND for its state. It fetches nothing more: its
			 * indices are final, and vhost's own base (the start's) is
			 * stale. Queried below and handed over as an ERR queue's; the
			 * recovery then finds the device stopped (mlx5_lm_recover_locked).
			 */
			if (mlx5_lm_virtq_query(vq, &state, NULL, NULL, NULL) < 0 ||
			    state != PRM_VIRTQ_STATE_ERR)
				return ret;
			vq->hw_state = PRM_VIRTQ_STATE_ERR;
			VQ_LOG(WARNING, vq, "in ERR at the stop, its recovery not run yet: the "
			       "indices it reached are handed over");
		} else {
			/* Only a queue this stop suspended: one in ERR is queried for its state. */
			suspended = 1;
		}
	}
	if (vq->hw_state == PRM_VIRTQ_STATE_INIT) {
		/* Never started: vhost's own base is right. */
		return 0;
	}
	/* The front end is gone (dev_cleanup): stopped, nothing to hand over. */
	if (dev->stop_handover == STOP_HANDOVER_NONE)
		return 0;
	if (dev->stop_handover == STOP_HANDOVER_LATER) {
		/*
		 * A stop ahead, off vhost's thread and while it is free: nothing of
		 * vhost's is read (its rings) or written (bases, log), which
		 * SET_VRING_ADDR or SET_LOG_BASE may change meanwhile; the queue is
		 * queried and its own dev_close hands the indices over.
		 */
		ret = mlx5_lm_virtq_query(vq, &state, NULL, &avail, &used);
		if (ret < 0)
			return ret;
		vq->ahead_avail = mlx5_lm_virtq_restart_avail(vq, state, avail, used);
		vq->ahead_used = used;
		vq->ahead_base = 1;
		return 0;
	}
	if (suspended && idle_split_ring(vq, &used)) {
		avail = used;
		__atomic_add_fetch(&dev->times.stop_queries_skipped, 1, __ATOMIC_RELAXED);
		goto set_base;
	}
	ret = mlx5_lm_virtq_query(vq, &state, NULL, &avail, &used);
	if (ret < 0)
		return ret;
	/*
	 * Split: what the device used, not what it fetched (chains fetched
	 * ahead and unused would never come back); ERR: what it completed.
	 */
	avail = mlx5_lm_virtq_restart_avail(vq, state, avail, used);
set_base:
	hand_over(vq, avail, used);
	return 0;
}

/* On vhost's thread (it waits in dev_close): the queue's indices to vhost, its used ring logged. */
static void
hand_over(struct mlx5_lm_virtq *vq, uint16_t avail, uint16_t used)
{
	struct mlx5_lm_dev *dev = vq->dev;

	if (rte_vhost_set_vring_base(dev->vid, vq->index, avail, used) < 0)
		VQ_LOG(ERR, vq, "vhost refused vring base %u/%u", avail, used);
	if (dev->log_mr != NULL) {
		/*
		 * The device's ring writes while logging (used elements and
		 * used->idx; packed: the used descriptors): marked for the
		 * destination here, by the guest addresses the queue was given,
		 * whether or not the device's own bitmap records them (no public
		 * text says it does; DPDK vdpa/mlx5 marks them too). Not through
		 * the ring's log address: QEMU gives the packed ring's device
		 * area there, not its descriptors. Only with log_mr: the device
		 * pinned the whole log when it registered it, the proof that
		 * vhost's writes there cannot fault (a log fd shorter than
		 * declared fails that pin).
		 */
		if (dev->features & (1ull << VIRTIO_F_RING_PACKED))
			rte_vhost_log_write(dev->vid, vq->fe.desc, (uint64_t)vq->fe.size * 16);
		else
			rte_vhost_log_write(dev->vid, vq->fe.used,
					    4 + (uint64_t)vq->fe.size * 8 + 2);
	}
}

/*
 * One task of a stop: the queue pairs first, first + stride, ... each RX
 * then TX. With at least as many pairs as command slots, one task per
 * slot keeps every slot busy with one thread each (RX SUSPEND, its QUERY,
 * TX SUSPEND: 1.95 ms per pair on cx6dx, the least 16 pairs can take on
 * 16 slots), where one task per queue woke twice as many threads and left
 * half of them waiting for a slot: the dispatch of 32 tasks on the CPU
 * took 0.6 ms of a 2.6 ms stop (seed-precreate trace).
 */
/* workers= is at most 64 (mlx5_lm_devargs.c). */
#define MAX_STOP_TASKS 64

struct stop_group {
	struct mlx5_lm_dev *dev;
	uint16_t first, stride;
};

static int
task_stop_pairs(void *arg)
{
	struct stop_group *g = arg;
	struct mlx5_lm_dev *dev = g->dev;
	uint16_t p, q;
	int ret = 0, r;

	for (p = g->first; p < dev->nr_vq / 2; p += g->stride)
		for (q = 2 * p; q < 2 * p + 2; q++) {
			if (!dev->vq[q].configured || dev->vq[q].obj == NULL)
				continue;
			r = task_suspend_query(&dev->vq[q]);
			if (r < 0 && ret == 0)
				ret = r;
		}
	return ret;
}

/*
 * Every ready queue suspended and, as handover says (STOP_HANDOVER_*),
 * queried and its indices handed to vhost (its used ring logged) or kept,
 * in parallel; dev->lock held, inside mlx5_lm_fg_enter(). 0 or the first
 * error.
 */
static int
suspend_queues(struct mlx5_lm_dev *dev, int handover)
{
	struct stop_group groups[MAX_STOP_TASKS];
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret;

	dev->times.stop_queries_skipped = 0;
	dev->stop_handover = (uint8_t)handover;
	mlx5_lm_batch_init(&b, mlx5_lm_batch_limit(dev));
	if (dev->args.parallel && mlx5_lm_pairs_fill_slots(dev) &&
	    dev->args.workers <= MAX_STOP_TASKS) {
		/* As many tasks as slots (workers=, 16 on a CX6 Dx), pairs spread over them. */
		for (i = 0; i < dev->args.workers; i++) {
			groups[i].dev = dev;
			groups[i].first = i;
			groups[i].stride = (uint16_t)dev->args.workers;
			mlx5_lm_batch_submit(&b, task_stop_pairs, &groups[i]);
		}
	} else {
		/* Fewer pairs than slots: one task per queue, every SUSPEND at once. */
		for (i = 0; i < dev->nr_vq; i++)
			if (dev->vq[i].configured && dev->vq[i].obj != NULL)
				mlx5_lm_batch_submit(&b, task_suspend_query, &dev->vq[i]);
	}
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	return ret;
}

/*
 * Stop a running device, dev->lock held: every ready queue suspended (and,
 * with handover, queried and its indices handed to vhost, its used ring
 * logged) unless a sibling's stop did it already, the relay off every
 * ring, and the queues put back to blank after the caller's return, in
 * the background.
 */
static void
stop_locked(struct mlx5_lm_dev *dev, int handover)
{
	double t0 = mlx5_lm_now_ms();
	uint16_t i;
	int ret = 0;

	/* Background work of every device waits until this stop has its reply. */
	mlx5_lm_fg_enter();
	mlx5_lm_notify_del_configured(dev);
	/* Only what vhost's GET_VRING_BASE reply needs happens before we return. */
	if (dev->stopped_ahead) {
		/* Suspended and queried already; nothing ran since (mlx5_lm_stop_ahead). */
		for (i = 0; i < dev->nr_vq; i++) {
			struct mlx5_lm_virtq *vq = &dev->vq[i];

			if (vq->ahead_base && handover)
				hand_over(vq, vq->ahead_avail, vq->ahead_used);
			vq->ahead_base = 0;
			vq->stopped_ahead = 0;
		}
		dev->stopped_ahead = 0;
		dev->times.stop_ahead_used = 1;
	} else {
		dev->times.stop_ahead_used = 0;
		ret = suspend_queues(dev, handover ? STOP_HANDOVER_NOW : STOP_HANDOVER_NONE);
	}
	if (ret < 0)
		DRV_LOG(ERR, dev, "suspending queues failed: some vring bases may be stale");
	for (i = 0; i < dev->nr_vq; i++) {
		dev->vq[i].configured = 0;
		dev->vq[i].started = 0;
	}
	dev->running = 0;
	dev->times.close_ms = mlx5_lm_now_ms() - t0;
	mlx5_lm_fg_exit();
	mlx5_lm_set_state(dev, RTE_PMD_MLX5_LM_STATE_STOPPED, 0, NULL);
	if (dev->args.precreate) {
		/* Blank queues for the next DRIVER_OK, by the worker after vhost has its reply. */
		dev->restore.pending = 1;
		mlx5_lm_worker_restore(dev);
	} else {
		/* Old behaviour, for comparison: everything is destroyed in the caller. */
		mlx5_lm_queues_destroy(dev);
		mlx5_lm_log_stop(dev);
		mlx5_lm_mr_release(dev->mr);
		dev->mr = NULL;
	}
}

/* ---- sibling stop (devarg sibling_stop) ---------------------------------------- */

/*
 * QEMU stops a VM's NICs one after another when it pauses the VM for the
 * last pass of a migration (each NIC's vhost_net_stop, GET_VRING_BASE
 * ring after ring, each answered before the next), so a VM's devices add
 * their stops up inside its downtime. With sibling_stop=1, the first of
 * them to be stopped while dirty logging is on (a migration) has every
 * other device whose front end is the same process (SO_PEERCRED: one QEMU
 * is one VM) with logging on, and sibling_stop=1 itself, suspend and
 * query its queues at once on its own worker, keeping their indices; its
 * own GET_VRING_BASE then only hands them to vhost. Each device's peer
 * was read at its DRIVER_OK, on vhost's thread. Nothing of the other
 * devices is decided from this connection's state but the process's
 * identity: each one checks, under its own lock, that it still runs for
 * the same connection and process, and logs.
 *
 * Only a dev_close that vhost calls for a GET_VRING_BASE (the vetting
 * tells which): vhost calls it for a SET_MEM_TABLE of a running device
 * (memory hot-plugged while migrating), a RESET_OWNER and a teardown too,
 * which say nothing about the VM's pause. A guess all the same, so
 * undone: a device stopped ahead whose own stop does not come within
 * MLX5_LM_STOP_AHEAD_MS (a guest that reset one NIC while migrating),
 * whose guest changes a ring, or whose logging stops (the migration
 * cancelled) has its queues resumed (SUSPEND -> RDY, or re-created from
 * the indices they reached without freeze_to_rdy_supported) and each
 * ring's doorbell rung.
 */
/* Per vhost device: inside the handling of its GET_VRING_BASE (the vetting says). */
static uint8_t in_get_vring_base[RTE_MAX_VHOST_DEVICE];

void
mlx5_lm_stop_message(int vid, int in)
{
	if (vid >= 0 && vid < RTE_MAX_VHOST_DEVICE)
		__atomic_store_n(&in_get_vring_base[vid], (uint8_t)!!in, __ATOMIC_RELAXED);
}

/*
 * Taken by the dev_close it is for: vhost calls no post-handler after a
 * message that failed, and a flag left set would make the next dev_close
 * of that vid (a teardown, or another connection's once the number is
 * reused) look like a stop.
 */
static int
stop_message(int vid)
{
	return vid >= 0 && vid < RTE_MAX_VHOST_DEVICE &&
	       __atomic_exchange_n(&in_get_vring_base[vid], 0, __ATOMIC_RELAXED);
}

struct sibling_walk {
	struct mlx5_lm_dev *self;
	int pid;
	unsigned int posted;
};

/* Under the device list's lock: no system call, no device lock (the worker checks). */
static void
post_sibling(struct mlx5_lm_dev *d, void *arg)
{
	struct sibling_walk *w = arg;
	int vid = __atomic_load_n(&d->vid, __ATOMIC_ACQUIRE);

	if (d == w->self || !d->args.sibling_stop || vid < 0 ||
	    __atomic_load_n(&d->owner_pid, __ATOMIC_ACQUIRE) != w->pid)
		return;
	__atomic_store_n(&d->asked_ahead, 1, __ATOMIC_RELEASE);
	mlx5_lm_worker_stop_ahead(d, vid, w->pid);
	w->posted++;
}

static void
stop_siblings(struct mlx5_lm_dev *dev)
{
	struct sibling_walk w = { .self = dev, .pid = dev->owner_pid };

	if (!dev->args.sibling_stop || !(dev->features & (1ull << VHOST_F_LOG_ALL)) ||
	    w.pid <= 0)
		return;
	mlx5_lm_dev_foreach(post_sibling, &w);
	if (w.posted > 0)
		DRV_LOG(INFO, dev, "stopping: %u other devices of front end pid %d asked to stop "
			"ahead", w.posted, w.pid);
}

int
mlx5_lm_stop_ahead(struct mlx5_lm_dev *dev, int vid, int pid)
{
	uint8_t was_rdy[MLX5_LM_MAX_VIRTQS];
	double t0 = mlx5_lm_now_ms();
	int ret, done = 0, pausing = 0;
	uint16_t i;

	pthread_mutex_lock(&dev->lock);
	/*
	 * Still the connection and process the sibling's stop saw, running
	 * (its own stop may have come). A configuration queued behind this job
	 * would be this worker's to run: no waiting for it, no stop ahead.
	 */
	if (!dev->running || dev->conf.busy || dev->stopped_ahead || dev->removing ||
	    dev->vid != vid || dev->owner_pid != pid || dev->restore.pending)
		goto out;
	if (!(dev->features & (1ull << VHOST_F_LOG_ALL))) {
		DRV_LOG(INFO, dev, "not stopped ahead at a sibling device's stop: this device "
			"does not log dirty pages (not migrating)");
		goto out;
	}
	mlx5_lm_fg_enter();
	for (i = 0; i < dev->nr_vq; i++)
		was_rdy[i] = dev->vq[i].configured && dev->vq[i].obj != NULL &&
			     dev->vq[i].hw_state == PRM_VIRTQ_STATE_RDY;
	ret = suspend_queues(dev, STOP_HANDOVER_LATER);
	mlx5_lm_fg_exit();
	for (i = 0; i < dev->nr_vq; i++)
		dev->vq[i].stopped_ahead = was_rdy[i] &&
					   dev->vq[i].hw_state == PRM_VIRTQ_STATE_SUSPEND;
	dev->stopped_ahead = 1;
	if (ret < 0) {
		/* Its own stop does it all again; meanwhile nothing stays suspended. */
		mlx5_lm_stop_ahead_undo(dev, "a queue could not be suspended");
		pausing = 1;
		goto out;
	}
	done = 1;
	/* Every queue queried: the idle-ring shortcut reads vhost's rings, vhost's thread's. */
	DRV_LOG(INFO, dev, "queues stopped ahead in %.1f ms, at a sibling device's stop",
		mlx5_lm_now_ms() - t0);
out:
	/*
	 * Not stopped ahead, and not for a failure inside the VM's pause (whose
	 * own stop comes, and is not its first): nothing of this run was asked
	 * of it after all, and its next stop may be the first of a real pause.
	 */
	if (pausing)
		__atomic_store_n(&dev->asked_ahead, 1, __ATOMIC_RELEASE);
	else if (!done && !dev->stopped_ahead)
		__atomic_store_n(&dev->asked_ahead, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->lock);
	return done;
}

void
mlx5_lm_stop_ahead_undo(struct mlx5_lm_dev *dev, const char *why)
{
	unsigned int resumed = 0;
	int ret = 0, umem_read = 0;
	uint16_t i;

	if (!dev->stopped_ahead)
		return;
	dev->stopped_ahead = 0;
	for (i = 0; i < dev->nr_vq; i++) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];
		int r;

		if (!vq->stopped_ahead) {
			/*
			 * Found in ERR by the stop ahead: its recovery waited for
			 * the stop (mlx5_lm_recover_locked), and runs now.
			 */
			if (vq->ahead_base && vq->hw_state == PRM_VIRTQ_STATE_ERR) {
				vq->ahead_base = 0;
				mlx5_lm_recover_locked(vq, &umem_read);
			}
			vq->ahead_base = 0;
			continue;
		}
		vq->stopped_ahead = 0;
		/* Its indices were kept for a dev_close that did not come. */
		vq->ahead_base = 0;
		r = mlx5_lm_resume_ring(dev, vq, &umem_read);
		if (r < 0) {
			if (ret == 0)
				ret = r;
			continue;
		}
		/*
		 * Kicks relayed while it was suspended were not fetched: ring it
		 * once. The relay kept its own duplicates of the ring's fds; the
		 * ring's fd numbers are vhost's, not to be duplicated again here
		 * (the worker's deadline runs this off vhost's thread).
		 */
		mlx5_lm_vq_doorbell(dev, vq->index);
		resumed++;
	}
	/* The VM did not pause: its next stop may be the first of the real pause. */
	__atomic_store_n(&dev->asked_ahead, 0, __ATOMIC_RELEASE);
	if (resumed > 0 && mlx5_lm_steer_update(dev) < 0 && ret == 0)
		ret = -EIO;
	if (ret < 0)
		DRV_LOG(ERR, dev, "queues stopped ahead: %s; %u resumed, the others refused (%s)",
			why, resumed, strerror(-ret));
	else
		DRV_LOG(INFO, dev, "queues stopped ahead resumed (%u): %s", resumed, why);
}

int
mlx5_lm_dev_close(int vid)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	int at_get_vring_base = stop_message(vid);

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	/* A stop (or a memory-table change) sees the configuration DRIVER_OK asked for. */
	mlx5_lm_wait_configured(dev);
	/* Another connection's GET_VRING_BASE must not stop the owner's queues. */
	if (!dev->running || mlx5_lm_owner(dev, vid, "stop (GET_VRING_BASE)") < 0) {
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	/*
	 * The VM's first device to stop: its other devices start stopping now,
	 * on their workers. One that was asked already is not the first, even
	 * when its own stop came before its worker got to the stop ahead: it
	 * would ask the first one again.
	 */
	if (!dev->stopped_ahead && at_get_vring_base &&
	    !__atomic_load_n(&dev->asked_ahead, __ATOMIC_ACQUIRE))
		stop_siblings(dev);
	stop_locked(dev, 1);
	if (dev->times.stop_ahead_used)
		DRV_LOG(INFO, dev, "stopped in %.1f ms (its queues were stopped ahead, at a "
			"sibling device's stop)", dev->times.close_ms);
	else
		DRV_LOG(INFO, dev, "stopped in %.1f ms (%u idle split rings needed no QUERY)",
			dev->times.close_ms, dev->times.stop_queries_skipped);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

void
mlx5_lm_stop_orphaned(struct mlx5_lm_dev *dev)
{
	if (!dev->running)
		return;
	/*
	 * vhost calls dev_conf whatever new_device answered, but dev_close only
	 * for a device new_device accepted: a front end whose new_device failed
	 * leaves with its queues running on its rings and the relay on its fds.
	 */
	stop_locked(dev, 0);
	DRV_LOG(INFO, dev, "front end gone while running (vhost never stopped the device): "
		"stopped in %.1f ms", dev->times.close_ms);
}

