/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front end: the connection and its message transport, with
 * the rule of which requests wait for a REPLY_ACK. The requests themselves
 * are in vu_msg.c, the device sequences in QEMU's order in vu_device.c.
 *
 * Wire format (vhost-user spec, "Message Specification"): a 12-byte header
 * {request, flags, size} in native byte order, then size bytes of payload;
 * file descriptors travel as SCM_RIGHTS ancillary data of the same sendmsg.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vu_client_int.h"

#define VU_DEFAULT_TIMEOUT_MS 30000

static int64_t
vu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void (*_Atomic stall_hook)(uint32_t request, const char *what);

void
vu_set_stall_hook(void (*hook)(uint32_t request, const char *what))
{
	stall_hook = hook;
}

static void
vu_stalled(uint32_t request, const char *what)
{
	void (*hook)(uint32_t, const char *) = stall_hook;

	if (hook != NULL)
		hook(request, what);
}

static int
vu_dead(struct vu_client *c)
{
	c->dead = true;
	return -ECONNRESET;
}

int
vu_connect(struct vu_client **out, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = vu_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct vu_client *c;
	int fd, err;

	*out = NULL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		err = -errno;
		close(fd);
		/* Only "not there yet" is worth waiting for. */
		if ((err != -ENOENT && err != -ECONNREFUSED && err != -EAGAIN) ||
		    vu_now_ms() >= deadline)
			return err;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return -ENOMEM;
	}
	c->sock = fd;
	c->timeout_ms = VU_DEFAULT_TIMEOUT_MS;
	*out = c;
	return 0;
}

void
vu_disconnect(struct vu_client *c)
{
	if (c == NULL)
		return;
	close(c->sock);
	free(c);
}

void
vu_set_reply_timeout(struct vu_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

void
vu_set_ack_policy(struct vu_client *c, enum vu_ack_policy p)
{
	c->ack_policy = p;
}

int
vu_client_fd(const struct vu_client *c)
{
	return c->sock;
}

uint64_t
vu_backend_features(const struct vu_client *c)
{
	return c->features;
}

uint64_t
vu_acked_features(const struct vu_client *c)
{
	return c->acked | (c->logging ? 1ULL << VU_F_LOG_ALL : 0);
}

uint64_t
vu_protocol_features(const struct vu_client *c)
{
	return c->protocol;
}

/* ---- transport ---- */

int
vu_send_raw(struct vu_client *c, uint32_t request, uint32_t flags,
	    const void *payload, uint32_t size, const int *fds, unsigned int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VU_MAX_FDS)];
	struct vu_msg_hdr hdr = { request, flags, size };
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	size_t total = sizeof(hdr) + size, sent = 0;
	int64_t deadline;
	ssize_t n;

	if (c->dead)
		return -ECONNRESET;
	if (nfds > VU_MAX_FDS || (size != 0 && payload == NULL))
		return -EINVAL;
	if (nfds != 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	deadline = c->timeout_ms >= 0 ? vu_now_ms() + c->timeout_ms : INT64_MAX;
	while (sent < total) {
		/*
		 * NOSIGNAL: a vanished peer is an error code, not a SIGPIPE.
		 * DONTWAIT and a poll bounded by the reply timeout: a back end
		 * that stopped reading fails the request, named, instead of
		 * blocking the caller for ever.
		 */
		n = sendmsg(c->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = { .fd = c->sock, .events = POLLOUT };
				int64_t left = deadline - vu_now_ms();

				if (left <= 0 || poll(&p, 1, deadline == INT64_MAX ? -1 :
						      (int)(left > INT32_MAX ? INT32_MAX : left)) == 0) {
					fprintf(stderr, "vu: request %u: the back end has read nothing "
						"for %d ms (its socket is full)\n", request,
						c->timeout_ms);
					vu_stalled(request, "the back end read nothing");
					return -ETIMEDOUT;
				}
				continue;
			}
			if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
				return vu_dead(c);
			return -errno;
		}
		sent += (size_t)n;
		/* Partial write: the fds went with the first byte; send the rest. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		while (mh.msg_iovlen != 0 && (size_t)n >= mh.msg_iov[0].iov_len) {
			n -= (ssize_t)mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen != 0) {
			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
			mh.msg_iov[0].iov_len -= (size_t)n;
		}
	}
	c->requests++;
	return 0;
}

static void
vu_close_cmsg_fds(struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		size_t i, n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	}
}

/* Read exactly len bytes before the deadline. */
static int
vu_read_full(struct vu_client *c, void *buf, size_t len, int64_t deadline)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VU_MAX_FDS)];
	size_t got = 0;

	while (got < len) {
		struct iovec iov = { (char *)buf + got, len - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct pollfd pfd = { .fd = c->sock, .events = POLLIN };
		int64_t left = deadline - vu_now_ms();
		ssize_t n;
		int r;

		if (left < 0)
			left = 0;
		if (deadline == INT64_MAX)
			left = -1;
		r = poll(&pfd, 1, (int)(left > 1000000 ? 1000000 : left));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ETIMEDOUT;
		n = recvmsg(c->sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ECONNRESET || errno == ENOTCONN)
				return vu_dead(c);
			return -errno;
		}
		/* Our requests never expect fds in a reply: do not leak them. */
		vu_close_cmsg_fds(&mh);
		if (n == 0)
			return vu_dead(c);
		got += (size_t)n;
	}
	return 0;
}

