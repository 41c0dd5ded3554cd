/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * General objects VIRTIO_NET_Q and VIRTIO_Q_COUNTERS: creation with the
 * firmware's checks, the queue state machine, MODIFY by field-select bits
 * and QUERY of the whole object. A MODIFY is applied to a copy of the
 * queue first and committed only when every check passed, so that a
 * rejected command leaves the queue exactly as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

#define VQ_MAX_REFS 8
/* queue_period_mode: 0 default, 1 from first completion, 2 from last; 3 reserved. */
#define EMU_VQ_PERIOD_MODE_MAX 2

/* Bits a MODIFY may carry on this device (no desc_group_mkey support). */
#define VQ_MODIFY_SUPPORTED (PRM_VIRTQ_MODIFY_ALL_KNOWN & ~PRM_VIRTQ_MODIFY_DESC_GROUP_MKEY)

/* ---- Decoding / encoding ------------------------------------------------------ */
/* Copy the fields that `mask` selects from a virtio_net_q context. */
static void
vq_decode(struct emu_virtq *vq, const void *obj, const void *q, uint64_t mask)
{
	if (mask & PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS) {
		vq->dirty_bitmap_mkey = (uint32_t)PRM_GET(virtio_net_q, obj, dirty_bitmap_mkey);
		vq->dirty_bitmap_size = (uint32_t)PRM_GET(virtio_net_q, obj, dirty_bitmap_size);
		vq->dirty_bitmap_addr = PRM_GET(virtio_net_q, obj, dirty_bitmap_addr);
		vq->vhost_log_page = (uint8_t)PRM_GET(virtio_net_q, obj, vhost_log_page);
	}
	if (mask & PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE)
		vq->dirty_bitmap_dump_enable =
			(uint8_t)PRM_GET(virtio_net_q, obj, dirty_bitmap_dump_enable);
	if (mask & PRM_VIRTQ_MODIFY_QUEUE_PERIOD) {
		vq->queue_period_mode = (uint8_t)PRM_GET(virtio_q, q, queue_period_mode);
		vq->queue_period_us = (uint16_t)PRM_GET(virtio_q, q, queue_period_us);
		vq->queue_max_count = (uint16_t)PRM_GET(virtio_q, q, queue_max_count);
	}
	if (mask & PRM_VIRTQ_MODIFY_ADDRS) {
		vq->desc_addr = PRM_GET(virtio_q, q, desc_addr);
		vq->used_addr = PRM_GET(virtio_q, q, used_addr);
		vq->available_addr = PRM_GET(virtio_q, q, available_addr);
	}
	if (mask & PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX)
		vq->hw_available_index = (uint16_t)PRM_GET(virtio_net_q, obj, hw_available_index);
	if (mask & PRM_VIRTQ_MODIFY_HW_USED_INDEX)
		vq->hw_used_index = (uint16_t)PRM_GET(virtio_net_q, obj, hw_used_index);
	if (mask & PRM_VIRTQ_MODIFY_Q_TYPE)
		vq->q_type = (uint8_t)PRM_GET(virtio_q, q, virtio_q_type);
	if (mask & PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0)
		vq->virtio_version_1_0 = (uint8_t)PRM_GET(virtio_q, q, virtio_version_1_0);
	if (mask & PRM_VIRTQ_MODIFY_Q_MKEY)
		vq->virtio_q_mkey = (uint32_t)PRM_GET(virtio_q, q, virtio_q_mkey);
	if (mask & PRM_VIRTQ_MODIFY_QUEUE_FEATURES)
		vq->queue_features = (uint16_t)
			(PRM_GET(virtio_net_q, obj, queue_feature_bit_mask_12_3) << 3 |
			 PRM_GET(virtio_net_q, obj, queue_feature_bit_mask_2_0));
	if (mask & PRM_VIRTQ_MODIFY_EVENT_MODE) {
		vq->event_mode = (uint8_t)PRM_GET(virtio_q, q, event_mode);
		vq->event_qpn_or_msix = (uint32_t)PRM_GET(virtio_q, q, event_qpn_or_msix);
	}
	if (mask & PRM_VIRTQ_MODIFY_DESC_GROUP_MKEY)
		vq->desc_group_mkey = (uint32_t)PRM_GET(virtio_q, q, desc_group_mkey);
}

/* Fields fixed at creation (no modify bit exists for them). */
static void
vq_decode_create(struct emu_virtq *vq, const void *obj, const void *q)
{
	int i;

	vq_decode(vq, obj, q, PRM_VIRTQ_MODIFY_ALL_KNOWN);
	vq->state = (uint8_t)PRM_GET(virtio_net_q, obj, state);
	vq->vhca_id = (uint16_t)PRM_GET(virtio_net_q, obj, vhca_id);
	vq->tisn_or_qpn = (uint32_t)PRM_GET(virtio_net_q, obj, tisn_or_qpn);
	vq->queue_index = (uint16_t)PRM_GET(virtio_q, q, queue_index);
	vq->full_emulation = (uint8_t)PRM_GET(virtio_q, q, full_emulation);
	vq->offload_type = (uint8_t)PRM_GET(virtio_q, q, offload_type);
	vq->doorbell_stride_index = (uint16_t)PRM_GET(virtio_q, q, doorbell_stride_index);
	vq->queue_size = (uint16_t)PRM_GET(virtio_q, q, queue_size);
	vq->device_emulation_id = (uint32_t)PRM_GET(virtio_q, q, device_emulation_id);
	vq->max_tunnel_desc = (uint16_t)PRM_GET(virtio_q, q, max_tunnel_desc);
	vq->umem[0].id = (uint32_t)PRM_GET(virtio_q, q, umem_1_id);
	vq->umem[0].size = (uint32_t)PRM_GET(virtio_q, q, umem_1_size);
	vq->umem[0].offset = PRM_GET(virtio_q, q, umem_1_offset);
	vq->umem[1].id = (uint32_t)PRM_GET(virtio_q, q, umem_2_id);
	vq->umem[1].size = (uint32_t)PRM_GET(virtio_q, q, umem_2_size);
	vq->umem[1].offset = PRM_GET(virtio_q, q, umem_2_offset);
	vq->umem[2].id = (uint32_t)PRM_GET(virtio_q, q, umem_3_id);
	vq->umem[2].size = (uint32_t)PRM_GET(virtio_q, q, umem_3_size);
	vq->umem[2].offset = PRM_GET(virtio_q, q, umem_3_offset);
	vq->counter_set_id = (uint32_t)PRM_GET(virtio_q, q, counter_set_id);
	vq->pd = (uint32_t)PRM_GET(virtio_q, q, pd);
	for (i = 0; i < 3; i++)
		vq->umem[i].umem = NULL;
}

