/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the emulated firmware's command decoder. Any bytes in,
 * a status out: emu_cmd() must never crash, read past the mailbox or write
 * past outlen (the sanitizers see exactly-sized heap buffers), and must
 * return 0 with a status whenever outlen holds the output header. One
 * device (profile "fast") lives across inputs, so that object state
 * accumulates as in firmware; every RECREATE_EVERY inputs it is destroyed,
 * leak report included, and created again.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "emu.h"
#include "fuzz_emu_fmt.h"

#define RECREATE_EVERY 4096u
/* emu_cmd's smallest output: the header (status, syndrome). */
#define OUT_HDR_LEN 16u

static struct emu_dev *dev;
static unsigned long inputs;
/* FUZZ_EMU_VERBOSE=1: print each command's opcode and status (seed checks). */
static int verbose = -1;
static unsigned long leak_lines;
static uint8_t arena[FZ_ARENA_SIZE] __attribute__((aligned(4096)));

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The leak report of a recreation is expected: count it, keep stdout quiet. */
static void
quiet_log(int level, const char *line)
{
	(void)line;
	if (level <= 4)
		leak_lines++;
}

static void
dev_cycle(void)
{
	char err[256];

	if (dev != NULL)
		(void)emu_dev_destroy(dev);
	dev = emu_dev_create("fuzz", "fast", err, sizeof(err));
	if (dev == NULL) {
		fprintf(stderr, "fuzz_emu_cmd: cannot create the device: %s\n", err);
		abort();
	}
}

static uint16_t
le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

struct slots {
	uint32_t id[FZ_SLOTS];
	unsigned int n;
};

static void
slot_push(struct slots *s, uint32_t id)
{
	if (s->n < FZ_SLOTS)
		s->id[s->n++] = id;
}

static bool
is_create(uint16_t opcode)
{
	return prm_opcode_is_create_out(opcode) || opcode == PRM_CMD_CREATE_GENERAL_OBJECT;
}

static size_t
run_cmd(const uint8_t *p, size_t left, struct slots *s)
{
	unsigned int npatch = p[1] % FZ_MAX_PATCH, i;
	size_t inlen = le16(p + 2), outlen = le16(p + 4) % (FZ_MAX_OUTLEN + 1);
	size_t used = FZ_HDR_LEN + (size_t)npatch * FZ_PATCH_LEN;
	const uint8_t *patches = p + FZ_HDR_LEN;
	uint8_t *in, *out;
	int rc;

	if (left < used)
		return left;
	if (inlen > left - used)
		inlen = left - used;
	/* Exactly sized copies: one byte too far is a sanitizer report. */
	in = malloc(inlen ? inlen : 1);
	out = malloc(outlen ? outlen : 1);
	if (in == NULL || out == NULL)
		abort();
	memcpy(in, p + used, inlen);
	for (i = 0; i < npatch; i++) {
		unsigned int off = le16(patches + i * FZ_PATCH_LEN);
		uint8_t slot = patches[i * FZ_PATCH_LEN + 2];
		unsigned int width = slot & FZ_SLOT_32 ? 32 : 24;

		uint64_t v;

		/* PRM ids sit in one dword: 32 bits, or its low 24 bits. */
		off = (off & ~31u) + (width == 32 ? 0 : 8);
		if ((slot & 0x0f) >= s->n || off + width > inlen * 8)
			continue;
		v = s->id[slot & 0x0f];
		if (slot & FZ_SLOT_SHL8)
			v <<= 8;
		prm_set_bits(in, off, width, v & (width == 32 ? 0xffffffffu : 0xffffffu));
	}
	rc = emu_cmd(dev, inlen ? in : NULL, inlen, outlen ? out : NULL, outlen);
	/* The contract: a status whenever the output can hold one. */
	if (outlen >= OUT_HDR_LEN ? rc != 0 : rc != -EINVAL) {
		fprintf(stderr, "emu_cmd(inlen %zu, outlen %zu) returned %d\n", inlen, outlen,
			rc);
		abort();
	}
	if (verbose > 0)
		fprintf(stderr, "cmd 0x%x inlen %zu outlen %zu: rc %d status 0x%x syndrome 0x%x\n",
			inlen >= 2 ? (unsigned int)PRM_GET(cmd_in, in, opcode) : 0, inlen, outlen,
			rc, rc == 0 ? (unsigned int)PRM_GET(cmd_out, out, status) : 0,
			rc == 0 ? (unsigned int)PRM_GET(cmd_out, out, syndrome) : 0);
	if (rc == 0 && outlen >= OUT_HDR_LEN && inlen >= PRM_SIZE(cmd_in) &&
	    PRM_GET(cmd_out, out, status) == 0) {
		uint16_t opcode = (uint16_t)PRM_GET(cmd_in, in, opcode);

		if (opcode == PRM_CMD_CREATE_GENERAL_OBJECT)
			slot_push(s, (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id));
		else if (is_create(opcode))
			slot_push(s, (uint32_t)PRM_GET(create_out, out, id));
	}
	free(in);
	free(out);
	return used + inlen;
}

static size_t
run_umem_reg(const uint8_t *p, size_t left, struct slots *s)
{
	uint32_t off, len, access, id = 0, synd = 0;

	if (left < FZ_HDR_LEN + 12)
		return left;
	off = le32(p + FZ_HDR_LEN) % FZ_ARENA_SIZE;
	len = le32(p + FZ_HDR_LEN + 4);
	access = le32(p + FZ_HDR_LEN + 8);
	if (len > FZ_ARENA_SIZE - off)
		len = FZ_ARENA_SIZE - off;
	if (emu_umem_reg(dev, arena + off, len, access, &id, &synd) == 0)
		slot_push(s, id);
	if (verbose > 0)
		fprintf(stderr, "umem_reg size %u: id %u syndrome 0x%x\n", len, id, synd);
	return FZ_HDR_LEN + 12;
}

static size_t
run_umem_dereg(const uint8_t *p, size_t left, struct slots *s)
{
	uint32_t synd = 0;
	uint8_t slot;

	if (left < FZ_HDR_LEN + 1)
		return left;
	slot = p[FZ_HDR_LEN] & 0x0f;
	(void)emu_umem_dereg(dev, slot < s->n ? s->id[slot] : p[FZ_HDR_LEN], &synd);
	return FZ_HDR_LEN + 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slots s = { .n = 0 };
	size_t off = 0;

	if (verbose < 0)
		verbose = getenv("FUZZ_EMU_VERBOSE") != NULL;
	if (dev == NULL || ++inputs % RECREATE_EVERY == 0) {
		emu_set_log(quiet_log);
		dev_cycle();
	}
	while (size - off >= FZ_HDR_LEN) {
		const uint8_t *p = data + off;
		size_t left = size - off;

		switch (p[0] % 4) {
		case FZ_REC_UMEM_REG:
			off += run_umem_reg(p, left, &s);
			break;
		case FZ_REC_UMEM_DEREG:
			off += run_umem_dereg(p, left, &s);
			break;
		default:
			off += run_cmd(p, left, &s);
			break;
		}
	}
	return 0;
}
