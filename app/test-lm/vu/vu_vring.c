/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver side of a virtio ring: see vu_vring.h. Offsets are the
 * virtio 1.1 layouts: split descriptor {addr 0, len 8, flags 12, next 14},
 * avail {flags 0, idx 2, ring 4}, used {flags 0, idx 2, ring 4: {id, len}};
 * packed descriptor {addr 0, len 8, id 12, flags 14}, driver and device
 * event suppression {off_wrap 0, flags 2}.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vu_vring.h"

#define SPLIT_AVAIL_F_NO_INTERRUPT 1
#define PACKED_EVENT_F_ENABLE 0
#define PACKED_EVENT_F_DISABLE 1

static inline void
store16(void *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELEASE);
}

static inline uint16_t
load16(const void *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_ACQUIRE));
}

static inline uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

int
vu_vring_init(struct vu_vring *r, bool packed, uint16_t size, void *desc, void *avail,
	      void *used)
{
	memset(r, 0, sizeof(*r));
	if (size == 0 || size > 32768 || (!packed && (size & (size - 1)) != 0))
		return -EINVAL;
	r->chain = calloc(size, sizeof(*r->chain));
	if (r->chain == NULL)
		return -ENOMEM;
	r->size = size;
	r->packed = packed;
	r->desc = desc;
	r->avail = avail;
	r->used = used;
	vu_vring_reset(r);
	return 0;
}

void
vu_vring_fini(struct vu_vring *r)
{
	free(r->chain);
	memset(r, 0, sizeof(*r));
}

void
vu_vring_reset(struct vu_vring *r)
{
	r->avail_idx = 0;
	r->last_used = 0;
	r->avail_wrap = true;
	r->used_wrap = true;
	memset(r->chain, 0, r->size * sizeof(*r->chain));
}

void
vu_vring_set_interrupts(struct vu_vring *r, bool on)
{
	if (r->packed)
		store16(r->avail + 2, on ? PACKED_EVENT_F_ENABLE : PACKED_EVENT_F_DISABLE);
	else
		store16(r->avail, on ? 0 : SPLIT_AVAIL_F_NO_INTERRUPT);
}

/* Everything of a descriptor but its flags. */
static void
desc_fields(uint8_t *d, uint64_t addr, uint32_t len, uint16_t w12)
{
	uint64_t a = htole64(addr);
	uint32_t l = htole32(len);
	uint16_t x = htole16(w12);

	memcpy(d, &a, 8);
	memcpy(d + 8, &l, 4);
	memcpy(d + 12, &x, 2);
}

void
vu_vring_desc_put(void *at, bool packed, uint64_t addr, uint32_t len, uint16_t flags,
		  uint16_t next_or_id)
{
	uint8_t *d = at;

	if (packed) {
		desc_fields(d, addr, len, next_or_id);
		store16(d + 14, flags);
	} else {
		desc_fields(d, addr, len, flags);
		store16(d + 14, next_or_id);
	}
}

void
vu_vring_table(void *table, bool packed, const struct vu_vbuf *b, unsigned int n)
{
	uint8_t *t = table;
	unsigned int i;

	for (i = 0; i < n; i++) {
		bool more = i + 1 < n;

		if (packed)
			vu_vring_desc_put(t + VU_VRING_DESC_SIZE * i, true, b[i].addr, b[i].len,
					  b[i].flags, 0);
		else
			vu_vring_desc_put(t + VU_VRING_DESC_SIZE * i, false, b[i].addr, b[i].len,
					  b[i].flags | (more ? VU_VRING_F_NEXT : 0),
					  more ? (uint16_t)(i + 1) : 0);
	}
}

static void
post_split(struct vu_vring *r, uint16_t id, const struct vu_vbuf *b, unsigned int n)
{
	uint16_t mask = r->size - 1;
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint16_t slot = (uint16_t)((id + i) & mask);
		bool more = i + 1 < n;

		vu_vring_desc_put(r->desc + VU_VRING_DESC_SIZE * slot, false, b[i].addr, b[i].len,
				  b[i].flags | (more ? VU_VRING_F_NEXT : 0),
				  more ? (uint16_t)((slot + 1) & mask) : 0);
	}
	store16(r->avail + 4 + 2 * (r->avail_idx & mask), id);
	r->avail_idx++;
}