static void
vq_encode(const struct emu_virtq *vq, void *obj, void *q)
{
	PRM_SET(virtio_net_q, obj, vhca_id, vq->vhca_id);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_12_3, vq->queue_features >> 3);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_2_0, vq->queue_features & 7);
	PRM_SET(virtio_net_q, obj, dirty_bitmap_dump_enable, vq->dirty_bitmap_dump_enable);
	PRM_SET(virtio_net_q, obj, vhost_log_page, vq->vhost_log_page);
	PRM_SET(virtio_net_q, obj, state, vq->state);
	PRM_SET(virtio_net_q, obj, tisn_or_qpn, vq->tisn_or_qpn);
	PRM_SET(virtio_net_q, obj, dirty_bitmap_mkey, vq->dirty_bitmap_mkey);
	PRM_SET(virtio_net_q, obj, dirty_bitmap_size, vq->dirty_bitmap_size);
	PRM_SET(virtio_net_q, obj, dirty_bitmap_addr, vq->dirty_bitmap_addr);
	PRM_SET(virtio_net_q, obj, hw_available_index, vq->hw_available_index);
	PRM_SET(virtio_net_q, obj, hw_used_index, vq->hw_used_index);
	PRM_SET(virtio_q, q, virtio_q_type, vq->q_type);
	PRM_SET(virtio_q, q, event_mode, vq->event_mode);
	PRM_SET(virtio_q, q, queue_index, vq->queue_index);
	PRM_SET(virtio_q, q, full_emulation, vq->full_emulation);
	PRM_SET(virtio_q, q, virtio_version_1_0, vq->virtio_version_1_0);
	PRM_SET(virtio_q, q, offload_type, vq->offload_type);
	PRM_SET(virtio_q, q, event_qpn_or_msix, vq->event_qpn_or_msix);
	PRM_SET(virtio_q, q, doorbell_stride_index, vq->doorbell_stride_index);
	PRM_SET(virtio_q, q, queue_size, vq->queue_size);
	PRM_SET(virtio_q, q, device_emulation_id, vq->device_emulation_id);
	PRM_SET(virtio_q, q, desc_addr, vq->desc_addr);
	PRM_SET(virtio_q, q, used_addr, vq->used_addr);
	PRM_SET(virtio_q, q, available_addr, vq->available_addr);
	PRM_SET(virtio_q, q, virtio_q_mkey, vq->virtio_q_mkey);
	PRM_SET(virtio_q, q, max_tunnel_desc, vq->max_tunnel_desc);
	PRM_SET(virtio_q, q, error_type, vq->error_type);
	PRM_SET(virtio_q, q, umem_1_id, vq->umem[0].id);
	PRM_SET(virtio_q, q, umem_1_size, vq->umem[0].size);
	PRM_SET(virtio_q, q, umem_1_offset, vq->umem[0].offset);
	PRM_SET(virtio_q, q, umem_2_id, vq->umem[1].id);
	PRM_SET(virtio_q, q, umem_2_size, vq->umem[1].size);
	PRM_SET(virtio_q, q, umem_2_offset, vq->umem[1].offset);
	PRM_SET(virtio_q, q, umem_3_id, vq->umem[2].id);
	PRM_SET(virtio_q, q, umem_3_size, vq->umem[2].size);
	PRM_SET(virtio_q, q, umem_3_offset, vq->umem[2].offset);
	PRM_SET(virtio_q, q, counter_set_id, vq->counter_set_id);
	PRM_SET(virtio_q, q, pd, vq->pd);
	PRM_SET(virtio_q, q, queue_period_mode, vq->queue_period_mode);
	PRM_SET(virtio_q, q, queue_period_us, vq->queue_period_us);
	PRM_SET(virtio_q, q, queue_max_count, vq->queue_max_count);
	PRM_SET(virtio_q, q, desc_group_mkey, vq->desc_group_mkey);
}

/* ---- Checks ------------------------------------------------------------------- */
/* Creation-only checks: queue size and the three umems against the caps. */
/* Doorbells in the doorbell area: its size over the stride (Linux mlx5_ib_init_var_table). */
static uint64_t
doorbell_strides(void)
{
	return ((1ull << EMU_CAP_LOG_DOORBELL_BAR_SIZE) * EMU_DOORBELL_AREA_UNIT) >>
	       EMU_CAP_LOG_DOORBELL_STRIDE;
}

/*
 * The queue's offload type (virtio_q offload_type, 4 bits): 0 ETH_FRAME,
 * 1 DESC_TUNNEL, 2..15 reserved (snap-rdma mlx5_ifc.h
 * MLX5_VIRTIO_Q_OFFLOAD_TYPE_*), each one only on a device whose virtio
 * emulation caps set its support bit (eth_frame_offload_type,
 * desc_tunnel_offload_type), as every other queue property is held to its
 * cap here. Every vDPA driver creates ETH_FRAME queues: Linux mlx5_vnet
 * create_virtqueue() and DPDK mlx5_devx_cmd_create_virtq() leave the field
 * 0, our driver too; snap-rdma, on a DPU emulation manager, asks for
 * DESC_TUNNEL (snap_vq.c, virtq_common.c).
 *
 * max_tunnel_desc, the descriptors a DESC_TUNNEL queue tunnels at most, is
 * bounded by the caps' max_tunnel_desc: snap-rdma creates its queues with
 * the cap's value or less (snap_vq.c; virtq_common.c
 * virtq_vattr_from_attr() takes the smaller of the two), and no driver
 * sets it otherwise. This device tunnels nothing (max_tunnel_desc 0), so
 * any other value is refused. full_emulation and device_emulation_id are
 * left unchecked: no public text ties either to an offload type or a cap
 * (snap-rdma sets device_emulation_id, the emulated function's vhca_id, on
 * every queue whatever its type, and full_emulation beside DESC_TUNNEL
 * without saying what it means elsewhere); both are kept and read back.
 */
