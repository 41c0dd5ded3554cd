/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the report of a run (migrate_report.h). A stage's
 * runs summed up by their median, the seed-style table (one VM, or an
 * evacuation), the floor line, the JSON, and the chart drawn by
 * tools/plot_migrate.py from that JSON.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_common.h>

#include "test_lm.h"
#include "migrate_report.h"

#ifndef TEST_LM_TOOLS_DIR
#define TEST_LM_TOOLS_DIR "tools"
#endif

static int
cmp_downtime(const void *a, const void *b)
{
	const struct mig_result *x = *(const struct mig_result *const *)a;
	const struct mig_result *y = *(const struct mig_result *const *)b;

	return x->downtime_ms < y->downtime_ms ? -1 : x->downtime_ms > y->downtime_ms;
}

void
mig_summarize(struct mig_stage_sum *ss)
{
	const struct mig_result *ok[MIG_MAX_REPEAT];
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
find_result(const struct mig_stage_sum *ss, unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ss[i].ok && strcmp(ss[i].med.name, name) == 0)
			return &ss[i].med;
	return NULL;
}

bool
mig_dirty_ok(const struct mig_result *r)
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

/* The floor a stage's downtime is compared with: prereg has its own. */
static double
stage_floor(const struct mig_floor *f, bool prereg)
{
	return prereg ? f->floor_prereg_ms : f->floor_overlapped_ms;
}

static void
fmt_x_floor(char *buf, size_t len, double ms, const struct mig_floors *f, bool alone,
	    bool prereg)
{
	double fl = stage_floor(alone ? &f->alone : &f->all, prereg);

	if (f->have && fl > 0)
		snprintf(buf, len, "%.1f", ms / fl);
	else
		snprintf(buf, len, "-");
}

static void
print_floor_line(const struct mig_opts *o, const struct mig_floors *f)
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

/* A prereg stage: when its preparation ran, against the model, and the stage's floor. */
static void
print_prereg_line(const struct mig_opts *o, const struct mig_result *r,
		  const struct mig_floors *f)
{
	const struct mig_floor *fl = &f->all;
	/* An evacuation prepares its VMs one after another: each against one VM's floor. */
	const struct mig_floor *one = o->shape.vms > 0 ? &f->alone : &f->all;

	printf("%s: the destinations' memory (%.0f GiB) prepared from %.1f to %.1f ms before "
	       "the stop (%.1f ms%s", r->name, (double)r->prep_bytes / (1u << 30),
	       -r->prep_start_ms, -r->prep_end_ms, r->prep_ms,
	       o->shape.vms > 0 ? " for the slowest VM" : "");
	if (f->have && one->prereg_model_ms > 0)
		printf("; its model floor %.1f ms, %.2fx", one->prereg_model_ms,
		       r->prep_ms / one->prereg_model_ms);
	printf("), %.0f GiB of it used at DRIVER_OK", (double)r->prep_used_bytes / (1u << 30));
	if (f->have && fl->floor_prereg_ms > 0)
		printf("; the stage's floor (stop, indirect mkey, queues) %.1f ms%s",
		       fl->floor_prereg_ms, o->shape.vms > 0 ? " for all VMs at once" : "");
	if (f->have && o->shape.vms > 0 && f->alone.floor_prereg_ms > 0)
		printf(", %.1f ms for one VM alone", f->alone.floor_prereg_ms);
	printf("\n");
}

/*
 * The protocol's part: requests in the downtime and the round trips among
 * them, each a reply the front end waited for (what a round trip costs on
 * this host: dpdk-test-lm bench rtt).
 */
static void
print_vu_line(const struct mig_opts *o, const struct mig_stage_sum *ss, unsigned int n)
{
	const char *sep = "";
	unsigned int i;

	printf("vhost-user in the downtime (the median run%s): ",
	       o->shape.vms > 0 ? "'s VM alone" : "");
	for (i = 0; i < n; i++) {
		if (!ss[i].ok)
			continue;
		printf("%s%s %" PRIu64 " requests, %" PRIu64 " round trips", sep, ss[i].med.name,
		       ss[i].med.vu_requests, ss[i].med.vu_round_trips);
		sep = "; ";
	}
	printf("\n");
}

void
mig_table_head(const struct mig_col *cols, unsigned int n)
{
	unsigned int i;
	int w;

	for (i = 0; i < n; i++)
		printf("| %*s ", cols[i].width, cols[i].name);
	printf("|\n");
	for (i = 0; i < n; i++) {
		printf("|");
		for (w = abs(cols[i].width) + 2; w > 0; w--)
			putchar('-');
	}
	printf("|\n");
}

