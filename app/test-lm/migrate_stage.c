/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: one stage of one VM, in-process - set up, one
 * migration through the phases of migrate_phase.c, torn down - and the
 * front-end orders QEMU never uses (--hostile) that it also survives.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "migrate_vm.h"

/* GET_VRING_BASE on every ring before DRIVER_OK, on every device (hostile). */
static int
early_base(struct mig_ctx *x)
{
	const struct vu_start_opts o = { .no_status = true };
	struct mig_dev *all[2] = { x->src, x->dst };
	unsigned int k, side;
	int ret;

	mig_phase_begin(x);
	for (side = 0; side < 2; side++) {
		for (k = 0; k < x->n; k++) {
			struct mig_dev *d = &all[side][k];

			ret = vu_start_device(d->c, x->g[k], &o);
			if (ret == 0)
				ret = vu_stop_device(d->c, NULL, 0);
			if (ret < 0) {
				mig_fail(x, "%s: rings set up without DRIVER_OK, then "
					 "GET_VRING_BASE: %s", d->name, strerror(-ret));
				return -1;
			}
		}
	}
	mig_phase_end(x, "hostile", "GET_VRING_BASE before DRIVER_OK on all %u devices", 2 * x->n);
	return 0;
}

/*
 * One migration on connected devices. With MIG_HOSTILE_DISCONNECT the
 * front end goes away after the source stop; returns 1 then.
 */
static int
migrate_once(struct mig_ctx *x, enum mig_hostile hostile)
{
	double t0;

	if (hostile == MIG_HOSTILE_EARLY_BASE && early_base(x) < 0)
		return -1;
	/*
	 * The destination QEMU runs (and shares its RAM) from the migration's
	 * start: prepared while the sources' traffic runs, before precopy.
	 */
	if (mig_vm_start_sources(x) < 0 || (x->st->prereg && mig_vm_prepare(x) < 0) ||
	    mig_vm_begin_logging(x) < 0 || mig_vm_handshake(x) < 0)
		return -1;
	mig_vm_pause(x);
	if (mig_vm_stop_sources(x, &t0) < 0)
		return -1;
	if (hostile == MIG_HOSTILE_DISCONNECT) {
		mig_phase_begin(x);
		mig_vm_disconnect(x);
		mig_phase_end(x, "hostile", "front end gone between the source stop and the start");
		return 1;
	}
	if (mig_vm_start_destinations(x, t0) < 0)
		return -1;
	if (x->st->prereg && mig_vm_prepare_check(x, t0) < 0)
		return -1;
	return mig_vm_finish(x);
}

/* A fresh VM on the same devices, after a front end that went away. */
static int
restart_vm(struct mig_ctx *x)
{
	unsigned int k;
	int ret;

	for (k = 0; k < x->n; k++) {
		vu_guest_reset(x->g[k]);
		ret = vu_guest_new_eventfds(x->g[k]);
		if (ret < 0) {
			mig_fail(x, "cannot create eventfds: %s", strerror(-ret));
			return -1;
		}
	}
	vu_log_reset(x->log);
	return mig_vm_connect(x);
}

/*
 * The peer's configuration threads (max_conf_threads > 0) take a task from
 * their ring outside their lock and then wait on their condition without
 * looking again: a task queued in between stays in the ring, and the thread
 * that queued it waits for it forever (DPDK 22.11 mlx5_vdpa_cthread.c; seen
 * in about 1 of 5 peer-precreate runs here). Nothing outside the peer can
 * wake it, so a peer stage that outlives PEER_STAGE_S says so and ends the
 * process rather than hang it.
 */
#define PEER_STAGE_S 180

static void
peer_stage_hung(int sig)
{
	static const char msg[] = "migrate: a peer stage has not ended in 180 s: the peer's "
		"configuration threads lost a wake-up (doc/emulated-rdma.md); "
		"--peer-conf-threads 0 runs without them\n";
	ssize_t n;

	(void)sig;
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(3);
}

static void
peer_watchdog(bool on)
{
	struct sigaction sa = { .sa_handler = peer_stage_hung };

	if (on)
		sigaction(SIGALRM, &sa, NULL);
	alarm(on ? PEER_STAGE_S : 0);
}

int
mig_run_stage(const struct mig_opts *o, const struct mig_stage_def *st, struct mig_result *r)
{
	unsigned long leaked_before = mig_leaked_now();
	struct mig_ctx *x;
	int ret;

	x = mig_ctx_new(o, st, r, 0);
	if (x == NULL)
		return -1;
	r->peer = st->peer;
	if (st->peer && st->precreate)
		printf("stage %s: the peer, class=vdpa,queues=%u,queue_size=%u%s%.0u\n",
		       st->name, o->shape.queue_pairs, o->shape.queue_size,
		       st->peer_threads ? ",max_conf_threads=" : "", st->peer_threads);
	else if (st->peer)
		printf("stage %s: the peer, class=vdpa (its defaults)\n", st->name);
	else
		printf("stage %s: precreate=%u workers=%u mr_gc_ms=%u parallel=%u\n", st->name,
		       st->precreate, st->workers, st->mr_gc_ms, st->parallel);
	fflush(stdout);
	if (st->peer)
		peer_watchdog(true);
	ret = mig_vm_setup(x);
	if (ret == 0)
		ret = migrate_once(x, o->hostile);
	if (ret == 1) {
		/* Both sides must still work: a normal migration, measured. */
		ret = restart_vm(x);
		if (ret == 0)
			ret = migrate_once(x, MIG_HOSTILE_NONE);
	}
	mig_vm_disconnect(x);
	if (mig_vm_teardown(x, leaked_before) < 0)
		ret = -1;
	if (st->peer)
		peer_watchdog(false);
	r->ok = ret == 0;
	free(x);
	return ret == 0 ? 0 : -1;
}
