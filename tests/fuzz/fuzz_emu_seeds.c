/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seed corpus of fuzz_emu_cmd: valid mailboxes built with PRM_SET, in the
 * record format of fuzz_emu_fmt.h, written as files into the directory
 * given. Ids of created objects are patched in through slots, so the
 * sequences stay valid on a device that has lived through other inputs.
 *
 *   fuzz_emu_seeds DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "fuzz_emu_fmt.h"

#define QS 256u
#define UMEM_SZ(a, b) ((a) * QS + (b))
#define GUEST_GPA 0x10000000ull
#define GUEST_LEN 0x10000u

struct seed {
	uint8_t d[1 << 16];
	size_t n;
};

struct patch {
	uint16_t bitoff;
	uint8_t slot;
};

static void
put(struct seed *s, const void *p, size_t len)
{
	if (s->n + len > sizeof(s->d)) {
		fprintf(stderr, "seed too large\n");
		exit(1);
	}
	memcpy(s->d + s->n, p, len);
	s->n += len;
}

static void
put16(struct seed *s, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	put(s, b, 2);
}

static void
put32(struct seed *s, uint32_t v)
{
	put16(s, (uint16_t)v);
	put16(s, (uint16_t)(v >> 16));
}

static void
rec_hdr(struct seed *s, uint8_t type, uint8_t npatch, uint16_t inlen, uint16_t outlen)
{
	uint8_t t[2] = { type, npatch };

	put(s, t, 2);
	put16(s, inlen);
	put16(s, outlen);
}

static void
cmd(struct seed *s, const void *in, size_t inlen, size_t outlen, const struct patch *p,
    unsigned int np)
{
	unsigned int i;

	rec_hdr(s, FZ_REC_CMD, (uint8_t)np, (uint16_t)inlen, (uint16_t)outlen);
	for (i = 0; i < np; i++) {
		put16(s, p[i].bitoff);
		put(s, &p[i].slot, 1);
	}
	put(s, in, inlen);
}

static void
umem_reg(struct seed *s, uint32_t off, uint32_t size)
{
	rec_hdr(s, FZ_REC_UMEM_REG, 0, 0, 0);
	put32(s, off);
	put32(s, size);
	put32(s, 0);
}

static void
umem_dereg(struct seed *s, uint8_t slot)
{
	rec_hdr(s, FZ_REC_UMEM_DEREG, 0, 0, 0);
	put(s, &slot, 1);
}

/* A command naming nothing: opcode (and op_mod) only. */
static void
simple(struct seed *s, uint16_t opcode, uint16_t op_mod, size_t inlen, size_t outlen)
{
	uint8_t in[256] = { 0 };

	PRM_SET(cmd_in, in, opcode, opcode);
	PRM_SET(cmd_in, in, op_mod, op_mod);
	cmd(s, in, inlen, outlen, NULL, 0);
}

/* A destroy of a classic object whose number is in slot. */
static void
destroy(struct seed *s, uint16_t opcode, uint8_t slot)
{
	uint8_t in[PRM_SIZE(destroy_in)] = { 0 };
	struct patch p = { PRM_OFF(destroy_in, id), slot };

	PRM_SET(destroy_in, in, opcode, opcode);
	cmd(s, in, sizeof(in), PRM_SIZE(destroy_out), &p, 1);
}

static void
general(struct seed *s, uint16_t opcode, uint16_t type, uint8_t slot, size_t outlen)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)] = { 0 };
	struct patch p = { PRM_OFF(general_obj_in_cmd_hdr, obj_id), slot | FZ_SLOT_32 };

	PRM_SET(general_obj_in_cmd_hdr, in, opcode, opcode);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, type);
	cmd(s, in, sizeof(in), outlen, &p, slot == 0xff ? 0 : 1);
}

