/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DevX transport unit tests, on the emulated back end (fast profile) and
 * the rdma back end's no-device path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "prm.h"
#include "devx.h"
#include "devx_emu.h"
#include "emu.h"

static char trace_path[] = "/tmp/test_devx_trace_XXXXXX";

static struct devx_ctx *
open_emu(const char *trace)
{
	struct devx_open_params p = { .name = "unit0", .emu_profile = "fast", .trace_path = trace };
	struct devx_ctx *ctx = NULL;
	char err[256];

	assert_int_equal(devx_open(&p, &ctx, err, sizeof(err)), 0);
	assert_non_null(ctx);
	return ctx;
}

static struct devx_obj *
alloc_pd(struct devx_ctx *ctx)
{
	uint8_t in[PRM_SIZE(alloc_pd_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };

	PRM_SET(alloc_pd_in, in, opcode, PRM_CMD_ALLOC_PD);
	return devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
}

static json_t **
read_trace(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[65536];
	json_t **recs = NULL;

	*n = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		json_error_t jerr;
		json_t *j = json_loads(line, 0, &jerr);

		assert_non_null(j); /* every line is one whole JSON object */
		recs = realloc(recs, (*n + 1) * sizeof(*recs));
		recs[(*n)++] = j;
	}
	fclose(f);
	return recs;
}

static void
free_trace(json_t **recs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		json_decref(recs[i]);
	free(recs);
}

static void
test_open_needs_exactly_one_backend(void **state)
{
	struct devx_open_params none = { .name = "x" };
	struct devx_open_params both = { .name = "x", .emu_profile = "fast", .ibdev = "mlx5_0" };
	struct devx_ctx *ctx = NULL;
	char err[256];

	assert_int_equal(devx_open(&none, &ctx, err, sizeof(err)), -EINVAL);
	assert_int_equal(devx_open(&both, &ctx, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "exactly one"));
}

static void
test_rdma_without_device_is_a_clear_error(void **state)
{
	struct devx_open_params p = { .name = "x", .ibdev = "mlx5_0" };
	struct devx_ctx *ctx = NULL;
	char err[256] = "";

	assert_int_equal(devx_open(&p, &ctx, err, sizeof(err)), -ENODEV);
	assert_null(ctx);
	assert_non_null(strstr(err, "mlx5_0"));
	assert_non_null(strstr(err, "ibv_get_device_list"));
}

static void
test_unknown_profile_and_bad_trace_path_fail_open(void **state)
{
	struct devx_open_params p = { .name = "x", .emu_profile = "nosuch" };
	struct devx_open_params t = { .name = "x", .emu_profile = "fast",
				      .trace_path = "/nonexistent-dir/trace" };
	struct devx_ctx *ctx = NULL;
	char err[256] = "";

	assert_true(devx_open(&p, &ctx, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "nosuch"));
	assert_true(devx_open(&t, &ctx, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "devx_trace=/nonexistent-dir/trace"));
}

static void
test_create_destroy_derives_destroy_mailbox(void **state)
{
	struct devx_ctx *ctx;
	struct devx_obj *pd;
	json_t **recs;
	size_t n;
	uint32_t id;
	char hex[64];

	ctx = open_emu(trace_path);
	pd = alloc_pd(ctx);
	assert_non_null(pd);
	id = devx_obj_id(pd);
	assert_true(id > 0);
	assert_int_equal(devx_obj_destroy(pd), 0);
	assert_int_equal(devx_close(ctx), 0);

	recs = read_trace(trace_path, &n);
	assert_int_equal(n, 2);
	assert_string_equal(json_string_value(json_object_get(recs[0], "op")), "ALLOC_PD");
	assert_int_equal(json_integer_value(json_object_get(recs[0], "obj_id")), id);
	assert_string_equal(json_string_value(json_object_get(recs[1], "op")), "DEALLOC_PD");
	assert_int_equal(json_integer_value(json_object_get(recs[1], "opcode")), 0x801);
	assert_int_equal(json_integer_value(json_object_get(recs[1], "obj_id")), id);
	/* DEALLOC_PD: opcode 0x0801 in bytes 0-1, pd[24] at bit 0x48 = bytes 9-11. */
	snprintf(hex, sizeof(hex), "0801000000000000%08x", id);
	assert_memory_equal(json_string_value(json_object_get(recs[1], "in")), hex, 24);
	assert_int_equal(json_integer_value(json_object_get(recs[1], "seq")), 1);
	free_trace(recs, n);
}

