/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate --service --device-list-probe: how long the source
 * service takes to answer device_list while every VM migrates at once
 * (the service's target: p99 <= 5 ms while 8 VMs migrate at once).
 *
 * A thread of this process calls device_list on the source service in a
 * loop, from the start line of each at-once window to the end of its last
 * VM's migration: a connection each, as mlx5-lm-ctl makes them, each call
 * timed from connect() to its whole reply. The supervisor answers
 * device_list from its own table (no worker is asked), so what the figure
 * shows is whether its event loop keeps up while the workers push state
 * changes and every CPU is busy with the migrations.
 *
 * The loop does not pause between calls: it takes what CPU it can, and the
 * supervisor's answers take theirs, from the migrations it watches. It is
 * off by default; with it the evacuation's own figures (downtimes, CPU by
 * part, projection) are those of a host where an agent polls the service
 * as fast as it answers, and the output says so.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_app_rpc.h"
#include "migrate_int.h"

/* A call's reply: the supervisor answers at once; a second is already a failure. */
#define PROBE_CALL_MS 10000

struct probe_window {
	size_t first, n;           /* its calls in lat[] */
	unsigned long failed;
};

struct mig_listprobe {
	/* Every call's latency over the run's windows (ms), in order. */
	double *lat;
	size_t n, cap;
	struct probe_window *win;
	unsigned int nwin, capwin;
	unsigned long failed;
	char first_error[320];
	/* The window being probed. */
	pthread_t thread;
	bool running;
	atomic_bool stop;
	char rpc[108];
	size_t devices;            /* device_list must list this many */
};

struct mig_listprobe *
mig_listprobe_new(void)
{
	return calloc(1, sizeof(struct mig_listprobe));
}

void
mig_listprobe_free(struct mig_listprobe *p)
{
	if (p == NULL)
		return;
	mig_listprobe_stop(p);
	free(p->lat);
	free(p->win);
	free(p);
}

/* One device_list, a connection of its own: its latency (ms), or -1 after noting why. */
static double
probe_call(struct mig_listprobe *p)
{
	struct lm_app_rpc c;
	char err[256];
	double t0 = mig_now_ms(), ms;
	json_t *res = NULL;
	int code = 0;

	if (lm_app_rpc_open(&c, p->rpc, PROBE_CALL_MS, err, sizeof(err)) == 0)
		res = lm_app_rpc_call(&c, "device_list", NULL, PROBE_CALL_MS, &code, err,
				      sizeof(err));
	ms = mig_now_ms() - t0;
	lm_app_rpc_close(&c);
	if (res != NULL && (!json_is_array(res) || json_array_size(res) != p->devices))
		snprintf(err, sizeof(err), "device_list listed %zu devices, not %zu",
			 json_is_array(res) ? json_array_size(res) : 0, p->devices);
	else if (res != NULL)
		err[0] = '\0';
	json_decref(res);
	if (err[0] == '\0')
		return ms;
	if (p->first_error[0] == '\0')
		snprintf(p->first_error, sizeof(p->first_error), "%s", err);
	return -1;
}

static int
probe_record(struct mig_listprobe *p, double ms)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 4096;
		double *lat = realloc(p->lat, cap * sizeof(*lat));

		if (lat == NULL)
			return -ENOMEM;
		p->lat = lat;
		p->cap = cap;
	}
	p->lat[p->n++] = ms;
	return 0;
}

static void *
probe_main(void *arg)
{
	struct mig_listprobe *p = arg;
	struct probe_window *w = &p->win[p->nwin - 1];

	while (!atomic_load(&p->stop)) {
		double ms = probe_call(p);

		if (ms < 0) {
			w->failed++;
		} else if (probe_record(p, ms) < 0) {
			snprintf(p->first_error, sizeof(p->first_error), "out of memory");
			w->failed++;
			break;
		}
	}
	w->n = p->n - w->first;
	return NULL;
}

