/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames from the wire while the device is stopped (GET_VRING_BASE), in
 * process through lm_harness. On hardware the wire does not pause for a
 * migration: frames keep arriving while vhost's dev_close suspends every
 * queue, queries it and hands its indices over. The emulated device's wire
 * here is a net_ring ethdev (devarg uplink=) whose receive ring a thread of
 * this test keeps feeding, at a paced rate, before, during and after the
 * stop, with dirty-page logging on (a migration's last pass). In each round:
 *
 *   - RX frames really landed inside the stop: the used indices in guest
 *     memory grew between the last look before the first GET_VRING_BASE
 *     and the last reply (counted; ROUNDS_WANTED rounds must see it, out
 *     of at most ROUNDS_MAX);
 *   - (b) every ring's base in the GET_VRING_BASE reply is the used index
 *     the device wrote in guest memory (split rings: the driver hands the
 *     used index over as both indices), and each buffer the device filled
 *     during the stop holds a frame that was sent, whole, once;
 *   - (c) once the replies are in, the device writes nothing more into the
 *     guest's memory: frames still arrive, while the queues are suspended,
 *     put back to blank and blank (counted by the emulator's wire until
 *     every one was handled), and the guest's memory is byte for byte the
 *     snapshot taken right after the last reply;
 *   - (a) every buffer the device filled since logging started, the last
 *     ones of the stop included, has its pages in the dirty log, and so
 *     have its used rings once the stop is answered;
 *   - (d) at removal the emulator finds nothing alive and no device write
 *     outside the dirty bitmap.
 *
 * Emulated devices only (cx6dx costs: the stop takes its modelled time):
 * the uplink is the emulator's wire, which the rdma back end has not.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "lm_harness.h"

#define PAIRS 4
#define RINGS (2 * PAIRS)
#define RING_SIZE 256
/*
 * Injection rate, frames per millisecond over the PAIRS RX queues: the
 * buffers the guest posts before the stop (RING_SIZE per RX ring) last
 * about 25 ms, far longer than a stop, and the RX queue of a pair
 * suspended 2 ms or more after the first GET_VRING_BASE (the stop's later
 * pairs, see the test) receives tens of frames meanwhile.
 */
#define RATE_PER_MS 40
/* Frames the guest receives (after the dirty mark) before its device is stopped. */
#define WARMUP_FRAMES 200
/*
 * Frames still sent after the last reply, while the queues are suspended and
 * again once they are blank: none of them may reach the guest.
 */
#define AFTER_FRAMES 200
/* Rounds that must see frames land inside the stop, out of at most ROUNDS_MAX. */
#define ROUNDS_WANTED 3
/*
 * Only the rounds with fewer slots than pairs or a serial stop see frames land
 * reliably (a stop of 2-5 ms); a loaded host (CI runs sanitizer lanes beside
 * this one) may deschedule the injector through one: room for many misses.
 */
#define ROUNDS_MAX 30
/* The wire's ring: far more than the rate fills while the uplink thread backs off. */
#define WIRE_RING 1024
#define WIRE_MBUFS 2048
/* Frame on the wire: Ethernet, IPv4, TCP, then the sequence number and a pattern. */
#define FRAME_LEN 128
#define L2_LEN 14
#define L3_LEN 20
#define L4_LEN 20
#define SEQ_OFF (L2_LEN + L3_LEN + L4_LEN)
/* TCP source ports cycled over: RSS (the driver's TIR) spreads them over the RX queues. */
#define SPORTS 64
/* virtio-net header before the frame in each RX buffer (VERSION_1). */
#define NET_HDR_LEN VU_NET_HDR_LEN
#define SEEN_MAX (1u << 20)

static struct vu_mem *mem;
static struct vu_guest *guest;
/* The wire: a net_ring port over rx_ring (frames to the device) and tx_ring. */
static struct rte_ring *rx_ring, *tx_ring;
static struct rte_mempool *pool;
static uint16_t port;
static char port_name[RTE_ETH_NAME_MAX_LEN];
/* What a round holds; the teardown releases what a failed round left behind. */
static struct lmh_dev d;
static bool probed;
static struct vu_client *client;
static struct vu_log *dlog;
static struct vu_snap *snap;
static uint8_t *seen;

/* ---- the injector -------------------------------------------------------- */

struct injector {
	pthread_t th;
	bool running;
	int stop;           /* atomic */
	uint64_t sent;      /* atomic: frames put in the wire's ring, ever (< SEEN_MAX) */
	uint64_t full;      /* atomic: frames the ring had no room for */
};

static struct injector inj;

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IPv4 header checksum (RFC 791): the device does not check it, a wire would. */
static uint16_t
ip_csum(const uint8_t *h)
{
	uint32_t s = 0;
	unsigned int i;

	for (i = 0; i < L3_LEN; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Frame number seq: a valid IPv4/TCP frame whose payload says seq. */
static void
frame_build(uint8_t *f, uint64_t seq)
{
	static const uint8_t dmac[6] = { 0x02, 0x4c, 0x4d, 0x00, 0x00, 0x00 };
	static const uint8_t smac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	uint8_t *ip = f + L2_LEN, *tcp = ip + L3_LEN;
	unsigned int i;

	memset(f, 0, FRAME_LEN);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	put16(f + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, FRAME_LEN - L2_LEN);
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, (const uint8_t[]){ 10, 0, 0, 1 }, 4);
	memcpy(ip + 16, (const uint8_t[]){ 10, 0, 0, 2 }, 4);
	put16(ip + 10, ip_csum(ip));
	put16(tcp, (uint16_t)(1024 + seq % SPORTS));
	put16(tcp + 2, 80);
	tcp[12] = 5 << 4;
	tcp[13] = 0x10;
	memcpy(f + SEQ_OFF, &seq, sizeof(seq));
	for (i = SEQ_OFF + sizeof(seq); i < FRAME_LEN; i++)
		f[i] = (uint8_t)(seq * 7 + i);
}

/* One frame into the wire's ring; false when the pool or the ring is full. */
static bool
inject_one(uint64_t seq)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	char *p;

	if (m == NULL || (p = rte_pktmbuf_append(m, FRAME_LEN)) == NULL) {
		rte_pktmbuf_free(m);
		return false;
	}
	frame_build((uint8_t *)p, seq);
	if (rte_ring_enqueue(rx_ring, m) != 0) {
		rte_pktmbuf_free(m);
		return false;
	}
	return true;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Paced at RATE_PER_MS: the frames due by now are sent, at most a burst of
 * 16 at a time, so that a thread descheduled for a while does not empty
 * the guest's buffers in one go when it runs again.
 */
static void *
injector_main(void *arg)
{
	const struct timespec pace = { .tv_nsec = 100 * 1000 };
	uint64_t t0 = now_us(), skipped = 0;

	(void)arg;
	while (!__atomic_load_n(&inj.stop, __ATOMIC_ACQUIRE)) {
		uint64_t sent = __atomic_load_n(&inj.sent, __ATOMIC_RELAXED);
		uint64_t due = (now_us() - t0) * RATE_PER_MS / 1000 - skipped;
		unsigned int burst = 0;

		if (due > sent + 16) {
			/* Behind by more than a burst: what was missed is not made up for. */
			skipped += due - (sent + 16);
			due = sent + 16;
		}
		while (sent < due && sent < SEEN_MAX && burst++ < 16) {
			if (!inject_one(sent)) {
				__atomic_add_fetch(&inj.full, 1, __ATOMIC_RELAXED);
				break;
			}
			__atomic_store_n(&inj.sent, ++sent, __ATOMIC_RELEASE);
		}
		/* A rate, not a wait: the next frames are due a tenth of a millisecond on. */
		nanosleep(&pace, NULL);
	}
	return NULL;
}

static void
injector_start(void)
{
	__atomic_store_n(&inj.stop, 0, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&inj.th, NULL, injector_main, NULL), 0);
	inj.running = true;
}

static void
injector_stop(void)
{
	if (!inj.running)
		return;
	__atomic_store_n(&inj.stop, 1, __ATOMIC_RELEASE);
	pthread_join(inj.th, NULL);
	inj.running = false;
}

static uint64_t
injected(void)
{
	return __atomic_load_n(&inj.sent, __ATOMIC_ACQUIRE);
}

/* ---- the guest's rings in its memory ---------------------------------------- */

struct ring_view {
	const uint8_t *desc;
	const uint8_t *used;
};

static struct ring_view
ring_view(unsigned int i)
{
	struct vu_ring_info ri;

	assert_int_equal(vu_guest_ring_info(guest, i, &ri), 0);
	return (struct ring_view){ .desc = ri.desc, .used = ri.used };
}

/* used->idx as the device wrote it. */
static uint16_t
used_idx(unsigned int i)
{
	return __atomic_load_n((const uint16_t *)(ring_view(i).used + 2), __ATOMIC_ACQUIRE);
}

/*
 * The used entries [from, to) of RX ring i: each names a buffer the guest
 * posted, of one header and one whole frame that was sent, and no frame
 * shows up twice. Returns the entries checked.
 */
static unsigned int
check_filled_buffers(unsigned int i, uint16_t from, uint16_t to, uint64_t sent)
{
	struct ring_view v = ring_view(i);
	uint8_t want[FRAME_LEN];
	unsigned int n = 0;
	uint16_t k;

	for (k = from; k != to; k++, n++) {
		const uint8_t *e = v.used + 4 + 8 * (k % RING_SIZE);
		uint32_t id, len, dlen;
		uint64_t addr, seq;
		const uint8_t *buf;

		memcpy(&id, e, 4);
		memcpy(&len, e + 4, 4);
		assert_true(id < RING_SIZE);
		memcpy(&addr, v.desc + 16 * id, 8);
		memcpy(&dlen, v.desc + 16 * id + 8, 4);
		if (len != NET_HDR_LEN + FRAME_LEN || len > dlen) {
			print_error("ring %u used entry %u: buffer %u of %u bytes says %u written, "
				    "want %u\n", i, k, id, dlen, len, NET_HDR_LEN + FRAME_LEN);
			fail();
		}
		assert_non_null(buf = vu_mem_gpa_to_hva(mem, addr, len));
		memcpy(&seq, buf + NET_HDR_LEN + SEQ_OFF, sizeof(seq));
		if (seq >= sent || seen[seq]) {
			print_error("ring %u used entry %u: frame %" PRIu64 " (of %" PRIu64
				    " sent) %s\n", i, k, seq, sent,
				    seq < sent ? "received twice" : "never sent");
			fail();
		}
		seen[seq] = 1;
		frame_build(want, seq);
		if (memcmp(buf + NET_HDR_LEN, want, FRAME_LEN) != 0) {
			print_error("ring %u used entry %u: frame %" PRIu64 " corrupted\n", i, k,
				    seq);
			fail();
		}
	}
	return n;
}

/* ---- waits ---------------------------------------------------------------------- */

/* The guest polled until it has received want more frames than from (bounded). */
static void
wait_guest_received(uint64_t from, uint64_t want)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

	while (lmh_rx_received(guest) < from + want) {
		if (lmh_now_ms() > deadline) {
			print_error("waited %d ms for the guest to receive %" PRIu64 " frames "
				    "from the wire: %" PRIu64 " (%" PRIu64 " sent, %" PRIu64
				    " not taken by the wire's ring)\n", LMH_DEADLINE_MS, want,
				    lmh_rx_received(guest) - from, injected(),
				    __atomic_load_n(&inj.full, __ATOMIC_RELAXED));
			fail();
		}
		vu_guest_poll(guest);
		lmh_tick();
	}
}

