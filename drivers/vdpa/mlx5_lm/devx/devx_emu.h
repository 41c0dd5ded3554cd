/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulator and benchmark hooks of the DevX transport: what only an
 * emulated device (emu=) answers, beyond the DevX calls of devx.h. The
 * PMD uses them for its rte_pmd_mlx5_lm_emu_* calls, the uplink=<ethdev>
 * wire and the registration benchmark; the in-process tests for the
 * emulated device itself.
 *
 * The emulator is a library of its own (librte_vdpa_mlx5_lm_emu.so, with
 * libjansson): the transport loads it at the first emu= open, or at the
 * first call here that needs a profile, and never for rdma devices. Until
 * then, and on a device that is not emulated, these calls answer -ENOTSUP
 * (or count nothing, 0) as each says.
 */
#ifndef MLX5_LM_DEVX_EMU_H
#define MLX5_LM_DEVX_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "devx.h"

/* The name the transport loads the emulator by (beside its own file, else by soname). */
#define DEVX_EMU_LIBRARY "librte_vdpa_mlx5_lm_emu.so"

/* Log sink of the emulated device model (its own component, its own log type). */
void devx_set_emu_log(devx_log_fn fn);

/* The emulated device behind ctx (struct emu_dev *), NULL for rdma: for tests only. */
void *devx_emu_dev(struct devx_ctx *ctx);
/*
 * Emulated devices: objects that were still alive when their device was
 * closed, summed over the process (0 after clean teardowns, and when no
 * emulated device was ever opened).
 */
unsigned long devx_emu_leaked_total(void);
/*
 * Emulated devices and their objects alive now in the process (0 when no
 * emulated device was ever opened); desc (may be NULL) names the kinds.
 */
unsigned long devx_emu_live_total(char *desc, size_t len);
/*
 * Whether a profile loads (0, or -EINVAL with the reason in err); loads
 * the emulator (-ENOTSUP with the reason in err when it cannot).
 */
int devx_emu_profile_check(const char *profile, char *err, size_t errlen);
/*
 * Emulated devices: the cost model's account of the device since it was
 * opened (what it charged, what its sleeps took). -ENOTSUP for rdma.
 */
struct devx_cost_stats {
	uint64_t cmds;
	double model_us;
	double actual_us;
	double overshoot_max_us;
	uint64_t pins;
	double pin_model_us;
	double pin_actual_us;
};
int devx_emu_cost_stats(struct devx_ctx *ctx, struct devx_cost_stats *s);
/* One entry of a cost profile: cost = base + per_gib * GiB + per_entry * entries. */
struct devx_cost_entry {
	const char *name;
	double base_us;
	double per_gib_us;
	double per_entry_us;
};
/*
 * Read a profile's parallelism and the entries e[0..n-1] (by e[i].name).
 * 0, or a negative errno with the reason in err (-ENOENT: an entry is
 * absent; -ENOTSUP: the emulator cannot be loaded).
 */
int devx_emu_profile_costs(const char *profile, unsigned int *cmd_slots,
			   unsigned int *host_pin_parallel, struct devx_cost_entry *e,
			   unsigned int n, char *err, size_t errlen);
/*
 * Emulated devices: the device's wire. fn gets every frame the device
 * sends (NULL: loopback, the default); devx_emu_wire_rx hands it a frame
 * from the wire. -ENOTSUP on real hardware, whose wire is its port.
 */
typedef void (*devx_wire_tx_fn)(void *arg, const void *frame, size_t len);
int devx_emu_set_uplink(struct devx_ctx *ctx, devx_wire_tx_fn fn, void *arg);
int devx_emu_wire_rx(struct devx_ctx *ctx, const void *frame, size_t len);

/*
 * Emulated devices: translate [addr, addr+len) through mkey the way the
 * device's data path does (for benchmarks that verify a registration).
 * Returns 0 with *host set, -EFAULT when not mapped, -ENOTSUP for rdma.
 */
int devx_emu_translate(struct devx_ctx *ctx, uint32_t mkey, uint64_t addr, size_t len,
		       void **host);

#endif /* MLX5_LM_DEVX_EMU_H */
