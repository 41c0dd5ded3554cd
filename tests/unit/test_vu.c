/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the built-in vhost-user front end (app/test-lm/vu) against
 * DPDK's own software vhost-user back end, run in this process: a forwarder
 * thread loops each queue pair's TX ring (odd vring) back to its RX ring
 * (even vring), so every frame the guest driver sends must come back once.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_vhost.h>

#include "vu_client.h"
#include "vu_frame.h"
#include "vu_guest.h"
#include "vu_vring.h"
#include "../lm_clock.h"

#define MAX_BE 4
#define MAX_QP 4
#define BURST 32
#define DEADLINE_MS 20000

struct fwd_q {
	struct rte_mbuf *pend[BURST];
	uint16_t head, n;
};

struct backend {
	char path[108];
	bool registered;
	int vid;
	bool active;
	unsigned int nqp;
	struct fwd_q q[MAX_QP];
	unsigned int new_count, destroy_count;
};

static struct rte_mempool *pool;
static pthread_mutex_t be_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t be_cond = PTHREAD_COND_INITIALIZER;
static struct backend be[MAX_BE];
static bool fwd_stop;            /* atomic */
static volatile bool fwd_paused;
static pthread_t fwd_thread;

/* ---- DPDK back end ---- */

static void
fwd_drop(struct backend *b)
{
	unsigned int q;

	for (q = 0; q < MAX_QP; q++) {
		while (b->q[q].n != 0) {
			rte_pktmbuf_free(b->q[q].pend[b->q[q].head++]);
			b->q[q].n--;
		}
		b->q[q].head = 0;
	}
}

static int
new_device(int vid)
{
	char name[108];
	unsigned int i;

	if (rte_vhost_get_ifname(vid, name, sizeof(name)) < 0)
		return -1;
	pthread_mutex_lock(&be_lock);
	for (i = 0; i < MAX_BE; i++) {
		if (be[i].registered && strcmp(be[i].path, name) == 0) {
			be[i].vid = vid;
			be[i].nqp = rte_vhost_get_vring_num(vid) / 2;
			if (be[i].nqp > MAX_QP)
				be[i].nqp = MAX_QP;
			be[i].active = true;
			be[i].new_count++;
		}
	}
	pthread_cond_broadcast(&be_cond);
	pthread_mutex_unlock(&be_lock);
	return 0;
}

static void
destroy_device(int vid)
{
	unsigned int i;

	/* The forwarder holds be_lock while it touches a device: after this, it won't. */
	pthread_mutex_lock(&be_lock);
	for (i = 0; i < MAX_BE; i++) {
		if (be[i].active && be[i].vid == vid) {
			be[i].active = false;
			be[i].destroy_count++;
			fwd_drop(&be[i]);
		}
	}
	pthread_cond_broadcast(&be_cond);
	pthread_mutex_unlock(&be_lock);
}

static const struct rte_vhost_device_ops be_ops = {
	.new_device = new_device,
	.destroy_device = destroy_device,
};

static unsigned int
fwd_pass(void)
{
	unsigned int i, q, work = 0;

	for (i = 0; i < MAX_BE; i++) {
		if (!be[i].active)
			continue;
		for (q = 0; q < be[i].nqp; q++) {
			struct fwd_q *f = &be[i].q[q];
			uint16_t sent, k;

			/* Hold what RX could not take: a lossless loopback. */
			if (f->n == 0) {
				f->head = 0;
				f->n = rte_vhost_dequeue_burst(be[i].vid, 2 * q + 1, pool,
							       f->pend, BURST);
			}
			if (f->n == 0)
				continue;
			sent = rte_vhost_enqueue_burst(be[i].vid, 2 * q, f->pend + f->head, f->n);
			for (k = 0; k < sent; k++)
				rte_pktmbuf_free(f->pend[f->head + k]);
			f->head += sent;
			f->n -= sent;
			work += sent;
		}
	}
	return work;
}

static void *
fwd_main(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&fwd_stop, __ATOMIC_ACQUIRE)) {
		unsigned int work = 0;

		pthread_mutex_lock(&be_lock);
		if (!fwd_paused)
			work = fwd_pass();
		pthread_mutex_unlock(&be_lock);
		if (work == 0)
			nanosleep(&(struct timespec){ .tv_nsec = 20000 }, NULL);
	}
	return NULL;
}

static void
fwd_pause(bool pause)
{
	/* Taking the lock once guarantees no pass is running afterwards. */
	pthread_mutex_lock(&be_lock);
	fwd_paused = pause;
	pthread_mutex_unlock(&be_lock);
}

static void
be_register(int i)
{
	memset(&be[i], 0, sizeof(be[i]));
	be[i].vid = -1;
	snprintf(be[i].path, sizeof(be[i].path), "/tmp/test-vu-%d-%d.sock", getpid(), i);
	unlink(be[i].path);
	if (rte_vhost_driver_register(be[i].path, 0) != 0 ||
	    rte_vhost_driver_callback_register(be[i].path, &be_ops) != 0 ||
	    rte_vhost_driver_start(be[i].path) != 0) {
		fprintf(stderr, "cannot start vhost back end %s\n", be[i].path);
		exit(1);
	}
	pthread_mutex_lock(&be_lock);
	be[i].registered = true;
	pthread_mutex_unlock(&be_lock);
}

/*
 * Back ends are registered once, at start-up: DPDK's vhost event thread
 * only picks up a new listening socket when its poll times out (1 s), so
 * registering per test would cost a second each time.
 */
static int
be_add(void)
{
	static int next;

	assert_true(be[next % (MAX_BE - 1)].registered);
	return next++ % (MAX_BE - 1);
}

static bool be_wait_active(int i, bool active);

/* Give back end i back: its device must be gone before the next test. */
static void
be_del(int i)
{
	assert_true(be_wait_active(i, false));
}

/* Unregister for good (the last back end is reserved for this). */
static void
be_kill(int i)
{
	rte_vhost_driver_unregister(be[i].path);
	pthread_mutex_lock(&be_lock);
	be[i].registered = false;
	be[i].active = false;
	fwd_drop(&be[i]);
	pthread_mutex_unlock(&be_lock);
	unlink(be[i].path);
}

