/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The queue lifecycle of the Linux "Pre-create HW VQs" series, in user
 * space: what the vDPA ops dev_conf, dev_close and set_vring_state do.
 *
 * probe      pre-create every queue blank (INIT) with all its resources,
 *            plus steering, in parallel on the worker pool;
 * dev_conf   hand the configuration to the device's worker and return (vhost's
 *            one thread goes on with other devices); the worker registers guest
 *            memory, then per queue sends one MODIFY carrying the fields that
 *            changed plus STATE=RDY, in parallel; a queue whose size differs is
 *            re-created, only that one;
 * dev_close  suspend and query every ready queue in parallel, hand the
 *            indices to vhost, return; putting used queues back to blank
 *            happens after the return, in the background.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <rte_vhost.h>

#include "mlx5_lm_dpdk.h"
#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_pool.h"

/* vdpa_driver.h's "every queue" for rte_vhost_host_notifier_ctrl (not installed by Debian). */
#ifndef RTE_VHOST_QUEUE_ALL
#define RTE_VHOST_QUEUE_ALL UINT16_MAX
#endif

/* Queue ERR recoveries allowed per DRIVER_OK before the queue is left in ERR. */
#define MAX_RECOVERIES 3
/* Regions of a vhost-user memory table (VHOST_MEMORY_MAX_NREGIONS). */
#define MAX_REGIONS 8


#define dev_by_vid mlx5_lm_dev_by_vid

/*
 * Commands in flight for a batch of queue work. Twice the device's slots
 * (workers=, 16 = a CX6 Dx's slots): the excess waits for a slot in the
 * command interface (the kernel's command semaphore; the emulator's slot
 * queue), so the next wave starts as soon as a slot frees instead of after
 * a round trip through the pool. seed-precreate, destination queues:
 * 5.8-6.4 ms with workers in flight, 4.9-5.2 ms with twice as many.
 */
static unsigned int
batch_limit(struct mlx5_lm_dev *dev)
{
	return dev->args.parallel ? dev->args.workers * MLX5_LM_MR_PIPELINE : 1;
}

/* ---- pre-creation -------------------------------------------------------- */

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

/* Run fn on every virtq with an object (or all when all is set), in parallel. */
static int
for_each_vq_bg(struct mlx5_lm_dev *dev, mlx5_lm_task_fn fn, int all, int background)
{
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret;

	if (background)
		mlx5_lm_batch_init_background(&b, batch_limit(dev));
	else
		mlx5_lm_batch_init(&b, batch_limit(dev));
	for (i = 0; i < dev->nr_vq; i++)
		if (all || dev->vq[i].obj != NULL)
			mlx5_lm_batch_submit(&b, fn, &dev->vq[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	return ret;
}

static int
for_each_vq(struct mlx5_lm_dev *dev, mlx5_lm_task_fn fn, int all)
{
	return for_each_vq_bg(dev, fn, all, 0);
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
	ret = for_each_vq(dev, task_precreate, 1);
	if (ret == 0)
		ret = mlx5_lm_steer_create(dev);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "pre-creating %u queues failed", dev->nr_vq);
		mlx5_lm_steer_destroy(dev);
		for_each_vq(dev, task_destroy, 0);
		return ret;
	}
	DRV_LOG(INFO, dev, "pre-created %u queues of size %u in %.1f ms", dev->nr_vq,
		dev->args.queue_size, mlx5_lm_now_ms() - t0);
	return 0;
}

void
mlx5_lm_virtqs_destroy(struct mlx5_lm_dev *dev)
{
	mlx5_lm_steer_destroy(dev);
	for_each_vq(dev, task_destroy, 0);
	mlx5_lm_mr_release(dev->mr);
	dev->mr = NULL;
	/* Released registrations do not outlive their device. */
	mlx5_lm_mr_gc_flush(dev);
}

/* ---- memory -------------------------------------------------------------- */

static uint64_t
region_page_size(const struct rte_vhost_mem_region *r)
{
	struct statfs fs;

	/* hugetlbfs reports its page size as the block size; memfd/tmpfs use 4 KiB. */
	if (r->fd >= 0 && fstatfs(r->fd, &fs) == 0 && fs.f_type == 0x958458f6)
		return (uint64_t)fs.f_bsize;
	return 4096;
}

/*
 * The memory table as the registration needs it, read from vhost's copy
 * on vhost's thread (fstat of the region fds: no device command).
 */
static int
mem_regions(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem,
	    struct mlx5_lm_mem_region *regions, uint32_t *nregions)
{
	uint32_t i, n = 0;

	if (mem->nregions > MAX_REGIONS) {
		DRV_LOG(ERR, dev, "memory table has %u regions, vhost-user allows 8", mem->nregions);
		return -EINVAL;
	}
	memset(regions, 0, sizeof(*regions) * MAX_REGIONS);
	for (i = 0; i < mem->nregions; i++) {
		const struct rte_vhost_mem_region *r = &mem->regions[i];
		struct stat st;

		regions[n].gpa = r->guest_phys_addr;
		regions[n].size = r->size;
		regions[n].hva = r->host_user_addr;
		regions[n].page_size = region_page_size(r);
		/*
		 * The memory's identity, for reuse: vhost maps each region's fd
		 * from file offset 0, so gpa sits at host_user_addr - mmap_addr.
		 */
		if (r->fd >= 0 && fstat(r->fd, &st) == 0 && st.st_ino != 0) {
			regions[n].file_dev = (uint64_t)st.st_dev;
			regions[n].file_ino = (uint64_t)st.st_ino;
			regions[n].file_off = r->host_user_addr -
					      (uint64_t)(uintptr_t)r->mmap_addr;
		}
		n++;
	}
	*nregions = n;
	return 0;
}

