/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small virtio-net driver living in the front end's guest memory.
 *
 * Queue pair q uses ring 2q for RX and 2q+1 for TX (virtio 1.1, 5.1.2).
 * Every buffer is one descriptor of a fixed slot: buffer id i of a ring is
 * the 2 KiB slot i of that ring's buffer area (and, in a split ring, also
 * descriptor i). Frames carry (queue pair, sequence number) and a pattern, so
 * RX can detect corruption, loss and duplication exactly.
 *
 * All driver state (next avail index, last used index, wrap counters) lives
 * in struct vu_guest, the rings live in guest memory: both survive a device
 * stop and a start on another back end, as a migrated guest's would.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vu_frame.h"
#include "vu_guest.h"
#include "vu_vring.h"

/* Feature bits the driver cares about (virtio 1.1, 6 and 5.1.3). */
#define VU_NET_F_MRG_RXBUF 15
#define VU_F_EVENT_IDX 29
#define VU_F_VERSION_1 32

/* What the device asks of notifications: split (virtio 1.1, 2.6.10), packed (2.7.10). */
#define VU_USED_F_NO_NOTIFY 1
#define VU_EVENT_F_DISABLE 1
#define VU_EVENT_F_DESC 2

#define VU_BUF_STRIDE 2048

struct vu_pevent {
	uint16_t off_wrap;
	uint16_t flags;
};

struct vu_ring {
	unsigned int qp;
	bool rx;
	uint16_t size;
	uint64_t desc_gpa, avail_gpa, used_gpa, bufs_gpa;
	uint8_t *desc, *avail, *used, *bufs;
	uint64_t desc_len, avail_len, used_len;
	/*
	 * The ring's allocation (its four parts, page-aligned each) and two
	 * bitmaps over its pages since the dirty mark: what the device must
	 * have written (dev_dirty), what this driver's CPU wrote (cpu_dirty).
	 */
	uint64_t chunk_gpa, chunk_pages;
	uint8_t *dev_dirty, *cpu_dirty;
	int kickfd, callfd;
	int old_kickfd, old_callfd;	/* previous generation, closed lazily */
	struct vu_vring vr;	/* indices and wrap counters */
	uint16_t num_added;	/* posted since the last notification decision */
	uint16_t *free_ids;
	unsigned int nfree;
	uint8_t *inflight;
};

struct vu_qp {
	uint64_t tx_seq;
	struct vu_seen seen;
	struct vu_guest_stats st;
};

struct vu_guest {
	pthread_mutex_t lock;
	struct vu_mem *mem;
	struct vu_guest_cfg cfg;
	uint64_t features;
	bool event_idx;
	bool mrg_rxbuf;
	uint32_t hdr_len;	/* the virtio-net header the features give (5.1.6) */
	unsigned int nrings;
	struct vu_ring *rings;
	struct vu_qp *qps;
	bool dirty_on;
};

static inline uint64_t
vu_align_page(uint64_t v)
{
	return (v + VU_PAGE_SIZE - 1) & ~(VU_PAGE_SIZE - 1);
}

static void
vu_bits_range(const struct vu_guest *g, const struct vu_ring *r, uint8_t *bits, uint64_t gpa,
	      uint64_t len)
{
	uint64_t p, last;

	if (!g->dirty_on || len == 0 || gpa < r->chunk_gpa ||
	    (gpa - r->chunk_gpa) >> VU_PAGE_SHIFT >= r->chunk_pages)
		return;
	p = (gpa - r->chunk_gpa) >> VU_PAGE_SHIFT;
	last = (gpa - r->chunk_gpa + len - 1) >> VU_PAGE_SHIFT;
	if (last >= r->chunk_pages)
		last = r->chunk_pages - 1;
	for (; p <= last; p++)
		bits[p / 8] |= (uint8_t)(1u << (p % 8));
}

/* The device must have written [gpa, gpa + len) of ring r (and logged it). */
static void
vu_dirty_range(struct vu_guest *g, struct vu_ring *r, uint64_t gpa, uint64_t len)
{
	vu_bits_range(g, r, r->dev_dirty, gpa, len);
}

/*
 * This driver writes [gpa, gpa + len) of ring r: a page the front end's
 * snapshot check may find changed without a log bit (what QEMU sends
 * anyway, the CPU's writes being tracked by KVM, not by the device).
 */
