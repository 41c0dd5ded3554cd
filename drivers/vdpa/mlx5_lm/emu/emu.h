/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated ConnectX: a device model that receives the bytes of PRM
 * commands, validates them as firmware would, keeps every object with its
 * references, charges the firmware cost model and (later) runs a virtio
 * data path. It depends on prm/ only; the DevX transport's emu back end is
 * its only caller in the driver. It never calls into the driver.
 */
#ifndef MLX5_LM_EMU_H
#define MLX5_LM_EMU_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct emu_dev;
struct emu_evch;
struct emu_profile;

/*
 * Syndromes the emulated firmware returns. Real firmware syndromes are
 * opaque 32-bit codes; ours carry a fixed prefix so that a trace reader
 * can tell them apart, and each names one rejection reason.
 */
enum emu_syndrome {
	EMU_SYND_NONE = 0,
	EMU_SYND_BAD_OPCODE = 0x5e0c0001,        /* status BAD_OP */
	EMU_SYND_BAD_INPUT_LEN = 0x5e0c0002,     /* status BAD_INPUT_LEN */
	EMU_SYND_BAD_OUTPUT_LEN = 0x5e0c0003,    /* status BAD_OUTPUT_LEN */
	EMU_SYND_BAD_OBJ_TYPE = 0x5e0c0004,      /* status BAD_PARAM */
	EMU_SYND_UNKNOWN_OBJ = 0x5e0c0005,       /* status BAD_RES: no such id */
	EMU_SYND_OBJ_IN_USE = 0x5e0c0006,        /* status RES_BUSY: still referenced */
	EMU_SYND_BAD_STATE_TRANSITION = 0x5e0c0007, /* status BAD_RES_STATE */
	EMU_SYND_MODIFY_NOT_ALLOWED = 0x5e0c0008,   /* status BAD_RES_STATE: fields outside INIT/SUSPEND */
	EMU_SYND_BAD_MODIFY_FIELD = 0x5e0c0009,  /* status BAD_PARAM: unknown/unmodifiable field bit */
	EMU_SYND_TOO_MANY_VIRTQS = 0x5e0c000a,   /* status EXCEED_LIM: > max_num_virtio_queues */
	EMU_SYND_BAD_PARAM = 0x5e0c000b,         /* status BAD_PARAM: a field value is invalid */
	EMU_SYND_BAD_REFERENCE = 0x5e0c000c,     /* status BAD_RES: a referenced object does not exist */
	EMU_SYND_UMEM_TOO_SMALL = 0x5e0c000d,    /* status BAD_PARAM: a range past its umem's end */
	EMU_SYND_TOO_MANY_ENTRIES = 0x5e0c000e,  /* status EXCEED_LIM: mkey entry list too long */
	EMU_SYND_QP_BAD_TRANSITION = 0x5e0c000f, /* status BAD_RES_STATE */
	/*
	 * status BAD_RES: a virtq umem's size (umem_N_size) below the current
	 * umem_N_buffer_param_a * queue_size + _b, as firmware answers a
	 * queue sized from stale parameters (Linux commit abb0dcf9938c
	 * "vdpa/mlx5: Fix firmware error on creation of 1k VQs": status bad
	 * resource(0x5))
	 */
	EMU_SYND_VQ_UMEM_BELOW_PARAMS = 0x5e0c0010,
	EMU_SYND_UMEM_NOT_BACKED = 0x5e0c00b5,   /* status BAD_PARAM: umem pages past their file (pin EFAULT) */
	EMU_SYND_UMEM_BAD_PGSZ = 0x5e0c00b6,     /* status BAD_PARAM: no page size of the bitmap fits */
	EMU_SYND_UMEM_BAD_OFFSET = 0x5e0c00b7,   /* status BAD_PARAM: object at an offset the umem cannot place */
	EMU_SYND_MR_MEMLOCK = 0x5e0c00b8,        /* pinning beyond RLIMIT_MEMLOCK (ib_umem_get: ENOMEM) */
	/* status BAD_PARAM: a writable pin of a file with writeback (Linux 6.5+ pin EFAULT) */
	EMU_SYND_UMEM_WRITEBACK_FILE = 0x5e0c00b9,
	/* Root steering (what the kernel lets into the NIC RX root) and RQT sizes. */
	EMU_SYND_RQT_SIZE_NOT_POW2 = 0x5e0c0050, /* status BAD_PARAM: RQT sizes are powers of 2 */
	EMU_SYND_ROOT_BAD_MATCH = 0x5e0c0051,    /* status BAD_PARAM: match mask/value refused */
	EMU_SYND_ROOT_NOT_MODELLED = 0x5e0c0052, /* status BAD_PARAM: criteria not modelled */
	EMU_SYND_ROOT_BAD_DEST = 0x5e0c0053,     /* status BAD_PARAM: not a TIR / NIC RX table */
	/* status BAD_PARAM: the command uses a capability the device does not report */
	EMU_SYND_CAP_NOT_SUPPORTED = 0x5e0c0031,
	/* Event path (0x5e0c00eN). */
	EMU_SYND_CQ_BAD_EQN = 0x5e0c00e1,        /* status BAD_PARAM: c_eqn is no completion EQ */
	EMU_SYND_CQ_BAD_UAR = 0x5e0c00e2,        /* status BAD_PARAM: uar_page not allocated */
	EMU_SYND_CQ_NO_UMEM = 0x5e0c00e3,        /* status BAD_PARAM: CQ ring/dbrec not in umems */
	EMU_SYND_QP_NO_LOOPBACK = 0x5e0c00e4,    /* status BAD_PARAM: INIT2RTR without ads.fl */
	EMU_SYND_QP_BAD_REMOTE = 0x5e0c00e5,     /* status BAD_PARAM: remote_qpn names no QP */
	EMU_SYND_QP_NO_RETRY = 0x5e0c00e6,       /* status BAD_PARAM: RTR2RTS without retries */
	/* status BAD_PARAM: doorbell_stride_index past the doorbell area's strides */
	EMU_SYND_VQ_BAD_STRIDE = 0x5e0c00e7,
	EMU_SYND_QP_BAD_UAR = 0x5e0c00e8,        /* status BAD_PARAM: QP uar_page not allocated */
	EMU_SYND_QP_BAD_TS_FORMAT = 0x5e0c00e9,  /* status BAD_PARAM: ts_format the caps refuse */
	EMU_SYND_VQ_CREATE_NOT_INIT = 0x5e0c00ea, /* status BAD_PARAM: virtq CREATE not INIT */
	/* status BAD_PARAM: virtio_version_1_0 on a device whose caps lack it */
	EMU_SYND_VQ_NO_VERSION_1 = 0x5e0c00eb,
	/* status BAD_PARAM: an mkey named by an object of another PD */
	EMU_SYND_MKEY_PD_MISMATCH = 0x5e0c00ec,
	/* Virtq context fields (0x5e0c007N); status BAD_PARAM. */
	/* offload_type reserved (2..15) or without its cap bit (eth_frame/desc_tunnel) */
	EMU_SYND_VQ_BAD_OFFLOAD_TYPE = 0x5e0c0070,
	/* max_tunnel_desc above the caps' max_tunnel_desc */
	EMU_SYND_VQ_BAD_TUNNEL_DESC = 0x5e0c0071,
	/* a TX (odd index) ETH_FRAME queue with tisn_or_qpn 0: no TIS to send through */
	EMU_SYND_VQ_TX_NO_TIS = 0x5e0c0072,
	/* queue_index at or past max_num_virtio_queues */
	EMU_SYND_VQ_BAD_INDEX = 0x5e0c0073,
	/* a non-zero desc_group_mkey without desc_group_mkey_supported */
	EMU_SYND_VQ_NO_DESC_GROUP_MKEY = 0x5e0c0074,
	EMU_SYND_INJECTED = 0x5e0cfa17,          /* default syndrome of an injected fault */
};

