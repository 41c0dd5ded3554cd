/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: what the runs of every stage gave, as the table,
 * the JSON (design.md's fields, then ours) and the chart
 * (tools/plot_migrate.py). migrate_report.c.
 */
#ifndef MIGRATE_REPORT_H
#define MIGRATE_REPORT_H

#include <stdbool.h>

#include "migrate_int.h"
#include "migrate_floor.h"

/* --repeat's limit: the runs a stage's summary holds. */
#define MIG_MAX_REPEAT 100

/* A stage over its runs: the median run and the spread of the downtime. */
struct mig_stage_sum {
	const struct mig_stage_def *def;
	const struct mig_result *runs[MIG_MAX_REPEAT];
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
struct mig_floors {
	bool have;
	struct mig_floor all;      /* the scenario: every device of every VM */
	struct mig_floor alone;    /* evacuation: one VM */
};

/* A stage's summary over its runs (ss->def, ss->runs and ss->nruns set). */
void mig_summarize(struct mig_stage_sum *ss);
/* The run's dirty log was on and complete. */
bool mig_dirty_ok(const struct mig_result *r);
/* The table of the stages' median runs, the floor line, the projection. */
void mig_print_table(const struct mig_opts *o, const struct mig_stage_sum *ss, unsigned int n,
		     unsigned int repeat, const struct mig_floors *f);
/* Every stage and every run as JSON into path. 0, or -1 after saying why. */
int mig_write_json(const char *path, const struct mig_opts *o, const struct mig_stage_sum *ss,
		   unsigned int n, unsigned int repeat, const struct mig_floors *f);
/* The chart script can be read (remembered for mig_plot_run). 0, or -1 after saying why. */
int mig_plot_check(void);
/* The chart of the JSON file json drawn into svg. 0, or -1 after saying why. */
int mig_plot_run(const char *json, const char *svg);

#endif /* MIGRATE_REPORT_H */
