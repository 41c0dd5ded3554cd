/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile vhost-user front ends, in process: the PMD on emulated
 * devices behind two sockets served by DPDK's vhost library. Device B
 * (socket 1) runs a well-behaved guest whose traffic is pumped by a thread
 * for the whole run; device A (socket 0) faces front ends that send broken
 * memory tables, rings outside guest memory or misaligned, bad queue
 * sizes, kicks and GET_VRING_BASE before DRIVER_OK, DRIVER_OK twice,
 * features never offered, and that disconnect after each message of
 * QEMU's start order in turn. After every case:
 *
 *   - the back end said why it refused (a log line, checked);
 *   - the process is up and device B kept receiving frames;
 *   - device A is back to its probe state (no queue running, the
 *     emulator's object count of right after probe);
 *   - a well-behaved front end on socket 0 runs traffic on both pairs.
 *
 * At the end both devices are removed and the emulator finds nothing alive.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_dev.h>

#include "prm.h"
#include "lm_harness.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_test.h"
#include "../lm_files.h"
#include "../lm_threads.h"

#define PAIRS 2
#define NRINGS (2 * PAIRS)

static struct lmh_dev dev_a, dev_b;
static struct vu_mem *mem_a, *mem_b;
static struct vu_guest *g_a, *g_b;
static struct vu_client *c_b;
static struct lmh_pump pump_b;

/* ---- the well-behaved side ------------------------------------------------- */

static struct vu_client *
connect_a(void)
{
	struct vu_client *c;

	assert_non_null(c = lmh_fe_connect(0));
	return c;
}

static void
disconnect_a(struct vu_client *c)
{
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
}

/* Device A holds nothing from the last front end: the probe state. */
static void
check_a_clean(const char *what)
{
	assert_true(lmh_wait_restored(&dev_a));
	lmh_barrier(&dev_a);
	if (lmh_running(&dev_a) || lmh_live(&dev_a) != dev_a.live0)
		print_error("%s: device A %s, %u objects (%u after probe)\n", what,
			    lmh_running(&dev_a) ? "running" : "stopped", lmh_live(&dev_a),
			    dev_a.live0);
	assert_false(lmh_running(&dev_a));
	assert_int_equal(lmh_live(&dev_a), dev_a.live0);
}

/* A well-behaved front end on socket 0: DRIVER_OK, traffic on both pairs, stop. */
static void
well_behaved_a(void)
{
	struct vu_client *c = connect_a();
	uint32_t bases[NRINGS];

	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	assert_int_equal(vu_start_device(c, g_a, NULL), 0);
	assert_true(lmh_wait_running(&dev_a, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(g_a, 0x3, 200, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(c, bases, NRINGS), 0);
	disconnect_a(c);
	check_a_clean("after the well-behaved front end");
}

/* Device B, on the other socket, kept receiving frames during the case. */
static void
check_b_served(uint64_t rx_before)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

	while (lmh_rx_received(g_b) <= rx_before + 16) {
		if (lmh_now_ms() > deadline) {
			print_error("device B received nothing during the case\n");
			fail();
		}
		lmh_tick();
	}
	assert_true(lmh_running(&dev_b));
}

/*
 * Frame every case: the hostile front end, then the checks that matter
 * whatever it did. `expect` lists log lines of which one must appear (the
 * clear error), NULL when the front end did nothing the back end must
 * refuse.
 */
typedef void (*hostile_fn)(void);

static void
run_case(const char *name, hostile_fn fn, const char *const *expect)
{
	uint64_t rx = lmh_rx_received(g_b);
	size_t mark = lmh_log_mark();
	bool said = expect == NULL;
	const char *const *e;

	fn();
	for (e = expect; e != NULL && *e != NULL && !said; e++)
		said = lmh_wait_log(mark, *e, 1000);
	if (!said) {
		char *log = lmh_log_since(mark);

		print_error("%s: none of the expected errors in the log:\n%s\n", name, log);
		free(log);
	}
	assert_true(said);
	check_a_clean(name);
	check_b_served(rx);
	well_behaved_a();
	printf("  %-36s %s, stayed up, B served, A reusable\n", name,
	       expect != NULL ? "refused with a clear error" : "handled");
}

/* ---- the hostile side ------------------------------------------------------- */

static uint64_t
fe_features(struct vu_client *c)
{
	return ((1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
		(1ULL << VU_F_NET_MQ)) & vu_backend_features(c);
}

/* The guest's memory as wire regions (what vu_set_mem_table sends). */
static unsigned int
wire_regions(struct vu_wire_region *r)
{
	return vu_mem_wire_regions(mem_a, r);
}

/* How a hostile start departs from QEMU's. */
struct start {
	const struct vu_wire_region *regions;  /* NULL: the guest's table */
	unsigned int nregions;
	uint64_t features;                      /* 0: the usual ones */
	int bad_ring;                           /* ring with a bad address, -1 */
	uint64_t bad_desc;                      /* != 0: its descriptor ring */
	uint64_t bad_used;                      /* != 0: its used ring */
	uint32_t bad_num;                       /* != 0: SET_VRING_NUM of ring 0 */
	bool kick_early;                        /* kick every ring before DRIVER_OK */
	bool base_early;                        /* GET_VRING_BASE before DRIVER_OK */
	bool status_twice;
	bool short_table;                       /* regions sent one byte short, after the guest's */
};

/* QEMU's start order with the departures of s; every message's result is ignored. */
static void
hostile_start(struct vu_client *c, const struct start *s)
{
	uint64_t feat;
	unsigned int i;

	(void)vu_device_init(c, NULL);
	feat = s->features != 0 ? s->features : fe_features(c);
	vu_guest_set_features(g_a, fe_features(c));
	(void)vu_set_features(c, feat);
	if (s->short_table) {
		uint8_t buf[8 + 32];
		uint32_t n = 1;
		uint64_t v[4] = { s->regions[0].gpa, s->regions[0].size, s->regions[0].uaddr,
				  s->regions[0].mmap_offset };

		/* The guest's table first: the last byte the short one lacks is a 0 there. */
		(void)vu_set_mem_table(c, mem_a);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &n, sizeof(n));
		memcpy(buf + 8, v, sizeof(v));
		(void)vu_send_raw(c, VU_SET_MEM_TABLE, VU_FLAG_VERSION, buf, sizeof(buf) - 1,
				  &s->regions[0].fd, 1);
	} else if (s->regions != NULL) {
		(void)vu_set_mem_table_raw(c, s->regions, s->nregions);
	} else {
		(void)vu_set_mem_table(c, mem_a);
	}
	for (i = 0; i < NRINGS; i++) {
		struct vu_ring_info ri;

		assert_int_equal(vu_guest_ring_info(g_a, i, &ri), 0);
		(void)vu_set_vring_num(c, i, i == 0 && s->bad_num != 0 ? s->bad_num : ri.num);
		(void)vu_set_vring_base(c, i, ri.fresh_base);
		(void)vu_set_vring_addr(c, i, 0, (int)i == s->bad_ring && s->bad_desc != 0 ?
					s->bad_desc : (uintptr_t)ri.desc,
					(int)i == s->bad_ring && s->bad_used != 0 ? s->bad_used :
					(uintptr_t)ri.used, (uintptr_t)ri.avail, ri.log_gpa);
		(void)vu_set_vring_kick(c, i, vu_guest_kickfd(g_a, i));
		(void)vu_set_vring_call(c, i, vu_guest_callfd(g_a, i));
	}
	for (i = 0; i < NRINGS; i++)
		(void)vu_set_vring_enable(c, i, true);
	if (s->kick_early) {
		uint64_t one = 1;

		for (i = 0; i < NRINGS; i++)
			(void)!write(vu_guest_kickfd(g_a, i), &one, sizeof(one));
	}
	if (s->base_early) {
		uint32_t base;

		for (i = 0; i < NRINGS; i++)
			(void)vu_get_vring_base(c, i, &base);
	}
	(void)vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER | VU_STATUS_FEATURES_OK |
			    VU_STATUS_DRIVER_OK);
	if (s->status_twice)
		(void)vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				    VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK);
}

/* Run a hostile start, let vhost handle it all, go away. */
static void
hostile_session(const struct start *s)
{
	struct vu_client *c = connect_a();
	uint8_t status;

	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	hostile_start(c, s);
	/* A round trip, if vhost still talks to us: everything before is handled. */
	(void)vu_get_status(c, &status);
	lmh_barrier(&dev_a);
	disconnect_a(c);
}

static void
mem_overlapping(void)
{
	struct vu_wire_region r[2];

	wire_regions(r);
	/* A second region whose guest range lies inside the first. */
	r[1] = r[0];
	r[1].gpa += 256ull << 20;
	r[1].size = 256ull << 20;
	r[1].uaddr += 256ull << 20;
	r[1].mmap_offset += 256ull << 20;
	hostile_session(&(struct start){ .regions = r, .nregions = 2, .bad_ring = -1 });
}

static void
mem_zero_sized(void)
{
	struct vu_wire_region r[2];

	wire_regions(r);
	r[1] = r[0];
	r[1].gpa = 8ull << 30;
	r[1].size = 0;
	hostile_session(&(struct start){ .regions = r, .nregions = 2, .bad_ring = -1 });
}

static void
mem_absurdly_large(void)
{
	struct vu_wire_region r[2];

	wire_regions(r);
	r[1] = r[0];
	r[1].gpa = 8ull << 30;
	r[1].size = 1ull << 52;
	hostile_session(&(struct start){ .regions = r, .nregions = 2, .bad_ring = -1 });
}

static void
mem_nine_regions(void)
{
	struct vu_wire_region r[9];
	unsigned int i;

	wire_regions(r);
	/* The first GiB cut in nine slices: valid one by one, one too many. */
	for (i = 0; i < 9; i++) {
		r[i] = r[0];
		r[i].gpa = (uint64_t)i << 26;
		r[i].size = 1ull << 26;
		r[i].uaddr = vu_mem_region_uaddr(mem_a, 0) + ((uint64_t)i << 26);
		r[i].mmap_offset = mem_a->regions[0].offset + ((uint64_t)i << 26);
	}
	hostile_session(&(struct start){ .regions = r, .nregions = 9, .bad_ring = -1 });
}

static void
ring_outside_memory(void)
{
	static uint8_t not_guest[65536] __attribute__((aligned(4096)));

	/*
	 * Ring 2: vhost cannot translate it and never reports it ready; the
	 * device starts with the others and the driver says which ring and why.
	 * (With ring 0 vhost never starts the device and says nothing at its
	 * default log level.)
	 */
	hostile_session(&(struct start){ .bad_ring = 2, .bad_desc = (uintptr_t)not_guest });
}

static void
ring_misaligned(void)
{
	struct vu_ring_info ri;

	assert_int_equal(vu_guest_ring_info(g_a, 1, &ri), 0);
	/* Split descriptors are 16-byte aligned (virtio 1.1, 2.6). */
	hostile_session(&(struct start){ .bad_ring = 1, .bad_desc = (uintptr_t)ri.desc + 4 });
}

static void
queue_size_not_pow2(void)
{
	hostile_session(&(struct start){ .bad_ring = -1, .bad_num = 1000 });
}

static void
queue_size_too_big(void)
{
	hostile_session(&(struct start){ .bad_ring = -1, .bad_num = 65536 });
}

