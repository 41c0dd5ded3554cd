/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DevX family (libmlx5's mlx5dv_devx_*): every mailbox passes the
 * kernel's rules (emu_kernel_check, Linux devx.c) before the emulated
 * firmware (emu_cmd) sees it; the kernel's answers are rdma-core's: EINVAL
 * for a refused mailbox, EREMOTEIO with the output filled when the
 * firmware answered with a non-zero status.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prm.h"
#include "erdma.h"

/* Opened without MLX5DV_CONTEXT_FLAGS_DEVX: no DevX uid (devx.c devx_get_uid). */
static struct erdma_ctx *
devx_ctx(struct ibv_context *context, const char *fn)
{
	struct erdma_ctx *c = erdma_ctx(context);

	if (c == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (!c->devx) {
		erdma_log("%s: %s on a context opened without MLX5DV_CONTEXT_FLAGS_DEVX: EINVAL "
			  "(Linux devx.c devx_get_uid)", context->device->name, fn);
		errno = EINVAL;
		return NULL;
	}
	return c;
}

/*
 * devx.c devx_is_whitelist_cmd(): QUERY_HCA_CAP, QUERY_HCA_VPORT_CONTEXT,
 * QUERY_ESW_VPORT_CONTEXT, QUERY_ESW_FUNCTIONS. devx_get_uid() answers
 * them on a context without a DevX uid with the device's whitelist uid,
 * which mlx5_ib_devx_init() creates whenever the device has DevX
 * (log_max_uctx, as the emulated one does), whatever the caller's
 * privileges: a context opened without MLX5DV_CONTEXT_FLAGS_DEVX may
 * send them through mlx5dv_devx_general_cmd.
 */
static bool
whitelist_cmd(const void *in, size_t inlen)
{
	if (in == NULL || inlen < PRM_SIZE(cmd_in))
		return false;
	switch (PRM_GET(cmd_in, in, opcode)) {
	case PRM_CMD_QUERY_HCA_CAP:
	case 0x762: /* QUERY_HCA_VPORT_CONTEXT */
	case 0x752: /* QUERY_ESW_VPORT_CONTEXT */
	case 0x740: /* QUERY_ESW_FUNCTIONS */
		return true;
	default:
		return false;
	}
}

/* Run a checked mailbox on the firmware; rdma-core's return convention. */
static int
run(struct erdma_ctx *c, enum emu_kentry e, const struct emu_kobj *k, const void *in,
    size_t inlen, void *out, size_t outlen)
{
	uint64_t t0 = erdma_now_us();
	int rc;

	/* The kernel's checks, its amendments (devx_set_umem_valid), the firmware. */
	rc = emu_kernel_cmd(c->emu, e, in, inlen, k, out, outlen);
	if (rc > 0)
		rc = 0;
	else if (rc < 0 && rc != -EINVAL && rc != -ENOMEM)
		rc = -EINVAL; /* output too short for the header: uverbs refuses it */
	erdma_trace_cmd(c, emu_kentry_name(e), t0, in, inlen, out, outlen, rc);
	if (rc < 0)
		return -rc;
	return PRM_GET(cmd_out, out, status) == PRM_STATUS_OK ? 0 : EREMOTEIO;
}

ERDMA_VISIBLE int
mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
			size_t outlen)
{
	struct erdma_ctx *c = erdma_ctx(context);

	/* A whitelisted query runs under the device's whitelist uid (see whitelist_cmd). */
	if (c == NULL || c->devx || !whitelist_cmd(in, inlen))
		c = devx_ctx(context, "mlx5dv_devx_general_cmd");
	if (c == NULL)
		return EINVAL;
	return run(c, EMU_KENTRY_GENERAL, NULL, in, inlen, out, outlen);
}

ERDMA_VISIBLE struct mlx5dv_devx_obj *
mlx5dv_devx_obj_create(struct ibv_context *context, const void *in, size_t inlen, void *out,
		       size_t outlen)
{
	struct erdma_ctx *c = devx_ctx(context, "mlx5dv_devx_obj_create");
	struct mlx5dv_devx_obj *o;
	int rc;

	if (c == NULL)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (o == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	o->ctx = c;
	rc = run(c, EMU_KENTRY_CREATE, NULL, in, inlen, out, outlen);
	if (rc == 0 && (emu_kernel_created_obj(in, inlen, out, outlen, &o->k) < 0 ||
			emu_kernel_destroy_cmd(in, inlen, &o->k, o->din, sizeof(o->din),
					       &o->dinlen) < 0)) {
		/* Created, but nothing the kernel could destroy: not a DevX object. */
		erdma_log("%s: object of opcode 0x%x created but not destroyable",
			  context->device->name, (unsigned int)PRM_GET(cmd_in, in, opcode));
		rc = EINVAL;
	}
	if (rc != 0) {
		free(o);
		errno = rc;
		return NULL;
	}
	erdma_handle_add(c, &o->h, o);
	return o;
}

ERDMA_VISIBLE int
mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
		       size_t outlen)
{
	return run(obj->ctx, EMU_KENTRY_MODIFY, &obj->k, in, inlen, out, outlen);
}

ERDMA_VISIBLE int
mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
		      size_t outlen)
{
	return run(obj->ctx, EMU_KENTRY_QUERY, &obj->k, in, inlen, out, outlen);
}

