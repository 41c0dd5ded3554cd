/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the phases of one VM's live migration, in-process.
 *
 * N source and N destination devices of the PMD, each served on its own
 * vhost-user socket by DPDK's vhost library in this process, are driven by
 * the built-in front end (app/test-lm/vu) in QEMU's order, with one guest
 * memory shared by the VM's N NICs and guest traffic running:
 *
 *   set-up     probe 2N devices, register 2N sockets, connect
 *   source     start the sources one after the other, traffic on every pair
 *   logging    SET_LOG_BASE + LOG_ALL on every source, dirty checkpoint
 *   handshake  the destinations negotiate (QEMU does it before the stop)
 *   stop       the VM pauses; t0 = first GET_VRING_BASE; every source ring
 *   check      every page the sources wrote since the checkpoint is logged
 *   start      the destinations start from the returned bases; the
 *              downtime ends when every destination has completed a guest
 *              packet posted after the restart
 *   traffic    on the destinations until nothing is in flight: loss, dups
 *   teardown   stop, disconnect, remove; no device object may be left
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rte_pmd_mlx5_lm.h"
#include "migrate_vm.h"

/* ---- the context ---- */

struct mig_ctx *
mig_ctx_new(const struct mig_opts *o, const struct mig_stage_def *st, struct mig_result *r,
	    unsigned int vm)
{
	struct mig_ctx *x;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", st->name);
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->o = o;
	x->st = st;
	x->r = r;
	x->vm = vm;
	x->n = o->shape.devices;
	x->nrings = 2 * o->shape.queue_pairs;
	return x;
}

void
mig_phase_begin(struct mig_ctx *x)
{
	x->phase_t0 = mig_now_ms();
}

/* One progress line per phase: what happened and how long the phase took. */
void
mig_phase_end(struct mig_ctx *x, const char *phase, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (x->o->shape.vms > 0)
		printf("  vm%-2u %-10s %-71s %9.1f ms\n", x->o->vm_base + x->vm, phase, buf,
		       mig_now_ms() - x->phase_t0);
	else
		printf("  %-10s %-76s %9.1f ms\n", phase, buf, mig_now_ms() - x->phase_t0);
	fflush(stdout);
}

