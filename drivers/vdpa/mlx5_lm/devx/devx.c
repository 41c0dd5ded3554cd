/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport core: back-end selection, status checking, destroy
 * mailbox derivation, tracing and logging common to both back ends.
 */
#include <errno.h>
#include <inttypes.h>
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

/* Before a command: the issuing thread may have to yield (see devx_set_cmd_gate). */
static inline uint64_t
cmd_begin(void)
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
	uint64_t t0 = cmd_begin();
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
	t0 = cmd_begin();
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
	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->objs, obj, next);
	pthread_mutex_unlock(&ctx->lock);
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
	uint64_t t0 = cmd_begin();
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
	t0 = cmd_begin();
	rc = ctx->be->obj_destroy(ctx, obj, obj->destroy_in, obj->destroy_inlen, out, sizeof(out));
	devx_trace_cmd(ctx, t0, devx_trace_now_us(), obj->destroy_in, obj->destroy_inlen,
		       out, sizeof(out), rc);
	rc = check_status(ctx, rc, obj->destroy_in, out, sizeof(out));
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ctx->lock);
	TAILQ_REMOVE(&ctx->objs, obj, next);
	pthread_mutex_unlock(&ctx->lock);
	free(obj);
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
	t0 = cmd_begin();
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
	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->flows, flow, next);
	pthread_mutex_unlock(&ctx->lock);
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
	t0 = cmd_begin();
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
	pthread_mutex_lock(&ctx->lock);
	TAILQ_REMOVE(&ctx->flows, flow, next);
	pthread_mutex_unlock(&ctx->lock);
	free(flow);
	return 0;
}

/*
 * ENOMEM from a registration is the kernel's pin accounting (Linux
 * core/umem.c ib_umem_get): beyond RLIMIT_MEMLOCK without CAP_IPC_LOCK.
 */
#define MEMLOCK_HINT(rc) ((rc) == -ENOMEM ? " (pinned memory beyond RLIMIT_MEMLOCK: the " \
	"process needs CAP_IPC_LOCK or a memlock limit covering guest memory, " \
	"doc/hardware.md, What the host needs)" : "")

/*
 * Trace status of an operation: the device's status when it answered
 * (-EIO), -1 when it failed before reaching the device (doc/devx-trace.md:
 * e.g. the kernel refusing to pin a umem's pages, EFAULT).
 */
static int
trace_status(int rc, uint8_t status)
{
	return rc == -EIO ? status : rc < 0 ? -1 : 0;
}

/* A failed operation: the device's status and syndrome, or the errno (and a hint). */
static void
log_op_failure(struct devx_ctx *ctx, const char *what, int rc, uint8_t status, uint32_t syndrome,
	       const char *hint)
{
	if (rc == -EIO)
		devx_log(3, "%s: %s failed: status 0x%x (%s), syndrome 0x%08x", ctx->name, what,
			 status, prm_status_name(status), syndrome);
	else
		devx_log(3, "%s: %s failed: %s%s", ctx->name, what, strerror(-rc), hint);
}

struct devx_mr *
devx_mr_reg(struct devx_pd *pd, void *addr, size_t len, uint64_t iova, uint32_t access)
{
	struct devx_ctx *ctx = pd->ctx;
	struct devx_mr *mr;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->ctx = ctx;
	mr->pd = pd;
	mr->addr = addr;
	mr->len = len;
	mr->iova = iova;
	mr->access = access;
	t0 = cmd_begin();
	rc = ctx->be->mr_reg(ctx, mr, &status, &syndrome);
	devx_trace_mr(ctx, t0, devx_trace_now_us(), "MR_REG", mr, trace_status(rc, status),
		      syndrome);
	if (rc < 0) {
		char what[96];

		snprintf(what, sizeof(what), "MR_REG addr %p size %zu iova 0x%" PRIx64, addr, len,
			 iova);
		log_op_failure(ctx, what, rc, status, syndrome, MEMLOCK_HINT(rc));
		free(mr);
		errno = -rc;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->mrs, mr, next);
	pthread_mutex_unlock(&ctx->lock);
	return mr;
}

