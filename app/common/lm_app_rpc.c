/* SPDX-License-Identifier: BSD-3-Clause */
/* A client of mlx5-lm-vhostd's JSON-RPC control socket (see lm_app_rpc.h). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "lm_app_rpc.h"

/* The service bounds a request to 1 MiB; a device's statistics are far smaller. */
#define RPC_READ_CHUNK 65536

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/*
 * Bound fd's next blocking connect or send by what is left until deadline
 * (ms, now_ms()'s clock): a unix socket's connect waits for room in the
 * service's queue of connections and a send for room in its buffer, each
 * at most SO_SNDTIMEO, then fails with EAGAIN. -1 with errno EAGAIN when
 * no time is left (a timeout of 0 would mean no bound at all).
 */
static int
bound_send(int fd, double deadline)
{
	double left = deadline - now_ms();
	struct timeval tv;

	if (left < 1) {
		errno = EAGAIN;
		return -1;
	}
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)((left - tv.tv_sec * 1e3) * 1e3);
	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/*
 * c->fd, connected to c->path by deadline (timeout_ms after the call
 * began, for the message). 0, or -1 with why in err.
 */
static int
connect_path(struct lm_app_rpc *c, double deadline, int timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int r = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd >= 0) {
		do
			r = bound_send(c->fd, deadline) < 0 ? -1 :
			    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
		while (r < 0 && errno == EINTR);
	}
	if (r == 0)
		return 0;
	/* A live service that takes no connection: its queue full (busy, stopped, hung). */
	if (c->fd >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		snprintf(err, errlen, "the service at %s did not accept the connection within "
			 "%g s", c->path, timeout_ms / 1e3);
	else
		snprintf(err, errlen, "cannot reach mlx5-lm-vhostd at %s: %s", c->path,
			 strerror(errno));
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	return -1;
}

/* c set up for path and connected to it by deadline. 0, or -1 with why in err. */
static int
open_by(struct lm_app_rpc *c, const char *path, double deadline, int timeout_ms, char *err,
	size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path) ||
	    strlen(path) >= sizeof(c->path)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -1;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	return connect_path(c, deadline, timeout_ms, err, errlen);
}

int
lm_app_rpc_open(struct lm_app_rpc *c, const char *path, int timeout_ms, char *err,
		size_t errlen)
{
	return open_by(c, path, now_ms() + timeout_ms, timeout_ms, err, errlen);
}

void
lm_app_rpc_close(struct lm_app_rpc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

/*
 * The service closes a control connection that sat idle for its
 * --rpc-idle-timeout (30 s by default), and never one with a call in
 * flight: a client keeping its connection between calls far apart (migrate
 * --service, across a stage) finds it closed by then (the end of its
 * stream read: nothing more will come), and connects again. Replies it
 * read and has not taken yet stay. 0, or -1 with why in err.
 */
static int
reopen_if_closed(struct lm_app_rpc *c, double deadline, int timeout_ms, char *err,
		 size_t errlen)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	char b;

	/* A service that was down at the last try (restarting) may be back. */
	if (c->fd < 0)
		return connect_path(c, deadline, timeout_ms, err, errlen);
	if (poll(&p, 1, 0) != 1 || recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0)
		return 0;
	close(c->fd);
	return connect_path(c, deadline, timeout_ms, err, errlen);
}