static int
register_memory(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions, uint32_t n)
{
	struct mlx5_lm_mr *mr;
	int ret;

	if (dev->mr != NULL && mlx5_lm_mr_same_table(dev->mr, regions, n)) {
		DRV_LOG(INFO, dev, "memory table unchanged: keeping its registration");
		return 0;
	}
	mr = mlx5_lm_mr_reclaim(dev, regions, n);
	if (mr != NULL) {
		DRV_LOG(INFO, dev, "memory table identical to a released registration: reusing it");
	} else {
		ret = mlx5_lm_mr_create(dev, regions, n, &mr);
		if (ret < 0)
			return ret;
	}
	dev->prev_mr = dev->mr;
	dev->mr = mr;
	return 0;
}

/* hva_to_gpa() of a pointer outside guest memory (GPA 0 is a valid ring address). */
#define GPA_NONE UINT64_MAX

/* Guest physical address of a host pointer into guest memory; GPA_NONE if none. */
static uint64_t
hva_to_gpa(struct rte_vhost_memory *mem, const void *p)
{
	uint64_t hva = (uintptr_t)p;
	uint32_t i;

	for (i = 0; i < mem->nregions; i++) {
		const struct rte_vhost_mem_region *r = &mem->regions[i];

		if (hva >= r->host_user_addr && hva < r->host_user_addr + r->size)
			return hva - r->host_user_addr + r->guest_phys_addr;
	}
	return GPA_NONE;
}

/* ---- configuration at DRIVER_OK ------------------------------------------ */

struct vq_plan {
	struct mlx5_lm_virtq *vq;
	struct mlx5_lm_vq_cfg cfg;
	uint16_t size;
	int ready;
	int ready_later;             /* RDY once the queue logs (job->logging) */
	int recreate;
};

static uint16_t
queue_features(uint64_t f)
{
	uint16_t q = 0;

	/* The 12-byte header, and the offloads the device performs per queue. */
	if (f & (1ull << F_MRG_RXBUF))
		q |= 1u << PRM_VIRTQ_FEAT_MRG_RXBUF;
	if (f & (1ull << F_CSUM))
		q |= 1u << PRM_VIRTQ_FEAT_CSUM;
	if (f & (1ull << F_GUEST_CSUM))
		q |= 1u << PRM_VIRTQ_FEAT_GUEST_CSUM;
	if (f & (1ull << F_HOST_TSO4))
		q |= 1u << PRM_VIRTQ_FEAT_HOST_TSO4;
	if (f & (1ull << F_HOST_TSO6))
		q |= 1u << PRM_VIRTQ_FEAT_HOST_TSO6;
	return q;
}

static int
plan_ring(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem, uint16_t i, struct vq_plan *p)
{
	struct mlx5_lm_virtq *vq = &dev->vq[i];
	struct rte_vhost_vring vr;
	uint16_t last_avail, last_used;

	if (rte_vhost_get_vhost_vring(dev->vid, i, &vr) < 0 ||
	    rte_vhost_get_vring_base(dev->vid, i, &last_avail, &last_used) < 0) {
		VQ_LOG(ERR, vq, "vhost has no state for this ring");
		return -EINVAL;
	}
	memset(p, 0, sizeof(*p));
	p->vq = vq;
	p->size = vr.size;
	p->cfg.type = dev->features & (1ull << F_RING_PACKED) ? PRM_VIRTQ_TYPE_PACKED :
		PRM_VIRTQ_TYPE_SPLIT;
	p->cfg.version_1 = !!(dev->features & (1ull << F_VERSION_1));
	p->cfg.features = queue_features(dev->features);
	p->cfg.desc = hva_to_gpa(mem, vr.desc);
	p->cfg.avail = hva_to_gpa(mem, vr.avail);
	p->cfg.used = hva_to_gpa(mem, vr.used);
	p->cfg.hw_available_index = last_avail;
	p->cfg.hw_used_index = last_used;
	/* cfg.mkey: set once the memory is registered (plan_finish). */
	p->cfg.event_mode = PRM_VIRTQ_EVENT_MODE_QP;
	/*
	 * Virtio 1.1 alignment: descriptors 16 bytes; split avail 2 and used 4;
	 * packed event suppression areas 4.
	 */
	if (p->cfg.desc != GPA_NONE && p->cfg.avail != GPA_NONE && p->cfg.used != GPA_NONE &&
	    (p->cfg.desc % 16 || p->cfg.used % 4 ||
	     p->cfg.avail % (p->cfg.type == PRM_VIRTQ_TYPE_PACKED ? 4 : 2))) {
		VQ_LOG(ERR, vq, "ring addresses (desc 0x%" PRIx64 ", avail 0x%" PRIx64 ", used 0x%"
		       PRIx64 ") are misaligned", p->cfg.desc, p->cfg.avail, p->cfg.used);
		return -EINVAL;
	}
	if (vr.size == 0 || (vr.size & (vr.size - 1)) || p->cfg.desc == GPA_NONE ||
	    p->cfg.avail == GPA_NONE || p->cfg.used == GPA_NONE) {
		VQ_LOG(ERR, vq, "ring size %u or addresses (desc %p, avail %p, used %p) are not "
		       "usable: outside guest memory?", vr.size, (void *)vr.desc,
		       (void *)vr.avail, (void *)vr.used);
		return -EINVAL;
	}
	vq->kickfd = vr.kickfd;
	vq->callfd = vr.callfd;
	p->ready = 1;
	return 0;
}

