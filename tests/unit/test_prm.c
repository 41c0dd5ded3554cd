/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the PRM layer: every layout is checked bit for bit against
 * byte vectors derived by hand from the public interface headers (the
 * derivation is in the comment next to each byte), independently of the
 * accessors under test. Convention: PRM bit b is bit 7 - b % 8 of byte
 * b / 8; a field of width w at offset o has its least significant bit at
 * PRM bit o + w - 1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "prm.h"

/* One expected byte of a sparse vector: everything else is the fill. */
struct bp {
	uint16_t off;
	uint8_t val;
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void
expect_bytes(const void *got, const uint8_t *exp, size_t len)
{
	const uint8_t *g = got;
	size_t i;

	for (i = 0; i < len; i++) {
		if (g[i] != exp[i])
			fail_msg("byte 0x%zx: got 0x%02x, expected 0x%02x", i, g[i], exp[i]);
	}
}

/* Compare a buffer with `fill` everywhere except the listed bytes. */
static void
expect_sparse(const void *got, size_t len, uint8_t fill, const struct bp *p, size_t n)
{
	uint8_t *exp = malloc(len);
	size_t i;

	assert_non_null(exp);
	memset(exp, fill, len);
	for (i = 0; i < n; i++) {
		assert_true(p[i].off < len);
		exp[p[i].off] = p[i].val;
	}
	expect_bytes(got, exp, len);
	free(exp);
}

/* Reference bit numbering, deliberately not sharing code with prm.h. */
static int
ref_bit(const uint8_t *buf, uint32_t b)
{
	return (buf[b / 8] >> (7 - b % 8)) & 1;
}

static uint64_t
field_max(uint32_t w)
{
	return w == 64 ? UINT64_MAX : (1ull << w) - 1;
}

/* ---- Table of every named field ----------------------------------------- */
struct field_desc {
	const char *layout;
	const char *name;
	uint32_t off;
	uint32_t width;
	size_t layout_bytes;
};

#define F(s, f) { #s, #f, PRM_OFF(s, f), PRM_WIDTH(s, f), PRM_SIZE(s) }
static const struct field_desc all_fields[] = {
	F(cmd_in, opcode), F(cmd_in, uid), F(cmd_in, op_mod),
	F(cmd_out, status), F(cmd_out, syndrome),
	F(create_out, status), F(create_out, syndrome), F(create_out, id),
	F(destroy_in, opcode), F(destroy_in, uid), F(destroy_in, op_mod), F(destroy_in, id),
	F(general_obj_in_cmd_hdr, opcode), F(general_obj_in_cmd_hdr, uid),
	F(general_obj_in_cmd_hdr, obj_type), F(general_obj_in_cmd_hdr, obj_id),
	F(general_obj_out_cmd_hdr, status), F(general_obj_out_cmd_hdr, syndrome),
	F(general_obj_out_cmd_hdr, obj_id),
	F(virtio_q, virtio_q_type), F(virtio_q, event_mode), F(virtio_q, queue_index),
	F(virtio_q, full_emulation), F(virtio_q, virtio_version_1_0),
	F(virtio_q, offload_type), F(virtio_q, event_qpn_or_msix),
	F(virtio_q, doorbell_stride_index), F(virtio_q, queue_size),
	F(virtio_q, device_emulation_id), F(virtio_q, desc_addr), F(virtio_q, used_addr),
	F(virtio_q, available_addr), F(virtio_q, virtio_q_mkey), F(virtio_q, max_tunnel_desc),
	F(virtio_q, error_type), F(virtio_q, umem_1_id), F(virtio_q, umem_1_size),
	F(virtio_q, umem_1_offset), F(virtio_q, umem_2_id), F(virtio_q, umem_2_size),
	F(virtio_q, umem_2_offset), F(virtio_q, umem_3_id), F(virtio_q, umem_3_size),
	F(virtio_q, umem_3_offset), F(virtio_q, counter_set_id), F(virtio_q, pd),
	F(virtio_q, queue_period_mode), F(virtio_q, queue_period_us),
	F(virtio_q, queue_max_count), F(virtio_q, desc_group_mkey),
	F(virtio_net_q, modify_field_select), F(virtio_net_q, vhca_id),
	F(virtio_net_q, queue_feature_bit_mask_12_3),
	F(virtio_net_q, dirty_bitmap_dump_enable), F(virtio_net_q, vhost_log_page),
	F(virtio_net_q, state), F(virtio_net_q, queue_feature_bit_mask_2_0),
	F(virtio_net_q, tisn_or_qpn), F(virtio_net_q, dirty_bitmap_mkey),
	F(virtio_net_q, dirty_bitmap_size), F(virtio_net_q, dirty_bitmap_addr),
	F(virtio_net_q, hw_available_index), F(virtio_net_q, hw_used_index),
	F(virtio_q_counters, modify_field_select), F(virtio_q_counters, received_desc),
	F(virtio_q_counters, completed_desc), F(virtio_q_counters, error_cqes),
	F(virtio_q_counters, bad_desc_errors), F(virtio_q_counters, exceed_max_chain),
	F(virtio_q_counters, invalid_buffer),
	F(query_hca_cap_in, opcode), F(query_hca_cap_in, uid), F(query_hca_cap_in, op_mod),
	F(query_hca_cap_in, other_function), F(query_hca_cap_in, function_id),
	F(query_hca_cap_out, status), F(query_hca_cap_out, syndrome),
	F(virtio_emulation_cap, desc_tunnel_offload_type),
	F(virtio_emulation_cap, eth_frame_offload_type),
	F(virtio_emulation_cap, virtio_version_1_0),
	F(virtio_emulation_cap, device_features_bits_mask),
	F(virtio_emulation_cap, event_mode), F(virtio_emulation_cap, virtio_queue_type),
	F(virtio_emulation_cap, max_tunnel_desc),
	F(virtio_emulation_cap, log_doorbell_stride), F(virtio_emulation_cap, vnet_modify_ext),
	F(virtio_emulation_cap, virtio_net_q_addr_modify),
	F(virtio_emulation_cap, virtio_q_index_modify),
	F(virtio_emulation_cap, log_doorbell_bar_size),
	F(virtio_emulation_cap, doorbell_bar_offset),
	F(virtio_emulation_cap, max_num_virtio_queues),
	F(virtio_emulation_cap, desc_group_mkey_supported),
	F(virtio_emulation_cap, freeze_to_rdy_supported),
	F(virtio_emulation_cap, umem_1_buffer_param_a),
	F(virtio_emulation_cap, umem_1_buffer_param_b),
	F(virtio_emulation_cap, umem_2_buffer_param_a),
	F(virtio_emulation_cap, umem_2_buffer_param_b),
	F(virtio_emulation_cap, umem_3_buffer_param_a),
	F(virtio_emulation_cap, umem_3_buffer_param_b),
	F(mkc, free), F(mkc, access_mode_4_2), F(mkc, umr_en), F(mkc, a), F(mkc, rw),
	F(mkc, rr), F(mkc, lw), F(mkc, lr), F(mkc, access_mode_1_0), F(mkc, qpn),
	F(mkc, mkey_7_0), F(mkc, length64), F(mkc, pd), F(mkc, start_addr), F(mkc, len),
	F(mkc, translations_octword_size), F(mkc, log_page_size),
	F(create_mkey_in, opcode), F(create_mkey_in, uid), F(create_mkey_in, op_mod),
	F(create_mkey_in, pg_access), F(create_mkey_in, translations_octword_actual_size),
	F(create_mkey_in, mkey_umem_id), F(create_mkey_in, mkey_umem_offset),
	F(create_mkey_out, status), F(create_mkey_out, syndrome),
	F(create_mkey_out, mkey_index),
	F(destroy_mkey_in, opcode), F(destroy_mkey_in, mkey_index),
	F(klm, byte_count), F(klm, mkey), F(klm, address),
	F(mtt, ptag),
	F(query_special_contexts_in, opcode),
	F(query_special_contexts_out, status), F(query_special_contexts_out, syndrome),
	F(query_special_contexts_out, dump_fill_mkey),
	F(query_special_contexts_out, resd_lkey), F(query_special_contexts_out, null_mkey),
	F(cmd_hca_cap, vhca_id), F(cmd_hca_cap, log_max_srq_sz), F(cmd_hca_cap, log_max_qp_sz),
	F(cmd_hca_cap, log_max_qp), F(cmd_hca_cap, log_max_cq_sz), F(cmd_hca_cap, log_max_cq),
	F(cmd_hca_cap, log_max_eq_sz), F(cmd_hca_cap, log_max_mkey),
	F(cmd_hca_cap, log_max_eq), F(cmd_hca_cap, max_indirection),
	F(cmd_hca_cap, log_max_mrw_sz), F(cmd_hca_cap, null_mkey),
	F(cmd_hca_cap, log_max_klm_list_size), F(cmd_hca_cap, nic_flow_table),
	F(cmd_hca_cap, eswitch_manager), F(cmd_hca_cap, port_type), F(cmd_hca_cap, num_ports),
	F(cmd_hca_cap, log_max_msg), F(cmd_hca_cap, cqe_version), F(cmd_hca_cap, umem_uid_0),
	F(cmd_hca_cap, log_pg_sz), F(cmd_hca_cap, log_max_transport_domain),
	F(cmd_hca_cap, log_max_pd), F(cmd_hca_cap, log_max_rq), F(cmd_hca_cap, log_max_sq),
	F(cmd_hca_cap, log_max_tir), F(cmd_hca_cap, log_max_tis), F(cmd_hca_cap, log_max_rqt),
	F(cmd_hca_cap, log_max_rqt_size), F(cmd_hca_cap, log_max_current_mc_list),
	F(cmd_hca_cap, log_max_current_uc_list), F(cmd_hca_cap, general_obj_types),
	F(cmd_hca_cap, max_num_eqs), F(cmd_hca_cap, log_uar_page_sz),
	F(cmd_hca_cap, device_frequency_khz),
	F(flow_table_prop_layout, ft_support), F(flow_table_prop_layout, log_max_ft_size),
	F(flow_table_prop_layout, max_ft_level), F(flow_table_prop_layout, log_max_ft_num),
	F(flow_table_prop_layout, log_max_destination),
	F(flow_table_prop_layout, log_max_flow),
	F(alloc_pd_in, opcode), F(alloc_pd_in, uid), F(alloc_pd_in, op_mod),
	F(alloc_pd_out, pd),
	F(dealloc_pd_in, opcode), F(dealloc_pd_in, uid), F(dealloc_pd_in, op_mod),
	F(dealloc_pd_in, pd),
	F(alloc_transport_domain_in, opcode), F(alloc_transport_domain_in, uid),
	F(alloc_transport_domain_in, op_mod),
	F(alloc_transport_domain_out, transport_domain),
	F(dealloc_transport_domain_in, opcode), F(dealloc_transport_domain_in, uid),
	F(dealloc_transport_domain_in, op_mod),
	F(dealloc_transport_domain_in, transport_domain),
	F(tisc, strict_lag_tx_port_affinity), F(tisc, lag_tx_port_affinity), F(tisc, prio),
	F(tisc, transport_domain), F(tisc, underlay_qpn),
	F(create_tis_in, opcode), F(create_tis_in, uid), F(create_tis_in, op_mod),
	F(create_tis_out, tisn),
	F(destroy_tis_in, opcode), F(destroy_tis_in, uid), F(destroy_tis_in, op_mod),
	F(destroy_tis_in, tisn),
	F(rq_num, rq_num),
	F(rqtc, list_q_type), F(rqtc, rqt_max_size), F(rqtc, rqt_actual_size),
	F(create_rqt_in, opcode), F(create_rqt_in, uid), F(create_rqt_in, op_mod),
	F(create_rqt_out, rqtn),
	F(modify_rqt_in, opcode), F(modify_rqt_in, uid), F(modify_rqt_in, op_mod),
	F(modify_rqt_in, rqtn), F(modify_rqt_in, bitmask),
	F(destroy_rqt_in, opcode), F(destroy_rqt_in, uid), F(destroy_rqt_in, op_mod),
	F(destroy_rqt_in, rqtn),
	F(rx_hash_field_select, l3_prot_type), F(rx_hash_field_select, l4_prot_type),
	F(rx_hash_field_select, selected_fields),
	F(tirc, disp_type), F(tirc, lro_timeout_period_usecs), F(tirc, lro_enable_mask),
	F(tirc, lro_max_msg_sz), F(tirc, inline_rqn), F(tirc, rx_hash_symmetric),
	F(tirc, tunneled_offload_en), F(tirc, indirect_table), F(tirc, rx_hash_fn),
	F(tirc, self_lb_block), F(tirc, transport_domain),
	F(create_tir_in, opcode), F(create_tir_in, uid), F(create_tir_in, op_mod),
	F(create_tir_out, tirn),
	F(destroy_tir_in, opcode), F(destroy_tir_in, uid), F(destroy_tir_in, op_mod),
	F(destroy_tir_in, tirn),
	F(flow_table_context, reformat_en), F(flow_table_context, decap_en),
	F(flow_table_context, termination_table), F(flow_table_context, table_miss_action),
	F(flow_table_context, level), F(flow_table_context, log_size),
	F(flow_table_context, table_miss_id), F(flow_table_context, lag_master_next_table_id),
	F(create_flow_table_in, opcode), F(create_flow_table_in, uid),
	F(create_flow_table_in, op_mod), F(create_flow_table_in, other_vport),
	F(create_flow_table_in, vport_number), F(create_flow_table_in, table_type),
	F(create_flow_table_out, table_id),
	F(destroy_flow_table_in, opcode), F(destroy_flow_table_in, uid),
	F(destroy_flow_table_in, op_mod), F(destroy_flow_table_in, other_vport),
	F(destroy_flow_table_in, vport_number), F(destroy_flow_table_in, table_type),
	F(destroy_flow_table_in, table_id),
	F(fte_match_set_lyr_2_4, smac_47_16), F(fte_match_set_lyr_2_4, smac_15_0),
	F(fte_match_set_lyr_2_4, ethertype), F(fte_match_set_lyr_2_4, dmac_47_16),
	F(fte_match_set_lyr_2_4, dmac_15_0), F(fte_match_set_lyr_2_4, first_prio),
	F(fte_match_set_lyr_2_4, first_cfi), F(fte_match_set_lyr_2_4, first_vid),
	F(fte_match_set_lyr_2_4, ip_protocol), F(fte_match_set_lyr_2_4, ip_dscp),
	F(fte_match_set_lyr_2_4, ip_ecn), F(fte_match_set_lyr_2_4, cvlan_tag),
	F(fte_match_set_lyr_2_4, svlan_tag), F(fte_match_set_lyr_2_4, frag),
	F(fte_match_set_lyr_2_4, ip_version), F(fte_match_set_lyr_2_4, tcp_flags),
	F(fte_match_set_lyr_2_4, tcp_sport), F(fte_match_set_lyr_2_4, tcp_dport),
	F(fte_match_set_lyr_2_4, ttl_hoplimit), F(fte_match_set_lyr_2_4, udp_sport),
	F(fte_match_set_lyr_2_4, udp_dport), F(fte_match_set_lyr_2_4, src_ipv4),
	F(fte_match_set_lyr_2_4, dst_ipv4),
	F(create_flow_group_in, opcode), F(create_flow_group_in, uid),
	F(create_flow_group_in, op_mod), F(create_flow_group_in, other_vport),
	F(create_flow_group_in, vport_number), F(create_flow_group_in, table_type),
	F(create_flow_group_in, table_id), F(create_flow_group_in, start_flow_index),
	F(create_flow_group_in, end_flow_index),
	F(create_flow_group_in, match_criteria_enable),
	F(create_flow_group_out, group_id),
	F(destroy_flow_group_in, opcode), F(destroy_flow_group_in, uid),
	F(destroy_flow_group_in, op_mod), F(destroy_flow_group_in, other_vport),
	F(destroy_flow_group_in, vport_number), F(destroy_flow_group_in, table_type),
	F(destroy_flow_group_in, table_id), F(destroy_flow_group_in, group_id),
	F(dest_format_struct, destination_type), F(dest_format_struct, destination_id),
	F(flow_context, group_id), F(flow_context, flow_tag), F(flow_context, action),
	F(flow_context, extended_destination), F(flow_context, destination_list_size),
	F(flow_context, flow_counter_list_size),
	F(set_fte_in, opcode), F(set_fte_in, uid), F(set_fte_in, op_mod),
	F(set_fte_in, other_vport), F(set_fte_in, vport_number), F(set_fte_in, table_type),
	F(set_fte_in, table_id), F(set_fte_in, modify_enable_mask), F(set_fte_in, flow_index),
	F(delete_fte_in, opcode), F(delete_fte_in, uid), F(delete_fte_in, op_mod),
	F(delete_fte_in, other_vport), F(delete_fte_in, vport_number),
	F(delete_fte_in, table_type), F(delete_fte_in, table_id), F(delete_fte_in, flow_index),
	F(cqc, status), F(cqc, dbr_umem_valid), F(cqc, cqe_sz), F(cqc, cc),
	F(cqc, scqe_break_moderation_en), F(cqc, oi), F(cqc, cq_period_mode),
	F(cqc, cqe_comp_en), F(cqc, mini_cqe_res_format), F(cqc, st), F(cqc, dbr_umem_id),
	F(cqc, page_offset), F(cqc, log_cq_size), F(cqc, uar_page), F(cqc, cq_period),
	F(cqc, cq_max_count), F(cqc, c_eqn), F(cqc, log_page_size),
	F(cqc, last_notified_index), F(cqc, last_solicit_index), F(cqc, consumer_counter),
	F(cqc, producer_counter), F(cqc, dbr_addr),
	F(create_cq_in, opcode), F(create_cq_in, uid), F(create_cq_in, op_mod),
	F(create_cq_in, cq_umem_offset), F(create_cq_in, cq_umem_id),
	F(create_cq_in, cq_umem_valid),
	F(create_cq_out, cqn),
	F(destroy_cq_in, opcode), F(destroy_cq_in, uid), F(destroy_cq_in, op_mod),
	F(destroy_cq_in, cqn),
	F(ads, fl), F(ads, pkey_index), F(ads, grh), F(ads, rlid), F(ads, ack_timeout),
	F(ads, hop_limit), F(ads, vhca_port_num),
	F(qpc, state), F(qpc, st), F(qpc, pm_state), F(qpc, offload_type),
	F(qpc, end_padding_mode), F(qpc, wq_signature), F(qpc, pd), F(qpc, mtu),
	F(qpc, log_msg_max), F(qpc, log_rq_size), F(qpc, log_rq_stride), F(qpc, no_sq),
	F(qpc, log_sq_size), F(qpc, ts_format), F(qpc, rlky), F(qpc, counter_set_id),
	F(qpc, uar_page), F(qpc, user_index), F(qpc, log_page_size), F(qpc, remote_qpn),
	F(qpc, primary_address_path_vhca_port_num), F(qpc, log_ack_req_freq),
	F(qpc, log_sra_max), F(qpc, retry_count), F(qpc, rnr_retry), F(qpc, fre),
	F(qpc, next_send_psn), F(qpc, cqn_snd), F(qpc, log_rra_max), F(qpc, atomic_mode),
	F(qpc, rre), F(qpc, rwe), F(qpc, rae), F(qpc, page_offset), F(qpc, min_rnr_nak),
	F(qpc, next_rcv_psn), F(qpc, cqn_rcv), F(qpc, dbr_addr), F(qpc, q_key),
	F(qpc, rq_type), F(qpc, srqn_rmpn_xrqn), F(qpc, hw_sq_wqebb_counter),
	F(qpc, sw_sq_wqebb_counter), F(qpc, hw_rq_counter), F(qpc, sw_rq_counter),
	F(qpc, dbr_umem_valid), F(qpc, dbr_umem_id),
	F(create_qp_in, opcode), F(create_qp_in, uid), F(create_qp_in, op_mod),
	F(create_qp_in, qpc_ext), F(create_qp_in, opt_param_mask),
	F(create_qp_in, wq_umem_offset), F(create_qp_in, wq_umem_id),
	F(create_qp_in, wq_umem_valid),
	F(create_qp_out, qpn),
	F(rst2init_qp_in, opcode), F(rst2init_qp_in, uid), F(rst2init_qp_in, op_mod),
	F(rst2init_qp_in, qpn), F(rst2init_qp_in, opt_param_mask),
	F(init2rtr_qp_in, opcode), F(init2rtr_qp_in, uid), F(init2rtr_qp_in, op_mod),
	F(init2rtr_qp_in, qpn), F(init2rtr_qp_in, opt_param_mask),
	F(rtr2rts_qp_in, opcode), F(rtr2rts_qp_in, uid), F(rtr2rts_qp_in, op_mod),
	F(rtr2rts_qp_in, qpn), F(rtr2rts_qp_in, opt_param_mask),
	F(qp_2rst_in, opcode), F(qp_2rst_in, uid), F(qp_2rst_in, op_mod), F(qp_2rst_in, qpn),
	F(destroy_qp_in, opcode), F(destroy_qp_in, uid), F(destroy_qp_in, op_mod),
	F(destroy_qp_in, qpn),
	F(cqe64, byte_cnt), F(cqe64, qpn), F(cqe64, wqe_counter), F(cqe64, signature),
	F(cqe64, opcode), F(cqe64, owner),
	F(cq_dbrec, ci), F(cq_dbrec, arm_sn), F(cq_dbrec, arm_cmd), F(cq_dbrec, arm_ci),
	F(qp_dbrec, rcv_counter), F(qp_dbrec, snd_counter),
};
#undef F

static size_t
max_layout_bytes(void)
{
	size_t i, m = 0;

	for (i = 0; i < NELEM(all_fields); i++)
		if (all_fields[i].layout_bytes > m)
			m = all_fields[i].layout_bytes;
	return m;
}

/* Setting a field to all ones in a zeroed buffer sets exactly its bits. */
static void
test_every_field_sets_exactly_its_bits(void **state)
{
	size_t n = max_layout_bytes(), i;
	uint8_t *buf = malloc(n);
	uint32_t b;

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < NELEM(all_fields); i++) {
		const struct field_desc *d = &all_fields[i];

		memset(buf, 0, n);
		prm_set_bits(buf, d->off, d->width, field_max(d->width));
		for (b = 0; b < d->layout_bytes * 8; b++) {
			int in = b >= d->off && b < d->off + d->width;

			if (ref_bit(buf, b) != in)
				fail_msg("%s.%s: bit 0x%x is %d", d->layout, d->name, b, !in);
		}
	}
	free(buf);
}