/*
 * Log sink: the emulator sits below the driver and does not depend on
 * DPDK; the transport routes these lines to the PMD's emu log type.
 * level is syslog style (3 error, 4 warning, 6 info, 7 debug). Default:
 * stderr for levels <= 4.
 */
typedef void (*emu_log_fn)(int level, const char *line);
void emu_set_log(emu_log_fn fn);

/* ---- Cost-model profiles ------------------------------------------------ */
/*
 * Load a profile: "cx6dx" (the shared firmware model, built in), "fast"
 * (zero cost, built in) or a path to a JSON file with the same schema.
 */
int emu_profile_load(const char *name_or_path, struct emu_profile **out,
		     char *err, size_t errlen);
void emu_profile_free(struct emu_profile *p);
const char *emu_profile_name(const struct emu_profile *p);
unsigned int emu_profile_cmd_slots(const struct emu_profile *p);
/* Cost in microseconds of a cost-model entry ("CREATE_VIRTQ", ...); < 0 if absent. */
double emu_profile_cost_us(const struct emu_profile *p, const char *cmd, double gib,
			   double entries);
unsigned int emu_profile_host_pin_parallel(const struct emu_profile *p);

/*
 * Host pinning tokens shared by the processes of one run: with
 * MLX5_LM_EMU_HOST=<name> set, every emulated device of the process takes
 * its host pinning tokens from the POSIX semaphore named by
 * emu_host_sem_name(<name>), which the run's parent creates (sem_open
 * O_CREAT, value host_pin_parallel) before its children start and
 * unlinks at the end; unset: a counter of the process. A set name whose
 * semaphore does not exist is fatal (logged, abort), never ignored.
 */
