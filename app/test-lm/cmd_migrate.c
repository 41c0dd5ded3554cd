/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: in-process live migration between emulated source
 * and destination devices, one stage per downtime technique, measured as
 * design.md defines it; prints the seed-style table, writes the JSON and
 * (with --plot) the breakdown chart through tools/plot_migrate.py.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"
#include "migrate_int.h"

#ifndef TEST_LM_TOOLS_DIR
#define TEST_LM_TOOLS_DIR "tools"
#endif

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };

/* Scenarios are names for shapes, nothing more (design.md). */
static const struct mig_shape scenarios[] = {
	{ "seed-precreate", 1, 16, 256, 256, false },
	{ "seed-mkey", 4, 16, 256, 256, false },
};

/* Each technique alone on top of the baseline, then all of them. */
static const struct mig_stage_def stage_defs[] = {
	{ "baseline", 0, 1, 0, 0 },
	{ "precreate", 1, 1, 0, 0 },
	{ "parallel-mkey", 0, 16, 0, 0 },
	{ "deferred-delete", 0, 1, 100, 0 },
	{ "all", 1, 16, 100, 1 },
};
#define NSTAGES (sizeof(stage_defs) / sizeof(stage_defs[0]))

static void
migrate_usage(FILE *f)
{
	fprintf(f,
		"Usage: dpdk-test-lm migrate (--scenario NAME | --devices N --queue-pairs Q\n"
		"                             --mem-gb G [--queue-size S]) [options]\n\n"
		"Live-migrate a VM's %s NICs between emulated source and destination\n"
		"devices in this process, with guest traffic running, through a built-in\n"
		"vhost-user front end that follows QEMU's message order; once per stage.\n\n"
		"  --scenario NAME    seed-precreate (1 device, 16 queue pairs, 256 GiB) or\n"
		"                     seed-mkey (4 devices, 16 queue pairs each, 256 GiB)\n"
		"  --devices N        NICs of the VM (1-%d)\n"
		"  --queue-pairs Q    queue pairs per NIC (1-%d)\n"
		"  --mem-gb G         guest memory (QEMU layout: 3 GiB at 0, the rest at 4 GiB)\n"
		"  --queue-size S     ring size, a power of two (default 256)\n"
		"  --packed           packed rings instead of split\n"
		"  --stages LIST      comma-separated, from baseline,precreate,parallel-mkey,\n"
		"                     deferred-delete,all (default: all five, in that order)\n"
		"  --profile P        emulator cost model (default cx6dx; fast = zero cost)\n"
		"  --frames N         frames every queue pair gets back per traffic phase\n"
		"                     (default 256)\n"
		"  --json FILE        write the results as JSON (design.md)\n"
		"  --plot FILE        write the per-stage breakdown as an SVG chart\n"
		"  --eal ARGS         extra EAL arguments\n"
		"  -h, --help         this text\n\n"
		"Downtime: from the first GET_VRING_BASE sent to a source device to the moment\n"
		"every destination device has completed a guest packet posted after the restart.\n"
		"Exit status: 0 every stage migrated without loss, duplicate or unlogged page;\n"
		"1 otherwise; 2 usage; 3 device objects left alive.\n",
		TEST_LM_PMD, MIG_MAX_DEVICES, MIG_MAX_QUEUE_PAIRS);
}

static int
parse_uint(const char *opt, const char *s, unsigned int min, unsigned int max,
	   unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "migrate: %s: '%s' is not a number in [%u, %u]\n", opt, s, min,
			max);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

static int
parse_stages(const char *list, const struct mig_stage_def **out, unsigned int *n)
{
	char *copy = strdup(list), *tok, *save = NULL;
	unsigned int i;
	int ret = 0;

	*n = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NSTAGES; i++)
			if (strcmp(tok, stage_defs[i].name) == 0)
				break;
		if (i == NSTAGES || *n == 2 * NSTAGES) {
			fprintf(stderr, "migrate: --stages: '%s' is not a stage (baseline, "
				"precreate, parallel-mkey, deferred-delete, all)\n", tok);
			ret = -1;
			break;
		}
		out[(*n)++] = &stage_defs[i];
	}
	free(copy);
	if (ret == 0 && *n == 0) {
		fprintf(stderr, "migrate: --stages: empty list\n");
		ret = -1;
	}
	return ret;
}

static const struct mig_result *
find_result(const struct mig_result *res, unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (res[i].ok && strcmp(res[i].name, name) == 0)
			return &res[i];
	return NULL;
}