/* Clearing a field in an all-ones buffer clears only its bits. */
static void
test_clearing_any_field_keeps_its_neighbours(void **state)
{
	size_t n = max_layout_bytes(), i;
	uint8_t *buf = malloc(n);
	uint32_t b;

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < NELEM(all_fields); i++) {
		const struct field_desc *d = &all_fields[i];

		memset(buf, 0xff, n);
		prm_set_bits(buf, d->off, d->width, 0);
		for (b = 0; b < d->layout_bytes * 8; b++) {
			int in = b >= d->off && b < d->off + d->width;

			if (ref_bit(buf, b) != !in)
				fail_msg("%s.%s: bit 0x%x is %d", d->layout, d->name, b, in);
		}
	}
	free(buf);
}

/* PRM_GET returns what PRM_SET stored: max, a pattern, and truncation. */
static void
test_get_round_trips_every_field(void **state)
{
	size_t n = max_layout_bytes(), i;
	uint8_t *buf = malloc(n);

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < NELEM(all_fields); i++) {
		const struct field_desc *d = &all_fields[i];
		uint64_t m = field_max(d->width);
		uint64_t pat = 0xa5c3f00f96e11e69ull & m;

		memset(buf, 0x3c, n);
		prm_set_bits(buf, d->off, d->width, m);
		assert_true(prm_get_bits(buf, d->off, d->width) == m);
		prm_set_bits(buf, d->off, d->width, pat);
		assert_true(prm_get_bits(buf, d->off, d->width) == pat);
		/* Bits above the width are dropped, not spilled into neighbours. */
		if (d->width < 64) {
			prm_set_bits(buf, d->off, d->width, (m + 1) | 1);
			assert_true(prm_get_bits(buf, d->off, d->width) == 1);
		}
	}
	free(buf);
}

/* No field reaches past the end of its layout. */
static void
test_every_field_fits_its_layout(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(all_fields); i++) {
		const struct field_desc *d = &all_fields[i];

		if (d->off + d->width > d->layout_bytes * 8)
			fail_msg("%s.%s ends at 0x%x, layout is 0x%zx bits", d->layout,
				 d->name, d->off + d->width, d->layout_bytes * 8);
	}
}

/*
 * No two named fields of one layout share a bit: a typo'd offset almost
 * always lands on a neighbour (mkc.qpn at 0x28 overlapped mkey_7_0).
 */