int
devx_mr_dereg(struct devx_mr *mr)
{
	struct devx_ctx *ctx;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (mr == NULL)
		return 0;
	ctx = mr->ctx;
	t0 = cmd_begin();
	rc = ctx->be->mr_dereg(ctx, mr, &status, &syndrome);
	devx_trace_mr(ctx, t0, devx_trace_now_us(), "MR_DEREG", mr, trace_status(rc, status),
		      syndrome);
	if (rc < 0) {
		char what[48];

		snprintf(what, sizeof(what), "MR_DEREG lkey 0x%x", mr->lkey);
		log_op_failure(ctx, what, rc, status, syndrome, "");
		return rc;
	}
	pthread_mutex_lock(&ctx->lock);
	TAILQ_REMOVE(&ctx->mrs, mr, next);
	pthread_mutex_unlock(&ctx->lock);
	free(mr);
	return 0;
}

uint32_t
devx_mr_lkey(const struct devx_mr *mr)
{
	return mr->lkey;
}

struct devx_umem *
devx_umem_reg(struct devx_ctx *ctx, void *addr, size_t size, uint32_t access)
{
	return devx_umem_reg_pgsz(ctx, addr, size, access, 0);
}

struct devx_umem *
devx_umem_reg_pgsz(struct devx_ctx *ctx, void *addr, size_t size, uint32_t access,
		   uint64_t pgsz_bitmap)
{
	struct devx_umem *umem;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	umem = calloc(1, sizeof(*umem));
	if (umem == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	umem->ctx = ctx;
	umem->addr = addr;
	umem->size = size;
	umem->access = access;
	umem->pgsz_bitmap = pgsz_bitmap;
	t0 = cmd_begin();
	rc = ctx->be->umem_reg(ctx, umem, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UMEM_REG", (uintptr_t)addr, size,
		      umem->id, trace_status(rc, status), syndrome);
	if (rc < 0) {
		if (rc == -EIO)
			devx_log(3, "%s: UMEM_REG addr %p size %zu failed: status 0x%x (%s), syndrome 0x%08x",
				 ctx->name, addr, size, status, prm_status_name(status), syndrome);
		else
			devx_log(3, "%s: UMEM_REG addr %p size %zu failed: %s%s", ctx->name, addr,
				 size, strerror(-rc), MEMLOCK_HINT(rc));
		free(umem);
		errno = -rc;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->umems, umem, next);
	pthread_mutex_unlock(&ctx->lock);
	return umem;
}

int
devx_umem_dereg(struct devx_umem *umem)
{
	struct devx_ctx *ctx;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (umem == NULL)
		return 0;
	ctx = umem->ctx;
	t0 = cmd_begin();
	rc = ctx->be->umem_dereg(ctx, umem, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UMEM_DEREG", (uintptr_t)umem->addr,
		      umem->size, umem->id, trace_status(rc, status), syndrome);
	if (rc < 0) {
		/* A firmware status (emu), or the kernel's errno (rdma). */
		if (rc == -EIO)
			devx_log(3, "%s: UMEM_DEREG umem 0x%x failed: status 0x%x (%s), "
				 "syndrome 0x%08x", ctx->name, umem->id, status,
				 prm_status_name(status), syndrome);
		else
			devx_log(3, "%s: UMEM_DEREG umem 0x%x failed: %s", ctx->name, umem->id,
				 strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&ctx->lock);
	TAILQ_REMOVE(&ctx->umems, umem, next);
	pthread_mutex_unlock(&ctx->lock);
	free(umem);
	return 0;
}

uint32_t
devx_umem_id(const struct devx_umem *umem)
{
	return umem->id;
}

struct devx_pd *
devx_pd_alloc(struct devx_ctx *ctx)
{
	struct devx_pd *pd = calloc(1, sizeof(*pd));
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ctx = ctx;
	t0 = devx_trace_now_us();
	rc = ctx->be->pd_alloc(ctx, pd, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "PD_ALLOC", 0, 0, pd->pdn,
		      rc == -EIO ? status : rc < 0 ? PRM_STATUS_INTERNAL_ERR : 0, syndrome);
	if (rc < 0) {
		/* Named with the opcode the kernel runs for ibv_alloc_pd. */
		log_op_failure(ctx, "PD_ALLOC (0x800) (protection domain, null mkey)", rc, status,
			       syndrome, "");
		free(pd);
		errno = -rc;
		return NULL;
	}
	devx_trace_op(ctx, t0, devx_trace_now_us(), "NULL_MR", 0, 0, pd->null_mkey, 0, 0);
	pthread_mutex_lock(&ctx->lock);
	TAILQ_INSERT_TAIL(&ctx->pds, pd, next);
	pthread_mutex_unlock(&ctx->lock);
	return pd;
}

int
devx_pd_free(struct devx_pd *pd)
{
	struct devx_ctx *ctx;
	uint8_t status = 0;
	uint32_t syndrome = 0;
	uint64_t t0;
	int rc;

	if (pd == NULL)
		return 0;
	ctx = pd->ctx;
	t0 = devx_trace_now_us();
	rc = ctx->be->pd_free(ctx, pd, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "PD_FREE", 0, 0, pd->pdn,
		      rc == -EIO ? status : rc < 0 ? PRM_STATUS_INTERNAL_ERR : 0, syndrome);
	if (rc < 0) {
		char what[64];

		snprintf(what, sizeof(what), "PD_FREE (0x801) pd 0x%x", pd->pdn);
		log_op_failure(ctx, what, rc, status, syndrome, "");
		return rc;
	}
	pthread_mutex_lock(&ctx->lock);
	TAILQ_REMOVE(&ctx->pds, pd, next);
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return 0;
}

uint32_t
devx_pd_id(const struct devx_pd *pd)
{
	return pd->pdn;
}

uint32_t
devx_pd_null_mkey(const struct devx_pd *pd)
{
	return pd->null_mkey;
}

struct devx_db *
devx_db_alloc(struct devx_ctx *ctx)
{
	struct devx_db *db = calloc(1, sizeof(*db));
	int rc;

	if (db == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	db->ctx = ctx;
	db->mmap_fd = -1;
	rc = ctx->be->db_alloc(ctx, db);
	if (rc < 0) {
		devx_log(3, "%s: doorbell area allocation failed: %s", ctx->name, strerror(-rc));
		free(db);
		errno = -rc;
		return NULL;
	}
	return db;
}

void
devx_db_free(struct devx_db *db)
{
	if (db == NULL)
		return;
	db->ctx->be->db_free(db->ctx, db);
	free(db);
}

void
devx_db_ring(struct devx_db *db, uint32_t offset, uint32_t value)
{
	struct devx_ctx *ctx = db->ctx;

	/* Doorbells are the data-path hot spot: trace only when asked to. */
	if (ctx->trace != NULL) {
		uint64_t t0 = devx_trace_now_us();

		ctx->be->db_ring(ctx, db, offset, value);
		devx_trace_op(ctx, t0, devx_trace_now_us(), "DOORBELL", offset, 4, value, 0, 0);
		return;
	}
	ctx->be->db_ring(ctx, db, offset, value);
}

int
devx_db_mmap_info(const struct devx_db *db, int *fd, uint64_t *offset, uint64_t *size)
{
	if (db->mmap_fd < 0)
		return -1;
	*fd = db->mmap_fd;
	*offset = db->mmap_offset;
	*size = db->mmap_size;
	return 0;
}

uint32_t
devx_db_index(const struct devx_db *db)
{
	return db->index;
}

struct devx_evch *
devx_evch_create(struct devx_ctx *ctx)
{
	struct devx_evch *ch = calloc(1, sizeof(*ch));
	int rc;

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ctx = ctx;
	ch->fd = -1;
	rc = ctx->be->evch_create(ctx, ch);
	if (rc < 0) {
		devx_log(3, "%s: event channel creation failed: %s", ctx->name, strerror(-rc));
		free(ch);
		errno = -rc;
		return NULL;
	}
	return ch;
}

void
devx_evch_destroy(struct devx_evch *ch)
{
	if (ch == NULL)
		return;
	ch->ctx->be->evch_destroy(ch->ctx, ch);
	free(ch);
}

int
devx_evch_fd(const struct devx_evch *ch)
{
	return ch->fd;
}

int
devx_evch_subscribe(struct devx_evch *ch, struct devx_obj *obj, uint16_t type, uint64_t cookie)
{
	int rc = ch->ctx->be->evch_subscribe(ch->ctx, ch, obj, type, cookie);

	if (rc < 0)
		devx_log(3, "%s: subscribing to event 0x%x of object 0x%x failed: %s",
			 ch->ctx->name, type, obj->id, strerror(-rc));
	return rc;
}

void
devx_event_from_eqe(struct devx_event *ev, uint64_t cookie, const void *eqe)
{
	const void *d = PRM_CADDR(eqe, eqe, event_data);

	_Static_assert(sizeof(ev->data) >= PRM_SIZE(eqe_comp), "room for the EQE's data");
	ev->cookie = cookie;
	ev->type = (uint16_t)PRM_GET(eqe, eqe, event_type);
	memset(ev->data, 0, sizeof(ev->data));
	memcpy(ev->data, d, PRM_SIZE(eqe_comp));
	/* Where the object is, by event type: Linux devx.c devx_get_obj_id_from_event. */
	switch (ev->type) {
	case PRM_EVENT_COMPLETION:
		ev->obj_id = (uint32_t)PRM_GET(eqe_comp, d, cqn);
		break;
	case PRM_EVENT_CQ_ERROR:
		ev->obj_id = (uint32_t)PRM_GET(eqe_cq_err, d, cqn);
		break;
	case PRM_EVENT_WQ_CATAS_ERROR:
		ev->obj_id = (uint32_t)PRM_GET(eqe_qp_srq, d, qp_srq_n);
		break;
	default:
		ev->obj_id = (uint32_t)PRM_GET(affiliated_event_header, d, obj_id);
		break;
	}
}

int
devx_evch_read(struct devx_evch *ch, struct devx_event *ev)
{
	uint8_t eqe[PRM_SIZE(eqe)];
	uint64_t cookie;
	int rc = ch->ctx->be->evch_read(ch->ctx, ch, &cookie, eqe);

	if (rc <= 0)
		return rc;
	devx_event_from_eqe(ev, cookie, eqe);
	return 1;
}

struct devx_uar *
devx_uar_alloc(struct devx_ctx *ctx)
{
	struct devx_uar *uar = calloc(1, sizeof(*uar));
	uint64_t t0;
	int rc;

	if (uar == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	uar->ctx = ctx;
	t0 = cmd_begin();
	rc = ctx->be->uar_alloc(ctx, uar);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UAR_ALLOC", 0, 4096, uar->page_id,
		      rc < 0 ? PRM_STATUS_NO_RESOURCES : 0, 0);
	if (rc < 0) {
		devx_log(3, "%s: UAR page allocation failed: %s", ctx->name, strerror(-rc));
		free(uar);
		errno = -rc;
		return NULL;
	}
	return uar;
}

int
devx_uar_free(struct devx_uar *uar)
{
	struct devx_ctx *ctx;
	uint64_t t0;
	int rc;

	if (uar == NULL)
		return 0;
	ctx = uar->ctx;
	t0 = cmd_begin();
	rc = ctx->be->uar_free(ctx, uar);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UAR_FREE", 0, 4096, uar->page_id,
		      rc == -EBUSY ? PRM_STATUS_RES_BUSY : rc < 0 ? PRM_STATUS_BAD_RES : 0, 0);
	/* Refused, the page stays the device's (and its leak report's); the handle goes. */
	if (rc < 0)
		devx_log(3, "%s: UAR page %u not freed: %s", ctx->name, uar->page_id,
			 rc == -EBUSY ? "still used by an object of the device" : strerror(-rc));
	free(uar);
	return rc;
}

uint32_t
devx_uar_page_id(const struct devx_uar *uar)
{
	return uar->page_id;
}

void
devx_uar_ring(struct devx_uar *uar, uint32_t offset, uint64_t value)
{
	struct devx_ctx *ctx = uar->ctx;
	uint64_t t0;

	if (ctx->trace == NULL) {
		ctx->be->uar_ring(ctx, uar, offset, value);
		return;
	}
	t0 = devx_trace_now_us();
	ctx->be->uar_ring(ctx, uar, offset, value);
	devx_trace_uar_ring(ctx, t0, devx_trace_now_us(), uar->page_id, offset, value);
}

int
devx_query_eqn(struct devx_ctx *ctx, uint32_t vector, uint32_t *eqn)
{
	uint64_t t0 = cmd_begin();
	int rc = ctx->be->query_eqn(ctx, vector, eqn);

	devx_trace_op(ctx, t0, devx_trace_now_us(), "QUERY_EQN", vector, 0,
		      rc == 0 ? *eqn : 0, rc < 0 ? PRM_STATUS_BAD_PARAM : 0, 0);
	if (rc < 0)
		devx_log(3, "%s: no completion EQ for vector %u: %s", ctx->name, vector,
			 strerror(-rc));
	return rc;
}
