/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control-socket client (app/common/lm_app_rpc.c) against a service
 * played by this test: a connection the service closed as idle (its
 * --rpc-idle-timeout) is opened again by the next call, which is answered;
 * a service that accepts nothing, or reads nothing, costs a call its
 * timeout, no more.
 */
#include <errno.h>
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
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "lm_app_rpc.h"

#define DEADLINE_MS 10000

struct service {
	int lfd;
	unsigned int conns;      /* connections it serves */
	unsigned int served;     /* connections that got their answer */
	int closed;              /* the first one closed, as idle */
};

static int64_t
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One request read whole from fd (bounded), answered with its id and the connection's number. */
static bool
answer_one(int fd, unsigned int conn)
{
	char buf[4096], reply[128];
	size_t len = 0;
	json_error_t e;
	json_t *req = NULL;
	int64_t end = now_ms() + DEADLINE_MS;

	while (req == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (now_ms() > end || poll(&p, 1, DEADLINE_MS) != 1)
			return false;
		r = read(fd, buf + len, sizeof(buf) - len);
		if (r <= 0)
			return false;
		len += (size_t)r;
		req = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, &e);
	}
	snprintf(reply, sizeof(reply), "{\"jsonrpc\": \"2.0\", \"id\": %lld, \"result\": %u}\n",
		 (long long)json_integer_value(json_object_get(req, "id")), conn);
	json_decref(req);
	return write(fd, reply, strlen(reply)) == (ssize_t)strlen(reply);
}

