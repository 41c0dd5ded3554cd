/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data path of the emulated ConnectX: one thread per device that sleeps
 * on a condition variable until a queue has work (a doorbell, a RDY
 * transition, a frame steered to an RX queue), then processes one
 * bounded batch of that queue's ring under dev->lock. Holding dev->lock
 * for a batch is what makes commands see a consistent queue: a MODIFY to
 * SUSPEND runs between two batches, and once it returned the thread
 * checks the state before touching the queue again; QUERY reads indices
 * that count exactly the chains consumed and completed.
 *
 * Guest memory is reached only through the queue's mkey (indirect ->
 * direct -> umem): an address the mkey does not map puts the queue in ERR,
 * as on the hardware, and nothing outside the mkey is ever touched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* pthread_setname_np */
#endif
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_priv.h"

/* ---- Guest memory through the mkey ---------------------------------------------- */
/*
 * Mark [addr, addr+len) in the vhost-style dirty bitmap: bit n = guest
 * page n (page = 4 KiB << vhost_log_page), byte n / 8 bit n % 8, reached
 * through dirty_bitmap_mkey. The OR is atomic because the driver's own
 * logging (vhost's log of the used ring) may write the same bytes.
 */
static void
dp_log(struct emu_dp_batch *b, uint64_t addr, uint64_t len)
{
	const struct emu_virtq *vq = b->vq;
	unsigned int shift = 12u + vq->vhost_log_page;
	uint64_t page, last;

	if (b->log_mk == NULL || len == 0 || shift >= 64)
		return;
	last = (addr + len - 1) >> shift;
	for (page = addr >> shift; page <= last; page++) {
		uint64_t byte = page / 8, got;
		uint8_t *host;

		if (byte >= vq->dirty_bitmap_size ||
		    emu_mkey_xlate_write(b->log_mk, vq->dirty_bitmap_addr + byte, 1, &host,
					 &got) < 0) {
			/*
			 * The log does not cover this page: a page the migration
			 * will not copy again. No public text says firmware fails
			 * the queue for it, so it is counted, per queue and per
			 * device, for the tests to hold at 0, and warned once per
			 * queue (each queue's bitmap is its own).
			 */
			b->vq->log_misses++;
			atomic_fetch_add(&b->dev->log_misses, 1);
			if (!b->vq->log_warned) {
				b->vq->log_warned = true;
				emu_log(b->dev, 4, "virtq %u: dirty page 0x%" PRIx64 " outside the "
					"dirty bitmap (size %u, mkey 0x%x): not logged", vq->obj.id,
					page, vq->dirty_bitmap_size, vq->dirty_bitmap_mkey);
			}
			continue;
		}
		__atomic_fetch_or(host, (uint8_t)(1u << (page % 8)), __ATOMIC_RELEASE);
	}
}

/* len bytes between buf and guest memory at addr, through the batch's mkey. */
static int
dp_copy(struct emu_dp_batch *b, uint64_t addr, uint8_t *buf, size_t len, bool to_guest)
{
	uint64_t got;
	uint8_t *host;

	if (b->mk == NULL || addr + len < addr)
		return -EFAULT;
	while (len > 0) {
		/* A write through an mkey without local write faults as a bad address. */
		if ((to_guest ? emu_mkey_xlate_write(b->mk, addr, len, &host, &got) :
				emu_mkey_xlate(b->mk, addr, len, &host, &got)) < 0 || got == 0)
			return -EFAULT;
		if (to_guest)
			memcpy(host, buf, got);
		else
			memcpy(buf, host, got);
		buf += got;
		addr += got;
		len -= got;
	}
	return 0;
}

int
emu_dp_read(struct emu_dp_batch *b, uint64_t addr, void *buf, size_t len)
{
	return dp_copy(b, addr, buf, len, false);
}

