/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate --service: each VM's CPU time by part in the
 * evacuation's windows, and what the at-once window can become on a host
 * with more CPUs than this one.
 *
 * On a host with C CPUs, the at-once window (the front ends released to
 * the last VM forwarding again, which holds the slowest VM's downtime)
 * lasts at least
 *
 *   max(M, A, D / C, S)
 *
 *   M  the cost model's bound: the floor of all K VMs at once, each
 *      device with its own command slots, the host's pinning tokens
 *      shared (migrate_floor.c, from the profile)
 *   A  a VM alone, measured (the median of every VM alone): at once a VM
 *      does the same work, with the others beside it
 *   D  the CPU every process spent in the at-once window, measured: the
 *      window cannot be shorter than D spread over C CPUs
 *   S  the longest serial CPU path of one VM at once, measured: its
 *      front end and its two vhost threads, which take turns over its
 *      vhost-user messages (counted whole: the messages QEMU sends
 *      without waiting overlap with their handling, so S can overstate)
 *
 * This is a bound, not a prediction: what it leaves out (threads waiting
 * for a CPU behind others, wake-up latency, shared caches and locks) is
 * what separates this machine's row from the measurement beside it.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "migrate_int.h"

/* The hosts of the projection: this machine's 2 CPUs, then 16 and 64. */
static const unsigned int proj_hosts[] = { 2, 16, 64 };
#define PROJ_MAX_ROWS (sizeof(proj_hosts) / sizeof(proj_hosts[0]) + 1)

/* The JSON's names of the parts: <id>_ms for times, <id> for shares. */
static const char *const part_id[MIG_CPU_NPARTS] = {
	"front_end", "vhost", "driver", "emulator", "other",
};
static const char *const part_key[MIG_CPU_NPARTS] = {
	"front_end_ms", "vhost_ms", "driver_ms", "emulator_ms", "other_ms",
};
static const char *const part_name[MIG_CPU_NPARTS] = {
	"front end", "vhost", "driver", "emulator", "other",
};
/* Who the dominant part is, in the sentence under the table. */
static const char *const part_who[MIG_CPU_NPARTS] = {
	"the front ends (the benchmark's QEMU stand-ins)", "the vhost threads",
	"the driver threads", "the emulator's threads", "the workers' other threads",
};

enum proj_bound { BOUND_MODEL, BOUND_ALONE, BOUND_CPU, BOUND_SERIAL };
static const char *const bound_name[] = { "model", "alone", "CPU", "serial" };

struct proj_row {
	unsigned int cpus;
	double cpu_ms;             /* D / C */
	double at_least_ms;
	double ratio;              /* at_least_ms / A */
	enum proj_bound bound;
	bool here;                 /* this machine's CPU count */
};

struct proj {
	double model_ms, alone_ms, demand_ms, serial_ms;
	double window_ms, waited_ms;     /* measured: the window, its threads' waits */
	unsigned int serial_vm;
	struct proj_row row[PROJ_MAX_ROWS];
	unsigned int nrows;
	unsigned int here_cpus;
	double measured_ratio;           /* the slowest VM at once / A */
	double window_ratio;             /* the window / A */
	double runnable_mean;            /* threads on or waiting for a CPU, on average */
	double part_ms[MIG_CPU_NPARTS];  /* summed over the VMs, at once */
	double outside_ms;               /* D beyond the VMs' parts */
	enum mig_cpu_part dominant;
};

/* The parts of one account (cpu_ms or wait_ms), summed. */
static double
parts_sum(const double *ms)
{
	double t = 0;
	int p;

	for (p = 0; p < MIG_CPU_NPARTS; p++)
		t += ms[p];
	return t;
}

static double
max_at_once(const struct mig_result *r)
{
	double m = 0;
	unsigned int i;

	for (i = 0; i < r->vms; i++)
		if (r->vm[i].downtime_ms > m)
			m = r->vm[i].downtime_ms;
	return m;
}

/* The CPUs this process (and what it starts) may run on. */
static unsigned int
cpus_here(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 0;
	return (unsigned int)CPU_COUNT(&set);
}

static void
row_fill(struct proj *p, struct proj_row *row, unsigned int cpus)
{
	row->cpus = cpus;
	row->cpu_ms = p->demand_ms / cpus;
	row->at_least_ms = p->model_ms;
	row->bound = BOUND_MODEL;
	if (p->alone_ms > row->at_least_ms) {
		row->at_least_ms = p->alone_ms;
		row->bound = BOUND_ALONE;
	}
	if (row->cpu_ms > row->at_least_ms) {
		row->at_least_ms = row->cpu_ms;
		row->bound = BOUND_CPU;
	}
	if (p->serial_ms > row->at_least_ms) {
		row->at_least_ms = p->serial_ms;
		row->bound = BOUND_SERIAL;
	}
	row->ratio = p->alone_ms > 0 ? row->at_least_ms / p->alone_ms : 0;
	row->here = cpus == p->here_cpus;
}

static void
proj_compute(const struct mig_result *r, double model_ms, struct proj *p)
{
	unsigned int hosts[PROJ_MAX_ROWS], n = 0, i, c, k;
	bool here_listed = false;
	double vms = 0;
	int part;

	memset(p, 0, sizeof(*p));
	p->model_ms = model_ms;
	p->alone_ms = r->alone.downtime_ms;
	p->demand_ms = r->win_at_once.total_ms;
	p->here_cpus = cpus_here();
	p->measured_ratio = p->alone_ms > 0 ? max_at_once(r) / p->alone_ms : 0;
	p->window_ms = r->win_at_once.window_ms;
	p->window_ratio = p->alone_ms > 0 ? p->window_ms / p->alone_ms : 0;
	p->waited_ms = r->win_at_once.wait_ms;
	for (i = 0; i < r->vms; i++) {
		const struct mig_cpu_use *u = &r->cpu_at_once[i];
		double serial = u->cpu_ms[MIG_CPU_FRONT_END] + u->cpu_ms[MIG_CPU_VHOST];

		if (serial > p->serial_ms) {
			p->serial_ms = serial;
			p->serial_vm = i;
		}
		for (part = 0; part < MIG_CPU_NPARTS; part++)
			p->part_ms[part] += u->cpu_ms[part];
		vms += parts_sum(u->cpu_ms);
		/* The workers' waits are in the window's; the front ends' are the VMs'. */
		p->waited_ms += u->wait_ms[MIG_CPU_FRONT_END];
	}
	p->outside_ms = p->demand_ms - vms;
	/* Little's law: (time on a CPU + time waiting for one) / the window. */
	p->runnable_mean = p->window_ms > 0 ? (p->demand_ms + p->waited_ms) / p->window_ms : 0;
	p->dominant = MIG_CPU_FRONT_END;
	for (part = 0; part < MIG_CPU_NPARTS; part++)
		if (p->part_ms[part] > p->part_ms[p->dominant])
			p->dominant = (enum mig_cpu_part)part;
	/* The hosts in increasing order, this machine's among them. */
	for (c = 0; c < PROJ_MAX_ROWS - 1; c++) {
		hosts[n++] = proj_hosts[c];
		here_listed = here_listed || proj_hosts[c] == p->here_cpus;
	}
	if (p->here_cpus > 0 && !here_listed)
		hosts[n++] = p->here_cpus;
	for (c = 1; c < n; c++)
		for (k = c; k > 0 && hosts[k - 1] > hosts[k]; k--) {
			unsigned int t = hosts[k];

			hosts[k] = hosts[k - 1];
			hosts[k - 1] = t;
		}
	for (c = 0; c < n; c++)
		row_fill(p, &p->row[p->nrows++], hosts[c]);
}

static void
print_use_row(const char *vm, const char *round, double downtime, const struct mig_cpu_use *u)
{
	int part;

	printf("| %-6s | %-7s | %11.1f |", vm, round, downtime);
	for (part = 0; part < MIG_CPU_NPARTS; part++)
		printf(" %*.2f |", (int)strlen(part_name[part]), u->cpu_ms[part]);
	printf(" %6.2f | %9.2f |\n", parts_sum(u->cpu_ms), parts_sum(u->wait_ms));
}

static void
use_add(struct mig_cpu_use *sum, const struct mig_cpu_use *u)
{
	int part;

	for (part = 0; part < MIG_CPU_NPARTS; part++) {
		sum->cpu_ms[part] += u->cpu_ms[part];
		sum->wait_ms[part] += u->wait_ms[part];
	}
}

/* A signed value that rounds to 0.00 at the table's precision prints as 0.00, not -0.00. */
static double
shown(double ms)
{
	return ms > -0.005 && ms < 0.005 ? 0 : ms;
}

static void
print_cpu_table(const struct mig_result *r)
{
	struct mig_cpu_use at_once = { { 0 } }, alone = { { 0 } };
	double max_alone = 0;
	char vm[16], all[16];
	unsigned int i;
	int part;

	printf("\nCPU time by part, ms (stage %s, its median run): each VM in the at-once window "
	       "(%.1f ms), and alone in its own window (the others idle)\n\n", r->name,
	       r->win_at_once.window_ms);
	printf("| %-6s | %-7s | %11s |", "VM", "round", "downtime ms");
	for (part = 0; part < MIG_CPU_NPARTS; part++)
		printf(" %s |", part_name[part]);
	printf(" %6s | %9s |\n", "CPU", "waited ms");
	printf("|--------|---------|-------------|-----------|-------|--------|----------|-------|"
	       "--------|-----------|\n");
	for (i = 0; i < r->vms; i++) {
		snprintf(vm, sizeof(vm), "vm%u", i);
		print_use_row(vm, "at once", r->vm[i].downtime_ms, &r->cpu_at_once[i]);
		print_use_row(vm, "alone", r->vm_alone[i].downtime_ms, &r->cpu_alone[i]);
		use_add(&at_once, &r->cpu_at_once[i]);
		use_add(&alone, &r->cpu_alone[i]);
		if (r->vm_alone[i].downtime_ms > max_alone)
			max_alone = r->vm_alone[i].downtime_ms;
	}
	/* Sums of the parts; the downtime is the slowest VM's. */
	snprintf(all, sizeof(all), "all %u", r->vms);
	print_use_row(all, "at once", max_at_once(r), &at_once);
	print_use_row(all, "alone", max_alone, &alone);
	printf("\nat-once window %.1f ms: every process's CPU %.2f ms (the VMs' parts %.2f; this "
	       "process's other threads %.2f; the supervisors %.2f; the workers' CPU in no thread "
	       "read at both ends %.2f, %u threads ended); the workers' threads waited %.2f ms "
	       "for a CPU\n", r->win_at_once.window_ms, r->win_at_once.total_ms,
	       parts_sum(at_once.cpu_ms),
	       r->win_at_once.bench_ms - at_once.cpu_ms[MIG_CPU_FRONT_END],
	       r->win_at_once.services_ms, shown(r->win_at_once.unattributed_ms),
	       r->win_at_once.threads_ended, r->win_at_once.wait_ms);
}

void
mig_proj_print(const struct mig_result *r, double model_ms)
{
	struct proj p;
	unsigned int k;
	int part;

	if (!r->service || r->vms == 0)
		return;
	print_cpu_table(r);
	proj_compute(r, model_ms, &p);
	printf("\nprojection: on a host of C CPUs the at-once window (the front ends released "
	       "to the last VM\nforwarding again; it holds the slowest VM's downtime) lasts at "
	       "least max(M, A, D / C, S):\n"
	       "  M = %.2f ms, the cost model's floor of all %u VMs at once%s;\n"
	       "  A = %.2f ms, a VM alone (vm%u, the median); D = %.2f ms, every process's CPU in "
	       "the at-once\n  window;\n"
	       "  S = %.2f ms, vm%u's front end and vhost threads at once (its serial path)\n\n",
	       p.model_ms, r->vms, p.model_ms <= 0 ? " (the profile charges nothing)" :
	       r->prereg ? " (prereg's: the stop, the indirect mkey, the queues)" : "",
	       p.alone_ms, r->alone_vm, p.demand_ms, p.serial_ms, p.serial_vm);
	printf("| CPUs      | D / C ms | at least ms | at least / A | bound by | "
	       "measured / A                 |\n");
	printf("|-----------|----------|-------------|--------------|----------|"
	       "------------------------------|\n");
	for (k = 0; k < p.nrows; k++) {
		char cpus[24], measured[48] = "-";

		snprintf(cpus, sizeof(cpus), "%u%s", p.row[k].cpus, p.row[k].here ? " (here)" : "");
		if (p.row[k].here)
			snprintf(measured, sizeof(measured), "window %.2f, slowest VM %.2f",
				 p.window_ratio, p.measured_ratio);
		printf("| %-9s | %8.2f | %11.2f | %12.2f | %-8s | %-28s |\n", cpus,
		       p.row[k].cpu_ms, p.row[k].at_least_ms, p.row[k].ratio,
		       bound_name[p.row[k].bound], measured);
	}
	printf("\nmeasured here: the window %.2f ms, the slowest VM %.2f ms; threads on or waiting "
	       "for a CPU in\nthe window, on average: (D + the workers' and front ends' waits "
	       "%.2f ms) / window = %.1f\n", p.window_ms, max_at_once(r), p.waited_ms,
	       p.runnable_mean);
	printf("\nthe at-once window's CPU (D) by part:");
	for (part = 0; part < MIG_CPU_NPARTS; part++)
		printf(" %s %.0f%%,", part_name[part],
		       p.demand_ms > 0 ? 100 * p.part_ms[part] / p.demand_ms : 0);
	printf(" outside the VMs %.0f%%: %s dominate\n",
	       p.demand_ms > 0 ? 100 * p.outside_ms / p.demand_ms : 0, part_who[p.dominant]);
	fflush(stdout);
}

static json_t *
use_json(const struct mig_cpu_use *u)
{
	json_t *o = json_object(), *w = json_object();
	int part;

	for (part = 0; part < MIG_CPU_NPARTS; part++) {
		json_object_set_new(o, part_key[part], json_real(u->cpu_ms[part]));
		json_object_set_new(w, part_key[part], json_real(u->wait_ms[part]));
	}
	json_object_set_new(o, "total_ms", json_real(parts_sum(u->cpu_ms)));
	json_object_set_new(o, "waited", w);
	return o;
}

static json_t *
window_json(const struct mig_cpu_window *w)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "window_ms", w->window_ms,
			 "total_ms", w->total_ms, "benchmark_ms", w->bench_ms,
			 "services_ms", w->services_ms, "unattributed_ms", w->unattributed_ms,
			 "workers_waited_ms", w->wait_ms, "threads_ended",
			 (json_int_t)w->threads_ended);
}

