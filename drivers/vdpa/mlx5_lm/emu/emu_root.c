/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rules in the NIC RX root flow table, added on behalf of user space the
 * way the kernel's mlx5_ib flow steering does it for
 * mlx5dv_create_flow_matcher + mlx5dv_create_flow (and for mlx5dv_dr's
 * level-0 NIC RX table, which is the same root). The root is the
 * kernel's: Linux drivers/infiniband/hw/mlx5/devx.c lets no
 * SET_FLOW_TABLE_ROOT through any DevX entry point, so these rules are
 * the only way a received frame reaches what user space created
 * (emu_wire.c starts steering here and nowhere else).
 *
 * Kernel rules enforced (Linux drivers/net/ethernet/mellanox/mlx5/core/
 * fs_core.c, which mlx5_ib's raw flow rules go through):
 *   - check_valid_mask: only known criteria sets may be enabled (outer,
 *     misc, inner, misc2..misc5 in current kernels), and the mask of a
 *     set that is not enabled is 0;
 *   - check_last_reserved: the reserved tail of the mask is 0;
 *   - check_valid_spec: no value bit outside the mask;
 * and the uverbs attribute bound: mask and value are at most one
 * fte_match_param. The emulated wire matches outer L2-L4 headers only:
 * a rule asking for misc or inner criteria is refused as not modelled,
 * loudly, rather than matched wrongly.
 */
#include <string.h>

#include "emu_priv.h"

#define MATCH_SET_LEN 64u       /* one criteria set of fte_match_param, bytes */
#define CRITERIA_SETS 7u        /* outer, misc, inner, misc2..misc5 (check_valid_mask) */

_Static_assert(EMU_FTE_MATCH_PARAM_LEN == PRM_SIZE(fte_match_param), "fte_match_param size");
_Static_assert(MATCH_SET_LEN == PRM_SIZE(fte_match_set_lyr_2_4) &&
	       PRM_OFF(fte_match_param, misc_parameters) == MATCH_SET_LEN * 8 &&
	       PRM_OFF(fte_match_param, inner_headers) == 2 * MATCH_SET_LEN * 8,
	       "criteria sets are 64 bytes each, outer first");

static bool
all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Bytes [off, off + len) of a match buffer of match_len bytes (missing bytes are 0). */
static bool
section_zero(const uint8_t *buf, size_t match_len, size_t off, size_t len)
{
	if (buf == NULL || off >= match_len)
		return true;
	return all_zero(buf + off, match_len - off < len ? match_len - off : len);
}

static int
root_fail(struct emu_dev *dev, uint32_t *syndrome, int status, uint32_t synd, const char *why)
{
	emu_log(dev, 4, "root flow rule refused: %s (status 0x%x, syndrome 0x%08x)", why,
		status, synd);
	*syndrome = synd;
	return status;
}

static int
check_match(struct emu_dev *dev, const struct emu_root_rule_attr *a, uint32_t *syndrome)
{
	const uint8_t *mask = a->match_mask, *value = a->match_value;
	unsigned int set;
	size_t i;

	if (a->match_len > EMU_FTE_MATCH_PARAM_LEN)
		return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM, EMU_SYND_ROOT_BAD_MATCH,
				 "match parameters longer than fte_match_param (mlx5_ib uverbs "
				 "attribute bound)");
	if (a->match_len > 0 && (mask == NULL || value == NULL))
		return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM, EMU_SYND_ROOT_BAD_MATCH,
				 "match length without mask or value");
	if (a->match_criteria_enable & ~((1u << CRITERIA_SETS) - 1))
		return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM, EMU_SYND_ROOT_BAD_MATCH,
				 "match_criteria_enable names an unknown criteria set (fs_core.c "
				 "check_valid_mask)");
	for (set = 0; set < CRITERIA_SETS; set++) {
		bool zero = section_zero(mask, a->match_len, set * MATCH_SET_LEN, MATCH_SET_LEN);

		if (!(a->match_criteria_enable & (1u << set)) && !zero)
			return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM,
					 EMU_SYND_ROOT_BAD_MATCH, "mask of a criteria set that "
					 "is not enabled (fs_core.c check_valid_mask)");
		if (set > 0 && !zero)
			return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM,
					 EMU_SYND_ROOT_NOT_MODELLED, "misc/inner criteria are "
					 "not modelled by the emulated wire");
	}
	if (!section_zero(mask, a->match_len, CRITERIA_SETS * MATCH_SET_LEN,
			  EMU_FTE_MATCH_PARAM_LEN))
		return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM, EMU_SYND_ROOT_BAD_MATCH,
				 "mask in the reserved tail of fte_match_param (fs_core.c "
				 "check_last_reserved)");
	for (i = 0; i < a->match_len; i++)
		if (value[i] & ~mask[i])
			return root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM,
					 EMU_SYND_ROOT_BAD_MATCH, "match value bits outside the "
					 "mask (fs_core.c check_valid_spec)");
	return 0;
}