void
mig_fail(struct mig_ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (x->o->shape.vms > 0)
		fprintf(stderr, "migrate: stage %s: vm%u: ", x->st->name, x->o->vm_base + x->vm);
	else
		fprintf(stderr, "migrate: stage %s: ", x->st->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
mig_vm_connect(struct mig_ctx *x)
{
	/* vu's default is an ack for every request (the tests'); --acks qemu is QEMU's. */
	const enum vu_ack_policy acks = x->o->acks_every ? VU_ACK_EVERY : VU_ACK_QEMU;
	unsigned int k;
	int ret;

	for (k = 0; k < x->n; k++) {
		ret = vu_connect(&x->src[k].c, x->src[k].path, CONNECT_MS);
		if (ret == 0)
			ret = vu_connect(&x->dst[k].c, x->dst[k].path, CONNECT_MS);
		if (ret < 0) {
			mig_fail(x, "cannot connect to the sockets of device pair %u: %s", k,
				 strerror(-ret));
			return -1;
		}
		vu_set_ack_policy(x->src[k].c, acks);
		vu_set_ack_policy(x->dst[k].c, acks);
	}
	return 0;
}

void
mig_vm_disconnect(struct mig_ctx *x)
{
	unsigned int k;

	for (k = 0; k < x->n; k++) {
		if (x->src[k].c != NULL)
			vu_disconnect(x->src[k].c);
		if (x->dst[k].c != NULL)
			vu_disconnect(x->dst[k].c);
		x->src[k].c = NULL;
		x->dst[k].c = NULL;
	}
}

int
mig_vm_setup(struct mig_ctx *x)
{
	const struct mig_shape *s = &x->o->shape;
	struct vu_guest_cfg cfg = {
		.queue_pairs = (uint16_t)s->queue_pairs,
		.ring_size = (uint16_t)s->queue_size,
		.packed = s->packed,
	};
	unsigned int k;
	int ret;

	mig_phase_begin(x);
	snprintf(x->dir, sizeof(x->dir), "/tmp/test-lm-migrate-XXXXXX");
	/* mkdtemp makes it 0700: only we can reach the sockets. */
	if (mkdtemp(x->dir) == NULL) {
		mig_fail(x, "cannot create a socket directory: %s", strerror(errno));
		x->dir[0] = '\0';
		return -1;
	}
	/* One guest memory for the VM (QEMU's layout, one sparse memfd). */
	ret = vu_mem_create_qemu(&x->mem, s->mem_gb);
	if (ret == 0)
		ret = vu_log_create(&x->log, vu_mem_gpa_end(x->mem));
	if (ret < 0) {
		mig_fail(x, "cannot create %u GiB of guest memory and its log: %s", s->mem_gb,
			 strerror(-ret));
		return -1;
	}
	for (k = 0; k < x->n; k++) {
		ret = vu_guest_create(&x->g[k], x->mem, &cfg);
		if (ret < 0) {
			mig_fail(x, "cannot lay out the rings of NIC %u in guest memory: %s", k,
				 strerror(-ret));
			return -1;
		}
	}
	ret = mig_gen_create(&x->gen, x->g, x->n);
	if (ret < 0) {
		mig_fail(x, "cannot start the traffic generator: %s", strerror(-ret));
		return -1;
	}
	/*
	 * Every socket is registered now: DPDK's vhost thread may take up to
	 * a second to notice a new listening socket, which must not fall in a
	 * measured phase. The connections wait in the listen backlog.
	 */
	for (k = 0; k < x->n; k++)
		if (mig_dev_add(x, &x->src[k], 2 * x->n * x->vm + k, "src", k) < 0 ||
		    mig_dev_add(x, &x->dst[k], 2 * x->n * x->vm + x->n + k, "dst", k) < 0)
			return -1;
	if (mig_vm_connect(x) < 0)
		return -1;
	mig_phase_end(x, "set-up", "%u source + %u destination devices, %u GiB, %u %s rings each",
		      x->n, x->n, s->mem_gb, x->nrings, s->packed ? "packed" : "split");
	return 0;
}

int
mig_vm_teardown(struct mig_ctx *x, unsigned long leaked_before)
{
	unsigned int k;
	int ret = 0;

	mig_phase_begin(x);
	mig_gen_destroy(x->gen);
	x->gen = NULL;
	for (k = 0; k < x->n; k++) {
		if (mig_dev_remove(x, &x->src[k]) < 0)
			ret = -1;
		if (mig_dev_remove(x, &x->dst[k]) < 0)
			ret = -1;
	}
	for (k = 0; k < x->n; k++)
		vu_guest_destroy(x->g[k]);
	vu_snap_free(x->snap);
	x->snap = NULL;
	vu_log_destroy(x->log);
	vu_mem_destroy(x->mem);
	if (x->dir[0] != '\0')
		rmdir(x->dir);
	if (x->o->svc != NULL) {
		/*
		 * The VM's workers exit with its last devices, and report what they
		 * left alive to their service (counted when it stops). Gone before
		 * we go on: an exiting worker's CPU is no other VM's.
		 */
		ret = mig_svc_vm_gone(x->o->svc, x->o->vm_base + x->vm);
		mig_phase_end(x, "teardown", "devices removed from both services, their workers %s",
			      ret == 0 ? "gone" : "NOT gone");
		return ret;
	}
	x->r->leaked_objects = mig_leaked_now() - leaked_before;
	mig_phase_end(x, "teardown", "%lu device objects left alive", x->r->leaked_objects);
	return ret;
}

/* ---- the migration ---- */

/* Why traffic stalled: the guest's counters, per NIC (generator idle). */
static void
report_traffic(struct mig_ctx *x, const char *what)
{
	unsigned int k;

	mig_fail(x, "%s", what);
	for (k = 0; k < x->n; k++) {
		struct vu_guest_stats st;

		vu_guest_stats(x->g[k], -1, &st);
		fprintf(stderr, "  NIC %u: sent %" PRIu64 ", back %" PRIu64 ", not back %" PRIu64
			", TX in flight %" PRIu64 ", bad %" PRIu64 ", device errors %" PRIu64 "\n",
			k, vu_guest_tx_sent(x->g[k], -1), st.rx_unique, vu_guest_lost(x->g[k], -1),
			vu_guest_tx_inflight(x->g[k], -1), st.rx_bad, st.dev_errors);
	}
}

int
mig_vm_start_sources(struct mig_ctx *x)
{
	struct rte_pmd_mlx5_lm_timings t;
	unsigned int k;
	int ret;

	mig_phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_start_device(x->src[k].c, x->g[k], NULL);
		if (ret < 0) {
			mig_fail(x, "%s: start failed: %s", x->src[k].name, strerror(-ret));
			return -1;
		}
	}
	/* Frames posted before the queues are RDY would race the RX steering. */
	for (k = 0; k < x->n; k++)
		if (mig_dev_wait_conf(x, &x->src[k], &t) < 0)
			return -1;
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic does not flow on every queue pair of the sources");
		return -1;
	}
	mig_phase_end(x, "source", "%u devices started, traffic on all %u queue pairs", x->n,
		      x->n * x->o->shape.queue_pairs);
	return 0;
}

