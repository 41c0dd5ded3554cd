/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: in-process live migration between emulated source
 * and destination devices, one stage per downtime technique, measured as
 * design.md defines it; prints the seed-style table, writes the JSON and
 * (with --plot) the breakdown chart through tools/plot_migrate.py.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
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
#include "migrate_floor.h"

#ifndef TEST_LM_TOOLS_DIR
#define TEST_LM_TOOLS_DIR "tools"
#endif

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };

/* Scenarios are names for shapes, nothing more (design.md). */
static const struct mig_shape scenarios[] = {
	{ "seed-precreate", 1, 16, 256, 256, false, 0 },
	{ "seed-mkey", 4, 16, 256, 256, false, 0 },
	/* A host drained for maintenance: 8 VMs of 1 NIC x 4 pairs x 16 GiB. */
	{ "evacuate", 1, 4, 16, 256, false, 8 },
};
#define MAX_REPEAT 100
/* The peer's best max_conf_threads on this model (measured 1/4/8/16: doc/performance.md). */
#define PEER_CONF_THREADS 64
/* Debian's librte-vdpa-mlx5-23 (DPDK 22.11, the release the app is built with). */
#define PEER_PMD "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_vdpa_mlx5.so.23"

/* Each technique alone on top of the baseline, then all of them. */
static const struct mig_stage_def stage_defs[] = {
	{ "baseline", 0, 1, 0, 0 },
	{ "precreate", 1, 1, 0, 0 },
	{ "parallel-mkey", 0, 16, 0, 0 },
	{ "deferred-delete", 0, 1, 100, 0 },
	{ "all", 1, 16, 100, 1 },
	/*
	 * The peer, DPDK's vdpa/mlx5, on the same emulated devices
	 * through the emulated rdma-core: with its defaults, and with what
	 * makes it fastest: queues/queue_size (it pre-creates at probe) and
	 * PEER_CONF_THREADS configuration threads (doc/performance.md).
	 */
	{ "peer", 0, 0, 0, 0, true, 0 },
	{ "peer-precreate", 1, 0, 0, 0, true, PEER_CONF_THREADS },
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
		"  --scenario NAME    seed-precreate (1 device, 16 queue pairs, 256 GiB),\n"
		"                     seed-mkey (4 devices, 16 queue pairs each, 256 GiB) or\n"
		"                     evacuate (8 VMs of 1 device x 4 queue pairs x 16 GiB in\n"
		"                     this process; see --vms)\n"
		"  --devices N        NICs of the VM (1-%d)\n"
		"  --queue-pairs Q    queue pairs per NIC (1-%d)\n"
		"  --mem-gb G         guest memory (QEMU layout: 3 GiB at 0, the rest at 4 GiB)\n"
		"  --queue-size S     ring size, a power of two (default 256)\n"
		"  --packed           packed rings instead of split\n"
		"  --stages LIST      comma-separated, from baseline,precreate,parallel-mkey,\n"
		"                     deferred-delete,all (default: all five, in that order;\n"
		"                     with --vms: all), and the peer's: peer, peer-precreate\n"
		"                     (DPDK's vdpa/mlx5 with its defaults, and with\n"
		"                     queues=Q,queue_size=S,max_conf_threads=%d), probed on\n"
		"                     the PCI function of RDMA device i; run them under\n"
		"                     tools/with-emulated-rdma --private-sys --devices 2N\n"
		"  --peer-pmd PATH    the peer's PMD, loaded with EAL -d (default:\n"
		"                     %s)\n"
		"  --peer-conf-threads T\n"
		"                     max_conf_threads of peer-precreate (0-256)\n"
		"  --profile P        emulator cost model (default cx6dx; fast = zero cost)\n"
		"  --backend B        emu (default: emu=P) or rdma: device i is ibdev=mlx5_<i>,\n"
		"                     sources first (VM after VM); run under\n"
		"                     tools/with-emulated-rdma --devices 2N (N: all VMs' NICs;\n"
		"                     the profile applies to its devices)\n"
		"  --acks A           which front-end requests wait for the back end's\n"
		"                     REPLY_ACK: qemu (default: the ones QEMU 8.2+ waits for,\n"
		"                     SET_MEM_TABLE, SET_VRING_ENABLE, and while logging\n"
		"                     SET_FEATURES and SET_VRING_ADDR; status added with\n"
		"                     GET_STATUS first) or every (a round trip per request)\n"
		"  --frames N         frames every queue pair gets back per traffic phase\n"
		"                     (default 256)\n"
		"  --repeat N         run every stage N times (1-%d, default 1), in rounds of\n"
		"                     all stages; the table shows each stage's median run\n"
		"                     (the lower middle one for even N) and the min-max of its\n"
		"                     downtime, the JSON every run\n"
		"  --vms K            host evacuation: K VMs of the shape (1-%d, K x devices\n"
		"                     at most %d) in this process; VM 0 is migrated alone\n"
		"                     with the others idle, then all K at once, each from its\n"
		"                     own front-end thread (default for --scenario evacuate: 8)\n"
		"  --processes P      evacuation: the K VMs split over P back-end processes\n"
		"                     (1-K, default 1: all in this one), each with its own\n"
		"                     EAL, vhost thread and devices, as one serve per VM (or\n"
		"                     per few VMs) would run; all stop at the same moment; VM 0\n"
		"                     alone is measured in the first process, the others idle\n"
		"  --service          evacuation: every VM's devices in mlx5-lm-vhostd workers\n"
		"                     (one per VM and host) of a source and a destination\n"
		"                     service, started on private sockets for each run; every\n"
		"                     VM also migrated alone, one after another (\"alone\": their\n"
		"                     median); each VM's CPU time by part (front end, vhost\n"
		"                     thread, driver and emulator threads) in each window, and\n"
		"                     the at-once window projected to hosts of 2, 16 and 64\n"
		"                     CPUs (emu back end; not with --processes)\n"
		"  --json FILE        write the results as JSON (design.md)\n"
		"  --plot FILE        write the per-stage breakdown as an SVG chart\n"
		"  --eal ARGS         extra EAL arguments (--service: of the workers)\n"
		"  -h, --help         this text\n\n"
		"Downtime: from the first GET_VRING_BASE sent to a source device to the moment\n"
		"every destination device has completed a guest packet posted after the restart\n"
		"(evacuation: per VM; a stage's is its slowest VM's at once).\n"
		"Beside it: \"floor\", the least downtime the profile's cost model allows for the\n"
		"shape, every command slot busy, pinning overlapped and the devices configured\n"
		"at once (doc/performance.md), and \"x floor\" = downtime / floor;\n"
		"\"model busy\", the modelled cost of every command (and host pinning) of the\n"
		"VM's devices within the downtime, summed over slots (work, not critical path);\n"
		"\"overshoot\", how much longer than modelled each of them really took, on mean.\n"
		"Exit status: 0 every stage migrated without loss, duplicate or unlogged page;\n"
		"1 otherwise; 2 usage; 3 device objects left alive.\n",
		TEST_LM_PMD, MIG_MAX_DEVICES, MIG_MAX_QUEUE_PAIRS, PEER_CONF_THREADS, PEER_PMD,
		MAX_REPEAT, MIG_MAX_VMS, MIG_MAX_DEVICES);
}

