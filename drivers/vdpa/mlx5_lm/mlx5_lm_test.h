/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test seams of the PMD: what the in-process tests (tests/integration,
 * linked with the static library) hold or look at inside a device. Not
 * part of the PMD's API, and not exported by its shared library.
 */
#ifndef MLX5_LM_TEST_H
#define MLX5_LM_TEST_H

struct mlx5_lm_dev;

/* The device's worker takes no configuration while on (it still restores and recovers). */
void mlx5_lm_worker_hold(struct mlx5_lm_dev *dev, int on);
/* Threads waiting for the device's configuration to end (mlx5_lm_wait_configured). */
unsigned int mlx5_lm_conf_waiters(struct mlx5_lm_dev *dev);
/* 1 from a stop until its restore has put the queues back to blank. */
int mlx5_lm_restore_pending(struct mlx5_lm_dev *dev);
/* Start a deferred restore now and wait for it, at most timeout_ms: 0 or -ETIMEDOUT. */
int mlx5_lm_restore_wait(struct mlx5_lm_dev *dev, unsigned int timeout_ms);

#endif /* MLX5_LM_TEST_H */