static int
vq_check_offload(struct emu_ctx *c, const struct emu_virtq *vq)
{
	const uint32_t types = EMU_CAP_ETH_FRAME_OFFLOAD << PRM_VIRTQ_OFFLOAD_ETH_FRAME |
			       EMU_CAP_DESC_TUNNEL_OFFLOAD << PRM_VIRTQ_OFFLOAD_DESC_TUNNEL;

	if (!(types & (1u << vq->offload_type))) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: offload_type %u is %s (virtio "
			"emulation caps: eth_frame_offload_type %u, desc_tunnel_offload_type %u)",
			vq->offload_type,
			vq->offload_type > PRM_VIRTQ_OFFLOAD_DESC_TUNNEL ? "reserved" :
			"not supported", EMU_CAP_ETH_FRAME_OFFLOAD, EMU_CAP_DESC_TUNNEL_OFFLOAD);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_BAD_OFFLOAD_TYPE);
	}
	if (vq->max_tunnel_desc > EMU_CAP_MAX_TUNNEL_DESC) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: max_tunnel_desc %u past the caps' "
			"max_tunnel_desc %u", vq->max_tunnel_desc, EMU_CAP_MAX_TUNNEL_DESC);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_BAD_TUNNEL_DESC);
	}
	return 0;
}

static int
vq_check_create(struct emu_ctx *c, struct emu_virtq *vq)
{
	uint32_t qs = vq->queue_size;
	int i;

	if (qs == 0 || qs > 32768 || (qs & (qs - 1)) != 0)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	/*
	 * The queue's doorbell is the stride it names (virtio_q
	 * doorbell_stride_index), one of the area's strides. Every public
	 * driver leaves it 0 for its own function and writes the queue index
	 * at stride 0 (Linux mlx5_vnet create_virtqueue, DPDK
	 * mlx5_devx_cmd_create_virtq); the emulated area has one stride.
	 * virtio_net_q.vhca_id: no public source says what the firmware does
	 * with it (neither driver sets it); the emulator keeps it, unchecked.
	 */
	if (vq->doorbell_stride_index >= doorbell_strides()) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: doorbell_stride_index %u "
			"past the %" PRIu64 " doorbells of the area (log_doorbell_bar_size %u "
			"in 4 KiB units, log_doorbell_stride %u)", vq->doorbell_stride_index,
			doorbell_strides(), EMU_CAP_LOG_DOORBELL_BAR_SIZE,
			EMU_CAP_LOG_DOORBELL_STRIDE);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_BAD_STRIDE);
	}
	/*
	 * A queue is born INIT; RDY is reached only by MODIFY (PRM state
	 * machine). No public driver writes virtio_net_q.state at CREATE:
	 * Linux mlx5_vnet create_virtqueue() leaves it 0 for blank and filled
	 * queues alike and moves a filled one to RDY through resume_vq()
	 * (commits "vdpa/mlx5: Allow creation of blank VQs", "Accept Init ->
	 * Ready VQ transition in resume_vq()", "Consolidate all VQ modify to
	 * Ready to use resume_vq()"), DPDK mlx5_devx_cmd_create_virtq() never
	 * sets it and mlx5_vdpa_virtq_setup() follows the CREATE with a MODIFY
	 * to RDY, NVIDIA snap-rdma snap_virtio_create_queue() likewise. No
	 * source says firmware takes another state at creation: the stricter
	 * reading refuses it.
	 */
	if (vq->state != PRM_VIRTQ_STATE_INIT) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: state %u; a queue is created INIT "
			"and made RDY by MODIFY (PRM virtio_net_q state machine)", vq->state);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_CREATE_NOT_INIT);
	}
	for (i = 0; i < 3; i++) {
		struct emu_umem_ref *r = &vq->umem[i];
		struct emu_umem *u;

		u = (struct emu_umem *)emu_obj_find(c->dev, EMU_KIND_UMEM, r->id);
		if (u == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		/*
		 * size_i >= a_i * queue_size + b_i, with the parameters the caps
		 * report now (dev->umem_a/b): firmware changes them at runtime,
		 * and refuses a queue sized from older ones with BAD_RESOURCE
		 * (Linux commit abb0dcf9938c "vdpa/mlx5: Fix firmware error on
		 * creation of 1k VQs": CREATE_GENERAL_OBJECT(0xa00) op_mod(0xd)
		 * ... status bad resource(0x5), after the PF's MTU went to 9000).
		 */
		if ((uint64_t)r->size < (uint64_t)c->dev->umem_a[i] * qs + c->dev->umem_b[i]) {
			emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: umem_%d_size %u below "
				"%u * queue_size %u + %u (umem_%d_buffer_param_a/b now)", i + 1,
				r->size, c->dev->umem_a[i], qs, c->dev->umem_b[i], i + 1);
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_VQ_UMEM_BELOW_PARAMS);
		}
		if (r->offset > u->size || r->size > u->size - r->offset)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_TOO_SMALL);
		/* A virtq umem has no page_offset: it starts at a page of the umem. */
		if (!emu_umem_offset_ok(c->dev, u, r->offset, -1, "virtq umem"))
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_BAD_OFFSET);
		r->umem = u;
	}
	vq->pd_obj = emu_obj_find(c->dev, EMU_KIND_PD, vq->pd);
	if (vq->pd_obj == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	vq->counters = NULL;
	if (vq->counter_set_id != 0) {
		vq->counters = emu_obj_find(c->dev, EMU_KIND_VQ_COUNTERS, vq->counter_set_id);
		if (vq->counters == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	}
	/*
	 * tisn_or_qpn: the TIS an ETH_FRAME queue transmits through (a QP for
	 * DESC_TUNNEL, snap-rdma snap_vq.c; vq_check_offload refuses that
	 * type). Linux mlx5_vnet create_virtqueue() names its TIS on every TX
	 * queue (vq_is_tx: odd index) and leaves RX queues at 0; DPDK
	 * mlx5_vdpa_virtq_sub_objs_prepare() names one on every queue
	 * (attr->tis_id), RX included; our driver does as Linux. A TX queue
	 * without one has no way to the wire and no driver creates one: the
	 * stricter reading refuses it. A non-zero value names a TIS, whatever
	 * the queue's direction, or is a bad reference as any object a CREATE
	 * names, and is held as one. Existence is the whole relation: a TIS
	 * belongs to a transport domain, a virtq to a PD, and no PRM field ties
	 * the one to the other.
	 */
	vq->tis = NULL;
	if (vq->tisn_or_qpn != 0) {
		vq->tis = emu_obj_find(c->dev, EMU_KIND_TIS, vq->tisn_or_qpn);
		if (vq->tis == NULL) {
			emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: queue index %u names TIS "
				"0x%x, which does not exist", vq->queue_index, vq->tisn_or_qpn);
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		}
	} else if (vq->queue_index & 1) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: TX queue index %u has no TIS "
			"(tisn_or_qpn 0): an ETH_FRAME TX queue sends through one (Linux "
			"mlx5_vnet, DPDK vdpa/mlx5 name it)", vq->queue_index);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_TX_NO_TIS);
	}
	return 0;
}

