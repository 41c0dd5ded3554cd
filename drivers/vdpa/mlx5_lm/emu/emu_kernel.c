/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel's side of DevX, as Linux drivers/infiniband/hw/mlx5/devx.c
 * enforces it for rdma-core's mlx5dv_devx_* calls. Both ways into the
 * emulator go through these rules: the DevX transport's emu back end and
 * the emulated rdma-core (emu-rdma/), so that emu= is as strict as a
 * real ibdev=.
 *
 * The kernel does not look into the command bodies (it only tags them with
 * the context's uid); what it enforces is which entry point may carry which
 * opcode, and that a modify, query or destroy names the very object whose
 * handle it was issued on. Object identity is what devx.c keeps per handle:
 * the creator's opcode (with obj_type for general objects) and the id.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

/* Opcodes the rules name that the emulator does not execute (mlx5_ifc.h). */
enum {
	OP_QUERY_ADAPTER = 0x101,
	OP_QUERY_ISSI = 0x10a,
	OP_NOP = 0x10d,
	OP_QUERY_MKEY = 0x201,
	OP_QUERY_CQ = 0x402,
	OP_MODIFY_CQ = 0x403,
	OP_RTS2RTS_QP = 0x505,
	OP_SQERR2RTS_QP = 0x506,
	OP_2ERR_QP = 0x507,
	OP_QUERY_QP = 0x50b,
	OP_INIT2INIT_QP = 0x50e,
	OP_CREATE_PSV = 0x600,
	OP_CREATE_SRQ = 0x700,
	OP_CREATE_XRC_SRQ = 0x705,
	OP_CREATE_DCT = 0x710,
	OP_CREATE_XRQ = 0x717,
	OP_QUERY_VPORT_STATE = 0x750,
	OP_QUERY_ESW_VPORT_CONTEXT = 0x752,
	OP_QUERY_NIC_VPORT_CONTEXT = 0x754,
	OP_QUERY_ROCE_ADDRESS = 0x760,
	OP_QUERY_HCA_VPORT_CONTEXT = 0x762,
	OP_QUERY_VNIC_ENV = 0x76f,
	OP_QUERY_VPORT_COUNTER = 0x770,
	OP_ALLOC_Q_COUNTER = 0x771,
	OP_CREATE_SCHEDULING_ELEMENT = 0x782,
	OP_ATTACH_TO_MCG = 0x806,
	OP_ALLOC_XRCD = 0x80e,
	OP_QUERY_CONG_STATUS = 0x822,
	OP_QUERY_CONG_PARAMS = 0x824,
	OP_QUERY_CONG_STATISTICS = 0x826,
	OP_ADD_VXLAN_UDP_DPORT = 0x827,
	OP_SET_L2_TABLE_ENTRY = 0x829,
	OP_QUERY_LAG = 0x842,
	OP_MODIFY_TIR = 0x901,
	OP_QUERY_TIR = 0x903,
	OP_CREATE_SQ = 0x904,
	OP_MODIFY_SQ = 0x905,
	OP_QUERY_SQ = 0x907,
	OP_CREATE_RQ = 0x908,
	OP_MODIFY_RQ = 0x909,
	OP_GET_DROPPED_PACKET_LOG = 0x90a,
	OP_QUERY_RQ = 0x90b,
	OP_CREATE_RMP = 0x90c,
	OP_MODIFY_RMP = 0x90d,
	OP_QUERY_RMP = 0x90e,
	OP_MODIFY_TIS = 0x913,
	OP_QUERY_TIS = 0x915,
	OP_QUERY_RQT = 0x919,
	OP_ALLOC_FLOW_COUNTER = 0x939,
	OP_ALLOC_PACKET_REFORMAT_CONTEXT = 0x93d,
	OP_ALLOC_MODIFY_HEADER_CONTEXT = 0x940,
	/* devx.c: MLX5_CMD_OP_GENERAL_START .. MLX5_CMD_OP_GENERAL_END */
	OP_GENERAL_START = 0xb00,
	OP_GENERAL_END = 0xd00,
};

/* set_fte_in.op_mod: 0 = create the entry, 1 = modify it (devx.c). */
#define SET_FTE_OP_MOD_CREATE 0
#define SET_FTE_OP_MOD_MODIFY 1

const char *
emu_kentry_name(enum emu_kentry e)
{
	static const char *const names[] = {
		[EMU_KENTRY_GENERAL] = "general",
		[EMU_KENTRY_CREATE] = "create",
		[EMU_KENTRY_MODIFY] = "modify",
		[EMU_KENTRY_QUERY] = "query",
		[EMU_KENTRY_DESTROY] = "destroy",
	};

	return (unsigned int)e < sizeof(names) / sizeof(names[0]) ? names[e] : "?";
}

/* devx.c devx_is_general_cmd(): the allow-list of mlx5dv_devx_general_cmd. */
static bool
is_general_cmd(uint16_t op)
{
	if (op >= OP_GENERAL_START && op < OP_GENERAL_END)
		return true;
	switch (op) {
	case PRM_CMD_QUERY_HCA_CAP:
	case OP_QUERY_HCA_VPORT_CONTEXT:
	case OP_QUERY_ESW_VPORT_CONTEXT:
	case OP_QUERY_VPORT_STATE:
	case OP_QUERY_ADAPTER:
	case OP_QUERY_ISSI:
	case OP_QUERY_NIC_VPORT_CONTEXT:
	case OP_QUERY_ROCE_ADDRESS:
	case OP_QUERY_VNIC_ENV:
	case OP_QUERY_VPORT_COUNTER:
	case OP_GET_DROPPED_PACKET_LOG:
	case OP_NOP:
	case OP_QUERY_CONG_STATUS:
	case OP_QUERY_CONG_PARAMS:
	case OP_QUERY_CONG_STATISTICS:
	case OP_QUERY_LAG:
		return true;
	default:
		return false;
	}
}

/* devx.c devx_is_obj_create_cmd(): what mlx5dv_devx_obj_create may carry. */
static bool
is_obj_create_cmd(uint16_t op, uint16_t op_mod)
{
	switch (op) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
	case PRM_CMD_CREATE_MKEY:
	case PRM_CMD_CREATE_CQ:
	case PRM_CMD_ALLOC_PD:
	case PRM_CMD_ALLOC_TRANSPORT_DOMAIN:
	case OP_CREATE_RMP:
	case OP_CREATE_SQ:
	case OP_CREATE_RQ:
	case PRM_CMD_CREATE_RQT:
	case PRM_CMD_CREATE_TIR:
	case PRM_CMD_CREATE_TIS:
	case OP_ALLOC_Q_COUNTER:
	case PRM_CMD_CREATE_FLOW_TABLE:
	case PRM_CMD_CREATE_FLOW_GROUP:
	case OP_ALLOC_FLOW_COUNTER:
	case OP_ALLOC_PACKET_REFORMAT_CONTEXT:
	case OP_ALLOC_MODIFY_HEADER_CONTEXT:
	case OP_CREATE_SCHEDULING_ELEMENT:
	case OP_ADD_VXLAN_UDP_DPORT:
	case OP_SET_L2_TABLE_ENTRY:
	case PRM_CMD_CREATE_QP:
	case OP_CREATE_SRQ:
	case OP_CREATE_XRC_SRQ:
	case OP_CREATE_DCT:
	case OP_CREATE_XRQ:
	case OP_ATTACH_TO_MCG:
	case OP_ALLOC_XRCD:
		return true;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		return op_mod == SET_FTE_OP_MOD_CREATE;
	default:
		/* CREATE_PSV only with num_psv == 1: the emulator has no PSV. */
		return false;
	}
}

