/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX back end "rdma": a real ConnectX through rdma-core's mlx5dv DevX.
 * Every call is one synchronous ioctl; the kernel builds destroy commands
 * itself, so the derived destroy mailbox is only traced.
 */
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include "prm.h"
#include "devx_mmio.h"
#include "devx_priv.h"

#define IBCTX(ctx) ((struct ibv_context *)(ctx)->be_priv)

/*
 * rdma-core delivers a subscriber cookie but not the event type; the low
 * byte of the cookie we subscribe with carries it.
 */
#define COOKIE_TYPE_BITS 8

/*
 * The name of an RDMA device's parent (its PCI function, or the auxiliary
 * device of an SF): the last component of <ibdev_path>/device, a sysfs
 * link. Empty when it cannot be read.
 */
static void
parent_name(struct ibv_device *d, char *buf, size_t len)
{
	char link[sizeof(d->ibdev_path) + 8], target[PATH_MAX];
	char *slash, *base;
	ssize_t n;

	buf[0] = '\0';
	snprintf(link, sizeof(link), "%s/device", d->ibdev_path);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	slash = strrchr(target, '/');
	base = slash != NULL ? slash + 1 : target;
	if (strlen(base) < len)  /* sysfs device names are short; a long one matches nothing */
		memcpy(buf, base, strlen(base) + 1);
}

static int
rdma_open(struct devx_ctx *ctx, const struct devx_open_params *p, char *err, size_t errlen)
{
	struct mlx5dv_context_attr attr = { .flags = MLX5DV_CONTEXT_FLAGS_DEVX };
	/* How the user named the device, for the messages: "ibdev=mlx5_0", "pci=...". */
	char want[128], names[512] = "", parent[128];
	struct ibv_device **list;
	struct ibv_device *found = NULL;
	struct ibv_context *ibctx;
	int n = 0, i;

	if (p->ibdev != NULL)
		snprintf(want, sizeof(want), "ibdev=%s", p->ibdev);
	else
		snprintf(want, sizeof(want), "%s=%s", strchr(p->parent, ':') ? "pci" : "sf",
			 p->parent);
	list = ibv_get_device_list(&n);
	if (list == NULL) {
		/* rdma-core fails this way when the kernel has no RDMA device class at all. */
		snprintf(err, errlen, "%s: no such RDMA device (ibv_get_device_list returned "
			 "no device: %s)", want, strerror(errno));
		return -ENODEV;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		size_t len = strlen(names);

		parent_name(list[i], parent, sizeof(parent));
		if (p->ibdev != NULL ? strcmp(name, p->ibdev) == 0 : strcmp(parent, p->parent) == 0)
			found = list[i];
		snprintf(names + len, sizeof(names) - len, "%s%s (%s)", len ? ", " : "", name,
			 parent[0] ? parent : "no parent device");
	}
	if (found == NULL) {
		snprintf(err, errlen, "%s: no such RDMA device (ibv_get_device_list returned %s%s)",
			 want, n ? "" : "no device", names);
		ibv_free_device_list(list);
		return -ENODEV;
	}
	if (!mlx5dv_is_supported(found)) {
		snprintf(err, errlen, "%s: %s is not an mlx5 device", want,
			 ibv_get_device_name(found));
		ibv_free_device_list(list);
		return -ENOTSUP;
	}
	if (p->parent != NULL)
		devx_log(6, "%s: %s is RDMA device %s", ctx->name, want, ibv_get_device_name(found));
	ibctx = mlx5dv_open_device(found, &attr);
	if (ibctx == NULL) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot open %s with DevX: %s%s", want,
			 ibv_get_device_name(found), strerror(e), e == EPERM ?
			 " (a DevX context needs CAP_NET_RAW: doc/hardware.md)" : "");
		ibv_free_device_list(list);
		return e ? -e : -ENODEV;
	}
	ibv_free_device_list(list);
	ctx->be_priv = ibctx;
	return 0;
}

static int
rdma_close(struct devx_ctx *ctx)
{
	ibv_close_device(IBCTX(ctx));
	return 0;
}

