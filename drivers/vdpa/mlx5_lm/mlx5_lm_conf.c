/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DRIVER_OK. vhost's dev_conf runs on vhost's one thread after it has
 * acknowledged the status: it reads what the configuration needs from
 * vhost (features, the memory table and its files, every enabled ring),
 * hands that job to the device's own worker (mlx5_lm_worker.c) and
 * returns, so that vhost goes on with the next device and the next VM.
 * The worker registers guest memory, then per queue sends one MODIFY
 * carrying the fields that changed plus STATE=RDY, in parallel; a queue
 * whose size differs is re-created, only that one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_vhost.h>

#include "mlx5_lm_dpdk.h"
#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_prereg.h"

/* vdpa_driver.h's "every queue" for rte_vhost_host_notifier_ctrl (not installed by Debian). */
#ifndef RTE_VHOST_QUEUE_ALL
#define RTE_VHOST_QUEUE_ALL UINT16_MAX
#endif

/* ---- memory -------------------------------------------------------------- */

/*
 * The memory table as the registration needs it, read from vhost's copy
 * on vhost's thread (fstat of the region fds: no device command).
 */
int
mlx5_lm_mem_regions(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem,
		    struct mlx5_lm_mem_region *regions, uint32_t *nregions)
{
	uint32_t i, n = 0;

