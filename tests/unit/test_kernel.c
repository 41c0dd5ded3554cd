/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated kernel's DevX rules (emu/emu_kernel.c). Each test names the
 * function of Linux drivers/infiniband/hw/mlx5/devx.c whose rule it checks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prm.h"
#include "emu.h"

static void
quiet(int level, const char *line)
{
}

static void
hdr(uint8_t *in, uint16_t opcode, uint16_t op_mod, uint32_t id)
{
	memset(in, 0, 256);
	PRM_SET(cmd_in, in, opcode, opcode);
	PRM_SET(cmd_in, in, op_mod, op_mod);
	PRM_SET(destroy_in, in, id, id);
}

static int
check(enum emu_kentry e, uint16_t opcode, uint16_t op_mod, uint32_t id,
      const struct emu_kobj *obj)
{
	uint8_t in[256];

	hdr(in, opcode, op_mod, id);
	return emu_kernel_check(NULL, e, in, sizeof(in), obj);
}

/* devx.c devx_is_general_cmd(): only the QUERY_* allow-list, NOP and 0xb00-0xd00. */
static void
test_general_cmd_allow_list(void **state)
{
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_QUERY_HCA_CAP, 0x27, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0x10d /* NOP */, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xb00, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xcff, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xd00, 0, 0, NULL), -EINVAL);
	/* A2: the null mkey comes from ibv_alloc_null_mr, not from a DevX command. */
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_QUERY_SPECIAL_CONTEXTS, 0, 0, NULL),
			 -EINVAL);
	/* A1: QP transitions and MODIFY_RQT are object commands. */
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_RST2INIT_QP, 0, 1, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_INIT2RTR_QP, 0, 1, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_RTR2RTS_QP, 0, 1, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_2RST_QP, 0, 1, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_MODIFY_RQT, 0, 1, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_CREATE_GENERAL_OBJECT, 0xd, 0, NULL),
			 -EINVAL);
}

/* devx.c devx_is_obj_create_cmd(): creators only; SET_FTE only with op_mod 0. */
static void
test_obj_create_cmd(void **state)
{
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_CREATE_GENERAL_OBJECT, 0xd, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_ALLOC_PD, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_CREATE_QP, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_SET_FLOW_TABLE_ENTRY, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_SET_FLOW_TABLE_ENTRY, 1, 0, NULL),
			 -EINVAL);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_QUERY_HCA_CAP, 0, 0, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_MODIFY_RQT, 0, 0, NULL), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_CREATE, PRM_CMD_DESTROY_QP, 0, 0, NULL), -EINVAL);
}

/*
 * devx.c devx_is_obj_modify_cmd() + devx_is_valid_obj_id(): a QP transition
 * only on that QP's handle, MODIFY_RQT only on that RQT's.
 */
static void
test_obj_modify_names_the_handle(void **state)
{
	struct emu_kobj qp = { PRM_CMD_CREATE_QP, 0, 7 };
	struct emu_kobj rqt = { PRM_CMD_CREATE_RQT, 0, 7 };
	struct emu_kobj vq = { PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 3 };
	uint8_t in[256];

	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_RST2INIT_QP, 0, 7, &qp), 0);
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_2RST_QP, 0, 7, &qp), 0);
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_INIT2RTR_QP, 0, 8, &qp), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_MODIFY_RQT, 0, 7, &rqt), 0);
	/* Same number, other kind of object: the kernel encodes the creator. */
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_MODIFY_RQT, 0, 7, &qp), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_RTR2RTS_QP, 0, 7, &rqt), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_RTR2RTS_QP, 0, 7, NULL), -EINVAL);
	/* Query commands are not modify commands, even on the right handle. */
	assert_int_equal(check(EMU_KENTRY_MODIFY, PRM_CMD_QUERY_GENERAL_OBJECT, 0, 0, &vq),
			 -EINVAL);
	hdr(in, PRM_CMD_MODIFY_GENERAL_OBJECT, 0, 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 3);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_MODIFY, in, sizeof(in), &vq), 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_MODIFY, in, sizeof(in), &vq), -EINVAL);
}