int
mig_listprobe_start(struct mig_listprobe *p, const char *rpc, unsigned int devices)
{
	struct probe_window *w;

	/* A window left open (its run failed before its end) ends before the next one. */
	mig_listprobe_stop(p);
	if (p->nwin == p->capwin) {
		unsigned int cap = p->capwin ? 2 * p->capwin : 16;

		w = realloc(p->win, cap * sizeof(*w));
		if (w == NULL) {
			fprintf(stderr, "migrate: --device-list-probe: out of memory\n");
			return -1;
		}
		p->win = w;
		p->capwin = cap;
	}
	w = &p->win[p->nwin++];
	*w = (struct probe_window){ .first = p->n };
	snprintf(p->rpc, sizeof(p->rpc), "%s", rpc);
	p->devices = devices;
	atomic_store(&p->stop, false);
	if (pthread_create(&p->thread, NULL, probe_main, p) != 0) {
		fprintf(stderr, "migrate: --device-list-probe: cannot start its thread\n");
		p->nwin--;
		return -1;
	}
	p->running = true;
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The nearest-rank q-quantile of n sorted values (n > 0). */
static double
quantile(const double *v, size_t n, double q)
{
	size_t rank = (size_t)ceil(q * (double)n);

	return v[rank > 0 ? rank - 1 : 0];
}

struct probe_sum {
	size_t n;
	double p50, p99, max;
};

/* Over n calls from lat (a sorted copy: the record stays in call order). */
static int
probe_sum(const double *lat, size_t n, struct probe_sum *s)
{
	double *v;

	memset(s, 0, sizeof(*s));
	s->n = n;
	if (n == 0)
		return 0;
	v = malloc(n * sizeof(*v));
	if (v == NULL)
		return -1;
	memcpy(v, lat, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_double);
	s->p50 = quantile(v, n, 0.50);
	s->p99 = quantile(v, n, 0.99);
	s->max = v[n - 1];
	free(v);
	return 0;
}

void
mig_listprobe_stop(struct mig_listprobe *p)
{
	struct probe_window *w;
	struct probe_sum s;

	if (p == NULL || !p->running)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->thread, NULL);
	p->running = false;
	w = &p->win[p->nwin - 1];
	p->failed += w->failed;
	if (probe_sum(p->lat + w->first, w->n, &s) == 0)
		printf("  device_list on the source service meanwhile: %zu calls, p50 %.2f ms, "
		       "p99 %.2f ms, max %.2f ms%s\n", s.n, s.p50, s.p99, s.max,
		       w->failed ? " (some failed)" : "");
}

int
mig_listprobe_failed(const struct mig_listprobe *p)
{
	if (p == NULL || p->failed == 0)
		return 0;
	fprintf(stderr, "migrate: --device-list-probe: %lu device_list calls failed, the first: "
		"%s\n", p->failed, p->first_error);
	return -1;
}

void
mig_listprobe_print(const struct mig_listprobe *p)
{
	struct probe_sum s;

	if (p == NULL)
		return;
	if (probe_sum(p->lat, p->n, &s) < 0)
		return;
	printf("\ndevice_list on the source service while every VM migrated at once\n"
	       "(--device-list-probe: in a loop from this process, a connection each as\n"
	       "mlx5-lm-ctl makes them; its calls take CPU from the migrations and perturb\n"
	       "the figures above): %u window%s, %zu calls", p->nwin, p->nwin == 1 ? "" : "s",
	       s.n);
	if (s.n > 0)
		printf(", p50 %.2f ms, p99 %.2f ms, max %.2f ms", s.p50, s.p99, s.max);
	printf(", %lu failed\n", p->failed);
}

static json_t *
sum_json(const struct probe_sum *s, unsigned long failed)
{
	json_t *o = json_pack("{s:I,s:I}", "calls", (json_int_t)s->n,
			      "failed", (json_int_t)failed);

	/* No call answered: no latency, absent rather than 0. */
	json_object_set_new(o, "p50_ms", s->n ? json_real(s->p50) : json_null());
	json_object_set_new(o, "p99_ms", s->n ? json_real(s->p99) : json_null());
	json_object_set_new(o, "max_ms", s->n ? json_real(s->max) : json_null());
	return o;
}

void
mig_listprobe_json(json_t *root, const struct mig_listprobe *p)
{
	json_t *o, *wins;
	struct probe_sum s;
	unsigned int i;

	if (p == NULL || probe_sum(p->lat, p->n, &s) < 0)
		return;
	o = sum_json(&s, p->failed);
	wins = json_array();
	for (i = 0; i < p->nwin; i++) {
		const struct probe_window *w = &p->win[i];
		struct probe_sum ws;

		if (probe_sum(p->lat + w->first, w->n, &ws) == 0)
			json_array_append_new(wins, sum_json(&ws, w->failed));
	}
	json_object_set_new(o, "windows", wins);
	json_object_set_new(o, "service", json_string("source"));
	json_object_set_new(o, "method", json_string("device_list"));
	json_object_set_new(root, "device_list_probe", o);
}