static bool
dirty_ok(const struct mig_result *r)
{
	return r->dirty_logged && r->dirty_pages_missing == 0 && r->dirty_pages_checked > 0;
}

static void
print_table(const struct mig_opts *o, const struct mig_result *res, unsigned int n)
{
	const struct mig_result *b = find_result(res, n, "baseline");
	const struct mig_result *a = find_result(res, n, "all");
	const struct mig_shape *s = &o->shape;
	unsigned int i;

	printf("\n%s: %u device%s x %u queue pairs, %u GiB, queue size %u (%s), model %s\n\n",
	       s->name, s->devices, s->devices > 1 ? "s" : "", s->queue_pairs, s->mem_gb,
	       s->queue_size, s->packed ? "packed" : "split", o->profile);
	printf("| %-15s | %11s | %14s | %20s | %18s | %18s | %4s | %3s | %8s |\n", "stage",
	       "downtime ms", "source stop ms", "destination start ms", "of which memory ms",
	       "of which queues ms", "lost", "dup", "dirty ok");
	printf("|-----------------|-------------|----------------|----------------------|"
	       "--------------------|--------------------|------|-----|----------|\n");
	for (i = 0; i < n; i++) {
		const struct mig_result *r = &res[i];

		if (!r->ok) {
			printf("| %-15s | %11s | %14s | %20s | %18s | %18s | %4s | %3s | %8s |\n",
			       r->name, "failed", "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		printf("| %-15s | %11.1f | %14.1f | %20.1f | %18.1f | %18.1f | %4lu | %3lu "
		       "| %8s |\n", r->name, r->downtime_ms, r->src_stop_ms, r->dst_start_ms,
		       r->dst_mr_ms, r->dst_vq_ms, (unsigned long)r->lost_packets,
		       (unsigned long)r->duplicated_packets, dirty_ok(r) ? "yes" : "NO");
	}
	if (b != NULL && a != NULL && a->downtime_ms > 0 && a->dst_vq_ms > 0)
		printf("\nbaseline/all: downtime %.1fx, destination queues %.1fx\n",
		       b->downtime_ms / a->downtime_ms, b->dst_vq_ms / a->dst_vq_ms);
	fflush(stdout);
}

static json_t *
stage_json(const struct mig_result *r, const struct mig_stage_def *d)
{
	return json_pack("{s:s,s:b,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:I,s:b,s:I,"
			 "s:I,s:I,s:{s:I,s:I,s:I,s:I}}",
		"name", r->name, "ok", r->ok,
		"downtime_ms", r->downtime_ms, "src_stop_ms", r->src_stop_ms,
		"dst_start_ms", r->dst_start_ms, "dst_mr_ms", r->dst_mr_ms,
		"dst_vq_ms", r->dst_vq_ms,
		"lost_packets", (json_int_t)r->lost_packets,
		"duplicated_packets", (json_int_t)r->duplicated_packets,
		"dst_conf_ms", r->dst_conf_ms, "src_close_ms", r->src_close_ms,
		"src_first_ring_ms", r->src_first_ring_ms,
		"dirty_check_ms", r->dirty_check_ms,
		"frames", (json_int_t)r->frames, "bad_packets", (json_int_t)r->bad_packets,
		"dirty_logged", r->dirty_logged,
		"dirty_pages_checked", (json_int_t)r->dirty_pages_checked,
		"dirty_pages_missing", (json_int_t)r->dirty_pages_missing,
		"leaked_objects", (json_int_t)r->leaked_objects,
		"devargs", "precreate", (json_int_t)d->precreate, "workers", (json_int_t)d->workers,
		"mr_gc_ms", (json_int_t)d->mr_gc_ms, "parallel", (json_int_t)d->parallel);
}

static int
write_json(const char *path, const struct mig_opts *o, const struct mig_result *res,
	   const struct mig_stage_def *const *defs, unsigned int n)
{
	const struct mig_shape *s = &o->shape;
	const struct mig_result *b = find_result(res, n, "baseline");
	const struct mig_result *a = find_result(res, n, "all");
	json_t *root, *stages = json_array();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		json_array_append_new(stages, stage_json(&res[i], defs[i]));
	root = json_pack("{s:s,s:{s:s,s:I,s:I,s:I,s:I,s:s},s:o}", "model", o->profile,
		"scenario", "name", s->name, "devices", (json_int_t)s->devices,
		"queue_pairs", (json_int_t)s->queue_pairs, "mem_gb", (json_int_t)s->mem_gb,
		"queue_size", (json_int_t)s->queue_size, "ring", s->packed ? "packed" : "split",
		"stages", stages);
	if (b != NULL && a != NULL && a->downtime_ms > 0 && a->dst_vq_ms > 0)
		json_object_set_new(root, "ratios", json_pack("{s:f,s:f}",
			"downtime_baseline_over_all", b->downtime_ms / a->downtime_ms,
			"dst_vq_baseline_over_all", b->dst_vq_ms / a->dst_vq_ms));
	ret = json_dump_file(root, path, JSON_INDENT(1));
	json_decref(root);
	if (ret < 0)
		fprintf(stderr, "migrate: cannot write %s\n", path);
	return ret;
}

/* The chart is drawn by the repository's script: one implementation. */
#ifndef TEST_LM_DATA_FROM_BIN
#define TEST_LM_DATA_FROM_BIN "../share/mlx5-lm"
#endif

static char plot_script[2 * PATH_MAX];

/*
 * The chart script: the copy installed beside the installed binary
 * (<bindir>/<TEST_LM_DATA_FROM_BIN>), else the source tree's for a binary
 * run from the build tree. Remembered in plot_script.
 */
static int
check_plot_script(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(plot_script, sizeof(plot_script), "%s/%s/plot_migrate.py", exe,
				 TEST_LM_DATA_FROM_BIN);
			if (access(plot_script, R_OK) == 0)
				return 0;
		}
	}
	snprintf(plot_script, sizeof(plot_script), "%s/plot_migrate.py", TEST_LM_TOOLS_DIR);
	if (access(plot_script, R_OK) == 0)
		return 0;
	fprintf(stderr, "migrate: --plot: cannot read %s: %s\n", plot_script, strerror(errno));
	return -1;
}