/* Wait (bounded) until back end i's device is running or not. */
static bool
be_wait_active(int i, bool active)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&be_lock);
	while (be[i].active != active)
		if (pthread_cond_timedwait(&be_cond, &be_lock, &ts) != 0)
			break;
	ok = be[i].active == active;
	pthread_mutex_unlock(&be_lock);
	return ok;
}

/* ---- guest helpers ---- */

struct setup {
	struct vu_mem *mem;
	struct vu_guest *g;
	struct vu_client *c;
	int bi;
};

static void
guest_make(struct setup *s, unsigned int nqp, bool packed, uint16_t size)
{
	struct vu_guest_cfg cfg = { .queue_pairs = nqp, .ring_size = size, .packed = packed };

	/* 5 GiB: QEMU's two-region layout, sparse (only rings are touched). */
	assert_int_equal(vu_mem_create_qemu(&s->mem, 5), 0);
	assert_int_equal(vu_guest_create(&s->g, s->mem, &cfg), 0);
}

static void
guest_free(struct setup *s)
{
	vu_guest_destroy(s->g);
	vu_mem_destroy(s->mem);
}

/* Send npp more frames per pair and wait until all have come back. */
static void
traffic(struct vu_guest *g, unsigned int nqp, uint64_t npp)
{
	uint64_t target[MAX_QP], total = 0;
	struct vu_guest_stats st;
	int64_t deadline = lmt_now_ms() + DEADLINE_MS;
	unsigned int q;

	for (q = 0; q < nqp; q++) {
		target[q] = vu_guest_tx_sent(g, (int)q) + npp;
		total += target[q];
	}
	for (;;) {
		int work = 0;

		for (q = 0; q < nqp; q++) {
			uint64_t left = target[q] - vu_guest_tx_sent(g, (int)q);

			if (left != 0)
				work += vu_guest_tx(g, q, left > 64 ? 64 : (unsigned int)left);
		}
		work += vu_guest_poll(g);
		vu_guest_stats(g, -1, &st);
		if (st.rx_received >= total && vu_guest_tx_inflight(g, -1) == 0)
			break;
		if (lmt_now_ms() > deadline) {
			print_error("timeout: sent %" PRIu64 " received %" PRIu64 "/%" PRIu64
				    " inflight %" PRIu64 "\n", vu_guest_tx_sent(g, -1),
				    st.rx_received, total, vu_guest_tx_inflight(g, -1));
			fail();
		}
		if (work == 0)
			vu_guest_wait(g, 2);
	}
	assert_int_equal(st.rx_received, total);
	assert_int_equal(st.rx_bad, 0);
	assert_int_equal(st.duplicates, 0);
	assert_int_equal(st.dev_errors, 0);
	assert_int_equal(vu_guest_lost(g, -1), 0);
	assert_int_equal(st.tx_completed, vu_guest_tx_sent(g, -1));
}

static uint32_t
expect_base(bool packed, uint16_t size, uint64_t consumed)
{
	if (!packed)
		return (uint32_t)(consumed & 0xffff);
	/* Bits 0-14: next avail slot; bit 15: avail wrap counter (starts at 1). */
	return (uint32_t)(consumed % size) | (((consumed / size) & 1) ? 0 : 0x8000);
}

static void
check_bases(const uint32_t *bases, unsigned int nqp, bool packed, uint16_t size,
	    uint64_t consumed)
{
	unsigned int r;

	for (r = 0; r < 2 * nqp; r++)
		assert_int_equal(bases[r], expect_base(packed, size, consumed));
}

/* ---- tests ---- */

static void
test_guest_memory_has_qemus_layout_and_a_log_bit_per_page(void **state)
{
	struct vu_mem_region bad[3] = {
		{ 0, 1ULL << 20, 0 }, { 1ULL << 19, 1ULL << 20, 0 }, { 1ULL << 40, 0, 0 },
	};
	struct vu_mem *m;
	struct vu_log *log;
	uint64_t gpa, gpa2;
	uint8_t *p;

	(void)state;
	assert_int_equal(vu_mem_create_qemu(&m, 2), 0);
	assert_int_equal(m->nregions, 1);
	vu_mem_destroy(m);
	assert_int_equal(vu_mem_create_qemu(&m, 256), 0);
	assert_int_equal(m->nregions, 2);
	assert_true(m->regions[1].gpa == 4 * VU_GIB && m->regions[1].offset == 3 * VU_GIB);
	assert_true(m->regions[1].size == 253 * VU_GIB);
	assert_true(vu_mem_gpa_end(m) == 257 * VU_GIB);
	p = vu_mem_gpa_to_hva(m, 5 * VU_GIB, 8);
	assert_non_null(p);
	assert_ptr_equal(p, m->base + 4 * VU_GIB);
	assert_int_equal(vu_mem_hva_to_gpa(m, p, &gpa), 0);
	assert_true(gpa == 5 * VU_GIB);
	/* The PCI hole and past the end do not translate. */
	assert_null(vu_mem_gpa_to_hva(m, 3 * VU_GIB + 4096, 8));
	assert_null(vu_mem_gpa_to_hva(m, 3 * VU_GIB - 4, 8));
	assert_null(vu_mem_gpa_to_hva(m, 257 * VU_GIB, 1));
	/* In turn: the start of low RAM (not page 0), the end of high RAM, ... */
	assert_int_equal(vu_mem_alloc(m, 100, 4096, &gpa), 0);
	assert_int_equal(vu_mem_alloc(m, 5000, 65536, &gpa2), 0);
	assert_true(gpa == 4096 && gpa2 % 65536 == 0);
	assert_true(gpa2 == 257 * VU_GIB - 65536);
	assert_int_equal(vu_mem_alloc(m, 4096, 4096, &gpa), 0);
	assert_true(gpa == 4 * VU_GIB);
	assert_int_equal(vu_mem_alloc(m, 4096, 4096, &gpa), 0);
	assert_true(gpa == 3 * VU_GIB - 4096);
	assert_int_equal(vu_mem_alloc_at(m, 2, 4096, 4096, &gpa), 0);
	assert_true(gpa == 4 * VU_GIB + 4096);
	/* A full place passes to the next; more than any region holds fails. */
	assert_int_equal(vu_mem_alloc_at(m, 0, 4 * VU_GIB, 4096, &gpa), 0);
	assert_true(gpa >= 4 * VU_GIB);
	assert_int_equal(vu_mem_alloc(m, 254 * VU_GIB, 4096, &gpa), -ENOMEM);
	/* Log: one bit per 4 KiB page of the whole guest physical space. */
	assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(m)), 0);
	assert_true(log->size == 257 * VU_GIB / 4096 / 8);
	log->bitmap[1] = 0x04;	/* page 10 */
	assert_true(vu_log_test(log, 10 * 4096 + 17));
	assert_false(vu_log_test(log, 9 * 4096));
	assert_int_equal(vu_log_count(log), 1);
	vu_log_reset(log);
	assert_int_equal(vu_log_count(log), 0);
	vu_log_destroy(log);
	vu_mem_destroy(m);
	/* Hostile layouts are accepted (to be sent), unusable parts ignored. */
	assert_int_equal(vu_mem_create(&m, 1ULL << 20, bad, 3), 0);
	assert_int_equal(m->nregions, 3);
	assert_non_null(vu_mem_gpa_to_hva(m, 4096, 8));
	assert_null(vu_mem_gpa_to_hva(m, 1ULL << 40, 1));
	vu_mem_destroy(m);
}