int
emu_dp_read_desc(struct emu_dp_batch *b, uint64_t addr, uint8_t raw[16], uint64_t *buf,
		 uint32_t *len)
{
	if (emu_dp_read(b, addr, raw, 16) < 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
	memcpy(buf, raw, 8);
	memcpy(len, raw + 8, 4);
	*buf = le64toh(*buf);
	*len = le32toh(*len);
	return 0;
}

int
emu_dp_write(struct emu_dp_batch *b, uint64_t addr, const void *buf, size_t len)
{
	/* dp_copy only reads buf when it copies to the guest. */
	if (dp_copy(b, addr, (uint8_t *)(uintptr_t)buf, len, true) < 0)
		return -EFAULT;
	dp_log(b, addr, len);
	return 0;
}

int
emu_dp_write_ring(struct emu_dp_batch *b, uint64_t addr, const void *buf, size_t len)
{
	if (dp_copy(b, addr, (uint8_t *)(uintptr_t)buf, len, true) < 0)
		return -EFAULT;
	if (b->log_ring)
		dp_log(b, addr, len);
	return 0;
}

/* A naturally aligned 16-bit ring field, as one access when the host allows. */
static uint16_t *
dp_ptr16(struct emu_dp_batch *b, uint64_t addr, bool write)
{
	uint8_t *host;
	uint64_t got;

	if (b->mk == NULL || ((write ? emu_mkey_xlate_write(b->mk, addr, 2, &host, &got) :
				       emu_mkey_xlate(b->mk, addr, 2, &host, &got)) < 0) ||
	    got < 2 || ((uintptr_t)host & 1) != 0)
		return NULL;
	return (uint16_t *)(void *)host;
}

/*
 * Ring indices and flags are read with acquire semantics: what the driver
 * wrote before publishing them (virtio 1.1, "Supplying Buffers to the
 * Device": descriptors before the index or flags) is visible to the reads
 * that follow.
 */
int
emu_dp_load16(struct emu_dp_batch *b, uint64_t addr, uint16_t *v)
{
	uint16_t *p = dp_ptr16(b, addr, false), raw;

	if (p == NULL) {
		if (emu_dp_read(b, addr, &raw, 2) < 0)
			return -EFAULT;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} else {
		raw = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	}
	*v = le16toh(raw);
	return 0;
}

/* Release: the used elements written before are visible first. A ring field. */
int
emu_dp_store16_ring(struct emu_dp_batch *b, uint64_t addr, uint16_t v)
{
	uint16_t *p = dp_ptr16(b, addr, true), raw = htole16(v);

	if (p == NULL) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return emu_dp_write_ring(b, addr, &raw, 2);
	}
	__atomic_store_n(p, raw, __ATOMIC_RELEASE);
	if (b->log_ring)
		dp_log(b, addr, 2);
	return 0;
}

/* ---- Errors -------------------------------------------------------------------------- */
static const char *const cnt_names[] = {
	[EMU_DP_CNT_BAD_DESC] = "malformed descriptor",
	[EMU_DP_CNT_INVALID_BUFFER] = "address not mapped by the queue's mkey",
	[EMU_DP_CNT_EXCEED_CHAIN] = "descriptor chain longer than the queue",
};

int
emu_dp_fail(struct emu_dp_batch *b, uint8_t error_type, enum emu_dp_cnt cnt)
{
	struct emu_vq_counters *k = b->cnt;

	if (b->failed)
		return -1;
	b->failed = true;
	if (k != NULL) {
		if (cnt == EMU_DP_CNT_BAD_DESC)
			k->bad_desc_errors++;
		else if (cnt == EMU_DP_CNT_INVALID_BUFFER)
			k->invalid_buffer++;
		else
			k->exceed_max_chain++;
		/* The hardware reports the failed descriptor as an error CQE. */
		k->error_cqes++;
	}
	emu_log(b->dev, 4, "virtq %u (index %u): %s (avail %u, used %u)", b->vq->obj.id,
		b->vq->queue_index, cnt_names[cnt], b->vq->hw_available_index,
		b->vq->hw_used_index);
	/* Same transition and OBJECT_CHANGE event as emu_virtq_force_error. */
	emu_virtq_set_error(b->dev, b->vq, error_type);
	return -1;
}

