/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport: doorbells and events. The virtq doorbell area, UAR pages
 * (a CQ's arm doorbell), the completion EQ a CQ names, and event channels
 * with the one reading of an EQE both back ends hand up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "devx_priv.h"

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
	t0 = devx_cmd_begin();
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
	t0 = devx_cmd_begin();
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
	uint64_t t0 = devx_cmd_begin();
	int rc = ctx->be->query_eqn(ctx, vector, eqn);

	devx_trace_op(ctx, t0, devx_trace_now_us(), "QUERY_EQN", vector, 0,
		      rc == 0 ? *eqn : 0, rc < 0 ? PRM_STATUS_BAD_PARAM : 0, 0);
	if (rc < 0)
		devx_log(3, "%s: no completion EQ for vector %u: %s", ctx->name, vector,
			 strerror(-rc));
	return rc;
}
