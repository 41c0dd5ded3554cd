/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PRM layouts: every command and object mlx5-lm sends or the emulated device
 * decodes. Offsets and widths are bits (see prm.h). The facts come from the
 * public mlx5 interface headers (Linux include/linux/mlx5/mlx5_ifc.h); a
 * layout's name is the PRM structure's name without the mlx5_ifc_ prefix.
 *
 * Included from prm.h; do not include directly.
 */
#ifndef MLX5_LM_PRM_LAYOUTS_H
#define MLX5_LM_PRM_LAYOUTS_H

/* ---- Opcodes ------------------------------------------------------------ */
enum prm_opcode {
	PRM_CMD_QUERY_HCA_CAP = 0x100,
	PRM_CMD_CREATE_MKEY = 0x200,
	PRM_CMD_DESTROY_MKEY = 0x202,
	PRM_CMD_QUERY_SPECIAL_CONTEXTS = 0x203,
	PRM_CMD_CREATE_CQ = 0x400,
	PRM_CMD_DESTROY_CQ = 0x401,
	PRM_CMD_CREATE_QP = 0x500,
	PRM_CMD_DESTROY_QP = 0x501,
	PRM_CMD_RST2INIT_QP = 0x502,
	PRM_CMD_INIT2RTR_QP = 0x503,
	PRM_CMD_RTR2RTS_QP = 0x504,
	PRM_CMD_2RST_QP = 0x50a,
	PRM_CMD_ALLOC_PD = 0x800,
	PRM_CMD_DEALLOC_PD = 0x801,
	PRM_CMD_ALLOC_TRANSPORT_DOMAIN = 0x816,
	PRM_CMD_DEALLOC_TRANSPORT_DOMAIN = 0x817,
	PRM_CMD_CREATE_TIR = 0x900,
	PRM_CMD_DESTROY_TIR = 0x902,
	PRM_CMD_CREATE_TIS = 0x912,
	PRM_CMD_DESTROY_TIS = 0x914,
	PRM_CMD_CREATE_RQT = 0x916,
	PRM_CMD_MODIFY_RQT = 0x917,
	PRM_CMD_DESTROY_RQT = 0x918,
	PRM_CMD_CREATE_FLOW_TABLE = 0x930,
	PRM_CMD_DESTROY_FLOW_TABLE = 0x931,
	PRM_CMD_CREATE_FLOW_GROUP = 0x933,
	PRM_CMD_DESTROY_FLOW_GROUP = 0x934,
	PRM_CMD_SET_FLOW_TABLE_ENTRY = 0x936,
	PRM_CMD_DELETE_FLOW_TABLE_ENTRY = 0x938,
	PRM_CMD_CREATE_GENERAL_OBJECT = 0xa00,
	PRM_CMD_MODIFY_GENERAL_OBJECT = 0xa01,
	PRM_CMD_QUERY_GENERAL_OBJECT = 0xa02,
	PRM_CMD_DESTROY_GENERAL_OBJECT = 0xa03,
	PRM_CMD_CREATE_UCTX = 0xa04,
	PRM_CMD_CREATE_UMEM = 0xa08,
	/* What the kernel issues for mlx5dv_devx_alloc_uar (fault injection key). */
	PRM_CMD_ALLOC_UAR = 0x802,
	PRM_CMD_DEALLOC_UAR = 0x803,
	PRM_CMD_DESTROY_UMEM = 0xa0a,
};

/*
 * The creators whose output is create_out: the new object's number in its
 * `id` field (general objects answer with general_obj_out_cmd_hdr instead).
 */
static inline int
prm_opcode_is_create_out(uint16_t opcode)
{
	switch (opcode) {
	case PRM_CMD_CREATE_MKEY:
	case PRM_CMD_CREATE_CQ:
	case PRM_CMD_CREATE_QP:
	case PRM_CMD_ALLOC_PD:
	case PRM_CMD_ALLOC_TRANSPORT_DOMAIN:
	case PRM_CMD_CREATE_TIR:
	case PRM_CMD_CREATE_TIS:
	case PRM_CMD_CREATE_RQT:
	case PRM_CMD_CREATE_FLOW_TABLE:
	case PRM_CMD_CREATE_FLOW_GROUP:
		return 1;
	default:
		return 0;
	}
}

