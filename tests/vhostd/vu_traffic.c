/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A VM's NIC for the service's tests: the built-in guest (app/test-lm/vu)
 * on a vhost-user socket, sending frames that the emulated device's
 * loopback wire brings back, until SIGTERM. It measures what a VM sees:
 * the longest gap between two frames received while its back end was
 * there, and, when the back end goes away (its worker killed), how long
 * until it could connect again and until frames came back; then it
 * starts the device again, as QEMU does on a reconnection.
 *
 * Usage: vu_traffic SOCKET [--start-on-usr1 | --incoming]. With
 * --start-on-usr1 the guest's memory exists first ("vu_traffic: memory
 * ready"), the connection only once SIGUSR1 comes. With --incoming it is
 * a migration's destination QEMU as the service sees one: the option on
 * its command line, connected and through the handshake first
 * ("vu_traffic: connected"), its guest memory made only then (as QEMU
 * creates its memory backends after its netdevs), and the device started
 * once SIGUSR1 comes. Lines: "vu_traffic: running" once frames
 * flow; "vu_traffic: back end gone"; "vu_traffic: reconnected after N ms,
 * traffic again after M ms"; on SIGTERM "vu_traffic: done rx=R lost=L
 * max_gap_ms=G reconnects=K" (lost: frames sent on the last connection and
 * never received). Every wait is bounded; exit 1 when one runs out.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vu_client.h"
#include "vu_guest.h"
#include "../lm_clock.h"

#define CONNECT_MS 30000
#define FIRST_FRAME_MS 30000
#define INFLIGHT 64

static volatile sig_atomic_t stop, go;

static void
on_usr1(int sig)
{
	go = 1;
}

static void
on_term(int sig)
{
	stop = 1;
}

static uint64_t
received(struct vu_guest *g)
{
	struct vu_guest_stats st;

	vu_guest_stats(g, -1, &st);
	return st.rx_received;
}

