/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport internals shared by the core and its two back ends. The
 * emu back end is built into the emulator library, so these structures
 * cross a library boundary: DEVX_EMU_ENTRY carries their version.
 */
#ifndef MLX5_LM_DEVX_PRIV_H
#define MLX5_LM_DEVX_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdatomic.h>
#include <sys/queue.h>

#include "devx.h"
#include "devx_emu.h"

/*
 * A back end executes mailboxes; the core does tracing, logging and the
 * bookkeeping common to both. Every call returns 0 or a negative errno;
 * a command the device answered (whatever its status) returns 0 and the
 * status is read from the output mailbox by the core.
 */
struct devx_backend {
	const char *name;
	int (*open)(struct devx_ctx *ctx, const struct devx_open_params *p,
		    char *err, size_t errlen);
	int (*close)(struct devx_ctx *ctx);
	int (*cmd)(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen);
	int (*obj_create)(struct devx_ctx *ctx, struct devx_obj *obj, const void *in,
			  size_t inlen, void *out, size_t outlen);
	/* query: mlx5dv_devx_obj_query, else mlx5dv_devx_obj_modify (the kernel tells them apart). */
	int (*obj_cmd)(struct devx_ctx *ctx, struct devx_obj *obj, bool query, const void *in,
		       size_t inlen, void *out, size_t outlen);
	int (*obj_destroy)(struct devx_ctx *ctx, struct devx_obj *obj, const void *din,
			   size_t dinlen, void *dout, size_t doutlen);
	/* Returns 0, -EIO with status and syndrome set, or another errno. */
	int (*umem_reg)(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status,
			uint32_t *syndrome);
	int (*umem_dereg)(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status,
			  uint32_t *syndrome);
	/* Memory regions (ibv_reg_mr_iova); returns like umem_reg, sets mr->lkey. */
	int (*mr_reg)(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status,
		      uint32_t *syndrome);
	int (*mr_dereg)(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status,
			uint32_t *syndrome);
	/* Root flow rules; 0, -EIO with status and syndrome set, or another errno. */
	int (*flow_create)(struct devx_ctx *ctx, struct devx_flow *flow,
			   const struct devx_flow_attr *attr, struct devx_obj *dest,
			   uint8_t *status, uint32_t *syndrome);
	int (*flow_destroy)(struct devx_ctx *ctx, struct devx_flow *flow, uint8_t *status,
			    uint32_t *syndrome);
	/* Sets pd->pdn and pd->null_mkey. Returns like umem_reg. */
	int (*pd_alloc)(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status,
			uint32_t *syndrome);
	int (*pd_free)(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status,
		       uint32_t *syndrome);
	int (*db_alloc)(struct devx_ctx *ctx, struct devx_db *db);
	void (*db_free)(struct devx_ctx *ctx, struct devx_db *db);
	void (*db_ring)(struct devx_ctx *ctx, struct devx_db *db, uint32_t offset, uint32_t v);
	int (*uar_alloc)(struct devx_ctx *ctx, struct devx_uar *uar);
	/* 0, -EBUSY while the device still uses the page, or another errno. */
	int (*uar_free)(struct devx_ctx *ctx, struct devx_uar *uar);
	void (*uar_ring)(struct devx_ctx *ctx, struct devx_uar *uar, uint32_t offset,
			 uint64_t value);
	int (*query_eqn)(struct devx_ctx *ctx, uint32_t vector, uint32_t *eqn);
	int (*evch_create)(struct devx_ctx *ctx, struct devx_evch *ch);
	void (*evch_destroy)(struct devx_ctx *ctx, struct devx_evch *ch);
	int (*evch_subscribe)(struct devx_ctx *ctx, struct devx_evch *ch, struct devx_obj *obj,
			      uint16_t type, uint64_t cookie);
	/*
	 * One pending event: 1 with the subscriber's cookie and the whole EQE
	 * (PRM_SIZE(eqe) bytes) the device wrote, 0 when none, or a negative
	 * errno (-EOVERFLOW: events were lost). The core reads the EQE.
	 */
	int (*evch_read)(struct devx_ctx *ctx, struct devx_evch *ch, uint64_t *cookie,
			 uint8_t *eqe);
};