/* The injector has sent want frames past from (bounded). */
static void
wait_injected(uint64_t from, uint64_t want)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

	while (injected() < from + want) {
		if (lmh_now_ms() > deadline) {
			print_error("waited %d ms for the injector to send %" PRIu64
				    " frames after the stop: %" PRIu64 "\n", LMH_DEADLINE_MS, want,
				    injected() - from);
			fail();
		}
		lmh_tick();
	}
}

/*
 * Every frame sent has been taken from the wire by the uplink thread and
 * counted by the emulator's wire (received, then queued or dropped), and
 * its data path has nothing left to do (bounded).
 */
static void
wait_wire_drained(uint64_t sent_base)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	uint64_t tx, rx, drops;

	for (;;) {
		emu_dev_wire_stats(d.emu, &tx, &rx, &drops);
		if (rte_ring_count(rx_ring) == 0 && rx == injected() - sent_base)
			break;
		if (lmh_now_ms() > deadline) {
			print_error("waited %d ms for the wire to be drained: %u frames in its "
				    "ring, the device counted %" PRIu64 " of %" PRIu64 " sent\n",
				    LMH_DEADLINE_MS, rte_ring_count(rx_ring), rx,
				    injected() - sent_base);
			fail();
		}
		lmh_tick();
	}
	assert_true(lmh_dp_idle(&d));
}

