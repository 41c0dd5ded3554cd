/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front end: message transport, individual requests, and the
 * device start/stop/log sequences in the order QEMU uses them.
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

#include "vu_client.h"

#define VU_DEFAULT_TIMEOUT_MS 30000
#define VU_MAX_RINGS 256

struct vu_client {
	int sock;
	int timeout_ms;
	bool dead;			/* peer gone: every later call fails fast */
	bool handshake;			/* features/protocol/owner done */
	uint64_t features;		/* offered by the back end */
	uint64_t acked;			/* last SET_FEATURES without LOG_ALL */
	uint64_t protocol;		/* negotiated protocol features */
	bool protocol_sent;
	uint64_t queue_num;
	bool logging;
	bool started;			/* between start and stop: rings configured */
	bool qemu_log_addr;		/* packed: log address as QEMU sends it */
	struct vu_guest *guest;		/* rings configured by the last start */
	unsigned int nrings;
	enum vu_ack_policy ack_policy;
};

static int64_t
vu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
static int
vu_read_reply(struct vu_client *c, uint32_t request, void *reply, uint32_t cap)
{
	struct vu_msg_hdr hdr;
	int ret;

	ret = vu_recv_raw(c, &hdr, reply, cap, c->timeout_ms);
	if (ret < 0)
		return ret;
	/* A reply names the request and carries REPLY with version 1. */
	if (hdr.request != request || !(hdr.flags & VU_FLAG_REPLY) ||
	    (hdr.flags & 0x3) != VU_FLAG_VERSION)
		return -EPROTO;
	return ret;
}

