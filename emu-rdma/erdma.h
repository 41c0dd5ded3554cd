/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated rdma-core: libibverbs.so.1 / libmlx5.so.1 (rdma-core 44 ABI)
 * on top of the project's emulated ConnectX. Private declarations shared by
 * the per-family sources (erdma_verbs.c, erdma_devx.c, erdma_evch.c,
 * erdma_db.c, erdma_trace.c). Nothing here is exported: the version scripts
 * export only ibv_* and mlx5dv_* symbols.
 */
#ifndef MLX5_LM_ERDMA_H
#define MLX5_LM_ERDMA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include "emu.h"

#define ERDMA_VISIBLE __attribute__((visibility("default")))

/* Environment of the library (set by tools/with-emulated-rdma). */
#define ERDMA_ENV_DEVICES "MLX5_LM_ERDMA_DEVICES"   /* number of devices, default 1 */
#define ERDMA_ENV_PROFILE "MLX5_LM_ERDMA_PROFILE"   /* emulator profile, default cx6dx */
#define ERDMA_ENV_TRACE "MLX5_LM_ERDMA_TRACE"       /* DevX trace file (appended) */
#define ERDMA_ENV_SYSFS "MLX5_LM_ERDMA_SYSFS"       /* fake sysfs root for ibdev_path */
#define ERDMA_ENV_SUMMARY "MLX5_LM_ERDMA_SUMMARY"   /* leak summary file (appended) */
#define ERDMA_ENV_TAPS "MLX5_LM_ERDMA_TAPS"         /* "<i>=<tap>[,...]": device wires */
#define ERDMA_ENV_CONTROL "MLX5_LM_ERDMA_CONTROL"   /* directory of control sockets */

#define ERDMA_MAX_DEVICES 64
#define ERDMA_MAGIC 0x45524d41u /* "ERMA" */

struct erdma_device {
	struct ibv_device dev;     /* what ibv_get_device_list hands out */
	uint32_t magic;
	unsigned int index;
};

/*
 * A handle given to the program (PD, MR, DevX object, umem, VAR, UAR). Those
 * still held when the program closes the context are freed then: the
 * device objects behind them are the emulator's to report as leaks.
 */
struct erdma_handle {
	struct erdma_handle *prev, *next;
	void *base;                /* the allocation to free */
	void (*release)(void *base); /* instead of free(), before the device goes */
};

/* A context: one emulated device (struct emu_dev) per open context. */
struct erdma_ctx {
	struct verbs_context vctx; /* ends with the struct ibv_context */
	uint32_t magic;
	bool devx;                 /* opened with MLX5DV_CONTEXT_FLAGS_DEVX */
	struct emu_dev *emu;
	uint32_t null_mkey;        /* the kernel's dump-fill mkey (QUERY_SPECIAL_CONTEXTS) */
	pthread_mutex_t lock;      /* guards pages[] and handles */
	struct erdma_handle handles;
	/* cmd_fd: a memfd of ERDMA_PAGES pages, VAR and UAR pages at distinct offsets. */
	struct erdma_page {
		enum { ERDMA_PAGE_FREE, ERDMA_PAGE_VAR, ERDMA_PAGE_UAR } kind;
		uint32_t page_id;  /* UAR: the emulator's page id */
	} pages[64];
	void *window;              /* the library's own mapping of cmd_fd */
	struct erdma_watch *watch; /* doorbell watcher (erdma_db.c) */
	uint32_t db_page_base;     /* doorbell_bar_offset rounded down to its page */
	uint32_t db_in_page;       /* doorbell_bar_offset & (page - 1) */
	uint32_t db_area;          /* (1 << log_doorbell_bar_size) * 4 KiB */
	uint32_t db_stride;        /* 1 << log_doorbell_stride */
	unsigned int dev_index;    /* the device's index (its VAR table, erdma_devx.c) */
	struct erdma_wire *wire;   /* a tap as the device's wire (erdma_wire.c), or NULL */
	struct erdma_ctl *ctl;     /* the test's control socket (erdma_ctl.c), or NULL */
	struct erdma_ctx *next_open; /* the open contexts (erdma_verbs.c, under its lock) */
	/* The context's one NC UAR page (erdma_devx.c), under vctx.context.mutex. */
	struct erdma_uar *nc_uar;
};
#define ERDMA_PAGES 64u

/* The DevX object handle (opaque in mlx5dv.h). */
struct mlx5dv_devx_obj {
	struct erdma_ctx *ctx;
	struct emu_kobj k;         /* what the handle names (devx.c get_enc_obj_id) */
	uint8_t din[64];           /* the kernel's destroy mailbox, built at create */
	size_t dinlen;
	struct erdma_handle h;
};

struct erdma_umem {
	struct mlx5dv_devx_umem pub;
	struct erdma_ctx *ctx;
	void *addr;
	size_t size;
	uint64_t pinned;           /* host pages charged (erdma_pin) */
	struct erdma_handle h;
};

