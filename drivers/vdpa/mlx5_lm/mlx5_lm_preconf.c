/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A destination's queues configured ahead of DRIVER_OK (devarg preconf).
 *
 * A migration's destination front end sends, ring by ring, SET_VRING_NUM,
 * _BASE, _ADDR, _KICK and _CALL, then the enables and DRIVER_OK: about 200
 * messages for 16 queue pairs, 3-4 ms on vhost's one thread, all inside
 * the downtime. Where the guest memory was prepared
 * (rte_pmd_mlx5_lm_prepare), DRIVER_OK's registration is one indirect mkey
 * over the prepared chunks, and the rest of the start one MODIFY per queue
 * carrying every field and RDY (1.9 ms per wave of 16 on cx6dx).
 *
 *   preconf=1  once vhost has handled SET_MEM_TABLE (the vetting's
 *              post-handler, compat), or at the first ring's SET_VRING_KICK
 *              if the table came first, the preparation is taken and the
 *              device's worker makes the indirect mkey while vhost goes on;
 *              DRIVER_OK finds the table registered.
 *   preconf=2  also, once vhost has handled both kicks of a queue pair, one
 *              pool task sends their two MODIFYs of fields, the queues
 *              staying INIT (the device fetches nothing from an INIT
 *              queue); DRIVER_OK's MODIFY then carries RDY alone (0.5 ms
 *              per wave). That is device time out of DRIVER_OK, but CPU
 *              time inside the message phase: on the 2-CPU machine of
 *              doc/performance.md the MODIFYs slow vhost's thread and the
 *              front end as much as they save (measured there), hence
 *              not the default; a host whose vhost thread has a CPU of its
 *              own gets the device time back.
 *
 * Nothing done here is trusted: DRIVER_OK plans every ring again from
 * vhost and its MODIFY carries whatever differs from what the queue holds
 * (mlx5_lm_virtq_modify), a new memory table included; a resized ring is
 * re-created. Only when a preparation serves the whole table: without one
 * the registration would hold the worker as long before DRIVER_OK as at
 * DRIVER_OK, which would wait for it.
 *
 * The state lives from the table (or the first kick) to DRIVER_OK's job
 * (which ends it, mlx5_lm_preconf_end), or to the front end's
 * disconnection or the device's removal (mlx5_lm_preconf_abort: the
 * registration and the queues configured ahead go back to blank with a
 * restore). dev->preconf and
 * everything in it are guarded by dev->lock; the MODIFY tasks touch only
 * their own queues, which nothing else touches before the state ends (the
 * device is not running, and whatever would touch its queues ends the
 * state first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_vhost.h>

#include "mlx5_lm.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_prereg.h"

struct mlx5_lm_preconf {
	uint32_t seq;                 /* which front end's start: dev->preconf_seq */
	/*
	 * The preparation taken, for DRIVER_OK to check its files again: no
	 * reference (one more would only have to be dropped at every end of
	 * the state), only compared with the device's current one, which holds one
	 * (mlx5_lm_prereg_recheck). While the job or the registration made of
	 * it holds it, no other preparation can have its address.
	 */
	struct mlx5_lm_prereg *prep;
	int mem_ready;                /* dev->mr is this table's registration */
	struct mlx5_lm_batch b;       /* the MODIFYs sent */
	unsigned int sent;
	uint8_t planned[MLX5_LM_MAX_VIRTQS];
	uint8_t sent_pair[MLX5_LM_MAX_VIRTQS / 2];
	struct mlx5_lm_vq_plan plans[MLX5_LM_MAX_VIRTQS];
};

/* The worker's job: the table as vhost had it when the state opened, and the preparation. */
struct mlx5_lm_preconf_mem {
	uint32_t seq;
	uint32_t nregions;
	struct mlx5_lm_mem_region regions[MLX5_LM_MAX_REGIONS];
	struct mlx5_lm_prereg *prep;
	uint8_t prep_ok[MLX5_LM_MAX_REGIONS];
};

/* One queue's fields, on a pool thread. */
static int
modify_fields(struct mlx5_lm_vq_plan *p)
{
	/* Another size: a new object, DRIVER_OK's. */
	if (p->recreate)
		return 0;
	p->cfg.event_qpn = p->vq->cur.event_qpn;
	/* Fields only: the queue stays INIT until DRIVER_OK makes it RDY. */
	return mlx5_lm_virtq_modify(p->vq, &p->cfg, 0);
}

static int
task_fields_one(void *arg)
{
	return modify_fields(arg);
}

/*
 * A pair's two, its RX then its TX: with at least as many pairs as command
 * slots the MODIFYs fill the slots anyway, and one task per pair wakes half
 * the threads on the CPUs that vhost's thread and the front end need
 * meanwhile (the stop groups its tasks for the same reason,
 * mlx5_lm_stop.c), for the last pair's MODIFYs ending 2 commands after its
 * kick instead of 1 (doc/performance.md, "Before DRIVER_OK").
 */
static int
task_fields_pair(void *arg)
{
	struct mlx5_lm_vq_plan *p = arg;
	int r0 = modify_fields(&p[0]), r1 = modify_fields(&p[1]);

	return r0 < 0 ? r0 : r1;
}

/*
 * dev->lock held, the memory registered: a pair's fields to the pool once
 * both its rings are planned (a ring of a pair the front end sets up only
 * half of is DRIVER_OK's).
 */
static void
send_pair(struct mlx5_lm_dev *dev, struct mlx5_lm_preconf *pc, uint16_t ring)
{
	uint16_t a = ring & ~1u, i;
	struct mlx5_lm_vq_plan *p = &pc->plans[a];

	if (a + 1 >= dev->nr_vq || !pc->planned[a] || !pc->planned[a + 1] || pc->sent_pair[a / 2])
		return;
	pc->sent_pair[a / 2] = 1;
	for (i = 0; i < 2; i++)
		mlx5_lm_plan_finish(dev, &p[i]);
	if (mlx5_lm_pairs_fill_slots(dev)) {
		if (mlx5_lm_batch_submit(&pc->b, task_fields_pair, p) == 0)
			pc->sent += (unsigned int)(!p[0].recreate + !p[1].recreate);
		return;
	}
	/*
	 * Fewer pairs than slots: one task per queue, a pair's two MODIFYs at
	 * once. Per pair, a device of 4 pairs sent its 8 in two waves of 4 on
	 * 16 slots, 2.9 ms where 1.4 do (a small VM's kicks come about 1 ms
	 * before its DRIVER_OK, which then waited for the second wave).
	 */
	for (i = 0; i < 2; i++)
		if (!p[i].recreate && mlx5_lm_batch_submit(&pc->b, task_fields_one, &p[i]) == 0)
			pc->sent++;
}

/* dev->lock held: whether this device configures anything ahead of DRIVER_OK now. */
static int
device_eligible(const struct mlx5_lm_dev *dev, int vid)
{
	return dev->args.preconf && dev->args.precreate && dev->args.parallel && !dev->running &&
	       !dev->conf.busy && !dev->restore.pending && !dev->removing && dev->vid == vid;
}

/*
 * dev->lock held: a ring this device may configure ahead, now. Planned
 * once: its task may be writing the queue (a kick fd replaced later is
 * DRIVER_OK's to take).
 */
static int
eligible(struct mlx5_lm_dev *dev, int vid, uint16_t ring)
{
	const struct mlx5_lm_virtq *vq;

	if (!device_eligible(dev, vid) || ring >= dev->nr_vq ||
	    (dev->preconf != NULL && dev->preconf->planned[ring]))
		return 0;
	vq = &dev->vq[ring];
	/* A blank pre-created queue: anything else is DRIVER_OK's (re-creation, recovery). */
	return vq->obj != NULL && !vq->used && vq->hw_state == PRM_VIRTQ_STATE_INIT;
}

/*
 * dev->lock held, the table or the first ring: its registration to the worker.
 * *stale: the job of an earlier start the worker never took, for the
 * caller to drop once it let go of dev->lock.
 */
static struct mlx5_lm_preconf *
open_state(struct mlx5_lm_dev *dev, int vid, struct rte_vhost_memory *mem,
	   struct mlx5_lm_preconf_mem **stale)
{
	struct mlx5_lm_preconf_mem *job;
	struct mlx5_lm_preconf *pc;

	if (dev->mr != NULL || dev->prev_mr != NULL)
		return NULL;
	job = calloc(1, sizeof(*job));
	pc = calloc(1, sizeof(*pc));
	if (job == NULL || pc == NULL)
		goto err;
	if (mlx5_lm_mem_regions(dev, mem, job->regions, &job->nregions) < 0)
		goto err;
	job->prep = mlx5_lm_prereg_take(dev, vid, mem, job->regions, job->nregions,
					job->prep_ok, 1);
	if (job->prep == NULL)
		goto err;
	/* Features DRIVER_OK will refuse: nothing configured ahead for them. */
	if (rte_vhost_get_negotiated_features(vid, &dev->features) < 0 ||
	    mlx5_lm_features_refused(dev->features) != NULL) {
		/* Not the deregistration, even if last: the garbage thread's. */
		mlx5_lm_prereg_put(job->prep);
		goto err;
	}
	pc->seq = job->seq = ++dev->preconf_seq;
	pc->prep = job->prep;
	mlx5_lm_batch_init(&pc->b, mlx5_lm_batch_limit(dev));
	dev->preconf = pc;
	*stale = mlx5_lm_worker_preconf(dev, job);
	DRV_LOG(DEBUG, dev, "memory prepared: registered from SET_MEM_TABLE or the first "
		"SET_VRING_KICK on");
	return pc;
err:
	free(job);
	free(pc);
	return NULL;
}

/* Its start ended before the worker took it: dropped once dev->lock is let go. */
static void
drop_stale(struct mlx5_lm_preconf_mem *stale)
{
	if (stale == NULL)
		return;
	mlx5_lm_prereg_put(stale->prep);
	free(stale);
}

/*
 * vhost's thread, once it has handled SET_MEM_TABLE (the vetting's
 * post-handler): a table the preparation serves whole is registered from
 * now on, by the device's worker. The first kick, which did it before,
 * comes four messages later (NUM, BASE, ADDR), and a small device's
 * DRIVER_OK came before the indirect mkey was made: its queues' MODIFYs
 * waited for it (doc/performance.md, "Before DRIVER_OK"). A table sent
 * again before DRIVER_OK is DRIVER_OK's to compare, as one sent after the
 * first kick always was.
 */
void
mlx5_lm_preconf_table(int vid)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	struct mlx5_lm_preconf_mem *stale = NULL;
	struct rte_vhost_memory *mem = NULL;

	if (dev == NULL)
		return;
	pthread_mutex_lock(&dev->lock);
	if (dev->preconf == NULL && device_eligible(dev, vid) && mlx5_lm_prereg_ready(dev) &&
	    rte_vhost_get_mem_table(vid, &mem) == 0)
		(void)open_state(dev, vid, mem, &stale);
	pthread_mutex_unlock(&dev->lock);
	free(mem);
	drop_stale(stale);
}

