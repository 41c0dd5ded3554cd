/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libmlx4.so.1 of the emulated rdma-core: the emulated devices are mlx5
 * devices, so no mlx4 function can succeed. The file exists because DPDK
 * loads its mlx4 driver (linked against libmlx4.so.1) with every other
 * plugin; rdma-core's own libmlx4 would need libibverbs' private provider
 * ABI, which this library does not export. Each function fails loudly.
 */
#include <errno.h>
#include <stdio.h>

#define MLX4_STUB(ret, name, fail) \
	__attribute__((visibility("default"))) ret name(void); \
	ret name(void) \
	{ \
		fprintf(stderr, "emu-rdma: %s: the emulated devices are not mlx4 devices\n", \
			#name); \
		errno = EOPNOTSUPP; \
		return fail; \
	}

MLX4_STUB(void *, mlx4dv_create_qp, NULL)
MLX4_STUB(int, mlx4dv_init_obj, EOPNOTSUPP)
MLX4_STUB(int, mlx4dv_query_device, EOPNOTSUPP)
MLX4_STUB(int, mlx4dv_set_context_attr, EOPNOTSUPP)