/* What a plan needs from the device itself: its registration, its queue objects. */
static void
plan_finish(struct mlx5_lm_dev *dev, struct vq_plan *p)
{
	struct mlx5_lm_virtq *vq = p->vq;

	p->cfg.mkey = mlx5_lm_mr_mkey(dev->mr);
	/* queue_size has no modify bit: a different size means a new object. */
	p->recreate = vq->obj == NULL || vq->size != p->size || vq->hw_state == PRM_VIRTQ_STATE_ERR;
}

static int
task_configure(void *arg)
{
	struct vq_plan *p = arg;
	struct mlx5_lm_virtq *vq = p->vq;

	if (p->recreate) {
		if (vq->obj != NULL) {
			mlx5_lm_virtq_destroy(vq);
			if (vq->obj != NULL)
				return -EBUSY;
		}
		if (!mlx5_lm_can_modify_blank(vq->dev)) {
			/* No MODIFY of the configuration on this device: create it whole. */
			if (mlx5_lm_virtq_create(vq, p->size, &p->cfg, p->ready) < 0)
				return -EIO;
			vq->started = 1;
			return 0;
		}
		/* Created blank (for its event QP number), then configured like the others. */
		if (mlx5_lm_virtq_create(vq, p->size, NULL, 0) < 0)
			return -EIO;
	}
	p->cfg.event_qpn = vq->cur.event_qpn;
	if (mlx5_lm_virtq_modify(vq, &p->cfg, p->ready) < 0)
		return -EIO;
	vq->started = 1;
	return 0;
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

	if (vq->obj != NULL && !vq->used && vq->size == dev->args.queue_size)
		return 0;
	if (vq->obj != NULL) {
		mlx5_lm_virtq_destroy(vq);
		if (vq->obj != NULL)
			return -EBUSY;
	}
	/* Also a queue whose re-creation failed earlier: pre-created again. */
	return mlx5_lm_virtq_create(vq, dev->args.queue_size, NULL, 0);
}

/* Re-creating the only RX queue needs the steering rebuilt around it. */
static int
prepare_recreate(struct mlx5_lm_dev *dev, struct vq_plan *plans, uint16_t n, int *rebuild)
{
	uint16_t i;

	*rebuild = 0;
	for (i = 0; i < n; i++) {
		struct mlx5_lm_virtq *vq = plans[i].vq;

		if (!plans[i].recreate || vq->obj == NULL || vq->index % 2)
			continue;
		if (mlx5_lm_steer_forget(dev, devx_obj_id(vq->obj)) == -EBUSY)
			*rebuild = 1;
	}
	if (*rebuild)
		mlx5_lm_steer_destroy(dev);
	return 0;
}

/* Every used queue back to blank, steering rebuilt around them. */
static void
restore_blank(struct mlx5_lm_dev *dev, int background)
{
	mlx5_lm_steer_destroy(dev);
	if (for_each_vq_bg(dev, task_restore, 1, background) < 0)
		DRV_LOG(ERR, dev, "some queues could not be put back to blank");
	if (mlx5_lm_steer_create(dev) < 0)
		DRV_LOG(ERR, dev, "cannot rebuild the receive steering");
}

void
mlx5_lm_wait_restored(struct mlx5_lm_dev *dev)
{
	if (dev->restoring) {
		/* Needed now: a deferred restore starts at once. */
		dev->restore_now = 1;
		pthread_cond_broadcast(&dev->restore_cv);
	}
	while (dev->restoring)
		pthread_cond_wait(&dev->restored, &dev->lock);
}

/*
 * vhost-user PROTOCOL_F_HOST_NOTIFIER is offered only where the doorbell
 * page can be mapped (get_protocol_features). Once the queues are RDY,
 * hand it to the front end, which maps it into the guest: kicks then reach
 * the device without our relay. If the front end declines, or did not
 * negotiate the feature, the relay keeps serving the kickfds.
 */
static void
host_notifiers_on(struct mlx5_lm_dev *dev, int vid)
{
	uint64_t pf = 0, off, size;
	int fd, ret;

	if (devx_db_mmap_info(dev->db, &fd, &off, &size) < 0 ||
	    rte_vhost_get_negotiated_protocol_features(vid, &pf) < 0 ||
	    !(pf & (1ull << PF_HOST_NOTIFIER)))
		return;
	ret = rte_vhost_host_notifier_ctrl(vid, RTE_VHOST_QUEUE_ALL, true);
	if (ret != 0)
		DRV_LOG(WARNING, dev, "front end did not take the host notifiers (%d): kicks go "
			"through the relay", ret);
	else
		DRV_LOG(INFO, dev, "host notifiers mapped: the guest rings the doorbell itself");
}

/* The queues moved to dev->mr: the registration they used before is garbage. */
static void
release_prev_mr(struct mlx5_lm_dev *dev)
{
	mlx5_lm_mr_release(dev->prev_mr);
	dev->prev_mr = NULL;
}

int
mlx5_lm_owner(struct mlx5_lm_dev *dev, int vid, const char *what)
{
	if (dev->vid == vid)
		return 0;
	if (dev->vid < 0) {
		/* Stored atomically: the host-notifier callbacks read it without the lock. */
		__atomic_store_n(&dev->vid, vid, __ATOMIC_RELEASE);
		DRV_LOG(INFO, dev, "vhost device %d owns the device", vid);
		return 0;
	}
	DRV_LOG(ERR, dev, "%s from vhost device %d refused: the device is owned by vhost "
		"device %d (one front end per device)", what, vid, dev->vid);
	return -EBUSY;
}

/* ---- configuration at DRIVER_OK, in the device's own worker --------------- */

/*
 * What dev_conf read from vhost on vhost's thread, for the worker: vhost's
 * state of a device is not to be read from another thread while vhost may
 * change it, and no command is needed to read it.
 */