static void
test_fields_of_a_layout_do_not_overlap(void **state)
{
	size_t i, j;

	(void)state;
	for (i = 0; i < NELEM(all_fields); i++) {
		const struct field_desc *a = &all_fields[i];

		for (j = i + 1; j < NELEM(all_fields); j++) {
			const struct field_desc *b = &all_fields[j];

			if (strcmp(a->layout, b->layout) != 0)
				continue;
			if (a->off < b->off + b->width && b->off < a->off + a->width)
				fail_msg("%s: %s and %s overlap", a->layout, a->name, b->name);
		}
	}
}

/* ---- Composition ---------------------------------------------------------- */
/*
 * Each layout's size is asserted at compile time beside it (prm_layouts*.h,
 * as mlx5_ifc.h gives it); what is checked here is how they nest: a nested
 * context starts where its parent says and ends where the next parent
 * field starts (the headers lay them out back to back).
 */
static void
test_nested_layouts_tile_their_parents(void **state)
{
	(void)state;
	assert_int_equal(PRM_OFF(virtq_cmd, obj), PRM_SIZE(general_obj_in_cmd_hdr) * 8);
	assert_int_equal(PRM_OFF(virtq_cmd, q),
			 PRM_OFF(virtq_cmd, obj) + PRM_OFF(virtio_net_q, virtio_q_context));
	assert_int_equal(PRM_SIZE(virtq_cmd) * 8,
			 PRM_OFF(virtq_cmd, obj) + PRM_SIZE(virtio_net_q) * 8);
	assert_int_equal(PRM_SIZE(virtio_net_q) * 8,
			 PRM_OFF(virtio_net_q, virtio_q_context) + PRM_SIZE(virtio_q) * 8);
	assert_int_equal(PRM_SIZE(virtq_counters_cmd) * 8,
			 PRM_OFF(virtq_counters_cmd, obj) + PRM_SIZE(virtio_q_counters) * 8);
	assert_int_equal(PRM_OFF(create_mkey_in, mkc) + PRM_SIZE(mkc) * 8, 0x280);
	assert_int_equal(PRM_OFF(query_hca_cap_out, capability) + 0x8000,
			 PRM_SIZE(query_hca_cap_out) * 8);
	assert_int_equal(PRM_OFF(create_tis_in, ctx) + PRM_SIZE(tisc) * 8,
			 PRM_SIZE(create_tis_in) * 8);
	assert_int_equal(PRM_OFF(create_tir_in, ctx) + PRM_SIZE(tirc) * 8,
			 PRM_SIZE(create_tir_in) * 8);
	assert_int_equal(PRM_OFF(create_rqt_in, rqt_context) + PRM_SIZE(rqtc) * 8,
			 PRM_SIZE(create_rqt_in) * 8);
	assert_int_equal(PRM_OFF(modify_rqt_in, ctx) + PRM_SIZE(rqtc) * 8,
			 PRM_SIZE(modify_rqt_in) * 8);
	assert_int_equal(PRM_OFF(rqtc, rq_num), PRM_SIZE(rqtc) * 8);
	assert_int_equal(PRM_OFF(tirc, rx_hash_field_selector_inner),
			 PRM_OFF(tirc, rx_hash_field_selector_outer) +
			 PRM_SIZE(rx_hash_field_select) * 8);
	assert_int_equal(PRM_OFF(create_flow_table_in, flow_table_context) +
			 PRM_SIZE(flow_table_context) * 8, PRM_SIZE(create_flow_table_in) * 8);
	assert_int_equal(PRM_OFF(fte_match_param, misc_parameters),
			 PRM_SIZE(fte_match_set_lyr_2_4) * 8);
	assert_int_equal(PRM_OFF(create_flow_group_in, match_criteria) +
			 PRM_SIZE(fte_match_param) * 8, 0x1200);
	assert_int_equal(PRM_OFF(flow_context, match_value) + PRM_SIZE(fte_match_param) * 8,
			 0x1200);
	assert_int_equal(PRM_OFF(flow_context, destination), PRM_SIZE(flow_context) * 8);
	assert_int_equal(PRM_OFF(set_fte_in, flow_context) + PRM_SIZE(flow_context) * 8,
			 PRM_SIZE(set_fte_in) * 8);
	assert_int_equal(PRM_OFF(create_cq_in, cq_context) + PRM_SIZE(cqc) * 8,
			 PRM_OFF(create_cq_in, cq_umem_offset));
	assert_int_equal(PRM_OFF(create_qp_in, qpc) + PRM_SIZE(qpc) * 8,
			 PRM_OFF(create_qp_in, wq_umem_offset));
	assert_int_equal(PRM_OFF(rst2init_qp_in, qpc) + PRM_SIZE(qpc) * 8 + 0x80,
			 PRM_SIZE(rst2init_qp_in) * 8);
	assert_int_equal(PRM_OFF(qpc, secondary_address_path),
			 PRM_OFF(qpc, primary_address_path) + PRM_SIZE(ads) * 8);
	assert_int_equal(PRM_OFF(flow_table_nic_cap, flow_table_properties_nic_transmit),
			 PRM_OFF(flow_table_nic_cap, flow_table_properties_nic_receive) +
			 3 * PRM_SIZE(flow_table_prop_layout) * 8);
}

/* ---- Envelope and shared views ------------------------------------------ */
static void
test_hca_cap_op_mod_packs_type_and_current(void **state)
{
	(void)state;
	/* op_mod = cap_type << 1 | current: 0x13 << 1 | 1 = 0x26 | 1. */
	assert_int_equal(PRM_HCA_CAP_OP_MOD(0x13, 1), 0x27);
	assert_int_equal(PRM_HCA_CAP_OP_MOD(0x13, 0), 0x26);
	assert_int_equal(PRM_HCA_CAP_OP_MOD(PRM_CAP_GENERAL, 1), 0x01);
	assert_int_equal(PRM_HCA_CAP_OP_MOD(PRM_CAP_NIC_FLOW_TABLE, 1), 0x0f);
	/* Any non-zero "current" means current. */
	assert_int_equal(PRM_HCA_CAP_OP_MOD(0, 7), 0x01);
}

static void
test_cmd_envelope_encoding(void **state)
{
	uint8_t in[8] = { 0 };
	uint8_t out[8] = {
		0x03, 0x00, 0x00, 0x00,		/* status BAD_PARAM(3) @0x00 */
		0x12, 0x34, 0xab, 0xcd,		/* syndrome @0x20 */
	};
	static const uint8_t exp[8] = {
		0x0a, 0x01,			/* opcode 0xa01 @0x00 */
		0xbe, 0xef,			/* uid 0xbeef @0x10 */
		0x00, 0x00,			/* 0x20..0x2f reserved */
		0x00, 0x0d,			/* op_mod / obj_type 0x000d @0x30 */
	};

	(void)state;
	PRM_SET(cmd_in, in, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	PRM_SET(cmd_in, in, uid, 0xbeef);
	PRM_SET(cmd_in, in, op_mod, PRM_OBJ_VIRTIO_NET_Q);
	expect_bytes(in, exp, sizeof(exp));
	assert_int_equal(PRM_GET(cmd_out, out, status), PRM_STATUS_BAD_PARAM);
	assert_int_equal(PRM_GET(cmd_out, out, syndrome), 0x1234abcd);
}

/* Both shared views sit at 0x48 and are 24 bits, for every classic object. */
static void
test_create_and_destroy_ids_share_offset_0x48(void **state)
{
	uint8_t out[16] = {
		0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0x12, 0x34, 0x56,		/* reserved byte 8, id @0x48 */
		0, 0, 0, 0,
	};
	static const uint8_t exp[16] = {
		0x02, 0x02, 0x00, 0x00,		/* opcode DESTROY_MKEY 0x202 */
		0, 0, 0, 0,
		0x00, 0x65, 0x43, 0x21,		/* id 0x654321 @0x48, 0x40..0x47 zero */
		0, 0, 0, 0,
	};
	uint8_t in[16] = { 0 };

	(void)state;
	assert_int_equal(PRM_GET(create_out, out, id), 0x123456);
	assert_int_equal(PRM_GET(create_tir_out, out, tirn), 0x123456);
	assert_int_equal(PRM_GET(create_flow_table_out, out, table_id), 0x123456);
	assert_int_equal(PRM_GET(create_mkey_out, out, mkey_index), 0x123456);
	assert_int_equal(PRM_GET(alloc_pd_out, out, pd), 0x123456);
	PRM_SET(destroy_in, in, opcode, PRM_CMD_DESTROY_MKEY);
	PRM_SET(destroy_in, in, id, 0x654321);
	expect_bytes(in, exp, sizeof(exp));
	assert_int_equal(PRM_GET(destroy_mkey_in, in, mkey_index), 0x654321);
	assert_int_equal(PRM_GET(destroy_qp_in, in, qpn), 0x654321);
	assert_int_equal(PRM_GET(dealloc_transport_domain_in, in, transport_domain), 0x654321);
}

static void
test_general_obj_hdr_encoding(void **state)
{
	uint8_t in[16] = { 0 };
	static const uint8_t exp[16] = {
		0x0a, 0x02, 0x00, 0x07,		/* opcode QUERY 0xa02, uid 7 */
		0x00, 0x00, 0x00, 0x1c,		/* obj_type VIRTIO_Q_COUNTERS @0x30 */
		0x00, 0x00, 0x12, 0x34,		/* obj_id 0x1234 @0x40 */
		0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t out[16] = {
		0, 0, 0, 0, 0, 0, 0, 0,
		0xde, 0xad, 0xbe, 0xef,		/* obj_id @0x40, all 32 bits */
		0, 0, 0, 0,
	};

	(void)state;
	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, uid, 7);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 0x1234);
	expect_bytes(in, exp, sizeof(exp));
	assert_int_equal(PRM_GET(general_obj_out_cmd_hdr, out, obj_id), 0xdeadbeef);
}

