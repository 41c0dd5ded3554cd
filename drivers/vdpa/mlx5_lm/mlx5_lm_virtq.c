/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware virtqs and their sub-resources: three umems sized from the
 * caps (size_i = a_i * queue_size + b_i), a counter set, and the event
 * path (mlx5_lm_eventq.c: CQ, the firmware QP the virtq writes to, our QP
 * connected to it).
 *
 * A virtq is created "blank" at probe (INIT, nothing but size and
 * resources) and configured at DRIVER_OK with one MODIFY carrying only the
 * fields that differ plus STATE=RDY. The PRM has no modify bit for
 * queue_size, so a size change means destroy and re-create.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

void
mlx5_lm_vq_doorbell(struct mlx5_lm_dev *dev, uint16_t index)
{
	/* Our VAR's doorbell: doorbell_bar_offset + k * stride (VAR k, Linux alloc_var_entry). */
	uint64_t off = dev->caps.doorbell_bar_offset +
		       ((uint64_t)devx_db_index(dev->db) << dev->caps.log_doorbell_stride);

	devx_db_ring(dev->db, (uint32_t)off, index);
}

void
mlx5_lm_virtq_orphans_release(struct mlx5_lm_virtq *vq, int closed)
{
	uint8_t i, kept = 0;

	for (i = 0; i < vq->n_orphans; i++) {
		if (closed || devx_umem_dereg(vq->orphans[i].umem) == 0) {
			free(vq->orphans[i].buf);
			continue;
		}
		vq->orphans[kept++] = vq->orphans[i];
	}
	vq->n_orphans = kept;
}

static void
umems_destroy(struct mlx5_lm_virtq *vq)
{
	int i;

	mlx5_lm_virtq_orphans_release(vq, 0);
	for (i = 0; i < 3; i++) {
		if (vq->umem[i] != NULL && devx_umem_dereg(vq->umem[i]) < 0) {
			/* The device still holds it: keep it and its memory aside. */
			if (vq->n_orphans == RTE_DIM(vq->orphans)) {
				VQ_LOG(ERR, vq, "umem %d kept by the device, no room to track it", i + 1);
				continue;
			}
			vq->orphans[vq->n_orphans].umem = vq->umem[i];
			vq->orphans[vq->n_orphans].buf = vq->umem_buf[i];
			vq->n_orphans++;
			vq->umem[i] = NULL;
			vq->umem_buf[i] = NULL;
			continue;
		}
		vq->umem[i] = NULL;
		free(vq->umem_buf[i]);
		vq->umem_buf[i] = NULL;
	}
}

/* Bytes umem i of a queue of qsize entries needs, by the umem parameters last read. */
static uint64_t
umem_need(const struct mlx5_lm_dev *dev, int i, uint16_t qsize)
{
	uint64_t p = __atomic_load_n(&dev->umem_param[i], __ATOMIC_RELAXED);

	return (p >> 32) * qsize + (uint32_t)p;
}

static int
umems_create(struct mlx5_lm_virtq *vq, uint16_t qsize)
{
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t need = umem_need(vq->dev, i, qsize);
		size_t size = (size_t)need;

		/* virtio_q umem_N_size has 32 bits: a device asking more cannot be told it. */
		if (need > UINT32_MAX) {
			VQ_LOG(ERR, vq, "umem %d would need %" PRIu64 " bytes for %u entries: past "
			       "what umem_%d_size can say", i + 1, need, qsize, i + 1);
			goto err;
		}
		vq->umem_size[i] = (uint32_t)size;
		vq->umem_buf[i] = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		if (vq->umem_buf[i] == NULL)
			goto err;
		memset(vq->umem_buf[i], 0, size);
		vq->umem[i] = devx_umem_reg(vq->dev->devx, vq->umem_buf[i], size, MLX5_LM_DMA_ACCESS);
		if (vq->umem[i] == NULL) {
			VQ_LOG(ERR, vq, "cannot register umem %d (%zu bytes)", i + 1, size);
			goto err;
		}
	}
	return 0;
