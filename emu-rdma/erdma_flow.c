/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow steering in the NIC RX root, what mlx5_ib's flow methods do for
 * mlx5dv_create_flow_matcher / mlx5dv_create_flow: the root table belongs
 * to the kernel, and a rule there (match mask and value, one DEST_DEVX
 * action naming a TIR or a NIC RX flow table made through DevX) is added
 * by the kernel (emu_root_rule_add). A matcher is the kernel's object
 * only: the firmware sees the rule.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "erdma.h"

struct mlx5dv_flow_matcher {
	struct erdma_ctx *ctx;
	uint16_t priority;
	uint8_t match_criteria_enable;
	size_t match_len;
	uint8_t mask[EMU_FTE_MATCH_PARAM_LEN];
	unsigned int users;        /* flows made from it (the kernel's usecnt) */
};

struct erdma_flow {
	struct ibv_flow pub;
	struct mlx5dv_flow_matcher *matcher;
	uint32_t rule_id;
};

ERDMA_VISIBLE struct mlx5dv_flow_matcher *
mlx5dv_create_flow_matcher(struct ibv_context *context, struct mlx5dv_flow_matcher_attr *attr)
{
	struct erdma_ctx *c = erdma_ctx(context);
	struct mlx5dv_flow_matcher *m;
	enum mlx5dv_flow_table_type ft = MLX5DV_FLOW_TABLE_TYPE_NIC_RX;

	if (c == NULL || attr == NULL || attr->match_mask == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & MLX5DV_FLOW_MATCHER_MASK_FT_TYPE)
		ft = attr->ft_type;
	if (ft != MLX5DV_FLOW_TABLE_TYPE_NIC_RX || attr->type != IBV_FLOW_ATTR_NORMAL ||
	    attr->flags != 0) {
		erdma_unsupported("mlx5dv_create_flow_matcher other than a NIC RX normal matcher",
				  EOPNOTSUPP);
		return NULL;
	}
	/* The kernel copies at most a fte_match_param (mlx5_ib flow matcher). */
	if (attr->match_mask->match_sz > EMU_FTE_MATCH_PARAM_LEN) {
		erdma_log("%s: flow matcher mask of %zu bytes: EINVAL (more than a "
			  "fte_match_param)", context->device->name, attr->match_mask->match_sz);
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	m->ctx = c;
	m->priority = attr->priority;
	m->match_criteria_enable = attr->match_criteria_enable;
	m->match_len = attr->match_mask->match_sz;
	memcpy(m->mask, attr->match_mask->match_buf, m->match_len);
	return m;
}

ERDMA_VISIBLE int
mlx5dv_destroy_flow_matcher(struct mlx5dv_flow_matcher *m)
{
	if (m->users != 0)
		return EBUSY;
	free(m);
	return 0;
}

ERDMA_VISIBLE struct ibv_flow *
mlx5dv_create_flow(struct mlx5dv_flow_matcher *m, struct mlx5dv_flow_match_parameters *value,
		   size_t num_actions, struct mlx5dv_flow_action_attr actions_attr[])
{
	struct erdma_ctx *c = m->ctx;
	struct emu_root_rule_attr ra = {
		.priority = m->priority,
		.match_criteria_enable = m->match_criteria_enable,
		.match_mask = m->mask,
		.match_len = m->match_len,
	};
	uint8_t val[EMU_FTE_MATCH_PARAM_LEN] = { 0 };
	struct mlx5dv_devx_obj *dest;
	struct erdma_flow *f;
	uint64_t t0 = erdma_now_us();
	uint32_t synd = 0;
	int st;

	/* Linux mlx5 fs.c MLX5_IB_METHOD_CREATE_FLOW: "if (!capable(CAP_NET_RAW)) return -EPERM". */
	if (!erdma_capable(CAP_NET_RAW)) {
		erdma_log("%s: mlx5dv_create_flow without CAP_NET_RAW: EPERM (Linux mlx5 fs.c "
			  "MLX5_IB_METHOD_CREATE_FLOW)", c->vctx.context.device->name);
		errno = EPERM;
		return NULL;
	}
	if (num_actions != 1 || actions_attr[0].type != MLX5DV_FLOW_ACTION_DEST_DEVX) {
		erdma_unsupported("mlx5dv_create_flow with actions other than one DEST_DEVX",
				  EOPNOTSUPP);
		return NULL;
	}
	if (value == NULL || value->match_sz > m->match_len) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(val, value->match_buf, value->match_sz);
	ra.match_value = val;
	dest = actions_attr[0].obj;
	switch (dest->k.create_opcode) {
	case PRM_CMD_CREATE_TIR:
		ra.dest_type = EMU_ROOT_DEST_TIR;
		break;
	case PRM_CMD_CREATE_FLOW_TABLE:
		ra.dest_type = EMU_ROOT_DEST_FLOW_TABLE;
		break;
	default:
		/* mlx5_ib's DEST_DEVX accepts a TIR or a flow table only. */
		erdma_log("%s: DEST_DEVX to an object of creator 0x%x: EINVAL",
			  c->vctx.context.device->name, dest->k.create_opcode);
		errno = EINVAL;
		return NULL;
	}
	ra.dest_id = dest->k.id;
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	st = emu_root_rule_add(c->emu, &ra, &f->rule_id, &synd);
	erdma_trace_op(c, "flow_create", "ROOT_FLOW_CREATE", t0, "flow_id", f->rule_id,
		       dest->k.id, ra.priority, st);
	if (st != 0) {
		free(f);
		errno = EINVAL;
		return NULL;
	}
	f->matcher = m;
	m->users++;
	f->pub.context = &c->vctx.context;
	f->pub.handle = f->rule_id;
	return &f->pub;
}

/* ibv_destroy_flow is an inline of verbs.h calling this through struct verbs_context. */
int
erdma_destroy_flow(struct ibv_flow *pub)
{
	struct erdma_flow *f = (struct erdma_flow *)pub;
	struct erdma_ctx *c = erdma_ctx(pub->context);
	uint64_t t0 = erdma_now_us();
	uint32_t synd = 0;
	int st;

	st = emu_root_rule_del(c->emu, f->rule_id, &synd);
	erdma_trace_op(c, "flow_destroy", "ROOT_FLOW_DESTROY", t0, "flow_id", f->rule_id, 0, 0,
		       st);
	if (st != 0)
		return EINVAL;
	f->matcher->users--;
	free(f);
	return 0;
}