static void
vu_cpu_range(struct vu_guest *g, struct vu_ring *r, uint64_t gpa, uint64_t len)
{
	vu_bits_range(g, r, r->cpu_dirty, gpa, len);
}

/* ---- ring primitives ---- */

static void
vu_ring_reset(struct vu_guest *g, struct vu_ring *r)
{
	unsigned int i;

	/* The CPU zeroes the ring (and writes its interrupt flags below). */
	vu_cpu_range(g, r, r->chunk_gpa, r->chunk_pages << VU_PAGE_SHIFT);
	memset(r->desc, 0, r->desc_len);
	memset(r->avail, 0, r->avail_len);
	memset(r->used, 0, r->used_len);
	vu_vring_reset(&r->vr);
	r->num_added = 0;
	for (i = 0; i < r->size; i++)
		r->free_ids[i] = (uint16_t)(r->size - 1 - i);
	r->nfree = r->size;
	memset(r->inflight, 0, r->size);
	vu_vring_set_interrupts(&r->vr, !g->cfg.no_interrupt);
}

/* Buffer id is slot id of the ring's buffer area, one descriptor (split: descriptor id). */
static void
vu_ring_post(struct vu_guest *g, struct vu_ring *r, uint16_t id, uint32_t len)
{
	struct vu_vbuf b = {
		.addr = r->bufs_gpa + (uint64_t)id * VU_BUF_STRIDE,
		.len = len,
		.flags = r->rx ? VU_VRING_F_WRITE : 0,
	};

	r->inflight[id] = 1;
	/* What vu_vring_post writes: the descriptor, and a split ring's avail entry. */
	if (g->cfg.packed) {
		vu_cpu_range(g, r, r->desc_gpa + 16 * (uint64_t)r->vr.avail_idx, 16);
	} else {
		vu_cpu_range(g, r, r->desc_gpa + 16 * (uint64_t)id, 16);
		vu_cpu_range(g, r, r->avail_gpa + 4 + 2 * (uint64_t)(r->vr.avail_idx & (r->size - 1)),
			     2);
	}
	vu_vring_post(&r->vr, id, &b, 1);
	r->num_added++;
}

static inline bool
vu_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	/* virtio 1.1, 2.6.7.2: notify if event is in [old, new). */
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

static void
vu_ring_publish(struct vu_guest *g, struct vu_ring *r, struct vu_guest_stats *st)
{
	uint64_t one = 1;
	bool kick;

	if (r->num_added == 0)
		return;
	if (!g->cfg.packed)
		vu_cpu_range(g, r, r->avail_gpa + 2, 2);	/* the avail index */
	vu_vring_publish(&r->vr);
	/*
	 * The suppression state must be read after the new entries are
	 * visible, or we may skip a kick the device is waiting for (2.6.13.8.2).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!g->cfg.packed) {
		uint16_t old = (uint16_t)(r->vr.avail_idx - r->num_added);

		if (g->event_idx) {
			uint16_t *ev = (uint16_t *)(r->used + 4 + 8 * (uint64_t)r->size);

			kick = vu_need_event(__atomic_load_n(ev, __ATOMIC_ACQUIRE),
					     r->vr.avail_idx, old);
		} else {
			kick = !(__atomic_load_n((uint16_t *)r->used, __ATOMIC_ACQUIRE) &
				 VU_USED_F_NO_NOTIFY);
		}
	} else {
		struct vu_pevent *dev = (struct vu_pevent *)r->used;
		uint16_t flags = __atomic_load_n(&dev->flags, __ATOMIC_ACQUIRE);

		if (flags == VU_EVENT_F_DESC && g->event_idx) {
			uint16_t ow = __atomic_load_n(&dev->off_wrap, __ATOMIC_ACQUIRE);
			uint16_t ev = ow & 0x7fff;
			uint16_t new_idx = r->vr.avail_idx;
			uint16_t old = (uint16_t)(new_idx - r->num_added);

			/* An event index of the other lap is one ring behind (2.7.10). */
			if ((bool)(ow >> 15) != r->vr.avail_wrap)
				ev = (uint16_t)(ev - r->size);
			kick = vu_need_event(ev, new_idx, old);
		} else {
			kick = flags != VU_EVENT_F_DISABLE;
		}
	}
	r->num_added = 0;
	if (kick && r->kickfd >= 0) {
		/* EAGAIN means the counter is already non-zero: kicked anyway. */
		if (write(r->kickfd, &one, sizeof(one)) == sizeof(one))
			st->kicks++;
	}
}