static int take_snapshot(struct mig_ctx *x);

int
mig_vm_begin_logging(struct mig_ctx *x)
{
	unsigned int k;
	int ret;

	mig_phase_begin(x);
	/*
	 * Enabling the dirty bitmap suspends each queue for a moment, and the
	 * emulated wire drops what it loops back into a suspended RX queue
	 * (a real NIC would have sent it to the network): the NICs idle over
	 * the switch, so that "lost" only counts what the migration loses.
	 */
	if (mig_gen_quiesce(x->gen, DRAIN_MS) < 0) {
		report_traffic(x, "the guest's traffic did not drain before logging began");
		return -1;
	}
	x->r->dirty_logged = true;
	for (k = 0; k < x->n; k++) {
		ret = vu_set_log(x->src[k].c, x->log);
		if (ret < 0) {
			mig_fail(x, "%s: cannot start dirty logging: %s%s", x->src[k].name,
				 strerror(-ret), ret == -ENOTSUP ?
				 " (the device offers no LOG_ALL or LOG_SHMFD)" : "");
			x->r->dirty_logged = false;
			if (ret != -ENOTSUP)
				return -1;
			break;
		}
		/* The back end logs from its reply on: record from here. */
		vu_guest_dirty_mark(x->g[k]);
	}
	/*
	 * Every source logs, the guest CPU's writes are tracked: what the
	 * memory holds now is what a destination would start from.
	 */
	if (x->r->dirty_logged && take_snapshot(x) < 0)
		return -1;
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic stopped flowing once logging began");
		return -1;
	}
	mig_phase_end(x, "logging", "%s, traffic goes on",
		      x->r->dirty_logged ? "dirty log on every source" : "NO dirty log");
	return 0;
}

/* QEMU negotiates with the destination before the source stops. */
int
mig_vm_handshake(struct mig_ctx *x)
{
	unsigned int k;
	int ret;

	mig_phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_device_init(x->dst[k].c, NULL);
		if (ret < 0) {
			mig_fail(x, "%s: handshake failed: %s", x->dst[k].name, strerror(-ret));
			return -1;
		}
	}
	mig_phase_end(x, "handshake", "%u destinations negotiated features (before the stop)",
		      x->n);
	return 0;
}

static int
take_snapshot(struct mig_ctx *x)
{
	int ret, tries = 0;

	vu_snap_free(x->snap);
	x->snap = NULL;
	/* -EAGAIN: the data grew between counting and copying (traffic is idle). */
	do
		ret = vu_mem_snapshot(x->mem, &x->snap);
	while (ret == -EAGAIN && ++tries < 3);
	if (ret < 0) {
		mig_fail(x, "cannot snapshot the guest memory at the checkpoint: %s",
			 strerror(-ret));
		return -1;
	}
	return 0;
}

/* A page that may differ from the snapshot: logged, or written by the guest's CPU. */
static bool
page_excused(void *arg, uint64_t gpa)
{
	struct mig_ctx *x = arg;
	unsigned int k;

	if (vu_log_test(x->log, gpa))
		return true;
	for (k = 0; k < x->n; k++)
		if (vu_guest_cpu_dirty(x->g[k], gpa))
			return true;
	return false;
}

/*
 * Independent of what the guest driver believes the device wrote: every
 * data page that changed since the checkpoint must be in the log or be
 * the CPU's, or the destination (the snapshot plus the logged pages)
 * would see it stale.
 */
static void
check_snapshot(struct mig_ctx *x)
{
	struct vu_snap_diff d = { .excused = page_excused, .arg = x };
	int ret;

	x->r->snap_pages_compared = 0;
	if (x->snap == NULL)
		return;
	ret = vu_mem_snapshot_diff(x->mem, x->snap, &d);
	vu_snap_free(x->snap);
	x->snap = NULL;
	if (ret < 0) {
		mig_fail(x, "cannot compare the guest memory to its checkpoint: %s",
			 strerror(-ret));
		x->r->dirty_pages_missing++;
		return;
	}
	x->r->snap_pages_compared = d.compared;
	if (d.changed != 0) {
		mig_fail(x, "page GPA 0x%" PRIx64 " written by the device but not in the dirty "
			 "log (%" PRIu64 " such pages of %" PRIu64 " compared)", d.first_changed,
			 d.changed, d.compared);
		x->r->dirty_pages_missing += d.changed;
	}
}