/* Checks of the modifiable fields; resolves the references they name. */
static int
vq_check_fields(struct emu_ctx *c, struct emu_virtq *vq, uint64_t mask)
{
	const struct emu_caps *caps = &c->dev->prof->caps;

	if (vq->q_type > PRM_VIRTQ_TYPE_PACKED ||
	    !(EMU_CAP_QUEUE_TYPES & (1u << vq->q_type)) ||
	    vq->event_mode > 7 || !(caps->event_mode & (1u << vq->event_mode)))
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	/*
	 * The queue's feature mask may only name features the caps announce in
	 * device_features_bits_mask, at CREATE (mask = every field) as at
	 * MODIFY. The offload bits are the mask's top four: HOST_TSO4 12,
	 * HOST_TSO6 11, CSUM 10, GUEST_CSUM 9, which DPDK's mlx5_prm.h names
	 * tso_ipv4/tso_ipv6/tx_csum/rx_csum in virtio_net_q and in the caps
	 * alike. No public source says what firmware does with a bit outside
	 * the mask, and no driver sends one to a device that lacks it:
	 * - Linux mlx5_vdpa offers a virtio feature only when its bit is in the
	 *   mask (get_supported_features(), mlx_to_vritio_features()), takes
	 *   no more from the guest (verify_driver_features()), and creates its
	 *   blank queues with those features ("vdpa/mlx5: Allow creation of
	 *   blank VQs": mvdev->mlx_features), filled ones with the negotiated.
	 * - DPDK vdpa/mlx5 offers the offloads by the same caps
	 *   (mlx5_vdpa_get_vdpa_features()) and refuses a negotiated one the
	 *   caps lack (mlx5_vdpa_features_validate(): -ENOTSUP). Its blank
	 *   queues (devargs queues/queue_size) are created with all four set
	 *   (mlx5_vdpa_virtq_sub_objs_prepare(), is_prepare), and HOST_TSO
	 *   without CSUM gets CSUM forced (ff09f80697 "vdpa/mlx5: fix TSO
	 *   offload without checksum"): within the mask of a device that
	 *   announces all four, as the mlx5 devices of the Linux examples do
	 *   (`vdpa mgmtdev show`: dev_features CSUM GUEST_CSUM MTU HOST_TSO4
	 *   HOST_TSO6 ...). No hardware is known to take a bit its caps lack:
	 *   the stricter reading stands, refused.
	 */
	if ((mask & PRM_VIRTQ_MODIFY_QUEUE_FEATURES) &&
	    (vq->queue_features & ~caps->device_features_bits_mask)) {
		emu_log(c->dev, 4, "virtq index %u: queue features 0x%x outside "
			"device_features_bits_mask 0x%x (virtio emulation caps)", vq->queue_index,
			vq->queue_features, caps->device_features_bits_mask);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CAP_NOT_SUPPORTED);
	}
	/*
	 * A VERSION_1 queue (virtio_q virtio_version_1_0: the 12-byte header,
	 * the modern ring semantics) only on a device whose virtio emulation
	 * caps report virtio_version_1_0, at CREATE as at MODIFY. No public
	 * source says what firmware does with one on a device without it, and
	 * no driver sends one there:
	 * - Linux mlx5_vdpa offers VERSION_1 only with the cap
	 *   (get_supported_features()), sets a queue's bit from the negotiated
	 *   features (create_virtqueue(); modify_virtqueue() after
	 *   set_driver_features marks it modified) and a blank queue's from the
	 *   device's own (mlx_features, "vdpa/mlx5: Allow creation of blank
	 *   VQs").
	 * - DPDK vdpa/mlx5 offers it by the cap (mlx5_vdpa_get_vdpa_features())
	 *   and refuses a negotiated VERSION_1 the caps lack
	 *   (mlx5_vdpa_features_validate(): -ENOTSUP). Its pre-created queues
	 *   carry it whatever the caps (mlx5_vdpa_virtq_sub_objs_prepare(),
	 *   is_prepare), as they carry the four offloads: on the devices it
	 *   runs on, which report it.
	 * The stricter reading, as for the feature mask above: refused.
	 */
	if ((mask & PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0) && vq->virtio_version_1_0 &&
	    !caps->virtio_version_1_0) {
		emu_log(c->dev, 4, "virtq index %u: virtio_version_1_0 refused: the device's "
			"virtio emulation caps have virtio_version_1_0 = 0 (Linux mlx5_vdpa "
			"get_supported_features, DPDK mlx5_vdpa_features_validate)",
			vq->queue_index);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_NO_VERSION_1);
	}
	/*
	 * desc_group_mkey (a separate mkey for the descriptor ring) only on a
	 * device whose virtio emulation caps report desc_group_mkey_supported:
	 * Linux mlx5_vnet sets it at CREATE and MODIFY only with that cap
	 * ("vdpa/mlx5: Use vq descriptor mapping", create_virtqueue(),
	 * modify_virtqueue()); neither DPDK vdpa/mlx5 nor our driver sets it.
	 * MODIFY already refuses its select bit here (VQ_MODIFY_SUPPORTED);
	 * at CREATE, where every field is read, a non-zero key is refused
	 * likewise. This device has no such cap, so no key is resolved.
	 */
	if ((mask & PRM_VIRTQ_MODIFY_DESC_GROUP_MKEY) && vq->desc_group_mkey != 0 &&
	    !EMU_CAP_DESC_GROUP_MKEY) {
		emu_log(c->dev, 4, "virtq index %u: desc_group_mkey 0x%x refused: the device's "
			"virtio emulation caps have desc_group_mkey_supported = 0",
			vq->queue_index, vq->desc_group_mkey);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_NO_DESC_GROUP_MKEY);
	}
	/*
	 * Completion moderation (virtio_q queue_period_mode[2], mlx5_ifc /
	 * DPDK mlx5_prm.h): 0 the device's default, 1 the period counts from
	 * the first completion reported, 2 from the last (DPDK's
	 * doc/guides/vdpadevs/mlx5.rst, hw_latency_mode); 3 is reserved.
	 * queue_period_us[12] and queue_max_count[16] take any value their
	 * width holds (0 = the device's default).
	 */
	if ((mask & PRM_VIRTQ_MODIFY_QUEUE_PERIOD) &&
	    vq->queue_period_mode > EMU_VQ_PERIOD_MODE_MAX) {
		emu_log(c->dev, 4, "virtq index %u: queue_period_mode %u is reserved (0 default, "
			"1 from first completion, 2 from last)", vq->queue_index,
			vq->queue_period_mode);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
	if (mask & PRM_VIRTQ_MODIFY_EVENT_MODE) {
		vq->event_qp = NULL;
		if (vq->event_mode == PRM_VIRTQ_EVENT_MODE_QP) {
			vq->event_qp = emu_obj_find(c->dev, EMU_KIND_QP, vq->event_qpn_or_msix);
			if (vq->event_qp == NULL)
				return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		}
	}
	if (mask & PRM_VIRTQ_MODIFY_Q_MKEY) {
		vq->mkey = NULL;
		if (vq->virtio_q_mkey != 0) {
			vq->mkey = emu_mkey_find_key(c->dev, vq->virtio_q_mkey);
			if (vq->mkey == NULL)
				return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
			/*
			 * An mkey serves objects of its own PD only: Linux
			 * mlx5_vnet.c gives virtio_q the PD its mkeys are in.
			 */
			if (vq->mkey->pd != vq->pd) {
				emu_log(c->dev, 4, "virtq index %u: virtio_q_mkey 0x%x is in "
					"PD %u, the queue in PD %u: an mkey serves its own "
					"PD only",
					vq->queue_index, vq->virtio_q_mkey, vq->mkey->pd, vq->pd);
				return emu_fail(c, PRM_STATUS_BAD_PARAM,
						EMU_SYND_MKEY_PD_MISMATCH);
			}
		}
	}
	if ((mask & PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS) && vq->dirty_bitmap_mkey != 0) {
		const struct emu_mkey *lm = emu_mkey_find_key(c->dev, vq->dirty_bitmap_mkey);

		if (lm == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		/*
		 * The device writes the bitmap through this mkey for the queue,
		 * as it reads the rings through virtio_q_mkey: the same rule, an
		 * mkey serves objects of its own PD only. Both drivers make it in
		 * the queue's PD (DPDK mlx5_vdpa_lm.c: lm_mr in cdev->pd, the
		 * queues' pdn; ours: mlx5_lm_mr_create in dev->res.pd).
		 */
		if (lm->pd != vq->pd) {
			emu_log(c->dev, 4, "virtq index %u: dirty_bitmap_mkey 0x%x is in PD %u, "
				"the queue in PD %u: an mkey serves its own PD only",
				vq->queue_index, vq->dirty_bitmap_mkey, lm->pd, vq->pd);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_MKEY_PD_MISMATCH);
		}
	}
	/*
	 * Logging on with no bitmap to log into would accept a migration that
	 * records no dirty page. The fields in effect (this command's over the
	 * queue's) must name a bitmap the mkey maps whole: both drivers send
	 * DUMP_ENABLE = 1 with the bitmap's mkey, address and size (Linux
	 * mlx5_vnet.c, DPDK mlx5_vdpa_lm.c).
	 */
	if ((mask & (PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS |
		     PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE)) && vq->dirty_bitmap_dump_enable) {
		const struct emu_mkey *lm = emu_mkey_find_key(c->dev, vq->dirty_bitmap_mkey);
		uint64_t a = vq->dirty_bitmap_addr;

		if (lm == NULL || vq->dirty_bitmap_size == 0 || a < lm->start_addr ||
		    a - lm->start_addr >= lm->len ||
		    vq->dirty_bitmap_size > lm->len - (a - lm->start_addr)) {
			emu_log(c->dev, 4, "virtq index %u: dirty_bitmap_dump_enable refused: no "
				"bitmap in effect (mkey 0x%x, addr 0x%" PRIx64 ", size %u); "
				"logging needs a bitmap its mkey maps", vq->queue_index,
				vq->dirty_bitmap_mkey, a, vq->dirty_bitmap_size);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		}
	}
	return 0;
}

