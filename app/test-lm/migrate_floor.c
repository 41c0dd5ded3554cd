/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The model floor of a migration (migrate_floor.h). The arithmetic follows
 * the firmware model's reference floor (floor.py, kept beside the project,
 * not in it) term by term, so that the two agree to the rounding:
 * tests/unit/test_cost.c checks it against that script's figures, and runs
 * the script itself where the checkout has it. The numbers come from the
 * profile the devices run, never from a copy.
 */
#include <math.h>
#include <stdio.h>

#include "rte_pmd_mlx5_lm.h"
#include "migrate_floor.h"

enum {
	C_PIN, C_REG, C_MKEY_DIRECT, C_MKEY_INDIRECT, C_MODIFY_FIELDS, C_MODIFY_RDY,
	C_SUSPEND, C_QUERY, C_UMEM_SMALL, C_COUNTERS, C_CQ, C_QP, C_QP_TRANSITION, C_VIRTQ,
	C_DESTROY_VIRTQ, C_DESTROY_COUNTERS, C_UMEM_DEREG_SMALL, C_DESTROY_CQ, C_DESTROY_QP,
	C_GUEST_DEREG, C_DESTROY_MKEY, C_RQT, C_TIR, C_FLOW_TABLE, C_FLOW_GROUP, C_FTE,
	C_MAX
};

static const char *const cost_names[C_MAX] = {
	[C_PIN] = "GUEST_UMEM_PIN", [C_REG] = "GUEST_UMEM_REG",
	[C_MKEY_DIRECT] = "CREATE_MKEY_DIRECT", [C_MKEY_INDIRECT] = "CREATE_MKEY_INDIRECT",
	[C_MODIFY_FIELDS] = "MODIFY_VIRTQ_FIELDS", [C_MODIFY_RDY] = "MODIFY_VIRTQ_STATE_RDY",
	[C_SUSPEND] = "MODIFY_VIRTQ_STATE_SUSPEND", [C_QUERY] = "QUERY_VIRTQ",
	[C_UMEM_SMALL] = "UMEM_REG_SMALL", [C_COUNTERS] = "CREATE_VIRTQ_COUNTERS",
	[C_CQ] = "CREATE_CQ", [C_QP] = "CREATE_QP", [C_QP_TRANSITION] = "QP_TRANSITION",
	[C_VIRTQ] = "CREATE_VIRTQ", [C_DESTROY_VIRTQ] = "DESTROY_VIRTQ",
	[C_DESTROY_COUNTERS] = "DESTROY_VIRTQ_COUNTERS",
	[C_UMEM_DEREG_SMALL] = "UMEM_DEREG_SMALL", [C_DESTROY_CQ] = "DESTROY_CQ",
	[C_DESTROY_QP] = "DESTROY_QP", [C_GUEST_DEREG] = "GUEST_UMEM_DEREG",
	[C_DESTROY_MKEY] = "DESTROY_MKEY", [C_RQT] = "CREATE_RQT", [C_TIR] = "CREATE_TIR",
	[C_FLOW_TABLE] = "CREATE_FLOW_TABLE", [C_FLOW_GROUP] = "CREATE_FLOW_GROUP",
	[C_FTE] = "SET_FLOW_TABLE_ENTRY",
};

/* Milliseconds of entry i for gib GiB and n entries. */
static double
ms(const struct rte_pmd_mlx5_lm_cost *c, int i, double gib, double n)
{
	return (c[i].base_us + c[i].per_gib_us * gib + c[i].per_entry_us * n) / 1000.0;
}

static double
max2(double a, double b)
{
	return a > b ? a : b;
}

static double
min2(double a, double b)
{
	return a < b ? a : b;
}

