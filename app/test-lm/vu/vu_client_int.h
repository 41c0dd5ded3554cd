/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the front end's three files share (vu_client.c: the connection and
 * its transport, vu_msg.c: one function per request, vu_device.c: the
 * device sequences in QEMU's order): the connection's state and the few
 * helpers more than one of them calls. Not for users: vu_client.h is.
 */
#ifndef VU_CLIENT_INT_H
#define VU_CLIENT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "vu_client.h"

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
	uint64_t requests;		/* sent whole (vu_counts) */
	uint64_t replies;		/* read and checked: each a round trip */
};

static inline bool
vu_has_proto(const struct vu_client *c, unsigned int bit)
{
	return (c->protocol >> bit) & 1;
}

/* Read the reply to request; returns its payload size (vu_client.c). */
int vu_read_reply(struct vu_client *c, uint32_t request, void *reply, uint32_t cap);
/*
 * QEMU's way to set status bits: read the status, write it only if bits
 * are missing (vu_msg.c).
 */
int vu_add_status(struct vu_client *c, uint8_t bits);

#endif /* VU_CLIENT_INT_H */
