/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classic objects around the virtio queues: PD, transport domain, TIS,
 * RQT (over virtio_net_q objects), TIR, NIC flow table / group / entry,
 * and the CQ/QP pair of a queue's event channel with the QP state
 * machine. The emulator keeps what validation and the reference rules
 * need; steering itself is the data path's business.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

/* ---- Helpers ---------------------------------------------------------------- */
static struct emu_net_obj *
net_new(struct emu_ctx *c, enum emu_kind kind)
{
	return (struct emu_net_obj *)emu_obj_new(c->dev, kind, sizeof(struct emu_net_obj));
}

static int
net_created(struct emu_ctx *c, struct emu_net_obj *o)
{
	emu_out_id(c, o->obj.id);
	return PRM_STATUS_OK;
}

/* Hold target for o or fail the create (caller frees o). */
static int
net_hold(struct emu_ctx *c, struct emu_net_obj *o, struct emu_obj *target)
{
	if (emu_obj_hold(&o->obj, target) < 0)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return 0;
}

static int
net_create_failed(struct emu_ctx *c, struct emu_net_obj *o, int status)
{
	emu_obj_free(c->dev, &o->obj);
	return status;
}

/* Destroy/dealloc of an object named at destroy_in.id. */
static int
net_destroy_id(struct emu_ctx *c, enum emu_kind kind, uint32_t id)
{
	struct emu_obj *o = emu_obj_find(c->dev, kind, id);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	return emu_obj_destroy(c->dev, o, &c->syndrome);
}

static int
net_destroy(struct emu_ctx *c, enum emu_kind kind)
{
	return net_destroy_id(c, kind, (uint32_t)PRM_GET(destroy_in, c->in, id));
}

/* ---- PD, transport domain ---------------------------------------------------- */
int
emu_net_alloc_pd(struct emu_ctx *c)
{
	struct emu_net_obj *o = net_new(c, EMU_KIND_PD);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return net_created(c, o);
}

int
emu_net_dealloc_pd(struct emu_ctx *c)
{
	return net_destroy(c, EMU_KIND_PD);
}

int
emu_net_alloc_td(struct emu_ctx *c)
{
	struct emu_net_obj *o = net_new(c, EMU_KIND_TD);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return net_created(c, o);
}

int
emu_net_dealloc_td(struct emu_ctx *c)
{
	return net_destroy(c, EMU_KIND_TD);
}

/* ---- TIS ------------------------------------------------------------------------ */
int
emu_net_create_tis(struct emu_ctx *c)
{
	const void *ctx = PRM_CADDR(create_tis_in, c->in, ctx);
	uint32_t tdn = (uint32_t)PRM_GET(tisc, ctx, transport_domain);
	struct emu_obj *td = NULL;
	struct emu_net_obj *o;
	int status;

	if (tdn != 0) {
		td = emu_obj_find(c->dev, EMU_KIND_TD, tdn);
		if (td == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	}
	o = net_new(c, EMU_KIND_TIS);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->td = tdn;
	status = net_hold(c, o, td);
	if (status != 0)
		return net_create_failed(c, o, status);
	return net_created(c, o);
}

int
emu_net_destroy_tis(struct emu_ctx *c)
{
	return net_destroy(c, EMU_KIND_TIS);
}

/* ---- RQT ------------------------------------------------------------------------ */
/*
 * Resolve an rqtc's list into held references of o. Only VIRTIO_NET_Q
 * lists exist here: the emulated device has no RQs, its RX queues are
 * the virtqs themselves.
 */
static int
rqt_fill(struct emu_ctx *c, struct emu_net_obj *o, const void *rqtc, size_t ctx_byte_off)
{
	uint32_t n = (uint32_t)PRM_GET(rqtc, rqtc, rqt_actual_size);
	uint32_t max = (uint32_t)PRM_GET(rqtc, rqtc, rqt_max_size);
	const uint8_t *list = PRM_CADDR(rqtc, rqtc, rq_num);
	uint32_t i;

	if (c->inlen < ctx_byte_off + PRM_SIZE(rqtc) + (size_t)n * PRM_SIZE(rq_num))
		return emu_fail(c, PRM_STATUS_BAD_INPUT_LEN, EMU_SYND_BAD_INPUT_LEN);
	if (PRM_GET(rqtc, rqtc, list_q_type) != PRM_RQTC_LIST_Q_TYPE_VIRTIO_NET_Q ||
	    n == 0 || (max != 0 && n > max))
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	/*
	 * The device picks an RQT entry as hash & (size - 1): both sizes are
	 * powers of two (Linux mlx5_vdpa and mlx5e round them up with
	 * roundup_pow_of_two and repeat entries; DPDK rte_align32pow2).
	 */
	if ((n & (n - 1)) != 0 || (max & (max - 1)) != 0) {
		emu_log(c->dev, 4, "RQT refused: rqt_actual_size %u / rqt_max_size %u not a power "
			"of two (the RQT is indexed by hash & (size - 1))", n, max);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_RQT_SIZE_NOT_POW2);
	}
	for (i = 0; i < n; i++) {
		uint32_t id = (uint32_t)PRM_GET(rq_num, list + i * PRM_SIZE(rq_num), rq_num);
		struct emu_obj *vq = emu_obj_find(c->dev, EMU_KIND_VIRTQ, id);
		int status;

		if (vq == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		status = net_hold(c, o, vq);
		if (status != 0)
			return status;
	}
	o->size = n;
	return 0;
}

int
emu_net_create_rqt(struct emu_ctx *c)
{
	const void *rqtc = PRM_CADDR(create_rqt_in, c->in, rqt_context);
	struct emu_net_obj *o = net_new(c, EMU_KIND_RQT);
	int status;

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	status = rqt_fill(c, o, rqtc, PRM_OFF(create_rqt_in, rqt_context) / 8);
	if (status != 0)
		return net_create_failed(c, o, status);
	return net_created(c, o);
}

int
emu_net_modify_rqt(struct emu_ctx *c)
{
	uint32_t rqtn = (uint32_t)PRM_GET(modify_rqt_in, c->in, rqtn);
	uint64_t mask = PRM_GET(modify_rqt_in, c->in, bitmask);
	const void *rqtc = PRM_CADDR(modify_rqt_in, c->in, ctx);
	struct emu_net_obj *o, tmp;
	int status;

	o = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_RQT, rqtn);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	if (mask & ~(uint64_t)PRM_RQT_MODIFY_RQN_LIST)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_MODIFY_FIELD);
	if (mask == 0)
		return PRM_STATUS_OK;
	/* Build the new list aside; the old one stays if anything is wrong. */
	memset(&tmp, 0, sizeof(tmp));
	status = rqt_fill(c, &tmp, rqtc, PRM_OFF(modify_rqt_in, ctx) / 8);
	if (status != 0) {
		emu_obj_release_all(&tmp.obj);
		return status;
	}
	emu_obj_release_all(&o->obj);
	o->obj.held = tmp.obj.held;
	o->obj.nheld = tmp.obj.nheld;
	o->obj.held_cap = tmp.obj.held_cap;
	o->size = tmp.size;
	return PRM_STATUS_OK;
}