#define EMU_HOST_ENV "MLX5_LM_EMU_HOST"
#define EMU_HOST_NAME_MAX 64
/*
 * "/mlx5-lm-host-<host>" into buf; -EINVAL (empty, '/'), -ENAMETOOLONG.
 * Inline: the program that creates the semaphore (dpdk-test-lm migrate
 * --processes) names it without linking the emulator, which its PMD loads.
 */
static inline int
emu_host_sem_name(const char *host, char *buf, size_t len)
{
	int n;

	if (host == NULL || host[0] == '\0' || strchr(host, '/') != NULL)
		return -EINVAL;
	if (strlen(host) >= EMU_HOST_NAME_MAX)
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "/mlx5-lm-host-%s", host);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
/*
 * The terms of entry cmd (absent terms are 0): 0, or -ENOENT when the
 * profile has no such entry.
 */
int emu_profile_entry(const struct emu_profile *p, const char *cmd, double *base_us,
		      double *per_gib_us, double *per_entry_us);

/* ---- Devices ------------------------------------------------------------- */
/* Create an emulated device with a profile (see emu_profile_load). */
struct emu_dev *emu_dev_create(const char *name, const char *profile, char *err, size_t errlen);
/*
 * Destroy the device. Every object still alive is reported (one log line
 * each, naming type, id and state), counted in emu_leaked_total() and
 * freed. Returns the number of objects that were still alive.
 */
int emu_dev_destroy(struct emu_dev *dev);
const char *emu_dev_name(const struct emu_dev *dev);
/* Objects currently alive in the device (umems included). */
unsigned int emu_dev_live_objects(struct emu_dev *dev);
/* Objects found alive at emu_dev_destroy(), summed over the process. */
unsigned long emu_leaked_total(void);
/*
 * Devices not destroyed and objects not freed, in the whole process (what a
 * driver that never closes its devices leaves, which emu_leaked_total()
 * cannot see); desc (may be NULL) names the kinds, e.g. "2 devices, 3 MKEY".
 */
unsigned long emu_live_total(char *desc, size_t len);
/* Number of commands executed with this opcode (any status). */
unsigned long emu_dev_cmd_count(struct emu_dev *dev, uint16_t opcode);

/*
 * The cost model's account of a device since its creation: what it
 * charged (the model's own sum of command costs) and what the emulator's
 * sleeps really took, so that a benchmark can tell the model's time from
 * the host's overshoot (timer slack, wake-up latency, emulation work).
 * Zero-cost profiles charge nothing.
 */
struct emu_cost_stats {
	uint64_t cmds;             /* charges that held a command slot */
	double model_us;           /* their modelled time, summed */
	double actual_us;          /* the time they held their slot, summed */
	double overshoot_max_us;   /* largest actual - modelled of one charge */
	uint64_t pins;             /* host pinning charges (a pin token, no slot) */
	double pin_model_us;
	double pin_actual_us;
};
void emu_dev_cost_stats(struct emu_dev *dev, struct emu_cost_stats *s);

