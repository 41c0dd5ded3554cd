/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive steering: one match-all rule in the NIC RX root forwarding to a
 * TIR -> RSS (Toeplitz over IPv4 addresses and TCP ports) across an RQT
 * whose entries are the RX virtqs. The root flow table belongs to the
 * kernel (DevX cannot attach a table to it), so the rule is made through
 * the kernel's flow steering (devx_root_flow_create: on hardware
 * mlx5dv_create_flow_matcher + mlx5dv_create_flow with a DevX TIR
 * destination), as DPDK's and Linux's drivers do. The RQT is created at
 * probe sized for the maximum queue pairs, so a queue-pair change is one
 * MODIFY_RQT. RQT sizes are powers of two (the device indexes the RQT by
 * hash & (size - 1)): n queues fill a list of the next power of two
 * entries, repeated in order, as Linux mlx5_vdpa and DPDK vdpa/mlx5 do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

struct mlx5_lm_steer {
	struct devx_obj *rqt;
	struct devx_obj *tir;
	struct devx_flow *flow;    /* the root rule to the TIR */
	uint32_t rqt_max;          /* a power of two */
	uint32_t rqt_ids[MLX5_LM_MAX_VIRTQS / 2]; /* virtq ids the RQT points at now */
	uint32_t rqt_n;
};

/* A fixed, well-mixed Toeplitz key (the widely used default RSS key). */
static const uint8_t rss_key[PRM_RSS_HASH_KEY_LEN] = {
	0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2,
	0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9,
	0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56,
	0x3d, 0x59, 0x06, 0x3e, 0x23, 0x6a, 0x3b, 0xe5, 0xcf, 0xa7,
};

/* RX virtqs that may receive: enabled by the guest and RDY. */
static uint32_t
ready_rx(struct mlx5_lm_dev *dev, uint32_t *ids)
{
	uint32_t n = 0;
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i += 2) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];

		if (vq->obj != NULL && vq->enabled && vq->hw_state == PRM_VIRTQ_STATE_RDY)
			ids[n++] = devx_obj_id(vq->obj);
	}
	return n;
}