/* rdma-core returns errno; a firmware failure is EIO/EREMOTEIO with out filled. */
static int
rdma_rc(int rc, const void *out, size_t outlen)
{
	if (rc == 0)
		return 0;
	if (outlen >= PRM_SIZE(cmd_out) && PRM_GET(cmd_out, out, status) != 0)
		return 0; /* the device answered; the core reports the status */
	return rc > 0 ? -rc : (errno ? -errno : -EIO);
}

static int
rdma_cmd(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen)
{
	return rdma_rc(mlx5dv_devx_general_cmd(IBCTX(ctx), in, inlen, out, outlen), out, outlen);
}

static int
rdma_obj_create(struct devx_ctx *ctx, struct devx_obj *obj, const void *in, size_t inlen,
		void *out, size_t outlen)
{
	struct mlx5dv_devx_obj *o = mlx5dv_devx_obj_create(IBCTX(ctx), in, inlen, out, outlen);

	if (o == NULL)
		return rdma_rc(-1, out, outlen);
	obj->be_handle = o;
	return 0;
}

static int
rdma_obj_cmd(struct devx_ctx *ctx, struct devx_obj *obj, bool query, const void *in,
	     size_t inlen, void *out, size_t outlen)
{
	int rc;

	if (query)
		rc = mlx5dv_devx_obj_query(obj->be_handle, in, inlen, out, outlen);
	else
		rc = mlx5dv_devx_obj_modify(obj->be_handle, in, inlen, out, outlen);
	return rdma_rc(rc, out, outlen);
}

static int
rdma_obj_destroy(struct devx_ctx *ctx, struct devx_obj *obj, const void *din, size_t dinlen,
		 void *dout, size_t doutlen)
{
	int rc = mlx5dv_devx_obj_destroy(obj->be_handle);

	memset(dout, 0, doutlen);
	if (rc != 0) {
		/* The kernel does not hand back the firmware's answer: report EIO. */
		PRM_SET(cmd_out, dout, status, PRM_STATUS_INTERNAL_ERR);
		PRM_SET(cmd_out, dout, syndrome, (uint32_t)rc);
	}
	return 0;
}

static int
rdma_umem_reg(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status, uint32_t *syndrome)
{
	struct mlx5dv_devx_umem_in in = {
		.addr = umem->addr,
		.size = umem->size,
		.access = umem->access,
		.pgsz_bitmap = umem->pgsz_bitmap,
	};
	/*
	 * With a bitmap, mlx5dv_devx_umem_reg_ex: the kernel must honour it
	 * (the plain call sends one the kernel may drop: rdma-core 44 marks it
	 * optional), which an object at a non-zero offset relies on.
	 */
	struct mlx5dv_devx_umem *u = umem->pgsz_bitmap != 0 ?
		mlx5dv_devx_umem_reg_ex(IBCTX(ctx), &in) :
		mlx5dv_devx_umem_reg(IBCTX(ctx), umem->addr, umem->size, umem->access);

	if (u == NULL)
		return errno ? -errno : -EIO;
	umem->be_handle = u;
	umem->id = u->umem_id;
	return 0;
}

static int
rdma_umem_dereg(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status,
		uint32_t *syndrome)
{
	/*
	 * rdma-core returns the errno (execute_ioctl's), errno itself is not
	 * set: EBUSY while an object still uses the umem.
	 */
	int rc = mlx5dv_devx_umem_dereg(umem->be_handle);

	return rc == 0 ? 0 : rc > 0 ? -rc : -EIO;
}

/*
 * Memory regions as DPDK vdpa/mlx5 registers guest memory
 * (mlx5_vdpa_mem.c: ibv_reg_mr_iova per region): the kernel pins the
 * pages and builds an mkey for the iova.
 */
static int
rdma_mr_reg(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status, uint32_t *syndrome)
{
	struct ibv_mr *m = ibv_reg_mr_iova(mr->pd->be_handle, mr->addr, mr->len, mr->iova,
					   (int)mr->access);

	(void)status;
	(void)syndrome;
	if (m == NULL)
		return errno ? -errno : -EIO;
	mr->be_handle = m;
	mr->lkey = m->lkey;
	return 0;
}