static void
features_never_offered(void)
{
	struct vu_client *c = connect_a();
	uint64_t feat;

	(void)vu_device_init(c, NULL);
	/* Bit 60 is not offered (nor defined for virtio-net). */
	feat = fe_features(c) | (1ULL << 60) | (1ULL << 41);
	(void)vu_set_features(c, feat);
	disconnect_a(c);
}

/*
 * RING_PACKED (bit 34) without VERSION_1: a legacy driver negotiates 32
 * bits only, so no virtio driver asks for a packed ring that is not 1.x.
 * vhost takes any subset of the offer; DRIVER_OK refuses it, before any
 * queue is touched (the emulator would take a packed queue with
 * virtio_version_1_0 = 0, so this is the driver's own check).
 */
static void
packed_without_version_1(void)
{
	hostile_session(&(struct start){ .bad_ring = -1,
		.features = (1ULL << VU_F_PROTOCOL_FEATURES) | (1ULL << VU_F_NET_MQ) |
			    (1ULL << VU_F_RING_PACKED) });
}

/*
 * Cases where the front end breaks no rule the back end can refuse, but
 * does things out of order: the device must simply work.
 */
static void
run_and_check_traffic(const struct start *s)
{
	struct vu_client *c = connect_a();
	uint32_t bases[NRINGS];
	bool running, flowed = false;
	unsigned int i;

	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	hostile_start(c, s);
	running = lmh_wait_running(&dev_a, LMH_DEADLINE_MS);
	if (running)
		flowed = lmh_traffic(g_a, 0x3, 100, LMH_DEADLINE_MS);
	for (i = 0; i < NRINGS; i++)
		(void)vu_get_vring_base(c, i, &bases[i]);
	disconnect_a(c);
	assert_true(running);
	assert_true(flowed);
}

static void
kicks_before_driver_ok(void)
{
	run_and_check_traffic(&(struct start){ .bad_ring = -1, .kick_early = true });
}

static void
driver_ok_twice(void)
{
	run_and_check_traffic(&(struct start){ .bad_ring = -1, .status_twice = true });
}

static void
get_vring_base_before_driver_ok(void)
{
	hostile_session(&(struct start){ .bad_ring = -1, .base_early = true });
}

/* ---- isolation, and messages that would crash the back end ---------------------- */

/*
 * GET_CONFIG asking for 64 KiB: DPDK 22.11 passes the front end's size
 * to get_config with its 256-byte region (on vhost's stack); the driver
 * must write nothing past its 12-byte config space.
 */
static void
config_larger_than_the_device(void)
{
	struct vu_client *c = connect_a();
	uint8_t cfg[256];

	(void)vu_device_init(c, NULL);
	assert_int_equal(vu_get_config(c, 0, 65536, cfg, sizeof(cfg)), 0);
	/* The real size is still served. */
	assert_int_equal(vu_get_config(c, 0, 12, cfg, sizeof(cfg)), 12);
	assert_int_equal(cfg[0], 0x02);
	/* status LINK_UP, max_virtqueue_pairs, mtu 1500: little-endian (virtio 1.1, 2.4). */
	assert_int_equal(cfg[6] | cfg[7] << 8, 1);
	assert_int_equal(cfg[8] | cfg[9] << 8, PAIRS);
	assert_int_equal(cfg[10] | cfg[11] << 8, 1500);
	disconnect_a(c);
}

/* ---- tests ------------------------------------------------------------------- */

#define CASE(fn, ...) do { \
	static const char *const ex_[] = { __VA_ARGS__, NULL }; \
	run_case(#fn, fn, ex_[0] != NULL ? ex_ : NULL); \
} while (0)
/*
 * A refusal of the kernel's pinning: the emulator says why on emu=; on
 * rdma its line goes to the emulated rdma-core's stderr, out of the DPDK
 * log, and the error is the driver's line with the kernel's errno.
 */
#define PIN_REFUSED (lmh_rdma() ? "failed: Bad address" : "cannot be pinned")
#define CASE_PIN(fn) do { \
	const char *const ex_[] = { PIN_REFUSED, NULL }; \
	run_case(#fn, fn, ex_); \
} while (0)

static void
test_broken_memory_tables_are_refused_and_the_back_end_stays_up(void **state)
{
	(void)state;
	CASE(mem_overlapping, "overlaps another");
	CASE(mem_zero_sized, "failed to mmap region");
	/* vhost would fail the mmap; the vetting refuses it first (past its file). */
	CASE(mem_absurdly_large, "failed to mmap region", "is past the end of its file");
	CASE(mem_nine_regions, "SET_MEM_TABLE failed");
}

static void
test_bad_rings_are_refused_and_the_back_end_stays_up(void **state)
{
	(void)state;
	CASE(ring_outside_memory, "not in guest memory");
	CASE(queue_size_not_pow2, "invalid virtqueue size", "not usable");
	CASE(queue_size_too_big, "invalid virtqueue size", "not usable");
}

/*
 * A descriptor ring that is not 16-byte aligned (virtio 1.1, 2.6) is
 * translatable, so vhost passes it on: the driver must refuse it, as the
 * device would fault on it.
 */
static void
test_misaligned_ring_is_refused(void **state)
{
	(void)state;
	CASE(ring_misaligned, "misaligned", "aligned", "not usable");
}

static void
test_out_of_order_front_ends_are_survived(void **state)
{
	(void)state;
	CASE(kicks_before_driver_ok, NULL);
	CASE(get_vring_base_before_driver_ok, NULL);
	CASE(driver_ok_twice, NULL);
	CASE(features_never_offered, "invalid negotiated features");
	CASE(packed_without_version_1, "RING_PACKED acked without VERSION_1");
}

/* A second region the device cannot address (GPA 2^63), or wrapping 2^64. */
static void
mem_at_2_63(void)
{
	struct vu_wire_region r[2];

	wire_regions(r);
	r[1] = r[0];
	r[1].gpa = 1ull << 63;
	r[1].size = 1ull << 30;
	hostile_session(&(struct start){ .regions = r, .nregions = 2, .bad_ring = -1 });
}

static void
mem_wrapping_2_64(void)
{
	struct vu_wire_region r[2];

	wire_regions(r);
	r[1] = r[0];
	r[1].gpa = 0 - (1ull << 29);
	r[1].size = 1ull << 30;
	hostile_session(&(struct start){ .regions = r, .nregions = 2, .bad_ring = -1 });
}

/*
 * While a well-behaved front end runs on device A, a second one
 * connects to the same socket, brings its own guest up to DRIVER_OK, asks
 * every ring's base (vhost then calls dev_close for it), disables a ring
 * and leaves. One front end per device: nothing of it reaches A's queues,
 * whose frames keep completing in the first front end's memory.
 */
static void
second_front_end_on_a_running_device(void)
{
	struct vu_client *ca = connect_a(), *cb;
	struct vu_mem *mb;
	struct vu_guest *gb;
	uint32_t bases[NRINGS], base;
	uint8_t cfg[12];
	unsigned int i;

	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	assert_int_equal(vu_start_device(ca, g_a, NULL), 0);
	assert_true(lmh_wait_running(&dev_a, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(g_a, 0x3, 64, LMH_DEADLINE_MS));
	assert_int_equal(vu_mem_create_qemu(&mb, 1), 0);
	assert_int_equal(vu_guest_create(&gb, mb, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
								       .ring_size = 256 }), 0);
	cb = connect_a();
	assert_int_equal(vu_guest_new_eventfds(gb), 0);
	(void)vu_start_device(cb, gb, NULL);
	(void)vu_get_config(cb, 0, sizeof(cfg), cfg, sizeof(cfg));
	for (i = 0; i < NRINGS; i++)
		(void)vu_get_vring_base(cb, i, &base);
	(void)vu_set_vring_enable(cb, 0, false);
	vu_disconnect(cb);
	/* The owner's rings kept running, its frames complete in its own memory. */
	assert_true(lmh_running(&dev_a));
	assert_true(lmh_traffic(g_a, 0x3, 200, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(ca, bases, NRINGS), 0);
	disconnect_a(ca);
	vu_guest_destroy(gb);
	vu_mem_destroy(mb);
}

/*
 * Region 0 declared 2 GiB over its 1 GiB file. With the
 * used ring of ring 0 in the part past the file, DPDK 22.11's vhost reads
 * it at SET_VRING_KICK: a SIGBUS, unless the table is vetted first.
 */
static void
mem_region_past_its_file(void)
{
	struct vu_wire_region r[1];

	wire_regions(r);
	r[0].size = 2ull << 30;
	hostile_session(&(struct start){ .regions = r, .nregions = 1, .bad_ring = 0,
					 .bad_used = r[0].uaddr + (3ull << 29) });
}

/*
 * Region 0 on a device file (/dev/zero here; QEMU's mem-path=/dev/dax0.0 the
 * real case), which fstat gives no size: refused as such, not as a region
 * past its file.
 */
static void
mem_region_on_a_device_file(void)
{
	struct vu_wire_region r[1];
	int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	wire_regions(r);
	r[0].fd = fd;
	hostile_session(&(struct start){ .regions = r, .nregions = 1, .bad_ring = -1 });
	close(fd);
}

/*
 * Guest memory on a file of a filesystem with writeback (QEMU's
 * memory-backend-file on ext4): Linux 6.5 and later refuse to pin it for
 * the device's writes (mm/gup.c writable_file_mapping_allowed), so
 * DRIVER_OK's registration fails, and the driver says why.
 */
static void
mem_on_a_file_with_writeback(void)
{
	struct vu_wire_region r[VU_MEM_MAX_REGIONS];
	unsigned int i, n = wire_regions(r);
	int fd = lmf_writeback_file(mem_a->size);

	assert_true(fd >= 0);
	for (i = 0; i < n; i++)
		if (r[i].fd == mem_a->fd)
			r[i].fd = fd;
	hostile_session(&(struct start){ .regions = r, .nregions = n, .bad_ring = -1 });
	close(fd);
}

/*
 * The same region in a table one byte short. DPDK 22.11's vhost checks
 * neither the payload's size nor the region count against it and takes
 * the missing byte from the previous message (its context is reused),
 * here the guest's own table, whose byte there is 0: the region maps 2
 * GiB over the 1 GiB file, and ring 0's used ring past the file is a
 * SIGBUS at SET_VRING_KICK, unless the short table is refused.
 */
static void
mem_table_one_byte_short(void)
{
	struct vu_wire_region r[1];

	wire_regions(r);
	r[0].size = 2ull << 30;
	hostile_session(&(struct start){ .regions = r, .nregions = 1, .short_table = true,
					 .bad_ring = 0, .bad_used = r[0].uaddr + (3ull << 29) });
}

/*
 * The same table, rings inside the file, not vetted: vhost is fine, and
 * registering the region must fail at the pin, as on hardware, before
 * the device could read past the file.
 */
static void
mem_region_past_its_file_unvetted(void)
{
	struct vu_wire_region r[1];

	wire_regions(r);
	r[0].size = 2ull << 30;
	lmh_vet(false);
	hostile_session(&(struct start){ .regions = r, .nregions = 1, .bad_ring = -1 });
	lmh_vet(true);
}

/*
 * A running device gets a dirty log whose fd is smaller than
 * declared (here empty) or with a non-zero mmap_offset, then LOG_ALL,
 * traffic and every ring's base (the driver logs the used rings then).
 */
static void
log_session(uint64_t file_size, uint64_t size, uint64_t off)
{
	struct vu_client *c = connect_a();
	uint32_t base;
	unsigned int i;
	int fd;

	fd = memfd_create("hostile-log", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)file_size), 0);
	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	hostile_start(c, &(struct start){ .bad_ring = -1 });
	(void)lmh_wait_running(&dev_a, LMH_DEADLINE_MS);
	(void)vu_set_log_base(c, fd, size, off);
	(void)vu_set_features(c, fe_features(c) | (1ULL << VU_F_LOG_ALL));
	(void)lmh_traffic(g_a, 0x3, 32, 2000);
	for (i = 0; i < NRINGS; i++)
		(void)vu_get_vring_base(c, i, &base);
	lmh_barrier(&dev_a);
	disconnect_a(c);
	close(fd);
}