static void
seed_caps(struct seed *s)
{
	size_t out = PRM_SIZE(query_hca_cap_out);

	simple(s, PRM_CMD_QUERY_HCA_CAP, PRM_HCA_CAP_OP_MOD(PRM_CAP_GENERAL, 1),
	       PRM_SIZE(query_hca_cap_in), out);
	simple(s, PRM_CMD_QUERY_HCA_CAP, PRM_HCA_CAP_OP_MOD(PRM_CAP_VIRTIO_EMULATION, 1),
	       PRM_SIZE(query_hca_cap_in), out);
	simple(s, PRM_CMD_QUERY_HCA_CAP, PRM_HCA_CAP_OP_MOD(PRM_CAP_NIC_FLOW_TABLE, 1),
	       PRM_SIZE(query_hca_cap_in), out);
	simple(s, PRM_CMD_QUERY_SPECIAL_CONTEXTS, 0, PRM_SIZE(query_special_contexts_in),
	       PRM_SIZE(query_special_contexts_out));
}

static void
seed_pd_td(struct seed *s)
{
	simple(s, PRM_CMD_ALLOC_PD, 0, PRM_SIZE(alloc_pd_in), PRM_SIZE(alloc_pd_out));
	simple(s, PRM_CMD_ALLOC_TRANSPORT_DOMAIN, 0, PRM_SIZE(alloc_transport_domain_in),
	       PRM_SIZE(alloc_transport_domain_out));
	destroy(s, PRM_CMD_DEALLOC_PD, 0);
	destroy(s, PRM_CMD_DEALLOC_TRANSPORT_DOMAIN, 1);
	/* And what firmware rejects by envelope: unknown opcode, short buffers. */
	simple(s, 0x7ff, 0, 16, 16);
	simple(s, PRM_CMD_ALLOC_PD, 0, 8, 16);
	simple(s, PRM_CMD_ALLOC_PD, 0, PRM_SIZE(alloc_pd_in), 8);
}

/*
 * A virtq's whole life: PD, three umems of the caps' a * size + b, guest
 * memory behind an MTT mkey, counters, CREATE, MODIFY to RDY with the
 * rings, QUERY, SUSPEND, then everything destroyed in reverse.
 * Slots: 0 pd, 1-3 umems, 4 guest umem, 5 mkey, 6 counters, 7 virtq.
 */