static int
rdma_mr_dereg(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status, uint32_t *syndrome)
{
	int rc = ibv_dereg_mr(mr->be_handle);

	(void)ctx;
	(void)status;
	(void)syndrome;
	return rc == 0 ? 0 : rc > 0 ? -rc : -EIO;
}

/*
 * A rule in the NIC RX root through the kernel's flow steering: one
 * matcher (table type, priority, criteria and mask) per rule, then the
 * rule with its value and one DEST_DEVX action naming the TIR or table.
 */
static int
rdma_flow_create(struct devx_ctx *ctx, struct devx_flow *flow, const struct devx_flow_attr *a,
		 struct devx_obj *dest, uint8_t *status, uint32_t *syndrome)
{
	size_t len = sizeof(struct mlx5dv_flow_match_parameters) + a->match_len;
	struct mlx5dv_flow_match_parameters *mask = calloc(1, len);
	struct mlx5dv_flow_match_parameters *value = calloc(1, len);
	struct mlx5dv_flow_matcher_attr mattr = {
		.type = IBV_FLOW_ATTR_NORMAL,
		.priority = a->priority,
		.match_criteria_enable = a->match_criteria_enable,
		.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE,
		.ft_type = MLX5DV_FLOW_TABLE_TYPE_NIC_RX,
	};
	struct mlx5dv_flow_action_attr action = {
		.type = MLX5DV_FLOW_ACTION_DEST_DEVX,
		.obj = dest->be_handle,
	};
	struct mlx5dv_flow_matcher *matcher = NULL;
	struct ibv_flow *f = NULL;
	int rc = 0;

