/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX back end "emu": hands the very mailboxes the hardware would get to
 * the emulated ConnectX. Destroy mailboxes are the ones the core derived
 * from the create (what the kernel builds for rdma-core).
 *
 * Built with the emulator into its own library (librte_vdpa_mlx5_lm_emu.so,
 * whose one export is mlx5_lm_emu_ops_v2), which the transport loads when
 * an emu= device is opened; linked into a program instead, it registers
 * itself (devx_emu_inproc.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "prm.h"
#include "emu.h"
#include "devx_priv.h"

#define EMU(ctx) ((struct emu_dev *)(ctx)->be_priv)

static int
emu_be_open(struct devx_ctx *ctx, const struct devx_open_params *p, char *err, size_t errlen)
{
	struct emu_dev *dev = emu_dev_create(ctx->name, p->emu_profile, err, errlen);

	if (dev == NULL)
		return -EINVAL;
	ctx->be_priv = dev;
	return 0;
}

static int
emu_be_close(struct devx_ctx *ctx)
{
	return emu_dev_destroy(EMU(ctx));
}

/*
 * Every mailbox first passes the kernel's DevX rules (emu_kernel.c), as it
 * would on its way through rdma-core and Linux devx.c to the firmware:
 * emu= refuses what ibdev= would refuse, with the kernel's EINVAL.
 */
static int
emu_be_cmd(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen)
{
	int rc = emu_kernel_check(EMU(ctx), EMU_KENTRY_GENERAL, in, inlen, NULL);

	return rc < 0 ? rc : emu_cmd(EMU(ctx), in, inlen, out, outlen);
}

static int
emu_be_obj_create(struct devx_ctx *ctx, struct devx_obj *obj, const void *in, size_t inlen,
		  void *out, size_t outlen)
{
	return emu_kernel_cmd(EMU(ctx), EMU_KENTRY_CREATE, in, inlen, NULL, out, outlen);
}

static void
kobj_of(const struct devx_obj *obj, struct emu_kobj *k)
{
	k->create_opcode = obj->create_opcode;
	k->obj_type = obj->obj_type;
	k->id = obj->id;
}

static int
emu_be_obj_cmd(struct devx_ctx *ctx, struct devx_obj *obj, bool query, const void *in,
	       size_t inlen, void *out, size_t outlen)
{
	struct emu_kobj k;

	kobj_of(obj, &k);
	return emu_kernel_cmd(EMU(ctx), query ? EMU_KENTRY_QUERY : EMU_KENTRY_MODIFY, in, inlen,
			      &k, out, outlen);
}

static int
emu_be_obj_destroy(struct devx_ctx *ctx, struct devx_obj *obj, const void *din, size_t dinlen,
		   void *dout, size_t doutlen)
{
	struct emu_kobj k;
	int rc;

	kobj_of(obj, &k);
	rc = emu_kernel_check(EMU(ctx), EMU_KENTRY_DESTROY, din, dinlen, &k);
	return rc < 0 ? rc : emu_cmd(EMU(ctx), din, dinlen, dout, doutlen);
}

static int
emu_be_umem_reg(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status,
		uint32_t *syndrome)
{
	/* The plain registration sends rdma-core 44's bitmap (devx_rdma.c). */
	int st = emu_umem_reg_ex(EMU(ctx), umem->addr, umem->size, umem->access,
				 umem->pgsz_bitmap ? umem->pgsz_bitmap : EMU_UMEM_PGSZ_DEFAULT,
				 &umem->id, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

static int
emu_be_umem_dereg(struct devx_ctx *ctx, struct devx_umem *umem, uint8_t *status,
		  uint32_t *syndrome)
{
	int st = emu_umem_dereg(EMU(ctx), umem->id, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

/* What the kernel does for ibv_reg_mr_iova / ibv_dereg_mr (mlx5_ib mr.c). */
static int
emu_be_mr_reg(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status, uint32_t *syndrome)
{
	int st = emu_kernel_reg_mr(EMU(ctx), mr->pd->pdn, mr->addr, mr->len, mr->iova,
				   mr->access, &mr->lkey, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

static int
emu_be_mr_dereg(struct devx_ctx *ctx, struct devx_mr *mr, uint8_t *status, uint32_t *syndrome)
{
	int st = emu_kernel_dereg_mr(EMU(ctx), mr->lkey, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

/* What the kernel does for ibv_alloc_pd and rdma-core for ibv_alloc_null_mr. */
static int
emu_be_pd_alloc(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status, uint32_t *syndrome)
{
	uint32_t synd2;
	int st;

	st = emu_kernel_alloc_pd(EMU(ctx), &pd->pdn, syndrome);
	if (st == 0) {
		st = emu_kernel_null_mkey(EMU(ctx), &pd->null_mkey, syndrome);
		if (st == 0)
			return 0;
		emu_kernel_dealloc_pd(EMU(ctx), pd->pdn, &synd2);
	}
	*status = (uint8_t)st;
	return -EIO;
}

static int
emu_be_pd_free(struct devx_ctx *ctx, struct devx_pd *pd, uint8_t *status, uint32_t *syndrome)
{
	int st = emu_kernel_dealloc_pd(EMU(ctx), pd->pdn, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

static int
emu_be_flow_create(struct devx_ctx *ctx, struct devx_flow *flow, const struct devx_flow_attr *a,
		   struct devx_obj *dest, uint8_t *status, uint32_t *syndrome)
{
	struct emu_root_rule_attr ra = {
		.priority = a->priority,
		.match_criteria_enable = a->match_criteria_enable,
		.match_mask = a->match_mask,
		.match_value = a->match_value,
		.match_len = a->match_len,
		.dest_type = dest->create_opcode == PRM_CMD_CREATE_TIR ? EMU_ROOT_DEST_TIR :
			     EMU_ROOT_DEST_FLOW_TABLE,
		.dest_id = dest->id,
	};
	int st = emu_root_rule_add(EMU(ctx), &ra, &flow->id, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

static int
emu_be_flow_destroy(struct devx_ctx *ctx, struct devx_flow *flow, uint8_t *status,
		    uint32_t *syndrome)
{
	int st = emu_root_rule_del(EMU(ctx), flow->id, syndrome);

	if (st != 0) {
		*status = (uint8_t)st;
		return -EIO;
	}
	return 0;
}

static int
emu_be_db_alloc(struct devx_ctx *ctx, struct devx_db *db)
{
	/* The emulated doorbell is a call, not an MMIO page. */
	db->mmap_fd = -1;
	return 0;
}

static void
emu_be_db_free(struct devx_ctx *ctx, struct devx_db *db)
{
}

static void
emu_be_db_ring(struct devx_ctx *ctx, struct devx_db *db, uint32_t offset, uint32_t v)
{
	/* A refused write is logged by the emulator, as the device ignores it. */
	emu_doorbell(EMU(ctx), offset, v);
}

static int
emu_be_uar_alloc(struct devx_ctx *ctx, struct devx_uar *uar)
{
	return emu_uar_alloc(EMU(ctx), &uar->page_id);
}

static int
emu_be_uar_free(struct devx_ctx *ctx, struct devx_uar *uar)
{
	return emu_uar_free(EMU(ctx), uar->page_id);
}

static void
emu_be_uar_ring(struct devx_ctx *ctx, struct devx_uar *uar, uint32_t offset, uint64_t value)
{
	/* The doorbell records it announces are written before: as the rdma store. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	emu_uar_write(EMU(ctx), uar->page_id, offset, value);
}

static int
emu_be_query_eqn(struct devx_ctx *ctx, uint32_t vector, uint32_t *eqn)
{
	return emu_eqn_query(EMU(ctx), vector, eqn);
}

static int
emu_be_evch_create(struct devx_ctx *ctx, struct devx_evch *ch)
{
	struct emu_evch *e = emu_evch_create(EMU(ctx));

	if (e == NULL)
		return -errno ? -errno : -ENOMEM;
	ch->be_handle = e;
	ch->fd = emu_evch_fd(e);
	return 0;
}

static void
emu_be_evch_destroy(struct devx_ctx *ctx, struct devx_evch *ch)
{
	emu_evch_destroy(ch->be_handle);
}

static int
emu_be_evch_subscribe(struct devx_ctx *ctx, struct devx_evch *ch, struct devx_obj *obj,
		      uint16_t type, uint64_t cookie)
{
	struct emu_kobj k;
	int rc;

	/* What the kernel lets a DevX subscription carry (Linux devx.c is_valid_events). */
	kobj_of(obj, &k);
	rc = emu_kernel_check_subscribe(EMU(ctx), &k, &type, 1);
	if (rc < 0)
		return rc;
	return emu_evch_subscribe(ch->be_handle, obj->create_opcode, obj->obj_type, obj->id,
				  type, cookie);
}

static int
emu_be_evch_read(struct devx_ctx *ctx, struct devx_evch *ch, uint64_t *cookie, uint8_t *eqe)
{
	struct emu_event e;
	int rc = emu_evch_read(ch->be_handle, &e);

	/* -EOVERFLOW as the kernel's event file says it (emu_evch_read). */
	if (rc <= 0)
		return rc;
	_Static_assert(sizeof(e.eqe) == PRM_SIZE(eqe), "the emulator writes whole EQEs");
	*cookie = e.cookie;
	memcpy(eqe, e.eqe, sizeof(e.eqe));
	return 1;
}

static int
emu_ops_set_uplink(struct devx_ctx *ctx, devx_wire_tx_fn fn, void *arg)
{
	return emu_dev_set_uplink(EMU(ctx), fn, arg);
}

static int
emu_ops_wire_rx(struct devx_ctx *ctx, const void *frame, size_t len)
{
	return emu_dev_wire_rx(EMU(ctx), frame, len);
}

static int
emu_ops_translate(struct devx_ctx *ctx, uint32_t mkey, uint64_t addr, size_t len, void **host)
{
	return emu_mkey_translate(EMU(ctx), mkey, addr, len, host);
}

static int
emu_ops_profile_check(const char *profile, char *err, size_t errlen)
{
	struct emu_profile *p;

	if (emu_profile_load(profile, &p, err, errlen) < 0)
		return -EINVAL;
	emu_profile_free(p);
	return 0;
}

static int
emu_ops_cost_stats(struct devx_ctx *ctx, struct devx_cost_stats *s)
{
	struct emu_cost_stats es;

	emu_dev_cost_stats(EMU(ctx), &es);
	s->cmds = es.cmds;
	s->model_us = es.model_us;
	s->actual_us = es.actual_us;
	s->overshoot_max_us = es.overshoot_max_us;
	s->pins = es.pins;
	s->pin_model_us = es.pin_model_us;
	s->pin_actual_us = es.pin_actual_us;
	return 0;
}

static int
emu_ops_profile_costs(const char *profile, unsigned int *cmd_slots,
		      unsigned int *host_pin_parallel, struct devx_cost_entry *e,
		      unsigned int n, char *err, size_t errlen)
{
	struct emu_profile *p;
	unsigned int i;
	int ret = 0;

	if (emu_profile_load(profile, &p, err, errlen) < 0)
		return -EINVAL;
	*cmd_slots = emu_profile_cmd_slots(p);
	*host_pin_parallel = emu_profile_host_pin_parallel(p);
	for (i = 0; i < n; i++) {
		if (emu_profile_entry(p, e[i].name, &e[i].base_us, &e[i].per_gib_us,
				      &e[i].per_entry_us) < 0) {
			snprintf(err, errlen, "profile %s: no entry \"%s\"", profile,
				 e[i].name);
			ret = -ENOENT;
			break;
		}
	}
	emu_profile_free(p);
	return ret;
}

static const struct devx_backend devx_backend_emu = {
	.name = "emu",
	.open = emu_be_open,
	.close = emu_be_close,
	.cmd = emu_be_cmd,
	.obj_create = emu_be_obj_create,
	.obj_cmd = emu_be_obj_cmd,
	.obj_destroy = emu_be_obj_destroy,
	.umem_reg = emu_be_umem_reg,
	.umem_dereg = emu_be_umem_dereg,
	.mr_reg = emu_be_mr_reg,
	.mr_dereg = emu_be_mr_dereg,
	.flow_create = emu_be_flow_create,
	.flow_destroy = emu_be_flow_destroy,
	.pd_alloc = emu_be_pd_alloc,
	.pd_free = emu_be_pd_free,
	.db_alloc = emu_be_db_alloc,
	.db_free = emu_be_db_free,
	.db_ring = emu_be_db_ring,
	.uar_alloc = emu_be_uar_alloc,
	.uar_free = emu_be_uar_free,
	.uar_ring = emu_be_uar_ring,
	.query_eqn = emu_be_query_eqn,
	.evch_create = emu_be_evch_create,
	.evch_destroy = emu_be_evch_destroy,
	.evch_subscribe = emu_be_evch_subscribe,
	.evch_read = emu_be_evch_read,
};

static const struct devx_emu_ops emu_ops = {
	.size = sizeof(struct devx_emu_ops),
	.backend = &devx_backend_emu,
	.set_log = emu_set_log,
	.leaked_total = emu_leaked_total,
	.live_total = emu_live_total,
	.profile_check = emu_ops_profile_check,
	.profile_costs = emu_ops_profile_costs,
	.cost_stats = emu_ops_cost_stats,
	.set_uplink = emu_ops_set_uplink,
	.wire_rx = emu_ops_wire_rx,
	.translate = emu_ops_translate,
};

const struct devx_emu_ops *
mlx5_lm_emu_ops_v2(void)
{
	return &emu_ops;
}
