/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs family: device list, contexts (one emulated device each), PD,
 * memory regions, the null mr, and what the inline verbs.h wrappers reach
 * through struct verbs_context.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <unistd.h>

#include "prm.h"
#include "erdma.h"
#include "mlx5_lm_erdma.h"

static struct erdma_device devices[ERDMA_MAX_DEVICES];
static unsigned int n_devices;
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

/* Contexts still open, reported as leaks when the process exits. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int open_contexts;
/* The open contexts, for mlx5_lm_erdma_cost_stats; what closed ones left alive. */
static struct erdma_ctx *open_list;
static unsigned long left_alive_total;

void
erdma_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "emu-rdma: %s\n", line);
}

void
erdma_unsupported(const char *fn, int err)
{
	erdma_log("%s is not implemented by the emulated rdma-core (%s)", fn, strerror(err));
	errno = err;
}

long
erdma_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

bool
erdma_capable(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* mm->pinned_vm of this process: host pages pinned by every context (ib_umem_get). */
static _Atomic uint64_t pinned_vm;

int
erdma_pin(struct erdma_ctx *c, const void *addr, size_t len, uint64_t *pages)
{
	uint64_t page = emu_dev_host_page_size(c->emu);
	uint64_t first = (uintptr_t)addr & ~(page - 1);
	uint64_t n = ((uintptr_t)addr + len - first + page - 1) / page, now;
	struct rlimit rl;

	*pages = 0;
	now = atomic_fetch_add(&pinned_vm, n) + n;
	/*
	 * Linux drivers/infiniband/core/umem.c ib_umem_get(): lock_limit =
	 * rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT; new_pinned = pinned_vm +
	 * npages; over the limit without CAP_IPC_LOCK: -ENOMEM. ibv_reg_mr and
	 * mlx5dv_devx_umem_reg both pin through it.
	 */
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    now > rl.rlim_cur / page && !erdma_capable(CAP_IPC_LOCK)) {
		atomic_fetch_sub(&pinned_vm, n);
		erdma_log("%s: pinning %" PRIu64 " more pages of %" PRIu64 " bytes (%" PRIu64
			  " pinned by the process) exceeds RLIMIT_MEMLOCK (%" PRIu64 " bytes) "
			  "without CAP_IPC_LOCK: ENOMEM (Linux core/umem.c ib_umem_get)",
			  c->vctx.context.device->name, n, page, now - n, (uint64_t)rl.rlim_cur);
		errno = ENOMEM;
		return ENOMEM;
	}
	*pages = n;
	return 0;
}

void
erdma_unpin(uint64_t pages)
{
	atomic_fetch_sub(&pinned_vm, pages);
}

/* The leak lines of the device this thread is closing (ibv_close_device). */
static __thread char *leak_capture;
static __thread size_t leak_capture_len;

static void
emu_log_to_stderr(int level, const char *line)
{
	size_t n;
	char *p;

	if (level <= 4)
		fprintf(stderr, "emu-rdma: %s\n", line);
	if (level > 4 || strstr(line, ": leaked ") == NULL || leak_capture_len == SIZE_MAX)
		return;
	n = strlen(line);
	p = realloc(leak_capture, leak_capture_len + n + 2);
	if (p == NULL) {
		leak_capture_len = SIZE_MAX; /* the summary says so, below */
		return;
	}
	memcpy(p + leak_capture_len, line, n);
	p[leak_capture_len + n] = '\n';
	p[leak_capture_len + n + 1] = '\0';
	leak_capture = p;
	leak_capture_len += n + 1;
}