	(void)status;
	(void)syndrome;
	if (mask == NULL || value == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	mask->match_sz = a->match_len;
	value->match_sz = a->match_len;
	if (a->match_len > 0) {
		memcpy(mask->match_buf, a->match_mask, a->match_len);
		memcpy(value->match_buf, a->match_value, a->match_len);
	}
	mattr.match_mask = mask;
	matcher = mlx5dv_create_flow_matcher(IBCTX(ctx), &mattr);
	if (matcher == NULL) {
		rc = errno ? -errno : -EIO;
		goto out;
	}
	f = mlx5dv_create_flow(matcher, value, 1, &action);
	if (f == NULL) {
		rc = errno ? -errno : -EIO;
		mlx5dv_destroy_flow_matcher(matcher);
		goto out;
	}
	flow->be_matcher = matcher;
	flow->be_handle = f;
	pthread_mutex_lock(&ctx->lock);
	flow->id = ++ctx->flow_seq;
	pthread_mutex_unlock(&ctx->lock);
out:
	free(mask);
	free(value);
	return rc;
}

static int
rdma_flow_destroy(struct devx_ctx *ctx, struct devx_flow *flow, uint8_t *status,
		  uint32_t *syndrome)
{
	int rc;

	(void)ctx;
	(void)status;
	(void)syndrome;
	if (flow->be_handle != NULL) {
		rc = ibv_destroy_flow(flow->be_handle);
		if (rc != 0)
			return -rc;
		flow->be_handle = NULL;
	}
	rc = mlx5dv_destroy_flow_matcher(flow->be_matcher);
	return rc == 0 ? 0 : -rc;
}

/* What DPDK's mlx5 drivers do: a verbs PD, its pdn, and the null mr's lkey. */
static int
rdma_pd_alloc(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status, uint32_t *syndrome)
{
	struct mlx5dv_pd dv_pd;
	struct mlx5dv_obj dv = { .pd = { .in = NULL, .out = &dv_pd } };
	struct ibv_pd *ibpd;
	struct ibv_mr *mr;
	int rc;

	ibpd = ibv_alloc_pd(IBCTX(ctx));
	if (ibpd == NULL)
		return errno ? -errno : -ENOMEM;
	dv.pd.in = ibpd;
	rc = mlx5dv_init_obj(&dv, MLX5DV_OBJ_PD);
	if (rc != 0) {
		rc = rc > 0 ? -rc : -EINVAL;
		goto err_init;
	}
	mr = ibv_alloc_null_mr(ibpd);
	if (mr == NULL) {
		rc = errno ? -errno : -EOPNOTSUPP;
		goto err_init;
	}
	pd->be_handle = ibpd;
	pd->be_mr = mr;
	pd->pdn = dv_pd.pdn;
	pd->null_mkey = mr->lkey;
	return 0;
err_init:
	ibv_dealloc_pd(ibpd);
	return rc;
}

static int
rdma_pd_free(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status, uint32_t *syndrome)
{
	int rc;

	if (pd->be_mr != NULL) {
		rc = ibv_dereg_mr(pd->be_mr);
		if (rc != 0)
			return rc > 0 ? -rc : -EIO;
		pd->be_mr = NULL;
	}
	rc = ibv_dealloc_pd(pd->be_handle);
	return rc == 0 ? 0 : (rc > 0 ? -rc : -EIO);
}

/*
 * VAR allocation attempts, as DPDK vdpa/mlx5 makes them
 * (mlx5_vdpa_create_dev_resources: "wait for QEMU to release the VAR during
 * a vdpa restart"): 7, 100 ms << attempt apart, 6.3 s of waiting in all
 * (DPDK sleeps after its last attempt too: 12.7 s). The kernel keeps a
 * VAR, freed or not, while any mapping of it lasts (Linux main.c
 * mlx5_ib_mmap_free), and a front end maps the previous probe's doorbell
 * page as its host notifier until it lets it go.
 */
#define VAR_ALLOC_TRIES 7
#define VAR_ALLOC_FIRST_WAIT_MS 100u

static struct mlx5dv_var *
alloc_var_waiting(struct devx_ctx *ctx)
{
	unsigned int waited_ms = 0;
	int attempt;

	for (attempt = 0; attempt < VAR_ALLOC_TRIES; attempt++) {
		struct mlx5dv_var *var = mlx5dv_alloc_var(IBCTX(ctx), 0);
		unsigned int ms = VAR_ALLOC_FIRST_WAIT_MS << attempt;
		struct timespec ts = { .tv_sec = ms / 1000,
				       .tv_nsec = (long)(ms % 1000) * 1000000 };

		if (var != NULL) {
			if (attempt > 0)
				devx_log(5, "%s: VAR allocated after %u ms of waiting", ctx->name,
					 waited_ms);
			return var;
		}
		/* Only a full table is worth waiting for. */
		if (errno != ENOSPC)
			return NULL;
		if (attempt == VAR_ALLOC_TRIES - 1)
			break;
		devx_log(4, "%s: no VAR free (mlx5dv_alloc_var: ENOSPC), attempt %d of %d: "
			 "waiting %u ms for a front end to release the previous doorbell mapping",
			 ctx->name, attempt + 1, VAR_ALLOC_TRIES, ms);
		nanosleep(&ts, NULL);
		waited_ms += ms;
	}
	devx_log(3, "%s: no VAR free after %d attempts over %u ms (mlx5dv_alloc_var: ENOSPC): "
		 "the device's doorbell pages are all taken, a VAR lives while any mapping of it "
		 "does; a front end (QEMU's host notifier) of a previous probe still maps it?",
		 ctx->name, VAR_ALLOC_TRIES, waited_ms);
	errno = ENOSPC;
	return NULL;
}

static int
rdma_db_alloc(struct devx_ctx *ctx, struct devx_db *db)
{
	struct mlx5dv_var *var = alloc_var_waiting(ctx);
	void *page;

	if (var == NULL)
		return errno ? -errno : -ENOMEM;
	page = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED,
		    IBCTX(ctx)->cmd_fd, var->mmap_off);
	if (page == MAP_FAILED) {
		int e = errno;

		mlx5dv_free_var(var);
		return -e;
	}
	db->be_handle = var;
	db->mmio = page;
	db->mmap_fd = IBCTX(ctx)->cmd_fd;
	db->mmap_offset = var->mmap_off;
	db->mmap_size = var->length;
	db->index = var->page_id;
	return 0;
}

