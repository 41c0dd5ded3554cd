/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delay_preload.c, run as meson runs it (LD_PRELOAD, STRESS_EBADF=1,
 * STRESS_PCT=100): a number closed twice is named on stderr, a close that
 * succeeds is not, and the calls it wraps still do what they did (a
 * message through a socket pair, errno kept).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, what) \
	do { \
		if (!(cond)) { \
			fprintf(stdout, "FAIL: %s\n", what); \
			failures++; \
		} \
	} while (0)

static int
count(const char *s, const char *needle)
{
	int k = 0;

	for (; (s = strstr(s, needle)) != NULL; s += strlen(needle))
		k++;
	return k;
}

int
main(void)
{
	int err_pipe[2], sp[2], saved, fd, ret, e;
	char buf[4096], want[64];
	ssize_t n;

	if (pipe(err_pipe) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
		return 2;
	/* The calls still work through the module: a message both ways. */
	CHECK(write(sp[0], "ping", 4) == 4, "write through the module");
	CHECK(read(sp[1], buf, sizeof(buf)) == 4 && memcmp(buf, "ping", 4) == 0,
	      "read through the module");
	/* Its reports go to fd 2: read them back through a pipe. */
	saved = dup(2);
	dup2(err_pipe[1], 2);
	fd = dup(sp[0]);
	CHECK(close(fd) == 0, "first close succeeds");
	errno = 0;
	ret = close(fd);
	e = errno;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(err_pipe[1]);
	CHECK(ret == -1 && e == EBADF, "second close fails with EBADF, errno kept");
	n = read(err_pipe[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "close(%d): EBADF", fd);
	CHECK(strstr(buf, want) != NULL, "the double close is named");
	CHECK(count(buf, "delay_preload: close(") == 1, "named once, the good close not");
	close(err_pipe[0]);
	close(sp[0]);
	close(sp[1]);
	printf("%s\n", failures == 0 ? "ok" : "failed");
	return failures == 0 ? 0 : 1;
}
