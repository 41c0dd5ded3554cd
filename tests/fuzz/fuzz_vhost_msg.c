/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: mutated vhost-user message sequences
 * against the PMD behind DPDK's vhost library, in process, exactly as
 * test_hostile runs it (lm_harness: EAL, a vhost-user socket, the
 * messages vetted as dpdk-test-lm serve vets them, an emulated device).
 *
 * An input is a program of records (see the op_* functions): well-formed
 * messages of QEMU's start and stop order, raw messages of any request,
 * flags, payload and fds, memory tables with one field mutated,
 * GET_CONFIG and SET_LOG_BASE of any size and file, reconnections, a
 * second front end on the same socket, guest traffic. A raw message
 * always carries the payload its header announces (a front end that
 * does not blocks vhost's thread: doc/reliability.md, "Security model").
 *
 * After every input the front ends leave, and the target checks what
 * test_hostile checks after each case: vhost tore every connection down
 * within the harness's deadline, and the device is back to its probe
 * state (not running, the emulator's live objects as after probe). A
 * crash, a sanitizer report, a hang or a leaked object is a finding.
 * DPDK's own allocations are not leak-checked (run with -detect_leaks=0):
 * the device's objects are counted by the emulator instead.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lm_harness.h"

#define PAIRS 2
#define NRINGS (2 * PAIRS)
#define MAX_PAYLOAD 700
#define REPLY_MS 500

static struct lmh_dev dev;
static struct vu_mem *mem;
static struct vu_guest *guest;
static struct vu_log *vlog;
static int verbose;

/* ---- input reader: out of bytes reads zeros and ends the program ---------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t
take(struct in *in, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes && in->n > 0; i++, in->p++, in->n--)
		v |= (uint64_t)*in->p << (8 * i);
	return v;
}

/* ---- a front end ------------------------------------------------------------- */

struct fe {
	struct vu_client *c;
	uint64_t offered;
};

static void
fe_connect(struct fe *f)
{
	f->c = NULL;
	f->offered = 0;
	if (vu_connect(&f->c, lmh_sock(0), 5000) != 0) {
		fprintf(stderr, "fuzz_vhost_msg: cannot connect to the vhost-user socket\n");
		abort();
	}
	lmh_conn_opened(0);
	vu_set_reply_timeout(f->c, REPLY_MS);
}

static void
fe_close(struct fe *f)
{
	if (f->c != NULL)
		vu_disconnect(f->c);
	f->c = NULL;
}

/* Replies of raw messages nobody waits for: read whole messages while any is ready. */
static void
fe_drain(struct fe *f)
{
	struct vu_msg_hdr hdr;
	uint8_t buf[64];
	int n, ret;

	for (n = 0; n < 16; n++) {
		ret = vu_recv_raw(f->c, &hdr, buf, sizeof(buf), 0);
		if (ret < 0 && ret != -EMSGSIZE)
			break;
	}
}

static uint64_t
fe_features(struct fe *f, bool log)
{
	uint64_t want = (1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
			(1ULL << VU_F_NET_MQ) | (log ? 1ULL << VU_F_LOG_ALL : 0);

	return f->offered != 0 ? want & f->offered : want;
}

/* One message of QEMU's order (vhost-user.rst, "Starting the device"), its result ignored. */
static void
op_qemu_step(struct fe *f, struct in *in)
{
	unsigned int step = (unsigned int)take(in, 1) % 15, ring = (unsigned int)take(in, 1);
	struct vu_ring_info ri;
	uint64_t v;
	uint32_t base;

	ring %= NRINGS;
	if (vu_guest_ring_info(guest, ring, &ri) != 0)
		return;
	switch (step) {
	case 0: (void)vu_get_features(f->c, &f->offered); break;
	case 1: (void)vu_get_protocol_features(f->c, &v); break;
	case 2: (void)vu_set_protocol_features(f->c, VU_PROTO_DEFAULT); break;
	case 3: (void)vu_get_queue_num(f->c, &v); break;
	case 4: (void)vu_set_owner(f->c); break;
	case 5: (void)vu_set_features(f->c, fe_features(f, take(in, 1) & 1)); break;
	case 6: (void)vu_set_mem_table(f->c, mem); break;
	case 7: (void)vu_set_vring_num(f->c, ring, ri.num); break;
	case 8: (void)vu_set_vring_base(f->c, ring, ri.fresh_base); break;
	case 9:
		(void)vu_set_vring_addr(f->c, ring, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
					(uintptr_t)ri.avail, ri.log_gpa);
		break;
	case 10: (void)vu_set_vring_kick(f->c, ring, vu_guest_kickfd(guest, ring)); break;
	case 11: (void)vu_set_vring_call(f->c, ring, vu_guest_callfd(guest, ring)); break;
	case 12: (void)vu_set_vring_enable(f->c, ring, take(in, 1) & 1); break;
	case 13: (void)vu_set_status(f->c, (uint8_t)(take(in, 1) | VU_STATUS_DRIVER_OK)); break;
	default: (void)vu_get_vring_base(f->c, ring, &base); break;
	}
}

/* A memfd of `size` bytes (maybe 0), or -1. */
static int
small_file(uint64_t size)
{
	int fd = memfd_create("fuzz-fd", MFD_CLOEXEC);

	if (fd >= 0 && ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Any request, flags and payload, with up to 4 fds of any kind. */
static void
op_raw(struct fe *f, struct in *in)
{
	uint8_t payload[MAX_PAYLOAD];
	uint32_t req = (uint32_t)take(in, 1) % 48;
	/* Version 1 (vhost drops anything else at once), NEED_REPLY or not. */
	uint32_t flags = VU_FLAG_VERSION | ((uint32_t)take(in, 1) & VU_FLAG_NEED_REPLY);
	uint32_t size = (uint32_t)take(in, 2) % (MAX_PAYLOAD + 1), i;
	unsigned int nfds = (unsigned int)take(in, 1) % 5, k;
	int fds[4], own[4];

	for (i = 0; i < size; i++)
		payload[i] = (uint8_t)take(in, 1);
	for (k = 0; k < nfds; k++) {
		unsigned int kind = (unsigned int)take(in, 1) % 4;

		own[k] = -1;
		if (kind == 0)
			fds[k] = mem->fd;
		else if (kind == 1)
			fds[k] = vu_guest_kickfd(guest, k % NRINGS);
		else if (kind == 2)
			fds[k] = vlog->fd;
		else
			fds[k] = own[k] = small_file(take(in, 2) * 4096);
		if (fds[k] < 0)
			fds[k] = mem->fd;
	}
	(void)vu_send_raw(f->c, req, flags, size ? payload : NULL, size, fds, nfds);
	for (k = 0; k < nfds; k++)
		if (own[k] >= 0)
			close(own[k]);
	fe_drain(f);
}

/* The guest's memory table with one field of one region replaced, 1 to 9 regions. */
static void
op_mem_table(struct fe *f, struct in *in)
{
	struct vu_wire_region r[9];
	unsigned int n = 1 + (unsigned int)take(in, 1) % 9, i, which, field;
	uint64_t v;

	for (i = 0; i < n; i++) {
		unsigned int src = i % mem->nregions;

		r[i].gpa = mem->regions[src].gpa + (uint64_t)i * (1ULL << 30);
		r[i].size = mem->regions[src].size;
		r[i].uaddr = vu_mem_region_uaddr(mem, src) + (uint64_t)i * (1ULL << 30);
		r[i].mmap_offset = mem->regions[src].offset;
		r[i].fd = mem->fd;
	}
	which = (unsigned int)take(in, 1) % n;
	field = (unsigned int)take(in, 1) % 5;
	v = take(in, 8);
	switch (field) {
	case 0: r[which].gpa = v; break;
	case 1: r[which].size = v; break;
	case 2: r[which].uaddr = v; break;
	case 3: r[which].mmap_offset = v; break;
	default: break;
	}
	(void)vu_set_mem_table_raw(f->c, r, n);
}

static void
op_config(struct fe *f, struct in *in)
{
	uint8_t cfg[256];

	(void)vu_get_config(f->c, (uint32_t)take(in, 2), (uint32_t)take(in, 4), cfg, sizeof(cfg));
}

/* SET_LOG_BASE of any size and offset over a file of any size, then LOG_ALL. */
static void
op_log(struct fe *f, struct in *in)
{
	uint64_t file = take(in, 2) * 4096, size = take(in, 3), off = take(in, 1) * 4096;
	int fd = small_file(file);

	if (fd < 0)
		return;
	(void)vu_set_log_base(f->c, fd, size, off);
	close(fd);
	(void)vu_set_features(f->c, fe_features(f, true));
}

/* A second front end on the same socket brings the whole guest up and leaves. */
static void
op_second_front_end(void)
{
	struct fe g;
	uint32_t bases[NRINGS];

	fe_connect(&g);
	(void)vu_start_device(g.c, guest, NULL);
	(void)vu_stop_device(g.c, bases, NRINGS);
	fe_close(&g);
}

static void
op_traffic(struct in *in)
{
	(void)vu_guest_rx_refill(guest);
	(void)vu_guest_tx(guest, (unsigned int)take(in, 1) % PAIRS, 1 + take(in, 1) % 32);
	(void)vu_guest_poll(guest);
}

/* ---- libFuzzer ----------------------------------------------------------------- */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	signal(SIGPIPE, SIG_IGN);
	verbose = getenv("FUZZ_VHOST_VERBOSE") != NULL;
	if (lmh_init((*argv)[0], "fuzz-vhost", 1) < 0 ||
	    lmh_probe(&dev, 0, "queues=2,workers=2,mr_gc_ms=0") != 0 ||
	    vu_mem_create_qemu(&mem, 1) != 0 ||
	    vu_guest_create(&guest, mem, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
								 .ring_size = 256 }) != 0 ||
	    vu_log_create(&vlog, vu_mem_gpa_end(mem)) != 0) {
		fprintf(stderr, "fuzz_vhost_msg: set-up failed\n");
		abort();
	}
	lmh_log_quiet(!verbose);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct fe f;
	unsigned int ops = 0;

	vu_guest_reset(guest);
	if (vu_guest_new_eventfds(guest) != 0)
		abort();
	fe_connect(&f);
	while (in.n > 0 && ops++ < 64) {
		switch (take(&in, 1) % 9) {
		case 0: case 1: op_qemu_step(&f, &in); break;
		case 2: op_raw(&f, &in); break;
		case 3: op_mem_table(&f, &in); break;
		case 4: op_config(&f, &in); break;
		case 5: op_log(&f, &in); break;
		case 6: fe_close(&f); fe_connect(&f); break;
		case 7: op_second_front_end(); break;
		default: op_traffic(&in); break;
		}
	}
	fe_close(&f);
	/* Every connection torn down in bounded time, the device back to its probe state. */
	if (!lmh_wait_closed(0) || !lmh_wait_restored(&dev)) {
		fprintf(stderr, "fuzz_vhost_msg: vhost or the device did not settle in %d ms\n",
			LMH_DEADLINE_MS);
		abort();
	}
	lmh_barrier(&dev);
	if (lmh_running(&dev) || lmh_live(&dev) != dev.live0) {
		fprintf(stderr, "fuzz_vhost_msg: device %s, %u objects alive (%u after probe)\n",
			lmh_running(&dev) ? "still running" : "stopped", lmh_live(&dev),
			dev.live0);
		abort();
	}
	lmh_log_trim();
	return 0;
}