int
emu_net_destroy_rqt(struct emu_ctx *c)
{
	return net_destroy(c, EMU_KIND_RQT);
}

/* ---- TIR ------------------------------------------------------------------------ */
int
emu_net_create_tir(struct emu_ctx *c)
{
	const void *ctx = PRM_CADDR(create_tir_in, c->in, ctx);
	uint32_t disp = (uint32_t)PRM_GET(tirc, ctx, disp_type);
	uint32_t tdn = (uint32_t)PRM_GET(tirc, ctx, transport_domain);
	uint32_t rqtn = (uint32_t)PRM_GET(tirc, ctx, indirect_table);
	struct emu_obj *td, *rqt = NULL;
	struct emu_net_obj *o;
	int status;

	if (disp != PRM_TIRC_DISP_TYPE_DIRECT && disp != PRM_TIRC_DISP_TYPE_INDIRECT)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	td = emu_obj_find(c->dev, EMU_KIND_TD, tdn);
	if (td == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	/* A direct TIR names an RQ (none exist here); an indirect one an RQT. */
	if (disp == PRM_TIRC_DISP_TYPE_INDIRECT) {
		rqt = emu_obj_find(c->dev, EMU_KIND_RQT, rqtn);
		if (rqt == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	}
	o = net_new(c, EMU_KIND_TIR);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->td = tdn;
	o->rqtn = rqt != NULL ? rqtn : 0;
	/* What the data path's RSS needs (emu_wire.c). */
	o->disp_type = disp;
	o->hash_fn = (uint8_t)PRM_GET(tirc, ctx, rx_hash_fn);
	memcpy(o->hash_sel, PRM_CADDR(tirc, ctx, rx_hash_field_selector_outer),
	       sizeof(o->hash_sel));
	memcpy(o->hash_key, PRM_CADDR(tirc, ctx, rx_hash_toeplitz_key), sizeof(o->hash_key));
	status = net_hold(c, o, td);
	if (status == 0)
		status = net_hold(c, o, rqt);
	if (status != 0)
		return net_create_failed(c, o, status);
	return net_created(c, o);
}

int
emu_net_destroy_tir(struct emu_ctx *c)
{
	return net_destroy(c, EMU_KIND_TIR);
}

/* ---- Flow steering ---------------------------------------------------------------- */
int
emu_net_create_ft(struct emu_ctx *c)
{
	const void *ctx = PRM_CADDR(create_flow_table_in, c->in, flow_table_context);
	struct emu_net_obj *o = net_new(c, EMU_KIND_FT);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->table_type = (uint32_t)PRM_GET(create_flow_table_in, c->in, table_type);
	o->size = (uint32_t)PRM_GET(flow_table_context, ctx, log_size);
	o->level = (uint32_t)PRM_GET(flow_table_context, ctx, level);
	return net_created(c, o);
}

int
emu_net_destroy_ft(struct emu_ctx *c)
{
	/* RES_BUSY while groups or entries live in it. */
	return net_destroy_id(c, EMU_KIND_FT,
			      (uint32_t)PRM_GET(destroy_flow_table_in, c->in, table_id));
}

int
emu_net_create_fg(struct emu_ctx *c)
{
	uint32_t tid = (uint32_t)PRM_GET(create_flow_group_in, c->in, table_id);
	uint32_t start = (uint32_t)PRM_GET(create_flow_group_in, c->in, start_flow_index);
	uint32_t end = (uint32_t)PRM_GET(create_flow_group_in, c->in, end_flow_index);
	struct emu_net_obj *ft, *o;
	int status;

	ft = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_FT, tid);
	if (ft == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	if (end < start || (ft->size < 32 && end >= (1u << ft->size)))
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	o = net_new(c, EMU_KIND_FG);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->table_id = tid;
	o->flow_index = start;
	o->flow_end = end;
	/* Outer-header criteria, for the data path's steering (emu_wire.c). */
	o->match_enable = (uint8_t)PRM_GET(create_flow_group_in, c->in, match_criteria_enable);
	memcpy(o->match, PRM_CADDR(fte_match_param,
				   PRM_CADDR(create_flow_group_in, c->in, match_criteria),
				   outer_headers), sizeof(o->match));
	status = net_hold(c, o, &ft->obj);
	if (status != 0)
		return net_create_failed(c, o, status);
	return net_created(c, o);
}

int
emu_net_destroy_fg(struct emu_ctx *c)
{
	uint32_t tid = (uint32_t)PRM_GET(destroy_flow_group_in, c->in, table_id);
	uint32_t gid = (uint32_t)PRM_GET(destroy_flow_group_in, c->in, group_id);
	struct emu_net_obj *o = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_FG, gid);

	if (o == NULL || o->table_id != tid)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	return emu_obj_destroy(c->dev, &o->obj, &c->syndrome);
}

static struct emu_net_obj *
fte_find(struct emu_dev *dev, uint32_t tid, uint32_t index)
{
	struct emu_obj *o;

	for (o = dev->all.next; o != &dev->all; o = o->next) {
		struct emu_net_obj *f = (struct emu_net_obj *)o;

		if (o->kind == EMU_KIND_FTE && f->table_id == tid && f->flow_index == index)
			return f;
	}
	return NULL;
}

/* Resolve an FTE's group and destinations into held references of o. */
static int
fte_fill(struct emu_ctx *c, struct emu_net_obj *o, struct emu_net_obj *ft)
{
	const void *fc = PRM_CADDR(set_fte_in, c->in, flow_context);
	const uint8_t *dst = PRM_CADDR(flow_context, fc, destination);
	uint32_t n = (uint32_t)PRM_GET(flow_context, fc, destination_list_size);
	uint32_t gid = (uint32_t)PRM_GET(flow_context, fc, group_id);
	struct emu_net_obj *fg;
	uint32_t i;
	int status;

	if (c->inlen < PRM_SIZE(set_fte_in) + (size_t)n * PRM_SIZE(dest_format_struct))
		return emu_fail(c, PRM_STATUS_BAD_INPUT_LEN, EMU_SYND_BAD_INPUT_LEN);
	fg = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_FG, gid);
	if (fg == NULL || fg->table_id != ft->obj.id)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	if (o->flow_index < fg->flow_index || o->flow_index > fg->flow_end)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	o->group_id = gid;
	o->action = (uint32_t)PRM_GET(flow_context, fc, action);
	memcpy(o->match, PRM_CADDR(fte_match_param, PRM_CADDR(flow_context, fc, match_value),
				   outer_headers), sizeof(o->match));
	status = net_hold(c, o, &ft->obj);
	if (status == 0)
		status = net_hold(c, o, &fg->obj);
	for (i = 0; status == 0 && i < n; i++) {
		const uint8_t *d = dst + i * PRM_SIZE(dest_format_struct);
		uint32_t type = (uint32_t)PRM_GET(dest_format_struct, d, destination_type);
		uint32_t id = (uint32_t)PRM_GET(dest_format_struct, d, destination_id);
		struct emu_obj *t = NULL;

		if (type == PRM_FLOW_DESTINATION_TYPE_TIR)
			t = emu_obj_find(c->dev, EMU_KIND_TIR, id);
		else if (type == PRM_FLOW_DESTINATION_TYPE_FLOW_TABLE)
			t = emu_obj_find(c->dev, EMU_KIND_FT, id);
		else if (type == PRM_FLOW_DESTINATION_TYPE_VPORT)
			continue;
		else
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		if (t == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		status = net_hold(c, o, t);
	}
	return status;
}

int
emu_net_set_fte(struct emu_ctx *c)
{
	uint32_t tid = (uint32_t)PRM_GET(set_fte_in, c->in, table_id);
	uint32_t index = (uint32_t)PRM_GET(set_fte_in, c->in, flow_index);
	uint32_t op_mod = (uint32_t)PRM_GET(set_fte_in, c->in, op_mod);
	struct emu_net_obj *ft, *old, *o;
	int status;

	ft = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_FT, tid);
	if (ft == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	/* op_mod 0 sets a new entry, 1 modifies an existing one. */
	old = fte_find(c->dev, tid, index);
	if ((op_mod == 0 && old != NULL) || (op_mod == 1 && old == NULL) || op_mod > 1)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	o = net_new(c, EMU_KIND_FTE);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->table_id = tid;
	o->flow_index = index;
	status = fte_fill(c, o, ft);
	if (status != 0)
		return net_create_failed(c, o, status);
	if (old != NULL)
		emu_obj_free(c->dev, &old->obj);
	return PRM_STATUS_OK;
}

int
emu_net_delete_fte(struct emu_ctx *c)
{
	uint32_t tid = (uint32_t)PRM_GET(delete_fte_in, c->in, table_id);
	uint32_t index = (uint32_t)PRM_GET(delete_fte_in, c->in, flow_index);
	struct emu_net_obj *o = fte_find(c->dev, tid, index);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	return emu_obj_destroy(c->dev, &o->obj, &c->syndrome);
}

/* ---- CQ, QP ---------------------------------------------------------------------- */
/*
 * A umem named by a create command must exist and hold `need` bytes at
 * off; *host (when asked) gets the device's address of that byte.
 */
static int
hold_umem(struct emu_ctx *c, struct emu_net_obj *o, uint32_t id, uint64_t off, uint64_t need,
	  int page_offset, const char *what, uint8_t **host)
{
	struct emu_umem *u = (struct emu_umem *)emu_obj_find(c->dev, EMU_KIND_UMEM, id);

	if (u == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	if (off > u->size || need > u->size - off)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_TOO_SMALL);
	/* Where the kernel's description of the umem can place it (emu_umem_offset_ok). */
	if (!emu_umem_offset_ok(c->dev, u, off, page_offset, what))
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_BAD_OFFSET);
	if (host != NULL)
		*host = u->addr + off;
	return net_hold(c, o, &u->obj);
}