/* Smallest power of two >= n (n >= 1). */
static uint32_t
pow2_ceil(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* RQT entries for n queues: the list length, a power of two. */
static uint32_t
rqt_entries(uint32_t n)
{
	return pow2_ceil(n == 0 ? 1 : n);
}

/* The n queue ids repeated in order over rqt_entries(n) entries. */
static void
fill_rqtc(void *rqtc, uint32_t max, const uint32_t *ids, uint32_t n)
{
	uint8_t *list = PRM_ADDR(rqtc, rqtc, rq_num);
	uint32_t i, size = rqt_entries(n);

	PRM_SET(rqtc, rqtc, list_q_type, PRM_RQTC_LIST_Q_TYPE_VIRTIO_NET_Q);
	PRM_SET(rqtc, rqtc, rqt_max_size, max);
	PRM_SET(rqtc, rqtc, rqt_actual_size, size);
	for (i = 0; i < size; i++)
		PRM_SET(rq_num, list + i * PRM_SIZE(rq_num), rq_num, ids[i % n]);
}

static int
rqt_create(struct mlx5_lm_dev *dev, struct mlx5_lm_steer *st)
{
	size_t inlen = PRM_SIZE(create_rqt_in) + st->rqt_max * PRM_SIZE(rq_num);
	uint8_t out[PRM_SIZE(create_out)];
	uint8_t *in = calloc(1, inlen);
	uint16_t i;

	if (in == NULL)
		return -ENOMEM;
	memset(out, 0, sizeof(out));
	/*
	 * Every RX queue that exists, as a front end that enables all its
	 * queue pairs will have them: its DRIVER_OK then finds the RQT as it
	 * must be and sends no MODIFY_RQT (0.2 ms of the model after the
	 * queues' MODIFYs, inside the downtime). Before DRIVER_OK no queue is
	 * RDY, and the device drops what the RQT sends to a queue that is not.
	 */
	st->rqt_n = 0;
	for (i = 0; i < dev->nr_vq; i += 2)
		if (dev->vq[i].obj != NULL)
			st->rqt_ids[st->rqt_n++] = devx_obj_id(dev->vq[i].obj);
	if (st->rqt_n == 0) {
		DRV_LOG(ERR, dev, "no RX queue exists to build the RQT on");
		free(in);
		return -ENODEV;
	}
	PRM_SET(create_rqt_in, in, opcode, PRM_CMD_CREATE_RQT);
	fill_rqtc(PRM_ADDR(create_rqt_in, in, rqt_context), st->rqt_max, st->rqt_ids,
		  st->rqt_n);
	st->rqt = devx_obj_create(dev->devx, in, PRM_SIZE(create_rqt_in) +
				  rqt_entries(st->rqt_n) * PRM_SIZE(rq_num), out, sizeof(out));
	free(in);
	if (st->rqt == NULL) {
		DRV_LOG(ERR, dev, "cannot create the RQT (max %u entries)", st->rqt_max);
		return -EIO;
	}
	return 0;
}

static int
tir_create(struct mlx5_lm_dev *dev, struct mlx5_lm_steer *st)
{
	uint8_t in[PRM_SIZE(create_tir_in)];
	uint8_t out[PRM_SIZE(create_out)];
	void *tirc = PRM_ADDR(create_tir_in, in, ctx);
	void *hf = PRM_ADDR(tirc, tirc, rx_hash_field_selector_outer);

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(create_tir_in, in, opcode, PRM_CMD_CREATE_TIR);
	PRM_SET(tirc, tirc, disp_type, PRM_TIRC_DISP_TYPE_INDIRECT);
	PRM_SET(tirc, tirc, indirect_table, devx_obj_id(st->rqt));
	PRM_SET(tirc, tirc, rx_hash_fn, PRM_RX_HASH_FN_TOEPLITZ);
	PRM_SET(tirc, tirc, rx_hash_symmetric, 0);
	PRM_SET(tirc, tirc, transport_domain, devx_obj_id(dev->res.td));
	memcpy(PRM_ADDR(tirc, tirc, rx_hash_toeplitz_key), rss_key, sizeof(rss_key));
	PRM_SET(rx_hash_field_select, hf, l3_prot_type, PRM_L3_PROT_TYPE_IPV4);
	PRM_SET(rx_hash_field_select, hf, l4_prot_type, PRM_L4_PROT_TYPE_TCP);
	PRM_SET(rx_hash_field_select, hf, selected_fields, PRM_RX_HASH_SRC_IP | PRM_RX_HASH_DST_IP |
		PRM_RX_HASH_L4_SPORT | PRM_RX_HASH_L4_DPORT);
	st->tir = devx_obj_create(dev->devx, in, sizeof(in), out, sizeof(out));
	if (st->tir == NULL) {
		DRV_LOG(ERR, dev, "cannot create the TIR");
		return -EIO;
	}
	return 0;
}

/*
 * Every frame of the function to the TIR: one rule in the NIC RX root,
 * no criteria (mask and value are a whole fte_match_param of zeros: the
 * kernel takes a non-empty mask).
 */
static int
root_flow_create(struct mlx5_lm_dev *dev, struct mlx5_lm_steer *st)
{
	uint8_t *mask = calloc(2, PRM_SIZE(fte_match_param));
	struct devx_flow_attr attr = {
		.priority = 0,
		.match_criteria_enable = 0,
		.match_len = PRM_SIZE(fte_match_param),
	};

	if (mask == NULL)
		return -ENOMEM;
	attr.match_mask = mask;
	attr.match_value = mask + PRM_SIZE(fte_match_param);
	st->flow = devx_root_flow_create(dev->devx, &attr, st->tir);
	free(mask);
	if (st->flow == NULL) {
		DRV_LOG(ERR, dev, "cannot add the receive rule to the NIC RX root: %s",
			strerror(errno));
		return -EIO;
	}
	return 0;
}

/*
 * Destroy in reverse order of creation. On a refusal st keeps what is
 * left (the failed object and those it holds), for a later attempt.
 */
static int
steer_free(struct mlx5_lm_dev *dev, struct mlx5_lm_steer *st)
{
	static const char *const names[] = { "TIR", "RQT" };
	struct devx_obj **objs[] = { &st->tir, &st->rqt };
	unsigned int i;

	/* The rule holds the TIR: it goes first. */
	if (st->flow != NULL) {
		if (devx_root_flow_destroy(st->flow) < 0) {
			DRV_LOG(ERR, dev, "cannot remove the receive rule from the NIC RX root");
			return -EBUSY;
		}
		st->flow = NULL;
	}
	for (i = 0; i < RTE_DIM(objs); i++) {
		if (*objs[i] == NULL)
			continue;
		if (devx_obj_destroy(*objs[i]) < 0) {
			DRV_LOG(ERR, dev, "cannot destroy the receive %s", names[i]);
			return -EBUSY;
		}
		*objs[i] = NULL;
	}
	free(st);
	return 0;
}

int
mlx5_lm_steer_create(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_steer *st = calloc(1, sizeof(*st));
	int ret;

	if (st == NULL)
		return -ENOMEM;
	if (dev->steer != NULL) {
		/* What a refused destroy left behind goes first. */
		mlx5_lm_steer_destroy(dev);
		if (dev->steer != NULL) {
			free(st);
			return -EBUSY;
		}
	}
	st->rqt_max = rqt_entries(dev->nr_vq / 2);
	ret = rqt_create(dev, st);
	if (ret == 0)
		ret = tir_create(dev, st);
	if (ret == 0)
		ret = root_flow_create(dev, st);
	if (ret < 0) {
		if (steer_free(dev, st) < 0)
			dev->steer = st; /* kept for the next attempt */
		return ret;
	}
	dev->steer = st;
	return 0;
}

void
mlx5_lm_steer_destroy(struct mlx5_lm_dev *dev)
{
	int attempt;

	if (dev->steer == NULL)
		return;
	/*
	 * A refused destroy is tried once more at once; if the device still
	 * refuses, the objects stay known to the driver and the next restore,
	 * DRIVER_OK or removal tries again instead of forgetting them.
	 */
	for (attempt = 0; attempt < 2; attempt++) {
		if (steer_free(dev, dev->steer) == 0) {
			dev->steer = NULL;
			return;
		}
	}
	DRV_LOG(ERR, dev, "receive steering objects left in place, to be destroyed later");
}

static int
rqt_modify(struct mlx5_lm_dev *dev, const uint32_t *ids, uint32_t n)
{
	struct mlx5_lm_steer *st = dev->steer;
	size_t inlen = PRM_SIZE(modify_rqt_in) + rqt_entries(n) * PRM_SIZE(rq_num);
	uint8_t out[PRM_SIZE(cmd_out) * 2];
	uint8_t *in;
	int ret;

	in = calloc(1, inlen);
	if (in == NULL)
		return -ENOMEM;
	memset(out, 0, sizeof(out));
	PRM_SET(modify_rqt_in, in, opcode, PRM_CMD_MODIFY_RQT);
	PRM_SET(modify_rqt_in, in, rqtn, devx_obj_id(st->rqt));
	PRM_SET(modify_rqt_in, in, bitmask, PRM_RQT_MODIFY_RQN_LIST);
	fill_rqtc(PRM_ADDR(modify_rqt_in, in, ctx), st->rqt_max, ids, n);
	/* On the RQT's own handle (Linux devx.c devx_is_obj_modify_cmd). */
	ret = devx_obj_modify(st->rqt, in, inlen, out, sizeof(out));
	free(in);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot point the RQT at %u RX queues", n);
		return ret;
	}
	memcpy(st->rqt_ids, ids, n * sizeof(*ids));
	st->rqt_n = n;
	return 0;
}