/* ---- virtio objects ------------------------------------------------------ */
static void
test_virtq_create_encoding(void **state)
{
	uint8_t buf[PRM_SIZE(virtq_cmd)];
	void *obj = PRM_ADDR(virtq_cmd, buf, obj);
	void *q = PRM_ADDR(virtq_cmd, buf, q);
	/* obj starts at byte 0x10, q (obj + 0x200 bits) at byte 0x50. */
	static const struct bp exp[] = {
		{ 0x00, 0x0a }, { 0x01, 0x00 },	/* opcode CREATE 0xa00 */
		{ 0x07, 0x0d },			/* obj_type VIRTIO_NET_Q @0x30 */
		{ 0x17, 0x41 },			/* modify_field_select 0x41 @obj 0x0, byte 7 */
		{ 0x1d, 0x02 },			/* vhca_id 2 @obj 0x60: obj bytes 0xc,0xd */
		/* feature_bit_mask_12_3 0x201 @obj 0x80[10]: MSB bit 0x80 -> obj byte
		 * 0x10 = 0x80, LSB bit 0x89 -> obj byte 0x11 bit 1 = 0x40 */
		{ 0x20, 0x80 }, { 0x21, 0x40 },
		{ 0x23, 0x01 },	/* state RDY @obj 0x9c[4]: obj byte 0x13 low nibble */
		/* feature_bit_mask_2_0 4 @obj 0xa5[3]: obj byte 0x14 bits 5..7 = 100 */
		{ 0x24, 0x04 },
		{ 0x26, 0x0a }, { 0x27, 0xbc },	/* tisn_or_qpn 0xabc @obj 0xa8 */
		/* dirty_bitmap_addr 0x1122334455667788 @obj 0x100: obj bytes 0x20.. */
		{ 0x30, 0x11 }, { 0x31, 0x22 }, { 0x32, 0x33 }, { 0x33, 0x44 },
		{ 0x34, 0x55 }, { 0x35, 0x66 }, { 0x36, 0x77 }, { 0x37, 0x88 },
		{ 0x38, 0x12 }, { 0x39, 0x34 },	/* hw_available_index @obj 0x140 */
		{ 0x3a, 0x56 }, { 0x3b, 0x78 },	/* hw_used_index @obj 0x150 */
		{ 0x50, 0x01 },			/* q: virtio_q_type PACKED @0 */
		{ 0x51, 0x01 },			/* q: event_mode QP @0xd[3]: byte 1 bits 5..7 */
		{ 0x53, 0x03 },			/* q: queue_index 3 @0x10 */
		{ 0x54, 0xc0 },	/* q: full_emulation @0x20, virtio_version_1_0 @0x21 */
		{ 0x56, 0x04 }, { 0x57, 0x44 },	/* q: event_qpn_or_msix 0x444 @0x28 */
		{ 0x5a, 0x01 },			/* q: queue_size 0x100 @0x50: q bytes 0xa,0xb */
		/* q: desc_addr 0x12345000 @0x80: q bytes 0x10..0x17 = 0 0 0 0 12 34 50 00 */
		{ 0x64, 0x12 }, { 0x65, 0x34 }, { 0x66, 0x50 },
		{ 0x7a, 0x05 },	/* q: virtio_q_mkey 0x500 @0x140: q bytes 0x28..0x2b */
		{ 0x96, 0x10 },	/* q: umem_2_size 0x1000 @0x220: q bytes 0x44..0x47 */
		{ 0xb7, 0x33 },			/* q: pd 0x33 @0x328: q bytes 0x65..0x67 */
		/* q: queue_period_mode 1 @0x342[2] -> q byte 0x68 bits 2..3 = 0x10;
		 * queue_period_us 0xff @0x344[12]: q byte 0x68 low nibble 0, byte 0x69 0xff */
		{ 0xb8, 0x10 }, { 0xb9, 0xff },
		{ 0xbb, 0x10 },			/* q: queue_max_count 0x10 @0x350 */
		{ 0xbe, 0x06 },			/* q: desc_group_mkey 0x600 @0x360 */
	};

	(void)state;
	memset(buf, 0, sizeof(buf));
	PRM_SET(general_obj_in_cmd_hdr, buf, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, buf, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(virtio_net_q, obj, modify_field_select,
		PRM_VIRTQ_MODIFY_STATE | PRM_VIRTQ_MODIFY_ADDRS);
	PRM_SET(virtio_net_q, obj, vhca_id, 2);
	/* Feature bits 12 and 3 land in the 12_3 part, bit 2 in the 2_0 part. */
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_12_3,
		((1u << PRM_VIRTQ_FEAT_HOST_TSO4) | (1u << 3)) >> 3);
	PRM_SET(virtio_net_q, obj, state, PRM_VIRTQ_STATE_RDY);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_2_0,
		(1u << PRM_VIRTQ_FEAT_MRG_RXBUF) & 7);
	PRM_SET(virtio_net_q, obj, tisn_or_qpn, 0xabc);
	PRM_SET(virtio_net_q, obj, dirty_bitmap_addr, 0x1122334455667788ull);
	PRM_SET(virtio_net_q, obj, hw_available_index, 0x1234);
	PRM_SET(virtio_net_q, obj, hw_used_index, 0x5678);
	PRM_SET(virtio_q, q, virtio_q_type, PRM_VIRTQ_TYPE_PACKED);
	PRM_SET(virtio_q, q, event_mode, PRM_VIRTQ_EVENT_MODE_QP);
	PRM_SET(virtio_q, q, queue_index, 3);
	PRM_SET(virtio_q, q, full_emulation, 1);
	PRM_SET(virtio_q, q, virtio_version_1_0, 1);
	PRM_SET(virtio_q, q, event_qpn_or_msix, 0x444);
	PRM_SET(virtio_q, q, queue_size, 0x100);
	PRM_SET(virtio_q, q, desc_addr, 0x12345000ull);
	PRM_SET(virtio_q, q, virtio_q_mkey, 0x500);
	PRM_SET(virtio_q, q, umem_2_size, 0x1000);
	PRM_SET(virtio_q, q, pd, 0x33);
	PRM_SET(virtio_q, q, queue_period_mode, 1);
	PRM_SET(virtio_q, q, queue_period_us, 0xff);
	PRM_SET(virtio_q, q, queue_max_count, 0x10);
	PRM_SET(virtio_q, q, desc_group_mkey, 0x600);
	expect_sparse(buf, sizeof(buf), 0, exp, NELEM(exp));
	assert_int_equal(PRM_GET(virtio_net_q, obj, state), PRM_VIRTQ_STATE_RDY);
	assert_true(PRM_GET(virtio_q, q, desc_addr) == 0x12345000ull);
}

/* The emulator fills a query answer, the driver decodes it. */
static void
test_virtq_counters_decoding(void **state)
{
	uint8_t buf[PRM_SIZE(virtq_counters_cmd)];
	const void *obj = PRM_CADDR(virtq_counters_cmd, buf, obj);

	(void)state;
	memset(buf, 0, sizeof(buf));
	/* obj at byte 0x10; received_desc @0x80 -> obj bytes 0x10..0x17. */
	buf[0x23] = 0x01;	/* received_desc high dword = 1 */
	buf[0x27] = 0x02;	/* received_desc low dword = 2 */
	buf[0x2f] = 0x09;	/* completed_desc @0xc0: obj bytes 0x18..0x1f */
	buf[0x33] = 0x03;	/* error_cqes @0x100: obj bytes 0x20..0x23 */
	buf[0x37] = 0x05;	/* bad_desc_errors @0x120 */
	buf[0x3b] = 0x06;	/* exceed_max_chain @0x140 */
	buf[0x3f] = 0x04;	/* invalid_buffer @0x160: obj bytes 0x2c..0x2f */
	assert_true(PRM_GET(virtio_q_counters, obj, received_desc) == 0x100000002ull);
	assert_true(PRM_GET(virtio_q_counters, obj, completed_desc) == 9);
	assert_int_equal(PRM_GET(virtio_q_counters, obj, error_cqes), 3);
	assert_int_equal(PRM_GET(virtio_q_counters, obj, bad_desc_errors), 5);
	assert_int_equal(PRM_GET(virtio_q_counters, obj, exceed_max_chain), 6);
	assert_int_equal(PRM_GET(virtio_q_counters, obj, invalid_buffer), 4);
}

static void
test_virtio_emulation_cap_encoding(void **state)
{
	uint8_t out[PRM_SIZE(query_hca_cap_out)];
	void *cap = PRM_ADDR(query_hca_cap_out, out, capability);
	/* capability starts at byte 0x10 of the output. */
	static const struct bp exp[] = {
		/* byte 0: desc_tunnel_offload_type @0 (0x80), virtio_version_1_0 @2
		 * (0x20), device_features_bits_mask 0x1fff @3[13]: bits 3..7 (0x1f) */
		{ 0x10, 0xbf }, { 0x11, 0xff },
		{ 0x12, 0x02 },			/* event_mode 1<<QP @0x10 */
		{ 0x13, 0x03 },			/* virtio_queue_type split|packed @0x18 */
		{ 0x16, 0x0c },	/* log_doorbell_stride 12 @0x33[5]: byte 6 bits 3..7 */
		/* byte 7: vnet_modify_ext 0x80, addr_modify 0x40, index_modify 0x20,
		 * log_doorbell_bar_size 0x10 @0x3b[5] in bits 3..7 */
		{ 0x17, 0xf0 },
		{ 0x1e, 0x20 },			/* doorbell_bar_offset 0x2000 @0x40: bytes 8..15 */
		{ 0x22, 0x01 },	/* max_num_virtio_queues 0x100 @0x88: bytes 0x11..0x13 */
		/* byte 0x1a: desc_group_mkey_supported @0xd3 (bit 3, 0x10),
		 * freeze_to_rdy_supported @0xd4 (bit 4, 0x08) */
		{ 0x2a, 0x18 },
		{ 0x33, 0x80 },			/* umem_1_buffer_param_a 0x80 @0x100 */
		{ 0x46, 0x10 },	/* umem_3_buffer_param_b 0x1000 @0x1a0: bytes 0x34..0x37 */
	};

	(void)state;
	memset(out, 0, sizeof(out));
	PRM_SET(virtio_emulation_cap, cap, desc_tunnel_offload_type, 1);
	PRM_SET(virtio_emulation_cap, cap, virtio_version_1_0, 1);
	PRM_SET(virtio_emulation_cap, cap, device_features_bits_mask, 0x1fff);
	PRM_SET(virtio_emulation_cap, cap, event_mode, 1u << PRM_VIRTQ_EVENT_MODE_QP);
	PRM_SET(virtio_emulation_cap, cap, virtio_queue_type, 3);
	PRM_SET(virtio_emulation_cap, cap, log_doorbell_stride, 12);
	PRM_SET(virtio_emulation_cap, cap, vnet_modify_ext, 1);
	PRM_SET(virtio_emulation_cap, cap, virtio_net_q_addr_modify, 1);
	PRM_SET(virtio_emulation_cap, cap, virtio_q_index_modify, 1);
	PRM_SET(virtio_emulation_cap, cap, log_doorbell_bar_size, 0x10);
	PRM_SET(virtio_emulation_cap, cap, doorbell_bar_offset, 0x2000);
	PRM_SET(virtio_emulation_cap, cap, max_num_virtio_queues, 0x100);
	PRM_SET(virtio_emulation_cap, cap, desc_group_mkey_supported, 1);
	PRM_SET(virtio_emulation_cap, cap, freeze_to_rdy_supported, 1);
	PRM_SET(virtio_emulation_cap, cap, umem_1_buffer_param_a, 0x80);
	PRM_SET(virtio_emulation_cap, cap, umem_3_buffer_param_b, 0x1000);
	expect_sparse(out, sizeof(out), 0, exp, NELEM(exp));
}

static void
test_query_hca_cap_in_encoding(void **state)
{
	uint8_t in[16] = { 0 };
	static const uint8_t exp[16] = {
		0x01, 0x00, 0x00, 0x00,		/* opcode QUERY_HCA_CAP 0x100 */
		0x00, 0x00, 0x00, 0x27,		/* op_mod (0x13 << 1) | 1 */
		0x80, 0x00, 0x00, 0x03,		/* other_function @0x40, function_id 3 @0x50 */
		0x00, 0x00, 0x00, 0x00,
	};

	(void)state;
	PRM_SET(query_hca_cap_in, in, opcode, PRM_CMD_QUERY_HCA_CAP);
	PRM_SET(query_hca_cap_in, in, op_mod,
		PRM_HCA_CAP_OP_MOD(PRM_CAP_VIRTIO_EMULATION, 1));
	PRM_SET(query_hca_cap_in, in, other_function, 1);
	PRM_SET(query_hca_cap_in, in, function_id, 3);
	expect_bytes(in, exp, sizeof(exp));
}

/* ---- MKEY --------------------------------------------------------------- */
static void
test_mkc_encoding(void **state)
{
	uint8_t mkc[64] = { 0 };
	static const uint8_t exp[64] = {
		/* free @0x01 -> byte 0 bit 1 */
		0x40, 0x00,
		/* a/rw/rr/lw/lr @0x11..0x15 -> byte 2 bits 1..5 = 0x7c;
		 * access_mode_1_0 KLM(2) @0x16[2] -> bits 6..7 = 0x02 */
		0x7e, 0x00,
		0xff, 0xff, 0xff,		/* qpn 0xffffff @0x20[24]: bytes 4..6 */
		0x5a,				/* mkey_7_0 0x5a @0x38: byte 7 */
		0x00, 0x00, 0x00, 0x00,		/* 0x40..0x5f reserved */
		0x80, 0x00, 0x00, 0x33,		/* length64 @0x60, pd 0x33 @0x68 */
		/* start_addr 0x40000000 @0x80 */
		0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
		/* len 0x200000 @0xc0 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x00, 0x00, 0x04,		/* translations_octword_size 4 @0x1a0 */
		0x00, 0x00, 0x00, 0x0c,		/* log_page_size 12 @0x1db[5] */
		0, 0, 0, 0,
	};

	(void)state;
	PRM_SET(mkc, mkc, free, 1);
	PRM_SET(mkc, mkc, a, 1);
	PRM_SET(mkc, mkc, rw, 1);
	PRM_SET(mkc, mkc, rr, 1);
	PRM_SET(mkc, mkc, lw, 1);
	PRM_SET(mkc, mkc, lr, 1);
	PRM_SET(mkc, mkc, access_mode_1_0, PRM_MKC_ACCESS_MODE_KLM);
	PRM_SET(mkc, mkc, qpn, 0xffffff);
	PRM_SET(mkc, mkc, mkey_7_0, 0x5a);
	PRM_SET(mkc, mkc, length64, 1);
	PRM_SET(mkc, mkc, pd, 0x33);
	PRM_SET(mkc, mkc, start_addr, 0x40000000ull);
	PRM_SET(mkc, mkc, len, 0x200000ull);
	PRM_SET(mkc, mkc, translations_octword_size, 4);
	PRM_SET(mkc, mkc, log_page_size, 12);
	expect_bytes(mkc, exp, sizeof(exp));
}

