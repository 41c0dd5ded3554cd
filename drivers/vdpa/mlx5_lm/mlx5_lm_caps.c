/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device capabilities: the general HCA caps and the virtio emulation caps
 * (QUERY_HCA_CAP, op_mod = cap_type << 1 | current). The driver sizes
 * queues, umems and doorbells from these, never from constants.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

static int
query_cap(struct mlx5_lm_dev *dev, uint16_t cap_type, void *out, size_t outlen)
{
	uint8_t in[PRM_SIZE(query_hca_cap_in)];

	memset(in, 0, sizeof(in));
	PRM_SET(query_hca_cap_in, in, opcode, PRM_CMD_QUERY_HCA_CAP);
	PRM_SET(query_hca_cap_in, in, op_mod, PRM_HCA_CAP_OP_MOD(cap_type, 1));
	return devx_cmd(dev->devx, in, sizeof(in), out, outlen);
}

/* The umem parameters of virtio emulation caps, a << 32 | b for umem 1..3. */
static void
umem_params_get(const void *cap, uint64_t p[3])
{
	p[0] = (uint64_t)PRM_GET(virtio_emulation_cap, cap, umem_1_buffer_param_a) << 32 |
	       (uint32_t)PRM_GET(virtio_emulation_cap, cap, umem_1_buffer_param_b);
	p[1] = (uint64_t)PRM_GET(virtio_emulation_cap, cap, umem_2_buffer_param_a) << 32 |
	       (uint32_t)PRM_GET(virtio_emulation_cap, cap, umem_2_buffer_param_b);
	p[2] = (uint64_t)PRM_GET(virtio_emulation_cap, cap, umem_3_buffer_param_a) << 32 |
	       (uint32_t)PRM_GET(virtio_emulation_cap, cap, umem_3_buffer_param_b);
}