static bool
vu_has_proto(const struct vu_client *c, unsigned int bit)
{
	return (c->protocol >> bit) & 1;
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
		/* struct vu_vring_addr: u32 index, u32 flags, ... */
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

/* ---- individual messages ---- */

static int
vu_get_u64(struct vu_client *c, uint32_t request, uint64_t *val)
{
	int ret = vu_request(c, request, NULL, 0, NULL, 0, val, sizeof(*val));

	if (ret >= 0 && ret != sizeof(*val))
		return -EPROTO;
	return ret < 0 ? ret : 0;
}

static int
vu_set_u64(struct vu_client *c, uint32_t request, uint64_t val)
{
	return vu_request(c, request, &val, sizeof(val), NULL, 0, NULL, 0);
}

struct vu_vring_state {
	uint32_t index;
	uint32_t num;
};

struct vu_vring_addr {
	uint32_t index;
	uint32_t flags;
	uint64_t desc;
	uint64_t used;
	uint64_t avail;
	uint64_t log;
};

int
vu_get_features(struct vu_client *c, uint64_t *features)
{
	return vu_get_u64(c, VU_GET_FEATURES, features);
}

static int vu_add_status(struct vu_client *c, uint8_t bits);

int
vu_set_features(struct vu_client *c, uint64_t features)
{
	int ret = vu_set_u64(c, VU_SET_FEATURES, features);

	/* QEMU follows every SET_FEATURES with FEATURES_OK, as a driver would. */
	if (ret == 0 && c->ack_policy == VU_ACK_QEMU && vu_has_proto(c, VU_PROTO_STATUS))
		ret = vu_add_status(c, VU_STATUS_FEATURES_OK);
	return ret;
}

int
vu_set_owner(struct vu_client *c)
{
	return vu_request(c, VU_SET_OWNER, NULL, 0, NULL, 0, NULL, 0);
}

int
vu_get_protocol_features(struct vu_client *c, uint64_t *features)
{
	return vu_get_u64(c, VU_GET_PROTOCOL_FEATURES, features);
}

int
vu_set_protocol_features(struct vu_client *c, uint64_t features)
{
	int ret;

	/* Not acked: REPLY_ACK is only in force once this message is sent. */
	ret = vu_set_u64(c, VU_SET_PROTOCOL_FEATURES, features);
	if (ret == 0) {
		c->protocol = features;
		c->protocol_sent = true;
	}
	return ret;
}

int
vu_get_queue_num(struct vu_client *c, uint64_t *num)
{
	return vu_get_u64(c, VU_GET_QUEUE_NUM, num);
}

int
vu_set_mem_table_raw(struct vu_client *c, const struct vu_wire_region *r, unsigned int n)
{
	uint8_t buf[8 + 32 * VU_MAX_FDS];
	int fds[VU_MAX_FDS];
	uint32_t nr = n;
	unsigned int i;

	if (n > VU_MAX_FDS)
		return -EINVAL;
	/* Payload: u32 nregions, u32 padding, then {gpa, size, uaddr, offset}. */
	memset(buf, 0, 8);
	memcpy(buf, &nr, 4);
	for (i = 0; i < n; i++) {
		uint64_t v[4] = { r[i].gpa, r[i].size, r[i].uaddr, r[i].mmap_offset };

		memcpy(buf + 8 + 32 * i, v, sizeof(v));
		fds[i] = r[i].fd;
	}
	return vu_request(c, VU_SET_MEM_TABLE, buf, 8 + 32 * n, fds, n, NULL, 0);
}

int
vu_set_mem_table(struct vu_client *c, const struct vu_mem *m)
{
	struct vu_wire_region r[VU_MEM_MAX_REGIONS];
	unsigned int i;

	/* One fd per region: the same memfd, each with its own offset. */
	for (i = 0; i < m->nregions; i++) {
		r[i].gpa = m->regions[i].gpa;
		r[i].size = m->regions[i].size;
		r[i].uaddr = vu_mem_region_uaddr(m, i);
		r[i].mmap_offset = m->regions[i].offset;
		r[i].fd = m->fd;
	}
	return vu_set_mem_table_raw(c, r, m->nregions);
}

int
vu_set_log_base(struct vu_client *c, int fd, uint64_t size, uint64_t offset)
{
	uint64_t p[2] = { size, offset };
	uint64_t reply = 0;
	int ret;

	ret = vu_send_raw(c, VU_SET_LOG_BASE, VU_FLAG_VERSION, p, sizeof(p), &fd, 1);
	if (ret < 0 || !vu_has_proto(c, VU_PROTO_LOG_SHMFD))
		return ret;
	/*
	 * With LOG_SHMFD the back end answers once it has mapped the log, so
	 * nothing is written unlogged afterwards. The spec leaves the payload
	 * open: accept none, or a u64 that must be 0.
	 */
	ret = vu_read_reply(c, VU_SET_LOG_BASE, &reply, sizeof(reply));
	if (ret < 0)
		return ret;
	return ret == sizeof(reply) && reply != 0 ? -EIO : 0;
}

int
vu_get_config(struct vu_client *c, uint32_t offset, uint32_t size, void *buf, uint32_t cap)
{
	/* Payload: u32 offset, u32 size, u32 flags, then the config bytes (at most 256). */
	uint8_t msg[12 + 256], reply[12 + 256];
	uint32_t got;
	int ret;

	memset(msg, 0, sizeof(msg));
	memcpy(msg, &offset, 4);
	memcpy(msg + 4, &size, 4);
	ret = vu_request(c, VU_GET_CONFIG, msg, sizeof(msg), NULL, 0, reply, sizeof(reply));
	if (ret < 0)
		return ret;
	/* A refusal is a reply without payload (or one shorter than its header). */
	if (ret < 12)
		return 0;
	/* The reply's own size field says how much of the region is config. */
	memcpy(&got, reply + 4, 4);
	if (got > (uint32_t)ret - 12)
		got = (uint32_t)ret - 12;
	memcpy(buf, reply + 12, got < cap ? got : cap);
	return (int)got;
}

int
vu_set_vring_num(struct vu_client *c, uint32_t index, uint32_t num)
{
	struct vu_vring_state s = { index, num };

	return vu_request(c, VU_SET_VRING_NUM, &s, sizeof(s), NULL, 0, NULL, 0);
}

int
vu_set_vring_addr(struct vu_client *c, uint32_t index, uint32_t flags, uint64_t desc,
		  uint64_t used, uint64_t avail, uint64_t log)
{
	struct vu_vring_addr a = { index, flags, desc, used, avail, log };

	return vu_request(c, VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL, 0);
}

int
vu_set_vring_base(struct vu_client *c, uint32_t index, uint32_t num)
{
	struct vu_vring_state s = { index, num };

	return vu_request(c, VU_SET_VRING_BASE, &s, sizeof(s), NULL, 0, NULL, 0);
}

int
vu_get_vring_base(struct vu_client *c, uint32_t index, uint32_t *num)
{
	struct vu_vring_state s = { index, 0 };
	int ret;

	ret = vu_request(c, VU_GET_VRING_BASE, &s, sizeof(s), NULL, 0, &s, sizeof(s));
	if (ret < 0)
		return ret;
	if (ret != sizeof(s) || s.index != index)
		return -EPROTO;
	*num = s.num;
	return 0;
}

static int
vu_set_vring_fd(struct vu_client *c, uint32_t request, uint32_t index, int fd)
{
	uint64_t v = index & 0xff;

	if (fd < 0) {
		v |= VU_VRING_NOFD;
		return vu_request(c, request, &v, sizeof(v), NULL, 0, NULL, 0);
	}
	return vu_request(c, request, &v, sizeof(v), &fd, 1, NULL, 0);
}

int
vu_set_vring_kick(struct vu_client *c, uint32_t index, int fd)
{
	return vu_set_vring_fd(c, VU_SET_VRING_KICK, index, fd);
}

int
vu_set_vring_call(struct vu_client *c, uint32_t index, int fd)
{
	return vu_set_vring_fd(c, VU_SET_VRING_CALL, index, fd);
}

int
vu_set_vring_enable(struct vu_client *c, uint32_t index, bool enable)
{
	struct vu_vring_state s = { index, enable ? 1 : 0 };

	return vu_request(c, VU_SET_VRING_ENABLE, &s, sizeof(s), NULL, 0, NULL, 0);
}

int
vu_set_status(struct vu_client *c, uint8_t status)
{
	return vu_set_u64(c, VU_SET_STATUS, status);
}

int
vu_get_status(struct vu_client *c, uint8_t *status)
{
	uint64_t v;
	int ret = vu_get_u64(c, VU_GET_STATUS, &v);

	if (ret == 0)
		*status = (uint8_t)v;
	return ret;
}

/* QEMU's way to set status bits: read the status, write it only if bits are missing. */
static int
vu_add_status(struct vu_client *c, uint8_t bits)
{
	uint8_t s;
	int ret = vu_get_status(c, &s);

	if (ret < 0 || (s & bits) == bits)
		return ret;
	return vu_set_status(c, s | bits);
}

/* ---- device lifecycle ---- */

int
vu_device_init(struct vu_client *c, const struct vu_start_opts *o)
{
	static const struct vu_start_opts defaults;
	uint64_t want, offered = 0;
	int ret;

	if (c->handshake)
		return 0;
	if (o == NULL)
		o = &defaults;
	want = o->protocol_features;
	ret = vu_get_features(c, &c->features);
	if (ret < 0)
		return ret;
	if (want == 0)
		want = VU_PROTO_DEFAULT;
	want &= ~VU_PROTO_EXPLICIT;
	/* Protocol features exist only if the back end offers bit 30. */
	if (c->features & (1ULL << VU_F_PROTOCOL_FEATURES)) {
		ret = vu_get_protocol_features(c, &offered);
		if (ret < 0)
			return ret;
		ret = vu_set_protocol_features(c, offered & want);
		if (ret < 0)
			return ret;
	}
	c->queue_num = 1;
	if (vu_has_proto(c, VU_PROTO_MQ)) {
		ret = vu_get_queue_num(c, &c->queue_num);
		if (ret < 0)
			return ret;
	}
	ret = vu_set_owner(c);
	if (ret < 0)
		return ret;
	c->handshake = true;
	return 0;
}

static uint64_t
vu_uaddr(const void *p)
{
	/*
	 * Ring addresses are in the front end's address space (QEMU's VA),
	 * which SET_MEM_TABLE's userspace_addr lets the back end translate.
	 */
	return (uint64_t)(uintptr_t)p;
}

static int
vu_send_ring_addr(struct vu_client *c, struct vu_guest *g, unsigned int i)
{
	struct vu_ring_info ri;
	int ret;

	ret = vu_guest_ring_info(g, i, &ri);
	if (ret < 0)
		return ret;
	/*
	 * QEMU always sends the GPA of what it calls the used ring, which for
	 * a packed ring is the device area; but the device writes used
	 * descriptors into the descriptor ring, and back ends (DPDK) log them
	 * relative to this address. The ring's own log_gpa is the default.
	 */
	if (c->qemu_log_addr)
		ri.log_gpa = ri.used_gpa;
	/* Payload order is desc, used, avail, log (vhost_vring_addr). */
	return vu_set_vring_addr(c, i, c->logging ? VU_VRING_F_LOG : 0, vu_uaddr(ri.desc),
				 vu_uaddr(ri.used), vu_uaddr(ri.avail), ri.log_gpa);
}

int
vu_start_device(struct vu_client *c, struct vu_guest *g, const struct vu_start_opts *o)
{
	static const struct vu_start_opts defaults;
	const struct vu_guest_cfg *cfg = vu_guest_cfg(g);
	unsigned int i, nrings = vu_guest_nrings(g);
	uint64_t feat;
	int ret;

	if (o == NULL)
		o = &defaults;
	if (nrings > VU_MAX_RINGS)
		return -EINVAL;
	if (!c->handshake) {
		ret = vu_device_init(c, o);
		if (ret < 0)
			return ret;
	}
	if (!(c->features & (1ULL << VU_F_VERSION_1)) ||
	    (cfg->packed && !(c->features & (1ULL << VU_F_RING_PACKED))) ||
	    (cfg->queue_pairs > 1 &&
	     (!(c->features & (1ULL << VU_F_NET_MQ)) || c->queue_num < cfg->queue_pairs)))
		return -ENOTSUP;
	feat = (1ULL << VU_F_VERSION_1) | o->extra_features;
	/* Bit 30 is acked back so that the back end keeps protocol features. */
	feat |= 1ULL << VU_F_PROTOCOL_FEATURES;
	if (o->mrg_rxbuf)
		feat |= 1ULL << VU_F_NET_MRG_RXBUF;
	if (o->event_idx)
		feat |= 1ULL << VU_F_EVENT_IDX;
	if (cfg->queue_pairs > 1)
		feat |= 1ULL << VU_F_NET_MQ;
	if (cfg->packed)
		feat |= 1ULL << VU_F_RING_PACKED;
	feat &= c->features & ~(1ULL << VU_F_LOG_ALL);
	c->acked = feat;
	vu_guest_set_features(g, feat);
	ret = vu_set_features(c, vu_acked_features(c));
	if (ret < 0)
		return ret;
	ret = vu_set_mem_table(c, vu_guest_mem(g));
	if (ret < 0)
		return ret;
	c->guest = g;
	c->nrings = nrings;
	c->qemu_log_addr = o->qemu_log_addr;
	for (i = 0; i < nrings; i++) {
		struct vu_ring_info ri;

		ret = vu_guest_ring_info(g, i, &ri);
		if (ret < 0)
			return ret;
		ret = vu_set_vring_num(c, i, ri.num);
		if (ret == 0)
			ret = vu_set_vring_base(c, i, o->bases ? o->bases[i] : ri.fresh_base);
		if (ret == 0)
			ret = vu_send_ring_addr(c, g, i);
		if (ret == 0)
			ret = vu_set_vring_kick(c, i, vu_guest_kickfd(g, i));
		if (ret == 0)
			ret = vu_set_vring_call(c, i, o->call_nofd ? -1 : vu_guest_callfd(g, i));
		if (ret < 0)
			return ret;
	}
	/* Rings start disabled when protocol features are negotiated. */
	if (!o->no_enable && (feat & (1ULL << VU_F_PROTOCOL_FEATURES))) {
		for (i = 0; i < nrings; i++) {
			ret = vu_set_vring_enable(c, i, true);
			if (ret < 0)
				return ret;
		}
	}
	if (!o->no_status && vu_has_proto(c, VU_PROTO_STATUS)) {
		if (c->ack_policy == VU_ACK_QEMU)
			ret = vu_add_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
					    VU_STATUS_DRIVER_OK);
		else
			ret = vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
					    VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK);
		if (ret < 0)
			return ret;
	}
	c->started = true;
	return 0;
}