static void
test_create_mkey_in_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_mkey_in) + 2 * PRM_SIZE(klm)];
	void *klm = PRM_ADDR(create_mkey_in, in, klm_pas_mtt);
	static const struct bp exp[] = {
		{ 0x00, 0x02 }, { 0x01, 0x00 },	/* opcode CREATE_MKEY 0x200 */
		{ 0x0c, 0x80 },			/* pg_access @0x60 */
		{ 0x10, 0x40 },			/* mkc at byte 0x10: free @0x01 */
		{ 0x63, 0x08 },			/* translations_octword_actual_size 8 @0x300 */
		{ 0x67, 0x10 },			/* mkey_umem_id 0x10 @0x320 */
		{ 0x6e, 0x10 },	/* mkey_umem_offset 0x1000 @0x340: bytes 0x68..0x6f */
		/* KLM[1] at byte 0x110 + 16: byte_count 0x80000000, mkey 0x500,
		 * address 0x100000000 */
		{ 0x120, 0x80 }, { 0x126, 0x05 }, { 0x12b, 0x01 },
	};

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_mkey_in, in, opcode, PRM_CMD_CREATE_MKEY);
	PRM_SET(create_mkey_in, in, pg_access, 1);
	PRM_SET(mkc, PRM_ADDR(create_mkey_in, in, mkc), free, 1);
	PRM_SET(create_mkey_in, in, translations_octword_actual_size, 8);
	PRM_SET(create_mkey_in, in, mkey_umem_id, 0x10);
	PRM_SET(create_mkey_in, in, mkey_umem_offset, 0x1000);
	klm = (uint8_t *)klm + PRM_SIZE(klm);
	PRM_SET(klm, klm, byte_count, PRM_MAX_KLM_BYTE_COUNT);
	PRM_SET(klm, klm, mkey, 0x500);
	PRM_SET(klm, klm, address, 0x100000000ull);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
}

static void
test_mtt_and_special_contexts(void **state)
{
	uint8_t mtt[8] = { 0 };
	static const uint8_t exp_mtt[8] = {
		0x00, 0x00, 0x00, 0x01, 0x23, 0x45, 0x60, 0x00,	/* ptag, big endian */
	};
	uint8_t out[32] = { 0 };
	uint8_t in[16] = { 0 };

	(void)state;
	PRM_SET(mtt, mtt, ptag, 0x123456000ull);
	expect_bytes(mtt, exp_mtt, sizeof(exp_mtt));
	PRM_SET(query_special_contexts_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	assert_int_equal(in[0], 0x02);
	assert_int_equal(in[1], 0x03);
	out[0x0b] = 0x01;	/* dump_fill_mkey @0x40: bytes 8..0xb */
	out[0x0f] = 0x02;	/* resd_lkey @0x60 */
	out[0x12] = 0x01;	/* null_mkey 0x100 @0x80: bytes 0x10..0x13 */
	assert_int_equal(PRM_GET(query_special_contexts_out, out, dump_fill_mkey), 1);
	assert_int_equal(PRM_GET(query_special_contexts_out, out, resd_lkey), 2);
	assert_int_equal(PRM_GET(query_special_contexts_out, out, null_mkey), 0x100);
	/* (65535 - 272) / 16 entries fit one command. */
	assert_int_equal(PRM_MAX_KLM_PER_CMD, 4078);
}

/* ---- General caps -------------------------------------------------------- */
static void
test_cmd_hca_cap_encoding(void **state)
{
	uint8_t cap[PRM_SIZE(cmd_hca_cap)];
	static const struct bp exp[] = {
		{ 0x06, 0x12 }, { 0x07, 0x34 },	/* vhca_id 0x1234 @0x30 */
		{ 0x13, 0x11 },			/* log_max_qp 0x11 @0x9b[5]: byte 0x13 bits 3..7 */
		{ 0x19, 0x16 },			/* log_max_cq_sz 0x16 @0xc8 */
		/* byte 0x23: null_mkey @0x119 (bit 1, 0x40) and
		 * log_max_klm_list_size 0x3f @0x11a[6] (bits 2..7) */
		{ 0x23, 0x7f },
		{ 0x36, 0x01 },			/* port_type ETH @0x1b6[2]: byte 0x36 bits 6..7 */
		{ 0x37, 0x02 },			/* num_ports 2 @0x1b8 */
		{ 0x4a, 0x20 },			/* umem_uid_0 @0x252: byte 0x4a bit 2 */
		{ 0x65, 0x17 },			/* log_max_pd 0x17 @0x32b[5] */
		{ 0x6e, 0x10 },			/* log_max_tir 0x10 @0x373[5] */
		{ 0x6f, 0x0f },			/* log_max_tis 0xf @0x37b[5] */
		{ 0x72, 0x11 },			/* log_max_rqt_size 0x11 @0x393[5] */
		{ 0x7f, 0x1f },			/* log_max_current_uc_list @0x3fb[5] */
		/* general_obj_types 1<<13 | 1<<28 @0x400: bytes 0x80..0x87 =
		 * 00 00 00 00 10 00 20 00 */
		{ 0x84, 0x10 }, { 0x86, 0x20 },
		/* device_frequency_khz 1000000 = 0x000f4240 @0x4e0: bytes 0x9c.. */
		{ 0x9d, 0x0f }, { 0x9e, 0x42 }, { 0x9f, 0x40 },
	};

	(void)state;
	memset(cap, 0, sizeof(cap));
	PRM_SET(cmd_hca_cap, cap, vhca_id, 0x1234);
	PRM_SET(cmd_hca_cap, cap, log_max_qp, 0x11);
	PRM_SET(cmd_hca_cap, cap, log_max_cq_sz, 0x16);
	PRM_SET(cmd_hca_cap, cap, null_mkey, 1);
	PRM_SET(cmd_hca_cap, cap, log_max_klm_list_size, 0x3f);
	PRM_SET(cmd_hca_cap, cap, port_type, PRM_HCA_CAP_PORT_TYPE_ETH);
	PRM_SET(cmd_hca_cap, cap, num_ports, 2);
	PRM_SET(cmd_hca_cap, cap, umem_uid_0, 1);
	PRM_SET(cmd_hca_cap, cap, log_max_pd, 0x17);
	PRM_SET(cmd_hca_cap, cap, log_max_tir, 0x10);
	PRM_SET(cmd_hca_cap, cap, log_max_tis, 0xf);
	PRM_SET(cmd_hca_cap, cap, log_max_rqt_size, 0x11);
	PRM_SET(cmd_hca_cap, cap, log_max_current_uc_list, 0x1f);
	PRM_SET(cmd_hca_cap, cap, general_obj_types,
		PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q |
		PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS);
	PRM_SET(cmd_hca_cap, cap, device_frequency_khz, 1000000);
	expect_sparse(cap, sizeof(cap), 0, exp, NELEM(exp));
	assert_true(PRM_GET(cmd_hca_cap, cap, general_obj_types) == 0x10002000ull);
}

static void
test_flow_table_nic_cap_encoding(void **state)
{
	uint8_t cap[PRM_SIZE(flow_table_nic_cap)];
	void *rx = PRM_ADDR(flow_table_nic_cap, cap, flow_table_properties_nic_receive);
	/* Receive properties start at 0x200 = byte 0x40. */
	static const struct bp exp[] = {
		{ 0x40, 0x80 },			/* ft_support @0 */
		{ 0x44, 0x18 },	/* log_max_ft_size 0x18 @0x22[6]: byte 4 bits 2..7 */
		{ 0x47, 0x40 },			/* max_ft_level 0x40 @0x38 */
		{ 0x4f, 0x08 },			/* log_max_ft_num 8 @0x78 */
		{ 0x53, 0x10 },			/* log_max_destination 0x10 @0x98 */
		{ 0x57, 0x10 },			/* log_max_flow 0x10 @0xb8 */
	};

	(void)state;
	memset(cap, 0, sizeof(cap));
	PRM_SET(flow_table_prop_layout, rx, ft_support, 1);
	PRM_SET(flow_table_prop_layout, rx, log_max_ft_size, 0x18);
	PRM_SET(flow_table_prop_layout, rx, max_ft_level, 0x40);
	PRM_SET(flow_table_prop_layout, rx, log_max_ft_num, 8);
	PRM_SET(flow_table_prop_layout, rx, log_max_destination, 0x10);
	PRM_SET(flow_table_prop_layout, rx, log_max_flow, 0x10);
	expect_sparse(cap, sizeof(cap), 0, exp, NELEM(exp));
}

/* ---- PD, TD -------------------------------------------------------------- */
static void
test_pd_and_transport_domain_encoding(void **state)
{
	uint8_t in[16] = { 0 };
	static const uint8_t exp_alloc[16] = {
		0x08, 0x00, 0x00, 0x05,		/* ALLOC_PD 0x800, uid 5 */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	static const uint8_t exp_dealloc[16] = {
		0x08, 0x01, 0x00, 0x00,		/* DEALLOC_PD 0x801 */
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x01, 0x02,		/* pd 0x102 @0x48 */
		0, 0, 0, 0,
	};
	static const uint8_t exp_td[16] = {
		0x08, 0x17, 0x00, 0x00,		/* DEALLOC_TRANSPORT_DOMAIN 0x817 */
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x12, 0x34, 0x56,		/* transport_domain 0x123456 @0x48 */
		0, 0, 0, 0,
	};
	static const uint8_t out[16] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xab, 0xcd, 0xef, 0, 0, 0, 0,
	};

	(void)state;
	PRM_SET(alloc_pd_in, in, opcode, PRM_CMD_ALLOC_PD);
	PRM_SET(alloc_pd_in, in, uid, 5);
	expect_bytes(in, exp_alloc, sizeof(in));
	memset(in, 0, sizeof(in));
	PRM_SET(dealloc_pd_in, in, opcode, PRM_CMD_DEALLOC_PD);
	PRM_SET(dealloc_pd_in, in, pd, 0x102);
	expect_bytes(in, exp_dealloc, sizeof(in));
	memset(in, 0, sizeof(in));
	PRM_SET(dealloc_transport_domain_in, in, opcode, PRM_CMD_DEALLOC_TRANSPORT_DOMAIN);
	PRM_SET(dealloc_transport_domain_in, in, transport_domain, 0x123456);
	expect_bytes(in, exp_td, sizeof(in));
	memset(in, 0, sizeof(in));
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	assert_int_equal(in[0], 0x08);
	assert_int_equal(in[1], 0x16);
	/* Byte 8 is reserved: the 24-bit id ignores it. */
	assert_int_equal(PRM_GET(alloc_pd_out, out, pd), 0xabcdef);
	assert_int_equal(PRM_GET(alloc_transport_domain_out, out, transport_domain), 0xabcdef);
}

/* ---- TIS, RQT, TIR ------------------------------------------------------- */
static void
test_tis_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_tis_in)];
	void *ctx = PRM_ADDR(create_tis_in, in, ctx);
	/* ctx at 0x100 = byte 0x20. */
	static const struct bp exp[] = {
		{ 0x00, 0x09 }, { 0x01, 0x12 },	/* opcode CREATE_TIS 0x912 */
		/* strict_lag_tx_port_affinity @0 (0x80), lag_tx_port_affinity 2 @4[4] */
		{ 0x20, 0x82 },
		{ 0x21, 0x05 },			/* prio 5 @0xc[4]: ctx byte 1 low nibble */
		{ 0x46, 0xab }, { 0x47, 0xcd },	/* transport_domain 0xabcd @0x128 */
		{ 0x4a, 0x07 }, { 0x4b, 0x77 },	/* underlay_qpn 0x777 @0x148 */
	};
	uint8_t d[16] = { 0 };

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_tis_in, in, opcode, PRM_CMD_CREATE_TIS);
	PRM_SET(tisc, ctx, strict_lag_tx_port_affinity, 1);
	PRM_SET(tisc, ctx, lag_tx_port_affinity, 2);
	PRM_SET(tisc, ctx, prio, 5);
	PRM_SET(tisc, ctx, transport_domain, 0xabcd);
	PRM_SET(tisc, ctx, underlay_qpn, 0x777);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	PRM_SET(destroy_tis_in, d, opcode, PRM_CMD_DESTROY_TIS);
	PRM_SET(destroy_tis_in, d, tisn, 0x123);
	assert_int_equal(d[0], 0x09);
	assert_int_equal(d[1], 0x14);
	assert_int_equal(d[0xa], 0x01);
	assert_int_equal(d[0xb], 0x23);
}

