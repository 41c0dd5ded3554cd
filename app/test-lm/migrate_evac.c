/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: a host evacuation. K VMs in this process (their
 * devices here, or in the workers of mlx5-lm-vhostd), each set up and
 * paused through the phases of migrate_phase.c, then migrated at once from
 * their own front-end threads released together; VM 0 (with --service:
 * every VM, one after another) migrated alone first, for comparison.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_vm.h"

/* The start line of a round: every VM's front end stops its VM at once. */
struct evac_go {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int state;                 /* 0 wait, 1 go, -1 give up */
};

struct evac_vm {
	struct mig_ctx *x;
	struct mig_result r;
	struct evac_go *go;
	pthread_t thread;
	bool started;
	int ret;
	/* --service: the VM's CPU by part in its last window, and that window alone. */
	double fe_run_ms, fe_wait_ms;
	struct mig_cpu_use cpu;
	struct mig_cpu_window win;
};

/* One VM's front end, as its own QEMU would be: stop the source, start the destination. */
static void *
evac_main(void *arg)
{
	struct evac_vm *v = arg;
	double t0, run0 = 0, wait0 = 0, run1, wait1;
	bool cpu = v->x->o->svc != NULL;
	int state;

	pthread_mutex_lock(&v->go->lock);
	while (v->go->state == 0)
		pthread_cond_wait(&v->go->cond, &v->go->lock);
	state = v->go->state;
	pthread_mutex_unlock(&v->go->lock);
	if (state < 0) {
		v->ret = -1;
		return NULL;
	}
	/* --service: this thread is the VM's front end; its own clock is exact. */
	if (cpu && mig_cpu_thread_now(&run0, &wait0) < 0) {
		mig_fail(v->x, "cannot read the front-end thread's CPU time");
		v->ret = -1;
		return NULL;
	}
	v->ret = mig_vm_stop_sources(v->x, &t0);
	if (v->ret == 0)
		v->ret = mig_vm_start_destinations(v->x, t0);
	/* --service: checked once the window is over (mig_vm_svc_conf_after). */
	if (v->ret == 0 && v->x->st->prereg && v->x->o->svc == NULL)
		v->ret = mig_vm_prepare_check(v->x, t0);
	if (cpu && v->ret == 0) {
		if (mig_cpu_thread_now(&run1, &wait1) < 0) {
			mig_fail(v->x, "cannot read the front-end thread's CPU time");
			v->ret = -1;
		}
		v->fe_run_ms = run1 - run0;
		v->fe_wait_ms = wait1 - wait0;
	}
	return NULL;
}

/*
 * Every VM set up and running on its sources, logging, negotiated with its
 * destinations, then paused: only the migrations will compete.
 */
static int
evac_prepare(const struct mig_opts *o, const struct mig_stage_def *st, struct evac_vm *v,
	     const char *round)
{
	const unsigned int nvm = o->shape.vms;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < nvm; i++) {
		v[i].x = mig_ctx_new(o, st, &v[i].r, i);
		if (v[i].x == NULL)
			ret = -1;
		else
			v[i].x->trace_round = round;
	}
	for (i = 0; i < nvm && ret == 0; i++)
		ret = mig_vm_setup(v[i].x);
	for (i = 0; i < nvm && ret == 0; i++)
		if (mig_vm_start_sources(v[i].x) < 0 ||
		    (st->prereg && mig_vm_prepare(v[i].x) < 0) ||
		    mig_vm_begin_logging(v[i].x) < 0 || mig_vm_handshake(v[i].x) < 0)
			ret = -1;
	for (i = 0; i < nvm && ret == 0; i++)
		mig_vm_pause(v[i].x);
	/* --service: the destinations' kick and call eventfds of every ring, made in the window. */
	if (ret == 0 && o->svc != NULL)
		ret = mig_svc_fd_reserve(nvm * o->shape.devices * 2 * (2 * o->shape.queue_pairs));
	return ret;
}