/*
 * Execute one PRM command mailbox as the firmware would. The output header
 * (status, syndrome) is always written when outlen allows. Returns 0 when
 * the command was executed (whatever its status), -EINVAL when out is too
 * small to hold even the header.
 */
int emu_cmd(struct emu_dev *dev, const void *in, size_t inlen, void *out, size_t outlen);

/*
 * Register host memory (what the kernel does for mlx5dv_devx_umem_reg,
 * whose rdma-core 44 sends the bitmap EMU_UMEM_PGSZ_DEFAULT). Returns 0
 * and sets *id, or a PRM status (> 0) with *syndrome set.
 */
int emu_umem_reg(struct emu_dev *dev, void *addr, size_t size, uint32_t access,
		 uint32_t *id, uint32_t *syndrome);
/*
 * The same with the page sizes the device may describe it with
 * (mlx5dv_devx_umem_reg_ex's pgsz_bitmap; 0: none passed, as the plain
 * call, whose bitmap the kernel may drop: then every object built on the
 * umem must be at offset 0). The kernel picks the page size (devx.c
 * devx_umem_find_best_pgsize) from the bitmap and the host's page size.
 */
int emu_umem_reg_ex(struct emu_dev *dev, void *addr, size_t size, uint32_t access,
		    uint64_t pgsz_bitmap, uint32_t *id, uint32_t *syndrome);
/* Every page size from 4 KiB: what rdma-core 44's plain mlx5dv_devx_umem_reg sends. */
#define EMU_UMEM_PGSZ_DEFAULT (~(uint64_t)4095)
/* Returns 0, or a PRM status (RES_BUSY when an mkey or virtq still uses it). */
int emu_umem_dereg(struct emu_dev *dev, uint32_t id, uint32_t *syndrome);
/* The host page size of the device's profile ("host_page_size"). */
uint64_t emu_dev_host_page_size(const struct emu_dev *dev);

/*
 * Doorbell write (a kick) at offset in the device's BAR: the value is the
 * virtq's queue index. 0, or -EINVAL (logged) when the offset is outside the
 * doorbell area the caps announce (doorbell_bar_offset, log_doorbell_bar_size).
 */
int emu_doorbell(struct emu_dev *dev, uint32_t offset, uint32_t value);
/*
 * A doorbell write seen in a mapped page, where two kicks may have merged
 * into the last value written (DPDK's vdpa/mlx5 writes every queue index at
 * the same address): a kick of the named queue and of every other RDY queue.
 */
int emu_doorbell_merged(struct emu_dev *dev, uint32_t offset, uint32_t value);

/*
 * UAR pages and completion EQs: what the kernel hands a DevX context
 * (mlx5dv_devx_alloc_uar, mlx5dv_devx_query_eqn). A CQ names both at
 * creation (cqc.uar_page, cqc.c_eqn); the driver arms a CQ by a 64-bit
 * write at offset EMU_UAR_CQ_DOORBELL of its UAR page:
 *   value = (sn << 28 | cmd << 24 | ci) << 32 | cqn
 * (sn: 2-bit arm sequence number, cmd 0 = next completion, 1 = solicited).
 * UAR pages are device objects (kind UAR), counted and leak-reported.
 */
#define EMU_UAR_CQ_DOORBELL 0x20u
#define EMU_NUM_COMP_EQS 8u         /* completion vectors of the emulated function */
/* Returns 0 and the page index, -ENOMEM, or a fault-injected -EIO. */
int emu_uar_alloc(struct emu_dev *dev, uint32_t *page_id);
/* Returns 0, -ENOENT for an unknown page, -EBUSY while an object holds it. */
int emu_uar_free(struct emu_dev *dev, uint32_t page_id);
/* A write of the driver at offset of UAR page page_id (see above). */
void emu_uar_write(struct emu_dev *dev, uint32_t page_id, uint32_t offset, uint64_t value);
/*
 * The same write seen in a mapped page (the emulated rdma-core's watcher),
 * where CQ doorbells of several CQs sharing the page may have merged into
 * the last value written (all write offset 0x20; the device receives each
 * MMIO write, the watcher only what is there when it looks): besides the
 * named CQ, every CQ of the page whose doorbell record holds an arm
 * request not seen yet (or that no doorbell reached yet: the first arm's
 * record, sn 0 ci 0, may equal the initial one) is armed from it (the
 * mlx5 arm writes the record's
 * arm dword before the UAR: rdma-core mlx5_arm_cq, Linux mlx5_cq_arm).
 */