static void
print_table_vm(const struct mig_opts *o, const struct mig_stage_sum *ss, unsigned int n,
	       const struct mig_floors *f)
{
	unsigned int i;

	static const struct mig_col cols[] = {
		{ "stage", -15 }, { "downtime ms", 11 }, { "min-max ms", 15 }, { "x floor", 7 },
		{ "source stop ms", 14 }, { "destination start ms", 20 },
		{ "of which memory ms", 18 }, { "of which queues ms", 18 },
		{ "model busy ms", 13 }, { "overshoot us", 12 }, { "lost", 4 }, { "dup", 3 },
		{ "dirty ok", 8 },
	};

	mig_table_head(cols, RTE_DIM(cols));
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
		fmt_x_floor(xf, sizeof(xf), r->downtime_ms, f, false, r->prereg);
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
		       mig_dirty_ok(r) ? "yes" : "NO");
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
print_table_evac(const struct mig_opts *o, const struct mig_stage_sum *ss, unsigned int n,
		 const struct mig_floors *f)
{
	unsigned int i;
	char label[32];

	static const struct mig_col cols[] = {
		{ "stage", -15 }, { "VMs", 3 }, { "alone ms", 8 }, { "at once med ms", 14 },
		{ "at once max ms", 14 }, { "min-max ms", 15 }, { "max/alone", 9 },
		{ "x floor", 7 }, { "model busy ms", 13 }, { "overshoot us", 12 }, { "lost", 4 },
		{ "dup", 3 }, { "dirty ok", 8 },
	};

	mig_table_head(cols, RTE_DIM(cols));
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
		fmt_x_floor(xf, sizeof(xf), max, f, false, r->prereg);
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
		       (unsigned long)r->duplicated_packets, mig_dirty_ok(r) ? "yes" : "NO");
	}
}

void
mig_print_table(const struct mig_opts *o, const struct mig_stage_sum *ss, unsigned int n,
		unsigned int repeat, const struct mig_floors *f)
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
	for (i = 0; i < n; i++)
		if (ss[i].ok && ss[i].med.prereg)
			print_prereg_line(o, &ss[i].med, f);
	print_vu_line(o, ss, n);
	for (i = 0; i < n && o->service; i++)
		if (ss[i].ok)
			mig_proj_print(&ss[i].med, f->have ? stage_floor(&f->all, ss[i].med.prereg) :
				       0);
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
run_json(const struct mig_result *r, const struct mig_stage_def *d, const struct mig_floors *f)
{
	double fl = f->have ? stage_floor(&f->all, d->prereg) : 0;
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
	/* Pages the checkpoint comparison read (changed ones must be logged or the CPU's). */
	json_object_set_new(o, "snapshot_pages_compared",
			    json_integer((json_int_t)r->snap_pages_compared));
	/* The vhost-user protocol's part of the downtime: requests, and round trips waited for. */
	json_object_set_new(o, "vu_requests", json_integer((json_int_t)r->vu_requests));
	json_object_set_new(o, "vu_round_trips", json_integer((json_int_t)r->vu_round_trips));
	json_object_set_new(o, "peer", json_boolean(d->peer));
	json_object_set_new(o, "model_busy_ms", json_real(r->model_busy_ms));
	json_object_set_new(o, "model_pin_ms", json_real(r->model_pin_ms));
	json_object_set_new(o, "model_actual_ms", json_real(r->model_actual_ms));
	json_object_set_new(o, "model_charges", json_integer((json_int_t)r->model_charges));
	json_object_set_new(o, "model_src_ms", json_real(r->model_src_ms));
	json_object_set_new(o, "model_dst_ms", json_real(r->model_dst_ms));
	json_object_set_new(o, "overshoot_mean_us", json_real(overshoot_us(r)));
	json_object_set_new(o, "floor_ms", json_real(fl));
	if (d->prereg)
		json_object_set_new(o, "prereg", json_pack("{s:f,s:f,s:f,s:o,s:I,s:I}",
			"start_ms", r->prep_start_ms, "end_ms", r->prep_end_ms,
			"prep_ms", r->prep_ms, "model_floor_ms", f->have ?
				json_real(r->vms > 0 ? f->alone.prereg_model_ms :
					  f->all.prereg_model_ms) : json_null(),
			"bytes", (json_int_t)r->prep_bytes,
			"used_bytes", (json_int_t)r->prep_used_bytes));
	json_object_set_new(o, "x_floor", x_floor_json(r->downtime_ms, fl));
	if (r->vms > 0) {
		double fa = f->have ? stage_floor(&f->alone, d->prereg) : 0, med, max;
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
stage_json(const struct mig_stage_sum *ss, const struct mig_floors *f)
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
	return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
		"devices", (json_int_t)f->devices, "queue_pairs", (json_int_t)f->queue_pairs,
		"mem_gib", (json_int_t)f->mem_gb, "chunks", (json_int_t)f->chunks,
		"baseline_ms", f->baseline_ms, "floor_serial_devices_ms", f->floor_serial_ms,
		"floor_overlapped_devices_ms", f->floor_overlapped_ms,
		"dst_queues_baseline_ms", f->dst_queues_baseline_ms,
		"dst_queues_floor_ms", f->dst_queues_floor_ms,
		"mr_create_1worker_ms", f->mr_create_1worker_ms,
		"mr_create_floor_ms", f->mr_create_floor_ms,
		"src_stop_floor_per_device_ms", f->src_stop_floor_per_device_ms,
		"floor_prereg_ms", f->floor_prereg_ms, "prereg_model_ms", f->prereg_model_ms);
}

int
mig_write_json(const char *path, const struct mig_opts *o, const struct mig_stage_sum *ss,
	       unsigned int n, unsigned int repeat, const struct mig_floors *f)
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
	mig_listprobe_json(root, o->listprobe);
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
int
mig_plot_check(void)
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

int
mig_plot_run(const char *json, const char *svg)
{
	const char *script = plot_script;
	int status;
	pid_t pid;

	if (mig_plot_check() < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "migrate: --plot: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		mig_child_default_signals();
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