/*
 * A queue may run only with an mkey to reach its rings through. The ring
 * addresses themselves are not checked: 0 is an address like any other
 * (QEMU's guest RAM starts at GPA 0, and the mkey translates from there),
 * no public PRM text makes RDY depend on them, and the vendor's DPDK
 * driver moves a packed queue to RDY with all three at 0:
 * mlx5_vdpa_virtq_sub_objs_prepare() fills desc/used/available only for a
 * split ring (since "vdpa/mlx5: support stateless offloads", DPDK 20.02,
 * which lists packed = Y in doc/guides/vdpadevs/features/mlx5.ini), on a
 * CREATE followed by MODIFY STATE, or a MODIFY with the ADDR bit of a
 * pre-created queue. Linux resume_vq() sends an INIT queue's modified
 * fields then RDY with no address test either. A ring the mkey cannot
 * translate faults at the queue's first access (ERR, OBJECT_CHANGE), as
 * any bad address does.
 */
static int
vq_check_rdy(struct emu_ctx *c, const struct emu_virtq *vq)
{
	if (vq->mkey == NULL) {
		emu_log(c->dev, 4, "virtq index %u: RDY refused: no virtio_q_mkey to reach its "
			"rings through", vq->queue_index);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
	return 0;
}

/*
 * PRM state machine: INIT -> RDY, RDY -> SUSPEND, SUSPEND -> RDY only with
 * freeze_to_rdy_supported; ERR is terminal; nothing returns to INIT.
 */
static bool
vq_transition_ok(const struct emu_caps *caps, uint8_t from, uint8_t to)
{
	if (from == PRM_VIRTQ_STATE_INIT && to == PRM_VIRTQ_STATE_RDY)
		return true;
	if (from == PRM_VIRTQ_STATE_RDY && to == PRM_VIRTQ_STATE_SUSPEND)
		return true;
	if (from == PRM_VIRTQ_STATE_SUSPEND && to == PRM_VIRTQ_STATE_RDY)
		return caps->freeze_to_rdy_supported != 0;
	return false;
}

/*
 * Modify bits the caps gate (virtio emulation caps): virtio_net_q_addr_modify
 * gates the ring addresses, virtio_q_index_modify the two hardware indices
 * (NVIDIA snap-rdma, snap_virtio_query_queue(), derives the modifiable
 * fields from exactly these caps), and vnet_modify_ext the other fields of
 * the extended set: queue type, VERSION_1, mkey, features, event mode (DPDK
 * vdpa/mlx5 sends those bits only when all three caps are set:
 * mlx5_vdpa_is_modify_virtq_supported()). STATE, the dirty bitmap and the
 * queue period are modifiable on every device.
 */
#define VQ_MODIFY_EXT_BITS (PRM_VIRTQ_MODIFY_Q_TYPE | PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0 | \
			    PRM_VIRTQ_MODIFY_Q_MKEY | PRM_VIRTQ_MODIFY_QUEUE_FEATURES | \
			    PRM_VIRTQ_MODIFY_EVENT_MODE)
