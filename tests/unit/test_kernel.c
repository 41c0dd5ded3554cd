/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated kernel's DevX rules (emu/emu_kernel.c). Each test names the
 * function of Linux drivers/infiniband/hw/mlx5/devx.c whose rule it checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "prm.h"
#include "emu.h"
#include "../lm_files.h"

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
test_general_commands_are_the_kernels_allow_list_only(void **state)
{
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_QUERY_HCA_CAP, 0x27, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0x10d /* NOP */, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xb00, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xcff, 0, 0, NULL), 0);
	assert_int_equal(check(EMU_KENTRY_GENERAL, 0xd00, 0, 0, NULL), -EINVAL);
	/* The null mkey comes from ibv_alloc_null_mr, not from a DevX command. */
	assert_int_equal(check(EMU_KENTRY_GENERAL, PRM_CMD_QUERY_SPECIAL_CONTEXTS, 0, 0, NULL),
			 -EINVAL);
	/* QP transitions and MODIFY_RQT are object commands. */
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
test_only_creators_pass_as_object_create_commands(void **state)
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
test_created_object_is_identified_as_the_kernel_does(void **state)
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
test_null_mr_is_the_contexts_dump_fill_mkey(void **state)
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

/*
 * devx.c devx_handle_mkey_create(): a CREATE_MKEY naming a DevX umem
 * passes the create entry point (the kernel sets mkey_umem_valid), as one
 * without (KLM over MRs) does.
 */
static void
test_mkey_over_a_devx_umem_passes_the_kernel(void **state)
{
	uint8_t in[PRM_SIZE(create_mkey_in)];

	(void)state;
	memset(in, 0, sizeof(in));
	PRM_SET(create_mkey_in, in, opcode, PRM_CMD_CREATE_MKEY);
	PRM_SET(mkc, PRM_ADDR(create_mkey_in, in, mkc), access_mode_1_0, PRM_MKC_ACCESS_MODE_MTT);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_CREATE, in, sizeof(in), NULL), 0);
	PRM_SET(create_mkey_in, in, mkey_umem_id, 7);
	assert_int_equal(emu_kernel_check(NULL, EMU_KENTRY_CREATE, in, sizeof(in), NULL), 0);
}

/*
 * ibv_reg_mr_iova as mlx5_ib_reg_user_mr: the kernel's own mkey in the PD,
 * addressed by the iova, translating through its page list to the
 * registrant's bytes; a fresh variant byte per MR (assign_mkey_variant);
 * a destroyed MR's key never translates again; DESTROY_MKEY from DevX
 * cannot reach it (the kernel owns it).
 */
static void
test_kernel_reg_mr_translates_at_its_iova(void **state)
{
	char err[256];
	struct emu_dev *dev = emu_dev_create("k1", "fast", err, sizeof(err));
	size_t len = 4 * 1024 * 1024;
	uint8_t *mem = aligned_alloc(1 << 21, len);
	uint8_t din[PRM_SIZE(destroy_mkey_in)], dout[16];
	uint32_t pdn = 0, k1 = 0, k2 = 0, synd = 0;
	void *host;

	(void)state;
	assert_non_null(dev);
	assert_non_null(mem);
	assert_int_equal(emu_kernel_alloc_pd(dev, &pdn, &synd), 0);
	/* iova 0x40001000 for mem + 0x1000: they agree below 4 KiB only. */
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, mem + 0x1000, len - 0x1000, 0x40001000, 7,
					   &k1, &synd), 0);
	assert_int_equal(emu_mkey_translate(dev, k1, 0x40001000 + 0x12345, 64, &host), 0);
	assert_ptr_equal(host, mem + 0x1000 + 0x12345);
	assert_int_equal(emu_mkey_translate(dev, k1, 0x40000000, 8, &host), -EFAULT);
	assert_int_equal(emu_mkey_translate(dev, k1, 0x40001000 + len - 0x1000, 1, &host),
			 -EFAULT);
	/* ib_uverbs_reg_mr: address and iova at different offsets in a page. */
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, mem + 0x800, 0x1000, 0x40000000, 7, &k2,
					   &synd), PRM_STATUS_BAD_PARAM);
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, mem, len, 0, 7, &k2, &synd), 0);
	assert_int_not_equal(k1 & 0xff, k2 & 0xff);
	assert_int_equal(emu_dev_cmd_count(dev, PRM_CMD_CREATE_MKEY), 3);
	/* The kernel's mkey is not a DevX object: DESTROY_MKEY does not reach it. */
	memset(din, 0, sizeof(din));
	PRM_SET(destroy_mkey_in, din, opcode, PRM_CMD_DESTROY_MKEY);
	PRM_SET(destroy_mkey_in, din, mkey_index, k1 >> 8);
	assert_int_equal(emu_cmd(dev, din, sizeof(din), dout, sizeof(dout)), 0);
	assert_int_equal(PRM_GET(cmd_out, dout, status), PRM_STATUS_BAD_RES);
	assert_int_equal(emu_kernel_dereg_mr(dev, k1, &synd), 0);
	assert_int_equal(emu_mkey_translate(dev, k1, 0x40001000, 8, &host), -EFAULT);
	assert_int_equal(emu_kernel_dereg_mr(dev, k1, &synd), PRM_STATUS_BAD_RES);
	/* The PD is held by the MR that is left. */
	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn, &synd), PRM_STATUS_RES_BUSY);
	assert_int_equal(emu_kernel_dereg_mr(dev, k2, &synd), 0);
	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn, &synd), 0);
	assert_int_equal(emu_dev_destroy(dev), 0);
	free(mem);
}