/* lm_app_rpc_send() by deadline (timeout_ms after the call began, for the messages). */
static int
send_by(struct lm_app_rpc *c, const char *method, json_t *params, json_int_t id,
	double deadline, int timeout_ms, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
	char *text = NULL;
	size_t len, off = 0;
	int ret = -1;

	if (reopen_if_closed(c, deadline, timeout_ms, err, errlen) < 0) {
		json_decref(req);
		return -1;
	}
	if (req != NULL && params != NULL)
		json_object_set(req, "params", params);
	if (req != NULL)
		text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (text == NULL) {
		snprintf(err, errlen, "%s: cannot encode the request", method);
		return -1;
	}
	len = strlen(text);
	while (off < len) {
		ssize_t w = bound_send(c->fd, deadline) < 0 ? -1 :
			    send(c->fd, text + off, len - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		/* A service that reads nothing (stopped, hung) with its buffer full. */
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			snprintf(err, errlen, "the service at %s did not take the request within "
				 "%g s", c->path, timeout_ms / 1e3);
			goto out;
		}
		if (w < 0) {
			snprintf(err, errlen, "cannot send to %s: %s", c->path, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	ret = 0;
out:
	free(text);
	return ret;
}

int
lm_app_rpc_send(struct lm_app_rpc *c, const char *method, json_t *params, json_int_t id,
		int timeout_ms, char *err, size_t errlen)
{
	return send_by(c, method, params, id, now_ms() + timeout_ms, timeout_ms, err, errlen);
}

/* A whole reply at the start of c->buf (consumed), or NULL: incomplete (*bad false) or not JSON. */
static json_t *
take_reply(struct lm_app_rpc *c, bool *bad, char *err, size_t errlen)
{
	json_error_t e;
	json_t *reply;
	size_t skip = 0;

	*bad = false;
	/* The service ends every reply with a newline. */
	while (skip < c->len && (c->buf[skip] == '\n' || c->buf[skip] == ' '))
		skip++;
	if (skip == c->len) {
		c->len = 0;
		return NULL;
	}
	reply = json_loadb(c->buf + skip, c->len - skip, JSON_DISABLE_EOF_CHECK, &e);
	if (reply == NULL) {
		if (json_error_code(&e) == json_error_premature_end_of_input)
			return NULL;
		snprintf(err, errlen, "unreadable reply from %s: %s", c->path, e.text);
		*bad = true;
		return NULL;
	}
	/* With JSON_DISABLE_EOF_CHECK, position is what the value took. */
	skip += (size_t)e.position;
	memmove(c->buf, c->buf + skip, c->len - skip);
	c->len -= skip;
	return reply;
}

/* lm_app_rpc_recv() by deadline (timeout_ms after the call began, for the message). */
static json_t *
recv_by(struct lm_app_rpc *c, double deadline, int timeout_ms, char *err, size_t errlen)
{
	json_t *reply;
	bool bad;

	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		double left;
		ssize_t r;

		reply = take_reply(c, &bad, err, errlen);
		if (reply != NULL || bad)
			return reply;
		left = deadline - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left + 1) == 0) {
			snprintf(err, errlen, "no reply from %s within %d ms", c->path, timeout_ms);
			return NULL;
		}
		if (c->len + RPC_READ_CHUNK > c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 2 * RPC_READ_CHUNK;
			char *b = realloc(c->buf, cap);

			if (b == NULL) {
				snprintf(err, errlen, "out of memory reading a reply");
				return NULL;
			}
			c->buf = b;
			c->cap = cap;
		}
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "%s closed the connection without a reply", c->path);
			return NULL;
		}
		c->len += (size_t)r;
	}
}

json_t *
lm_app_rpc_recv(struct lm_app_rpc *c, int timeout_ms, char *err, size_t errlen)
{
	return recv_by(c, now_ms() + timeout_ms, timeout_ms, err, errlen);
}

json_t *
lm_app_rpc_once(const char *path, const char *method, json_t *params, int timeout_ms,
		char *err, size_t errlen)
{
	double deadline = now_ms() + timeout_ms;
	struct lm_app_rpc c = { .fd = -1 };
	json_t *reply = NULL;

	/* One deadline for the three: a service that never accepts costs timeout_ms, no more. */
	if (open_by(&c, path, deadline, timeout_ms, err, errlen) == 0 &&
	    send_by(&c, method, params, 1, deadline, timeout_ms, err, errlen) == 0)
		reply = recv_by(&c, deadline, timeout_ms, err, errlen);
	lm_app_rpc_close(&c);
	return reply;
}

json_t *
lm_app_rpc_call(struct lm_app_rpc *c, const char *method, json_t *params, int timeout_ms,
		int *code, char *err, size_t errlen)
{
	double deadline = now_ms() + timeout_ms;
	json_int_t id = ++c->next_id;
	json_t *reply, *e, *result;

	*code = 0;
	/* timeout_ms bounds the whole call: a connect again, the send and the reply. */
	if (send_by(c, method, params, id, deadline, timeout_ms, err, errlen) < 0)
		return NULL;
	reply = recv_by(c, deadline, timeout_ms, err, errlen);
	if (reply == NULL)
		return NULL;
	if (json_integer_value(json_object_get(reply, "id")) != id) {
		snprintf(err, errlen, "%s: a reply to another request (id %lld, not %lld)", method,
			 (long long)json_integer_value(json_object_get(reply, "id")),
			 (long long)id);
		json_decref(reply);
		return NULL;
	}
	e = json_object_get(reply, "error");
	if (e != NULL) {
		const char *m = json_string_value(json_object_get(e, "message"));

		*code = (int)json_integer_value(json_object_get(e, "code"));
		snprintf(err, errlen, "%s: error %d: %s", method, *code, m != NULL ? m : "?");
		json_decref(reply);
		return NULL;
	}
	result = json_incref(json_object_get(reply, "result"));
	json_decref(reply);
	if (result == NULL)
		snprintf(err, errlen, "%s: a reply without a result", method);
	return result;
}
