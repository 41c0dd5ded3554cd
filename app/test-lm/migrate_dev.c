/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the VM's devices by kind, and what each kind
 * answers. Ours in this process (probed on the vdev bus, served by this
 * process's vhost), ours in a worker of mlx5-lm-vhostd (--service: added
 * and removed through the service, served by the worker), and the peer's
 * (DPDK's vdpa/mlx5 hot-plugged on the emulated PCI bus). The phases
 * (migrate_phase.c) see only mig_dev_*: which kind a device is, is
 * decided here.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "mlx5_lm_erdma.h"

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"
#include "migrate_vm.h"

/* ---- our devices in this process, and the sockets this process serves ---- */

/* vhost requires callbacks; the vDPA devices do the work. */
static int
on_new_device(int vid)
{
	(void)vid;
	return 0;
}

static void
on_destroy_device(int vid)
{
	(void)vid;
}

static const struct rte_vhost_device_ops vhost_ops = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
};

/*
 * Our devices' connections as the service has them: every message vetted,
 * the payload wait bounded (lm_app_vhost_vet). Set up at the connection,
 * which on a destination comes before the migration, as QEMU's does.
 */
static int
on_new_connection(int vid)
{
	return lm_app_vhost_vet_stderr(vid, LM_APP_MSG_TIMEOUT_MS, "migrate");
}

static const struct rte_vhost_device_ops vhost_ops_vetted = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
	.new_connection = on_new_connection,
};

/*
 * Serve vDPA device vdpa on d's vhost-user socket: ours as the service
 * does (vetted), the peer's as its own dpdk-vdpa example does (not: the
 * vetting is this PMD's).
 */
static int
dev_serve(struct mig_ctx *x, struct mig_dev *d, struct rte_vdpa_device *vdpa, bool ours)
{
	if (rte_vhost_driver_register(d->path, 0) < 0) {
		mig_fail(x, "cannot register vhost-user socket %s", d->path);
		return -1;
	}
	d->registered = true;
	if (rte_vhost_driver_attach_vdpa_device(d->path, vdpa) < 0 ||
	    rte_vhost_driver_callback_register(d->path,
					       ours ? &vhost_ops_vetted : &vhost_ops) < 0 ||
	    rte_vhost_driver_start(d->path) < 0) {
		mig_fail(x, "cannot start vhost-user on %s", d->path);
		return -1;
	}
	return 0;
}

/* The front end off d, and d's socket gone (ours and the peer's alike). */
static void
dev_unserve(struct mig_dev *d)
{
	if (d->c != NULL)
		vu_disconnect(d->c);
	d->c = NULL;
	if (d->registered)
		rte_vhost_driver_unregister(d->path);
	d->registered = false;
	unlink(d->path);
}

/*
 * Our PMD's devargs for device idx, NIC k of the VM in role src or dst, in
 * this stage (rdma: RDMA device mlx5_<idx>).
 */
static void
dev_args(struct mig_ctx *x, unsigned int idx, const char *role, unsigned int k, char *args,
	 size_t len)
{
	const struct mig_shape *s = &x->o->shape;
	char ibdev[32], trace[PATH_MAX + 32];

	snprintf(ibdev, sizeof(ibdev), "ibdev=mlx5_%u", idx);
	mig_trace_devarg(x, role, k, trace, sizeof(trace));
	snprintf(args, len, "%s%s,queues=%u,queue_size=%u,precreate=%u,workers=%u,"
		 "mr_gc_ms=%u,parallel=%u%s%s", x->o->rdma ? ibdev : "emu=",
		 x->o->rdma ? "" : x->o->profile, s->queue_pairs, s->queue_size,
		 x->st->precreate, x->st->workers, x->st->mr_gc_ms, x->st->parallel,
		 x->st->devargs != NULL ? x->st->devargs : "", trace);
}