static void
log_fd_smaller_than_declared(void)
{
	log_session(0, 1ull << 20, 0);
}

static void
log_with_mmap_offset(void)
{
	log_session(1ull << 20, 1ull << 20, 4096);
}

/* Not vetted: the driver must not log into it (its registration fails at the pin). */
static void
log_fd_smaller_than_declared_unvetted(void)
{
	lmh_vet(false);
	log_session(0, 1ull << 20, 0);
	lmh_vet(true);
}

/*
 * SET_INFLIGHT_FD never negotiated (the device does not offer
 * INFLIGHT_SHMFD): DPDK 22.11 maps the fd anyway and writes each ring's
 * inflight header into it, a SIGBUS with an empty fd. Found by
 * fuzz_vhost_msg's message set; refused before vhost sees it.
 */
static void
inflight_fd_not_negotiated(void)
{
	struct vu_client *c = connect_a();
	uint8_t p[24] = { 0 };
	uint64_t size = 4096;
	uint16_t nq = NRINGS, qs = 256;
	uint8_t status;
	int fd;

	fd = memfd_create("hostile-inflight", MFD_CLOEXEC);
	assert_true(fd >= 0);
	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	hostile_start(c, &(struct start){ .bad_ring = -1 });
	/* Payload: mmap_size, mmap_offset, num_queues, queue_size. */
	memcpy(p, &size, 8);
	memcpy(p + 16, &nq, 2);
	memcpy(p + 18, &qs, 2);
	(void)vu_send_raw(c, 32, VU_FLAG_VERSION, p, 20, &fd, 1);
	(void)vu_get_status(c, &status);
	lmh_barrier(&dev_a);
	disconnect_a(c);
	close(fd);
}

/*
 * A front end shrinks its memory file to nothing once its device runs
 * (QEMU seals its memfds against that; nothing makes a front end do so),
 * then asks for every ring's base. The driver reads the guest's ring
 * indices at the stop (a split ring the guest left idle needs no QUERY):
 * through vhost's mapping of the lost pages that read was a SIGBUS, and
 * every VM of the process went with it. The read must fail instead, and
 * the device be asked.
 */
static void
mem_shrunk_after_driver_ok(void)
{
	struct vu_client *c = connect_a();
	struct vu_mem *m;
	struct vu_guest *gm;
	uint32_t base;
	unsigned int i;

	assert_int_equal(vu_mem_create_qemu(&m, 1), 0);
	assert_int_equal(vu_guest_create(&gm, m, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
								       .ring_size = 256 }), 0);
	assert_int_equal(vu_start_device(c, gm, NULL), 0);
	assert_true(lmh_wait_running(&dev_a, LMH_DEADLINE_MS));
	/*
	 * The emulated device has read its rings since RDY; the guest posts
	 * nothing and never kicks. From here nothing touches that memory but
	 * the driver's stop: the emulated device, unlike one with the pages
	 * pinned, would fault on them too (doc/emulator.md).
	 */
	assert_true(lmh_dp_idle(&dev_a));
	assert_int_equal(ftruncate(m->fd, 0), 0);
	for (i = 0; i < NRINGS; i++)
		(void)vu_get_vring_base(c, i, &base);
	disconnect_a(c);
	vu_guest_destroy(gm);
	vu_mem_destroy(m);
}

/* Messages that would crash the back end: each refused or contained, the back end stays up. */
static void
test_vhost_crashers_are_refused_or_contained(void **state)
{
	int fd;

	(void)state;
	CASE(config_larger_than_the_device, "GET_CONFIG of 65536 bytes refused");
	CASE(mem_at_2_63, "beyond the device's guest address range");
	CASE(mem_wrapping_2_64, "wraps past 2^64");
	CASE(second_front_end_on_a_running_device, "one front end per device");
	CASE(mem_region_past_its_file, "is past the end of its file");
	CASE(mem_table_one_byte_short, "SET_MEM_TABLE of 1 regions in 39 bytes (40 expected)");
	CASE(mem_region_on_a_device_file, "is on a device file, whose size cannot be checked");
	fd = lmf_writeback_file(4096);
	if (fd >= 0) {
		close(fd);
		CASE(mem_on_a_file_with_writeback, "writes dirty pages back");
	} else {
		printf("  %-36s not run: no directory on a filesystem with writeback\n",
		       "mem_on_a_file_with_writeback");
	}
	CASE_PIN(mem_region_past_its_file_unvetted);
	CASE(log_fd_smaller_than_declared, "SET_LOG_BASE of 0x100000 bytes refused");
	CASE(log_with_mmap_offset, "SET_LOG_BASE with mmap_offset 0x1000 refused");
	CASE_PIN(log_fd_smaller_than_declared_unvetted);
	CASE(inflight_fd_not_negotiated, "needs protocol feature 12, not negotiated");
	CASE(mem_shrunk_after_driver_ok, "ring indices unreadable");
}

/*
 * Front end X runs on device C (socket 2, deferred deletion of a
 * minute) and leaves; front end Y connects with the same guest layout
 * but its own memory, which vhost maps where X's was (the kernel hands
 * back the range just freed; the test says whether it did). X's released
 * registration still pins X's pages: taking it back for Y would send Y's
 * completions into X's memory. Y's frames must complete in Y's rings.
 */
static uint64_t
registered_hva(struct lmh_dev *d)
{
	uint64_t hva = 0;

	pthread_mutex_lock(&d->dev->lock);
	if (d->dev->mr != NULL)
		hva = d->dev->mr->regions[0].hva;
	pthread_mutex_unlock(&d->dev->lock);
	return hva;
}

static uint64_t
run_front_end(struct lmh_dev *d, unsigned int sock, struct vu_guest *g, bool *flowed)
{
	struct vu_client *c;
	uint32_t bases[2];
	uint64_t hva = 0;

	assert_non_null(c = lmh_fe_connect(sock));
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	assert_int_equal(vu_start_device(c, g, NULL), 0);
	*flowed = false;
	if (lmh_wait_running(d, LMH_DEADLINE_MS)) {
		hva = registered_hva(d);
		*flowed = lmh_traffic(g, 0x1, 64, 3000);
	}
	(void)vu_stop_device(c, bases, 2);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(sock));
	assert_true(lmh_wait_restored(d));
	return hva;
}

static void
test_released_registration_never_serves_other_memory(void **state)
{
	struct vu_guest_cfg cfg = { .queue_pairs = 1, .ring_size = 256 };
	struct vu_mem *mx, *my;
	struct vu_guest *gx, *gy;
	struct lmh_dev dc;
	uint64_t hx, hy;
	bool fx, fy;
	size_t mark;

	(void)state;
	memset(&dc, 0, sizeof(dc));
	assert_int_equal(lmh_probe(&dc, 2, "queues=1,workers=2,mr_gc_ms=60000"), 0);
	assert_int_equal(vu_mem_create_qemu(&mx, 1), 0);
	assert_int_equal(vu_mem_create_qemu(&my, 1), 0);
	assert_int_equal(vu_guest_create(&gx, mx, &cfg), 0);
	assert_int_equal(vu_guest_create(&gy, my, &cfg), 0);
	hx = run_front_end(&dc, 2, gx, &fx);
	assert_true(fx);
	mark = lmh_log_mark();
	hy = run_front_end(&dc, 2, gy, &fy);
	printf("  front end Y's memory mapped %s front end X's (0x%" PRIx64 " / 0x%" PRIx64
	       ")\n", hx == hy ? "at the same host address as" : "elsewhere than", hx, hy);
	assert_false(lmh_log_has(mark, "identical to a released registration"));
	assert_true(fy);
	/* X again, with its own memory: its registration may be taken back. */
	mark = lmh_log_mark();
	hy = run_front_end(&dc, 2, gx, &fx);
	assert_true(fx);
	if (hy == hx)
		assert_true(lmh_log_has(mark, "identical to a released registration"));
	/*
	 * X empties its memory file and grows it again: same file, offsets
	 * and addresses, new pages. Its released registration pins the former
	 * ones: registered again, not taken back.
	 */
	assert_int_equal(ftruncate(mx->fd, 0), 0);
	assert_int_equal(ftruncate(mx->fd, (off_t)mx->size), 0);
	mark = lmh_log_mark();
	(void)run_front_end(&dc, 2, gx, &fx);
	assert_true(fx);
	assert_false(lmh_log_has(mark, "identical to a released registration"));
	vu_guest_destroy(gx);
	vu_guest_destroy(gy);
	vu_mem_destroy(mx);
	vu_mem_destroy(my);
	assert_int_equal(lmh_remove(&dc), 0);
}

/*
 * DPDK 22.11 reads a payload with a blocking read() in its one
 * vhost thread. Front end X announces 8 bytes of SET_FEATURES and sends
 * none; once that thread sits in read(2) (its /proc syscall, looked at
 * until then: no guess of a delay), front end Y's GET_FEATURES on
 * another socket gets no answer, while device B's data path keeps running.
 * Without a timeout Y waits until X leaves; with the application's
 * mitigation (rte_pmd_mlx5_lm_vhost_msg_timeout, serve --msg-timeout)
 * vhost gives up on X after the timeout and serves Y. Both measured.
 */
/* x86-64 syscall numbers, first on the line of /proc/<tid>/syscall. */
#define SYS_NR_READ "0 "
#define SYS_NR_SENDMSG "46 "

struct vhost_syscall {
	const char *nr;
	bool found;
};

/* One thread's test: is it vhost's, and sitting in that syscall? */
static bool
vhost_thread_not_in(int tid, const char *name, void *arg)
{
	struct vhost_syscall *q = arg;
	char path[64], sys[64] = "";
	FILE *f;

	if (strncmp(name, "vhost-events", 12) != 0)
		return true;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return true;
	if (fgets(sys, sizeof(sys), f) == NULL)
		sys[0] = '\0';
	fclose(f);
	/* "0 0x<fd> ...": blocked in read(2). */
	q->found = strncmp(sys, q->nr, strlen(q->nr)) == 0;
	return !q->found;
}

static bool
vhost_thread_in(const char *nr)
{
	struct vhost_syscall q = { nr, false };

	return lmt_for_each_thread(vhost_thread_not_in, &q) == 0 && q.found;
}

/*
 * X stalls vhost's thread, Y asks on another socket; returns how long Y
 * waited for its answer (ms). x_leaves: X disconnects once Y has had no
 * answer for 300 ms (DPDK's default: nothing else frees the thread);
 * otherwise X stays and vhost must give up on it (message timeout).
 */
