/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --devx-trace DIR: every device of ours in a run writes its DevX trace
 * (the devx_trace= devarg, doc/devx-trace.md) to
 * DIR/STAGE-runN[-ROUND]-vmV-ROLEK.jsonl, and a run that ended well its
 * downtime window to DIR/STAGE-runN[-ROUND]-vmV.json: the first
 * GET_VRING_BASE in the traces' clock (CLOCK_MONOTONIC microseconds) and
 * the downtime. doc/perf/downtime_timeline.py reads both: which command of
 * which device ran when inside the window, and when none did (the
 * messages on vhost's thread).
 *
 * ROUND names an evacuation's rounds ("alone": VM 0 migrated with the
 * others idle; "at-once"), which not every process of --processes runs.
 * N is the run's number: the first one whose window file could be created
 * (O_EXCL, so that runs of --repeat and of invocations side by side never
 * share one); a run that failed, or an evacuation's VM that stayed idle in
 * the round, leaves that file empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "migrate_int.h"
#include "migrate_vm.h"

static void
name_of(const struct mig_ctx *x, unsigned int run, const char *tail, char *buf, size_t len)
{
	const char *round = x->trace_round != NULL ? x->trace_round : "";

	/* V: the VM's number in the whole evacuation, over every process of --processes. */
	snprintf(buf, len, "%s/%s-run%u%s%s-vm%u%s", x->o->trace_dir, x->st->name, run,
		 round[0] != '\0' ? "-" : "", round, x->o->vm_base + x->vm, tail);
}

/* The run's number, fixed at its first device: its window file reserved. */
static unsigned int
run_number(struct mig_ctx *x)
{
	char path[PATH_MAX];
	unsigned int n;
	int fd;

	if (x->trace_run != 0)
		return x->trace_run;
	for (n = 1; n < 100000; n++) {
		name_of(x, n, ".json", path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (errno != EEXIST) {
			fprintf(stderr, "migrate: --devx-trace: cannot create %s: %s\n", path,
				strerror(errno));
			break;
		}
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
mig_trace_window(struct mig_ctx *x)
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
	/*
	 * The window on the traces' clock is t0 + downtime + the benchmark's
	 * checks, which run inside it (between the stop and the start) and are
	 * not counted: where they began and how long they took.
	 */
	fprintf(f, "{\"stage\": \"%s\", \"run\": %u, \"round\": \"%s\", \"vm\": %u, "
		"\"devices\": %u, \"t0_us\": %.1f, \"downtime_ms\": %.3f, "
		"\"src_stop_ms\": %.3f, \"checks_from_ms\": %.3f, \"checks_ms\": %.3f}\n",
		x->st->name, x->trace_run,
		x->trace_round != NULL ? x->trace_round : "", x->o->vm_base + x->vm, x->n,
		x->trace_t0 * 1e3, x->r->downtime_ms, x->r->src_stop_ms,
		x->checks_t0 > 0 ? x->checks_t0 - x->trace_t0 : 0, x->r->dirty_check_ms);
	fclose(f);
}