int
mlx5_lm_steer_update(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_steer *st = dev->steer;
	uint32_t ids[MLX5_LM_MAX_VIRTQS / 2];
	uint32_t n;

	if (st == NULL)
		return 0;
	n = ready_rx(dev, ids);
	if (n == 0) {
		/*
		 * An RQT cannot be empty: keep the current entries; frames to a
		 * queue that is not RDY are dropped by the device.
		 */
		return 0;
	}
	if (n == st->rqt_n && memcmp(ids, st->rqt_ids, n * sizeof(*ids)) == 0)
		return 0;
	return rqt_modify(dev, ids, n);
}

static int
id_in(uint32_t id, const uint32_t *set, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (set[i] == id)
			return 1;
	return 0;
}

/*
 * Stop the RQT from naming the virtqs in gone[], about to be destroyed
 * (the device refuses to destroy a virtq an RQT references): all of them
 * at once, since an RQT parked on one of them (it cannot be empty) would
 * hold that one's destroy back in turn.
 */
int
mlx5_lm_steer_forget(struct mlx5_lm_dev *dev, const uint32_t *gone, uint32_t ngone)
{
	struct mlx5_lm_steer *st = dev->steer;
	uint32_t ids[MLX5_LM_MAX_VIRTQS / 2];
	uint32_t i, n = 0;

	if (st == NULL)
		return 0;
	for (i = 0; i < st->rqt_n; i++)
		if (!id_in(st->rqt_ids[i], gone, ngone))
			ids[n++] = st->rqt_ids[i];
	if (n == st->rqt_n)
		return 0;
	if (n == 0) {
		/* Park the RQT on another RX queue that exists and stays. */
		uint16_t q;

		for (q = 0; q < dev->nr_vq; q += 2)
			if (dev->vq[q].obj != NULL &&
			    !id_in(devx_obj_id(dev->vq[q].obj), gone, ngone)) {
				ids[n++] = devx_obj_id(dev->vq[q].obj);
				break;
			}
		if (n == 0)
			return -EBUSY;
	}
	return rqt_modify(dev, ids, n);
}