err:
	umems_destroy(vq);
	return -EIO;
}

/*
 * A CREATE refused with BAD_RESOURCE, and the umem parameters, read again,
 * ask more than the queue's umems hold: they changed between the batch's
 * read and this CREATE (firmware changes them at runtime). Worth one retry
 * with umems sized anew; any other refusal is the CREATE's own.
 */
static int
umems_outgrown(struct mlx5_lm_virtq *vq, uint16_t size, const void *out)
{
	int i;

	if (PRM_GET(general_obj_out_cmd_hdr, out, status) != PRM_STATUS_BAD_RES ||
	    mlx5_lm_umem_params_read(vq->dev, "a queue refused for its umems") < 0)
		return 0;
	for (i = 0; i < 3; i++)
		if (umem_need(vq->dev, i, size) > vq->umem_size[i])
			return 1;
	return 0;
}

/* The header of a general object command: opcode on object type, id (0 for a create). */
static void
gen_obj_hdr(void *hdr, uint16_t opcode, uint16_t type, uint32_t id)
{
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, opcode);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, type);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_id, id);
}

static struct devx_obj *
counters_create(struct mlx5_lm_virtq *vq)
{
	uint8_t in[PRM_SIZE(virtq_counters_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	struct devx_obj *obj;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(hdr, PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, 0);
	obj = devx_obj_create(vq->dev->devx, in, sizeof(in), out, sizeof(out));
	if (obj == NULL)
		VQ_LOG(ERR, vq, "cannot create the counter set");
	return obj;
}

/* The CREATE mailbox in, naming the queue's umems as they are now, sent. */
static struct devx_obj *
obj_create(struct mlx5_lm_virtq *vq, uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
	void *q = PRM_ADDR(virtq_cmd, in, q);

	PRM_SET(virtio_q, q, umem_1_id, devx_umem_id(vq->umem[0]));
	PRM_SET(virtio_q, q, umem_1_size, vq->umem_size[0]);
	PRM_SET(virtio_q, q, umem_2_id, devx_umem_id(vq->umem[1]));
	PRM_SET(virtio_q, q, umem_2_size, vq->umem_size[1]);
	PRM_SET(virtio_q, q, umem_3_id, devx_umem_id(vq->umem[2]));
	PRM_SET(virtio_q, q, umem_3_size, vq->umem_size[2]);
	memset(out, 0, outlen);
	return devx_obj_create(vq->dev->devx, in, inlen, out, outlen);
}

/* Write the modifiable fields of cfg into a virtio_net_q / virtio_q pair. */
static void
put_cfg(void *obj, void *q, const struct mlx5_lm_vq_cfg *cfg)
{
	PRM_SET(virtio_net_q, obj, hw_available_index, cfg->hw_available_index);
	PRM_SET(virtio_net_q, obj, hw_used_index, cfg->hw_used_index);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_12_3, cfg->features >> 3);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_2_0, cfg->features & 7);
	PRM_SET(virtio_q, q, virtio_q_type, cfg->type);
	PRM_SET(virtio_q, q, virtio_version_1_0, cfg->version_1);
	PRM_SET(virtio_q, q, desc_addr, cfg->desc);
	PRM_SET(virtio_q, q, used_addr, cfg->used);
	PRM_SET(virtio_q, q, available_addr, cfg->avail);
	PRM_SET(virtio_q, q, virtio_q_mkey, cfg->mkey);
	PRM_SET(virtio_q, q, event_mode, cfg->event_mode);
	PRM_SET(virtio_q, q, event_qpn_or_msix, cfg->event_qpn);
	PRM_SET(virtio_q, q, queue_period_mode, cfg->period_mode);
	PRM_SET(virtio_q, q, queue_period_us, cfg->period_us);
	PRM_SET(virtio_q, q, queue_max_count, cfg->max_count);
}

/*
 * Completion moderation of every queue of the device, from the devargs
 * hw_latency_mode / hw_max_latency_us / hw_max_pending_comp, as DPDK
 * vdpa/mlx5 fills queue_period_mode / queue_period_us / queue_max_count
 * (0 = the device's default). A property of the device, not of the ring:
 * whatever configuration the caller built, these are what the queue gets.
 */