/*
 * devx.c devx_is_obj_modify_cmd() (the commands on objects the emulator
 * models; ARM_* and XRQ commands have no object here to name).
 */
static bool
is_obj_modify_cmd(uint16_t op, uint16_t op_mod)
{
	switch (op) {
	case PRM_CMD_MODIFY_GENERAL_OBJECT:
	case OP_MODIFY_CQ:
	case OP_MODIFY_RMP:
	case OP_MODIFY_SQ:
	case OP_MODIFY_RQ:
	case PRM_CMD_MODIFY_RQT:
	case OP_MODIFY_TIR:
	case OP_MODIFY_TIS:
	case PRM_CMD_RST2INIT_QP:
	case PRM_CMD_INIT2RTR_QP:
	case OP_INIT2INIT_QP:
	case PRM_CMD_RTR2RTS_QP:
	case OP_RTS2RTS_QP:
	case OP_SQERR2RTS_QP:
	case OP_2ERR_QP:
	case PRM_CMD_2RST_QP:
		return true;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		return op_mod == SET_FTE_OP_MOD_MODIFY;
	default:
		return false;
	}
}

/* devx.c devx_is_obj_query_cmd() (same scope as above). */
static bool
is_obj_query_cmd(uint16_t op)
{
	switch (op) {
	case PRM_CMD_QUERY_GENERAL_OBJECT:
	case OP_QUERY_MKEY:
	case OP_QUERY_CQ:
	case OP_QUERY_RMP:
	case OP_QUERY_SQ:
	case OP_QUERY_RQ:
	case OP_QUERY_RQT:
	case OP_QUERY_TIR:
	case OP_QUERY_TIS:
	case OP_QUERY_QP:
		return true;
	default:
		return false;
	}
}