/* ---- Chains -------------------------------------------------------------------------- */
int
emu_dp_add_seg(struct emu_dp_batch *b, uint64_t addr, uint32_t len, uint16_t flags)
{
	bool writable = (flags & EMU_VRING_DESC_F_WRITE) != 0;

	/*
	 * virtio-net (virtio 1.1, 5.1.6): receive buffers are device-writable,
	 * transmit buffers device-readable; anything else is malformed.
	 */
	if (writable != b->rx)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
	if (len == 0)
		return 0;
	if (b->nsegs == b->seg_cap)
		return emu_dp_fail(b, EMU_VQ_ERROR_EXCEED_MAX_CHAIN, EMU_DP_CNT_EXCEED_CHAIN);
	b->segs[b->nsegs].addr = addr;
	b->segs[b->nsegs].len = len;
	b->nsegs++;
	b->chain_bytes += len;
	return 0;
}

#define VNET_HDR_F_NEEDS_CSUM 1
#define VNET_HDR_GSO_NONE 0

/* TX: gather the chain, strip the virtio-net header, put the frame on the wire. */
static int
dp_tx(struct emu_dp_batch *b, uint32_t *used_len)
{
	struct emu_dp *dp = b->dev->dp;
	uint64_t total = b->chain_bytes, off = 0;
	uint32_t i;

	/* The device writes nothing into a transmit buffer. */
	*used_len = 0;
	if (total < b->hdr_len || total - b->hdr_len > EMU_DP_MAX_FRAME) {
		/* Not a frame the wire can carry: completed and dropped. */
		dp->drops++;
		return 1;
	}
	for (i = 0; i < b->nsegs; i++) {
		if (emu_dp_read(b, b->segs[i].addr, dp->frame_buf + off, b->segs[i].len) < 0)
			return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
		off += b->segs[i].len;
	}
	/*
	 * Offloads the queue has (features set by the driver inside
	 * device_features_bits_mask, emu_offload.c): a GSO frame is cut into
	 * segments (HOST_TSO4/6), a NEEDS_CSUM one gets its checksum (CSUM).
	 * What the queue cannot do is dropped and logged, never sent half-made.
	 */
	if (dp->frame_buf[1] != VNET_HDR_GSO_NONE) {
		if (emu_offload_tso(b->dev, dp->frame_buf + b->hdr_len,
				    (uint32_t)(total - b->hdr_len), dp->frame_buf,
				    b->vq->queue_features) < 0) {
			dp->drops++;
			emu_log(b->dev, 4, "virtq %u: GSO frame (gso_type 0x%x) dropped: not a "
				"TCP frame or not a TSO the queue has (features 0x%x)",
				b->vq->obj.id, dp->frame_buf[1], b->vq->queue_features);
		}
		return 1;
	}
	if ((dp->frame_buf[0] & VNET_HDR_F_NEEDS_CSUM) &&
	    (b->vq->queue_features & (1u << PRM_VIRTQ_FEAT_CSUM)) &&
	    emu_offload_csum(dp->frame_buf + b->hdr_len, (uint32_t)(total - b->hdr_len),
			     dp->frame_buf) < 0) {
		dp->drops++;
		emu_log(b->dev, 4, "virtq %u: NEEDS_CSUM with csum_start/offset outside the "
			"%" PRIu64 "-byte frame: dropped", b->vq->obj.id, total - b->hdr_len);
		return 1;
	}
	emu_dp_wire_tx(b->dev, dp->frame_buf + b->hdr_len, (uint32_t)(total - b->hdr_len));
	return 1;
}

/* Scatter src into the chain from byte offset *pos on. */
static int
dp_scatter(struct emu_dp_batch *b, uint64_t *pos, const uint8_t *src, uint32_t len)
{
	uint64_t at = 0;
	uint32_t i;

	for (i = 0; i < b->nsegs && len > 0; i++) {
		const struct emu_seg *s = &b->segs[i];
		uint64_t skip, n;

		if (*pos >= at + s->len) {
			at += s->len;
			continue;
		}
		skip = *pos - at;
		n = s->len - skip < len ? s->len - skip : len;
		if (emu_dp_write(b, s->addr + skip, src, n) < 0)
			return -EFAULT;
		src += n;
		len -= (uint32_t)n;
		*pos += n;
		at += s->len;
	}
	return len == 0 ? 0 : -EFAULT;
}