static void
put_moderation(const struct mlx5_lm_dev *dev, struct mlx5_lm_vq_cfg *cfg)
{
	cfg->period_mode = (uint8_t)dev->args.hw_latency_mode;
	cfg->period_us = (uint16_t)dev->args.hw_max_latency_us;
	cfg->max_count = (uint16_t)dev->args.hw_max_pending_comp;
}

/*
 * vq->cur = *cfg, its mkey stored atomically and never written plainly:
 * the garbage thread reads it without the device lock
 * (mlx5_lm_virtq_names_mkey), as it reads vq->obj, while a restore or a
 * MODIFY on a pool worker records a new configuration.
 */
static void
cur_store(struct mlx5_lm_virtq *vq, const struct mlx5_lm_vq_cfg *cfg)
{
	const size_t at = offsetof(struct mlx5_lm_vq_cfg, mkey);
	const size_t after = at + sizeof(cfg->mkey);

	memcpy(&vq->cur, cfg, at);
	memcpy((uint8_t *)&vq->cur + after, (const uint8_t *)cfg + after,
	       sizeof(*cfg) - after);
	__atomic_store_n(&vq->cur.mkey, cfg->mkey, __ATOMIC_RELEASE);
}

/* The modify_field_select bits for going from cur to want. */
static uint64_t
cfg_diff(const struct mlx5_lm_vq_cfg *cur, const struct mlx5_lm_vq_cfg *want)
{
	uint64_t bits = 0;

	if (cur->desc != want->desc || cur->used != want->used || cur->avail != want->avail)
		bits |= PRM_VIRTQ_MODIFY_ADDRS;
	if (cur->hw_available_index != want->hw_available_index)
		bits |= PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX;
	if (cur->hw_used_index != want->hw_used_index)
		bits |= PRM_VIRTQ_MODIFY_HW_USED_INDEX;
	if (cur->type != want->type)
		bits |= PRM_VIRTQ_MODIFY_Q_TYPE;
	if (cur->version_1 != want->version_1)
		bits |= PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0;
	if (cur->features != want->features)
		bits |= PRM_VIRTQ_MODIFY_QUEUE_FEATURES;
	if (cur->mkey != want->mkey)
		bits |= PRM_VIRTQ_MODIFY_Q_MKEY;
	if (cur->event_mode != want->event_mode || cur->event_qpn != want->event_qpn)
		bits |= PRM_VIRTQ_MODIFY_EVENT_MODE;
	if (cur->period_mode != want->period_mode || cur->period_us != want->period_us ||
	    cur->max_count != want->max_count)
		bits |= PRM_VIRTQ_MODIFY_QUEUE_PERIOD;
	return bits;
}