/*
 * Command status values (out.status), as the public headers number them
 * (Linux include/linux/mlx5/device.h MLX5_CMD_STAT_*).
 */
enum prm_status {
	PRM_STATUS_OK = 0x00,
	PRM_STATUS_INTERNAL_ERR = 0x01,
	PRM_STATUS_BAD_OP = 0x02,
	PRM_STATUS_BAD_PARAM = 0x03,
	PRM_STATUS_BAD_SYS_STATE = 0x04,
	PRM_STATUS_BAD_RES = 0x05,
	PRM_STATUS_RES_BUSY = 0x06,
	PRM_STATUS_NOT_READY = 0x07,
	PRM_STATUS_EXCEED_LIM = 0x08,
	PRM_STATUS_BAD_RES_STATE = 0x09,
	PRM_STATUS_BAD_INDEX = 0x0a,
	PRM_STATUS_NO_RESOURCES = 0x0f,
	PRM_STATUS_BAD_QP_STATE = 0x10,
	PRM_STATUS_BAD_PKT = 0x30,
	PRM_STATUS_BAD_SIZE_OUTS_CQES = 0x40,
	PRM_STATUS_BAD_INPUT_LEN = 0x50,
	PRM_STATUS_BAD_OUTPUT_LEN = 0x51,
};

/* General object types (obj_type of the general-object commands). */
enum prm_obj_type {
	PRM_OBJ_VIRTIO_NET_Q = 0x000d,
	PRM_OBJ_VIRTIO_Q_COUNTERS = 0x001c,
};

/* QUERY_HCA_CAP op_mod = cap_type << 1 | current. */
enum prm_cap_type {
	PRM_CAP_GENERAL = 0x00,
	PRM_CAP_VIRTIO_EMULATION = 0x13,
};
#define PRM_HCA_CAP_OP_MOD(type, cur) ((uint16_t)(((type) << 1) | ((cur) ? 1 : 0)))

/* Asynchronous event types delivered on a DevX event channel. */
enum prm_event_type {
	PRM_EVENT_COMPLETION = 0x00,
	PRM_EVENT_CQ_ERROR = 0x04,           /* CQ overrun or access error */
	PRM_EVENT_WQ_CATAS_ERROR = 0x05,     /* a QP went to ERR on its own */
	PRM_EVENT_OBJECT_CHANGE = 0x27,
};

/*
 * An event queue entry as the device writes it and as the kernel hands it
 * to a DevX event channel's reader, after the 8-byte cookie (Linux devx.c
 * deliver_event copies the whole struct mlx5_eqe; devx_async_event_read
 * returns cookie + sizeof(struct mlx5_eqe), include/linux/mlx5/device.h):
 * type at byte 1, sub_type at byte 3, the event data (union ev_data,
 * 7 dwords) at byte 32, signature and owner in the last dword.
 */
PRM_FIELD(eqe, event_type, 0x008, 8);
PRM_FIELD(eqe, event_sub_type, 0x018, 8);
PRM_SUB(eqe, event_data, 0x100);			/* eqe_comp, affiliated_event_header */
PRM_FIELD(eqe, signature, 0x1f0, 8);
PRM_FIELD(eqe, owner, 0x1f8, 8);
PRM_LAYOUT(eqe, 0x200);
_Static_assert(PRM_SIZE(eqe) == 64, "eqe is 64 bytes");
_Static_assert(PRM_OFF(eqe, event_data) / 8 == 32, "EQE data at byte 32");

/* A completion's data (struct mlx5_eqe_comp): the CQ number in its 7th dword, 24 bits. */
PRM_FIELD(eqe_comp, cqn, 0x0c8, 24);
PRM_LAYOUT(eqe_comp, 0x0e0);
_Static_assert(PRM_SIZE(eqe_comp) == 28, "eqe_comp is 28 bytes");