/* A 32-bit big-endian doorbell-record field the driver writes at any time. */
static uint32_t
dbrec_load(const uint8_t *rec, uint32_t dword)
{
	uint32_t v = __atomic_load_n((const uint32_t *)rec + dword, __ATOMIC_ACQUIRE);

	return be32toh(v);
}

/*
 * CREATE_CQ. The CQ must name one of the function's completion EQs
 * (cqc.c_eqn: Linux's devx.c looks it up among the completion EQs and
 * fails with ENOENT otherwise; no completion EQ is number 0) and a UAR
 * page of this device (cqc.uar_page: the page whose CQ doorbell arms
 * it). DevX users give the CQE ring and the doorbell record in umems
 * (cq_umem_valid, dbr_umem_valid); the emulator models no PAS list.
 */
int
emu_net_create_cq(struct emu_ctx *c)
{
	const void *cqc = PRM_CADDR(create_cq_in, c->in, cq_context);
	uint32_t log_size = (uint32_t)PRM_GET(cqc, cqc, log_cq_size);
	uint64_t cqe = PRM_GET(cqc, cqc, cqe_sz) == PRM_CQC_CQE_SZ_128 ? 128 : 64;
	/* The kernel reads all 32 bits (mlx5_core_create_cq: c_eqn_or_apu_element). */
	uint32_t eqn = (uint32_t)PRM_GET(cqc, cqc, c_eqn_or_apu_element);
	uint32_t uar_id = (uint32_t)PRM_GET(cqc, cqc, uar_page);
	struct emu_obj *uar;
	struct emu_net_obj *o;
	int status = 0;

	if (log_size > 24)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	if (!emu_eqn_is_completion(c->dev, eqn)) {
		emu_log(c->dev, 4, "CREATE_CQ: c_eqn %u is not a completion EQ of the function "
			"(cqc.c_eqn_or_apu_element, 32 bits; Linux mlx5_core_create_cq: ENOENT)",
			eqn);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_BAD_EQN);
	}
	uar = emu_obj_find(c->dev, EMU_KIND_UAR, uar_id);
	if (uar == NULL) {
		emu_log(c->dev, 4, "CREATE_CQ: uar_page %u is not a UAR page of this device "
			"(cqc.uar_page)", uar_id);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_BAD_UAR);
	}
	/* Overrun ignore is a capability (cmd_hca_cap.cq_oi). */
	if (PRM_GET(cqc, cqc, oi) && !c->dev->prof->caps.cq_oi) {
		emu_log(c->dev, 4, "CREATE_CQ: cqc.oi without the cq_oi capability");
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CAP_NOT_SUPPORTED);
	}
	if (!PRM_GET(create_cq_in, c->in, cq_umem_valid) || !PRM_GET(cqc, cqc, dbr_umem_valid)) {
		emu_log(c->dev, 4, "CREATE_CQ: CQE ring and doorbell record must be in umems "
			"(cq_umem_valid, cqc.dbr_umem_valid)");
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_NO_UMEM);
	}
	o = net_new(c, EMU_KIND_CQ);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->size = log_size;
	o->uar_page = uar_id;
	o->eqn = eqn;
	o->cqe_size = (uint32_t)cqe;
	o->cc = PRM_GET(cqc, cqc, cc) != 0;
	o->oi = PRM_GET(cqc, cqc, oi) != 0;
	status = net_hold(c, o, uar);
	if (status == 0)
		status = hold_umem(c, o, (uint32_t)PRM_GET(create_cq_in, c->in, cq_umem_id),
				   PRM_GET(create_cq_in, c->in, cq_umem_offset),
				   cqe << log_size, (int)PRM_GET(cqc, cqc, page_offset), "CQ ring",
				   &o->cqes);
	if (status == 0)
		status = hold_umem(c, o, (uint32_t)PRM_GET(cqc, cqc, dbr_umem_id),
				   PRM_GET(cqc, cqc, dbr_addr), PRM_SIZE(cq_dbrec),
				   EMU_UMEM_ANY_IN_PAGE, "CQ doorbell record", &o->dbrec);
	if (status != 0)
		return net_create_failed(c, o, status);
	/* What the record holds now is no arm request (merged doorbells). */
	o->arm_dbrec_seen = dbrec_load(o->dbrec, 1);
	return net_created(c, o);
}