/*
 * RX: one chain per frame (no MRG_RXBUF merging): a zeroed virtio-net
 * header (num_buffers = 1 when the 12-byte header is in use, virtio 1.1
 * 5.1.6.4) and the frame right after it.
 */
static int
dp_rx(struct emu_dp_batch *b, uint32_t *used_len)
{
	struct emu_dp *dp = b->dev->dp;
	struct emu_dp_vq *dq = b->dq;
	uint8_t hdr[12] = { 0 };
	struct emu_frame *f;
	uint64_t pos = 0;

	for (;;) {
		f = dq->bl_head;
		if (f == NULL)
			return 0;
		if ((uint64_t)b->hdr_len + f->len <= b->chain_bytes)
			break;
		/* The buffer cannot hold it: the frame is dropped, the buffer kept. */
		dq->bl_head = f->next;
		if (dq->bl_head == NULL)
			dq->bl_tail = NULL;
		dq->bl_len--;
		dp->drops++;
		emu_log(b->dev, 7, "virtq %u: %u-byte frame dropped, buffer holds %" PRIu64,
			b->vq->obj.id, f->len, b->chain_bytes);
		free(f);
	}
	if (b->hdr_len == 12)
		hdr[10] = 1;
	if (dp_scatter(b, &pos, hdr, b->hdr_len) < 0 ||
	    dp_scatter(b, &pos, f->data, f->len) < 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
	dq->bl_head = f->next;
	if (dq->bl_head == NULL)
		dq->bl_tail = NULL;
	dq->bl_len--;
	*used_len = b->hdr_len + f->len;
	free(f);
	return 1;
}

int
emu_dp_consume(struct emu_dp_batch *b, uint32_t *used_len)
{
	/* A chain without a single byte is malformed (nothing to send or fill). */
	if (b->chain_bytes == 0)
		return emu_dp_fail(b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_BAD_DESC);
	return b->rx ? dp_rx(b, used_len) : dp_tx(b, used_len);
}

/* ---- Wire ------------------------------------------------------------------------------ */
void
emu_dp_wire_tx(struct emu_dev *dev, const uint8_t *frame, uint32_t len)
{
	struct emu_dp *dp = dev->dp;
	struct emu_frame *f;

	dp->tx_frames++;
	if (dp->uplink == NULL) {
		emu_wire_deliver(dev, frame, len);
		return;
	}
	/* A real wire is called without the device lock: queue it for now. */
	f = malloc(sizeof(*f) + len);
	if (f == NULL) {
		dp->drops++;
		return;
	}
	f->next = NULL;
	f->len = len;
	memcpy(f->data, frame, len);
	if (dp->tx_tail != NULL)
		dp->tx_tail->next = f;
	else
		dp->tx_head = f;
	dp->tx_tail = f;
}

static void
frames_free(struct emu_frame *f)
{
	while (f != NULL) {
		struct emu_frame *n = f->next;

		free(f);
		f = n;
	}
}

/* Hand the queued TX frames to the uplink, dev->lock dropped meanwhile. */
static void
dp_flush_tx(struct emu_dev *dev)
{
	struct emu_dp *dp = dev->dp;
	struct emu_frame *list = dp->tx_head, *f;
	emu_wire_tx_fn fn = dp->uplink;
	void *ctx = dp->uplink_ctx;

	if (list == NULL)
		return;
	dp->tx_head = NULL;
	dp->tx_tail = NULL;
	if (fn == NULL) {
		/* The wire went away since: the frames loop back. */
		for (f = list; f != NULL; f = f->next)
			emu_wire_deliver(dev, f->data, f->len);
		frames_free(list);
		return;
	}
	dp->uplink_calls++;
	pthread_mutex_unlock(&dev->lock);
	for (f = list; f != NULL; f = f->next)
		fn(ctx, f->data, f->len);
	frames_free(list);
	pthread_mutex_lock(&dev->lock);
	dp->uplink_calls--;
	pthread_cond_broadcast(&dp->idle);
}

/* ---- Events ------------------------------------------------------------------------------ */
/*
 * event_mode QP: the firmware QP named by event_qpn_or_msix sends one
 * message to its peer (remote_qpn, set at INIT2RTR), the driver's QP;
 * emu_net.c takes it from there (credits, CQE, event when armed).
 */
static void
dp_post_completion(struct emu_dev *dev, struct emu_virtq *vq)
{
	struct emu_net_obj *qp = (struct emu_net_obj *)vq->event_qp;

	if (vq->event_mode != PRM_VIRTQ_EVENT_MODE_QP || qp == NULL)
		return;
	emu_net_qp_notify(dev, qp);
}

/* ---- Queues ---------------------------------------------------------------------------- */
struct emu_dp_vq *
emu_dp_vq_get(struct emu_dev *dev, struct emu_virtq *vq)
{
	if (vq->dp == NULL) {
		vq->dp = calloc(1, sizeof(*vq->dp));
		if (vq->dp == NULL) {
			emu_log(dev, 3, "virtq %u: out of memory for data path state", vq->obj.id);
			return NULL;
		}
		vq->dp->vq = vq;
	}
	return vq->dp;
}

static void
pend_push(struct emu_dp *dp, struct emu_dp_vq *dq)
{
	if (dq->pending)
		return;
	dq->pending = true;
	dq->next_pending = NULL;
	if (dp->pend_tail != NULL)
		dp->pend_tail->next_pending = dq;
	else
		dp->pend_head = dq;
	dp->pend_tail = dq;
}

static struct emu_dp_vq *
pend_pop(struct emu_dp *dp)
{
	struct emu_dp_vq *dq = dp->pend_head;

	if (dq == NULL)
		return NULL;
	dp->pend_head = dq->next_pending;
	if (dp->pend_head == NULL)
		dp->pend_tail = NULL;
	dq->pending = false;
	dq->next_pending = NULL;
	return dq;
}

static void
pend_remove(struct emu_dp *dp, struct emu_dp_vq *dq)
{
	struct emu_dp_vq **pp = &dp->pend_head, *prev = NULL;

	if (!dq->pending)
		return;
	while (*pp != NULL && *pp != dq) {
		prev = *pp;
		pp = &(*pp)->next_pending;
	}
	if (*pp == NULL)
		return;
	*pp = dq->next_pending;
	if (dp->pend_tail == dq)
		dp->pend_tail = prev;
	dq->pending = false;
	dq->next_pending = NULL;
}

/* One batch on one queue; true when its budget ran out with work left. */
static bool
dp_run(struct emu_dev *dev, struct emu_dp_vq *dq)
{
	struct emu_dp *dp = dev->dp;
	struct emu_virtq *vq = dq->vq;
	struct emu_dp_batch b;
	bool notify;

	if (vq->state != PRM_VIRTQ_STATE_RDY || vq->queue_size == 0)
		return false;
	memset(&b, 0, sizeof(b));
	b.rx = (vq->queue_index & 1) == 0;
	/* Without a frame an RX queue has nothing to do, unless it fetches ahead. */
	if (b.rx && dq->bl_head == NULL &&
	    (vq->q_type == PRM_VIRTQ_TYPE_PACKED || dev->prof->caps.rx_prefetch_chains == 0))
		return false;
	/* Every chain fits in queue_size segments (longer ones are errors). */
	if (dp->seg_cap < vq->queue_size) {
		struct emu_seg *s = realloc(dp->segs, vq->queue_size * sizeof(*s));

		if (s == NULL) {
			emu_log(dev, 3, "virtq %u: out of memory for its chains", vq->obj.id);
			return false;
		}
		dp->segs = s;
		dp->seg_cap = vq->queue_size;
	}
	b.dev = dev;
	b.vq = vq;
	b.dq = dq;
	b.cnt = (struct emu_vq_counters *)vq->counters;
	b.mk = vq->mkey;
	if (vq->dirty_bitmap_dump_enable && vq->dirty_bitmap_mkey != 0)
		b.log_mk = emu_mkey_find_key(dev, vq->dirty_bitmap_mkey);
	b.log_ring = dev->prof->caps.dirty_bitmap_logs_rings != 0;
	/*
	 * The queue's mkey (or its dirty bitmap's while logging) was destroyed
	 * under it (DESTROY_MKEY has no RES_BUSY: emu_mkey.c mkey_detach_users):
	 * its next access is a bad translation, never a DMA through a stale key.
	 */
	if (b.mk == NULL || (vq->dirty_bitmap_dump_enable && vq->dirty_bitmap_mkey != 0 &&
			     b.log_mk == NULL)) {
		emu_log(dev, 3, "virtq %u: %s mkey 0x%x does not exist: a bad translation",
			vq->obj.id, b.mk == NULL ? "its" : "its dirty bitmap's",
			b.mk == NULL ? vq->virtio_q_mkey : vq->dirty_bitmap_mkey);
		emu_dp_fail(&b, EMU_VQ_ERROR_BAD_DESC, EMU_DP_CNT_INVALID_BUFFER);
		return false;
	}
	/* virtio 1.1, 5.1.6: num_buffers is there with VERSION_1 or MRG_RXBUF. */
	b.hdr_len = vq->virtio_version_1_0 || (vq->queue_features & (1u << 2)) ? 12 : 10;
	b.segs = dp->segs;
	b.seg_cap = vq->queue_size;
	if (vq->q_type == PRM_VIRTQ_TYPE_PACKED)
		emu_ring_packed_run(&b, EMU_DP_BATCH);
	else
		emu_ring_split_run(&b, EMU_DP_BATCH);
	/* At most one event per queue per batch (coalescing). */
	if (b.completed > 0 && vq->event_mode == PRM_VIRTQ_EVENT_MODE_QP) {
		notify = vq->q_type == PRM_VIRTQ_TYPE_PACKED ? emu_ring_packed_notify(&b) :
							       emu_ring_split_notify(&b);
		if (notify)
			dp_post_completion(dev, vq);
	}
	return b.more && !b.failed;
}

void
emu_dp_vq_free(struct emu_dev *dev, struct emu_virtq *vq)
{
	struct emu_dp_vq *dq = vq->dp;

	if (dq == NULL)
		return;
	if (dev->dp != NULL)
		pend_remove(dev->dp, dq);
	frames_free(dq->bl_head);
	free(dq);
	vq->dp = NULL;
}

/* ---- Thread ---------------------------------------------------------------------------- */
static void *
dp_thread(void *arg)
{
	struct emu_dev *dev = arg;
	struct emu_dp *dp = dev->dp;

	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct emu_dp_vq *dq;

		/* Idle costs nothing: sleep until a kick, a frame or a state change. */
		while (!dp->stop && dp->pend_head == NULL) {
			pthread_cond_broadcast(&dp->idle);
			pthread_cond_wait(&dp->wake, &dev->lock);
		}
		if (dp->stop)
			break;
		dq = pend_pop(dp);
		dp->busy = true;
		/* A queue with more work goes to the back: queues share the thread. */
		if (dp_run(dev, dq))
			pend_push(dp, dq);
		dp_flush_tx(dev);
		dp->busy = false;
		/*
		 * Bounded batches, and the lock is released between two of them,
		 * so that commands waiting on it (SUSPEND, QUERY) get their turn.
		 */
		if (dp->pend_head != NULL) {
			pthread_mutex_unlock(&dev->lock);
			sched_yield();
			pthread_mutex_lock(&dev->lock);
		}
	}
	pthread_cond_broadcast(&dp->idle);
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

/* Start the thread on first use; dev->lock held. */
static void
dp_start(struct emu_dev *dev)
{
	struct emu_dp *dp = dev->dp;
	sigset_t all, old;
	int ret;

	if (dp->started || dp->stop)
		return;
	/* The thread takes no signals: the application's threads handle them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&dp->thread, NULL, dp_thread, dev);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0) {
		emu_log(dev, 3, "cannot start the data path thread: %s", strerror(ret));
		return;
	}
	pthread_setname_np(dp->thread, "emu-dp");
	dp->started = true;
}

void
emu_dp_vq_kick(struct emu_dev *dev, struct emu_virtq *vq)
{
	struct emu_dp *dp = dev->dp;
	struct emu_dp_vq *dq;

	if (dp == NULL || vq->state != PRM_VIRTQ_STATE_RDY)
		return;
	dq = emu_dp_vq_get(dev, vq);
	if (dq == NULL)
		return;
	pend_push(dp, dq);
	dp_start(dev);
	pthread_cond_signal(&dp->wake);
}

int
emu_dp_init(struct emu_dev *dev)
{
	struct emu_dp *dp = calloc(1, sizeof(*dp));
	pthread_condattr_t attr;

	if (dp == NULL)
		return -ENOMEM;
	/* The TX gather buffer holds the largest header and frame. */
	dp->frame_buf = malloc(12 + EMU_DP_MAX_FRAME);
	if (dp->frame_buf == NULL) {
		free(dp);
		return -ENOMEM;
	}
	pthread_condattr_init(&attr);
	/* emu_dev_dp_wait_idle's deadline is on the monotonic clock. */
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&dp->wake, NULL);
	pthread_cond_init(&dp->idle, &attr);
	pthread_condattr_destroy(&attr);
	dev->dp = dp;
	return 0;
}

