/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: in-process live migration between emulated source
 * and destination devices, one stage per downtime technique, measured as
 * design.md defines it. This file: the command line and the steps of one
 * invocation (cmd_migrate); a stage runs in migrate_stage.c (one VM) or
 * migrate_evac.c (an evacuation), the table, JSON and chart are
 * migrate_report.c's.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_lm.h"
#include "migrate_int.h"
#include "migrate_floor.h"
#include "migrate_report.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };
/* Not an exit status: parse_args found a command line to run. */
#define MIG_ARGS_OK (-1)

/* Scenarios are names for shapes, nothing more (design.md). */
static const struct mig_shape scenarios[] = {
	{ "seed-precreate", 1, 16, 256, 256, false, 0 },
	{ "seed-mkey", 4, 16, 256, 256, false, 0 },
	/* A host drained for maintenance: 8 VMs of 1 NIC x 4 pairs x 16 GiB. */
	{ "evacuate", 1, 4, 16, 256, false, 8 },
};
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
	/* all, and the destinations' guest memory prepared while the sources run. */
	{ "prereg", 1, 16, 100, 1, false, 0, true },
	/*
	 * prereg with the destinations' mkey made at DRIVER_OK (preconf=0),
	 * and with the queues' fields also sent at their kicks (preconf=2),
	 * for comparison with prereg (preconf=1: the mkey at the first kick).
	 */
	{ "prereg-late", 1, 16, 100, 1, false, 0, true, ",preconf=0" },
	{ "prereg-ahead", 1, 16, 100, 1, false, 0, true, ",preconf=2" },
	/*
	 * prereg with the VM's other sources stopped at once at its first
	 * source's stop (sibling_stop=1; its front ends are this process).
	 */
	{ "prereg-siblings", 1, 16, 100, 1, false, 0, true, ",sibling_stop=1" },
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
		"                     with --vms: all), prereg (all, and the destinations'\n"
		"                     memory prepared while the sources run), prereg-late\n"
		"                     and prereg-ahead (prereg with preconf=0 and 2),\n"
		"                     prereg-siblings (prereg with sibling_stop=1), and\n"
		"                     the peer's:\n"
		"                     peer, peer-precreate\n"
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
		"                     CPUs (emu back end; not with --processes); the prereg\n"
		"                     stages (--vms 1) prepare through the destination\n"
		"                     service's device_prepare with this process's pid\n"
		"  --device-list-probe\n"
		"                     --service, 2 VMs or more: in each at-once window, call\n"
		"                     device_list on the source service in a loop from a thread\n"
		"                     of this process (a connection each, as mlx5-lm-ctl makes\n"
		"                     them) and report its count, p50, p99 and largest; the\n"
		"                     calls take CPU from the migrations: off by default, so\n"
		"                     that the evacuation's own figures are unperturbed\n"
		"  --devx-trace DIR   every device of ours writes its DevX trace to\n"
		"                     DIR/STAGE-runN[-ROUND]-vmV-ROLEK.jsonl and every run\n"
		"                     that ended well its downtime window to\n"
		"                     DIR/STAGE-runN[-ROUND]-vmV.json, for\n"
		"                     doc/perf/downtime_timeline.py (DIR must exist)\n"
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
		"1 otherwise; 2 usage; 3 device objects left alive; else 130 (143) after\n"
		"SIGINT (SIGTERM), which ends the run in progress and reports the completed\n"
		"ones (a second one stops at once; with --processes, Ctrl-C ends every\n"
		"process at once).\n",
		TEST_LM_PMD, MIG_MAX_DEVICES, MIG_MAX_QUEUE_PAIRS, PEER_CONF_THREADS, PEER_PMD,
		MIG_MAX_REPEAT, MIG_MAX_VMS, MIG_MAX_DEVICES);
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

static bool
peer_precreate_asked(const struct mig_stage_def *const *defs, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (defs[i]->peer && defs[i]->precreate)
			return true;
	return false;
}

static int
parse_uint(const char *opt, const char *s, unsigned int min, unsigned int max,
	   unsigned int *out)
{
	return test_lm_parse_uint("migrate", opt, s, min, max, out);
}