/* ---- one round ------------------------------------------------------------------ */

struct round {
	unsigned int in_stop;     /* used entries written inside the stop, every RX ring */
	int64_t stop_ms;          /* first GET_VRING_BASE sent to last reply */
	uint64_t wire_in_stop;    /* frames the device took from the wire meanwhile */
};

/* No page of the guest's memory may have changed since the snapshot. */
static bool
nothing_excused(void *arg, uint64_t gpa)
{
	(void)arg;
	(void)gpa;
	return false;
}

static void
release_round(void)
{
	injector_stop();
	vu_snap_free(snap);
	snap = NULL;
	if (client != NULL) {
		vu_disconnect(client);
		client = NULL;
		assert_true(lmh_wait_closed(0));
	}
	if (probed) {
		probed = false;
		assert_true(lmh_wait_restored(&d));
		assert_int_equal(lmh_remove(&d), 0);
	}
	vu_log_destroy(dlog);
	dlog = NULL;
}

static void
run_round(const char *args, struct round *r)
{
	uint16_t u0[RINGS], u1[RINGS];
	uint32_t bases[RINGS];
	struct vu_snap_diff diff = { .excused = nothing_excused };
	uint64_t sent_base, sent_at_reply, rx0, rx1, tx, drops, missing;
	int64_t pages, t0;
	char all[256];
	size_t lmark;
	unsigned int i;
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(all, sizeof(all), "queues=%u,uplink=%s%s%s", PAIRS, port_name,
		 args[0] != '\0' ? "," : "", args);
	assert_int_equal(lmh_probe_profile(&d, 0, "cx6dx", all), 0);
	probed = true;
	vu_guest_reset(guest);
	assert_int_equal(vu_guest_new_eventfds(guest), 0);
	assert_non_null(client = lmh_fe_connect(0));
	assert_int_equal(vu_start_device(client, guest, NULL), 0);
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));

	/* A migration's last pass: logging on, every page the device writes recorded. */
	assert_int_equal(vu_log_create(&dlog, vu_mem_gpa_end(mem)), 0);
	lmark = lmh_log_mark();
	assert_int_equal(vu_set_log(client, dlog), 0);
	assert_true(lmh_wait_log(lmark, "dirty-page logging on", LMH_DEADLINE_MS));
	lmh_barrier(&d);
	vu_guest_dirty_mark(guest);

	memset(seen, 0, SEEN_MAX);
	/* The emulator's wire counts from the probe; the injector's count goes on. */
	emu_dev_wire_stats(d.emu, &tx, &rx0, &drops);
	assert_int_equal(rx0, 0);
	sent_base = injected();
	injector_start();
	wait_guest_received(lmh_rx_received(guest), WARMUP_FRAMES);

	/*
	 * The guest's last look (its buffers posted again), then the stop as
	 * QEMU sends it, with the wire still busy.
	 */
	vu_guest_poll(guest);
	for (i = 0; i < RINGS; i++)
		u0[i] = used_idx(i);
	emu_dev_wire_stats(d.emu, &tx, &rx0, &drops);
	t0 = lmh_now_ms();
	for (i = 0; i < RINGS; i++)
		assert_int_equal(vu_get_vring_base(client, i, &bases[i]), 0);
	r->stop_ms = lmh_now_ms() - t0;
	for (i = 0; i < RINGS; i++)
		u1[i] = used_idx(i);
	sent_at_reply = injected();
	/* (c) starts here: the memory as the replies left it. */
	ret = vu_mem_snapshot(mem, &snap);
	if (ret == -EAGAIN) {
		print_error("guest memory got new pages while it was copied right after the last "
			    "GET_VRING_BASE reply: the device still writes into it\n");
		fail();
	}
	assert_int_equal(ret, 0);
	emu_dev_wire_stats(d.emu, &tx, &rx1, &drops);
	r->wire_in_stop = rx1 - rx0;

	/* (b) What vhost hands over is what the device wrote, and that is whole frames. */
	for (i = 0; i < RINGS; i++) {
		if (bases[i] != u1[i]) {
			print_error("ring %u: GET_VRING_BASE says %u, the device's used->idx in "
				    "guest memory is %u (%u before the stop)\n", i, bases[i], u1[i],
				    u0[i]);
			fail();
		}
		if (i % 2 == 0)
			r->in_stop += check_filled_buffers(i, u0[i], u1[i], sent_at_reply);
		else
			assert_int_equal(u1[i], u0[i]);
	}

	/*
	 * (c) The wire goes on after the replies, while the queues stay
	 * suspended, while the device's worker puts them back to blank (waited
	 * for now, not after mr_gc_ms) and after: nothing more reaches the guest.
	 */
	wait_injected(sent_at_reply, AFTER_FRAMES);
	assert_true(lmh_wait_restored(&d));
	wait_injected(injected(), AFTER_FRAMES);
	injector_stop();
	wait_wire_drained(sent_base);
	assert_int_equal(vu_mem_snapshot_diff(mem, snap, &diff), 0);
	if (diff.changed != 0) {
		print_error("%" PRIu64 " guest pages changed after the last GET_VRING_BASE reply "
			    "(first: gpa 0x%" PRIx64 "); used->idx now", diff.changed,
			    diff.first_changed);
		for (i = 0; i < RINGS; i++)
			print_error(" %u (was %u)", used_idx(i), u1[i]);
		print_error("\n");
		fail();
	}
	assert_true(diff.compared > 0);

	/*
	 * (a) The guest reaps what the stop left used: every buffer the device
	 * filled is in the log (the device's own marks), and so is every other
	 * page it wrote, its used rings (the driver's marks at the stop).
	 */
	vu_guest_poll(guest);
	missing = lmh_dirty_buffers_missing(guest, dlog, &pages);
	assert_true(pages > 0);
	assert_int_equal(missing, 0);
	assert_int_equal(lmh_dirty_pages_missing(guest, dlog, &pages), 0);
	printf("  %s: %u frames written during the stop of %" PRId64 " ms (%" PRIu64
	       " came from the wire), %" PRIu64 " sent after it (none written), %" PRId64
	       " pages logged\n", args[0] != '\0' ? args : "defaults", r->in_stop, r->stop_ms,
	       r->wire_in_stop, injected() - sent_at_reply, pages);

	/* (d) The front end leaves; at removal nothing is alive, nothing written unlogged. */
	release_round();
}