/* Frame format and the exact seen-record (internal API). */
static void
test_frames_carry_pair_and_sequence_and_repeats_are_seen(void **state)
{
	struct vu_seen seen = { 0 };
	uint8_t f[VU_FRAME_MAX];
	uint64_t seq, i;
	uint32_t qp;

	(void)state;
	vu_frame_build(f, 100, 3, 123456789);
	assert_int_equal(vu_frame_parse(f, 100, &qp, &seq), 0);
	assert_int_equal(qp, 3);
	assert_true(seq == 123456789);
	assert_true(f[12] == 0x88 && f[13] == 0xb5);
	f[77] ^= 1;
	assert_int_equal(vu_frame_parse(f, 100, &qp, &seq), -EINVAL);
	assert_int_equal(vu_frame_parse(f, 10, &qp, &seq), -EINVAL);
	/* Out of order across chunk boundaries; a complete chunk still knows. */
	for (i = 70000; i-- > 0;)
		assert_int_equal(vu_seen_record(&seen, i), 1);
	assert_int_equal(vu_seen_record(&seen, 5), 0);
	assert_int_equal(vu_seen_record(&seen, 65536 + 7), 0);
	assert_int_equal(vu_seen_record(&seen, 5000000), 1);
	assert_int_equal(vu_seen_record(&seen, 5000000), 0);
	vu_seen_free(&seen);
}

/* A frame corrupted in guest memory before the device reads it is caught. */
static void
test_frame_corrupted_in_guest_memory_is_counted_bad(void **state)
{
	struct vu_guest_stats st;
	struct vu_ring_info ri;
	int64_t deadline;
	struct setup s;
	uint16_t id, aidx;
	uint64_t gpa;
	uint8_t *p;

	(void)state;
	s.bi = be_add();
	guest_make(&s, 1, false, 64);
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
	assert_true(be_wait_active(s.bi, true));
	fwd_pause(true);
	assert_int_equal(vu_guest_tx(s.g, 0, 3), 3);
	/* The second frame: avail ring entry idx - 2 names its descriptor. */
	assert_int_equal(vu_guest_ring_info(s.g, 1, &ri), 0);
	memcpy(&aidx, (uint8_t *)ri.avail + 2, 2);
	memcpy(&id, (uint8_t *)ri.avail + 4 + 2 * ((aidx - 2) & (ri.num - 1)), 2);
	memcpy(&gpa, (uint8_t *)ri.desc + 16 * id, 8);
	p = vu_mem_gpa_to_hva(s.mem, gpa, VU_NET_HDR_LEN + 64);
	assert_non_null(p);
	p[VU_NET_HDR_LEN + 50] ^= 0xff;
	fwd_pause(false);
	deadline = lmt_now_ms() + DEADLINE_MS;
	do {
		if (vu_guest_poll(s.g) == 0)
			vu_guest_wait(s.g, 2);
		vu_guest_stats(s.g, -1, &st);
	} while (st.rx_received < 3 && lmt_now_ms() < deadline);
	assert_int_equal(st.rx_received, 3);
	assert_int_equal(st.rx_bad, 1);
	assert_int_equal(st.rx_unique, 2);
	assert_int_equal(vu_guest_lost(s.g, -1), 1);
	vu_disconnect(s.c);
	be_del(s.bi);
	guest_free(&s);
}

struct traffic_case {
	unsigned int nqp;
	bool packed;
	bool event_idx;
	bool no_interrupt;
	uint16_t size;
	uint64_t n;
};

static void
run_traffic(const struct traffic_case *tc)
{
	struct vu_guest_cfg cfg = { .queue_pairs = tc->nqp, .ring_size = tc->size,
				    .packed = tc->packed, .no_interrupt = tc->no_interrupt };
	struct vu_start_opts o = { .event_idx = tc->event_idx };
	uint32_t bases[2 * MAX_QP];
	struct setup s;
	uint8_t status;
	uint64_t pf;

	s.bi = be_add();
	assert_int_equal(vu_mem_create_qemu(&s.mem, 5), 0);
	assert_int_equal(vu_guest_create(&s.g, s.mem, &cfg), 0);
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	assert_int_equal(vu_start_device(s.c, s.g, &o), 0);
	pf = vu_protocol_features(s.c);
	assert_true(pf & (1ULL << VU_PROTO_REPLY_ACK));
	assert_true(pf & (1ULL << VU_PROTO_STATUS));
	assert_int_equal(vu_get_status(s.c, &status), 0);
	assert_int_equal(status, 0x0f);
	assert_true(be_wait_active(s.bi, true));
	assert_int_equal(be[s.bi].nqp, tc->nqp);
	if (tc->event_idx)
		assert_true(vu_acked_features(s.c) & (1ULL << VU_F_EVENT_IDX));
	traffic(s.g, tc->nqp, tc->n);
	assert_int_equal(vu_stop_device(s.c, bases, 2 * MAX_QP), 0);
	assert_true(be_wait_active(s.bi, false));
	check_bases(bases, tc->nqp, tc->packed, tc->size, tc->n);
	vu_disconnect(s.c);
	be_del(s.bi);
	guest_free(&s);
}

