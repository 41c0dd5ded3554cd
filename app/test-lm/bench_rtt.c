/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm bench rtt: what one vhost-user round trip costs on this
 * host, with no device behind it. A front end's thread sends a request (a
 * 12-byte header and an 8-byte payload, GET_VRING_BASE's size) on a Unix
 * stream socket and blocks for its reply, as QEMU does; a back-end thread
 * waits in poll() and answers, as vhost's event thread does. Measured with
 * both threads on one CPU, on two CPUs, and where the scheduler puts them.
 *
 * Why: a migration's downtime holds a few hundred such round trips (the
 * sources' GET_VRING_BASEs, the destinations' acked requests: migrate
 * prints how many), and on a virtual machine a wake-up on another CPU is an
 * interrupt between vCPUs, several times dearer than on one CPU. This puts
 * a number on that part of the downtime for the host at hand.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "test_lm.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

#define RTT_MSG 20 /* vhost-user header (12) + a u64 payload */

static void
rtt_usage(FILE *f)
{
	fprintf(f,
		"Usage: dpdk-test-lm bench rtt [--count N] [--json FILE]\n\n"
		"Time the vhost-user round trip of this host: a front-end thread sends a\n"
		"20-byte request on a Unix socket and blocks for the reply, a back-end thread\n"
		"polls and answers (vhost's event thread). Three placements: both threads on\n"
		"one CPU, on two CPUs, and unpinned (where the scheduler puts them). A\n"
		"migration's downtime holds a few hundred of them: `migrate` prints how many.\n\n"
		"  --count N    round trips per placement (100-10000000, default 20000)\n"
		"  --json FILE  write the results as JSON\n"
		"  -h, --help   this text\n\n"
		"Exit status: 0 measured; 1 a socket or thread failed; 2 usage.\n");
}

struct rtt_side {
	int sock;
	int cpu;                  /* -1: not pinned */
	unsigned int count;
	int err;                  /* errno of a failure, 0 */
};

struct rtt_place {
	const char *name;
	int cpu_front, cpu_back;  /* -1: not pinned */
	bool measured;
	double median_us, p90_us, mean_us;
};

static int
pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Whole message or an error: a stream socket may split it. */
static int
xfer(int sock, char *buf, bool out)
{
	size_t done = 0;

	while (done < RTT_MSG) {
		ssize_t n = out ? send(sock, buf + done, RTT_MSG - done, MSG_NOSIGNAL) :
				  recv(sock, buf + done, RTT_MSG - done, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		done += (size_t)n;
	}
	return 0;
}

/* The back end: poll, read the request, answer it (vhost's fdset loop, one socket). */
static void *
back_end(void *arg)
{
	struct rtt_side *s = arg;
	struct pollfd p = { .fd = s->sock, .events = POLLIN };
	char buf[RTT_MSG];
	unsigned int i;
	int ret = pin(s->cpu);

	for (i = 0; ret == 0 && i < s->count; i++) {
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR) {
				i--;
				continue;
			}
			ret = -errno;
			break;
		}
		ret = xfer(s->sock, buf, false);
		if (ret == 0)
			ret = xfer(s->sock, buf, true);
	}
	s->err = ret < 0 ? -ret : ret;
	/* A back end that stops early must not leave the front end waiting for a reply. */
	if (s->err != 0)
		shutdown(s->sock, SHUT_RDWR);
	return NULL;
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One placement: count round trips from this thread (restored to its CPUs after). */
static int
measure(struct rtt_place *pl, unsigned int count, const cpu_set_t *all)
{
	struct rtt_side back = { .cpu = pl->cpu_back, .count = count };
	char buf[RTT_MSG] = { 0 };
	pthread_t th;
	double *lat, sum = 0;
	unsigned int i;
	int sv[2], ret;

	lat = calloc(count, sizeof(*lat));
	if (lat == NULL)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		ret = -errno;
		goto out_lat;
	}
	back.sock = sv[1];
	ret = -pthread_create(&th, NULL, back_end, &back);
	if (ret < 0)
		goto out_sock;
	ret = -pin(pl->cpu_front);
	for (i = 0; ret == 0 && i < count; i++) {
		double t = now_us();

		ret = xfer(sv[0], buf, true);
		if (ret == 0)
			ret = xfer(sv[0], buf, false);
		lat[i] = now_us() - t;
		sum += lat[i];
	}
	/* A failed side ends the other: its socket closes. */
	shutdown(sv[0], SHUT_RDWR);
	pthread_join(th, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(*all), all);
	if (ret == 0 && back.err != 0)
		ret = -back.err;
	if (ret == 0) {
		qsort(lat, count, sizeof(*lat), cmp_double);
		pl->measured = true;
		pl->median_us = lat[(count - 1) / 2];
		pl->p90_us = lat[(size_t)count * 9 / 10];
		pl->mean_us = sum / count;
	}