static void
rdma_db_free(struct devx_ctx *ctx, struct devx_db *db)
{
	struct mlx5dv_var *var = db->be_handle;

	munmap((void *)db->mmio, var->length);
	mlx5dv_free_var(var);
}

static void
rdma_db_ring(struct devx_ctx *ctx, struct devx_db *db, uint32_t offset, uint32_t v)
{
	/*
	 * offset is in the BAR (doorbell_bar_offset + k * stride for VAR k), but
	 * the kernel's mapping of VAR k starts at the page holding it (Linux
	 * main.c alloc_var_entry, mlx5_ib_mmap_offset): only the in-page part.
	 */
	uint32_t in_page = offset & (uint32_t)(db->mmap_size - 1);

	/*
	 * The VAR page is device memory mapped non-cached (Linux main.c maps
	 * MLX5_IB_MMAP_TYPE_VAR with pgprot_noncached): one 32-bit store, after
	 * the avail ring writes it announces, as DPDK vdpa/mlx5's rte_write32
	 * (rte_io_wmb, then the store) and rdma-core's udma_to_device_barrier.
	 * An atomic store: several threads ring it (relay, worker).
	 */
	devx_to_device_barrier();
	__atomic_store_n((volatile uint32_t *)((volatile uint8_t *)db->mmio + in_page), v,
			 __ATOMIC_RELAXED);
}

static int
rdma_uar_alloc(struct devx_ctx *ctx, struct devx_uar *uar)
{
	/*
	 * A non-cached page first, as DPDK's common/mlx5 does: doorbells
	 * need no write combining; firmware without NC pages offers BF.
	 */
	struct mlx5dv_devx_uar *u = mlx5dv_devx_alloc_uar(IBCTX(ctx),
							  MLX5DV_UAR_ALLOC_TYPE_NC);

	if (u == NULL)
		u = mlx5dv_devx_alloc_uar(IBCTX(ctx), MLX5DV_UAR_ALLOC_TYPE_BF);
	if (u == NULL)
		return errno ? -errno : -ENOMEM;
	uar->be_handle = u;
	/* The CQ doorbell sits at its offset from the page, not from reg_addr. */
	uar->base = u->base_addr;
	uar->page_id = u->page_id;
	return 0;
}

static int
rdma_uar_free(struct devx_ctx *ctx, struct devx_uar *uar)
{
	mlx5dv_devx_free_uar(uar->be_handle);
	return 0;
}

static void
rdma_uar_ring(struct devx_ctx *ctx, struct devx_uar *uar, uint32_t offset, uint64_t value)
{
	/*
	 * One 64-bit big-endian store, bracketed as rdma-core's mlx5_arm_cq
	 * brackets the CQ arm: the doorbell record first (mmio_wc_start: the
	 * page may be write-combining, a BF page), then the store pushed out
	 * (mmio_flush_writes) before anything that follows. Atomic: CQs of
	 * several queues share the page, armed from several threads.
	 */
	devx_mmio_wc_start();
	__atomic_store_n((volatile uint64_t *)(uar->base + offset), htobe64(value),
			 __ATOMIC_RELAXED);
	devx_mmio_flush_writes();
}

static int
rdma_query_eqn(struct devx_ctx *ctx, uint32_t vector, uint32_t *eqn)
{
	int rc = mlx5dv_devx_query_eqn(IBCTX(ctx), vector, eqn);

	return rc == 0 ? 0 : (rc > 0 ? -rc : (errno ? -errno : -EINVAL));
}