static void
test_rqt_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_rqt_in) + 2 * PRM_SIZE(rq_num)];
	void *ctx = PRM_ADDR(create_rqt_in, in, rqt_context);
	uint8_t *list = PRM_ADDR(rqtc, ctx, rq_num);
	/* ctx at byte 0x20, its list at ctx 0x780 = ctx byte 0xf0 = byte 0x110. */
	static const struct bp exp[] = {
		{ 0x00, 0x09 }, { 0x01, 0x16 },	/* opcode CREATE_RQT 0x916 */
		{ 0x34, 0x01 },	/* list_q_type VIRTIO_NET_Q @0xa5[3]: ctx byte 0x14 */
		{ 0x36, 0x01 },			/* rqt_max_size 0x100 @0xb0: ctx bytes 0x16,0x17 */
		{ 0x3b, 0x02 },			/* rqt_actual_size 2 @0xd0: ctx bytes 0x1a,0x1b */
		{ 0x113, 0x10 },		/* entry 0: rq_num 0x10 @0x08[24] */
		{ 0x115, 0xab }, { 0x116, 0xcd }, { 0x117, 0xef },	/* entry 1 */
	};
	uint8_t m[PRM_SIZE(modify_rqt_in)];
	static const struct bp exp_m[] = {
		{ 0x00, 0x09 }, { 0x01, 0x17 },	/* opcode MODIFY_RQT 0x917 */
		{ 0x0b, 0x42 },			/* rqtn 0x42 @0x48 */
		{ 0x17, 0x01 },			/* bitmask RQN_LIST @0x80[64]: byte 0x17 */
		{ 0x3b, 0x01 },			/* ctx rqt_actual_size 1 */
	};

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_rqt_in, in, opcode, PRM_CMD_CREATE_RQT);
	PRM_SET(rqtc, ctx, list_q_type, PRM_RQTC_LIST_Q_TYPE_VIRTIO_NET_Q);
	PRM_SET(rqtc, ctx, rqt_max_size, 0x100);
	PRM_SET(rqtc, ctx, rqt_actual_size, 2);
	PRM_SET(rq_num, list, rq_num, 0x10);
	PRM_SET(rq_num, list + PRM_SIZE(rq_num), rq_num, 0xabcdef);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));

	memset(m, 0, sizeof(m));
	PRM_SET(modify_rqt_in, m, opcode, PRM_CMD_MODIFY_RQT);
	PRM_SET(modify_rqt_in, m, rqtn, 0x42);
	PRM_SET(modify_rqt_in, m, bitmask, PRM_RQT_MODIFY_RQN_LIST);
	PRM_SET(rqtc, PRM_ADDR(modify_rqt_in, m, ctx), rqt_actual_size, 1);
	expect_sparse(m, sizeof(m), 0, exp_m, NELEM(exp_m));
}

static void
test_tir_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_tir_in)];
	void *ctx = PRM_ADDR(create_tir_in, in, ctx);
	void *sel = PRM_ADDR(tirc, ctx, rx_hash_field_selector_outer);
	uint8_t key[PRM_RSS_HASH_KEY_LEN];
	/* ctx at byte 0x20. */
	static const struct bp exp[] = {
		{ 0x00, 0x09 }, { 0x01, 0x00 },	/* opcode CREATE_TIR 0x900 */
		{ 0x24, 0x10 },			/* disp_type INDIRECT @0x20[4]: ctx byte 4 high */
		/* ctx dword 4 (0x80): lro_timeout_period_usecs 0x20 @0x84[16] ->
		 * 0x20 << 12; lro_enable_mask 3 @0x94[4] -> 3 << 8; lro_max_msg_sz
		 * 0x80 @0x98[8] -> 0x80: dword 0x00020380 */
		{ 0x31, 0x02 }, { 0x32, 0x03 }, { 0x33, 0x80 },
		{ 0x3e, 0x03 }, { 0x3f, 0x21 },	/* inline_rqn 0x321 @0xe8 */
		{ 0x40, 0x80 },			/* rx_hash_symmetric @0x100 */
		{ 0x42, 0x0a }, { 0x43, 0xbc },	/* indirect_table 0xabc @0x108 */
		/* ctx byte 0x24: rx_hash_fn TOEPLITZ(2) @0x120[4] -> 0x20,
		 * self_lb_block 3 @0x126[2] -> 0x03 */
		{ 0x44, 0x23 },
		{ 0x47, 0x05 },			/* transport_domain 5 @0x128 */
		{ 0x48, 0x2c }, { 0x6f, 0xfa },	/* toeplitz key bytes 0 and 39 @0x140 */
		/* outer selector @0x280 = ctx byte 0x50: l3 IPV6 (0x80), l4 UDP
		 * (0x40), selected_fields 0xf in the low bits */
		{ 0x70, 0xc0 }, { 0x73, 0x0f },
	};

	(void)state;
	memset(in, 0, sizeof(in));
	memset(key, 0, sizeof(key));
	key[0] = 0x2c;
	key[PRM_RSS_HASH_KEY_LEN - 1] = 0xfa;
	PRM_SET(create_tir_in, in, opcode, PRM_CMD_CREATE_TIR);
	PRM_SET(tirc, ctx, disp_type, PRM_TIRC_DISP_TYPE_INDIRECT);
	PRM_SET(tirc, ctx, lro_timeout_period_usecs, 0x20);
	PRM_SET(tirc, ctx, lro_enable_mask, 3);
	PRM_SET(tirc, ctx, lro_max_msg_sz, 0x80);
	PRM_SET(tirc, ctx, inline_rqn, 0x321);
	PRM_SET(tirc, ctx, rx_hash_symmetric, 1);
	PRM_SET(tirc, ctx, indirect_table, 0xabc);
	PRM_SET(tirc, ctx, rx_hash_fn, PRM_RX_HASH_FN_TOEPLITZ);
	PRM_SET(tirc, ctx, self_lb_block,
		PRM_TIRC_SELF_LB_BLOCK_UNICAST | PRM_TIRC_SELF_LB_BLOCK_MULTICAST);
	PRM_SET(tirc, ctx, transport_domain, 5);
	memcpy(PRM_ADDR(tirc, ctx, rx_hash_toeplitz_key), key, sizeof(key));
	PRM_SET(rx_hash_field_select, sel, l3_prot_type, PRM_L3_PROT_TYPE_IPV6);
	PRM_SET(rx_hash_field_select, sel, l4_prot_type, PRM_L4_PROT_TYPE_UDP);
	PRM_SET(rx_hash_field_select, sel, selected_fields,
		PRM_RX_HASH_SRC_IP | PRM_RX_HASH_DST_IP |
		PRM_RX_HASH_L4_SPORT | PRM_RX_HASH_L4_DPORT);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
}

/* ---- Flow steering ------------------------------------------------------- */
static void
test_flow_table_encoding(void **state)
{
	uint8_t in[64] = { 0 };
	static const uint8_t exp[64] = {
		0x09, 0x30, 0x00, 0x00,		/* CREATE_FLOW_TABLE 0x930 */
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,		/* other_vport, vport_number 0 */
		0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00,		/* table_type NIC_TX @0x80 */
		0x00, 0x00, 0x00, 0x00,
		/* flow_table_context @0xc0 = byte 0x18: termination_table @3
		 * (0x10) + table_miss_action FWD @4[4] (0x01); level 2 @8;
		 * log_size 4 @0x18 */
		0x11, 0x02, 0x00, 0x04,
		0x00, 0x00, 0x00, 0x77,		/* table_miss_id 0x77 @0x28 */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	void *ftc = PRM_ADDR(create_flow_table_in, in, flow_table_context);
	uint8_t d[64] = { 0 };
	static const struct bp exp_d[] = {
		{ 0x00, 0x09 }, { 0x01, 0x31 },	/* DESTROY_FLOW_TABLE 0x931 */
		{ 0x17, 0x09 },			/* table_id 9 @0xa8 */
	};

	(void)state;
	PRM_SET(create_flow_table_in, in, opcode, PRM_CMD_CREATE_FLOW_TABLE);
	PRM_SET(create_flow_table_in, in, table_type, PRM_FLOW_TABLE_TYPE_NIC_TX);
	PRM_SET(flow_table_context, ftc, termination_table, 1);
	PRM_SET(flow_table_context, ftc, table_miss_action, PRM_FLOW_TABLE_MISS_ACTION_FWD);
	PRM_SET(flow_table_context, ftc, level, 2);
	PRM_SET(flow_table_context, ftc, log_size, 4);
	PRM_SET(flow_table_context, ftc, table_miss_id, 0x77);
	expect_bytes(in, exp, sizeof(exp));
	PRM_SET(destroy_flow_table_in, d, opcode, PRM_CMD_DESTROY_FLOW_TABLE);
	PRM_SET(destroy_flow_table_in, d, table_type, PRM_FLOW_TABLE_TYPE_NIC_RX);
	PRM_SET(destroy_flow_table_in, d, table_id, 9);
	expect_sparse(d, sizeof(d), 0, exp_d, NELEM(exp_d));
}

static void
test_flow_group_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_flow_group_in)];
	void *mc = PRM_ADDR(create_flow_group_in, in, match_criteria);
	void *outer = PRM_ADDR(fte_match_param, mc, outer_headers);
	/* match_criteria at 0x200 = byte 0x40. */
	static const struct bp exp[] = {
		{ 0x00, 0x09 }, { 0x01, 0x33 },	/* CREATE_FLOW_GROUP 0x933 */
		{ 0x17, 0x09 },			/* table_id 9 @0xa8 */
		{ 0x1f, 0x01 },			/* start_flow_index 1 @0xe0 */
		{ 0x27, 0x03 },			/* end_flow_index 3 @0x120 */
		{ 0x3f, 0x01 },			/* match_criteria_enable OUTER @0x1f8 */
		{ 0x46, 0xff }, { 0x47, 0xff },	/* ethertype mask @outer 0x30 */
		{ 0x48, 0xff }, { 0x49, 0xff },	/* dmac_47_16 mask @outer 0x40 */
		{ 0x4a, 0xff }, { 0x4b, 0xff },
		{ 0x4c, 0xff }, { 0x4d, 0xff },	/* dmac_15_0 mask @outer 0x60 */
		/* ip_version mask 0xf @outer 0x93[4]: outer byte 0x12 bits 3..6 */
		{ 0x52, 0x1e },
	};
	uint8_t d[64] = { 0 };
	static const struct bp exp_d[] = {
		{ 0x00, 0x09 }, { 0x01, 0x34 },	/* DESTROY_FLOW_GROUP 0x934 */
		{ 0x17, 0x09 },			/* table_id 9 @0xa8 */
		{ 0x1b, 0x02 },			/* group_id 2 @0xc0[32] */
	};

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_flow_group_in, in, opcode, PRM_CMD_CREATE_FLOW_GROUP);
	PRM_SET(create_flow_group_in, in, table_type, PRM_FLOW_TABLE_TYPE_NIC_RX);
	PRM_SET(create_flow_group_in, in, table_id, 9);
	PRM_SET(create_flow_group_in, in, start_flow_index, 1);
	PRM_SET(create_flow_group_in, in, end_flow_index, 3);
	PRM_SET(create_flow_group_in, in, match_criteria_enable,
		PRM_MATCH_CRITERIA_ENABLE_OUTER_HEADERS);
	PRM_SET(fte_match_set_lyr_2_4, outer, ethertype, 0xffff);
	PRM_SET(fte_match_set_lyr_2_4, outer, dmac_47_16, 0xffffffff);
	PRM_SET(fte_match_set_lyr_2_4, outer, dmac_15_0, 0xffff);
	PRM_SET(fte_match_set_lyr_2_4, outer, ip_version, 0xf);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	PRM_SET(destroy_flow_group_in, d, opcode, PRM_CMD_DESTROY_FLOW_GROUP);
	PRM_SET(destroy_flow_group_in, d, table_id, 9);
	PRM_SET(destroy_flow_group_in, d, group_id, 2);
	expect_sparse(d, sizeof(d), 0, exp_d, NELEM(exp_d));
}