static int64_t
stalled_payload(bool x_leaves, unsigned int idle)
{
	struct vu_client *x, *y, *others[8];
	struct vu_msg_hdr hdr = { VU_SET_FEATURES, VU_FLAG_VERSION, 8 };
	uint64_t feat;
	int64_t t0, deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	unsigned int i;
	int ret;

	/* Other connections to the same socket first, each answered once. */
	assert_true(idle <= sizeof(others) / sizeof(others[0]));
	for (i = 0; i < idle; i++) {
		others[i] = connect_a();
		assert_int_equal(vu_get_features(others[i], &feat), 0);
	}
	x = connect_a();
	assert_int_equal(vu_get_features(x, &feat), 0);
	assert_int_equal(write(vu_client_fd(x), &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	while (!vhost_thread_in(SYS_NR_READ)) {
		if (lmh_now_ms() > deadline)
			fail_msg("vhost's thread never blocked in the payload read");
		lmh_tick();
	}
	/* Socket 2: no device attached, vhost answers GET_FEATURES itself. */
	assert_int_equal(vu_connect(&y, lmh_sock(2), 5000), 0);
	lmh_conn_opened(2);
	vu_set_reply_timeout(y, x_leaves ? 300 : LMH_DEADLINE_MS);
	t0 = lmh_now_ms();
	ret = vu_get_features(y, &feat);
	if (x_leaves) {
		/* Blocked: no answer while X is there. */
		assert_int_equal(ret, -ETIMEDOUT);
		vu_disconnect(x);
		x = NULL;
		ret = vu_recv_raw(y, &hdr, &feat, sizeof(feat), LMH_DEADLINE_MS);
		assert_int_equal(ret, (int)sizeof(feat));
		assert_int_equal(hdr.request, VU_GET_FEATURES);
	} else {
		assert_int_equal(ret, 0);
		/* vhost closed X's connection when its read timed out. */
		assert_int_equal(vu_recv_raw(x, &hdr, &feat, sizeof(feat), LMH_DEADLINE_MS),
				 -ECONNRESET);
	}
	t0 = lmh_now_ms() - t0;
	vu_disconnect(y);
	if (x != NULL)
		vu_disconnect(x);
	for (i = 0; i < idle; i++)
		vu_disconnect(others[i]);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_closed(0));
	return t0;
}

static void
test_stalled_payload_holds_vhost_until_the_front_end_leaves_or_times_out(void **state)
{
	uint64_t rx = lmh_rx_received(g_b);
	int64_t ms;

	(void)state;
#ifndef __x86_64__
	/* vhost_thread_in() knows read(2) by its x86-64 number. */
	skip();
#endif
	ms = stalled_payload(true, 0);
	printf("  payload announced, never sent: another socket's GET_FEATURES unanswered "
	       "until that front end left (%" PRId64 " ms here, the front end's choice)\n", ms);
	/* The mitigation: vhost gives up on X after 1 s and answers Y. */
	lmh_msg_timeout(1000);
	ms = stalled_payload(false, 0);
	printf("  with a 1000 ms message timeout: answered after %" PRId64 " ms, the "
	       "stalling front end disconnected by vhost\n", ms);
	/*
	 * The same behind 8 other connections to the same socket: the timeout
	 * used to go to the first 8 connection fds of the path only (16 here,
	 * both ends being in this process), not the staller's.
	 */
	ms = stalled_payload(false, 8);
	lmh_msg_timeout(0);
	printf("  the same behind 8 idle connections to its socket: answered after %" PRId64
	       " ms\n", ms);
	check_b_served(rx);
	check_a_clean("stalled payload");
	well_behaved_a();
}

/*
 * DPDK 22.11 sends each reply with a blocking sendmsg in its one vhost
 * thread. Front end X pipelines GET_FEATURES and reads none of the
 * replies: once its receive buffer is full, that thread sits in
 * sendmsg(2) (looked at, as above), and without a send timeout would stay
 * there while X stays connected - DPDK's own behaviour. With the message
 * timeout (rte_pmd_mlx5_lm_vhost_msg_timeout, serve --msg-timeout), which
 * bounds the sends as well as the reads, each of X's replies waits at most
 * the timeout, and front end Y on another socket is answered meanwhile:
 * vhost's thread takes each ready connection in turn, once per round, and
 * a round waits for one of X's replies. Y's connection is accepted in one
 * round and its request read in the next (about 3 s here, from within one
 * of X's waits); without the send timeout, never while X stays.
 */
static void
test_unread_replies_hold_vhost_only_for_the_message_timeout(void **state)
{
	const struct vu_msg_hdr hdr = { VU_GET_FEATURES, VU_FLAG_VERSION, 0 };
	uint64_t rx = lmh_rx_received(g_b), feat;
	int64_t t0, deadline;
	struct vu_client *x, *y;
	unsigned int sent = 0;
	ssize_t n;
	int ret;

	(void)state;
#ifndef __x86_64__
	/* vhost_thread_in() knows sendmsg(2) by its x86-64 number. */
	skip();
#endif
	lmh_msg_timeout(1000);
	x = connect_a();
	/* Non-blocking sends until vhost's thread blocks in a reply X never reads. */
	deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	for (;;) {
		n = send(vu_client_fd(x), &hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == (ssize_t)sizeof(hdr)) {
			sent++;
			continue;
		}
		/* A header cut short at a full buffer would stall a read instead. */
		assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
		if (vhost_thread_in(SYS_NR_SENDMSG))
			break;
		if (lmh_now_ms() > deadline)
			fail_msg("vhost's thread never blocked in a reply to X (%u sent)", sent);
		lmh_tick();
	}
	/* Socket 2: no device attached, vhost answers GET_FEATURES itself. */
	assert_int_equal(vu_connect(&y, lmh_sock(2), 5000), 0);
	lmh_conn_opened(2);
	/* Three rounds of at most 1 s each, and the machine's slack. */
	vu_set_reply_timeout(y, 6000);
	t0 = lmh_now_ms();
	ret = vu_get_features(y, &feat);
	t0 = lmh_now_ms() - t0;
	printf("  %u GET_FEATURES pipelined, none of their replies read: another socket's "
	       "GET_FEATURES %s after %" PRId64 " ms (1000 ms message timeout)\n", sent,
	       ret == 0 ? "answered" : "unanswered", t0);
	lmh_msg_timeout(0);
	/* X leaving frees vhost's thread in any case: the checks below still mean something. */
	vu_disconnect(x);
	vu_disconnect(y);
	assert_int_equal(ret, 0);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_closed(0));
	check_b_served(rx);
	check_a_clean("unread replies");
	well_behaved_a();
}

/* ---- a front end leaving after each message of QEMU's start order ------------ */

enum step_kind {
	ST_GET_FEATURES, ST_GET_PROTOCOL, ST_SET_PROTOCOL, ST_GET_QUEUE_NUM, ST_SET_OWNER,
	ST_SET_FEATURES, ST_SET_MEM_TABLE, ST_NUM, ST_BASE, ST_ADDR, ST_KICK, ST_CALL,
	ST_ENABLE, ST_STATUS, ST_GET_BASE,
};

static const char *const step_name[] = {
	"GET_FEATURES", "GET_PROTOCOL_FEATURES", "SET_PROTOCOL_FEATURES", "GET_QUEUE_NUM",
	"SET_OWNER", "SET_FEATURES", "SET_MEM_TABLE", "SET_VRING_NUM", "SET_VRING_BASE",
	"SET_VRING_ADDR", "SET_VRING_KICK", "SET_VRING_CALL", "SET_VRING_ENABLE",
	"SET_STATUS(DRIVER_OK)", "GET_VRING_BASE",
};

struct step {
	enum step_kind kind;
	unsigned int ring;
};

static unsigned int
qemu_steps(struct step *s)
{
	unsigned int n = 0, i, k;

	for (k = ST_GET_FEATURES; k <= ST_SET_MEM_TABLE; k++)
		s[n++] = (struct step){ (enum step_kind)k, 0 };
	for (i = 0; i < NRINGS; i++)
		for (k = ST_NUM; k <= ST_CALL; k++)
			s[n++] = (struct step){ (enum step_kind)k, i };
	for (i = 0; i < NRINGS; i++)
		s[n++] = (struct step){ ST_ENABLE, i };
	s[n++] = (struct step){ ST_STATUS, 0 };
	for (i = 0; i < NRINGS; i++)
		s[n++] = (struct step){ ST_GET_BASE, i };
	return n;
}

static int
do_step(struct vu_client *c, const struct step *s, uint64_t *offered, uint64_t *proto)
{
	struct vu_ring_info ri;
	uint64_t v;
	uint32_t base;

	assert_int_equal(vu_guest_ring_info(g_a, s->ring, &ri), 0);
	switch (s->kind) {
	case ST_GET_FEATURES: return vu_get_features(c, offered);
	case ST_GET_PROTOCOL: return vu_get_protocol_features(c, proto);
	case ST_SET_PROTOCOL: return vu_set_protocol_features(c, *proto & VU_PROTO_DEFAULT);
	case ST_GET_QUEUE_NUM: return vu_get_queue_num(c, &v);
	case ST_SET_OWNER: return vu_set_owner(c);
	case ST_SET_FEATURES:
		v = ((1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
		     (1ULL << VU_F_NET_MQ)) & *offered;
		vu_guest_set_features(g_a, v);
		return vu_set_features(c, v);
	case ST_SET_MEM_TABLE: return vu_set_mem_table(c, mem_a);
	case ST_NUM: return vu_set_vring_num(c, s->ring, ri.num);
	case ST_BASE: return vu_set_vring_base(c, s->ring, ri.fresh_base);
	case ST_ADDR:
		return vu_set_vring_addr(c, s->ring, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
					 (uintptr_t)ri.avail, ri.log_gpa);
	case ST_KICK: return vu_set_vring_kick(c, s->ring, vu_guest_kickfd(g_a, s->ring));
	case ST_CALL: return vu_set_vring_call(c, s->ring, vu_guest_callfd(g_a, s->ring));
	case ST_ENABLE: return vu_set_vring_enable(c, s->ring, true);
	case ST_STATUS:
		return vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				     VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK);
	case ST_GET_BASE: return vu_get_vring_base(c, s->ring, &base);
	}
	return -EINVAL;
}

static void
test_front_end_leaving_after_each_message_leaves_the_device_reusable(void **state)
{
	struct step steps[64];
	unsigned int n = qemu_steps(steps), k, i;
	uint64_t rx = lmh_rx_received(g_b);

	(void)state;
	for (k = 1; k <= n; k++) {
		struct vu_client *c = connect_a();
		uint64_t offered = 0, proto = 0;

		vu_guest_reset(g_a);
		assert_int_equal(vu_guest_new_eventfds(g_a), 0);
		for (i = 0; i < k; i++) {
			if (do_step(c, &steps[i], &offered, &proto) != 0) {
				print_error("step %u (%s ring %u) refused\n", i,
					    step_name[steps[i].kind], steps[i].ring);
				fail();
			}
			/* Traffic while the device runs, before the front end leaves. */
			if (steps[i].kind == ST_STATUS) {
				assert_true(lmh_wait_running(&dev_a, LMH_DEADLINE_MS));
				assert_true(lmh_traffic(g_a, 0x3, 32, LMH_DEADLINE_MS));
			}
		}
		disconnect_a(c);
		check_a_clean(step_name[steps[k - 1].kind]);
	}
	check_b_served(rx);
	well_behaved_a();
	printf("  front end gone after each of the %u messages of QEMU's order (%s ... %s): "
	       "device A back to its probe state every time, B served\n", n,
	       step_name[steps[0].kind], step_name[steps[n - 1].kind]);
}