/* A CQ error's data (struct mlx5_eqe_cq_err): the CQ number first, the syndrome at byte 11. */
PRM_FIELD(eqe_cq_err, cqn, 0x008, 24);
PRM_FIELD(eqe_cq_err, syndrome, 0x058, 8);
PRM_LAYOUT(eqe_cq_err, 0x0e0);
_Static_assert(PRM_SIZE(eqe_cq_err) == 28, "eqe_cq_err is 28 bytes");

/* eqe_qp_srq.type (Linux MLX5_EVENT_QUEUE_TYPE_*). */
enum prm_event_queue_type {
	PRM_EVENT_QUEUE_TYPE_QP = 0,
};

/* A QP/SRQ event's data (struct mlx5_eqe_qp_srq): type at byte 20, the number in dword 6. */
PRM_FIELD(eqe_qp_srq, type, 0x0a0, 8);
PRM_FIELD(eqe_qp_srq, qp_srq_n, 0x0c8, 24);
PRM_LAYOUT(eqe_qp_srq, 0x0e0);
_Static_assert(PRM_SIZE(eqe_qp_srq) == 28, "eqe_qp_srq is 28 bytes");

/*
 * The data of an affiliated event such as OBJECT_CHANGE (mlx5_ifc.h
 * affiliated_event_header; devx.c get_event_obj_type, devx_get_obj_id_from_event).
 */
PRM_FIELD(affiliated_event_header, obj_type, 0x10, 16);
PRM_FIELD(affiliated_event_header, obj_id, 0x20, 32);
PRM_LAYOUT(affiliated_event_header, 0x40);
_Static_assert(PRM_SIZE(affiliated_event_header) == 8, "affiliated_event_header is 8 bytes");

/* ---- Command envelope --------------------------------------------------- */
/* Every command input starts with this header. */
PRM_FIELD(cmd_in, opcode, 0x00, 16);
PRM_FIELD(cmd_in, uid, 0x10, 16);
PRM_FIELD(cmd_in, op_mod, 0x30, 16);
PRM_LAYOUT(cmd_in, 0x40);
_Static_assert(PRM_SIZE(cmd_in) == 8, "cmd_in is 8 bytes");

/* Every command output starts with this header. */
PRM_FIELD(cmd_out, status, 0x00, 8);
PRM_FIELD(cmd_out, syndrome, 0x20, 32);
PRM_LAYOUT(cmd_out, 0x40);
_Static_assert(PRM_SIZE(cmd_out) == 8, "cmd_out is 8 bytes");

/*
 * Commands that create a classic (non general) object return its 24-bit
 * number right after the header: pd, transport_domain, tisn, rqtn, tirn,
 * table_id, group_id, cqn, qpn and mkey_index all sit at 0x48.
 */
PRM_FIELD(create_out, status, 0x00, 8);
PRM_FIELD(create_out, syndrome, 0x20, 32);
PRM_FIELD(create_out, id, 0x48, 24);
PRM_LAYOUT(create_out, 0x80);
_Static_assert(PRM_SIZE(create_out) == 16, "create_out is 16 bytes");

/* Destroy/dealloc commands of classic objects name the object at 0x48. */
PRM_FIELD(destroy_in, opcode, 0x00, 16);
PRM_FIELD(destroy_in, uid, 0x10, 16);
PRM_FIELD(destroy_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_in, id, 0x48, 24);
PRM_LAYOUT(destroy_in, 0x80);
_Static_assert(PRM_SIZE(destroy_in) == 16, "destroy_in is 16 bytes");
PRM_LAYOUT(destroy_out, 0x80);
_Static_assert(PRM_SIZE(destroy_out) == 16, "destroy_out is 16 bytes");

