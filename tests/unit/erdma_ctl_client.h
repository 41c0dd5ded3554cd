/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A unit test's request to the emulated rdma-core's control socket of
 * mlx5_0 (emu-rdma/erdma_ctl.c, MLX5_LM_ERDMA_CONTROL = ctl_dir): one
 * request, one reply ("ok [VALUE]"), anything else fails the test.
 * Include after cmocka.h.
 */
#ifndef MLX5_LM_ERDMA_CTL_CLIENT_H
#define MLX5_LM_ERDMA_CTL_CLIENT_H

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char ctl_dir[] = "/tmp/test_erdma_ctl_XXXXXX";

static void
ctl(const char *req, char *reply, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/mlx5_0", ctl_dir);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true(send(fd, req, strlen(req), 0) > 0);
	n = recv(fd, reply, len - 1, 0);
	close(fd);
	assert_true(n >= 2);
	reply[n] = '\0';
	assert_memory_equal(reply, "ok", 2);
}

#endif /* MLX5_LM_ERDMA_CTL_CLIENT_H */
