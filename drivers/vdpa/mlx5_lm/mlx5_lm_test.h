/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test seams of the PMD: what the in-process tests (tests/integration,
 * linked with the static library) hold or look at inside a device. Not
 * part of the PMD's API, and not exported by its shared library.
 */
#ifndef MLX5_LM_TEST_H
#define MLX5_LM_TEST_H

#include <stdint.h>

struct mlx5_lm_dev;

/*
 * The device's worker takes no configuration while on (it still restores and
 * recovers); on 2, no stop ahead asked by a sibling's stop either; on 3, no
 * recovery (an OBJECT_CHANGE's) either.
 */
void mlx5_lm_worker_hold(struct mlx5_lm_dev *dev, int on);
/* Threads waiting for the device's configuration to end (mlx5_lm_wait_configured). */
unsigned int mlx5_lm_conf_waiters(struct mlx5_lm_dev *dev);
/* 1 from a stop until its restore has put the queues back to blank. */
int mlx5_lm_restore_pending(struct mlx5_lm_dev *dev);
/* Start a deferred restore now and wait for it, at most timeout_ms: 0 or -ETIMEDOUT. */
int mlx5_lm_restore_wait(struct mlx5_lm_dev *dev, unsigned int timeout_ms);
/*
 * fn(index, fd, wr, arg) runs in the device's notification thread between
 * its check that ring index's kick (wr 0) or call (wr 1) fd would not block
 * and its read or write of it: the window in which a front end can race it.
 * NULL: none.
 */
void mlx5_lm_notify_race(struct mlx5_lm_dev *dev,
			 void (*fn)(uint16_t index, int fd, int wr, void *arg), void *arg);

/*
 * fn(arg) runs in the device's preparation thread between the end of its
 * wait for the preparation's use (its time ran out, its front end exited,
 * its release was asked) and its release: the window in which a DRIVER_OK
 * can still take it. NULL: none.
 */
void mlx5_lm_prereg_race(struct mlx5_lm_dev *dev, void (*fn)(void *arg), void *arg);

#endif /* MLX5_LM_TEST_H */
