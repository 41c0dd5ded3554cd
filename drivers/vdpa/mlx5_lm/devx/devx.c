/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport core: contexts and back-end selection, commands and
 * objects (status checking, destroy mailbox derivation), root flow rules,
 * logging and the command gate common to both back ends. Registrations
 * are in devx_mem.c, doorbells and events in devx_event.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "devx_priv.h"

static devx_log_fn log_sink;

void
devx_set_log(devx_log_fn fn)
{
	log_sink = fn;
}

static devx_cmd_gate_fn cmd_gate;

void
devx_set_cmd_gate(devx_cmd_gate_fn fn)
{
	__atomic_store_n(&cmd_gate, fn, __ATOMIC_RELEASE);
}

uint64_t
devx_cmd_begin(void)
{
	devx_cmd_gate_fn g = __atomic_load_n(&cmd_gate, __ATOMIC_ACQUIRE);

	if (g != NULL)
		g();
	return devx_trace_now_us();
}

void
devx_log(int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_sink != NULL)
		log_sink(level, line);
	else if (level <= 4)
		fprintf(stderr, "devx: %s\n", line);
}

int
devx_open(const struct devx_open_params *p, struct devx_ctx **out, char *err, size_t errlen)
{
	struct devx_ctx *ctx;
	int ret;

	if ((p->emu_profile != NULL) + (p->ibdev != NULL) + (p->parent != NULL) != 1) {
		snprintf(err, errlen, "exactly one of emu=, ibdev= and a parent device must be given");
		return -EINVAL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(ctx->name, sizeof(ctx->name), "%s", p->name ? p->name : "devx");
	pthread_mutex_init(&ctx->lock, NULL);
	TAILQ_INIT(&ctx->objs);
	TAILQ_INIT(&ctx->umems);
	TAILQ_INIT(&ctx->flows);
	TAILQ_INIT(&ctx->pds);
	TAILQ_INIT(&ctx->mrs);
	if (p->emu_profile != NULL) {
		/* The emulator library, loaded now if no emulated device was opened before. */
		ctx->emu = devx_emu_load(err, errlen);
		if (ctx->emu == NULL) {
			ret = -ENOTSUP;
			goto err_backend;
		}
		ctx->be = ctx->emu->backend;
	} else {
		ctx->be = &devx_backend_rdma;
	}
	if (p->trace_path != NULL) {
		ret = devx_trace_open(ctx, p->trace_path, err, errlen);
		if (ret < 0)
			goto err_trace;
	}
	ret = ctx->be->open(ctx, p, err, errlen);
	if (ret < 0)
		goto err_open;
	*out = ctx;
	return 0;
err_open:
	devx_trace_close(ctx);
err_trace:
err_backend:
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return ret;
}

int
devx_close(struct devx_ctx *ctx)
{
	int alive;

	struct devx_umem *umem;
	struct devx_flow *flow;
	struct devx_obj *obj;
	struct devx_pd *pd;
	struct devx_mr *mr;

	if (ctx == NULL)
		return 0;
	alive = ctx->be->close(ctx);
	while ((flow = TAILQ_FIRST(&ctx->flows)) != NULL) {
		TAILQ_REMOVE(&ctx->flows, flow, next);
		free(flow);
	}
	/* Handles of objects whose destroy failed: the device listed the objects. */
	while ((obj = TAILQ_FIRST(&ctx->objs)) != NULL) {
		TAILQ_REMOVE(&ctx->objs, obj, next);
		free(obj);
	}
	while ((umem = TAILQ_FIRST(&ctx->umems)) != NULL) {
		TAILQ_REMOVE(&ctx->umems, umem, next);
		free(umem);
	}
	while ((mr = TAILQ_FIRST(&ctx->mrs)) != NULL) {
		TAILQ_REMOVE(&ctx->mrs, mr, next);
		free(mr);
	}
	while ((pd = TAILQ_FIRST(&ctx->pds)) != NULL) {
		TAILQ_REMOVE(&ctx->pds, pd, next);
		free(pd);
	}
	devx_trace_close(ctx);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return alive;
}

const char *
devx_name(const struct devx_ctx *ctx)
{
	return ctx->name;
}

int
devx_is_emulated(const struct devx_ctx *ctx)
{
	return ctx->emu != NULL;
}

/* Turn a back-end result and the output status into the API's return. */
static int
check_status(struct devx_ctx *ctx, int rc, const void *in, const void *out, size_t outlen)
{
	uint16_t opcode = PRM_GET(cmd_in, in, opcode);
	uint8_t status;
	uint32_t syndrome;

	if (rc < 0) {
		devx_log(3, "%s: %s (0x%x) not delivered: %s", ctx->name,
			 prm_opcode_name(opcode), opcode, strerror(-rc));
		return rc;
	}
	if (outlen < PRM_SIZE(cmd_out))
		return -EINVAL;
	status = PRM_GET(cmd_out, out, status);
	if (status == PRM_STATUS_OK)
		return 0;
	syndrome = PRM_GET(cmd_out, out, syndrome);
	devx_log(3, "%s: %s (0x%x) op_mod/obj_type 0x%x failed: status 0x%x (%s), syndrome 0x%08x",
		 ctx->name, prm_opcode_name(opcode), opcode, (unsigned int)PRM_GET(cmd_in, in, op_mod),
		 status, prm_status_name(status), syndrome);
	return -EIO;
}

int
devx_cmd(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen)
{
	uint64_t t0 = devx_cmd_begin();
	int rc;

	rc = ctx->be->cmd(ctx, in, inlen, out, outlen);
	devx_trace_cmd(ctx, t0, devx_trace_now_us(), in, inlen, out, outlen, rc);
	return check_status(ctx, rc, in, out, outlen);
}

/*
 * The DESTROY mailbox of an object, derived from its CREATE input and
 * output the way the kernel does it for rdma-core DevX objects: the
 * emulator executes it, the rdma back end only traces it (the kernel
 * sends its own copy).
 */
static int
derive_destroy(struct devx_obj *obj, const void *in, const void *out)
{
	uint8_t *d = obj->destroy_in;
	uint16_t op = obj->create_opcode;
	uint16_t dop;

	memset(d, 0, sizeof(obj->destroy_in));
	switch (op) {
	case PRM_CMD_CREATE_GENERAL_OBJECT:
		PRM_SET(general_obj_in_cmd_hdr, d, opcode, PRM_CMD_DESTROY_GENERAL_OBJECT);
		PRM_SET(general_obj_in_cmd_hdr, d, obj_type, obj->obj_type);
		PRM_SET(general_obj_in_cmd_hdr, d, obj_id, obj->id);
		obj->destroy_inlen = PRM_SIZE(general_obj_in_cmd_hdr);
		return 0;
	case PRM_CMD_CREATE_FLOW_TABLE:
		PRM_SET(destroy_flow_table_in, d, opcode, PRM_CMD_DESTROY_FLOW_TABLE);
		PRM_SET(destroy_flow_table_in, d, table_type,
			PRM_GET(create_flow_table_in, in, table_type));
		PRM_SET(destroy_flow_table_in, d, table_id, obj->id);
		obj->destroy_inlen = PRM_SIZE(destroy_flow_table_in);
		return 0;
	case PRM_CMD_CREATE_FLOW_GROUP:
		PRM_SET(destroy_flow_group_in, d, opcode, PRM_CMD_DESTROY_FLOW_GROUP);
		PRM_SET(destroy_flow_group_in, d, table_type,
			PRM_GET(create_flow_group_in, in, table_type));
		PRM_SET(destroy_flow_group_in, d, table_id,
			PRM_GET(create_flow_group_in, in, table_id));
		PRM_SET(destroy_flow_group_in, d, group_id, obj->id);
		obj->destroy_inlen = PRM_SIZE(destroy_flow_group_in);
		return 0;
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		PRM_SET(delete_fte_in, d, opcode, PRM_CMD_DELETE_FLOW_TABLE_ENTRY);
		PRM_SET(delete_fte_in, d, table_type, PRM_GET(set_fte_in, in, table_type));
		PRM_SET(delete_fte_in, d, table_id, PRM_GET(set_fte_in, in, table_id));
		PRM_SET(delete_fte_in, d, flow_index, PRM_GET(set_fte_in, in, flow_index));
		obj->destroy_inlen = PRM_SIZE(delete_fte_in);
		return 0;
	case PRM_CMD_CREATE_MKEY:
		dop = PRM_CMD_DESTROY_MKEY;
		break;
	case PRM_CMD_CREATE_CQ:
		dop = PRM_CMD_DESTROY_CQ;
		break;
	case PRM_CMD_CREATE_QP:
		dop = PRM_CMD_DESTROY_QP;
		break;
	case PRM_CMD_ALLOC_PD:
		dop = PRM_CMD_DEALLOC_PD;
		break;
	case PRM_CMD_ALLOC_TRANSPORT_DOMAIN:
		dop = PRM_CMD_DEALLOC_TRANSPORT_DOMAIN;
		break;
	case PRM_CMD_CREATE_TIR:
		dop = PRM_CMD_DESTROY_TIR;
		break;
	case PRM_CMD_CREATE_TIS:
		dop = PRM_CMD_DESTROY_TIS;
		break;
	case PRM_CMD_CREATE_RQT:
		dop = PRM_CMD_DESTROY_RQT;
		break;
	default:
		return -ENOTSUP;
	}
	(void)out;
	PRM_SET(destroy_in, d, opcode, dop);
	PRM_SET(destroy_in, d, id, obj->id);
	obj->destroy_inlen = PRM_SIZE(destroy_in);
	return 0;
}

struct devx_obj *
devx_obj_create(struct devx_ctx *ctx, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct devx_obj *obj;
	uint64_t t0;
	int rc;

	if (inlen < PRM_SIZE(cmd_in) || outlen < PRM_SIZE(create_out)) {
		errno = EINVAL;
		return NULL;
	}
	obj = calloc(1, sizeof(*obj));
	if (obj == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	obj->ctx = ctx;
	obj->create_opcode = PRM_GET(cmd_in, in, opcode);
	if (obj->create_opcode == PRM_CMD_CREATE_GENERAL_OBJECT)
		obj->obj_type = PRM_GET(general_obj_in_cmd_hdr, in, obj_type);
	t0 = devx_cmd_begin();
	rc = ctx->be->obj_create(ctx, obj, in, inlen, out, outlen);
	devx_trace_cmd(ctx, t0, devx_trace_now_us(), in, inlen, out, outlen, rc);
	rc = check_status(ctx, rc, in, out, outlen);
	if (rc < 0)
		goto err;
	if (obj->create_opcode == PRM_CMD_CREATE_GENERAL_OBJECT) {
		obj->id = PRM_GET(general_obj_out_cmd_hdr, out, obj_id);
	} else {
		obj->id = PRM_GET(create_out, out, id);
		if (obj->create_opcode == PRM_CMD_CREATE_MKEY)
			obj->mkey = obj->id << 8 |
				(uint32_t)PRM_GET(mkc, PRM_CADDR(create_mkey_in, in, mkc), mkey_7_0);
	}
	if (obj->create_opcode == PRM_CMD_SET_FLOW_TABLE_ENTRY)
		obj->id = PRM_GET(set_fte_in, in, flow_index);
	rc = derive_destroy(obj, in, out);
	if (rc < 0) {
		devx_log(3, "%s: %s (0x%x) is not a create command", ctx->name,
			 prm_opcode_name(obj->create_opcode), obj->create_opcode);
		/* The device made something we cannot name for destroy: undo it. */
		goto err;
	}
	DEVX_HANDLE_ADD(ctx, objs, obj);
	return obj;
err:
	free(obj);
	errno = -rc;
	return NULL;
}

static int
obj_cmd(struct devx_obj *obj, bool query, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct devx_ctx *ctx = obj->ctx;
	uint64_t t0 = devx_cmd_begin();
	int rc;

	rc = ctx->be->obj_cmd(ctx, obj, query, in, inlen, out, outlen);
	devx_trace_cmd(ctx, t0, devx_trace_now_us(), in, inlen, out, outlen, rc);
	return check_status(ctx, rc, in, out, outlen);
}

int
devx_obj_modify(struct devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
	return obj_cmd(obj, false, in, inlen, out, outlen);
}

int
devx_obj_query(struct devx_obj *obj, const void *in, size_t inlen, void *out, size_t outlen)
{
	return obj_cmd(obj, true, in, inlen, out, outlen);
}

int
devx_obj_destroy(struct devx_obj *obj)
{
	struct devx_ctx *ctx;
	uint8_t out[PRM_SIZE(destroy_out)];
	uint64_t t0;
	int rc;

	if (obj == NULL)
		return 0;
	ctx = obj->ctx;
	memset(out, 0, sizeof(out));
	t0 = devx_cmd_begin();
	rc = ctx->be->obj_destroy(ctx, obj, obj->destroy_in, obj->destroy_inlen, out, sizeof(out));
	devx_trace_cmd(ctx, t0, devx_trace_now_us(), obj->destroy_in, obj->destroy_inlen,
		       out, sizeof(out), rc);
	rc = check_status(ctx, rc, obj->destroy_in, out, sizeof(out));
	if (rc < 0)
		return rc;
	DEVX_HANDLE_FREE(ctx, objs, obj);
	return 0;
}

uint32_t
devx_obj_id(const struct devx_obj *obj)
{
	return obj->id;
}

uint32_t
devx_obj_mkey(const struct devx_obj *obj)
{
	return obj->mkey;
}

struct devx_flow *
devx_root_flow_create(struct devx_ctx *ctx, const struct devx_flow_attr *attr,
		      struct devx_obj *dest)
{
	struct devx_flow *flow;
	const char *kind;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (attr == NULL || dest == NULL || dest->ctx != ctx ||
	    (dest->create_opcode != PRM_CMD_CREATE_TIR &&
	     dest->create_opcode != PRM_CMD_CREATE_FLOW_TABLE)) {
		devx_log(3, "%s: a root flow rule forwards to a TIR or a flow table of the same "
			 "device", ctx->name);
		errno = EINVAL;
		return NULL;
	}
	flow = calloc(1, sizeof(*flow));
	if (flow == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	flow->ctx = ctx;
	kind = dest->create_opcode == PRM_CMD_CREATE_TIR ? "TIR" : "flow table";
	t0 = devx_cmd_begin();
	rc = ctx->be->flow_create(ctx, flow, attr, dest, &status, &syndrome);
	devx_trace_flow(ctx, t0, devx_trace_now_us(), "ROOT_FLOW_CREATE", attr, dest->id,
			flow->id, rc == -EIO ? status : 0, syndrome, rc);
	if (rc < 0) {
		if (rc == -EIO)
			devx_log(3, "%s: ROOT_FLOW_CREATE (priority %u) to %s 0x%x refused: "
				 "status 0x%x (%s), syndrome 0x%08x", ctx->name, attr->priority,
				 kind, dest->id, status, prm_status_name(status), syndrome);
		else
			devx_log(3, "%s: ROOT_FLOW_CREATE (priority %u) to %s 0x%x failed: %s%s",
				 ctx->name, attr->priority, kind, dest->id, strerror(-rc),
				 rc == -EPERM ? " (creating a flow needs CAP_NET_RAW: "
				 "doc/hardware.md, What the host needs)" : "");
		free(flow);
		errno = -rc;
		return NULL;
	}
	DEVX_HANDLE_ADD(ctx, flows, flow);
	return flow;
}

int
devx_root_flow_destroy(struct devx_flow *flow)
{
	struct devx_ctx *ctx;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (flow == NULL)
		return 0;
	ctx = flow->ctx;
	t0 = devx_cmd_begin();
	rc = ctx->be->flow_destroy(ctx, flow, &status, &syndrome);
	devx_trace_flow(ctx, t0, devx_trace_now_us(), "ROOT_FLOW_DESTROY", NULL, 0, flow->id,
			rc == -EIO ? status : 0, syndrome, rc);
	if (rc == -EIO) {
		devx_log(3, "%s: ROOT_FLOW_DESTROY of rule %u refused: status 0x%x (%s), "
			 "syndrome 0x%08x", ctx->name, flow->id, status, prm_status_name(status),
			 syndrome);
		return rc;
	}
	if (rc < 0) {
		devx_log(3, "%s: ROOT_FLOW_DESTROY of rule %u failed: %s", ctx->name, flow->id,
			 strerror(-rc));
		return rc;
	}
	DEVX_HANDLE_FREE(ctx, flows, flow);
	return 0;
}
