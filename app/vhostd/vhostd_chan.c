/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffers and line framing of the supervisor-worker channel (see vhostd_chan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "vhostd_chan.h"

void
vhostd_buf_free(struct vhostd_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int
vhostd_buf_append(struct vhostd_buf *b, const void *p, size_t n)
{
	/*
	 * What was sent (or parsed) before off is dead: dropped once it is at
	 * least half the buffer, so that a peer that reads slowly, but reads,
	 * never makes it grow by everything it was ever sent.
	 */
	if (b->off > 0 && b->off >= b->len - b->off)
		vhostd_buf_compact(b);
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (d == NULL)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void
vhostd_buf_compact(struct vhostd_buf *b)
{
	if (b->off == 0)
		return;
	memmove(b->data, b->data + b->off, b->len - b->off);
	b->len -= b->off;
	b->scan = b->scan > b->off ? b->scan - b->off : 0;
	b->off = 0;
}

ssize_t
vhostd_buf_read(int fd, struct vhostd_buf *b, size_t max)
{
	char tmp[65536];
	size_t room;
	ssize_t r;

	vhostd_buf_compact(b);
	if (b->len >= max)
		return -E2BIG;
	room = max - b->len < sizeof(tmp) ? max - b->len : sizeof(tmp);
	do
		r = read(fd, tmp, room);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (r > 0 && vhostd_buf_append(b, tmp, (size_t)r) < 0)
		return -ENOMEM;
	return r;
}

int
vhostd_buf_flush(int fd, struct vhostd_buf *b)
{
	while (b->off < b->len) {
		ssize_t w = send(fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		b->off += (size_t)w;
	}
	b->off = b->len = b->scan = 0;
	return 1;
}

int
vhostd_chan_next(struct vhostd_buf *b, json_t **msg)
{
	size_t from = b->scan > b->off ? b->scan : b->off;
	char *start = b->data + b->off;
	char *nl = b->len > from ? memchr(b->data + from, '\n', b->len - from) : NULL;
	json_error_t e;

	*msg = NULL;
	if (nl == NULL) {
		b->scan = b->len;
		return 0;
	}
	*msg = json_loadb(start, (size_t)(nl - start), JSON_REJECT_DUPLICATES, &e);
	b->off += (size_t)(nl - start) + 1;
	b->scan = b->off;
	if (*msg != NULL && !json_is_object(*msg)) {
		json_decref(*msg);
		*msg = NULL;
	}
	return *msg != NULL ? 1 : -1;
}

int
vhostd_chan_queue(struct vhostd_buf *b, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int ret;

	if (s == NULL)
		return -ENOMEM;
	ret = vhostd_buf_append(b, s, strlen(s));
	if (ret == 0)
		ret = vhostd_buf_append(b, "\n", 1);
	free(s);
	return ret;
}

int
vhostd_chan_send_blocking(int fd, json_t *msg)
{
	struct vhostd_buf b = { 0 };
	int ret = vhostd_chan_queue(&b, msg);

	while (ret == 0 && b.off < b.len) {
		ssize_t w = send(fd, b.data + b.off, b.len - b.off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			ret = -errno;
		else
			b.off += (size_t)w;
	}
	vhostd_buf_free(&b);
	return ret;
}
