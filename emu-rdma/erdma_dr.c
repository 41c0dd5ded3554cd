/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5dv_dr_* (rdma-core's direct rule API) on the NIC RX root, the part
 * DPDK's vdpa/mlx5 uses for its RSS steering: a NIC RX domain, a level-0
 * table, matchers (priority, criteria, mask), rules (value, one action to a
 * DevX TIR) and dest_devx_tir actions.
 *
 * rdma-core (providers/mlx5/dr_*.c) does this as follows, and so does this
 * file:
 *   - mlx5dv_dr_domain_create refuses a type above FDB (EINVAL); it also
 *     wants an Ethernet port (dr_domain_caps_init), which the emulated
 *     device always is; software steering needs the rx_sw_owner caps, which the emulated
 *     device does not offer (it models no ICM), so a domain here is a
 *     root-only domain, as rdma-core makes it on such a device;
 *   - mlx5dv_dr_table_create of a level other than 0 without software
 *     steering fails EOPNOTSUPP (dr_table.c); a level-0 table is the
 *     kernel's root and creates no firmware object;
 *   - a matcher on a root table is a kernel flow matcher
 *     (dr_matcher_init_root: mlx5dv_create_flow_matcher, NIC RX, normal);
 *   - a rule on a root table is a kernel flow (dr_rule_create_rule_root:
 *     mlx5dv_create_flow with the actions turned into flow action
 *     attributes; a dest_devx_tir action becomes DEST_DEVX of the TIR);
 *   - mlx5dv_dr_action_create_dest_devx_tir takes a DevX object created by
 *     CREATE_TIR only (EINVAL otherwise);
 *   - references are counted: a domain with tables, a table with matchers,
 *     a matcher with rules, an action used by rules are not destroyed
 *     (EBUSY, returned, not set in errno).
 * The emulator (emu_root_rule_add) sees each rule as the kernel's
 * SET_FLOW_TABLE_ENTRY on the root, and reports rules left alive.
 * Other dr actions and domain types fail loudly (erdma_unsupported).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "erdma.h"

enum erdma_dr_action_type {
	ERDMA_DR_ACTION_DEST_TIR = 1,
};

struct mlx5dv_dr_domain {
	struct erdma_ctx *ctx;
	enum mlx5dv_dr_domain_type type;
	atomic_uint refcount;      /* 1 + tables (rdma-core's dmn->refcount) */
};

struct mlx5dv_dr_table {
	struct mlx5dv_dr_domain *dmn;
	uint32_t level;
	atomic_uint refcount;      /* 1 + matchers */
};

struct mlx5dv_dr_matcher {
	struct mlx5dv_dr_table *tbl;
	struct mlx5dv_flow_matcher *dv_matcher; /* the kernel's (root table) */
	atomic_uint refcount;      /* 1 + rules */
};

struct mlx5dv_dr_action {
	enum erdma_dr_action_type type;
	struct mlx5dv_devx_obj *devx_tir;
	atomic_uint refcount;      /* 1 + rules using it */
};

struct mlx5dv_dr_rule {
	struct mlx5dv_dr_matcher *matcher;
	struct ibv_flow *flow;
	size_t num_actions;
	struct mlx5dv_dr_action *actions[];
};

ERDMA_VISIBLE struct mlx5dv_dr_domain *
mlx5dv_dr_domain_create(struct ibv_context *ctx, enum mlx5dv_dr_domain_type type)
{
	struct erdma_ctx *c = erdma_ctx(ctx);
	struct mlx5dv_dr_domain *dmn;

	if (c == NULL || type > MLX5DV_DR_DOMAIN_TYPE_FDB) {
		errno = EINVAL;
		return NULL;
	}
	if (type != MLX5DV_DR_DOMAIN_TYPE_NIC_RX) {
		erdma_unsupported("mlx5dv_dr_domain_create of a domain other than NIC RX",
				  EOPNOTSUPP);
		return NULL;
	}
	dmn = calloc(1, sizeof(*dmn));
	if (dmn == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	dmn->ctx = c;
	dmn->type = type;
	atomic_init(&dmn->refcount, 1);
	return dmn;
}

ERDMA_VISIBLE int
mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain *dmn)
{
	if (atomic_load(&dmn->refcount) > 1)
		return EBUSY;
	free(dmn);
	return 0;
}

ERDMA_VISIBLE struct mlx5dv_dr_table *
mlx5dv_dr_table_create(struct mlx5dv_dr_domain *dmn, uint32_t level)
{
	struct mlx5dv_dr_table *tbl;

	/* dr_table.c: without software steering only the root (level 0) exists. */
	if (level != 0) {
		erdma_log("%s: mlx5dv_dr_table_create level %u: EOPNOTSUPP (no software "
			  "steering, root tables only, dr_table.c)",
			  dmn->ctx->vctx.context.device->name, level);
		errno = EOPNOTSUPP;
		return NULL;
	}
	tbl = calloc(1, sizeof(*tbl));
	if (tbl == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	tbl->dmn = dmn;
	tbl->level = level;
	atomic_init(&tbl->refcount, 1);
	atomic_fetch_add(&dmn->refcount, 1);
	return tbl;
}

ERDMA_VISIBLE int
mlx5dv_dr_table_destroy(struct mlx5dv_dr_table *tbl)
{
	if (atomic_load(&tbl->refcount) > 1)
		return EBUSY;
	atomic_fetch_sub(&tbl->dmn->refcount, 1);
	free(tbl);
	return 0;
}

ERDMA_VISIBLE struct mlx5dv_dr_matcher *
mlx5dv_dr_matcher_create(struct mlx5dv_dr_table *tbl, uint16_t priority,
			 uint8_t match_criteria_enable, struct mlx5dv_flow_match_parameters *mask)
{
	struct mlx5dv_flow_matcher_attr attr = {
		.type = IBV_FLOW_ATTR_NORMAL,
		.priority = priority,
		.match_criteria_enable = match_criteria_enable,
		.match_mask = mask,
		.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE,
		.ft_type = MLX5DV_FLOW_TABLE_TYPE_NIC_RX,
	};
	struct mlx5dv_dr_matcher *m;

	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* dr_matcher_init_root: the kernel's flow matcher on the root. */
	m->dv_matcher = mlx5dv_create_flow_matcher(&tbl->dmn->ctx->vctx.context, &attr);
	if (m->dv_matcher == NULL) {
		free(m);
		return NULL;
	}
	m->tbl = tbl;
	atomic_init(&m->refcount, 1);
	atomic_fetch_add(&tbl->refcount, 1);
	return m;
}

ERDMA_VISIBLE int
mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher *m)
{
	int ret;

	if (atomic_load(&m->refcount) > 1)
		return EBUSY;
	ret = mlx5dv_destroy_flow_matcher(m->dv_matcher);
	if (ret != 0)
		return ret;
	atomic_fetch_sub(&m->tbl->refcount, 1);
	free(m);
	return 0;
}

ERDMA_VISIBLE struct mlx5dv_dr_action *
mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj *devx_obj)
{
	struct mlx5dv_dr_action *a;

	/* dr_action.c: devx_obj->type must be MLX5_DEVX_TIR (made by CREATE_TIR). */
	if (devx_obj == NULL || devx_obj->k.create_opcode != PRM_CMD_CREATE_TIR) {
		erdma_log("mlx5dv_dr_action_create_dest_devx_tir: not a TIR: EINVAL "
			  "(dr_action.c)");
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	a->type = ERDMA_DR_ACTION_DEST_TIR;
	a->devx_tir = devx_obj;
	atomic_init(&a->refcount, 1);
	return a;
}

ERDMA_VISIBLE int
mlx5dv_dr_action_destroy(struct mlx5dv_dr_action *a)
{
	if (atomic_load(&a->refcount) > 1)
		return EBUSY;
	free(a);
	return 0;
}

ERDMA_VISIBLE struct mlx5dv_dr_rule *
mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher *m, struct mlx5dv_flow_match_parameters *value,
		      size_t num_actions, struct mlx5dv_dr_action *actions[])
{
	struct mlx5dv_flow_action_attr *attr;
	struct mlx5dv_dr_rule *r;
	size_t i;

	r = calloc(1, sizeof(*r) + num_actions * sizeof(r->actions[0]));
	attr = calloc(num_actions ? num_actions : 1, sizeof(*attr));
	if (r == NULL || attr == NULL) {
		errno = ENOMEM;
		goto err_free;
	}
	/* dr_actions_build_attr: a TIR destination is DEST_DEVX of the TIR object. */
	for (i = 0; i < num_actions; i++) {
		if (actions[i] == NULL || actions[i]->type != ERDMA_DR_ACTION_DEST_TIR) {
			erdma_unsupported("mlx5dv_dr_rule_create with a dr action other than "
					  "dest_devx_tir", EOPNOTSUPP);
			goto err_free;
		}
		attr[i].type = MLX5DV_FLOW_ACTION_DEST_DEVX;
		attr[i].obj = actions[i]->devx_tir;
	}
	r->flow = mlx5dv_create_flow(m->dv_matcher, value, num_actions, attr);
	if (r->flow == NULL)
		goto err_free;
	free(attr);
	r->matcher = m;
	r->num_actions = num_actions;
	for (i = 0; i < num_actions; i++) {
		r->actions[i] = actions[i];
		atomic_fetch_add(&actions[i]->refcount, 1);
	}
	atomic_fetch_add(&m->refcount, 1);
	return r;
err_free:
	free(attr);
	free(r);
	return NULL;
}

ERDMA_VISIBLE int
mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule *r)
{
	size_t i;
	int ret;

	/* dr_rule_destroy_rule_root: the kernel flow first; on failure nothing changes. */
	ret = ibv_destroy_flow(r->flow);
	if (ret != 0)
		return ret;
	for (i = 0; i < r->num_actions; i++)
		atomic_fetch_sub(&r->actions[i]->refcount, 1);
	atomic_fetch_sub(&r->matcher->refcount, 1);
	free(r);
	return 0;
}