/* ---- fds a front end hands over that would block whoever uses them ---------- */

/* A unix pipe of one page whose write end is full: a write to it blocks. */
static void
full_pipe(int p[2])
{
	uint64_t v = 1;
	int fl;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) > 0);
	fl = fcntl(p[1], F_GETFL);
	assert_int_equal(fcntl(p[1], F_SETFL, fl | O_NONBLOCK), 0);
	while (write(p[1], &v, sizeof(v)) == sizeof(v))
		;
	/* Blocking again, as the front end hands it over. */
	assert_int_equal(fcntl(p[1], F_SETFL, fl), 0);
}

/* Poll g (no call fd to wait on) until it received at least n frames (bounded). */
static bool
wait_rx(struct vu_guest *g, uint64_t n, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;

	for (;;) {
		vu_guest_poll(g);
		if (lmh_rx_received(g) >= n)
			return true;
		if (lmh_now_ms() > deadline) {
			print_error("%" PRIu64 " frames received, %" PRIu64 " expected\n",
				    lmh_rx_received(g), n);
			return false;
		}
		lmh_tick();
	}
}

/* Device C's front end: started, traffic, then one stop and start as a migration does. */
static double
migrate_c(struct vu_client *c, struct vu_guest *g, struct lmh_dev *d)
{
	struct vu_start_opts o = { 0 };
	uint32_t bases[2];
	int64_t t0 = lmh_now_ms();

	assert_int_equal(vu_stop_device(c, bases, 2), 0);
	assert_int_equal(vu_set_status(c, 0), 0);
	o.bases = bases;
	assert_int_equal(vu_start_device(c, g, &o), 0);
	assert_true(lmh_wait_running(d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	return (double)(lmh_now_ms() - t0);
}

struct fd_trap {
	bool shared_blocking_kick;   /* rings 0 and 1: one blocking eventfd, written once */
	bool full_call_pipe;         /* ring 0: a blocking pipe that is full and never read */
	bool broken_call_pipe;       /* ring 0: a pipe whose read end the front end closed */
	bool hung_up_kick_pipe;      /* ring 3: a pipe whose write end the front end closed */
};

/* SIGPIPEs delivered to a driver's relay thread (the test process ignores the others). */
static volatile sig_atomic_t relay_sigpipes;

static void
count_relay_sigpipe(int sig)
{
	char name[16] = "";

	(void)sig;
	if (prctl(PR_GET_NAME, name) == 0 && strncmp(name, "mlx5-lm-notify", 14) == 0)
		relay_sigpipes++;
}

/*
 * QEMU's start order for guest g over memory m, with the front end's own
 * fds where kicks[i] / calls[i] >= 0 (the guest's eventfds elsewhere).
 */
static void
start_with_fds(struct vu_client *c, struct vu_guest *g, struct vu_mem *m, unsigned int nrings,
	       const int *kicks, const int *calls)
{
	unsigned int i;

	assert_int_equal(vu_device_init(c, NULL), 0);
	vu_guest_set_features(g, fe_features(c));
	assert_int_equal(vu_set_features(c, fe_features(c)), 0);
	assert_int_equal(vu_set_mem_table(c, m), 0);
	for (i = 0; i < nrings; i++) {
		struct vu_ring_info ri;

		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		assert_int_equal(vu_set_vring_num(c, i, ri.num), 0);
		assert_int_equal(vu_set_vring_base(c, i, ri.fresh_base), 0);
		assert_int_equal(vu_set_vring_addr(c, i, 0, (uintptr_t)ri.desc, (uintptr_t)ri.used,
						   (uintptr_t)ri.avail, ri.log_gpa), 0);
		assert_int_equal(vu_set_vring_kick(c, i, kicks[i] >= 0 ? kicks[i] :
						   vu_guest_kickfd(g, i)), 0);
		assert_int_equal(vu_set_vring_call(c, i, calls[i] >= 0 ? calls[i] :
						   vu_guest_callfd(g, i)), 0);
	}
	for (i = 0; i < nrings; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
}

/*
 * Device A's front end hands over fds whose use could block: the relay
 * reads a kick and writes a call in its own thread, and used to do so in
 * place, blocking, under a lock that vhost's thread takes to stop the
 * device. A shared blocking kick written once: the second read blocked;
 * a full blocking pipe as call fd: the first signal blocked. The next
 * GET_VRING_BASE of A then never returned, and no other device's message
 * was served again. Device C migrates (stop, start) meanwhile.
 */
static void
trap_session(const struct fd_trap *tr, struct vu_client *cc, struct vu_guest *gc,
	     struct lmh_dev *dc, double alone_ms)
{
	struct vu_client *c = connect_a();
	uint32_t ring0[2] = { 0, 0 }, bases[NRINGS];   /* vhost_vring_state: index, num */
	int kick = -1, pipe_fds[2] = { -1, -1 }, kick3 = -1;
	struct sigaction count = { .sa_handler = count_relay_sigpipe }, old;
	uint64_t one = 1, mark;
	struct vu_msg_hdr hdr;
	uint8_t reply[64];
	unsigned int i;
	double with_ms;
	size_t log0;

	vu_guest_reset(g_a);
	assert_int_equal(vu_guest_new_eventfds(g_a), 0);
	if (tr->shared_blocking_kick) {
		kick = eventfd(0, EFD_CLOEXEC);
		assert_true(kick >= 0);
	}
	if (tr->full_call_pipe)
		full_pipe(pipe_fds);
	if (tr->broken_call_pipe) {
		assert_int_equal(pipe2(pipe_fds, O_CLOEXEC), 0);
		close(pipe_fds[0]);
		pipe_fds[0] = -1;
	}
	if (tr->hung_up_kick_pipe) {
		int hp[2];

		assert_int_equal(pipe2(hp, O_CLOEXEC), 0);
		close(hp[1]);
		kick3 = hp[0];
	}
	log0 = lmh_log_mark();
	start_with_fds(c, g_a, mem_a, NRINGS, (const int[NRINGS]){ kick, kick, -1, kick3 },
		       (const int[NRINGS]){ pipe_fds[1], -1, -1, -1 });
	assert_true(lmh_wait_running(&dev_a, LMH_DEADLINE_MS));
	if (kick3 >= 0) {
		/*
		 * Hung up at once: the relay, which used to watch it on and spin
		 * on its hang-up, lets go of its duplicate; the front end's and
		 * vhost's copies are what is left.
		 */
		assert_true(lmh_wait_log(log0, "queue 3: kick fd hung up", LMH_DEADLINE_MS));
		assert_true(lmh_wait_fds_of_file(kick3, 2));
	}
	/* The process's SIGPIPE disposition as a host that does not ignore it, counted. */
	if (tr->broken_call_pipe) {
		relay_sigpipes = 0;
		assert_int_equal(sigaction(SIGPIPE, &count, &old), 0);
	}
	/* Frames on pair 0: their RX completions signal ring 0's call fd. */
	vu_guest_rx_refill(g_a);
	mark = lmh_rx_received(g_a);
	assert_true(vu_guest_tx(g_a, 0, 32) > 0);
	if (kick >= 0)
		assert_int_equal(write(kick, &one, sizeof(one)), (ssize_t)sizeof(one));
	else
		(void)!write(vu_guest_kickfd(g_a, 1), &one, sizeof(one));
	/* The relay took the kick: the frames came back (the device saw the doorbell). */
	assert_true(wait_rx(g_a, mark + 32, LMH_DEADLINE_MS));
	if (tr->broken_call_pipe) {
		/* The relay wrote into the pipe: EPIPE, and no SIGPIPE reached the process. */
		int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
		bool said;

		while (!(said = lmh_log_has(log0, "queue 0: call fd has no reader")) &&
		       relay_sigpipes == 0 && lmh_now_ms() < deadline)
			lmh_tick();
		assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
		if (relay_sigpipes != 0)
			print_error("%d SIGPIPE delivered to the relay thread (a host that does not "
				    "ignore it dies)\n", (int)relay_sigpipes);
		assert_int_equal(relay_sigpipes, 0);
		assert_true(said);
	}
	/* GET_VRING_BASE of A, its reply read later: vhost's thread stops A now. */
	assert_int_equal(vu_send_raw(c, VU_GET_VRING_BASE, VU_FLAG_VERSION, ring0, sizeof(ring0),
				     NULL, 0), 0);
	with_ms = migrate_c(cc, gc, dc);
	assert_true(vu_recv_raw(c, &hdr, reply, sizeof(reply), LMH_DEADLINE_MS) >= 0);
	for (i = 1; i < NRINGS; i++)
		assert_int_equal(vu_get_vring_base(c, i, &bases[i]), 0);
	disconnect_a(c);
	check_a_clean("fd trap");
	/* The driver keeps none of the front end's fds once the device is stopped. */
	if (kick >= 0) {
		assert_true(lmh_wait_fds_of_file(kick, 1));
		close(kick);
	}
	if (pipe_fds[1] >= 0) {
		assert_true(lmh_wait_fds_of_file(pipe_fds[1], 1));
		if (pipe_fds[0] >= 0)
			close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
	if (kick3 >= 0) {
		assert_true(lmh_wait_fds_of_file(kick3, 1));
		close(kick3);
	}
	/*
	 * Not a performance claim (the benchmarks make those): a blocked
	 * vhost thread makes C's migration never finish; here it must stay
	 * within a bound far above its time alone.
	 */
	printf("  %s: device C migrated in %.1f ms (%.1f ms alone)\n",
	       tr->shared_blocking_kick ? "blocking kick shared by rings 0 and 1" :
	       tr->full_call_pipe ? "full blocking pipe as ring 0's call fd" :
	       tr->broken_call_pipe ? "pipe without reader as ring 0's call fd" :
	       "pipe without writer as ring 3's kick fd", with_ms, alone_ms);
	assert_true(with_ms < 10 * alone_ms + 2000);
}

/* rdma (4 devices, one doorbell area each): the next probe takes one that A and B do not hold. */
static void
ibdev_beside_a_and_b(void)
{
	struct lmh_dev next = { 0 };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		snprintf(next.ibdev, sizeof(next.ibdev), "mlx5_%u", i);
		if (strcmp(next.ibdev, dev_a.ibdev) != 0 && strcmp(next.ibdev, dev_b.ibdev) != 0)
			break;
	}
	lmh_reuse_ibdev(&next);
}

/* Device C (socket 2, one pair) probed with args beside A and B, its front end connected. */
static void
device_c_connect_args(struct lmh_dev *d, struct vu_mem **m, struct vu_guest **g,
		      struct vu_client **c, const char *args)
{
	struct vu_guest_cfg cfg = { .queue_pairs = 1, .ring_size = 256 };

	ibdev_beside_a_and_b();
	assert_int_equal(lmh_probe(d, 2, args), 0);
	assert_int_equal(vu_mem_create_qemu(m, 1), 0);
	assert_int_equal(vu_guest_create(g, *m, &cfg), 0);
	assert_int_equal(vu_connect(c, lmh_sock(2), 5000), 0);
	lmh_conn_opened(2);
	vu_set_reply_timeout(*c, LMH_DEADLINE_MS);
}

static void
device_c_connect(struct lmh_dev *d, struct vu_mem **m, struct vu_guest **g, struct vu_client **c)
{
	device_c_connect_args(d, m, g, c, "queues=1,workers=2,mr_gc_ms=0");
}

/* Device C connected and started by its front end (QEMU's sequence), running. */
static void
device_c_start(struct lmh_dev *d, struct vu_mem **m, struct vu_guest **g, struct vu_client **c)
{
	device_c_connect(d, m, g, c);
	assert_int_equal(vu_start_device(*c, *g, NULL), 0);
	assert_true(lmh_wait_running(d, LMH_DEADLINE_MS));
}

/* Device C's front end stops its pair and leaves; the device is removed, nothing left. */
static void
device_c_stop_and_remove(struct lmh_dev *d, struct vu_client *c, struct vu_guest *g,
			 struct vu_mem *m)
{
	uint32_t base;

	/* GET_VRING_BASE of its two rings (vu_stop_device knows only what it started). */
	assert_int_equal(vu_get_vring_base(c, 0, &base), 0);
	assert_int_equal(vu_get_vring_base(c, 1, &base), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_restored(d));
	assert_int_equal(lmh_remove(d), 0);
	vu_guest_destroy(g);
	vu_mem_destroy(m);
}

static void
test_front_end_fds_never_block_the_driver(void **state)
{
	const struct fd_trap traps[] = {
		{ .shared_blocking_kick = true },
		{ .full_call_pipe = true },
		{ .broken_call_pipe = true },
		{ .hung_up_kick_pipe = true },
	};
	struct lmh_dev dc = { 0 };
	struct vu_client *cc;
	struct vu_guest *gc;
	struct vu_mem *mc;
	double alone_ms;
	unsigned int i;

	(void)state;
	device_c_start(&dc, &mc, &gc, &cc);
	assert_true(lmh_traffic(gc, 0x1, 32, LMH_DEADLINE_MS));
	alone_ms = migrate_c(cc, gc, &dc);
	for (i = 0; i < sizeof(traps) / sizeof(traps[0]); i++) {
		uint64_t rx = lmh_rx_received(g_b);

		trap_session(&traps[i], cc, gc, &dc, alone_ms);
		check_b_served(rx);
		well_behaved_a();
	}
	{
		uint32_t bases[2];

		assert_int_equal(vu_stop_device(cc, bases, 2), 0);
	}
	vu_disconnect(cc);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_restored(&dc));
	assert_int_equal(lmh_remove(&dc), 0);
	vu_guest_destroy(gc);
	vu_mem_destroy(mc);
}

/* The front end's move inside the relay's window (mlx5_lm_notify_race): once, on ring 0's call. */
static void
fill_call(uint16_t index, int fd, int wr, void *arg)
{
	const uint64_t full = UINT64_C(0xfffffffffffffffe);   /* an eventfd's largest count */
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int *fired = arg;
	uint64_t v;

	if (index != 0 || !wr || __atomic_exchange_n(fired, 1, __ATOMIC_ACQ_REL))
		return;
	if (poll(&p, 1, 0) == 1)
		(void)!read(fd, &v, sizeof(v));
	(void)!write(fd, &full, sizeof(full));
}

struct removal {
	struct lmh_dev *d;
	long alive;
	int done;
};

static void *
remove_thread(void *arg)
{
	struct removal *rm = arg;

	rm->alive = lmh_remove(rm->d);
	__atomic_store_n(&rm->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Bounded wait for *flag (set by another thread). */
static bool
wait_flag(const int *flag, int timeout_ms)
{
	int64_t end = lmh_now_ms() + timeout_ms;

	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE) && lmh_now_ms() < end)
		lmh_tick();
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/*
 * An eventfd's write takes no RWF_NOWAIT: the relay writes a call fd once
 * poll says it has room, and a front end that keeps the fd blocking and
 * fills its counter in between holds the relay in that write. Its own
 * device's relay only: vhost goes on answering. The front end then leaves
 * for good, nobody can ever read the fd again, and the device is removed:
 * the removal used to wait for the relay for ever.
 */
static void
test_a_relay_held_by_its_front_end_does_not_hold_the_removal(void **state)
{
	int call = eventfd(0, EFD_CLOEXEC), fired = 0;
	struct removal rm = { 0 };
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	uint32_t bases[2];
	uint64_t mark;
	size_t log0;
	pthread_t t;

	(void)state;
	assert_true(call >= 0);
	device_c_connect(&d, &m, &g, &c);
	start_with_fds(c, g, m, 2, (const int[2]){ -1, -1 }, (const int[2]){ call, -1 });
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	mlx5_lm_notify_race(d.dev, fill_call, &fired);
	log0 = lmh_log_mark();
	/* Frames on the pair: ring 0's completions are signalled. */
	vu_guest_rx_refill(g);
	mark = lmh_rx_received(g);
	assert_true(vu_guest_tx(g, 0, 32) > 0);
	assert_true(wait_rx(g, mark + 32, LMH_DEADLINE_MS));
	assert_true(wait_flag(&fired, LMH_DEADLINE_MS));
	/* vhost is not held: the device stops, its front end leaves and its fd is gone. */
	assert_int_equal(vu_get_vring_base(c, 0, &bases[0]), 0);
	assert_int_equal(vu_get_vring_base(c, 1, &bases[1]), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_restored(&d));
	close(call);
	rm.d = &d;
	assert_int_equal(pthread_create(&t, NULL, remove_thread, &rm), 0);
	if (!wait_flag(&rm.done, LMH_DEADLINE_MS)) {
		print_error("the removal did not return in %d ms\n", LMH_DEADLINE_MS);
		fail();
	}
	pthread_join(t, NULL);
	assert_int_equal(rm.alive, 0);
	assert_true(lmh_log_has(log0, "notification thread still held after 1 s"));
	vu_guest_destroy(g);
	vu_mem_destroy(m);
}

/*
 * Kick fds that stay readable whatever the relay reads from them, each as
 * ring 1's kick of device C:
 *   0: an EFD_SEMAPHORE eventfd whose count was pushed to its maximum
 *      (each read takes 1 of 2^64 - 2);
 *   1: a stream socket whose peer shut its writing side (EPOLLIN and
 *      EPOLLRDHUP, no EPOLLHUP; every read returns 0);
 *   2: a listening unix socket with a connection pending (EPOLLIN; every
 *      read fails with EINVAL, consuming nothing).
 * The relay read each once per wake-up and watched it on: its thread spun,
 * ringing the doorbell at every pass. It lets go of its duplicate instead
 * (said once), and relays the next kick fd the front end gives.
 */
static const struct {
	const char *what, *said;
} readable_kicks[] = {
	{ "EFD_SEMAPHORE eventfd at its largest count",
	  "queue 1: kick fd still readable after 64 reads" },
	{ "stream socket whose peer did shutdown(SHUT_WR)", "queue 1: kick fd hung up" },
	{ "listening socket with a pending connection", "queue 1: kick fd unreadable: " },
};

/* The kick fd of case kind; *peer: the other end the test keeps, or -1. */
static int
readable_kick(unsigned int kind, int *peer)
{
	const uint64_t full = UINT64_C(0xfffffffffffffffe);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len = sizeof(sa_family_t);
	int fd, sv[2];

	*peer = -1;
	switch (kind) {
	case 0:
		fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, &full, sizeof(full)), (ssize_t)sizeof(full));
		return fd;
	case 1:
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		assert_int_equal(shutdown(sv[1], SHUT_WR), 0);
		*peer = sv[1];
		return sv[0];
	default:
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(fd >= 0);
		/* An address of sa_family_t alone: the kernel picks an abstract one. */
		assert_int_equal(bind(fd, (struct sockaddr *)&a, len), 0);
		assert_int_equal(listen(fd, 4), 0);
		len = sizeof(a);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
		*peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(*peer >= 0);
		assert_int_equal(connect(*peer, (struct sockaddr *)&a, len), 0);
		return fd;
	}
}

static void
test_a_kick_fd_no_read_empties_is_let_go(void **state)
{
	unsigned int kind;

	(void)state;
	for (kind = 0; kind < sizeof(readable_kicks) / sizeof(readable_kicks[0]); kind++) {
		struct lmh_dev d = { 0 };
		struct vu_client *c;
		struct vu_guest *g;
		struct vu_mem *m;
		int kick, peer;
		size_t log0;

		printf("  ring 1's kick a %s\n", readable_kicks[kind].what);
		kick = readable_kick(kind, &peer);
		device_c_connect(&d, &m, &g, &c);
		log0 = lmh_log_mark();
		start_with_fds(c, g, m, 2, (const int[2]){ -1, kick }, (const int[2]){ -1, -1 });
		assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
		if (!lmh_wait_log(log0, readable_kicks[kind].said, LMH_DEADLINE_MS)) {
			print_error("no \"%s\" in %d ms\n", readable_kicks[kind].said,
				    LMH_DEADLINE_MS);
			fail();
		}
		/* The relay's duplicate closed: the test's and vhost's copies are left. */
		if (!lmh_wait_fds_of_file(kick, 2)) {
			print_error("the relay still holds the kick: %d fds of its file\n",
				    lmh_fds_of_file(kick));
			fail();
		}
		/* The front end's next kick fd (the guest's) is relayed: the pair runs again. */
		assert_int_equal(vu_set_vring_kick(c, 1, vu_guest_kickfd(g, 1)), 0);
		assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
		device_c_stop_and_remove(&d, c, g, m);
		close(kick);
		if (peer >= 0)
			close(peer);
	}
}

/*
 * realloc failing while armed: the relay's first allocation of its retired
 * list on vhost's thread (realloc(NULL, 64 ints), how the list grew from
 * empty when a duplicate went out of use) fails once, with ENOMEM. Only
 * that one: any thread's first new block failed before, and on the rdma
 * path another thread's (the emulated rdma-core's) now and then took the
 * failure meant for the relay.
 */
static int fail_new_realloc;

/*
 * Not under ThreadSanitizer: its runtime calls realloc while it starts,
 * before dlsym can answer, and the process dies at once. The two tests
 * that arm these stand-ins skip there (the other builds run them).
 */
#ifndef __SANITIZE_THREAD__
#define LIBC_STAND_INS 1
#endif

#ifdef LIBC_STAND_INS
void *
realloc(void *p, size_t n)
{
	static void *(*real)(void *, size_t);

	if (real == NULL)
		real = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	if (p == NULL && n == 64 * sizeof(int) && __atomic_load_n(&fail_new_realloc,
								  __ATOMIC_ACQUIRE)) {
		char name[16] = "";

		if (prctl(PR_GET_NAME, name) == 0 && strncmp(name, "vhost-events", 12) == 0 &&
		    __atomic_exchange_n(&fail_new_realloc, 0, __ATOMIC_ACQ_REL)) {
			errno = ENOMEM;
			return NULL;
		}
	}
	return real(p, n);
}
#endif

/*
 * Ring 0's kick replaced (SET_VRING_KICK: vhost disables and enables the
 * ring) while memory cannot be had. The relay's list of duplicates to
 * close could not grow: the old kick's duplicate, its slot cleared, was
 * held by nobody, closed neither then nor at the device's removal. The
 * list has room for every duplicate in use now: the old kick's goes as
 * soon as it is replaced.
 */
static void
test_a_replaced_kick_is_closed_when_memory_is_short(void **state)
{
	int kick = eventfd(0, EFD_CLOEXEC);
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	bool taken, replaced;
	size_t log0;

	(void)state;
#ifndef LIBC_STAND_INS
	close(kick);
	skip();
#endif
	assert_true(kick >= 0);
	device_c_connect(&d, &m, &g, &c);
	start_with_fds(c, g, m, 2, (const int[2]){ kick, -1 }, (const int[2]){ -1, -1 });
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	/* The test's, vhost's and the relay's. */
	assert_true(lmh_wait_fds_of_file(kick, 3));
	log0 = lmh_log_mark();
	__atomic_store_n(&fail_new_realloc, 1, __ATOMIC_RELEASE);
	assert_int_equal(vu_set_vring_kick(c, 0, vu_guest_kickfd(g, 0)), 0);
	/* Armed until vhost's thread has handled it (it may after the call returns). */
	replaced = lmh_wait_log(log0, "queue 0 (rx 0): enabled by the guest", LMH_DEADLINE_MS);
	taken = !__atomic_exchange_n(&fail_new_realloc, 0, __ATOMIC_ACQ_REL);
	assert_true(replaced);
	printf("  the failing realloc was %s during the kick's replacement\n",
	       taken ? "called" : "not called");
	/* vhost closed its copy, the relay its duplicate: the test's is left. */
	if (!lmh_wait_fds_of_file(kick, 1)) {
		print_error("the replaced kick's file still has %d fds\n", lmh_fds_of_file(kick));
		fail();
	}
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	device_c_stop_and_remove(&d, c, g, m);
	assert_true(lmh_wait_fds_of_file(kick, 1));
	close(kick);
}

/*
 * The relay held in its writes of ring 0's call fd (mlx5_lm_notify_race),
 * the first two times: the test acts while each is held.
 */
struct held_calls {
	int fired;      /* calls of ring 0 held so far */
	int go;         /* the last one the test let go on */
};

static void
hold_ring0_call(uint16_t index, int fd, int wr, void *arg)
{
	struct held_calls *h = arg;
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	int k;

	(void)fd;
	if (index != 0 || !wr || __atomic_load_n(&h->fired, __ATOMIC_ACQUIRE) >= 2)
		return;
	k = __atomic_add_fetch(&h->fired, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&h->go, __ATOMIC_ACQUIRE) < k && lmh_now_ms() < end)
		usleep(1000);
}

