/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ordering of doorbell stores to device memory, as rdma-core orders its
 * own (util/udma_barrier.h; providers/mlx5 mlx5_arm_cq):
 *
 *   devx_to_device_barrier()  udma_to_device_barrier(): host memory the
 *                             device reads (a doorbell record, a ring) is
 *                             written before a following store to device
 *                             memory. x86_64: a compiler barrier (stores
 *                             are not reordered with stores, UC/WC MMIO
 *                             included, for ordinary write-back memory
 *                             before them); aarch64: dmb oshst (rdma-core
 *                             44 had dsb st, later ones the lighter dmb).
 *   devx_mmio_flush_writes()  mmio_flush_writes(), and mmio_wc_start()
 *                             which is the same: MMIO stores (write
 *                             combining included) leave the CPU in order
 *                             before what follows. x86_64: sfence;
 *                             aarch64: dsb st.
 *
 * rdma-core's CQ arm: record, mmio_wc_start, the 64-bit doorbell,
 * mmio_flush_writes. DPDK's vdpa/mlx5 kick is rte_write32: rte_io_wmb
 * (aarch64 dmb oshst) then the store. Other architectures get a full
 * barrier: stronger than either, never weaker.
 */
#ifndef MLX5_LM_DEVX_MMIO_H
#define MLX5_LM_DEVX_MMIO_H

#if defined(__x86_64__)
#define devx_to_device_barrier() __asm__ volatile("" ::: "memory")
#define devx_mmio_flush_writes() __asm__ volatile("sfence" ::: "memory")
#elif defined(__aarch64__)
#define devx_to_device_barrier() __asm__ volatile("dmb oshst" ::: "memory")
#define devx_mmio_flush_writes() __asm__ volatile("dsb st" ::: "memory")
#else
#define devx_to_device_barrier() __sync_synchronize()
#define devx_mmio_flush_writes() __sync_synchronize()
#endif
#define devx_mmio_wc_start() devx_mmio_flush_writes()

#endif /* MLX5_LM_DEVX_MMIO_H */