ERDMA_VISIBLE int
mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	uint8_t out[PRM_SIZE(destroy_out)];
	int rc;

	memset(out, 0, sizeof(out));
	/*
	 * A CQ doorbell written before the destroy reached a real device
	 * before it: forward what the UAR pages hold first, so that no arm
	 * lands on a CQ that is gone.
	 */
	if (obj->k.create_opcode == PRM_CMD_CREATE_CQ)
		erdma_uar_flush(obj->ctx);
	rc = run(obj->ctx, EMU_KENTRY_DESTROY, &obj->k, obj->din, obj->dinlen, out,
		 sizeof(out));
	if (rc != 0)
		return rc; /* the handle stays valid, as rdma-core leaves it */
	erdma_handle_del(obj->ctx, &obj->h);
	free(obj);
	return 0;
}

/*
 * devx.c devx_umem_get(): uverbs_get_flags32() takes LOCAL_WRITE,
 * REMOTE_WRITE and REMOTE_READ only (EINVAL for any other bit: no
 * REMOTE_ATOMIC, RELAXED_ORDERING or ON_DEMAND on a DevX umem), then
 * ib_check_mr_access() (remote write needs local write).
 */
#define UMEM_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			   IBV_ACCESS_REMOTE_READ)

/*
 * rdma-core 44's plain call sends the bitmap of every size from 4 KiB
 * (_mlx5dv_devx_umem_reg); the kernel picks the page size from it and the
 * host's pages (emu_umem_reg_ex), objects then start at its pages.
 */