static void
test_split_1_pair_forwards_and_stops_at_the_exact_bases(void **state)
{
	const struct traffic_case tc = { .nqp = 1, .size = 256, .n = 20000 };

	(void)state;
	run_traffic(&tc);
}

static void
test_split_event_idx_2_pairs_forward_and_stop_at_exact_bases(void **state)
{
	const struct traffic_case tc = { .nqp = 2, .size = 256, .n = 20000, .event_idx = true };

	(void)state;
	run_traffic(&tc);
}

static void
test_packed_1_pair_forwards_and_stops_at_the_exact_bases(void **state)
{
	const struct traffic_case tc = { .nqp = 1, .packed = true, .size = 256, .n = 20000 };

	(void)state;
	run_traffic(&tc);
}

static void
test_packed_rings_of_odd_size_wrap_and_stop_at_the_exact_bases(void **state)
{
	/* Packed rings need not be a power of two: wraps at odd positions. */
	const struct traffic_case tc = { .nqp = 2, .packed = true, .size = 200, .n = 20000,
					 .event_idx = true, .no_interrupt = true };

	(void)state;
	run_traffic(&tc);
}

/* Stop, then start again on the same connection from the returned bases. */
static void
test_restart_on_the_same_connection_resumes_from_the_bases(void **state)
{
	const unsigned int nqp = 2;
	uint32_t bases[4];
	struct vu_start_opts o = { 0 };
	struct setup s;
	int pk;

	(void)state;
	for (pk = 0; pk < 2; pk++) {
		s.bi = be_add();
		guest_make(&s, nqp, pk, 128);
		assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
		assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
		traffic(s.g, nqp, 1000);
		assert_int_equal(vu_stop_device(s.c, bases, 4), 0);
		check_bases(bases, nqp, pk, 128, 1000);
		assert_true(be_wait_active(s.bi, false));
		o.bases = bases;
		assert_int_equal(vu_start_device(s.c, s.g, &o), 0);
		assert_true(be_wait_active(s.bi, true));
		traffic(s.g, nqp, 1500);
		assert_int_equal(vu_stop_device(s.c, bases, 4), 0);
		check_bases(bases, nqp, pk, 128, 2500);
		vu_disconnect(s.c);
		be_del(s.bi);
		guest_free(&s);
	}
}

/* A new connection after a disconnect, with a reset (fresh) guest. */
static void
test_fresh_guest_forwards_on_a_new_connection_after_a_disconnect(void **state)
{
	struct setup s;
	int k;

	(void)state;
	s.bi = be_add();
	guest_make(&s, 1, false, 256);
	for (k = 0; k < 3; k++) {
		assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
		vu_guest_reset(s.g);
		assert_int_equal(vu_guest_new_eventfds(s.g), 0);
		assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
		assert_true(be_wait_active(s.bi, true));
		traffic(s.g, 1, 3000);
		/* Disconnect without GET_VRING_BASE: the back end must cope. */
		vu_disconnect(s.c);
		assert_true(be_wait_active(s.bi, false));
	}
	be_del(s.bi);
	guest_free(&s);
}

/*
 * Migration between two back ends sharing the guest memory, with dirty
 * logging on the source and descriptors still in flight at the stop.
 */
static void
test_migration_between_back_ends_loses_no_frame_and_no_page(void **state)
{
	const unsigned int nqp = 2;
	const uint16_t size = 256;
	struct vu_client *dst;
	struct vu_start_opts o = { 0 };
	struct vu_log *log;
	uint32_t bases[4];
	uint64_t missing, first, tx_before;
	int64_t checked;
	struct setup s;
	int bd, pk;

	(void)state;
	for (pk = 0; pk < 2; pk++) {
		s.bi = be_add();
		bd = be_add();
		guest_make(&s, nqp, pk, size);
		assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
		assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
		/* As QEMU: the destination negotiates before the source stops. */
		assert_int_equal(vu_connect(&dst, be[bd].path, 2000), 0);
		assert_int_equal(vu_device_init(dst, NULL), 0);
		traffic(s.g, nqp, 5000);
		assert_int_equal(vu_log_create(&log, vu_mem_gpa_end(s.mem)), 0);
		assert_int_equal(vu_set_log(s.c, log), 0);
		assert_true(vu_acked_features(s.c) & (1ULL << VU_F_LOG_ALL));
		vu_guest_dirty_mark(s.g);
		traffic(s.g, nqp, 3000);
		/* Frames posted while the source is not processing: in flight. */
		fwd_pause(true);
		assert_int_equal(vu_guest_tx(s.g, 0, 40), 40);
		assert_int_equal(vu_guest_tx(s.g, 1, 7), 7);
		tx_before = vu_guest_tx_sent(s.g, -1);
		assert_int_equal(vu_stop_device(s.c, bases, 4), 0);
		assert_true(be_wait_active(s.bi, false));
		fwd_pause(false);
		/* RX consumed 8000 per pair; TX the same (the 47 were not fetched). */
		check_bases(bases, nqp, pk, size, 8000);
		checked = vu_guest_dirty_check(s.g, log, &missing, &first);
		assert_true(checked > 0);
		if (missing != 0)
			print_error("%" PRIu64 " of %" PRId64 " pages not logged, first %#"
				    PRIx64 "\n", missing, checked, first);
		assert_int_equal(missing, 0);
		/* The checker must notice an empty log. */
		vu_log_reset(log);
		assert_true(vu_guest_dirty_check(s.g, log, &missing, NULL) == checked);
		assert_true(missing == (uint64_t)checked);
		/* Destination: same guest memory and rings, new eventfds. */
		assert_int_equal(vu_guest_new_eventfds(s.g), 0);
		o.bases = bases;
		assert_int_equal(vu_start_device(dst, s.g, &o), 0);
		assert_true(be_wait_active(bd, true));
		/* The 47 in-flight frames arrive through the destination. */
		traffic(s.g, nqp, 2000);
		assert_true(vu_guest_tx_sent(s.g, -1) == tx_before + 4000);
		assert_int_equal(vu_stop_device(dst, bases, 4), 0);
		assert_true(bases[1] == expect_base(pk, size, 10040));
		assert_true(bases[3] == expect_base(pk, size, 10007));
		vu_disconnect(dst);
		vu_disconnect(s.c);
		vu_log_destroy(log);
		be_del(bd);
		be_del(s.bi);
		guest_free(&s);
	}
}