extern const struct devx_backend devx_backend_rdma;

/*
 * What the emulator library gives the transport: the emu back end and the
 * hooks of devx_emu.h for its devices (ctx is always one of them). size is
 * sizeof(struct devx_emu_ops) as the library was built.
 */
struct devx_emu_ops {
	size_t size;
	const struct devx_backend *backend;
	void (*set_log)(devx_log_fn fn);
	unsigned long (*leaked_total)(void);
	unsigned long (*live_total)(char *desc, size_t len);
	int (*profile_check)(const char *profile, char *err, size_t errlen);
	int (*profile_costs)(const char *profile, unsigned int *cmd_slots,
			     unsigned int *host_pin_parallel, struct devx_cost_entry *e,
			     unsigned int n, char *err, size_t errlen);
	int (*cost_stats)(struct devx_ctx *ctx, struct devx_cost_stats *s);
	int (*set_uplink)(struct devx_ctx *ctx, devx_wire_tx_fn fn, void *arg);
	int (*wire_rx)(struct devx_ctx *ctx, const void *frame, size_t len);
	int (*translate)(struct devx_ctx *ctx, uint32_t mkey, uint64_t addr, size_t len,
			 void **host);
};

/*
 * The emulator library's one exported symbol. Its name carries the
 * version of the structures above and of devx_emu_ops: change it with
 * them, so that a PMD never drives an emulator of another layout.
 */
#define DEVX_EMU_ENTRY "mlx5_lm_emu_ops_v2"
const struct devx_emu_ops *mlx5_lm_emu_ops_v2(void);

/*
 * The emu back end, loaded on first use (devx_emu_load.c): NULL with the
 * reason in err when the library cannot be loaded.
 */
const struct devx_emu_ops *devx_emu_load(char *err, size_t errlen);
/*
 * A program linked with the emulator itself (the in-process tests:
 * devx_emu_inproc.c) registers it here, before any device is opened;
 * nothing is loaded then.
 */
void devx_emu_register(const struct devx_emu_ops *ops);

struct devx_trace;

struct devx_obj;

struct devx_ctx {
	char name[64];
	const struct devx_backend *be;
	const struct devx_emu_ops *emu; /* the emu back end's hooks, NULL for rdma */
	void *be_priv;             /* emu: struct emu_dev *; rdma: struct ibv_context * */
	struct devx_trace *trace;  /* NULL when not tracing */
	/*
	 * Handles still open, so that closing the context frees those whose
	 * destroy failed (the device reports the objects themselves).
	 */
	pthread_mutex_t lock;      /* guards objs, umems, flows, flow_seq, pds and mrs */
	TAILQ_HEAD(, devx_obj) objs;
	TAILQ_HEAD(, devx_umem) umems;
	TAILQ_HEAD(, devx_flow) flows;
	uint32_t flow_seq;         /* rdma: numbers for rules in the trace */
	TAILQ_HEAD(, devx_pd) pds;
	TAILQ_HEAD(, devx_mr) mrs;
};

/*
 * A handle joins its context's list once the device made its object, and
 * leaves it (and is freed) once the device destroyed it.
 */
#define DEVX_HANDLE_ADD(ctx, list, h) do { \
	pthread_mutex_lock(&(ctx)->lock); \
	TAILQ_INSERT_TAIL(&(ctx)->list, (h), next); \
	pthread_mutex_unlock(&(ctx)->lock); \
} while (0)
#define DEVX_HANDLE_FREE(ctx, list, h) do { \
	pthread_mutex_lock(&(ctx)->lock); \
	TAILQ_REMOVE(&(ctx)->list, (h), next); \
	pthread_mutex_unlock(&(ctx)->lock); \
	free(h); \
} while (0)

struct devx_obj {
	TAILQ_ENTRY(devx_obj) next;
	struct devx_ctx *ctx;
	void *be_handle;           /* rdma: struct mlx5dv_devx_obj * */
	uint16_t create_opcode;
	uint16_t obj_type;         /* general objects */
	uint32_t id;
	uint32_t mkey;             /* CREATE_MKEY: index << 8 | mkey_7_0 */
	uint8_t destroy_in[64];    /* the DESTROY mailbox, derived at create */
	size_t destroy_inlen;
};

