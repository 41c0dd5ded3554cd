/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Command interface of the emulated firmware: envelope validation, fault
 * injection, dispatch to the object families and the charge of the cost
 * model. The order of the checks follows what a driver can observe of
 * the firmware: lengths, then opcode, then object type, then the body.
 */
#include <errno.h>
#include <string.h>

#include "emu_priv.h"

struct cmd_desc {
	uint16_t opcode;
	enum emu_cost_id cost;    /* default entry; handlers may refine it */
	size_t min_in;            /* 0: ask the family (net layouts) */
	size_t min_out;
	emu_handler_t fn;
};

static int query_hca_cap(struct emu_ctx *c);

static const struct cmd_desc cmd_table[] = {
	{ PRM_CMD_QUERY_HCA_CAP, EMU_COST_QUERY_HCA_CAP, PRM_SIZE(query_hca_cap_in),
	  PRM_SIZE(query_hca_cap_out), query_hca_cap },
	{ PRM_CMD_QUERY_SPECIAL_CONTEXTS, EMU_COST_QUERY_SPECIAL_CONTEXTS,
	  PRM_SIZE(query_special_contexts_in), PRM_SIZE(query_special_contexts_out),
	  emu_query_special_contexts },
	{ PRM_CMD_CREATE_MKEY, EMU_COST_CREATE_MKEY_DIRECT, PRM_SIZE(create_mkey_in),
	  PRM_SIZE(create_mkey_out), emu_mkey_create },
	{ PRM_CMD_DESTROY_MKEY, EMU_COST_DESTROY_MKEY, PRM_SIZE(destroy_mkey_in),
	  PRM_SIZE(destroy_out), emu_mkey_destroy },
	{ PRM_CMD_ALLOC_PD, EMU_COST_ALLOC_PD, 0, 0, emu_net_alloc_pd },
	{ PRM_CMD_DEALLOC_PD, EMU_COST_DEALLOC_PD, 0, 0, emu_net_dealloc_pd },
	{ PRM_CMD_ALLOC_TRANSPORT_DOMAIN, EMU_COST_ALLOC_TRANSPORT_DOMAIN, 0, 0,
	  emu_net_alloc_td },
	{ PRM_CMD_DEALLOC_TRANSPORT_DOMAIN, EMU_COST_DEALLOC_TRANSPORT_DOMAIN, 0, 0,
	  emu_net_dealloc_td },
	{ PRM_CMD_CREATE_TIS, EMU_COST_CREATE_TIS, 0, 0, emu_net_create_tis },
	{ PRM_CMD_DESTROY_TIS, EMU_COST_DESTROY_TIS, 0, 0, emu_net_destroy_tis },
	{ PRM_CMD_CREATE_RQT, EMU_COST_CREATE_RQT, 0, 0, emu_net_create_rqt },
	{ PRM_CMD_MODIFY_RQT, EMU_COST_MODIFY_RQT, 0, 0, emu_net_modify_rqt },
	{ PRM_CMD_DESTROY_RQT, EMU_COST_DESTROY_RQT, 0, 0, emu_net_destroy_rqt },
	{ PRM_CMD_CREATE_TIR, EMU_COST_CREATE_TIR, 0, 0, emu_net_create_tir },
	{ PRM_CMD_DESTROY_TIR, EMU_COST_DESTROY_TIR, 0, 0, emu_net_destroy_tir },
	{ PRM_CMD_CREATE_FLOW_TABLE, EMU_COST_CREATE_FLOW_TABLE, 0, 0, emu_net_create_ft },
	{ PRM_CMD_DESTROY_FLOW_TABLE, EMU_COST_DESTROY_FLOW_OBJECT, 0, 0, emu_net_destroy_ft },
	{ PRM_CMD_CREATE_FLOW_GROUP, EMU_COST_CREATE_FLOW_GROUP, 0, 0, emu_net_create_fg },
	{ PRM_CMD_DESTROY_FLOW_GROUP, EMU_COST_DESTROY_FLOW_OBJECT, 0, 0, emu_net_destroy_fg },
	{ PRM_CMD_SET_FLOW_TABLE_ENTRY, EMU_COST_SET_FLOW_TABLE_ENTRY, 0, 0, emu_net_set_fte },
	{ PRM_CMD_DELETE_FLOW_TABLE_ENTRY, EMU_COST_DESTROY_FLOW_OBJECT, 0, 0,
	  emu_net_delete_fte },
	{ PRM_CMD_CREATE_CQ, EMU_COST_CREATE_CQ, 0, 0, emu_net_create_cq },
	{ PRM_CMD_DESTROY_CQ, EMU_COST_DESTROY_CQ, 0, 0, emu_net_destroy_cq },
	{ PRM_CMD_CREATE_QP, EMU_COST_CREATE_QP, 0, 0, emu_net_create_qp },
	{ PRM_CMD_DESTROY_QP, EMU_COST_DESTROY_QP, 0, 0, emu_net_destroy_qp },
	{ PRM_CMD_RST2INIT_QP, EMU_COST_QP_TRANSITION, 0, 0, emu_net_qp_transition },
	{ PRM_CMD_INIT2RTR_QP, EMU_COST_QP_TRANSITION, 0, 0, emu_net_qp_transition },
	{ PRM_CMD_RTR2RTS_QP, EMU_COST_QP_TRANSITION, 0, 0, emu_net_qp_transition },
	{ PRM_CMD_2RST_QP, EMU_COST_QP_TRANSITION, 0, 0, emu_net_qp_transition },
	/* General objects: header only here, the object type decides the rest. */
	{ PRM_CMD_CREATE_GENERAL_OBJECT, EMU_COST_NONE, PRM_SIZE(general_obj_in_cmd_hdr),
	  PRM_SIZE(general_obj_out_cmd_hdr), NULL },
	{ PRM_CMD_MODIFY_GENERAL_OBJECT, EMU_COST_NONE, PRM_SIZE(general_obj_in_cmd_hdr),
	  PRM_SIZE(general_obj_out_cmd_hdr), NULL },
	{ PRM_CMD_QUERY_GENERAL_OBJECT, EMU_COST_NONE, PRM_SIZE(general_obj_in_cmd_hdr),
	  PRM_SIZE(general_obj_out_cmd_hdr), NULL },
	{ PRM_CMD_DESTROY_GENERAL_OBJECT, EMU_COST_NONE, PRM_SIZE(general_obj_in_cmd_hdr),
	  PRM_SIZE(general_obj_out_cmd_hdr), NULL },
};