/* vhost's thread, once it has handled SET_VRING_KICK of ring (the vetting's post-handler). */
void
mlx5_lm_preconf_ring(int vid, uint16_t ring)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	struct mlx5_lm_preconf_mem *stale = NULL;
	struct rte_vhost_memory *mem = NULL;
	struct mlx5_lm_preconf *pc;
	struct rte_vhost_vring vr;

	if (dev == NULL)
		return;
	pthread_mutex_lock(&dev->lock);
	pc = dev->preconf;
	/*
	 * Nothing read from vhost for most starts (no preparation), nor after
	 * the first kick with preconf=1 (the memory alone; the fields go with
	 * RDY at DRIVER_OK).
	 */
	if (!eligible(dev, vid, ring) ||
	    (pc == NULL ? !mlx5_lm_prereg_ready(dev) :
	     dev->args.preconf < MLX5_LM_PRECONF_FIELDS) ||
	    rte_vhost_get_vhost_vring(vid, ring, &vr) < 0 ||
	    vr.desc == NULL || vr.avail == NULL || vr.used == NULL ||
	    rte_vhost_get_mem_table(vid, &mem) < 0)
		goto out;
	if (pc == NULL) {
		pc = open_state(dev, vid, mem, &stale);
		if (pc == NULL)
			goto out;
	}
	if (dev->args.preconf < MLX5_LM_PRECONF_FIELDS ||
	    mlx5_lm_plan_ring(dev, mem, ring, &pc->plans[ring]) < 0)
		goto out;
	pc->planned[ring] = 1;
	/* Before the memory is registered, the worker sends what is planned then. */
	if (pc->mem_ready)
		send_pair(dev, pc, ring);