struct mlx5_lm_conf_job {
	int vid;
	uint16_t nr;                         /* rings the front end set up */
	uint16_t np;                         /* of which enabled: planned */
	/*
	 * VHOST_F_LOG_ALL at DRIVER_OK (a guest resetting its NIC while it
	 * migrates): vhost's log area, read on vhost's thread. Queues log
	 * before they run.
	 */
	int logging;
	uint64_t log_base, log_size;
	uint32_t nregions;
	struct mlx5_lm_mem_region regions[MAX_REGIONS];
	struct vq_plan plans[MLX5_LM_MAX_VIRTQS];
};

/* Under state_lock: what rte_pmd_mlx5_lm_get_state() reports. */
static void
set_state(struct mlx5_lm_dev *dev, int state, int err, const char *why)
{
	pthread_mutex_lock(&dev->state_lock);
	dev->state = state;
	if (state == RTE_PMD_MLX5_LM_STATE_FAILED) {
		dev->last_err = err;
		snprintf(dev->last_err_msg, sizeof(dev->last_err_msg), "%s", why);
		dev->conf_failures++;
	}
	pthread_mutex_unlock(&dev->state_lock);
}

void
mlx5_lm_wait_configured(struct mlx5_lm_dev *dev)
{
	dev->conf_waiters++;
	while (dev->conf_busy)
		pthread_cond_wait(&dev->conf_cv, &dev->lock);
	dev->conf_waiters--;
}

static int
task_ready(void *arg)
{
	struct vq_plan *p = arg;

	return mlx5_lm_virtq_set_state(p->vq, PRM_VIRTQ_STATE_RDY);
}