int
mlx5_lm_virtq_create(struct mlx5_lm_virtq *vq, uint16_t size, const struct mlx5_lm_vq_cfg *cfg,
		     int ready)
{
	struct mlx5_lm_dev *dev = vq->dev;
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	void *q = PRM_ADDR(virtq_cmd, in, q);
	/*
	 * A blank queue is VERSION_1 where the device offers it (the modern
	 * front end, the common case, then needs no MODIFY of the bit), as
	 * Linux creates its blank queues with the device's own features
	 * (mlx_features); on a device without virtio_version_1_0 it is legacy,
	 * the only kind such a device takes.
	 */
	struct mlx5_lm_vq_cfg blank = {
		.type = PRM_VIRTQ_TYPE_SPLIT,
		.version_1 = !!dev->caps.virtio_version_1_0,
		.event_mode = PRM_VIRTQ_EVENT_MODE_QP,
	};
	struct mlx5_lm_vq_cfg full;
	struct devx_obj *o;
	int ret, i;

	ret = umems_create(vq, size);
	if (ret < 0)
		goto err_umems;
	/*
	 * A device without VIRTIO_Q_COUNTERS (general_obj_types bit 28) counts
	 * nothing. The counter set of an earlier object of this queue is kept:
	 * the count goes on (DPDK vdpa/mlx5 creates virtq->counters once).
	 */
	if (vq->counters == NULL && mlx5_lm_has_counters(dev)) {
		vq->counters = counters_create(vq);
		if (vq->counters == NULL) {
			ret = -EIO;
			goto err_counters;
		}
	}
	ret = mlx5_lm_eventq_create(vq);
	if (ret < 0)
		goto err_eventq;
	blank.event_qpn = devx_obj_id(vq->eq.fw_qp);
	/* Blank or not, a queue is created with the device's moderation. */
	put_moderation(dev, &blank);
	if (cfg != NULL) {
		/* Created configured: its events go to the QP made just now. */
		full = *cfg;
		full.event_mode = PRM_VIRTQ_EVENT_MODE_QP;
		full.event_qpn = blank.event_qpn;
		put_moderation(dev, &full);
		cfg = &full;
	} else {
		cfg = &blank;
	}

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(hdr, PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 0);
	/*
	 * No vhca_id, and the doorbell stride we write, our VAR's: 0 with the
	 * function's first (or only) VAR, as every public driver leaves both
	 * for its own function (Linux mlx5_vnet create_virtqueue, DPDK
	 * mlx5_devx_cmd_create_virtq) and writes every queue's index there.
	 * Firmware that binds a queue to the stride it names would drop the
	 * kicks of every queue named at a stride it does not write.
	 */
	PRM_SET(virtio_q, q, doorbell_stride_index, devx_db_index(dev->db));
	/* TX queues send through the TIS; RX queues are fed by the RQT. */
	if (vq->index & 1)
		PRM_SET(virtio_net_q, obj, tisn_or_qpn, devx_obj_id(dev->res.tis));
	PRM_SET(virtio_q, q, queue_index, vq->index);
	PRM_SET(virtio_q, q, queue_size, size);
	PRM_SET(virtio_q, q, pd, devx_pd_id(dev->res.pd));
	if (vq->counters != NULL)
		PRM_SET(virtio_q, q, counter_set_id, devx_obj_id(vq->counters));
	put_cfg(obj, q, cfg);
	o = obj_create(vq, in, sizeof(in), out, sizeof(out));
	if (o == NULL && umems_outgrown(vq, size, out)) {
		VQ_LOG(WARNING, vq, "CREATE refused for its umems (BAD_RESOURCE, syndrome "
		       "0x%08x): the device's umem parameters grew since they were read; "
		       "retrying once with umems sized from the new ones",
		       (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, syndrome));
		umems_destroy(vq);
		ret = umems_create(vq, size);
		if (ret == 0)
			o = obj_create(vq, in, sizeof(in), out, sizeof(out));
	}
	/*
	 * Published atomically: the garbage thread reads it without the device
	 * lock (mlx5_lm_virtq_names_mkey) while a restore re-creates the queue.
	 */
	__atomic_store_n(&vq->obj, o, __ATOMIC_RELEASE);
	if (o == NULL) {
		VQ_LOG(ERR, vq, "cannot create the virtq (size %u)", size);
		ret = -EIO;
		goto err_obj;
	}
	ret = devx_evch_subscribe(dev->evch, vq->obj, PRM_EVENT_OBJECT_CHANGE, vq->index);
	if (ret < 0)
		goto err_subscribe;
	vq->size = size;
	cur_store(vq, cfg);
	vq->hw_state = PRM_VIRTQ_STATE_INIT;
	vq->used = cfg != &blank;
	if (ready) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
		if (ret < 0)
			goto err_subscribe;
	}
	return 0;
err_subscribe:
	if (devx_obj_destroy(vq->obj) == 0)
		__atomic_store_n(&vq->obj, NULL, __ATOMIC_RELEASE);
	else
		cur_store(vq, cfg);  /* what the object that stays names */
err_obj:
	mlx5_lm_eventq_destroy(vq);
err_eventq:
	/* The counter set stays with the queue until the device goes. */
err_counters:
	umems_destroy(vq);