static void
devices_init(void)
{
	const char *n = getenv(ERDMA_ENV_DEVICES);
	const char *sysfs = getenv(ERDMA_ENV_SYSFS);
	unsigned long want = 1;
	unsigned int i;

	if (n != NULL) {
		char *end;

		want = strtoul(n, &end, 0);
		if (*n == '\0' || *end != '\0' || want > ERDMA_MAX_DEVICES) {
			erdma_log("%s=%s: not a number of devices (0..%u)", ERDMA_ENV_DEVICES, n,
				  ERDMA_MAX_DEVICES);
			want = 0;
		}
	}
	emu_set_log(emu_log_to_stderr);
	for (i = 0; i < want; i++) {
		struct erdma_device *d = &devices[i];

		d->magic = ERDMA_MAGIC;
		d->index = i;
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "mlx5_%u", i);
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%u", i);
		snprintf(d->dev.dev_path, sizeof(d->dev.dev_path),
			 "%s/class/infiniband_verbs/uverbs%u", sysfs ? sysfs : "/sys", i);
		snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path),
			 "%s/class/infiniband/mlx5_%u", sysfs ? sysfs : "/sys", i);
	}
	n_devices = (unsigned int)want;
}

static struct erdma_device *
erdma_device(struct ibv_device *d)
{
	struct erdma_device *e = (struct erdma_device *)d;

	return e != NULL && e->magic == ERDMA_MAGIC ? e : NULL;
}

ERDMA_VISIBLE struct ibv_device **
ibv_get_device_list(int *num)
{
	struct ibv_device **list;
	unsigned int i;

	pthread_once(&devices_once, devices_init);
	list = calloc(n_devices + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n_devices; i++)
		list[i] = &devices[i].dev;
	if (num != NULL)
		*num = (int)n_devices;
	return list;
}

ERDMA_VISIBLE void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

ERDMA_VISIBLE const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

ERDMA_VISIBLE bool
mlx5dv_is_supported(struct ibv_device *device)
{
	return erdma_device(device) != NULL;
}

/* Old-style context ops a program may reach through inline wrappers: fail loudly. */
static void
ctx_op_unimplemented(void)
{
	erdma_log("a struct ibv_context_ops/verbs_context operation the emulated rdma-core "
		  "does not implement was called (an inline verbs.h wrapper): aborting");
	abort();
}

static struct ibv_mr *erdma_alloc_null_mr(struct ibv_pd *pd);

void
erdma_handle_add(struct erdma_ctx *c, struct erdma_handle *h, void *base)
{
	erdma_handle_add_release(c, h, base, NULL);
}

void
erdma_handle_add_release(struct erdma_ctx *c, struct erdma_handle *h, void *base,
			 void (*release)(void *base))
{
	h->base = base;
	h->release = release;
	pthread_mutex_lock(&c->lock);
	h->next = c->handles.next;
	h->prev = &c->handles;
	c->handles.next->prev = h;
	c->handles.next = h;
	pthread_mutex_unlock(&c->lock);
}

