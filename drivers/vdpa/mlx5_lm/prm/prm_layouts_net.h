/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PRM layouts of the classic (non general-object) commands mlx5-lm needs
 * around its virtio queues: general device caps, PD and transport domain,
 * TIS/RQT/TIR, NIC flow steering, and the CQ/QP pair of an event channel.
 *
 * Offsets are bits, as in prm_layouts.h. They were taken from the public
 * interface headers (Linux include/linux/mlx5/mlx5_ifc.h and DPDK
 * drivers/common/mlx5/mlx5_prm.h) and cross-checked between the two where
 * both carry the field; a layout's name is the mlx5_ifc structure name
 * without its prefix and _bits suffix. Only fields we read or write are
 * named; everything else is reserved as far as this driver is concerned.
 *
 * Included from prm_layouts.h; do not include directly.
 */
#ifndef MLX5_LM_PRM_LAYOUTS_NET_H
#define MLX5_LM_PRM_LAYOUTS_NET_H

/*
 * Every classic command used here puts the new object's number at 0x48 of
 * its output (create_out.id) and the object to destroy at 0x48 of the
 * DESTROY/DEALLOC input (destroy_in.id). The per-command layouts below
 * spell out their own names for that field; these asserts pin the shared
 * view used by the DevX layer onto each of them.
 */