/* ---- frames ---- */

static void
vu_frame_check(struct vu_guest *g, struct vu_ring *r, const uint8_t *buf, uint32_t len)
{
	struct vu_guest_stats *st = &g->qps[r->qp].st;
	uint16_t nbufs;
	uint64_t seq;
	uint32_t qp;
	int ret;

	st->rx_received++;
	if (len < g->hdr_len || len - g->hdr_len != g->cfg.frame_len)
		goto bad;
	/* With MRG_RXBUF, num_buffers must say how many buffers (here 1). */
	if (g->mrg_rxbuf) {
		memcpy(&nbufs, buf + 10, 2);
		if (nbufs != 1)
			goto bad;
	}
	/* A sequence number never sent is corruption, not a duplicate. */
	if (vu_frame_parse(buf + g->hdr_len, len - g->hdr_len, &qp, &seq) != 0 ||
	    qp >= g->cfg.queue_pairs || seq >= g->qps[qp].tx_seq)
		goto bad;
	ret = vu_seen_record(&g->qps[qp].seen, seq);
	if (ret < 0)
		goto bad;
	if (ret == 0)
		g->qps[qp].st.duplicates++;
	else
		g->qps[qp].st.rx_unique++;
	return;
bad:
	st->rx_bad++;
}

static void
vu_complete(struct vu_guest *g, struct vu_ring *r, uint32_t id, uint32_t len)
{
	struct vu_guest_stats *st = &g->qps[r->qp].st;
	uint64_t gpa;

	if (id >= r->size || !r->inflight[id]) {
		st->dev_errors++;
		return;
	}
	r->inflight[id] = 0;
	r->free_ids[r->nfree++] = (uint16_t)id;
	if (!r->rx) {
		st->tx_completed++;
		return;
	}
	gpa = r->bufs_gpa + (uint64_t)id * VU_BUF_STRIDE;
	vu_dirty_range(g, r, gpa, len < VU_BUF_STRIDE ? len : VU_BUF_STRIDE);
	vu_frame_check(g, r, r->bufs + (uint64_t)id * VU_BUF_STRIDE, len);
}

static unsigned int
vu_ring_reap(struct vu_guest *g, struct vu_ring *r)
{
	struct vu_vused u;
	unsigned int n = 0;
	int ret = 0;

	while (n < r->size && (ret = vu_vring_reap(&r->vr, &u)) > 0) {
		vu_complete(g, r, u.id, u.len);
		/* What the device wrote: the used entry (split), the descriptor (packed). */
		if (g->cfg.packed)
			vu_dirty_range(g, r, r->desc_gpa + 16 * (uint64_t)u.slot, 16);
		else
			vu_dirty_range(g, r, r->used_gpa + 4 + 8 * (uint64_t)u.slot, 8);
		n++;
	}
	/* More than a ring's worth used: a device bug. */
	if (ret < 0)
		g->qps[r->qp].st.dev_errors++;
	if (n != 0 && !g->cfg.packed) {
		vu_dirty_range(g, r, r->used_gpa, 4);
		/* used_event: interrupt for the next entry, or far away (2.6.10). */
		if (g->event_idx)
			vu_cpu_range(g, r, r->avail_gpa + 4 + 2 * (uint64_t)r->size, 2);
		if (g->event_idx)
			__atomic_store_n((uint16_t *)r->avail + 2 + r->size,
					 (uint16_t)(r->vr.last_used +
						    (g->cfg.no_interrupt ? 0x8000 : 0)),
					 __ATOMIC_RELEASE);
	}
	return n;
}

static unsigned int
vu_refill_locked(struct vu_guest *g)
{
	unsigned int i, n = 0;

	for (i = 0; i < g->nrings; i += 2) {
		struct vu_ring *r = &g->rings[i];
		struct vu_guest_stats *st = &g->qps[r->qp].st;

		while (r->nfree != 0) {
			vu_ring_post(g, r, r->free_ids[--r->nfree], VU_RX_BUF_LEN);
			st->rx_posted++;
			n++;
		}
		vu_ring_publish(g, r, st);
	}
	return n;
}