/*
 * devx.c devx_get_obj_id(): the object a modify/query mailbox names, as
 * (creator opcode, obj_type, id). Every classic command of this set
 * carries its 24-bit object number at 0x48 (qpn, rqtn, tirn, tisn, cqn,
 * sqn, rqn, rmpn, mkey_index), like destroy_in. Returns false when the
 * opcode names no object the rules know.
 */
static bool
named_obj(const void *in, struct emu_kobj *k)
{
	uint16_t op = (uint16_t)PRM_GET(cmd_in, in, opcode);

	k->obj_type = 0;
	k->id = (uint32_t)PRM_GET(destroy_in, in, id);
	switch (op) {
	case PRM_CMD_MODIFY_GENERAL_OBJECT:
	case PRM_CMD_QUERY_GENERAL_OBJECT:
		k->create_opcode = PRM_CMD_CREATE_GENERAL_OBJECT;
		k->obj_type = (uint16_t)PRM_GET(general_obj_in_cmd_hdr, in, obj_type);
		k->id = (uint32_t)PRM_GET(general_obj_in_cmd_hdr, in, obj_id);
		return true;
	case OP_QUERY_MKEY:
		k->create_opcode = PRM_CMD_CREATE_MKEY;
		return true;
	case OP_QUERY_CQ:
	case OP_MODIFY_CQ:
		k->create_opcode = PRM_CMD_CREATE_CQ;
		return true;
	case OP_QUERY_SQ:
	case OP_MODIFY_SQ:
		k->create_opcode = OP_CREATE_SQ;
		return true;
	case OP_QUERY_RQ:
	case OP_MODIFY_RQ:
		k->create_opcode = OP_CREATE_RQ;
		return true;
	case OP_QUERY_RMP:
	case OP_MODIFY_RMP:
		k->create_opcode = OP_CREATE_RMP;
		return true;
	case OP_QUERY_RQT:
	case PRM_CMD_MODIFY_RQT:
		k->create_opcode = PRM_CMD_CREATE_RQT;
		return true;
	case OP_QUERY_TIR:
	case OP_MODIFY_TIR:
		k->create_opcode = PRM_CMD_CREATE_TIR;
		return true;
	case OP_QUERY_TIS:
	case OP_MODIFY_TIS:
		k->create_opcode = PRM_CMD_CREATE_TIS;
		return true;
	case OP_QUERY_QP:
	case PRM_CMD_RST2INIT_QP:
	case OP_INIT2INIT_QP:
	case PRM_CMD_INIT2RTR_QP:
	case PRM_CMD_RTR2RTS_QP:
	case OP_RTS2RTS_QP:
	case OP_SQERR2RTS_QP:
	case OP_2ERR_QP:
	case PRM_CMD_2RST_QP:
		k->create_opcode = PRM_CMD_CREATE_QP;
		return true;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		k->create_opcode = PRM_CMD_SET_FLOW_TABLE_ENTRY;
		k->id = (uint32_t)PRM_GET(set_fte_in, in, flow_index);
		return true;
	default:
		return false;
	}
}