static int
rdma_evch_create(struct devx_ctx *ctx, struct devx_evch *ch)
{
	struct mlx5dv_devx_event_channel *e = mlx5dv_devx_create_event_channel(IBCTX(ctx), 0);
	int fl;

	if (e == NULL)
		return errno ? -errno : -ENOMEM;
	/*
	 * mlx5dv_devx_get_event is a read() on this fd, which blocks while no
	 * event is queued; the notification thread reads until EAGAIN.
	 */
	fl = fcntl(e->fd, F_GETFL);
	if (fl < 0 || fcntl(e->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int err = errno;

		mlx5dv_devx_destroy_event_channel(e);
		return -err;
	}
	ch->be_handle = e;
	ch->fd = e->fd;
	return 0;
}

static void
rdma_evch_destroy(struct devx_ctx *ctx, struct devx_evch *ch)
{
	mlx5dv_devx_destroy_event_channel(ch->be_handle);
}

static int
rdma_evch_subscribe(struct devx_ctx *ctx, struct devx_evch *ch, struct devx_obj *obj,
		    uint16_t type, uint64_t cookie)
{
	uint16_t ev = type;

	if (cookie >> (64 - COOKIE_TYPE_BITS))
		return -EINVAL;
	if (mlx5dv_devx_subscribe_devx_event(ch->be_handle, obj->be_handle, sizeof(ev), &ev,
					     cookie << COOKIE_TYPE_BITS | (type & 0xff)))
		return errno ? -errno : -EIO;
	return 0;
}

static int
rdma_evch_read(struct devx_ctx *ctx, struct devx_evch *ch, uint64_t *cookie, uint8_t *eqe)
{
	/*
	 * The kernel hands over the cookie and the whole EQE (Linux devx.c
	 * deliver_event, devx_async_event_read): 8 + 64 bytes, and EINVAL
	 * for a shorter buffer. EOVERFLOW once after an event it could not
	 * queue: passed up, the relay looks at every CQ.
	 */
	union {
		struct mlx5dv_devx_async_event_hdr hdr;
		uint8_t raw[sizeof(struct mlx5dv_devx_async_event_hdr) + PRM_SIZE(eqe)];
	} buf;
	ssize_t n = mlx5dv_devx_get_event(ch->be_handle, &buf.hdr, sizeof(buf));
	uint16_t type, subscribed;

	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if ((size_t)n != sizeof(buf)) {
		devx_log(3, "%s: event of cookie 0x%llx: %zd bytes, not cookie + EQE (%zu)",
			 ctx->name, (unsigned long long)buf.hdr.cookie, n, sizeof(buf));
		return -EPROTO;
	}
	*cookie = buf.hdr.cookie >> COOKIE_TYPE_BITS;
	memcpy(eqe, buf.hdr.out_data, PRM_SIZE(eqe));
	/* The type the subscription was for, kept in the cookie, must be the EQE's. */
	type = (uint16_t)PRM_GET(eqe, eqe, event_type);
	subscribed = buf.hdr.cookie & 0xff;
	if (type != subscribed)
		devx_log(4, "%s: event of cookie 0x%llx: EQE type 0x%x, subscribed for 0x%x",
			 ctx->name, (unsigned long long)buf.hdr.cookie, type, subscribed);
	return 1;
}

const struct devx_backend devx_backend_rdma = {
	.name = "rdma",
	.open = rdma_open,
	.close = rdma_close,
	.cmd = rdma_cmd,
	.obj_create = rdma_obj_create,
	.obj_cmd = rdma_obj_cmd,
	.obj_destroy = rdma_obj_destroy,
	.umem_reg = rdma_umem_reg,
	.umem_dereg = rdma_umem_dereg,
	.mr_reg = rdma_mr_reg,
	.mr_dereg = rdma_mr_dereg,
	.flow_create = rdma_flow_create,
	.flow_destroy = rdma_flow_destroy,
	.pd_alloc = rdma_pd_alloc,
	.pd_free = rdma_pd_free,
	.db_alloc = rdma_db_alloc,
	.db_free = rdma_db_free,
	.db_ring = rdma_db_ring,
	.uar_alloc = rdma_uar_alloc,
	.uar_free = rdma_uar_free,
	.uar_ring = rdma_uar_ring,
	.query_eqn = rdma_query_eqn,
	.evch_create = rdma_evch_create,
	.evch_destroy = rdma_evch_destroy,
	.evch_subscribe = rdma_evch_subscribe,
	.evch_read = rdma_evch_read,
};