static void
test_failed_command_returns_eio_with_status(void **state)
{
	struct devx_ctx *ctx = open_emu(NULL);
	uint8_t in[16] = { 0 };
	uint8_t out[16] = { 0 };

	/* In the kernel's general range (0xb00-0xd00), unknown to the firmware. */
	PRM_SET(cmd_in, in, opcode, 0x0b99);
	assert_int_equal(devx_cmd(ctx, in, sizeof(in), out, sizeof(out)), -EIO);
	assert_int_equal(PRM_GET(cmd_out, out, status), PRM_STATUS_BAD_OP);
	assert_int_equal(PRM_GET(cmd_out, out, syndrome), EMU_SYND_BAD_OPCODE);
	assert_int_equal(devx_close(ctx), 0);
}

static void
test_failed_destroy_keeps_object_usable(void **state)
{
	struct devx_ctx *ctx = open_emu(NULL);
	struct devx_obj *pd = alloc_pd(ctx);

	assert_non_null(pd);
	assert_int_equal(emu_fault_inject(devx_emu_dev(ctx), PRM_CMD_DEALLOC_PD, 0xffff, 1,
					  PRM_STATUS_RES_BUSY, 0), 0);
	assert_int_equal(devx_obj_destroy(pd), -EIO);
	/* Still alive in the device, and destroyable once the fault is gone. */
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(ctx)), 1);
	assert_int_equal(devx_obj_destroy(pd), 0);
	assert_int_equal(devx_close(ctx), 0);
}

static void
test_close_reports_objects_left_alive(void **state)
{
	unsigned long alive = devx_emu_live_total(NULL, 0);
	struct devx_ctx *ctx = open_emu(NULL);
	unsigned long before = devx_emu_leaked_total();
	char kinds[128];

	assert_non_null(alloc_pd(ctx));
	assert_non_null(alloc_pd(ctx));
	/* Alive in the process while the device is open: a never-closed one is seen. */
	assert_true(devx_emu_live_total(kinds, sizeof(kinds)) >= alive + 3);
	assert_non_null(strstr(kinds, "PD"));
	assert_non_null(strstr(kinds, "devices"));
	/* The devx_obj handles leak here on purpose: the device must say so. */
	assert_int_equal(devx_close(ctx), 2);
	assert_int_equal(devx_emu_leaked_total() - before, 2);
	/* Closed, the device and what it freed are no longer alive. */
	assert_int_equal(devx_emu_live_total(NULL, 0), alive);
}

static void
test_umem_reg_is_traced(void **state)
{
	struct devx_ctx *ctx = open_emu(trace_path);
	static uint8_t buf[8192];
	struct devx_umem *u;
	json_t **recs;
	size_t n;

	u = devx_umem_reg(ctx, buf, sizeof(buf), 0);
	assert_non_null(u);
	assert_true(devx_umem_id(u) > 0);
	assert_int_equal(devx_umem_dereg(u), 0);
	assert_int_equal(devx_close(ctx), 0);
	recs = read_trace(trace_path, &n);
	assert_int_equal(n, 2);
	assert_string_equal(json_string_value(json_object_get(recs[0], "op")), "UMEM_REG");
	assert_int_equal(json_integer_value(json_object_get(recs[0], "size")), sizeof(buf));
	assert_int_equal(json_integer_value(json_object_get(recs[0], "addr")), (uintptr_t)buf);
	assert_string_equal(json_string_value(json_object_get(recs[1], "op")), "UMEM_DEREG");
	free_trace(recs, n);
}