void
emu_dp_stop(struct emu_dev *dev)
{
	struct emu_dp *dp = dev->dp;
	bool started;

	if (dp == NULL)
		return;
	pthread_mutex_lock(&dev->lock);
	dp->stop = true;
	started = dp->started;
	pthread_cond_signal(&dp->wake);
	pthread_mutex_unlock(&dev->lock);
	if (started)
		pthread_join(dp->thread, NULL);
	pthread_mutex_lock(&dev->lock);
	dp->started = false;
	pthread_mutex_unlock(&dev->lock);
}

void
emu_dp_fini(struct emu_dev *dev)
{
	struct emu_dp *dp = dev->dp;

	if (dp == NULL)
		return;
	frames_free(dp->tx_head);
	emu_wire_cache_free(dev);
	free(dp->segs);
	free(dp->frame_buf);
	pthread_cond_destroy(&dp->wake);
	pthread_cond_destroy(&dp->idle);
	free(dp);
	dev->dp = NULL;
}

/* ---- Public hooks ------------------------------------------------------------------------ */
int
emu_dev_set_uplink(struct emu_dev *dev, emu_wire_tx_fn fn, void *ctx)
{
	struct emu_dp *dp = dev->dp;

	pthread_mutex_lock(&dev->lock);
	/* The caller may free the old ctx once we return: wait for its calls. */
	while (dp->uplink_calls > 0)
		pthread_cond_wait(&dp->idle, &dev->lock);
	dp->uplink = fn;
	dp->uplink_ctx = fn != NULL ? ctx : NULL;
	pthread_mutex_unlock(&dev->lock);
	emu_log(dev, 6, "uplink: %s", fn != NULL ? "external wire" : "loopback");
	return 0;
}