struct erdma_pd {
	struct ibv_pd pub;
	struct erdma_handle h;
};

struct erdma_mr {
	struct ibv_mr pub;
	bool registered;           /* false for the null mr */
	uint64_t pinned;           /* host pages charged (erdma_pin) */
	struct erdma_handle h;
};

struct erdma_var {
	struct mlx5dv_var pub;
	struct erdma_ctx *ctx;
	unsigned int slot;
	unsigned int entry;        /* k: the device's VAR table entry (pub.page_id) */
	struct erdma_handle h;
};

/*
 * erdma_devx.c: the context closes; its VARs still mapped elsewhere stay
 * allocated in the device's table (Linux keeps the entry, and the uverbs
 * context, while a mapping exists).
 */
void erdma_var_ctx_closed(struct erdma_ctx *c);

struct erdma_uar {
	struct mlx5dv_devx_uar pub;
	struct erdma_ctx *ctx;
	unsigned int slot;
	struct erdma_handle h;
};

static inline struct erdma_ctx *
erdma_ctx(struct ibv_context *c)
{
	struct verbs_context *v = verbs_get_ctx(c);
	struct erdma_ctx *e = (struct erdma_ctx *)v;

	return e != NULL && e->magic == ERDMA_MAGIC ? e : NULL;
}

void erdma_handle_add(struct erdma_ctx *c, struct erdma_handle *h, void *base);
void erdma_handle_add_release(struct erdma_ctx *c, struct erdma_handle *h, void *base,
			      void (*release)(void *base));
void erdma_handle_del(struct erdma_ctx *c, struct erdma_handle *h);

/* A loud failure of something the library does not implement (stderr + errno). */
void erdma_unsupported(const char *fn, int err);
void erdma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long erdma_page_size(void);
/* The kernel's capable(cap) for this process: cap in its effective set. */
bool erdma_capable(int cap);
/*
 * ib_umem_get's accounting of pinned pages against RLIMIT_MEMLOCK (per
 * process, as mm->pinned_vm) unless CAP_IPC_LOCK: the host pages covering
 * [addr, addr+len) of device c are charged; 0 and *pages, or ENOMEM (the
 * kernel's errno, logged). erdma_unpin gives them back.
 */
int erdma_pin(struct erdma_ctx *c, const void *addr, size_t len, uint64_t *pages);
void erdma_unpin(uint64_t pages);

/* erdma_flow.c: the verbs_context op behind ibv_destroy_flow. */
int erdma_destroy_flow(struct ibv_flow *flow);

/* erdma_trace.c: design.md's DevX trace, plus "entry". */
uint64_t erdma_now_us(void);
void erdma_trace_cmd(struct erdma_ctx *c, const char *entry, uint64_t t0, const void *in,
		     size_t inlen, const void *out, size_t outlen, int rc);
void erdma_trace_op(struct erdma_ctx *c, const char *entry, const char *op, uint64_t t0,
		    const char *id_key, uint64_t id, uint64_t addr, uint64_t size, int status);
/*
 * leaks: the emulator's leak lines of the closed device ("<dev>: leaked KIND
 * ID ..." joined by '\n'), or NULL; listed in the line as "leaked".
 */
void erdma_summary(const char *dev, int left_alive, const char *leaks);

/* erdma_db.c: cmd_fd pages and the doorbell watcher. */
int erdma_db_init(struct erdma_ctx *c);
void erdma_db_fini(struct erdma_ctx *c);
int erdma_page_get(struct erdma_ctx *c, int kind, uint32_t page_id, unsigned int *slot);
void erdma_page_put(struct erdma_ctx *c, unsigned int slot);
/* A write seen on a UAR page (erdma_devx.c: to the emulator, or a loud refusal). */
void erdma_uar_forward(struct erdma_ctx *c, uint32_t page_id, uint32_t offset, uint64_t value);

/*
 * The device's wire: a tap when MLX5_LM_ERDMA_TAPS names one for device
 * index (else the emulator's loopback). 0 or a negative errno (logged).
 */
int erdma_wire_open(struct erdma_ctx *c, unsigned int index);
void erdma_wire_close(struct erdma_ctx *c);

/*
 * erdma_ctl.c: the control socket of a context (MLX5_LM_ERDMA_CONTROL), the
 * emulator's test hooks at the moment a test chooses. 0 when not asked for.
 */
int erdma_ctl_init(struct erdma_ctx *c);
void erdma_ctl_fini(struct erdma_ctx *c);

/* Forward what the context's UAR pages hold now (before a CQ goes). */
void erdma_uar_flush(struct erdma_ctx *c);
/* Every VAR and UAR write so far forwarded now (the watcher's scan, in the caller). */
void erdma_db_flush(struct erdma_ctx *c);

#endif /* MLX5_LM_ERDMA_H */