void emu_uar_write_merged(struct emu_dev *dev, uint32_t page_id, uint32_t offset,
			  uint64_t value);
/* Completion EQ number of completion vector `vector`: 0, or -EINVAL out of range. */
int emu_eqn_query(struct emu_dev *dev, uint32_t vector, uint32_t *eqn);

/* ---- NIC RX root steering (the kernel's) ---------------------------------------- */
/*
 * The NIC RX root flow table of a function belongs to the kernel:
 * SET_FLOW_TABLE_ROOT is in none of devx.c's allow-lists, so a flow
 * table user space creates through DevX is reached by no frame unless
 * a rule in the root forwards to it. User space adds root rules through
 * mlx5_ib's flow steering: mlx5dv_create_flow_matcher (table type NIC
 * RX, priority, match criteria) + mlx5dv_create_flow (match value, a
 * DEST_DEVX action naming a TIR or a flow table). mlx5dv_dr's level-0
 * NIC RX table is that root too: one dr matcher (priority, criteria,
 * mask) and rule (value, dest_devx_tir or a dest table) map onto one
 * root rule each, as rdma-core does it through the same kernel calls
 * (DPDK vdpa/mlx5: priorities 5..7, outer ip_version/ip_protocol, to
 * TIRs). These entry points are
 * what the kernel does for those calls: each rule is a live object
 * (leak-reported), holds its destination (destroying a TIR or table a
 * root rule forwards to fails RES_BUSY), and the wire consults the root
 * rules by ascending priority (then creation order), first match wins.
 * The firmware sees a SET_FLOW_TABLE_ENTRY / DELETE_FLOW_TABLE_ENTRY on
 * the root table: those opcodes are counted, charged and fault-injected.
 */
enum emu_root_dest_type {
	EMU_ROOT_DEST_TIR = 1,
	EMU_ROOT_DEST_FLOW_TABLE = 2,    /* a NIC RX flow table made through DevX */
};
/* fte_match_param, bytes: what the kernel takes as match mask and value at most. */
#define EMU_FTE_MATCH_PARAM_LEN 512u
struct emu_root_rule_attr {
	uint16_t priority;
	uint8_t match_criteria_enable;   /* PRM_MATCH_CRITERIA_ENABLE_* */
	const void *match_mask;          /* fte_match_param bytes (NULL: none) */
	const void *match_value;
	size_t match_len;                /* bytes of each, <= EMU_FTE_MATCH_PARAM_LEN */
	enum emu_root_dest_type dest_type;
	uint32_t dest_id;                /* tirn or table id */
};
/* Returns 0 and sets *rule_id, or a PRM status (> 0) with *syndrome set. */
int emu_root_rule_add(struct emu_dev *dev, const struct emu_root_rule_attr *attr,
		      uint32_t *rule_id, uint32_t *syndrome);
/* Returns 0, or a PRM status (BAD_RES for an unknown rule). */
int emu_root_rule_del(struct emu_dev *dev, uint32_t rule_id, uint32_t *syndrome);

/* ---- The kernel's side of DevX ------------------------------------------ */
/*
 * What Linux drivers/infiniband/hw/mlx5/devx.c lets through each rdma-core
 * DevX entry point (emu_kernel.c). Every way into the emulator that stands
 * for DevX (the transport's emu back end, the emulated rdma-core) checks a
 * mailbox here before handing it to emu_cmd(), which is the firmware.
 */