/* The back end closed the connection (it sends nothing unasked). */
static bool
backend_gone(struct vu_client *c, int wait_ms)
{
	struct pollfd p = { .fd = vu_client_fd(c), .events = POLLIN };

	return poll(&p, 1, wait_ms) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

static double connected_at;

/* Connected (unless *c already is), then the device started. */
static int
start(struct vu_client **c, struct vu_guest *g, const char *path)
{
	int ret = *c == NULL ? vu_connect(c, path, CONNECT_MS) : 0;

	if (ret != 0)
		return ret;
	connected_at = lmt_now_ms_f();
	vu_set_reply_timeout(*c, 10000);
	/* A fresh device: RX buffers before DRIVER_OK, as peer_frontend explains. */
	vu_guest_reset(g);
	vu_guest_rx_refill(g);
	ret = vu_start_device(*c, g, NULL);
	if (ret != 0) {
		vu_disconnect(*c);
		*c = NULL;
	}
	return ret;
}

int
main(int argc, char **argv)
{
	struct vu_client *c = NULL;
	struct vu_guest *g = NULL;
	struct vu_mem *mem = NULL;
	double last_rx, gap_max = 0, gone_at = -1, t;
	unsigned int reconnects = 0;
	uint64_t rx_total = 0, rx, base = 0;
	bool running = false;
	int ret;

	bool incoming = argc == 3 && strcmp(argv[2], "--incoming") == 0;

	if (argc != 2 && (argc != 3 || (!incoming && strcmp(argv[2], "--start-on-usr1") != 0))) {
		fprintf(stderr, "usage: vu_traffic SOCKET [--start-on-usr1 | --incoming]\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (incoming) {
		ret = vu_connect(&c, argv[1], CONNECT_MS);
		if (ret == 0) {
			vu_set_reply_timeout(c, 10000);
			ret = vu_device_init(c, NULL);
		}
		if (ret != 0) {
			fprintf(stderr, "vu_traffic: cannot connect to %s: %s\n", argv[1],
				strerror(-ret));
			return 1;
		}
		printf("vu_traffic: connected\n");
	}
	if (vu_mem_create_qemu(&mem, 1) != 0 ||
	    vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 1,
							      .ring_size = 256 }) != 0) {
		fprintf(stderr, "vu_traffic: guest set-up failed\n");
		return 1;
	}
	if (argc == 3) {
		sigset_t block, none;

		/* Blocked until sigsuspend: a signal between the test and the wait is kept. */
		sigemptyset(&block);
		sigaddset(&block, SIGUSR1);
		sigaddset(&block, SIGTERM);
		sigprocmask(SIG_BLOCK, &block, NULL);
		sigemptyset(&none);
		printf("vu_traffic: memory ready\n");
		while (!go && !stop)
			sigsuspend(&none);
		sigprocmask(SIG_UNBLOCK, &block, NULL);
	}
	ret = start(&c, g, argv[1]);
	if (ret != 0) {
		fprintf(stderr, "vu_traffic: cannot start the device on %s: %s\n", argv[1],
			strerror(-ret));
		return 1;
	}
	last_rx = lmt_now_ms_f();
	while (!stop) {
		vu_guest_poll(g);
		if (vu_guest_tx_inflight(g, 0) < INFLIGHT)
			vu_guest_tx(g, 0, 16);
		rx = received(g);
		t = lmt_now_ms_f();
		if (rx != base) {
			if (!running) {
				running = true;
				if (gone_at >= 0)
					printf("vu_traffic: traffic again after %.1f ms\n",
					       t - gone_at);
				else
					printf("vu_traffic: running\n");
				gone_at = -1;
			} else if (t - last_rx > gap_max) {
				gap_max = t - last_rx;
			}
			rx_total += rx - base;
			base = rx;
			last_rx = t;
		} else if (running && t - last_rx > FIRST_FRAME_MS) {
			fprintf(stderr, "vu_traffic: no frame for %d ms\n", FIRST_FRAME_MS);
			return 1;
		}
		if (!backend_gone(c, 1))
			continue;
		/* Its worker died: connect again and start the device again, as QEMU does. */
		gone_at = lmt_now_ms_f();
		running = false;
		printf("vu_traffic: back end gone\n");
		vu_disconnect(c);
		c = NULL;
		/* A back end coming up may accept and then drop us: try until CONNECT_MS. */
		while ((ret = start(&c, g, argv[1])) != 0 && lmt_now_ms_f() - gone_at < CONNECT_MS)
			printf("vu_traffic: start refused (%s): again\n", strerror(-ret));
		if (ret != 0) {
			fprintf(stderr, "vu_traffic: cannot start again: %s\n", strerror(-ret));
			return 1;
		}
		reconnects++;
		base = received(g);
		printf("vu_traffic: reconnected after %.1f ms (connect %.1f ms)\n",
		       lmt_now_ms_f() - gone_at, connected_at - gone_at);
		last_rx = lmt_now_ms_f();
	}
	/* What was sent on this connection and is still in flight, then the count. */
	t = lmt_now_ms_f();
	while (vu_guest_tx_inflight(g, 0) > 0 && lmt_now_ms_f() - t < 2000) {
		vu_guest_poll(g);
		backend_gone(c, 1);
	}
	t = lmt_now_ms_f();
	while (vu_guest_lost(g, 0) > 0 && lmt_now_ms_f() - t < 2000) {
		vu_guest_poll(g);
		backend_gone(c, 1);
	}
	rx = received(g);
	rx_total += rx - base;
	printf("vu_traffic: done rx=%" PRIu64 " lost=%" PRIu64 " max_gap_ms=%.1f reconnects=%u\n",
	       rx_total, vu_guest_lost(g, 0), gap_max, reconnects);
	vu_disconnect(c);
	vu_guest_destroy(g);
	vu_mem_destroy(mem);
	return 0;
}
