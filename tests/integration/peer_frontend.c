/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A vhost-user front end for integration/peer (test_peer.py): the built-in
 * guest (app/test-lm/vu) connected to a back end's socket, sending one frame
 * at a time and waiting for both call eventfds before the next. testpmd's
 * virtio-user asks for no interrupts (VRING_AVAIL_F_NO_INTERRUPT), so it
 * never exercises a vDPA driver's call path; this front end does: every used
 * buffer must come back as device CQE -> the driver (polling the CQ, or woken
 * by its event channel) -> callfd.
 *
 * Usage: peer_frontend SOCKET ROUNDS. After DRIVER_OK it prints "started"
 * and reads one line from stdin before sending: the back end configures
 * the device after replying to DRIVER_OK, and the caller knows when that is
 * done (the driver says so), this program does not. Exit 0 when every round
 * was signalled on both rings and every frame came back; 1 with a message
 * otherwise. Every wait is bounded (WAIT_MS); nothing sleeps.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "call_wait.h"
#include "vu_client.h"
#include "vu_guest.h"

#define WAIT_MS 20000

/*
 * Wait, through ring's call eventfd only, until the guest has seen `want`
 * TX completions (ring 1) or receptions (ring 0). A driver may signal a
 * call with nothing new (DPDK's vdpa/mlx5 signals every ring once at
 * start): each signal is followed by a poll, and only the count decides.
 */
static bool
called_until(struct vu_guest *g, unsigned int ring, uint64_t want)
{
	struct vu_guest_stats st;

	for (;;) {
		vu_guest_stats(g, 0, &st);
		if ((ring == 1 ? st.tx_completed : st.rx_received) >= want)
			return true;
		if (!lm_wait_call(g, ring, WAIT_MS))
			return false;
		vu_guest_poll(g);
	}
}

static int
rounds(struct vu_guest *g, unsigned int n)
{
	struct vu_guest_stats st;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (vu_guest_tx(g, 0, 1) != 1) {
			fprintf(stderr, "peer_frontend: round %u: no TX descriptor free\n", i);
			return -1;
		}
		/* The frame's TX completion, then its reception on the loopback. */
		if (!called_until(g, 1, i + 1)) {
			fprintf(stderr, "peer_frontend: round %u: no call for the used TX "
				"buffer within %d ms\n", i, WAIT_MS);
			return -1;
		}
		if (!called_until(g, 0, i + 1)) {
			fprintf(stderr, "peer_frontend: round %u: no call for the used RX "
				"buffer within %d ms\n", i, WAIT_MS);
			return -1;
		}
		vu_guest_rx_refill(g);
		vu_guest_stats(g, 0, &st);
		if (st.tx_completed != i + 1 || st.rx_received != i + 1) {
			fprintf(stderr, "peer_frontend: round %u: %" PRIu64 " TX completed, %"
				PRIu64 " received\n", i, st.tx_completed, st.rx_received);
			return -1;
		}
	}
	if (vu_guest_lost(g, 0) != 0) {
		fprintf(stderr, "peer_frontend: %" PRIu64 " frames lost\n", vu_guest_lost(g, 0));
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct vu_client *c = NULL;
	struct vu_guest *g = NULL;
	struct vu_mem *mem = NULL;
	uint32_t bases[2];
	char line[64];
	unsigned int n;
	int ret = 1;

	if (argc != 3 || (n = (unsigned int)strtoul(argv[2], NULL, 0)) == 0) {
		fprintf(stderr, "usage: peer_frontend SOCKET ROUNDS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (vu_mem_create_qemu(&mem, 1) != 0) {
		fprintf(stderr, "peer_frontend: guest memory\n");
		return 1;
	}
	if (vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 1,
							      .ring_size = 256 }) != 0) {
		fprintf(stderr, "peer_frontend: guest\n");
		goto err_guest;
	}
	if (vu_connect(&c, argv[1], 5000) != 0) {
		fprintf(stderr, "peer_frontend: cannot connect to %s\n", argv[1]);
		goto err_connect;
	}
	vu_set_reply_timeout(c, WAIT_MS);
	/*
	 * RX buffers before DRIVER_OK: the device reads the avail index when the
	 * queue becomes ready; a frame looped back before it has seen buffers is
	 * dropped, as on the wire.
	 */
	vu_guest_rx_refill(g);
	if (vu_start_device(c, g, NULL) != 0) {
		fprintf(stderr, "peer_frontend: device start refused\n");
		goto err_start;
	}
	printf("peer_frontend: started\n");
	if (fgets(line, sizeof(line), stdin) == NULL) {
		fprintf(stderr, "peer_frontend: stdin closed before the go line\n");
	} else if (rounds(g, n) == 0) {
		printf("peer_frontend: %u frames, each signalled on both call eventfds\n", n);
		ret = 0;
	}
	if (vu_stop_device(c, bases, 2) != 0) {
		fprintf(stderr, "peer_frontend: GET_VRING_BASE failed\n");
		ret = 1;
	}
err_start:
	vu_disconnect(c);
err_connect:
	vu_guest_destroy(g);
err_guest:
	vu_mem_destroy(mem);
	return ret;
}