enum emu_kentry {
	EMU_KENTRY_GENERAL,  /* mlx5dv_devx_general_cmd: devx_is_general_cmd() */
	EMU_KENTRY_CREATE,   /* mlx5dv_devx_obj_create: devx_is_obj_create_cmd() */
	EMU_KENTRY_MODIFY,   /* mlx5dv_devx_obj_modify: devx_is_obj_modify_cmd(), valid obj id */
	EMU_KENTRY_QUERY,    /* mlx5dv_devx_obj_query: devx_is_obj_query_cmd(), valid obj id */
	EMU_KENTRY_DESTROY,  /* mlx5dv_devx_obj_destroy: the kernel's derived mailbox */
};
/* The object behind a DevX handle, as devx.c encodes it: creator opcode, obj_type, id. */
struct emu_kobj {
	uint16_t create_opcode;
	uint16_t obj_type;   /* general objects */
	uint32_t id;
};
const char *emu_kentry_name(enum emu_kentry e);
/* The object a successful create made (devx_get_created_obj_id()). 0 or -EINVAL. */
int emu_kernel_created_obj(const void *in, size_t inlen, const void *out, size_t outlen,
			   struct emu_kobj *obj);
/*
 * May entry point e carry this mailbox, for the handle's object obj (NULL
 * for general and create)? 0, or -EINVAL with a log line citing the rule.
 */
int emu_kernel_check(struct emu_dev *dev, enum emu_kentry e, const void *in, size_t inlen,
		     const struct emu_kobj *obj);
/*
 * Entry point e with the kernel's handling: emu_kernel_check, then the
 * mailbox as the kernel copies it in and amends it before the firmware
 * sees it (Linux devx.c devx_set_umem_valid, devx_handle_mkey_create: the
 * *_umem_valid bits of a create or MODIFY_CQ set, whatever the caller
 * wrote), then emu_cmd. -EINVAL when the kernel refuses, else emu_cmd's
 * answer.
 */
int emu_kernel_cmd(struct emu_dev *dev, enum emu_kentry e, const void *in, size_t inlen,
		   const struct emu_kobj *obj, void *out, size_t outlen);
/*
 * May the events ev[0..n) of obj be subscribed to (Linux devx.c
 * MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT, is_valid_events)? 0, or -EINVAL
 * with a log line citing the rule.
 */
int emu_kernel_check_subscribe(struct emu_dev *dev, const struct emu_kobj *obj,
			       const uint16_t *ev, size_t n);
/*
 * The destroy mailbox the kernel derives at create (devx_obj_build_destroy_cmd)
 * into din (>= 64 bytes). 0, or -EINVAL for an object it cannot destroy.
 */
int emu_kernel_destroy_cmd(const void *create_in, size_t inlen, const struct emu_kobj *obj,
			   void *din, size_t dinsize, size_t *dinlen);
/*
 * The firmware commands the kernel runs itself for verbs calls. Each
 * returns 0 or the PRM status (> 0) with *syndrome set.
 * ibv_alloc_pd / ibv_dealloc_pd: ALLOC_PD / DEALLOC_PD (RES_BUSY while used).
 */
int emu_kernel_alloc_pd(struct emu_dev *dev, uint32_t *pdn, uint32_t *syndrome);
int emu_kernel_dealloc_pd(struct emu_dev *dev, uint32_t pdn, uint32_t *syndrome);
/* ibv_alloc_null_mr: the context's dump-fill mkey (QUERY_SPECIAL_CONTEXTS, by the kernel). */
int emu_kernel_null_mkey(struct emu_dev *dev, uint32_t *mkey, uint32_t *syndrome);
/*
 * ibv_reg_mr_iova (Linux mlx5_ib mr.c mlx5_ib_reg_user_mr): the kernel
 * pins [addr, addr+len) (ib_umem_get), picks the page size for the iova
 * (mlx5_umem_find_best_pgsz), uploads the page list and creates an MTT
 * mkey in PD pdn whose addresses are iova, with a fresh variant byte
 * (assign_mkey_variant). The firmware sees CREATE_MKEY (counted, charged
 * and fault-injected under that opcode); the cost model charges the pin,
 * the page list upload and the mkey as for a umem + mkey. *lkey gets the
 * key. Returns 0 or a PRM status with *syndrome set.
 */