struct gen_desc {
	uint16_t opcode;
	uint16_t obj_type;
	enum emu_cost_id cost;
	size_t min_in;
	size_t min_out;
	emu_handler_t fn;
};

static const struct gen_desc gen_table[] = {
	{ PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, EMU_COST_CREATE_VIRTQ,
	  PRM_SIZE(virtq_cmd), PRM_SIZE(general_obj_out_cmd_hdr), emu_virtq_create },
	{ PRM_CMD_MODIFY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, EMU_COST_MODIFY_VIRTQ_FIELDS,
	  PRM_SIZE(virtq_cmd), PRM_SIZE(general_obj_out_cmd_hdr), emu_virtq_modify },
	{ PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, EMU_COST_QUERY_VIRTQ,
	  PRM_SIZE(general_obj_in_cmd_hdr), PRM_SIZE(virtq_cmd), emu_virtq_query },
	{ PRM_CMD_DESTROY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, EMU_COST_DESTROY_VIRTQ,
	  PRM_SIZE(general_obj_in_cmd_hdr), PRM_SIZE(general_obj_out_cmd_hdr),
	  emu_virtq_destroy },
	/* Counters carry no creation parameters: the header is enough. */
	{ PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, EMU_COST_CREATE_VIRTQ_COUNTERS,
	  PRM_SIZE(general_obj_in_cmd_hdr), PRM_SIZE(general_obj_out_cmd_hdr),
	  emu_counters_create },
	{ PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, EMU_COST_QUERY_VIRTQ_COUNTERS,
	  PRM_SIZE(general_obj_in_cmd_hdr), PRM_SIZE(virtq_counters_cmd), emu_counters_query },
	{ PRM_CMD_DESTROY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS,
	  EMU_COST_DESTROY_VIRTQ_COUNTERS, PRM_SIZE(general_obj_in_cmd_hdr),
	  PRM_SIZE(general_obj_out_cmd_hdr), emu_counters_destroy },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct cmd_desc *
find_cmd(uint16_t opcode)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(cmd_table); i++)
		if (cmd_table[i].opcode == opcode)
			return &cmd_table[i];
	return NULL;
}

static bool
is_general(uint16_t opcode)
{
	return opcode >= PRM_CMD_CREATE_GENERAL_OBJECT &&
	       opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT;
}

/* ---- QUERY_HCA_CAP --------------------------------------------------------- */
/*
 * Virtio emulation caps of a CX6 Dx; the umem a/b are the emulator's choice;
 * the profile's caps override the ones a driver must have fallbacks for.
 * dev->lock held: the umem parameters are the device's current ones.
 */