/* ---- General objects ---------------------------------------------------- */
PRM_FIELD(general_obj_in_cmd_hdr, opcode, 0x00, 16);
PRM_FIELD(general_obj_in_cmd_hdr, uid, 0x10, 16);
PRM_FIELD(general_obj_in_cmd_hdr, vhca_tunnel_id, 0x20, 16);
PRM_FIELD(general_obj_in_cmd_hdr, obj_type, 0x30, 16);
PRM_FIELD(general_obj_in_cmd_hdr, obj_id, 0x40, 32);
PRM_LAYOUT(general_obj_in_cmd_hdr, 0x80);
_Static_assert(PRM_SIZE(general_obj_in_cmd_hdr) == 16, "general_obj_in_cmd_hdr is 16 bytes");

PRM_FIELD(general_obj_out_cmd_hdr, status, 0x00, 8);
PRM_FIELD(general_obj_out_cmd_hdr, syndrome, 0x20, 32);
PRM_FIELD(general_obj_out_cmd_hdr, obj_id, 0x40, 32);
PRM_LAYOUT(general_obj_out_cmd_hdr, 0x80);
_Static_assert(PRM_SIZE(general_obj_out_cmd_hdr) == 16, "general_obj_out_cmd_hdr is 16 bytes");

/* virtio_q context (inside virtio_net_q at 0x200). */
enum prm_virtq_type { PRM_VIRTQ_TYPE_SPLIT = 0, PRM_VIRTQ_TYPE_PACKED = 1 };
enum prm_virtq_event_mode {
	PRM_VIRTQ_EVENT_MODE_NONE = 0,
	PRM_VIRTQ_EVENT_MODE_QP = 1,
	PRM_VIRTQ_EVENT_MODE_MSIX = 2,
};
/* virtio_q offload_type (snap-rdma mlx5_ifc.h MLX5_VIRTIO_Q_OFFLOAD_TYPE_*); 2..15 reserved. */
enum prm_virtq_offload_type {
	PRM_VIRTQ_OFFLOAD_ETH_FRAME = 0,
	PRM_VIRTQ_OFFLOAD_DESC_TUNNEL = 1,
};
PRM_FIELD(virtio_q, virtio_q_type, 0x000, 8);
PRM_FIELD(virtio_q, event_mode, 0x00d, 3);
PRM_FIELD(virtio_q, queue_index, 0x010, 16);
PRM_FIELD(virtio_q, full_emulation, 0x020, 1);
PRM_FIELD(virtio_q, virtio_version_1_0, 0x021, 1);
PRM_FIELD(virtio_q, offload_type, 0x024, 4);
PRM_FIELD(virtio_q, event_qpn_or_msix, 0x028, 24);
PRM_FIELD(virtio_q, doorbell_stride_index, 0x040, 16);
PRM_FIELD(virtio_q, queue_size, 0x050, 16);
PRM_FIELD(virtio_q, device_emulation_id, 0x060, 32);
PRM_FIELD(virtio_q, desc_addr, 0x080, 64);
PRM_FIELD(virtio_q, used_addr, 0x0c0, 64);
PRM_FIELD(virtio_q, available_addr, 0x100, 64);
PRM_FIELD(virtio_q, virtio_q_mkey, 0x140, 32);
PRM_FIELD(virtio_q, max_tunnel_desc, 0x160, 16);
PRM_FIELD(virtio_q, error_type, 0x178, 8);
PRM_FIELD(virtio_q, umem_1_id, 0x180, 32);
PRM_FIELD(virtio_q, umem_1_size, 0x1a0, 32);
PRM_FIELD(virtio_q, umem_1_offset, 0x1c0, 64);
PRM_FIELD(virtio_q, umem_2_id, 0x200, 32);
PRM_FIELD(virtio_q, umem_2_size, 0x220, 32);
PRM_FIELD(virtio_q, umem_2_offset, 0x240, 64);
PRM_FIELD(virtio_q, umem_3_id, 0x280, 32);
PRM_FIELD(virtio_q, umem_3_size, 0x2a0, 32);
PRM_FIELD(virtio_q, umem_3_offset, 0x2c0, 64);
PRM_FIELD(virtio_q, counter_set_id, 0x300, 32);
PRM_FIELD(virtio_q, pd, 0x328, 24);
PRM_FIELD(virtio_q, queue_period_mode, 0x342, 2);
PRM_FIELD(virtio_q, queue_period_us, 0x344, 12);
PRM_FIELD(virtio_q, queue_max_count, 0x350, 16);
PRM_FIELD(virtio_q, desc_group_mkey, 0x360, 32);
PRM_LAYOUT(virtio_q, 0x400);
_Static_assert(PRM_SIZE(virtio_q) == 128, "virtio_q is 128 bytes");

