/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libmlx5.so.1 of the emulated rdma-core: no code. It exists so that a
 * program linked against rdma-core's libmlx5.so.1 finds that file and its
 * MLX5_1.* version definitions; it needs libibverbs.so.1, where the
 * mlx5dv_* functions live with those versions (ld.so binds a versioned
 * reference by symbol name and version, in any loaded object).
 */