void
erdma_handle_del(struct erdma_ctx *c, struct erdma_handle *h)
{
	pthread_mutex_lock(&c->lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	pthread_mutex_unlock(&c->lock);
}

static void
fill_ops(struct erdma_ctx *c)
{
	void (**op)(void);
	size_t i;

	/* Every pointer slot of both op tables, then the ones we implement. */
	op = (void (**)(void))&c->vctx.context.ops;
	for (i = 0; i < sizeof(c->vctx.context.ops) / sizeof(*op); i++)
		op[i] = ctx_op_unimplemented;
	op = (void (**)(void))&c->vctx;
	for (i = 0; i < offsetof(struct verbs_context, priv) / sizeof(*op); i++)
		op[i] = ctx_op_unimplemented;
	op = (void (**)(void))&c->vctx.query_device_ex;
	for (i = 0; i < (offsetof(struct verbs_context, _ABI_placeholder3) -
			 offsetof(struct verbs_context, query_device_ex)) / sizeof(*op); i++)
		op[i] = ctx_op_unimplemented;
	c->vctx.priv = NULL;
	c->vctx.alloc_null_mr = erdma_alloc_null_mr;
	c->vctx.ibv_destroy_flow = erdma_destroy_flow;
	c->vctx.sz = sizeof(c->vctx);
}

/* Read the doorbell location the device announces (the kernel reads caps the same way). */
static int
read_doorbell_caps(struct erdma_ctx *c)
{
	uint8_t in[PRM_SIZE(query_hca_cap_in)];
	uint8_t *out = calloc(1, PRM_SIZE(query_hca_cap_out));
	const void *cap;
	uint64_t off;
	long page = erdma_page_size();

	if (out == NULL)
		return -ENOMEM;
	memset(in, 0, sizeof(in));
	PRM_SET(query_hca_cap_in, in, opcode, PRM_CMD_QUERY_HCA_CAP);
	PRM_SET(query_hca_cap_in, in, op_mod, PRM_HCA_CAP_OP_MOD(PRM_CAP_VIRTIO_EMULATION, 1));
	if (emu_cmd(c->emu, in, sizeof(in), out, PRM_SIZE(query_hca_cap_out)) < 0 ||
	    PRM_GET(cmd_out, out, status) != PRM_STATUS_OK) {
		free(out);
		return -EIO;
	}
	cap = PRM_CADDR(query_hca_cap_out, out, capability);
	off = PRM_GET(virtio_emulation_cap, cap, doorbell_bar_offset);
	c->db_page_base = (uint32_t)(off & ~(uint64_t)(page - 1));
	c->db_in_page = (uint32_t)(off & (uint64_t)(page - 1));
	/* In 4 KiB units (Linux main.c mlx5_ib_init_var_table: (1 << log) * 4096). */
	c->db_area = (1u << PRM_GET(virtio_emulation_cap, cap, log_doorbell_bar_size)) * 4096u;
	c->db_stride = 1u << PRM_GET(virtio_emulation_cap, cap, log_doorbell_stride);
	free(out);
	return 0;
}

static struct ibv_context *
open_context(struct ibv_device *device, bool devx)
{
	struct erdma_device *d = erdma_device(device);
	const char *profile = getenv(ERDMA_ENV_PROFILE);
	struct erdma_ctx *c;
	uint32_t synd;
	char err[256];

	if (d == NULL) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->magic = ERDMA_MAGIC;
	c->devx = devx;
	c->dev_index = d->index;
	pthread_mutex_init(&c->lock, NULL);
	c->handles.next = c->handles.prev = &c->handles;
	fill_ops(c);
	c->vctx.context.device = device;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.context.num_comp_vectors = EMU_NUM_COMP_EQS;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->emu = emu_dev_create(device->name, profile != NULL && *profile ? profile : "cx6dx",
				err, sizeof(err));
	if (c->emu == NULL) {
		erdma_log("%s: cannot create the emulated device: %s", device->name, err);
		errno = EINVAL;
		goto err_emu;
	}
	if (read_doorbell_caps(c) < 0 || emu_kernel_null_mkey(c->emu, &c->null_mkey, &synd)) {
		erdma_log("%s: the emulated device does not answer its capabilities",
			  device->name);
		errno = EIO;
		goto err_caps;
	}
	/* The async fd never has an event: the emulated port never changes. */
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	if (c->vctx.context.async_fd < 0)
		goto err_caps;
	if (erdma_db_init(c) < 0)
		goto err_db;
	if (erdma_wire_open(c, d->index) < 0) {
		errno = EIO;
		goto err_wire;
	}
	if (erdma_ctl_init(c) < 0) {
		errno = EIO;
		goto err_ctl;
	}
	pthread_mutex_lock(&open_lock);
	open_contexts++;
	c->next_open = open_list;
	open_list = c;
	pthread_mutex_unlock(&open_lock);
	return &c->vctx.context;
err_ctl:
	erdma_wire_close(c);
err_wire:
	erdma_db_fini(c);
err_db:
	close(c->vctx.context.async_fd);
err_caps:
	emu_dev_destroy(c->emu);
err_emu:
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

ERDMA_VISIBLE struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	return open_context(device, false);
}

ERDMA_VISIBLE struct ibv_context *
mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	if (attr != NULL && (attr->flags & ~(uint32_t)MLX5DV_CONTEXT_FLAGS_DEVX)) {
		erdma_unsupported("mlx5dv_open_device with flags other than "
				  "MLX5DV_CONTEXT_FLAGS_DEVX", EOPNOTSUPP);
		return NULL;
	}
	/*
	 * A DevX context is a user context object the kernel creates for the
	 * process (devx.c mlx5_ib_devx_create): "if (!capable(CAP_NET_RAW))
	 * return -EPERM" where it is a UCTX general object; newer kernels drop
	 * the check but grant RAW_TX only with it. The stricter reading.
	 */
	if (attr != NULL && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX) &&
	    !erdma_capable(CAP_NET_RAW)) {
		erdma_log("%s: mlx5dv_open_device with DevX without CAP_NET_RAW: EPERM (Linux "
			  "devx.c mlx5_ib_devx_create)", device->name);
		errno = EPERM;
		return NULL;
	}
	return open_context(device, attr != NULL && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX));
}

