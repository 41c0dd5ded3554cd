/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport: what a device reaches of host memory, registered through
 * the kernel on either back end: umems (rings, doorbell records),
 * protection domains with their null mkey, and memory regions (guest
 * memory). Each failure names the device's status and syndrome, or the
 * errno with what the host lacks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "devx_priv.h"

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

/*
 * A failed operation (what: printf format): the device's status and
 * syndrome, or the errno and a hint.
 */
static void __attribute__((format(printf, 6, 7)))
log_op_failure(struct devx_ctx *ctx, int rc, uint8_t status, uint32_t syndrome,
	       const char *hint, const char *what, ...)
{
	char op[128];
	va_list ap;

	va_start(ap, what);
	vsnprintf(op, sizeof(op), what, ap);
	va_end(ap);
	if (rc == -EIO)
		devx_log(3, "%s: %s failed: status 0x%x (%s), syndrome 0x%08x", ctx->name, op,
			 status, prm_status_name(status), syndrome);
	else
		devx_log(3, "%s: %s failed: %s%s", ctx->name, op, strerror(-rc), hint);
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
	t0 = devx_cmd_begin();
	rc = ctx->be->mr_reg(ctx, mr, &status, &syndrome);
	devx_trace_mr(ctx, t0, devx_trace_now_us(), "MR_REG", mr, trace_status(rc, status),
		      syndrome);
	if (rc < 0) {
		log_op_failure(ctx, rc, status, syndrome, MEMLOCK_HINT(rc),
			       "MR_REG addr %p size %zu iova 0x%" PRIx64, addr, len, iova);
		free(mr);
		errno = -rc;
		return NULL;
	}
	DEVX_HANDLE_ADD(ctx, mrs, mr);
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
	t0 = devx_cmd_begin();
	rc = ctx->be->mr_dereg(ctx, mr, &status, &syndrome);
	devx_trace_mr(ctx, t0, devx_trace_now_us(), "MR_DEREG", mr, trace_status(rc, status),
		      syndrome);
	if (rc < 0) {
		log_op_failure(ctx, rc, status, syndrome, "", "MR_DEREG lkey 0x%x", mr->lkey);
		return rc;
	}
	DEVX_HANDLE_FREE(ctx, mrs, mr);
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
	t0 = devx_cmd_begin();
	rc = ctx->be->umem_reg(ctx, umem, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UMEM_REG", (uintptr_t)addr, size,
		      umem->id, trace_status(rc, status), syndrome);
	if (rc < 0) {
		log_op_failure(ctx, rc, status, syndrome, MEMLOCK_HINT(rc),
			       "UMEM_REG addr %p size %zu", addr, size);
		free(umem);
		errno = -rc;
		return NULL;
	}
	DEVX_HANDLE_ADD(ctx, umems, umem);
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
	t0 = devx_cmd_begin();
	rc = ctx->be->umem_dereg(ctx, umem, &status, &syndrome);
	devx_trace_op(ctx, t0, devx_trace_now_us(), "UMEM_DEREG", (uintptr_t)umem->addr,
		      umem->size, umem->id, trace_status(rc, status), syndrome);
	if (rc < 0) {
		/* A firmware status (emu), or the kernel's errno (rdma). */
		log_op_failure(ctx, rc, status, syndrome, "", "UMEM_DEREG umem 0x%x", umem->id);
		return rc;
	}
	DEVX_HANDLE_FREE(ctx, umems, umem);
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
		log_op_failure(ctx, rc, status, syndrome, "",
			       "PD_ALLOC (0x800) (protection domain, null mkey)");
		free(pd);
		errno = -rc;
		return NULL;
	}
	devx_trace_op(ctx, t0, devx_trace_now_us(), "NULL_MR", 0, 0, pd->null_mkey, 0, 0);
	DEVX_HANDLE_ADD(ctx, pds, pd);
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
		log_op_failure(ctx, rc, status, syndrome, "", "PD_FREE (0x801) pd 0x%x", pd->pdn);
		return rc;
	}
	DEVX_HANDLE_FREE(ctx, pds, pd);
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
