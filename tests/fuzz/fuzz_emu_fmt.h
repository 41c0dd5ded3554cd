/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Input format of fuzz_emu_cmd, shared with its seed generator. An input
 * is a sequence of records, each starting with a 6-byte header (little
 * endian); a truncated record ends the input.
 *
 *   type % 4 == 0 or 3  CMD: npatch % 8 patches of 3 bytes (bit offset u16,
 *                       slot u8), then inlen bytes of mailbox (fewer if the
 *                       input ends), executed by emu_cmd() with an output
 *                       buffer of exactly outlen bytes. A patch writes the
 *                       id of the slot-th object created by this input
 *                       (slot & 0x0f) in the dword holding that bit offset:
 *                       all of it when slot & 0x80, its low 24 bits
 *                       otherwise (PRM numbering), shifted left by 8
 *                       (an mkey from its index) when slot & 0x40, so that
 *                       a mutated input keeps naming live objects.
 *   type % 4 == 1       UMEM_REG: offset u32, size u32, access u32 in the
 *                       target's 1 MiB arena (clipped to it).
 *   type % 4 == 2       UMEM_DEREG: slot u8 (an id as above).
 *
 * Successful creates (and umem registrations) record their id in the next
 * slot: general objects their obj_id, classic objects (mkeys included:
 * their index) the number at 0x48.
 */
#ifndef FUZZ_EMU_FMT_H
#define FUZZ_EMU_FMT_H

#include <stdint.h>

#define FZ_REC_CMD 0
#define FZ_REC_UMEM_REG 1
#define FZ_REC_UMEM_DEREG 2

#define FZ_HDR_LEN 6
#define FZ_PATCH_LEN 3
#define FZ_MAX_PATCH 8
#define FZ_SLOTS 16
#define FZ_SLOT_32 0x80
#define FZ_SLOT_SHL8 0x40
/* Largest output buffer a record may ask for (QUERY_HCA_CAP needs 0x1010). */
#define FZ_MAX_OUTLEN 8192
#define FZ_ARENA_SIZE (1u << 20)

#endif /* FUZZ_EMU_FMT_H */
