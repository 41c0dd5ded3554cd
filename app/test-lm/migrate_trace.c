/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --devx-trace DIR: every device of ours in a run writes its DevX trace
 * (the devx_trace= devarg, doc/devx-trace.md) to
 * DIR/STAGE-runN-vmV-ROLEK.jsonl, and the run writes its downtime window to
 * DIR/STAGE-runN-vmV.json: the first GET_VRING_BASE in the traces' clock
 * (CLOCK_MONOTONIC microseconds) and the downtime. doc/perf/downtime_timeline.py
 * reads both: which command of which device ran when inside the window,
 * and when none did (the messages on vhost's thread).
 *
 * N is the run's number, the first one whose files are not in DIR yet, so
 * that the runs of --repeat, and of several invocations, sit side by side;
 * an evacuation's round of VM 0 alone and its round of every VM at once
 * are runs of their own (each sets its devices up anew).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "migrate_int.h"
#include "migrate_vm.h"

static void
name_of(const struct mig_ctx *x, unsigned int run, const char *tail, char *buf, size_t len)
{
	/* V: the VM's number in the whole evacuation, over every process of --processes. */
	snprintf(buf, len, "%s/%s-run%u-vm%u%s", x->o->trace_dir, x->st->name, run,
		 x->o->vm_base + x->vm, tail);
}

/* The run's number: fixed at its first device, the first free one in the directory. */
static unsigned int
run_number(struct mig_ctx *x)
{
	char a[PATH_MAX], b[PATH_MAX];
	unsigned int n;

	if (x->trace_run != 0)
		return x->trace_run;
	for (n = 1;; n++) {
		name_of(x, n, ".json", a, sizeof(a));
		name_of(x, n, "-src0.jsonl", b, sizeof(b));
		if (access(a, F_OK) != 0 && access(b, F_OK) != 0)
			break;
	}
	x->trace_run = n;
	return n;
}

void
mig_trace_devarg(struct mig_ctx *x, const char *role, unsigned int k, char *buf, size_t len)
{
	char tail[32];
	int n;

	buf[0] = '\0';
	if (x->o->trace_dir == NULL)
		return;
	snprintf(tail, sizeof(tail), "-%s%u.jsonl", role, k);
	n = snprintf(buf, len, ",devx_trace=");
	if (n > 0 && (size_t)n < len)
		name_of(x, run_number(x), tail, buf + n, len - (size_t)n);
}

void
mig_trace_window(struct mig_ctx *x, double t0)
{
	char path[PATH_MAX];
	FILE *f;

	if (x->o->trace_dir == NULL)
		return;
	name_of(x, run_number(x), ".json", path, sizeof(path));
	f = fopen(path, "we");
	if (f == NULL) {
		fprintf(stderr, "migrate: --devx-trace: cannot write %s: %s\n", path,
			strerror(errno));
		return;
	}
	fprintf(f, "{\"stage\": \"%s\", \"run\": %u, \"vm\": %u, \"devices\": %u, "
		"\"t0_us\": %.1f, \"downtime_ms\": %.3f, \"src_stop_ms\": %.3f}\n", x->st->name,
		x->trace_run, x->o->vm_base + x->vm, x->n, t0 * 1e3, x->r->downtime_ms, x->r->src_stop_ms);
	fclose(f);
}