/*
 * The front ends of VMs first .. first + n - 1 released together, each
 * stopping its VM's sources and starting its destinations; returns once
 * all are done. With w (--service) the window's CPU is read at both ends:
 * each VM's parts into v[i].cpu, the whole window's into w.
 */
static int
evac_release(const struct mig_opts *o, struct evac_vm *v, unsigned int first, unsigned int n,
	     struct mig_cpu_window *w)
{
	struct evac_go go = {
		.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	};
	struct mig_cpu_use use[MIG_MAX_VMS];
	unsigned int i, end = first + n;
	double t0 = 0;
	int ret = 0;

	for (i = first; i < end; i++) {
		v[i].go = &go;
		v[i].ret = 0;
		v[i].started = pthread_create(&v[i].thread, NULL, evac_main, &v[i]) == 0;
		if (!v[i].started) {
			mig_fail(v[i].x, "cannot start the front-end thread");
			ret = -1;
			break;
		}
	}
	/* The threads wait at the start line: every process is idle. */
	if (ret == 0 && w != NULL && mig_svc_window_begin(o->svc, n) < 0)
		ret = -1;
	t0 = mig_now_ms();
	pthread_mutex_lock(&go.lock);
	go.state = ret == 0 ? 1 : -1;
	pthread_cond_broadcast(&go.cond);
	pthread_mutex_unlock(&go.lock);
	for (i = first; i < end; i++) {
		if (!v[i].started)
			continue;
		pthread_join(v[i].thread, NULL);
		v[i].started = false;
		if (v[i].ret < 0)
			ret = -1;
	}
	if (ret < 0 || w == NULL)
		return ret;
	w->window_ms = mig_now_ms() - t0;
	if (mig_svc_window_end(o->svc, use, o->shape.vms, w) < 0)
		return -1;
	for (i = first; i < end; i++) {
		v[i].cpu = use[i];
		v[i].cpu.cpu_ms[MIG_CPU_FRONT_END] = v[i].fe_run_ms;
		v[i].cpu.wait_ms[MIG_CPU_FRONT_END] = v[i].fe_wait_ms;
		v[i].win = *w;
	}
	return 0;
}

static int
evac_teardown(struct evac_vm *v, unsigned int first, unsigned int n)
{
	unsigned int i;
	int ret = 0;

	for (i = first; i < first + n; i++) {
		if (v[i].x == NULL)
			continue;
		mig_vm_disconnect(v[i].x);
		if (mig_vm_teardown(v[i].x, mig_leaked_now()) < 0)
			ret = -1;
		free(v[i].x);
		v[i].x = NULL;
	}
	return ret;
}

/*
 * K VMs set up and running on their sources, paused, then VMs 0..nmig-1
 * migrated from their own threads released together; the others stay
 * paused on their sources. Every VM is torn down. w: see evac_release.
 */
static int
evac_round(const struct mig_opts *o, const struct mig_stage_def *st, unsigned int nmig,
	   struct evac_vm *v, bool sync, struct mig_cpu_window *w)
{
	const unsigned int nvm = o->shape.vms;
	unsigned int i;
	int ret;

	/* Named apart in traces: not every process of --processes runs the round alone. */
	ret = evac_prepare(o, st, v, nmig == 1 && !sync ? "alone" : "at-once");
	/*
	 * Split over processes: every process's VMs stop at the same moment
	 * (the parent releases them together once all are ready), and a
	 * process that failed still answers so that the others give up.
	 */
	if (sync && o->sync != NULL && o->sync(o->sync_arg, MIG_SYNC_READY, ret) < 0)
		ret = -1;
	if (ret == 0)
		ret = evac_release(o, v, 0, nmig, w);
	for (i = 0; i < nmig && ret == 0 && o->svc != NULL; i++)
		ret = mig_vm_svc_conf_after(v[i].x);
	for (i = 0; i < nmig && ret == 0; i++)
		if (mig_vm_finish(v[i].x) < 0)
			ret = -1;
	/* The VMs that stayed lose nothing either. */
	for (i = nmig; i < nvm && ret == 0; i++)
		mig_vm_count_packets(v[i].x);
	if (evac_teardown(v, 0, nvm) < 0)
		ret = -1;
	return ret;
}

