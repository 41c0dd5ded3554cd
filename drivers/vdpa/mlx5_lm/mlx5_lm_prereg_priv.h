/* SPDX-License-Identifier: BSD-3-Clause */
/* The preparation's state, shared by its two halves (mlx5_lm_prereg.c, _use.c). */
#ifndef MLX5_LM_PREREG_PRIV_H
#define MLX5_LM_PREREG_PRIV_H

#include <pthread.h>
#include <stdint.h>

#include "rte_pmd_mlx5_lm.h"
#include "mlx5_lm_prereg.h"

struct prep_region {
	uint64_t file_dev, file_ino;
	uint64_t fsize;              /* the file's size when prepared */
	int wd;                      /* its inotify watch */
	int changed;                 /* truncated, hole punched or written since (ctl->lock) */
	uint64_t off, size, page_size;
	uint8_t fs_writeback;        /* on a filesystem with writeback (mlx5_lm_file_fs) */
	void *map;                   /* the driver's own mapping of [off, off + size) */
};

struct prep_chunk {
	struct mlx5_lm_prereg *p;
	uint32_t region;
	uint64_t off, size;          /* in the file: the chunk's iova */
	void *hva;
	struct devx_mr *mr_reg;
};

struct mlx5_lm_prereg {
	struct mlx5_lm_dev *dev;
	unsigned int refs;           /* atomic */
	int pid;
	int cancel;                  /* atomic: stop submitting chunks */
	uint32_t nregions, nchunks;
	struct prep_region *regions;
	struct prep_chunk *chunks;
	struct mlx5_lm_gc_work gc;   /* its release by the garbage thread (mlx5_lm_prereg_put) */
};

struct mlx5_lm_prep_ctl {
	/*
	 * Taken by rte_pmd_mlx5_lm_prepare for the whole call, before lock:
	 * a call stops the thread of the preparation before it and starts its
	 * own (the removal does the first once no call holds the device).
	 */
	pthread_mutex_t call_lock;
	pthread_mutex_t lock;        /* guards everything below */
	pthread_cond_t cv;           /* st.state changed */
	struct mlx5_lm_prereg *cur;  /* the device's preparation (a reference) */
	pthread_t thread;
	int thread_up;
	int wake_fd;                 /* eventfd: taken or released, for the thread */
	int pidfd;                   /* the front end's process, -1 */
	/*
	 * inotify, IN_MODIFY of every prepared file: a truncation or a hole
	 * punched drops pages from the file that the registration still pins,
	 * and the front end would then use other pages than the device. A
	 * write through a mapping (how guest RAM is written) raises nothing;
	 * ctime would change with every new page, so it is no test. One
	 * instance per device, kept: closing one waits for an RCU grace
	 * period (8 ms each here), and watches of a file are shared.
	 */
	int ino_fd;
	int release;                 /* the thread is asked to release it */
	int unlisted;                /* the device is being removed: waiters leave */
	/* Test seam (mlx5_lm_prereg_race): between the wait's end and the release. */
	void (*race)(void *arg);
	void *race_arg;
	struct rte_pmd_mlx5_lm_prep_status st;
};

/* Wake the preparation's thread (it looks at ctl again). */
void mlx5_lm_prereg_wake(struct mlx5_lm_prep_ctl *ctl);
/* The files the inotify instance saw modified since it was last read (p NULL: forgotten). */
void mlx5_lm_prereg_note_changes(int ino_fd, struct mlx5_lm_prereg *p);
/* Under ctl->lock: give up the preparation for the reason given (its thread releases it). */
void mlx5_lm_prereg_refuse(struct mlx5_lm_prep_ctl *ctl, const char *why);
/* Under ctl->lock: the state and, when given, its reason. */
void mlx5_lm_prereg_set_state(struct mlx5_lm_prep_ctl *ctl, int state, const char *reason);

#endif /* MLX5_LM_PREREG_PRIV_H */