/* Two devices of one guest (one memory), driven at the same time. */
static void
test_two_devices_of_one_guest_forward_at_the_same_time(void **state)
{
	struct vu_guest_cfg cfg = { .queue_pairs = 2, .ring_size = 256 };
	struct vu_guest *g[2];
	struct vu_client *c[2];
	struct vu_mem *m;
	int b[2], k, round;

	(void)state;
	assert_int_equal(vu_mem_create_qemu(&m, 8), 0);
	for (k = 0; k < 2; k++) {
		b[k] = be_add();
		cfg.packed = k == 1;
		assert_int_equal(vu_guest_create(&g[k], m, &cfg), 0);
		assert_int_equal(vu_connect(&c[k], be[b[k]].path, 2000), 0);
	}
	for (k = 0; k < 2; k++)
		assert_int_equal(vu_start_device(c[k], g[k], NULL), 0);
	for (round = 0; round < 4; round++)
		for (k = 0; k < 2; k++)
			traffic(g[k], 2, 1000);
	for (k = 0; k < 2; k++) {
		assert_int_equal(vu_stop_device(c[k], NULL, 0), 0);
		vu_disconnect(c[k]);
		vu_guest_destroy(g[k]);
		be_del(b[k]);
	}
	vu_mem_destroy(m);
}

/* Raw and malformed messages: errors, never a crash. */
static void
test_raw_and_malformed_messages_are_errors_never_a_crash(void **state)
{
	struct vu_wire_region r[9];
	struct vu_msg_hdr hdr;
	uint8_t junk[64] = { 0xff };
	uint64_t f, v = 0;
	struct setup s;
	int ret, i;

	(void)state;
	s.bi = be_add();
	guest_make(&s, 1, false, 64);
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	/* A GET_FEATURES sent raw, reply read raw. */
	assert_int_equal(vu_send_raw(s.c, VU_GET_FEATURES, VU_FLAG_VERSION, NULL, 0, NULL, 0), 0);
	assert_int_equal(vu_recv_raw(s.c, &hdr, &f, sizeof(f), 2000), 8);
	assert_int_equal(hdr.request, VU_GET_FEATURES);
	assert_true(hdr.flags & VU_FLAG_REPLY);
	/* Nothing more to read. */
	assert_int_equal(vu_recv_raw(s.c, &hdr, &f, sizeof(f), 50), -ETIMEDOUT);
	/* Reply too large for the buffer: drained, reported. */
	assert_int_equal(vu_send_raw(s.c, VU_GET_FEATURES, VU_FLAG_VERSION, NULL, 0, NULL, 0), 0);
	assert_int_equal(vu_recv_raw(s.c, &hdr, junk, 4, 2000), -EMSGSIZE);
	assert_int_equal(vu_get_features(s.c, &f), 0);
	/* Nine regions (the limit is eight), with fds: rejected by the back end. */
	for (i = 0; i < 9; i++)
		r[i] = (struct vu_wire_region){ (uint64_t)i << 30, 1ULL << 30, 0, 0, s.mem->fd };
	ret = vu_set_mem_table_raw(s.c, r, 9);
	assert_true(ret == 0 || ret == -ECONNRESET || ret == -EIO);
	vu_disconnect(s.c);
	/* An unknown request number with junk payload. */
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	assert_int_equal(vu_send_raw(s.c, 9999, VU_FLAG_VERSION | VU_FLAG_NEED_REPLY, junk,
				     sizeof(junk), NULL, 0), 0);
	ret = vu_recv_raw(s.c, &hdr, &v, sizeof(v), 2000);
	assert_true(ret == 8 || ret == -ECONNRESET);
	/* The back end probably closed: calls fail cleanly, repeatedly. */
	ret = vu_get_features(s.c, &f);
	assert_true(ret == 0 || ret == -ECONNRESET);
	vu_disconnect(s.c);
	/* A bad version and a huge size claim. */
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	ret = vu_send_raw(s.c, VU_SET_OWNER, 0x3, NULL, 0, NULL, 0);
	assert_true(ret == 0 || ret == -ECONNRESET);
	vu_disconnect(s.c);
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	hdr = (struct vu_msg_hdr){ VU_SET_FEATURES, VU_FLAG_VERSION, 0x7fffffff };
	assert_int_equal(write(vu_client_fd(s.c), &hdr, sizeof(hdr)), sizeof(hdr));
	ret = vu_get_features(s.c, &f);
	assert_true(ret < 0);
	vu_disconnect(s.c);
	/* Afterwards the back end still serves a normal device. */
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
	traffic(s.g, 1, 500);
	/* Requests on rings that do not exist: errors, the client survives. */
	ret = vu_set_vring_num(s.c, 300, 64);
	assert_true(ret < 0);
	vu_disconnect(s.c);
	be_del(s.bi);
	guest_free(&s);
}