int emu_kernel_reg_mr(struct emu_dev *dev, uint32_t pdn, void *addr, size_t len, uint64_t iova,
		      uint32_t access, uint32_t *lkey, uint32_t *syndrome);
/* ibv_dereg_mr: DESTROY_MKEY and the unpin. 0 or a PRM status. */
int emu_kernel_dereg_mr(struct emu_dev *dev, uint32_t lkey, uint32_t *syndrome);

/* ---- Data path and wire ---------------------------------------------------- */
/*
 * The data path processes the rings of every RDY virtq in a per-device
 * thread (started when the first queue becomes RDY, joined by
 * emu_dev_destroy), through the queue's mkey only. Even queue_index =
 * RX, odd = TX. TX frames go to the uplink; received frames are steered
 * by the NIC RX root rules (-> flow tables) -> TIR -> RQT (Toeplitz RSS)
 * to an RX queue.
 */
/* error_type of a queue the data path moved to ERR (QUERY shows it). */
enum emu_vq_error {
	EMU_VQ_ERROR_BAD_DESC = 1,        /* malformed descriptor, or address not mapped */
	EMU_VQ_ERROR_EXCEED_MAX_CHAIN = 2, /* chain longer than queue_size (a loop) */
};
/* Frames an RX queue keeps while the guest has no buffer posted. */
#define EMU_DP_RX_BACKLOG 1024u

/* A frame leaving the device on its wire (no virtio-net header). */
typedef void (*emu_wire_tx_fn)(void *ctx, const void *frame, size_t len);
/*
 * Attach a wire: fn receives every TX frame (called from the data path
 * thread, without device locks held). NULL fn = loopback (the default):
 * TX frames come back as received frames of the same device. Returns 0
 * once no call to the previous fn is in flight (so not from within fn).
 */
int emu_dev_set_uplink(struct emu_dev *dev, emu_wire_tx_fn fn, void *ctx);
/*
 * A frame arriving from the wire, steered like any received frame.
 * Returns 0 when queued for an RX queue, -ENOENT when dropped for lack
 * of steering or of a RDY target, -ENOBUFS when that queue's backlog is
 * full, -EINVAL for a bad length. Drops are counted.
 */
int emu_dev_wire_rx(struct emu_dev *dev, const void *frame, size_t len);
/* Frames sent to the wire, received from it (loopback included), dropped. */
void emu_dev_wire_stats(struct emu_dev *dev, uint64_t *tx_frames, uint64_t *rx_frames,
			uint64_t *drops);
/*
 * Wait until the data path has no queue with pending work (every kick,
 * RDY transition and deliverable frame handled). 0, or -ETIMEDOUT.
 */
int emu_dev_dp_wait_idle(struct emu_dev *dev, unsigned int timeout_ms);

/* ---- Events -------------------------------------------------------------- */
/*
 * An event as a channel holds it: the subscriber's cookie and the whole
 * event queue entry the device wrote (PRM eqe: type at byte 1, the data
 * at byte 32), which is what the kernel copies to a DevX event channel's
 * reader (Linux devx.c deliver_event). type and obj_id repeat what the
 * EQE says, for the emulator's own bookkeeping.
 */
struct emu_event {
	uint64_t cookie;
	uint64_t sub;      /* the subscription that queued it (devx.c event_sub), unique */
	uint16_t type;     /* PRM_EVENT_*, = eqe.event_type */
	uint32_t obj_id;   /* the object the EQE names */
	uint8_t eqe[64];   /* PRM eqe */
};
struct emu_evch *emu_evch_create(struct emu_dev *dev);
void emu_evch_destroy(struct emu_evch *ch);
/* An eventfd that is readable while events are pending. */
int emu_evch_fd(const struct emu_evch *ch);
/*
 * Subscribe to events of the object created by `create_opcode` (and
 * obj_type for general objects) with number id.
 */
int emu_evch_subscribe(struct emu_evch *ch, uint16_t create_opcode, uint16_t obj_type,
		       uint32_t id, uint16_t type, uint64_t cookie);
