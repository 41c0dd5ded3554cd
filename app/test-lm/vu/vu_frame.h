/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal to the vu library: test frames and exact loss/duplicate tracking.
 */
#ifndef VU_FRAME_H
#define VU_FRAME_H

#include <stdint.h>

/* Sequence numbers seen, in lazily allocated chunks of 2^16. */
struct vu_seen_chunk;
struct vu_seen {
	struct vu_seen_chunk *chunks;
	uint64_t nchunks;
};

/* Write the frame (Ethernet header + magic, qp, seq, pattern) of len bytes. */
void vu_frame_build(uint8_t *frame, uint16_t len, uint32_t qp, uint64_t seq);
/* Check a received frame of len bytes; 0 and (qp, seq) if well formed. */
int vu_frame_parse(const uint8_t *frame, uint32_t len, uint32_t *qp, uint64_t *seq);
/* Record seq: 1 if new, 0 if already seen, -ENOMEM. */
int vu_seen_record(struct vu_seen *s, uint64_t seq);
void vu_seen_free(struct vu_seen *s);

#endif /* VU_FRAME_H */