static struct devx_obj *
nic_rx_table(struct devx_ctx *ctx)
{
	uint8_t in[PRM_SIZE(create_flow_table_in)] = { 0 };
	uint8_t out[PRM_SIZE(create_out)] = { 0 };

	PRM_SET(create_flow_table_in, in, opcode, PRM_CMD_CREATE_FLOW_TABLE);
	PRM_SET(create_flow_table_in, in, table_type, PRM_FLOW_TABLE_TYPE_NIC_RX);
	return devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
}

/*
 * A rule in the NIC RX root goes through the transport's root-flow op
 * (the kernel's flow steering, not a DevX command), holds its
 * destination, is traced as ROOT_FLOW_CREATE / ROOT_FLOW_DESTROY, and a
 * refusal of the device is EIO.
 */
static void
test_root_flow_rule_holds_its_destination_and_is_traced(void **state)
{
	struct devx_ctx *ctx = open_emu(trace_path);
	uint8_t m[PRM_SIZE(fte_match_param)] = { 0 };
	struct devx_flow_attr attr = {
		.priority = 3, .match_mask = m, .match_value = m, .match_len = sizeof(m),
	};
	struct devx_obj *ft = nic_rx_table(ctx), *pd = alloc_pd(ctx);
	struct devx_flow *flow;
	json_t **recs;
	size_t n, i, created = 0, destroyed = 0;

	assert_non_null(ft);
	assert_non_null(pd);
	/* Only a TIR or a flow table can be a destination. */
	assert_null(devx_root_flow_create(ctx, &attr, pd));
	assert_int_equal(errno, EINVAL);
	flow = devx_root_flow_create(ctx, &attr, ft);
	assert_non_null(flow);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(ctx)), 3);
	assert_int_equal(devx_obj_destroy(ft), -EIO);
	/* The device refusing the rule (the firmware's SET_FLOW_TABLE_ENTRY). */
	assert_int_equal(emu_fault_inject(devx_emu_dev(ctx), PRM_CMD_SET_FLOW_TABLE_ENTRY, 0xffff,
					  1, PRM_STATUS_NO_RESOURCES, 0), 0);
	assert_null(devx_root_flow_create(ctx, &attr, ft));
	assert_int_equal(errno, EIO);
	assert_int_equal(devx_root_flow_destroy(flow), 0);
	assert_int_equal(devx_obj_destroy(ft), 0);
	assert_int_equal(devx_obj_destroy(pd), 0);
	assert_int_equal(devx_close(ctx), 0);

	recs = read_trace(trace_path, &n);
	for (i = 0; i < n; i++) {
		json_t *r = recs[i];
		const char *op = json_string_value(json_object_get(r, "op"));
		json_int_t status = json_integer_value(json_object_get(r, "status"));

		if (strcmp(op, "ROOT_FLOW_CREATE") == 0 && status == 0) {
			created++;
			assert_int_equal(json_integer_value(json_object_get(r, "priority")), 3);
			assert_int_equal(json_integer_value(json_object_get(r, "dest_obj_id")),
					 json_integer_value(json_object_get(recs[0], "obj_id")));
			assert_int_equal(strlen(json_string_value(json_object_get(r, "mask"))),
					 2 * sizeof(m));
		} else if (strcmp(op, "ROOT_FLOW_CREATE") == 0) {
			assert_int_equal(status, PRM_STATUS_NO_RESOURCES);
		} else if (strcmp(op, "ROOT_FLOW_DESTROY") == 0) {
			destroyed++;
		}
	}
	assert_int_equal(created, 1);
	assert_int_equal(destroyed, 1);
	free_trace(recs, n);
}

/*
 * UAR page, completion EQ number and UAR doorbell through the transport
 * (what mlx5dv_devx_alloc_uar / mlx5dv_devx_query_eqn and a store to the
 * page are on rdma): each traced with its own fields, the page counted by
 * the device until freed.
 */