/*
 * --backend rdma: 2N RDMA devices mlx5_0.. (sources, then destinations),
 * which tools/with-emulated-rdma provides; the profile is the one the
 * emulated rdma-core gives the devices it opens (set before EAL starts
 * any thread).
 */
static int
rdma_devices_check(const struct mig_opts *o)
{
	const char *n = getenv("MLX5_LM_ERDMA_DEVICES");
	unsigned int need = 2 * o->shape.devices * (o->shape.vms > 0 ? o->shape.vms : 1);

	if (n == NULL || (unsigned int)atoi(n) < need) {
		fprintf(stderr, "migrate: --backend rdma needs %u RDMA devices mlx5_0..mlx5_%u "
			"(%s): run it under tools/with-emulated-rdma --devices %u\n", need,
			need - 1, n == NULL ? "not under tools/with-emulated-rdma" : "too few",
			need);
		return -1;
	}
	if (setenv("MLX5_LM_ERDMA_PROFILE", o->profile, 1) < 0)
		return -1;
	return 0;
}

/*
 * The peer's stages: its PMD is probed on the PCI bus, which EAL must then
 * scan; only the wrapper's fake sysfs tree (SYSFS_PCI_DEVICES, emulated
 * functions only) may be scanned, so that no real NIC is ever touched, and
 * the peer writes the hard-coded /sys/bus/pci/devices/<BDF>/roce_enable
 * that only --private-sys provides. The devices' profile is the stages'.
 */
static int
peer_check(const struct mig_opts *o, unsigned int *ndev)
{
	const char *n = getenv("MLX5_LM_ERDMA_DEVICES");
	const char *tree = getenv("MLX5_LM_ERDMA_SYSFS");
	const char *pci = getenv("SYSFS_PCI_DEVICES");
	unsigned int need = 2 * o->shape.devices;
	const char *why = NULL;

	if (n == NULL || tree == NULL || pci == NULL)
		why = "not under tools/with-emulated-rdma";
	else if ((unsigned int)atoi(n) < need)
		why = "too few devices";
	else if (strncmp(pci, tree, strlen(tree)) != 0)
		why = "SYSFS_PCI_DEVICES is not the wrapper's tree";
	else if (access("/sys/bus/pci/devices/0000:5e:00.0/roce_enable", W_OK) < 0)
		why = "no writable /sys/bus/pci/devices/<BDF>/roce_enable: no --private-sys";
	if (why != NULL) {
		fprintf(stderr, "migrate: the peer stages need %u emulated PCI functions "
			"0000:5e:00.0..0000:5e:%02x.0 (%s): run it under tools/with-emulated-rdma "
			"--private-sys --devices %u\n", need, need - 1, why, need);
		return -1;
	}
	if (access(o->peer_pmd, R_OK) < 0) {
		fprintf(stderr, "migrate: the peer's PMD %s: %s (package librte-vdpa-mlx5-23)\n",
			o->peer_pmd, strerror(errno));
		return -1;
	}
	*ndev = (unsigned int)atoi(n);
	return setenv("MLX5_LM_ERDMA_PROFILE", o->profile, 1) < 0 ? -1 : 0;
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
				"precreate, parallel-mkey, deferred-delete, all, peer, "
				"peer-precreate)\n", tok);
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