/* The destroy command the kernel builds for a creator (devx_obj_build_destroy_cmd). */
static int
destroy_opcode(uint16_t create_opcode)
{
	switch (create_opcode) {
	case PRM_CMD_CREATE_GENERAL_OBJECT: return PRM_CMD_DESTROY_GENERAL_OBJECT;
	case PRM_CMD_CREATE_MKEY: return PRM_CMD_DESTROY_MKEY;
	case PRM_CMD_CREATE_CQ: return PRM_CMD_DESTROY_CQ;
	case PRM_CMD_CREATE_QP: return PRM_CMD_DESTROY_QP;
	case PRM_CMD_ALLOC_PD: return PRM_CMD_DEALLOC_PD;
	case PRM_CMD_ALLOC_TRANSPORT_DOMAIN: return PRM_CMD_DEALLOC_TRANSPORT_DOMAIN;
	case PRM_CMD_CREATE_TIR: return PRM_CMD_DESTROY_TIR;
	case PRM_CMD_CREATE_TIS: return PRM_CMD_DESTROY_TIS;
	case PRM_CMD_CREATE_RQT: return PRM_CMD_DESTROY_RQT;
	case PRM_CMD_CREATE_FLOW_TABLE: return PRM_CMD_DESTROY_FLOW_TABLE;
	case PRM_CMD_CREATE_FLOW_GROUP: return PRM_CMD_DESTROY_FLOW_GROUP;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY: return PRM_CMD_DELETE_FLOW_TABLE_ENTRY;
	default: return -1;
	}
}

int
emu_kernel_created_obj(const void *in, size_t inlen, const void *out, size_t outlen,
		       struct emu_kobj *k)
{
	if (inlen < PRM_SIZE(cmd_in) || outlen < PRM_SIZE(create_out))
		return -EINVAL;
	k->create_opcode = (uint16_t)PRM_GET(cmd_in, in, opcode);
	k->obj_type = 0;
	switch (k->create_opcode) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
		k->obj_type = (uint16_t)PRM_GET(general_obj_in_cmd_hdr, in, obj_type);
		k->id = (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id);
		return 0;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		/* devx_get_created_obj_id(): the entry is named by its index. */
		if (inlen < PRM_SIZE(set_fte_in))
			return -EINVAL;
		k->id = (uint32_t)PRM_GET(set_fte_in, in, flow_index);
		return 0;
	default:
		k->id = (uint32_t)PRM_GET(create_out, out, id);
		return 0;
	}
}

static int
refuse(struct emu_dev *dev, enum emu_kentry e, uint16_t op, const char *rule, const char *why)
{
	emu_log(dev, 3, "kernel: %s (0x%x) refused on the DevX %s entry point (EINVAL): %s "
		"(Linux drivers/infiniband/hw/mlx5/devx.c %s)", prm_opcode_name(op), op,
		emu_kentry_name(e), why, rule);
	return -EINVAL;
}