static struct mlx5dv_devx_umem *
umem_reg(struct ibv_context *context, void *addr, size_t size, uint32_t access,
	 uint64_t pgsz_bitmap)
{
	struct erdma_ctx *c = devx_ctx(context, "mlx5dv_devx_umem_reg");
	struct erdma_umem *u;
	uint32_t synd = 0;
	uint64_t t0 = erdma_now_us();
	int st;

	if (c == NULL)
		return NULL;
	if (size == 0 || (access & ~(uint32_t)UMEM_ACCESS_KNOWN) ||
	    ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE))) {
		erdma_log("%s: mlx5dv_devx_umem_reg size %zu access 0x%x: EINVAL (Linux devx.c "
			  "devx_umem_get, ib_check_mr_access)", context->device->name, size, access);
		erdma_trace_op(c, "umem_reg", "UMEM_REG", t0, "umem_id", 0, (uintptr_t)addr, size,
			       -1);
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (u == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* devx_umem_get pins through ib_umem_get: RLIMIT_MEMLOCK unless CAP_IPC_LOCK. */
	if (erdma_pin(c, addr, size, &u->pinned) != 0) {
		erdma_trace_op(c, "umem_reg", "UMEM_REG", t0, "umem_id", 0, (uintptr_t)addr, size,
			       -1);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	st = emu_umem_reg_ex(c->emu, addr, size, access, pgsz_bitmap, &u->pub.umem_id, &synd);
	erdma_trace_op(c, "umem_reg", "UMEM_REG", t0, "umem_id", u->pub.umem_id, (uintptr_t)addr,
		       size, st);
	if (st != 0) {
		erdma_unpin(u->pinned);
		free(u);
		/*
		 * Pages that cannot be pinned (past their file, or a writable pin of
		 * a file with writeback) fail in the kernel (ib_umem_get: EFAULT),
		 * before the firmware sees a command.
		 */
		errno = synd == EMU_SYND_UMEM_NOT_BACKED || synd == EMU_SYND_UMEM_WRITEBACK_FILE ?
			EFAULT :
			synd == EMU_SYND_UMEM_BAD_PGSZ ? EINVAL : EREMOTEIO;
		return NULL;
	}
	u->ctx = c;
	u->addr = addr;
	u->size = size;
	erdma_handle_add(c, &u->h, u);
	return &u->pub;
}

ERDMA_VISIBLE struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg(struct ibv_context *context, void *addr, size_t size, uint32_t access)
{
	return umem_reg(context, addr, size, access, EMU_UMEM_PGSZ_DEFAULT);
}

/*
 * The page sizes the device may describe the umem with: the kernel picks
 * the best one of pgsz_bitmap for the host's pages (devx.c
 * devx_umem_find_best_pgsize, EINVAL when none fits: emu_umem_reg_ex).
 * dma-buf umems are not modelled.
 */
ERDMA_VISIBLE struct mlx5dv_devx_umem *
mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx, struct mlx5dv_devx_umem_in *in)
{
	if (in->comp_mask != 0) {
		erdma_unsupported("mlx5dv_devx_umem_reg_ex with a dma-buf (comp_mask)",
				  EOPNOTSUPP);
		return NULL;
	}
	if (in->pgsz_bitmap == 0) {
		erdma_log("%s: mlx5dv_devx_umem_reg_ex with an empty page size bitmap: EINVAL "
			  "(devx.c devx_umem_find_best_pgsize)", ctx->device->name);
		errno = EINVAL;
		return NULL;
	}
	return umem_reg(ctx, in->addr, in->size, in->access, in->pgsz_bitmap);
}

ERDMA_VISIBLE int
mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *pub)
{
	struct erdma_umem *u = (struct erdma_umem *)pub;
	uint32_t synd = 0;
	uint64_t t0 = erdma_now_us();
	int st;

	st = emu_umem_dereg(u->ctx->emu, pub->umem_id, &synd);
	erdma_trace_op(u->ctx, "umem_dereg", "UMEM_DEREG", t0, "umem_id", pub->umem_id,
		       (uintptr_t)u->addr, u->size, st);
	if (st != 0)
		return st == PRM_STATUS_RES_BUSY ? EBUSY : EINVAL;
	erdma_unpin(u->pinned);
	erdma_handle_del(u->ctx, &u->h);
	free(u);
	return 0;
}

/*
 * Virtio doorbell pages (VAR): one page of cmd_fd, mmap-able at mmap_off;
 * the watcher forwards what is written there to the emulator.
 */
/*
 * The device's VAR table, as the kernel keeps it (Linux main.c
 * mlx5_ib_init_var_table, alloc_var_entry, mlx5_ib_mmap_free): one table
 * per device, shared by its contexts, of (1 << log_doorbell_bar_size) *
 * 4 KiB / (1 << log_doorbell_stride) entries; VAR k is the doorbell at
 * doorbell_bar_offset + k * stride, its mapping the page holding it; a
 * full table is ENOSPC. An entry is free again only once freed (or its
 * context closed) AND no mapping of it is left: the kernel's mmap entry
 * lives while a VMA maps it (QEMU's host-notifier mapping included), and
 * the uverbs context with it. Mappings of a cmd_fd page are found in
 * /proc/<pid>/maps (the memfd's inode and the page's offset), the
 * library's own view of the pages (the context's window) excepted.
 */
struct var_entry {
	bool used;
	bool released;             /* freed by the program, or its context closed */
	struct erdma_ctx *ctx;     /* NULL once the context closed */
	uintptr_t window;          /* the library's own mapping of the memfd, 0 once gone */
	ino_t ino;                 /* the cmd_fd memfd the page is in */
	off_t off;                 /* the page's offset in it */
};

static struct var_table {
	unsigned int n;
	struct var_entry *e;
} var_tables[ERDMA_MAX_DEVICES];
static pthread_mutex_t var_lock = PTHREAD_MUTEX_INITIALIZER;

