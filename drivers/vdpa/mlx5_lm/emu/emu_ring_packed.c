/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packed virtqueues (virtio 1.1, 2.7) as the device side processes them:
 * one ring of 16-byte descriptors {addr, len, id, flags} at desc_addr,
 * the driver event suppression structure {off_wrap, flags} at
 * available_addr and the device's at used_addr.
 *
 * Indices carry the wrap counter in bit 15, the way DPDK's vhost encodes
 * last_avail_idx / last_used_idx of a packed ring for
 * rte_vhost_get_vring_base / set_vring_base: bits 0-14 the position in
 * the ring, bit 15 the avail (resp. used) wrap counter. A fresh ring
 * starts at 0x8000 (position 0, wrap counter 1, 2.7.1).
 */
#include <endian.h>
#include <string.h>

#include "emu_priv.h"

#define DESC_SIZE 16u
#define DESC_LEN 8u
#define DESC_ID 12u
#define DESC_FLAGS 14u
#define EVENT_FLAGS 2u
#define WRAP_BIT 0x8000u
/* Event suppression flags (2.7.10): 0 enable, 1 disable, 2 desc (EVENT_IDX). */
#define RING_EVENT_FLAGS_MASK 3u
#define RING_EVENT_FLAGS_DISABLE 1u

struct packed_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};

static int
read_desc(struct emu_dp_batch *b, uint64_t addr, struct packed_desc *d)
{
	uint8_t raw[DESC_SIZE];

	if (emu_dp_read_desc(b, addr, raw, &d->addr, &d->len) < 0)
		return -1;
	memcpy(&d->id, raw + DESC_ID, 2);
	memcpy(&d->flags, raw + DESC_FLAGS, 2);
	d->id = le16toh(d->id);
	d->flags = le16toh(d->flags);
	return 0;
}

/* 2.7.1: available when AVAIL matches the wrap counter and USED does not. */
static bool
desc_avail(uint16_t flags, bool wrap)
{
	return ((flags & EMU_VRING_DESC_F_AVAIL) != 0) == wrap &&
	       ((flags & EMU_VRING_DESC_F_USED) != 0) != wrap;
}

/*
 * Indirect table (2.7.7): len / 16 descriptors used in order, of which
 * only WRITE means something; the table holds at most queue_size. An
 * entry that is INDIRECT again is the one flag the driver must not set
 * there (2.7.7.1: only one table per descriptor): the queue fails as a
 * split ring's does (emu_ring_split.c).
 */