/* The destination, dev->lock held; NULL with status and syndrome set. */
static struct emu_obj *
find_dest(struct emu_dev *dev, const struct emu_root_rule_attr *a, int *status,
	  uint32_t *syndrome)
{
	struct emu_obj *o;

	switch (a->dest_type) {
	case EMU_ROOT_DEST_TIR:
		o = emu_obj_find(dev, EMU_KIND_TIR, a->dest_id);
		break;
	case EMU_ROOT_DEST_FLOW_TABLE:
		o = emu_obj_find(dev, EMU_KIND_FT, a->dest_id);
		/* The root of NIC RX forwards within NIC RX only. */
		if (o != NULL &&
		    ((struct emu_net_obj *)o)->table_type != PRM_FLOW_TABLE_TYPE_NIC_RX) {
			*status = root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM,
					    EMU_SYND_ROOT_BAD_DEST,
					    "destination table is not a NIC RX table");
			return NULL;
		}
		break;
	default:
		*status = root_fail(dev, syndrome, PRM_STATUS_BAD_PARAM, EMU_SYND_ROOT_BAD_DEST,
				    "destination is neither a TIR nor a flow table");
		return NULL;
	}
	if (o == NULL)
		*status = root_fail(dev, syndrome, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE,
				    "destination object does not exist");
	return o;
}

int
emu_root_rule_add(struct emu_dev *dev, const struct emu_root_rule_attr *a, uint32_t *rule_id,
		  uint32_t *syndrome)
{
	struct emu_root_rule *r;
	struct emu_obj *dest;
	int status;

	*syndrome = 0;
	*rule_id = 0;
	/* What the firmware sees: the kernel's SET_FLOW_TABLE_ENTRY on the root. */
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_SET_FLOW_TABLE_ENTRY], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_SET_FLOW_TABLE_ENTRY, 0, false, syndrome);
	pthread_mutex_unlock(&dev->lock);
	if (status != 0)
		return status;
	emu_slot_hold(dev, emu_cost_us(dev->prof, EMU_COST_SET_FLOW_TABLE_ENTRY, 0, 0));
	status = check_match(dev, a, syndrome);
	if (status != 0)
		return status;
	pthread_mutex_lock(&dev->lock);
	dest = find_dest(dev, a, &status, syndrome);
	if (dest == NULL)
		goto out;
	r = (struct emu_root_rule *)emu_obj_new(dev, EMU_KIND_ROOT_RULE, sizeof(*r));
	if (r == NULL) {
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_NO_RESOURCES;
		goto out;
	}
	r->priority = a->priority;
	r->match_enable = a->match_criteria_enable;
	if (a->match_len > 0) {
		size_t n = a->match_len < MATCH_SET_LEN ? a->match_len : MATCH_SET_LEN;

		memcpy(r->mask, a->match_mask, n);
		memcpy(r->value, a->match_value, n);
	}
	if (emu_obj_hold(&r->obj, dest) < 0) {
		emu_obj_free(dev, &r->obj);
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_NO_RESOURCES;
		goto out;
	}
	*rule_id = r->obj.id;
	status = 0;
out:
	pthread_mutex_unlock(&dev->lock);
	return status;
}

int
emu_root_rule_del(struct emu_dev *dev, uint32_t rule_id, uint32_t *syndrome)
{
	struct emu_obj *o;
	int status;

	*syndrome = 0;
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_DELETE_FLOW_TABLE_ENTRY], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_DELETE_FLOW_TABLE_ENTRY, 0, false, syndrome);
	pthread_mutex_unlock(&dev->lock);
	if (status != 0)
		return status;
	emu_slot_hold(dev, emu_cost_us(dev->prof, EMU_COST_DESTROY_FLOW_OBJECT, 0, 0));
	pthread_mutex_lock(&dev->lock);
	o = emu_obj_find(dev, EMU_KIND_ROOT_RULE, rule_id);
	if (o == NULL) {
		*syndrome = EMU_SYND_UNKNOWN_OBJ;
		status = PRM_STATUS_BAD_RES;
	} else {
		status = emu_obj_destroy(dev, o, syndrome);
	}
	pthread_mutex_unlock(&dev->lock);
	return status;
}