out:
	free(mem);
	pthread_mutex_unlock(&dev->lock);
	drop_stale(stale);
}

void
mlx5_lm_preconf_memory(struct mlx5_lm_dev *dev, struct mlx5_lm_preconf_mem *job)
{
	struct mlx5_lm_preconf *pc;
	struct mlx5_lm_mr *mr = NULL;
	uint16_t i;
	int ret;

	/* Inside the downtime: background work yields, as to a DRIVER_OK. */
	mlx5_lm_fg_enter();
	/* Without dev->lock: vhost's thread plans the next rings meanwhile. */
	ret = mlx5_lm_mr_create_prepared(dev, job->regions, job->nregions, job->prep,
					 job->prep_ok, &mr);
	mlx5_lm_fg_exit();
	pthread_mutex_lock(&dev->lock);
	pc = dev->preconf;
	if (ret < 0 || pc == NULL || pc->seq != job->seq || dev->mr != NULL || dev->running) {
		/* Ended meanwhile (DRIVER_OK registered it itself, the front end left). */
		if (ret == 0)
			mlx5_lm_mr_release(mr);
		else
			DRV_LOG(INFO, dev, "prepared registration failed ahead of DRIVER_OK (%d): "
				"DRIVER_OK registers the table", ret);
		goto out;
	}
	dev->mr = mr;
	pc->mem_ready = 1;
	for (i = 0; i < dev->nr_vq && dev->args.preconf >= MLX5_LM_PRECONF_FIELDS; i += 2)
		send_pair(dev, pc, i);
out:
	pthread_mutex_unlock(&dev->lock);
	free(job);
}

