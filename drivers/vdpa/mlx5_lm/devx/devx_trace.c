/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX command trace (devx_trace=PATH): one JSON object per line and per
 * command, same format for both back ends (design.md). Lines are written
 * whole under a lock and flushed, so a trace survives a crash and
 * concurrent commands never interleave inside a line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prm.h"
#include "devx_priv.h"

struct devx_trace {
	FILE *f;
	pthread_mutex_t lock; /* guards f and seq */
	uint64_t seq;
};

uint64_t
devx_trace_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int
devx_trace_open(struct devx_ctx *ctx, const char *path, char *err, size_t errlen)
{
	struct devx_trace *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->f = fopen(path, "w");
	if (t->f == NULL) {
		int e = errno;

		snprintf(err, errlen, "devx_trace=%s: cannot open: %s", path, strerror(e));
		free(t);
		return -e;
	}
	pthread_mutex_init(&t->lock, NULL);
	ctx->trace = t;
	return 0;
}

void
devx_trace_close(struct devx_ctx *ctx)
{
	struct devx_trace *t = ctx->trace;

	if (t == NULL)
		return;
	fclose(t->f);
	pthread_mutex_destroy(&t->lock);
	free(t);
	ctx->trace = NULL;
}

static void
put_hex(FILE *f, const void *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		fputc(digits[p[i] >> 4], f);
		fputc(digits[p[i] & 0xf], f);
	}
}

/* The object a command names: what it created, or what it acts on. */
static uint32_t
cmd_obj_id(uint16_t opcode, const void *in, size_t inlen, const void *out, size_t outlen)
{
	if (prm_opcode_is_create_out(opcode))
		return outlen >= PRM_SIZE(create_out) ? PRM_GET(create_out, out, id) : 0;
	switch (opcode) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
		return outlen >= PRM_SIZE(general_obj_out_cmd_hdr) ?
			PRM_GET(general_obj_out_cmd_hdr, out, obj_id) : 0;
	case PRM_CMD_MODIFY_GENERAL_OBJECT:
	case PRM_CMD_QUERY_GENERAL_OBJECT:
	case PRM_CMD_DESTROY_GENERAL_OBJECT:
		return inlen >= PRM_SIZE(general_obj_in_cmd_hdr) ?
			PRM_GET(general_obj_in_cmd_hdr, in, obj_id) : 0;
	case PRM_CMD_DESTROY_MKEY:
	case PRM_CMD_DESTROY_CQ:
	case PRM_CMD_DESTROY_QP:
	case PRM_CMD_RST2INIT_QP:
	case PRM_CMD_INIT2RTR_QP:
	case PRM_CMD_RTR2RTS_QP:
	case PRM_CMD_2RST_QP:
	case PRM_CMD_DEALLOC_PD:
	case PRM_CMD_DEALLOC_TRANSPORT_DOMAIN:
	case PRM_CMD_DESTROY_TIR:
	case PRM_CMD_DESTROY_TIS:
	case PRM_CMD_MODIFY_RQT:
	case PRM_CMD_DESTROY_RQT:
		return inlen >= PRM_SIZE(destroy_in) ? PRM_GET(destroy_in, in, id) : 0;
	default:
		return 0;
	}
}

void
devx_trace_cmd(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const void *in,
	       size_t inlen, const void *out, size_t outlen, int rc)
{
	struct devx_trace *t = ctx->trace;
	uint16_t opcode, op_mod;
	int status = -1;
	uint32_t syndrome = 0;

	if (t == NULL || inlen < PRM_SIZE(cmd_in))
		return;
	opcode = PRM_GET(cmd_in, in, opcode);
	op_mod = PRM_GET(cmd_in, in, op_mod);
	if (rc == 0 && outlen >= PRM_SIZE(cmd_out)) {
		status = PRM_GET(cmd_out, out, status);
		syndrome = PRM_GET(cmd_out, out, syndrome);
	}
	pthread_mutex_lock(&t->lock);
	fprintf(t->f, "{\"dev\":\"%s\",\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
		",\"t_end_us\":%" PRIu64 ",\"op\":\"%s\",\"opcode\":%u,\"op_mod\":%u,"
		"\"obj_type\":%u,\"obj_id\":%u,\"in\":\"",
		ctx->name, t->seq++, t_start, t_end, prm_opcode_name(opcode), opcode,
		opcode >= PRM_CMD_CREATE_GENERAL_OBJECT && opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT ?
			0 : op_mod,
		opcode >= PRM_CMD_CREATE_GENERAL_OBJECT && opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT ?
			op_mod : 0,
		cmd_obj_id(opcode, in, inlen, out, rc == 0 ? outlen : 0));
	put_hex(t->f, in, inlen);
	fputs("\",\"out\":\"", t->f);
	if (rc == 0)
		put_hex(t->f, out, outlen);
	fprintf(t->f, "\",\"status\":%d,\"syndrome\":%u", status, syndrome);
	if (rc < 0)
		fprintf(t->f, ",\"error\":\"%s\"", strerror(-rc));
	fputs("}\n", t->f);
	fflush(t->f);
	pthread_mutex_unlock(&t->lock);
}