/* Bounded wait for the relay to hold its k-th call of ring 0. */
static bool
wait_held(struct held_calls *h, int k, const char *what)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;

	while (__atomic_load_n(&h->fired, __ATOMIC_ACQUIRE) < k && lmh_now_ms() < end)
		lmh_tick();
	if (__atomic_load_n(&h->fired, __ATOMIC_ACQUIRE) >= k)
		return true;
	print_error("the relay did not hold %s within %d ms\n", what, LMH_DEADLINE_MS);
	return false;
}

/*
 * One epoll_wait returns an event channel's event and the hang-up of
 * ring 1's kick pipe; while the relay handles the first, the front end
 * replaces that kick (SET_VRING_KICK). The hang-up, the old fd's, was taken
 * for the ring's (the cookie was the queue index alone) and the new,
 * healthy kick fd let go of. Set up in the event_mode=1 relay (its calls
 * are made by a poll after the events, so an event arriving meanwhile is
 * left for the next wait): held in a poll's call of ring 0, the channel
 * gets an overflow (its handling calls every ring) and then the pipe hangs
 * up; held again in that call, the kick is replaced.
 */
static void
test_a_late_hang_up_of_a_replaced_kick_spares_its_successor(void **state)
{
	/* Static: the relay may still look at it if the test fails half-way. */
	static struct held_calls h;
	struct lmh_dev d = { 0 };
	int kick = eventfd(0, EFD_CLOEXEC), hp[2];
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	uint32_t cqn;
	uint64_t one = 1;
	long lost;
	size_t log0;

	(void)state;
	assert_true(kick >= 0);
	assert_int_equal(pipe2(hp, O_CLOEXEC), 0);
	device_c_connect_args(&d, &m, &g, &c, "queues=1,workers=2,mr_gc_ms=0,event_mode=1,"
			      "event_us=1000,no_traffic_time=100000");
	start_with_fds(c, g, m, 2, (const int[2]){ -1, hp[0] }, (const int[2]){ -1, -1 });
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	cqn = d.dev->vq[0].eq.cqn;
	mlx5_lm_notify_race(d.dev, hold_ring0_call, &h);
	/* A frame on the pair, ring 1 kicked through the pipe: ring 0 completes. */
	vu_guest_rx_refill(g);
	assert_true(vu_guest_tx(g, 0, 1) > 0);
	assert_int_equal(write(hp[1], &one, sizeof(one)), (ssize_t)sizeof(one));
	assert_true(wait_held(&h, 1, "a poll's call of ring 0"));
	/* Two events where the channel holds one: the next read is EOVERFLOW. */
	lost = lmh_evch_overflows(&d);
	assert_int_equal(lmh_evch_hold(&d, 1), 0);
	assert_int_equal(lmh_event_inject(&d, PRM_CMD_CREATE_CQ, 0, cqn, PRM_EVENT_COMPLETION), 0);
	assert_int_equal(lmh_event_inject(&d, PRM_CMD_CREATE_CQ, 0, cqn, PRM_EVENT_COMPLETION), 0);
	assert_true(lmh_evch_overflows(&d) > lost);
	assert_int_equal(lmh_evch_release(&d), 0);
	/* Then the kick pipe hangs up: both ready, in that order, for the relay's next wait. */
	close(hp[1]);
	log0 = lmh_log_mark();
	__atomic_store_n(&h.go, 1, __ATOMIC_RELEASE);
	assert_true(wait_held(&h, 2, "the overflow's call of ring 0"));
	/* The front end's new kick for ring 1, taken while the hang-up waits its turn. */
	assert_int_equal(vu_set_vring_kick(c, 1, kick), 0);
	assert_true(lmh_wait_fds_of_file(kick, 3));
	__atomic_store_n(&h.go, 2, __ATOMIC_RELEASE);
	/*
	 * The old kick's duplicate is closed at the thread's wake-up after that
	 * wait's events: once it is, the hang-up has been handled.
	 */
	if (!lmh_wait_fds_of_file(hp[0], 1)) {
		print_error("the relay still holds the replaced kick: %d fds of its file\n",
			    lmh_fds_of_file(hp[0]));
		fail();
	}
	mlx5_lm_notify_race(d.dev, NULL, NULL);
	/* The test's, vhost's and the relay's: the new kick is still relayed. */
	if (lmh_fds_of_file(kick) != 3 || lmh_log_has(log0, "queue 1: kick fd hung up")) {
		print_error("the old kick's hang-up let go of the new kick (%d fds of its file)\n",
			    lmh_fds_of_file(kick));
		fail();
	}
	device_c_stop_and_remove(&d, c, g, m);
	assert_true(lmh_wait_fds_of_file(kick, 1));
	close(kick);
	close(hp[0]);
}