/* virtio_net_q object: create / modify / query context. */
enum prm_virtq_state {
	PRM_VIRTQ_STATE_INIT = 0,
	PRM_VIRTQ_STATE_RDY = 1,
	PRM_VIRTQ_STATE_SUSPEND = 2,
	PRM_VIRTQ_STATE_ERR = 3,
};
PRM_FIELD(virtio_net_q, modify_field_select, 0x000, 64);
PRM_FIELD(virtio_net_q, vhca_id, 0x060, 16);
PRM_FIELD(virtio_net_q, queue_feature_bit_mask_12_3, 0x080, 10);
PRM_FIELD(virtio_net_q, dirty_bitmap_dump_enable, 0x08a, 1);
PRM_FIELD(virtio_net_q, vhost_log_page, 0x08b, 5);
PRM_FIELD(virtio_net_q, state, 0x09c, 4);
PRM_FIELD(virtio_net_q, queue_feature_bit_mask_2_0, 0x0a5, 3);
PRM_FIELD(virtio_net_q, tisn_or_qpn, 0x0a8, 24);
PRM_FIELD(virtio_net_q, dirty_bitmap_mkey, 0x0c0, 32);
PRM_FIELD(virtio_net_q, dirty_bitmap_size, 0x0e0, 32);
PRM_FIELD(virtio_net_q, dirty_bitmap_addr, 0x100, 64);
PRM_FIELD(virtio_net_q, hw_available_index, 0x140, 16);
PRM_FIELD(virtio_net_q, hw_used_index, 0x150, 16);
PRM_SUB(virtio_net_q, virtio_q_context, 0x200);
PRM_LAYOUT(virtio_net_q, 0x600);
_Static_assert(PRM_SIZE(virtio_net_q) == 192, "virtio_net_q is 192 bytes");

/* modify_field_select bits of virtio_net_q. */
enum prm_virtq_modify {
	PRM_VIRTQ_MODIFY_STATE = 1ull << 0,
	PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS = 1ull << 3,
	PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE = 1ull << 4,
	PRM_VIRTQ_MODIFY_QUEUE_PERIOD = 1ull << 5,
	PRM_VIRTQ_MODIFY_ADDRS = 1ull << 6,
	PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX = 1ull << 7,
	PRM_VIRTQ_MODIFY_HW_USED_INDEX = 1ull << 8,
	PRM_VIRTQ_MODIFY_Q_TYPE = 1ull << 9,
	PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0 = 1ull << 10,
	PRM_VIRTQ_MODIFY_Q_MKEY = 1ull << 11,
	PRM_VIRTQ_MODIFY_QUEUE_FEATURES = 1ull << 12,
	PRM_VIRTQ_MODIFY_EVENT_MODE = 1ull << 13,
	PRM_VIRTQ_MODIFY_DESC_GROUP_MKEY = 1ull << 14,
};
#define PRM_VIRTQ_MODIFY_ALL_KNOWN 0x7ff9ull