struct fake {
	char path[108];
	int lfd;
	int mode;	/* 0: read a request then close; 1: read it and never answer */
	int hold[2];
};

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	uint8_t buf[256];
	int fd;

	fd = accept(f->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	(void)!read(fd, buf, sizeof(buf));
	if (f->mode == 1)
		(void)!read(f->hold[0], buf, 1);
	close(fd);
	return NULL;
}

static void
fake_start(struct fake *f, pthread_t *t, int mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(f->path, sizeof(f->path), "/tmp/test-vu-%d-fake.sock", getpid());
	unlink(f->path);
	strcpy(sa.sun_path, f->path);
	f->mode = mode;
	assert_int_equal(pipe(f->hold), 0);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 1), 0);
	assert_int_equal(pthread_create(t, NULL, fake_main, f), 0);
}

static void
fake_stop(struct fake *f, pthread_t t)
{
	close(f->hold[1]);
	pthread_join(t, NULL);
	close(f->hold[0]);
	close(f->lfd);
	unlink(f->path);
}

static struct {
	unsigned int n;
	uint32_t request;
	const char *what;
} stalls;

static void
record_stall(uint32_t request, const char *what)
{
	stalls.n++;
	stalls.request = request;
	stalls.what = what;
}

/*
 * A back end that goes away or stops answering; the stall hook hears of
 * a reply that never came and of a socket the back end stopped reading.
 */
static void
test_back_end_gone_or_silent_is_an_error_not_a_hang(void **state)
{
	struct vu_client *c;
	struct fake f;
	pthread_t t;
	uint32_t base;
	uint64_t v;
	struct setup s;
	unsigned int i;
	int ret = 0;

	(void)state;
	/* No socket at all: a bounded connect. */
	assert_int_equal(vu_connect(&c, "/tmp/test-vu-nonexistent.sock", 50), -ENOENT);
	fake_start(&f, &t, 0);
	assert_int_equal(vu_connect(&c, f.path, 2000), 0);
	assert_int_equal(vu_get_features(c, &v), -ECONNRESET);
	assert_int_equal(vu_set_owner(c), -ECONNRESET);
	assert_int_equal(vu_get_vring_base(c, 0, &base), -ECONNRESET);
	vu_disconnect(c);
	fake_stop(&f, t);
	fake_start(&f, &t, 1);
	assert_int_equal(vu_connect(&c, f.path, 2000), 0);
	vu_set_reply_timeout(c, 100);
	vu_set_stall_hook(record_stall);
	assert_int_equal(vu_get_features(c, &v), -ETIMEDOUT);
	assert_int_equal(stalls.n, 1);
	assert_int_equal(stalls.request, VU_GET_FEATURES);
	assert_string_equal(stalls.what, "no reply");
	/* It reads nothing more: requests without a reply fill its socket. */
	for (i = 0; i < 100000 && ret == 0; i++)
		ret = vu_set_owner(c);
	assert_int_equal(ret, -ETIMEDOUT);
	assert_int_equal(stalls.n, 2);
	assert_int_equal(stalls.request, VU_SET_OWNER);
	assert_string_equal(stalls.what, "the back end read nothing");
	vu_set_stall_hook(NULL);
	vu_disconnect(c);
	fake_stop(&f, t);
	/* The DPDK back end unregistered while a device runs. */
	s.bi = MAX_BE - 1;
	guest_make(&s, 1, true, 64);
	assert_int_equal(vu_connect(&s.c, be[s.bi].path, 2000), 0);
	assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
	assert_true(be_wait_active(s.bi, true));
	traffic(s.g, 1, 200);
	be_kill(s.bi);
	assert_int_equal(vu_get_vring_base(s.c, 0, &base), -ECONNRESET);
	assert_int_equal(vu_stop_device(s.c, NULL, 0), -ECONNRESET);
	vu_disconnect(s.c);
	guest_free(&s);
}


/*
 * A scripted back end that records every request's header: which requests
 * the front end asks an ack for, under each policy (enum vu_ack_policy).
 */
struct script_be {
	char path[108];
	int lfd;
	unsigned int n;
	struct {
		uint32_t req, flags;
		uint64_t u64;
	} log[256];
	uint8_t status;
};

static int
script_reply(int fd, uint32_t req, const void *p, uint32_t size)
{
	uint8_t buf[12 + 16];
	uint32_t h[3] = { req, VU_FLAG_VERSION | VU_FLAG_REPLY, size };

	memcpy(buf, h, sizeof(h));
	memcpy(buf + 12, p, size);
	return write(fd, buf, 12 + size) == (ssize_t)(12 + size) ? 0 : -1;
}