/* s is first or second: *is_second says which; -1 after saying why. */
static int
parse_either(const char *opt, const char *s, const char *first, const char *second,
	     bool *is_second)
{
	if (strcmp(s, first) != 0 && strcmp(s, second) != 0) {
		fprintf(stderr, "migrate: %s: %s or %s\n", opt, first, second);
		return -1;
	}
	*is_second = strcmp(s, second) == 0;
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
				"precreate, parallel-mkey, deferred-delete, all, prereg, prereg-late, "
				"prereg-ahead, prereg-siblings, peer, peer-precreate)\n", tok);
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

/* One invocation: what the command line asks for, and what its runs gave. */
struct mig_cmd {
	struct mig_opts o;
	const struct mig_stage_def *defs[2 * NSTAGES];
	unsigned int ndefs;
	unsigned int repeat;
	bool peer;                 /* a stage is a peer stage */
	bool list_probe;           /* --device-list-probe */
	unsigned int peer_ndev;    /* emulated PCI functions (peer stages) */
	const char *json, *plot, *extra_eal;
	char eal[4096];            /* this process's EAL arguments */
	bool in_process;           /* the devices are in this process (its EAL) */
	struct mig_floors floors;
	struct mig_result *res;    /* res[rep * ndefs + i]: run rep of stage i */
	struct mig_stage_sum ss[2 * NSTAGES];
	int interrupted;           /* atomic: the signal that asked to stop (SIGINT, SIGTERM) */
};

/*
 * Ctrl-C (or SIGTERM) during a long run: the run in progress ends as usual,
 * with its teardown (sockets, devices, EAL's runtime directory), and what
 * completed is reported and written; a second signal ends the process at
 * once. The signals are blocked in every thread (EAL's, vhost's, the
 * driver's inherit the mask: none of their calls is interrupted) and taken
 * here.
 */
static sigset_t stop_sigs;