int
emu_kernel_check(struct emu_dev *dev, enum emu_kentry e, const void *in, size_t inlen,
		 const struct emu_kobj *obj)
{
	struct emu_kobj named;
	uint16_t op, op_mod;
	int dop;

	/* uverbs copies at least the header it reads the opcode from. */
	if (in == NULL || inlen < PRM_SIZE(cmd_in))
		return refuse(dev, e, 0, "(uverbs attribute length)", "mailbox shorter than "
			      "its header");
	op = (uint16_t)PRM_GET(cmd_in, in, opcode);
	op_mod = (uint16_t)PRM_GET(cmd_in, in, op_mod);
	/*
	 * OBJ_CREATE, OBJ_MODIFY, OBJ_QUERY (and ASYNC_QUERY) refuse a
	 * tunnelled mailbox before anything else: commands on behalf of
	 * another function go through the general entry point only, and there
	 * only with the vhca_tunnel_commands cap (which this device lacks, so
	 * devx_is_general_cmd judges them by opcode as any other).
	 */
	if ((e == EMU_KENTRY_CREATE || e == EMU_KENTRY_MODIFY || e == EMU_KENTRY_QUERY) &&
	    PRM_GET(general_obj_in_cmd_hdr, in, vhca_tunnel_id) != 0)
		return refuse(dev, e, op, "OBJ_CREATE/OBJ_MODIFY/OBJ_QUERY handlers",
			      "vhca_tunnel_id is not 0");
	switch (e) {
	case EMU_KENTRY_GENERAL:
		if (!is_general_cmd(op))
			return refuse(dev, e, op, "devx_is_general_cmd()",
				      "not on the general-command allow-list");
		return 0;
	case EMU_KENTRY_CREATE:
		if (!is_obj_create_cmd(op, op_mod))
			return refuse(dev, e, op, "devx_is_obj_create_cmd()",
				      "not an object creation command");
		/*
		 * An mkey over a DevX umem passes: devx_handle_mkey_create sets
		 * mkey_umem_valid on every non-KLM/KSM mkey (set_umem_valid
		 * below) and the firmware translates through the umem.
		 * ("mkeys are not supported on umem" in devx_umem_reg_cmd_alloc
		 * is a comment on the umem's IOVA, not a refusal.)
		 */
		return 0;
	case EMU_KENTRY_MODIFY:
	case EMU_KENTRY_QUERY:
		if (e == EMU_KENTRY_MODIFY && !is_obj_modify_cmd(op, op_mod))
			return refuse(dev, e, op, "devx_is_obj_modify_cmd()",
				      "not an object modify command");
		if (e == EMU_KENTRY_QUERY && !is_obj_query_cmd(op))
			return refuse(dev, e, op, "devx_is_obj_query_cmd()",
				      "not an object query command");
		if (obj == NULL || !named_obj(in, &named) ||
		    named.create_opcode != obj->create_opcode ||
		    named.obj_type != obj->obj_type || named.id != obj->id)
			return refuse(dev, e, op, "devx_is_valid_obj_id()",
				      "the mailbox does not name the object of the handle");
		return 0;
	case EMU_KENTRY_DESTROY:
		/* The kernel sends its own mailbox, derived at create: it must match. */
		dop = obj != NULL ? destroy_opcode(obj->create_opcode) : -1;
		if (dop < 0 || op != dop)
			return refuse(dev, e, op, "devx_obj_build_destroy_cmd()",
				      "not the destroy command of the handle's object");
		if (obj->create_opcode == PRM_CMD_CREATE_GENERAL_OBJECT ?
		    (PRM_GET(general_obj_in_cmd_hdr, in, obj_type) != obj->obj_type ||
		     PRM_GET(general_obj_in_cmd_hdr, in, obj_id) != obj->id) :
		    (obj->create_opcode != PRM_CMD_CREATE_FLOW_TABLE &&
		     obj->create_opcode != PRM_CMD_CREATE_FLOW_GROUP &&
		     obj->create_opcode != PRM_CMD_SET_FLOW_TABLE_ENTRY &&
		     PRM_GET(destroy_in, in, id) != obj->id))
			return refuse(dev, e, op, "devx_obj_build_destroy_cmd()",
				      "the destroy mailbox names another object");
		return 0;
	}
	return refuse(dev, e, op, "(entry points)", "unknown entry point");
}