/* A stage over its runs: the median run and the spread of the downtime. */
struct stage_sum {
	const struct mig_stage_def *def;
	const struct mig_result *runs[MAX_REPEAT];
	unsigned int nruns;
	/*
	 * The median run by downtime (the lower middle one for an even count)
	 * among those that ran to their end, whole, so that its breakdown adds
	 * up; its packet, dirty-log and leak counts are those of every run.
	 */
	struct mig_result med;
	bool ok;                   /* every run ran to its end */
	double min_ms, max_ms;
};

/* The floors the tables compare with (zero-cost profiles have none). */
struct floors {
	bool have;
	struct mig_floor all;      /* the scenario: every device of every VM */
	struct mig_floor alone;    /* evacuation: one VM */
};

static int
cmp_downtime(const void *a, const void *b)
{
	const struct mig_result *x = *(const struct mig_result *const *)a;
	const struct mig_result *y = *(const struct mig_result *const *)b;

	return x->downtime_ms < y->downtime_ms ? -1 : x->downtime_ms > y->downtime_ms;
}

static void
summarize(struct stage_sum *ss)
{
	const struct mig_result *ok[MAX_REPEAT];
	unsigned int i, nok = 0;

	for (i = 0; i < ss->nruns; i++)
		if (ss->runs[i]->ok)
			ok[nok++] = ss->runs[i];
	ss->ok = nok == ss->nruns;
	memset(&ss->med, 0, sizeof(ss->med));
	snprintf(ss->med.name, sizeof(ss->med.name), "%s", ss->def->name);
	if (nok > 0) {
		qsort(ok, nok, sizeof(ok[0]), cmp_downtime);
		ss->med = *ok[(nok - 1) / 2];
		ss->min_ms = ok[0]->downtime_ms;
		ss->max_ms = ok[nok - 1]->downtime_ms;
	}
	ss->med.ok = ss->ok;
	ss->med.lost_packets = ss->med.duplicated_packets = ss->med.bad_packets = 0;
	ss->med.dirty_pages_missing = ss->med.leaked_objects = 0;
	for (i = 0; i < ss->nruns; i++) {
		const struct mig_result *r = ss->runs[i];

		ss->med.lost_packets += r->lost_packets;
		ss->med.duplicated_packets += r->duplicated_packets;
		ss->med.bad_packets += r->bad_packets;
		ss->med.dirty_pages_missing += r->dirty_pages_missing;
		ss->med.leaked_objects += r->leaked_objects;
		ss->med.dirty_logged = ss->med.dirty_logged && r->dirty_logged;
	}
}

static const struct mig_result *
find_result(const struct stage_sum *ss, unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ss[i].ok && strcmp(ss[i].med.name, name) == 0)
			return &ss[i].med;
	return NULL;
}

static bool
dirty_ok(const struct mig_result *r)
{
	return r->dirty_logged && r->dirty_pages_missing == 0 && r->dirty_pages_checked > 0;
}

/* Mean of (measured - modelled) per charge of the cost model, in microseconds. */
static double
overshoot_us(const struct mig_result *r)
{
	if (r->model_charges == 0)
		return 0;
	return (r->model_actual_ms - r->model_busy_ms - r->model_pin_ms) * 1000.0 /
	       (double)r->model_charges;
}

static void
fmt_x_floor(char *buf, size_t len, double ms, const struct floors *f, bool alone)
{
	double fl = alone ? f->alone.floor_overlapped_ms : f->all.floor_overlapped_ms;

	if (f->have && fl > 0)
		snprintf(buf, len, "%.1f", ms / fl);
	else
		snprintf(buf, len, "-");
}

static void
print_floor_line(const struct mig_opts *o, const struct floors *f)
{
	if (!f->have || f->all.floor_overlapped_ms <= 0) {
		printf("\nfloor: none (profile %s charges nothing)\n", o->profile);
		return;
	}
	if (o->shape.vms > 0)
		printf("\nfloor (profile %s, %s): one VM alone %.1f ms, all %u VMs at once "
		       "%.1f ms\n", o->profile, MIG_FLOOR_METHOD,
		       f->alone.floor_overlapped_ms, o->shape.vms, f->all.floor_overlapped_ms);
	else
		printf("\nfloor (profile %s, %s): %.1f ms with the devices configured at once, "
		       "%.1f ms one after another; the model's baseline %.1f ms\n", o->profile,
		       MIG_FLOOR_METHOD, f->all.floor_overlapped_ms,
		       f->all.floor_serial_ms, f->all.baseline_ms);
}

