/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated rdma-core (emu-rdma/), through its public rdma-core API:
 * the kernel's DevX rules (Linux devx.c), event channel fds (blocking
 * unless O_NONBLOCK, OMIT_EV_DATA), the VAR doorbell page reaching the
 * emulator, loud failure of what it does not implement.
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include "prm.h"
#include "mlx5_lm_erdma.h"
#include "erdma_test.h"

static char trace_path[] = "/tmp/test_erdma_trace_XXXXXX";

/* Whether this process may turn cap on (a test that drops it must get it back). */
static bool
erdma_cap_is_permitted(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	return (data[cap / 32].permitted >> (cap % 32)) & 1;
}

static struct ibv_context *
open_dev(bool devx)
{
	struct mlx5dv_context_attr attr = { .flags = devx ? MLX5DV_CONTEXT_FLAGS_DEVX : 0 };
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = 0;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_int_equal(n, 1);
	assert_string_equal(ibv_get_device_name(list[0]), "mlx5_0");
	assert_true(mlx5dv_is_supported(list[0]));
	ctx = mlx5dv_open_device(list[0], &attr);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

/* Trace records whose op is `op`, in order. */
static size_t
trace_ops(const char *op, json_t **recs, size_t max)
{
	return erdma_trace_ops(trace_path, op, recs, max);
}

static uint64_t
doorbell_bar_offset(struct ibv_context *ctx)
{
	struct erdma_cap_query *q = erdma_emulation_cap_query();

	assert_int_equal(mlx5dv_devx_general_cmd(ctx, q->in, sizeof(q->in), q->out,
						 sizeof(q->out)), 0);
	return erdma_doorbell_bar_offset(q);
}

/*
 * Linux devx.c devx_get_uid(): no DevX without MLX5DV_CONTEXT_FLAGS_DEVX,
 * except the whitelisted queries (QUERY_HCA_CAP...), which run under the
 * device's whitelist uid (mlx5_ib_devx_init creates it on any DevX device).
 */
static void
test_devx_needs_the_devx_flag(void **state)
{
	struct ibv_context *ctx = open_dev(false);
	struct erdma_cap_query *q = erdma_emulation_cap_query();
	uint8_t in[PRM_SIZE(alloc_transport_domain_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };

	assert_int_equal(mlx5dv_devx_general_cmd(ctx, q->in, sizeof(q->in), q->out,
						 sizeof(q->out)), 0);
	PRM_SET(cmd_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	assert_int_equal(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), EINVAL);
	memset(in, 0, sizeof(in));
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	errno = 0;
	assert_null(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * Linux devx.c devx_is_general_cmd(), devx_is_obj_modify_cmd(),
 * devx_is_valid_obj_id(): EINVAL before the firmware sees the mailbox.
 */
static void
test_kernel_rules_through_rdma_core(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(modify_rqt_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };
	struct mlx5dv_devx_obj *td;

	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	td = mlx5dv_devx_obj_create(ctx, in, PRM_SIZE(alloc_transport_domain_in), out,
				    sizeof(out));
	assert_non_null(td);
	memset(in, 0, sizeof(in));
	PRM_SET(query_special_contexts_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	assert_int_equal(mlx5dv_devx_general_cmd(ctx, in, 16, out, sizeof(out)), EINVAL);
	memset(in, 0, sizeof(in));
	PRM_SET(modify_rqt_in, in, opcode, PRM_CMD_MODIFY_RQT);
	PRM_SET(modify_rqt_in, in, rqtn, PRM_GET(create_out, out, id));
	assert_int_equal(mlx5dv_devx_obj_modify(td, in, sizeof(in), out, sizeof(out)), EINVAL);
	/* A command the firmware refuses: EREMOTEIO with its status in out. */
	memset(in, 0, sizeof(in));
	PRM_SET(cmd_in, in, opcode, 0xb99);
	assert_int_equal(mlx5dv_devx_general_cmd(ctx, in, 16, out, sizeof(out)), EREMOTEIO);
	assert_int_equal(PRM_GET(cmd_out, out, status), PRM_STATUS_BAD_OP);
	assert_int_equal(mlx5dv_devx_obj_destroy(td), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The PD and its null mr, as DPDK's mlx5 drivers get them. */
static void
test_pd_has_a_pdn_a_null_mr_and_is_busy_while_an_mkey_names_it(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct mlx5dv_pd dv_pd = { 0 };
	struct mlx5dv_obj obj = { .pd = { .in = pd, .out = &dv_pd } };
	struct ibv_mr *mr;
	static char buf[1 << 16];

	assert_non_null(pd);
	assert_int_equal(mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD), 0);
	assert_int_not_equal(dv_pd.pdn, 0);
	mr = ibv_alloc_null_mr(pd);
	assert_non_null(mr);
	assert_int_not_equal(mr->lkey, 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	/* The PD is busy while an mkey names it. */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * Linux devx.c devx_async_event_read(): the channel fd blocks unless the
 * program set O_NONBLOCK; then reading with nothing queued is EAGAIN. With
 * OMIT_EV_DATA an event is its cookie only.
 */
static void
test_event_channel_fd_blocking_unless_nonblock(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct mlx5dv_devx_event_channel *ch, *omit;
	union {
		struct mlx5dv_devx_async_event_hdr hdr;
		uint8_t raw[128];
	} ev;
	struct pollfd pfd;
	int fl;

	ch = mlx5dv_devx_create_event_channel(ctx, 0);
	assert_non_null(ch);
	fl = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fl & O_NONBLOCK, 0);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	/* The size is checked against a queued event only (devx_async_event_read). */
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev.hdr)), -1);
	assert_int_equal(errno, EAGAIN);
	omit = mlx5dv_devx_create_event_channel(ctx,
		MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
	assert_non_null(omit);
	assert_int_equal(fcntl(omit->fd, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(mlx5dv_devx_get_event(omit, &ev.hdr, sizeof(ev.hdr)), -1);
	assert_int_equal(errno, EAGAIN);
	mlx5dv_devx_destroy_event_channel(omit);
	mlx5dv_devx_destroy_event_channel(ch);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * What a read of the event channel returns is the kernel's (Linux devx.c
 * deliver_event, devx_async_event_read): the 8-byte cookie, then the whole
 * 64-byte EQE (include/linux/mlx5/device.h struct mlx5_eqe: type at byte
 * 1, data at byte 32; an OBJECT_CHANGE names its object in the
 * affiliated_event_header, mlx5_ifc.h: obj_type at data byte 2, obj_id at
 * 4): 72 bytes. A shorter buffer is EINVAL and the event stays queued.
 * An event the list cannot take is lost, and the next read, only that
 * one, fails with EOVERFLOW before any queued event.
 */
static void
test_event_is_the_cookie_and_the_whole_eqe(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)] = { 0 };
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	struct mlx5dv_devx_event_channel *ch = mlx5dv_devx_create_event_channel(ctx, 0);
	uint16_t oc = PRM_EVENT_OBJECT_CHANGE;
	union {
		struct mlx5dv_devx_async_event_hdr hdr;
		uint8_t raw[256];
	} ev;
	struct mlx5dv_devx_obj *obj;
	char req[128], reply[128];
	struct pollfd pfd;
	uint32_t id;
	int i;

	assert_non_null(ch);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	obj = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(obj);
	id = (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(oc), &oc, 0xc0ffee), 0);
	snprintf(req, sizeof(req), "event %#x %#x %u %#x", PRM_CMD_CREATE_GENERAL_OBJECT,
		 PRM_OBJ_VIRTIO_Q_COUNTERS, id, PRM_EVENT_OBJECT_CHANGE);
	ctl(req, reply, sizeof(reply));
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	/* 71 bytes: one short of an event. */
	errno = 0;
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, 8 + 63), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	memset(ev.raw, 0xa5, sizeof(ev.raw));
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), 72);
	assert_int_equal(ev.hdr.cookie, 0xc0ffee);
	assert_int_equal(ev.raw[8 + 1], PRM_EVENT_OBJECT_CHANGE);
	assert_int_equal(ev.raw[8 + 34] << 8 | ev.raw[8 + 35], PRM_OBJ_VIRTIO_Q_COUNTERS);
	assert_int_equal((uint32_t)ev.raw[8 + 36] << 24 | ev.raw[8 + 37] << 16 |
			 ev.raw[8 + 38] << 8 | ev.raw[8 + 39], id);
	assert_int_equal(ev.raw[8 + 64], 0xa5);        /* nothing past the EQE */
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	/* A list of 2 and a reader held back: the third event is lost. */
	ctl("evch_hold 2", reply, sizeof(reply));
	for (i = 0; i < 3; i++)
		ctl(req, reply, sizeof(reply));
	/* The library moves the device's events into its list on a thread of its own. */
	for (i = 0; i < 5000; i++) {
		ctl("evch_overflows", reply, sizeof(reply));
		if (strcmp(reply, "ok 0") != 0)
			break;
		usleep(1000);
	}
	assert_string_equal(reply, "ok 1");
	assert_int_equal(poll(&pfd, 1, 0), 0);
	ctl("evch_release", reply, sizeof(reply));
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), -1);
	assert_int_equal(errno, EOVERFLOW);
	for (i = 0; i < 2; i++) {
		/* The library's thread may still be moving the second one: wait for it. */
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), 72);
		assert_int_equal(ev.hdr.cookie, 0xc0ffee);
	}
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev.hdr, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	mlx5dv_devx_destroy_event_channel(ch);
	assert_int_equal(mlx5dv_devx_obj_destroy(obj), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* A VIRTIO_Q_COUNTERS object: a general object with nothing to set. */
static struct mlx5dv_devx_obj *
counters_obj(struct ibv_context *ctx)
{
	uint8_t in[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)] = { 0 };
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);

	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	return mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
}