int
mlx5_lm_caps_query(struct mlx5_lm_dev *dev)
{
	struct rte_pmd_mlx5_lm_caps *c = &dev->caps;
	size_t outlen = PRM_SIZE(query_hca_cap_out);
	uint8_t *out = calloc(1, outlen);
	const void *cap;
	int ret, roce;

	if (out == NULL)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	snprintf(c->backend, sizeof(c->backend), "%s", devx_is_emulated(dev->devx) ? "emu" : "rdma");
	cap = PRM_CADDR(query_hca_cap_out, out, capability);

	ret = query_cap(dev, PRM_CAP_GENERAL, out, outlen);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot query general HCA caps");
		goto out;
	}
	c->vhca_id = PRM_GET(cmd_hca_cap, cap, vhca_id);
	c->general_obj_types = PRM_GET(cmd_hca_cap, cap, general_obj_types);
	c->log_max_klm_list_size = PRM_GET(cmd_hca_cap, cap, log_max_klm_list_size);
	c->cq_oi = PRM_GET(cmd_hca_cap, cap, cq_oi);
	/* Without RoCE the QP's formats are the SQ's (Linux mlx5_get_qp_default_ts). */
	c->qp_ts_format = PRM_GET(cmd_hca_cap, cap, sq_ts_format);
	roce = PRM_GET(cmd_hca_cap, cap, roce);
	if (!(c->general_obj_types & PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q)) {
		DRV_LOG(ERR, dev, "device has no virtio-net queue objects (general_obj_types 0x%"
			PRIx64 "): not a vDPA-capable function", c->general_obj_types);
		ret = -ENOTSUP;
		goto out;
	}

	if (!(c->general_obj_types & PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS))
		DRV_LOG(INFO, dev, "device has no VIRTIO_Q_COUNTERS (general_obj_types 0x%" PRIx64
			"): queue statistics are not available", c->general_obj_types);
	if (!c->cq_oi)
		DRV_LOG(INFO, dev, "device has no cq_oi: event CQs are created without "
			"overrun ignore (collapsed, they cannot overrun), as DPDK vdpa/mlx5 "
			"creates its own");

	if (roce) {
		/* With RoCE, the RoCE caps' qp_ts_format (Linux, DPDK vdpa/mlx5). */
		memset(out, 0, outlen);
		ret = query_cap(dev, PRM_CAP_ROCE, out, outlen);
		if (ret < 0) {
			DRV_LOG(ERR, dev, "cannot query RoCE caps");
			goto out;
		}
		c->qp_ts_format = PRM_GET(roce_cap, cap, qp_ts_format);
	}

	memset(out, 0, outlen);
	ret = query_cap(dev, PRM_CAP_VIRTIO_EMULATION, out, outlen);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot query virtio emulation caps");
		goto out;
	}
	c->max_num_virtio_queues = PRM_GET(virtio_emulation_cap, cap, max_num_virtio_queues);
	c->virtio_queue_type = PRM_GET(virtio_emulation_cap, cap, virtio_queue_type);
	c->event_mode = PRM_GET(virtio_emulation_cap, cap, event_mode);
	c->virtio_version_1_0 = PRM_GET(virtio_emulation_cap, cap, virtio_version_1_0);
	c->device_features_bits_mask = PRM_GET(virtio_emulation_cap, cap,
					       device_features_bits_mask);
	c->vnet_modify_ext = PRM_GET(virtio_emulation_cap, cap, vnet_modify_ext);
	c->virtio_net_q_addr_modify = PRM_GET(virtio_emulation_cap, cap, virtio_net_q_addr_modify);
	c->virtio_q_index_modify = PRM_GET(virtio_emulation_cap, cap, virtio_q_index_modify);
	c->freeze_to_rdy_supported = PRM_GET(virtio_emulation_cap, cap, freeze_to_rdy_supported);
	c->desc_group_mkey_supported = PRM_GET(virtio_emulation_cap, cap,
					       desc_group_mkey_supported);
	c->log_doorbell_stride = PRM_GET(virtio_emulation_cap, cap, log_doorbell_stride);
	c->log_doorbell_bar_size = PRM_GET(virtio_emulation_cap, cap, log_doorbell_bar_size);
	c->doorbell_bar_offset = PRM_GET(virtio_emulation_cap, cap, doorbell_bar_offset);
	c->umem_param_a[0] = PRM_GET(virtio_emulation_cap, cap, umem_1_buffer_param_a);
	c->umem_param_b[0] = PRM_GET(virtio_emulation_cap, cap, umem_1_buffer_param_b);
	c->umem_param_a[1] = PRM_GET(virtio_emulation_cap, cap, umem_2_buffer_param_a);
	c->umem_param_b[1] = PRM_GET(virtio_emulation_cap, cap, umem_2_buffer_param_b);
	c->umem_param_a[2] = PRM_GET(virtio_emulation_cap, cap, umem_3_buffer_param_a);
	c->umem_param_b[2] = PRM_GET(virtio_emulation_cap, cap, umem_3_buffer_param_b);
	umem_params_get(cap, dev->umem_param);
	if (!c->virtio_version_1_0)
		DRV_LOG(INFO, dev, "device has no virtio_version_1_0: VERSION_1 is not offered, "
			"queues are legacy (a legacy front end only)");
	if (!(c->event_mode & (1u << PRM_VIRTQ_EVENT_MODE_QP))) {
		/* User space relays completions through an event QP: nothing else works here. */
		DRV_LOG(ERR, dev, "virtio caps lack QP event mode (event_mode 0x%x)", c->event_mode);
		ret = -ENOTSUP;
		goto out;
	}
	if (c->max_num_virtio_queues < 2) {
		DRV_LOG(ERR, dev, "device offers %u virtio queues, a net device needs 2",
			c->max_num_virtio_queues);
		ret = -ENOTSUP;
	}
out:
	free(out);
	return ret;
}