/* Post a completion event of cq if it is armed; one event disarms it. */
static void
cq_event(struct emu_dev *dev, struct emu_net_obj *cq)
{
	if (!cq->arm_valid)
		return;
	cq->arm_valid = false;
	emu_event_post(dev, EMU_KIND_CQ, cq->obj.id, PRM_EVENT_COMPLETION, NULL);
}

/*
 * Write one CQE (PRM: 64-byte CQE, opcode/owner byte last) for a
 * completion of QP qpn's WQE wqe_counter. A CQ without cqc.oi whose
 * consumer index (doorbell record) lags a whole ring behind overruns:
 * it goes to error, nothing more is written, and a CQ error event
 * (PRM event type 0x04) is posted. Returns 0, or -1 on overrun.
 */
static int
cq_complete(struct emu_dev *dev, struct emu_net_obj *cq, uint32_t qpn, uint16_t wqe_counter,
	    uint8_t opcode)
{
	uint8_t next[PRM_SIZE(cqe64)];
	uint32_t n = 1u << cq->size, idx, last;
	uint8_t *cqe;

	if (cq->cq_error)
		return -1;
	if (!cq->oi) {
		uint32_t ci = dbrec_load(cq->dbrec, 0) & 0xffffff;

		if (((cq->pc - ci) & 0xffffff) >= n) {
			cq->cq_error = true;
			emu_log(dev, 4, "CQ 0x%x overrun: %u CQEs produced, consumer index %u, %u "
				"entries and no cqc.oi (PRM: CQ error event 0x04)", cq->obj.id,
				cq->pc, ci, n);
			emu_event_post(dev, EMU_KIND_CQ, cq->obj.id, PRM_EVENT_CQ_ERROR, NULL);
			return -1;
		}
	}
	idx = cq->cc ? 0 : (cq->pc & (n - 1));
	cqe = cq->cqes + (size_t)idx * cq->cqe_size + (cq->cqe_size - PRM_SIZE(cqe64));
	/*
	 * Composed aside, then written as the device writes a CQE: never a
	 * state of the entry that is neither the old nor the new one. The
	 * last dword {wqe_counter, signature, op_own} goes in one store, after
	 * the rest (release): a collapsed CQ (cqc.cc) is rewritten in place
	 * while the driver may be reading it, and zeroing the entry first
	 * could show it the previous opcode beside a wqe_counter of 0, a state
	 * no ConnectX writes (DPDK vdpa/mlx5 and the PMD read that dword as
	 * one word; test_events' torn read is what the PMD made of it).
	 */
	memset(next, 0, sizeof(next));
	PRM_SET(cqe64, next, byte_cnt, 0);
	PRM_SET(cqe64, next, qpn, qpn);
	PRM_SET(cqe64, next, wqe_counter, wqe_counter);
	PRM_SET(cqe64, next, opcode, opcode);
	PRM_SET(cqe64, next, owner, (cq->pc >> cq->size) & 1);
	memcpy(&last, next + sizeof(next) - sizeof(last), sizeof(last));
	memcpy(cqe, next, sizeof(next) - sizeof(last));
	__atomic_store_n((uint32_t *)(cqe + sizeof(next) - sizeof(last)), last, __ATOMIC_RELEASE);
	cq->pc++;
	cq_event(dev, cq);
	return 0;
}