/*
 * Linux devx.c is_valid_events: with cmd_hca_cap.event_cap, an object's
 * events other than completions must be in the device's
 * user_affiliated_events (device_event_cap); without it only the legacy
 * object events are (OBJECT_CHANGE is none of them); at most 16 events
 * per subscription (MAX_NUM_EVENTS), none past 255.
 */
static void
test_subscription_follows_the_event_caps(void **state)
{
	char path[] = "/tmp/test_erdma_profile_XXXXXX";
	struct ibv_context *ctx = open_dev(true);
	struct mlx5dv_devx_event_channel *ch = mlx5dv_devx_create_event_channel(ctx, 0);
	struct mlx5dv_devx_obj *obj = counters_obj(ctx);
	uint16_t oc = PRM_EVENT_OBJECT_CHANGE, tracer = 0x26, big = 0x127, many[17];
	FILE *f;
	int fd, i;

	assert_non_null(obj);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(oc), &oc, 1), 0);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(tracer), &tracer, 1),
			 EINVAL);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(big), &big, 1), EINVAL);
	for (i = 0; i < 17; i++)
		many[i] = oc;
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(many), many, 1), EINVAL);
	mlx5dv_devx_destroy_event_channel(ch);
	assert_int_equal(mlx5dv_devx_obj_destroy(obj), 0);
	assert_int_equal(ibv_close_device(ctx), 0);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{ \"name\": \"no-event-cap\", \"about\": \"test: no event_cap\", "
	      "\"cmd_slots\": 16, \"host_pin_parallel\": 32, \"commands\": {}, "
	      "\"caps\": { \"event_cap\": 0 } }\n", f);
	fclose(f);
	setenv("MLX5_LM_ERDMA_PROFILE", path, 1);
	ctx = open_dev(true);
	ch = mlx5dv_devx_create_event_channel(ctx, 0);
	obj = counters_obj(ctx);
	assert_non_null(obj);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(oc), &oc, 1), EINVAL);
	mlx5dv_devx_destroy_event_channel(ch);
	assert_int_equal(mlx5dv_devx_obj_destroy(obj), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	setenv("MLX5_LM_ERDMA_PROFILE", "fast", 1);
	unlink(path);
}

