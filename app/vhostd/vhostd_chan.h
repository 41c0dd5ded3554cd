/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Byte buffers and the framing of mlx5-lm-vhostd's internal channel: one
 * JSON object per line between the supervisor and a worker. Shared by
 * both sides; nothing here blocks except vhostd_chan_send_blocking().
 */
#ifndef VHOSTD_CHAN_H
#define VHOSTD_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* A worker's message can be a device's statistics: large, but bounded. */
#define VHOSTD_CHAN_MAX_LINE (8u << 20)

struct vhostd_buf {
	char *data;
	size_t len;   /* bytes held */
	size_t off;   /* bytes already consumed (output: already written) */
	size_t cap;
	/*
	 * Input framed in lines: the bytes from off up to scan hold no newline
	 * (scan < off: none looked at yet). A line that arrives in many reads
	 * is then searched once, not again from its start at every read.
	 */
	size_t scan;
};

void vhostd_buf_free(struct vhostd_buf *b);
int vhostd_buf_append(struct vhostd_buf *b, const void *p, size_t n);
/* Drop the consumed bytes. */
void vhostd_buf_compact(struct vhostd_buf *b);
/*
 * Read what fd has (non-blocking) into b, up to max bytes held: > 0 read,
 * 0 end of stream, -EAGAIN nothing now, -E2BIG b full, other -errno.
 */
ssize_t vhostd_buf_read(int fd, struct vhostd_buf *b, size_t max);
/* Write what b holds: 1 all written, 0 some left (EAGAIN), -errno. */
int vhostd_buf_flush(int fd, struct vhostd_buf *b);

/*
 * The next line of b as a JSON object: 1 (*msg set), 0 no complete line
 * yet, -1 a line that is not a JSON object (consumed).
 */
int vhostd_chan_next(struct vhostd_buf *b, json_t **msg);
/* msg as one line appended to b (msg not stolen). */
int vhostd_chan_queue(struct vhostd_buf *b, json_t *msg);
/* Write msg as one line on a blocking fd (the worker's side). */
int vhostd_chan_send_blocking(int fd, json_t *msg);

#endif /* VHOSTD_CHAN_H */