err_umems:
	for (i = 0; i < 3; i++)
		vq->umem_size[i] = 0;
	return ret;
}

/* Reverse of mlx5_lm_virtq_create: the virtq first, it references everything else. */
void
mlx5_lm_virtq_destroy(struct mlx5_lm_virtq *vq)
{
	if (vq->obj != NULL) {
		if (devx_obj_destroy(vq->obj) < 0)
			VQ_LOG(ERR, vq, "cannot destroy the virtq");
		else
			__atomic_store_n(&vq->obj, NULL, __ATOMIC_RELEASE);
	}
	mlx5_lm_eventq_destroy(vq);
	umems_destroy(vq);
	vq->size = 0;
	vq->hw_state = PRM_VIRTQ_STATE_INIT;
	vq->used = 0;
	/* An object whose destroy failed still names its keys: they are kept for it. */
	if (vq->obj == NULL) {
		cur_store(vq, &(const struct mlx5_lm_vq_cfg){ 0 });
		__atomic_store_n(&vq->log_mkey, 0, __ATOMIC_RELEASE);
	}
}

int
mlx5_lm_virtq_names_mkey(const struct mlx5_lm_virtq *vq, uint32_t key)
{
	/* Read by the garbage thread without the device lock: see mlx5_lm_mr.c mr_user. */
	if (key == 0 || __atomic_load_n(&vq->obj, __ATOMIC_ACQUIRE) == NULL)
		return 0;
	return __atomic_load_n(&vq->cur.mkey, __ATOMIC_ACQUIRE) == key ||
	       __atomic_load_n(&vq->log_mkey, __ATOMIC_ACQUIRE) == key;
}

int
mlx5_lm_virtq_recreate(struct mlx5_lm_virtq *vq, uint16_t size, const struct mlx5_lm_vq_cfg *cfg,
		       int ready)
{
	struct mlx5_lm_vq_cfg c;
	int ret;

	if (vq->obj != NULL) {
		mlx5_lm_virtq_destroy(vq);
		if (vq->obj != NULL)
			return -EBUSY;
	}
	if (cfg == NULL)
		return mlx5_lm_virtq_create(vq, size, NULL, 0);
	/* No MODIFY of a blank queue's configuration on this device: create it whole. */
	if (!mlx5_lm_can_modify_blank(vq->dev))
		return mlx5_lm_virtq_create(vq, size, cfg, ready);
	/* Blank first: its event QP exists only then, and the MODIFY names it. */
	ret = mlx5_lm_virtq_create(vq, size, NULL, 0);
	if (ret < 0)
		return ret;
	c = *cfg;
	c.event_qpn = vq->cur.event_qpn;
	return mlx5_lm_virtq_modify(vq, &c, ready);
}

static int
virtq_modify(struct mlx5_lm_virtq *vq, uint64_t bits, const struct mlx5_lm_vq_cfg *cfg,
	     uint8_t state)
{
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	void *q = PRM_ADDR(virtq_cmd, in, q);
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(hdr, PRM_CMD_MODIFY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, devx_obj_id(vq->obj));
	PRM_SET(virtio_net_q, obj, modify_field_select, bits);
	put_cfg(obj, q, cfg);
	PRM_SET(virtio_net_q, obj, state, state);
	ret = devx_obj_modify(vq->obj, in, sizeof(in), out, sizeof(out));
	if (ret < 0) {
		VQ_LOG(ERR, vq, "MODIFY (fields 0x%" PRIx64 ", state %u) failed: status 0x%x, "
		       "syndrome 0x%08x", bits, state,
		       (unsigned int)PRM_GET(general_obj_out_cmd_hdr, out, status),
		       (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, syndrome));
		return ret;
	}
	if (bits & ~PRM_VIRTQ_MODIFY_STATE) {
		cur_store(vq, cfg);
		vq->used = 1;
	}
	if (bits & PRM_VIRTQ_MODIFY_STATE) {
		vq->hw_state = state;
		vq->used = 1;
	}
	return 0;
}