static void
test_fte_encoding(void **state)
{
	uint8_t in[PRM_SIZE(set_fte_in) + PRM_SIZE(dest_format_struct)];
	void *fc = PRM_ADDR(set_fte_in, in, flow_context);
	void *mv = PRM_ADDR(flow_context, fc, match_value);
	void *dst = PRM_ADDR(flow_context, fc, destination);
	/* flow_context at 0x200 = byte 0x40; match_value at fc byte 0x40;
	 * destinations at fc 0x1800 = fc byte 0x300 = byte 0x340. */
	static const struct bp exp[] = {
		{ 0x00, 0x09 }, { 0x01, 0x36 },	/* SET_FLOW_TABLE_ENTRY 0x936 */
		{ 0x17, 0x09 },			/* table_id 9 @0xa8 */
		{ 0x23, 0x02 },			/* flow_index 2 @0x100 */
		{ 0x47, 0x05 },			/* group_id 5 @fc 0x20 */
		{ 0x4a, 0xab }, { 0x4b, 0xcd },	/* flow_tag 0xabcd @fc 0x48 */
		{ 0x4f, 0x04 },			/* action FWD_DEST @fc 0x70[16] */
		{ 0x53, 0x01 },			/* destination_list_size 1 @fc 0x88 */
		/* match_value outer dmac_47_16 0x01020304 @mv 0x40 = byte 0x88 */
		{ 0x88, 0x01 }, { 0x89, 0x02 }, { 0x8a, 0x03 }, { 0x8b, 0x04 },
		{ 0x340, 0x02 },		/* destination_type TIR @0 */
		{ 0x342, 0x01 }, { 0x343, 0x23 },	/* destination_id 0x123 @8 */
	};
	uint8_t d[64] = { 0 };
	static const struct bp exp_d[] = {
		{ 0x00, 0x09 }, { 0x01, 0x38 },	/* DELETE_FLOW_TABLE_ENTRY 0x938 */
		{ 0x17, 0x09 },			/* table_id 9 @0xa8 */
		{ 0x23, 0x02 },			/* flow_index 2 @0x100 */
	};

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(set_fte_in, in, opcode, PRM_CMD_SET_FLOW_TABLE_ENTRY);
	PRM_SET(set_fte_in, in, table_id, 9);
	PRM_SET(set_fte_in, in, flow_index, 2);
	PRM_SET(flow_context, fc, group_id, 5);
	PRM_SET(flow_context, fc, flow_tag, 0xabcd);
	PRM_SET(flow_context, fc, action, PRM_FLOW_CONTEXT_ACTION_FWD_DEST);
	PRM_SET(flow_context, fc, destination_list_size, 1);
	PRM_SET(fte_match_set_lyr_2_4, PRM_ADDR(fte_match_param, mv, outer_headers),
		dmac_47_16, 0x01020304);
	PRM_SET(dest_format_struct, dst, destination_type, PRM_FLOW_DESTINATION_TYPE_TIR);
	PRM_SET(dest_format_struct, dst, destination_id, 0x123);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	PRM_SET(delete_fte_in, d, opcode, PRM_CMD_DELETE_FLOW_TABLE_ENTRY);
	PRM_SET(delete_fte_in, d, table_id, 9);
	PRM_SET(delete_fte_in, d, flow_index, 2);
	expect_sparse(d, sizeof(d), 0, exp_d, NELEM(exp_d));
}

/* IPv4 addresses sit in the last dword of the 128-bit address unions. */
static void
test_match_ipv4_is_last_dword_of_address(void **state)
{
	uint8_t m[PRM_SIZE(fte_match_set_lyr_2_4)];

	(void)state;
	memset(m, 0, sizeof(m));
	PRM_SET(fte_match_set_lyr_2_4, m, src_ipv4, 0xc0a80001);
	PRM_SET(fte_match_set_lyr_2_4, m, dst_ipv4, 0x0a000001);
	/* src union @0x100 = byte 0x20, its last dword bytes 0x2c..0x2f. */
	assert_int_equal(m[0x2c], 0xc0);
	assert_int_equal(m[0x2f], 0x01);
	/* dst union @0x180 = byte 0x30, last dword bytes 0x3c..0x3f. */
	assert_int_equal(m[0x3c], 0x0a);
	assert_int_equal(m[0x3f], 0x01);
	assert_ptr_equal(PRM_ADDR(fte_match_set_lyr_2_4, m, src_ipv4_src_ipv6), m + 0x20);
	assert_ptr_equal(PRM_ADDR(fte_match_set_lyr_2_4, m, dst_ipv4_dst_ipv6), m + 0x30);
}

/* ---- CQ / QP ------------------------------------------------------------- */
static void
test_cq_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_cq_in)];
	void *cqc = PRM_ADDR(create_cq_in, in, cq_context);
	/* cq_context at 0x80 = byte 0x10. */
	static const struct bp exp[] = {
		{ 0x00, 0x04 }, { 0x01, 0x00 },	/* CREATE_CQ 0x400 */
		{ 0x10, 0x02 },			/* dbr_umem_valid @6: cqc byte 0 bit 6 */
		/* cqc byte 1: cqe_sz 128B(1) @8[3] -> 0x20, cc @0xb -> 0x10,
		 * oi @0xe -> 0x02 */
		{ 0x11, 0x32 },
		{ 0x17, 0x11 },			/* dbr_umem_id 0x11 @0x20 */
		{ 0x1c, 0x06 },	/* log_cq_size 6 @0x63[5]: cqc byte 0xc bits 3..7 */
		{ 0x1f, 0x42 },			/* uar_page 0x42 @0x68 */
		{ 0x27, 0x07 },			/* c_eqn 7 @0xb8 */
		{ 0x4b, 0x01 }, { 0x4f, 0x40 },	/* dbr_addr 0x100000040 @0x1c0 */
		{ 0x56, 0x10 },			/* cq_umem_offset 0x1000 @0x280 */
		{ 0x5b, 0x12 },			/* cq_umem_id 0x12 @0x2c0 */
		{ 0x5c, 0x80 },			/* cq_umem_valid @0x2e0 */
	};
	uint8_t d[16] = { 0 };

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_cq_in, in, opcode, PRM_CMD_CREATE_CQ);
	PRM_SET(cqc, cqc, dbr_umem_valid, 1);
	PRM_SET(cqc, cqc, cqe_sz, PRM_CQC_CQE_SZ_128);
	PRM_SET(cqc, cqc, cc, 1);
	PRM_SET(cqc, cqc, oi, 1);
	PRM_SET(cqc, cqc, dbr_umem_id, 0x11);
	PRM_SET(cqc, cqc, log_cq_size, 6);
	PRM_SET(cqc, cqc, uar_page, 0x42);
	PRM_SET(cqc, cqc, c_eqn, 7);
	PRM_SET(cqc, cqc, dbr_addr, 0x100000040ull);
	PRM_SET(create_cq_in, in, cq_umem_offset, 0x1000);
	PRM_SET(create_cq_in, in, cq_umem_id, 0x12);
	PRM_SET(create_cq_in, in, cq_umem_valid, 1);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	PRM_SET(destroy_cq_in, d, opcode, PRM_CMD_DESTROY_CQ);
	PRM_SET(destroy_cq_in, d, cqn, 0x10);
	assert_int_equal(d[1], 0x01);
	assert_int_equal(d[0xb], 0x10);
}

/*
 * CQE and doorbell records at the byte positions of Linux's struct
 * mlx5_cqe64 (byte_cnt at 44, sop_drop_qpn at 56, wqe_counter at 60,
 * op_own at 63 = opcode << 4 | owner) and of the mlx5 doorbell records
 * (CQ: set_ci dword 0, arm dword 1 = sn << 28 | cmd << 24 | ci; QP: the
 * receive counter in dword 0), all big-endian.
 */
static void
test_cqe_and_doorbell_record_encoding(void **state)
{
	uint8_t cqe[PRM_SIZE(cqe64)], cq[PRM_SIZE(cq_dbrec)], qp[PRM_SIZE(qp_dbrec)];
	static const struct bp exp[] = {
		{ 44, 0x12 }, { 45, 0x34 }, { 46, 0x56 }, { 47, 0x78 },	/* byte_cnt */
		{ 57, 0x0a }, { 58, 0x0b }, { 59, 0x0c },		/* qpn 0x0a0b0c */
		{ 60, 0xbe }, { 61, 0xef },	/* wqe_counter 0xbeef */
		{ 62, 0x5a },			/* signature */
		{ 63, 0x21 },			/* opcode RESP_SEND, owner 1 */
	};
	static const struct bp exp_cq[] = {
		{ 1, 0x12 }, { 2, 0x34 }, { 3, 0x56 },			/* ci 0x123456 */
		{ 4, 0x21 }, { 5, 0x65 }, { 6, 0x43 }, { 7, 0x21 },	/* sn 2, cmd 1, ci */
	};
	static const struct bp exp_qp[] = { { 2, 0x01 }, { 7, 0x03 } };

	(void)state;
	memset(cqe, 0, sizeof(cqe));
	PRM_SET(cqe64, cqe, byte_cnt, 0x12345678);
	PRM_SET(cqe64, cqe, qpn, 0x0a0b0c);
	PRM_SET(cqe64, cqe, wqe_counter, 0xbeef);
	PRM_SET(cqe64, cqe, signature, 0x5a);
	PRM_SET(cqe64, cqe, opcode, PRM_CQE_RESP_SEND);
	PRM_SET(cqe64, cqe, owner, 1);
	expect_sparse(cqe, sizeof(cqe), 0, exp, NELEM(exp));
	memset(cq, 0, sizeof(cq));
	PRM_SET(cq_dbrec, cq, ci, 0x123456);
	PRM_SET(cq_dbrec, cq, arm_sn, 2);
	PRM_SET(cq_dbrec, cq, arm_cmd, 1);
	PRM_SET(cq_dbrec, cq, arm_ci, 0x654321);
	expect_sparse(cq, sizeof(cq), 0, exp_cq, NELEM(exp_cq));
	memset(qp, 0, sizeof(qp));
	PRM_SET(qp_dbrec, qp, rcv_counter, 0x100);
	PRM_SET(qp_dbrec, qp, snd_counter, 3);
	expect_sparse(qp, sizeof(qp), 0, exp_qp, NELEM(exp_qp));
}

static void
test_qp_create_encoding(void **state)
{
	uint8_t in[PRM_SIZE(create_qp_in)];
	void *qpc = PRM_ADDR(create_qp_in, in, qpc);
	/* qpc at 0xc0 = byte 0x18. */
	static const struct bp exp[] = {
		{ 0x00, 0x05 }, { 0x01, 0x00 },	/* CREATE_QP 0x500 */
		{ 0x1a, 0x18 },	/* pm_state MIGRATED(3) @0x13[2]: qpc byte 2 bits 3..4 */
		{ 0x1f, 0x33 },			/* pd 0x33 @0x28 */
		{ 0x20, 0x1e },	/* log_msg_max 0x1e @0x43[5]: qpc byte 8 bits 3..7 */
		/* qpc byte 9: log_rq_size 4 @0x49[4] (bits 1..4 -> 4 << 3 = 0x20),
		 * log_rq_stride 2 @0x4d[3] (bits 5..7 -> 0x02) */
		{ 0x21, 0x22 },
		{ 0x22, 0x80 },			/* no_sq @0x50 */
		{ 0x27, 0x42 },			/* uar_page 0x42 @0x68 */
		{ 0x2e, 0xab }, { 0x2f, 0xcd },	/* remote_qpn 0xabcd @0xa8 */
		{ 0x55, 0x01 },			/* primary path vhca_port_num @0x1e8 */
		{ 0x8a, 0x08 },			/* fre @0x394: qpc byte 0x72 bit 4 */
		{ 0x97, 0x11 },			/* cqn_snd 0x11 @0x3e8 */
		{ 0xaa, 0xc0 },			/* rre @0x490, rwe @0x491 */
		{ 0xb7, 0x12 },			/* cqn_rcv 0x12 @0x4e8 */
		{ 0xbf, 0x80 },			/* dbr_addr 0x80 @0x500 */
		{ 0xc4, 0x03 },			/* rq_type ZERO_SIZE @0x565[3]: qpc byte 0xac */
		{ 0xe8, 0x10 },			/* dbr_umem_valid @0x683: qpc byte 0xd0 bit 3 */
		{ 0xff, 0x21 },			/* dbr_umem_id 0x21 @0x720 */
		{ 0x107, 0x10 },		/* wq_umem_offset 0x10 @0x800 */
		{ 0x10b, 0x22 },		/* wq_umem_id 0x22 @0x840 */
		{ 0x10c, 0x80 },		/* wq_umem_valid @0x860 */
	};

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_qp_in, in, opcode, PRM_CMD_CREATE_QP);
	PRM_SET(qpc, qpc, st, PRM_QPC_ST_RC);
	PRM_SET(qpc, qpc, pm_state, PRM_QPC_PM_STATE_MIGRATED);
	PRM_SET(qpc, qpc, pd, 0x33);
	PRM_SET(qpc, qpc, log_msg_max, 0x1e);
	PRM_SET(qpc, qpc, log_rq_size, 4);
	PRM_SET(qpc, qpc, log_rq_stride, 2);
	PRM_SET(qpc, qpc, no_sq, 1);
	PRM_SET(qpc, qpc, uar_page, 0x42);
	PRM_SET(qpc, qpc, remote_qpn, 0xabcd);
	PRM_SET(ads, PRM_ADDR(qpc, qpc, primary_address_path), vhca_port_num, 1);
	PRM_SET(qpc, qpc, fre, 1);
	PRM_SET(qpc, qpc, cqn_snd, 0x11);
	PRM_SET(qpc, qpc, rre, 1);
	PRM_SET(qpc, qpc, rwe, 1);
	PRM_SET(qpc, qpc, cqn_rcv, 0x12);
	PRM_SET(qpc, qpc, dbr_addr, 0x80);
	PRM_SET(qpc, qpc, rq_type, PRM_QPC_RQ_TYPE_ZERO_SIZE);
	PRM_SET(qpc, qpc, dbr_umem_valid, 1);
	PRM_SET(qpc, qpc, dbr_umem_id, 0x21);
	PRM_SET(create_qp_in, in, wq_umem_offset, 0x10);
	PRM_SET(create_qp_in, in, wq_umem_id, 0x22);
	PRM_SET(create_qp_in, in, wq_umem_valid, 1);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	assert_int_equal(PRM_GET(qpc, qpc, primary_address_path_vhca_port_num), 1);
}

