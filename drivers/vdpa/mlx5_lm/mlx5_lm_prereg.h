/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory registered before the front end's memory table arrives.
 *
 * A destination front end (QEMU started with -incoming) has its guest RAM
 * allocated and shared long before it sends SET_MEM_TABLE, which it does
 * only when it starts the device, inside the migration's downtime. A
 * preparation maps the front end's memory files (fd, offset, length)
 * itself and registers them in chunks at iova = file offset, as
 * background work on the MKEY workers. At DRIVER_OK a table region whose
 * file (st_dev, st_ino), offset and length lie in a prepared range, and
 * whose file was not truncated or modified since (its size, inotify's
 * IN_MODIFY; guest RAM is written through mappings, which raise none),
 * takes its chunks into the
 * KLM at the region's guest addresses; only the rest is registered then.
 *
 * Matching is by file identity and range, never by address: a front end
 * reaches prepared memory only by sending a descriptor of that very file.
 * The driver holds its own mapping of each prepared range, so an inode it
 * matched is never freed and reused under the same number meanwhile.
 */
#ifndef MLX5_LM_PREREG_H
#define MLX5_LM_PREREG_H

#include <stdint.h>
#include <time.h>

#include "mlx5_lm_mr.h"

struct mlx5_lm_dev;
struct mlx5_lm_prereg;
struct rte_vhost_memory;

/* The device's preparation state (mlx5_lm_dev.prep); NULL until the first call. */
struct mlx5_lm_prep_ctl;

/* Probe / removal: removal releases an unused preparation and waits for its thread. */
int mlx5_lm_prereg_init(struct mlx5_lm_dev *dev);
void mlx5_lm_prereg_fini(struct mlx5_lm_dev *dev);
/*
 * Removal, once no lookup can find the device: a caller waiting in
 * rte_pmd_mlx5_lm_prepare_wait() returns -ENODEV now, so that the removal,
 * which waits for every caller holding the device, is not held for the
 * rest of that caller's timeout.
 */
void mlx5_lm_prereg_unlisted(struct mlx5_lm_dev *dev);

/*
 * At DRIVER_OK, on vhost's thread (the region fds are vhost's): decide,
 * region by region, whether the preparation serves the table, and take a
 * reference for the configuration job. regions (filled from mem, same
 * order) are sorted by gpa here, ok[] with them (1: from the
 * preparation). Returns the preparation (the job's reference) or NULL.
 * whole: only if it serves every region, and otherwise nothing changes
 * (the queues configured ahead of DRIVER_OK, mlx5_lm_preconf.c).
 */
struct mlx5_lm_prereg *mlx5_lm_prereg_take(struct mlx5_lm_dev *dev, int vid,
					   struct rte_vhost_memory *mem,
					   struct mlx5_lm_mem_region *regions, uint32_t n,
					   uint8_t *ok, int whole);
/*
 * At DRIVER_OK, on vhost's thread: the files of the table (regions in
 * mem's order) are still those of preparation p, taken at the first kick,
 * unchanged since (1); or not (0, the reason logged).
 */
int mlx5_lm_prereg_recheck(struct mlx5_lm_dev *dev, struct mlx5_lm_prereg *p,
			   struct rte_vhost_memory *mem,
			   const struct mlx5_lm_mem_region *regions, uint32_t n);
/* A preparation is ready to be taken (no table checked: mlx5_lm_prereg_take does). */
int mlx5_lm_prereg_ready(struct mlx5_lm_dev *dev);
/*
 * The last reference's deregistration of every chunk (seconds for a large
 * VM) is the garbage thread's (mlx5_lm_mr_gc_defer): a caller never waits
 * for it, whether vhost's thread, the device's worker or a holder of a lock.
 */
void mlx5_lm_prereg_put(struct mlx5_lm_prereg *p);
struct mlx5_lm_prereg *mlx5_lm_prereg_ref(struct mlx5_lm_prereg *p);

/*
 * The prepared chunks' slices that cover region reg (matched by
 * mlx5_lm_prereg_take), written to out[0..] when out is not NULL, as
 * borrowed chunks at reg's guest addresses. Returns their number.
 */
uint32_t mlx5_lm_prereg_slices(const struct mlx5_lm_prereg *p,
			       const struct mlx5_lm_mem_region *reg,
			       struct mlx5_lm_mr_chunk *out);

/*
 * The front end of the device left: an unused preparation goes, and a used
 * one is let go (mlx5_lm_prereg_settle).
 */
void mlx5_lm_prereg_disconnected(struct mlx5_lm_dev *dev);
/*
 * A DRIVER_OK ended (configured or failed): a preparation it or the first
 * kick took is no longer the device's to keep. The registration made over
 * it holds its own reference, so its chunks stay pinned exactly as long as
 * that registration lives - not until the device's next preparation.
 */
void mlx5_lm_prereg_settle(struct mlx5_lm_dev *dev);

#endif /* MLX5_LM_PREREG_H */