/*
 * --service: every VM migrated alone, one after another, the others idle
 * on their sources. VM i's window opens once VM i - 1 has left both
 * services (its workers gone), so that nothing of an earlier migration
 * (its deferred restore and deletions, a worker's exit) falls in it.
 */
static int
evac_round_each_alone(const struct mig_opts *o, const struct mig_stage_def *st,
		      struct evac_vm *v)
{
	const unsigned int nvm = o->shape.vms;
	unsigned int i;
	int ret;

	ret = evac_prepare(o, st, v, "alone");
	for (i = 0; i < nvm && ret == 0; i++) {
		ret = evac_release(o, v, i, 1, &v[i].win);
		if (ret == 0)
			ret = mig_vm_svc_conf_after(v[i].x);
		if (ret == 0)
			ret = mig_vm_finish(v[i].x);
		if (evac_teardown(v, i, 1) < 0)
			ret = -1;
	}
	if (evac_teardown(v, 0, nvm) < 0)
		ret = -1;
	return ret;
}

static struct mig_vm_time
vm_time(const struct mig_result *r)
{
	struct mig_vm_time t = {
		.downtime_ms = r->downtime_ms, .src_stop_ms = r->src_stop_ms,
		.dst_start_ms = r->dst_start_ms, .dst_mr_ms = r->dst_mr_ms,
		.dst_vq_ms = r->dst_vq_ms,
	};

	return t;
}

/* The VM of the median downtime (the lower middle one for an even count). */
static unsigned int
median_vm(const struct mig_vm_time *t, unsigned int n)
{
	unsigned int idx[MIG_MAX_VMS], i, j, k;

	for (i = 0; i < n; i++) {
		k = i;
		for (j = i; j > 0 && t[idx[j - 1]].downtime_ms > t[k].downtime_ms; j--)
			idx[j] = idx[j - 1];
		idx[j] = k;
	}
	return n > 0 ? idx[(n - 1) / 2] : 0;
}

/* Packets, dirty log and leaks of VMs 0..nvm-1 (migrated: nmig) into r. */
static void
evac_sum(struct mig_result *r, const struct evac_vm *v, unsigned int nvm, unsigned int nmig)
{
	unsigned int i;

	for (i = 0; i < nvm; i++) {
		r->frames += v[i].r.frames;
		r->lost_packets += v[i].r.lost_packets;
		r->duplicated_packets += v[i].r.duplicated_packets;
		r->bad_packets += v[i].r.bad_packets;
		r->leaked_objects += v[i].r.leaked_objects;
	}
	for (i = 0; i < nmig; i++) {
		r->dirty_logged = r->dirty_logged && v[i].r.dirty_logged;
		r->dirty_pages_checked += v[i].r.dirty_pages_checked;
		r->dirty_pages_missing += v[i].r.dirty_pages_missing;
		r->snap_pages_compared += v[i].r.snap_pages_compared;
	}
}