ERDMA_VISIBLE int
ibv_close_device(struct ibv_context *context)
{
	struct erdma_ctx *c = erdma_ctx(context), **pp;
	int alive;

	if (c == NULL)
		return EINVAL;
	/* Handles with threads on the device (event channels) go first. */
	for (;;) {
		struct erdma_handle *h;

		pthread_mutex_lock(&c->lock);
		for (h = c->handles.next; h != &c->handles && h->release == NULL; h = h->next)
			;
		pthread_mutex_unlock(&c->lock);
		if (h == &c->handles)
			break;
		h->release(h->base);
	}
	erdma_ctl_fini(c);
	erdma_var_ctx_closed(c);
	erdma_db_fini(c);
	erdma_wire_close(c);
	/* Off the open list before the device goes: the stats query reads it. */
	pthread_mutex_lock(&open_lock);
	for (pp = &open_list; *pp != NULL && *pp != c; pp = &(*pp)->next_open)
		;
	if (*pp == c)
		*pp = c->next_open;
	pthread_mutex_unlock(&open_lock);
	/* What is still alive is the program's leak: the emulator lists it. */
	leak_capture = NULL;
	leak_capture_len = 0;
	alive = emu_dev_destroy(c->emu);
	while (c->handles.next != &c->handles) {
		struct erdma_handle *h = c->handles.next;

		erdma_handle_del(c, h);
		free(h->base);
	}
	erdma_summary(context->device->name, alive,
		      leak_capture_len == SIZE_MAX ? "(leak lines lost: out of memory)\n" :
		      leak_capture);
	free(leak_capture);
	leak_capture = NULL;
	leak_capture_len = 0;
	close(context->async_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&c->lock);
	c->magic = 0;
	free(c);
	pthread_mutex_lock(&open_lock);
	open_contexts--;
	if (alive > 0)
		left_alive_total += (unsigned long)alive;
	pthread_mutex_unlock(&open_lock);
	return 0;
}

/*
 * Not rdma-core: the emulator's account of a device another driver of the
 * process opened (mlx5_lm_erdma.h). The counters are atomics of the
 * emulator; open_lock keeps the context from closing meanwhile.
 */
ERDMA_VISIBLE int
mlx5_lm_erdma_cost_stats(const char *name, struct mlx5_lm_erdma_stats *s)
{
	struct emu_cost_stats es;
	struct erdma_ctx *c;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&open_lock);
	for (c = open_list; c != NULL; c = c->next_open) {
		if (strcmp(c->vctx.context.device->name, name) != 0)
			continue;
		emu_dev_cost_stats(c->emu, &es);
		s->cmds += es.cmds;
		s->model_us += es.model_us;
		s->actual_us += es.actual_us;
		if (es.overshoot_max_us > s->overshoot_max_us)
			s->overshoot_max_us = es.overshoot_max_us;
		s->pins += es.pins;
		s->pin_model_us += es.pin_model_us;
		s->pin_actual_us += es.pin_actual_us;
		s->contexts++;
	}
	pthread_mutex_unlock(&open_lock);
	return s->contexts > 0 ? 0 : -ENODEV;
}

