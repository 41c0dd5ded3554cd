/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX event channels. The kernel's channel fd is a plain file: read()
 * (mlx5dv_devx_get_event) blocks until an event is queued unless the
 * program set O_NONBLOCK on it, then fails with EAGAIN; with
 * MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA each event is only
 * its cookie, and a subscription has at most one event queued (Linux
 * devx.c devx_async_event_read, dispatch_event_fd).
 *
 * What a read returns is the kernel's: the 8-byte cookie and the whole
 * 64-byte EQE the device wrote (deliver_event copies struct mlx5_eqe:
 * type at byte 1, data at byte 32), or the cookie alone with OMIT_EV_DATA;
 * a buffer shorter than that is EINVAL and the event stays queued.
 * The kernel's list has no bound, but an event it cannot allocate is lost
 * and the next read fails once with EOVERFLOW (is_overflow_err): here when
 * this library runs out of memory, or when the device's channel dropped
 * the event (a test bounds it and holds it back, emu_evch_hold: the
 * control socket's evch_hold), before it reached the list.
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

struct erdma_evch {
	struct mlx5dv_devx_event_channel pub;   /* pub.fd: the program's fd */
	struct erdma_ctx *ctx;
	struct emu_evch *emu;
	bool omit;
	int stopfd;
	pthread_t thread;
	struct erdma_handle h;
	pthread_mutex_t lock;                   /* guards the rest */
	struct emu_event *q;
	size_t cap, head, n;
	bool overflow;                          /* devx.c is_overflow_err */
};

/*
 * With OMIT_EV_DATA a subscription's event is queued once until read
 * (devx.c deliver_event: event_sub->event_list already on the list).
 * Per subscription, not per cookie: two subscriptions sharing a cookie
 * (two event types of an object, or two objects) each queue theirs.
 */
static bool
queued_sub(struct erdma_evch *ch, uint64_t sub)
{
	size_t i;

	for (i = 0; i < ch->n; i++)
		if (ch->q[(ch->head + i) % ch->cap].sub == sub)
			return true;
	return false;
}

/* An event the kernel could not queue: lost, and the next read says so once. */
static void
overflow(struct erdma_evch *ch, const struct emu_event *ev, const char *why)
{
	ch->overflow = true;
	erdma_log("%s: event channel: %s, event 0x%x of cookie 0x%llx dropped: the next read "
		  "fails with EOVERFLOW (Linux devx.c deliver_event, is_overflow_err)",
		  ch->ctx->vctx.context.device->name, why, ev->type,
		  (unsigned long long)ev->cookie);
}

static void
push(struct erdma_evch *ch, const struct emu_event *ev)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->omit && queued_sub(ch, ev->sub)) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	if (ch->n == ch->cap) {
		size_t ncap = ch->cap ? 2 * ch->cap : 64, i;
		struct emu_event *nq = malloc(ncap * sizeof(*nq));

		if (nq == NULL) {
			overflow(ch, ev, "out of memory");
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
		int rc;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		while ((rc = emu_evch_read(ch->emu, &ev)) != 0) {
			if (rc == 1) {
				push(ch, &ev);
				continue;
			}
			/*
			 * Events lost before they reached the list (the test's bound,
			 * emu_evch_hold): the program learns it as from the kernel.
			 */
			pthread_mutex_lock(&ch->lock);
			ch->overflow = true;
			pthread_mutex_unlock(&ch->lock);
		}
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
	/* The kernel's rules (is_valid_events: the device's event caps), then ours below. */
	if (emu_kernel_check_subscribe(ch->ctx->emu, &obj->k, events_num, n) < 0) {
		erdma_trace_op(ch->ctx, "evch_subscribe", "EVCH_SUBSCRIBE", t0, "obj_id", obj->k.id,
			       cookie, n, -1);
		return EINVAL;
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
	/* devx_async_event_read: the cookie, then sizeof(struct mlx5_eqe) unless OMIT_EV_DATA. */
	size_t need = sizeof(event_data->cookie) + (ch->omit ? 0 : PRM_SIZE(eqe));
	struct emu_event ev;
	uint64_t cnt = 1;

	_Static_assert(sizeof(ev.eqe) == PRM_SIZE(eqe), "the kernel copies a whole EQE");
	pthread_mutex_lock(&ch->lock);
	/* The overflow first, once, whatever is queued (devx_async_event_read). */
	if (ch->overflow) {
		ch->overflow = false;
		pthread_mutex_unlock(&ch->lock);
		errno = EOVERFLOW;
		return -1;
	}
	pthread_mutex_unlock(&ch->lock);
	/* Blocks, or EAGAIN when the program made the fd non-blocking. */
	if (read(pub->fd, &cnt, sizeof(cnt)) != sizeof(cnt))
		return -1;
	pthread_mutex_lock(&ch->lock);
	if (event_resp_len < need) {
		/* The event stays queued: its count goes back on the fd. */
		pthread_mutex_unlock(&ch->lock);
		if (write(pub->fd, &cnt, sizeof(cnt)) != sizeof(cnt))
			erdma_log("event channel: cannot signal the channel fd: %s",
				  strerror(errno));
		erdma_log("%s: mlx5dv_devx_get_event with %zu bytes, an event takes %zu: EINVAL "
			  "(Linux devx.c devx_async_event_read)",
			  ch->ctx->vctx.context.device->name,
			  event_resp_len, need);
		errno = EINVAL;
		return -1;
	}
	ev = ch->q[ch->head];
	ch->head = (ch->head + 1) % ch->cap;
	ch->n--;
	pthread_mutex_unlock(&ch->lock);
	event_data->cookie = ev.cookie;
	if (!ch->omit)
		memcpy(event_data->out_data, ev.eqe, PRM_SIZE(eqe));
	/* Traced as read (a test orders a CQ's arms and events): the object, the type. */
	erdma_trace_op(ch->ctx, "get_event", "EVENT", erdma_now_us(), "obj_id", ev.obj_id,
		       ev.type, need, 0);
	return (ssize_t)need;
}