/* Each connection: one call answered, then closed (as idle, for the first one). */
static void *
service_thread(void *arg)
{
	struct service *s = arg;
	unsigned int conn;

	for (conn = 1; conn <= s->conns; conn++) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			break;
		if (answer_one(fd, conn))
			__atomic_add_fetch(&s->served, 1, __ATOMIC_RELEASE);
		close(fd);
		if (conn == 1)
			__atomic_store_n(&s->closed, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The service's listening socket at path. */
static int
listening(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

/* The other end of fd closed (its stream ended). */
static bool
peer_closed(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	return poll(&p, 1, 0) == 1 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/*
 * A connection closed as idle is opened again by the next call; one that
 * found the service gone (restarting) is tried again by the call after.
 */
static void
test_a_connection_closed_as_idle_is_opened_again(void **state)
{
	char dir[] = "/tmp/test-lm-app-rpc-XXXXXX", path[108], err[256];
	struct service s = { 0 };
	struct lm_app_rpc c;
	pthread_t t;
	json_t *r;
	int64_t end;
	int code;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rpc.sock", dir);
	s = (struct service){ .lfd = listening(path), .conns = 2 };
	assert_int_equal(pthread_create(&t, NULL, service_thread, &s), 0);

	assert_int_equal(lm_app_rpc_open(&c, path, DEADLINE_MS, err, sizeof(err)), 0);
	r = lm_app_rpc_call(&c, "device_list", NULL, DEADLINE_MS, &code, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(json_integer_value(r), 1);
	json_decref(r);
	/* The service lets the idle connection go. */
	end = now_ms() + DEADLINE_MS;
	while (!__atomic_load_n(&s.closed, __ATOMIC_ACQUIRE) && now_ms() < end)
		usleep(1000);
	assert_true(__atomic_load_n(&s.closed, __ATOMIC_ACQUIRE));
	/* The next call goes on a new connection, with the next id. */
	r = lm_app_rpc_call(&c, "device_list", NULL, DEADLINE_MS, &code, err, sizeof(err));
	if (r == NULL)
		print_error("second call: %s\n", err);
	assert_non_null(r);
	assert_int_equal(json_integer_value(r), 2);
	assert_int_equal(c.next_id, 2);
	json_decref(r);
	pthread_join(t, NULL);
	assert_int_equal(s.served, 2);
	/* The service goes (its socket too): the next call cannot reach it. */
	close(s.lfd);
	unlink(path);
	end = now_ms() + DEADLINE_MS;
	while (!peer_closed(c.fd) && now_ms() < end)
		usleep(1000);
	r = lm_app_rpc_call(&c, "device_list", NULL, DEADLINE_MS, &code, err, sizeof(err));
	assert_null(r);
	assert_non_null(strstr(err, "cannot reach mlx5-lm-vhostd"));
	/* It comes back: the call after reaches it. */
	s = (struct service){ .lfd = listening(path), .conns = 1 };
	assert_int_equal(pthread_create(&t, NULL, service_thread, &s), 0);
	r = lm_app_rpc_call(&c, "device_list", NULL, DEADLINE_MS, &code, err, sizeof(err));
	if (r == NULL)
		print_error("call after the service came back: %s\n", err);
	assert_non_null(r);
	assert_int_equal(json_integer_value(r), 1);
	json_decref(r);
	lm_app_rpc_close(&c);
	pthread_join(t, NULL);
	close(s.lfd);
	unlink(path);
	rmdir(dir);
}

/* What the test waits for in the client, for the watchdog to say if it never returns. */
static const char *waiting_for;

static void
watchdog(int sig)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "still waiting after %d ms: %s\n", DEADLINE_MS,
			 waiting_for);

	(void)sig;
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		_exit(2);
	_exit(1);
}

/* Until DEADLINE_MS from now, then the watchdog ends the test saying what hung. */
static void
watch(const char *what)
{
	waiting_for = what;
	signal(SIGALRM, watchdog);
	alarm(DEADLINE_MS / 1000);
}

/*
 * A service whose queue of connections is full (listen(0) and one connection
 * queued, never accepted), as a busy, stopped or hung one: opening and a
 * one-shot call each give up within their timeout, and say so.
 */
static void
test_a_service_that_accepts_nothing_costs_the_timeout(void **state)
{
	char dir[] = "/tmp/test-lm-app-rpc-XXXXXX", path[108], err[256];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct lm_app_rpc c;
	int lfd, queued;
	int64_t t0;
	json_t *r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rpc.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	queued = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(queued, (struct sockaddr *)&sa, sizeof(sa)), 0);

	watch("lm_app_rpc_open (500 ms) on a service whose queue of connections is full");
	t0 = now_ms();
	assert_int_equal(lm_app_rpc_open(&c, path, 500, err, sizeof(err)), -1);
	assert_true(now_ms() - t0 >= 400 && now_ms() - t0 < 5000);
	assert_non_null(strstr(err, "did not accept the connection within 0.5 s"));
	lm_app_rpc_close(&c);

	watch("lm_app_rpc_once (500 ms) on a service whose queue of connections is full");
	t0 = now_ms();
	r = lm_app_rpc_once(path, "device_list", NULL, 500, err, sizeof(err));
	assert_null(r);
	assert_true(now_ms() - t0 < 5000);
	assert_non_null(strstr(err, "did not accept the connection within 0.5 s"));
	alarm(0);
	close(queued);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/*
 * A service that takes the connection (queued) and never reads: a request
 * larger than the socket's buffers gives up within the call's timeout.
 */
static void
test_a_service_that_reads_nothing_costs_the_timeout(void **state)
{
	char dir[] = "/tmp/test-lm-app-rpc-XXXXXX", path[108], err[256];
	size_t big = 8u << 20;
	char *blob = malloc(big + 1);
	struct lm_app_rpc c;
	json_t *params;
	int64_t t0;
	int lfd, code;

	(void)state;
	assert_non_null(blob);
	memset(blob, 'x', big);
	blob[big] = '\0';
	params = json_pack("{s:s}", "blob", blob);
	free(blob);
	assert_non_null(params);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rpc.sock", dir);
	lfd = listening(path);

	assert_int_equal(lm_app_rpc_open(&c, path, DEADLINE_MS, err, sizeof(err)), 0);
	watch("lm_app_rpc_call (500 ms) sending 8 MiB to a service that reads nothing");
	t0 = now_ms();
	assert_null(lm_app_rpc_call(&c, "device_list", params, 500, &code, err, sizeof(err)));
	alarm(0);
	assert_true(now_ms() - t0 < 5000);
	assert_non_null(strstr(err, "did not take the request within 0.5 s"));
	lm_app_rpc_close(&c);
	json_decref(params);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_connection_closed_as_idle_is_opened_again),
		cmocka_unit_test(test_a_service_that_accepts_nothing_costs_the_timeout),
		cmocka_unit_test(test_a_service_that_reads_nothing_costs_the_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
