/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PRM bit-field accessors.
 *
 * The PRM describes every command and object as a big-endian bit string:
 * bit 0 is the most significant bit of byte 0, a field at bit offset `off`
 * of width `w` lives in dword off/32 and ends at bit 31 - (off % 32) - w + 1
 * of that dword. Layouts are declared as tables of (name, offset, width)
 * in prm_layouts.h with PRM_FIELD(); code reads and writes fields only
 * through PRM_SET()/PRM_GET() so that no shift is computed by hand.
 */
#ifndef MLX5_LM_PRM_H
#define MLX5_LM_PRM_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>

/*
 * PRM_FIELD(layout, field, bit_offset, bit_width) declares one field.
 * PRM_LAYOUT(layout, size_in_bits) declares the size of a layout.
 * Both expand to enum constants so that a misspelled field name is a
 * compile error, not a silent write at offset 0.
 */
#define PRM_FIELD(s, f, off, w) \
	enum { prm_##s##__##f##__off = (off), prm_##s##__##f##__w = (w) }; \
	_Static_assert((w) >= 1 && (w) <= 64, #s "." #f ": width out of range"); \
	_Static_assert((w) < 32 || (w) == 32 || (w) == 64 || ((off) % 32) + (w) <= 32 || \
		       ((off) % 32) == 0, #s "." #f ": wide field must be dword aligned")
/* PRM_SUB(layout, name, bit_offset) names a nested layout or a list. */
#define PRM_SUB(s, f, off) \
	enum { prm_##s##__##f##__off = (off) }; \
	_Static_assert((off) % 32 == 0, #s "." #f ": nested layout must be dword aligned")
#define PRM_LAYOUT(s, bits) \
	enum { prm_##s##__size = (bits) / 8 }; \
	_Static_assert((bits) % 32 == 0, #s ": size must be whole dwords")

#define PRM_OFF(s, f) ((uint32_t)prm_##s##__##f##__off)
#define PRM_WIDTH(s, f) ((uint32_t)prm_##s##__##f##__w)
/* Size of a layout in bytes. */
#define PRM_SIZE(s) ((size_t)prm_##s##__size)
/* Byte address of a field (for nested layouts and entry arrays). */
#define PRM_ADDR(s, buf, f) ((void *)((uint8_t *)(buf) + PRM_OFF(s, f) / 8))
#define PRM_CADDR(s, buf, f) ((const void *)((const uint8_t *)(buf) + PRM_OFF(s, f) / 8))

#define PRM_SET(s, buf, f, v) prm_set_bits((buf), PRM_OFF(s, f), PRM_WIDTH(s, f), (uint64_t)(v))
#define PRM_GET(s, buf, f) prm_get_bits((buf), PRM_OFF(s, f), PRM_WIDTH(s, f))

static inline uint32_t
prm_load32(const void *buf, uint32_t dword)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)buf + 4 * dword, 4);
	return ntohl(v);
}

static inline void
prm_store32(void *buf, uint32_t dword, uint32_t v)
{
	v = htonl(v);
	memcpy((uint8_t *)buf + 4 * dword, &v, 4);
}

/* Write `w` bits of `v` at bit offset `off` (PRM numbering). */
static inline void
prm_set_bits(void *buf, uint32_t off, uint32_t w, uint64_t v)
{
	if (w == 64) {
		prm_store32(buf, off / 32, (uint32_t)(v >> 32));
		prm_store32(buf, off / 32 + 1, (uint32_t)v);
		return;
	}
	if (w == 32 && off % 32 == 0) {
		prm_store32(buf, off / 32, (uint32_t)v);
		return;
	}
	{
		uint32_t shift = 32 - (off % 32) - w;
		uint32_t mask = (w == 32 ? 0xffffffffu : ((1u << w) - 1)) << shift;
		uint32_t d = prm_load32(buf, off / 32);

		d = (d & ~mask) | (((uint32_t)v << shift) & mask);
		prm_store32(buf, off / 32, d);
	}
}

static inline uint64_t
prm_get_bits(const void *buf, uint32_t off, uint32_t w)
{
	if (w == 64)
		return ((uint64_t)prm_load32(buf, off / 32) << 32) | prm_load32(buf, off / 32 + 1);
	if (w == 32 && off % 32 == 0)
		return prm_load32(buf, off / 32);
	{
		uint32_t shift = 32 - (off % 32) - w;

		return (prm_load32(buf, off / 32) >> shift) & ((1u << w) - 1);
	}
}

#include "prm_layouts.h"

#endif /* MLX5_LM_PRM_H */