static int
walk_indirect(struct emu_dp_batch *b, const struct packed_desc *ind)
{
	uint32_t n = ind->len / DESC_SIZE, i;
	struct packed_desc d;

	if ((ind->flags & EMU_VRING_DESC_F_NEXT) || ind->len == 0 || ind->len % DESC_SIZE != 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
	if (n > b->vq->queue_size)
		return emu_dp_fail(b, EMU_VQ_ERROR_EXCEED_MAX_CHAIN, EMU_DP_CNT_EXCEED_CHAIN);
	for (i = 0; i < n; i++) {
		if (read_desc(b, ind->addr + (uint64_t)DESC_SIZE * i, &d) < 0)
			return -1;
		if (d.flags & EMU_VRING_DESC_F_INDIRECT)
			return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
		if (emu_dp_add_seg(b, d.addr, d.len, d.flags & EMU_VRING_DESC_F_WRITE) < 0)
			return -1;
	}
	return 0;
}

/*
 * Walk the chain at ring position pos. *count = ring slots it takes,
 * *id = buffer id, carried by the last descriptor of the chain (2.7.6).
 * A chain longer than the ring can only be a loop.
 */
static int
packed_walk(struct emu_dp_batch *b, uint16_t pos, uint16_t *count, uint16_t *id)
{
	const struct emu_virtq *vq = b->vq;
	uint32_t qs = vq->queue_size, seen = 0;
	struct packed_desc d;

	emu_dp_chain_reset(b);
	for (;;) {
		if (emu_dp_chain_step(b, &seen) < 0)
			return -1;
		if (read_desc(b, vq->desc_addr + (uint64_t)DESC_SIZE * pos, &d) < 0)
			return -1;
		*id = d.id;
		if (d.flags & EMU_VRING_DESC_F_INDIRECT) {
			if (walk_indirect(b, &d) < 0)
				return -1;
			break;
		}
		if (emu_dp_add_seg(b, d.addr, d.len, d.flags) < 0)
			return -1;
		if (!(d.flags & EMU_VRING_DESC_F_NEXT))
			break;
		if (++pos == qs)
			pos = 0;
	}
	*count = (uint16_t)seen;
	return 0;
}

static void
advance(uint16_t *pos, bool *wrap, uint16_t n, uint16_t qs)
{
	*pos += n;
	if (*pos >= qs) {
		*pos -= qs;
		*wrap = !*wrap;
	}
}

void
emu_ring_packed_run(struct emu_dp_batch *b, unsigned int budget)
{
	struct emu_virtq *vq = b->vq;
	uint16_t qs = vq->queue_size;
	uint16_t avail = vq->hw_available_index & ~WRAP_BIT;
	uint16_t used = vq->hw_used_index & ~WRAP_BIT;
	bool avail_wrap = (vq->hw_available_index & WRAP_BIT) != 0;
	bool used_wrap = (vq->hw_used_index & WRAP_BIT) != 0;

	if (avail >= qs || used >= qs) {
		emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
		return;
	}
	while (!b->failed) {
		uint16_t flags, count = 0, id = 0;
		uint32_t used_len, len_le;
		uint16_t id_le;
		uint64_t slot;
		int r;

		if (budget == 0) {
			b->more = true;
			break;
		}
		if (b->rx && b->dq->bl_head == NULL)
			break;
		/* Acquire: the rest of the chain was written before these flags. */
		if (emu_dp_load16(b, vq->desc_addr + (uint64_t)DESC_SIZE * avail + DESC_FLAGS,
				  &flags) < 0) {
			emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
			break;
		}
		if (!desc_avail(flags, avail_wrap))
			break;
		if (packed_walk(b, avail, &count, &id) < 0)
			break;
		r = emu_dp_consume(b, &used_len);
		if (r <= 0)
			break;
		/*
		 * Used descriptor written in place at the used position (2.7.4,
		 * 2.7.8): id and len first, then flags with AVAIL = USED = the
		 * used wrap counter (release). WRITE tells the driver len is
		 * meaningful (len is reserved without it).
		 */
		slot = vq->desc_addr + (uint64_t)DESC_SIZE * used;
		len_le = htole32(used_len);
		id_le = htole16(id);
		if (emu_dp_write_ring(b, slot + DESC_LEN, &len_le, 4) < 0 ||
		    emu_dp_write_ring(b, slot + DESC_ID, &id_le, 2) < 0) {
			emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
			break;
		}
		flags = (used_wrap ? EMU_VRING_DESC_F_AVAIL | EMU_VRING_DESC_F_USED : 0) |
			(used_len > 0 ? EMU_VRING_DESC_F_WRITE : 0);
		if (emu_dp_store16_ring(b, slot + DESC_FLAGS, flags) < 0) {
			emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
			break;
		}
		advance(&avail, &avail_wrap, count, qs);
		advance(&used, &used_wrap, count, qs);
		vq->hw_available_index = avail | (avail_wrap ? WRAP_BIT : 0);
		vq->hw_used_index = used | (used_wrap ? WRAP_BIT : 0);
		if (b->cnt != NULL) {
			b->cnt->received_desc++;
			b->cnt->completed_desc++;
		}
		b->completed++;
		budget--;
	}
}

bool
emu_ring_packed_notify(struct emu_dp_batch *b)
{
	uint16_t flags;

	/* The driver event suppression area's flags, after the used flags. */
	if (emu_dp_driver_flags(b, b->vq->available_addr + EVENT_FLAGS, &flags) < 0)
		return false;
	/* DESC (EVENT_IDX, not offered by the driver) is treated as enable. */
	return (flags & RING_EVENT_FLAGS_MASK) != RING_EVENT_FLAGS_DISABLE;
}