int
mlx5_lm_virtq_modify(struct mlx5_lm_virtq *vq, const struct mlx5_lm_vq_cfg *cfg, int ready)
{
	struct mlx5_lm_vq_cfg want = *cfg;
	uint64_t bits;

	put_moderation(vq->dev, &want);
	bits = cfg_diff(&vq->cur, &want);
	if (ready && vq->hw_state != PRM_VIRTQ_STATE_RDY)
		bits |= PRM_VIRTQ_MODIFY_STATE;
	if (bits == 0)
		return 0;
	return virtq_modify(vq, bits, &want, ready ? PRM_VIRTQ_STATE_RDY : vq->hw_state);
}

int
mlx5_lm_virtq_set_state(struct mlx5_lm_virtq *vq, uint8_t state)
{
	return virtq_modify(vq, PRM_VIRTQ_MODIFY_STATE, &vq->cur, state);
}

int
mlx5_lm_virtq_query(struct mlx5_lm_virtq *vq, uint8_t *state, uint8_t *error_type,
		    uint16_t *avail, uint16_t *used)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_cmd)];
	void *obj = PRM_ADDR(virtq_cmd, out, obj);
	void *q = PRM_ADDR(virtq_cmd, out, q);
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(in, PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, devx_obj_id(vq->obj));
	ret = devx_obj_query(vq->obj, in, sizeof(in), out, sizeof(out));
	if (ret < 0) {
		VQ_LOG(ERR, vq, "QUERY failed");
		return ret;
	}
	if (state != NULL)
		*state = PRM_GET(virtio_net_q, obj, state);
	if (error_type != NULL)
		*error_type = PRM_GET(virtio_q, q, error_type);
	if (avail != NULL)
		*avail = PRM_GET(virtio_net_q, obj, hw_available_index);
	if (used != NULL)
		*used = PRM_GET(virtio_net_q, obj, hw_used_index);
	return 0;
}

/*
 * A split queue restarts from its hw_used_index, not hw_available_index:
 * the firmware may have fetched chains it never used (an RX chain fetched
 * ahead of any frame), and a restart past them never returns those guest
 * buffers (RX capacity lost for good, a TX frame never completed). Linux
 * mlx5_vnet does the same (mlx5_vdpa_get_vq_state: "the firmware returns
 * a wrong value for the available index"); virtio-net devices complete in
 * order, so every chain before hw_used_index was used and none after it,
 * and the ones fetched again are only read again. The emulator fetches
 * ahead with caps rx_prefetch_chains (tests/profiles/rx-prefetch.json).
 * A queue in ERR restarts from what it completed, split or packed.
 * Packed rings keep hw_available_index (as DPDK vdpa/mlx5; Linux
 * mlx5_vnet's rule is for split state): in order, hw_used_index with its
 * wrap bit (15) would name the first chain not used as well, but no public
 * text says the firmware keeps the packed used index in that form or
 * fetches a packed ring ahead, and the emulator models neither: a change
 * there would be untested.
 */
uint16_t
mlx5_lm_virtq_restart_avail(const struct mlx5_lm_virtq *vq, uint8_t state, uint16_t avail,
			    uint16_t used)
{
	if (state == PRM_VIRTQ_STATE_ERR || vq->cur.type != PRM_VIRTQ_TYPE_PACKED)
		return used;
	return avail;
}

void
mlx5_lm_virtq_counters_release(struct mlx5_lm_dev *dev)
{
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];

		if (vq->counters == NULL)
			continue;
		/* Still referenced by a queue the device would not destroy: leave it. */
		if (devx_obj_destroy(vq->counters) < 0) {
			VQ_LOG(ERR, vq, "cannot destroy the counter set");
			continue;
		}
		vq->counters = NULL;
		memset(vq->stats_base, 0, sizeof(vq->stats_base));
	}
}