/* Feature bit mask positions (bit n of the 13-bit queue feature mask). */
enum prm_virtq_feature_bit {
	PRM_VIRTQ_FEAT_MRG_RXBUF = 2,
	PRM_VIRTQ_FEAT_HOST_ECN = 4,
	PRM_VIRTQ_FEAT_GUEST_ECN = 6,
	PRM_VIRTQ_FEAT_GUEST_TSO6 = 7,
	PRM_VIRTQ_FEAT_GUEST_TSO4 = 8,
	PRM_VIRTQ_FEAT_GUEST_CSUM = 9,
	PRM_VIRTQ_FEAT_CSUM = 10,
	PRM_VIRTQ_FEAT_HOST_TSO6 = 11,
	PRM_VIRTQ_FEAT_HOST_TSO4 = 12,
};

/* CREATE/MODIFY_GENERAL_OBJECT(VIRTIO_NET_Q) input, QUERY output. */
PRM_SUB(virtq_cmd, hdr, 0x000);   /* general_obj_in_cmd_hdr */
PRM_SUB(virtq_cmd, obj, 0x080);   /* virtio_net_q */
PRM_SUB(virtq_cmd, q, 0x280);     /* its virtio_q context */
PRM_LAYOUT(virtq_cmd, 0x680);
_Static_assert(PRM_SIZE(virtq_cmd) == 208, "virtq_cmd is 208 bytes (0x80 + 0x600 bits)");

/* VIRTIO_Q_COUNTERS object (query context). */
PRM_FIELD(virtio_q_counters, modify_field_select, 0x000, 64);
PRM_FIELD(virtio_q_counters, received_desc, 0x080, 64);
PRM_FIELD(virtio_q_counters, completed_desc, 0x0c0, 64);
PRM_FIELD(virtio_q_counters, error_cqes, 0x100, 32);
PRM_FIELD(virtio_q_counters, bad_desc_errors, 0x120, 32);
PRM_FIELD(virtio_q_counters, exceed_max_chain, 0x140, 32);
PRM_FIELD(virtio_q_counters, invalid_buffer, 0x160, 32);
PRM_LAYOUT(virtio_q_counters, 0x400);
_Static_assert(PRM_SIZE(virtio_q_counters) == 128, "virtio_q_counters is 128 bytes");

/* CREATE_GENERAL_OBJECT(VIRTIO_Q_COUNTERS) input, QUERY output. */
PRM_SUB(virtq_counters_cmd, hdr, 0x000);
PRM_SUB(virtq_counters_cmd, obj, 0x080);
PRM_LAYOUT(virtq_counters_cmd, 0x480);
_Static_assert(PRM_SIZE(virtq_counters_cmd) == 144, "virtq_counters_cmd is 144 bytes");

/* ---- QUERY_HCA_CAP ------------------------------------------------------ */
PRM_FIELD(query_hca_cap_in, opcode, 0x00, 16);
PRM_FIELD(query_hca_cap_in, uid, 0x10, 16);
PRM_FIELD(query_hca_cap_in, op_mod, 0x30, 16);
PRM_FIELD(query_hca_cap_in, other_function, 0x40, 1);
PRM_FIELD(query_hca_cap_in, function_id, 0x50, 16);
PRM_LAYOUT(query_hca_cap_in, 0x80);
_Static_assert(PRM_SIZE(query_hca_cap_in) == 16, "query_hca_cap_in is 16 bytes");

PRM_FIELD(query_hca_cap_out, status, 0x00, 8);
PRM_FIELD(query_hca_cap_out, syndrome, 0x20, 32);
PRM_SUB(query_hca_cap_out, capability, 0x80);
PRM_LAYOUT(query_hca_cap_out, 0x8080);
_Static_assert(PRM_SIZE(query_hca_cap_out) == 4112,
	       "query_hca_cap_out is 4112 bytes (0x80 + 0x8000 bits)");