void
mlx5_lm_preconf_end(struct mlx5_lm_dev *dev, unsigned int *rings)
{
	struct mlx5_lm_preconf *pc = dev->preconf;

	*rings = 0;
	if (pc == NULL)
		return;
	/*
	 * The tasks take no lock: waiting under dev->lock is safe. A failed
	 * MODIFY left the queue's fields as they were: DRIVER_OK's own MODIFY
	 * carries them.
	 */
	if (mlx5_lm_batch_wait(&pc->b) < 0)
		DRV_LOG(INFO, dev, "a MODIFY sent ahead of DRIVER_OK failed: DRIVER_OK sends "
			"its fields");
	mlx5_lm_batch_fini(&pc->b);
	*rings = pc->sent;
	dev->preconf = NULL;
	free(pc);
}

int
mlx5_lm_preconf_recheck(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem,
			const struct mlx5_lm_mem_region *regions, uint32_t n)
{
	struct mlx5_lm_preconf *pc = dev->preconf;

	return pc == NULL || mlx5_lm_prereg_recheck(dev, pc->prep, mem, regions, n);
}

void
mlx5_lm_preconf_abort(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_preconf *pc = dev->preconf;
	unsigned int rings;
	int mem;

	/*
	 * Nothing configured ahead: nothing to read either (a restore may be
	 * swapping this device's queues without dev->lock).
	 */
	if (pc == NULL)
		return;
	mem = pc->mem_ready;
	mlx5_lm_preconf_end(dev, &rings);
	/*
	 * A state is opened only on a stopped device with no restore pending,
	 * and none starts while it is open. The registration made ahead (still
	 * being made: the worker's job releases it), the queues that got
	 * fields: the restore's job.
	 */
	if (mem && !dev->running && !dev->restore.pending) {
		DRV_LOG(INFO, dev, "front end gone before DRIVER_OK: %u rings configured ahead "
			"go back to blank", rings);
		dev->restore.pending = 1;
		mlx5_lm_worker_restore(dev);
	}
}
