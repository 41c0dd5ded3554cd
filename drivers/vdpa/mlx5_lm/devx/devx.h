/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport: the one seam between the driver and a device.
 *
 * The driver builds PRM command mailboxes (prm/) and hands them to this
 * layer, which executes them on one of two back ends:
 *   - rdma: rdma-core mlx5dv DevX on a real ConnectX (ibdev=<name>);
 *   - emu:  the emulated ConnectX (emu=<profile>), which sees the very
 *           same bytes.
 * Every command (and umem/doorbell/event operation) can be traced as JSON
 * lines (devx_trace=PATH) with the same format for both back ends. The
 * emu back end lives in the emulator library, loaded at the first emu=
 * open; what only an emulated device answers is in devx_emu.h.
 *
 * All calls are thread safe: parallelism towards the firmware comes from
 * issuing commands from several threads (rdma-core DevX calls are
 * synchronous ioctls, and so are the emulator's).
 */
#ifndef MLX5_LM_DEVX_H
#define MLX5_LM_DEVX_H

#include <stddef.h>
#include <stdint.h>

struct devx_ctx;
struct devx_obj;
struct devx_umem;
struct devx_db;
struct devx_evch;
struct devx_flow;
struct devx_uar;
struct devx_pd;
struct devx_mr;

struct devx_open_params {
	const char *name;        /* device name for logs and trace ("vdpa_mlx5_lm0") */
	const char *emu_profile; /* emulated back end: profile name or JSON path */
	const char *ibdev;       /* rdma back end: RDMA device name */
	/*
	 * Or the RDMA device whose parent device (sysfs <ibdev_path>/device) is
	 * this PCI function (dddd:bb:dd.f) or auxiliary device (an SF): names
	 * that stay the same across reboots, unlike mlx5_<n>.
	 */
	const char *parent;
	const char *trace_path;  /* JSON-lines command trace, NULL for none */
};

/*
 * Open a device context on the back end selected by params (exactly one of
 * emu_profile / ibdev). On failure returns a negative errno and writes a
 * one-line reason into err.
 */
int devx_open(const struct devx_open_params *params, struct devx_ctx **ctx,
	      char *err, size_t errlen);
/*
 * Close a context. Returns the number of device objects the device still
 * held (the emulator counts them; the rdma back end returns 0).
 */
int devx_close(struct devx_ctx *ctx);
const char *devx_name(const struct devx_ctx *ctx);
/* 1 when the context is an emulated device. */
int devx_is_emulated(const struct devx_ctx *ctx);
/*
 * Execute a general command: only what the kernel lets through
 * mlx5dv_devx_general_cmd (Linux devx.c devx_is_general_cmd: QUERY_HCA_CAP
 * and the other QUERY_* of its list, NOP, the 0xb00-0xd00 range); object
 * commands (QP transitions, MODIFY_RQT, ...) go through devx_obj_modify on
 * the object's handle, and both back ends refuse them here with -EINVAL.
 * Returns 0 when the device answered with status 0; -EIO when it answered
 * with a non-zero status (status and syndrome are in out, and logged);
 * another negative errno when the command could not be delivered.
 */
int devx_cmd(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen);

/*
 * Create an object from a CREATE_* / ALLOC_* mailbox. Returns the object or
 * NULL (errno set; out holds status and syndrome when the device answered).
 * The matching DESTROY command is derived from the create input, as the
 * kernel does for rdma-core, so destroy needs no mailbox.
 */
struct devx_obj *devx_obj_create(struct devx_ctx *ctx, const void *in, size_t inlen,
				 void *out, size_t outlen);
int devx_obj_modify(struct devx_obj *obj, const void *in, size_t inlen,
		    void *out, size_t outlen);
int devx_obj_query(struct devx_obj *obj, const void *in, size_t inlen,
		   void *out, size_t outlen);
/* Destroy; on failure the object stays valid and a negative errno is returned. */
int devx_obj_destroy(struct devx_obj *obj);
/* Object number: general obj_id, or the 24-bit pd/tdn/tisn/cqn/qpn/mkey index. */
uint32_t devx_obj_id(const struct devx_obj *obj);
/* For mkeys: the key (index << 8 | mkey_7_0) that goes into virtq/KLM fields. */
uint32_t devx_obj_mkey(const struct devx_obj *obj);

/*
 * Receive steering from the NIC RX root. The root flow table belongs to
 * the kernel (no DevX command attaches a table to it: devx.c allows no
 * SET_FLOW_TABLE_ROOT), so a rule in it is made through the kernel's flow
 * steering: rdma: mlx5dv_create_flow_matcher (NIC RX, priority, criteria)
 * + mlx5dv_create_flow (value, one MLX5DV_FLOW_ACTION_DEST_DEVX action);
 * emu: emu_root_rule_add. Frames matching mask/value (fte_match_param
 * bytes, match_len of each) go to dest, a TIR or a NIC RX flow table made
 * with devx_obj_create, which the rule holds: dest cannot be destroyed
 * before the rule. Lower priority values are matched first. Returns the
 * rule, or NULL with errno set (EIO: the device refused it, logged).
 */
struct devx_flow_attr {
	uint16_t priority;
	uint8_t match_criteria_enable;   /* PRM_MATCH_CRITERIA_ENABLE_* */
	const void *match_mask;
	const void *match_value;
	size_t match_len;
};
struct devx_flow *devx_root_flow_create(struct devx_ctx *ctx, const struct devx_flow_attr *attr,
					struct devx_obj *dest);
/* Destroy; on failure the rule stays valid and a negative errno is returned. */
int devx_root_flow_destroy(struct devx_flow *flow);

/*
 * Protection domain with its null mkey, the way the reference drivers get
 * them: rdma = ibv_alloc_pd + mlx5dv_init_obj (pdn) + ibv_alloc_null_mr
 * (QUERY_SPECIAL_CONTEXTS is not a DevX command, the kernel refuses it);
 * emu = what the kernel does for those calls. Objects that name a PD must
 * name this one, the PD the null mkey belongs to.
 */
struct devx_pd *devx_pd_alloc(struct devx_ctx *ctx);
/* Free; on failure (objects still use the PD) it stays valid and a negative errno is returned. */
int devx_pd_free(struct devx_pd *pd);
uint32_t devx_pd_id(const struct devx_pd *pd);
uint32_t devx_pd_null_mkey(const struct devx_pd *pd);

/*
 * A memory region: [addr, addr+len) of this process, reached by the device
 * at [iova, iova+len) through the returned key, in the PD pd, the way the
 * kernel supports it (rdma: ibv_reg_mr_iova, Linux mlx5_ib_reg_user_mr:
 * the kernel pins the pages, picks the page size for the iova and builds
 * the mkey; emu: the same, modelled). access is IBV_ACCESS_* flags.
 * Guest memory goes through this: a DevX umem is described for its host
 * range only (devx.c devx_umem_reg_cmd_alloc), not for an iova. Returns the
 * region or NULL with errno set (EIO: the device refused it, logged).
 */
struct devx_mr *devx_mr_reg(struct devx_pd *pd, void *addr, size_t len, uint64_t iova,
			    uint32_t access);
/* Deregister; on failure the region stays valid and a negative errno is returned. */
int devx_mr_dereg(struct devx_mr *mr);
/* The key (lkey) that goes into virtq and KLM fields. */
uint32_t devx_mr_lkey(const struct devx_mr *mr);

/* Register host memory for device access (rdma: mlx5dv_devx_umem_reg). */
struct devx_umem *devx_umem_reg(struct devx_ctx *ctx, void *addr, size_t size,
				uint32_t access);
/*
 * The same with the page sizes the device may describe it with (rdma:
 * mlx5dv_devx_umem_reg_ex's pgsz_bitmap). Objects at a non-zero offset of
 * a umem need it (Linux devx.c devx_umem_reg_cmd_alloc: without one the
 * caller promises umem_offset 0), and their buffers must start at one of
 * its pages (or at a page/64 quantum, for CQ and QP page_offset).
 */
struct devx_umem *devx_umem_reg_pgsz(struct devx_ctx *ctx, void *addr, size_t size,
				     uint32_t access, uint64_t pgsz_bitmap);
int devx_umem_dereg(struct devx_umem *umem);
uint32_t devx_umem_id(const struct devx_umem *umem);

/*
 * Doorbell area for virtq kicks: a queue's doorbell is a 32-bit write of
 * its index at offset `doorbell_bar_offset + index << log_stride`.
 */
struct devx_db *devx_db_alloc(struct devx_ctx *ctx);
void devx_db_free(struct devx_db *db);
void devx_db_ring(struct devx_db *db, uint32_t offset, uint32_t value);
/* mmap-able file descriptor and page offset of the area (for the guest notifier); -1 if none. */
int devx_db_mmap_info(const struct devx_db *db, int *fd, uint64_t *offset, uint64_t *size);
/*
 * Which doorbell of the area the page is: VAR k is the doorbell at
 * doorbell_bar_offset + k * (1 << log_doorbell_stride) (Linux main.c
 * alloc_var_entry). 0 on the emu back end and with a one-VAR device.
 */
uint32_t devx_db_index(const struct devx_db *db);

/*
 * UAR page (rdma: mlx5dv_devx_alloc_uar): the page a CQ names in
 * cqc.uar_page and whose registers take its arm doorbell. Both back ends
 * trace allocation, release and every doorbell written through it.
 */
struct devx_uar *devx_uar_alloc(struct devx_ctx *ctx);
/*
 * Free a UAR page: 0, or -EBUSY while an object of the device (a CQ)
 * still names it; the handle is released either way.
 */
int devx_uar_free(struct devx_uar *uar);
/* The page number that goes into cqc.uar_page. */
uint32_t devx_uar_page_id(const struct devx_uar *uar);
/*
 * Write a 64-bit doorbell (host-order value, stored big-endian as the
 * device reads it) at offset of the UAR page, ordered after every
 * memory write made before (the doorbell records it announces).
 */
void devx_uar_ring(struct devx_uar *uar, uint32_t offset, uint64_t value);
/* Offset of the CQ arm doorbell in a UAR page (mlx5: MLX5_CQ_DOORBELL). */
#define DEVX_UAR_CQ_DOORBELL 0x20u

/*
 * Number of the completion EQ serving interrupt vector `vector` (rdma:
 * mlx5dv_devx_query_eqn), for cqc.c_eqn. 0 or a negative errno.
 */
int devx_query_eqn(struct devx_ctx *ctx, uint32_t vector, uint32_t *eqn);

/*
 * Event channel: completions and OBJECT_CHANGE events, read from an fd.
 * Both back ends read the EQE the device wrote (PRM eqe) and hand up the
 * same reading of it (devx_event_from_eqe).
 */
struct devx_event {
	uint64_t cookie;   /* the subscriber's cookie */
	uint16_t type;     /* PRM_EVENT_*: eqe.event_type */
	/*
	 * The object the EQE names: a completion's or CQ error's CQ number,
	 * a QP error's QP number, an affiliated event's obj_id.
	 */
	uint32_t obj_id;
	uint8_t data[32];  /* eqe.event_data, 28 bytes (affiliated_event_header...), 0-padded */
};
/* Fill ev from cookie and a whole EQE (PRM_SIZE(eqe) bytes at eqe). */
void devx_event_from_eqe(struct devx_event *ev, uint64_t cookie, const void *eqe);
struct devx_evch *devx_evch_create(struct devx_ctx *ctx);
void devx_evch_destroy(struct devx_evch *ch);
/* File descriptor that becomes readable when an event is pending. */
int devx_evch_fd(const struct devx_evch *ch);
/*
 * Subscribe to `type` events of obj (a CQ for completions, a general object
 * for OBJECT_CHANGE), tagging them with cookie.
 */
int devx_evch_subscribe(struct devx_evch *ch, struct devx_obj *obj, uint16_t type,
			uint64_t cookie);
/*
 * Read one pending event; returns 1 when one was read, 0 when none, <0
 * error. -EOVERFLOW (once) says that events were lost before this read
 * (the kernel could not queue them: Linux devx.c is_overflow_err): any
 * CQ may have fired unseen, the reader must look at every one.
 */
int devx_evch_read(struct devx_evch *ch, struct devx_event *ev);

/*
 * Log sink of the transport (the transport does not depend on DPDK; the
 * PMD routes these lines to its devx log type). level is syslog style.
 */
typedef void (*devx_log_fn)(int level, const char *line);
void devx_set_log(devx_log_fn fn);

/*
 * Called by the issuing thread before every command, umem or root flow
 * operation (NULL: nothing). The PMD's background work (restores, deferred
 * deletions: mlx5_lm_pool.h, foreground first) waits there while a device
 * starts or stops, so that it is preempted between two commands and never
 * inside one.
 */
typedef void (*devx_cmd_gate_fn)(void);
void devx_set_cmd_gate(devx_cmd_gate_fn fn);

#endif /* MLX5_LM_DEVX_H */