/* ---- public API ---- */

static int
vu_eventfds(struct vu_ring *r)
{
	int k, c;

	k = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (k < 0)
		return -errno;
	c = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c < 0) {
		int err = -errno;

		close(k);
		return err;
	}
	/*
	 * Keep one previous generation open: another thread may still be
	 * using it (a wait in progress); it is closed on the next swap.
	 */
	if (r->old_kickfd >= 0)
		close(r->old_kickfd);
	if (r->old_callfd >= 0)
		close(r->old_callfd);
	r->old_kickfd = r->kickfd;
	r->old_callfd = r->callfd;
	r->kickfd = k;
	r->callfd = c;
	return 0;
}

int
vu_guest_create(struct vu_guest **out, struct vu_mem *m, const struct vu_guest_cfg *cfg)
{
	uint64_t desc_len, avail_len, used_len, bufs_len, per_ring, off;
	struct vu_guest *g;
	unsigned int i, place;
	int ret;

	*out = NULL;
	if (cfg->queue_pairs == 0 || cfg->ring_size == 0 || cfg->ring_size > 32768 ||
	    (!cfg->packed && (cfg->ring_size & (cfg->ring_size - 1)) != 0) ||
	    (cfg->frame_len != 0 &&
	     (cfg->frame_len < VU_FRAME_MIN || cfg->frame_len > VU_FRAME_MAX)))
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	g->mem = m;
	g->cfg = *cfg;
	g->hdr_len = VU_NET_HDR_LEN;
	if (g->cfg.frame_len == 0)
		g->cfg.frame_len = 64;
	g->nrings = 2u * cfg->queue_pairs;
	g->rings = calloc(g->nrings, sizeof(*g->rings));
	g->qps = calloc(cfg->queue_pairs, sizeof(*g->qps));
	if (g->rings == NULL || g->qps == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < g->nrings; i++) {
		g->rings[i].kickfd = g->rings[i].callfd = -1;
		g->rings[i].old_kickfd = g->rings[i].old_callfd = -1;
	}
	/* Layouts and alignments of virtio 1.1, 2.6 (split) and 2.7 (packed). */
	desc_len = 16ULL * cfg->ring_size;
	if (cfg->packed) {
		avail_len = sizeof(struct vu_pevent);
		used_len = sizeof(struct vu_pevent);
	} else {
		avail_len = 6 + 2ULL * cfg->ring_size;
		used_len = 6 + 8ULL * cfg->ring_size;
	}
	bufs_len = (uint64_t)VU_BUF_STRIDE * cfg->ring_size;
	/*
	 * Every part page-aligned: a page the device writes (used ring, RX
	 * buffers) never holds what the CPU writes (descriptors, avail ring,
	 * TX buffers), or the snapshot check could not tell them apart.
	 */
	per_ring = vu_align_page(desc_len) + vu_align_page(avail_len) +
		   vu_align_page(used_len) + vu_align_page(bufs_len);
	place = vu_mem_next_place(m);
	for (i = 0; i < g->nrings; i++) {
		struct vu_ring *r = &g->rings[i];

		r->qp = i / 2;
		r->rx = (i % 2) == 0;
		r->size = cfg->ring_size;
		r->desc_len = desc_len;
		r->avail_len = avail_len;
		r->used_len = used_len;
		/*
		 * Each queue pair at its own place (a region's start or end, in
		 * turn), from the guest's own first place: device writes land
		 * low and high in every region, not only near GPA 0, so a log
		 * that covers part of memory is seen, even when the traffic
		 * uses queue pair 0 only (the NICs of a VM start apart).
		 */
		ret = vu_mem_alloc_at(m, place + r->qp, per_ring, VU_PAGE_SIZE, &r->chunk_gpa);
		if (ret < 0)
			goto fail;
		r->chunk_pages = per_ring >> VU_PAGE_SHIFT;
		r->dev_dirty = calloc(1, r->chunk_pages / 8 + 1);
		r->cpu_dirty = calloc(1, r->chunk_pages / 8 + 1);
		if (r->dev_dirty == NULL || r->cpu_dirty == NULL) {
			ret = -ENOMEM;
			goto fail;
		}
		off = r->chunk_gpa;
		r->desc_gpa = off;
		off += vu_align_page(desc_len);
		r->avail_gpa = off;
		off += vu_align_page(avail_len);
		r->used_gpa = off;
		off += vu_align_page(used_len);
		r->bufs_gpa = off;
		r->desc = vu_mem_gpa_to_hva(m, r->desc_gpa, desc_len);
		r->avail = vu_mem_gpa_to_hva(m, r->avail_gpa, avail_len);
		r->used = vu_mem_gpa_to_hva(m, r->used_gpa, used_len);
		r->bufs = vu_mem_gpa_to_hva(m, r->bufs_gpa, bufs_len);
		r->free_ids = calloc(r->size, sizeof(*r->free_ids));
		r->inflight = calloc(r->size, 1);
		if (r->desc == NULL || r->avail == NULL || r->used == NULL ||
		    r->bufs == NULL) {
			ret = -EFAULT;
			goto fail;
		}
		if (r->free_ids == NULL || r->inflight == NULL) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = vu_eventfds(r);
		if (ret < 0)
			goto fail;
		ret = vu_vring_init(&r->vr, cfg->packed, r->size, r->desc, r->avail, r->used);
		if (ret < 0)
			goto fail;
		vu_ring_reset(g, r);
	}
	*out = g;
	return 0;
fail:
	vu_guest_destroy(g);
	return ret;
}