#define VQ_MODIFY_INDEX_BITS (PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX | \
			      PRM_VIRTQ_MODIFY_HW_USED_INDEX)

static int
vq_check_modify_caps(struct emu_ctx *c, const struct emu_virtq *vq, uint64_t fields)
{
	const struct emu_caps *caps = &c->dev->prof->caps;
	const char *cap = NULL;

	if ((fields & PRM_VIRTQ_MODIFY_ADDRS) && !caps->virtio_net_q_addr_modify)
		cap = "virtio_net_q_addr_modify";
	else if ((fields & VQ_MODIFY_INDEX_BITS) && !caps->virtio_q_index_modify)
		cap = "virtio_q_index_modify";
	else if ((fields & VQ_MODIFY_EXT_BITS) && !caps->vnet_modify_ext)
		cap = "vnet_modify_ext";
	if (cap == NULL)
		return 0;
	emu_log(c->dev, 4, "virtq %u: MODIFY fields 0x%" PRIx64 " refused: %s is 0 "
		"(virtio emulation caps)", vq->obj.id, fields, cap);
	return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CAP_NOT_SUPPORTED);
}

/*
 * The select bits this device takes for a queue: the known ones it supports,
 * less those whose modify cap is 0 (vq_check_modify_caps). QUERY reports
 * them in modify_field_select (emu_virtq_query).
 */
static uint64_t
vq_modifiable(const struct emu_caps *caps)
{
	uint64_t m = VQ_MODIFY_SUPPORTED;

	if (!caps->virtio_net_q_addr_modify)
		m &= ~(uint64_t)PRM_VIRTQ_MODIFY_ADDRS;
	if (!caps->virtio_q_index_modify)
		m &= ~(uint64_t)VQ_MODIFY_INDEX_BITS;
	if (!caps->vnet_modify_ext)
		m &= ~(uint64_t)VQ_MODIFY_EXT_BITS;
	return m;
}

/* What a RDY queue takes beside STATE: the dirty bitmap (see emu_virtq_modify). */
#define VQ_MODIFY_WHILE_RDY (PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS | \
			     PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE)

#define UMEM_OBJ(u) ((u) != NULL ? &(u)->obj : NULL)

/* Make the references of `vq` the ones its object holds (all or nothing). */
static int
vq_commit_refs(struct emu_virtq *vq)
{
	struct emu_obj *want[VQ_MAX_REFS] = {
		vq->pd_obj, UMEM_OBJ(vq->umem[0].umem), UMEM_OBJ(vq->umem[1].umem),
		UMEM_OBJ(vq->umem[2].umem), vq->counters, vq->tis, vq->event_qp,
		vq->mkey != NULL ? &vq->mkey->obj : NULL,
	};
	struct emu_obj **held;
	unsigned int i, n = 0;

	held = calloc(VQ_MAX_REFS, sizeof(*held));
	if (held == NULL)
		return -ENOMEM;
	for (i = 0; i < VQ_MAX_REFS; i++) {
		if (want[i] == NULL)
			continue;
		want[i]->refs++;
		held[n++] = want[i];
	}
	emu_obj_release_all(&vq->obj);
	vq->obj.held = held;
	vq->obj.nheld = n;
	vq->obj.held_cap = VQ_MAX_REFS;
	return 0;
}

static struct emu_virtq *
vq_find(struct emu_ctx *c)
{
	uint32_t id = (uint32_t)PRM_GET(general_obj_in_cmd_hdr, c->in, obj_id);

	return (struct emu_virtq *)emu_obj_find(c->dev, EMU_KIND_VIRTQ, id);
}

/* ---- Commands ------------------------------------------------------------------- */
int
emu_virtq_create(struct emu_ctx *c)
{
	const void *obj = PRM_CADDR(virtq_cmd, c->in, obj);
	const void *q = PRM_CADDR(virtq_cmd, c->in, q);
	struct emu_virtq tmp, *vq;
	struct emu_obj hdr;
	int status;

	if (!(c->dev->prof->caps.general_obj_types & PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q)) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: general_obj_types lacks it");
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_OBJ_TYPE);
	}
	if (c->dev->live[EMU_KIND_VIRTQ] >= c->dev->prof->caps.max_num_virtio_queues)
		return emu_fail(c, PRM_STATUS_EXCEED_LIM, EMU_SYND_TOO_MANY_VIRTQS);
	memset(&tmp, 0, sizeof(tmp));
	vq_decode_create(&tmp, obj, q);
	/*
	 * queue_index names one of the device's max_num_virtio_queues queues.
	 * An inference, no public PRM text says it: a queue is kicked by
	 * writing its index to the doorbell (Linux mlx5_vdpa_kick_vq, DPDK's
	 * write of virtq->index at virtq_db_addr), so the index is how the
	 * device tells its queues apart, and neither driver creates a queue at
	 * or past the cap (Linux mlx5_vdpa_dev_add: max_vqs from it; DPDK
	 * vdpa/mlx5 refuses such a vring, "Too big vring id"). Two live queues
	 * may share an index: our driver and DPDK's may create a replacement
	 * before they destroy the old object.
	 */
	if (tmp.queue_index >= c->dev->prof->caps.max_num_virtio_queues) {
		emu_log(c->dev, 4, "CREATE VIRTIO_NET_Q refused: queue_index %u past "
			"max_num_virtio_queues %u (virtio emulation caps)", tmp.queue_index,
			c->dev->prof->caps.max_num_virtio_queues);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_VQ_BAD_INDEX);
	}
	status = vq_check_offload(c, &tmp);
	if (status == 0)
		status = vq_check_create(c, &tmp);
	if (status == 0)
		status = vq_check_fields(c, &tmp, PRM_VIRTQ_MODIFY_ALL_KNOWN);
	if (status != 0)
		return status;
	vq = (struct emu_virtq *)emu_obj_new(c->dev, EMU_KIND_VIRTQ, sizeof(*vq));
	if (vq == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	hdr = vq->obj;
	*vq = tmp;
	vq->obj = hdr;
	if (vq_commit_refs(vq) < 0) {
		emu_obj_free(c->dev, &vq->obj);
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	}
	PRM_SET(general_obj_out_cmd_hdr, c->out, obj_id, vq->obj.id);
	return PRM_STATUS_OK;
}