int
mlx5_lm_virtq_counters(struct mlx5_lm_virtq *vq, uint64_t vals[MLX5_LM_NB_STATS])
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_counters_cmd)];
	void *obj = PRM_ADDR(virtq_counters_cmd, out, obj);
	int ret;

	if (!mlx5_lm_has_counters(vq->dev))
		return -ENOTSUP;
	if (vq->counters == NULL)
		return -ENODEV;
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(in, PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS,
		    devx_obj_id(vq->counters));
	ret = devx_obj_query(vq->counters, in, sizeof(in), out, sizeof(out));
	if (ret < 0)
		return ret;
	vals[0] = PRM_GET(virtio_q_counters, obj, received_desc);
	vals[1] = PRM_GET(virtio_q_counters, obj, completed_desc);
	vals[2] = PRM_GET(virtio_q_counters, obj, bad_desc_errors);
	vals[3] = PRM_GET(virtio_q_counters, obj, exceed_max_chain);
	vals[4] = PRM_GET(virtio_q_counters, obj, invalid_buffer);
	vals[5] = PRM_GET(virtio_q_counters, obj, error_cqes);
	return 0;
}

/* One MODIFY of the dirty-bitmap fields (with STATE=to when state_too). */
static int
dirty_log_modify(struct mlx5_lm_virtq *vq, uint32_t mkey, uint64_t addr, uint32_t size,
		 int enable, int state_too, uint8_t to, uint8_t *status)
{
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	uint64_t bits = PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE;
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gen_obj_hdr(hdr, PRM_CMD_MODIFY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, devx_obj_id(vq->obj));
	if (enable) {
		bits |= PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS;
		PRM_SET(virtio_net_q, obj, dirty_bitmap_mkey, mkey);
		PRM_SET(virtio_net_q, obj, dirty_bitmap_addr, addr);
		PRM_SET(virtio_net_q, obj, dirty_bitmap_size, size);
		/* vhost logs 4 KiB pages: log2(page) - 12 = 0. */
		PRM_SET(virtio_net_q, obj, vhost_log_page, 0);
	}
	if (state_too) {
		bits |= PRM_VIRTQ_MODIFY_STATE;
		PRM_SET(virtio_net_q, obj, state, to);
	}
	PRM_SET(virtio_net_q, obj, dirty_bitmap_dump_enable, !!enable);
	PRM_SET(virtio_net_q, obj, modify_field_select, bits);
	ret = devx_obj_modify(vq->obj, in, sizeof(in), out, sizeof(out));
	*status = (uint8_t)PRM_GET(cmd_out, out, status);
	return ret;
}

/*
 * Start or stop the device's dirty-page logging on a queue. A running
 * queue takes the dirty-bitmap fields as they are, without leaving RDY:
 * the vendor's driver starts and stops logging that way on running queues
 * (DPDK vdpa/mlx5 mlx5_vdpa_lm.c mlx5_vdpa_dirty_bitmap_set and
 * mlx5_vdpa_logging_enable, no capability gating it), so the guest never
 * stops and never runs unlogged. Firmware that takes only STATE while RDY
 * (BAD_RES_STATE, the strict reading of the PRM's INIT/SUSPEND rule) is
 * remembered per device and logged once; then the fields go through
 * SUSPEND and back to RDY in one MODIFY (freeze_to_rdy), and without
 * freeze_to_rdy_supported this function refuses a running queue (-ENOTSUP)
 * and the caller re-creates it (mlx5_lm_virtq_recreate_suspended).
 */
