/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front end: one function per front-end request, its payload
 * laid out as the spec's "Front-end message types" says, sent through
 * vu_request() (vu_client.c).
 */
#include <errno.h>
#include <string.h>

#include "vu_client_int.h"

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

unsigned int
vu_mem_wire_regions(const struct vu_mem *m, struct vu_wire_region *r)
{
	unsigned int i;

	/* One fd per region: the same memfd, each with its own offset. */
	for (i = 0; i < m->nregions; i++) {
		r[i].gpa = m->regions[i].gpa;
		r[i].size = m->regions[i].size;
		r[i].uaddr = vu_mem_region_uaddr(m, i);
		r[i].mmap_offset = m->regions[i].offset;
		r[i].fd = m->fd;
	}
	return m->nregions;
}

int
vu_set_mem_table(struct vu_client *c, const struct vu_mem *m)
{
	struct vu_wire_region r[VU_MEM_MAX_REGIONS];

	return vu_set_mem_table_raw(c, r, vu_mem_wire_regions(m, r));
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
int
vu_add_status(struct vu_client *c, uint8_t bits)
{
	uint8_t s;
	int ret = vu_get_status(c, &s);

	if (ret < 0 || (s & bits) == bits)
		return ret;
	return vu_set_status(c, s | bits);
}
