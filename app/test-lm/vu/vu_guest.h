/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest side of the built-in vhost-user front end: guest memory (one sparse
 * memfd, QEMU-like region layout), the dirty-log area, and a small virtio-net
 * driver (split or packed rings) that generates and checks traffic.
 *
 * No DPDK here: libc and threads only.
 */
#ifndef VU_GUEST_H
#define VU_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VU_PAGE_SHIFT 12
#define VU_PAGE_SIZE (1ULL << VU_PAGE_SHIFT)
#define VU_GIB (1ULL << 30)
/* Regions a memory object may describe (the vhost-user limit is 8; more is hostile). */
#define VU_MEM_MAX_REGIONS 32
/* virtio-net header with VIRTIO_F_VERSION_1 or MRG_RXBUF (virtio 1.1, 5.1.6). */
#define VU_NET_HDR_LEN 12
/* A legacy driver's without MRG_RXBUF: no num_buffers. */
#define VU_NET_HDR_LEN_LEGACY 10
/* Largest Ethernet frame (no FCS) carried by the driver, and the RX buffer size. */
#define VU_FRAME_MAX 1518
#define VU_RX_BUF_LEN (VU_NET_HDR_LEN + VU_FRAME_MAX)
/* Test frames: ethertype and payload magic. */
#define VU_ETHERTYPE 0x88b5
#define VU_MAGIC 0x56554c4du
/* Smallest frame carrying our header: Ethernet 14 + magic 4 + qp 4 + seq 8. */
#define VU_FRAME_MIN 30

/* One guest memory region: guest physical range and its offset in the memfd. */
struct vu_mem_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t offset;
};

/*
 * Guest memory. Fields are read-only for users. The whole memfd is mapped
 * once; a region is usable (translatable, allocatable) only if it lies inside
 * the memfd. Unusable regions are still sent in SET_MEM_TABLE (hostile tests).
 */
struct vu_mem {
	int fd;
	uint8_t *base;
	uint64_t size;
	unsigned int nregions;
	struct vu_mem_region regions[VU_MEM_MAX_REGIONS];
	pthread_mutex_t lock;
	/*
	 * Allocation: every allocatable region is a window [lo, hi) taken from
	 * both ends; the places (a region's start or end) are used in turn.
	 */
	uint64_t alloc_lo[VU_MEM_MAX_REGIONS];
	uint64_t alloc_hi[VU_MEM_MAX_REGIONS];
	unsigned int alloc_region[VU_MEM_MAX_REGIONS];	/* allocatable regions */
	unsigned int alloc_nregions;
	unsigned int alloc_turn;	/* the next place vu_mem_alloc tries */
};

/* Memory of memfd_size bytes described by an arbitrary region list. */
int vu_mem_create(struct vu_mem **out, uint64_t memfd_size,
		  const struct vu_mem_region *regions, unsigned int nregions);
/* QEMU's layout for gib GiB: 3 GiB at GPA 0, the rest at GPA 4 GiB. */
int vu_mem_create_qemu(struct vu_mem **out, uint64_t gib);
void vu_mem_destroy(struct vu_mem *m);
/* Host pointer of [gpa, gpa + len) if it lies in one usable region, else NULL. */
void *vu_mem_gpa_to_hva(const struct vu_mem *m, uint64_t gpa, uint64_t len);
int vu_mem_hva_to_gpa(const struct vu_mem *m, const void *hva, uint64_t *gpa);
/* The address this process "sees" for a region (vhost-user userspace_addr). */
uint64_t vu_mem_region_uaddr(const struct vu_mem *m, unsigned int i);
/* End of guest physical space: max(gpa + size) over the regions. */
uint64_t vu_mem_gpa_end(const struct vu_mem *m);
/*
 * Allocate size bytes (align: power of two, >= page), in whole pages. The
 * places are the start and the end of every allocatable region, in the
 * order: start of region 0, end of region 1, start of region 1, end of
 * region 2, ..., end of region 0; vu_mem_alloc() takes them in turn, so
 * that rings and buffers lie low and high in every region (a device that
 * logs or maps only low memory is seen). A full place passes to the next.
 */
int vu_mem_alloc(struct vu_mem *m, uint64_t size, uint64_t align, uint64_t *gpa);
/* The same at a given place (taken modulo vu_mem_alloc_places()). */
int vu_mem_alloc_at(struct vu_mem *m, unsigned int place, uint64_t size, uint64_t align,
		    uint64_t *gpa);
unsigned int vu_mem_alloc_places(const struct vu_mem *m);
/* The place vu_mem_alloc() would take next, passed over: a user's own turn. */
unsigned int vu_mem_next_place(struct vu_mem *m);

/*
 * A snapshot of the guest memory's data pages (the memfd's data extents,
 * SEEK_DATA / SEEK_HOLE: the pages ever written), and what changed since.
 * The check a migration relies on: the destination gets the memory as it
 * was plus the pages marked dirty, so a page that changed and is neither
 * in the log nor written by the guest's CPU (tracked by KVM, not by the
 * device) would reach the destination stale.
 */
struct vu_snap;

int vu_mem_snapshot(const struct vu_mem *m, struct vu_snap **out);
void vu_snap_free(struct vu_snap *s);
uint64_t vu_snap_bytes(const struct vu_snap *s);

struct vu_snap_diff {
	/* In: whether the page of gpa may have changed (logged, or CPU-written). */
	bool (*excused)(void *arg, uint64_t gpa);
	void *arg;
	/* Out: data pages now, of them excused, compared, changed (the first). */
	uint64_t pages, excused_pages, compared, changed, first_changed;
};