static void
test_uar_eqn_and_uar_doorbell_are_traced(void **state)
{
	struct devx_ctx *ctx = open_emu(trace_path);
	struct devx_uar *uar;
	uint32_t eqn = 0;
	json_t **recs;
	size_t n;

	(void)state;
	uar = devx_uar_alloc(ctx);
	assert_non_null(uar);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(ctx)), 1);
	assert_int_equal(devx_query_eqn(ctx, 0, &eqn), 0);
	assert_int_not_equal(eqn, 0);
	assert_int_equal(devx_query_eqn(ctx, EMU_NUM_COMP_EQS, &eqn), -EINVAL);
	devx_uar_ring(uar, DEVX_UAR_CQ_DOORBELL, (uint64_t)0x10000005 << 32 | 7);
	assert_int_equal(devx_uar_free(uar), 0);
	assert_int_equal(devx_close(ctx), 0);
	recs = read_trace(trace_path, &n);
	assert_int_equal(n, 5);
	assert_string_equal(json_string_value(json_object_get(recs[0], "op")), "UAR_ALLOC");
	assert_true(json_integer_value(json_object_get(recs[0], "page_id")) > 0);
	assert_string_equal(json_string_value(json_object_get(recs[1], "op")), "QUERY_EQN");
	assert_int_equal(json_integer_value(json_object_get(recs[1], "eqn")), eqn);
	assert_string_equal(json_string_value(json_object_get(recs[2], "op")), "QUERY_EQN");
	assert_int_not_equal(json_integer_value(json_object_get(recs[2], "status")), 0);
	assert_string_equal(json_string_value(json_object_get(recs[3], "op")), "UAR_DOORBELL");
	assert_int_equal(json_integer_value(json_object_get(recs[3], "addr")), 0x20);
	assert_int_equal(json_integer_value(json_object_get(recs[3], "value")),
			 (json_int_t)((uint64_t)0x10000005 << 32 | 7));
	assert_int_equal(json_integer_value(json_object_get(recs[3], "page_id")),
			 json_integer_value(json_object_get(recs[0], "page_id")));
	assert_string_equal(json_string_value(json_object_get(recs[4], "op")), "UAR_FREE");
	assert_int_equal(json_integer_value(json_object_get(recs[4], "status")), 0);
	free_trace(recs, n);
}

struct thread_arg {
	struct devx_ctx *ctx;
	int ok;
};

static void *
create_many(void *p)
{
	struct thread_arg *a = p;
	int i;

	for (i = 0; i < 50; i++) {
		struct devx_obj *pd = alloc_pd(a->ctx);

		if (pd == NULL || devx_obj_destroy(pd) != 0)
			return NULL;
		a->ok++;
	}
	return NULL;
}

static void
test_concurrent_commands_trace_whole_lines(void **state)
{
	struct devx_ctx *ctx = open_emu(trace_path);
	struct thread_arg args[4];
	pthread_t th[4];
	json_t **recs;
	size_t n, i;
	char *seen;

	for (i = 0; i < 4; i++) {
		args[i].ctx = ctx;
		args[i].ok = 0;
		pthread_create(&th[i], NULL, create_many, &args[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].ok, 50);
	}
	assert_int_equal(devx_close(ctx), 0);
	recs = read_trace(trace_path, &n);
	assert_int_equal(n, 400);
	seen = calloc(n, 1);
	for (i = 0; i < n; i++) {
		json_int_t seq = json_integer_value(json_object_get(recs[i], "seq"));

		assert_true(seq >= 0 && (size_t)seq < n);
		assert_false(seen[seq]);
		seen[seq] = 1;
	}
	free(seen);
	free_trace(recs, n);
}

/*
 * The PD and its null mkey as ibv_alloc_pd + ibv_alloc_null_mr give them
 * (the emu back end runs what the kernel runs for those calls).
 */