void
vu_guest_destroy(struct vu_guest *g)
{
	unsigned int i;

	if (g == NULL)
		return;
	for (i = 0; g->rings != NULL && i < g->nrings; i++) {
		struct vu_ring *r = &g->rings[i];
		int fds[4] = { r->kickfd, r->callfd, r->old_kickfd, r->old_callfd };
		unsigned int k;

		for (k = 0; k < 4; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		free(r->free_ids);
		free(r->inflight);
		free(r->dev_dirty);
		free(r->cpu_dirty);
		vu_vring_fini(&r->vr);
	}
	for (i = 0; g->qps != NULL && i < g->cfg.queue_pairs; i++)
		vu_seen_free(&g->qps[i].seen);
	/* Guest memory is a bump allocator: the area is simply abandoned. */
	free(g->rings);
	free(g->qps);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void
vu_guest_reset(struct vu_guest *g)
{
	unsigned int i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings; i++)
		vu_ring_reset(g, &g->rings[i]);
	for (i = 0; i < g->cfg.queue_pairs; i++) {
		vu_seen_free(&g->qps[i].seen);
		memset(&g->qps[i], 0, sizeof(g->qps[i]));
	}
	g->dirty_on = false;
	pthread_mutex_unlock(&g->lock);
}

unsigned int
vu_guest_nrings(const struct vu_guest *g)
{
	return g->nrings;
}

const struct vu_guest_cfg *
vu_guest_cfg(const struct vu_guest *g)
{
	return &g->cfg;
}

struct vu_mem *
vu_guest_mem(const struct vu_guest *g)
{
	return g->mem;
}

int
vu_guest_ring_info(const struct vu_guest *g, unsigned int ring, struct vu_ring_info *ri)
{
	const struct vu_ring *r;

	if (ring >= g->nrings)
		return -EINVAL;
	r = &g->rings[ring];
	ri->num = r->size;
	ri->desc_gpa = r->desc_gpa;
	ri->avail_gpa = r->avail_gpa;
	ri->used_gpa = r->used_gpa;
	ri->desc = r->desc;
	ri->avail = r->avail;
	ri->used = r->used;
	/*
	 * The log address names the ring the device writes: the used ring, or
	 * for a packed ring the descriptor ring, where used descriptors go.
	 */
	ri->log_gpa = g->cfg.packed ? r->desc_gpa : r->used_gpa;
	/* Packed base: bits 0-14 avail index, bit 15 avail wrap counter. */
	ri->fresh_base = g->cfg.packed ? 0x8000 : 0;
	return 0;
}

int
vu_guest_kickfd(const struct vu_guest *g, unsigned int ring)
{
	return ring < g->nrings ? g->rings[ring].kickfd : -EINVAL;
}

int
vu_guest_callfd(const struct vu_guest *g, unsigned int ring)
{
	return ring < g->nrings ? g->rings[ring].callfd : -EINVAL;
}

int
vu_guest_new_eventfds(struct vu_guest *g)
{
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings && ret == 0; i++)
		ret = vu_eventfds(&g->rings[i]);
	pthread_mutex_unlock(&g->lock);
	return ret;
}