static void
post_packed(struct vu_vring *r, uint16_t id, const struct vu_vbuf *b, unsigned int n)
{
	uint16_t slot = r->avail_idx, head = r->avail_idx, head_flags = 0;
	bool wrap = r->avail_wrap;
	unsigned int i;

	for (i = 0; i < n; i++) {
		/* Available: AVAIL bit == the driver's wrap counter, USED bit != it (2.7.1). */
		uint16_t fl = (wrap ? VU_VRING_F_AVAIL : VU_VRING_F_USED) |
			      (i + 1 < n ? VU_VRING_F_NEXT : 0) | b[i].flags;
		uint8_t *d = r->desc + VU_VRING_DESC_SIZE * slot;

		if (i == 0) {
			head_flags = fl;
			desc_fields(d, b[0].addr, b[0].len, id);
		} else {
			vu_vring_desc_put(d, true, b[i].addr, b[i].len, fl, id);
		}
		if (++slot == r->size) {
			slot = 0;
			wrap = !wrap;
		}
	}
	if (id < r->size)
		r->chain[id] = (uint16_t)n;
	r->avail_idx = slot;
	r->avail_wrap = wrap;
	/* The head's flags make the whole chain available: last, release (2.7.13). */
	store16(r->desc + VU_VRING_DESC_SIZE * head + 14, head_flags);
}

void
vu_vring_post(struct vu_vring *r, uint16_t id, const struct vu_vbuf *b, unsigned int n)
{
	if (n == 0)
		return;
	if (r->packed)
		post_packed(r, id, b, n);
	else
		post_split(r, id, b, n);
}

void
vu_vring_publish(struct vu_vring *r)
{
	if (!r->packed)
		store16(r->avail + 2, r->avail_idx);
}

static int
reap_split(struct vu_vring *r, struct vu_vused *u)
{
	uint16_t used = load16(r->used + 2);
	const uint8_t *e;

	/* More than a ring's worth cannot be used: a device bug. */
	if ((uint16_t)(used - r->last_used) > r->size)
		return -EIO;
	if (used == r->last_used)
		return 0;
	u->slot = r->last_used & (r->size - 1);
	e = r->used + 4 + 8 * u->slot;
	u->id = get32(e);
	u->len = get32(e + 4);
	u->written = true;
	r->last_used++;
	return 1;
}

static int
reap_packed(struct vu_vring *r, struct vu_vused *u)
{
	const uint8_t *d = r->desc + VU_VRING_DESC_SIZE * r->last_used;
	uint16_t fl = load16(d + 14), id, skip;
	bool a = (fl & VU_VRING_F_AVAIL) != 0, used = (fl & VU_VRING_F_USED) != 0;

	/* Used: AVAIL == USED == the used wrap counter (2.7.1). */
	if (a != used || used != r->used_wrap)
		return 0;
	id = load16(d + 12);
	u->id = id;
	u->len = get32(d + 8);
	u->slot = r->last_used;
	/* len is reserved for used descriptors without WRITE (2.7.4). */
	u->written = (fl & VU_VRING_F_WRITE) != 0;
	/* The device skips the rest of the chain (2.7.6): the driver must know its length. */
	skip = id < r->size && r->chain[id] != 0 ? r->chain[id] : 1;
	r->last_used = (uint16_t)(r->last_used + skip);
	if (r->last_used >= r->size) {
		r->last_used = (uint16_t)(r->last_used - r->size);
		r->used_wrap = !r->used_wrap;
	}
	return 1;
}

int
vu_vring_reap(struct vu_vring *r, struct vu_vused *u)
{
	return r->packed ? reap_packed(r, u) : reap_split(r, u);
}