#define PRM_ASSERT_SAME_OFF(s1, f1, s2, f2) \
	_Static_assert(PRM_OFF(s1, f1) == PRM_OFF(s2, f2) && \
		       PRM_WIDTH(s1, f1) == PRM_WIDTH(s2, f2), \
		       #s1 "." #f1 " must overlay " #s2 "." #f2)

/* ---- General device caps (QUERY_HCA_CAP, cap_type 0) ------------------- */
/*
 * cmd_hca_cap, inside query_hca_cap_out.capability. Fields are the ones a
 * vDPA driver sizes its resources with; offsets agree between the Linux and
 * DPDK copies of the structure.
 */
enum prm_hca_cap_port_type {
	PRM_HCA_CAP_PORT_TYPE_IB = 0x0,
	PRM_HCA_CAP_PORT_TYPE_ETH = 0x1,
};
/* Bit n of general_obj_types says general object type n is supported. */
enum prm_general_obj_types_cap {
	PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q = (1ull << PRM_OBJ_VIRTIO_NET_Q),
	PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS = (1ull << PRM_OBJ_VIRTIO_Q_COUNTERS),
};
_Static_assert(PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q == (1ull << 13), "virtq cap bit");
_Static_assert(PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS == (1ull << 28), "counters cap bit");

PRM_FIELD(cmd_hca_cap, vhca_id, 0x030, 16);
PRM_FIELD(cmd_hca_cap, log_max_srq_sz, 0x080, 8);
PRM_FIELD(cmd_hca_cap, log_max_qp_sz, 0x088, 8);
/* The device reports which events user space may subscribe to (device_event_cap). */
PRM_FIELD(cmd_hca_cap, event_cap, 0x090, 1);
PRM_FIELD(cmd_hca_cap, log_max_qp, 0x09b, 5);
PRM_FIELD(cmd_hca_cap, log_max_cq_sz, 0x0c8, 8);
PRM_FIELD(cmd_hca_cap, log_max_cq, 0x0db, 5);
PRM_FIELD(cmd_hca_cap, log_max_eq_sz, 0x0e0, 8);
PRM_FIELD(cmd_hca_cap, log_max_mkey, 0x0ea, 6);
PRM_FIELD(cmd_hca_cap, log_max_eq, 0x0fc, 4);
PRM_FIELD(cmd_hca_cap, max_indirection, 0x100, 8);
PRM_FIELD(cmd_hca_cap, log_max_mrw_sz, 0x109, 7);
PRM_FIELD(cmd_hca_cap, null_mkey, 0x119, 1);
PRM_FIELD(cmd_hca_cap, log_max_klm_list_size, 0x11a, 6);
PRM_FIELD(cmd_hca_cap, nic_flow_table, 0x1a6, 1);
PRM_FIELD(cmd_hca_cap, eswitch_manager, 0x1a7, 1);
PRM_FIELD(cmd_hca_cap, port_type, 0x1b6, 2);
PRM_FIELD(cmd_hca_cap, num_ports, 0x1b8, 8);
PRM_FIELD(cmd_hca_cap, log_max_msg, 0x1c3, 5);
PRM_FIELD(cmd_hca_cap, cqe_version, 0x1fc, 4);
PRM_FIELD(cmd_hca_cap, umem_uid_0, 0x252, 1);
PRM_FIELD(cmd_hca_cap, log_pg_sz, 0x258, 8);
PRM_FIELD(cmd_hca_cap, log_max_transport_domain, 0x323, 5);
PRM_FIELD(cmd_hca_cap, log_max_pd, 0x32b, 5);
PRM_FIELD(cmd_hca_cap, log_max_rq, 0x363, 5);
PRM_FIELD(cmd_hca_cap, log_max_sq, 0x36b, 5);
PRM_FIELD(cmd_hca_cap, log_max_tir, 0x373, 5);
PRM_FIELD(cmd_hca_cap, log_max_tis, 0x37b, 5);
PRM_FIELD(cmd_hca_cap, log_max_rqt, 0x38b, 5);
PRM_FIELD(cmd_hca_cap, log_max_rqt_size, 0x393, 5);
PRM_FIELD(cmd_hca_cap, log_max_current_mc_list, 0x3f3, 5);
PRM_FIELD(cmd_hca_cap, log_max_current_uc_list, 0x3fb, 5);
PRM_FIELD(cmd_hca_cap, roce, 0x21d, 1);
/* cqc.oi may be set only when the device offers it. */
PRM_FIELD(cmd_hca_cap, cq_oi, 0x220, 1);
PRM_FIELD(cmd_hca_cap, general_obj_types, 0x400, 64);
/* Timestamp formats the SQs/RQs take (prm_ts_format_cap); a QP's without RoCE. */
PRM_FIELD(cmd_hca_cap, sq_ts_format, 0x440, 2);
PRM_FIELD(cmd_hca_cap, rq_ts_format, 0x442, 2);
PRM_FIELD(cmd_hca_cap, max_num_eqs, 0x470, 16);
PRM_FIELD(cmd_hca_cap, log_uar_page_sz, 0x490, 16);
PRM_FIELD(cmd_hca_cap, device_frequency_khz, 0x4e0, 32);
/* The structure proper; the capability area it sits in is 0x8000 bits. */
PRM_LAYOUT(cmd_hca_cap, 0x800);
_Static_assert(PRM_SIZE(cmd_hca_cap) == 256, "cmd_hca_cap is 256 bytes");

/*
 * NIC flow table caps (QUERY_HCA_CAP, cap_type 0x7): one property block per
 * table type, the receive one first at 0x200.
 */
enum { PRM_CAP_NIC_FLOW_TABLE = 0x07 };

/*
 * RoCE caps (QUERY_HCA_CAP cap_type 0x4, with cmd_hca_cap.roce): the
 * timestamp formats a QP takes (Linux include/linux/mlx5/qp.h
 * mlx5_get_qp_default_ts reads qp_ts_format with RoCE, sq_ts_format
 * without; DPDK reads it for its event QPs, mlx5_ts_format_conv).
 */
enum { PRM_CAP_ROCE = 0x04 };
PRM_FIELD(roce_cap, qp_ts_format, 0x01e, 2);
PRM_LAYOUT(roce_cap, 0x800);
_Static_assert(PRM_SIZE(roce_cap) == 256, "roce_cap is 256 bytes");
/* What a *_ts_format cap says (DPDK mlx5_prm.h MLX5_HCA_CAP_TIMESTAMP_FORMAT_*). */
enum prm_ts_format_cap {
	PRM_TS_FORMAT_CAP_FREE_RUNNING = 0x0,
	PRM_TS_FORMAT_CAP_REAL_TIME = 0x1,
	PRM_TS_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME = 0x2,
};
/* qpc.ts_format (Linux MLX5_TIMESTAMP_FORMAT_*). */
enum prm_ts_format {
	PRM_TS_FORMAT_FREE_RUNNING = 0x0,
	PRM_TS_FORMAT_DEFAULT = 0x1,
	PRM_TS_FORMAT_REAL_TIME = 0x2,
};

/*
 * Event caps (QUERY_HCA_CAP cap_type 0x14, MLX5_CAP_DEV_EVENT, with
 * cmd_hca_cap.event_cap): user_affiliated_events and
 * user_unaffiliated_events are 4 big-endian 64-bit masks each, event n
 * being bit n % 64 of mask n / 64 (Linux devx.c is_valid_events).
 */
enum { PRM_CAP_DEV_EVENT = 0x14 };
PRM_FIELD(device_event_cap, user_affiliated_events, 0x000, 64);	/* [4] */
PRM_FIELD(device_event_cap, user_unaffiliated_events, 0x100, 64);	/* [4] */
PRM_LAYOUT(device_event_cap, 0x200);
_Static_assert(PRM_SIZE(device_event_cap) == 64, "device_event_cap is 64 bytes");

/* Is event n in the 4-mask array starting at field off of a device_event_cap? */
static inline int
prm_event_mask_has(const void *cap, uint32_t off, uint16_t n)
{
	return n < 256 && (prm_get_bits(cap, off + 64u * (n / 64u), 64) >> (n % 64u) & 1);
}
PRM_FIELD(flow_table_prop_layout, ft_support, 0x00, 1);
PRM_FIELD(flow_table_prop_layout, log_max_ft_size, 0x22, 6);
PRM_FIELD(flow_table_prop_layout, max_ft_level, 0x38, 8);
PRM_FIELD(flow_table_prop_layout, log_max_ft_num, 0x78, 8);
PRM_FIELD(flow_table_prop_layout, log_max_destination, 0x98, 8);
PRM_FIELD(flow_table_prop_layout, log_max_flow, 0xb8, 8);
PRM_LAYOUT(flow_table_prop_layout, 0x200);
_Static_assert(PRM_SIZE(flow_table_prop_layout) == 64, "flow_table_prop_layout is 64 bytes");

PRM_SUB(flow_table_nic_cap, flow_table_properties_nic_receive, 0x200);
PRM_SUB(flow_table_nic_cap, flow_table_properties_nic_transmit, 0x800);
PRM_LAYOUT(flow_table_nic_cap, 0x8000);
_Static_assert(PRM_SIZE(flow_table_nic_cap) == 4096, "flow_table_nic_cap is 4096 bytes");

/* ---- PD and transport domain -------------------------------------------- */
/*
 * ALLOC_PD / ALLOC_TRANSPORT_DOMAIN carry only the envelope; their outputs
 * return pd / transport_domain[24] at 0x48 (create_out.id). DEALLOC_PD /
 * DEALLOC_TRANSPORT_DOMAIN name the object at 0x48 (destroy_in.id).
 */
PRM_FIELD(alloc_pd_in, opcode, 0x00, 16);
PRM_FIELD(alloc_pd_in, uid, 0x10, 16);
PRM_FIELD(alloc_pd_in, op_mod, 0x30, 16);
PRM_LAYOUT(alloc_pd_in, 0x80);
_Static_assert(PRM_SIZE(alloc_pd_in) == 16, "alloc_pd_in is 16 bytes");

PRM_FIELD(alloc_pd_out, pd, 0x48, 24);
PRM_LAYOUT(alloc_pd_out, 0x80);
_Static_assert(PRM_SIZE(alloc_pd_out) == 16, "alloc_pd_out is 16 bytes");
PRM_ASSERT_SAME_OFF(alloc_pd_out, pd, create_out, id);

PRM_FIELD(dealloc_pd_in, opcode, 0x00, 16);
PRM_FIELD(dealloc_pd_in, uid, 0x10, 16);
PRM_FIELD(dealloc_pd_in, op_mod, 0x30, 16);
PRM_FIELD(dealloc_pd_in, pd, 0x48, 24);
PRM_LAYOUT(dealloc_pd_in, 0x80);
_Static_assert(PRM_SIZE(dealloc_pd_in) == 16, "dealloc_pd_in is 16 bytes");
PRM_ASSERT_SAME_OFF(dealloc_pd_in, pd, destroy_in, id);

PRM_FIELD(alloc_transport_domain_in, opcode, 0x00, 16);
PRM_FIELD(alloc_transport_domain_in, uid, 0x10, 16);
PRM_FIELD(alloc_transport_domain_in, op_mod, 0x30, 16);
PRM_LAYOUT(alloc_transport_domain_in, 0x80);
_Static_assert(PRM_SIZE(alloc_transport_domain_in) == 16, "alloc_transport_domain_in is 16 bytes");

PRM_FIELD(alloc_transport_domain_out, transport_domain, 0x48, 24);
PRM_LAYOUT(alloc_transport_domain_out, 0x80);
_Static_assert(PRM_SIZE(alloc_transport_domain_out) == 16,
	       "alloc_transport_domain_out is 16 bytes");
PRM_ASSERT_SAME_OFF(alloc_transport_domain_out, transport_domain, create_out, id);

PRM_FIELD(dealloc_transport_domain_in, opcode, 0x00, 16);
PRM_FIELD(dealloc_transport_domain_in, uid, 0x10, 16);
PRM_FIELD(dealloc_transport_domain_in, op_mod, 0x30, 16);
PRM_FIELD(dealloc_transport_domain_in, transport_domain, 0x48, 24);
PRM_LAYOUT(dealloc_transport_domain_in, 0x80);
_Static_assert(PRM_SIZE(dealloc_transport_domain_in) == 16,
	       "dealloc_transport_domain_in is 16 bytes");
PRM_ASSERT_SAME_OFF(dealloc_transport_domain_in, transport_domain, destroy_in, id);

/* ---- TIS ---------------------------------------------------------------- */
/* TIS context: the transmit side a TX virtq's tisn_or_qpn points at. */
PRM_FIELD(tisc, strict_lag_tx_port_affinity, 0x000, 1);
PRM_FIELD(tisc, lag_tx_port_affinity, 0x004, 4);
PRM_FIELD(tisc, prio, 0x00c, 4);
PRM_FIELD(tisc, transport_domain, 0x128, 24);
PRM_FIELD(tisc, underlay_qpn, 0x148, 24);
PRM_LAYOUT(tisc, 0x500);
_Static_assert(PRM_SIZE(tisc) == 160, "tisc is 160 bytes");

PRM_FIELD(create_tis_in, opcode, 0x00, 16);
PRM_FIELD(create_tis_in, uid, 0x10, 16);
PRM_FIELD(create_tis_in, op_mod, 0x30, 16);
PRM_SUB(create_tis_in, ctx, 0x100);		/* tisc */
PRM_LAYOUT(create_tis_in, 0x600);
_Static_assert(PRM_SIZE(create_tis_in) == 192, "create_tis_in is 192 bytes");

/* CREATE_TIS output: tisn[24] at 0x48 (create_out.id). */
PRM_FIELD(create_tis_out, tisn, 0x48, 24);
PRM_LAYOUT(create_tis_out, 0x80);
_Static_assert(PRM_SIZE(create_tis_out) == 16, "create_tis_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_tis_out, tisn, create_out, id);

PRM_FIELD(destroy_tis_in, opcode, 0x00, 16);
PRM_FIELD(destroy_tis_in, uid, 0x10, 16);
PRM_FIELD(destroy_tis_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_tis_in, tisn, 0x48, 24);
PRM_LAYOUT(destroy_tis_in, 0x80);
_Static_assert(PRM_SIZE(destroy_tis_in) == 16, "destroy_tis_in is 16 bytes");
PRM_ASSERT_SAME_OFF(destroy_tis_in, tisn, destroy_in, id);

/* ---- RQT ---------------------------------------------------------------- */
/*
 * RQ table: the indirection list an RSS TIR spreads over. With list_q_type
 * VIRTIO_NET_Q its entries are virtio_net_q object ids (RX virtqs) instead
 * of RQ numbers.
 */
enum prm_rqtc_list_q_type {
	PRM_RQTC_LIST_Q_TYPE_RQ = 0x0,
	PRM_RQTC_LIST_Q_TYPE_VIRTIO_NET_Q = 0x1,
};
/* One list entry. */
PRM_FIELD(rq_num, rq_num, 0x08, 24);
PRM_LAYOUT(rq_num, 0x20);
_Static_assert(PRM_SIZE(rq_num) == 4, "rq_num is 4 bytes");

PRM_FIELD(rqtc, list_q_type, 0x0a5, 3);
PRM_FIELD(rqtc, rqt_max_size, 0x0b0, 16);
PRM_FIELD(rqtc, rqt_actual_size, 0x0d0, 16);
PRM_SUB(rqtc, rq_num, 0x780);			/* rq_num entries follow */
PRM_LAYOUT(rqtc, 0x780);
_Static_assert(PRM_SIZE(rqtc) == 240, "rqtc is 240 bytes");

PRM_FIELD(create_rqt_in, opcode, 0x00, 16);
PRM_FIELD(create_rqt_in, uid, 0x10, 16);
PRM_FIELD(create_rqt_in, op_mod, 0x30, 16);
PRM_SUB(create_rqt_in, rqt_context, 0x100);	/* rqtc */
PRM_LAYOUT(create_rqt_in, 0x880);		/* + rqt_actual_size * rq_num */
_Static_assert(PRM_SIZE(create_rqt_in) == 272, "create_rqt_in is 272 bytes");

/* CREATE_RQT output: rqtn[24] at 0x48 (create_out.id). */
PRM_FIELD(create_rqt_out, rqtn, 0x48, 24);
PRM_LAYOUT(create_rqt_out, 0x80);
_Static_assert(PRM_SIZE(create_rqt_out) == 16, "create_rqt_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_rqt_out, rqtn, create_out, id);

/* MODIFY_RQT: bitmask selects what ctx replaces; only the list exists. */
enum prm_rqt_modify {
	PRM_RQT_MODIFY_RQN_LIST = 1ull << 0,
};
PRM_FIELD(modify_rqt_in, opcode, 0x00, 16);
PRM_FIELD(modify_rqt_in, uid, 0x10, 16);
PRM_FIELD(modify_rqt_in, op_mod, 0x30, 16);
PRM_FIELD(modify_rqt_in, rqtn, 0x48, 24);
PRM_FIELD(modify_rqt_in, bitmask, 0x80, 64);
PRM_SUB(modify_rqt_in, ctx, 0x100);		/* rqtc */
PRM_LAYOUT(modify_rqt_in, 0x880);
_Static_assert(PRM_SIZE(modify_rqt_in) == 272, "modify_rqt_in is 272 bytes");

PRM_FIELD(destroy_rqt_in, opcode, 0x00, 16);
PRM_FIELD(destroy_rqt_in, uid, 0x10, 16);
PRM_FIELD(destroy_rqt_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_rqt_in, rqtn, 0x48, 24);
PRM_LAYOUT(destroy_rqt_in, 0x80);
_Static_assert(PRM_SIZE(destroy_rqt_in) == 16, "destroy_rqt_in is 16 bytes");
PRM_ASSERT_SAME_OFF(destroy_rqt_in, rqtn, destroy_in, id);

/* ---- TIR ---------------------------------------------------------------- */
enum prm_tirc_disp_type {
	PRM_TIRC_DISP_TYPE_DIRECT = 0x0,
	PRM_TIRC_DISP_TYPE_INDIRECT = 0x1,
};
enum prm_rx_hash_fn {
	PRM_RX_HASH_FN_NONE = 0x0,
	PRM_RX_HASH_FN_INVERTED_XOR8 = 0x1,
	PRM_RX_HASH_FN_TOEPLITZ = 0x2,
};
enum prm_tirc_self_lb_block {
	PRM_TIRC_SELF_LB_BLOCK_UNICAST = 0x1,
	PRM_TIRC_SELF_LB_BLOCK_MULTICAST = 0x2,
};
enum prm_rx_hash_l3_prot { PRM_L3_PROT_TYPE_IPV4 = 0, PRM_L3_PROT_TYPE_IPV6 = 1 };
enum prm_rx_hash_l4_prot { PRM_L4_PROT_TYPE_TCP = 0, PRM_L4_PROT_TYPE_UDP = 1 };
/* selected_fields bits. */
enum prm_rx_hash_fields {
	PRM_RX_HASH_SRC_IP = 1u << 0,
	PRM_RX_HASH_DST_IP = 1u << 1,
	PRM_RX_HASH_L4_SPORT = 1u << 2,
	PRM_RX_HASH_L4_DPORT = 1u << 3,
	PRM_RX_HASH_IPSEC_SPI = 1u << 4,
};

/* Which header fields feed the RSS hash. */
PRM_FIELD(rx_hash_field_select, l3_prot_type, 0x00, 1);
PRM_FIELD(rx_hash_field_select, l4_prot_type, 0x01, 1);
PRM_FIELD(rx_hash_field_select, selected_fields, 0x02, 30);
PRM_LAYOUT(rx_hash_field_select, 0x20);
_Static_assert(PRM_SIZE(rx_hash_field_select) == 4, "rx_hash_field_select is 4 bytes");

/* TIR context: a direct TIR names one RQ/virtq, an indirect one an RQT. */
#define PRM_RSS_HASH_KEY_LEN 40		/* bytes of rx_hash_toeplitz_key */
PRM_FIELD(tirc, disp_type, 0x020, 4);
PRM_FIELD(tirc, lro_timeout_period_usecs, 0x084, 16);
PRM_FIELD(tirc, lro_enable_mask, 0x094, 4);
PRM_FIELD(tirc, lro_max_msg_sz, 0x098, 8);
PRM_FIELD(tirc, inline_rqn, 0x0e8, 24);
PRM_FIELD(tirc, rx_hash_symmetric, 0x100, 1);
PRM_FIELD(tirc, tunneled_offload_en, 0x102, 1);
PRM_FIELD(tirc, indirect_table, 0x108, 24);
PRM_FIELD(tirc, rx_hash_fn, 0x120, 4);
PRM_FIELD(tirc, self_lb_block, 0x126, 2);
PRM_FIELD(tirc, transport_domain, 0x128, 24);
PRM_SUB(tirc, rx_hash_toeplitz_key, 0x140);		/* 10 dwords */
PRM_SUB(tirc, rx_hash_field_selector_outer, 0x280);	/* rx_hash_field_select */
PRM_SUB(tirc, rx_hash_field_selector_inner, 0x2a0);	/* rx_hash_field_select */
PRM_LAYOUT(tirc, 0x780);
_Static_assert(PRM_SIZE(tirc) == 240, "tirc is 240 bytes");
_Static_assert(PRM_OFF(tirc, rx_hash_field_selector_outer) -
	       PRM_OFF(tirc, rx_hash_toeplitz_key) == PRM_RSS_HASH_KEY_LEN * 8,
	       "tirc: toeplitz key is 40 bytes");

PRM_FIELD(create_tir_in, opcode, 0x00, 16);
PRM_FIELD(create_tir_in, uid, 0x10, 16);
PRM_FIELD(create_tir_in, op_mod, 0x30, 16);
PRM_SUB(create_tir_in, ctx, 0x100);		/* tirc */
PRM_LAYOUT(create_tir_in, 0x880);
_Static_assert(PRM_SIZE(create_tir_in) == 272, "create_tir_in is 272 bytes");

/* CREATE_TIR output: tirn[24] at 0x48 (create_out.id). */
PRM_FIELD(create_tir_out, tirn, 0x48, 24);
PRM_LAYOUT(create_tir_out, 0x80);
_Static_assert(PRM_SIZE(create_tir_out) == 16, "create_tir_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_tir_out, tirn, create_out, id);

PRM_FIELD(destroy_tir_in, opcode, 0x00, 16);
PRM_FIELD(destroy_tir_in, uid, 0x10, 16);
PRM_FIELD(destroy_tir_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_tir_in, tirn, 0x48, 24);
PRM_LAYOUT(destroy_tir_in, 0x80);
_Static_assert(PRM_SIZE(destroy_tir_in) == 16, "destroy_tir_in is 16 bytes");
PRM_ASSERT_SAME_OFF(destroy_tir_in, tirn, destroy_in, id);

/* ---- Flow steering ------------------------------------------------------ */
enum prm_flow_table_type {
	PRM_FLOW_TABLE_TYPE_NIC_RX = 0x0,
	PRM_FLOW_TABLE_TYPE_NIC_TX = 0x1,
	PRM_FLOW_TABLE_TYPE_FDB = 0x4,
};
enum prm_flow_table_miss_action {
	PRM_FLOW_TABLE_MISS_ACTION_DEF = 0x0,
	PRM_FLOW_TABLE_MISS_ACTION_FWD = 0x1,
};
/* flow_context.action bits. */
enum prm_flow_context_action {
	PRM_FLOW_CONTEXT_ACTION_ALLOW = 0x1,
	PRM_FLOW_CONTEXT_ACTION_DROP = 0x2,
	PRM_FLOW_CONTEXT_ACTION_FWD_DEST = 0x4,
	PRM_FLOW_CONTEXT_ACTION_COUNT = 0x8,
};
/* dest_format_struct.destination_type values. */
enum prm_flow_destination_type {
	PRM_FLOW_DESTINATION_TYPE_VPORT = 0x0,
	PRM_FLOW_DESTINATION_TYPE_FLOW_TABLE = 0x1,
	PRM_FLOW_DESTINATION_TYPE_TIR = 0x2,
};
/* create_flow_group_in.match_criteria_enable bits. */
enum prm_match_criteria_enable {
	PRM_MATCH_CRITERIA_ENABLE_OUTER_HEADERS = 1u << 0,
	PRM_MATCH_CRITERIA_ENABLE_MISC_PARAMETERS = 1u << 1,
	PRM_MATCH_CRITERIA_ENABLE_INNER_HEADERS = 1u << 2,
};

PRM_FIELD(flow_table_context, reformat_en, 0x00, 1);
PRM_FIELD(flow_table_context, decap_en, 0x01, 1);
PRM_FIELD(flow_table_context, termination_table, 0x03, 1);
PRM_FIELD(flow_table_context, table_miss_action, 0x04, 4);
PRM_FIELD(flow_table_context, level, 0x08, 8);
PRM_FIELD(flow_table_context, log_size, 0x18, 8);
PRM_FIELD(flow_table_context, table_miss_id, 0x28, 24);
PRM_FIELD(flow_table_context, lag_master_next_table_id, 0x48, 24);
PRM_LAYOUT(flow_table_context, 0x140);
_Static_assert(PRM_SIZE(flow_table_context) == 40, "flow_table_context is 40 bytes");

PRM_FIELD(create_flow_table_in, opcode, 0x00, 16);
PRM_FIELD(create_flow_table_in, uid, 0x10, 16);
PRM_FIELD(create_flow_table_in, op_mod, 0x30, 16);
PRM_FIELD(create_flow_table_in, other_vport, 0x40, 1);
PRM_FIELD(create_flow_table_in, vport_number, 0x50, 16);
PRM_FIELD(create_flow_table_in, table_type, 0x80, 8);
PRM_SUB(create_flow_table_in, flow_table_context, 0xc0);
PRM_LAYOUT(create_flow_table_in, 0x200);
_Static_assert(PRM_SIZE(create_flow_table_in) == 64, "create_flow_table_in is 64 bytes");

/* CREATE_FLOW_TABLE output: table_id[24] at 0x48 (create_out.id). */
PRM_FIELD(create_flow_table_out, table_id, 0x48, 24);
PRM_LAYOUT(create_flow_table_out, 0x80);
_Static_assert(PRM_SIZE(create_flow_table_out) == 16, "create_flow_table_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_flow_table_out, table_id, create_out, id);

/* Not destroy_in-shaped: the table is named by (table_type, table_id). */
PRM_FIELD(destroy_flow_table_in, opcode, 0x00, 16);
PRM_FIELD(destroy_flow_table_in, uid, 0x10, 16);
PRM_FIELD(destroy_flow_table_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_flow_table_in, other_vport, 0x40, 1);
PRM_FIELD(destroy_flow_table_in, vport_number, 0x50, 16);
PRM_FIELD(destroy_flow_table_in, table_type, 0x80, 8);
PRM_FIELD(destroy_flow_table_in, table_id, 0xa8, 24);
PRM_LAYOUT(destroy_flow_table_in, 0x200);
_Static_assert(PRM_SIZE(destroy_flow_table_in) == 64, "destroy_flow_table_in is 64 bytes");

/* Outer/inner L2-L4 header match set (match criteria and match value). */
PRM_FIELD(fte_match_set_lyr_2_4, smac_47_16, 0x000, 32);
PRM_FIELD(fte_match_set_lyr_2_4, smac_15_0, 0x020, 16);
PRM_FIELD(fte_match_set_lyr_2_4, ethertype, 0x030, 16);
PRM_FIELD(fte_match_set_lyr_2_4, dmac_47_16, 0x040, 32);
PRM_FIELD(fte_match_set_lyr_2_4, dmac_15_0, 0x060, 16);
PRM_FIELD(fte_match_set_lyr_2_4, first_prio, 0x070, 3);
PRM_FIELD(fte_match_set_lyr_2_4, first_cfi, 0x073, 1);
PRM_FIELD(fte_match_set_lyr_2_4, first_vid, 0x074, 12);
PRM_FIELD(fte_match_set_lyr_2_4, ip_protocol, 0x080, 8);
PRM_FIELD(fte_match_set_lyr_2_4, ip_dscp, 0x088, 6);
PRM_FIELD(fte_match_set_lyr_2_4, ip_ecn, 0x08e, 2);
PRM_FIELD(fte_match_set_lyr_2_4, cvlan_tag, 0x090, 1);
PRM_FIELD(fte_match_set_lyr_2_4, svlan_tag, 0x091, 1);
PRM_FIELD(fte_match_set_lyr_2_4, frag, 0x092, 1);
PRM_FIELD(fte_match_set_lyr_2_4, ip_version, 0x093, 4);
PRM_FIELD(fte_match_set_lyr_2_4, tcp_flags, 0x097, 9);
PRM_FIELD(fte_match_set_lyr_2_4, tcp_sport, 0x0a0, 16);
PRM_FIELD(fte_match_set_lyr_2_4, tcp_dport, 0x0b0, 16);
PRM_FIELD(fte_match_set_lyr_2_4, ttl_hoplimit, 0x0d8, 8);
PRM_FIELD(fte_match_set_lyr_2_4, udp_sport, 0x0e0, 16);
PRM_FIELD(fte_match_set_lyr_2_4, udp_dport, 0x0f0, 16);
PRM_SUB(fte_match_set_lyr_2_4, src_ipv4_src_ipv6, 0x100);	/* 128 bits */
PRM_SUB(fte_match_set_lyr_2_4, dst_ipv4_dst_ipv6, 0x180);	/* 128 bits */
/* An IPv4 address is the last dword of its 128-bit union. */
PRM_FIELD(fte_match_set_lyr_2_4, src_ipv4, 0x160, 32);
PRM_FIELD(fte_match_set_lyr_2_4, dst_ipv4, 0x1e0, 32);
PRM_LAYOUT(fte_match_set_lyr_2_4, 0x200);
_Static_assert(PRM_SIZE(fte_match_set_lyr_2_4) == 64, "fte_match_set_lyr_2_4 is 64 bytes");

PRM_SUB(fte_match_param, outer_headers, 0x000);		/* fte_match_set_lyr_2_4 */
PRM_SUB(fte_match_param, misc_parameters, 0x200);
PRM_SUB(fte_match_param, inner_headers, 0x400);		/* fte_match_set_lyr_2_4 */
PRM_SUB(fte_match_param, misc_parameters_2, 0x600);
PRM_SUB(fte_match_param, misc_parameters_3, 0x800);
PRM_LAYOUT(fte_match_param, 0x1000);
_Static_assert(PRM_SIZE(fte_match_param) == 512, "fte_match_param is 512 bytes");

PRM_FIELD(create_flow_group_in, opcode, 0x00, 16);
PRM_FIELD(create_flow_group_in, uid, 0x10, 16);
PRM_FIELD(create_flow_group_in, op_mod, 0x30, 16);
PRM_FIELD(create_flow_group_in, other_vport, 0x40, 1);
PRM_FIELD(create_flow_group_in, vport_number, 0x50, 16);
PRM_FIELD(create_flow_group_in, table_type, 0x80, 8);
PRM_FIELD(create_flow_group_in, table_id, 0xa8, 24);
PRM_FIELD(create_flow_group_in, start_flow_index, 0xe0, 32);
PRM_FIELD(create_flow_group_in, end_flow_index, 0x120, 32);
PRM_FIELD(create_flow_group_in, match_criteria_enable, 0x1f8, 8);
PRM_SUB(create_flow_group_in, match_criteria, 0x200);	/* fte_match_param */
PRM_LAYOUT(create_flow_group_in, 0x2000);
_Static_assert(PRM_SIZE(create_flow_group_in) == 1024, "create_flow_group_in is 1024 bytes");

/* CREATE_FLOW_GROUP output: group_id[24] at 0x48 (create_out.id). */
PRM_FIELD(create_flow_group_out, group_id, 0x48, 24);
PRM_LAYOUT(create_flow_group_out, 0x80);
_Static_assert(PRM_SIZE(create_flow_group_out) == 16, "create_flow_group_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_flow_group_out, group_id, create_out, id);

PRM_FIELD(destroy_flow_group_in, opcode, 0x00, 16);
PRM_FIELD(destroy_flow_group_in, uid, 0x10, 16);
PRM_FIELD(destroy_flow_group_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_flow_group_in, other_vport, 0x40, 1);
PRM_FIELD(destroy_flow_group_in, vport_number, 0x50, 16);
PRM_FIELD(destroy_flow_group_in, table_type, 0x80, 8);
PRM_FIELD(destroy_flow_group_in, table_id, 0xa8, 24);
PRM_FIELD(destroy_flow_group_in, group_id, 0xc0, 32);
PRM_LAYOUT(destroy_flow_group_in, 0x200);
_Static_assert(PRM_SIZE(destroy_flow_group_in) == 64, "destroy_flow_group_in is 64 bytes");

/* One forwarding destination of an FTE (64 bits each). */
PRM_FIELD(dest_format_struct, destination_type, 0x00, 8);
PRM_FIELD(dest_format_struct, destination_id, 0x08, 24);
PRM_LAYOUT(dest_format_struct, 0x40);
_Static_assert(PRM_SIZE(dest_format_struct) == 8, "dest_format_struct is 8 bytes");

/* Flow table entry context; the destination list follows at 0x1800. */
PRM_FIELD(flow_context, group_id, 0x020, 32);
PRM_FIELD(flow_context, flow_tag, 0x048, 24);
PRM_FIELD(flow_context, action, 0x070, 16);
PRM_FIELD(flow_context, extended_destination, 0x080, 1);
PRM_FIELD(flow_context, destination_list_size, 0x088, 24);
PRM_FIELD(flow_context, flow_counter_list_size, 0x0a8, 24);
PRM_SUB(flow_context, match_value, 0x200);		/* fte_match_param */
PRM_SUB(flow_context, destination, 0x1800);		/* dest_format_struct[] */
PRM_LAYOUT(flow_context, 0x1800);
_Static_assert(PRM_SIZE(flow_context) == 768, "flow_context is 768 bytes");

PRM_FIELD(set_fte_in, opcode, 0x00, 16);
PRM_FIELD(set_fte_in, uid, 0x10, 16);
PRM_FIELD(set_fte_in, op_mod, 0x30, 16);
PRM_FIELD(set_fte_in, other_vport, 0x40, 1);
PRM_FIELD(set_fte_in, vport_number, 0x50, 16);
PRM_FIELD(set_fte_in, table_type, 0x80, 8);
PRM_FIELD(set_fte_in, table_id, 0xa8, 24);
PRM_FIELD(set_fte_in, modify_enable_mask, 0xd8, 8);
PRM_FIELD(set_fte_in, flow_index, 0x100, 32);
PRM_SUB(set_fte_in, flow_context, 0x200);		/* flow_context */
PRM_LAYOUT(set_fte_in, 0x1a00);			/* + destinations */
_Static_assert(PRM_SIZE(set_fte_in) == 832, "set_fte_in is 832 bytes");

PRM_FIELD(delete_fte_in, opcode, 0x00, 16);
PRM_FIELD(delete_fte_in, uid, 0x10, 16);
PRM_FIELD(delete_fte_in, op_mod, 0x30, 16);
PRM_FIELD(delete_fte_in, other_vport, 0x40, 1);
PRM_FIELD(delete_fte_in, vport_number, 0x50, 16);
PRM_FIELD(delete_fte_in, table_type, 0x80, 8);
PRM_FIELD(delete_fte_in, table_id, 0xa8, 24);
PRM_FIELD(delete_fte_in, flow_index, 0x100, 32);
PRM_LAYOUT(delete_fte_in, 0x200);
_Static_assert(PRM_SIZE(delete_fte_in) == 64, "delete_fte_in is 64 bytes");

/* ---- CQ ----------------------------------------------------------------- */
enum prm_cqc_cqe_sz {
	PRM_CQC_CQE_SZ_64 = 0x0,
	PRM_CQC_CQE_SZ_128 = 0x1,
};
/*
 * CQ context, DevX era: the doorbell record may live in a umem
 * (dbr_umem_valid + dbr_umem_id, dbr_addr then being the offset in it).
 * c_eqn is the 8-bit field the DevX-era headers (DPDK) name; current
 * Linux mlx5_ifc.h widens it to 32 bits at 0xa0 (c_eqn_or_apu_element),
 * same low byte, and mlx5_core_create_cq reads the 32 bits: an EQ number
 * above 255 needs the whole field.
 */
PRM_FIELD(cqc, status, 0x000, 4);
PRM_FIELD(cqc, dbr_umem_valid, 0x006, 1);
PRM_FIELD(cqc, cqe_sz, 0x008, 3);
PRM_FIELD(cqc, cc, 0x00b, 1);
PRM_FIELD(cqc, scqe_break_moderation_en, 0x00d, 1);
PRM_FIELD(cqc, oi, 0x00e, 1);
PRM_FIELD(cqc, cq_period_mode, 0x00f, 2);
PRM_FIELD(cqc, cqe_comp_en, 0x011, 1);
PRM_FIELD(cqc, mini_cqe_res_format, 0x012, 2);
PRM_FIELD(cqc, st, 0x014, 4);
PRM_FIELD(cqc, dbr_umem_id, 0x020, 32);
PRM_FIELD(cqc, page_offset, 0x054, 6);
PRM_FIELD(cqc, log_cq_size, 0x063, 5);
PRM_FIELD(cqc, uar_page, 0x068, 24);
PRM_FIELD(cqc, cq_period, 0x084, 12);
PRM_FIELD(cqc, cq_max_count, 0x090, 16);
PRM_FIELD(cqc, c_eqn_or_apu_element, 0x0a0, 32);
PRM_FIELD(cqc, c_eqn, 0x0b8, 8);
PRM_FIELD(cqc, log_page_size, 0x0c3, 5);
PRM_FIELD(cqc, last_notified_index, 0x108, 24);
PRM_FIELD(cqc, last_solicit_index, 0x128, 24);
PRM_FIELD(cqc, consumer_counter, 0x148, 24);
PRM_FIELD(cqc, producer_counter, 0x168, 24);
PRM_FIELD(cqc, dbr_addr, 0x1c0, 64);
PRM_LAYOUT(cqc, 0x200);
_Static_assert(PRM_SIZE(cqc) == 64, "cqc is 64 bytes");

PRM_FIELD(create_cq_in, opcode, 0x00, 16);
PRM_FIELD(create_cq_in, uid, 0x10, 16);
PRM_FIELD(create_cq_in, op_mod, 0x30, 16);
PRM_SUB(create_cq_in, cq_context, 0x080);		/* cqc */
PRM_FIELD(create_cq_in, cq_umem_offset, 0x280, 64);
PRM_FIELD(create_cq_in, cq_umem_id, 0x2c0, 32);
PRM_FIELD(create_cq_in, cq_umem_valid, 0x2e0, 1);
PRM_SUB(create_cq_in, pas, 0x880);			/* page list follows */
PRM_LAYOUT(create_cq_in, 0x880);
_Static_assert(PRM_SIZE(create_cq_in) == 272, "create_cq_in is 272 bytes");

/*
 * 64-byte CQE (Linux mlx5_cqe64, rdma-core struct mlx5_cqe64): byte_cnt at
 * byte 44, the QP number in the low 24 bits of byte 56's dword, wqe_counter
 * at byte 60, and op_own at byte 63 = opcode << 4 | ... | owner. The owner
 * bit of the CQE at producer count pc is (pc >> log_cq_size) & 1: it flips
 * at every wrap, so a consumer tells a new entry from last round's. A
 * 128-byte CQE carries this layout in its second half.
 */
enum prm_cqe_opcode {
	PRM_CQE_REQ = 0x0,
	PRM_CQE_RESP_SEND = 0x2,
	PRM_CQE_REQ_ERR = 0xd,
	PRM_CQE_RESP_ERR = 0xe,
	PRM_CQE_INVALID = 0xf,
};
PRM_FIELD(cqe64, byte_cnt, 0x160, 32);
PRM_FIELD(cqe64, qpn, 0x1c8, 24);
PRM_FIELD(cqe64, wqe_counter, 0x1e0, 16);
PRM_FIELD(cqe64, signature, 0x1f0, 8);
PRM_FIELD(cqe64, opcode, 0x1f8, 4);
PRM_FIELD(cqe64, owner, 0x1ff, 1);
PRM_LAYOUT(cqe64, 0x200);
_Static_assert(PRM_SIZE(cqe64) == 64, "cqe64 is 64 bytes");

/*
 * Doorbell records (mlx5 user-space layout): a CQ's record holds the
 * consumer index (dword 0, 24 bits) and the last arm request (dword 1:
 * sn << 28 | cmd << 24 | ci); a QP's holds its receive counter (dword 0)
 * and send counter (dword 1), big-endian like every PRM field.
 */
PRM_FIELD(cq_dbrec, ci, 0x08, 24);
PRM_FIELD(cq_dbrec, arm_sn, 0x22, 2);
PRM_FIELD(cq_dbrec, arm_cmd, 0x26, 2);
PRM_FIELD(cq_dbrec, arm_ci, 0x28, 24);
PRM_LAYOUT(cq_dbrec, 0x40);
_Static_assert(PRM_SIZE(cq_dbrec) == 8, "cq_dbrec is 8 bytes");
PRM_FIELD(qp_dbrec, rcv_counter, 0x00, 32);
PRM_FIELD(qp_dbrec, snd_counter, 0x20, 32);
PRM_LAYOUT(qp_dbrec, 0x40);
_Static_assert(PRM_SIZE(qp_dbrec) == 8, "qp_dbrec is 8 bytes");

/* CREATE_CQ output: cqn[24] at 0x48 (create_out.id). */
PRM_FIELD(create_cq_out, cqn, 0x48, 24);
PRM_LAYOUT(create_cq_out, 0x80);
_Static_assert(PRM_SIZE(create_cq_out) == 16, "create_cq_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_cq_out, cqn, create_out, id);

PRM_FIELD(destroy_cq_in, opcode, 0x00, 16);
PRM_FIELD(destroy_cq_in, uid, 0x10, 16);
PRM_FIELD(destroy_cq_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_cq_in, cqn, 0x48, 24);
PRM_LAYOUT(destroy_cq_in, 0x80);
_Static_assert(PRM_SIZE(destroy_cq_in) == 16, "destroy_cq_in is 16 bytes");
PRM_ASSERT_SAME_OFF(destroy_cq_in, cqn, destroy_in, id);

/* ---- QP ----------------------------------------------------------------- */
enum prm_qpc_state {
	PRM_QPC_STATE_RST = 0x0,
	PRM_QPC_STATE_INIT = 0x1,
	PRM_QPC_STATE_RTR = 0x2,
	PRM_QPC_STATE_RTS = 0x3,
	PRM_QPC_STATE_ERR = 0x6,
};
enum prm_qpc_st {
	PRM_QPC_ST_RC = 0x0,
	PRM_QPC_ST_UC = 0x1,
	PRM_QPC_ST_UD = 0x2,
};
enum prm_qpc_pm_state {
	PRM_QPC_PM_STATE_MIGRATED = 0x3,
};
enum prm_qpc_rq_type {
	PRM_QPC_RQ_TYPE_REGULAR = 0x0,
	PRM_QPC_RQ_TYPE_SRQ = 0x1,
	PRM_QPC_RQ_TYPE_ZERO_SIZE = 0x3,
};
enum prm_qpc_mtu {
	PRM_QPC_MTU_256 = 0x1,
	PRM_QPC_MTU_512 = 0x2,
	PRM_QPC_MTU_1K = 0x3,
	PRM_QPC_MTU_2K = 0x4,
	PRM_QPC_MTU_4K = 0x5,
};

/* Address path (ads), 352 bits; only what a loopback RC pair needs. */
PRM_FIELD(ads, fl, 0x000, 1);
PRM_FIELD(ads, pkey_index, 0x010, 16);
PRM_FIELD(ads, grh, 0x028, 1);
PRM_FIELD(ads, rlid, 0x030, 16);
PRM_FIELD(ads, ack_timeout, 0x040, 5);
PRM_FIELD(ads, hop_limit, 0x058, 8);
PRM_FIELD(ads, vhca_port_num, 0x128, 8);
PRM_LAYOUT(ads, 0x160);
_Static_assert(PRM_SIZE(ads) == 44, "ads is 44 bytes");

/*
 * QP context. The event QP of a virtq is an RC QP connected to a
 * firmware-side peer (remote_qpn), receive-only (no_sq) in the driver.
 */
PRM_FIELD(qpc, state, 0x000, 4);
PRM_FIELD(qpc, st, 0x008, 8);
PRM_FIELD(qpc, pm_state, 0x013, 2);
PRM_FIELD(qpc, offload_type, 0x018, 4);
PRM_FIELD(qpc, end_padding_mode, 0x01c, 2);
PRM_FIELD(qpc, wq_signature, 0x020, 1);
PRM_FIELD(qpc, pd, 0x028, 24);
PRM_FIELD(qpc, mtu, 0x040, 3);
PRM_FIELD(qpc, log_msg_max, 0x043, 5);
PRM_FIELD(qpc, log_rq_size, 0x049, 4);
PRM_FIELD(qpc, log_rq_stride, 0x04d, 3);
PRM_FIELD(qpc, no_sq, 0x050, 1);
PRM_FIELD(qpc, log_sq_size, 0x051, 4);
PRM_FIELD(qpc, ts_format, 0x058, 2);
PRM_FIELD(qpc, rlky, 0x05b, 1);
PRM_FIELD(qpc, counter_set_id, 0x060, 8);
PRM_FIELD(qpc, uar_page, 0x068, 24);
PRM_FIELD(qpc, user_index, 0x088, 24);
PRM_FIELD(qpc, log_page_size, 0x0a3, 5);
PRM_FIELD(qpc, remote_qpn, 0x0a8, 24);
PRM_SUB(qpc, primary_address_path, 0x0c0);		/* ads */
PRM_FIELD(qpc, primary_address_path_vhca_port_num, 0x1e8, 8);
PRM_SUB(qpc, secondary_address_path, 0x220);		/* ads */
PRM_FIELD(qpc, log_ack_req_freq, 0x380, 4);
PRM_FIELD(qpc, log_sra_max, 0x388, 3);
PRM_FIELD(qpc, retry_count, 0x38d, 3);
PRM_FIELD(qpc, rnr_retry, 0x390, 3);
PRM_FIELD(qpc, fre, 0x394, 1);
PRM_FIELD(qpc, next_send_psn, 0x3c8, 24);
PRM_FIELD(qpc, cqn_snd, 0x3e8, 24);
PRM_FIELD(qpc, log_rra_max, 0x488, 3);
PRM_FIELD(qpc, atomic_mode, 0x48c, 4);
PRM_FIELD(qpc, rre, 0x490, 1);
PRM_FIELD(qpc, rwe, 0x491, 1);
PRM_FIELD(qpc, rae, 0x492, 1);
PRM_FIELD(qpc, page_offset, 0x494, 6);
PRM_FIELD(qpc, min_rnr_nak, 0x4a3, 5);
PRM_FIELD(qpc, next_rcv_psn, 0x4a8, 24);
PRM_FIELD(qpc, cqn_rcv, 0x4e8, 24);
PRM_FIELD(qpc, dbr_addr, 0x500, 64);
PRM_FIELD(qpc, q_key, 0x540, 32);
PRM_FIELD(qpc, rq_type, 0x565, 3);
PRM_FIELD(qpc, srqn_rmpn_xrqn, 0x568, 24);
PRM_FIELD(qpc, hw_sq_wqebb_counter, 0x5a0, 16);
PRM_FIELD(qpc, sw_sq_wqebb_counter, 0x5b0, 16);
PRM_FIELD(qpc, hw_rq_counter, 0x5c0, 32);
PRM_FIELD(qpc, sw_rq_counter, 0x5e0, 32);
PRM_FIELD(qpc, dbr_umem_valid, 0x683, 1);
PRM_FIELD(qpc, dbr_umem_id, 0x720, 32);
PRM_LAYOUT(qpc, 0x740);
_Static_assert(PRM_SIZE(qpc) == 232, "qpc is 232 bytes");
_Static_assert(PRM_OFF(qpc, primary_address_path_vhca_port_num) ==
	       PRM_OFF(qpc, primary_address_path) + PRM_OFF(ads, vhca_port_num),
	       "qpc: vhca_port_num shortcut must match ads");

PRM_FIELD(create_qp_in, opcode, 0x00, 16);
PRM_FIELD(create_qp_in, uid, 0x10, 16);
PRM_FIELD(create_qp_in, op_mod, 0x30, 16);
PRM_FIELD(create_qp_in, qpc_ext, 0x40, 1);
PRM_FIELD(create_qp_in, opt_param_mask, 0x80, 32);
PRM_SUB(create_qp_in, qpc, 0x0c0);			/* qpc */
PRM_FIELD(create_qp_in, wq_umem_offset, 0x800, 64);
PRM_FIELD(create_qp_in, wq_umem_id, 0x840, 32);
PRM_FIELD(create_qp_in, wq_umem_valid, 0x860, 1);
PRM_SUB(create_qp_in, pas, 0x880);			/* page list follows */
PRM_LAYOUT(create_qp_in, 0x880);
_Static_assert(PRM_SIZE(create_qp_in) == 272, "create_qp_in is 272 bytes");

/* CREATE_QP output: qpn[24] at 0x48 (create_out.id). */
PRM_FIELD(create_qp_out, qpn, 0x48, 24);
PRM_LAYOUT(create_qp_out, 0x80);
_Static_assert(PRM_SIZE(create_qp_out) == 16, "create_qp_out is 16 bytes");
PRM_ASSERT_SAME_OFF(create_qp_out, qpn, create_out, id);

/* The three forward transitions share one shape: qpn, mask, new context. */
PRM_FIELD(rst2init_qp_in, opcode, 0x00, 16);
PRM_FIELD(rst2init_qp_in, uid, 0x10, 16);
PRM_FIELD(rst2init_qp_in, op_mod, 0x30, 16);
PRM_FIELD(rst2init_qp_in, qpn, 0x48, 24);
PRM_FIELD(rst2init_qp_in, opt_param_mask, 0x80, 32);
PRM_SUB(rst2init_qp_in, qpc, 0x0c0);
PRM_LAYOUT(rst2init_qp_in, 0x880);
_Static_assert(PRM_SIZE(rst2init_qp_in) == 272, "rst2init_qp_in is 272 bytes");

PRM_FIELD(init2rtr_qp_in, opcode, 0x00, 16);
PRM_FIELD(init2rtr_qp_in, uid, 0x10, 16);
PRM_FIELD(init2rtr_qp_in, op_mod, 0x30, 16);
PRM_FIELD(init2rtr_qp_in, qpn, 0x48, 24);
PRM_FIELD(init2rtr_qp_in, opt_param_mask, 0x80, 32);
PRM_SUB(init2rtr_qp_in, qpc, 0x0c0);
PRM_LAYOUT(init2rtr_qp_in, 0x880);
_Static_assert(PRM_SIZE(init2rtr_qp_in) == 272, "init2rtr_qp_in is 272 bytes");

PRM_FIELD(rtr2rts_qp_in, opcode, 0x00, 16);
PRM_FIELD(rtr2rts_qp_in, uid, 0x10, 16);
PRM_FIELD(rtr2rts_qp_in, op_mod, 0x30, 16);
PRM_FIELD(rtr2rts_qp_in, qpn, 0x48, 24);
PRM_FIELD(rtr2rts_qp_in, opt_param_mask, 0x80, 32);
PRM_SUB(rtr2rts_qp_in, qpc, 0x0c0);
PRM_LAYOUT(rtr2rts_qp_in, 0x880);
_Static_assert(PRM_SIZE(rtr2rts_qp_in) == 272, "rtr2rts_qp_in is 272 bytes");

/* 2RST_QP (mlx5_ifc_qp_2rst_in; C names cannot start with a digit). */
PRM_FIELD(qp_2rst_in, opcode, 0x00, 16);
PRM_FIELD(qp_2rst_in, uid, 0x10, 16);
PRM_FIELD(qp_2rst_in, op_mod, 0x30, 16);
PRM_FIELD(qp_2rst_in, qpn, 0x48, 24);
PRM_LAYOUT(qp_2rst_in, 0x80);
_Static_assert(PRM_SIZE(qp_2rst_in) == 16, "qp_2rst_in is 16 bytes");

PRM_FIELD(destroy_qp_in, opcode, 0x00, 16);
PRM_FIELD(destroy_qp_in, uid, 0x10, 16);
PRM_FIELD(destroy_qp_in, op_mod, 0x30, 16);
PRM_FIELD(destroy_qp_in, qpn, 0x48, 24);
PRM_LAYOUT(destroy_qp_in, 0x80);
_Static_assert(PRM_SIZE(destroy_qp_in) == 16, "destroy_qp_in is 16 bytes");
PRM_ASSERT_SAME_OFF(destroy_qp_in, qpn, destroy_in, id);

#endif /* MLX5_LM_PRM_LAYOUTS_NET_H */