int
vu_stop_device(struct vu_client *c, uint32_t *bases, unsigned int nbases)
{
	unsigned int i;
	int ret;

	if (c->guest == NULL)
		return -EINVAL;
	if (bases != NULL && nbases < c->nrings)
		return -EINVAL;
	for (i = 0; i < c->nrings; i++) {
		uint32_t b;

		ret = vu_get_vring_base(c, i, &b);
		if (ret < 0)
			return ret;
		if (bases != NULL)
			bases[i] = b;
	}
	c->started = false;
	return 0;
}

int
vu_set_log(struct vu_client *c, struct vu_log *log)
{
	unsigned int i;
	int ret;

	/* Legacy SET_LOG_FD is not supported: only the shared-memory log. */
	if (!vu_has_proto(c, VU_PROTO_LOG_SHMFD) ||
	    !(c->features & (1ULL << VU_F_LOG_ALL)))
		return -ENOTSUP;
	ret = vu_set_log_base(c, log->fd, log->size, 0);
	if (ret < 0)
		return ret;
	c->logging = true;
	ret = vu_set_features(c, vu_acked_features(c));
	/* QEMU re-sends the ring addresses of a running device with the flag. */
	for (i = 0; ret == 0 && c->started && i < c->nrings; i++)
		ret = vu_send_ring_addr(c, c->guest, i);
	return ret;
}

int
vu_clear_log(struct vu_client *c)
{
	unsigned int i;
	int ret;

	c->logging = false;
	ret = vu_set_features(c, vu_acked_features(c));
	for (i = 0; ret == 0 && c->started && i < c->nrings; i++)
		ret = vu_send_ring_addr(c, c->guest, i);
	return ret;
}
