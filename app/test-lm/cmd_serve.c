/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm serve: a vhost-user back end serving one vdpa_mlx5_lm
 * device per socket, until SIGINT or SIGTERM; then a clean teardown whose
 * exit status says whether any device object was left alive.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"

#define MAX_SOCKETS 16

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };

struct served {
	char path[256];
	char devname[64];
	struct rte_vdpa_device *vdpa;
	int registered;
};

static struct served served[MAX_SOCKETS];
static unsigned int nserved;

static void
serve_usage(FILE *f)
{
	fprintf(f,
		"Usage: dpdk-test-lm serve --socket PATH [--socket PATH ...] --devargs \"<devargs>\"\n"
		"                          [--client] [--stats SECONDS] [--msg-timeout MS]\n"
		"                          [--eal \"ARGS\"]\n\n"
		"vhost-user back end: one %s device per socket, served until SIGINT/SIGTERM.\n\n"
		"  --socket PATH    vhost-user socket (repeat for more devices: %s0, %s1, ...;\n"
		"                   each path once)\n"
		"  --devargs ARGS   device arguments, e.g. \"emu=cx6dx\": once for every device,\n"
		"                   or once per socket, in the same order\n"
		"  --client         connect to the front end's socket instead of listening\n"
		"  --stats SECONDS  print per-queue device counters every SECONDS (1..86400)\n"
		"  --msg-timeout MS close a connection whose message payload does not\n"
		"                   arrive within MS (default 3000; 0: wait forever, as\n"
		"                   DPDK's vhost does, holding every socket's messages);\n"
		"                   a reply the front end does not read waits at most MS\n"
		"  --eal ARGS       extra EAL arguments (vhost's own log is at warning level;\n"
		"                   --eal \"--log-level=lib.vhost.*:info\" shows every message)\n"
		"  -h, --help       this text\n\n"
		"Send SIGUSR1 for statistics now. Exit status: 0 clean, 1 failure, 2 usage,\n"
		"3 device objects left alive at teardown.\n", TEST_LM_PMD, TEST_LM_PMD, TEST_LM_PMD);
}

/* vhost requires callbacks; the vDPA device does the work, these only log. */
static void
log_front_end(int vid, const char *what)
{
	char path[256] = "";

	rte_vhost_get_ifname(vid, path, sizeof(path));
	printf("serve: front end %s %s (vhost device %d)\n", what, path, vid);
	fflush(stdout);
}

static int
on_new_device(int vid)
{
	log_front_end(vid, "connected on");
	return 0;
}

static void
on_destroy_device(int vid)
{
	log_front_end(vid, "gone from");
}

/*
 * Every connection vhost lets go of (a device or not), on vhost's thread,
 * after it closed the connection: a test's front end can wait for it
 * before stopping serve, whose rte_vhost_driver_unregister would otherwise
 * close a connection vhost may be replying on (DPDK 22.11 clears its
 * "busy" mark after a callback without the lock that unregister checks it
 * under: ThreadSanitizer sees the close race the reply).
 */
static void
on_destroy_connection(int vid)
{
	log_front_end(vid, "connection closed on");
}

static unsigned int msg_timeout_ms = LM_APP_MSG_TIMEOUT_MS;

static int
on_new_connection(int vid)
{
	return lm_app_vhost_vet_stderr(vid, msg_timeout_ms, "serve");
}

static const struct rte_vhost_device_ops vhost_ops = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
	.new_connection = on_new_connection,
	.destroy_connection = on_destroy_connection,
};

static void
print_stats(void)
{
	struct rte_vdpa_stat_name names[16];
	struct rte_vdpa_stat vals[16];
	unsigned int s;

	for (s = 0; s < nserved; s++) {
		uint32_t nq = 0;
		int n, q, i;

		if (served[s].vdpa == NULL || rte_vdpa_get_queue_num(served[s].vdpa, &nq) < 0)
			continue;
		n = rte_vdpa_get_stats_names(served[s].vdpa, names, RTE_DIM(names));
		if (n <= 0)
			continue;
		printf("%s (%s):\n  %-8s", served[s].devname, served[s].path, "queue");
		/*
		 * Upstream's names have spaces ("bad descriptor errors"): columns
		 * are separated by at least two spaces, names never contain two.
		 */
		for (i = 0; i < n; i++)
			printf("  %21s", names[i].name);
		printf("\n");
		for (q = 0; q < (int)nq * 2; q++) {
			int r = rte_vdpa_get_stats(served[s].vdpa, q, vals, n);

			/* A device without counter sets lists the names but counts nothing. */
			if (r == -ENOTSUP) {
				printf("  no queue counters on this device: "
				       "statistics not supported\n");
				break;
			}
			if (r != n)
				continue;
			printf("  %-3s %-4d", q & 1 ? "tx" : "rx", q / 2);
			for (i = 0; i < n; i++)
				printf("  %21" PRIu64, vals[i].value);
			printf("\n");
		}
	}
	printf("serve: end of statistics\n");
	fflush(stdout);
}