/* virtio emulation caps (cap_type 0x13), inside query_hca_cap_out.capability. */
PRM_FIELD(virtio_emulation_cap, desc_tunnel_offload_type, 0x00, 1);
PRM_FIELD(virtio_emulation_cap, eth_frame_offload_type, 0x01, 1);
PRM_FIELD(virtio_emulation_cap, virtio_version_1_0, 0x02, 1);
PRM_FIELD(virtio_emulation_cap, device_features_bits_mask, 0x03, 13);
PRM_FIELD(virtio_emulation_cap, event_mode, 0x10, 8);
PRM_FIELD(virtio_emulation_cap, virtio_queue_type, 0x18, 8);
PRM_FIELD(virtio_emulation_cap, max_tunnel_desc, 0x20, 16);
PRM_FIELD(virtio_emulation_cap, log_doorbell_stride, 0x33, 5);
PRM_FIELD(virtio_emulation_cap, vnet_modify_ext, 0x38, 1);
PRM_FIELD(virtio_emulation_cap, virtio_net_q_addr_modify, 0x39, 1);
PRM_FIELD(virtio_emulation_cap, virtio_q_index_modify, 0x3a, 1);
PRM_FIELD(virtio_emulation_cap, log_doorbell_bar_size, 0x3b, 5);
PRM_FIELD(virtio_emulation_cap, doorbell_bar_offset, 0x40, 64);
PRM_FIELD(virtio_emulation_cap, max_num_virtio_queues, 0x88, 24);
PRM_FIELD(virtio_emulation_cap, desc_group_mkey_supported, 0xd3, 1);
PRM_FIELD(virtio_emulation_cap, freeze_to_rdy_supported, 0xd4, 1);
PRM_FIELD(virtio_emulation_cap, umem_1_buffer_param_a, 0x100, 32);
PRM_FIELD(virtio_emulation_cap, umem_1_buffer_param_b, 0x120, 32);
PRM_FIELD(virtio_emulation_cap, umem_2_buffer_param_a, 0x140, 32);
PRM_FIELD(virtio_emulation_cap, umem_2_buffer_param_b, 0x160, 32);
PRM_FIELD(virtio_emulation_cap, umem_3_buffer_param_a, 0x180, 32);
PRM_FIELD(virtio_emulation_cap, umem_3_buffer_param_b, 0x1a0, 32);
PRM_LAYOUT(virtio_emulation_cap, 0x8000);
_Static_assert(PRM_SIZE(virtio_emulation_cap) == 4096, "virtio_emulation_cap is 4096 bytes");

/* ---- MKEY --------------------------------------------------------------- */
enum prm_mkey_access_mode {
	PRM_MKC_ACCESS_MODE_PA = 0,
	PRM_MKC_ACCESS_MODE_MTT = 1,
	PRM_MKC_ACCESS_MODE_KLM = 2,
	PRM_MKC_ACCESS_MODE_KSM = 3,
};
/* mkey context (mkc), 512 bits. */
PRM_FIELD(mkc, free, 0x01, 1);
PRM_FIELD(mkc, access_mode_4_2, 0x03, 3);
PRM_FIELD(mkc, umr_en, 0x10, 1);
PRM_FIELD(mkc, a, 0x11, 1);
PRM_FIELD(mkc, rw, 0x12, 1);
PRM_FIELD(mkc, rr, 0x13, 1);
PRM_FIELD(mkc, lw, 0x14, 1);
PRM_FIELD(mkc, lr, 0x15, 1);
PRM_FIELD(mkc, access_mode_1_0, 0x16, 2);
PRM_FIELD(mkc, qpn, 0x20, 24);
PRM_FIELD(mkc, mkey_7_0, 0x38, 8);
PRM_FIELD(mkc, length64, 0x60, 1);
PRM_FIELD(mkc, pd, 0x68, 24);
PRM_FIELD(mkc, start_addr, 0x80, 64);
PRM_FIELD(mkc, len, 0xc0, 64);
PRM_FIELD(mkc, translations_octword_size, 0x1a0, 32);
PRM_FIELD(mkc, log_page_size, 0x1db, 5);
PRM_LAYOUT(mkc, 0x200);
_Static_assert(PRM_SIZE(mkc) == 64, "mkc is 64 bytes");