/*
 * A program that closes its context with a channel, a PD and a DevX object
 * still open: the channel's thread is stopped before the device goes, the
 * handles are freed (LeakSanitizer in the ASan build), the device object is
 * the emulator's leak report.
 */
static void
test_close_with_handles_still_open(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(alloc_transport_domain_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };

	assert_non_null(mlx5dv_devx_create_event_channel(ctx, 0));
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	assert_non_null(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)));
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * The library's own queries (mlx5_lm_erdma.h, not rdma-core's), found with
 * dlsym as dpdk-test-lm migrate finds them for the peer's devices: the cost
 * model's counters of an open device, and what closed contexts left alive.
 */
static void
test_private_queries_cost_stats_and_left_alive(void **state)
{
	mlx5_lm_erdma_cost_stats_t stats;
	mlx5_lm_erdma_left_alive_t left;
	uint8_t in[PRM_SIZE(alloc_transport_domain_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };
	struct mlx5_lm_erdma_stats s;
	struct ibv_context *ctx;
	unsigned long before;

	(void)state;
	stats = (mlx5_lm_erdma_cost_stats_t)dlsym(RTLD_DEFAULT, MLX5_LM_ERDMA_COST_STATS);
	left = (mlx5_lm_erdma_left_alive_t)dlsym(RTLD_DEFAULT, MLX5_LM_ERDMA_LEFT_ALIVE);
	assert_non_null(stats);
	assert_non_null(left);
	assert_int_equal(stats("mlx5_0", &s), -ENODEV);
	/* A profile that charges: the counters must move. */
	setenv("MLX5_LM_ERDMA_PROFILE", "cx6dx", 1);
	ctx = open_dev(true);
	setenv("MLX5_LM_ERDMA_PROFILE", "fast", 1);
	assert_int_equal(stats("mlx5_0", &s), 0);
	assert_int_equal(s.contexts, 1);
	assert_int_equal(stats("mlx5_7", &s), -ENODEV);
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	assert_non_null(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)));
	assert_int_equal(stats("mlx5_0", &s), 0);
	assert_true(s.cmds > 0);
	assert_true(s.model_us > 0);
	/* Closed with the transport domain alive: one object left, counted. */
	before = left();
	assert_int_equal(ibv_close_device(ctx), 0);
	assert_int_equal(left(), before + 1);
	assert_int_equal(stats("mlx5_0", &s), -ENODEV);
}

/* Linux devx.c is_valid_events(): completions only on a CQ. */
static void
test_subscription_checks_the_event_type(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(alloc_transport_domain_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };
	struct mlx5dv_devx_event_channel *ch = mlx5dv_devx_create_event_channel(ctx, 0);
	struct mlx5dv_devx_obj *td;
	uint16_t comp = PRM_EVENT_COMPLETION;

	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	td = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(td);
	assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, td, sizeof(comp), &comp, 1),
			 EINVAL);
	mlx5dv_devx_destroy_event_channel(ch);
	assert_int_equal(mlx5dv_devx_obj_destroy(td), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * The VAR page is mmap-able from cmd_fd at mmap_off and what is written
 * there reaches the emulator: at the in-page part of doorbell_bar_offset
 * it is a doorbell; elsewhere in the page the emulator refuses it.
 */
static void
test_var_page_doorbell_reaches_the_emulator(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint64_t off = doorbell_bar_offset(ctx);
	long page = sysconf(_SC_PAGESIZE);
	struct mlx5dv_var *var = mlx5dv_alloc_var(ctx, 0);
	volatile uint8_t *db;
	json_t *recs[8];
	size_t n;

	assert_non_null(var);
	assert_int_equal(var->length, page);
	db = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		  var->mmap_off);
	assert_true(db != MAP_FAILED);
	__atomic_store_n((volatile uint32_t *)(db + (off & (page - 1))), 5, __ATOMIC_RELAXED);
	/* Freeing the page forwards what was written before it: no waiting. */
	mlx5dv_free_var(var);
	/* The device's one VAR is free again once unmapped too (test_var_table_...). */
	munmap((void *)db, page);
	var = mlx5dv_alloc_var(ctx, 0);
	assert_non_null(var);
	db = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		  var->mmap_off);
	assert_true(db != MAP_FAILED);
	/* Below doorbell_bar_offset. */
	__atomic_store_n((volatile uint32_t *)(db + 0), 6, __ATOMIC_RELAXED);
	mlx5dv_free_var(var);
	munmap((void *)db, page);
	n = trace_ops("DOORBELL", recs, 8);
	assert_int_equal(n, 2);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "value")), 5);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "addr")), off);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "status")), 0);
	assert_int_equal(json_integer_value(json_object_get(recs[1], "value")), 6);
	assert_int_equal(json_integer_value(json_object_get(recs[1], "status")), -1);
	while (n > 0)
		json_decref(recs[--n]);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * The device's VAR table as the kernel keeps it (Linux main.c
 * mlx5_ib_init_var_table, alloc_var_entry, mlx5_ib_mmap_free): sized from
 * log_doorbell_bar_size (4 KiB units) over log_doorbell_stride, one entry
 * on the emulated CX6 Dx, shared by the device's contexts; full, ENOSPC;
 * an entry freed (or its context closed) stays taken while any mapping of
 * it is left, a front end's included.
 */
static void
test_var_table_entries_live_while_mapped(void **state)
{
	struct ibv_context *ctx = open_dev(true), *ctx2;
	long page = sysconf(_SC_PAGESIZE);
	struct mlx5dv_var *var = mlx5dv_alloc_var(ctx, 0), *var2;
	void *db;

	assert_non_null(var);
	assert_int_equal(var->page_id, 0);
	errno = 0;
	assert_null(mlx5dv_alloc_var(ctx, 0));
	assert_int_equal(errno, ENOSPC);
	/* "QEMU" maps the notifier page; the driver frees its VAR and closes. */
	db = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		  var->mmap_off);
	assert_true(db != MAP_FAILED);
	mlx5dv_free_var(var);
	assert_null(mlx5dv_alloc_var(ctx, 0));
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(ibv_close_device(ctx), 0);
	/* A new context of the same device: still taken while the mapping is. */
	ctx2 = open_dev(true);
	errno = 0;
	assert_null(mlx5dv_alloc_var(ctx2, 0));
	assert_int_equal(errno, ENOSPC);
	munmap(db, (size_t)page);
	var2 = mlx5dv_alloc_var(ctx2, 0);
	assert_non_null(var2);
	assert_int_equal(var2->page_id, 0);
	mlx5dv_free_var(var2);
	assert_int_equal(ibv_close_device(ctx2), 0);
}