/*
 * Returns 1 and fills ev when an event was pending, 0 when none, and
 * -EOVERFLOW once after the channel's bounded list had to drop an event
 * (emu_evch_hold), as the kernel's event file returns it once after an
 * event it could not queue (Linux devx.c deliver_event sets
 * is_overflow_err, devx_async_event_read reports and clears it).
 */
int emu_evch_read(struct emu_evch *ch, struct emu_event *ev);
/*
 * Test hooks: a reader that falls behind. emu_evch_hold bounds every
 * channel of dev to depth queued events (0: unbounded, the default) and
 * keeps what is queued from the reader (the fd is not signalled, reads
 * find nothing) until emu_evch_release, which signals it all and lifts
 * the bound. An event past the bound is dropped and the channel
 * overflows (-EOVERFLOW at its next read). emu_evch_overflows: the
 * events dropped so far on dev's channels.
 */
void emu_evch_hold(struct emu_dev *dev, unsigned int depth);
/*
 * Test hook: raise event type on the object created by create_opcode
 * (obj_type for general objects) numbered id, as the device would
 * (affiliated events name it in their affiliated_event_header). 0, or
 * -ENOENT when there is no such object.
 */
int emu_event_inject(struct emu_dev *dev, uint16_t create_opcode, uint16_t obj_type,
		     uint32_t id, uint16_t type);
void emu_evch_release(struct emu_dev *dev);
unsigned long emu_evch_overflows(struct emu_dev *dev);

/* ---- Test and benchmark hooks -------------------------------------------- */
/*
 * Make the nth (1-based) next command with this opcode (and obj_type for
 * general-object commands; 0xffff = any) fail with status/syndrome
 * without executing. Also settable for a whole process through the
 * environment: MLX5_LM_EMU_FAULT="opcode:nth:status[:obj_type]" (numbers
 * in C syntax), applied to every device created afterwards.
 */
int emu_fault_inject(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, unsigned int nth,
		     uint8_t status, uint32_t syndrome);
/*
 * The virtio emulation caps' umem_1/2/3_buffer_param_a/b (index 0..2) are
 * current values, not fixed ones: firmware changes them at runtime, e.g.
 * when the PF's MTU is set to 9000 after the switch to switchdev (Linux
 * commit abb0dcf9938c "vdpa/mlx5: Fix firmware error on creation of 1k
 * VQs"). Set them as that firmware does: QUERY_HCA_CAP reports them from
 * now on, and a CREATE of VIRTIO_NET_Q whose umem i holds less than
 * a[i] * queue_size + b[i] is refused (BAD_RES, EMU_SYND_VQ_UMEM_BELOW_PARAMS);
 * queues created before keep running. 0, or -EINVAL (NULL, a[i] past
 * EMU_UMEM_PARAM_A_MAX or b[i] past EMU_UMEM_PARAM_B_MAX: a size for the
 * largest queue past 32 bits, which umem_N_size cannot say).
 */
#define EMU_UMEM_PARAM_A_MAX 0x10000u
#define EMU_UMEM_PARAM_B_MAX 0x7fffffffu
int emu_dev_set_umem_params(struct emu_dev *dev, const uint32_t a[3], const uint32_t b[3]);
/* The umem parameters the device reports now. */
void emu_dev_umem_params(struct emu_dev *dev, uint32_t a[3], uint32_t b[3]);
/* Move a RDY virtq to ERR with error_type and post OBJECT_CHANGE. */
int emu_virtq_force_error(struct emu_dev *dev, uint32_t virtq_id, uint8_t error_type);
/*
 * Device writes that dirty logging could not mark, the page being outside
 * the bitmap (or the bitmap not translating): of one virtq (-ENOENT when
 * there is none), or of the whole device since it was created.
 */
int emu_virtq_log_misses(struct emu_dev *dev, uint32_t virtq_id, uint64_t *misses);
unsigned long emu_dev_log_misses(struct emu_dev *dev);
/*
 * Translate [addr, addr+len) through mkey (indirect -> direct -> umem) to
 * a host pointer. Returns 0, or -EFAULT when any byte is not covered.
 */
int emu_mkey_translate(struct emu_dev *dev, uint32_t mkey, uint64_t addr, size_t len,
		       void **host);

#endif /* MLX5_LM_EMU_H */