void
vu_guest_set_features(struct vu_guest *g, uint64_t features)
{
	pthread_mutex_lock(&g->lock);
	g->features = features;
	g->event_idx = !!(features & (1ULL << VU_F_EVENT_IDX));
	g->mrg_rxbuf = !!(features & (1ULL << VU_NET_F_MRG_RXBUF));
	/*
	 * num_buffers is in the header with VERSION_1 or MRG_RXBUF (virtio
	 * 1.1, 5.1.6): a legacy driver without MRG_RXBUF has 10 bytes.
	 */
	g->hdr_len = g->mrg_rxbuf || (features & (1ULL << VU_F_VERSION_1)) ?
		     VU_NET_HDR_LEN : VU_NET_HDR_LEN_LEGACY;
	pthread_mutex_unlock(&g->lock);
}

uint64_t
vu_guest_features(const struct vu_guest *g)
{
	return g->features;
}

int
vu_guest_tx(struct vu_guest *g, unsigned int qp, unsigned int n)
{
	struct vu_ring *r;
	struct vu_qp *q;
	unsigned int i;

	if (qp >= g->cfg.queue_pairs)
		return -EINVAL;
	pthread_mutex_lock(&g->lock);
	r = &g->rings[2 * qp + 1];
	q = &g->qps[qp];
	for (i = 0; i < n && r->nfree != 0; i++) {
		uint16_t id = r->free_ids[--r->nfree];

		uint8_t *buf = r->bufs + (uint64_t)id * VU_BUF_STRIDE;

		vu_cpu_range(g, r, r->bufs_gpa + (uint64_t)id * VU_BUF_STRIDE,
			     g->hdr_len + g->cfg.frame_len);
		/* No offloads: an all-zero virtio-net header (5.1.6). */
		memset(buf, 0, g->hdr_len);
		vu_frame_build(buf + g->hdr_len, g->cfg.frame_len, qp, q->tx_seq);
		q->tx_seq++;
		vu_ring_post(g, r, id, g->hdr_len + g->cfg.frame_len);
		q->st.tx_posted++;
	}
	vu_ring_publish(g, r, &q->st);
	pthread_mutex_unlock(&g->lock);
	return (int)i;
}

int
vu_guest_poll(struct vu_guest *g)
{
	unsigned int i, n = 0;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings; i++)
		n += vu_ring_reap(g, &g->rings[i]);
	vu_refill_locked(g);
	pthread_mutex_unlock(&g->lock);
	return (int)n;
}

int
vu_guest_rx_refill(struct vu_guest *g)
{
	unsigned int n;

	pthread_mutex_lock(&g->lock);
	n = vu_refill_locked(g);
	pthread_mutex_unlock(&g->lock);
	return (int)n;
}

int
vu_guest_wait(struct vu_guest *g, int timeout_ms)
{
	struct pollfd *pfd;
	unsigned int i;
	uint64_t v;
	int ret;

	pfd = calloc(g->nrings, sizeof(*pfd));
	if (pfd == NULL)
		return -ENOMEM;
	/*
	 * Our own duplicates, taken under the lock: two swaps of the eventfds
	 * (vu_guest_new_eventfds) during the wait close the numbers read here,
	 * which the process may give to anything meanwhile, a vhost-user
	 * socket included, whose bytes a read() of 8 would then eat.
	 */
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings; i++) {
		pfd[i].fd = fcntl(g->rings[i].callfd, F_DUPFD_CLOEXEC, 0);
		pfd[i].events = POLLIN;
	}
	pthread_mutex_unlock(&g->lock);
	/* A number that could not be duplicated (-1) is skipped by poll. */
	ret = poll(pfd, g->nrings, timeout_ms);
	if (ret < 0) {
		ret = -errno;
	} else {
		/* Reading an eventfd resets it, so the next wait blocks again. */
		for (i = 0; i < g->nrings; i++)
			if (pfd[i].revents & POLLIN)
				(void)!read(pfd[i].fd, &v, sizeof(v));
	}
	for (i = 0; i < g->nrings; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	free(pfd);
	return ret;
}