/*
 * Rounds until ROUNDS_WANTED of them saw frames land inside the stop, the
 * stop done three ways in turn: workers=2, fewer command slots than pairs
 * (the stop's tasks take the pairs in turn, as 32 pairs share 16 slots on
 * a CX6 Dx: pairs 2 and 3 are suspended about 2 ms after pairs 0 and 1);
 * parallel=0 (one queue after another); the defaults (every queue
 * suspended at once: frames seldom land between a GET_VRING_BASE and the
 * SUSPENDs, but they arrive all through the stop).
 */
static void
test_frames_from_the_wire_during_the_stop(void **state)
{
	static const char *const args[] = { "workers=2", "parallel=0", "" };
	unsigned int round, hits = 0;
	struct round r;

	(void)state;
	for (round = 0; round < ROUNDS_MAX && hits < ROUNDS_WANTED; round++) {
		run_round(args[round % 3], &r);
		if (r.in_stop > 0)
			hits++;
	}
	printf("  %u of %u rounds had frames written during the stop\n", hits, round);
	if (hits < ROUNDS_WANTED) {
		print_error("only %u of %u rounds had frames written during the stop (%u wanted): "
			    "the test did not test the stop\n", hits, round, ROUNDS_WANTED);
		fail();
	}
}

static int
teardown(void **state)
{
	(void)state;
	release_round();
	return 0;
}