static void
check_dirty(struct mig_ctx *x)
{
	double t = mig_now_ms();
	unsigned int k;

	x->checks_t0 = t;
	x->r->dirty_pages_checked = 0;
	x->r->dirty_pages_missing = 0;
	for (k = 0; k < x->n; k++) {
		uint64_t missing = 0, first = 0;
		int64_t n;

		/* Used entries the sources wrote last are recorded when reaped. */
		vu_guest_poll(x->g[k]);
		n = vu_guest_dirty_check(x->g[k], x->log, &missing, &first);
		if (n > 0)
			x->r->dirty_pages_checked += (uint64_t)n;
		x->r->dirty_pages_missing += missing;
		if (missing != 0 && x->r->dirty_logged)
			mig_fail(x, "%s: %" PRIu64 " of %" PRId64 " written pages not in the dirty "
				 "log, first at GPA 0x%" PRIx64, x->src[k].name, missing, n, first);
	}
	check_snapshot(x);
	if (!x->r->dirty_logged)
		x->r->dirty_pages_missing = x->r->dirty_pages_checked;
	x->r->dirty_check_ms = mig_now_ms() - t;
}

/*
 * The VM pauses with its NICs idle: the emulated wire loops frames back
 * into the device's own RX queues, and a frame on that wire when they are
 * suspended would be lost as on any wire; not what is measured. RX
 * buffers stay posted across the stop.
 */
void
mig_vm_pause(struct mig_ctx *x)
{
	mig_phase_begin(x);
	if (mig_gen_quiesce(x->gen, DRAIN_MS) < 0)
		mig_fail(x, "the guest's traffic did not drain before the stop (counted as lost)");
	mig_phase_end(x, "pause", "the VM stops, its NICs idle");
}

/* The VM's vhost-user requests and replies so far, over its sources and destinations. */
static void
vu_sum_counts(const struct mig_ctx *x, uint64_t *requests, uint64_t *replies)
{
	unsigned int k;

	*requests = *replies = 0;
	for (k = 0; k < x->n; k++) {
		const struct vu_client *c[2] = { x->src[k].c, x->dst[k].c };
		unsigned int i;

		for (i = 0; i < 2; i++) {
			uint64_t req, rep;

			if (c[i] == NULL)
				continue;
			vu_counts(c[i], &req, &rep);
			*requests += req;
			*replies += rep;
		}
	}
}

/* The VM stops, every source ring is stopped, the log is checked. */
int
mig_vm_stop_sources(struct mig_ctx *x, double *t0)
{
	const unsigned int nr = x->nrings;
	unsigned int k;
	int ret;

	mig_phase_begin(x);
	x->r->src_first_ring_ms = 0;
	/* The model's counters first: reading them is not part of the downtime. */
	mig_model_snap(x, &x->model_t0);
	vu_sum_counts(x, &x->vu_req0, &x->vu_rep0);
	*t0 = mig_now_ms();
	for (k = 0; k < x->n; k++) {
		double t = mig_now_ms();
		unsigned int i;

		/*
		 * Ring by ring (what vu_stop_device does), to time the first one
		 * apart: vhost runs the device's dev_close for it.
		 */
		for (i = 0, ret = 0; i < nr && ret == 0; i++) {
			ret = vu_get_vring_base(x->src[k].c, i, &x->bases[k][i]);
			if (i == 0)
				x->r->src_first_ring_ms += mig_now_ms() - t;
		}
		if (ret < 0) {
			mig_fail(x, "%s: GET_VRING_BASE failed: %s", x->src[k].name,
				 strerror(-ret));
			return -1;
		}
	}
	x->r->src_stop_ms = mig_now_ms() - *t0;
	/* The destinations get their own kick and call eventfds. */
	for (k = 0; k < x->n; k++) {
		ret = vu_guest_new_eventfds(x->g[k]);
		if (ret < 0) {
			mig_fail(x, "cannot create eventfds: %s", strerror(-ret));
			return -1;
		}
	}
	check_dirty(x);
	mig_phase_end(x, "stop", "source stop %.1f ms (first rings %.1f), dirty log %" PRIu64
		      " pages, %" PRIu64 " missing, %" PRIu64 " compared", x->r->src_stop_ms,
		      x->r->src_first_ring_ms, x->r->dirty_pages_checked,
		      x->r->dirty_pages_missing, x->r->snap_pages_compared);
	return 0;
}