static void
test_pd_and_null_mkey_come_as_the_kernel_gives_them(void **state)
{
	struct devx_ctx *ctx = open_emu(NULL);
	struct devx_pd *pd = devx_pd_alloc(ctx);

	assert_non_null(pd);
	assert_int_not_equal(devx_pd_null_mkey(pd), 0);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(ctx)), 1);
	assert_int_equal(devx_pd_free(pd), 0);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(ctx)), 0);
	assert_int_equal(devx_close(ctx), 0);
}

/*
 * The kernel's DevX rules hold on the emu back end too (Linux devx.c
 * devx_is_general_cmd, devx_is_obj_modify_cmd, devx_is_valid_obj_id): a
 * modify of one object through the general entry point or through another
 * object's handle is refused with EINVAL before reaching the device.
 */
static void
test_emu_enforces_the_kernels_devx_rules(void **state)
{
	struct devx_ctx *ctx = open_emu(NULL);
	struct devx_obj *pd = alloc_pd(ctx);
	uint8_t in[PRM_SIZE(modify_rqt_in)] = { 0 };
	uint8_t out[PRM_SIZE(cmd_out) * 2] = { 0 };
	struct emu_dev *dev = devx_emu_dev(ctx);

	assert_non_null(pd);
	PRM_SET(modify_rqt_in, in, opcode, PRM_CMD_MODIFY_RQT);
	PRM_SET(modify_rqt_in, in, rqtn, devx_obj_id(pd));
	assert_int_equal(devx_cmd(ctx, in, sizeof(in), out, sizeof(out)), -EINVAL);
	assert_int_equal(devx_obj_modify(pd, in, sizeof(in), out, sizeof(out)), -EINVAL);
	assert_int_equal(emu_dev_cmd_count(dev, PRM_CMD_MODIFY_RQT), 0);
	memset(in, 0, sizeof(in));
	PRM_SET(rst2init_qp_in, in, opcode, PRM_CMD_RST2INIT_QP);
	PRM_SET(rst2init_qp_in, in, qpn, devx_obj_id(pd));
	assert_int_equal(devx_cmd(ctx, in, sizeof(in), out, sizeof(out)), -EINVAL);
	memset(in, 0, sizeof(in));
	PRM_SET(query_special_contexts_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	assert_int_equal(devx_cmd(ctx, in, sizeof(in), out, sizeof(out)), -EINVAL);
	assert_int_equal(emu_dev_cmd_count(dev, PRM_CMD_QUERY_SPECIAL_CONTEXTS), 0);
	/* The allow-list still works. */
	memset(in, 0, sizeof(in));
	PRM_SET(query_hca_cap_in, in, opcode, PRM_CMD_QUERY_HCA_CAP);
	{
		uint8_t cap[PRM_SIZE(query_hca_cap_out)];

		assert_int_equal(devx_cmd(ctx, in, PRM_SIZE(query_hca_cap_in), cap, sizeof(cap)),
				 0);
	}
	assert_int_equal(devx_obj_destroy(pd), 0);
	assert_int_equal(devx_close(ctx), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_needs_exactly_one_backend),
		cmocka_unit_test(test_rdma_without_device_is_a_clear_error),
		cmocka_unit_test(test_unknown_profile_and_bad_trace_path_fail_open),
		cmocka_unit_test(test_create_destroy_derives_destroy_mailbox),
		cmocka_unit_test(test_failed_command_returns_eio_with_status),
		cmocka_unit_test(test_failed_destroy_keeps_object_usable),
		cmocka_unit_test(test_close_reports_objects_left_alive),
		cmocka_unit_test(test_umem_reg_is_traced),
		cmocka_unit_test(test_root_flow_rule_holds_its_destination_and_is_traced),
		cmocka_unit_test(test_uar_eqn_and_uar_doorbell_are_traced),
		cmocka_unit_test(test_pd_and_null_mkey_come_as_the_kernel_gives_them),
		cmocka_unit_test(test_emu_enforces_the_kernels_devx_rules),
		cmocka_unit_test(test_concurrent_commands_trace_whole_lines),
	};
	int fd = mkstemp(trace_path);
	int ret;

	if (fd < 0)
		return 1;
	close(fd);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(trace_path);
	return ret;
}