ERDMA_VISIBLE unsigned long
mlx5_lm_erdma_left_alive(void)
{
	unsigned long n;

	pthread_mutex_lock(&open_lock);
	n = left_alive_total;
	pthread_mutex_unlock(&open_lock);
	return n;
}

/* A context never closed holds a whole device: report it when the process exits. */
static void __attribute__((destructor))
report_open_contexts(void)
{
	unsigned int i;

	for (i = 0; i < open_contexts; i++)
		erdma_summary("(context never closed)", 1, NULL);
	if (open_contexts)
		erdma_log("%u device context(s) never closed with ibv_close_device",
			  open_contexts);
}

/*
 * Fork support: rdma-core reports IBV_FORK_UNNEEDED when the kernel keeps
 * registered pages of a forked parent intact (Linux >= 5.13), and its
 * ibv_fork_init then has nothing to do. The emulator pins nothing a fork
 * could move, which is the same situation.
 */
ERDMA_VISIBLE enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

ERDMA_VISIBLE int
ibv_fork_init(void)
{
	return 0;
}

/* ---- Protection domains --------------------------------------------------- */
ERDMA_VISIBLE struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	struct erdma_ctx *c = erdma_ctx(context);
	struct erdma_pd *pd;
	uint32_t pdn = 0, synd = 0;
	uint64_t t0 = erdma_now_us();
	int st;

	if (c == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	st = emu_kernel_alloc_pd(c->emu, &pdn, &synd);
	erdma_trace_op(c, "alloc_pd", "ALLOC_PD", t0, "pdn", pdn, 0, 0, st);
	if (st != 0) {
		free(pd);
		errno = ENOMEM;
		return NULL;
	}
	pd->pub.context = context;
	pd->pub.handle = pdn;
	erdma_handle_add(c, &pd->h, pd);
	return &pd->pub;
}

ERDMA_VISIBLE int
ibv_dealloc_pd(struct ibv_pd *pub)
{
	struct erdma_pd *pd = (struct erdma_pd *)pub;
	struct erdma_ctx *c = erdma_ctx(pub->context);
	uint64_t t0 = erdma_now_us();
	uint32_t synd = 0;
	int st;

	st = emu_kernel_dealloc_pd(c->emu, pub->handle, &synd);
	erdma_trace_op(c, "dealloc_pd", "DEALLOC_PD", t0, "pdn", pub->handle, 0, 0, st);
	if (st != 0)
		return st == PRM_STATUS_RES_BUSY ? EBUSY : EINVAL;
	erdma_handle_del(c, &pd->h);
	free(pd);
	return 0;
}

/* ---- Memory regions -------------------------------------------------------- */
/*
 * rdma-core's mlx5 provider: ibv_alloc_null_mr hands out the context's
 * dump-fill mkey (no kernel call, no device object).
 */
static struct ibv_mr *
erdma_alloc_null_mr(struct ibv_pd *pd)
{
	struct erdma_ctx *c = erdma_ctx(pd->context);
	struct erdma_mr *mr = calloc(1, sizeof(*mr));

	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.lkey = c->null_mkey;
	erdma_handle_add(c, &mr->h, mr);
	erdma_trace_op(c, "null_mr", "NULL_MR", erdma_now_us(), "mkey", c->null_mkey, 0, 0, 0);
	return &mr->pub;
}

/*
 * The kernel registers an MR (Linux mlx5_ib mr.c mlx5_ib_reg_user_mr) by
 * pinning the pages (ib_umem_get), choosing the page size for the iova
 * (mlx5_umem_find_best_pgsz) and creating an MTT mkey over its own page
 * list in the PD, with a fresh variant byte: emu_kernel_reg_mr, no DevX
 * umem (the cost model charges the pin, the upload and the mkey as
 * before). ib_check_mr_access refuses REMOTE_WRITE/ATOMIC without
 * LOCAL_WRITE.
 */
