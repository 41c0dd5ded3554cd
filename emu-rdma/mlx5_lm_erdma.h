/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated rdma-core's own queries (doc/emulated-rdma.md), for a program
 * that runs under tools/with-emulated-rdma and wants the emulator's account
 * of a device another driver opened in the same process (dpdk-test-lm
 * migrate's peer stages: DPDK's vdpa/mlx5 has no such API). Not part of
 * rdma-core: version node MLX5_LM_ERDMA_PRIVATE_1 of the emulated
 * libibverbs.so.1 only; resolve them with dlsym() so that a program also
 * runs on the real rdma-core (where they are absent).
 */
#ifndef MLX5_LM_ERDMA_PUBLIC_H
#define MLX5_LM_ERDMA_PUBLIC_H

#include <stdint.h>

/* The cost model's counters of a device (struct emu_cost_stats), summed over its contexts. */
struct mlx5_lm_erdma_stats {
	uint64_t cmds;             /* charges that held a firmware command slot */
	double model_us;           /* their modelled time, summed */
	double actual_us;          /* the time they really held their slot, summed */
	double overshoot_max_us;   /* largest actual - modelled of one charge */
	uint64_t pins;             /* host pinning charges */
	double pin_model_us;
	double pin_actual_us;
	unsigned int contexts;     /* open contexts of the device */
};

/*
 * The counters of every open context of RDMA device `name` (mlx5_<i>),
 * summed; they start at zero when a context opens. 0, or -ENODEV when no
 * context of that device is open.
 */
typedef int (*mlx5_lm_erdma_cost_stats_t)(const char *name, struct mlx5_lm_erdma_stats *s);
#define MLX5_LM_ERDMA_COST_STATS "mlx5_lm_erdma_cost_stats"

/*
 * Device objects the contexts closed so far in this process left alive
 * (each listed on stderr by the emulator when its context closed).
 */
typedef unsigned long (*mlx5_lm_erdma_left_alive_t)(void);
#define MLX5_LM_ERDMA_LEFT_ALIVE "mlx5_lm_erdma_left_alive"

#endif /* MLX5_LM_ERDMA_PUBLIC_H */