static int
dev_setup(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
	  unsigned int k)
{
	struct rte_pmd_mlx5_lm_timings t;
	struct rte_vdpa_device *vdpa;
	char args[PATH_MAX + 256];

	snprintf(d->name, sizeof(d->name), "%s%u", TEST_LM_PMD, idx);
	snprintf(d->path, sizeof(d->path), "%s/%s%u.sock", x->dir, role, k);
	/* rdma: device idx is RDMA device mlx5_<idx> (sources, then destinations). */
	snprintf(d->ibdev, sizeof(d->ibdev), "mlx5_%u", idx);
	dev_args(x, idx, role, k, args, sizeof(args));
	if (lm_app_probe_device(d->name, args) < 0) {
		mig_fail(x, "cannot probe %s with \"%s\"", d->name, args);
		return -1;
	}
	d->probed = true;
	vdpa = rte_vdpa_find_device_by_name(d->name);
	if (vdpa == NULL || rte_pmd_mlx5_lm_get_timings(d->name, &t) < 0) {
		mig_fail(x, "%s is not a %s vDPA device", d->name, TEST_LM_PMD);
		return -1;
	}
	d->conf_count = t.conf_count;
	return dev_serve(x, d, vdpa, true);
}

static int
dev_teardown(struct mig_ctx *x, struct mig_dev *d)
{
	int ret = 0;

	dev_unserve(d);
	/* A device that is not removed leaks nothing the emulator can count at its close. */
	if (d->probed) {
		ret = lm_app_remove_device(d->name);
		if (ret < 0)
			mig_fail(x, "%s: cannot remove the device: %s", d->name, strerror(-ret));
	}
	d->probed = false;
	return ret < 0 ? -1 : 0;
}

/* ---- the devices in mlx5-lm-vhostd's workers (--service) ---- */

/*
 * NIC k of the VM in side's service (role: src or dst), with the devargs
 * it would have here; the front end connects to the worker's socket.
 */
static int
svc_dev_setup(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
	      unsigned int k)
{
	char args[PATH_MAX + 256];

	d->svc = true;
	d->side = strcmp(role, "dst") == 0 ? MIG_DST : MIG_SRC;
	dev_args(x, idx, role, k, args, sizeof(args));
	if (mig_svc_dev_add(x->o->svc, d->side, x->o->vm_base + x->vm, k, args, d->name,
			    sizeof(d->name), d->path, sizeof(d->path)) < 0) {
		mig_fail(x, "the service cannot add NIC %u of the VM (%s) with \"%s\"", k, role,
			 args);
		return -1;
	}
	d->probed = true;
	/* A device the service has just created has configured nothing yet. */
	d->conf_count = 0;
	return 0;
}

static void
svc_dev_teardown(struct mig_ctx *x, struct mig_dev *d)
{
	if (d->c != NULL)
		vu_disconnect(d->c);
	d->c = NULL;
	if (d->probed && mig_svc_dev_remove(x->o->svc, d->side, d->name) < 0)
		mig_fail(x, "the service cannot remove %s", d->name);
	d->probed = false;
}

/* ---- the peer's devices (DPDK's vdpa/mlx5 on the PCI bus) ---- */

/*
 * The peer's device for RDMA device idx: its PCI function 0000:5e:<idx>.0
 * (tools/with-emulated-rdma's numbering) hot-plugged with class=vdpa, its
 * vDPA device named by that address, served on its own socket.
 */
static int
peer_dev_setup(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
	       unsigned int k)
{
	const struct mig_shape *s = &x->o->shape;
	struct rte_vdpa_device *vdpa;
	char args[256];
	int n, ret;

	d->peer = true;
	snprintf(d->name, sizeof(d->name), "0000:5e:%02x.0", idx);
	snprintf(d->ibdev, sizeof(d->ibdev), "mlx5_%u", idx);
	snprintf(d->path, sizeof(d->path), "%s/%s%u.sock", x->dir, role, k);
	n = snprintf(args, sizeof(args), "%s,class=vdpa", d->name);
	if (x->st->precreate)
		n += snprintf(args + n, sizeof(args) - (size_t)n, ",queues=%u,queue_size=%u",
			      s->queue_pairs, s->queue_size);
	if (x->st->peer_threads)
		snprintf(args + n, sizeof(args) - (size_t)n, ",max_conf_threads=%u",
			 x->st->peer_threads);
	ret = rte_dev_probe(args);
	if (ret < 0) {
		mig_fail(x, "the peer cannot probe \"%s\": %s (see its log above)", args,
			 strerror(-ret));
		return -1;
	}
	d->probed = true;
	vdpa = rte_vdpa_find_device_by_name(d->name);
	if (vdpa == NULL) {
		mig_fail(x, "%s: probed, but no vDPA device of that name", d->name);
		return -1;
	}
	return dev_serve(x, d, vdpa, false);
}