int
mig_run_evacuate(const struct mig_opts *o, const struct mig_stage_def *st, struct mig_result *r)
{
	const unsigned int nvm = o->shape.vms;
	const struct mig_result *slow;
	struct evac_vm *v;
	unsigned int i;
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", st->name);
	r->vms = nvm;
	r->dirty_logged = true;
	v = calloc(nvm, sizeof(*v));
	if (v == NULL)
		return -1;
	printf("stage %s: precreate=%u workers=%u mr_gc_ms=%u parallel=%u, %u VMs\n",
	       st->name, st->precreate, st->workers, st->mr_gc_ms, st->parallel, nvm);
	ret = 0;
	if (!o->no_alone && o->svc != NULL) {
		printf(" each VM alone, one after another (the others idle on their sources)\n");
		fflush(stdout);
		ret = evac_round_each_alone(o, st, v);
		evac_sum(r, v, nvm, nvm);
		for (i = 0; i < nvm; i++) {
			r->vm_alone[i] = vm_time(&v[i].r);
			r->cpu_alone[i] = v[i].cpu;
			r->win_alone[i] = v[i].win;
		}
		/* A VM alone is their median: one VM's noise does not move every ratio. */
		r->alone_vm = median_vm(r->vm_alone, nvm);
		r->alone = r->vm_alone[r->alone_vm];
		r->vu_requests = v[r->alone_vm].r.vu_requests;
		r->vu_round_trips = v[r->alone_vm].r.vu_round_trips;
	} else if (!o->no_alone) {
		printf(" vm%u alone (the other %u VMs%s idle on their sources)\n", o->vm_base,
		       nvm - 1, o->processes > 1 ? " of this process" : "");
		fflush(stdout);
		ret = evac_round(o, st, 1, v, false, NULL);
		evac_sum(r, v, nvm, 1);
		r->alone = vm_time(&v[0].r);
		/* The protocol's part is a VM's own: the one alone's. */
		r->vu_requests = v[0].r.vu_requests;
		r->vu_round_trips = v[0].r.vu_round_trips;
	}
	if (o->sync != NULL && o->sync(o->sync_arg, MIG_SYNC_ALONE_DONE, ret) < 0)
		ret = -1;
	if (ret == 0) {
		if (o->processes > 1)
			printf(" vm%u-vm%u at once (in this process of %u)\n", o->vm_base,
			       o->vm_base + nvm - 1, o->processes);
		else
			printf(" all %u VMs at once\n", nvm);
		fflush(stdout);
		ret = evac_round(o, st, nvm, v, true, o->svc != NULL ? &r->win_at_once : NULL);
		evac_sum(r, v, nvm, nvm);
	} else if (o->sync != NULL) {
		/* The other processes wait for this one's answer at the start line. */
		o->sync(o->sync_arg, MIG_SYNC_READY, -1);
	}
	if (ret == 0) {
		/* The host is drained when its slowest VM runs again. */
		slow = &v[0].r;
		for (i = 0; i < nvm; i++) {
			r->vm[i] = vm_time(&v[i].r);
			r->cpu_at_once[i] = v[i].cpu;
			if (v[i].r.downtime_ms > slow->downtime_ms)
				slow = &v[i].r;
			r->model_busy_ms += v[i].r.model_busy_ms;
			r->model_pin_ms += v[i].r.model_pin_ms;
			r->model_actual_ms += v[i].r.model_actual_ms;
			r->model_charges += v[i].r.model_charges;
			r->model_src_ms += v[i].r.model_src_ms;
			r->model_dst_ms += v[i].r.model_dst_ms;
		}
		r->downtime_ms = slow->downtime_ms;
		r->src_stop_ms = slow->src_stop_ms;
		r->dst_start_ms = slow->dst_start_ms;
		r->dst_mr_ms = slow->dst_mr_ms;
		r->dst_vq_ms = slow->dst_vq_ms;
		r->dst_conf_ms = slow->dst_conf_ms;
		r->src_close_ms = slow->src_close_ms;
		r->src_first_ring_ms = slow->src_first_ring_ms;
		r->dirty_check_ms = slow->dirty_check_ms;
		/*
		 * The VMs are set up one after another, each prepared in turn:
		 * the longest preparation of a VM, the earliest start and latest
		 * end relative to each VM's own stop.
		 */
		r->prereg = st->prereg;
		for (i = 0; i < nvm && st->prereg; i++) {
			if (i == 0 || v[i].r.prep_start_ms < r->prep_start_ms)
				r->prep_start_ms = v[i].r.prep_start_ms;
			if (i == 0 || v[i].r.prep_end_ms > r->prep_end_ms)
				r->prep_end_ms = v[i].r.prep_end_ms;
			if (v[i].r.prep_ms > r->prep_ms)
				r->prep_ms = v[i].r.prep_ms;
			r->prep_bytes += v[i].r.prep_bytes;
			r->prep_used_bytes += v[i].r.prep_used_bytes;
		}
	}
	r->ok = ret == 0;
	free(v);
	return ret == 0 ? 0 : -1;
}
