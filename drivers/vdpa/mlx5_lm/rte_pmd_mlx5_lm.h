/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Public API of the mlx5-lm vDPA PMD beyond rte_vdpa: what applications
 * (dpdk-test-lm, operators' tools) may ask a device that the generic
 * vDPA API does not cover. Devices are named by their vdev name
 * ("vdpa_mlx5_lm0").
 *
 * Every function is experimental, as DPDK marks a new API (version.map,
 * EXPERIMENTAL): define ALLOW_EXPERIMENTAL_API before including this
 * header, or each call is a deprecation warning.
 */
#ifndef RTE_PMD_MLX5_LM_H
#define RTE_PMD_MLX5_LM_H

#include <stddef.h>
#include <stdint.h>

#include <rte_compat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Capabilities read from the device at probe (QUERY_HCA_CAP). */
struct rte_pmd_mlx5_lm_caps {
	char backend[8];              /* "emu" or "rdma" */
	uint16_t vhca_id;
	uint64_t general_obj_types;   /* bit n: general object type n supported */
	uint8_t log_max_klm_list_size;
	/* virtio emulation caps (cap_type 0x13) */
	uint32_t max_num_virtio_queues;
	uint8_t virtio_queue_type;    /* bit 0 split, bit 1 packed */
	uint8_t event_mode;           /* bit 0 none, bit 1 QP, bit 2 MSIX */
	uint8_t virtio_version_1_0;
	uint16_t device_features_bits_mask;
	uint8_t vnet_modify_ext;
	uint8_t virtio_net_q_addr_modify;
	uint8_t virtio_q_index_modify;
	uint8_t freeze_to_rdy_supported;
	uint8_t desc_group_mkey_supported;
	uint8_t log_doorbell_stride;
	uint8_t log_doorbell_bar_size;
	uint64_t doorbell_bar_offset;
	/*
	 * umem i size = a[i] * queue_size + b[i], as at probe: firmware changes
	 * them at runtime (the PF's MTU), and the driver reads them again
	 * before it creates queues.
	 */
	uint32_t umem_param_a[3];
	uint32_t umem_param_b[3];
	/* general caps the event CQ/QP follow */
	uint8_t cq_oi;                /* cqc.oi may be set */
	uint8_t qp_ts_format;         /* QP timestamps: 0 free-running, 1 real time, 2 both */
};

/* Fill caps for the probed device `name`. Returns 0, or -ENODEV. */
__rte_experimental
int rte_pmd_mlx5_lm_get_caps(const char *name, struct rte_pmd_mlx5_lm_caps *caps);

/*
 * 1 when the PMD refused to probe `name` and logged why (bad devargs, no
 * such device, a failed command), so that a caller need not add a vaguer
 * line of its own.
 */
__rte_experimental
int rte_pmd_mlx5_lm_probe_failed(const char *name);

/*
 * Emulated devices only: the number of device objects that were still
 * alive when their device was removed, summed over the process. A clean
 * teardown leaves it at 0, and so does a process that never probed an
 * emulated device.
 *
 * The emulator (emu=) is a library of its own, librte_vdpa_mlx5_lm_emu.so,
 * installed beside the PMD: the PMD loads it when a device with emu= is
 * probed or a profile is asked for below, never otherwise.
 */
__rte_experimental
unsigned long rte_pmd_mlx5_lm_emu_leaked_objects(void);

/*
 * Emulated devices only: the emulated devices and device objects alive
 * now, in the whole process, whichever way they came (a device its driver
 * never closed is counted here, not in the leaks above). desc (may be
 * NULL) gets their kinds, e.g. "1 devices, 32 VIRTQ, 2 MKEY". 0 after a
 * clean teardown of every device.
 */
__rte_experimental
unsigned long rte_pmd_mlx5_lm_emu_live_objects(char *desc, size_t len);

/*
 * Check that `profile` (emu=<profile>: a built-in name or a JSON path)
 * loads, without creating a device, so that a tool can refuse a bad one
 * before a long run. Returns 0, or a negative errno with the reason in err
 * (-ENOTSUP: the emulator library cannot be loaded, named in err).
 */
__rte_experimental
int rte_pmd_mlx5_lm_emu_profile_check(const char *profile, char *err, size_t errlen);

/*
 * Emulated devices: the cost model's own account of device `name` since
 * its probe, so that a benchmark can put the model's sum of command costs
 * beside what it measured, and see how late the emulator's sleeps woke up
 * (overshoot = actual - modelled, per charge). Counters only grow: take
 * differences around a measured window.
 */
struct rte_pmd_mlx5_lm_model_stats {
	uint64_t cmds;             /* commands (and umem operations) that held a slot */
	double model_busy_ms;      /* their modelled cost, summed over slots */
	double actual_busy_ms;     /* the time they held their slot, summed */
	double overshoot_max_us;   /* largest actual - modelled of one command */
	uint64_t pins;             /* host pinning operations (no command slot) */
	double pin_model_ms;       /* their modelled cost, summed */
	double pin_actual_ms;
};

/* 0, -ENODEV (no such device) or -ENOTSUP (not an emulated device). */
__rte_experimental
int rte_pmd_mlx5_lm_emu_model_stats(const char *name, struct rte_pmd_mlx5_lm_model_stats *s);

/* One cost-model entry: cost_us = base_us + per_gib_us * GiB + per_entry_us * entries. */
struct rte_pmd_mlx5_lm_cost {
	const char *name;          /* in: "CREATE_VIRTQ", ... (shared/fw-model schema) */
	double base_us;            /* out */
	double per_gib_us;         /* out */
	double per_entry_us;       /* out */
};

/*
 * Read emulator profile `profile` (as emu=<profile>): its command slots,
 * its host pinning parallelism and the entries costs[0..n-1] by name, so
 * that a tool can compute what the model allows (a floor) without a
 * copy of the numbers. 0, or a negative errno with the reason in err
 * (-ENOENT: the profile has no entry of that name; -ENOTSUP: the emulator
 * library cannot be loaded).
 */
__rte_experimental
int rte_pmd_mlx5_lm_emu_profile_costs(const char *profile, unsigned int *cmd_slots,
				      unsigned int *host_pin_parallel,
				      struct rte_pmd_mlx5_lm_cost *costs, unsigned int n,
				      char *err, size_t errlen);

/* One region of guest memory, as a vhost-user memory table describes it. */
struct rte_pmd_mlx5_lm_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t hva;
	uint64_t page_size;
};