static int
run_plot(const char *json, const char *svg)
{
	const char *script = plot_script;
	int status;
	pid_t pid;

	if (check_plot_script() < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "migrate: --plot: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execlp("python3", "python3", script, json, "--output", svg, (char *)NULL);
		fprintf(stderr, "migrate: --plot: cannot run python3: %s\n", strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "migrate: --plot: %s failed\n", script);
		return -1;
	}
	return 0;
}

int
cmd_migrate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "devices", required_argument, NULL, 'n' },
		{ "queue-pairs", required_argument, NULL, 'q' },
		{ "mem-gb", required_argument, NULL, 'm' },
		{ "queue-size", required_argument, NULL, 'z' },
		{ "packed", no_argument, NULL, 'k' },
		{ "stages", required_argument, NULL, 't' },
		{ "profile", required_argument, NULL, 'p' },
		{ "frames", required_argument, NULL, 'f' },
		{ "json", required_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'P' },
		{ "eal", required_argument, NULL, 'e' },
		/* Not in --help: hostile front-end orders for the tests. */
		{ "hostile", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct mig_stage_def *defs[2 * NSTAGES];
	struct mig_result res[2 * NSTAGES];
	struct mig_opts o = { .profile = "cx6dx", .frames = 256 };
	const char *scenario = NULL, *stages = NULL, *json = NULL, *plot = NULL;
	unsigned int ndefs = 0, i, size = 256;
	char eal[1024], tmp_json[64] = "";
	const char *extra_eal = NULL;
	bool custom = false;
	int c, ret = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': scenario = optarg; break;
		case 'n':
			if (parse_uint("--devices", optarg, 1, MIG_MAX_DEVICES,
				       &o.shape.devices) < 0)
				return EXIT_USAGE;
			custom = true;
			break;
		case 'q':
			if (parse_uint("--queue-pairs", optarg, 1, MIG_MAX_QUEUE_PAIRS,
				       &o.shape.queue_pairs) < 0)
				return EXIT_USAGE;
			custom = true;
			break;
		case 'm':
			if (parse_uint("--mem-gb", optarg, 1, 4096, &o.shape.mem_gb) < 0)
				return EXIT_USAGE;
			custom = true;
			break;
		case 'z':
			if (parse_uint("--queue-size", optarg, 2, 32768, &size) < 0)
				return EXIT_USAGE;
			if (size & (size - 1)) {
				fprintf(stderr, "migrate: --queue-size: %u is not a power of two\n",
					size);
				return EXIT_USAGE;
			}
			break;
		case 'k': o.shape.packed = true; break;
		case 't': stages = optarg; break;
		case 'p': o.profile = optarg; break;
		case 'f':
			if (parse_uint("--frames", optarg, 1, 1u << 24, &o.frames) < 0)
				return EXIT_USAGE;
			break;
		case 'j': json = optarg; break;
		case 'P': plot = optarg; break;
		case 'e': extra_eal = optarg; break;
		case 'H':
			if (strcmp(optarg, "early-base") == 0) {
				o.hostile = MIG_HOSTILE_EARLY_BASE;
			} else if (strcmp(optarg, "disconnect") == 0) {
				o.hostile = MIG_HOSTILE_DISCONNECT;
			} else {
				fprintf(stderr, "migrate: --hostile: early-base or disconnect\n");
				return EXIT_USAGE;
			}
			break;
		case 'h': migrate_usage(stdout); return 0;
		default: migrate_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "migrate: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (scenario != NULL && custom) {
		fprintf(stderr,
			"migrate: --scenario or --devices/--queue-pairs/--mem-gb, not both\n");
		return EXIT_USAGE;
	}
	if (scenario != NULL) {
		bool packed = o.shape.packed;

		for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			if (strcmp(scenario, scenarios[i].name) == 0)
				break;
		if (i == sizeof(scenarios) / sizeof(scenarios[0])) {
			fprintf(stderr, "migrate: --scenario: '%s' is not seed-precreate or "
				"seed-mkey\n", scenario);
			return EXIT_USAGE;
		}
		o.shape = scenarios[i];
		o.shape.packed = packed;
	} else {
		if (o.shape.devices == 0 || o.shape.queue_pairs == 0 || o.shape.mem_gb == 0) {
			fprintf(stderr, "migrate: give --scenario, or all of --devices, "
				"--queue-pairs and --mem-gb\n");
			migrate_usage(stderr);
			return EXIT_USAGE;
		}
		o.shape.name = "custom";
		o.shape.queue_size = size;
	}
	if (stages == NULL)
		stages = "baseline,precreate,parallel-mkey,deferred-delete,all";
	if (parse_stages(stages, defs, &ndefs) < 0)
		return EXIT_USAGE;
	if (test_lm_check_profile("migrate", o.profile) < 0 ||
	    (json != NULL && test_lm_check_output("migrate", "--json", json) < 0) ||
	    (plot != NULL && (test_lm_check_output("migrate", "--plot", plot) < 0 ||
			      check_plot_script() < 0)))
		return EXIT_USAGE;
	if (plot != NULL && json == NULL) {
		snprintf(tmp_json, sizeof(tmp_json), "/tmp/test-lm-migrate-%d.json", (int)getpid());
		json = tmp_json;
	}
	/* vhost's per-message chatter would bury the progress lines. */
	snprintf(eal, sizeof(eal), "--log-level=lib.vhost.*:error%s%s",
		 extra_eal != NULL ? " " : "", extra_eal != NULL ? extra_eal : "");
	if (test_lm_eal_init("dpdk-test-lm", eal) < 0)
		return EXIT_FAILED;
	printf("migrate: %s, %u NIC%s x %u queue pairs, %u GiB, queue size %u, model %s\n",
	       o.shape.name, o.shape.devices, o.shape.devices > 1 ? "s" : "",
	       o.shape.queue_pairs, o.shape.mem_gb, o.shape.queue_size, o.profile);
	for (i = 0; i < ndefs; i++) {
		if (mig_run_stage(&o, defs[i], &res[i]) < 0)
			ret = EXIT_FAILED;
	}
	print_table(&o, res, ndefs);
	for (i = 0; i < ndefs; i++) {
		const struct mig_result *r = &res[i];

		if (r->ok && (r->lost_packets != 0 || r->duplicated_packets != 0 ||
			      r->bad_packets != 0 || !dirty_ok(r))) {
			fprintf(stderr, "migrate: stage %s: %lu lost, %lu duplicated, %lu bad "
				"packets; dirty log %s\n", r->name, (unsigned long)r->lost_packets,
				(unsigned long)r->duplicated_packets, (unsigned long)r->bad_packets,
				!r->dirty_logged ? "not supported by the device" :
				dirty_ok(r) ? "complete" : "incomplete");
			ret = EXIT_FAILED;
		}
		if (r->leaked_objects != 0) {
			fprintf(stderr, "migrate: stage %s: %lu device objects left alive\n",
				r->name, r->leaked_objects);
			if (ret == 0)
				ret = EXIT_LEAK;
		}
	}
	if (json != NULL && write_json(json, &o, res, defs, ndefs) < 0)
		ret = EXIT_FAILED;
	if (plot != NULL) {
		if (run_plot(json, plot) < 0)
			ret = EXIT_FAILED;
		else
			printf("migrate: chart written to %s\n", plot);
	}
	if (tmp_json[0] != '\0')
		unlink(tmp_json);
	test_lm_eal_cleanup();
	return ret;
}
