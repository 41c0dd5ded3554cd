/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user front end (the QEMU side of the protocol) over a unix socket.
 *
 * One device per connection, no global state: any number of connections may
 * be used at once (one thread per connection at a time). Every function
 * returns 0 (or a count) on success and a negative errno on failure; a peer
 * that went away gives -ECONNRESET, a peer that does not answer in time
 * -ETIMEDOUT, an unexpected reply -EPROTO, a non-zero REPLY_ACK -EIO.
 */
#ifndef VU_CLIENT_H
#define VU_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "vu_guest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Front-end requests (vhost-user spec, "Front-end message types"). */
enum vu_request {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_GET_CONFIG = 24,
	VU_SET_STATUS = 39,
	VU_GET_STATUS = 40,
};

/* Header flags. */
#define VU_FLAG_VERSION 0x1u
#define VU_FLAG_REPLY 0x4u
#define VU_FLAG_NEED_REPLY 0x8u
/* SET_VRING_KICK/CALL payload: bits 0-7 ring index, bit 8 "no fd". */
#define VU_VRING_NOFD 0x100u
/* SET_VRING_ADDR flags: bit 0 = log the used ring. */
#define VU_VRING_F_LOG 0x1u

/* Device features (virtio 1.1 and vhost-user). */
#define VU_F_NET_MRG_RXBUF 15
#define VU_F_NET_MQ 22
#define VU_F_LOG_ALL 26
#define VU_F_EVENT_IDX 29
#define VU_F_PROTOCOL_FEATURES 30
#define VU_F_VERSION_1 32
#define VU_F_RING_PACKED 34

/* Protocol features. */
#define VU_PROTO_MQ 0
#define VU_PROTO_LOG_SHMFD 1
#define VU_PROTO_REPLY_ACK 3
#define VU_PROTO_STATUS 16
/* In vu_start_opts.protocol_features: use exactly the bits given. */
#define VU_PROTO_EXPLICIT (1ULL << 63)
#define VU_PROTO_DEFAULT ((1ULL << VU_PROTO_MQ) | (1ULL << VU_PROTO_LOG_SHMFD) | \
			  (1ULL << VU_PROTO_REPLY_ACK) | (1ULL << VU_PROTO_STATUS))

/* Device status bits (virtio 1.1, 2.1). */
#define VU_STATUS_ACK 0x1
#define VU_STATUS_DRIVER 0x2
#define VU_STATUS_DRIVER_OK 0x4
#define VU_STATUS_FEATURES_OK 0x8

#define VU_MAX_FDS 32
#define VU_MAX_PAYLOAD 4096

struct vu_msg_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
};

/* One SET_MEM_TABLE region as sent on the wire, with its fd. */
struct vu_wire_region {
	uint64_t gpa;
	uint64_t size;
	uint64_t uaddr;
	uint64_t mmap_offset;
	int fd;
};

struct vu_client;

/* Connect, retrying (10 ms apart) until timeout_ms while the socket is absent. */
int vu_connect(struct vu_client **out, const char *path, int timeout_ms);
/* Close the connection (the back end sees a disconnect) and free. */
void vu_disconnect(struct vu_client *c);
/*
 * Requests sent and replies read (REPLY_ACKs included) since the connection
 * opened: each reply is a round trip the front end waited for.
 */
void vu_counts(const struct vu_client *c, uint64_t *requests, uint64_t *replies);
/* Deadline for each reply (default 30000 ms; < 0 waits forever). */
void vu_set_reply_timeout(struct vu_client *c, int timeout_ms);
/*
 * Called (process-wide, NULL: nothing) when a request's send or its reply
 * ran out of its deadline, before the request fails: the moment to look
 * at what the back end is doing, while it is still doing it.
 */
void vu_set_stall_hook(void (*hook)(uint32_t request, const char *what));

/*
 * Which requests ask for a REPLY_ACK (when negotiated). VU_ACK_EVERY (the
 * default): all of them, so that a test sees every failure where it
 * happens. VU_ACK_QEMU: only those QEMU (8.2 and later) waits for -
 * SET_MEM_TABLE, SET_VRING_ENABLE, and SET_FEATURES / SET_VRING_ADDR while
 * logging - and the device status is added as QEMU adds it (GET_STATUS,
 * then SET_STATUS only if bits are missing, after SET_FEATURES and at
 * start). Every other request is sent without waiting: the back end reads
 * it when it gets to it, and a failure shows as the connection closed at
 * the next request that waits. What a benchmark that times the control
 * path must use, to cost what QEMU costs.
 */
enum vu_ack_policy {
	VU_ACK_EVERY = 0,
	VU_ACK_QEMU,
};

void vu_set_ack_policy(struct vu_client *c, enum vu_ack_policy p);
int vu_client_fd(const struct vu_client *c);
uint64_t vu_backend_features(const struct vu_client *c);
uint64_t vu_acked_features(const struct vu_client *c);
uint64_t vu_protocol_features(const struct vu_client *c);

/* ---- raw messages (hostile tests) ---- */
/* Send exactly this header flags word, payload and fds. */
int vu_send_raw(struct vu_client *c, uint32_t request, uint32_t flags,
		const void *payload, uint32_t size, const int *fds, unsigned int nfds);
/*
 * Receive one message; payload up to cap bytes is copied (the rest drained,
 * then -EMSGSIZE). Returns the payload size. Received fds are closed.
 */
int vu_recv_raw(struct vu_client *c, struct vu_msg_hdr *hdr, void *payload,
		uint32_t cap, int timeout_ms);
/*
 * Request with the client's rules: reply_cap != 0 expects a reply of the
 * same request; otherwise NEED_REPLY is set and the ack checked if REPLY_ACK
 * is negotiated. Returns the reply payload size (0 without reply).
 */