/*
 * One message from qp to its peer's receive queue. The peer's receive
 * credits are its doorbell record's receive counter minus the WQEs the
 * device consumed; with none, the message waits (RNR NAK) and is retried
 * at the next notification or at the next arm of the peer's CQ, at most
 * qpc.rnr_retry times (7 = forever, as in IB); past that the sender goes
 * to ERR and a WQ catastrophic error event (type 0x05) reports it.
 */
static void
qp_deliver(struct emu_dev *dev, struct emu_net_obj *qp, struct emu_net_obj *peer,
	   struct emu_net_obj *cq)
{
	uint32_t wqes = 1u << peer->log_rq_size;
	uint32_t credits = (dbrec_load(peer->dbrec, 0) - peer->rq_consumed) & 0xffff;

	if (credits == 0 || credits > wqes) {
		/* More than a ring of credits is a corrupt counter: no credit either. */
		if (!qp->rnr_pending) {
			qp->rnr_pending = true;
			qp->rnr_left = qp->rnr_retry;
		} else if (qp->rnr_retry != 7 && qp->rnr_left-- == 0) {
			qp->rnr_pending = false;
			qp->state = PRM_QPC_STATE_ERR;
			emu_log(dev, 4, "QP 0x%x: RNR retries (qpc.rnr_retry %u) exhausted, "
				"QP 0x%x has no receive credit (receive counter %u, "
				"consumed %u): QP to ERR", qp->obj.id, qp->rnr_retry,
				peer->obj.id, dbrec_load(peer->dbrec, 0), peer->rq_consumed);
			emu_event_post(dev, EMU_KIND_QP, qp->obj.id, PRM_EVENT_WQ_CATAS_ERROR,
				       NULL);
			return;
		}
		cq->wait_qpn = qp->obj.id;
		return;
	}
	qp->rnr_pending = false;
	if (cq->wait_qpn == qp->obj.id)
		cq->wait_qpn = 0;
	if (cq_complete(dev, cq, peer->obj.id, (uint16_t)peer->rq_consumed,
			PRM_CQE_RESP_SEND) == 0)
		peer->rq_consumed++;
}

void
emu_net_qp_notify(struct emu_dev *dev, struct emu_net_obj *qp)
{
	struct emu_net_obj *peer, *cq;

	/* An RC sender sends in RTS only; its peer receives from RTR on. */
	if (qp->state != PRM_QPC_STATE_RTS)
		return;
	peer = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_QP, qp->remote_qpn);
	if (peer == NULL || peer->cqn_rcv == 0 || peer->dbrec == NULL ||
	    peer->rq_type != PRM_QPC_RQ_TYPE_REGULAR ||
	    (peer->state != PRM_QPC_STATE_RTR && peer->state != PRM_QPC_STATE_RTS))
		return;
	cq = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_CQ, peer->cqn_rcv);
	if (cq == NULL)
		return;
	qp_deliver(dev, qp, peer, cq);
}

void
emu_net_cq_doorbell(struct emu_dev *dev, uint32_t uar, uint32_t cqn, uint8_t sn, uint8_t cmd,
		    uint32_t ci)
{
	struct emu_net_obj *cq = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_CQ, cqn);

	if (cq == NULL || cq->uar_page != uar) {
		/* The CQ doorbell of another page does not reach this CQ. */
		emu_log(dev, 4, "CQ doorbell for CQ 0x%x on UAR page %u: %s", cqn, uar,
			cq == NULL ? "no such CQ" : "not the CQ's UAR page");
		return;
	}
	if (cq->dbrec != NULL)
		cq->arm_dbrec_seen = dbrec_load(cq->dbrec, 1);
	cq->arm_rung = true;
	cq->arm_valid = true;
	cq->arm_cmd = cmd;
	/*
	 * Recorded, not checked: no public source says what the device does
	 * with an arm's sequence number, stale or repeated (mlx5_ifc.h has no
	 * CQ doorbell layout; Linux mlx5_cq_arm, rdma-core mlx5_arm_cq and
	 * DPDK's mlx5_vdpa_cq_arm only write it). The mlx5 drivers keep it as
	 * the count of completion events mod 4; the emulator invents no rule
	 * on it (doc/emulator.md, "CQ arm sequence number").
	 */
	cq->arm_sn = sn;
	cq->arm_ci = ci;
	/* A message that waited for credits is retried now (the driver replenished). */
	if (cq->wait_qpn != 0) {
		struct emu_net_obj *qp =
			(struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_QP, cq->wait_qpn);

		cq->wait_qpn = 0;
		if (qp != NULL && qp->rnr_pending)
			emu_net_qp_notify(dev, qp);
	}
	/* Armed behind the producer: CQEs past ci exist, the event is due now. */
	if (cq->arm_valid && !cq->cq_error && ((cq->pc - ci) & 0xffffff) != 0)
		cq_event(dev, cq);
}