int
mlx5_lm_virtq_set_dirty_log(struct mlx5_lm_virtq *vq, uint32_t mkey, uint64_t addr,
			    uint32_t size, int enable)
{
	struct mlx5_lm_dev *dev = vq->dev;
	int was_ready = vq->hw_state == PRM_VIRTQ_STATE_RDY;
	uint8_t status = 0, state;
	int ret;

	if (was_ready && !__atomic_load_n(&dev->dirty_log_rdy_refused, __ATOMIC_ACQUIRE)) {
		ret = dirty_log_modify(vq, mkey, addr, size, enable, 0, 0, &status);
		if (ret == 0)
			goto done;
		if (ret != -EIO || status != PRM_STATUS_BAD_RES_STATE) {
			VQ_LOG(ERR, vq, "cannot %s dirty-page logging on the running queue",
			       enable ? "start" : "stop");
			return ret;
		}
		/*
		 * Refused for its state, not for the field: a queue gone to ERR
		 * (its OBJECT_CHANGE not handled yet) takes no field either, and
		 * says nothing of the device. Its recovery, posted by that event,
		 * re-creates it with the log (mlx5_lm_recover_locked).
		 */
		if (mlx5_lm_virtq_query(vq, &state, NULL, NULL, NULL) == 0 &&
		    state == PRM_VIRTQ_STATE_ERR) {
			vq->hw_state = PRM_VIRTQ_STATE_ERR;
			VQ_LOG(WARNING, vq, "in ERR before its dirty log was %s: left to its "
			       "recovery", enable ? "set" : "cleared");
			return 0;
		}
		if (!__atomic_exchange_n(&dev->dirty_log_rdy_refused, 1, __ATOMIC_ACQ_REL))
			DRV_LOG(WARNING, dev, "the device does not take the dirty bitmap on a "
				"running queue (BAD_RES_STATE): dirty logging falls back to %s",
				mlx5_lm_can_resume(dev) ? "SUSPEND and resume of every running "
				"queue" : "re-creating every running queue (no freeze_to_rdy)");
	}
	if (was_ready && !mlx5_lm_can_resume(dev))
		return -ENOTSUP;
	if (was_ready) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
		if (ret < 0)
			return ret;
	}
	ret = dirty_log_modify(vq, mkey, addr, size, enable, was_ready, PRM_VIRTQ_STATE_RDY,
			       &status);
	if (ret < 0) {
		VQ_LOG(ERR, vq, "cannot %s dirty-page logging", enable ? "start" : "stop");
		return ret;
	}
	if (was_ready)
		vq->hw_state = PRM_VIRTQ_STATE_RDY;
done:
	/*
	 * The object names the log's key now, even a queue still INIT (kept
	 * for its enable): it is no longer blank, and the restore must
	 * re-create it, or the log's registration stays named (so alive) after
	 * its front end has gone.
	 */
	if (enable)
		vq->used = 1;
	__atomic_store_n(&vq->log_mkey, enable ? mkey : 0, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Without freeze_to_rdy_supported a SUSPENDed queue never returns to RDY
 * (PRM virtq state machine), and a RDY queue takes no field but STATE. The
 * fallback, as DPDK vdpa/mlx5 does when it re-sets a queue up: suspend it,
 * read the indices the device reached, destroy it and create it again
 * whole from there (with the dirty log when logging), then make it RDY if
 * asked. An RX queue must not be in the RQT meanwhile: the caller's job.
 */
int
mlx5_lm_virtq_recreate_suspended(struct mlx5_lm_virtq *vq, uint32_t log_mkey, uint32_t log_size,
				 int log_enable, int ready)
{
	struct mlx5_lm_vq_cfg cfg = vq->cur;
	uint16_t size = vq->size, avail, used;
	uint8_t state;
	int ret;

	if (vq->hw_state == PRM_VIRTQ_STATE_RDY) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
		if (ret < 0)
			return ret;
	}
	ret = mlx5_lm_virtq_query(vq, &state, NULL, &avail, &used);
	if (ret < 0)
		return ret;
	/*
	 * From what it used (a queue in ERR: what it completed, as a recovery
	 * does): the new object fetches again what the old one fetched unused.
	 */
	cfg.hw_available_index = mlx5_lm_virtq_restart_avail(vq, state, avail, used);
	cfg.hw_used_index = used;
	mlx5_lm_virtq_destroy(vq);
	if (vq->obj != NULL)
		return -EBUSY;
	/* The new object counts on the same counter set. */
	ret = mlx5_lm_virtq_create(vq, size, &cfg, 0);
	if (ret < 0)
		return ret;
	if (log_enable) {
		ret = mlx5_lm_virtq_set_dirty_log(vq, log_mkey, 0, log_size, 1);
		if (ret < 0)
			return ret;
	}
	if (ready)
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
	return ret;
}