/* Compare every data page of the memory now with the snapshot (a hole: zeroes). */
int vu_mem_snapshot_diff(const struct vu_mem *m, const struct vu_snap *s,
			 struct vu_snap_diff *d);

/*
 * Dirty log area (vhost-user SET_LOG_BASE): one bit per 4 KiB guest page,
 * page n is bit (n % 8) of byte n / 8. Its own memfd, shared with back ends.
 */
struct vu_log {
	int fd;
	uint8_t *bitmap;
	uint64_t size;	/* bytes (a multiple of the page size) */
};

int vu_log_create(struct vu_log **out, uint64_t gpa_end);
void vu_log_destroy(struct vu_log *log);
void vu_log_reset(struct vu_log *log);
bool vu_log_test(const struct vu_log *log, uint64_t gpa);
uint64_t vu_log_count(const struct vu_log *log);

/* ---- virtio-net guest driver ---- */

struct vu_guest_cfg {
	uint16_t queue_pairs;	/* >= 1 */
	uint16_t ring_size;	/* split: power of two; packed: any <= 32768 */
	bool packed;
	uint16_t frame_len;	/* VU_FRAME_MIN..VU_FRAME_MAX, 0 = 64 */
	bool no_interrupt;	/* ask the device not to signal callfd */
};

/* Addresses and initial state of one ring, for SET_VRING_* messages. */
struct vu_ring_info {
	uint32_t num;
	/* Split: desc / avail / used. Packed: desc / driver area / device area. */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	void *desc, *avail, *used;
	/* GPA the device writes (used ring; packed: the descriptor ring). */
	uint64_t log_gpa;
	/* SET_VRING_BASE value of a fresh ring (packed: avail wrap counter 1). */
	uint32_t fresh_base;
};

struct vu_guest_stats {
	uint64_t tx_posted;
	uint64_t tx_completed;
	uint64_t rx_posted;
	uint64_t rx_received;
	uint64_t rx_bad;	/* malformed frame or impossible seq */
	uint64_t duplicates;
	uint64_t rx_unique;
	uint64_t dev_errors;	/* used entry for a buffer we do not own */
	uint64_t kicks;
};

struct vu_guest;

int vu_guest_create(struct vu_guest **out, struct vu_mem *m,
		    const struct vu_guest_cfg *cfg);
void vu_guest_destroy(struct vu_guest *g);
/* Zero rings and driver state (a fresh device, not a migration). */
void vu_guest_reset(struct vu_guest *g);
unsigned int vu_guest_nrings(const struct vu_guest *g);
const struct vu_guest_cfg *vu_guest_cfg(const struct vu_guest *g);
struct vu_mem *vu_guest_mem(const struct vu_guest *g);
int vu_guest_ring_info(const struct vu_guest *g, unsigned int ring,
		       struct vu_ring_info *ri);
int vu_guest_kickfd(const struct vu_guest *g, unsigned int ring);
int vu_guest_callfd(const struct vu_guest *g, unsigned int ring);
/* New kick/call eventfds for every ring (e.g. for a migration destination). */
int vu_guest_new_eventfds(struct vu_guest *g);
/* Features acknowledged to the device (EVENT_IDX, MRG_RXBUF matter). */
void vu_guest_set_features(struct vu_guest *g, uint64_t features);
uint64_t vu_guest_features(const struct vu_guest *g);
/* Post up to n frames on queue pair qp; returns the number posted. */
int vu_guest_tx(struct vu_guest *g, unsigned int qp, unsigned int n);
/* Reap used entries of every ring, refill RX; returns entries reaped. */
int vu_guest_poll(struct vu_guest *g);
/* Refill RX rings (and kick) without reaping. */
int vu_guest_rx_refill(struct vu_guest *g);
/* Wait up to timeout_ms for a callfd; returns fds signalled, 0, or -errno. */
int vu_guest_wait(struct vu_guest *g, int timeout_ms);
/* Counters of queue pair qp, or of all pairs when qp < 0. */
void vu_guest_stats(struct vu_guest *g, int qp, struct vu_guest_stats *s);
/* Frames sent on qp (the next sequence number), or all when qp < 0. */
uint64_t vu_guest_tx_sent(struct vu_guest *g, int qp);
/* Sent but never received (exact once nothing is in flight). */
uint64_t vu_guest_lost(struct vu_guest *g, int qp);
/* TX descriptors posted and not yet completed on qp (all when qp < 0). */
uint64_t vu_guest_tx_inflight(struct vu_guest *g, int qp);

/*
 * Dirty-log check. vu_guest_dirty_mark() reaps what is already used and
 * starts recording every guest page the device must have written since
 * (used ring entries and index, packed descriptors, filled RX buffers).
 * Call it once the back end logs (after SET_FEATURES with LOG_ALL replied).
 * vu_guest_dirty_check() returns the number of recorded pages (>= 0) and
 * stores how many are not marked in log, and the first such GPA.
 */
void vu_guest_dirty_mark(struct vu_guest *g);
int64_t vu_guest_dirty_check(struct vu_guest *g, const struct vu_log *log,
			     uint64_t *missing, uint64_t *first_missing_gpa);
/*
 * Whether this driver's CPU wrote the page of gpa since the mark (ring
 * descriptors, avail ring and event fields, TX buffers): such a page may
 * differ from a snapshot taken at the mark without being in the log.
 */
bool vu_guest_cpu_dirty(struct vu_guest *g, uint64_t gpa);

#ifdef __cplusplus
}
#endif

#endif /* VU_GUEST_H */