void
mig_proj_json(json_t *evacuate, const struct mig_result *r, double model_ms)
{
	json_t *vms = json_object_get(evacuate, "vm"), *alone = json_array(), *rows = json_array();
	json_t *share = json_object(), *parts = json_object();
	struct proj p;
	unsigned int i, k;
	int part;

	if (!r->service || r->vms == 0) {
		json_decref(alone);
		json_decref(rows);
		json_decref(share);
		json_decref(parts);
		return;
	}
	proj_compute(r, model_ms, &p);
	for (i = 0; i < r->vms && i < json_array_size(vms); i++)
		json_object_set_new(json_array_get(vms, i), "cpu", json_pack("{s:o, s:o}",
			"at_once", use_json(&r->cpu_at_once[i]),
			"alone", use_json(&r->cpu_alone[i])));
	for (i = 0; i < r->vms; i++)
		json_array_append_new(alone, window_json(&r->win_alone[i]));
	for (part = 0; part < MIG_CPU_NPARTS; part++) {
		json_object_set_new(parts, part_key[part], json_real(p.part_ms[part]));
		json_object_set_new(share, part_id[part],
				    json_real(p.demand_ms > 0 ? p.part_ms[part] / p.demand_ms : 0));
	}
	json_object_set_new(share, "outside_vms",
			    json_real(p.demand_ms > 0 ? p.outside_ms / p.demand_ms : 0));
	json_object_set_new(evacuate, "cpu", json_pack("{s:o, s:o, s:o}", "at_once",
		window_json(&r->win_at_once), "at_once_parts", parts, "alone", alone));
	for (k = 0; k < p.nrows; k++)
		json_array_append_new(rows, json_pack("{s:I, s:f, s:f, s:f, s:s, s:b}",
			"cpus", (json_int_t)p.row[k].cpus, "window_cpu_per_cpus_ms", p.row[k].cpu_ms,
			"at_least_ms", p.row[k].at_least_ms,
			"over_alone_at_least", p.row[k].ratio,
			"bound", bound_name[p.row[k].bound], "this_machine", p.row[k].here));
	json_object_set_new(evacuate, "projection", json_pack(
		"{s:s, s:f, s:f, s:f, s:f, s:I, s:o, s:{s:I, s:f, s:f, s:f, s:f, s:f}, s:o, s:s}",
		"formula", "max(model_bound, alone, window_cpu / cpus, serial_cpu)",
		"model_bound_ms", p.model_ms, "alone_ms", p.alone_ms,
		"window_cpu_ms", p.demand_ms, "serial_cpu_ms", p.serial_ms,
		"serial_vm", (json_int_t)p.serial_vm, "rows", rows,
		"measured", "cpus", (json_int_t)p.here_cpus, "max_over_alone", p.measured_ratio,
		"window_ms", p.window_ms, "window_over_alone", p.window_ratio,
		"waited_ms", p.waited_ms, "runnable_mean", p.runnable_mean,
		"cpu_share", share, "dominant_part", part_id[p.dominant]));
}