/* The planned queues held back until they log: RDY now, in parallel. */
static int
set_ready_later(struct mlx5_lm_dev *dev, struct vq_plan *plans, uint16_t np)
{
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret;

	mlx5_lm_batch_init(&b, batch_limit(dev));
	for (i = 0; i < np; i++)
		if (plans[i].ready_later)
			mlx5_lm_batch_submit(&b, task_ready, &plans[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	return ret;
}

/*
 * The configuration itself, dev->lock held: memory, then per queue one
 * MODIFY (or a re-creation) in parallel, steering, notifications. On
 * failure nothing is left half-configured. *why names the failed step.
 */
static int
conf_run(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *job, const char **why)
{
	struct vq_plan *plans = job->plans;
	struct mlx5_lm_batch b;
	uint16_t nr = job->nr, np = job->np, i;
	double t0 = mlx5_lm_now_ms(), t1;
	int ret, rebuild = 0;

	*why = "guest memory registration failed";
	ret = register_memory(dev, job->regions, job->nregions);
	if (ret < 0)
		goto err_mem;
	t1 = mlx5_lm_now_ms();
	dev->last_conf_mr_ms = t1 - t0;
	for (i = 0; i < np; i++) {
		plan_finish(dev, &plans[i]);
		/*
		 * With the log on, no queue runs before it logs: configured
		 * without RDY, the dirty bitmap set, then RDY (three MODIFYs
		 * instead of one, on a path a migrating guest's NIC reset takes).
		 */
		if (job->logging) {
			plans[i].ready_later = plans[i].ready;
			plans[i].ready = 0;
		}
	}
	*why = "queue configuration failed";
	prepare_recreate(dev, plans, np, &rebuild);
	mlx5_lm_batch_init(&b, batch_limit(dev));
	for (i = 0; i < np; i++)
		mlx5_lm_batch_submit(&b, task_configure, &plans[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	if (ret == 0 && (rebuild || dev->steer == NULL)) {
		*why = "receive steering creation failed";
		ret = mlx5_lm_steer_create(dev);
	}
	if (ret < 0)
		goto err_queues;
	for (i = 0; i < nr; i++) {
		dev->vq[i].configured = 1;
		dev->vq[i].recoveries = 0;
	}
	if (job->logging) {
		*why = "dirty-page logging could not start";
		ret = mlx5_lm_log_start(dev, job->log_base, job->log_size);
		if (ret < 0)
			goto err_queues;
		*why = "queue configuration failed";
		ret = set_ready_later(dev, plans, np);
		if (ret < 0)
			goto err_queues;
	}
	*why = "receive steering update failed";
	ret = mlx5_lm_steer_update(dev);
	if (ret < 0)
		goto err_queues;
	/*
	 * Kicks the guest issued while the queue was being configured went to
	 * its kickfd (or to a doorbell of a queue not yet RDY): adding the ring
	 * rings its doorbell once, now that it is RDY, which makes the device
	 * read the avail index and covers them all.
	 */
	for (i = 0; i < np; i++)
		mlx5_lm_notify_add_ring(dev, plans[i].vq);
	/* Queues now use the new registration: the previous one can go. */
	release_prev_mr(dev);
	dev->running = 1;
	dev->last_conf_vq_ms = mlx5_lm_now_ms() - t1;
	dev->last_conf_ms = mlx5_lm_now_ms() - t0;
	__atomic_add_fetch(&dev->conf_count, 1, __ATOMIC_RELAXED);
	DRV_LOG(INFO, dev, "DRIVER_OK: %u rings (%s) configured in %.1f ms (memory %.1f ms, "
		"queues %.1f ms)", np, dev->features & (1ull << F_RING_PACKED) ? "packed" : "split",
		dev->last_conf_ms, dev->last_conf_mr_ms, dev->last_conf_vq_ms);
	return 0;
err_queues:
	/*
	 * No half-configured device: every queue goes back to blank and the new
	 * registration is released, so that the next DRIVER_OK starts clean.
	 */
	for (i = 0; i < nr; i++) {
		dev->vq[i].configured = 0;
		dev->vq[i].started = 0;
	}
	/* Not running: the log registration goes, the queues are reset below. */
	mlx5_lm_log_stop(dev);
	if (dev->args.precreate) {
		restore_blank(dev, 0);
	} else {
		mlx5_lm_steer_destroy(dev);
		for_each_vq(dev, task_destroy, 0);
	}
	if (dev->prev_mr != NULL) {
		/* The registration made for this attempt goes; the older one stays. */
		mlx5_lm_mr_release(dev->mr);
		dev->mr = dev->prev_mr;
		dev->prev_mr = NULL;
	} else {
		/* Every queue is blank again: nothing uses the registration. */
		mlx5_lm_mr_release(dev->mr);
		dev->mr = NULL;
	}
err_mem:
	return ret < 0 ? ret : -EIO;
}

static void *
conf_worker(void *arg)
{
	struct mlx5_lm_dev *dev = arg;

	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct mlx5_lm_conf_job *job;
		const char *why = "";
		int ret;

		while (!dev->conf_stop && (dev->conf_job == NULL || dev->conf_hold))
			pthread_cond_wait(&dev->conf_cv, &dev->lock);
		job = dev->conf_job;
		if (job == NULL)
			break;
		/* The previous stop's restore first; this device's own, not held back by us. */
		mlx5_lm_wait_restored(dev);
		mlx5_lm_fg_enter();
		ret = conf_run(dev, job, &why);
		mlx5_lm_fg_exit();
		if (ret < 0) {
			DRV_LOG(ERR, dev, "DRIVER_OK failed (%s: %d): the device is not running, "
				"every queue back to blank", why, ret);
			set_state(dev, RTE_PMD_MLX5_LM_STATE_FAILED, ret, why);
		} else {
			set_state(dev, RTE_PMD_MLX5_LM_STATE_RUNNING, 0, NULL);
		}
		dev->conf_ret = ret;
		dev->conf_job = NULL;
		dev->conf_busy = 0;
		pthread_cond_broadcast(&dev->conf_cv);
		free(job);
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

int
mlx5_lm_conf_worker_start(struct mlx5_lm_dev *dev)
{
	pthread_cond_init(&dev->conf_cv, NULL);
	pthread_mutex_init(&dev->state_lock, NULL);
	dev->state = RTE_PMD_MLX5_LM_STATE_STOPPED;
	dev->conf_stop = 0;
	if (mlx5_lm_thread_create(&dev->conf_thread, "mlx5-lm-conf", NULL, conf_worker,
				  dev) != 0) {
		DRV_LOG(ERR, dev, "cannot start the configuration thread");
		pthread_mutex_destroy(&dev->state_lock);
		pthread_cond_destroy(&dev->conf_cv);
		return -EAGAIN;
	}
	dev->conf_thread_up = 1;
	return 0;
}

void
mlx5_lm_conf_worker_stop(struct mlx5_lm_dev *dev)
{
	if (!dev->conf_thread_up)
		return;
	pthread_mutex_lock(&dev->lock);
	/* A configuration queued or running finishes first (removal waits for it). */
	dev->conf_hold = 0;
	pthread_cond_broadcast(&dev->conf_cv);
	mlx5_lm_wait_configured(dev);
	dev->conf_stop = 1;
	pthread_cond_broadcast(&dev->conf_cv);
	pthread_mutex_unlock(&dev->lock);
	pthread_join(dev->conf_thread, NULL);
	dev->conf_thread_up = 0;
	pthread_mutex_destroy(&dev->state_lock);
	pthread_cond_destroy(&dev->conf_cv);
}

/*
 * vhost's dev_conf, after it acknowledged DRIVER_OK: read what the
 * configuration needs from vhost, queue it for the device's worker and
 * return, so that vhost's one thread goes on with the next device and the
 * next VM. An error found here (vhost's state unusable) is returned to
 * vhost, which calls dev_conf again after the front end's next message.
 */
int
mlx5_lm_dev_conf(int vid)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	struct rte_vhost_memory *mem = NULL;
	struct mlx5_lm_conf_job *job = NULL;
	const char *why = "";
	int ret, notifiers = 0;
	uint16_t i;

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	ret = mlx5_lm_owner(dev, vid, "DRIVER_OK");
	if (ret < 0)
		goto out;
	if (dev->running || dev->conf_busy) {
		DRV_LOG(ERR, dev, "DRIVER_OK while already %s: ignored",
			dev->running ? "running" : "being configured");
		ret = 0;
		goto out;
	}
	job = calloc(1, sizeof(*job));
	if (job == NULL) {
		why = "out of memory";
		ret = -ENOMEM;
		goto err;
	}
	job->vid = vid;
	if (rte_vhost_get_negotiated_features(vid, &dev->features) < 0 ||
	    rte_vhost_get_mem_table(vid, &mem) < 0) {
		DRV_LOG(ERR, dev, "vhost device %d has no features or memory table", vid);
		why = "vhost has no features or memory table";
		ret = -EINVAL;
		goto err;
	}
	job->nr = rte_vhost_get_vring_num(vid);
	if (job->nr > dev->nr_vq) {
		DRV_LOG(ERR, dev, "front end set up %u rings, the device has %u", job->nr,
			dev->nr_vq);
		why = "more rings than the device has";
		ret = -EINVAL;
		goto err;
	}
	why = "memory table refused";
	ret = mem_regions(dev, mem, job->regions, &job->nregions);
	if (ret < 0)
		goto err;
	if (dev->features & (1ull << F_LOG_ALL)) {
		why = "logging asked without a log area";
		ret = mlx5_lm_log_area(dev, vid, &job->log_base, &job->log_size);
		if (ret < 0)
			goto err;
		job->logging = 1;
	}
	/*
	 * Rings the guest has not enabled (SET_VRING_ENABLE, reported through
	 * set_vring_state) are configured at their enable, with one MODIFY:
	 * never made RDY before, and never modified twice.
	 */
	why = "a ring is not usable";
	for (i = 0; i < job->nr; i++) {
		if (!dev->vq[i].enabled) {
			struct rte_vhost_vring vr;

			/* vhost leaves a ring it cannot translate not ready: say why. */
			if (rte_vhost_get_vhost_vring(vid, i, &vr) == 0 && vr.desc == NULL)
				VQ_LOG(ERR, &dev->vq[i], "not started: its ring addresses are not "
				       "in guest memory");
			else
				VQ_LOG(INFO, &dev->vq[i], "not enabled by the guest yet");
			continue;
		}
		ret = plan_ring(dev, mem, i, &job->plans[job->np]);
		if (ret < 0)
			goto err;
		job->np++;
	}
	dev->conf_job = job;
	dev->conf_busy = 1;
	set_state(dev, RTE_PMD_MLX5_LM_STATE_CONFIGURING, 0, NULL);
	pthread_cond_broadcast(&dev->conf_cv);
	DRV_LOG(DEBUG, dev, "DRIVER_OK: configuration of %u rings handed to the device's worker",
		job->np);
	ret = 0;
	notifiers = 1;
	if (!dev->args.parallel || job->logging) {
		/*
		 * parallel=0 is the old driver, for comparison: vhost's thread
		 * waits for the configuration (the same job, run by the worker)
		 * and gets its result, so that it calls dev_conf again after a
		 * failure. So does a DRIVER_OK with the log on: vhost's next
		 * SET_LOG_BASE would unmap the log area the job registers,
		 * without a callback; the device waits for nothing meanwhile.
		 */
		mlx5_lm_wait_configured(dev);
		ret = dev->conf_ret;
		notifiers = ret == 0;
	}
	goto out;
err:
	DRV_LOG(ERR, dev, "DRIVER_OK failed (%s: %d)", why, ret);
	set_state(dev, RTE_PMD_MLX5_LM_STATE_FAILED, ret, why);
	free(job);
out:
	free(mem);
	pthread_mutex_unlock(&dev->lock);
	/*
	 * On vhost's thread, which alone may use the front end's channel
	 * (vhost closes it at a new SET_SLAVE_REQ_FD, with no callback), and
	 * without the lock: vhost asks the driver for the doorbell page
	 * (get_vfio_device_fd, get_notify_area) meanwhile. A kick the guest
	 * writes to the doorbell before its queue is RDY is covered by the
	 * doorbell each queue gets once RDY (mlx5_lm_notify_add_ring).
	 */
	if (notifiers)
		host_notifiers_on(dev, vid);
	return ret;
}

int
rte_pmd_mlx5_lm_get_state(const char *name, struct rte_pmd_mlx5_lm_state *st)
{
	struct mlx5_lm_dev *dev = st != NULL ? mlx5_lm_dev_get(name) : NULL;

	if (dev == NULL)
		return -ENODEV;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&dev->state_lock);
	st->state = dev->state;
	st->last_error = dev->last_err;
	snprintf(st->last_error_msg, sizeof(st->last_error_msg), "%s", dev->last_err_msg);
	st->conf_failures = dev->conf_failures;
	pthread_mutex_unlock(&dev->state_lock);
	/* conf_count: written under dev->lock by the worker; a torn read is impossible (64-bit). */
	st->conf_count = __atomic_load_n(&dev->conf_count, __ATOMIC_RELAXED);
	mlx5_lm_dev_put(dev);
	return 0;
}

/* ---- stop: GET_VRING_BASE ------------------------------------------------ */

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

	if ((dev->features & (1ull << F_RING_PACKED)) ||
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
		if (ret < 0)
			return ret;
		/* Only a queue this stop suspended: one in ERR is queried for its state. */
		suspended = 1;
	}
	if (vq->hw_state == PRM_VIRTQ_STATE_INIT) {
		/* Never started: vhost's own base is right. */
		return 0;
	}
	/* The front end is gone (dev_cleanup): stopped, nothing to hand over. */
	if (!dev->stop_handover)
		return 0;
	if (suspended && idle_split_ring(vq, &used)) {
		avail = used;
		__atomic_add_fetch(&dev->stop_queries_skipped, 1, __ATOMIC_RELAXED);
		goto set_base;
	}
	ret = mlx5_lm_virtq_query(vq, &state, NULL, &avail, &used);
	if (ret < 0)
		return ret;
	if (state == PRM_VIRTQ_STATE_ERR) {
		/* The device completed up to used; let the guest see the rest again. */
		avail = used;
	}
set_base:
	if (rte_vhost_set_vring_base(dev->vid, vq->index, avail, used) < 0)
		VQ_LOG(ERR, vq, "vhost refused vring base %u/%u", avail, used);
	if (dev->log_mr != NULL) {
		/*
		 * The device's last used-ring writes happened while logging: mark
		 * the whole ring for the destination (vhost logs relative to the
		 * ring's log address). Only with log_mr: the device pinned the
		 * whole log when it registered it, the proof that vhost's writes
		 * there cannot fault (a log fd shorter than declared fails that
		 * pin, issue 11).
		 */
		uint64_t len = dev->features & (1ull << F_RING_PACKED) ?
			(uint64_t)vq->size * 16 : 4 + (uint64_t)vq->size * 8 + 2;

		rte_vhost_log_used_vring(dev->vid, vq->index, 0, len);
	}
	return 0;
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
 * The restore is deferred like the registrations (mr_gc_ms after the
 * stop), so that it does not take the CPU and the workers of the devices
 * that stop and start meanwhile: a host drained for maintenance stops and
 * starts its VMs within a few tens of ms, and vhost's one thread serves
 * them all. Evacuate (8 VMs at once): the model's source-side work inside
 * the downtime window 121 -> 62 ms (the 8 dev_closes only); a trace with
 * the restore delayed: the 8 destinations' vhost-user messages took 13-14
 * ms instead of 20-27. A device needed sooner (DRIVER_OK, removal) starts
 * it at once.
 */
/* Returns 1 when the restore was asked for before its deadline (needed now). */
static int
restore_defer(struct mlx5_lm_dev *dev, double deadline_ms)
{
	int urgent;
	struct timespec ts;
	uint64_t ns;

	ns = (uint64_t)(deadline_ms * 1e6);
	ts.tv_sec = (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&dev->lock);
	while (!dev->restore_now && mlx5_lm_now_ms() < deadline_ms)
		if (pthread_cond_timedwait(&dev->restore_cv, &dev->lock, &ts) == ETIMEDOUT)
			break;
	urgent = dev->restore_now;
	/* From here queue objects change without the lock: statistics stay away. */
	dev->restore_swapping = 1;
	pthread_mutex_unlock(&dev->lock);
	return urgent;
}

/*
 * After dev_close, off vhost's thread and without dev->lock: with running
 * at 0 and restoring at 1, dev_conf and removal wait for us, recovery
 * stays away, statistics too once the deferral is over (restore_swapping:
 * until then the stopped queues' counters are read as usual), and
 * set_vring_state only records enables - so
 * vhost's GET_VRING_BASE and disable messages of every device go on while
 * queues are re-created, at background priority on the pool.
 */
static void *
restore_thread(void *arg)
{
	struct mlx5_lm_dev *dev = arg;
	int urgent;
	double t0;

	urgent = restore_defer(dev, dev->restore_deadline_ms);
	t0 = mlx5_lm_now_ms();

	if (urgent) {
		/*
		 * A DRIVER_OK (or a removal) waits for it: its start, not background
		 * work that yields to every other device's.
		 */
		mlx5_lm_fg_enter();
		restore_blank(dev, 0);
		mlx5_lm_fg_exit();
	} else {
		/* Its own commands (steering) yield to any device starting or stopping, too. */
		mlx5_lm_bg_thread(1);
		restore_blank(dev, 1);
		/* Never paused while holding the device lock. */
		mlx5_lm_bg_thread(0);
	}
	pthread_mutex_lock(&dev->lock);
	/* No queue references the registrations any more: deferred deletion, or reuse. */
	mlx5_lm_log_stop(dev);
	mlx5_lm_mr_release(dev->mr);
	dev->mr = NULL;
	dev->restoring = 0;
	dev->restore_swapping = 0;
	pthread_cond_broadcast(&dev->restored);
	DRV_LOG(DEBUG, dev, "queues back to blank in %.1f ms", mlx5_lm_now_ms() - t0);
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

/*
 * Stop a running device, dev->lock held: every ready queue suspended (and,
 * with handover, queried and its indices handed to vhost, its used ring
 * logged), the relay off every ring, and the queues put back to blank
 * after the caller's return, in the background.
 */
static void
stop_locked(struct mlx5_lm_dev *dev, int handover)
{
	struct stop_group groups[MAX_STOP_TASKS];
	double t0 = mlx5_lm_now_ms();
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret;

	/* Background work of every device waits until this stop has its reply. */
	mlx5_lm_fg_enter();
	for (i = 0; i < dev->nr_vq; i++)
		if (dev->vq[i].configured)
			mlx5_lm_notify_del_ring(dev, &dev->vq[i]);
	/* Only what vhost's GET_VRING_BASE reply needs happens before we return. */
	dev->stop_queries_skipped = 0;
	dev->stop_handover = (uint8_t)handover;
	mlx5_lm_batch_init(&b, batch_limit(dev));
	if (dev->args.parallel && dev->nr_vq / 2 >= dev->args.workers &&
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
	if (ret < 0)
		DRV_LOG(ERR, dev, "suspending queues failed: some vring bases may be stale");
	for (i = 0; i < dev->nr_vq; i++) {
		dev->vq[i].configured = 0;
		dev->vq[i].started = 0;
	}
	dev->running = 0;
	dev->last_close_ms = mlx5_lm_now_ms() - t0;
	mlx5_lm_fg_exit();
	set_state(dev, RTE_PMD_MLX5_LM_STATE_STOPPED, 0, NULL);
	if (dev->args.precreate) {
		/* Blank queues for the next DRIVER_OK, after vhost has its reply. */
		pthread_t th;
		pthread_attr_t attr;

		dev->restoring = 1;
		dev->restore_now = 0;
		dev->restore_deadline_ms = mlx5_lm_now_ms() + dev->args.mr_gc_ms;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (mlx5_lm_thread_create(&th, "mlx5-lm-restore", &attr, restore_thread,
					  dev) != 0) {
			/* In vhost's thread: never deferred there. */
			dev->restore_now = 1;
			pthread_mutex_unlock(&dev->lock);
			restore_thread(dev);
			pthread_mutex_lock(&dev->lock);
		}
		pthread_attr_destroy(&attr);
	} else {
		/* Old behaviour, for comparison: everything is destroyed in the caller. */
		mlx5_lm_steer_destroy(dev);
		for_each_vq(dev, task_destroy, 0);
		mlx5_lm_log_stop(dev);
		mlx5_lm_mr_release(dev->mr);
		dev->mr = NULL;
	}
}

int
mlx5_lm_dev_close(int vid)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);

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
	stop_locked(dev, 1);
	DRV_LOG(INFO, dev, "stopped in %.1f ms (%u idle split rings needed no QUERY)",
		dev->last_close_ms, dev->stop_queries_skipped);
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
		"stopped in %.1f ms", dev->last_close_ms);
}

/* ---- queue enable / disable ---------------------------------------------- */

/* A ring enabled after DRIVER_OK: plan it now and send its one MODIFY (or re-create it). */
static int
start_late_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct rte_vhost_memory *mem = NULL;
	struct vq_plan plan;
	int ret, rebuild = 0;

	if (rte_vhost_get_mem_table(dev->vid, &mem) < 0)
		return -EINVAL;
	ret = plan_ring(dev, mem, vq->index, &plan);
	free(mem);
	if (ret < 0)
		return ret;
	plan_finish(dev, &plan);
	prepare_recreate(dev, &plan, 1, &rebuild);
	ret = task_configure(&plan);
	if (rebuild && mlx5_lm_steer_create(dev) < 0 && ret == 0)
		ret = -EIO;
	return ret;
}

/*
 * A suspended ring enabled again. SUSPEND -> RDY needs freeze_to_rdy_supported
 * (PRM); without it the queue is re-created from the indices it reached,
 * with the RQT kept off an RX queue meanwhile.
 */
static int
resume_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	int ret, rebuild = 0;

	if (mlx5_lm_can_resume(dev))
		return mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
	VQ_LOG(DEBUG, vq, "no freeze_to_rdy: re-creating the queue to resume it");
	if (vq->index % 2 == 0 && mlx5_lm_steer_forget(dev, devx_obj_id(vq->obj)) == -EBUSY) {
		mlx5_lm_steer_destroy(dev);
		rebuild = 1;
	}
	ret = mlx5_lm_virtq_recreate_suspended(vq, dev->log_mr != NULL ?
					       mlx5_lm_mr_mkey(dev->log_mr) : 0,
					       (uint32_t)dev->log_size, dev->log_mr != NULL, 1);
	if ((rebuild || dev->steer == NULL) && mlx5_lm_steer_create(dev) < 0 && ret == 0)
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

int
mlx5_lm_set_vring_state(int vid, int vring, int state)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
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
		if (!vq->started)
			ret = start_late_ring(dev, vq);
		else if (vq->hw_state != PRM_VIRTQ_STATE_RDY)
			ret = resume_ring(dev, vq);
		if (ret == 0)
			mlx5_lm_notify_add_ring(dev, vq);
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

/* ---- ERR recovery (called by the notification thread) -------------------- */

static int
task_recover(void *arg)
{
	struct mlx5_lm_virtq *vq = arg;
	struct mlx5_lm_dev *dev = vq->dev;
	struct mlx5_lm_vq_cfg cfg;
	uint16_t avail, used;
	uint8_t state, err;
	int ret;

	pthread_mutex_lock(&dev->lock);
	if (!dev->running || !vq->configured || vq->obj == NULL ||
	    mlx5_lm_virtq_query(vq, &state, &err, &avail, &used) < 0 ||
	    state != PRM_VIRTQ_STATE_ERR) {
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	vq->hw_state = PRM_VIRTQ_STATE_ERR;
	if (vq->recoveries >= MAX_RECOVERIES) {
		VQ_LOG(ERR, vq, "in ERR (error_type %u) after %u recoveries: left stopped", err,
		       vq->recoveries);
		mlx5_lm_steer_update(dev);
		pthread_mutex_unlock(&dev->lock);
		return -EIO;
	}
	vq->recoveries++;
	VQ_LOG(ERR, vq, "in ERR (error_type %u, avail %u used %u): re-creating it (recovery %u/%u)",
	       err, avail, used, vq->recoveries, MAX_RECOVERIES);
	cfg = vq->cur;
	/* Restart from what the device completed: the rest is processed again. */
	cfg.hw_available_index = used;
	cfg.hw_used_index = used;
	if (vq->index % 2 == 0 && mlx5_lm_steer_forget(dev, devx_obj_id(vq->obj)) == -EBUSY)
		mlx5_lm_steer_destroy(dev);
	mlx5_lm_virtq_destroy(vq);
	if (vq->obj != NULL) {
		ret = -EBUSY;
	} else if (!mlx5_lm_can_modify_blank(dev)) {
		/* No MODIFY of the configuration on this device: create it whole. */
		ret = mlx5_lm_virtq_create(vq, vq->size ? vq->size : dev->args.queue_size, &cfg,
					   vq->enabled);
	} else {
		ret = mlx5_lm_virtq_create(vq, vq->size ? vq->size : dev->args.queue_size, NULL, 0);
		if (ret == 0) {
			cfg.event_qpn = vq->cur.event_qpn;
			ret = mlx5_lm_virtq_modify(vq, &cfg, vq->enabled);
		}
	}
	if (dev->steer == NULL)
		mlx5_lm_steer_create(dev);
	mlx5_lm_steer_update(dev);
	if (ret == 0 && vq->kickfd >= 0)
		mlx5_lm_vq_doorbell(dev, vq->index);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void
mlx5_lm_recover_queue(struct mlx5_lm_dev *dev, uint16_t index)
{
	if (index >= dev->nr_vq)
		return;
	/*
	 * In the device's notification thread: a pool worker blocked on
	 * dev->lock could starve a small pool that dev_close is waiting on.
	 */
	task_recover(&dev->vq[index]);
}