static void
test_qp_transitions_encoding(void **state)
{
	uint8_t in[PRM_SIZE(init2rtr_qp_in)];
	void *qpc = PRM_ADDR(init2rtr_qp_in, in, qpc);
	/* qpc at 0xc0 = byte 0x18. */
	static const struct bp exp[] = {
		{ 0x00, 0x05 }, { 0x01, 0x03 },	/* INIT2RTR_QP 0x503 */
		{ 0x0a, 0x01 }, { 0x0b, 0x02 },	/* qpn 0x102 @0x48 */
		{ 0x13, 0x01 },			/* opt_param_mask 1 @0x80 */
		{ 0x18, 0x20 },			/* qpc state RTR(2) @0[4]: high nibble */
		{ 0x20, 0xa0 },			/* mtu 4K(5) @0x40[3]: qpc byte 8 bits 0..2 */
		{ 0x2f, 0x07 },			/* remote_qpn 7 @0xa8: qpc bytes 0x15..0x17 */
		{ 0xaf, 0x09 },			/* next_rcv_psn 9 @0x4a8: qpc bytes 0x95..0x97 */
	};
	static const uint8_t exp_2rst[16] = {
		0x05, 0x0a, 0x00, 0x00,		/* 2RST_QP 0x50a */
		0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x01, 0x02,		/* qpn 0x102 @0x48 */
		0x00, 0x00, 0x00, 0x00,
	};
	uint8_t r[16] = { 0 };

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(init2rtr_qp_in, in, opcode, PRM_CMD_INIT2RTR_QP);
	PRM_SET(init2rtr_qp_in, in, qpn, 0x102);
	PRM_SET(init2rtr_qp_in, in, opt_param_mask, 1);
	PRM_SET(qpc, qpc, state, PRM_QPC_STATE_RTR);
	PRM_SET(qpc, qpc, mtu, PRM_QPC_MTU_4K);
	PRM_SET(qpc, qpc, remote_qpn, 7);
	PRM_SET(qpc, qpc, next_rcv_psn, 9);
	expect_sparse(in, sizeof(in), 0, exp, NELEM(exp));
	/* RST2INIT and RTR2RTS share the shape: same offsets, other opcode. */
	assert_int_equal(PRM_OFF(rst2init_qp_in, qpc), PRM_OFF(init2rtr_qp_in, qpc));
	assert_int_equal(PRM_OFF(rtr2rts_qp_in, qpc), PRM_OFF(init2rtr_qp_in, qpc));
	assert_int_equal(PRM_OFF(rst2init_qp_in, qpn), PRM_OFF(init2rtr_qp_in, qpn));
	assert_int_equal(PRM_OFF(rtr2rts_qp_in, opt_param_mask),
			 PRM_OFF(init2rtr_qp_in, opt_param_mask));
	PRM_SET(qp_2rst_in, r, opcode, PRM_CMD_2RST_QP);
	PRM_SET(qp_2rst_in, r, qpn, 0x102);
	expect_bytes(r, exp_2rst, sizeof(r));
}

/* ---- Neighbours, by hand ------------------------------------------------- */
/*
 * Clearing fields in an all-ones context clears exactly their bits; the
 * partial bytes are the interesting ones.
 */
static void
test_clearing_fields_keeps_neighbour_bits(void **state)
{
	uint8_t cqc[PRM_SIZE(cqc)];
	static const struct bp exp_cqc[] = {
		{ 0x01, 0x1f },			/* cqe_sz @8[3]: byte 1 bits 0..2 cleared */
		{ 0x0c, 0xe0 },			/* log_cq_size @0x63[5]: byte 0xc bits 3..7 */
		{ 0x17, 0x00 },			/* c_eqn @0xb8: whole byte 0x17 */
		{ 0x38, 0 }, { 0x39, 0 }, { 0x3a, 0 }, { 0x3b, 0 },	/* dbr_addr */
		{ 0x3c, 0 }, { 0x3d, 0 }, { 0x3e, 0 }, { 0x3f, 0 },
	};
	uint8_t mkc[PRM_SIZE(mkc)];
	static const struct bp exp_mkc[] = {
		{ 0x02, 0xfc },			/* access_mode_1_0 @0x16[2] */
		{ 0x04, 0 }, { 0x05, 0 }, { 0x06, 0 },	/* qpn @0x20[24]; mkey_7_0 kept */
	};
	uint8_t obj[PRM_SIZE(virtio_net_q)];
	static const struct bp exp_obj[] = {
		{ 0x11, 0xdf },			/* dirty_bitmap_dump_enable @0x8a: bit 2 */
		{ 0x13, 0xf0 },			/* state @0x9c[4]: low nibble */
		{ 0x14, 0xf8 },			/* feature_bit_mask_2_0 @0xa5[3] */
	};
	uint8_t tir[PRM_SIZE(tirc)];
	static const struct bp exp_tir[] = {
		/* lro_timeout_period_usecs @0x84[16] spans three bytes */
		{ 0x10, 0xf0 }, { 0x11, 0x00 }, { 0x12, 0x0f },
		{ 0x24, 0xfc },			/* self_lb_block @0x126[2] */
		/* outer selected_fields @0x282[30]: only the two type bits stay */
		{ 0x50, 0xc0 }, { 0x51, 0 }, { 0x52, 0 }, { 0x53, 0 },
	};

	(void)state;
	memset(cqc, 0xff, sizeof(cqc));
	PRM_SET(cqc, cqc, cqe_sz, 0);
	PRM_SET(cqc, cqc, log_cq_size, 0);
	PRM_SET(cqc, cqc, c_eqn, 0);
	PRM_SET(cqc, cqc, dbr_addr, 0);
	expect_sparse(cqc, sizeof(cqc), 0xff, exp_cqc, NELEM(exp_cqc));

	memset(mkc, 0xff, sizeof(mkc));
	PRM_SET(mkc, mkc, access_mode_1_0, 0);
	PRM_SET(mkc, mkc, qpn, 0);
	expect_sparse(mkc, sizeof(mkc), 0xff, exp_mkc, NELEM(exp_mkc));
	assert_int_equal(PRM_GET(mkc, mkc, mkey_7_0), 0xff);

	memset(obj, 0xff, sizeof(obj));
	PRM_SET(virtio_net_q, obj, dirty_bitmap_dump_enable, 0);
	PRM_SET(virtio_net_q, obj, state, 0);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_2_0, 0);
	expect_sparse(obj, sizeof(obj), 0xff, exp_obj, NELEM(exp_obj));

	memset(tir, 0xff, sizeof(tir));
	PRM_SET(tirc, tir, lro_timeout_period_usecs, 0);
	PRM_SET(tirc, tir, self_lb_block, 0);
	PRM_SET(rx_hash_field_select, PRM_ADDR(tirc, tir, rx_hash_field_selector_outer),
		selected_fields, 0);
	expect_sparse(tir, sizeof(tir), 0xff, exp_tir, NELEM(exp_tir));
}

/* ---- Names --------------------------------------------------------------- */
static void
test_opcode_names_are_the_enum_names(void **state)
{
	(void)state;
	assert_string_equal(prm_opcode_name(PRM_CMD_QUERY_HCA_CAP), "QUERY_HCA_CAP");
	assert_string_equal(prm_opcode_name(0xa00), "CREATE_GENERAL_OBJECT");
	assert_string_equal(prm_opcode_name(0xa01), "MODIFY_GENERAL_OBJECT");
	assert_string_equal(prm_opcode_name(0xa02), "QUERY_GENERAL_OBJECT");
	assert_string_equal(prm_opcode_name(0xa03), "DESTROY_GENERAL_OBJECT");
	assert_string_equal(prm_opcode_name(0x200), "CREATE_MKEY");
	assert_string_equal(prm_opcode_name(0x50a), "2RST_QP");
	assert_string_equal(prm_opcode_name(0x816), "ALLOC_TRANSPORT_DOMAIN");
	assert_string_equal(prm_opcode_name(0x936), "SET_FLOW_TABLE_ENTRY");
	assert_string_equal(prm_opcode_name(0x938), "DELETE_FLOW_TABLE_ENTRY");
	assert_string_equal(prm_opcode_name(0xa0a), "DESTROY_UMEM");
	assert_string_equal(prm_opcode_name(0), "UNKNOWN");
	assert_string_equal(prm_opcode_name(0x505), "UNKNOWN");
	assert_string_equal(prm_opcode_name(0xffff), "UNKNOWN");
}

static void
test_status_names_follow_the_header_numbering(void **state)
{
	(void)state;
	assert_string_equal(prm_status_name(0x00), "OK");
	assert_string_equal(prm_status_name(0x01), "INTERNAL_ERR");
	assert_string_equal(prm_status_name(0x02), "BAD_OP");
	assert_string_equal(prm_status_name(0x03), "BAD_PARAM");
	assert_string_equal(prm_status_name(0x04), "BAD_SYS_STATE");
	assert_string_equal(prm_status_name(0x05), "BAD_RES");
	assert_string_equal(prm_status_name(0x06), "RES_BUSY");
	assert_string_equal(prm_status_name(0x07), "NOT_READY");
	assert_string_equal(prm_status_name(0x08), "EXCEED_LIM");
	assert_string_equal(prm_status_name(0x09), "BAD_RES_STATE");
	assert_string_equal(prm_status_name(0x0a), "BAD_INDEX");
	assert_string_equal(prm_status_name(0x0f), "NO_RESOURCES");
	assert_string_equal(prm_status_name(0x10), "BAD_QP_STATE");
	assert_string_equal(prm_status_name(0x30), "BAD_PKT");
	assert_string_equal(prm_status_name(0x40), "BAD_SIZE_OUTS_CQES");
	assert_string_equal(prm_status_name(0x50), "BAD_INPUT_LEN");
	assert_string_equal(prm_status_name(0x51), "BAD_OUTPUT_LEN");
	assert_string_equal(prm_status_name(0x0b), "UNKNOWN_STATUS");
	assert_string_equal(prm_status_name(0xff), "UNKNOWN_STATUS");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_field_sets_exactly_its_bits),
		cmocka_unit_test(test_clearing_any_field_keeps_its_neighbours),
		cmocka_unit_test(test_get_round_trips_every_field),
		cmocka_unit_test(test_every_field_fits_its_layout),
		cmocka_unit_test(test_fields_of_a_layout_do_not_overlap),
		cmocka_unit_test(test_nested_layouts_tile_their_parents),
		cmocka_unit_test(test_hca_cap_op_mod_packs_type_and_current),
		cmocka_unit_test(test_cmd_envelope_encoding),
		cmocka_unit_test(test_create_and_destroy_ids_share_offset_0x48),
		cmocka_unit_test(test_general_obj_hdr_encoding),
		cmocka_unit_test(test_virtq_create_encoding),
		cmocka_unit_test(test_virtq_counters_decoding),
		cmocka_unit_test(test_virtio_emulation_cap_encoding),
		cmocka_unit_test(test_query_hca_cap_in_encoding),
		cmocka_unit_test(test_mkc_encoding),
		cmocka_unit_test(test_create_mkey_in_encoding),
		cmocka_unit_test(test_mtt_and_special_contexts),
		cmocka_unit_test(test_cmd_hca_cap_encoding),
		cmocka_unit_test(test_flow_table_nic_cap_encoding),
		cmocka_unit_test(test_pd_and_transport_domain_encoding),
		cmocka_unit_test(test_tis_encoding),
		cmocka_unit_test(test_rqt_encoding),
		cmocka_unit_test(test_tir_encoding),
		cmocka_unit_test(test_flow_table_encoding),
		cmocka_unit_test(test_flow_group_encoding),
		cmocka_unit_test(test_fte_encoding),
		cmocka_unit_test(test_match_ipv4_is_last_dword_of_address),
		cmocka_unit_test(test_cq_encoding),
		cmocka_unit_test(test_qp_create_encoding),
		cmocka_unit_test(test_qp_transitions_encoding),
		cmocka_unit_test(test_clearing_fields_keeps_neighbour_bits),
		cmocka_unit_test(test_opcode_names_are_the_enum_names),
		cmocka_unit_test(test_cqe_and_doorbell_record_encoding),
		cmocka_unit_test(test_status_names_follow_the_header_numbering),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
