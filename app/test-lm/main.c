/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm: probe, serve, benchmark and live-migrate mlx5-lm vDPA
 * devices (emulated or real) through DPDK's public API.
 */
#include <stdio.h>
#include <string.h>

#include "test_lm.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "probe", cmd_probe, "probe one device, print its capabilities, tear down" },
	{ "bench", cmd_bench, "benchmarks: 'bench mr' registers guest memory, 'bench rtt' "
	  "times a vhost-user round trip" },
	{ "serve", cmd_serve, "vhost-user back end, one device per socket, until SIGTERM" },
	{ "migrate", cmd_migrate, "in-process live migration of emulated devices: downtime" },
};

static void
usage(FILE *f, const char *prog)
{
	size_t i;

	fprintf(f, "Usage: %s <command> [options]\n\n"
		"mlx5-lm test and benchmark tool: drives the vdpa_mlx5_lm PMD through DPDK.\n\n"
		"Commands:\n", prog);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun '%s <command> --help' for a command's options.\n", prog);
}

int
main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout, argv[0]);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", argv[0], argv[1]);
	usage(stderr, argv[0]);
	return 2;
}