/*
 * Poll every guest until nothing is in flight and every frame posted since
 * the restart came back (frames lost before the stop, if any, never will:
 * they are counted as lost, not waited for).
 */
static int
wait_probes(struct mig_ctx *x, const uint64_t *lost_before)
{
	double deadline = mig_now_ms() + PROBE_WAIT_MS;
	const struct timespec pause = {
		.tv_nsec = x->o->shape.vms > 0 ? POLL_EVAC_PROBE_NS : POLL_PROBE_NS,
	};

	for (;;) {
		bool done = true;
		int work = 0;
		unsigned int k;

		for (k = 0; k < x->n; k++) {
			work += vu_guest_poll(x->g[k]);
			if (vu_guest_tx_inflight(x->g[k], -1) != 0 ||
			    vu_guest_lost(x->g[k], -1) > lost_before[k])
				done = false;
		}
		if (done)
			return 0;
		if (mig_now_ms() > deadline)
			return -1;
		if (work == 0)
			nanosleep(&pause, NULL);
	}
}

int
mig_vm_start_destinations(struct mig_ctx *x, double t0)
{
	uint64_t lost_before[MIG_MAX_DEVICES];
	struct rte_pmd_mlx5_lm_timings t;
	struct vu_start_opts o = { 0 };
	struct mig_model_snap m;
	unsigned int k, qp;
	double t1, t_end;
	int ret;

	mig_phase_begin(x);
	for (k = 0; k < x->n; k++)
		lost_before[k] = vu_guest_lost(x->g[k], -1);
	t1 = mig_now_ms();
	for (k = 0; k < x->n; k++) {
		o.bases = x->bases[k];
		ret = vu_start_device(x->dst[k].c, x->g[k], &o);
		if (ret < 0) {
			mig_fail(x, "%s: start failed: %s", x->dst[k].name, strerror(-ret));
			return -1;
		}
	}
	/*
	 * vhost runs dev_conf after its DRIVER_OK reply, one device after the
	 * other in its thread: the probe frames go out once each device is
	 * configured (one per queue pair, so that every queue is seen working),
	 * and the downtime ends when all of them have come back.
	 */
	x->r->dst_mr_ms = x->r->dst_vq_ms = x->r->dst_conf_ms = 0;
	for (k = 0; k < x->n; k++) {
		/*
		 * --service: asking a worker is no part of a migration, and in the
		 * window it would take the other VMs' CPUs. The frames go out at
		 * once, as a resumed guest's do (migrate_service.c); the timings
		 * are read once the window is over (mig_vm_svc_conf_after).
		 */
		if (x->o->svc == NULL) {
			if (mig_dev_wait_conf(x, &x->dst[k], &t) < 0)
				return -1;
			x->r->dst_mr_ms += t.conf_mr_ms;
			x->r->dst_vq_ms += t.conf_vq_ms;
			x->r->dst_conf_ms += t.conf_ms;
		}
		for (qp = 0; qp < x->o->shape.queue_pairs; qp++)
			vu_guest_tx(x->g[k], qp, 1);
	}
	if (wait_probes(x, lost_before) < 0) {
		mig_fail(x, "a destination did not complete the frames posted after the restart "
			 "within %d s", PROBE_WAIT_MS / 1000);
		return -1;
	}
	t_end = mig_now_ms();
	x->r->dst_start_ms = t_end - t1;
	vu_sum_counts(x, &x->r->vu_requests, &x->r->vu_round_trips);
	x->r->vu_requests -= x->vu_req0;
	x->r->vu_round_trips -= x->vu_rep0;
	/*
	 * The benchmark's own checks at the stop (the dirty log against the
	 * guest's record and against the checkpoint's copy, check_dirty) run
	 * between the sources' stop and the destinations' start, where no
	 * migration has them: not counted.
	 */
	x->r->downtime_ms = t_end - t0 - x->r->dirty_check_ms;
	x->trace_t0 = t0;
	mig_model_snap(x, &m);
	x->r->model_busy_ms = m.busy_ms - x->model_t0.busy_ms;
	x->r->model_pin_ms = m.pin_ms - x->model_t0.pin_ms;
	x->r->model_actual_ms = m.actual_ms - x->model_t0.actual_ms;
	x->r->model_charges = m.charges - x->model_t0.charges;
	x->r->model_src_ms = m.src_ms - x->model_t0.src_ms;
	x->r->model_dst_ms = m.dst_ms - x->model_t0.dst_ms;
	x->r->src_close_ms = 0;
	for (k = 0; k < x->n && x->o->svc == NULL; k++)
		if (rte_pmd_mlx5_lm_get_timings(x->src[k].name, &t) == 0)
			x->r->src_close_ms += t.close_ms;
	if (x->o->svc != NULL)
		mig_phase_end(x, "start", "destination start %.1f ms; the downtime's vhost-user: "
			      "%" PRIu64 " requests, %" PRIu64 " round trips", x->r->dst_start_ms,
			      x->r->vu_requests, x->r->vu_round_trips);
	else
		mig_phase_end(x, "start", "destination start %.1f ms (memory %.1f, queues %.1f); "
			      "the downtime's vhost-user: %" PRIu64 " requests, %" PRIu64
			      " round trips", x->r->dst_start_ms, x->r->dst_mr_ms,
			      x->r->dst_vq_ms, x->r->vu_requests, x->r->vu_round_trips);
	return 0;
}

