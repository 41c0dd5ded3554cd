/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver side of one virtio ring (virtio 1.1: 2.6 split, 2.7 packed) in
 * memory the caller provides and maps: descriptors written, buffers made
 * available, used buffers reaped, with the ring's indices and wrap
 * counters. It is the one guest ring writer of the project: vu_guest's
 * driver posts its fixed buffer slots through it, the emulator's unit tests
 * their chains and indirect tables. No allocation of buffers, no
 * notification: kicks and interrupts are the caller's.
 *
 * Ring memory is little endian (virtio 1.x); libc only.
 */
#ifndef VU_VRING_H
#define VU_VRING_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Descriptor flags (2.6.5, 2.7.1). */
#define VU_VRING_F_NEXT 1
#define VU_VRING_F_WRITE 2
#define VU_VRING_F_INDIRECT 4
#define VU_VRING_F_AVAIL (1 << 7)
#define VU_VRING_F_USED (1 << 15)
/* Size in bytes of a descriptor, of either format. */
#define VU_VRING_DESC_SIZE 16

/* One buffer of a chain: guest address, length, VU_VRING_F_WRITE or VU_VRING_F_INDIRECT. */
struct vu_vbuf {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
};

struct vu_vring {
	uint16_t size;          /* split: a power of two */
	bool packed;
	/* Split: descriptor table, avail ring, used ring. Packed: ring, driver / device area. */
	uint8_t *desc, *avail, *used;
	uint16_t avail_idx;     /* split: the next avail index (free running); packed: slot */
	bool avail_wrap;        /* packed: the driver's wrap counter */
	uint16_t last_used;     /* split: used entries reaped (free running); packed: slot */
	bool used_wrap;         /* packed: the wrap counter of the next used descriptor */
	uint16_t *chain;        /* packed: the slots of each buffer id's chain */
};

/* A used buffer. */
struct vu_vused {
	uint32_t id;            /* split: its head descriptor; packed: its buffer id */
	uint32_t len;           /* bytes the device wrote */
	uint16_t slot;          /* where it was: used ring entry (split), ring slot (packed) */
	bool written;           /* len is meaningful: split always, packed only with WRITE */
};

/*
 * A fresh ring of size entries over desc/avail/used (areas of the sizes
 * virtio gives for the format; their content is the caller's). 0 or -errno.
 */
int vu_vring_init(struct vu_vring *r, bool packed, uint16_t size, void *desc, void *avail,
		  void *used);
void vu_vring_fini(struct vu_vring *r);
/* Indices and wrap counters of a fresh ring (both wrap counters 1, 2.7.1). */
void vu_vring_reset(struct vu_vring *r);
/* Ask the device for interrupts (used buffer notifications) or not (2.6.7, 2.7.10). */
void vu_vring_set_interrupts(struct vu_vring *r, bool on);

/*
 * One descriptor at at (a ring slot or an indirect table entry): split
 * {addr, len, flags, next}, packed {addr, len, id, flags}, where next_or_id
 * is next or id. The flags are stored last, in one store (release): on a
 * packed ring they are what makes the descriptor available.
 */
void vu_vring_desc_put(void *at, bool packed, uint64_t addr, uint32_t len, uint16_t flags,
		       uint16_t next_or_id);
/* An indirect table of n descriptors at table (split: chained by next; packed: in order). */
void vu_vring_table(void *table, bool packed, const struct vu_vbuf *b, unsigned int n);
/*
 * Make buffer id, the chain of the n buffers b, available. Split: its
 * descriptors are id, id + 1, ... (mod size; the id is the head) and the
 * device sees it at vu_vring_publish. Packed: n slots from the next one,
 * the head's flags written last, visible at once.
 */
void vu_vring_post(struct vu_vring *r, uint16_t id, const struct vu_vbuf *b, unsigned int n);
/* Split: publish what was posted (the avail index, release). Packed: nothing to do. */
void vu_vring_publish(struct vu_vring *r);
/*
 * The next used buffer: 1 (in u), 0 when there is none, -EIO when the
 * device's used index is more than a ring ahead of what was reaped (split).
 */
int vu_vring_reap(struct vu_vring *r, struct vu_vused *u);

#ifdef __cplusplus
}
#endif

#endif /* VU_VRING_H */