static void
virtio_caps(const struct emu_dev *dev, void *cap)
{
	const struct emu_caps *caps = &dev->prof->caps;

	PRM_SET(virtio_emulation_cap, cap, eth_frame_offload_type, EMU_CAP_ETH_FRAME_OFFLOAD);
	PRM_SET(virtio_emulation_cap, cap, desc_tunnel_offload_type, EMU_CAP_DESC_TUNNEL_OFFLOAD);
	PRM_SET(virtio_emulation_cap, cap, max_tunnel_desc, EMU_CAP_MAX_TUNNEL_DESC);
	PRM_SET(virtio_emulation_cap, cap, virtio_version_1_0, caps->virtio_version_1_0);
	PRM_SET(virtio_emulation_cap, cap, device_features_bits_mask,
		caps->device_features_bits_mask);
	PRM_SET(virtio_emulation_cap, cap, event_mode, caps->event_mode);
	PRM_SET(virtio_emulation_cap, cap, virtio_queue_type, EMU_CAP_QUEUE_TYPES);
	PRM_SET(virtio_emulation_cap, cap, log_doorbell_stride, EMU_CAP_LOG_DOORBELL_STRIDE);
	PRM_SET(virtio_emulation_cap, cap, vnet_modify_ext, caps->vnet_modify_ext);
	PRM_SET(virtio_emulation_cap, cap, virtio_net_q_addr_modify,
		caps->virtio_net_q_addr_modify);
	PRM_SET(virtio_emulation_cap, cap, virtio_q_index_modify, caps->virtio_q_index_modify);
	PRM_SET(virtio_emulation_cap, cap, log_doorbell_bar_size, EMU_CAP_LOG_DOORBELL_BAR_SIZE);
	PRM_SET(virtio_emulation_cap, cap, doorbell_bar_offset, caps->doorbell_bar_offset);
	PRM_SET(virtio_emulation_cap, cap, max_num_virtio_queues, caps->max_num_virtio_queues);
	PRM_SET(virtio_emulation_cap, cap, desc_group_mkey_supported, EMU_CAP_DESC_GROUP_MKEY);
	PRM_SET(virtio_emulation_cap, cap, freeze_to_rdy_supported,
		caps->freeze_to_rdy_supported);
	PRM_SET(virtio_emulation_cap, cap, umem_1_buffer_param_a, dev->umem_a[0]);
	PRM_SET(virtio_emulation_cap, cap, umem_1_buffer_param_b, dev->umem_b[0]);
	PRM_SET(virtio_emulation_cap, cap, umem_2_buffer_param_a, dev->umem_a[1]);
	PRM_SET(virtio_emulation_cap, cap, umem_2_buffer_param_b, dev->umem_b[1]);
	PRM_SET(virtio_emulation_cap, cap, umem_3_buffer_param_a, dev->umem_a[2]);
	PRM_SET(virtio_emulation_cap, cap, umem_3_buffer_param_b, dev->umem_b[2]);
}