/*
 * UAR pages: mapped at base_addr, mmap-able at mmap_off; a 64-bit write at
 * 0x20 (the CQ arm doorbell) reaches the emulator. Completion EQs: one per
 * completion vector, EINVAL beyond (Linux devx.c QUERY_EQN, mlx5_vector2eqn).
 */
static void
test_uar_doorbell_reaches_the_emulator_and_eqns_are_per_vector(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	/* A BF page is the caller's own: its free releases it (the NC page is shared). */
	struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	json_t *recs[4];
	uint32_t eqn = 0;
	size_t n;

	assert_non_null(uar);
	assert_ptr_equal((uint8_t *)uar->reg_addr - (uint8_t *)uar->base_addr, 0x800);
	/* Drivers store the doorbell register big-endian: the emulator gets its value. */
	__atomic_store_n((volatile uint64_t *)((uint8_t *)uar->base_addr + 0x20),
			 htobe64(0x1000000700000abcull), __ATOMIC_RELAXED);
	mlx5dv_devx_free_uar(uar);  /* forwards what was written first */
	n = trace_ops("UAR_WRITE", recs, 4);
	assert_int_equal(n, 1);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "addr")), 0x20);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "value")),
			 0x1000000700000abcull);
	json_decref(recs[0]);
	assert_true(ctx->num_comp_vectors >= 1);
	assert_int_equal(mlx5dv_devx_query_eqn(ctx, 0, &eqn), 0);
	assert_int_equal(mlx5dv_devx_query_eqn(ctx, (uint32_t)ctx->num_comp_vectors, &eqn),
			 EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The trace's line number of the first record of op with value, or -1. */
static long
trace_line_of(const char *op, uint64_t value)
{
	FILE *f = fopen(trace_path, "r");
	static char line[65536];
	long n = 0, at = -1;

	assert_non_null(f);
	while (at < 0 && fgets(line, sizeof(line), f) != NULL) {
		json_t *j = json_loads(line, 0, NULL);

		assert_non_null(j);
		if (strcmp(json_string_value(json_object_get(j, "op")), op) == 0 &&
		    (uint64_t)json_integer_value(json_object_get(j, "value")) == value)
			at = n;
		json_decref(j);
		n++;
	}
	fclose(f);
	return at;
}

/*
 * One function's posted writes reach the device in order (PCIe): a CQ arm
 * written to a UAR page before a doorbell on the VAR page reaches the
 * emulator first, whichever page the watcher would have scanned first.
 * Out of order, the kick's completion could come before the arm it was
 * meant to raise an event for. The VAR page is taken first so that it sits
 * in the lower slot, the one a scan in slot order reads first.
 */
static void
test_uar_write_before_a_doorbell_reaches_the_emulator_first(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint64_t off = doorbell_bar_offset(ctx);
	long page = sysconf(_SC_PAGESIZE);
	struct mlx5dv_var *var = mlx5dv_alloc_var(ctx, 0);
	struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	const uint64_t arm = 0x2000000500000123ull;
	const uint32_t kick = 9;
	volatile uint8_t *db;
	long arm_at, kick_at;

	assert_non_null(var);
	assert_non_null(uar);
	db = mmap(NULL, var->length, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		  var->mmap_off);
	assert_true(db != MAP_FAILED);
	/* Atomic stores, as the PMD's (devx_rdma.c): the watcher reads the pages meanwhile. */
	__atomic_store_n((volatile uint64_t *)((uint8_t *)uar->base_addr + 0x20), htobe64(arm),
			 __ATOMIC_RELAXED);
	__atomic_store_n((volatile uint32_t *)(db + (off & (page - 1))), kick, __ATOMIC_RELAXED);
	/* The VAR's free forwards its doorbell now (and, before it, the UAR's arm). */
	mlx5dv_free_var(var);
	munmap((void *)db, page);
	mlx5dv_devx_free_uar(uar);
	arm_at = trace_line_of("UAR_WRITE", arm);
	kick_at = trace_line_of("DOORBELL", kick);
	assert_true(arm_at >= 0);
	assert_true(kick_at >= 0);
	assert_true(arm_at < kick_at);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * Linux devx.c devx_umem_get(): access as for an MR; a page size must fit;
 * pages that cannot be pinned (a shared mapping past the end of its file)
 * fail in ib_umem_get with EFAULT, before any firmware command.
 */
static void
test_umem_registration_checks_access_page_size_and_pinning(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	static char buf[1 << 16] __attribute__((aligned(4096)));
	struct mlx5dv_devx_umem_in in = { .addr = buf, .size = sizeof(buf),
					  .access = IBV_ACCESS_LOCAL_WRITE,
					  .pgsz_bitmap = 1ull << 12 };
	struct mlx5dv_devx_umem *u;

	assert_null(mlx5dv_devx_umem_reg(ctx, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	/* Only the three flags devx_umem_get() passes to uverbs_get_flags32(). */
	assert_null(mlx5dv_devx_umem_reg(ctx, buf, sizeof(buf),
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	assert_null(mlx5dv_devx_umem_reg(ctx, buf, sizeof(buf),
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
	assert_int_equal(errno, EINVAL);
	assert_null(mlx5dv_devx_umem_reg(ctx, buf, sizeof(buf),
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND));
	assert_int_equal(errno, EINVAL);
	assert_null(mlx5dv_devx_umem_reg(ctx, buf, 0, IBV_ACCESS_LOCAL_WRITE));
	u = mlx5dv_devx_umem_reg_ex(ctx, &in);
	assert_non_null(u);
	assert_int_equal(mlx5dv_devx_umem_dereg(u), 0);
	in.pgsz_bitmap = 1ull << 8;
	assert_null(mlx5dv_devx_umem_reg_ex(ctx, &in));
	assert_int_equal(errno, EINVAL);
	{
		long page = sysconf(_SC_PAGESIZE);
		int fd = memfd_create("erdma-short", MFD_CLOEXEC);
		void *p;

		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, page), 0);
		p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(p != MAP_FAILED);
		errno = 0;
		assert_null(mlx5dv_devx_umem_reg(ctx, p, 2 * (size_t)page,
						 IBV_ACCESS_LOCAL_WRITE));
		assert_int_equal(errno, EFAULT);
		munmap(p, 2 * (size_t)page);
		close(fd);
	}
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* A match buffer of one fte_match_param (mlx5dv_flow_match_parameters). */
static struct mlx5dv_flow_match_parameters *
match_params(void)
{
	struct mlx5dv_flow_match_parameters *p = calloc(1, sizeof(*p) +
							PRM_SIZE(fte_match_param));

	assert_non_null(p);
	p->match_sz = PRM_SIZE(fte_match_param);
	return p;
}

static void *
outer(struct mlx5dv_flow_match_parameters *p)
{
	return PRM_ADDR(fte_match_param, p->match_buf, outer_headers);
}

/* A matcher attribute of the outer headers with mask, priority 2, table type ft. */
static struct mlx5dv_flow_matcher_attr
matcher_attr(struct mlx5dv_flow_match_parameters *mask, enum mlx5dv_flow_table_type ft)
{
	struct mlx5dv_flow_matcher_attr a = {
		.type = IBV_FLOW_ATTR_NORMAL,
		.priority = 2,
		.match_criteria_enable = PRM_MATCH_CRITERIA_ENABLE_OUTER_HEADERS,
		.match_mask = mask,
		.comp_mask = MLX5DV_FLOW_MATCHER_MASK_FT_TYPE,
		.ft_type = ft,
	};

	return a;
}

/* A NIC RX flow table made through DevX. */
static struct mlx5dv_devx_obj *
nic_rx_table(struct ibv_context *ctx)
{
	uint8_t in[PRM_SIZE(create_flow_table_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };

	PRM_SET(create_flow_table_in, in, opcode, PRM_CMD_CREATE_FLOW_TABLE);
	PRM_SET(create_flow_table_in, in, table_type, PRM_FLOW_TABLE_TYPE_NIC_RX);
	return mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
}

/*
 * The NIC RX root through mlx5_ib's flow methods (Linux drivers/infiniband/
 * hw/mlx5/fs.c), the only way into it (devx.c allows no SET_FLOW_TABLE_ROOT):
 * a matcher (NIC RX, priority, criteria and mask) and a rule (value, one
 * DEST_DEVX naming a TIR or a flow table) become one root rule of the
 * emulator. The rule holds its table (the firmware refuses to destroy it),
 * the matcher is busy while a rule uses it, a value outside the mask
 * (fs_core.c check_valid_spec) and a destination of another kind are
 * refused, and the rule is traced.
 */
static void
test_root_flow_rules_through_rdma_core(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct mlx5dv_flow_match_parameters *mask = match_params(), *value = match_params();
	struct mlx5dv_flow_matcher_attr mattr = matcher_attr(mask, MLX5DV_FLOW_TABLE_TYPE_NIC_TX);
	uint8_t in[PRM_SIZE(create_flow_table_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };
	struct mlx5dv_flow_action_attr act = { .type = MLX5DV_FLOW_ACTION_DEST_DEVX };
	struct mlx5dv_devx_obj *ft, *td;
	struct mlx5dv_flow_matcher *m;
	struct ibv_flow *flow;
	json_t *recs[4];
	size_t n;

	PRM_SET(fte_match_set_lyr_2_4, outer(mask), ip_version, 0xf);
	PRM_SET(fte_match_set_lyr_2_4, outer(value), ip_version, 4);
	/* Only NIC RX matchers are modelled: any other table type fails loudly. */
	assert_null(mlx5dv_create_flow_matcher(ctx, &mattr));
	assert_int_equal(errno, EOPNOTSUPP);
	mattr.ft_type = MLX5DV_FLOW_TABLE_TYPE_NIC_RX;
	m = mlx5dv_create_flow_matcher(ctx, &mattr);
	assert_non_null(m);

	ft = nic_rx_table(ctx);
	assert_non_null(ft);
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	td = mlx5dv_devx_obj_create(ctx, in, PRM_SIZE(alloc_transport_domain_in), out,
				    sizeof(out));
	assert_non_null(td);

	/* DEST_DEVX names a TIR or a flow table, nothing else. */
	act.obj = td;
	assert_null(mlx5dv_create_flow(m, value, 1, &act));
	assert_int_equal(errno, EINVAL);
	/* A value bit outside the mask. */
	act.obj = ft;
	PRM_SET(fte_match_set_lyr_2_4, outer(value), tcp_dport, 80);
	assert_null(mlx5dv_create_flow(m, value, 1, &act));
	assert_int_equal(errno, EINVAL);
	PRM_SET(fte_match_set_lyr_2_4, outer(value), tcp_dport, 0);

	flow = mlx5dv_create_flow(m, value, 1, &act);
	assert_non_null(flow);
	assert_int_not_equal(mlx5dv_devx_obj_destroy(ft), 0);
	assert_int_equal(mlx5dv_destroy_flow_matcher(m), EBUSY);
	assert_int_equal(ibv_destroy_flow(flow), 0);
	assert_int_equal(mlx5dv_destroy_flow_matcher(m), 0);
	assert_int_equal(mlx5dv_devx_obj_destroy(ft), 0);
	assert_int_equal(mlx5dv_devx_obj_destroy(td), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	free(mask);
	free(value);

	n = trace_ops("ROOT_FLOW_DESTROY", recs, 4);
	assert_int_equal(n, 1);
	assert_int_equal(json_integer_value(json_object_get(recs[0], "status")), 0);
	json_decref(recs[0]);
}

/* Turn capability cap on or off in the effective set (it stays permitted). */
static void
cap_effective(int cap, bool on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	assert_int_equal(syscall(SYS_capget, &hdr, data), 0);
	if (on)
		data[cap / 32].effective |= 1u << (cap % 32);
	else
		data[cap / 32].effective &= ~(1u << (cap % 32));
	assert_int_equal(syscall(SYS_capset, &hdr, data), 0);
}

/*
 * The kernel's privilege checks: a DevX context and a
 * flow need CAP_NET_RAW (devx.c mlx5_ib_devx_create, fs.c
 * MLX5_IB_METHOD_CREATE_FLOW: EPERM); pinned pages of umems and MRs count
 * against RLIMIT_MEMLOCK per process unless CAP_IPC_LOCK (core/umem.c
 * ib_umem_get: ENOMEM), and are given back at deregistration.
 */
static void
test_privileges_of_devx_flows_and_pinning(void **state)
{
	struct ibv_context *ctx;
	struct mlx5dv_flow_match_parameters *mask = match_params(), *value = match_params();
	struct mlx5dv_flow_matcher_attr mattr = matcher_attr(mask, MLX5DV_FLOW_TABLE_TYPE_NIC_RX);
	struct mlx5dv_flow_action_attr act = { .type = MLX5DV_FLOW_ACTION_DEST_DEVX };
	struct mlx5dv_flow_matcher *m;
	struct mlx5dv_devx_umem *u, *small;
	struct mlx5dv_devx_obj *ft;
	struct ibv_device **list;
	struct rlimit saved, rl;
	struct ibv_flow *flow;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	size_t len = 1 << 20;
	char *buf = aligned_alloc(4096, len);
	int n;

	(void)state;
	if (!erdma_cap_is_permitted(CAP_NET_RAW) || !erdma_cap_is_permitted(CAP_IPC_LOCK))
		skip();
	assert_non_null(buf);
	/* DevX without CAP_NET_RAW. */
	cap_effective(CAP_NET_RAW, false);
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	errno = 0;
	assert_null(mlx5dv_open_device(list[0], &(struct mlx5dv_context_attr){
		.flags = MLX5DV_CONTEXT_FLAGS_DEVX }));
	assert_int_equal(errno, EPERM);
	ibv_free_device_list(list);
	cap_effective(CAP_NET_RAW, true);

	/* A flow without CAP_NET_RAW. */
	ctx = open_dev(true);
	m = mlx5dv_create_flow_matcher(ctx, &mattr);
	assert_non_null(m);
	ft = nic_rx_table(ctx);
	assert_non_null(ft);
	act.obj = ft;
	cap_effective(CAP_NET_RAW, false);
	errno = 0;
	assert_null(mlx5dv_create_flow(m, value, 1, &act));
	assert_int_equal(errno, EPERM);
	cap_effective(CAP_NET_RAW, true);
	flow = mlx5dv_create_flow(m, value, 1, &act);
	assert_non_null(flow);
	assert_int_equal(ibv_destroy_flow(flow), 0);
	assert_int_equal(mlx5dv_destroy_flow_matcher(m), 0);
	assert_int_equal(mlx5dv_devx_obj_destroy(ft), 0);

	/* Pinning beyond a 256 KiB memlock limit without CAP_IPC_LOCK. */
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &saved), 0);
	rl = saved;
	rl.rlim_cur = 256 * 1024;
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	cap_effective(CAP_IPC_LOCK, false);
	errno = 0;
	assert_null(mlx5dv_devx_umem_reg(ctx, buf, len, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(ibv_reg_mr_iova(pd, buf, len, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, ENOMEM);
	/* What fits is pinned and counted: a second one no longer fits, until it goes. */
	small = mlx5dv_devx_umem_reg(ctx, buf, 192 * 1024, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(small);
	assert_null(ibv_reg_mr_iova(pd, buf, 128 * 1024, 0, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(mlx5dv_devx_umem_dereg(small), 0);
	mr = ibv_reg_mr_iova(pd, buf, 128 * 1024, 0, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* CAP_IPC_LOCK: no limit. */
	cap_effective(CAP_IPC_LOCK, true);
	u = mlx5dv_devx_umem_reg(ctx, buf, len, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(u);
	assert_int_equal(mlx5dv_devx_umem_dereg(u), 0);
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &saved), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	free(mask);
	free(value);
	free(buf);
}

/*
 * Linux core/uverbs_cmd.c ib_uverbs_reg_mr: an address and an iova at
 * different offsets within a page are EINVAL; the same offset is fine
 * whatever the bits above it.
 */
static void
test_reg_mr_iova_offsets_agree_within_a_page(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[1 << 17] __attribute__((aligned(4096)));
	struct ibv_mr *mr;

	assert_non_null(pd);
	errno = 0;
	assert_null(ibv_reg_mr_iova(pd, buf, sizeof(buf), 0x10800, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr_iova(pd, buf + 8, 4096, 0x7000, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);
	mr = ibv_reg_mr_iova(pd, buf + 8, 4096, 0x7008, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * Linux devx.c OBJ_CREATE, OBJ_MODIFY, OBJ_QUERY: EINVAL when
 * general_obj_in_cmd_hdr.vhca_tunnel_id is not 0, before the firmware.
 */
static void
test_vhca_tunnel_id_refused_on_object_commands(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	uint8_t out[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	struct mlx5dv_devx_obj *obj;

	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	PRM_SET(general_obj_in_cmd_hdr, hdr, vhca_tunnel_id, 1);
	errno = 0;
	assert_null(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)));
	assert_int_equal(errno, EINVAL);
	PRM_SET(general_obj_in_cmd_hdr, hdr, vhca_tunnel_id, 0);
	obj = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(obj);
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_id,
		PRM_GET(general_obj_out_cmd_hdr, out, obj_id));
	assert_int_equal(mlx5dv_devx_obj_query(obj, in, sizeof(in), out, sizeof(out)), 0);
	PRM_SET(general_obj_in_cmd_hdr, hdr, vhca_tunnel_id, 0x8000);
	assert_int_equal(mlx5dv_devx_obj_query(obj, in, sizeof(in), out, sizeof(out)), EINVAL);
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	assert_int_equal(mlx5dv_devx_obj_modify(obj, in, sizeof(in), out, sizeof(out)), EINVAL);
	assert_int_equal(mlx5dv_devx_obj_destroy(obj), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * Linux devx.c devx_handle_mkey_create: an MTT mkey over a DevX umem is
 * passed on with mkey_umem_valid set (DPDK regex/mlx5 creates such mkeys);
 * the kernel refuses only a mailbox shorter than the mkey context.
 */
static void
test_mkey_over_a_devx_umem_is_created(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct mlx5dv_pd dv_pd = { 0 };
	struct mlx5dv_obj dv = { .pd = { .in = pd, .out = &dv_pd } };
	static char buf[1 << 16] __attribute__((aligned(4096)));
	uint8_t in[PRM_SIZE(create_mkey_in)] = { 0 }, out[PRM_SIZE(create_mkey_out)] = { 0 };
	void *mkc = PRM_ADDR(create_mkey_in, in, mkc);
	struct mlx5dv_devx_umem *u;
	struct mlx5dv_devx_obj *mk;

	assert_non_null(pd);
	assert_int_equal(mlx5dv_init_obj(&dv, MLX5DV_OBJ_PD), 0);
	u = mlx5dv_devx_umem_reg(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(u);
	PRM_SET(create_mkey_in, in, opcode, PRM_CMD_CREATE_MKEY);
	PRM_SET(mkc, mkc, access_mode_1_0, PRM_MKC_ACCESS_MODE_MTT);
	PRM_SET(mkc, mkc, lr, 1);
	PRM_SET(mkc, mkc, lw, 1);
	PRM_SET(mkc, mkc, pd, dv_pd.pdn);
	PRM_SET(mkc, mkc, start_addr, (uintptr_t)buf);
	PRM_SET(mkc, mkc, len, sizeof(buf));
	PRM_SET(mkc, mkc, log_page_size, 12);
	PRM_SET(create_mkey_in, in, mkey_umem_id, u->umem_id);
	mk = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(mk);
	/* The mkey holds the umem. */
	assert_int_equal(mlx5dv_devx_umem_dereg(u), EBUSY);
	assert_int_equal(mlx5dv_devx_obj_destroy(mk), 0);
	assert_int_equal(mlx5dv_devx_umem_dereg(u), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/*
 * rdma-core 44 _mlx5dv_devx_alloc_uar: NC is the context's one shared page
 * (mlx5_get_singleton_nc_uar), whose free does nothing (nc_mode) and which
 * goes with the context; BF is a page of its own each time; other flags
 * (NC_DEDICATED, 1 << 31, came with rdma-core 45) are EOPNOTSUPP.
 */
static void
test_nc_uar_is_the_contexts_one_page(void **state)
{
	struct ibv_context *ctx = open_dev(true), *other = open_dev(true);
	mlx5_lm_erdma_left_alive_t left =
		(mlx5_lm_erdma_left_alive_t)dlsym(RTLD_DEFAULT, MLX5_LM_ERDMA_LEFT_ALIVE);
	struct mlx5dv_devx_uar *n1, *n2, *n3, *b1, *b2;
	unsigned long before;

	assert_non_null(left);
	before = left();
	n1 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	n2 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	assert_non_null(n1);
	assert_ptr_equal(n1, n2);
	/* Freeing it does nothing: the next request gets the same page. */
	mlx5dv_devx_free_uar(n1);
	n3 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	assert_ptr_equal(n3, n1);
	assert_int_equal(n3->page_id, n1->page_id);
	b1 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	b2 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	assert_non_null(b1);
	assert_non_null(b2);
	assert_int_not_equal(b1->page_id, b2->page_id);
	assert_int_not_equal(b1->page_id, n1->page_id);
	errno = 0;
	assert_null(mlx5dv_devx_alloc_uar(ctx, 1u << 31));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(mlx5dv_devx_alloc_uar(ctx, 2));
	assert_int_equal(errno, EOPNOTSUPP);
	/* Another context has a page of its own. */
	n2 = mlx5dv_devx_alloc_uar(other, MLX5DV_UAR_ALLOC_TYPE_NC);
	assert_non_null(n2);
	assert_ptr_not_equal(n2, n1);
	mlx5dv_devx_free_uar(b1);
	mlx5dv_devx_free_uar(b2);
	mlx5dv_devx_free_uar(n1);
	/* The NC page goes with the context: nothing is left alive. */
	assert_int_equal(ibv_close_device(ctx), 0);
	assert_int_equal(ibv_close_device(other), 0);
	assert_int_equal(left(), before);
}

/*
 * Linux devx.c deliver_event: with OMIT_EV_DATA a subscription has at most
 * one event queued. Per subscription: two objects subscribed with the same
 * cookie queue one event each; a second event of one of them merges.
 */
static void
test_omitted_events_merge_per_subscription(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	struct mlx5dv_devx_event_channel *ch = mlx5dv_devx_create_event_channel(ctx,
		MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA);
	uint8_t in[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)] = { 0 };
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	uint16_t oc = PRM_EVENT_OBJECT_CHANGE;
	struct mlx5dv_devx_async_event_hdr ev;
	struct mlx5dv_devx_obj *obj[2];
	char req[2][128], reply[128];
	struct pollfd pfd;
	int i;

	assert_non_null(ch);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	for (i = 0; i < 2; i++) {
		obj[i] = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
		assert_non_null(obj[i]);
		assert_int_equal(mlx5dv_devx_subscribe_devx_event(ch, obj[i], sizeof(oc), &oc, 7),
				 0);
		snprintf(req[i], sizeof(req[i]), "event %#x %#x %u %#x",
			 PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_Q_COUNTERS,
			 (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id),
			 PRM_EVENT_OBJECT_CHANGE);
	}
	/* All three reach the library's list together: none is read in between. */
	ctl("evch_hold 8", reply, sizeof(reply));
	ctl(req[0], reply, sizeof(reply));
	ctl(req[1], reply, sizeof(reply));
	ctl(req[0], reply, sizeof(reply));
	ctl("evch_release", reply, sizeof(reply));
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	usleep(200000); /* the library's thread moves the rest */
	for (i = 0; i < 2; i++) {
		assert_int_equal(mlx5dv_devx_get_event(ch, &ev, sizeof(ev)), 8);
		assert_int_equal(ev.cookie, 7);
	}
	errno = 0;
	assert_int_equal(mlx5dv_devx_get_event(ch, &ev, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	mlx5dv_devx_destroy_event_channel(ch);
	for (i = 0; i < 2; i++)
		assert_int_equal(mlx5dv_devx_obj_destroy(obj[i]), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* What the library does not implement names itself and fails. */
/*
 * mlx5dv_dr_* on a device without software steering, as rdma-core's
 * providers/mlx5 does it: domain type above FDB EINVAL (dr_domain.c),
 * level other than 0 EOPNOTSUPP (dr_table.c), a root matcher is the
 * kernel's flow matcher (mask bounded by fte_match_param: EINVAL),
 * dest_devx_tir of an object that is no TIR EINVAL (dr_action.c), and
 * users counted: EBUSY while a table holds a matcher or a domain a table.
 * Rules to TIRs: integration/peer (DPDK's vdpa/mlx5, 7 root rules).
 */
static void
test_dr_root_nic_rx_as_rdma_core_without_sw_steering(void **state)
{
	struct ibv_context *ctx = open_dev(true);
	uint8_t in[PRM_SIZE(alloc_transport_domain_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };
	struct {
		struct mlx5dv_flow_match_parameters p;
		uint8_t buf[PRM_SIZE(fte_match_param) + 8];
	} mask = { .p.match_sz = PRM_SIZE(fte_match_param) };
	struct mlx5dv_dr_domain *dmn;
	struct mlx5dv_dr_table *tbl;
	struct mlx5dv_dr_matcher *m;
	struct mlx5dv_devx_obj *td;

	(void)state;
	errno = 0;
	assert_null(mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_FDB + 1));
	assert_int_equal(errno, EINVAL);
	dmn = mlx5dv_dr_domain_create(ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
	assert_non_null(dmn);
	errno = 0;
	assert_null(mlx5dv_dr_table_create(dmn, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	tbl = mlx5dv_dr_table_create(dmn, 0);
	assert_non_null(tbl);
	assert_int_equal(mlx5dv_dr_domain_destroy(dmn), EBUSY);
	/* Outer ip_version, as DPDK's vdpa/mlx5 matches it. */
	PRM_SET(fte_match_set_lyr_2_4, PRM_ADDR(fte_match_param, mask.p.match_buf, outer_headers),
		ip_version, 0xf);
	m = mlx5dv_dr_matcher_create(tbl, 6, 1, &mask.p);
	assert_non_null(m);
	assert_int_equal(mlx5dv_dr_table_destroy(tbl), EBUSY);
	mask.p.match_sz = PRM_SIZE(fte_match_param) + 8;
	errno = 0;
	assert_null(mlx5dv_dr_matcher_create(tbl, 6, 1, &mask.p));
	assert_int_equal(errno, EINVAL);
	PRM_SET(alloc_transport_domain_in, in, opcode, PRM_CMD_ALLOC_TRANSPORT_DOMAIN);
	td = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(td);
	errno = 0;
	assert_null(mlx5dv_dr_action_create_dest_devx_tir(td));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(mlx5dv_devx_obj_destroy(td), 0);
	assert_int_equal(mlx5dv_dr_matcher_destroy(m), 0);
	assert_int_equal(mlx5dv_dr_table_destroy(tbl), 0);
	assert_int_equal(mlx5dv_dr_domain_destroy(dmn), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void
test_unimplemented_functions_fail_loudly(void **state)
{
	struct ibv_context *ctx = open_dev(true);

	errno = 0;
	assert_null(ibv_create_comp_channel(ctx));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devx_needs_the_devx_flag),
		cmocka_unit_test(test_kernel_rules_through_rdma_core),
		cmocka_unit_test(test_pd_has_a_pdn_a_null_mr_and_is_busy_while_an_mkey_names_it),
		cmocka_unit_test(test_event_channel_fd_blocking_unless_nonblock),
		cmocka_unit_test(test_subscription_checks_the_event_type),
		cmocka_unit_test(test_event_is_the_cookie_and_the_whole_eqe),
		cmocka_unit_test(test_subscription_follows_the_event_caps),
		cmocka_unit_test(test_close_with_handles_still_open),
		cmocka_unit_test(test_private_queries_cost_stats_and_left_alive),
		cmocka_unit_test(test_var_page_doorbell_reaches_the_emulator),
		cmocka_unit_test(test_var_table_entries_live_while_mapped),
		cmocka_unit_test(test_uar_doorbell_reaches_the_emulator_and_eqns_are_per_vector),
		cmocka_unit_test(test_uar_write_before_a_doorbell_reaches_the_emulator_first),
		cmocka_unit_test(test_umem_registration_checks_access_page_size_and_pinning),
		cmocka_unit_test(test_root_flow_rules_through_rdma_core),
		cmocka_unit_test(test_dr_root_nic_rx_as_rdma_core_without_sw_steering),
		cmocka_unit_test(test_privileges_of_devx_flows_and_pinning),
		cmocka_unit_test(test_reg_mr_iova_offsets_agree_within_a_page),
		cmocka_unit_test(test_vhca_tunnel_id_refused_on_object_commands),
		cmocka_unit_test(test_mkey_over_a_devx_umem_is_created),
		cmocka_unit_test(test_nc_uar_is_the_contexts_one_page),
		cmocka_unit_test(test_omitted_events_merge_per_subscription),
		cmocka_unit_test(test_unimplemented_functions_fail_loudly),
	};
	int rc;

	erdma_test_env(trace_path);
	setenv("MLX5_LM_ERDMA_DEVICES", "1", 1);
	unsetenv("MLX5_LM_ERDMA_SUMMARY");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	erdma_test_env_done(trace_path);
	return rc;
}
