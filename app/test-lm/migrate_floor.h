/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The model floor of a migration scenario: the least device-side downtime
 * the firmware cost model allows, computed from the profile's own numbers
 * (every command slot busy, host pinning overlapped with firmware work; the
 * method of doc/performance-method.md, "The floor"), and the model's estimate of
 * the baseline (one worker, nothing pre-created, everything serial).
 */
#ifndef MIGRATE_FLOOR_H
#define MIGRATE_FLOOR_H

#include <stddef.h>

/* How the floor is computed, as migrate's floor line and its JSON name it. */
#define MIG_FLOOR_METHOD \
	"the model floor: every command slot busy, pinning overlapped; doc/performance-method.md"

struct mig_floor {
	unsigned int devices, queue_pairs, mem_gb, chunks;
	double baseline_ms;            /* model: the baseline stage, serial */
	double floor_serial_ms;        /* floor with the devices one after another */
	double floor_overlapped_ms;    /* floor with the devices configured at once */
	double dst_queues_baseline_ms;
	double dst_queues_floor_ms;
	double mr_create_1worker_ms;
	double mr_create_floor_ms;
	double src_stop_floor_per_device_ms;
	/*
	 * Stage prereg: the chunks registered before the stop, so the floor
	 * keeps the stop, the indirect mkey and the queues' MODIFYs; and the
	 * preparation's own floor (the chunks of every device, pins shared).
	 */
	double floor_prereg_ms;
	double prereg_model_ms;
};

/*
 * Floor of `devices` NICs of `queue_pairs` pairs sharing `mem_gb` GiB of
 * guest memory (QEMU's layout, 1 GiB chunks) under emulator profile
 * `profile`, read through the PMD's API. 0, or -1 with the reason in err.
 */
int mig_floor_compute(const char *profile, unsigned int devices, unsigned int queue_pairs,
		      unsigned int mem_gb, struct mig_floor *f, char *err, size_t errlen);

#endif /* MIGRATE_FLOOR_H */