/*
 * fcntl(F_DUPFD_CLOEXEC) failing once with EMFILE while armed, on vhost's
 * thread only: the relay's duplicates, made there; not the test's own
 * (the guest's waits duplicate its call fds).
 */
static int fail_dupfd;

#ifdef LIBC_STAND_INS
int
fcntl(int fd, int cmd, ...)
{
	static int (*real)(int, int, ...);
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (real == NULL)
		real = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
	if (cmd == F_DUPFD_CLOEXEC && __atomic_load_n(&fail_dupfd, __ATOMIC_ACQUIRE)) {
		char name[16] = "";

		if (prctl(PR_GET_NAME, name) == 0 && strncmp(name, "vhost-events", 12) == 0 &&
		    __atomic_exchange_n(&fail_dupfd, 0, __ATOMIC_ACQ_REL)) {
			errno = EMFILE;
			return -1;
		}
	}
	return real(fd, cmd, arg);
}
#endif

/*
 * A running ring's kick replaced (vhost: the ring disabled, then enabled)
 * when the process is out of fds: its duplicates cannot be made, and the
 * queue was made RDY again with nothing relaying its kicks or calls while
 * vhost was told the enable succeeded. It is suspended again, the enable
 * refused (logged); the front end's next enable runs it.
 */
static void
test_an_enable_whose_fds_cannot_be_relayed_is_refused(void **state)
{
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	size_t log0;
	bool taken;

	(void)state;
#ifndef LIBC_STAND_INS
	skip();
#endif
	device_c_start(&d, &m, &g, &c);
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	log0 = lmh_log_mark();
	__atomic_store_n(&fail_dupfd, 1, __ATOMIC_RELEASE);
	/* Handled by vhost's thread after the call returns: the dup's failure is waited for. */
	(void)vu_set_vring_kick(c, 1, vu_guest_kickfd(g, 1));
	taken = lmh_wait_log(log0, "queue 1 (tx 0): cannot duplicate its kickfd", LMH_DEADLINE_MS);
	__atomic_store_n(&fail_dupfd, 0, __ATOMIC_RELEASE);
	if (!taken) {
		print_error("ring 1's kick was not duplicated (and failed) in %d ms\n",
			    LMH_DEADLINE_MS);
		fail();
	}
	if (!lmh_wait_log(log0, "queue 1 (tx 0): its kick and call fds cannot be relayed "
			  "(Too many open files): its queue suspended again", LMH_DEADLINE_MS)) {
		print_error("no refusal of ring 1's enable in %d ms (its queue in state %d)\n",
			    LMH_DEADLINE_MS, lmh_vq_state(&d, 1));
		fail();
	}
	assert_int_equal(lmh_vq_state(&d, 1), PRM_VIRTQ_STATE_SUSPEND);
	/* The front end's next enable, fds to be had: the pair runs again. */
	assert_int_equal(vu_set_vring_kick(c, 1, vu_guest_kickfd(g, 1)), 0);
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	device_c_stop_and_remove(&d, c, g, m);
}

/*
 * Without the vetting (an application that does not install it), a kick
 * fd the relay cannot watch (epoll refuses /dev/null, a file without
 * poll): DRIVER_OK fails, nothing left RDY. The device used to run with
 * that ring's kicks relayed nowhere while the front end was told it ran.
 */
static void
test_a_kick_the_relay_cannot_watch_fails_driver_ok(void **state)
{
	int kick = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	size_t log0;
	bool failed;

	(void)state;
	assert_true(kick >= 0);
	lmh_vet(false);
	device_c_connect(&d, &m, &g, &c);
	log0 = lmh_log_mark();
	start_with_fds(c, g, m, 2, (const int[2]){ -1, kick }, (const int[2]){ -1, -1 });
	failed = lmh_wait_log(log0, "DRIVER_OK failed (the rings' kick and call fds could not "
			      "be relayed", LMH_DEADLINE_MS);
	lmh_vet(true);
	assert_true(failed);
	assert_false(lmh_running(&d));
	device_c_stop_and_remove(&d, c, g, m);
	close(kick);
}

/*
 * vhost keeps a connection's vDPA device and calls it at the connection's
 * next message and at its close: removed under a running front end, the
 * device was freed and vhost's thread crashed when the front end then
 * left. The removal is refused until the front end is gone, a RESET_OWNER
 * (which ends the ownership, not the connection) included.
 */
