/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX event channels. The kernel's channel fd is a plain file: read()
 * (mlx5dv_devx_get_event) blocks until an event is queued unless the
 * program set O_NONBLOCK on it, then fails with EAGAIN; with
 * MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA each event is only
 * its cookie, and a subscription has at most one event queued (Linux
 * devx.c devx_async_event_read, dispatch_event_fd).
 *
 * Here the fd is a blocking eventfd counting queued events (a semaphore:
 * one read, one event). A thread per channel waits on the emulator's
 * channel and moves its events into the channel's queue.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "prm.h"
#include "erdma.h"

#define EV_DATA_LEN 32u

struct erdma_evch {
	struct mlx5dv_devx_event_channel pub;   /* pub.fd: the program's fd */
	struct erdma_ctx *ctx;
	struct emu_evch *emu;
	bool omit;
	int stopfd;
	pthread_t thread;
	struct erdma_handle h;
	pthread_mutex_t lock;                   /* guards q, head, n */
	struct emu_event *q;
	size_t cap, head, n;
};

/* With OMIT_EV_DATA a subscription's event is queued once until read. */
static bool
queued_cookie(struct erdma_evch *ch, uint64_t cookie)
{
	size_t i;

	for (i = 0; i < ch->n; i++)
		if (ch->q[(ch->head + i) % ch->cap].cookie == cookie)
			return true;
	return false;
}

static void
push(struct erdma_evch *ch, const struct emu_event *ev)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->omit && queued_cookie(ch, ev->cookie)) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	if (ch->n == ch->cap) {
		size_t ncap = ch->cap ? 2 * ch->cap : 64, i;
		struct emu_event *nq = malloc(ncap * sizeof(*nq));

		if (nq == NULL) {
			/* The kernel marks the channel overflowed; we say so. */
			erdma_log("event channel: out of memory, event of cookie 0x%llx dropped",
				  (unsigned long long)ev->cookie);
			pthread_mutex_unlock(&ch->lock);
			return;
		}
		for (i = 0; i < ch->n; i++)
			nq[i] = ch->q[(ch->head + i) % ch->cap];
		free(ch->q);
		ch->q = nq;
		ch->cap = ncap;
		ch->head = 0;
	}
	ch->q[(ch->head + ch->n) % ch->cap] = *ev;
	ch->n++;
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->pub.fd, &one, sizeof(one)) != sizeof(one))
		erdma_log("event channel: cannot signal the channel fd: %s", strerror(errno));
}

static void *
forwarder(void *arg)
{
	struct erdma_evch *ch = arg;
	struct pollfd pfd[2] = {
		{ .fd = emu_evch_fd(ch->emu), .events = POLLIN },
		{ .fd = ch->stopfd, .events = POLLIN },
	};

	for (;;) {
		struct emu_event ev;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		while (emu_evch_read(ch->emu, &ev) == 1)
			push(ch, &ev);
	}
	return NULL;
}

/* A channel the program did not destroy before closing its context. */
static void
release_channel(void *base)
{
	mlx5dv_devx_destroy_event_channel(&((struct erdma_evch *)base)->pub);
}

ERDMA_VISIBLE struct mlx5dv_devx_event_channel *
mlx5dv_devx_create_event_channel(struct ibv_context *context,
				 enum mlx5dv_devx_create_event_channel_flags flags)
{
	struct erdma_ctx *c = erdma_ctx(context);
	struct erdma_evch *ch;
	int rc;