static int
query_hca_cap(struct emu_ctx *c)
{
	uint16_t op_mod = (uint16_t)PRM_GET(query_hca_cap_in, c->in, op_mod);
	void *cap = PRM_ADDR(query_hca_cap_out, c->out, capability);

	switch (op_mod >> 1) {
	case PRM_CAP_VIRTIO_EMULATION:
		virtio_caps(c->dev, cap);
		return PRM_STATUS_OK;
	case PRM_CAP_GENERAL:
		emu_net_general_caps(&c->dev->prof->caps, cap);
		return PRM_STATUS_OK;
	case PRM_CAP_NIC_FLOW_TABLE:
		emu_net_flow_caps(cap);
		return PRM_STATUS_OK;
	case PRM_CAP_ROCE:
		/* Only with cmd_hca_cap.roce. */
		if (!c->dev->prof->caps.roce)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		PRM_SET(roce_cap, cap, qp_ts_format, c->dev->prof->caps.qp_ts_format);
		return PRM_STATUS_OK;
	case PRM_CAP_DEV_EVENT:
		/* Only with event_cap (Linux mlx5_core queries it only then). */
		if (!c->dev->prof->caps.event_cap)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		PRM_SET(device_event_cap, cap, user_affiliated_events,
			c->dev->prof->caps.user_affiliated_events);
		return PRM_STATUS_OK;
	default:
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
}

/* ---- Dispatch ---------------------------------------------------------------- */
static void
write_header(void *out, int status, uint32_t syndrome)
{
	PRM_SET(cmd_out, out, status, status);
	PRM_SET(cmd_out, out, syndrome, status != 0 ? syndrome : 0);
}

static double
charged_us(const struct emu_ctx *c, int status)
{
	double us = 0;
	int i;

	for (i = 0; i < 2; i++) {
		if (c->cost[i] == EMU_COST_NONE)
			continue;
		/* A rejected command still occupies the slot for the base time. */
		us += status == PRM_STATUS_OK ?
		      emu_cost_us(c->dev->prof, c->cost[i], c->gib, c->entries) :
		      emu_cost_base_us(c->dev->prof, c->cost[i]);
	}
	return us;
}

int
emu_cmd(struct emu_dev *dev, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct emu_ctx c = {
		.dev = dev, .in = in, .inlen = inlen, .out = out, .outlen = outlen,
		.cost = { EMU_COST_NONE, EMU_COST_NONE },
	};
	const struct cmd_desc *d;
	emu_handler_t fn;
	size_t min_in, min_out;
	uint64_t t0 = 0;
	bool slot = false;
	int status;

	if (dev == NULL || out == NULL || outlen < EMU_MIN_OUTLEN)
		return -EINVAL;
	memset(out, 0, outlen);
	if (in == NULL || inlen < EMU_MIN_INLEN) {
		write_header(out, PRM_STATUS_BAD_INPUT_LEN, EMU_SYND_BAD_INPUT_LEN);
		return 0;
	}
	c.opcode = (uint16_t)PRM_GET(cmd_in, in, opcode);
	if (c.opcode < EMU_OPCODE_SLOTS)
		atomic_fetch_add(&dev->cmd_count[c.opcode], 1);
	d = find_cmd(c.opcode);
	if (d == NULL) {
		write_header(out, PRM_STATUS_BAD_OP, EMU_SYND_BAD_OPCODE);
		return 0;
	}
	c.cost[0] = d->cost;
	fn = d->fn;
	min_in = d->min_in != 0 ? d->min_in : emu_net_min_inlen(c.opcode);
	min_out = d->min_out != 0 ? d->min_out : emu_net_min_outlen(c.opcode);
	if (is_general(c.opcode)) {
		size_t i;

		c.obj_type = (uint16_t)PRM_GET(general_obj_in_cmd_hdr, in, obj_type);
		for (i = 0; i < ARRAY_LEN(gen_table); i++) {
			if (gen_table[i].opcode == c.opcode &&
			    gen_table[i].obj_type == c.obj_type)
				break;
		}
		if (i == ARRAY_LEN(gen_table)) {
			write_header(out, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_OBJ_TYPE);
			return 0;
		}
		c.cost[0] = gen_table[i].cost;
		fn = gen_table[i].fn;
		min_in = gen_table[i].min_in;
		min_out = gen_table[i].min_out;
	}
	if (inlen < min_in) {
		emu_slot_hold(dev, emu_cost_base_us(dev->prof, c.cost[0]));
		write_header(out, PRM_STATUS_BAD_INPUT_LEN, EMU_SYND_BAD_INPUT_LEN);
		return 0;
	}
	if (outlen < min_out) {
		emu_slot_hold(dev, emu_cost_base_us(dev->prof, c.cost[0]));
		write_header(out, PRM_STATUS_BAD_OUTPUT_LEN, EMU_SYND_BAD_OUTPUT_LEN);
		return 0;
	}

	/* An injected fault replaces the command: no execution, no cost. */
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, c.opcode, c.obj_type, is_general(c.opcode), &c.syndrome);
	pthread_mutex_unlock(&dev->lock);
	if (status != 0) {
		emu_log(dev, 6, "injected fault: opcode 0x%x status 0x%x syndrome 0x%x",
			c.opcode, status, c.syndrome);
		write_header(out, status, c.syndrome);
		return 0;
	}

	/*
	 * Take a slot first, so that the command executes when the firmware
	 * would start it; sleep to the end of its modelled time outside the
	 * device lock, so that commands in other slots overlap.
	 */
	if (!dev->prof->zero_cost) {
		emu_slot_get(dev);
		slot = true;
		t0 = emu_now_ns();
	}
	pthread_mutex_lock(&dev->lock);
	status = fn(&c);
	pthread_mutex_unlock(&dev->lock);
	if (slot) {
		emu_slot_sleep(dev, t0, charged_us(&c, status));
		emu_slot_put(dev);
	}
	if (status != PRM_STATUS_OK)
		memset(out, 0, outlen);
	write_header(out, status, c.syndrome);
	return 0;
}