static void
test_a_device_a_front_end_uses_is_not_removed(void **state)
{
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	uint32_t bases[2];
	size_t log0;

	(void)state;
	device_c_start(&d, &m, &g, &c);
	log0 = lmh_log_mark();
	assert_int_not_equal(rte_eal_hotplug_remove("vdev", d.name), 0);
	assert_true(lmh_log_has(log0, "not removed: vhost device"));
	/* Still the front end's: its frames flow, its stop is answered. */
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(c, bases, 2), 0);
	/* A RESET_OWNER ends the ownership (vhost's dev_cleanup), not the connection. */
	log0 = lmh_log_mark();
	assert_int_equal(vu_send_raw(c, VU_RESET_OWNER, VU_FLAG_VERSION, NULL, 0, NULL, 0), 0);
	assert_true(lmh_wait_log(log0, "front end disconnected", LMH_DEADLINE_MS));
	assert_int_not_equal(rte_eal_hotplug_remove("vdev", d.name), 0);
	assert_true(lmh_log_has(log0, "not removed: vhost device"));
	/*
	 * The reset's cleanup line is one more than the connections' closes:
	 * lmh_wait_closed() must wait for the close's own (vhost calls
	 * dev_cleanup after destroy_connection), not count the reset's.
	 */
	d.conns++;
	vu_disconnect(c);
	assert_true(lmh_wait_closed(2));
	assert_true(lmh_wait_restored(&d));
	assert_int_equal(lmh_remove(&d), 0);
	vu_guest_destroy(g);
	vu_mem_destroy(m);
}

/*
 * Every connection vhost attached to the device counts, not only its
 * owner's: vhost calls the device at each one's next message and at its
 * close. A front end that only asked for the features, and one still
 * connected after the owner left, each keep the device from removal.
 */
static void
test_a_device_with_any_connection_is_not_removed(void **state)
{
	struct lmh_dev d = { 0 };
	struct vu_client *c, *c2;
	struct vu_guest *g;
	struct vu_mem *m;
	uint64_t f;
	size_t log0;

	(void)state;
	device_c_connect(&d, &m, &g, &c);
	/* Answered: vhost has the connection, attached to the device. */
	assert_int_equal(vu_get_features(c, &f), 0);
	log0 = lmh_log_mark();
	assert_int_not_equal(rte_eal_hotplug_remove("vdev", d.name), 0);
	assert_true(lmh_log_has(log0, "not removed: vhost device"));
	/* A second connection; the first one then owns the device, runs, and leaves. */
	assert_non_null(c2 = lmh_fe_connect(2));
	assert_int_equal(vu_get_features(c2, &f), 0);
	assert_int_equal(vu_start_device(c, g, NULL), 0);
	assert_true(lmh_wait_running(&d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	log0 = lmh_log_mark();
	vu_disconnect(c);
	assert_true(lmh_wait_log(log0, "front end disconnected", LMH_DEADLINE_MS));
	assert_true(lmh_wait_restored(&d));
	assert_int_not_equal(rte_eal_hotplug_remove("vdev", d.name), 0);
	assert_true(lmh_log_has(log0, "not removed: vhost device"));
	/* Its last connection gone, the device goes. */
	vu_disconnect(c2);
	assert_true(lmh_wait_closed(2));
	assert_int_equal(lmh_remove(&d), 0);
	vu_guest_destroy(g);
	vu_mem_destroy(m);
}

/*
 * A call fd that is neither an eventfd, a pipe nor a socket (a memfd here;
 * a FUSE file, whose poll waits for its daemon, the case that matters):
 * refused before the relay could poll it.
 */
static void
test_a_ring_fd_of_another_kind_is_refused(void **state)
{
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	size_t log0;
	int fd;

	(void)state;
	device_c_start(&d, &m, &g, &c);
	fd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
	assert_true(fd >= 0);
	log0 = lmh_log_mark();
	assert_int_not_equal(vu_set_vring_call(c, 0, fd), 0);
	assert_true(lmh_log_has(log0, "request 13 for ring 0: its fd is not an eventfd, a pipe or "
				"a socket"));
	/* Refused (nacked): the ring keeps the call fd it had, its frames complete. */
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	close(fd);
	device_c_stop_and_remove(&d, c, g, m);
}

/*
 * DPDK 22.11's SET_VRING_KICK, CALL and ERR never check the payload size:
 * they take the ring index from its first 8 bytes and the fd from the
 * first one sent, and vhost does not clear its message buffer, so a
 * shorter payload's index is a previous message's bytes. A size other than
 * 8 is refused before the fd's kind is looked at (a memfd as call fd in a
 * 16-byte message was taken for ring 0's, past the rule above), the ring
 * keeping the call fd it had.
 */
static void
test_a_ring_fd_in_a_message_of_another_size_is_refused(void **state)
{
	static const uint32_t sizes[] = { 16, 0, 4 };
	struct lmh_dev d = { 0 };
	uint64_t payload[2] = { 0, 0 };
	char line[96];
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	unsigned int i;
	size_t log0;
	int fd;

	(void)state;
	device_c_start(&d, &m, &g, &c);
	fd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
	assert_true(fd >= 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		log0 = lmh_log_mark();
		/* Nacked (REPLY_ACK): refused, the connection staying. */
		assert_int_not_equal(vu_request(c, VU_SET_VRING_CALL, payload, sizes[i], &fd, 1,
						NULL, 0), 0);
		snprintf(line, sizeof(line), "(SET_VRING_CALL) with a %u-byte payload", sizes[i]);
		assert_true(lmh_log_has(log0, line));
	}
	assert_true(lmh_traffic(g, 0x1, 32, LMH_DEADLINE_MS));
	close(fd);
	device_c_stop_and_remove(&d, c, g, m);
}

/*
 * A RESET_OWNER with an fd, which DPDK 22.11 refuses (it takes none) and
 * closes the connection for, without calling the driver. The vetting used
 * to tell the driver of the reset first: that mark outlived the message,
 * the connection's close was taken for the reset, its count never dropped,
 * and the device could never be removed, no connection left. Any message
 * with an fd it never carries is refused before the driver hears of it.
 */
static void
test_a_message_with_an_fd_it_never_carries_leaves_the_device_removable(void **state)
{
	struct lmh_dev d = { 0 };
	struct vu_client *c;
	struct vu_guest *g;
	struct vu_mem *m;
	uint64_t f;
	size_t log0;
	int fd;

	(void)state;
	device_c_connect(&d, &m, &g, &c);
	/* Answered: the connection is attached to the device, counted. */
	assert_int_equal(vu_get_features(c, &f), 0);
	fd = eventfd(0, EFD_CLOEXEC);
	assert_true(fd >= 0);
	log0 = lmh_log_mark();
	assert_int_equal(vu_send_raw(c, VU_RESET_OWNER, VU_FLAG_VERSION, NULL, 0, &fd, 1), 0);
	close(fd);
	/* No REPLY_ACK asked: the refusal is the connection's close. */
	assert_true(lmh_wait_closed(2));
	vu_disconnect(c);
	assert_true(lmh_wait_restored(&d));
	/* Its only connection gone, the device goes. */
	assert_int_equal(lmh_remove(&d), 0);
	assert_false(lmh_log_has(log0, "not removed: vhost device"));
	assert_true(lmh_log_has(log0, "RESET_OWNER (request 4) with 1 fd(s), which it never "
				"carries"));
	vu_guest_destroy(g);
	vu_mem_destroy(m);
}

/* ---- group setup: A and B probed, B running with traffic ---------------------- */

static int
group_setup(void **state)
{
	(void)state;
	if (lmh_probe(&dev_a, 0, "queues=2,workers=2,mr_gc_ms=0") != 0 ||
	    lmh_probe(&dev_b, 1, "queues=1,workers=2,mr_gc_ms=0") != 0)
		return -1;
	if (vu_mem_create_qemu(&mem_a, 1) != 0 || vu_mem_create_qemu(&mem_b, 1) != 0)
		return -1;
	if (vu_guest_create(&g_a, mem_a, &(struct vu_guest_cfg){ .queue_pairs = PAIRS,
							      .ring_size = 256 }) != 0 ||
	    vu_guest_create(&g_b, mem_b, &(struct vu_guest_cfg){ .queue_pairs = 1,
							      .ring_size = 256 }) != 0)
		return -1;
	if (vu_connect(&c_b, lmh_sock(1), 5000) != 0)
		return -1;
	lmh_conn_opened(1);
	vu_set_reply_timeout(c_b, LMH_DEADLINE_MS);
	if (vu_start_device(c_b, g_b, NULL) != 0 || !lmh_wait_running(&dev_b, LMH_DEADLINE_MS))
		return -1;
	return lmh_pump_start(&pump_b, g_b, 0x1);
}

static int
group_teardown(void **state)
{
	uint32_t bases[2];
	bool b_clean;
	long la, lb;

	(void)state;
	b_clean = lmh_pump_stop(&pump_b);
	printf("  device B: %" PRIu64 " frames received during the run, %s\n",
	       lmh_rx_received(g_b), b_clean ? "none lost, none corrupted" : "FRAMES LOST");
	(void)vu_stop_device(c_b, bases, 2);
	vu_disconnect(c_b);
	(void)lmh_wait_closed(1);
	(void)lmh_wait_restored(&dev_a);
	(void)lmh_wait_restored(&dev_b);
	la = lmh_remove(&dev_a);
	lb = lmh_remove(&dev_b);
	printf("  at removal: %ld objects alive on A, %ld on B\n", la, lb);
	vu_guest_destroy(g_a);
	vu_guest_destroy(g_b);
	vu_mem_destroy(mem_a);
	vu_mem_destroy(mem_b);
	return b_clean && la == 0 && lb == 0 ? 0 : -1;
}

LMH_TEST_MAIN("test-hostile", 3, "hostile", group_setup, group_teardown,
	cmocka_unit_test(test_broken_memory_tables_are_refused_and_the_back_end_stays_up),
	cmocka_unit_test(test_bad_rings_are_refused_and_the_back_end_stays_up),
	cmocka_unit_test(test_misaligned_ring_is_refused),
	cmocka_unit_test(test_out_of_order_front_ends_are_survived),
	cmocka_unit_test(test_vhost_crashers_are_refused_or_contained),
	cmocka_unit_test(test_released_registration_never_serves_other_memory),
	cmocka_unit_test(
		test_stalled_payload_holds_vhost_until_the_front_end_leaves_or_times_out),
	cmocka_unit_test(test_unread_replies_hold_vhost_only_for_the_message_timeout),
	cmocka_unit_test(
		test_front_end_leaving_after_each_message_leaves_the_device_reusable),
	cmocka_unit_test(test_front_end_fds_never_block_the_driver),
	cmocka_unit_test(test_a_relay_held_by_its_front_end_does_not_hold_the_removal),
	cmocka_unit_test(test_a_kick_fd_no_read_empties_is_let_go),
	cmocka_unit_test(test_a_replaced_kick_is_closed_when_memory_is_short),
	cmocka_unit_test(test_a_late_hang_up_of_a_replaced_kick_spares_its_successor),
	cmocka_unit_test(test_an_enable_whose_fds_cannot_be_relayed_is_refused),
	cmocka_unit_test(test_a_kick_the_relay_cannot_watch_fails_driver_ok),
	cmocka_unit_test(test_a_device_a_front_end_uses_is_not_removed),
	cmocka_unit_test(test_a_device_with_any_connection_is_not_removed),
	cmocka_unit_test(test_a_ring_fd_of_another_kind_is_refused),
	cmocka_unit_test(test_a_ring_fd_in_a_message_of_another_size_is_refused),
	cmocka_unit_test(test_a_message_with_an_fd_it_never_carries_leaves_the_device_removable))