/* Name of the id field of a non-PRM operation. */
static const char *
op_id_key(const char *op)
{
	if (strcmp(op, "DOORBELL") == 0)
		return "value";
	if (strncmp(op, "UAR_", 4) == 0)
		return "page_id";
	if (strcmp(op, "QUERY_EQN") == 0)
		return "eqn";
	if (strncmp(op, "PD_", 3) == 0)
		return "pdn";
	if (strcmp(op, "NULL_MR") == 0)
		return "mkey";
	return "umem_id";
}

void
devx_trace_op(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
	      uint64_t addr, uint64_t size, uint32_t id, int status, uint32_t syndrome)
{
	struct devx_trace *t = ctx->trace;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	fprintf(t->f, "{\"dev\":\"%s\",\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
		",\"t_end_us\":%" PRIu64 ",\"op\":\"%s\",\"addr\":%" PRIu64 ",\"size\":%" PRIu64
		",\"%s\":%u,\"status\":%d,\"syndrome\":%u}\n",
		ctx->name, t->seq++, t_start, t_end, op, addr, size,
		op_id_key(op), id, status, syndrome);
	fflush(t->f);
	pthread_mutex_unlock(&t->lock);
}

void
devx_trace_mr(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
	      const struct devx_mr *mr, int status, uint32_t syndrome)
{
	struct devx_trace *t = ctx->trace;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	fprintf(t->f, "{\"dev\":\"%s\",\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
		",\"t_end_us\":%" PRIu64 ",\"op\":\"%s\",\"addr\":%" PRIu64 ",\"size\":%zu"
		",\"iova\":%" PRIu64 ",\"access\":%u,\"pdn\":%u,\"lkey\":%u,\"status\":%d"
		",\"syndrome\":%u}\n", ctx->name, t->seq++, t_start, t_end, op,
		(uint64_t)(uintptr_t)mr->addr, mr->len, mr->iova, mr->access, devx_pd_id(mr->pd),
		mr->lkey, status, syndrome);
	fflush(t->f);
	pthread_mutex_unlock(&t->lock);
}

void
devx_trace_uar_ring(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, uint32_t page_id,
		    uint32_t offset, uint64_t value)
{
	struct devx_trace *t = ctx->trace;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	fprintf(t->f, "{\"dev\":\"%s\",\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
		",\"t_end_us\":%" PRIu64 ",\"op\":\"UAR_DOORBELL\",\"page_id\":%u,"
		"\"addr\":%u,\"size\":8,\"value\":%" PRIu64 ",\"status\":0,\"syndrome\":0}\n",
		ctx->name, t->seq++, t_start, t_end, page_id, offset, value);
	fflush(t->f);
	pthread_mutex_unlock(&t->lock);
}

void
devx_trace_flow(struct devx_ctx *ctx, uint64_t t_start, uint64_t t_end, const char *op,
		const struct devx_flow_attr *attr, uint32_t dest_id, uint32_t flow_id,
		uint8_t status, uint32_t syndrome, int rc)
{
	struct devx_trace *t = ctx->trace;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	fprintf(t->f, "{\"dev\":\"%s\",\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
		",\"t_end_us\":%" PRIu64 ",\"op\":\"%s\",\"flow_id\":%u",
		ctx->name, t->seq++, t_start, t_end, op, flow_id);
	if (attr != NULL) {
		fprintf(t->f, ",\"priority\":%u,\"match_criteria_enable\":%u,\"dest_obj_id\":%u"
			",\"mask\":\"", attr->priority, attr->match_criteria_enable, dest_id);
		if (attr->match_mask != NULL)
			put_hex(t->f, attr->match_mask, attr->match_len);
		fputs("\",\"value\":\"", t->f);
		if (attr->match_value != NULL)
			put_hex(t->f, attr->match_value, attr->match_len);
		fputc('"', t->f);
	}
	fprintf(t->f, ",\"status\":%u,\"syndrome\":%u", status, syndrome);
	if (rc < 0 && rc != -EIO)
		fprintf(t->f, ",\"error\":\"%s\"", strerror(-rc));
	fputs("}\n", t->f);
	fflush(t->f);
	pthread_mutex_unlock(&t->lock);
}