	if (mem->nregions > MLX5_LM_MAX_REGIONS) {
		DRV_LOG(ERR, dev, "memory table has %u regions, vhost-user allows 8", mem->nregions);
		return -EINVAL;
	}
	memset(regions, 0, sizeof(*regions) * MLX5_LM_MAX_REGIONS);
	for (i = 0; i < mem->nregions; i++) {
		const struct rte_vhost_mem_region *r = &mem->regions[i];
		struct stat st;

		regions[n].gpa = r->guest_phys_addr;
		regions[n].size = r->size;
		regions[n].hva = r->host_user_addr;
		mlx5_lm_file_fs(r->fd, &regions[n].page_size, &regions[n].fs_writeback);
		regions[n].fd = r->fd;
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

/*
 * *prep: the job's reference on a preparation (or NULL), consumed here by
 * a new registration only. A registration kept or taken back leaves it in
 * *prep for the worker to drop once it let go of dev->lock: it may be the
 * last one (the application prepared the device again meanwhile), whose
 * chunks the garbage thread deregisters (mlx5_lm_prereg_put).
 */
static int
register_memory(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions, uint32_t n,
		struct mlx5_lm_prereg **prep, const uint8_t *prep_ok)
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
		ret = mlx5_lm_mr_create_prepared(dev, regions, n, *prep, prep_ok, &mr);
		*prep = NULL;
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

/* ---- planning, on vhost's thread ---------------------------------------- */

static uint16_t
queue_features(uint64_t f)
{
	uint16_t q = 0;

	/* The 12-byte header, and the offloads the device performs per queue. */
	if (f & (1ull << VIRTIO_NET_F_MRG_RXBUF))
		q |= 1u << PRM_VIRTQ_FEAT_MRG_RXBUF;
	if (f & (1ull << VIRTIO_NET_F_CSUM))
		q |= 1u << PRM_VIRTQ_FEAT_CSUM;
	if (f & (1ull << VIRTIO_NET_F_GUEST_CSUM))
		q |= 1u << PRM_VIRTQ_FEAT_GUEST_CSUM;
	if (f & (1ull << VIRTIO_NET_F_HOST_TSO4))
		q |= 1u << PRM_VIRTQ_FEAT_HOST_TSO4;
	if (f & (1ull << VIRTIO_NET_F_HOST_TSO6))
		q |= 1u << PRM_VIRTQ_FEAT_HOST_TSO6;
	return q;
}

int
mlx5_lm_plan_ring(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem, uint16_t i, struct mlx5_lm_vq_plan *p)
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
	p->cfg.type = dev->features & (1ull << VIRTIO_F_RING_PACKED) ? PRM_VIRTQ_TYPE_PACKED :
		PRM_VIRTQ_TYPE_SPLIT;
	p->cfg.version_1 = !!(dev->features & (1ull << VIRTIO_F_VERSION_1));
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
void
mlx5_lm_plan_finish(struct mlx5_lm_dev *dev, struct mlx5_lm_vq_plan *p)
{
	struct mlx5_lm_virtq *vq = p->vq;

	p->cfg.mkey = mlx5_lm_mr_mkey(dev->mr);
	/* queue_size has no modify bit: a different size means a new object. */
	p->recreate = vq->obj == NULL || vq->size != p->size || vq->hw_state == PRM_VIRTQ_STATE_ERR;
}

int
mlx5_lm_task_configure(void *arg)
{
	struct mlx5_lm_vq_plan *p = arg;
	struct mlx5_lm_virtq *vq = p->vq;
	int ret;

	if (p->recreate) {
		ret = mlx5_lm_virtq_recreate(vq, p->size, &p->cfg, p->ready);
	} else {
		p->cfg.event_qpn = vq->cur.event_qpn;
		ret = mlx5_lm_virtq_modify(vq, &p->cfg, p->ready);
	}
	if (ret < 0)
		return ret == -EBUSY ? ret : -EIO;
	vq->started = 1;
	vq->fe.desc = p->cfg.desc;
	vq->fe.avail = p->cfg.avail;
	vq->fe.used = p->cfg.used;
	vq->fe.size = p->size;
	vq->fe.avail_idx = p->cfg.hw_available_index;
	vq->fe.used_idx = p->cfg.hw_used_index;
	return 0;
}

bool
mlx5_lm_plan_moves_ring(const struct mlx5_lm_vq_plan *p)
{
	const struct mlx5_lm_virtq *vq = p->vq;

	return p->size != vq->fe.size || p->cfg.desc != vq->fe.desc ||
	       p->cfg.avail != vq->fe.avail || p->cfg.used != vq->fe.used ||
	       p->cfg.hw_available_index != vq->fe.avail_idx ||
	       p->cfg.hw_used_index != vq->fe.used_idx;
}

void
mlx5_lm_plans_detach(struct mlx5_lm_dev *dev, struct mlx5_lm_vq_plan *plans, uint16_t n,
		     int *rebuild)
{
	uint32_t ids[MLX5_LM_MAX_VIRTQS / 2];
	uint32_t nids = 0;
	uint16_t i;

	*rebuild = 0;
	/* Together: the RQT is never parked on a queue about to be re-created too. */
	for (i = 0; i < n; i++) {
		const struct mlx5_lm_virtq *vq = plans[i].vq;

		if (plans[i].recreate && vq->index % 2 == 0 && vq->obj != NULL &&
		    nids < RTE_DIM(ids))
			ids[nids++] = devx_obj_id(vq->obj);
	}
	mlx5_lm_steer_detach_ids(dev, ids, nids, rebuild);
}

/*
 * vhost-user PROTOCOL_F_HOST_NOTIFIER is offered only where the doorbell
 * page can be mapped (get_protocol_features). dev_conf hands it to the
 * front end, which maps it into the guest: kicks then reach the device
 * without our relay. If the front end declines, or did not negotiate the
 * feature, the relay keeps serving the kickfds.
 */
static void
host_notifiers_on(struct mlx5_lm_dev *dev, int vid)
{
	uint64_t pf = 0, off, size;
	int fd, ret;

	if (devx_db_mmap_info(dev->db, &fd, &off, &size) < 0 ||
	    rte_vhost_get_negotiated_protocol_features(vid, &pf) < 0 ||
	    !(pf & (1ull << VHOST_USER_PROTOCOL_F_HOST_NOTIFIER)))
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

/* ---- the configuration, on the device's worker ---------------------------- */

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
	/* The files registered at the first kick changed since: registered again. */
	int drop_ahead;
	uint32_t nregions;
	struct mlx5_lm_mem_region regions[MLX5_LM_MAX_REGIONS];
	/* Memory prepared ahead (a reference) and the regions it serves. */
	struct mlx5_lm_prereg *prep;
	uint8_t prep_ok[MLX5_LM_MAX_REGIONS];
	struct mlx5_lm_vq_plan plans[MLX5_LM_MAX_VIRTQS];
	/*
	 * Each plan's kick and call fds, duplicated on vhost's thread: the
	 * worker hands these to the relay, never vhost's fd numbers, which
	 * vhost may close meanwhile (a GET_VRING_BASE of a device the
	 * application's new_device refused calls no dev_close first) and the
	 * process reuse for another front end's fd. -1: none, or handed over.
	 */
	int kick[MLX5_LM_MAX_VIRTQS];
	int call[MLX5_LM_MAX_VIRTQS];
};

static struct mlx5_lm_conf_job *
job_alloc(void)
{
	struct mlx5_lm_conf_job *job = calloc(1, sizeof(*job));
	uint16_t i;

	if (job == NULL)
		return NULL;
	for (i = 0; i < MLX5_LM_MAX_VIRTQS; i++)
		job->kick[i] = job->call[i] = -1;
	return job;
}

/* The duplicates not handed to the relay are closed with the job. */
static void
job_free(struct mlx5_lm_conf_job *job)
{
	uint16_t i;

	if (job == NULL)
		return;
	for (i = 0; i < MLX5_LM_MAX_VIRTQS; i++) {
		if (job->kick[i] >= 0)
			close(job->kick[i]);
		if (job->call[i] >= 0)
			close(job->call[i]);
	}
	free(job);
}

/* On vhost's thread: our own duplicates of every planned ring's fds. */
static int
job_dup_fds(struct mlx5_lm_conf_job *job)
{
	uint16_t i;
	int ret = 0;

	for (i = 0; i < job->np && ret == 0; i++)
		ret = mlx5_lm_notify_dup_ring(job->plans[i].vq, &job->kick[i], &job->call[i]);
	return ret;
}

static int
task_ready(void *arg)
{
	struct mlx5_lm_vq_plan *p = arg;

	return mlx5_lm_virtq_set_state(p->vq, PRM_VIRTQ_STATE_RDY);
}

/* The planned queues held back until they log: RDY now, in parallel. */
static int
set_ready_later(struct mlx5_lm_dev *dev, struct mlx5_lm_vq_plan *plans, uint16_t np)
{
	struct mlx5_lm_batch b;
	uint16_t i;
	int ret, sub = 0;

	mlx5_lm_batch_init(&b, mlx5_lm_batch_limit(dev));
	for (i = 0; i < np && sub == 0; i++)
		if (plans[i].ready_later)
			sub = mlx5_lm_batch_submit(&b, task_ready, &plans[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	/* A queue whose task could not be queued (-ENOMEM) stays out of RDY: not configured. */
	return ret != 0 ? ret : sub;
}

/*
 * The configuration itself, dev->lock held: memory, then per queue one
 * MODIFY (or a re-creation) in parallel, steering, notifications. On
 * failure nothing is left half-configured. *why names the failed step.
 */
static int
conf_run(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *job, const char **why)
{
	struct mlx5_lm_vq_plan *plans = job->plans;
	struct mlx5_lm_batch b;
	uint16_t nr = job->nr, np = job->np, i;
	double t0 = mlx5_lm_now_ms(), tm, t1;
	unsigned int ahead;
	int ret, rebuild = 0, sub = 0, creates = 0;

	/*
	 * Fields sent at the rings' kicks are in place (queue work: counted
	 * with the queues): the MODIFYs below carry the rest.
	 */
	mlx5_lm_preconf_end(dev, &ahead);
	if (job->drop_ahead && dev->mr != NULL) {
		/*
		 * Released now, never taken back, destroyed once no queue names
		 * it (the garbage thread checks): the MODIFYs below move every
		 * queue off it.
		 */
		dev->mr->stale = 1;
		mlx5_lm_mr_release(dev->mr);
		dev->mr = NULL;
	}
	tm = mlx5_lm_now_ms();
	*why = "guest memory registration failed";
	ret = register_memory(dev, job->regions, job->nregions, &job->prep, job->prep_ok);
	/* Whatever follows, the registration (if any) holds the preparation now. */
	mlx5_lm_prereg_settle(dev);
	if (ret < 0)
		goto err_mem;
	t1 = mlx5_lm_now_ms();
	dev->times.conf_mr_ms = t1 - tm;
	for (i = 0; i < np; i++) {
		mlx5_lm_plan_finish(dev, &plans[i]);
		/*
		 * With the log on, no queue runs before it logs: configured
		 * without RDY, the dirty bitmap set, then RDY (three MODIFYs
		 * instead of one, on a path a migrating guest's NIC reset takes).
		 */
		if (job->logging) {
			plans[i].ready_later = plans[i].ready;
			plans[i].ready = 0;
		}
		creates += plans[i].recreate;
	}
	/*
	 * Queues created now (another ring size, ERR, none pre-created) are
	 * sized from the umem parameters the device reports now, not at probe:
	 * one read for them all, on this path only when it creates.
	 */
	if (creates > 0)
		mlx5_lm_umem_params_read(dev, "DRIVER_OK re-creates queues");
	*why = "queue configuration failed";
	mlx5_lm_plans_detach(dev, plans, np, &rebuild);
	mlx5_lm_batch_init(&b, mlx5_lm_batch_limit(dev));
	for (i = 0; i < np && sub == 0; i++)
		sub = mlx5_lm_batch_submit(&b, mlx5_lm_task_configure, &plans[i]);
	ret = mlx5_lm_batch_wait(&b);
	mlx5_lm_batch_fini(&b);
	/*
	 * A queue whose task could not be queued (-ENOMEM) stays as it was
	 * (INIT): the configuration fails, once the tasks queued are done
	 * with the plans.
	 */
	if (ret == 0)
		ret = sub;
	if (ret == 0) {
		*why = "receive steering creation failed";
		ret = mlx5_lm_steer_reattach(dev, rebuild);
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
	*why = "the rings' kick and call fds could not be relayed";
	for (i = 0; i < np; i++) {
		int r = mlx5_lm_notify_take_ring(dev, plans[i].vq, job->kick[i], job->call[i]);

		job->kick[i] = job->call[i] = -1;
		if (r < 0 && ret == 0)
			ret = r;
	}
	/*
	 * A ring whose kicks cannot be watched (epoll refuses its kind of
	 * file: the vetting, when the application installs it, refuses those
	 * first) would run with nothing relayed while the front end is told
	 * it runs: the configuration fails, as for a queue the device refused.
	 */
	if (ret < 0) {
		mlx5_lm_notify_del_configured(dev);
		goto err_queues;
	}
	/* Queues now use the new registration: the previous one can go. */
	release_prev_mr(dev);
	dev->running = 1;
	dev->times.conf_vq_ms = mlx5_lm_now_ms() - t1 + (tm - t0);
	dev->times.mem_regions = job->nregions;
	dev->times.mem_bytes = 0;
	for (i = 0; i < job->nregions; i++)
		dev->times.mem_bytes += job->regions[i].size;
	dev->times.conf_ms = mlx5_lm_now_ms() - t0;
	__atomic_add_fetch(&dev->times.conf_count, 1, __ATOMIC_RELAXED);
	DRV_LOG(INFO, dev, "DRIVER_OK: %u rings (%s) configured in %.1f ms (memory %.1f ms, "
		"queues %.1f ms; %u rings' fields sent ahead, at their kicks)", np,
		dev->features & (1ull << VIRTIO_F_RING_PACKED) ? "packed" : "split",
		dev->times.conf_ms, dev->times.conf_mr_ms, dev->times.conf_vq_ms, ahead);
	return 0;
err_queues:
	/*
	 * No half-configured device: every queue goes back to blank and the
	 * registrations are released, so that the next DRIVER_OK starts clean.
	 */
	for (i = 0; i < nr; i++) {
		dev->vq[i].configured = 0;
		dev->vq[i].started = 0;
	}
	/* Not running: the log registration goes, the queues are reset below. */
	mlx5_lm_log_stop(dev);
	goto reset;
err_mem:
	/* Nothing touched by this attempt, nor ahead of it (mlx5_lm_preconf.c). */
	if (ahead == 0 && dev->mr == NULL && dev->prev_mr == NULL)
		return ret < 0 ? ret : -EIO;
reset:
	if (dev->args.precreate)
		mlx5_lm_queues_restore_blank(dev, 0);
	else
		mlx5_lm_queues_destroy(dev);
	/*
	 * Every queue is blank again: nothing uses the registrations, this
	 * attempt's or the one made at the first kick (deferred deletion; an
	 * identical table takes one back).
	 */
	mlx5_lm_mr_release(dev->mr);
	dev->mr = NULL;
	mlx5_lm_mr_release(dev->prev_mr);
	dev->prev_mr = NULL;
	return ret < 0 ? ret : -EIO;
}

struct mlx5_lm_prereg *
mlx5_lm_conf_run_job(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *job)
{
	struct mlx5_lm_prereg *left;
	const char *why = "";
	int ret;

	mlx5_lm_fg_enter();
	ret = conf_run(dev, job, &why);
	mlx5_lm_fg_exit();
	if (ret < 0) {
		DRV_LOG(ERR, dev, "DRIVER_OK failed (%s: %d): the device is not running, "
			"every queue back to blank", why, ret);
		mlx5_lm_set_state(dev, RTE_PMD_MLX5_LM_STATE_FAILED, ret, why);
	} else {
		mlx5_lm_set_state(dev, RTE_PMD_MLX5_LM_STATE_RUNNING, 0, NULL);
	}
	dev->conf.ret = ret;
	dev->conf.busy = 0;
	pthread_cond_broadcast(&dev->conf.done);
	left = job->prep;
	job_free(job);
	return left;
}

/* ---- dev_conf, on vhost's thread -------------------------------------------- */

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
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	struct rte_vhost_memory *mem = NULL;
	struct mlx5_lm_conf_job *job = NULL;
	struct mlx5_lm_prereg *left = NULL;
	const char *why = "";
	int ret, notifiers = 0;
	uint16_t i;

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	ret = mlx5_lm_owner(dev, vid, "DRIVER_OK");
	if (ret < 0)
		goto out;
	if (dev->running || dev->conf.busy) {
		DRV_LOG(ERR, dev, "DRIVER_OK while already %s: ignored",
			dev->running ? "running" : "being configured");
		ret = 0;
		goto out;
	}
	/* A new run: a stop ahead asked of the previous one is over. */
	__atomic_store_n(&dev->asked_ahead, 0, __ATOMIC_RELEASE);
	if (dev->args.sibling_stop) {
		/* Here, where the connection is vhost's to close: a sibling's stop reads it. */
		int pid = mlx5_lm_vhost_peer_pid(vid);

		__atomic_store_n(&dev->owner_pid, pid > 0 ? pid : 0, __ATOMIC_RELEASE);
	}
	job = job_alloc();
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
	why = mlx5_lm_features_refused(dev->features);
	if (why != NULL) {
		DRV_LOG(ERR, dev, "vhost device %d: %s: no queue is configured", vid, why);
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
	ret = mlx5_lm_mem_regions(dev, mem, job->regions, &job->nregions);
	if (ret < 0)
		goto err;
	/*
	 * The files are vhost's: checked against the preparation here, on its
	 * thread - the one taken at the first kick again (regions still in
	 * the table's order), or one to take now.
	 */
	job->drop_ahead = !mlx5_lm_preconf_recheck(dev, mem, job->regions, job->nregions);
	job->prep = mlx5_lm_prereg_take(dev, vid, mem, job->regions, job->nregions,
					job->prep_ok, 0);
	if (dev->features & (1ull << VHOST_F_LOG_ALL)) {
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
		ret = mlx5_lm_plan_ring(dev, mem, i, &job->plans[job->np]);
		if (ret < 0)
			goto err;
		job->np++;
	}
	why = "no fd left to duplicate a ring's kick or call fd";
	ret = job_dup_fds(job);
	if (ret < 0)
		goto err;
	dev->conf.busy = 1;
	mlx5_lm_set_state(dev, RTE_PMD_MLX5_LM_STATE_CONFIGURING, 0, NULL);
	mlx5_lm_worker_conf(dev, job);
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
		ret = dev->conf.ret;
		notifiers = ret == 0;
	}
	goto out;
err:
	DRV_LOG(ERR, dev, "DRIVER_OK failed (%s: %d)", why, ret);
	mlx5_lm_set_state(dev, RTE_PMD_MLX5_LM_STATE_FAILED, ret, why);
	if (job != NULL)
		left = job->prep;
	job_free(job);
out:
	free(mem);
	pthread_mutex_unlock(&dev->lock);
	/*
	 * Taken by this DRIVER_OK, which failed before its configuration: the
	 * device lets go of it too, as after a failed configuration
	 * (mlx5_lm_prereg_settle). The last reference when a preparation
	 * replaced it meanwhile: deregistered later.
	 */
	if (left != NULL) {
		mlx5_lm_prereg_put(left);
		mlx5_lm_prereg_settle(dev);
	}
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