static void *
signal_main(void *arg)
{
	struct mig_cmd *m = arg;
	int sig;

	while (sigwait(&stop_sigs, &sig) == 0) {
		if (__atomic_load_n(&m->interrupted, __ATOMIC_ACQUIRE) != 0) {
			signal(sig, SIG_DFL);
			pthread_sigmask(SIG_UNBLOCK, &stop_sigs, NULL);
			raise(sig);
			_exit(128 + sig);
		}
		__atomic_store_n(&m->interrupted, sig, __ATOMIC_RELEASE);
		fprintf(stderr, "\nmigrate: %s: stopping after the current run (again to stop at "
			"once)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	}
	return NULL;
}

static int
catch_stop_signals(struct mig_cmd *m)
{
	pthread_t t;
	int ret;

	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	ret = pthread_sigmask(SIG_BLOCK, &stop_sigs, NULL);
	if (ret == 0)
		ret = pthread_create(&t, NULL, signal_main, m);
	if (ret == 0)
		ret = pthread_detach(t);
	if (ret != 0) {
		pthread_sigmask(SIG_UNBLOCK, &stop_sigs, NULL);
		fprintf(stderr, "migrate: cannot take SIGINT/SIGTERM: %s\n", strerror(ret));
		return -1;
	}
	return 0;
}

void
mig_child_default_signals(void)
{
	sigset_t none;

	/* A forked child (a back-end process, the service, python) takes them as usual. */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
}

/*
 * The command line into m, checked: the options, their consistency, and
 * what they need of this host (the profile, the output files, the RDMA
 * devices, mlx5-lm-vhostd, the peer's PMD). MIG_ARGS_OK to run it, else
 * the exit status to end with (0 after --help).
 */
static int
parse_args(int argc, char **argv, struct mig_cmd *m)
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
		{ "device-list-probe", no_argument, NULL, 'L' },
		{ "json", required_argument, NULL, 'j' },
		{ "devx-trace", required_argument, NULL, 'X' },
		{ "plot", required_argument, NULL, 'P' },
		{ "eal", required_argument, NULL, 'e' },
		{ "peer-pmd", required_argument, NULL, 'D' },
		{ "peer-conf-threads", required_argument, NULL, 'T' },
		/* Not in --help: hostile front-end orders for the tests. */
		{ "hostile", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct mig_stage_def **defs = m->defs;
	static struct mig_stage_def peer_defs[2 * NSTAGES];
	unsigned int peer_threads = PEER_CONF_THREADS, peer_ndev = 0;
	bool peer = false, peer_threads_set = false;
	struct mig_opts o = { .profile = "cx6dx", .frames = 256, .peer_pmd = PEER_PMD };
	const char *scenario = NULL, *stages = NULL, *json = NULL, *plot = NULL;
	const char *trace_dir = NULL;
	static char trace_abs[PATH_MAX];
	unsigned int ndefs = 0, i, size = 256, repeat = 1, vms = 0, procs = 0;
	const char *extra_eal = NULL;
	bool custom = false, list_probe = false;
	int c;

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
			if (parse_either("--backend", optarg, "emu", "rdma", &o.rdma) < 0)
				return EXIT_USAGE;
			break;
		case 'A':
			if (parse_either("--acks", optarg, "qemu", "every", &o.acks_every) < 0)
				return EXIT_USAGE;
			break;
		case 'f':
			if (parse_uint("--frames", optarg, 1, 1u << 24, &o.frames) < 0)
				return EXIT_USAGE;
			break;
		case 'r':
			if (parse_uint("--repeat", optarg, 1, MIG_MAX_REPEAT, &repeat) < 0)
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
		case 'L': list_probe = true; break;
		case 'j': json = optarg; break;
		case 'X': trace_dir = optarg; break;
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
	if (list_probe && (!o.service || o.shape.vms < 2)) {
		fprintf(stderr, "migrate: --device-list-probe measures the service while VMs "
			"migrate at once: give --service and 2 VMs or more\n");
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
	for (i = 0; i < ndefs; i++)
		if (defs[i]->prereg && o.service && o.shape.vms > 1) {
			/*
			 * The destination service prepares through device_prepare,
			 * which takes the front end's process: this one, which is
			 * every VM's here, would have every VM's memory prepared.
			 */
			fprintf(stderr, "migrate: --service: stage %s prepares the memory of a "
				"front-end process, and this process is every VM's front end: "
				"give --vms 1\n", defs[i]->name);
			return EXIT_USAGE;
		}
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
	/* A count no stage uses would be a run that is not what was asked for. */
	if (peer_threads_set && !peer_precreate_asked(defs, ndefs)) {
		fprintf(stderr, "migrate: --peer-conf-threads: only for stage peer-precreate, "
			"which --stages does not name\n");
		return EXIT_USAGE;
	}
	if (peer && o.shape.vms > 0) {
		fprintf(stderr, "migrate: the peer stages are for one VM, not an evacuation\n");
		return EXIT_USAGE;
	}
	for (i = 0; i < ndefs; i++)
		if (o.shape.vms > 0 && defs[i]->devargs != NULL &&
		    strstr(defs[i]->devargs, "sibling_stop=1") != NULL) {
			/*
			 * sibling_stop takes one front-end process for one VM; every VM
			 * here has this process as its front end.
			 */
			fprintf(stderr, "migrate: stage %s is for one VM, not an evacuation (its VMs "
				"share one front-end process)\n", defs[i]->name);
			return EXIT_USAGE;
		}
	if (test_lm_check_profile("migrate", o.profile) < 0 ||
	    (json != NULL && test_lm_check_output("migrate", "--json", json) < 0) ||
	    (plot != NULL && (test_lm_check_output("migrate", "--plot", plot) < 0 ||
			      mig_plot_check() < 0)))
		return EXIT_USAGE;
	if (o.rdma && rdma_devices_check(&o) < 0)
		return EXIT_USAGE;
	if (trace_dir != NULL) {
		const char *why = NULL, *c;
		struct stat st;

		/* Absolute: the service's workers and the children write there too. */
		if (realpath(trace_dir, trace_abs) == NULL || stat(trace_abs, &st) != 0)
			why = strerror(errno);
		else if (!S_ISDIR(st.st_mode))
			why = "not a directory";
		else if (access(trace_abs, W_OK) != 0)
			why = strerror(errno);
		if (why != NULL) {
			fprintf(stderr, "migrate: --devx-trace %s: %s\n", trace_dir, why);
			return EXIT_USAGE;
		}
		/*
		 * The path goes into devargs: a comma or '=' would start another
		 * key, the service takes printable characters without spaces, and
		 * the devarg holds MIG_TRACE_DIR_MAX characters with the file name.
		 */
		for (c = trace_abs; *c > ' ' && *c <= '~' && *c != ',' && *c != '=';)
			c++;
		if (*c != '\0' || strlen(trace_abs) > MIG_TRACE_DIR_MAX) {
			fprintf(stderr, "migrate: --devx-trace %s: a path of printable characters "
				"without spaces, ',' or '=', at most %d long, please\n", trace_abs,
				MIG_TRACE_DIR_MAX);
			return EXIT_USAGE;
		}
		o.trace_dir = trace_abs;
	}
	if (o.service && mig_svc_check() < 0)
		return EXIT_USAGE;
	if (peer && peer_check(&o, &peer_ndev) < 0)
		return EXIT_USAGE;
	m->o = o;
	m->ndefs = ndefs;
	m->repeat = repeat;
	m->peer = peer;
	m->list_probe = list_probe;
	m->peer_ndev = peer_ndev;
	m->json = json;
	m->plot = plot;
	m->extra_eal = extra_eal;
	return MIG_ARGS_OK;
}

/* The floors of the shape under the profile the devices run (migrate_floor.h). */
static void
compute_floors(struct mig_cmd *m)
{
	const struct mig_opts *o = &m->o;
	char ferr[256];

	if (mig_floor_compute(o->profile, (o->shape.vms > 0 ? o->shape.vms : 1) * o->shape.devices,
			      o->shape.queue_pairs, o->shape.mem_gb, &m->floors.all, ferr,
			      sizeof(ferr)) == 0 &&
	    mig_floor_compute(o->profile, o->shape.devices, o->shape.queue_pairs, o->shape.mem_gb,
			      &m->floors.alone, ferr, sizeof(ferr)) == 0)
		m->floors.have = true;
	else
		printf("migrate: no floor for this profile: %s\n", ferr);
}

/* This process's EAL arguments into m->eal. 0, or -1 after saying why. */
static int
build_eal_args(struct mig_cmd *m)
{
	const size_t len = sizeof(m->eal);
	char *eal = m->eal;
	unsigned int i;
	int n;

	/* vhost's per-message chatter would bury the progress lines. */
	n = snprintf(eal, len, "--log-level=lib.vhost.*:error");
	/*
	 * The peer: its PMD loaded, the PCI bus on, and every emulated
	 * function blocked, so that EAL's start-up probes none of them (the
	 * mlx5 common driver would take them as Ethernet ports); rte_dev_probe
	 * replaces a device's blocking entry with its class=vdpa devargs.
	 */
	if (m->peer) {
		n += snprintf(eal + n, len - (size_t)n, " -d %s", m->o.peer_pmd);
		for (i = 0; i < m->peer_ndev && (size_t)n < len; i++)
			n += snprintf(eal + n, len - (size_t)n, " -b 0000:5e:%02x.0", i);
	}
	if (m->extra_eal != NULL && (size_t)n < len)
		n += snprintf(eal + n, len - (size_t)n, " %s", m->extra_eal);
	if ((size_t)n >= len) {
		fprintf(stderr, "migrate: EAL arguments too long\n");
		return -1;
	}
	return 0;
}

/* EAL where the devices are in this process, and room for every run. 0, or -1. */
static int
start(struct mig_cmd *m)
{
	/*
	 * Split: the children start their own EAL; this process only relays.
	 * --service: the devices are in the service's workers, each with its EAL.
	 */
	m->in_process = m->o.processes == 1 && !m->o.service;
	m->o.service_eal = m->extra_eal;
	if (m->in_process && lm_app_eal_init_bus("dpdk-test-lm", m->eal, m->peer) < 0)
		return -1;
	m->res = calloc((size_t)m->ndefs * m->repeat, sizeof(*m->res));
	if (m->list_probe)
		m->o.listprobe = mig_listprobe_new();
	if (m->res == NULL || (m->list_probe && m->o.listprobe == NULL)) {
		free(m->res);
		mig_listprobe_free(m->o.listprobe);
		fprintf(stderr, "migrate: out of memory\n");
		if (m->in_process)
			lm_app_eal_cleanup();
		return -1;
	}
	return 0;
}

static void
stop(struct mig_cmd *m)
{
	free(m->res);
	mig_listprobe_free(m->o.listprobe);
	if (m->in_process)
		lm_app_eal_cleanup();
}

static void
print_header(const struct mig_cmd *m)
{
	const struct mig_opts *o = &m->o;

	printf("migrate: %s, ", o->shape.name);
	if (o->shape.vms > 0)
		printf("%u VMs of ", o->shape.vms);
	printf("%u NIC%s x %u queue pairs, %u GiB, queue size %u, model %s", o->shape.devices,
	       o->shape.devices > 1 ? "s" : "", o->shape.queue_pairs, o->shape.mem_gb,
	       o->shape.queue_size, o->profile);
	if (m->repeat > 1)
		printf(", %u runs of each stage", m->repeat);
	if (o->processes > 1)
		printf(", in %u back-end processes", o->processes);
	if (o->service)
		printf(", in mlx5-lm-vhostd workers");
	printf("\n");
	if (o->listprobe != NULL)
		printf("migrate: --device-list-probe: device_list on the source service in a loop "
		       "during each at-once window: its calls perturb the evacuation's figures\n");
}

/*
 * Interrupted before run rep of stage i: the report keeps the complete rounds,
 * or, within the first round, the stages that ran.
 */
static void
keep_completed(struct mig_cmd *m, unsigned int rep, unsigned int i)
{
	if (rep > 0)
		m->repeat = rep;
	else
		m->ndefs = i;
	printf("migrate: interrupted: reporting %u run%s of %u stage%s\n", m->repeat,
	       m->repeat == 1 ? "" : "s", m->ndefs, m->ndefs == 1 ? "" : "s");
}

/* Every run of every stage into m->res. 0, or EXIT_FAILED when one failed. */
static int
run_stages(struct mig_cmd *m)
{
	const struct mig_opts *o = &m->o;
	unsigned int i, rep;
	int ret = 0;

	if (o->processes > 1 && mig_procs_run(o, m->defs, m->ndefs, m->repeat, m->eal, m->res) < 0)
		ret = EXIT_FAILED;
	/* Rounds of every stage, so that a change of load spreads over all of them. */
	for (rep = 0; rep < m->repeat && o->processes == 1; rep++) {
		for (i = 0; i < m->ndefs; i++) {
			struct mig_result *r = &m->res[rep * m->ndefs + i];
			unsigned long alive_before = mig_alive_now();
			int rc;

			if (__atomic_load_n(&m->interrupted, __ATOMIC_ACQUIRE) != 0) {
				keep_completed(m, rep, i);
				return ret;
			}

			if (m->repeat > 1)
				printf("run %u of %u: ", rep + 1, m->repeat);
			if (o->service)
				rc = mig_svc_run_evacuate(o, m->defs[i], r);
			else if (o->shape.vms > 0)
				rc = mig_run_evacuate(o, m->defs[i], r);
			else
				rc = mig_run_stage(o, m->defs[i], r);
			if (mig_check_alive(r, alive_before) < 0)
				rc = -1;
			if (rc < 0)
				ret = EXIT_FAILED;
		}
	}
	return ret;
}

/* Each stage summed up over its runs, and the table. */
static void
report_table(struct mig_cmd *m)
{
	unsigned int i, rep;

	for (i = 0; i < m->ndefs; i++) {
		m->ss[i].def = m->defs[i];
		m->ss[i].nruns = m->repeat;
		for (rep = 0; rep < m->repeat; rep++)
			m->ss[i].runs[rep] = &m->res[rep * m->ndefs + i];
		mig_summarize(&m->ss[i]);
	}
	mig_print_table(&m->o, m->ss, m->ndefs, m->repeat, &m->floors);
	mig_listprobe_print(m->o.listprobe);
}

/*
 * The exit status the runs call for, given ret so far: EXIT_FAILED when a
 * run lost, duplicated or corrupted a frame or missed a page of the dirty
 * log, else EXIT_LEAK when one left device objects alive; each said.
 */
static int
check_runs(const struct mig_cmd *m, int ret)
{
	unsigned int i;

	for (i = 0; i < m->ndefs * m->repeat; i++) {
		const struct mig_result *r = &m->res[i];

		if (r->ok && (r->lost_packets != 0 || r->duplicated_packets != 0 ||
			      r->bad_packets != 0 || !mig_dirty_ok(r))) {
			fprintf(stderr, "migrate: stage %s: %lu lost, %lu duplicated, %lu bad "
				"packets; dirty log %s\n", r->name, (unsigned long)r->lost_packets,
				(unsigned long)r->duplicated_packets, (unsigned long)r->bad_packets,
				!r->dirty_logged ? "not supported by the device" :
				mig_dirty_ok(r) ? "complete" : "incomplete");
			ret = EXIT_FAILED;
		}
		if (r->leaked_objects != 0) {
			fprintf(stderr, "migrate: stage %s: %lu device objects left alive\n",
				r->name, r->leaked_objects);
			if (ret == 0)
				ret = EXIT_LEAK;
		}
	}
	return ret;
}

/* --json and --plot (the chart is drawn from the JSON). 0, or -1 after saying why. */
static int
write_outputs(const struct mig_cmd *m)
{
	const char *json = m->json;
	char tmp_json[64] = "";
	int ret = 0;

	/* --plot alone: the JSON the chart is drawn from is a file of our own. */
	if (m->plot != NULL && json == NULL) {
		snprintf(tmp_json, sizeof(tmp_json), "/tmp/test-lm-migrate-%d.json", (int)getpid());
		json = tmp_json;
	}
	if (json != NULL &&
	    mig_write_json(json, &m->o, m->ss, m->ndefs, m->repeat, &m->floors) < 0)
		ret = -1;
	else if (json != NULL && tmp_json[0] == '\0')
		printf("migrate: results written to %s\n", json);
	if (m->plot != NULL) {
		if (mig_plot_run(json, m->plot) < 0)
			ret = -1;
		else
			printf("migrate: chart written to %s\n", m->plot);
	}
	if (tmp_json[0] != '\0')
		unlink(tmp_json);
	return ret;
}

int
cmd_migrate(int argc, char **argv)
{
	struct mig_cmd m;
	int ret;

	memset(&m, 0, sizeof(m));
	ret = parse_args(argc, argv, &m);
	if (ret != MIG_ARGS_OK)
		return ret;
	compute_floors(&m);
	if (build_eal_args(&m) < 0)
		return EXIT_USAGE;
	/*
	 * Before EAL: every thread it and vhost start inherits the mask. Not
	 * with --processes: this process only forks the back ends, which start
	 * their own EAL and threads, and a fork must not come from a process
	 * that already has threads (TSan refuses it; a lock held by another
	 * thread at the fork would stay held in the child); Ctrl-C ends them all
	 * at once, as it always did.
	 */
	if (m.o.processes == 1 && catch_stop_signals(&m) < 0)
		return EXIT_FAILED;
	if (start(&m) < 0)
		return EXIT_FAILED;
	print_header(&m);
	ret = run_stages(&m);
	if (m.ndefs > 0) {
		report_table(&m);
		if (mig_listprobe_failed(m.o.listprobe) < 0)
			ret = EXIT_FAILED;
		ret = check_runs(&m, ret);
		if (write_outputs(&m) < 0)
			ret = EXIT_FAILED;
	}
	stop(&m);
	/* A completed run's failure (1) or leak (3) says more than the interruption. */
	if (ret == 0 && __atomic_load_n(&m.interrupted, __ATOMIC_ACQUIRE) != 0)
		return 128 + m.interrupted;
	return ret;
}
