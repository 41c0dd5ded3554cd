/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An LD_PRELOAD module for hunting races that show only "when the machine
 * is busy": it delays, at random, the calls where threads hand each other
 * fds and messages (close, socket, connect, accept, poll, epoll_wait,
 * sendmsg, recvmsg, read, write), before and after the real call, so that
 * the interleavings a loaded host produces once in hundreds of runs come
 * every few runs. It also names any close() that fails with EBADF - a
 * number closed twice, which on a busy process closes someone else's fd
 * the day the number was reused in between.
 *
 *   STRESS_PCT=N     chance in percent of a delay at each point (default 5)
 *   STRESS_US=N      longest delay, microseconds (default 300)
 *   STRESS_THREAD=S  only threads whose name contains S (vhost-events,
 *                    mlx5-lm, the test's own name...); default: all
 *   STRESS_EBADF=1   report each close() that fails with EBADF, with a
 *                    backtrace, on stderr
 *
 * tests/stress/stress_loop.sh runs a test binary under it N times and
 * keeps what a hang or a failure leaves. doc/reliability.md says how it
 * was used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread uint64_t rnd;      /* xorshift state, 0: thread not seen yet */
static __thread int left_alone;    /* not a thread STRESS_THREAD names */

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL ? atoi(v) : dflt;
}

static void
maybe_delay(void)
{
	int pct = env_int("STRESS_PCT", 5), max_us = env_int("STRESS_US", 300);
	struct timespec ts;

	if (rnd == 0) {
		const char *want = getenv("STRESS_THREAD");
		char name[32] = "";

		rnd = (uint64_t)pthread_self() ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
		/* Named by now: DPDK names its control threads before running them. */
		prctl(PR_GET_NAME, name, 0, 0, 0);
		left_alone = want != NULL && strstr(name, want) == NULL;
	}
	if (left_alone || pct <= 0 || max_us <= 0)
		return;
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	if ((int)(rnd % 100) >= pct)
		return;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)((rnd >> 20) % (uint64_t)max_us) * 1000;
	/* The raw call: a sanitizer's nanosleep interceptor is no part of the delay. */
	syscall(SYS_nanosleep, &ts, NULL);
}

/* The next definition of name, looked up once. */
#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (real_##name == NULL) \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

#define WRAP(ret, name, params, args) \
	ret name params \
	{ \
		ret r; \
		int e; \
		REAL(name); \
		maybe_delay(); \
		r = real_##name args; \
		e = errno; \
		maybe_delay(); \
		errno = e; \
		return r; \
	}

WRAP(int, socket, (int d, int t, int p), (d, t, p))
WRAP(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
WRAP(int, accept, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l))
WRAP(int, accept4, (int fd, struct sockaddr *a, socklen_t *l, int f), (fd, a, l, f))
WRAP(int, poll, (struct pollfd *p, nfds_t n, int t), (p, n, t))
WRAP(int, epoll_wait, (int ep, struct epoll_event *ev, int n, int t), (ep, ev, n, t))
WRAP(ssize_t, sendmsg, (int fd, const struct msghdr *m, int f), (fd, m, f))
WRAP(ssize_t, recvmsg, (int fd, struct msghdr *m, int f), (fd, m, f))
WRAP(ssize_t, read, (int fd, void *b, size_t n), (fd, b, n))
WRAP(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n))

int
close(int fd)
{
	char line[64];
	void *bt[32];
	int r, e, n, len;

	REAL(close);
	maybe_delay();
	r = real_close(fd);
	e = errno;
	if (r < 0 && e == EBADF && fd >= 0 && env_int("STRESS_EBADF", 0) != 0) {
		/* Raw writes: no stdio lock, no recursion through write() above. */
		len = snprintf(line, sizeof(line), "\ndelay_preload: close(%d): EBADF\n", fd);
		syscall(SYS_write, 2, line, (size_t)len);
		n = backtrace(bt, 32);
		backtrace_symbols_fd(bt, n, 2);
	}
	maybe_delay();
	errno = e;
	return r;
}