static void
print_table_vm(const struct mig_opts *o, const struct stage_sum *ss, unsigned int n,
	       const struct floors *f)
{
	unsigned int i;

	printf("| %-15s | %11s | %15s | %7s | %14s | %20s | %18s | %18s | %13s | "
	       "%12s | %4s | %3s | %8s |\n", "stage", "downtime ms", "min-max ms", "x floor",
	       "source stop ms", "destination start ms", "of which memory ms",
	       "of which queues ms", "model busy ms", "overshoot us", "lost", "dup",
	       "dirty ok");
	printf("|-----------------|-------------|-----------------|---------|----------------|"
	       "----------------------|--------------------|--------------------|"
	       "---------------|--------------|------|-----|----------|\n");
	for (i = 0; i < n; i++) {
		const struct mig_result *r = &ss[i].med;
		char spread[32], xf[16], mr[32], vq[32];

		if (!ss[i].ok) {
			printf("| %-15s | %11s | %15s | %7s | %14s | %20s | %18s | %18s | %13s | "
			       "%12s | %4s | %3s | %8s |\n", r->name, "failed", "-", "-", "-", "-",
			       "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		snprintf(spread, sizeof(spread), "%.1f-%.1f", ss[i].min_ms, ss[i].max_ms);
		fmt_x_floor(xf, sizeof(xf), r->downtime_ms, f, false);
		/* Memory and queues come from our PMD's API: the peer has none. */
		if (r->peer) {
			snprintf(mr, sizeof(mr), "-");
			snprintf(vq, sizeof(vq), "-");
		} else {
			snprintf(mr, sizeof(mr), "%.1f", r->dst_mr_ms);
			snprintf(vq, sizeof(vq), "%.1f", r->dst_vq_ms);
		}
		printf("| %-15s | %11.1f | %15s | %7s | %14.1f | %20.1f | %18s | %18s | "
		       "%13.1f | %12.1f | %4lu | %3lu | %8s |\n", r->name, r->downtime_ms, spread,
		       xf, r->src_stop_ms, r->dst_start_ms, mr, vq,
		       r->model_busy_ms + r->model_pin_ms, overshoot_us(r),
		       (unsigned long)r->lost_packets, (unsigned long)r->duplicated_packets,
		       dirty_ok(r) ? "yes" : "NO");
	}
}

/* Evacuation: each VM's downtime at once (median and max over VMs) against VM 0 alone. */
static void
vm_stats(const struct mig_result *r, double *median, double *max)
{
	double d[MIG_MAX_VMS], t;
	unsigned int i, j;

	for (i = 0; i < r->vms; i++) {
		t = r->vm[i].downtime_ms;
		for (j = i; j > 0 && d[j - 1] > t; j--)
			d[j] = d[j - 1];
		d[j] = t;
	}
	*median = r->vms > 0 ? d[(r->vms - 1) / 2] : 0;
	*max = r->vms > 0 ? d[r->vms - 1] : 0;
}

static void
print_table_evac(const struct mig_opts *o, const struct stage_sum *ss, unsigned int n,
		 const struct floors *f)
{
	unsigned int i;
	char label[32];

	printf("| %-15s | %3s | %8s | %14s | %14s | %15s | %9s | %7s | %13s | %12s | %4s | "
	       "%3s | %8s |\n", "stage", "VMs", "alone ms", "at once med ms", "at once max ms",
	       "min-max ms", "max/alone", "x floor", "model busy ms", "overshoot us", "lost",
	       "dup", "dirty ok");
	printf("|-----------------|-----|----------|----------------|----------------|"
	       "-----------------|-----------|---------|---------------|--------------|"
	       "------|-----|----------|\n");
	for (i = 0; i < n; i++) {
		const struct mig_result *r = &ss[i].med;
		char spread[32], xf[16], busy[24], over[24];
		double med, max;

		if (!ss[i].ok) {
			printf("| %-15s | %3s | %8s | %14s | %14s | %15s | %9s | %7s | %13s | "
			       "%12s | %4s | %3s | %8s |\n", r->name, "-", "failed", "-", "-", "-",
			       "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		vm_stats(r, &med, &max);
		snprintf(spread, sizeof(spread), "%.1f-%.1f", ss[i].min_ms, ss[i].max_ms);
		fmt_x_floor(xf, sizeof(xf), max, f, false);
		/* The process split: "all, 8 procs" (one process: the stage's name). */
		if (o->processes > 1)
			snprintf(label, sizeof(label), "%s, %u procs", r->name, o->processes);
		else if (o->service)
			snprintf(label, sizeof(label), "%s, service", r->name);
		else
			snprintf(label, sizeof(label), "%s", r->name);
		/* The service's workers do not report the model's account. */
		if (r->service) {
			snprintf(busy, sizeof(busy), "-");
			snprintf(over, sizeof(over), "-");
		} else {
			snprintf(busy, sizeof(busy), "%.1f", r->model_busy_ms + r->model_pin_ms);
			snprintf(over, sizeof(over), "%.1f", overshoot_us(r));
		}
		printf("| %-15s | %3u | %8.1f | %14.1f | %14.1f | %15s | %9.2f | %7s | %13s | "
		       "%12s | %4lu | %3lu | %8s |\n", label, r->vms, r->alone.downtime_ms,
		       med, max, spread, r->alone.downtime_ms > 0 ? max / r->alone.downtime_ms : 0,
		       xf, busy, over, (unsigned long)r->lost_packets,
		       (unsigned long)r->duplicated_packets, dirty_ok(r) ? "yes" : "NO");
	}
}

static void
print_table(const struct mig_opts *o, const struct stage_sum *ss, unsigned int n,
	    unsigned int repeat, const struct floors *f)
{
	const struct mig_result *b = find_result(ss, n, "baseline");
	const struct mig_result *a = find_result(ss, n, "all");
	const struct mig_shape *s = &o->shape;
	unsigned int i;

	printf("\n%s: ", s->name);
	if (s->vms > 0)
		printf("%u VMs of ", s->vms);
	if (o->processes > 1)
		printf("(in %u back-end processes) ", o->processes);
	if (o->service)
		printf("(in mlx5-lm-vhostd workers, a source and a destination service) ");
	printf("%u device%s x %u queue pairs, %u GiB, queue size %u (%s), model %s", s->devices,
	       s->devices > 1 ? "s" : "", s->queue_pairs, s->mem_gb, s->queue_size,
	       s->packed ? "packed" : "split", o->profile);
	if (repeat > 1)
		printf(", median of %u runs", repeat);
	printf("\n\n");
	if (s->vms > 0)
		print_table_evac(o, ss, n, f);
	else
		print_table_vm(o, ss, n, f);
	print_floor_line(o, f);
	for (i = 0; i < n && o->service; i++)
		if (ss[i].ok)
			mig_proj_print(&ss[i].med, f->have ? f->all.floor_overlapped_ms : 0);
	if (s->vms == 0 && b != NULL && a != NULL && a->downtime_ms > 0 && a->dst_vq_ms > 0)
		printf("baseline/all: downtime %.1fx, destination queues %.1fx\n",
		       b->downtime_ms / a->downtime_ms, b->dst_vq_ms / a->dst_vq_ms);
	fflush(stdout);
}

static json_t *
vm_time_json(const struct mig_vm_time *t)
{
	return json_pack("{s:f,s:f,s:f,s:f,s:f}", "downtime_ms", t->downtime_ms,
			 "src_stop_ms", t->src_stop_ms, "dst_start_ms", t->dst_start_ms,
			 "dst_mr_ms", t->dst_mr_ms, "dst_vq_ms", t->dst_vq_ms);
}

static json_t *
x_floor_json(double ms, double floor_ms)
{
	return floor_ms > 0 ? json_real(ms / floor_ms) : json_null();
}

/* One run (or a stage's median run): design.md's fields, then ours. */
static json_t *
run_json(const struct mig_result *r, const struct mig_stage_def *d, const struct floors *f)
{
	double fl = f->have ? f->all.floor_overlapped_ms : 0;
	json_t *o;

	o = json_pack("{s:s,s:b,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:I,s:b,s:I,"
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
	if (d->peer) {
		/* Our PMD's API only: the peer has none (not zero: absent). */
		json_object_set_new(o, "dst_mr_ms", json_null());
		json_object_set_new(o, "dst_vq_ms", json_null());
		json_object_set_new(o, "dst_conf_ms", json_null());
		json_object_set_new(o, "src_close_ms", json_null());
		json_object_set_new(o, "devargs", json_pack("{s:s,s:b,s:I}", "pmd", "peer",
			"precreate", d->precreate != 0,
			"max_conf_threads", (json_int_t)d->peer_threads));
	}
	json_object_set_new(o, "peer", json_boolean(d->peer));
	json_object_set_new(o, "model_busy_ms", json_real(r->model_busy_ms));
	json_object_set_new(o, "model_pin_ms", json_real(r->model_pin_ms));
	json_object_set_new(o, "model_actual_ms", json_real(r->model_actual_ms));
	json_object_set_new(o, "model_charges", json_integer((json_int_t)r->model_charges));
	json_object_set_new(o, "model_src_ms", json_real(r->model_src_ms));
	json_object_set_new(o, "model_dst_ms", json_real(r->model_dst_ms));
	json_object_set_new(o, "overshoot_mean_us", json_real(overshoot_us(r)));
	json_object_set_new(o, "floor_ms", json_real(fl));
	json_object_set_new(o, "x_floor", x_floor_json(r->downtime_ms, fl));
	if (r->vms > 0) {
		double fa = f->have ? f->alone.floor_overlapped_ms : 0, med, max;
		json_t *vms = json_array();
		unsigned int i;

		vm_stats(r, &med, &max);
		for (i = 0; i < r->vms; i++) {
			json_t *vj = vm_time_json(&r->vm[i]);

			/* --service: every VM was migrated alone too. */
			if (r->service)
				json_object_set_new(vj, "alone", vm_time_json(&r->vm_alone[i]));
			json_array_append_new(vms, vj);
		}
		json_object_set_new(o, "evacuate", json_pack("{s:I,s:o,s:f,s:o,s:f,s:f,s:o,s:o}",
			"vms", (json_int_t)r->vms, "alone", vm_time_json(&r->alone),
			"floor_alone_ms", fa,
			"alone_x_floor", x_floor_json(r->alone.downtime_ms, fa),
			"downtime_median_ms", med, "downtime_max_ms", max,
			"max_over_alone", r->alone.downtime_ms > 0 ?
				json_real(max / r->alone.downtime_ms) : json_null(),
			"vm", vms));
		if (r->service)
			json_object_set_new(json_object_get(o, "evacuate"), "alone_vm",
					    json_integer((json_int_t)r->alone_vm));
		mig_proj_json(json_object_get(o, "evacuate"), r, fl);
	}
	if (r->service) {
		/* The service's workers do not report the model's account: absent, not 0. */
		static const char *const model_keys[] = {
			"model_busy_ms", "model_pin_ms", "model_actual_ms", "model_charges",
			"model_src_ms", "model_dst_ms", "overshoot_mean_us",
		};

		size_t k;

		for (k = 0; k < sizeof(model_keys) / sizeof(model_keys[0]); k++)
			json_object_set_new(o, model_keys[k], json_null());
	}
	return o;
}

static json_t *
stage_json(const struct stage_sum *ss, const struct floors *f)
{
	json_t *o = run_json(&ss->med, ss->def, f), *runs = json_array();
	unsigned int i;

	for (i = 0; i < ss->nruns; i++)
		json_array_append_new(runs, run_json(ss->runs[i], ss->def, f));
	json_object_set_new(o, "repeat", json_integer(ss->nruns));
	json_object_set_new(o, "downtime_min_ms", json_real(ss->min_ms));
	json_object_set_new(o, "downtime_median_ms", json_real(ss->med.downtime_ms));
	json_object_set_new(o, "downtime_max_ms", json_real(ss->max_ms));
	json_object_set_new(o, "runs", runs);
	return o;
}

static json_t *
floor_json(const struct mig_floor *f)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
		"devices", (json_int_t)f->devices, "queue_pairs", (json_int_t)f->queue_pairs,
		"mem_gib", (json_int_t)f->mem_gb, "chunks", (json_int_t)f->chunks,
		"baseline_ms", f->baseline_ms, "floor_serial_devices_ms", f->floor_serial_ms,
		"floor_overlapped_devices_ms", f->floor_overlapped_ms,
		"dst_queues_baseline_ms", f->dst_queues_baseline_ms,
		"dst_queues_floor_ms", f->dst_queues_floor_ms,
		"mr_create_1worker_ms", f->mr_create_1worker_ms,
		"mr_create_floor_ms", f->mr_create_floor_ms,
		"src_stop_floor_per_device_ms", f->src_stop_floor_per_device_ms);
}

static int
write_json(const char *path, const struct mig_opts *o, const struct stage_sum *ss,
	   unsigned int n, unsigned int repeat, const struct floors *f)
{
	const struct mig_shape *s = &o->shape;
	const struct mig_result *b = find_result(ss, n, "baseline");
	const struct mig_result *a = find_result(ss, n, "all");
	json_t *root, *stages = json_array();
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		json_array_append_new(stages, stage_json(&ss[i], f));
	root = json_pack("{s:s,s:{s:s,s:I,s:I,s:I,s:I,s:s,s:I},s:I,s:o}", "model", o->profile,
		"scenario", "name", s->name, "devices", (json_int_t)s->devices,
		"queue_pairs", (json_int_t)s->queue_pairs, "mem_gb", (json_int_t)s->mem_gb,
		"queue_size", (json_int_t)s->queue_size, "ring", s->packed ? "packed" : "split",
		"vms", (json_int_t)(s->vms > 0 ? s->vms : 1),
		"repeat", (json_int_t)repeat, "stages", stages);
	/* Back-end processes the VMs were split over (1: all in one). */
	json_object_set_new(json_object_get(root, "scenario"), "processes",
			    json_integer((json_int_t)o->processes));
	json_object_set_new(json_object_get(root, "scenario"), "acks",
			    json_string(o->acks_every ? "every" : "qemu"));
	/* The devices in mlx5-lm-vhostd's workers (a source and a destination service). */
	json_object_set_new(json_object_get(root, "scenario"), "service",
			    json_boolean(o->service));
	if (f->have) {
		json_t *fj = floor_json(&f->all);

		json_object_set_new(fj, "method", json_string(MIG_FLOOR_METHOD));
		if (s->vms > 0)
			json_object_set_new(fj, "alone", floor_json(&f->alone));
		json_object_set_new(root, "floor", fj);
	}
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
	if (test_lm_exe_path(TEST_LM_DATA_FROM_BIN "/plot_migrate.py", plot_script,
			     sizeof(plot_script)) == 0 && access(plot_script, R_OK) == 0)
		return 0;
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
		{ "backend", required_argument, NULL, 'b' },
		{ "frames", required_argument, NULL, 'f' },
		{ "acks", required_argument, NULL, 'A' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "vms", required_argument, NULL, 'v' },
		{ "processes", required_argument, NULL, 'R' },
		{ "service", no_argument, NULL, 'S' },
		{ "json", required_argument, NULL, 'j' },
		{ "plot", required_argument, NULL, 'P' },
		{ "eal", required_argument, NULL, 'e' },
		{ "peer-pmd", required_argument, NULL, 'D' },
		{ "peer-conf-threads", required_argument, NULL, 'T' },
		/* Not in --help: hostile front-end orders for the tests. */
		{ "hostile", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct mig_stage_def *defs[2 * NSTAGES];
	static struct mig_stage_def peer_defs[2 * NSTAGES];
	unsigned int peer_threads = PEER_CONF_THREADS, peer_ndev = 0;
	bool peer = false, peer_threads_set = false;
	struct stage_sum ss[2 * NSTAGES];
	struct mig_result *res;
	struct mig_opts o = { .profile = "cx6dx", .frames = 256, .peer_pmd = PEER_PMD };
	const char *scenario = NULL, *stages = NULL, *json = NULL, *plot = NULL;
	unsigned int ndefs = 0, i, rep, size = 256, repeat = 1, vms = 0, procs = 0;
	struct floors floors = { .have = false };
	char ferr[256];
	char eal[4096], tmp_json[64] = "";
	const char *extra_eal = NULL;
	bool custom = false, in_process;
	int c, n, ret = 0;

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
		case 'b':
			if (strcmp(optarg, "rdma") != 0 && strcmp(optarg, "emu") != 0) {
				fprintf(stderr, "migrate: --backend: emu or rdma\n");
				return EXIT_USAGE;
			}
			o.rdma = strcmp(optarg, "rdma") == 0;
			break;
		case 'A':
			if (strcmp(optarg, "qemu") != 0 && strcmp(optarg, "every") != 0) {
				fprintf(stderr, "migrate: --acks: qemu or every\n");
				return EXIT_USAGE;
			}
			o.acks_every = strcmp(optarg, "every") == 0;
			break;
		case 'f':
			if (parse_uint("--frames", optarg, 1, 1u << 24, &o.frames) < 0)
				return EXIT_USAGE;
			break;
		case 'r':
			if (parse_uint("--repeat", optarg, 1, MAX_REPEAT, &repeat) < 0)
				return EXIT_USAGE;
			break;
		case 'v':
			if (parse_uint("--vms", optarg, 1, MIG_MAX_VMS, &vms) < 0)
				return EXIT_USAGE;
			break;
		case 'R':
			if (parse_uint("--processes", optarg, 1, MIG_MAX_VMS, &procs) < 0)
				return EXIT_USAGE;
			break;
		case 'S': o.service = true; break;
		case 'j': json = optarg; break;
		case 'P': plot = optarg; break;
		case 'e': extra_eal = optarg; break;
		case 'D': o.peer_pmd = optarg; break;
		case 'T':
			if (parse_uint("--peer-conf-threads", optarg, 0, 256, &peer_threads) < 0)
				return EXIT_USAGE;
			peer_threads_set = true;
			break;
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
			fprintf(stderr, "migrate: --scenario: '%s' is not seed-precreate, "
				"seed-mkey or evacuate\n", scenario);
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
	if (vms > 0)
		o.shape.vms = vms;
	if (o.shape.vms > 0 && o.shape.vms * o.shape.devices > MIG_MAX_DEVICES) {
		fprintf(stderr, "migrate: --vms: %u VMs x %u devices is more than %d devices\n",
			o.shape.vms, o.shape.devices, MIG_MAX_DEVICES);
		return EXIT_USAGE;
	}
	if (procs > 0 && o.shape.vms == 0) {
		fprintf(stderr, "migrate: --processes splits an evacuation: give --scenario "
			"evacuate or --vms\n");
		return EXIT_USAGE;
	}
	if (procs > o.shape.vms) {
		fprintf(stderr, "migrate: --processes: %u processes for %u VMs (1-%u)\n", procs,
			o.shape.vms, o.shape.vms);
		return EXIT_USAGE;
	}
	/* Each process numbers its RDMA devices from mlx5_0: one process only. */
	if (procs > 1 && o.rdma) {
		fprintf(stderr, "migrate: --processes is for the emu back end\n");
		return EXIT_USAGE;
	}
	if (o.service && o.shape.vms == 0) {
		fprintf(stderr, "migrate: --service runs an evacuation: give --scenario evacuate "
			"or --vms\n");
		return EXIT_USAGE;
	}
	if (o.service && procs > 0) {
		fprintf(stderr, "migrate: --service or --processes, not both: the service runs a "
			"worker process per VM already\n");
		return EXIT_USAGE;
	}
	/* Each worker numbers its RDMA devices from mlx5_0, like a process of --processes. */
	if (o.service && o.rdma) {
		fprintf(stderr, "migrate: --service is for the emu back end\n");
		return EXIT_USAGE;
	}
	o.processes = procs > 0 ? procs : 1;
	if (o.shape.vms > 0 && o.hostile != MIG_HOSTILE_NONE) {
		fprintf(stderr, "migrate: --hostile is for one VM, not an evacuation\n");
		return EXIT_USAGE;
	}
	/* An evacuation measures how VMs share the process: all techniques on. */
	if (stages == NULL)
		stages = o.shape.vms > 0 ? "all" :
			 "baseline,precreate,parallel-mkey,deferred-delete,all";
	if (parse_stages(stages, defs, &ndefs) < 0)
		return EXIT_USAGE;
	for (i = 0; i < ndefs; i++) {
		if (!defs[i]->peer)
			continue;
		peer = true;
		/* --peer-conf-threads: peer-precreate's copy with that count. */
		if (peer_threads_set && defs[i]->precreate) {
			peer_defs[i] = *defs[i];
			peer_defs[i].peer_threads = peer_threads;
			defs[i] = &peer_defs[i];
		}
	}
	if (peer && o.shape.vms > 0) {
		fprintf(stderr, "migrate: the peer stages are for one VM, not an evacuation\n");
		return EXIT_USAGE;
	}
	if (test_lm_check_profile("migrate", o.profile) < 0 ||
	    (json != NULL && test_lm_check_output("migrate", "--json", json) < 0) ||
	    (plot != NULL && (test_lm_check_output("migrate", "--plot", plot) < 0 ||
			      check_plot_script() < 0)))
		return EXIT_USAGE;
	if (o.rdma && rdma_devices_check(&o) < 0)
		return EXIT_USAGE;
	if (o.service && mig_svc_check() < 0)
		return EXIT_USAGE;
	if (peer && peer_check(&o, &peer_ndev) < 0)
		return EXIT_USAGE;
	/* The floor of the shape under the profile the devices run (migrate_floor.h). */
	if (mig_floor_compute(o.profile, (o.shape.vms > 0 ? o.shape.vms : 1) * o.shape.devices,
			      o.shape.queue_pairs, o.shape.mem_gb, &floors.all, ferr,
			      sizeof(ferr)) == 0 &&
	    mig_floor_compute(o.profile, o.shape.devices, o.shape.queue_pairs, o.shape.mem_gb,
			      &floors.alone, ferr, sizeof(ferr)) == 0)
		floors.have = true;
	else
		printf("migrate: no floor for this profile: %s\n", ferr);
	if (plot != NULL && json == NULL) {
		snprintf(tmp_json, sizeof(tmp_json), "/tmp/test-lm-migrate-%d.json", (int)getpid());
		json = tmp_json;
	}
	/* vhost's per-message chatter would bury the progress lines. */
	n = snprintf(eal, sizeof(eal), "--log-level=lib.vhost.*:error");
	/*
	 * The peer: its PMD loaded, the PCI bus on, and every emulated
	 * function blocked, so that EAL's start-up probes none of them (the
	 * mlx5 common driver would take them as Ethernet ports); rte_dev_probe
	 * replaces a device's blocking entry with its class=vdpa devargs.
	 */
	if (peer) {
		n += snprintf(eal + n, sizeof(eal) - (size_t)n, " -d %s", o.peer_pmd);
		for (i = 0; i < peer_ndev && (size_t)n < sizeof(eal); i++)
			n += snprintf(eal + n, sizeof(eal) - (size_t)n, " -b 0000:5e:%02x.0", i);
	}
	if (extra_eal != NULL && (size_t)n < sizeof(eal))
		n += snprintf(eal + n, sizeof(eal) - (size_t)n, " %s", extra_eal);
	if ((size_t)n >= sizeof(eal)) {
		fprintf(stderr, "migrate: EAL arguments too long\n");
		return EXIT_USAGE;
	}
	/*
	 * Split: the children start their own EAL; this process only relays.
	 * --service: the devices are in the service's workers, each with its EAL.
	 */
	in_process = o.processes == 1 && !o.service;
	o.service_eal = extra_eal;
	if (in_process && lm_app_eal_init_bus("dpdk-test-lm", eal, peer) < 0)
		return EXIT_FAILED;
	res = calloc((size_t)ndefs * repeat, sizeof(*res));
	if (res == NULL) {
		fprintf(stderr, "migrate: out of memory\n");
		if (in_process)
			lm_app_eal_cleanup();
		return EXIT_FAILED;
	}
	printf("migrate: %s, ", o.shape.name);
	if (o.shape.vms > 0)
		printf("%u VMs of ", o.shape.vms);
	printf("%u NIC%s x %u queue pairs, %u GiB, queue size %u, model %s", o.shape.devices,
	       o.shape.devices > 1 ? "s" : "", o.shape.queue_pairs, o.shape.mem_gb,
	       o.shape.queue_size, o.profile);
	if (repeat > 1)
		printf(", %u runs of each stage", repeat);
	if (o.processes > 1)
		printf(", in %u back-end processes", o.processes);
	if (o.service)
		printf(", in mlx5-lm-vhostd workers");
	printf("\n");
	if (o.processes > 1 && mig_procs_run(&o, defs, ndefs, repeat, eal, res) < 0)
		ret = EXIT_FAILED;
	/* Rounds of every stage, so that a change of load spreads over all of them. */
	for (rep = 0; rep < repeat && o.processes == 1; rep++) {
		for (i = 0; i < ndefs; i++) {
			struct mig_result *r = &res[rep * ndefs + i];
			int rc;

			if (repeat > 1)
				printf("run %u of %u: ", rep + 1, repeat);
			if (o.service)
				rc = mig_svc_run_evacuate(&o, defs[i], r);
			else if (o.shape.vms > 0)
				rc = mig_run_evacuate(&o, defs[i], r);
			else
				rc = mig_run_stage(&o, defs[i], r);
			if (rc < 0)
				ret = EXIT_FAILED;
		}
	}
	for (i = 0; i < ndefs; i++) {
		ss[i].def = defs[i];
		ss[i].nruns = repeat;
		for (rep = 0; rep < repeat; rep++)
			ss[i].runs[rep] = &res[rep * ndefs + i];
		summarize(&ss[i]);
	}
	print_table(&o, ss, ndefs, repeat, &floors);
	for (i = 0; i < ndefs * repeat; i++) {
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
	if (json != NULL && write_json(json, &o, ss, ndefs, repeat, &floors) < 0)
		ret = EXIT_FAILED;
	if (plot != NULL) {
		if (run_plot(json, plot) < 0)
			ret = EXIT_FAILED;
		else
			printf("migrate: chart written to %s\n", plot);
	}
	if (tmp_json[0] != '\0')
		unlink(tmp_json);
	free(res);
	if (in_process)
		lm_app_eal_cleanup();
	return ret;
}