struct rte_pmd_mlx5_lm_mr_result {
	uint32_t chunks;
	uint32_t klm_entries;
	double create_ms;       /* registration, as dev_conf does it */
	double close_path_ms;   /* what releasing it costs the caller */
	double destroy_ms;      /* the destruction itself (in the caller or the GC) */
	uint64_t checked_pages;
	uint64_t verified_pages; /* translated by the device to the right host address */
};

/*
 * Benchmark and verify guest memory registration on device `name`:
 * register the table exactly as DRIVER_OK would, translate a sample of
 * guest pages (every chunk's first and last page plus `sample` spread over
 * the table) through the device's indirect mkey (emulated devices only),
 * release it as dev_close would and wait for its destruction.
 */
__rte_experimental
int rte_pmd_mlx5_lm_mr_bench(const char *name, const struct rte_pmd_mlx5_lm_region *regions,
			     unsigned int nregions, unsigned int sample,
			     struct rte_pmd_mlx5_lm_mr_result *res);

/*
 * What the PMD measured of its own last vhost-facing operations on a
 * device, in milliseconds: configuration at DRIVER_OK (dev_conf) with its
 * two phases, and the stop (dev_close) up to the point vhost may reply to
 * GET_VRING_BASE. conf_count counts successful configurations (DRIVER_OK,
 * done by the device's worker after dev_conf returned) since the probe, so
 * that a caller can wait for the configuration it triggered.
 */
struct rte_pmd_mlx5_lm_timings {
	double conf_ms;          /* last successful dev_conf, whole */
	double conf_mr_ms;       /* of which guest memory registration */
	double conf_vq_ms;       /* of which queue configuration (and steering) */
	double close_ms;         /* last dev_close */
	uint64_t conf_count;
	/*
	 * The memory table of the last successful configuration: a front end
	 * that changes it while running (memory hot-plug) restarts the device
	 * without a new vhost new_device callback.
	 */
	uint32_t mem_regions;
	uint64_t mem_bytes;
};