out_sock:
	close(sv[0]);
	close(sv[1]);
out_lat:
	free(lat);
	return ret;
}

static int
write_json(const char *path, const struct rtt_place *pl, unsigned int n, unsigned int count)
{
	json_t *doc = json_object(), *arr = json_array();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s,s:b,s:I}", "placement", pl[i].name, "measured",
				      pl[i].measured, "round_trips",
				      (json_int_t)(pl[i].measured ? count : 0));

		json_object_set_new(o, "median_us", pl[i].measured ?
				    json_real(pl[i].median_us) : json_null());
		json_object_set_new(o, "p90_us", pl[i].measured ?
				    json_real(pl[i].p90_us) : json_null());
		json_object_set_new(o, "mean_us", pl[i].measured ?
				    json_real(pl[i].mean_us) : json_null());
		json_array_append_new(arr, o);
	}
	json_object_set_new(doc, "request_bytes", json_integer(RTT_MSG));
	json_object_set_new(doc, "placements", arr);
	ret = json_dump_file(doc, path, JSON_INDENT(2));
	json_decref(doc);
	if (ret < 0)
		fprintf(stderr, "bench rtt: cannot write %s\n", path);
	return ret;
}

int
bench_rtt(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rtt_place pl[3] = {
		{ .name = "one CPU" }, { .name = "two CPUs" },
		{ .name = "unpinned", .cpu_front = -1, .cpu_back = -1 },
	};
	unsigned int count = 20000, i;
	const char *json = NULL;
	int c, first = -1, second = -1, ret;
	cpu_set_t all;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (test_lm_parse_uint("bench rtt", "--count", optarg, 100, 10000000,
					       &count) < 0)
				return EXIT_USAGE;
			break;
		case 'j': json = optarg; break;
		case 'h': rtt_usage(stdout); return 0;
		default: rtt_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "bench rtt: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (json != NULL && test_lm_check_output("bench rtt", "--json", json) < 0)
		return EXIT_USAGE;
	/* The CPUs this process may use (taskset, cgroups): the first two of them. */
	if (pthread_getaffinity_np(pthread_self(), sizeof(all), &all) != 0)
		return EXIT_FAILED;
	for (c = 0; c < CPU_SETSIZE && second < 0; c++)
		if (CPU_ISSET(c, &all)) {
			if (first < 0)
				first = c;
			else
				second = c;
		}
	pl[0].cpu_front = pl[0].cpu_back = first;
	pl[1].cpu_front = first;
	pl[1].cpu_back = second;
	printf("bench rtt: %u round trips of a %d-byte request and its reply per placement\n\n",
	       count, RTT_MSG);
	printf("| placement | CPUs    | median us | p90 us | mean us |\n"
	       "|-----------|---------|-----------|--------|---------|\n");
	for (i = 0; i < sizeof(pl) / sizeof(pl[0]); i++) {
		char cpus[16];

		if (pl[i].cpu_back < 0 && pl[i].cpu_front != -1) {
			/* Two CPUs asked for, one allowed. */
			printf("| %-9s | %-7s | %9s | %6s | %7s |\n", pl[i].name, "-",
			       "-", "-", "-");
			continue;
		}
		ret = measure(&pl[i], count, &all);
		if (ret < 0) {
			fprintf(stderr, "bench rtt: %s: %s\n", pl[i].name, strerror(-ret));
			return EXIT_FAILED;
		}
		if (pl[i].cpu_front < 0)
			snprintf(cpus, sizeof(cpus), "any");
		else
			snprintf(cpus, sizeof(cpus), "%d,%d", pl[i].cpu_front, pl[i].cpu_back);
		printf("| %-9s | %-7s | %9.1f | %6.1f | %7.1f |\n", pl[i].name, cpus,
		       pl[i].median_us, pl[i].p90_us, pl[i].mean_us);
		fflush(stdout);
	}
	if (pl[1].measured && pl[0].measured && pl[0].median_us > 0)
		printf("\ntwo CPUs / one CPU: %.1fx (median)\n", pl[1].median_us / pl[0].median_us);
	if (json != NULL && write_json(json, pl, sizeof(pl) / sizeof(pl[0]), count) < 0)
		return EXIT_FAILED;
	return 0;
}
