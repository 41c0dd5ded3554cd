/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm bench mr: register and deregister the guest memory of one
 * emulated device the way DRIVER_OK and dev_close do, with a QEMU-like
 * layout (3 GiB at GPA 0, the rest at 4 GiB) in one sparse memfd, and
 * check a sample of translations through the device's mkey.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"

#define GIB (1ull << 30)
#define MAX_RUNS 8

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };

static void
bench_usage(FILE *f)
{
	fprintf(f,
		"Usage: dpdk-test-lm bench mr --mem-gb G --workers W[,W...] [options]\n"
		"       dpdk-test-lm bench rtt [--count N] [--json FILE]  (bench rtt --help)\n\n"
		"Register and deregister the guest memory of one emulated device, as DRIVER_OK\n"
		"and dev_close do, and verify translations through the device's mkey.\n\n"
		"  --mem-gb G         guest memory (QEMU layout: 3 GiB at 0, the rest at 4 GiB)\n"
		"  --workers LIST     MKEY worker threads, e.g. 1,16 to compare in one run\n"
		"  --gc-ms MS         deferred deletion delay, 0 = delete in the caller (default 100)\n"
		"  --chunk-mb MB      registration chunk (default 1024)\n"
		"  --profile NAME     emulator cost model (default cx6dx)\n"
		"  --sample N         spread-sampled pages to verify (default 4096)\n"
		"  --json FILE        write the results as JSON\n"
		"  --eal ARGS         extra EAL arguments\n"
		"  -h, --help         this text\n\n"
		"Exit status: 0 every run registered, translated and deregistered; 1 a run\n"
		"failed; 2 usage; 3 device objects left alive.\n");
}

struct run {
	unsigned int workers;
	struct rte_pmd_mlx5_lm_mr_result res;
};

static int
one_run(unsigned int idx, const char *profile, unsigned int workers, unsigned int gc_ms,
	unsigned int chunk_mb, const struct rte_pmd_mlx5_lm_region *regions, unsigned int nreg,
	unsigned int sample, struct rte_pmd_mlx5_lm_mr_result *res)
{
	char name[64], args[256];
	int ret;

	snprintf(name, sizeof(name), "%s%u", TEST_LM_PMD, idx);
	snprintf(args, sizeof(args), "emu=%s,queues=1,workers=%u,mr_gc_ms=%u,mr_chunk_mb=%u",
		 profile, workers, gc_ms, chunk_mb);
	if (lm_app_probe_device(name, args) < 0)
		return -1;
	ret = rte_pmd_mlx5_lm_mr_bench(name, regions, nreg, sample, res);
	if (ret < 0)
		fprintf(stderr, "bench mr: %s: registration failed: %s\n", name, strerror(-ret));
	if (lm_app_remove_device(name) < 0)
		ret = -1;
	return ret;
}

static int
write_json(const char *path, const char *profile, unsigned int mem_gb, unsigned int nreg,
	   const struct run *runs, unsigned int nruns)
{
	json_t *arr = json_array();
	json_t *root;
	unsigned int i;
	int ret;

	for (i = 0; i < nruns; i++) {
		const struct rte_pmd_mlx5_lm_mr_result *r = &runs[i].res;

		json_array_append_new(arr, json_pack("{s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:I,s:I}",
			"model", profile, "mem_gb", (json_int_t)mem_gb, "regions", (json_int_t)nreg,
			"workers", (json_int_t)runs[i].workers, "chunks", (json_int_t)r->chunks,
			"create_ms", r->create_ms, "destroy_ms", r->destroy_ms,
			"close_path_ms", r->close_path_ms,
			"verified_pages", (json_int_t)r->verified_pages,
			"checked_pages", (json_int_t)r->checked_pages));
	}
	/* One run: the object of the contract; several: an array of them. */
	root = nruns == 1 ? json_incref(json_array_get(arr, 0)) : json_incref(arr);
	ret = json_dump_file(root, path, JSON_INDENT(1));
	json_decref(root);
	json_decref(arr);
	if (ret < 0)
		fprintf(stderr, "bench mr: cannot write %s\n", path);
	return ret;
}