/*
 * Linux 6.5+ mm/gup.c: a long-term writable pin (ib_umem_get for a
 * writable registration) of a shared mapping of a file whose filesystem
 * tracks dirty pages fails with EFAULT (writable_file_mapping_allowed).
 * The same file registers read-only; memfd (shmem) registers writable.
 */
static void
test_writable_pin_of_a_writeback_file_is_refused(void **state)
{
	char err[256];
	struct emu_dev *dev = emu_dev_create("k2", "fast", err, sizeof(err));
	const size_t len = 2 * 1024 * 1024;
	uint32_t pdn = 0, key = 0, id = 0, synd = 0;
	unsigned int live;
	uint8_t *disk, *shm;
	int fd, mfd;

	(void)state;
	assert_non_null(dev);
	fd = lmf_writeback_file(len);
	if (fd < 0) {
		print_message("no directory on a filesystem with writeback (all tmpfs): "
			      "nothing to refuse here\n");
		assert_int_equal(emu_dev_destroy(dev), 0);
		skip();
	}
	disk = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(disk != MAP_FAILED);
	mfd = memfd_create("test-kernel-shmem", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, (off_t)len), 0);
	shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(shm != MAP_FAILED);
	assert_int_equal(emu_kernel_alloc_pd(dev, &pdn, &synd), 0);
	live = emu_dev_live_objects(dev);

	/* ibv_reg_mr with LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ, as guest memory is. */
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, disk, len, 0, 7, &key, &synd),
			 PRM_STATUS_BAD_PARAM);
	assert_int_equal(synd, EMU_SYND_UMEM_WRITEBACK_FILE);
	assert_int_equal(emu_dev_live_objects(dev), live);
	/* mlx5dv_devx_umem_reg, writable: the same pin. */
	assert_int_equal(emu_umem_reg(dev, disk, len, 1, &id, &synd), PRM_STATUS_BAD_PARAM);
	assert_int_equal(synd, EMU_SYND_UMEM_WRITEBACK_FILE);
	assert_int_equal(id, 0);
	assert_int_equal(emu_dev_live_objects(dev), live);

	/* Read-only (REMOTE_READ): no FOLL_WRITE, pinned. */
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, disk, len, 0, 4, &key, &synd), 0);
	assert_int_equal(emu_kernel_dereg_mr(dev, key, &synd), 0);
	/* shmem needs no writeback: pinned writable. */
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, shm, len, 0, 7, &key, &synd), 0);
	assert_int_equal(emu_kernel_dereg_mr(dev, key, &synd), 0);
	assert_int_equal(emu_umem_reg(dev, shm, len, 1, &id, &synd), 0);
	assert_int_equal(emu_umem_dereg(dev, id, &synd), 0);
	assert_int_equal(emu_dev_live_objects(dev), live);

	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn, &synd), 0);
	assert_int_equal(emu_dev_destroy(dev), 0);
	munmap(disk, len);
	munmap(shm, len);
	close(fd);
	close(mfd);
}

/*
 * hugetlbfs needs no writeback: a huge-page memfd registers writable. A
 * hugetlb mapping takes userfaultfd registrations of whole huge pages
 * only, which the emulator's check must not read as a refusal. Needs one
 * free 2 MiB huge page (vm.nr_hugepages): skipped on a host with none.
 */
static void
test_writable_pin_of_hugetlb_memory_is_taken(void **state)
{
	char err[256];
	struct emu_dev *dev = emu_dev_create("k3", "fast", err, sizeof(err));
	const size_t len = 2 * 1024 * 1024;
	uint32_t pdn = 0, key = 0, synd = 0;
	uint8_t *p = MAP_FAILED;
	int fd;

	(void)state;
	assert_non_null(dev);
	fd = memfd_create("test-kernel-huge", MFD_CLOEXEC | MFD_HUGETLB);
	if (fd >= 0 && ftruncate(fd, (off_t)len) == 0)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	/* The page itself: a mapping without one to give is a SIGBUS at the first touch. */
	if (p == MAP_FAILED || madvise(p, len, MADV_POPULATE_WRITE) != 0) {
		print_message("no free 2 MiB huge page (vm.nr_hugepages): not run\n");
		if (p != MAP_FAILED)
			munmap(p, len);
		if (fd >= 0)
			close(fd);
		assert_int_equal(emu_dev_destroy(dev), 0);
		skip();
	}
	assert_int_equal(emu_kernel_alloc_pd(dev, &pdn, &synd), 0);
	assert_int_equal(emu_kernel_reg_mr(dev, pdn, p, len, 0, 7, &key, &synd), 0);
	assert_int_equal(emu_kernel_dereg_mr(dev, key, &synd), 0);
	assert_int_equal(emu_kernel_dealloc_pd(dev, pdn, &synd), 0);
	assert_int_equal(emu_dev_destroy(dev), 0);
	munmap(p, len);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_general_commands_are_the_kernels_allow_list_only),
		cmocka_unit_test(test_only_creators_pass_as_object_create_commands),
		cmocka_unit_test(test_obj_modify_names_the_handle),
		cmocka_unit_test(test_obj_query_names_the_handle),
		cmocka_unit_test(test_destroy_is_the_handles_own),
		cmocka_unit_test(test_created_object_is_identified_as_the_kernel_does),
		cmocka_unit_test(test_null_mr_is_the_contexts_dump_fill_mkey),
		cmocka_unit_test(test_mkey_over_a_devx_umem_passes_the_kernel),
		cmocka_unit_test(test_kernel_reg_mr_translates_at_its_iova),
		cmocka_unit_test(test_writable_pin_of_a_writeback_file_is_refused),
		cmocka_unit_test(test_writable_pin_of_hugetlb_memory_is_taken),
	};

	emu_set_log(quiet);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