/*
 * Fill t for the probed device `name` (consistent: read under the device's
 * lock, so this waits for a dev_conf in progress). Returns 0, or -ENODEV.
 * Must not race the removal of the device.
 */
__rte_experimental
int rte_pmd_mlx5_lm_get_timings(const char *name, struct rte_pmd_mlx5_lm_timings *t);

/*
 * Where a device stands with its front end. DRIVER_OK is acknowledged by
 * vhost before the PMD configures the device, and the PMD configures it
 * in the device's own thread (so that vhost serves other devices
 * meanwhile): a failed configuration is reported here, not to vhost.
 */
enum rte_pmd_mlx5_lm_dev_state {
	RTE_PMD_MLX5_LM_STATE_STOPPED = 0,     /* no configuration (or stopped) */
	RTE_PMD_MLX5_LM_STATE_CONFIGURING = 1, /* DRIVER_OK taken, being configured */
	RTE_PMD_MLX5_LM_STATE_RUNNING = 2,     /* configured: queues RDY */
	RTE_PMD_MLX5_LM_STATE_FAILED = 3,      /* the last configuration failed */
};

struct rte_pmd_mlx5_lm_state {
	int state;                 /* enum rte_pmd_mlx5_lm_dev_state */
	int last_error;            /* negative errno of the last failed configuration, or 0 */
	char last_error_msg[128];  /* its reason, as logged */
	uint64_t conf_count;       /* successful configurations since probe */
	uint64_t conf_failures;    /* failed configurations since probe */
};

/*
 * Fill st for the probed device `name`; never waits for a configuration
 * in progress. Returns 0, or -ENODEV. Must not race the removal of the
 * device.
 */
__rte_experimental
int rte_pmd_mlx5_lm_get_state(const char *name, struct rte_pmd_mlx5_lm_state *st);

/*
 * Vet a vhost-user message before DPDK 22.11's vhost library uses it
 * (msg: what a pre_msg_handle of rte_vhost_extern_callback_register()
 * receives). Refuses, with one log line and the message's fds closed,
 * what would crash vhost or the device later: a memory region whose
 * mmap_offset + size lies past the end of its fd's file, SET_LOG_BASE
 * with a non-zero mmap_offset or a log fd smaller than the declared size.
 * Returns RTE_VHOST_MSG_RESULT_NOT_HANDLED (vhost goes on) or
 * RTE_VHOST_MSG_RESULT_ERR (vhost fails the message).
 */
__rte_experimental
int rte_pmd_mlx5_lm_vhost_vet(int vid, void *msg);

/*
 * After DPDK 22.11's vhost handled a message (msg: what a post_msg_handle
 * receives): at a ring's SET_VRING_KICK, a destination whose guest memory
 * was prepared gets its mkey (and, with preconf=2, the queue its fields)
 * ahead of DRIVER_OK (devarg preconf).
 * Never changes vhost's answer: returns RTE_VHOST_MSG_RESULT_NOT_HANDLED.
 */
__rte_experimental
int rte_pmd_mlx5_lm_vhost_post(int vid, void *msg);

/*
 * Register rte_pmd_mlx5_lm_vhost_vet() and rte_pmd_mlx5_lm_vhost_post()
 * as the pre_msg_handle and post_msg_handle of vhost device vid: call it
 * from the new_connection callback of every socket served by this PMD (an
 * application with its own extern ops calls them from its handlers
 * instead). It also counts the connection on its device until vhost's
 * dev_cleanup for its close: the device's removal fails (-EBUSY) while any
 * is connected, owner or not. 0, -ENOTSUP (not DPDK 22.11's message
 * layout), or -EINVAL.
 */
__rte_experimental
int rte_pmd_mlx5_lm_vhost_vet_register(int vid);

/*
 * DPDK 22.11's vhost reads a message's payload with a blocking read in
 * its one thread: a front end that announces a payload and never sends
 * it stops the messages of every socket until it disconnects. Give the
 * connections of vhost device vid's socket a receive timeout of ms: such
 * a read then fails and vhost closes that connection. And a send timeout
 * of ms: vhost sends each reply with a blocking sendmsg, which a front end
 * that reads none of its replies held the same way; each such reply then
 * waits at most ms. Call it from new_connection. 0, or a negative errno
 * (connection not found).
 */
