/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The harness's reader of the driver's DevX trace (lm_harness.h): every
 * in-process test reads what the driver asked of the device here. Each
 * line is one JSON object (devx_trace.c); PRM commands carry their input
 * mailbox in hex, kernel operations (umem, MR, root flow, UAR, PD) their
 * own fields, which are mapped to the opcode the firmware sees for them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "prm.h"
#include "lm_harness.h"

void
lmh_trace_open(struct lmh_trace *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->path, sizeof(t->path), "%s", path);
}

bool
lmh_cmd_is_vq(const struct lmh_cmd *c)
{
	return c->opcode >= PRM_CMD_CREATE_GENERAL_OBJECT &&
	       c->opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT && c->obj_type == PRM_OBJ_VIRTIO_NET_Q;
}

static int
vq_qidx(const struct lmh_trace *t, uint32_t id)
{
	size_t i;

	for (i = t->nvq; i-- > 0;)
		if (t->vq[i].id == id)
			return t->vq[i].qidx;
	return -1;
}

static void
vq_qidx_put(struct lmh_trace *t, uint32_t id, int qidx)
{
	if (t->nvq == t->capvq) {
		t->capvq = t->capvq ? 2 * t->capvq : 64;
		t->vq = realloc(t->vq, t->capvq * sizeof(*t->vq));
		if (t->vq == NULL)
			abort();
	}
	t->vq[t->nvq].id = id;
	t->vq[t->nvq].qidx = qidx;
	t->nvq++;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return 0;
}

/* The command's input mailbox, zero-padded (struct lmh_cmd). */
static void
cmd_input(struct lmh_cmd *c, const char *hex)
{
	size_t i, len = strlen(hex) / 2;

	c->in = calloc(1, len + PRM_SIZE(virtq_cmd));
	if (c->in == NULL)
		abort();
	for (i = 0; i < len; i++)
		c->in[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	c->inlen = len;
}

/* The virtq's queue index: a CREATE names it in its mailbox, the others by object id. */
static void
cmd_vq(struct lmh_trace *t, struct lmh_cmd *c)
{
	if (c->opcode != PRM_CMD_CREATE_GENERAL_OBJECT) {
		c->qidx = vq_qidx(t, c->obj_id);
		return;
	}
	c->qidx = (int)PRM_GET(virtio_q, PRM_CADDR(virtq_cmd, c->in, q), queue_index);
	if (c->status == 0)
		vq_qidx_put(t, c->obj_id, c->qidx);
}

/*
 * The kernel operations of the trace (no mailbox of ours: the kernel or
 * rdma-core runs the command), each pair by the opcodes the firmware sees
 * for them, which the emulator counts and fault-injects under, and the
 * field naming the object.
 */
static const struct kernel_op {
	const char *make, *end;
	uint16_t make_opcode, end_opcode;
	const char *id;
	unsigned int id_shift;
} kernel_ops[] = {
	{ "UMEM_REG", "UMEM_DEREG", PRM_CMD_CREATE_UMEM, PRM_CMD_DESTROY_UMEM, "umem_id", 0 },
	/* The kernel's MR (ibv_reg_mr_iova): a CREATE_MKEY / DESTROY_MKEY, by its lkey. */
	{ "MR_REG", "MR_DEREG", PRM_CMD_CREATE_MKEY, PRM_CMD_DESTROY_MKEY, "lkey", 8 },
	/* A rule in the kernel's NIC RX root: a SET / DELETE_FLOW_TABLE_ENTRY. */
	{ "ROOT_FLOW_CREATE", "ROOT_FLOW_DESTROY", PRM_CMD_SET_FLOW_TABLE_ENTRY,
	  PRM_CMD_DELETE_FLOW_TABLE_ENTRY, "flow_id", 0 },
	/* A UAR page is a device object (the kernel's ALLOC_UAR / DEALLOC_UAR). */
	{ "UAR_ALLOC", "UAR_FREE", PRM_CMD_ALLOC_UAR, PRM_CMD_DEALLOC_UAR, "page_id", 0 },
	/* ibv_alloc_pd / ibv_dealloc_pd: the kernel runs ALLOC_PD / DEALLOC_PD. */
	{ "PD_ALLOC", "PD_FREE", PRM_CMD_ALLOC_PD, PRM_CMD_DEALLOC_PD, "pdn", 0 },
};

/* A kernel operation: the opcode the firmware sees for it and the object's number. */
static void
kernel_op(struct lmh_cmd *c, json_t *j)
{
	size_t i;

	for (i = 0; i < sizeof(kernel_ops) / sizeof(kernel_ops[0]); i++) {
		const struct kernel_op *k = &kernel_ops[i];
		bool make = strcmp(c->op, k->make) == 0;

		if (!make && strcmp(c->op, k->end) != 0)
			continue;
		c->is_cmd = true;
		c->opcode = make ? k->make_opcode : k->end_opcode;
		c->obj_id = (uint32_t)json_integer_value(json_object_get(j, k->id)) >> k->id_shift;
		return;
	}
}

static int
trace_add(struct lmh_trace *t, const char *line)
{
	json_error_t err;
	json_t *j = json_loads(line, 0, &err);
	struct lmh_cmd c;
	const char *op;

	if (j == NULL) {
		fprintf(stderr, "%s: not a JSON line: %s (%s)\n", t->path, line, err.text);
		return -EBADMSG;
	}
	memset(&c, 0, sizeof(c));
	op = json_string_value(json_object_get(j, "op"));
	snprintf(c.op, sizeof(c.op), "%s", op != NULL ? op : "");
	c.status = (int)json_integer_value(json_object_get(j, "status"));
	c.syndrome = (uint32_t)json_integer_value(json_object_get(j, "syndrome"));
	c.addr = (uint64_t)json_integer_value(json_object_get(j, "addr"));
	c.value = (uint64_t)json_integer_value(json_object_get(j, "value"));
	c.t_start_us = (uint64_t)json_integer_value(json_object_get(j, "t_start_us"));
	c.t_end_us = (uint64_t)json_integer_value(json_object_get(j, "t_end_us"));
	c.obj_type = 0xffff;
	c.qidx = -1;
	if (json_object_get(j, "opcode") != NULL) {
		const char *in = json_string_value(json_object_get(j, "in"));

		c.is_cmd = true;
		c.opcode = (uint16_t)json_integer_value(json_object_get(j, "opcode"));
		c.obj_id = (uint32_t)json_integer_value(json_object_get(j, "obj_id"));
		if (c.opcode >= PRM_CMD_CREATE_GENERAL_OBJECT &&
		    c.opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT)
			c.obj_type = (uint16_t)json_integer_value(json_object_get(j, "obj_type"));
		cmd_input(&c, in != NULL ? in : "");
		if (lmh_cmd_is_vq(&c))
			cmd_vq(t, &c);
	} else {
		kernel_op(&c, j);
	}
	json_decref(j);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->c = realloc(t->c, t->cap * sizeof(*t->c));
		if (t->c == NULL)
			abort();
	}
	t->c[t->n++] = c;
	return 0;
}