int
vu_recv_raw(struct vu_client *c, struct vu_msg_hdr *hdr, void *payload, uint32_t cap,
	    int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : vu_now_ms() + timeout_ms;
	uint8_t drain[256];
	uint32_t left;
	int ret;

	if (c->dead)
		return -ECONNRESET;
	ret = vu_read_full(c, hdr, sizeof(*hdr), deadline);
	if (ret < 0)
		return ret;
	if (hdr->size > VU_MAX_PAYLOAD) {
		/* A size we refuse to read: the stream cannot be resynchronised. */
		c->dead = true;
		return -EPROTO;
	}
	ret = vu_read_full(c, payload, hdr->size < cap ? hdr->size : cap, deadline);
	if (ret < 0)
		return ret;
	for (left = hdr->size > cap ? hdr->size - cap : 0; left != 0;) {
		uint32_t n = left < sizeof(drain) ? left : sizeof(drain);

		ret = vu_read_full(c, drain, n, deadline);
		if (ret < 0)
			return ret;
		left -= n;
	}
	return hdr->size > cap ? -EMSGSIZE : (int)hdr->size;
}

/* Read the reply to request; returns its payload size. */
int
vu_read_reply(struct vu_client *c, uint32_t request, void *reply, uint32_t cap)
{
	struct vu_msg_hdr hdr;
	int ret;

	ret = vu_recv_raw(c, &hdr, reply, cap, c->timeout_ms);
	if (ret == -ETIMEDOUT)
		vu_stalled(request, "no reply");
	if (ret < 0)
		return ret;
	/* A reply names the request and carries REPLY with version 1. */
	if (hdr.request != request || !(hdr.flags & VU_FLAG_REPLY) ||
	    (hdr.flags & 0x3) != VU_FLAG_VERSION)
		return -EPROTO;
	c->replies++;
	return ret;
}

void
vu_counts(const struct vu_client *c, uint64_t *requests, uint64_t *replies)
{
	*requests = c->requests;
	*replies = c->replies;
}

/*
 * Whether a request without a reply of its own asks for an ack. QEMU's
 * hw/virtio/vhost-user.c waits for SET_MEM_TABLE, SET_VRING_ENABLE (since
 * 8.2, "call VHOST_USER_SET_VRING_ENABLE synchronously"), and for
 * SET_FEATURES and SET_VRING_ADDR only when they turn logging on
 * (LOG_ALL, VHOST_VRING_F_LOG: "make sure backend is actually logging").
 */
static bool
vu_wants_ack(const struct vu_client *c, uint32_t request, const void *payload, uint32_t size)
{
	uint64_t u64 = 0;
	uint32_t flags = 0;

	if (c->ack_policy == VU_ACK_EVERY)
		return true;
	switch (request) {
	case VU_SET_MEM_TABLE:
	case VU_SET_VRING_ENABLE:
		return true;
	case VU_SET_FEATURES:
		if (size >= sizeof(u64))
			memcpy(&u64, payload, sizeof(u64));
		return (u64 >> VU_F_LOG_ALL) & 1;
	case VU_SET_VRING_ADDR:
		/* struct vu_vring_addr (vu_msg.c): u32 index, u32 flags, ... */
		if (size >= 2 * sizeof(flags))
			memcpy(&flags, (const uint8_t *)payload + sizeof(flags), sizeof(flags));
		return flags & VU_VRING_F_LOG;
	default:
		return false;
	}
}

int
vu_request(struct vu_client *c, uint32_t request, const void *payload, uint32_t size,
	   const int *fds, unsigned int nfds, void *reply, uint32_t reply_cap)
{
	/*
	 * REPLY_ACK: a request without its own reply may ask for an ack, a
	 * u64 that is 0 on success. Once negotiated we ask for every request
	 * (VU_ACK_EVERY), so that a failure is reported to the caller instead
	 * of silently ignored, or where QEMU asks (VU_ACK_QEMU).
	 */
	bool ack = reply_cap == 0 && vu_has_proto(c, VU_PROTO_REPLY_ACK) &&
		   vu_wants_ack(c, request, payload, size);
	uint32_t flags = VU_FLAG_VERSION | (ack ? VU_FLAG_NEED_REPLY : 0);
	uint64_t ackval = 0;
	int ret;

	ret = vu_send_raw(c, request, flags, payload, size, fds, nfds);
	if (ret < 0)
		return ret;
	if (reply_cap != 0)
		return vu_read_reply(c, request, reply, reply_cap);
	if (!ack)
		return 0;
	ret = vu_read_reply(c, request, &ackval, sizeof(ackval));
	if (ret < 0)
		return ret;
	if (ret != sizeof(ackval))
		return -EPROTO;
	return ackval == 0 ? 0 : -EIO;
}