	if (c == NULL || !c->devx) {
		errno = EINVAL;
		return NULL;
	}
	if (flags & ~(unsigned int)MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ctx = c;
	ch->omit = !!(flags & MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
	pthread_mutex_init(&ch->lock, NULL);
	/* Blocking, like the kernel's file, until the program sets O_NONBLOCK. */
	ch->pub.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->pub.fd < 0)
		goto err_fd;
	ch->stopfd = eventfd(0, EFD_CLOEXEC);
	if (ch->stopfd < 0)
		goto err_stop;
	ch->emu = emu_evch_create(c->emu);
	if (ch->emu == NULL)
		goto err_emu;
	rc = pthread_create(&ch->thread, NULL, forwarder, ch);
	if (rc != 0) {
		errno = rc;
		goto err_thread;
	}
	erdma_handle_add_release(c, &ch->h, ch, release_channel);
	return &ch->pub;
err_thread:
	emu_evch_destroy(ch->emu);
err_emu:
	close(ch->stopfd);
err_stop:
	close(ch->pub.fd);
err_fd:
	rc = errno;
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	errno = rc;
	return NULL;
}

ERDMA_VISIBLE void
mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *pub)
{
	struct erdma_evch *ch = (struct erdma_evch *)pub;
	uint64_t one = 1;

	erdma_handle_del(ch->ctx, &ch->h);
	if (write(ch->stopfd, &one, sizeof(one)) != sizeof(one))
		erdma_log("event channel: cannot stop its thread: %s", strerror(errno));
	pthread_join(ch->thread, NULL);
	emu_evch_destroy(ch->emu);
	close(ch->stopfd);
	close(ch->pub.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch->q);
	free(ch);
}

/* devx.c is_valid_events(): completions only of a CQ, OBJECT_CHANGE of general objects. */
static bool
valid_event(const struct emu_kobj *k, uint16_t ev)
{
	switch (ev) {
	case PRM_EVENT_COMPLETION:
		return k->create_opcode == PRM_CMD_CREATE_CQ;
	case PRM_EVENT_OBJECT_CHANGE:
		return k->create_opcode == PRM_CMD_CREATE_GENERAL_OBJECT;
	default:
		return false;
	}
}

ERDMA_VISIBLE int
mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *pub,
				 struct mlx5dv_devx_obj *obj, uint16_t events_sz,
				 uint16_t events_num[], uint64_t cookie)
{
	struct erdma_evch *ch = (struct erdma_evch *)pub;
	uint64_t t0 = erdma_now_us();
	size_t i, n = events_sz / sizeof(uint16_t);
	int rc = 0;

	if (obj == NULL) {
		erdma_unsupported("mlx5dv_devx_subscribe_devx_event for unaffiliated events",
				  EOPNOTSUPP);
		return EOPNOTSUPP;
	}
	for (i = 0; i < n; i++) {
		if (!valid_event(&obj->k, events_num[i])) {
			erdma_log("%s: event 0x%x of object 0x%x (creator 0x%x): EINVAL (Linux devx.c "
				  "is_valid_events)", ch->ctx->vctx.context.device->name,
				  events_num[i], obj->k.id, obj->k.create_opcode);
			rc = EINVAL;
			break;
		}
		if (emu_evch_subscribe(ch->emu, obj->k.create_opcode, obj->k.obj_type, obj->k.id,
				       events_num[i], cookie) < 0) {
			rc = EINVAL;
			break;
		}
	}
	erdma_trace_op(ch->ctx, "evch_subscribe", "EVCH_SUBSCRIBE", t0, "obj_id", obj->k.id,
		       cookie, n, rc ? -1 : 0);
	return rc;
}

ERDMA_VISIBLE ssize_t
mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *pub,
		      struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
	struct erdma_evch *ch = (struct erdma_evch *)pub;
	size_t need = sizeof(event_data->cookie) + (ch->omit ? 0 : EV_DATA_LEN);
	struct emu_event ev;
	uint64_t cnt;

	if (event_resp_len < need) {
		errno = ENOSPC;
		return -1;
	}
	/* Blocks, or EAGAIN when the program made the fd non-blocking. */
	if (read(pub->fd, &cnt, sizeof(cnt)) != sizeof(cnt))
		return -1;
	pthread_mutex_lock(&ch->lock);
	ev = ch->q[ch->head];
	ch->head = (ch->head + 1) % ch->cap;
	ch->n--;
	pthread_mutex_unlock(&ch->lock);
	event_data->cookie = ev.cookie;
	if (!ch->omit) {
		memcpy(event_data->out_data, ev.data, EV_DATA_LEN);
		/*
		 * A completion event carries its EQE's data: the CQ number is the
		 * last dword (Linux mlx5_eqe_comp.cqn, 24 bits), at byte 24.
		 */
		if (ev.type == PRM_EVENT_COMPLETION)
			prm_set_bits(event_data->out_data, 0xc8, 24, ev.obj_id);
	}
	return (ssize_t)need;
}