void
emu_net_cq_doorbell_others(struct emu_dev *dev, uint32_t uar)
{
	struct emu_obj *o;

	for (o = dev->all.next; o != &dev->all; o = o->next) {
		struct emu_net_obj *cq = (struct emu_net_obj *)o;
		uint32_t arm;

		if (o->kind != EMU_KIND_CQ || cq->uar_page != uar || cq->dbrec == NULL)
			continue;
		arm = dbrec_load(cq->dbrec, 1);
		/*
		 * The first arm (sn 0, ci 0) writes a record that may look
		 * unchanged: a CQ no doorbell reached yet is taken as asking.
		 * An early arm costs at most one event more, which the mlx5
		 * event handlers (poll the CQ, re-arm) absorb.
		 */
		if (arm == cq->arm_dbrec_seen && cq->arm_rung)
			continue;
		/* The arm dword: sn << 28 | cmd << 24 | ci, as on the UAR. */
		emu_net_cq_doorbell(dev, uar, o->id, (arm >> 28) & 0x3, (arm >> 24) & 0x3,
				    arm & 0xffffff);
	}
}

int
emu_net_destroy_cq(struct emu_ctx *c)
{
	/* RES_BUSY while a QP completes into it. */
	return net_destroy(c, EMU_KIND_CQ);
}

/*
 * May a QP carry timestamp format fmt, the device's cap being cap
 * (prm_ts_format_cap)? Free-running only with free-running timestamps,
 * real time only with real-time ones, the device's default with either
 * but not on a free-running-only device, where Linux and DPDK both ask for
 * free-running (mlx5_get_qp_default_ts, mlx5_ts_format_conv): the
 * stricter reading.
 */
static bool
ts_format_allowed(uint8_t cap, uint8_t fmt)
{
	switch (fmt) {
	case PRM_TS_FORMAT_FREE_RUNNING:
		return cap != PRM_TS_FORMAT_CAP_REAL_TIME;
	case PRM_TS_FORMAT_DEFAULT:
	case PRM_TS_FORMAT_REAL_TIME:
		return cap != PRM_TS_FORMAT_CAP_FREE_RUNNING;
	default:
		return false;
	}
}

int
emu_net_create_qp(struct emu_ctx *c)
{
	const void *qpc = PRM_CADDR(create_qp_in, c->in, qpc);
	uint32_t pdn = (uint32_t)PRM_GET(qpc, qpc, pd);
	uint32_t cqs[2] = {
		(uint32_t)PRM_GET(qpc, qpc, cqn_snd), (uint32_t)PRM_GET(qpc, qpc, cqn_rcv),
	};
	struct emu_obj *pd, *cq[2] = { NULL, NULL };
	struct emu_net_obj *o;
	int status, i;
	bool has_wq;

	pd = emu_obj_find(c->dev, EMU_KIND_PD, pdn);
	if (pd == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	for (i = 0; i < 2; i++) {
		if (cqs[i] == 0)
			continue;
		cq[i] = emu_obj_find(c->dev, EMU_KIND_CQ, cqs[i]);
		if (cq[i] == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	}
	has_wq = PRM_GET(qpc, qpc, rq_type) != PRM_QPC_RQ_TYPE_ZERO_SIZE ||
		 !PRM_GET(qpc, qpc, no_sq);
	if (has_wq) {
		const struct emu_caps *caps = &c->dev->prof->caps;
		uint8_t cap = caps->roce ? caps->qp_ts_format : caps->sq_ts_format;
		uint8_t fmt = (uint8_t)PRM_GET(qpc, qpc, ts_format);
		uint32_t uar = (uint32_t)PRM_GET(qpc, qpc, uar_page);

		/*
		 * A QP with a work queue names its UAR page, as Linux mlx5_vnet
		 * and DPDK vdpa/mlx5 name theirs for the driver-side event QP
		 * (the firmware-side one, with neither queue, needs none).
		 */
		if (emu_obj_find(c->dev, EMU_KIND_UAR, uar) == NULL) {
			emu_log(c->dev, 4, "CREATE_QP: uar_page %u is not a UAR page of this "
				"device (qpc.uar_page)", uar);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_UAR);
		}
		if (!ts_format_allowed(cap, fmt)) {
			emu_log(c->dev, 4, "CREATE_QP: qpc.ts_format %u refused: the device's %s "
				"is %u (Linux mlx5_get_qp_default_ts)", fmt,
				caps->roce ? "roce_cap.qp_ts_format" : "sq_ts_format", cap);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_TS_FORMAT);
		}
	}
	o = net_new(c, EMU_KIND_QP);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->state = PRM_QPC_STATE_RST;
	o->cqn_snd = cqs[0];
	o->cqn_rcv = cqs[1];
	o->rq_type = (uint32_t)PRM_GET(qpc, qpc, rq_type);
	o->log_rq_size = (uint32_t)PRM_GET(qpc, qpc, log_rq_size);
	status = net_hold(c, o, pd);
	for (i = 0; status == 0 && i < 2; i++)
		status = net_hold(c, o, cq[i]);
	/*
	 * The kernel sets wq_umem_valid and qpc.dbr_umem_valid on every DevX
	 * CREATE_QP (Linux devx.c devx_set_umem_valid): they say nothing of a
	 * QP without a work queue (zero-size RQ and no SQ, the event path's
	 * firmware QP, as DPDK vdpa/mlx5 creates it with no umem), which has
	 * no buffer and no doorbell record to find. With a queue, they name
	 * its umems.
	 */
	if (status == 0 && has_wq && PRM_GET(create_qp_in, c->in, wq_umem_valid))
		status = hold_umem(c, o, (uint32_t)PRM_GET(create_qp_in, c->in, wq_umem_id),
				   PRM_GET(create_qp_in, c->in, wq_umem_offset), 1,
				   (int)PRM_GET(qpc, qpc, page_offset), "QP ring", NULL);
	if (status == 0 && has_wq && PRM_GET(qpc, qpc, dbr_umem_valid))
		status = hold_umem(c, o, (uint32_t)PRM_GET(qpc, qpc, dbr_umem_id),
				   PRM_GET(qpc, qpc, dbr_addr), PRM_SIZE(qp_dbrec),
				   EMU_UMEM_ANY_IN_PAGE, "QP doorbell record", &o->dbrec);
	if (status != 0)
		return net_create_failed(c, o, status);
	return net_created(c, o);
}