static int
serve_socket(struct served *s, const char *devargs, int client)
{
	char msg[512];

	/* A client connects (and retries) to the front end's socket: nothing to check. */
	if (!client) {
		int r = lm_app_sock_check(s->path, msg, sizeof(msg));

		if (r < 0) {
			fprintf(stderr, "serve: %s\n", msg);
			return -1;
		}
		if (r > 0)
			printf("serve: %s\n", msg);
	}
	if (lm_app_probe_device(s->devname, devargs) < 0)
		return -1;
	s->vdpa = rte_vdpa_find_device_by_name(s->devname);
	if (s->vdpa == NULL) {
		fprintf(stderr, "serve: %s has no vDPA device\n", s->devname);
		return -1;
	}
	if (lm_app_vhost_start(s->path, s->vdpa, client, &vhost_ops, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "serve: %s\n", msg);
		return -1;
	}
	s->registered = 1;
	printf("serve: %s on %s (%s)\n", s->devname, s->path, client ? "client" : "server");
	fflush(stdout);
	return 0;
}

int
cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "devargs", required_argument, NULL, 'd' },
		{ "client", no_argument, NULL, 'c' },
		{ "stats", required_argument, NULL, 't' },
		{ "eal", required_argument, NULL, 'e' },
		{ "msg-timeout", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devargs[MAX_SOCKETS], *eal = NULL;
	char eal_args[1024];
	unsigned int ndevargs = 0;
	int c, client = 0, ret = 0, stats_period = 0;
	unsigned long leaked;
	sigset_t sigs;
	unsigned int i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (nserved == MAX_SOCKETS) {
				fprintf(stderr, "serve: at most %d sockets\n", MAX_SOCKETS);
				return EXIT_USAGE;
			}
			/* An empty path names no socket: vhost would "serve" nothing. */
			if (optarg[0] == '\0') {
				fprintf(stderr, "serve: --socket: the path is empty\n");
				return EXIT_USAGE;
			}
			/*
			 * The same path twice: the second check finds the first
			 * listening and blames "another process", ourselves.
			 */
			for (i = 0; i < nserved; i++) {
				if (strcmp(served[i].path, optarg) == 0) {
					fprintf(stderr, "serve: --socket %s given twice\n", optarg);
					return EXIT_USAGE;
				}
			}
			snprintf(served[nserved].path, sizeof(served[nserved].path), "%s", optarg);
			snprintf(served[nserved].devname, sizeof(served[nserved].devname), "%s%u",
				 TEST_LM_PMD, nserved);
			nserved++;
			break;
		case 'd':
			if (ndevargs == MAX_SOCKETS) {
				fprintf(stderr, "serve: at most %d --devargs\n", MAX_SOCKETS);
				return EXIT_USAGE;
			}
			devargs[ndevargs++] = optarg;
			break;
		case 'c':
			client = 1;
			break;
		case 't': {
			unsigned int v;

			/* Whole: "5x" is a typo, not 5 s (atoi took it as 5). */
			if (test_lm_parse_uint("serve", "--stats", optarg, 1, 86400, &v) < 0)
				return EXIT_USAGE;
			stats_period = (int)v;
			break;
		}
		case 'e':
			eal = optarg;
			break;
		case 'm': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 0);

			if (*optarg == '\0' || *end != '\0' || v > 3600000) {
				fprintf(stderr, "serve: --msg-timeout takes milliseconds, "
					"0..3600000\n");
				return EXIT_USAGE;
			}
			msg_timeout_ms = (unsigned int)v;
			break;
		}
		case 'h':
			serve_usage(stdout);
			return 0;
		default:
			serve_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (nserved == 0 || ndevargs == 0 || optind != argc) {
		serve_usage(stderr);
		return EXIT_USAGE;
	}
	if (ndevargs != 1 && ndevargs != nserved) {
		fprintf(stderr, "serve: %u --devargs for %u sockets: give one for all, or one "
			"per socket\n", ndevargs, nserved);
		return EXIT_USAGE;
	}
	/* Every thread EAL and vhost start inherits this mask: only we take the signals. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/*
	 * vhost logs ~90 VHOST_CONFIG lines per connection at info level, which
	 * bury serve's own; its warnings and errors stay. --eal can raise it
	 * again (a later --log-level wins).
	 */
	snprintf(eal_args, sizeof(eal_args), "--log-level=lib.vhost.*:warning%s%s",
		 eal != NULL ? " " : "", eal != NULL ? eal : "");
	if (lm_app_eal_init("dpdk-test-lm", eal_args) < 0)
		return EXIT_FAILED;
	for (i = 0; i < nserved; i++) {
		if (serve_socket(&served[i], devargs[ndevargs == 1 ? 0 : i], client) < 0) {
			ret = EXIT_FAILED;
			goto teardown;
		}
	}
	printf("serve: ready (%u device%s); SIGINT or SIGTERM to stop\n", nserved,
	       nserved > 1 ? "s" : "");
	fflush(stdout);
	for (;;) {
		struct timespec period = { .tv_sec = stats_period };
		int sig = stats_period ? sigtimedwait(&sigs, NULL, &period) : sigwaitinfo(&sigs, NULL);

		if (sig == SIGUSR1 || (sig < 0 && errno == EAGAIN)) {
			print_stats();
			continue;
		}
		if (sig == SIGINT || sig == SIGTERM) {
			printf("serve: %s, tearing down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
			break;
		}
	}
teardown:
	for (i = 0; i < nserved; i++) {
		if (served[i].registered)
			lm_app_vhost_stop(served[i].path);
		if (served[i].vdpa != NULL)
			lm_app_remove_device(served[i].devname);
	}
	leaked = rte_pmd_mlx5_lm_emu_leaked_objects();
	if (leaked > 0) {
		fprintf(stderr, "serve: %lu device objects were left alive at teardown\n", leaked);
		ret = EXIT_LEAK;
	} else if (ret == 0) {
		printf("serve: clean teardown, every device object destroyed\n");
	}
	lm_app_eal_cleanup();
	return ret;
}