static void *
script_main(void *arg)
{
	struct script_be *b = arg;
	int fd = accept(b->lfd, NULL, NULL);

	while (fd >= 0 && b->n < 256) {
		union {
			char buf[CMSG_SPACE(8 * sizeof(int))];
			struct cmsghdr align;
		} cb;
		uint32_t h[3];
		uint8_t payload[512];
		struct iovec iov = { .iov_base = h, .iov_len = sizeof(h) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.buf, .msg_controllen = sizeof(cb.buf) };
		struct cmsghdr *cm;
		uint64_t v = 0;
		uint32_t st[2];

		if (recvmsg(fd, &mh, MSG_WAITALL) != (ssize_t)sizeof(h))
			break;
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
			int *fds = (int *)CMSG_DATA(cm);
			size_t k, nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (k = 0; k < nfd; k++)
				close(fds[k]);
		}
		if (h[2] > sizeof(payload) ||
		    (h[2] > 0 && recv(fd, payload, h[2], MSG_WAITALL) != (ssize_t)h[2]))
			break;
		if (h[2] >= 8)
			memcpy(&v, payload, 8);
		b->log[b->n].req = h[0];
		b->log[b->n].flags = h[1];
		b->log[b->n].u64 = v;
		b->n++;
		switch (h[0]) {
		case VU_GET_FEATURES:
			v = 1ULL << VU_F_VERSION_1 | 1ULL << VU_F_PROTOCOL_FEATURES |
			    1ULL << VU_F_LOG_ALL;
			script_reply(fd, h[0], &v, 8);
			continue;
		case VU_GET_PROTOCOL_FEATURES:
			v = 1ULL << VU_PROTO_REPLY_ACK | 1ULL << VU_PROTO_STATUS;
			script_reply(fd, h[0], &v, 8);
			continue;
		case VU_GET_STATUS:
			v = b->status;
			script_reply(fd, h[0], &v, 8);
			continue;
		case VU_SET_STATUS:
			b->status = (uint8_t)v;
			break;
		case VU_GET_VRING_BASE:
			memcpy(st, payload, sizeof(st));
			st[1] = 0;
			script_reply(fd, h[0], st, sizeof(st));
			continue;
		default:
			break;
		}
		if (h[1] & VU_FLAG_NEED_REPLY) {
			v = 0;
			script_reply(fd, h[0], &v, 8);
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * VU_ACK_EVERY asks an ack for every request; VU_ACK_QEMU only where QEMU
 * (hw/virtio/vhost-user.c, 8.2+) waits - SET_MEM_TABLE, SET_VRING_ENABLE,
 * SET_FEATURES with LOG_ALL - and adds status bits as its
 * vhost_user_add_status() does: GET_STATUS, then SET_STATUS.
 */
static void
test_acks_are_asked_for_every_request_or_where_qemu_waits(void **state)
{
	static const enum vu_ack_policy pol[] = { VU_ACK_EVERY, VU_ACK_QEMU };
	unsigned int p;

	(void)state;
	for (p = 0; p < 2; p++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct script_be *b = calloc(1, sizeof(*b));
		unsigned int i, acked = 0, enables = 0, sets = 0, after_proto = 0;
		uint8_t statuses[4] = { 0 };
		struct setup s;
		pthread_t t;

		assert_non_null(b);
		snprintf(b->path, sizeof(b->path), "/tmp/test-vu-%d-script.sock", getpid());
		unlink(b->path);
		strcpy(sa.sun_path, b->path);
		b->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(b->lfd >= 0);
		assert_int_equal(bind(b->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(b->lfd, 1), 0);
		assert_int_equal(pthread_create(&t, NULL, script_main, b), 0);
		guest_make(&s, 1, false, 64);
		assert_int_equal(vu_connect(&s.c, b->path, 2000), 0);
		vu_set_reply_timeout(s.c, DEADLINE_MS);
		vu_set_ack_policy(s.c, pol[p]);
		assert_int_equal(vu_start_device(s.c, s.g, NULL), 0);
		/* Logging on: QEMU waits for it to be in force. */
		assert_int_equal(vu_set_features(s.c, vu_acked_features(s.c) |
						 1ULL << VU_F_LOG_ALL), 0);
		vu_disconnect(s.c);
		pthread_join(t, NULL);
		close(b->lfd);
		unlink(b->path);
		guest_free(&s);
		for (i = 0; i < b->n; i++) {
			uint32_t r = b->log[i].req;
			bool need = b->log[i].flags & VU_FLAG_NEED_REPLY;
			bool want;

			if (r == VU_SET_PROTOCOL_FEATURES) {
				/* REPLY_ACK is only in force once this is sent. */
				assert_false(need);
				after_proto = 1;
				continue;
			}
			if (r == VU_GET_FEATURES || r == VU_GET_PROTOCOL_FEATURES ||
			    r == VU_GET_STATUS || !after_proto)
				continue;
			if (pol[p] == VU_ACK_EVERY)
				want = true;
			else
				want = r == VU_SET_MEM_TABLE || r == VU_SET_VRING_ENABLE ||
				       (r == VU_SET_FEATURES &&
					(b->log[i].u64 >> VU_F_LOG_ALL) & 1);
			if (need != want)
				fail_msg("policy %u: request %u need_reply %d, expected %d", p, r,
					 need, want);
			acked += need;
			enables += r == VU_SET_VRING_ENABLE;
			if (r == VU_SET_STATUS) {
				if (pol[p] == VU_ACK_QEMU)
					assert_int_equal(b->log[i - 1].req, VU_GET_STATUS);
				if (sets < 4)
					statuses[sets] = (uint8_t)b->log[i].u64;
				sets++;
			}
		}
		assert_int_equal(enables, 2);
		assert_int_equal(b->status, VU_STATUS_ACK | VU_STATUS_DRIVER |
				 VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK);
		if (pol[p] == VU_ACK_QEMU) {
			/* MEM_TABLE, 2 ENABLEs, LOG_ALL: nothing else waited for. */
			assert_int_equal(acked, 4);
			/* FEATURES_OK after SET_FEATURES, then the rest at start. */
			assert_int_equal(sets, 2);
			assert_int_equal(statuses[0], VU_STATUS_FEATURES_OK);
		} else {
			assert_true(acked > 10);
			assert_int_equal(sets, 1);
		}
		free(b);
	}
}

/* A 16-bit little-endian field of ring memory (the device side, written by hand). */
static uint16_t
le16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void
put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

/*
 * The guest ring writer (vu_vring.h) on rings of its own, the device's
 * side written here by hand. Split: a chain takes the descriptors after
 * its head (wrapping), is reaped by its head, and a used index more than
 * a ring ahead of what was reaped is a device bug (-EIO). Packed: a chain
 * is made available by its head's flags, one used descriptor ends it, the
 * next is found after the chain's slots, and a used length counts only
 * with WRITE.
 */
static void
test_ring_writer_chains_and_refuses_a_used_index_a_ring_ahead(void **state)
{
	static uint8_t desc[16 * 8], avail[6 + 2 * 8], used[6 + 8 * 8];
	const struct vu_vbuf b[3] = {
		{ 0x1000, 100, 0 }, { 0x2000, 200, VU_VRING_F_WRITE },
		{ 0x3000, 300, VU_VRING_F_WRITE },
	};
	struct vu_vring r;
	struct vu_vused u;

	(void)state;
	assert_int_equal(vu_vring_init(&r, false, 6, desc, avail, used), -EINVAL);
	assert_int_equal(vu_vring_init(&r, false, 8, desc, avail, used), 0);
	/* Head 6: descriptors 6, 7, 0, chained by next; the avail ring names 6. */
	vu_vring_post(&r, 6, b, 3);
	assert_int_equal(le16_at(avail + 2), 0);
	vu_vring_publish(&r);
	assert_int_equal(le16_at(avail + 2), 1);
	assert_int_equal(le16_at(avail + 4), 6);
	assert_int_equal(le16_at(desc + 16 * 6 + 12), VU_VRING_F_NEXT);
	assert_int_equal(le16_at(desc + 16 * 6 + 14), 7);
	assert_int_equal(le16_at(desc + 16 * 7 + 12), VU_VRING_F_NEXT | VU_VRING_F_WRITE);
	assert_int_equal(le16_at(desc + 16 * 7 + 14), 0);
	assert_int_equal(le16_at(desc + 12), VU_VRING_F_WRITE);
	assert_int_equal(vu_vring_reap(&r, &u), 0);
	/* The device uses it: used entry 0 {6, 250}, used index 1. */
	put_le32(used + 4, 6);
	put_le32(used + 8, 250);
	put_le16(used + 2, 1);
	assert_int_equal(vu_vring_reap(&r, &u), 1);
	assert_int_equal(u.id, 6);
	assert_int_equal(u.len, 250);
	assert_int_equal(u.slot, 0);
	assert_true(u.written);
	assert_int_equal(vu_vring_reap(&r, &u), 0);
	put_le16(used + 2, 1 + 9);
	assert_int_equal(vu_vring_reap(&r, &u), -EIO);
	vu_vring_fini(&r);

	/* Packed, 5 slots: buffer 3 in slots 0-2, buffer 4 in slot 3. */
	memset(desc, 0, sizeof(desc));
	assert_int_equal(vu_vring_init(&r, true, 5, desc, avail, used), 0);
	vu_vring_post(&r, 3, b, 3);
	vu_vring_post(&r, 4, b, 1);
	assert_int_equal(le16_at(desc + 14), VU_VRING_F_AVAIL | VU_VRING_F_NEXT);
	assert_int_equal(le16_at(desc + 16 + 14),
			 VU_VRING_F_AVAIL | VU_VRING_F_NEXT | VU_VRING_F_WRITE);
	assert_int_equal(le16_at(desc + 32 + 14), VU_VRING_F_AVAIL | VU_VRING_F_WRITE);
	assert_int_equal(le16_at(desc + 32 + 12), 3);
	assert_int_equal(vu_vring_reap(&r, &u), 0);
	/* Used (AVAIL = USED = the wrap counter 1) at the chain's head slot. */
	put_le32(desc + 8, 500);
	put_le16(desc + 14, VU_VRING_F_AVAIL | VU_VRING_F_USED | VU_VRING_F_WRITE);
	assert_int_equal(vu_vring_reap(&r, &u), 1);
	assert_int_equal(u.id, 3);
	assert_int_equal(u.len, 500);
	assert_int_equal(u.slot, 0);
	assert_true(u.written);
	assert_int_equal(r.last_used, 3);
	assert_int_equal(vu_vring_reap(&r, &u), 0);
	put_le16(desc + 48 + 14, VU_VRING_F_AVAIL | VU_VRING_F_USED);
	assert_int_equal(vu_vring_reap(&r, &u), 1);
	assert_int_equal(u.id, 4);
	assert_int_equal(u.slot, 3);
	assert_false(u.written);
	vu_vring_fini(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guest_memory_has_qemus_layout_and_a_log_bit_per_page),
		cmocka_unit_test(test_frames_carry_pair_and_sequence_and_repeats_are_seen),
		cmocka_unit_test(test_frame_corrupted_in_guest_memory_is_counted_bad),
		cmocka_unit_test(test_split_1_pair_forwards_and_stops_at_the_exact_bases),
		cmocka_unit_test(test_split_event_idx_2_pairs_forward_and_stop_at_exact_bases),
		cmocka_unit_test(test_packed_1_pair_forwards_and_stops_at_the_exact_bases),
		cmocka_unit_test(test_packed_rings_of_odd_size_wrap_and_stop_at_the_exact_bases),
		cmocka_unit_test(test_restart_on_the_same_connection_resumes_from_the_bases),
		cmocka_unit_test(test_fresh_guest_forwards_on_a_new_connection_after_a_disconnect),
		cmocka_unit_test(test_migration_between_back_ends_loses_no_frame_and_no_page),
		cmocka_unit_test(test_two_devices_of_one_guest_forward_at_the_same_time),
		cmocka_unit_test(test_raw_and_malformed_messages_are_errors_never_a_crash),
		cmocka_unit_test(test_back_end_gone_or_silent_is_an_error_not_a_hang),
		cmocka_unit_test(test_acks_are_asked_for_every_request_or_where_qemu_waits),
		cmocka_unit_test(test_ring_writer_chains_and_refuses_a_used_index_a_ring_ahead),
	};
	char prefix[64];
	char *argv[] = {
		"test_vu", "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
		"--no-telemetry", prefix, "--log-level=lib.vhost.*:error", "-l", "0", NULL,
	};
	int i, ret;

	snprintf(prefix, sizeof(prefix), "--file-prefix=test-vu-%d", getpid());
	if (rte_eal_init(11, argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	pool = rte_pktmbuf_pool_create("test_vu", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (pool == NULL) {
		fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	for (i = 0; i < MAX_BE; i++)
		be_register(i);
	if (pthread_create(&fwd_thread, NULL, fwd_main, NULL) != 0)
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	__atomic_store_n(&fwd_stop, true, __ATOMIC_RELEASE);
	pthread_join(fwd_thread, NULL);
	for (i = 0; i < MAX_BE; i++)
		if (be[i].registered)
			be_kill(i);
	rte_eal_cleanup();
	return ret;
}
