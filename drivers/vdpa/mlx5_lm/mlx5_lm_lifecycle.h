/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the queue lifecycle's modules share (the Linux "Pre-create HW VQs"
 * series, in user space):
 *
 *   mlx5_lm_queues.c   pre-creation at probe; putting used queues back to blank;
 *                      the helpers every phase uses
 *   mlx5_lm_conf.c     DRIVER_OK (dev_conf): plans read on vhost's thread, the
 *                      configuration the device's worker runs
 *   mlx5_lm_stop.c     GET_VRING_BASE (dev_close): suspend, query, hand over
 *   mlx5_lm_preconf.c  a destination's queue fields sent at each SET_VRING_KICK,
 *                      ahead of DRIVER_OK, when its memory was prepared
 *   mlx5_lm_rings.c    a ring enabled or disabled by the guest; ERR recovery
 *   mlx5_lm_worker.c   the device's own thread: configurations, deferred
 *                      restores, recoveries
 */
#ifndef MLX5_LM_LIFECYCLE_H
#define MLX5_LM_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "mlx5_lm.h"
#include "mlx5_lm_pool.h"

struct rte_vhost_memory;

/* Regions of a vhost-user memory table (VHOST_MEMORY_MAX_NREGIONS). */
#define MLX5_LM_MAX_REGIONS 8

/* ---- mlx5_lm_queues.c ---- */

/* Commands in flight for a batch of queue work (parallel=0: one). */
unsigned int mlx5_lm_batch_limit(const struct mlx5_lm_dev *dev);
/*
 * Whether the device has at least as many queue pairs as command slots
 * (workers=): its per-queue commands fill the slots with one task per pair,
 * which wakes half the threads of one task per queue (the stop, preconf=2).
 */
int mlx5_lm_pairs_fill_slots(const struct mlx5_lm_dev *dev);
/* Run fn on every queue with an object (or every queue with all), in parallel; first error. */
int mlx5_lm_for_each_vq(struct mlx5_lm_dev *dev, mlx5_lm_task_fn fn, int all, int background);
/* The steering and every queue object destroyed (precreate=0, a failed DRIVER_OK). */
void mlx5_lm_queues_destroy(struct mlx5_lm_dev *dev);
/* Every queue that left INIT back to blank, the steering rebuilt around them. */
void mlx5_lm_queues_restore_blank(struct mlx5_lm_dev *dev, int background);
/*
 * Queue vq is about to be destroyed: an RX queue leaves the RQT first,
 * and if it was the RQT's only entry the steering goes (*rebuild set,
 * mlx5_lm_steer_reattach brings it back once the new queue exists).
 */
void mlx5_lm_steer_detach(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int *rebuild);
/* The same for the RX virtqs ids[0..n-1], about to be destroyed together. */
void mlx5_lm_steer_detach_ids(struct mlx5_lm_dev *dev, const uint32_t *ids, uint32_t n,
			      int *rebuild);
int mlx5_lm_steer_reattach(struct mlx5_lm_dev *dev, int rebuild);

/* ---- mlx5_lm_conf.c ---- */

struct mlx5_lm_mem_region;
/* vhost's memory table as a registration needs it (fstat of its fds), on vhost's thread. */
int mlx5_lm_mem_regions(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem,
			struct mlx5_lm_mem_region *regions, uint32_t *nregions);

/* One ring as DRIVER_OK (or a late enable) configures it. */
struct mlx5_lm_vq_plan {
	struct mlx5_lm_virtq *vq;
	struct mlx5_lm_vq_cfg cfg;
	uint16_t size;
	int ready;
	int ready_later;             /* RDY once the queue logs (job->logging) */
	int recreate;
};

/* vhost's state of ring i into a plan, on vhost's thread. */
int mlx5_lm_plan_ring(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem, uint16_t i,
		      struct mlx5_lm_vq_plan *p);
/* What a plan needs from the device itself: its registration, its queue objects. */
void mlx5_lm_plan_finish(struct mlx5_lm_dev *dev, struct mlx5_lm_vq_plan *p);
/* Task: one MODIFY, or the queue re-created (the caller detached it from the steering). */
int mlx5_lm_task_configure(void *arg);
/*
 * The plan's ring (vhost's state now) is not the one its queue was last
 * configured with: the front end moved it, resized it or gave it a new base.
 */
bool mlx5_lm_plan_moves_ring(const struct mlx5_lm_vq_plan *p);
/* Detach the RX queues of plans that re-create them; *rebuild as mlx5_lm_steer_detach. */
void mlx5_lm_plans_detach(struct mlx5_lm_dev *dev, struct mlx5_lm_vq_plan *plans, uint16_t n,
			  int *rebuild);
/*
 * The worker's part of DRIVER_OK, dev->lock held; frees the job. Returns
 * the job's reference on a preparation that no registration took (or
 * NULL), for the caller to drop once it let go of dev->lock.
 */
struct mlx5_lm_prereg *mlx5_lm_conf_run_job(struct mlx5_lm_dev *dev,
					    struct mlx5_lm_conf_job *job);

/* ---- mlx5_lm_rings.c ---- */

/*
 * The worker's part of an ERR recovery, dev->lock held; the umem parameters
 * read before its re-creation once for the caller's batch (umem_read).
 */
void mlx5_lm_recover_locked(struct mlx5_lm_virtq *vq, int *umem_read);

/* ---- mlx5_lm_preconf.c ---- */

struct mlx5_lm_preconf_mem;
/* The worker's part: the prepared registration of a table, then the rings waiting for it. */
void mlx5_lm_preconf_memory(struct mlx5_lm_dev *dev, struct mlx5_lm_preconf_mem *job);
/*
 * dev->lock held: the fields sent ahead are in place (their MODIFYs
 * waited for) and the state goes. Called by DRIVER_OK's job before it
 * plans its own MODIFYs; *rings: how many were sent ahead.
 */
void mlx5_lm_preconf_end(struct mlx5_lm_dev *dev, unsigned int *rings);
/*
 * dev_conf, vhost's thread, dev->lock held, regions in mem's order: the
 * files registered at the first kick are still the prepared ones, unchanged
 * (1, or no state); 0: DRIVER_OK must register the table itself.
 */
int mlx5_lm_preconf_recheck(struct mlx5_lm_dev *dev, struct rte_vhost_memory *mem,
			    const struct mlx5_lm_mem_region *regions, uint32_t n);
/*
 * dev->lock held, the front end gone (or the device going) before its
 * DRIVER_OK: the queues configured ahead and their registration go back
 * to blank with a restore.
 */
void mlx5_lm_preconf_abort(struct mlx5_lm_dev *dev);

/* ---- mlx5_lm_worker.c ---- */

/* dev->lock held: queue a DRIVER_OK's job (conf.busy set by the caller). */
void mlx5_lm_worker_conf(struct mlx5_lm_dev *dev, struct mlx5_lm_conf_job *job);
/* dev->lock held: a stop's restore, mr_gc_ms from now (restore.pending set by the caller). */
void mlx5_lm_worker_restore(struct mlx5_lm_dev *dev);
/*
 * dev->lock held: the registration of a table whose rings are configured
 * ahead. Returns the job it replaces (a start that ended before the worker
 * took its job), for the caller to drop.
 */
struct mlx5_lm_preconf_mem *mlx5_lm_worker_preconf(struct mlx5_lm_dev *dev,
						   struct mlx5_lm_preconf_mem *job);

#endif /* MLX5_LM_LIFECYCLE_H */