int vu_request(struct vu_client *c, uint32_t request, const void *payload, uint32_t size,
	       const int *fds, unsigned int nfds, void *reply, uint32_t reply_cap);

/* ---- individual messages ---- */
int vu_get_features(struct vu_client *c, uint64_t *features);
int vu_set_features(struct vu_client *c, uint64_t features);
int vu_set_owner(struct vu_client *c);
int vu_get_protocol_features(struct vu_client *c, uint64_t *features);
int vu_set_protocol_features(struct vu_client *c, uint64_t features);
int vu_get_queue_num(struct vu_client *c, uint64_t *num);
int vu_set_mem_table(struct vu_client *c, const struct vu_mem *m);
/* m's regions as SET_MEM_TABLE carries them (r: VU_MEM_MAX_REGIONS); their number. */
unsigned int vu_mem_wire_regions(const struct vu_mem *m, struct vu_wire_region *r);
int vu_set_mem_table_raw(struct vu_client *c, const struct vu_wire_region *r,
			 unsigned int n);
int vu_set_log_base(struct vu_client *c, int fd, uint64_t size, uint64_t offset);
int vu_set_vring_num(struct vu_client *c, uint32_t index, uint32_t num);
int vu_set_vring_addr(struct vu_client *c, uint32_t index, uint32_t flags, uint64_t desc,
		      uint64_t used, uint64_t avail, uint64_t log);
int vu_set_vring_base(struct vu_client *c, uint32_t index, uint32_t num);
int vu_get_vring_base(struct vu_client *c, uint32_t index, uint32_t *num);
/* fd < 0 sends the NOFD bit. */
int vu_set_vring_kick(struct vu_client *c, uint32_t index, int fd);
int vu_set_vring_call(struct vu_client *c, uint32_t index, int fd);
int vu_set_vring_enable(struct vu_client *c, uint32_t index, bool enable);
int vu_set_status(struct vu_client *c, uint8_t status);
int vu_get_status(struct vu_client *c, uint8_t *status);
/*
 * GET_CONFIG asking for size bytes at offset (size is sent as given, even
 * above the spec's 256: hostile tests). Returns the config bytes the reply
 * carried (0 when the back end refused), copied up to cap into buf.
 */
int vu_get_config(struct vu_client *c, uint32_t offset, uint32_t size, void *buf,
		  uint32_t cap);

/* ---- device lifecycle in QEMU's order ---- */
struct vu_start_opts {
	/* 0 = default set (VU_PROTO_DEFAULT); or VU_PROTO_EXPLICIT | bits. */
	uint64_t protocol_features;
	bool mrg_rxbuf;		/* ack VIRTIO_NET_F_MRG_RXBUF if offered */
	/*
	 * A legacy driver (QEMU's for a legacy virtio-pci device): VERSION_1
	 * neither needed nor acked, and no bit from 32 on (the legacy
	 * interface has 32 feature bits).
	 */
	bool legacy;
	bool event_idx;		/* ack VIRTIO_F_EVENT_IDX if offered */
	uint64_t extra_features;	/* more bits to ack when offered */
	/* SET_VRING_BASE per ring (2 * queue pairs); NULL = fresh rings. */
	const uint32_t *bases;
	bool call_nofd;		/* SET_VRING_CALL with NOFD instead of the callfd */
	bool no_enable;		/* skip SET_VRING_ENABLE */
	bool no_status;		/* skip SET_STATUS even if negotiated */
	/*
	 * Packed rings: send the device area as log_guest_addr, exactly as
	 * QEMU does, instead of the descriptor ring the device writes.
	 */
	bool qemu_log_addr;
};

/*
 * Once per connection: GET_FEATURES, GET_PROTOCOL_FEATURES,
 * SET_PROTOCOL_FEATURES (offered & wanted), GET_QUEUE_NUM (with MQ),
 * SET_OWNER. QEMU does this when the destination starts, before the source
 * stops: call it early to keep it out of a measured downtime. Idempotent.
 */
int vu_device_init(struct vu_client *c, const struct vu_start_opts *o);

/*
 * Start a virtio-net device driven by guest g (its queue pairs, ring size
 * and layout). vu_device_init() if not done yet; then (also on a restart of
 * the same connection): SET_FEATURES, SET_MEM_TABLE, per ring NUM, BASE,
 * ADDR, KICK, CALL; ENABLE per ring; SET_STATUS 0x0f. Pushes the acked
 * features to g. -ENOTSUP if the back end lacks VERSION_1 (unless legacy),
 * RING_PACKED for a packed guest (legacy: always), or MQ / enough queues for
 * several pairs.
 */
int vu_start_device(struct vu_client *c, struct vu_guest *g, const struct vu_start_opts *o);
/* GET_VRING_BASE on every ring, in order; bases[] gets 2 * queue pairs values. */
int vu_stop_device(struct vu_client *c, uint32_t *bases, unsigned int nbases);
/*
 * Start dirty logging as QEMU does at migration start: SET_LOG_BASE (log fd,
 * reply with LOG_SHMFD), SET_FEATURES + LOG_ALL, SET_VRING_ADDR with the LOG
 * flag on every started ring. The log is not owned (it may be shared).
 */
int vu_set_log(struct vu_client *c, struct vu_log *log);
/*
 * Stop logging: SET_FEATURES without LOG_ALL, SET_VRING_ADDR without LOG.
 * The log area itself is the caller's (vu_log_reset() clears it).
 */
int vu_clear_log(struct vu_client *c);

#ifdef __cplusplus
}
#endif

#endif /* VU_CLIENT_H */