static void
peer_dev_teardown(struct mig_dev *d)
{
	int ret;

	dev_unserve(d);
	if (d->probed) {
		ret = rte_eal_hotplug_remove("pci", d->name);
		if (ret < 0)
			fprintf(stderr, "%s: the peer cannot remove it: %s\n", d->name,
				strerror(-ret));
	}
	d->probed = false;
}

/*
 * The peer has no configuration count: vhost calls its dev_conf in the
 * thread that serves the sockets, after the reply to the message that made
 * the device ready, and returns only when it is done (the peer configures
 * synchronously, its threads included). So the reply to the next request
 * (GET_FEATURES, which changes nothing) comes after its dev_conf.
 */
static int
peer_wait_conf(struct mig_ctx *x, struct mig_dev *d)
{
	uint64_t features;
	int ret = vu_get_features(d->c, &features);

	if (ret < 0) {
		mig_fail(x, "%s: no reply after DRIVER_OK: %s", d->name, strerror(-ret));
		return -1;
	}
	return 0;
}

/* ---- every kind ---- */

int
mig_dev_add(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
	    unsigned int k)
{
	if (x->st->peer)
		return peer_dev_setup(x, d, idx, role, k);
	if (x->o->svc != NULL)
		return svc_dev_setup(x, d, idx, role, k);
	return dev_setup(x, d, idx, role, k);
}

int
mig_dev_remove(struct mig_ctx *x, struct mig_dev *d)
{
	if (x->st->peer)
		peer_dev_teardown(d);
	else if (x->o->svc != NULL)
		svc_dev_teardown(x, d);
	else
		return dev_teardown(x, d);
	return 0;
}

/* What the PMD counted of the device's last configuration and stop. */
int
mig_dev_timings(struct mig_ctx *x, const struct mig_dev *d, struct rte_pmd_mlx5_lm_timings *t)
{
	if (d->svc)
		return mig_svc_dev_timings(x->o->svc, d->side, d->name, t);
	return rte_pmd_mlx5_lm_get_timings(d->name, t);
}

/*
 * vhost calls dev_conf after it has replied to SET_STATUS(DRIVER_OK): wait
 * (bounded) until the PMD counted the configuration we triggered.
 */