/*
 * QP state machine (PRM): RST -> INIT -> RTR -> RTS through the three
 * forward commands, any state -> RST through 2RST.
 */
int
emu_net_qp_transition(struct emu_ctx *c)
{
	/* All four transition inputs name the QP at 0x48. */
	uint32_t qpn = (uint32_t)PRM_GET(qp_2rst_in, c->in, qpn);
	struct emu_net_obj *qp = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_QP, qpn);
	uint32_t from, to;

	if (qp == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	switch (c->opcode) {
	case PRM_CMD_RST2INIT_QP:
		from = PRM_QPC_STATE_RST;
		to = PRM_QPC_STATE_INIT;
		break;
	case PRM_CMD_INIT2RTR_QP:
		from = PRM_QPC_STATE_INIT;
		to = PRM_QPC_STATE_RTR;
		break;
	case PRM_CMD_RTR2RTS_QP:
		from = PRM_QPC_STATE_RTR;
		to = PRM_QPC_STATE_RTS;
		break;
	default:
		/* 2RST: the receive queue and any message in flight are gone. */
		qp->state = PRM_QPC_STATE_RST;
		qp->rq_consumed = 0;
		qp->rnr_pending = false;
		return PRM_STATUS_OK;
	}
	if (qp->state != from)
		return emu_fail(c, PRM_STATUS_BAD_RES_STATE, EMU_SYND_QP_BAD_TRANSITION);
	if (c->opcode == PRM_CMD_INIT2RTR_QP) {
		const void *qpc = PRM_CADDR(init2rtr_qp_in, c->in, qpc);
		const void *ads = PRM_CADDR(qpc, qpc, primary_address_path);
		uint32_t remote = (uint32_t)PRM_GET(qpc, qpc, remote_qpn);

		/*
		 * Two QPs of one function talk through the port only in force
		 * loopback (ads.fl), which Linux's mlx5_vnet and DPDK's vdpa/mlx5
		 * set at INIT2RTR for the event QP pair; the peer must exist.
		 */
		if (!PRM_GET(ads, ads, fl)) {
			emu_log(c->dev, 4, "INIT2RTR_QP 0x%x: primary_address_path.fl is 0; a QP "
				"pair on one function needs force loopback", qpn);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_NO_LOOPBACK);
		}
		if (remote == 0 || emu_obj_find(c->dev, EMU_KIND_QP, remote) == NULL) {
			emu_log(c->dev, 4, "INIT2RTR_QP 0x%x: remote_qpn 0x%x names no QP", qpn,
				remote);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_REMOTE);
		}
		qp->remote_qpn = remote;
		qp->fl = true;
	} else if (c->opcode == PRM_CMD_RTR2RTS_QP) {
		const void *qpc = PRM_CADDR(rtr2rts_qp_in, c->in, qpc);
		const void *ads = PRM_CADDR(qpc, qpc, primary_address_path);
		uint8_t retry = (uint8_t)PRM_GET(qpc, qpc, retry_count);
		uint8_t rnr = (uint8_t)PRM_GET(qpc, qpc, rnr_retry);
		uint8_t ack = (uint8_t)PRM_GET(ads, ads, ack_timeout);

		/*
		 * An RC sender needs its ack timeout and retry counts (qpc.retry_count,
		 * qpc.rnr_retry, ads.ack_timeout; Linux mlx5_vnet and DPDK set 14/7/7):
		 * with 0 the first RNR NAK or lost ack kills the QP.
		 */
		if (retry == 0 || rnr == 0 || ack == 0) {
			emu_log(c->dev, 4, "RTR2RTS_QP 0x%x: retry_count %u, rnr_retry %u, "
				"ack_timeout %u: all three must be set", qpn, retry, rnr, ack);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_NO_RETRY);
		}
		qp->retry_count = retry;
		qp->rnr_retry = rnr;
		qp->ack_timeout = ack;
	}
	qp->state = to;
	return PRM_STATUS_OK;
}

int
emu_net_destroy_qp(struct emu_ctx *c)
{
	/* RES_BUSY while a virtq posts its events to it. */
	return net_destroy(c, EMU_KIND_QP);
}

