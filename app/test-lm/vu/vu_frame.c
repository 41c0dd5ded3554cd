/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test frames of the guest driver, and the record of which sequence numbers
 * came back, exact for any count: a chunk of 2^16 sequence numbers is a
 * bitmap while incomplete and a single flag once every one has been seen,
 * so memory follows the reordering window, not the run length.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vu_frame.h"
#include "vu_guest.h"

#define VU_SEEN_SHIFT 16
#define VU_SEEN_WORDS ((1u << VU_SEEN_SHIFT) / 64)

struct vu_seen_chunk {
	uint64_t *bits;
	uint32_t count;
	bool full;
};

static const uint8_t vu_dst_mac[6] = { 0x02, 0x76, 0x75, 0x00, 0x00, 0x02 };
static const uint8_t vu_src_mac[6] = { 0x02, 0x76, 0x75, 0x00, 0x00, 0x01 };

static inline uint8_t
vu_pattern(uint64_t seq, unsigned int i)
{
	return (uint8_t)((seq * 0x9e3779b97f4a7c15ULL) >> 56) + (uint8_t)i;
}

void
vu_frame_build(uint8_t *f, uint16_t len, uint32_t qp, uint64_t seq)
{
	uint32_t magic = VU_MAGIC;
	unsigned int i;

	memcpy(f, vu_dst_mac, 6);
	memcpy(f + 6, vu_src_mac, 6);
	f[12] = VU_ETHERTYPE >> 8;
	f[13] = VU_ETHERTYPE & 0xff;
	memcpy(f + 14, &magic, 4);
	memcpy(f + 18, &qp, 4);
	memcpy(f + 22, &seq, 8);
	for (i = VU_FRAME_MIN; i < len; i++)
		f[i] = vu_pattern(seq, i);
}

int
vu_frame_parse(const uint8_t *f, uint32_t len, uint32_t *qp, uint64_t *seq)
{
	uint32_t magic;
	unsigned int i;

	if (len < VU_FRAME_MIN || len > VU_FRAME_MAX)
		return -EINVAL;
	memcpy(&magic, f + 14, 4);
	memcpy(qp, f + 18, 4);
	memcpy(seq, f + 22, 8);
	if (memcmp(f, vu_dst_mac, 6) != 0 || memcmp(f + 6, vu_src_mac, 6) != 0 ||
	    f[12] != (VU_ETHERTYPE >> 8) || f[13] != (VU_ETHERTYPE & 0xff) ||
	    magic != VU_MAGIC)
		return -EINVAL;
	for (i = VU_FRAME_MIN; i < len; i++)
		if (f[i] != vu_pattern(*seq, i))
			return -EINVAL;
	return 0;
}

int
vu_seen_record(struct vu_seen *s, uint64_t seq)
{
	uint64_t c = seq >> VU_SEEN_SHIFT, bit = seq & ((1u << VU_SEEN_SHIFT) - 1);
	struct vu_seen_chunk *ch;

	if (c >= s->nchunks) {
		uint64_t n = s->nchunks ? s->nchunks : 16;
		struct vu_seen_chunk *nc;

		while (n <= c)
			n *= 2;
		nc = realloc(s->chunks, n * sizeof(*nc));
		if (nc == NULL)
			return -ENOMEM;
		memset(nc + s->nchunks, 0, (n - s->nchunks) * sizeof(*nc));
		s->chunks = nc;
		s->nchunks = n;
	}
	ch = &s->chunks[c];
	if (ch->full)
		return 0;
	if (ch->bits == NULL) {
		ch->bits = calloc(VU_SEEN_WORDS, sizeof(uint64_t));
		if (ch->bits == NULL)
			return -ENOMEM;
	}
	if (ch->bits[bit / 64] & (1ULL << (bit % 64)))
		return 0;
	ch->bits[bit / 64] |= 1ULL << (bit % 64);
	if (++ch->count == (1u << VU_SEEN_SHIFT)) {
		free(ch->bits);
		ch->bits = NULL;
		ch->full = true;
	}
	return 1;
}

void
vu_seen_free(struct vu_seen *s)
{
	uint64_t c;

	for (c = 0; c < s->nchunks; c++)
		free(s->chunks[c].bits);
	free(s->chunks);
	s->chunks = NULL;
	s->nchunks = 0;
}