int
mig_dev_wait_conf(struct mig_ctx *x, struct mig_dev *d, struct rte_pmd_mlx5_lm_timings *t)
{
	double deadline = mig_now_ms() + CONF_WAIT_MS;
	const struct timespec pause = {
		.tv_nsec = x->o->shape.vms > 0 ? POLL_EVAC_CONF_NS : POLL_CONF_NS,
	};

	struct rte_pmd_mlx5_lm_state st;
	uint64_t failures;

	if (d->peer) {
		memset(t, 0, sizeof(*t));
		return peer_wait_conf(x, d);
	}
	failures = rte_pmd_mlx5_lm_get_state(d->name, &st) == 0 ? st.conf_failures : 0;
	for (;;) {
		if (mig_dev_timings(x, d, t) < 0) {
			mig_fail(x, "%s is gone", d->name);
			return -1;
		}
		if (t->conf_count != d->conf_count) {
			d->conf_count = t->conf_count;
			return 0;
		}
		/* A configuration that failed says so at once: no need to wait it out. */
		if (rte_pmd_mlx5_lm_get_state(d->name, &st) == 0 && st.conf_failures != failures) {
			mig_fail(x, "%s: DRIVER_OK configuration failed: %s (%s)", d->name,
				 st.last_error_msg, strerror(-st.last_error));
			return -1;
		}
		if (mig_now_ms() > deadline) {
			mig_fail(x, "%s: no DRIVER_OK configuration within %d s (see the PMD's "
				 "log)", d->name, CONF_WAIT_MS / 1000);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

/* ---- the emulated devices' own account ---- */

/*
 * The emulated rdma-core's own account of its devices (mlx5_lm_erdma.h),
 * found in the process when it runs under tools/with-emulated-rdma: the
 * peer's devices (and the rdma back end's) are emulated inside it, out of
 * our PMD's reach.
 */
static mlx5_lm_erdma_cost_stats_t erdma_cost_stats;
static mlx5_lm_erdma_left_alive_t erdma_left_alive;

static void
erdma_resolve_once(void)
{
	erdma_cost_stats = (mlx5_lm_erdma_cost_stats_t)dlsym(RTLD_DEFAULT,
							      MLX5_LM_ERDMA_COST_STATS);
	erdma_left_alive = (mlx5_lm_erdma_left_alive_t)dlsym(RTLD_DEFAULT,
							      MLX5_LM_ERDMA_LEFT_ALIVE);
}

unsigned long
mig_alive_now(void)
{
	return rte_pmd_mlx5_lm_emu_live_objects(NULL, 0);
}

int
mig_check_alive(struct mig_result *r, unsigned long alive_before)
{
	char kinds[256];
	unsigned long alive = rte_pmd_mlx5_lm_emu_live_objects(kinds, sizeof(kinds));

	if (alive <= alive_before)
		return 0;
	fprintf(stderr, "migrate: stage %s: still alive after the teardown: %s\n", r->name,
		kinds);
	r->leaked_objects += alive - alive_before;
	return -1;
}

/* Device objects left alive so far: our PMD's emulator and the emulated rdma-core's. */
unsigned long
mig_leaked_now(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, erdma_resolve_once);
	return rte_pmd_mlx5_lm_emu_leaked_objects() +
	       (erdma_left_alive != NULL ? erdma_left_alive() : 0);
}

/*
 * The device's account in the emulated rdma-core (the peer's devices, and
 * ours on the rdma back end), in the PMD's units.
 */
static int
erdma_model_stats(const char *ibdev, struct rte_pmd_mlx5_lm_model_stats *s)
{
	struct mlx5_lm_erdma_stats es;

	mig_leaked_now(); /* resolves the library's functions */
	if (erdma_cost_stats == NULL || ibdev[0] == '\0' || erdma_cost_stats(ibdev, &es) < 0)
		return -ENODEV;
	s->cmds = es.cmds;
	s->model_busy_ms = es.model_us / 1000.0;
	s->actual_busy_ms = es.actual_us / 1000.0;
	s->overshoot_max_us = es.overshoot_max_us;
	s->pins = es.pins;
	s->pin_model_ms = es.pin_model_us / 1000.0;
	s->pin_actual_ms = es.pin_actual_us / 1000.0;
	return 0;
}

static void
model_add(struct mig_model_snap *m, const struct mig_dev *d, double *side)
{
	struct rte_pmd_mlx5_lm_model_stats s;

	if ((d->peer || rte_pmd_mlx5_lm_emu_model_stats(d->name, &s) < 0) &&
	    erdma_model_stats(d->ibdev, &s) < 0)
		return;
	*side += s.model_busy_ms + s.pin_model_ms;
	m->busy_ms += s.model_busy_ms;
	m->pin_ms += s.pin_model_ms;
	m->actual_ms += s.actual_busy_ms + s.pin_actual_ms;
	m->charges += s.cmds + s.pins;
}

void
mig_model_snap(struct mig_ctx *x, struct mig_model_snap *m)
{
	unsigned int k;

	memset(m, 0, sizeof(*m));
	/* --service: the model's counters are in the workers, which do not report them. */
	if (x->o->svc != NULL)
		return;
	for (k = 0; k < x->n; k++) {
		model_add(m, &x->src[k], &m->src_ms);
		model_add(m, &x->dst[k], &m->dst_ms);
	}
}