PRM_FIELD(create_mkey_in, opcode, 0x00, 16);
PRM_FIELD(create_mkey_in, uid, 0x10, 16);
PRM_FIELD(create_mkey_in, op_mod, 0x30, 16);
PRM_FIELD(create_mkey_in, pg_access, 0x60, 1);
PRM_FIELD(create_mkey_in, mkey_umem_valid, 0x61, 1);
PRM_SUB(create_mkey_in, mkc, 0x80);
PRM_FIELD(create_mkey_in, translations_octword_actual_size, 0x300, 32);
PRM_FIELD(create_mkey_in, mkey_umem_id, 0x320, 32);
PRM_FIELD(create_mkey_in, mkey_umem_offset, 0x340, 64);
PRM_SUB(create_mkey_in, klm_pas_mtt, 0x880); /* entry list follows */
PRM_LAYOUT(create_mkey_in, 0x880);
_Static_assert(PRM_SIZE(create_mkey_in) == 272, "create_mkey_in is 272 bytes");

PRM_FIELD(create_mkey_out, status, 0x00, 8);
PRM_FIELD(create_mkey_out, syndrome, 0x20, 32);
PRM_FIELD(create_mkey_out, mkey_index, 0x48, 24);
PRM_LAYOUT(create_mkey_out, 0x80);
_Static_assert(PRM_SIZE(create_mkey_out) == 16, "create_mkey_out is 16 bytes");

PRM_FIELD(destroy_mkey_in, opcode, 0x00, 16);
PRM_FIELD(destroy_mkey_in, mkey_index, 0x48, 24);
PRM_LAYOUT(destroy_mkey_in, 0x80);
_Static_assert(PRM_SIZE(destroy_mkey_in) == 16, "destroy_mkey_in is 16 bytes");

/* Indirect mkey entries: KLM (and KSM, which ignores byte_count). */
PRM_FIELD(klm, byte_count, 0x00, 32);
PRM_FIELD(klm, mkey, 0x20, 32);
PRM_FIELD(klm, address, 0x40, 64);
PRM_LAYOUT(klm, 0x80);
_Static_assert(PRM_SIZE(klm) == 16, "klm is 16 bytes");
PRM_FIELD(mtt, ptag, 0x00, 64);
PRM_LAYOUT(mtt, 0x40);
_Static_assert(PRM_SIZE(mtt) == 8, "mtt is 8 bytes");

/*
 * Published sizing practice: at most (65535 - create_mkey_in size) / 16 KLM
 * entries in one command (DPDK), KLM entries of at most 2 GiB (Linux).
 */
#define PRM_MAX_KLM_PER_CMD ((65535u - 0x880u / 8) / 16)
#define PRM_MAX_KLM_BYTE_COUNT (2ull << 30)

/* ---- QUERY_SPECIAL_CONTEXTS --------------------------------------------- */
PRM_FIELD(query_special_contexts_in, opcode, 0x00, 16);
PRM_LAYOUT(query_special_contexts_in, 0x80);
_Static_assert(PRM_SIZE(query_special_contexts_in) == 16, "query_special_contexts_in is 16 bytes");
PRM_FIELD(query_special_contexts_out, status, 0x00, 8);
PRM_FIELD(query_special_contexts_out, syndrome, 0x20, 32);
PRM_FIELD(query_special_contexts_out, dump_fill_mkey, 0x40, 32);
PRM_FIELD(query_special_contexts_out, resd_lkey, 0x60, 32);
PRM_FIELD(query_special_contexts_out, null_mkey, 0x80, 32);
PRM_LAYOUT(query_special_contexts_out, 0x100);
_Static_assert(PRM_SIZE(query_special_contexts_out) == 32,
	       "query_special_contexts_out is 32 bytes");

/* Network objects, CQ/QP, flow steering and the general caps. */
#include "prm_layouts_net.h"

/* Name of an opcode for logs and traces ("UNKNOWN" when not known). */
const char *prm_opcode_name(uint16_t opcode);
/* Name of a status value for logs ("UNKNOWN_STATUS" when not known). */
const char *prm_status_name(uint8_t status);

#endif /* MLX5_LM_PRM_LAYOUTS_H */
