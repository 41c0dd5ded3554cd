/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classic objects around the virtio queues: PD, transport domain, TIS,
 * RQT (over virtio_net_q objects), TIR, NIC flow table / group / entry,
 * their caps and mailbox sizes; the CQ/QP pair of a queue's event channel
 * is in emu_net_qp.c. The emulator keeps what validation and the
 * reference rules need; steering itself is the data path's business.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

/* ---- Helpers ---------------------------------------------------------------- */
struct emu_net_obj *
emu_net_new(struct emu_ctx *c, enum emu_kind kind)
{
	return (struct emu_net_obj *)emu_obj_new(c->dev, kind, sizeof(struct emu_net_obj));
}

int
emu_net_created(struct emu_ctx *c, struct emu_net_obj *o)
{
	emu_out_id(c, o->obj.id);
	return PRM_STATUS_OK;
}

/* Hold target for o or fail the create (caller frees o). */
int
emu_net_hold(struct emu_ctx *c, struct emu_net_obj *o, struct emu_obj *target)
{
	if (emu_obj_hold(&o->obj, target) < 0)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return 0;
}

int
emu_net_create_failed(struct emu_ctx *c, struct emu_net_obj *o, int status)
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

int
emu_net_destroy(struct emu_ctx *c, enum emu_kind kind)
{
	return net_destroy_id(c, kind, (uint32_t)PRM_GET(destroy_in, c->in, id));
}

/* ---- PD, transport domain ---------------------------------------------------- */
int
emu_net_alloc_pd(struct emu_ctx *c)
{
	struct emu_net_obj *o = emu_net_new(c, EMU_KIND_PD);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return emu_net_created(c, o);
}

int
emu_net_dealloc_pd(struct emu_ctx *c)
{
	return emu_net_destroy(c, EMU_KIND_PD);
}

int
emu_net_alloc_td(struct emu_ctx *c)
{
	struct emu_net_obj *o = emu_net_new(c, EMU_KIND_TD);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	return emu_net_created(c, o);
}

int
emu_net_dealloc_td(struct emu_ctx *c)
{
	return emu_net_destroy(c, EMU_KIND_TD);
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
	o = emu_net_new(c, EMU_KIND_TIS);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->td = tdn;
	status = emu_net_hold(c, o, td);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	return emu_net_created(c, o);
}

int
emu_net_destroy_tis(struct emu_ctx *c)
{
	return emu_net_destroy(c, EMU_KIND_TIS);
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
		status = emu_net_hold(c, o, vq);
		if (status != 0)
			return status;
	}
	o->size = n;
	o->max = max != 0 ? max : n;
	return 0;
}

int
emu_net_create_rqt(struct emu_ctx *c)
{
	const void *rqtc = PRM_CADDR(create_rqt_in, c->in, rqt_context);
	struct emu_net_obj *o = emu_net_new(c, EMU_KIND_RQT);
	int status;

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	status = rqt_fill(c, o, rqtc, PRM_OFF(create_rqt_in, rqt_context) / 8);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	return emu_net_created(c, o);
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
	if (status == 0 && tmp.size > o->max) {
		/*
		 * The bitmask changes the list only: the RQT keeps the maximum
		 * it was created with (Linux mlx5e and mlx5_vdpa send 0 there in
		 * MODIFY_RQT and size the RQT at its CREATE for the most queues).
		 */
		emu_log(c->dev, 4, "RQT %u: MODIFY_RQT lists %u entries, beyond the %u it was "
			"created for", rqtn, tmp.size, o->max);
		status = emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
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
	return emu_net_destroy(c, EMU_KIND_RQT);
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
	o = emu_net_new(c, EMU_KIND_TIR);
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
	status = emu_net_hold(c, o, td);
	if (status == 0)
		status = emu_net_hold(c, o, rqt);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	return emu_net_created(c, o);
}

int
emu_net_destroy_tir(struct emu_ctx *c)
{
	return emu_net_destroy(c, EMU_KIND_TIR);
}

/* ---- Flow steering ---------------------------------------------------------------- */
int
emu_net_create_ft(struct emu_ctx *c)
{
	const void *ctx = PRM_CADDR(create_flow_table_in, c->in, flow_table_context);
	struct emu_net_obj *o = emu_net_new(c, EMU_KIND_FT);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->table_type = (uint32_t)PRM_GET(create_flow_table_in, c->in, table_type);
	o->size = (uint32_t)PRM_GET(flow_table_context, ctx, log_size);
	o->level = (uint32_t)PRM_GET(flow_table_context, ctx, level);
	return emu_net_created(c, o);
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
	o = emu_net_new(c, EMU_KIND_FG);
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
	status = emu_net_hold(c, o, &ft->obj);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	return emu_net_created(c, o);
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

	EMU_FOR_KIND(o, dev, EMU_KIND_FTE) {
		struct emu_net_obj *f = (struct emu_net_obj *)o;

		if (f->table_id == tid && f->flow_index == index)
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
	status = emu_net_hold(c, o, &ft->obj);
	if (status == 0)
		status = emu_net_hold(c, o, &fg->obj);
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
		status = emu_net_hold(c, o, t);
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
	o = emu_net_new(c, EMU_KIND_FTE);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->table_id = tid;
	o->flow_index = index;
	status = fte_fill(c, o, ft);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
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
