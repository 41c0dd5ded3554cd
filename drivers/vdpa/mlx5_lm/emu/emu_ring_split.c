/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Split virtqueues (virtio 1.1, 2.6) as the device side processes them:
 * the descriptor table at desc_addr (16-byte entries), the available ring
 * at available_addr {flags, idx, ring[queue_size], used_event} and the
 * used ring at used_addr {flags, idx, ring[queue_size] of {id, len},
 * avail_event}, all guest addresses in the queue mkey's space.
 *
 * hw_available_index is the next available-ring entry to consume and
 * hw_used_index the next used-ring entry to fill (free-running 16-bit,
 * as vhost's last_avail_idx / last_used_idx). Every chain consumed is
 * completed in the same batch, in order, except RX chains fetched ahead
 * of their frames (caps rx_prefetch_chains): those are counted in
 * hw_available_index at once and completed, in order, by later frames.
 */
#include <endian.h>
#include <string.h>

#include "emu_priv.h"

#define AVAIL_FLAGS 0u
#define AVAIL_IDX 2u
#define AVAIL_RING 4u
#define USED_IDX 2u
#define USED_RING 4u
#define USED_ELEM 8u
#define DESC_SIZE 16u
/* avail->flags: the driver does not want to be interrupted (2.6.7). */
#define VRING_AVAIL_F_NO_INTERRUPT 1u

struct split_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

static int
read_desc(struct emu_dp_batch *b, uint64_t table, uint32_t i, struct split_desc *d)
{
	uint8_t raw[DESC_SIZE];

	if (emu_dp_read_desc(b, table + (uint64_t)DESC_SIZE * i, raw, &d->addr, &d->len) < 0)
		return -1;
	memcpy(&d->flags, raw + 12, 2);
	memcpy(&d->next, raw + 14, 2);
	d->flags = le16toh(d->flags);
	d->next = le16toh(d->next);
	return 0;
}

/*
 * Walk the chain starting at head into b->segs. Rules (2.6.5.3.1): a
 * chain is never longer than the queue (a longer walk is a loop); an
 * indirect descriptor carries no NEXT, points at a table of len / 16
 * descriptors and never appears inside such a table (one level).
 */
static int
split_walk(struct emu_dp_batch *b, uint16_t head)
{
	const struct emu_virtq *vq = b->vq;
	uint32_t qs = vq->queue_size, n = qs, i = head, seen = 0;
	uint64_t table = vq->desc_addr;
	bool indirect = false;
	struct split_desc d;

	emu_dp_chain_reset(b);
	for (;;) {
		if (emu_dp_chain_step(b, &seen) < 0)
			return -1;
		if (read_desc(b, table, i, &d) < 0)
			return -1;
		if (d.flags & EMU_VRING_DESC_F_INDIRECT) {
			if (indirect || (d.flags & EMU_VRING_DESC_F_NEXT) || d.len == 0 ||
			    d.len % DESC_SIZE != 0)
				return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
			/* The table's entries, not the pointer to it, make the chain. */
			seen--;
			table = d.addr;
			n = d.len / DESC_SIZE;
			i = 0;
			indirect = true;
			continue;
		}
		if (emu_dp_add_seg(b, d.addr, d.len, d.flags) < 0)
			return -1;
		if (!(d.flags & EMU_VRING_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
		i = d.next;
	}
}

/* The head at available-ring entry hw_available_index; -1 ERR. */
static int
split_head(struct emu_dp_batch *b, uint16_t *head)
{
	struct emu_virtq *vq = b->vq;

	if (emu_dp_load16(b, vq->available_addr + AVAIL_RING +
			  2u * (uint32_t)(vq->hw_available_index % vq->queue_size), head) < 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
	if (*head >= vq->queue_size)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
	return 0;
}

/*
 * Fill and complete the chain at head (already counted in
 * hw_available_index); 1 done, 0 nothing to do (no frame), -1 ERR.
 */
static int
split_complete(struct emu_dp_batch *b, uint16_t head)
{
	struct emu_virtq *vq = b->vq;
	uint32_t used_len, elem[2];
	int r;

	if (split_walk(b, head) < 0)
		return -1;
	r = emu_dp_consume(b, &used_len);
	if (r <= 0)
		return r;
	/* Used element {id = head of the chain, len = bytes written} (2.6.8). */
	elem[0] = htole32(head);
	elem[1] = htole32(used_len);
	if (emu_dp_write_ring(b, vq->used_addr + USED_RING +
			      (uint64_t)USED_ELEM * (vq->hw_used_index % vq->queue_size), elem,
			      sizeof(elem)) < 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
	vq->hw_used_index++;
	if (b->cnt != NULL)
		b->cnt->completed_desc++;
	b->completed++;
	return 1;
}

/* Consume and complete one chain; 1 done, 0 nothing to do, -1 ERR. */
static int
split_one(struct emu_dp_batch *b)
{
	uint16_t head;
	int r;

	if (b->rx && b->dq->bl_head == NULL)
		return 0;
	if (split_head(b, &head) < 0)
		return -1;
	r = split_complete(b, head);
	if (r <= 0)
		return r;
	b->vq->hw_available_index++;
	if (b->cnt != NULL)
		b->cnt->received_desc++;
	return 1;
}

/*
 * caps rx_prefetch_chains: the chains fetched ahead are the oldest
 * available ones, so they take the waiting frames first, in ring order
 * (the device completes in order). 1 all of them filled, 0 stopped (no
 * frame or no budget), -1 ERR.
 */
static int
split_fill_prefetched(struct emu_dp_batch *b, unsigned int *budget)
{
	struct emu_dp_vq *dq = b->dq;
	int r;

	while (dq->pf_n > 0) {
		if (dq->bl_head == NULL)
			return 0;
		if (*budget == 0) {
			b->more = true;
			return 0;
		}
		r = split_complete(b, dq->pf_heads[dq->pf_first]);
		if (r <= 0)
			return r;
		dq->pf_first = (uint8_t)((dq->pf_first + 1) % EMU_RX_PREFETCH_MAX);
		dq->pf_n--;
		(*budget)--;
	}
	return 1;
}

/*
 * Fetch available RX chains ahead of any frame, up to the cap: their heads
 * are read (hw_available_index moves past them, received_desc counts them)
 * and kept; nothing is written to the guest until a frame fills them.
 */
static void
split_prefetch(struct emu_dp_batch *b, uint16_t avail_idx)
{
	struct emu_virtq *vq = b->vq;
	struct emu_dp_vq *dq = b->dq;
	unsigned int cap = b->dev->prof->caps.rx_prefetch_chains;
	uint16_t head;

	while (dq->pf_n < cap && vq->hw_available_index != avail_idx) {
		if (split_head(b, &head) < 0)
			return;
		dq->pf_heads[(dq->pf_first + dq->pf_n) % EMU_RX_PREFETCH_MAX] = head;
		dq->pf_n++;
		vq->hw_available_index++;
		if (b->cnt != NULL)
			b->cnt->received_desc++;
	}
}

void
emu_ring_split_run(struct emu_dp_batch *b, unsigned int budget)
{
	struct emu_virtq *vq = b->vq;
	bool prefetch = b->rx && b->dev->prof->caps.rx_prefetch_chains > 0;
	uint16_t avail_idx;
	int r = 1;

	if (prefetch) {
		r = split_fill_prefetched(b, &budget);
		/* Out of frames, not of budget: still fetch what the guest added since. */
		if (r == 0 && !b->more)
			r = 1;
	}
	while (r > 0) {
		/* Acquire: the ring entries and descriptors behind idx are visible. */
		if (emu_dp_load16(b, vq->available_addr + AVAIL_IDX, &avail_idx) < 0) {
			emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
			break;
		}
		if (avail_idx == vq->hw_available_index)
			break;
		/* The driver never has more than queue_size entries outstanding. */
		if ((uint16_t)(avail_idx - vq->hw_available_index) > vq->queue_size) {
			emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
			break;
		}
		while (vq->hw_available_index != avail_idx) {
			if (budget == 0) {
				b->more = true;
				r = 0;
				break;
			}
			r = split_one(b);
			if (r <= 0)
				break;
			budget--;
		}
		/* No frame left for the next chain: fetch ahead of the next frames. */
		if (prefetch && r == 0 && !b->more && !b->failed)
			split_prefetch(b, avail_idx);
	}
	/*
	 * Publish used->idx once for the batch, after the elements (release):
	 * also after a failure, for the chains that did complete.
	 */
	if (b->completed > 0 &&
	    emu_dp_store16_ring(b, vq->used_addr + USED_IDX, vq->hw_used_index) < 0)
		emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
}

bool
emu_ring_split_notify(struct emu_dp_batch *b)
{
	uint16_t flags;

	/* avail->flags, after used->idx. */
	if (emu_dp_driver_flags(b, b->vq->available_addr + AVAIL_FLAGS, &flags) < 0)
		return false;
	return (flags & VRING_AVAIL_F_NO_INTERRUPT) == 0;
}