static void
seed_virtq(struct seed *s)
{
	/* The emulated CX6 Dx's umem parameters at power-up (emu_priv.h EMU_CAP_UMEM_*). */
	static const uint32_t a[3] = { 128, 96, 16 }, b[3] = { 4096, 8192, 12288 };
	uint8_t mk[PRM_SIZE(create_mkey_in)] = { 0 };
	uint8_t vq[PRM_SIZE(virtq_cmd)] = { 0 };
	const uint32_t q = PRM_OFF(virtq_cmd, q);
	const uint32_t mkc = PRM_OFF(create_mkey_in, mkc);
	void *mkcp = PRM_ADDR(create_mkey_in, mk, mkc);
	void *qp = PRM_ADDR(virtq_cmd, vq, q), *op = PRM_ADDR(virtq_cmd, vq, obj);
	struct patch p[8];
	uint32_t off = 0;
	int i;

	simple(s, PRM_CMD_ALLOC_PD, 0, PRM_SIZE(alloc_pd_in), PRM_SIZE(alloc_pd_out));
	for (i = 0; i < 3; i++) {
		umem_reg(s, off, UMEM_SZ(a[i], b[i]));
		off += (UMEM_SZ(a[i], b[i]) + 4095) & ~4095u;
	}
	umem_reg(s, off, GUEST_LEN);

	PRM_SET(create_mkey_in, mk, opcode, PRM_CMD_CREATE_MKEY);
	PRM_SET(mkc, mkcp, access_mode_1_0, PRM_MKC_ACCESS_MODE_MTT);
	PRM_SET(mkc, mkcp, lr, 1);
	PRM_SET(mkc, mkcp, lw, 1);
	PRM_SET(mkc, mkcp, start_addr, GUEST_GPA);
	PRM_SET(mkc, mkcp, len, GUEST_LEN);
	PRM_SET(mkc, mkcp, log_page_size, 12);
	PRM_SET(create_mkey_in, mk, mkey_umem_valid, 1);
	p[0] = (struct patch){ (uint16_t)(mkc + PRM_OFF(mkc, pd)), 0 };
	p[1] = (struct patch){ PRM_OFF(create_mkey_in, mkey_umem_id), 4 | FZ_SLOT_32 };
	cmd(s, mk, sizeof(mk), PRM_SIZE(create_mkey_out), p, 2);
	general(s, PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, 0xff,
		PRM_SIZE(general_obj_out_cmd_hdr));

	PRM_SET(general_obj_in_cmd_hdr, vq, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, vq, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(virtio_q, qp, queue_index, 0);
	PRM_SET(virtio_q, qp, queue_size, QS);
	PRM_SET(virtio_q, qp, umem_1_size, UMEM_SZ(a[0], b[0]));
	PRM_SET(virtio_q, qp, umem_2_size, UMEM_SZ(a[1], b[1]));
	PRM_SET(virtio_q, qp, umem_3_size, UMEM_SZ(a[2], b[2]));
	p[0] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, umem_1_id)), 1 | FZ_SLOT_32 };
	p[1] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, umem_2_id)), 2 | FZ_SLOT_32 };
	p[2] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, umem_3_id)), 3 | FZ_SLOT_32 };
	p[3] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, pd)), 0 };
	p[4] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, counter_set_id)),
			       6 | FZ_SLOT_32 };
	cmd(s, vq, sizeof(vq), PRM_SIZE(general_obj_out_cmd_hdr), p, 5);

	/* MODIFY to RDY with addresses, mkey and version. */
	memset(vq, 0, sizeof(vq));
	PRM_SET(general_obj_in_cmd_hdr, vq, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, vq, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(virtio_net_q, op, modify_field_select, PRM_VIRTQ_MODIFY_STATE |
		PRM_VIRTQ_MODIFY_ADDRS | PRM_VIRTQ_MODIFY_Q_MKEY |
		PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0);
	PRM_SET(virtio_net_q, op, state, PRM_VIRTQ_STATE_RDY);
	PRM_SET(virtio_q, qp, desc_addr, GUEST_GPA);
	PRM_SET(virtio_q, qp, available_addr, GUEST_GPA + 0x1000);
	PRM_SET(virtio_q, qp, used_addr, GUEST_GPA + 0x2000);
	PRM_SET(virtio_q, qp, virtio_version_1_0, 1);
	PRM_SET(virtio_q, qp, queue_size, QS);
	p[0] = (struct patch){ PRM_OFF(general_obj_in_cmd_hdr, obj_id), 7 | FZ_SLOT_32 };
	p[1] = (struct patch){ (uint16_t)(q + PRM_OFF(virtio_q, virtio_q_mkey)),
			       5 | FZ_SLOT_32 | FZ_SLOT_SHL8 };
	cmd(s, vq, sizeof(vq), PRM_SIZE(general_obj_out_cmd_hdr), p, 2);
	general(s, PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 7, PRM_SIZE(virtq_cmd));
	general(s, PRM_CMD_QUERY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, 6,
		PRM_SIZE(virtq_counters_cmd));
	PRM_SET(virtio_net_q, op, modify_field_select, PRM_VIRTQ_MODIFY_STATE);
	PRM_SET(virtio_net_q, op, state, PRM_VIRTQ_STATE_SUSPEND);
	cmd(s, vq, sizeof(vq), PRM_SIZE(general_obj_out_cmd_hdr), p, 2);

	general(s, PRM_CMD_DESTROY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 7,
		PRM_SIZE(general_obj_out_cmd_hdr));
	general(s, PRM_CMD_DESTROY_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS, 6,
		PRM_SIZE(general_obj_out_cmd_hdr));
	destroy(s, PRM_CMD_DESTROY_MKEY, 5);
	for (i = 1; i <= 4; i++)
		umem_dereg(s, (uint8_t)i);
	destroy(s, PRM_CMD_DEALLOC_PD, 0);
}

static int
write_seed(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(s->d, 1, s->n, f) != s->n || fclose(f) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct seed s;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	s.n = 0;
	seed_caps(&s);
	if (write_seed(argv[1], "seed-caps", &s) < 0)
		return 1;
	s.n = 0;
	seed_pd_td(&s);
	if (write_seed(argv[1], "seed-pd-td", &s) < 0)
		return 1;
	s.n = 0;
	seed_virtq(&s);
	if (write_seed(argv[1], "seed-virtq", &s) < 0)
		return 1;
	return 0;
}