/* Does any process map [off, off + page) of memfd ino, but ctx's own window? */
static bool
var_mapped(const struct var_entry *e)
{
	uintptr_t own = e->window;
	uint64_t len = (uint64_t)erdma_page_size();
	pid_t self = getpid();
	struct dirent *de;
	bool found = false;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return true; /* cannot tell: kept, as the kernel would while unsure */
	while (!found && (de = readdir(d)) != NULL) {
		char path[64], line[512];
		FILE *f;
		long pid = strtol(de->d_name, NULL, 10);

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		while (!found && fgets(line, sizeof(line), f) != NULL) {
			unsigned long start, end, ino;
			unsigned long long moff;
			unsigned int maj, min;
			char perms[8];

			if (sscanf(line, "%lx-%lx %7s %llx %x:%x %lu", &start, &end, perms, &moff,
				   &maj, &min, &ino) != 7 || ino != (unsigned long)e->ino ||
			    strstr(line, "emu-rdma-cmd_fd") == NULL)
				continue;
			if (moff >= (uint64_t)e->off + len ||
			    moff + (end - start) <= (uint64_t)e->off)
				continue;
			if (pid == self && own != 0 && start == own)
				continue;
			found = true;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

/* Entries freed and no longer mapped become free (var_lock held). */
static unsigned int
var_reclaim(struct var_table *t)
{
	unsigned int k, held = 0;

	for (k = 0; k < t->n; k++) {
		struct var_entry *e = &t->e[k];

		if (!e->used || !e->released)
			continue;
		if (var_mapped(e)) {
			held++;
			continue;
		}
		e->used = false;
	}
	return held;
}

void
erdma_var_ctx_closed(struct erdma_ctx *c)
{
	struct var_table *t = &var_tables[c->dev_index];
	unsigned int k;

	pthread_mutex_lock(&var_lock);
	for (k = 0; k < t->n; k++) {
		if (t->e[k].used && t->e[k].ctx == c) {
			t->e[k].ctx = NULL;
			t->e[k].window = 0;  /* unmapped by erdma_db_fini, next */
			t->e[k].released = true;
		}
	}
	pthread_mutex_unlock(&var_lock);
}

ERDMA_VISIBLE struct mlx5dv_var *
mlx5dv_alloc_var(struct ibv_context *context, uint32_t flags)
{
	struct erdma_ctx *c = devx_ctx(context, "mlx5dv_alloc_var");
	struct var_table *t;
	struct erdma_var *v;
	unsigned int slot, k, held;
	struct stat st;
	int rc;

	if (c == NULL)
		return NULL;
	if (flags != 0) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL || fstat(c->vctx.context.cmd_fd, &st) < 0) {
		free(v);
		errno = ENOMEM;
		return NULL;
	}
	t = &var_tables[c->dev_index];
	pthread_mutex_lock(&var_lock);
	if (t->n == 0) {
		t->n = c->db_area / c->db_stride;
		t->e = calloc(t->n ? t->n : 1, sizeof(*t->e));
		if (t->n == 0 || t->e == NULL) {
			t->n = 0;
			pthread_mutex_unlock(&var_lock);
			free(v);
			errno = ENOMEM;
			return NULL;
		}
	}
	held = var_reclaim(t);
	for (k = 0; k < t->n && t->e[k].used; k++)
		;
	if (k == t->n) {
		pthread_mutex_unlock(&var_lock);
		erdma_log("%s: mlx5dv_alloc_var: ENOSPC: all %u VARs of the device are taken, %u "
			  "of them freed but still mapped (Linux main.c alloc_var_entry; an entry "
			  "lives while any mapping of it does, mlx5_ib_mmap_free)",
			  context->device->name, t->n, held);
		erdma_trace_op(c, "var_alloc", "VAR_ALLOC", erdma_now_us(), "page_id", 0, 0,
			       (uint64_t)erdma_page_size(), -1);
		free(v);
		errno = ENOSPC;
		return NULL;
	}
	rc = erdma_page_get(c, ERDMA_PAGE_VAR, k, &slot);
	if (rc == 0)
		t->e[k] = (struct var_entry){ .used = true, .ctx = c,
					      .window = (uintptr_t)c->window, .ino = st.st_ino,
					      .off = (off_t)slot * erdma_page_size() };
	pthread_mutex_unlock(&var_lock);
	erdma_trace_op(c, "var_alloc", "VAR_ALLOC", erdma_now_us(), "page_id", k, 0,
		       (uint64_t)erdma_page_size(), rc < 0 ? -1 : 0);
	if (rc < 0) {
		free(v);
		errno = -rc;
		return NULL;
	}
	v->ctx = c;
	v->slot = slot;
	v->entry = k;
	/* The kernel's answer: the entry's index, a page mapping it, its mmap offset. */
	v->pub.page_id = k;
	v->pub.length = (uint32_t)erdma_page_size();
	v->pub.mmap_off = (off_t)slot * erdma_page_size();
	erdma_handle_add(c, &v->h, v);
	return &v->pub;
}

ERDMA_VISIBLE void
mlx5dv_free_var(struct mlx5dv_var *pub)
{
	struct erdma_var *v = (struct erdma_var *)pub;
	struct var_table *t = &var_tables[v->ctx->dev_index];

	erdma_page_put(v->ctx, v->slot);
	pthread_mutex_lock(&var_lock);
	/* Free again once no mapping is left (var_reclaim, at the next allocation). */
	if (v->entry < t->n && t->e[v->entry].ctx == v->ctx)
		t->e[v->entry].released = true;
	pthread_mutex_unlock(&var_lock);
	erdma_handle_del(v->ctx, &v->h);
	free(v);
}

ERDMA_VISIBLE int
mlx5dv_set_context_attr(struct ibv_context *context, enum mlx5dv_set_ctx_attr_type type,
			void *attr)
{
	/*
	 * Buffer allocators are for the provider's own queue buffers; this
	 * library allocates none (no verbs QP/CQ), so there is nothing to use
	 * them for: accepted, as rdma-core accepts them.
	 */
	if (type == MLX5DV_CTX_ATTR_BUF_ALLOCATORS)
		return 0;
	erdma_unsupported("mlx5dv_set_context_attr (type other than BUF_ALLOCATORS)",
			  EOPNOTSUPP);
	return EOPNOTSUPP;
}

/*
 * UAR pages: the emulator's page (emu_uar_alloc), mapped from cmd_fd at
 * mmap_off. base_addr is the library's own mapping of it; reg_addr the
 * BlueFlame/doorbell register at 0x800 as rdma-core's mlx5 provider sets
 * it. What is written on the page reaches emu_uar_write (the watcher).
 */
#define ERDMA_UAR_REG_OFFSET 0x800u

/* A page from the kernel (MLX5_IB_METHOD_UAR_OBJ_ALLOC, an ALLOC_UAR), mapped. */
static struct erdma_uar *
uar_page_alloc(struct erdma_ctx *c)
{
	struct erdma_uar *u = calloc(1, sizeof(*u));
	uint32_t page_id = 0;
	uint64_t t0 = erdma_now_us();
	int rc;

	if (u == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rc = emu_uar_alloc(c->emu, &page_id);
	if (rc == 0) {
		rc = erdma_page_get(c, ERDMA_PAGE_UAR, page_id, &u->slot);
		if (rc < 0)
			emu_uar_free(c->emu, page_id);
	}
	erdma_trace_op(c, "uar_alloc", "UAR_ALLOC", t0, "page_id", page_id, 0,
		       (uint64_t)erdma_page_size(), rc < 0 ? -1 : 0);
	if (rc < 0) {
		free(u);
		errno = -rc;
		return NULL;
	}
	u->ctx = c;
	u->pub.page_id = page_id;
	u->pub.mmap_off = (off_t)u->slot * erdma_page_size();
	u->pub.base_addr = (uint8_t *)c->window + u->pub.mmap_off;
	u->pub.reg_addr = (uint8_t *)u->pub.base_addr + ERDMA_UAR_REG_OFFSET;
	return u;
}

/* Back to the kernel (MLX5_IB_METHOD_UAR_OBJ_DESTROY, a DEALLOC_UAR). */
static void
uar_page_free(struct erdma_uar *u)
{
	uint64_t t0 = erdma_now_us();
	int rc;

	/* Writes made before the free still reach the device. */
	erdma_page_put(u->ctx, u->slot);
	rc = emu_uar_free(u->ctx->emu, u->pub.page_id);
	erdma_trace_op(u->ctx, "uar_free", "UAR_FREE", t0, "page_id", u->pub.page_id, 0, 0,
		       rc < 0 ? -1 : 0);
	if (rc < 0)
		/* rdma-core's free cannot fail: the device keeps the page (leak report). */
		erdma_log("%s: UAR page %u not freed: %s", u->ctx->vctx.context.device->name,
			  u->pub.page_id, strerror(-rc));
	erdma_handle_del(u->ctx, &u->h);
	free(u);
}

/* ibv_close_device: rdma-core's mlx5_free_context frees ctx->nc_uar. */
static void
release_nc_uar(void *base)
{
	struct erdma_uar *u = base;

	u->ctx->nc_uar = NULL;
	uar_page_free(u);
}

/*
 * rdma-core 44 _mlx5dv_devx_alloc_uar: flags other than BF (0) and NC are
 * EOPNOTSUPP (check_comp_mask; NC_DEDICATED only came with rdma-core 45);
 * NC is mlx5_get_singleton_nc_uar, the one NC page of the context
 * (ctx->nc_uar), the same for every call; BF a page of its own each
 * time. rdma-core allocates the NC page when the context opens; here on
 * its first request, which no program can tell apart but by the device's
 * object count. It goes at ibv_close_device.
 */
ERDMA_VISIBLE struct mlx5dv_devx_uar *
mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
	struct erdma_ctx *c = devx_ctx(context, "mlx5dv_devx_alloc_uar");
	struct erdma_uar *u;

	if (c == NULL)
		return NULL;
	if ((flags & ~(uint32_t)MLX5DV_UAR_ALLOC_TYPE_NC) != 0) {
		erdma_log("%s: mlx5dv_devx_alloc_uar flags 0x%x: EOPNOTSUPP (rdma-core 44 "
			  "_mlx5dv_devx_alloc_uar takes BF or NC only)", context->device->name,
			  flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (flags == MLX5DV_UAR_ALLOC_TYPE_NC) {
		pthread_mutex_lock(&context->mutex);
		u = c->nc_uar;
		if (u == NULL) {
			u = uar_page_alloc(c);
			if (u != NULL) {
				c->nc_uar = u;
				erdma_handle_add_release(c, &u->h, u, release_nc_uar);
			}
		}
		pthread_mutex_unlock(&context->mutex);
		return u != NULL ? &u->pub : NULL;
	}
	u = uar_page_alloc(c);
	if (u == NULL)
		return NULL;
	erdma_handle_add(c, &u->h, u);
	return &u->pub;
}

/* rdma-core _mlx5dv_devx_free_uar: the NC page stays the context's (nc_mode: return). */
ERDMA_VISIBLE void
mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *pub)
{
	struct erdma_uar *u = (struct erdma_uar *)pub;

	if (u == u->ctx->nc_uar)
		return;
	uar_page_free(u);
}

/* Linux devx.c MLX5_IB_METHOD_DEVX_QUERY_EQN: mlx5_vector2eqn, EINVAL out of range. */
ERDMA_VISIBLE int
mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector, uint32_t *eqn)
{
	struct erdma_ctx *c = devx_ctx(context, "mlx5dv_devx_query_eqn");
	uint64_t t0 = erdma_now_us();
	int rc;

	if (c == NULL)
		return EINVAL;
	rc = emu_eqn_query(c->emu, vector, eqn);
	erdma_trace_op(c, "eqn_query", "EQN_QUERY", t0, "eqn", rc == 0 ? *eqn : 0, vector, 0,
		       rc < 0 ? -1 : 0);
	return rc < 0 ? -rc : 0;
}

void
erdma_uar_forward(struct erdma_ctx *c, uint32_t page_id, uint32_t offset, uint64_t value)
{
	/*
	 * The device reads its UAR doorbell registers big-endian (the mlx5 CQ
	 * doorbell is stored with htobe64 by every driver): what lies on the
	 * page is that byte order, the emulator takes the register's value.
	 */
	uint64_t reg = be64toh(value);

	erdma_trace_op(c, "uar_write", "UAR_WRITE", erdma_now_us(), "value", reg, offset, 8, 0);
	/* The watcher sees the last of the writes between two looks. */
	emu_uar_write_merged(c->emu, page_id, offset, reg);
}