/*
 * devx.c devx_set_umem_valid (and devx_handle_mkey_create for CREATE_MKEY):
 * the kernel sets the umem valid bits itself, so that a DevX object's
 * buffers are always umems (the firmware never takes a PAS list from user
 * space). Of the commands it amends, those the device models: CREATE_CQ
 * (cq_umem_valid, cqc.dbr_umem_valid), CREATE_QP (qpc.dbr_umem_valid,
 * wq_umem_valid), CREATE_MKEY unless KLM/KSM (mkey_umem_valid). A field
 * the mailbox is too short to hold is left to the firmware's length check.
 */
static int
set_umem_valid(void *in, size_t inlen)
{
	uint16_t op = (uint16_t)PRM_GET(cmd_in, in, opcode);
	size_t bits = inlen * 8;

	switch (op) {
	case PRM_CMD_CREATE_CQ: {
		void *cqc = PRM_ADDR(create_cq_in, in, cq_context);

		if (bits > PRM_OFF(create_cq_in, cq_umem_valid))
			PRM_SET(create_cq_in, in, cq_umem_valid, 1);
		if (bits > PRM_OFF(create_cq_in, cq_context) + PRM_OFF(cqc, dbr_umem_valid))
			PRM_SET(cqc, cqc, dbr_umem_valid, 1);
		break;
	}
	case PRM_CMD_CREATE_QP: {
		void *qpc = PRM_ADDR(create_qp_in, in, qpc);

		if (bits > PRM_OFF(create_qp_in, qpc) + PRM_OFF(qpc, dbr_umem_valid))
			PRM_SET(qpc, qpc, dbr_umem_valid, 1);
		if (bits > PRM_OFF(create_qp_in, wq_umem_valid))
			PRM_SET(create_qp_in, in, wq_umem_valid, 1);
		break;
	}
	case PRM_CMD_CREATE_MKEY: {
		void *mkc = PRM_ADDR(create_mkey_in, in, mkc);
		unsigned int mode;

		/* devx_handle_mkey_create: the whole mkey context, else EINVAL. */
		if (inlen < PRM_OFF(create_mkey_in, mkc) / 8 + PRM_SIZE(mkc))
			return -EINVAL;
		mode = (unsigned int)(PRM_GET(mkc, mkc, access_mode_1_0) |
				      PRM_GET(mkc, mkc, access_mode_4_2) << 2);
		if (mode != PRM_MKC_ACCESS_MODE_KLM && mode != PRM_MKC_ACCESS_MODE_KSM)
			PRM_SET(create_mkey_in, in, mkey_umem_valid, 1);
		break;
	}
	default:
		break;
	}
	return 0;
}

int
emu_kernel_cmd(struct emu_dev *dev, enum emu_kentry e, const void *in, size_t inlen,
	       const struct emu_kobj *obj, void *out, size_t outlen)
{
	uint8_t small[1024];
	void *copy;
	int rc = emu_kernel_check(dev, e, in, inlen, obj);

	if (rc < 0)
		return rc;
	if (e != EMU_KENTRY_CREATE && e != EMU_KENTRY_MODIFY)
		return emu_cmd(dev, in, inlen, out, outlen);
	/* uverbs copies the mailbox in (UA_ALLOC_AND_COPY); the kernel amends its copy. */
	copy = inlen <= sizeof(small) ? small : malloc(inlen);
	if (copy == NULL)
		return -ENOMEM;
	memcpy(copy, in, inlen);
	rc = set_umem_valid(copy, inlen);
	if (rc < 0)
		(void)refuse(dev, e, (uint16_t)PRM_GET(cmd_in, in, opcode),
			     "devx_handle_mkey_create()", "mailbox shorter than the mkey context");
	else
		rc = emu_cmd(dev, copy, inlen, out, outlen);
	if (copy != small)
		free(copy);
	return rc;
}