static struct ibv_mr *
reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct erdma_ctx *c = erdma_ctx(pd->context);
	uint64_t t0 = erdma_now_us();
	struct erdma_mr *mr;
	uint32_t synd = 0, lkey = 0;
	int st;

	if (c == NULL || length == 0 ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Linux core/uverbs_cmd.c ib_uverbs_reg_mr: the address and the iova
	 * must sit at the same offset within a page, else EINVAL before the
	 * pin. The page is this machine's: a profile with larger host pages
	 * (page64k) still gets its addresses from this machine's mmap, which
	 * a 64 KiB-page kernel would have aligned for it.
	 */
	if ((((uintptr_t)addr ^ iova) & ((uint64_t)erdma_page_size() - 1)) != 0) {
		erdma_log("%s: ibv_reg_mr at %p with iova 0x%" PRIx64 ": different offsets "
			  "within a page: EINVAL (Linux uverbs_cmd.c ib_uverbs_reg_mr)",
			  pd->context->device->name, addr, iova);
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (erdma_pin(c, addr, length, &mr->pinned) != 0) {
		erdma_trace_op(c, "reg_mr", "MR_REG", t0, "lkey", 0, (uintptr_t)addr, length, -1);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	st = emu_kernel_reg_mr(c->emu, pd->handle, addr, length, iova, access, &lkey, &synd);
	erdma_trace_op(c, "reg_mr", "MR_REG", t0, "lkey", lkey, (uintptr_t)addr, length, st);
	if (st != 0) {
		erdma_unpin(mr->pinned);
		free(mr);
		/* A pin that fails is the kernel's EFAULT; a firmware refusal EREMOTEIO. */
		errno = synd == EMU_SYND_UMEM_NOT_BACKED || synd == EMU_SYND_UMEM_WRITEBACK_FILE ?
			EFAULT : EREMOTEIO;
		return NULL;
	}
	mr->registered = true;
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = addr;
	mr->pub.length = length;
	mr->pub.handle = lkey >> 8;
	mr->pub.lkey = lkey;
	mr->pub.rkey = lkey;
	erdma_handle_add(c, &mr->h, mr);
	return &mr->pub;
}

ERDMA_VISIBLE struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

#undef ibv_reg_mr_iova
ERDMA_VISIBLE struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

#undef ibv_reg_mr
ERDMA_VISIBLE struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

ERDMA_VISIBLE int
ibv_dereg_mr(struct ibv_mr *pub)
{
	struct erdma_mr *mr = (struct erdma_mr *)pub;
	struct erdma_ctx *c = erdma_ctx(pub->context);
	uint32_t synd = 0;
	uint64_t t0 = erdma_now_us();
	int st;

	if (!mr->registered) { /* the null mr: nothing in the device */
		erdma_handle_del(c, &mr->h);
		free(mr);
		return 0;
	}
	st = emu_kernel_dereg_mr(c->emu, pub->lkey, &synd);
	erdma_trace_op(c, "dereg_mr", "MR_DEREG", t0, "lkey", pub->lkey, (uintptr_t)pub->addr,
		       pub->length, st);
	if (st != 0)
		return EINVAL;
	erdma_unpin(mr->pinned);
	erdma_handle_del(c, &mr->h);
	free(mr);
	return 0;
}

ERDMA_VISIBLE int
mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	if (obj_type & ~(uint64_t)MLX5DV_OBJ_PD) {
		erdma_unsupported("mlx5dv_init_obj for objects other than MLX5DV_OBJ_PD",
				  EOPNOTSUPP);
		return EOPNOTSUPP;
	}
	if (obj_type & MLX5DV_OBJ_PD) {
		obj->pd.out->pdn = obj->pd.in->handle;
		obj->pd.out->comp_mask = 0;
	}
	return 0;
}
