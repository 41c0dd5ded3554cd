/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front end: the device sequences in the order QEMU uses them -
 * the once-per-connection handshake, start, stop, and dirty logging on and
 * off - over the requests of vu_msg.c.
 */
#include <errno.h>

#include "vu_client_int.h"

#define VU_MAX_RINGS 256

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
	if ((!o->legacy && !(c->features & (1ULL << VU_F_VERSION_1))) ||
	    (cfg->packed && (o->legacy || !(c->features & (1ULL << VU_F_RING_PACKED)))) ||
	    (cfg->queue_pairs > 1 &&
	     (!(c->features & (1ULL << VU_F_NET_MQ)) || c->queue_num < cfg->queue_pairs)))
		return -ENOTSUP;
	feat = (o->legacy ? 0 : 1ULL << VU_F_VERSION_1) | o->extra_features;
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
	if (o->legacy)
		feat &= UINT32_MAX;
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

/*
 * Logging on or off: SET_FEATURES with LOG_ALL as it now is, then, as QEMU
 * does, the ring addresses of a running device again with the LOG flag as
 * it now is.
 */
static int
vu_log_switch(struct vu_client *c, bool on)
{
	unsigned int i;
	int ret;

	c->logging = on;
	ret = vu_set_features(c, vu_acked_features(c));
	for (i = 0; ret == 0 && c->started && i < c->nrings; i++)
		ret = vu_send_ring_addr(c, c->guest, i);
	return ret;
}

int
vu_set_log(struct vu_client *c, struct vu_log *log)
{
	int ret;

	/* Legacy SET_LOG_FD is not supported: only the shared-memory log. */
	if (!vu_has_proto(c, VU_PROTO_LOG_SHMFD) ||
	    !(c->features & (1ULL << VU_F_LOG_ALL)))
		return -ENOTSUP;
	ret = vu_set_log_base(c, log->fd, log->size, 0);
	if (ret < 0)
		return ret;
	return vu_log_switch(c, true);
}

int
vu_clear_log(struct vu_client *c)
{
	return vu_log_switch(c, false);
}