static void
vu_stats_add(struct vu_guest_stats *d, const struct vu_guest_stats *s)
{
	d->tx_posted += s->tx_posted;
	d->tx_completed += s->tx_completed;
	d->rx_posted += s->rx_posted;
	d->rx_received += s->rx_received;
	d->rx_bad += s->rx_bad;
	d->duplicates += s->duplicates;
	d->rx_unique += s->rx_unique;
	d->dev_errors += s->dev_errors;
	d->kicks += s->kicks;
}

void
vu_guest_stats(struct vu_guest *g, int qp, struct vu_guest_stats *s)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->cfg.queue_pairs; i++)
		if (qp < 0 || (unsigned int)qp == i)
			vu_stats_add(s, &g->qps[i].st);
	pthread_mutex_unlock(&g->lock);
}

enum vu_sum {
	VU_SUM_SENT,
	VU_SUM_LOST,
	VU_SUM_INFLIGHT,
};

static uint64_t
vu_sum(struct vu_guest *g, int qp, enum vu_sum what)
{
	uint64_t n = 0;
	unsigned int i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->cfg.queue_pairs; i++) {
		const struct vu_ring *tx = &g->rings[2 * i + 1];
		const struct vu_qp *q = &g->qps[i];

		if (qp >= 0 && (unsigned int)qp != i)
			continue;
		if (what == VU_SUM_SENT)
			n += q->tx_seq;
		else if (what == VU_SUM_LOST)
			n += q->tx_seq - q->st.rx_unique;
		else
			n += tx->size - tx->nfree;
	}
	pthread_mutex_unlock(&g->lock);
	return n;
}

uint64_t
vu_guest_tx_sent(struct vu_guest *g, int qp)
{
	return vu_sum(g, qp, VU_SUM_SENT);
}

uint64_t
vu_guest_lost(struct vu_guest *g, int qp)
{
	return vu_sum(g, qp, VU_SUM_LOST);
}

uint64_t
vu_guest_tx_inflight(struct vu_guest *g, int qp)
{
	return vu_sum(g, qp, VU_SUM_INFLIGHT);
}

void
vu_guest_dirty_mark(struct vu_guest *g)
{
	unsigned int i;

	pthread_mutex_lock(&g->lock);
	/* What is already used was written before the mark: not recorded. */
	g->dirty_on = false;
	for (i = 0; i < g->nrings; i++)
		vu_ring_reap(g, &g->rings[i]);
	for (i = 0; i < g->nrings; i++) {
		memset(g->rings[i].dev_dirty, 0, g->rings[i].chunk_pages / 8 + 1);
		memset(g->rings[i].cpu_dirty, 0, g->rings[i].chunk_pages / 8 + 1);
	}
	g->dirty_on = true;
	vu_refill_locked(g);
	pthread_mutex_unlock(&g->lock);
}

int64_t
vu_guest_dirty_check(struct vu_guest *g, const struct vu_log *log,
		     uint64_t *missing, uint64_t *first_missing_gpa)
{
	uint64_t p, miss = 0, first = UINT64_MAX;
	unsigned int i;
	int64_t n = 0;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings; i++) {
		const struct vu_ring *r = &g->rings[i];

		for (p = 0; p < r->chunk_pages; p++) {
			uint64_t gpa = r->chunk_gpa + (p << VU_PAGE_SHIFT);

			if (!(r->dev_dirty[p / 8] & (1u << (p % 8))))
				continue;
			n++;
			if (!vu_log_test(log, gpa) && miss++ == 0)
				first = gpa;
		}
	}
	pthread_mutex_unlock(&g->lock);
	if (missing != NULL)
		*missing = miss;
	if (first_missing_gpa != NULL)
		*first_missing_gpa = first;
	return n;
}

bool
vu_guest_cpu_dirty(struct vu_guest *g, uint64_t gpa)
{
	unsigned int i;
	bool ret = false;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nrings && !ret; i++) {
		const struct vu_ring *r = &g->rings[i];
		uint64_t p = (gpa - r->chunk_gpa) >> VU_PAGE_SHIFT;

		if (gpa >= r->chunk_gpa && p < r->chunk_pages)
			ret = (r->cpu_dirty[p / 8] >> (p % 8)) & 1;
	}
	pthread_mutex_unlock(&g->lock);
	return ret;
}