/* devx.c is_legacy_obj_event_num(): what a device without event_cap offers per object. */
static bool
is_legacy_obj_event(uint16_t ev)
{
	switch (ev) {
	case 0x00: /* COMP */
	case 0x01: /* PATH_MIG */
	case 0x02: /* COMM_EST */
	case 0x03: /* SQ_DRAINED */
	case 0x04: /* CQ_ERROR */
	case 0x05: /* WQ_CATAS_ERROR */
	case 0x07: /* PATH_MIG_FAILED */
	case 0x10: /* WQ_INVAL_REQ_ERROR */
	case 0x11: /* WQ_ACCESS_ERROR */
	case 0x12: /* SRQ_CATAS_ERROR */
	case 0x13: /* SRQ_LAST_WQE */
	case 0x14: /* SRQ_RQ_LIMIT */
	case 0x18: /* XRQ_ERROR */
	case 0x1c: /* DCT_DRAINED */
	case 0x1d: /* DCT_KEY_VIOLATION */
		return true;
	default:
		return false;
	}
}

int
emu_kernel_check_subscribe(struct emu_dev *dev, const struct emu_kobj *obj, const uint16_t *ev,
			   size_t n)
{
	uint8_t cap[PRM_SIZE(device_event_cap)];
	const struct emu_caps *caps = &dev->prof->caps;
	size_t i;

	/* MAX_NUM_EVENTS in one subscription. */
	if (n == 0 || n > 16) {
		emu_log(dev, 3, "kernel: subscription of %zu events refused (EINVAL): 1 to 16 "
			"(Linux devx.c MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT, MAX_NUM_EVENTS)", n);
		return -EINVAL;
	}
	memset(cap, 0, sizeof(cap));
	PRM_SET(device_event_cap, cap, user_affiliated_events, caps->user_affiliated_events);
	for (i = 0; i < n; i++) {
		const char *why = NULL;

		if (ev[i] > 255)
			why = "past MAX_SUPP_EVENT_NUM (255)";
		else if (!caps->event_cap && !is_legacy_obj_event(ev[i]))
			why = "the device has no event_cap and it is not a legacy object event "
			      "(is_valid_events_legacy)";
		else if (caps->event_cap && ev[i] != PRM_EVENT_COMPLETION &&
			 !prm_event_mask_has(cap, PRM_OFF(device_event_cap, user_affiliated_events),
					     ev[i]))
			why = "not in the device's user_affiliated_events";
		if (why != NULL) {
			emu_log(dev, 3, "kernel: subscription to event 0x%x of object 0x%x "
				"(creator 0x%x) refused (EINVAL): %s (Linux devx.c "
				"is_valid_events)", ev[i], obj->id, obj->create_opcode, why);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * ibv_alloc_pd / ibv_dealloc_pd: the kernel's mlx5_ib_alloc_pd executes
 * ALLOC_PD (DEALLOC_PD) itself; the PD is counted as a live object like
 * any other. Returns 0 or the firmware's status, with *syndrome.
 */
static int
kernel_cmd(struct emu_dev *dev, const void *in, size_t inlen, void *out, size_t outlen,
	   uint32_t *syndrome)
{
	int st;

	if (emu_cmd(dev, in, inlen, out, outlen) < 0) {
		*syndrome = EMU_SYND_BAD_OUTPUT_LEN;
		return PRM_STATUS_INTERNAL_ERR;
	}
	st = (int)PRM_GET(cmd_out, out, status);
	*syndrome = (uint32_t)PRM_GET(cmd_out, out, syndrome);
	return st;
}

int
emu_kernel_alloc_pd(struct emu_dev *dev, uint32_t *pdn, uint32_t *syndrome)
{
	uint8_t in[PRM_SIZE(alloc_pd_in)];
	uint8_t out[PRM_SIZE(create_out)];
	int st;

	memset(in, 0, sizeof(in));
	PRM_SET(alloc_pd_in, in, opcode, PRM_CMD_ALLOC_PD);
	st = kernel_cmd(dev, in, sizeof(in), out, sizeof(out), syndrome);
	if (st == PRM_STATUS_OK)
		*pdn = (uint32_t)PRM_GET(create_out, out, id);
	return st;
}

int
emu_kernel_dealloc_pd(struct emu_dev *dev, uint32_t pdn, uint32_t *syndrome)
{
	uint8_t in[PRM_SIZE(dealloc_pd_in)];
	uint8_t out[PRM_SIZE(destroy_out)];

	memset(in, 0, sizeof(in));
	PRM_SET(dealloc_pd_in, in, opcode, PRM_CMD_DEALLOC_PD);
	PRM_SET(dealloc_pd_in, in, pd, pdn);
	return kernel_cmd(dev, in, sizeof(in), out, sizeof(out), syndrome);
}

/*
 * ibv_alloc_null_mr: rdma-core's mlx5 provider hands out the context's
 * dump-fill mkey, which the kernel read with QUERY_SPECIAL_CONTEXTS when the
 * context was created (it is not a DevX command: user space cannot send it).
 */
int
emu_kernel_null_mkey(struct emu_dev *dev, uint32_t *mkey, uint32_t *syndrome)
{
	uint8_t in[PRM_SIZE(query_special_contexts_in)];
	uint8_t out[PRM_SIZE(query_special_contexts_out)];
	int st;

	memset(in, 0, sizeof(in));
	PRM_SET(query_special_contexts_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	st = kernel_cmd(dev, in, sizeof(in), out, sizeof(out), syndrome);
	if (st == PRM_STATUS_OK)
		*mkey = (uint32_t)PRM_GET(query_special_contexts_out, out, dump_fill_mkey);
	return st;
}

/*
 * The destroy mailbox the kernel builds at create time for a DevX object
 * (devx.c devx_obj_build_destroy_cmd) and sends on mlx5dv_devx_obj_destroy.
 */
int
emu_kernel_destroy_cmd(const void *in, size_t inlen, const struct emu_kobj *k, void *din,
		       size_t dinsize, size_t *dinlen)
{
	int dop = destroy_opcode(k->create_opcode);

	if (dop < 0 || dinsize < 64)
		return -EINVAL;
	memset(din, 0, dinsize);
	switch (k->create_opcode) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
		PRM_SET(general_obj_in_cmd_hdr, din, opcode, dop);
		PRM_SET(general_obj_in_cmd_hdr, din, obj_type, k->obj_type);
		PRM_SET(general_obj_in_cmd_hdr, din, obj_id, k->id);
		*dinlen = PRM_SIZE(general_obj_in_cmd_hdr);
		return 0;
	case PRM_CMD_CREATE_FLOW_TABLE:
		PRM_SET(destroy_flow_table_in, din, opcode, dop);
		PRM_SET(destroy_flow_table_in, din, table_type,
			PRM_GET(create_flow_table_in, in, table_type));
		PRM_SET(destroy_flow_table_in, din, table_id, k->id);
		*dinlen = PRM_SIZE(destroy_flow_table_in);
		return 0;
	case PRM_CMD_CREATE_FLOW_GROUP:
		PRM_SET(destroy_flow_group_in, din, opcode, dop);
		PRM_SET(destroy_flow_group_in, din, table_type,
			PRM_GET(create_flow_group_in, in, table_type));
		PRM_SET(destroy_flow_group_in, din, table_id,
			PRM_GET(create_flow_group_in, in, table_id));
		PRM_SET(destroy_flow_group_in, din, group_id, k->id);
		*dinlen = PRM_SIZE(destroy_flow_group_in);
		return 0;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		PRM_SET(delete_fte_in, din, opcode, dop);
		PRM_SET(delete_fte_in, din, table_type, PRM_GET(set_fte_in, in, table_type));
		PRM_SET(delete_fte_in, din, table_id, PRM_GET(set_fte_in, in, table_id));
		PRM_SET(delete_fte_in, din, flow_index, k->id);
		*dinlen = PRM_SIZE(delete_fte_in);
		return 0;
	default:
		PRM_SET(destroy_in, din, opcode, dop);
		PRM_SET(destroy_in, din, id, k->id);
		*dinlen = PRM_SIZE(destroy_in);
		return 0;
	}
}
