/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DevX transport's rdma back end (devx_rdma.c), unchanged, on the
 * emulated rdma-core: meson runs this test with build/emu-rdma first on
 * LD_LIBRARY_PATH, so libibverbs.so.1 and libmlx5.so.1 are the emulated
 * ones, which keep the kernel's rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "prm.h"
#include "devx.h"
#include "erdma_test.h"

static char trace_path[] = "/tmp/test_rdma_backend_XXXXXX";

static struct devx_ctx *
open_rdma(void)
{
	struct devx_open_params p = { .name = "rdma0", .ibdev = "mlx5_0" };
	struct devx_ctx *ctx = NULL;
	char err[256] = "";

	assert_int_equal(devx_open(&p, &ctx, err, sizeof(err)), 0);
	assert_false(devx_is_emulated(ctx));
	return ctx;
}

/* On rdma: the PD from ibv_alloc_pd (pdn from mlx5dv_init_obj) and its null mr. */
static void
test_rdma_pd_number_and_null_mkey_come_from_rdma_core(void **state)
{
	struct devx_ctx *ctx = open_rdma();
	struct devx_pd *pd = devx_pd_alloc(ctx);

	assert_non_null(pd);
	assert_int_not_equal(devx_pd_id(pd), 0);
	assert_int_not_equal(devx_pd_null_mkey(pd), 0);
	assert_int_equal(devx_pd_free(pd), 0);
	assert_int_equal(devx_close(ctx), 0);
}

/*
 * The kernel's VAR mapping starts at the doorbell page, so the doorbell
 * is at the in-page part of doorbell_bar_offset. The emulated device's
 * offset is not page aligned: writing at mmio + doorbell_bar_offset would
 * land beyond the mapped page.
 */
static void
test_doorbell_lands_on_the_doorbell(void **state)
{
	struct devx_ctx *ctx = open_rdma();
	struct erdma_cap_query *q = erdma_emulation_cap_query();
	struct devx_db *db;
	json_t *recs[4];
	uint64_t off;
	size_t i, n;

	assert_int_equal(devx_cmd(ctx, q->in, sizeof(q->in), q->out, sizeof(q->out)), 0);
	off = erdma_doorbell_bar_offset(q);
	db = devx_db_alloc(ctx);
	assert_non_null(db);
	assert_int_not_equal(off & 0xfff, 0);
	devx_db_ring(db, (uint32_t)off, 3);
	/* Freeing the page forwards what was written on it: no waiting. */
	devx_db_free(db);
	n = erdma_trace_ops(trace_path, "DOORBELL", recs, 4);
	for (i = 0; i < n; i++) {
		assert_int_equal(json_integer_value(json_object_get(recs[i], "value")), 3);
		assert_int_equal(json_integer_value(json_object_get(recs[i], "addr")), off);
		assert_int_equal(json_integer_value(json_object_get(recs[i], "status")), 0);
		json_decref(recs[i]);
	}
	assert_int_equal(n, 1);
	assert_int_equal(devx_close(ctx), 0);
}

/*
 * mlx5dv_devx_get_event is a read() on the channel fd, which blocks
 * unless O_NONBLOCK is set; the driver reads until EAGAIN, so the back end
 * must make the fd non-blocking (else the notification thread hangs).
 */
static void
test_event_channel_is_nonblocking(void **state)
{
	struct devx_ctx *ctx = open_rdma();
	struct devx_evch *ch = devx_evch_create(ctx);
	struct devx_event ev;

	assert_non_null(ch);
	assert_int_not_equal(fcntl(devx_evch_fd(ch), F_GETFL) & O_NONBLOCK, 0);
	assert_int_equal(devx_evch_read(ch, &ev), 0);
	devx_evch_destroy(ch);
	assert_int_equal(devx_close(ctx), 0);
}

static char reply[128];

/*
 * The back end reads what the kernel hands over: the cookie, then the
 * whole EQE (Linux devx.c deliver_event; include/linux/mlx5/device.h
 * struct mlx5_eqe, mlx5_eqe_comp; mlx5_ifc.h affiliated_event_header).
 * A completion's CQ number is EQE bytes 57-59 (the low 24 bits of the
 * dword at 56), an OBJECT_CHANGE's object the dword at 36: built by hand
 * here, then an OBJECT_CHANGE through the emulated rdma-core, read back
 * by the back end with its queue cookie and the object's number. An
 * overflow of the kernel's list comes up once as -EOVERFLOW.
 */