__rte_experimental
int rte_pmd_mlx5_lm_vhost_msg_timeout(int vid, unsigned int ms);

/*
 * Preparation: the guest memory of a front end that has not sent its
 * memory table yet (a migration's destination) registered ahead, as
 * background work that yields to every device's start and stop. A region
 * of the table that DRIVER_OK brings later uses it when its file (st_dev,
 * st_ino), offset and length lie in a prepared region, and that file
 * was neither resized nor modified other than through a mapping since
 * (truncation, a hole punched, write(2)); the rest of the table is
 * registered as usual. Not used at all when its chunks would cut the
 * table into more KLM entries than the device's mkey takes (a prepared
 * chunk boundary inside a region adds one), which the status's reason
 * says. Released when used by no DRIVER_OK within
 * prereg_ttl_ms, when the device's front end disconnects or pid exits,
 * when the device is removed, or by rte_pmd_mlx5_lm_prepare_cancel().
 */
struct rte_pmd_mlx5_lm_prep_region {
	int fd;           /* the memory's file (memfd, hugetlbfs, /dev/shm): read, not kept */
	uint64_t offset;  /* in the file, a multiple of its page size */
	uint64_t size;    /* a multiple of its page size, within the file */
};

enum rte_pmd_mlx5_lm_prep_state {
	RTE_PMD_MLX5_LM_PREP_NONE = 0,      /* never prepared */
	RTE_PMD_MLX5_LM_PREP_PREPARING = 1, /* registering in the background */
	RTE_PMD_MLX5_LM_PREP_READY = 2,     /* registered, waiting for DRIVER_OK */
	RTE_PMD_MLX5_LM_PREP_USED = 3,      /* a DRIVER_OK took (part of) it */
	RTE_PMD_MLX5_LM_PREP_RELEASED = 4,  /* given up unused: reason says why */
	RTE_PMD_MLX5_LM_PREP_FAILED = 5,    /* the registration failed: error, reason */
};

struct rte_pmd_mlx5_lm_prep_status {
	int state;               /* enum rte_pmd_mlx5_lm_prep_state */
	int error;               /* negative errno of a failure, or 0 */
	int pid;                 /* the front end it was made for, 0: not checked */
	uint32_t regions;
	uint32_t chunks;
	uint64_t bytes;          /* prepared */
	double start_ms, end_ms; /* the registration, CLOCK_MONOTONIC milliseconds */
	uint64_t used_bytes;     /* of the last DRIVER_OK's table: from the preparation */
	uint64_t fallback_bytes; /* of it: registered at DRIVER_OK after all */
	uint64_t preparations;   /* started since probe */
	char reason[160];        /* why it was released, or why a part was not used */
};

/*
 * Start preparing device `name` with regions r[0..n-1] for front end pid
 * (> 0: the vhost-user connection's peer must be that process at
 * DRIVER_OK; 0: not checked). Returns at once: 0 (progress in
 * rte_pmd_mlx5_lm_prepare_status), -ENODEV, -EINVAL (a region unusable,
 * logged), -E2BIG (beyond prereg_max_gb), -EOPNOTSUPP (the front end
 * negotiated postcopy, whose faults pinning would all take at once, or
 * prereg_max_gb=0). An unused earlier preparation of the device is
 * released first.
 */
__rte_experimental
int rte_pmd_mlx5_lm_prepare(const char *name, int pid,
			    const struct rte_pmd_mlx5_lm_prep_region *r, unsigned int n);
/* 0 or -ENODEV; st->state NONE before any preparation. */
__rte_experimental
int rte_pmd_mlx5_lm_prepare_status(const char *name, struct rte_pmd_mlx5_lm_prep_status *st);
/*
 * Wait, at most timeout_ms, until the preparation is no longer PREPARING:
 * 0, -ETIMEDOUT, or -ENODEV (no such device, or removed meanwhile: the
 * removal does not wait for the timeout).
 */
__rte_experimental
int rte_pmd_mlx5_lm_prepare_wait(const char *name, unsigned int timeout_ms);
/* Release an unused preparation (deferred, in its own thread). 0, -ENODEV or -ENOENT. */
__rte_experimental
int rte_pmd_mlx5_lm_prepare_cancel(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* RTE_PMD_MLX5_LM_H */