int
lmh_trace_sync(struct lmh_trace *t)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;
	FILE *f;

	f = fopen(t->path, "r");
	if (f == NULL) {
		ret = -errno;
		goto out;
	}
	if (fseek(f, t->off, SEEK_SET) != 0) {
		ret = -errno;
		goto out;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		int r;

		if (line[n - 1] != '\n')
			break; /* being written: next time */
		line[n - 1] = '\0';
		r = trace_add(t, line);
		if (r < 0 && ret == 0)
			ret = r;
		t->off += n;
	}
out:
	free(line);
	if (f != NULL)
		fclose(f);
	if (ret < 0 && t->err == 0)
		t->err = ret;
	return ret;
}

size_t
lmh_trace_mark(struct lmh_trace *t)
{
	lmh_trace_sync(t);
	return t->n;
}

void
lmh_trace_free(struct lmh_trace *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->c[i].in);
	free(t->c);
	free(t->vq);
	memset(t, 0, sizeof(*t));
}

unsigned int
lmh_trace_count(struct lmh_trace *t, size_t from, lmh_trace_pred p, const void *arg)
{
	unsigned int n = 0;
	size_t i;

	lmh_trace_sync(t);
	for (i = from; i < t->n; i++)
		if (p(&t->c[i], arg))
			n++;
	return n;
}

unsigned int
lmh_vq_creates_missized(struct lmh_trace *t, size_t from, const uint32_t a[3],
			const uint32_t b[3], unsigned int *made)
{
	unsigned int bad = 0;
	size_t i;

	*made = 0;
	lmh_trace_sync(t);
	for (i = from; i < t->n; i++) {
		const struct lmh_cmd *c = &t->c[i];
		const void *q = PRM_CADDR(virtq_cmd, c->in, q);
		uint32_t qs, got[3];
		unsigned int u;

		if (c->opcode != PRM_CMD_CREATE_GENERAL_OBJECT || !lmh_cmd_is_vq(c) ||
		    c->status != 0)
			continue;
		(*made)++;
		qs = (uint32_t)PRM_GET(virtio_q, q, queue_size);
		got[0] = (uint32_t)PRM_GET(virtio_q, q, umem_1_size);
		got[1] = (uint32_t)PRM_GET(virtio_q, q, umem_2_size);
		got[2] = (uint32_t)PRM_GET(virtio_q, q, umem_3_size);
		for (u = 0; u < 3; u++)
			if (got[u] != a[u] * qs + b[u]) {
				if (bad++ == 0)
					fprintf(stderr, "lm_harness: queue %d CREATE: umem_%u_size %u, "
						"not %u * %u + %u\n", c->qidx, u + 1, got[u], a[u],
						qs, b[u]);
				break;
			}
	}
	return bad;
}

bool
lmh_wait_trace(struct lmh_trace *t, size_t from, lmh_trace_pred p, const void *arg,
	       unsigned int want, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;

	while (lmh_trace_count(t, from, p, arg) < want) {
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
	return true;
}

long
lmh_wait_failed_cmd(struct lmh_trace *t, size_t from, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;
	size_t i;

	for (;;) {
		lmh_trace_sync(t);
		for (i = from; i < t->n; i++)
			if (t->c[i].is_cmd && t->c[i].status != 0)
				return (long)i;
		if (lmh_now_ms() > deadline)
			return -1;
		lmh_tick();
	}
}

const char *
lmh_obj_type_name(uint16_t obj_type)
{
	switch (obj_type) {
	case PRM_OBJ_VIRTIO_NET_Q:
		return "VIRTIO_NET_Q";
	case PRM_OBJ_VIRTIO_Q_COUNTERS:
		return "VIRTIO_Q_COUNTERS";
	default:
		return "";
	}
}