int
emu_virtq_modify(struct emu_ctx *c)
{
	const void *obj = PRM_CADDR(virtq_cmd, c->in, obj);
	const void *q = PRM_CADDR(virtq_cmd, c->in, q);
	uint64_t mask = PRM_GET(virtio_net_q, obj, modify_field_select);
	uint64_t fields = mask & ~(uint64_t)PRM_VIRTQ_MODIFY_STATE;
	uint8_t to = (uint8_t)PRM_GET(virtio_net_q, obj, state);
	struct emu_virtq *vq = vq_find(c);
	struct emu_virtq tmp;
	struct emu_obj hdr;
	int status;

	/* Cost: the field part and the state part add up (one slot). */
	c->cost[0] = fields != 0 ? EMU_COST_MODIFY_VIRTQ_FIELDS : EMU_COST_NONE;
	if (mask & PRM_VIRTQ_MODIFY_STATE)
		c->cost[1] = to == PRM_VIRTQ_STATE_RDY ? EMU_COST_MODIFY_VIRTQ_STATE_RDY :
			     to == PRM_VIRTQ_STATE_SUSPEND ?
			     EMU_COST_MODIFY_VIRTQ_STATE_SUSPEND : EMU_COST_NONE;
	if (vq == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	/* No bit exists for queue_size or the umems: unknown bits are refused. */
	if (mask & ~(uint64_t)VQ_MODIFY_SUPPORTED)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_MODIFY_FIELD);
	status = vq_check_modify_caps(c, vq, fields);
	if (status != 0)
		return status;
	/*
	 * Fields other than STATE only while INIT or SUSPEND (Linux mlx5_vnet.c
	 * modifiable_virtqueue_fields), but for the dirty bitmap's on a RDY
	 * queue: the vendor's DPDK vdpa/mlx5 starts and stops logging on
	 * running queues with them (mlx5_vdpa_lm.c), the only way a live
	 * migration logs while the guest runs (doc/emulator.md, "The peer").
	 * That exception is for RDY only: a queue in ERR takes no field (neither
	 * source modifies one; the queue is destroyed and re-created).
	 */
	if (fields != 0 && vq->state != PRM_VIRTQ_STATE_INIT &&
	    vq->state != PRM_VIRTQ_STATE_SUSPEND &&
	    (vq->state != PRM_VIRTQ_STATE_RDY || !c->dev->prof->caps.dirty_bitmap_in_rdy ||
	     (fields & ~(uint64_t)VQ_MODIFY_WHILE_RDY) != 0)) {
		emu_log(c->dev, 4, "virtq %u: MODIFY fields 0x%" PRIx64 " refused in state %u: "
			"only INIT or SUSPEND take them (RDY: the dirty bitmap's)", vq->obj.id,
			fields, vq->state);
		return emu_fail(c, PRM_STATUS_BAD_RES_STATE, EMU_SYND_MODIFY_NOT_ALLOWED);
	}
	/* Fields first, then the state, as one MODIFY may carry both. */
	tmp = *vq;
	vq_decode(&tmp, obj, q, fields);
	status = vq_check_fields(c, &tmp, fields);
	if (status != 0)
		return status;
	if (mask & PRM_VIRTQ_MODIFY_STATE) {
		if (!vq_transition_ok(&c->dev->prof->caps, vq->state, to)) {
			if (vq->state == PRM_VIRTQ_STATE_SUSPEND && to == PRM_VIRTQ_STATE_RDY)
				emu_log(c->dev, 4, "virtq %u: SUSPEND -> RDY refused: "
					"freeze_to_rdy_supported is 0 (virtio emulation caps)",
					vq->obj.id);
			return emu_fail(c, PRM_STATUS_BAD_RES_STATE,
					EMU_SYND_BAD_STATE_TRANSITION);
		}
		if (to == PRM_VIRTQ_STATE_RDY) {
			status = vq_check_rdy(c, &tmp);
			if (status != 0)
				return status;
		}
		tmp.state = to;
	}
	hdr = vq->obj;
	*vq = tmp;
	vq->obj = hdr;
	if (vq_commit_refs(vq) < 0)
		emu_log(c->dev, 3, "virtq %u: out of memory updating references", hdr.id);
	/*
	 * Chains fetched ahead (caps rx_prefetch_chains) were read from the
	 * ring, at the index and through the memory the queue had: a new one
	 * of these makes the device start over from what it is given.
	 */
	if (vq->dp != NULL &&
	    (fields & (PRM_VIRTQ_MODIFY_ADDRS | PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX |
		       PRM_VIRTQ_MODIFY_Q_TYPE | PRM_VIRTQ_MODIFY_Q_MKEY))) {
		vq->dp->pf_first = 0;
		vq->dp->pf_n = 0;
	}
	/*
	 * To RDY (first start or resume): the device reads the rings at the
	 * next doorbell, not at the transition; a doorbell rung while the
	 * queue was not RDY is not remembered (kick_queues). No public PRM
	 * text says either way; the stricter reading, and the one DPDK's
	 * vdpa/mlx5 acts on: mlx5_vdpa_virtq_setup() rings the queue's
	 * doorbell (virtq_db_addr) right after the queue is configured, so
	 * that what the guest posted before is fetched. A driver that moves a
	 * queue to RDY and relies on the device to look by itself would stall
	 * a guest that does not kick again (one that posted while the device
	 * asked not to be notified). To SUSPEND: nothing to do, the data path
	 * runs under dev->lock and checks the state before each batch.
	 */
	return PRM_STATUS_OK;
}