static int
bench_mr(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem-gb", required_argument, NULL, 'm' },
		{ "workers", required_argument, NULL, 'w' },
		{ "gc-ms", required_argument, NULL, 'g' },
		{ "chunk-mb", required_argument, NULL, 'c' },
		{ "profile", required_argument, NULL, 'p' },
		{ "sample", required_argument, NULL, 's' },
		{ "json", required_argument, NULL, 'j' },
		{ "eal", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *profile = "cx6dx", *json = NULL, *eal = NULL, *wlist = NULL;
	unsigned int mem_gb = 0, gc_ms = 100, chunk_mb = 1024, sample = 4096;
	struct rte_pmd_mlx5_lm_region regions[2];
	struct run runs[MAX_RUNS];
	unsigned int nruns = 0, nreg, i;
	char *copy, *tok, *save = NULL;
	unsigned long leaked;
	void *base;
	int c, fd, ret = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (test_lm_parse_uint("bench mr", "--mem-gb", optarg, 1, 4096, &mem_gb) < 0)
				return EXIT_USAGE;
			break;
		case 'w': wlist = optarg; break;
		case 'g':
			if (test_lm_parse_uint("bench mr", "--gc-ms", optarg, 0, 600000, &gc_ms) < 0)
				return EXIT_USAGE;
			break;
		case 'c':
			/* mr_chunk_mb's range (doc/devargs.md); the driver says why a size fails. */
			if (test_lm_parse_uint("bench mr", "--chunk-mb", optarg, 2, 65536,
					       &chunk_mb) < 0)
				return EXIT_USAGE;
			break;
		case 'p': profile = optarg; break;
		case 's':
			if (test_lm_parse_uint("bench mr", "--sample", optarg, 1, 1u << 24,
					       &sample) < 0)
				return EXIT_USAGE;
			break;
		case 'j': json = optarg; break;
		case 'e': eal = optarg; break;
		case 'h': bench_usage(stdout); return 0;
		default: bench_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "bench mr: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (mem_gb == 0) {
		fprintf(stderr, "bench mr: --mem-gb: missing (a size in [1, 4096] GiB)\n");
		return EXIT_USAGE;
	}
	if (wlist == NULL) {
		fprintf(stderr, "bench mr: --workers: missing (a list of pool sizes, e.g. 1,16)\n");
		return EXIT_USAGE;
	}
	if (test_lm_check_profile("bench mr", profile) < 0 ||
	    (json != NULL && test_lm_check_output("bench mr", "--json", json) < 0))
		return EXIT_USAGE;
	copy = strdup(wlist);
	if (copy == NULL)
		return EXIT_FAILED;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (nruns == MAX_RUNS) {
			fprintf(stderr, "bench mr: --workers: at most %u sizes\n", MAX_RUNS);
			free(copy);
			return EXIT_USAGE;
		}
		if (test_lm_parse_uint("bench mr", "--workers", tok, 1, 64,
				       &runs[nruns].workers) < 0) {
			free(copy);
			return EXIT_USAGE;
		}
		nruns++;
	}
	free(copy);
	if (nruns == 0) {
		fprintf(stderr, "bench mr: --workers: empty (a list of pool sizes, e.g. 1,16)\n");
		return EXIT_USAGE;
	}

	/* One sparse memfd; nothing is touched, so 256 GiB costs no memory. */
	fd = memfd_create("lm-guest", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)mem_gb * GIB) < 0) {
		fprintf(stderr, "bench mr: cannot create a %u GiB memfd: %s\n", mem_gb,
			strerror(errno));
		return EXIT_FAILED;
	}
	base = mmap(NULL, (size_t)mem_gb * GIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		    fd, 0);
	if (base == MAP_FAILED) {
		fprintf(stderr, "bench mr: cannot map %u GiB: %s\n", mem_gb, strerror(errno));
		close(fd);
		return EXIT_FAILED;
	}
	regions[0].gpa = 0;
	regions[0].size = (mem_gb < 3 ? mem_gb : 3) * GIB;
	regions[0].hva = (uintptr_t)base;
	regions[0].page_size = 4096;
	nreg = 1;
	if (mem_gb > 3) {
		regions[1].gpa = 4 * GIB;
		regions[1].size = (uint64_t)(mem_gb - 3) * GIB;
		regions[1].hva = (uintptr_t)base + 3 * GIB;
		regions[1].page_size = 4096;
		nreg = 2;
	}
	if (lm_app_eal_init("dpdk-test-lm", eal) < 0) {
		ret = EXIT_FAILED;
		goto out_map;
	}
	printf("bench mr: %u GiB in %u regions, profile %s, chunk %u MiB, gc %u ms\n\n", mem_gb,
	       nreg, profile, chunk_mb, gc_ms);
	printf("  %7s %7s %11s %11s %14s %9s\n", "workers", "chunks", "create_ms", "destroy_ms",
	       "close_path_ms", "verified");
	for (i = 0; i < nruns; i++) {
		fflush(stdout);
		if (one_run(i, profile, runs[i].workers, gc_ms, chunk_mb, regions, nreg, sample,
			    &runs[i].res) < 0) {
			ret = EXIT_FAILED;
			goto out_eal;
		}
		printf("  %7u %7u %11.1f %11.1f %14.3f %4lu/%-4lu\n", runs[i].workers,
		       runs[i].res.chunks, runs[i].res.create_ms, runs[i].res.destroy_ms,
		       runs[i].res.close_path_ms, (unsigned long)runs[i].res.verified_pages,
		       (unsigned long)runs[i].res.checked_pages);
		if (runs[i].res.verified_pages != runs[i].res.checked_pages) {
			fprintf(stderr, "bench mr: %lu pages translated to the wrong host address\n",
				(unsigned long)(runs[i].res.checked_pages -
						runs[i].res.verified_pages));
			ret = EXIT_FAILED;
		}
	}
	if (nruns > 1)
		printf("\n  create speed-up %u -> %u workers: %.1fx; destroy: %.1fx\n",
		       runs[0].workers, runs[nruns - 1].workers,
		       runs[0].res.create_ms / runs[nruns - 1].res.create_ms,
		       runs[0].res.destroy_ms / runs[nruns - 1].res.destroy_ms);
	if (json != NULL && write_json(json, profile, mem_gb, nreg, runs, nruns) < 0)
		ret = EXIT_FAILED;
	leaked = rte_pmd_mlx5_lm_emu_leaked_objects();
	if (leaked > 0) {
		fprintf(stderr, "bench mr: %lu device objects left alive\n", leaked);
		ret = EXIT_LEAK;
	}
out_eal:
	lm_app_eal_cleanup();
out_map:
	munmap(base, (size_t)mem_gb * GIB);
	close(fd);
	return ret;
}

int
cmd_bench(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "mr") == 0)
		return bench_mr(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "rtt") == 0)
		return bench_rtt(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		bench_usage(stdout);
		return 0;
	}
	bench_usage(stderr);
	return EXIT_USAGE;
}