static void
test_events_are_read_at_the_kernels_offsets(void **state)
{
	struct devx_ctx *ctx = open_rdma();
	struct devx_evch *ch = devx_evch_create(ctx);
	uint8_t in[PRM_SIZE(virtq_counters_cmd)] = { 0 };
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)] = { 0 };
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	uint8_t eqe[64] = { 0 };
	struct devx_event ev;
	struct devx_obj *obj;
	char req[128];
	int i, rc_last = 0;

	eqe[1] = PRM_EVENT_COMPLETION;
	eqe[56] = 0xff;          /* not the CQ number: 24 bits */
	eqe[57] = 0x12;
	eqe[58] = 0x34;
	eqe[59] = 0x56;
	devx_event_from_eqe(&ev, 7, eqe);
	assert_int_equal(ev.type, PRM_EVENT_COMPLETION);
	assert_int_equal(ev.obj_id, 0x123456);
	assert_int_equal(ev.cookie, 7);
	memset(eqe, 0, sizeof(eqe));
	eqe[1] = PRM_EVENT_OBJECT_CHANGE;
	eqe[35] = PRM_OBJ_VIRTIO_NET_Q;
	eqe[36] = 0x01;
	eqe[39] = 0x02;
	devx_event_from_eqe(&ev, 8, eqe);
	assert_int_equal(ev.type, PRM_EVENT_OBJECT_CHANGE);
	assert_int_equal(ev.obj_id, 0x01000002);
	assert_int_equal(PRM_GET(affiliated_event_header, ev.data, obj_type), PRM_OBJ_VIRTIO_NET_Q);

	assert_non_null(ch);
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	obj = devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	assert_non_null(obj);
	assert_int_equal(devx_evch_subscribe(ch, obj, PRM_EVENT_OBJECT_CHANGE, 5), 0);
	snprintf(req, sizeof(req), "event %#x %#x %u %#x", PRM_CMD_CREATE_GENERAL_OBJECT,
		 PRM_OBJ_VIRTIO_Q_COUNTERS, devx_obj_id(obj), PRM_EVENT_OBJECT_CHANGE);
	ctl(req, reply, sizeof(reply));
	for (i = 0; i < 5000 && devx_evch_read(ch, &ev) == 0; i++)
		usleep(1000);
	assert_int_equal(ev.type, PRM_EVENT_OBJECT_CHANGE);
	assert_int_equal(ev.cookie, 5);
	assert_int_equal(ev.obj_id, devx_obj_id(obj));
	assert_int_equal(PRM_GET(affiliated_event_header, ev.data, obj_type),
			 PRM_OBJ_VIRTIO_Q_COUNTERS);
	assert_int_equal(devx_evch_read(ch, &ev), 0);
	ctl("evch_hold 1", reply, sizeof(reply));
	ctl(req, reply, sizeof(reply));
	ctl(req, reply, sizeof(reply));
	/* The library's thread moves the events into the kernel's list: the second overflows. */
	for (i = 0; i < 5000; i++) {
		ctl("evch_overflows", reply, sizeof(reply));
		if (strcmp(reply, "ok 1") == 0)
			break;
		usleep(1000);
	}
	assert_string_equal(reply, "ok 1");
	ctl("evch_release", reply, sizeof(reply));
	for (i = 0; i < 5000 && (rc_last = devx_evch_read(ch, &ev)) == 0; i++)
		usleep(1000);
	assert_int_equal(rc_last, -EOVERFLOW);
	assert_int_equal(devx_evch_read(ch, &ev), 1);
	assert_int_equal(ev.obj_id, devx_obj_id(obj));
	assert_int_equal(devx_evch_read(ch, &ev), 0);
	devx_evch_destroy(ch);
	assert_int_equal(devx_obj_destroy(obj), 0);
	assert_int_equal(devx_close(ctx), 0);
}

/*
 * A umem the kernel cannot pin (a shared mapping past the end of its file:
 * ib_umem_get fails with EFAULT before any firmware command) is a failed
 * UMEM_REG in the transport's trace: status -1 (not delivered), never the
 * status 0 of a registration that happened (doc/devx-trace.md).
 */
static void
test_unpinnable_umem_is_traced_as_failed(void **state)
{
	char path[] = "/tmp/test_rdma_backend_dt_XXXXXX";
	struct devx_open_params p = { .name = "rdma0", .ibdev = "mlx5_0", .trace_path = path };
	struct devx_ctx *ctx = NULL;
	long page = sysconf(_SC_PAGESIZE);
	char err[256] = "";
	int fd = mkstemp(path), mfd;
	json_t *recs[4];
	size_t i, n;
	void *mem;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(devx_open(&p, &ctx, err, sizeof(err)), 0);
	mfd = memfd_create("rdma-backend-short", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, page), 0);
	mem = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(mem != MAP_FAILED);
	assert_null(devx_umem_reg(ctx, mem, 2 * (size_t)page, 1));
	assert_int_equal(errno, EFAULT);
	assert_int_equal(devx_close(ctx), 0);
	munmap(mem, 2 * (size_t)page);
	close(mfd);
	n = erdma_trace_ops(path, "UMEM_REG", recs, 4);
	for (i = 0; i < n; i++) {
		assert_int_equal(json_integer_value(json_object_get(recs[i], "status")), -1);
		json_decref(recs[i]);
	}
	unlink(path);
	assert_int_equal(n, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rdma_pd_number_and_null_mkey_come_from_rdma_core),
		cmocka_unit_test(test_doorbell_lands_on_the_doorbell),
		cmocka_unit_test(test_event_channel_is_nonblocking),
		cmocka_unit_test(test_events_are_read_at_the_kernels_offsets),
		cmocka_unit_test(test_unpinnable_umem_is_traced_as_failed),
	};
	int rc;

	erdma_test_env(trace_path);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	erdma_test_env_done(trace_path);
	return rc;
}