/*
 * The umem parameters are current values, not fixed ones: firmware changes
 * them at runtime (the PF's MTU set to 9000 after the switch to switchdev),
 * and refuses a queue whose umems were sized from older ones with
 * BAD_RESOURCE. Linux reads them right before it creates its queues
 * (commit abb0dcf9938c "vdpa/mlx5: Fix firmware error on creation of 1k
 * VQs", read_umem_params), with the op_mod of the current values, as
 * query_cap. Here once per batch of creations after probe: 50 us in the
 * cx6dx model, next to creations of a few hundred each.
 */
int
mlx5_lm_umem_params_read(struct mlx5_lm_dev *dev, const char *why)
{
	size_t outlen = PRM_SIZE(query_hca_cap_out);
	uint8_t *out = calloc(1, outlen);
	uint64_t p[3], was[3];
	int ret, i, changed = 0;

	if (out == NULL) {
		DRV_LOG(WARNING, dev, "no memory to read the umem parameters again (%s): queues "
			"are sized from the last ones read", why);
		return -ENOMEM;
	}
	ret = query_cap(dev, PRM_CAP_VIRTIO_EMULATION, out, outlen);
	if (ret < 0) {
		DRV_LOG(WARNING, dev, "cannot read the umem parameters again (%s): queues are "
			"sized from the last ones read", why);
		goto out;
	}
	umem_params_get(PRM_CADDR(query_hca_cap_out, out, capability), p);
	for (i = 0; i < 3; i++) {
		was[i] = __atomic_exchange_n(&dev->umem_param[i], p[i], __ATOMIC_RELAXED);
		changed |= was[i] != p[i];
	}
	if (changed)
		DRV_LOG(INFO, dev, "umem parameters changed (%s): a/b of umem 1 %u/%u (were "
			"%u/%u), umem 2 %u/%u (%u/%u), umem 3 %u/%u (%u/%u)", why,
			(uint32_t)(p[0] >> 32), (uint32_t)p[0], (uint32_t)(was[0] >> 32),
			(uint32_t)was[0], (uint32_t)(p[1] >> 32), (uint32_t)p[1],
			(uint32_t)(was[1] >> 32), (uint32_t)was[1], (uint32_t)(p[2] >> 32),
			(uint32_t)p[2], (uint32_t)(was[2] >> 32), (uint32_t)was[2]);
	ret = changed;
out:
	free(out);
	return ret;
}

void
mlx5_lm_umem_params_once(struct mlx5_lm_dev *dev, int *done, const char *why)
{
	if (*done)
		return;
	*done = 1;
	mlx5_lm_umem_params_read(dev, why);
}

/* ---- where the device stands with its front end --------------------------- */

/* Under report.lock: what rte_pmd_mlx5_lm_get_state() reports. */
void
mlx5_lm_set_state(struct mlx5_lm_dev *dev, int state, int err, const char *why)
{
	pthread_mutex_lock(&dev->report.lock);
	dev->report.state = state;
	if (state == RTE_PMD_MLX5_LM_STATE_FAILED) {
		dev->report.last_err = err;
		snprintf(dev->report.last_err_msg, sizeof(dev->report.last_err_msg), "%s", why);
		dev->report.conf_failures++;
	}
	pthread_mutex_unlock(&dev->report.lock);
}

int
rte_pmd_mlx5_lm_get_state(const char *name, struct rte_pmd_mlx5_lm_state *st)
{
	struct mlx5_lm_dev *dev = st != NULL ? mlx5_lm_dev_get(name) : NULL;

	if (dev == NULL)
		return -ENODEV;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&dev->report.lock);
	st->state = dev->report.state;
	st->last_error = dev->report.last_err;
	snprintf(st->last_error_msg, sizeof(st->last_error_msg), "%s", dev->report.last_err_msg);
	st->conf_failures = dev->report.conf_failures;
	pthread_mutex_unlock(&dev->report.lock);
	/* conf_count: written under dev->lock by the worker; a torn read is impossible (64-bit). */
	st->conf_count = __atomic_load_n(&dev->times.conf_count, __ATOMIC_RELAXED);
	mlx5_lm_dev_put(dev);
	return 0;
}
