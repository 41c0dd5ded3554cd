/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting on a guest ring's call eventfd, for the tests of a driver's call
 * path: test_events (in the harness's process) and peer_frontend (the
 * front end for DPDK's vdpa/mlx5, a program that links no harness).
 */
#ifndef LM_CALL_WAIT_H
#define LM_CALL_WAIT_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "vu_guest.h"
#include "../lm_clock.h"

/* Wait at most timeout_ms for ring's call eventfd; consumes the signal. */
static inline bool
lm_wait_call(struct vu_guest *g, unsigned int ring, int timeout_ms)
{
	struct pollfd pfd = { .fd = vu_guest_callfd(g, ring), .events = POLLIN };
	int64_t deadline = lmt_now_ms() + timeout_ms;
	uint64_t v;

	for (;;) {
		int left = (int)(deadline - lmt_now_ms());
		int r = poll(&pfd, 1, left > 0 ? left : 0);

		if (r > 0)
			return read(pfd.fd, &v, sizeof(v)) == sizeof(v);
		if (r == 0 || (r < 0 && errno != EINTR))
			return false;
	}
}

#endif /* LM_CALL_WAIT_H */