int
mig_floor_compute(const char *profile, unsigned int devices, unsigned int queue_pairs,
		  unsigned int mem_gb, struct mig_floor *f, char *err, size_t errlen)
{
	struct rte_pmd_mlx5_lm_cost c[C_MAX];
	double D = devices, V = 2.0 * queue_pairs, S, P, chunks, pin, reg, indirect;
	double modify_rdy, suspend, query, vq_full, vq_destroy, mr_destroy, steer;
	double mr_floor, dst_floor, src_floor, src_base, dst_base, waves;
	unsigned int slots, pins, i;

	for (i = 0; i < C_MAX; i++)
		c[i].name = cost_names[i];
	if (rte_pmd_mlx5_lm_emu_profile_costs(profile, &slots, &pins, c, C_MAX, err,
					      errlen) < 0)
		return -1;
	S = slots;
	P = pins;
	/* QEMU's layout: 3 GiB at GPA 0 and the rest at 4 GiB, in 1 GiB chunks. */
	chunks = ceil(3.0) + ceil((double)mem_gb - 3.0);
	pin = ms(c, C_PIN, 1.0, 0);
	reg = ms(c, C_REG, 1.0, 0) + ms(c, C_MKEY_DIRECT, 0, 0);
	indirect = ms(c, C_MKEY_INDIRECT, 0, chunks);
	modify_rdy = ms(c, C_MODIFY_FIELDS, 0, 0) + ms(c, C_MODIFY_RDY, 0, 0);
	suspend = ms(c, C_SUSPEND, 0, 0);
	query = ms(c, C_QUERY, 0, 0);
	vq_full = 3 * ms(c, C_UMEM_SMALL, 0, 0) + ms(c, C_COUNTERS, 0, 0) + ms(c, C_CQ, 0, 0) +
		  2 * ms(c, C_QP, 0, 0) + 6 * ms(c, C_QP_TRANSITION, 0, 0) +
		  ms(c, C_VIRTQ, 0, 0);
	vq_destroy = ms(c, C_DESTROY_VIRTQ, 0, 0) + ms(c, C_DESTROY_COUNTERS, 0, 0) +
		     3 * ms(c, C_UMEM_DEREG_SMALL, 0, 0) + ms(c, C_DESTROY_CQ, 0, 0) +
		     2 * ms(c, C_DESTROY_QP, 0, 0);
	mr_destroy = chunks * (ms(c, C_GUEST_DEREG, 1.0, 0) + ms(c, C_DESTROY_MKEY, 0, 0)) +
		     ms(c, C_DESTROY_MKEY, 0, 0);
	steer = ms(c, C_RQT, 0, 0) + ms(c, C_TIR, 0, 0) + ms(c, C_FLOW_TABLE, 0, 0) +
		ms(c, C_FLOW_GROUP, 0, 0) + ms(c, C_FTE, 0, 0);
	waves = ceil(V / S);

	/* Floor: every slot busy, pinning overlapped with firmware work. */
	mr_floor = max2(chunks * reg / S, chunks * pin / P) + min2(pin, reg) + indirect;
	dst_floor = mr_floor + waves * modify_rdy;
	src_floor = waves * (suspend + query);
	/* Baseline: one worker, no pre-creation, synchronous deletion, serial. */
	src_base = V * (suspend + query) + V * vq_destroy + mr_destroy;
	dst_base = chunks * (pin + reg) + indirect + V * (vq_full + modify_rdy) + steer;

	f->devices = devices;
	f->queue_pairs = queue_pairs;
	f->mem_gb = mem_gb;
	f->chunks = (unsigned int)chunks;
	f->baseline_ms = D * (src_base + dst_base);
	f->floor_serial_ms = D * (dst_floor + src_floor);
	/* Every device's pins share the host's tokens; each device has its own slots. */
	f->floor_overlapped_ms = max2(D * chunks * pin / P, mr_floor) + waves * modify_rdy +
				 src_floor;
	f->dst_queues_baseline_ms = V * (vq_full + modify_rdy) + steer;
	f->dst_queues_floor_ms = waves * modify_rdy;
	f->mr_create_1worker_ms = chunks * (pin + reg) + indirect;
	f->mr_create_floor_ms = mr_floor;
	f->src_stop_floor_per_device_ms = src_floor;
	f->floor_prereg_ms = indirect + waves * modify_rdy + src_floor;
	f->prereg_model_ms = max2(D * chunks * pin / P, mr_floor - indirect);
	return 0;
}
