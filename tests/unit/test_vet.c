/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Vetting of vhost-user messages (mlx5_lm_vet.c): what
 * DPDK 22.11's vhost would map or handle unchecked is refused, with the
 * message's fds closed; everything else is left to vhost untouched. The
 * message is built as vhost hands it to a pre_msg_handle (struct
 * vhu_msg_context of DPDK 22.11: 12-byte header, 632-byte payload, then
 * 8 fds and their count); payloads follow vhost-user.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_vhost.h>

#include "rte_pmd_mlx5_lm.h"

#define OFF_PAYLOAD 12
#define OFF_FDS 644
#define OFF_FD_NUM 676
#define MSG_SIZE 680
#define MIB (1ull << 20)

/* No such vhost device: nothing negotiated, no vDPA device behind it. */
#define NO_VID (-1)

static void
msg_init(uint8_t *m, uint32_t request, const void *payload, uint32_t size, const int *fds,
	 int nfds)
{
	uint32_t flags = 1;

	memset(m, 0, MSG_SIZE);
	memcpy(m, &request, 4);
	memcpy(m + 4, &flags, 4);
	memcpy(m + 8, &size, 4);
	memcpy(m + OFF_PAYLOAD, payload, size);
	if (nfds > 0)
		memcpy(m + OFF_FDS, fds, sizeof(int) * nfds);
	memcpy(m + OFF_FD_NUM, &nfds, 4);
}

static int
file_of(uint64_t size)
{
	int fd = memfd_create("vet", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static bool
fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static int
fd_num(const uint8_t *m)
{
	int n;

	memcpy(&n, m + OFF_FD_NUM, 4);
	return n;
}

/* SET_MEM_TABLE with one region {gpa, size, uaddr, mmap_offset} over fd. */
static int
vet_table(int fd, uint64_t size, uint64_t off, uint8_t *m)
{
	uint8_t p[8 + 32] = { 1 };
	uint64_t r[4] = { 0, size, 0x7f0000000000ull, off };

	memcpy(p + 8, r, sizeof(r));
	msg_init(m, 5, p, sizeof(p), &fd, 1);
	return rte_pmd_mlx5_lm_vhost_vet(NO_VID, m);
}

/* vhost maps region fds for mmap_offset + size: every byte must be in the file. */
static void
test_regions_past_their_file_are_refused_and_their_fds_closed(void **state)
{
	uint8_t m[MSG_SIZE];
	int fd;

	(void)state;
	fd = file_of(4 * MIB);
	assert_int_equal(vet_table(fd, 4 * MIB, 0, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	assert_true(fd_open(fd));
	assert_int_equal(vet_table(fd, 2 * MIB, 2 * MIB, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	assert_true(fd_open(fd));
	/* One page too far: refused, and the fd (vhost would not close it) closed. */
	assert_int_equal(vet_table(fd, 2 * MIB, 2 * MIB + 4096, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
	assert_int_equal(fd_num(m), 0);
	/* offset + size wrapping past 2^64. */
	fd = file_of(4 * MIB);
	assert_int_equal(vet_table(fd, 2 * MIB, 0 - MIB, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
}

/* vhost-user.rst "Log memory": QEMU maps the log from offset 0, of the declared size. */
static void
test_log_base_must_fit_its_fd_at_offset_zero(void **state)
{
	uint8_t m[MSG_SIZE];
	uint64_t p[2];
	int fd;

	(void)state;
	fd = file_of(MIB);
	p[0] = MIB;
	p[1] = 0;
	msg_init(m, 6, p, sizeof(p), &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	assert_true(fd_open(fd));
	p[0] = MIB + 4096;
	msg_init(m, 6, p, sizeof(p), &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
	fd = file_of(MIB);
	p[0] = MIB / 2;
	p[1] = 4096;
	msg_init(m, 6, p, sizeof(p), &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
}

/*
 * vhost-user.rst: a feature's requests only once it is negotiated. DPDK
 * 22.11 handles SET_INFLIGHT_FD (32) and ADD_MEM_REG (37) regardless.
 */
static void
test_requests_of_features_not_negotiated_are_refused(void **state)
{
	uint8_t m[MSG_SIZE], p[40] = { 0 };
	int fd;

	(void)state;
	fd = file_of(0);
	msg_init(m, 32, p, 20, &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
	fd = file_of(MIB);
	msg_init(m, 37, p, 40, &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_ERR);
	assert_false(fd_open(fd));
	/* Everything else is vhost's: GET_FEATURES, SET_VRING_KICK with its eventfd. */
	msg_init(m, 1, p, 0, NULL, 0);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	fd = eventfd(0, EFD_CLOEXEC);
	assert_true(fd >= 0);
	msg_init(m, 12, p, 8, &fd, 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	assert_true(fd_open(fd));
	close(fd);
}

/*
 * A ring's kick, call and error fds are eventfds, pipes or sockets (the
 * relay polls them in its thread); a file of another kind is refused and
 * closed, and the "no fd" flag (bit 8) is vhost's.
 */
static void
test_ring_fds_of_another_kind_are_refused(void **state)
{
	uint8_t m[MSG_SIZE], p[8] = { 0 };
	int fd, pipe_fds[2];
	unsigned int req;

	(void)state;
	for (req = 12; req <= 14; req++) {
		fd = file_of(0);
		msg_init(m, req, p, 8, &fd, 1);
		assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_ERR);
		assert_false(fd_open(fd));
	}
	assert_int_equal(pipe2(pipe_fds, O_CLOEXEC), 0);
	msg_init(m, 13, p, 8, &pipe_fds[1], 1);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	p[1] = 1;   /* index 0 | VHOST_USER_VRING_NOFD_MASK (0x100), little endian */
	msg_init(m, 13, p, 8, NULL, 0);
	assert_int_equal(rte_pmd_mlx5_lm_vhost_vet(NO_VID, m), RTE_VHOST_MSG_RESULT_NOT_HANDLED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regions_past_their_file_are_refused_and_their_fds_closed),
		cmocka_unit_test(test_log_base_must_fit_its_fd_at_offset_zero),
		cmocka_unit_test(test_requests_of_features_not_negotiated_are_refused),
		cmocka_unit_test(test_ring_fds_of_another_kind_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