int
emu_dev_wire_rx(struct emu_dev *dev, const void *frame, size_t len)
{
	int ret;

	pthread_mutex_lock(&dev->lock);
	if (frame == NULL || len == 0 || len > EMU_DP_MAX_FRAME) {
		dev->dp->drops++;
		ret = -EINVAL;
	} else {
		ret = emu_wire_deliver(dev, frame, (uint32_t)len);
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

void
emu_dev_wire_stats(struct emu_dev *dev, uint64_t *tx_frames, uint64_t *rx_frames,
		   uint64_t *drops)
{
	struct emu_dp *dp = dev->dp;

	pthread_mutex_lock(&dev->lock);
	if (tx_frames != NULL)
		*tx_frames = dp->tx_frames;
	if (rx_frames != NULL)
		*rx_frames = dp->rx_frames;
	if (drops != NULL)
		*drops = dp->drops;
	pthread_mutex_unlock(&dev->lock);
}

int
emu_dev_dp_wait_idle(struct emu_dev *dev, unsigned int timeout_ms)
{
	struct emu_dp *dp = dev->dp;
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&dev->lock);
	while (dp->started && (dp->pend_head != NULL || dp->busy)) {
		if (ret == ETIMEDOUT)
			break;
		ret = pthread_cond_timedwait(&dp->idle, &dev->lock, &ts);
	}
	ret = dp->started && (dp->pend_head != NULL || dp->busy) ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&dev->lock);
	return ret;
}