/* ---- the wire ---------------------------------------------------------------------- */

static int
wire_create(void)
{
	int ret;

	pool = rte_pktmbuf_pool_create("wire_pool", WIRE_MBUFS, 0, 0,
				       RTE_PKTMBUF_HEADROOM + 256, SOCKET_ID_ANY);
	rx_ring = rte_ring_create("wire_rx", WIRE_RING, SOCKET_ID_ANY, 0);
	tx_ring = rte_ring_create("wire_tx", WIRE_RING, SOCKET_ID_ANY, 0);
	if (pool == NULL || rx_ring == NULL || tx_ring == NULL)
		return -1;
	/* The uplink finds its port by name (rte_eth_dev_get_port_by_name). */
	ret = rte_eth_from_rings("wire", &rx_ring, 1, &tx_ring, 1, SOCKET_ID_ANY);
	if (ret < 0)
		return -1;
	port = (uint16_t)ret;
	return rte_eth_dev_get_name_by_port(port, port_name);
}

static void
wire_destroy(void)
{
	void *m = NULL;

	/* Frames the device sent (none expected) and any never taken. */
	while (tx_ring != NULL && rte_ring_dequeue(tx_ring, &m) == 0)
		rte_pktmbuf_free(m);
	while (rx_ring != NULL && rte_ring_dequeue(rx_ring, &m) == 0)
		rte_pktmbuf_free(m);
	if (port_name[0] != '\0')
		rte_eth_dev_close(port);
	rte_ring_free(rx_ring);
	rte_ring_free(tx_ring);
	rte_mempool_free(pool);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_frames_from_the_wire_during_the_stop, teardown),
	};
	int ret = 1;

	if (lmh_main_init(argv[0], argc == 2 ? argv[1] : NULL, "test-wire-stop", 1) < 0)
		return 1;
	if (lmh_rdma()) {
		printf("skipped on rdma: the uplink is the emulator's wire\n");
		lmh_fini();
		return 77;
	}
	seen = calloc(1, SEEN_MAX);
	if (seen != NULL && wire_create() == 0 && vu_mem_create_qemu(&mem, 1) == 0 &&
	    vu_guest_create(&guest, mem, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
							     .ring_size = RING_SIZE }) == 0)
		ret = cmocka_run_group_tests_name("wire stop", tests, NULL, NULL);
	vu_guest_destroy(guest);
	vu_mem_destroy(mem);
	wire_destroy();
	free(seen);
	lmh_fini();
	return ret;
}