/* ---- Caps and sizes ---------------------------------------------------------------- */
void
emu_net_general_caps(const struct emu_caps *caps, void *cap)
{
	PRM_SET(cmd_hca_cap, cap, vhca_id, EMU_CAP_VHCA_ID);
	PRM_SET(cmd_hca_cap, cap, event_cap, caps->event_cap);
	PRM_SET(cmd_hca_cap, cap, roce, caps->roce);
	PRM_SET(cmd_hca_cap, cap, cq_oi, caps->cq_oi);
	PRM_SET(cmd_hca_cap, cap, sq_ts_format, caps->sq_ts_format);
	PRM_SET(cmd_hca_cap, cap, rq_ts_format, caps->sq_ts_format);
	PRM_SET(cmd_hca_cap, cap, log_max_srq_sz, 15);
	PRM_SET(cmd_hca_cap, cap, log_max_qp_sz, 15);
	PRM_SET(cmd_hca_cap, cap, log_max_qp, 18);
	PRM_SET(cmd_hca_cap, cap, log_max_cq_sz, 22);
	PRM_SET(cmd_hca_cap, cap, log_max_cq, 18);
	PRM_SET(cmd_hca_cap, cap, log_max_eq_sz, 22);
	PRM_SET(cmd_hca_cap, cap, log_max_mkey, 24);
	/* Room for the completion EQs' numbers (comp_eqn_base may put them past 127). */
	PRM_SET(cmd_hca_cap, cap, log_max_eq,
		caps->comp_eqn_base + EMU_NUM_COMP_EQS <= 128 ? 7 :
		32 - __builtin_clz(caps->comp_eqn_base + EMU_NUM_COMP_EQS - 1));
	PRM_SET(cmd_hca_cap, cap, max_indirection, 4);
	PRM_SET(cmd_hca_cap, cap, log_max_mrw_sz, 64);
	PRM_SET(cmd_hca_cap, cap, null_mkey, 1);
	PRM_SET(cmd_hca_cap, cap, log_max_klm_list_size, EMU_CAP_LOG_MAX_KLM_LIST_SIZE);
	PRM_SET(cmd_hca_cap, cap, nic_flow_table, 1);
	PRM_SET(cmd_hca_cap, cap, port_type, PRM_HCA_CAP_PORT_TYPE_ETH);
	PRM_SET(cmd_hca_cap, cap, num_ports, 1);
	PRM_SET(cmd_hca_cap, cap, log_max_msg, 30);
	PRM_SET(cmd_hca_cap, cap, cqe_version, 1);
	PRM_SET(cmd_hca_cap, cap, umem_uid_0, 1);
	PRM_SET(cmd_hca_cap, cap, log_pg_sz, 12);
	PRM_SET(cmd_hca_cap, cap, log_max_transport_domain, 16);
	PRM_SET(cmd_hca_cap, cap, log_max_pd, 18);
	PRM_SET(cmd_hca_cap, cap, log_max_rq, 18);
	PRM_SET(cmd_hca_cap, cap, log_max_sq, 18);
	PRM_SET(cmd_hca_cap, cap, log_max_tir, 16);
	PRM_SET(cmd_hca_cap, cap, log_max_tis, 16);
	PRM_SET(cmd_hca_cap, cap, log_max_rqt, 16);
	PRM_SET(cmd_hca_cap, cap, log_max_rqt_size, 11);
	PRM_SET(cmd_hca_cap, cap, log_max_current_mc_list, 11);
	PRM_SET(cmd_hca_cap, cap, log_max_current_uc_list, 11);
	PRM_SET(cmd_hca_cap, cap, general_obj_types, caps->general_obj_types);
	PRM_SET(cmd_hca_cap, cap, max_num_eqs, 256);
	PRM_SET(cmd_hca_cap, cap, device_frequency_khz, 1000000);
}

static void
flow_props(void *p)
{
	PRM_SET(flow_table_prop_layout, p, ft_support, 1);
	PRM_SET(flow_table_prop_layout, p, log_max_ft_size, 20);
	PRM_SET(flow_table_prop_layout, p, max_ft_level, 63);
	PRM_SET(flow_table_prop_layout, p, log_max_ft_num, 16);
	PRM_SET(flow_table_prop_layout, p, log_max_destination, 16);
	PRM_SET(flow_table_prop_layout, p, log_max_flow, 20);
}

void
emu_net_flow_caps(void *cap)
{
	flow_props(PRM_ADDR(flow_table_nic_cap, cap, flow_table_properties_nic_receive));
	flow_props(PRM_ADDR(flow_table_nic_cap, cap, flow_table_properties_nic_transmit));
}

size_t
emu_net_min_inlen(uint16_t opcode)
{
	switch (opcode) {
	case PRM_CMD_ALLOC_PD: return PRM_SIZE(alloc_pd_in);
	case PRM_CMD_DEALLOC_PD: return PRM_SIZE(dealloc_pd_in);
	case PRM_CMD_ALLOC_TRANSPORT_DOMAIN: return PRM_SIZE(alloc_transport_domain_in);
	case PRM_CMD_DEALLOC_TRANSPORT_DOMAIN: return PRM_SIZE(dealloc_transport_domain_in);
	case PRM_CMD_CREATE_TIS: return PRM_SIZE(create_tis_in);
	case PRM_CMD_DESTROY_TIS: return PRM_SIZE(destroy_tis_in);
	case PRM_CMD_CREATE_RQT: return PRM_SIZE(create_rqt_in);
	case PRM_CMD_MODIFY_RQT: return PRM_SIZE(modify_rqt_in);
	case PRM_CMD_DESTROY_RQT: return PRM_SIZE(destroy_rqt_in);
	case PRM_CMD_CREATE_TIR: return PRM_SIZE(create_tir_in);
	case PRM_CMD_DESTROY_TIR: return PRM_SIZE(destroy_tir_in);
	case PRM_CMD_CREATE_FLOW_TABLE: return PRM_SIZE(create_flow_table_in);
	case PRM_CMD_DESTROY_FLOW_TABLE: return PRM_SIZE(destroy_flow_table_in);
	case PRM_CMD_CREATE_FLOW_GROUP: return PRM_SIZE(create_flow_group_in);
	case PRM_CMD_DESTROY_FLOW_GROUP: return PRM_SIZE(destroy_flow_group_in);
	case PRM_CMD_SET_FLOW_TABLE_ENTRY: return PRM_SIZE(set_fte_in);
	case PRM_CMD_DELETE_FLOW_TABLE_ENTRY: return PRM_SIZE(delete_fte_in);
	case PRM_CMD_CREATE_CQ: return PRM_SIZE(create_cq_in);
	case PRM_CMD_DESTROY_CQ: return PRM_SIZE(destroy_cq_in);
	case PRM_CMD_CREATE_QP: return PRM_SIZE(create_qp_in);
	case PRM_CMD_DESTROY_QP: return PRM_SIZE(destroy_qp_in);
	case PRM_CMD_RST2INIT_QP: return PRM_SIZE(rst2init_qp_in);
	case PRM_CMD_INIT2RTR_QP: return PRM_SIZE(init2rtr_qp_in);
	case PRM_CMD_RTR2RTS_QP: return PRM_SIZE(rtr2rts_qp_in);
	case PRM_CMD_2RST_QP: return PRM_SIZE(qp_2rst_in);
	default: return EMU_MIN_INLEN;
	}
}

size_t
emu_net_min_outlen(uint16_t opcode)
{
	/* Creates return their number at 0x48; everything else is a header. */
	(void)opcode;
	return PRM_SIZE(create_out);
}
