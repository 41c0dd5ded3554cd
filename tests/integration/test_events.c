/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event path (issue 10, A3/A6), in process: the PMD on an emulated
 * device whose event CQ/QP rules are the firmware's (a CQ names a
 * completion EQ and a UAR page, the QP pair is in force loopback with
 * retries, every notification consumes a receive credit of the driver's
 * QP, CQEs are written to the CQ and an event is raised only when the CQ
 * is armed). The built-in front end sends one frame at a time and waits
 * for its call eventfds before the next: every used buffer must be
 * signalled through event QP -> CQ -> event channel -> callfd, for more
 * notifications than one event ring holds (MLX5_LM_EVENTQ_SIZE), which
 * only works when the driver hands credits back and re-arms the CQ.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "prm.h"
#include "lm_harness.h"

/* Rounds of one frame: three event rings' worth of notifications per queue. */
#define ROUNDS (3 * MLX5_LM_EVENTQ_SIZE)

static struct lmh_dev dev;
static struct vu_mem *mem;
static struct vu_guest *g;

/* Bounded wait for ring's call eventfd; consumes the signal. */
static bool
wait_call(unsigned int ring)
{
	struct pollfd pfd = { .fd = vu_guest_callfd(g, ring), .events = POLLIN };
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	uint64_t v;

	for (;;) {
		int left = (int)(deadline - lmh_now_ms());
		int r = poll(&pfd, 1, left > 0 ? left : 0);

		if (r > 0)
			return read(pfd.fd, &v, sizeof(v)) == sizeof(v);
		if (r == 0 || (r < 0 && errno != EINTR))
			return false;
	}
}

static void
test_every_used_buffer_reaches_the_call_eventfd(void **state)
{
	struct vu_client *c;
	struct vu_guest_stats st;
	uint32_t bases[2];
	unsigned int i;

	(void)state;
	assert_int_equal(vu_connect(&c, lmh_sock(0), 5000), 0);
	lmh_conn_opened(0);
	vu_set_reply_timeout(c, LMH_DEADLINE_MS);
	assert_int_equal(vu_start_device(c, g, NULL), 0);
	assert_true(lmh_wait_running(&dev, LMH_DEADLINE_MS));
	/* RX buffers for the looped-back frames. */
	vu_guest_rx_refill(g);
	for (i = 0; i < ROUNDS; i++) {
		assert_int_equal(vu_guest_tx(g, 0, 1), 1);
		/* The frame's TX completion, then its reception on the loopback. */
		if (!wait_call(1)) {
			print_error("round %u: no call for the used TX buffer\n", i);
			fail();
		}
		if (!wait_call(0)) {
			print_error("round %u: no call for the used RX buffer\n", i);
			fail();
		}
		vu_guest_poll(g);
		vu_guest_stats(g, 0, &st);
		assert_int_equal(st.tx_completed, i + 1);
		assert_int_equal(st.rx_received, i + 1);
	}
	assert_int_equal(vu_guest_lost(g, 0), 0);
	printf("  %u frames, each signalled on both call eventfds (%u event ring entries)\n",
	       ROUNDS, MLX5_LM_EVENTQ_SIZE);
	assert_int_equal(vu_stop_device(c, bases, 2), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
}

static int
group_setup(void **state)
{
	(void)state;
	if (lmh_probe(&dev, 0, "queues=1,mr_gc_ms=0") != 0)
		return -1;
	if (vu_mem_create_qemu(&mem, 1) != 0)
		return -1;
	return vu_guest_create(&g, mem, &(struct vu_guest_cfg){ .queue_pairs = 1,
								 .ring_size = 256 });
}

static int
group_teardown(void **state)
{
	long left;

	(void)state;
	(void)lmh_wait_restored(&dev);
	left = lmh_remove(&dev);
	vu_guest_destroy(g);
	vu_mem_destroy(mem);
	printf("  at removal: %ld objects alive\n", left);
	return left == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_used_buffer_reaches_the_call_eventfd),
	};
	int ret;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2)
		cmocka_set_test_filter(argv[1]);
	if (lmh_init(argv[0], "test-events", 1) < 0)
		return 1;
	ret = cmocka_run_group_tests_name("events", tests, group_setup, group_teardown);
	lmh_fini();
	return ret;
}