/*
 * --service, once the window is over: each destination's worker counted
 * the configuration this start asked for (bounded wait: its probe frames
 * came back, so it is done or ending), and what it and the sources'
 * workers measured of the configuration and the stop.
 */
int
mig_vm_svc_conf_after(struct mig_ctx *x)
{
	struct rte_pmd_mlx5_lm_timings t;
	unsigned int k;

	mig_phase_begin(x);
	for (k = 0; k < x->n; k++) {
		if (mig_dev_wait_conf(x, &x->dst[k], &t) < 0)
			return -1;
		x->r->dst_mr_ms += t.conf_mr_ms;
		x->r->dst_vq_ms += t.conf_vq_ms;
		x->r->dst_conf_ms += t.conf_ms;
	}
	for (k = 0; k < x->n; k++) {
		if (mig_dev_timings(x, &x->src[k], &t) < 0)
			return -1;
		x->r->src_close_ms += t.close_ms;
	}
	mig_phase_end(x, "workers", "configuration %.1f ms (memory %.1f, queues %.1f), stop "
		      "%.1f ms", x->r->dst_conf_ms, x->r->dst_mr_ms, x->r->dst_vq_ms,
		      x->r->src_close_ms);
	/* The preparation served the table (prereg): asked now, as the timings are. */
	if (x->st->prereg && mig_vm_prepare_check(x, x->trace_t0) < 0)
		return -1;
	return 0;
}

void
mig_vm_count_packets(struct mig_ctx *x)
{
	unsigned int k;

	x->r->frames = x->r->lost_packets = x->r->duplicated_packets = x->r->bad_packets = 0;
	for (k = 0; k < x->n; k++) {
		struct vu_guest_stats st;

		vu_guest_stats(x->g[k], -1, &st);
		x->r->frames += vu_guest_tx_sent(x->g[k], -1);
		x->r->lost_packets += vu_guest_lost(x->g[k], -1);
		x->r->duplicated_packets += st.duplicates;
		x->r->bad_packets += st.rx_bad + st.dev_errors;
	}
}

int
mig_vm_finish(struct mig_ctx *x)
{
	unsigned int k;
	int ret, rc = 0;

	mig_phase_begin(x);
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic does not flow on every queue pair of the destinations");
		rc = -1;
	}
	if (mig_gen_quiesce(x->gen, DRAIN_MS) < 0)
		mig_fail(x, "descriptors still in flight on the destinations after %d s",
			 DRAIN_MS / 1000);
	mig_vm_count_packets(x);
	mig_phase_end(x, "traffic", "on the destinations: %" PRIu64 " frames in all, %" PRIu64
		      " lost, %" PRIu64 " duplicated", x->r->frames, x->r->lost_packets,
		      x->r->duplicated_packets);
	mig_phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_stop_device(x->dst[k].c, NULL, 0);
		if (ret < 0) {
			mig_fail(x, "%s: GET_VRING_BASE failed: %s", x->dst[k].name,
				 strerror(-ret));
			rc = -1;
		}
	}
	mig_vm_disconnect(x);
	mig_phase_end(x, "end", "destinations stopped, front end disconnected");
	if (rc == 0)
		mig_trace_window(x);
	return rc;
}