struct devx_umem {
	TAILQ_ENTRY(devx_umem) next;
	struct devx_ctx *ctx;
	void *be_handle;
	void *addr;
	size_t size;
	uint32_t access;
	uint64_t pgsz_bitmap;      /* 0: the plain registration */
	uint32_t id;
};

struct devx_mr {
	TAILQ_ENTRY(devx_mr) next;
	struct devx_ctx *ctx;
	struct devx_pd *pd;
	void *be_handle;           /* rdma: struct ibv_mr * */
	void *addr;
	size_t len;
	uint64_t iova;
	uint32_t access;
	uint32_t lkey;
};

struct devx_flow {
	TAILQ_ENTRY(devx_flow) next;
	struct devx_ctx *ctx;
	void *be_handle;           /* rdma: struct ibv_flow * */
	void *be_matcher;          /* rdma: struct mlx5dv_flow_matcher * */
	uint32_t id;               /* emu: the rule's id; rdma: a per-context number */
};

struct devx_pd {
	TAILQ_ENTRY(devx_pd) next;
	struct devx_ctx *ctx;
	void *be_handle;           /* rdma: struct ibv_pd * */
	void *be_mr;               /* rdma: the null struct ibv_mr * */
	uint32_t pdn;
	uint32_t null_mkey;
};

struct devx_db {
	struct devx_ctx *ctx;
	void *be_handle;
	volatile uint32_t *mmio;   /* rdma: mapped doorbell page */
	int mmap_fd;
	uint64_t mmap_offset;
	uint64_t mmap_size;
	uint32_t index;            /* the VAR's entry k (mlx5dv_var.page_id); 0 on emu */
};

struct devx_uar {
	struct devx_ctx *ctx;
	void *be_handle;           /* rdma: struct mlx5dv_devx_uar * */
	volatile uint8_t *base;    /* rdma: the mapped page */
	uint32_t page_id;
};

struct devx_evch {
	struct devx_ctx *ctx;
	void *be_handle;
	int fd;
};

/* Trace: one JSON object per line (design.md "DevX command trace"). */
int devx_trace_open(struct devx_ctx *ctx, const char *path, char *err, size_t errlen);
void devx_trace_close(struct devx_ctx *ctx);
uint64_t devx_trace_now_us(void);
void devx_trace_cmd(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end,
		    const void *in, size_t inlen, const void *out, size_t outlen, int rc);
/*
 * Non-PRM operations: "UMEM_REG", "UMEM_DEREG", "DOORBELL", "UAR_ALLOC",
 * "UAR_FREE", "QUERY_EQN", "EVCH_*", "PD_ALLOC", "PD_FREE", "NULL_MR"; id is
 * written as "value" (DOORBELL), "page_id" (UAR_*), "eqn" (QUERY_EQN), "pdn"
 * (PD_*), "mkey" (NULL_MR) or "umem_id".
 */
void devx_trace_op(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
		   uint64_t addr, uint64_t size, uint32_t id, int status, uint32_t syndrome);

/* Memory regions: "MR_REG" and "MR_DEREG" with their address, length, iova and lkey. */
void devx_trace_mr(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
		   const struct devx_mr *mr, int status, uint32_t syndrome);

/* Root flow rules: "ROOT_FLOW_CREATE" (attr and dest set) and "ROOT_FLOW_DESTROY". */
void devx_trace_flow(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
		     const struct devx_flow_attr *attr, uint32_t dest_id, uint32_t flow_id,
		     uint8_t status, uint32_t syndrome, int rc);

/* A 64-bit doorbell written to a UAR page ("UAR_DOORBELL"). */
void devx_trace_uar_ring(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end,
			 uint32_t page_id, uint32_t offset, uint64_t value);

/*
 * Before every command, umem or root flow operation: the issuing thread
 * may have to yield (devx_set_cmd_gate). Returns the trace's start time.
 */
uint64_t devx_cmd_begin(void);

/* Logging of the transport (routed by the PMD to its devx log type). */
void devx_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* MLX5_LM_DEVX_PRIV_H */