int
emu_virtq_query(struct emu_ctx *c)
{
	struct emu_virtq *vq = vq_find(c);

	if (vq == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	PRM_SET(general_obj_out_cmd_hdr, c->out, obj_id, vq->obj.id);
	vq_encode(vq, PRM_ADDR(virtq_cmd, c->out, obj), PRM_ADDR(virtq_cmd, c->out, q));
	/*
	 * In a QUERY output modify_field_select is the set of fields the
	 * object may be modified in: NVIDIA snap-rdma snap_virtio_query_queue()
	 * reads it as the device's modifiable fields (STATE, QUEUE_PERIOD, the
	 * dirty bitmap's bits; addresses and indices from the caps), as it
	 * reads the same field of its other emulation objects. 0 would say
	 * that not even STATE may change.
	 */
	PRM_SET(virtio_net_q, PRM_ADDR(virtq_cmd, c->out, obj), modify_field_select,
		vq_modifiable(&c->dev->prof->caps));
	return PRM_STATUS_OK;
}

int
emu_virtq_destroy(struct emu_ctx *c)
{
	struct emu_virtq *vq = vq_find(c);

	if (vq == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	/* RES_BUSY while an RQT lists it. */
	return emu_obj_destroy(c->dev, &vq->obj, &c->syndrome);
}

int
emu_virtq_set_error(struct emu_dev *dev, struct emu_virtq *vq, uint8_t error_type)
{
	uint8_t data[PRM_SIZE(eqe_comp)];

	if (vq->state != PRM_VIRTQ_STATE_RDY)
		return -EINVAL;
	vq->state = PRM_VIRTQ_STATE_ERR;
	vq->error_type = error_type;
	memset(data, 0, sizeof(data));
	/* OBJECT_CHANGE names its object in the affiliated event header (mlx5_ifc.h). */
	PRM_SET(affiliated_event_header, data, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(affiliated_event_header, data, obj_id, vq->obj.id);
	emu_log(dev, 6, "virtq %u (index %u) -> ERR, error_type %u", vq->obj.id,
		vq->queue_index, error_type);
	emu_event_post(dev, EMU_KIND_VIRTQ, vq->obj.id, PRM_EVENT_OBJECT_CHANGE, data);
	return 0;
}

int
emu_virtq_log_misses(struct emu_dev *dev, uint32_t virtq_id, uint64_t *misses)
{
	struct emu_virtq *vq;

	pthread_mutex_lock(&dev->lock);
	vq = (struct emu_virtq *)emu_obj_find(dev, EMU_KIND_VIRTQ, virtq_id);
	if (vq != NULL)
		*misses = vq->log_misses;
	pthread_mutex_unlock(&dev->lock);
	return vq != NULL ? 0 : -ENOENT;
}

int
emu_virtq_force_error(struct emu_dev *dev, uint32_t virtq_id, uint8_t error_type)
{
	struct emu_virtq *vq;
	int ret;

	pthread_mutex_lock(&dev->lock);
	vq = (struct emu_virtq *)emu_obj_find(dev, EMU_KIND_VIRTQ, virtq_id);
	ret = vq != NULL ? emu_virtq_set_error(dev, vq, error_type) : -ENOENT;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/*
 * The doorbell area the caps announce: from doorbell_bar_offset,
 * (1 << log_doorbell_bar_size) 4 KiB units (PRM virtio_emulation_cap, as
 * Linux mlx5_ib_init_var_table reads it). A write anywhere else in the BAR
 * rings nothing.
 */
static int
doorbell_check(struct emu_dev *dev, uint32_t offset, uint32_t value)
{
	uint64_t base = dev->prof->caps.doorbell_bar_offset;
	uint64_t area = (1ull << EMU_CAP_LOG_DOORBELL_BAR_SIZE) * EMU_DOORBELL_AREA_UNIT;

	if (offset >= base && offset - base < area)
		return 0;
	emu_log(dev, 3, "doorbell write of 0x%x at BAR offset 0x%x ignored: outside the doorbell "
		"area [0x%" PRIx64 ", 0x%" PRIx64 ") (PRM virtio_emulation_cap doorbell_bar_offset, "
		"log_doorbell_bar_size)", value, offset, base, base + area);
	return -EINVAL;
}

/*
 * dev->lock held. Kick the queue named by value; with others, every other
 * RDY queue too. The area is one stride (EMU_CAP_LOG_DOORBELL_STRIDE), the
 * doorbell of every queue (doorbell_stride_index 0, vq_check_create).
 */
static void
kick_queues(struct emu_dev *dev, uint32_t value, bool others)
{
	struct emu_obj *o;

	EMU_FOR_KIND(o, dev, EMU_KIND_VIRTQ) {
		struct emu_virtq *vq = (struct emu_virtq *)o;

		if (vq->state != PRM_VIRTQ_STATE_RDY)
			continue;
		if (vq->queue_index == value) {
			vq->doorbells++;
			emu_dp_vq_kick(dev, vq);
		} else if (others) {
			emu_dp_vq_kick(dev, vq);
		}
	}
}

int
emu_doorbell(struct emu_dev *dev, uint32_t offset, uint32_t value)
{
	if (doorbell_check(dev, offset, value) < 0)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	kick_queues(dev, value, false);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

int
emu_doorbell_merged(struct emu_dev *dev, uint32_t offset, uint32_t value)
{
	if (doorbell_check(dev, offset, value) < 0)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	kick_queues(dev, value, true);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/* ---- VIRTIO_Q_COUNTERS ----------------------------------------------------------- */
int
emu_counters_create(struct emu_ctx *c)
{
	struct emu_obj *o;

	/* Only a device whose general_obj_types has bit 28 has counter sets. */
	if (!(c->dev->prof->caps.general_obj_types &
	      PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS)) {
		emu_log(c->dev, 4, "CREATE VIRTIO_Q_COUNTERS refused: general_obj_types 0x%"
			PRIx64 " lacks bit 28", c->dev->prof->caps.general_obj_types);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_OBJ_TYPE);
	}
	o = emu_obj_new(c->dev, EMU_KIND_VQ_COUNTERS, sizeof(struct emu_vq_counters));
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	PRM_SET(general_obj_out_cmd_hdr, c->out, obj_id, o->id);
	return PRM_STATUS_OK;
}

int
emu_counters_query(struct emu_ctx *c)
{
	uint32_t id = (uint32_t)PRM_GET(general_obj_in_cmd_hdr, c->in, obj_id);
	struct emu_vq_counters *k;
	void *obj = PRM_ADDR(virtq_counters_cmd, c->out, obj);

	k = (struct emu_vq_counters *)emu_obj_find(c->dev, EMU_KIND_VQ_COUNTERS, id);
	if (k == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	PRM_SET(general_obj_out_cmd_hdr, c->out, obj_id, id);
	PRM_SET(virtio_q_counters, obj, received_desc, k->received_desc);
	PRM_SET(virtio_q_counters, obj, completed_desc, k->completed_desc);
	PRM_SET(virtio_q_counters, obj, error_cqes, k->error_cqes);
	PRM_SET(virtio_q_counters, obj, bad_desc_errors, k->bad_desc_errors);
	PRM_SET(virtio_q_counters, obj, exceed_max_chain, k->exceed_max_chain);
	PRM_SET(virtio_q_counters, obj, invalid_buffer, k->invalid_buffer);
	return PRM_STATUS_OK;
}

int
emu_counters_destroy(struct emu_ctx *c)
{
	uint32_t id = (uint32_t)PRM_GET(general_obj_in_cmd_hdr, c->in, obj_id);
	struct emu_obj *o = emu_obj_find(c->dev, EMU_KIND_VQ_COUNTERS, id);

	if (o == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	/* RES_BUSY while a virtq counts into it. */
	return emu_obj_destroy(c->dev, o, &c->syndrome);
}