/* devx.c devx_is_obj_query_cmd() + devx_is_valid_obj_id(). */
static void
test_obj_query_names_the_handle(void **state)
{
	struct emu_kobj vq = { PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 3 };
	uint8_t in[256];

	hdr(in, PRM_CMD_QUERY_GENERAL_OBJECT, 0, 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 3);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_QUERY, in, sizeof(in), &vq), 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 4);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_QUERY, in, sizeof(in), &vq), -EINVAL);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 3);
	PRM_SET(cmd_in, in, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_QUERY, in, sizeof(in), &vq), -EINVAL);
}

/* devx.c devx_obj_build_destroy_cmd(): the kernel destroys exactly what it created. */
static void
test_destroy_is_the_handles_own(void **state)
{
	struct emu_kobj pd = { PRM_CMD_ALLOC_PD, 0, 5 };
	struct emu_kobj vq = { PRM_CMD_CREATE_GENERAL_OBJECT, PRM_OBJ_VIRTIO_NET_Q, 3 };
	uint8_t in[256];

	assert_int_equal(check(EMU_KENTRY_DESTROY, PRM_CMD_DEALLOC_PD, 0, 5, &pd), 0);
	assert_int_equal(check(EMU_KENTRY_DESTROY, PRM_CMD_DEALLOC_PD, 0, 6, &pd), -EINVAL);
	assert_int_equal(check(EMU_KENTRY_DESTROY, PRM_CMD_DESTROY_TIS, 0, 5, &pd), -EINVAL);
	hdr(in, PRM_CMD_DESTROY_GENERAL_OBJECT, 0, 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, 3);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_DESTROY, in, sizeof(in), &vq), 0);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_DESTROY, in, sizeof(in), &vq),
			 -EINVAL);
}

/* devx.c devx_get_created_obj_id(): general obj_id, 24-bit ids, SET_FTE's flow_index. */
static void
test_created_obj_identity(void **state)
{
	uint8_t in[PRM_SIZE(set_fte_in)], out[PRM_SIZE(create_out)];
	struct emu_kobj k;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(cmd_in, in, opcode, PRM_CMD_CREATE_QP);
	PRM_SET(create_out, out, id, 0x12);
	assert_int_equal(emu_kernel_created_obj(in, sizeof(in), out, sizeof(out), &k), 0);
	assert_int_equal(k.create_opcode, PRM_CMD_CREATE_QP);
	assert_int_equal(k.id, 0x12);
	memset(in, 0, sizeof(in));
	PRM_SET(set_fte_in, in, opcode, PRM_CMD_SET_FLOW_TABLE_ENTRY);
	PRM_SET(set_fte_in, in, flow_index, 9);
	assert_int_equal(emu_kernel_created_obj(in, sizeof(in), out, sizeof(out), &k), 0);
	assert_int_equal(k.id, 9);
}

/* rdma-core mlx5 provider: ibv_alloc_null_mr returns the context's dump-fill mkey. */
static void
test_kernel_pd_and_null_mkey(void **state)
{
	char err[256];
	struct emu_dev *dev = emu_dev_create("k0", "fast", err, sizeof(err));
	uint32_t pdn = 0, key = 0, synd = 0;

	assert_non_null(dev);
	assert_int_equal(emu_kernel_alloc_pd(dev, &pdn, &synd), 0);
	assert_int_equal(emu_dev_live_objects(dev), 1);
	assert_int_equal(emu_kernel_null_mkey(dev, &key, &synd), 0);
	assert_int_not_equal(key, 0);
	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn + 1, &synd), PRM_STATUS_BAD_RES);
	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn, &synd), 0);
	assert_int_equal(emu_dev_live_objects(dev), 0);
	assert_int_equal(emu_dev_destroy(dev), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_general_cmd_allow_list),
		cmocka_unit_test(test_obj_create_cmd),
		cmocka_unit_test(test_obj_modify_names_the_handle),
		cmocka_unit_test(test_obj_query_names_the_handle),
		cmocka_unit_test(test_destroy_is_the_handles_own),
		cmocka_unit_test(test_created_obj_identity),
		cmocka_unit_test(test_kernel_pd_and_null_mkey),
	};

	emu_set_log(quiet);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
