/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the live migration of one stage, in-process.
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
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_log.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "mlx5_lm_erdma.h"

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"
#include "migrate_int.h"
#include "vu_client.h"

/*
 * Polling pauses (ns) of the waits inside the downtime: they bound the
 * measurement's error. An evacuation has K front-end threads polling at
 * once on a host whose CPUs the PMD's threads need: longer pauses there,
 * the same in both of its rounds.
 */
#define POLL_CONF_NS 50000
#define POLL_PROBE_NS 10000
#define POLL_EVAC_CONF_NS 200000
#define POLL_EVAC_PROBE_NS 50000

/* Bounded waits (ms): generous, since cx6dx configurations take seconds. */
#define CONNECT_MS 5000
#define CONF_WAIT_MS 60000
#define FLOW_WAIT_MS 20000
#define DRAIN_MS 5000
#define PROBE_WAIT_MS 10000

struct mig_dev {
	char name[32];
	char path[108];
	bool probed;
	bool registered;
	struct vu_client *c;
	uint64_t conf_count;       /* the PMD's count when last waited for */
	char ibdev[16];            /* RDMA device mlx5_<i> (rdma back end, peer) */
	bool peer;                 /* the peer's device: name is its PCI address */
	/* --service: in a worker of side's service; name is the service's. */
	bool svc;
	enum mig_side side;
};

/* The cost model's counters summed over the VM's devices (emulated only). */
struct model_snap {
	double busy_ms, pin_ms, actual_ms;
	uint64_t charges;
	double src_ms, dst_ms;     /* modelled slots + pins, per side */
};

struct mig_ctx {
	const struct mig_opts *o;
	const struct mig_stage_def *st;
	struct mig_result *r;
	unsigned int vm;           /* VM number (evacuation), 0 otherwise */
	unsigned int n;            /* NICs of the VM */
	unsigned int nrings;
	char dir[64];
	struct mig_dev src[MIG_MAX_DEVICES];
	struct mig_dev dst[MIG_MAX_DEVICES];
	struct vu_mem *mem;
	struct vu_log *log;
	struct vu_guest *g[MIG_MAX_DEVICES];
	struct mig_gen *gen;
	uint32_t bases[MIG_MAX_DEVICES][2 * MIG_MAX_QUEUE_PAIRS];
	struct model_snap model_t0;  /* at the first GET_VRING_BASE */
	double phase_t0;
};

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

static void
phase_begin(struct mig_ctx *x)
{
	x->phase_t0 = mig_now_ms();
}

/* One progress line per phase: what happened and how long the phase took. */
static void __attribute__((format(printf, 3, 4)))
phase_end(struct mig_ctx *x, const char *phase, const char *fmt, ...)
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

static void __attribute__((format(printf, 2, 3)))
fail(struct mig_ctx *x, const char *fmt, ...)
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

/* ---- devices and sockets ---- */

/* Serve vDPA device vdpa on d's vhost-user socket (ours and the peer's alike). */
static int
dev_serve(struct mig_ctx *x, struct mig_dev *d, struct rte_vdpa_device *vdpa)
{
	if (rte_vhost_driver_register(d->path, 0) < 0) {
		fail(x, "cannot register vhost-user socket %s", d->path);
		return -1;
	}
	d->registered = true;
	if (rte_vhost_driver_attach_vdpa_device(d->path, vdpa) < 0 ||
	    rte_vhost_driver_callback_register(d->path, &vhost_ops) < 0 ||
	    rte_vhost_driver_start(d->path) < 0) {
		fail(x, "cannot start vhost-user on %s", d->path);
		return -1;
	}
	return 0;
}

/* Our PMD's devargs for device idx in this stage (rdma: RDMA device mlx5_<idx>). */
static void
dev_args(const struct mig_ctx *x, unsigned int idx, char *args, size_t len)
{
	const struct mig_shape *s = &x->o->shape;
	char ibdev[32];

	snprintf(ibdev, sizeof(ibdev), "ibdev=mlx5_%u", idx);
	snprintf(args, len, "%s%s,queues=%u,queue_size=%u,precreate=%u,workers=%u,"
		 "mr_gc_ms=%u,parallel=%u", x->o->rdma ? ibdev : "emu=",
		 x->o->rdma ? "" : x->o->profile, s->queue_pairs, s->queue_size,
		 x->st->precreate, x->st->workers, x->st->mr_gc_ms, x->st->parallel);
}

static int
dev_setup(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
	  unsigned int k)
{
	struct rte_pmd_mlx5_lm_timings t;
	struct rte_vdpa_device *vdpa;
	char args[256];

	snprintf(d->name, sizeof(d->name), "%s%u", TEST_LM_PMD, idx);
	snprintf(d->path, sizeof(d->path), "%s/%s%u.sock", x->dir, role, k);
	/* rdma: device idx is RDMA device mlx5_<idx> (sources, then destinations). */
	snprintf(d->ibdev, sizeof(d->ibdev), "mlx5_%u", idx);
	dev_args(x, idx, args, sizeof(args));
	if (lm_app_probe_device(d->name, args) < 0) {
		fail(x, "cannot probe %s with \"%s\"", d->name, args);
		return -1;
	}
	d->probed = true;
	vdpa = rte_vdpa_find_device_by_name(d->name);
	if (vdpa == NULL || rte_pmd_mlx5_lm_get_timings(d->name, &t) < 0) {
		fail(x, "%s is not a %s vDPA device", d->name, TEST_LM_PMD);
		return -1;
	}
	d->conf_count = t.conf_count;
	return dev_serve(x, d, vdpa);
}

static void
dev_teardown(struct mig_dev *d)
{
	if (d->c != NULL)
		vu_disconnect(d->c);
	d->c = NULL;
	if (d->registered)
		rte_vhost_driver_unregister(d->path);
	d->registered = false;
	unlink(d->path);
	if (d->probed)
		lm_app_remove_device(d->name);
	d->probed = false;
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
	char args[256];

	d->svc = true;
	d->side = strcmp(role, "dst") == 0 ? MIG_DST : MIG_SRC;
	dev_args(x, idx, args, sizeof(args));
	if (mig_svc_dev_add(x->o->svc, d->side, x->o->vm_base + x->vm, k, args, d->name,
			    sizeof(d->name), d->path, sizeof(d->path)) < 0) {
		fail(x, "the service cannot add NIC %u of the VM (%s) with \"%s\"", k, role,
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
		fail(x, "the service cannot remove %s", d->name);
	d->probed = false;
}

/* What the PMD counted of the device's last configuration and stop. */
static int
dev_timings(struct mig_ctx *x, const struct mig_dev *d, struct rte_pmd_mlx5_lm_timings *t)
{
	if (d->svc)
		return mig_svc_dev_timings(x->o->svc, d->side, d->name, t);
	return rte_pmd_mlx5_lm_get_timings(d->name, t);
}

/* ---- the peer's devices (DPDK's vdpa/mlx5 on the PCI bus) ---- */

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

/* Device objects left alive so far: our PMD's emulator and the emulated rdma-core's. */
static unsigned long
leaked_now(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, erdma_resolve_once);
	return rte_pmd_mlx5_lm_emu_leaked_objects() +
	       (erdma_left_alive != NULL ? erdma_left_alive() : 0);
}

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
		fail(x, "the peer cannot probe \"%s\": %s (see its log above)", args,
		     strerror(-ret));
		return -1;
	}
	d->probed = true;
	vdpa = rte_vdpa_find_device_by_name(d->name);
	if (vdpa == NULL) {
		fail(x, "%s: probed, but no vDPA device of that name", d->name);
		return -1;
	}
	return dev_serve(x, d, vdpa);
}

static void
peer_dev_teardown(struct mig_dev *d)
{
	int ret;

	if (d->c != NULL)
		vu_disconnect(d->c);
	d->c = NULL;
	if (d->registered)
		rte_vhost_driver_unregister(d->path);
	d->registered = false;
	unlink(d->path);
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
		fail(x, "%s: no reply after DRIVER_OK: %s", d->name, strerror(-ret));
		return -1;
	}
	return 0;
}

static int
connect_all(struct mig_ctx *x)
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
			fail(x, "cannot connect to the sockets of device pair %u: %s", k,
			     strerror(-ret));
			return -1;
		}
		vu_set_ack_policy(x->src[k].c, acks);
		vu_set_ack_policy(x->dst[k].c, acks);
	}
	return 0;
}

static void
disconnect_all(struct mig_ctx *x)
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

/*
 * vhost calls dev_conf after it has replied to SET_STATUS(DRIVER_OK): wait
 * (bounded) until the PMD counted the configuration we triggered.
 */
static int
wait_conf(struct mig_ctx *x, struct mig_dev *d, struct rte_pmd_mlx5_lm_timings *t)
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
		if (dev_timings(x, d, t) < 0) {
			fail(x, "%s is gone", d->name);
			return -1;
		}
		if (t->conf_count != d->conf_count) {
			d->conf_count = t->conf_count;
			return 0;
		}
		/* A configuration that failed says so at once: no need to wait it out. */
		if (rte_pmd_mlx5_lm_get_state(d->name, &st) == 0 && st.conf_failures != failures) {
			fail(x, "%s: DRIVER_OK configuration failed: %s (%s)", d->name,
			     st.last_error_msg, strerror(-st.last_error));
			return -1;
		}
		if (mig_now_ms() > deadline) {
			fail(x, "%s: no DRIVER_OK configuration within %d s (see the PMD's log)",
			     d->name, CONF_WAIT_MS / 1000);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

static int
setup(struct mig_ctx *x)
{
	const struct mig_shape *s = &x->o->shape;
	struct vu_guest_cfg cfg = {
		.queue_pairs = (uint16_t)s->queue_pairs,
		.ring_size = (uint16_t)s->queue_size,
		.packed = s->packed,
	};
	unsigned int k;
	int ret;

	phase_begin(x);
	snprintf(x->dir, sizeof(x->dir), "/tmp/test-lm-migrate-XXXXXX");
	/* mkdtemp makes it 0700: only we can reach the sockets. */
	if (mkdtemp(x->dir) == NULL) {
		fail(x, "cannot create a socket directory: %s", strerror(errno));
		x->dir[0] = '\0';
		return -1;
	}
	/* One guest memory for the VM (QEMU's layout, one sparse memfd). */
	ret = vu_mem_create_qemu(&x->mem, s->mem_gb);
	if (ret == 0)
		ret = vu_log_create(&x->log, vu_mem_gpa_end(x->mem));
	if (ret < 0) {
		fail(x, "cannot create %u GiB of guest memory and its log: %s", s->mem_gb,
		     strerror(-ret));
		return -1;
	}
	for (k = 0; k < x->n; k++) {
		ret = vu_guest_create(&x->g[k], x->mem, &cfg);
		if (ret < 0) {
			fail(x, "cannot lay out the rings of NIC %u in guest memory: %s", k,
			     strerror(-ret));
			return -1;
		}
	}
	ret = mig_gen_create(&x->gen, x->g, x->n);
	if (ret < 0) {
		fail(x, "cannot start the traffic generator: %s", strerror(-ret));
		return -1;
	}
	/*
	 * Every socket is registered now: DPDK's vhost thread may take up to
	 * a second to notice a new listening socket, which must not fall in a
	 * measured phase. The connections wait in the listen backlog.
	 */
	for (k = 0; k < x->n; k++) {
		int (*add)(struct mig_ctx *, struct mig_dev *, unsigned int, const char *,
			   unsigned int) = x->st->peer ? peer_dev_setup :
					   x->o->svc != NULL ? svc_dev_setup : dev_setup;

		if (add(x, &x->src[k], 2 * x->n * x->vm + k, "src", k) < 0 ||
		    add(x, &x->dst[k], 2 * x->n * x->vm + x->n + k, "dst", k) < 0)
			return -1;
	}
	if (connect_all(x) < 0)
		return -1;
	phase_end(x, "set-up", "%u source + %u destination devices, %u GiB, %u %s rings each",
		  x->n, x->n, s->mem_gb, x->nrings, s->packed ? "packed" : "split");
	return 0;
}

static int
teardown(struct mig_ctx *x, unsigned long leaked_before)
{
	unsigned int k;
	int ret = 0;

	phase_begin(x);
	mig_gen_destroy(x->gen);
	x->gen = NULL;
	for (k = 0; k < x->n; k++) {
		if (x->st->peer) {
			peer_dev_teardown(&x->src[k]);
			peer_dev_teardown(&x->dst[k]);
		} else if (x->o->svc != NULL) {
			svc_dev_teardown(x, &x->src[k]);
			svc_dev_teardown(x, &x->dst[k]);
		} else {
			dev_teardown(&x->src[k]);
			dev_teardown(&x->dst[k]);
		}
	}
	for (k = 0; k < x->n; k++)
		vu_guest_destroy(x->g[k]);
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
		phase_end(x, "teardown", "devices removed from both services, their workers %s",
			  ret == 0 ? "gone" : "NOT gone");
		return ret;
	}
	x->r->leaked_objects = leaked_now() - leaked_before;
	phase_end(x, "teardown", "%lu device objects left alive", x->r->leaked_objects);
	return 0;
}

/* ---- the migration ---- */

/* Why traffic stalled: the guest's counters, per NIC (generator idle). */
static void
report_traffic(struct mig_ctx *x, const char *what)
{
	unsigned int k;

	fail(x, "%s", what);
	for (k = 0; k < x->n; k++) {
		struct vu_guest_stats st;

		vu_guest_stats(x->g[k], -1, &st);
		fprintf(stderr, "  NIC %u: sent %" PRIu64 ", back %" PRIu64 ", not back %" PRIu64
			", TX in flight %" PRIu64 ", bad %" PRIu64 ", device errors %" PRIu64 "\n",
			k, vu_guest_tx_sent(x->g[k], -1), st.rx_unique, vu_guest_lost(x->g[k], -1),
			vu_guest_tx_inflight(x->g[k], -1), st.rx_bad, st.dev_errors);
	}
}

/* GET_VRING_BASE on every ring before DRIVER_OK, on every device (hostile). */
static int
early_base(struct mig_ctx *x)
{
	const struct vu_start_opts o = { .no_status = true };
	struct mig_dev *all[2] = { x->src, x->dst };
	unsigned int k, side;
	int ret;

	phase_begin(x);
	for (side = 0; side < 2; side++) {
		for (k = 0; k < x->n; k++) {
			struct mig_dev *d = &all[side][k];

			ret = vu_start_device(d->c, x->g[k], &o);
			if (ret == 0)
				ret = vu_stop_device(d->c, NULL, 0);
			if (ret < 0) {
				fail(x, "%s: rings set up without DRIVER_OK, then "
				     "GET_VRING_BASE: %s", d->name, strerror(-ret));
				return -1;
			}
		}
	}
	phase_end(x, "hostile", "GET_VRING_BASE before DRIVER_OK on all %u devices", 2 * x->n);
	return 0;
}

static int
start_sources(struct mig_ctx *x)
{
	struct rte_pmd_mlx5_lm_timings t;
	unsigned int k;
	int ret;

	phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_start_device(x->src[k].c, x->g[k], NULL);
		if (ret < 0) {
			fail(x, "%s: start failed: %s", x->src[k].name, strerror(-ret));
			return -1;
		}
	}
	/* Frames posted before the queues are RDY would race the RX steering. */
	for (k = 0; k < x->n; k++)
		if (wait_conf(x, &x->src[k], &t) < 0)
			return -1;
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic does not flow on every queue pair of the sources");
		return -1;
	}
	phase_end(x, "source", "%u devices started, traffic on all %u queue pairs", x->n,
		  x->n * x->o->shape.queue_pairs);
	return 0;
}

static int
begin_logging(struct mig_ctx *x)
{
	unsigned int k;
	int ret;

	phase_begin(x);
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
			fail(x, "%s: cannot start dirty logging: %s%s", x->src[k].name,
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
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic stopped flowing once logging began");
		return -1;
	}
	phase_end(x, "logging", "%s, traffic goes on",
		  x->r->dirty_logged ? "dirty log on every source" : "NO dirty log");
	return 0;
}

/* QEMU negotiates with the destination before the source stops. */
static int
handshake_destinations(struct mig_ctx *x)
{
	unsigned int k;
	int ret;

	phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_device_init(x->dst[k].c, NULL);
		if (ret < 0) {
			fail(x, "%s: handshake failed: %s", x->dst[k].name, strerror(-ret));
			return -1;
		}
	}
	phase_end(x, "handshake", "%u destinations negotiated features (before the stop)",
		  x->n);
	return 0;
}

static void
check_dirty(struct mig_ctx *x)
{
	double t = mig_now_ms();
	unsigned int k;

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
			fail(x, "%s: %" PRIu64 " of %" PRId64 " written pages not in the dirty "
			     "log, first at GPA 0x%" PRIx64, x->src[k].name, missing, n, first);
	}
	if (!x->r->dirty_logged)
		x->r->dirty_pages_missing = x->r->dirty_pages_checked;
	x->r->dirty_check_ms = mig_now_ms() - t;
}

/*
 * The device's account in the emulated rdma-core (the peer's devices, and
 * ours on the rdma back end), in the PMD's units.
 */
static int
erdma_model_stats(const char *ibdev, struct rte_pmd_mlx5_lm_model_stats *s)
{
	struct mlx5_lm_erdma_stats es;

	leaked_now(); /* resolves the library's functions */
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
model_add(struct model_snap *m, const struct mig_dev *d, double *side)
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

static void
model_snap(struct mig_ctx *x, struct model_snap *m)
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

/*
 * The VM pauses with its NICs idle: the emulated wire loops frames back
 * into the device's own RX queues, and a frame on that wire when they are
 * suspended would be lost as on any wire; not what is measured. RX
 * buffers stay posted across the stop.
 */
static void
pause_vm(struct mig_ctx *x)
{
	phase_begin(x);
	if (mig_gen_quiesce(x->gen, DRAIN_MS) < 0)
		fail(x, "the guest's traffic did not drain before the stop (counted as lost)");
	phase_end(x, "pause", "the VM stops, its NICs idle");
}

/* The VM stops, every source ring is stopped, the log is checked. */
static int
stop_sources(struct mig_ctx *x, double *t0)
{
	const unsigned int nr = x->nrings;
	unsigned int k;
	int ret;

	phase_begin(x);
	x->r->src_first_ring_ms = 0;
	/* The model's counters first: reading them is not part of the downtime. */
	model_snap(x, &x->model_t0);
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
			fail(x, "%s: GET_VRING_BASE failed: %s", x->src[k].name, strerror(-ret));
			return -1;
		}
	}
	x->r->src_stop_ms = mig_now_ms() - *t0;
	/* The destinations get their own kick and call eventfds. */
	for (k = 0; k < x->n; k++) {
		ret = vu_guest_new_eventfds(x->g[k]);
		if (ret < 0) {
			fail(x, "cannot create eventfds: %s", strerror(-ret));
			return -1;
		}
	}
	check_dirty(x);
	phase_end(x, "stop", "source stop %.1f ms (first rings %.1f), dirty log %" PRIu64
		  " pages, %" PRIu64 " missing", x->r->src_stop_ms, x->r->src_first_ring_ms,
		  x->r->dirty_pages_checked, x->r->dirty_pages_missing);
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

static int
start_destinations(struct mig_ctx *x, double t0)
{
	uint64_t lost_before[MIG_MAX_DEVICES];
	struct rte_pmd_mlx5_lm_timings t;
	struct vu_start_opts o = { 0 };
	struct model_snap m;
	unsigned int k, qp;
	double t1, t_end;
	int ret;

	phase_begin(x);
	for (k = 0; k < x->n; k++)
		lost_before[k] = vu_guest_lost(x->g[k], -1);
	t1 = mig_now_ms();
	for (k = 0; k < x->n; k++) {
		o.bases = x->bases[k];
		ret = vu_start_device(x->dst[k].c, x->g[k], &o);
		if (ret < 0) {
			fail(x, "%s: start failed: %s", x->dst[k].name, strerror(-ret));
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
		 * are read once the window is over (svc_conf_after).
		 */
		if (x->o->svc == NULL) {
			if (wait_conf(x, &x->dst[k], &t) < 0)
				return -1;
			x->r->dst_mr_ms += t.conf_mr_ms;
			x->r->dst_vq_ms += t.conf_vq_ms;
			x->r->dst_conf_ms += t.conf_ms;
		}
		for (qp = 0; qp < x->o->shape.queue_pairs; qp++)
			vu_guest_tx(x->g[k], qp, 1);
	}
	if (wait_probes(x, lost_before) < 0) {
		fail(x, "a destination did not complete the frames posted after the restart "
		     "within %d s", PROBE_WAIT_MS / 1000);
		return -1;
	}
	t_end = mig_now_ms();
	x->r->dst_start_ms = t_end - t1;
	x->r->downtime_ms = t_end - t0;
	model_snap(x, &m);
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
		phase_end(x, "start", "destination start %.1f ms", x->r->dst_start_ms);
	else
		phase_end(x, "start", "destination start %.1f ms (memory %.1f, queues %.1f)",
			  x->r->dst_start_ms, x->r->dst_mr_ms, x->r->dst_vq_ms);
	return 0;
}

/*
 * --service, once the window is over: each destination's worker counted
 * the configuration this start asked for (bounded wait: its probe frames
 * came back, so it is done or ending), and what it and the sources'
 * workers measured of the configuration and the stop.
 */
static int
svc_conf_after(struct mig_ctx *x)
{
	struct rte_pmd_mlx5_lm_timings t;
	unsigned int k;

	phase_begin(x);
	for (k = 0; k < x->n; k++) {
		if (wait_conf(x, &x->dst[k], &t) < 0)
			return -1;
		x->r->dst_mr_ms += t.conf_mr_ms;
		x->r->dst_vq_ms += t.conf_vq_ms;
		x->r->dst_conf_ms += t.conf_ms;
	}
	for (k = 0; k < x->n; k++) {
		if (dev_timings(x, &x->src[k], &t) < 0)
			return -1;
		x->r->src_close_ms += t.close_ms;
	}
	phase_end(x, "workers", "configuration %.1f ms (memory %.1f, queues %.1f), stop %.1f ms",
		  x->r->dst_conf_ms, x->r->dst_mr_ms, x->r->dst_vq_ms, x->r->src_close_ms);
	return 0;
}

static void
count_packets(struct mig_ctx *x)
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

static int
finish(struct mig_ctx *x)
{
	unsigned int k;
	int ret, rc = 0;

	phase_begin(x);
	mig_gen_run(x->gen);
	if (mig_gen_wait_flow(x->gen, x->o->frames, FLOW_WAIT_MS) < 0) {
		mig_gen_idle(x->gen);
		report_traffic(x, "traffic does not flow on every queue pair of the destinations");
		rc = -1;
	}
	if (mig_gen_quiesce(x->gen, DRAIN_MS) < 0)
		fail(x, "descriptors still in flight on the destinations after %d s",
		     DRAIN_MS / 1000);
	count_packets(x);
	phase_end(x, "traffic", "on the destinations: %" PRIu64 " frames in all, %" PRIu64
		  " lost, %" PRIu64 " duplicated", x->r->frames, x->r->lost_packets,
		  x->r->duplicated_packets);
	phase_begin(x);
	for (k = 0; k < x->n; k++) {
		ret = vu_stop_device(x->dst[k].c, NULL, 0);
		if (ret < 0) {
			fail(x, "%s: GET_VRING_BASE failed: %s", x->dst[k].name, strerror(-ret));
			rc = -1;
		}
	}
	disconnect_all(x);
	phase_end(x, "end", "destinations stopped, front end disconnected");
	return rc;
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
	if (start_sources(x) < 0 || begin_logging(x) < 0 || handshake_destinations(x) < 0)
		return -1;
	pause_vm(x);
	if (stop_sources(x, &t0) < 0)
		return -1;
	if (hostile == MIG_HOSTILE_DISCONNECT) {
		phase_begin(x);
		disconnect_all(x);
		phase_end(x, "hostile", "front end gone between the source stop and the start");
		return 1;
	}
	if (start_destinations(x, t0) < 0)
		return -1;
	return finish(x);
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
			fail(x, "cannot create eventfds: %s", strerror(-ret));
			return -1;
		}
	}
	vu_log_reset(x->log);
	return connect_all(x);
}

static struct mig_ctx *
ctx_new(const struct mig_opts *o, const struct mig_stage_def *st, struct mig_result *r,
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
	unsigned long leaked_before = leaked_now();
	struct mig_ctx *x;
	int ret;

	x = ctx_new(o, st, r, 0);
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
	ret = setup(x);
	if (ret == 0)
		ret = migrate_once(x, o->hostile);
	if (ret == 1) {
		/* Both sides must still work: a normal migration, measured. */
		ret = restart_vm(x);
		if (ret == 0)
			ret = migrate_once(x, MIG_HOSTILE_NONE);
	}
	disconnect_all(x);
	teardown(x, leaked_before);
	if (st->peer)
		peer_watchdog(false);
	r->ok = ret == 0;
	free(x);
	return ret == 0 ? 0 : -1;
}

/* ---- host evacuation ---- */

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
		fail(v->x, "cannot read the front-end thread's CPU time");
		v->ret = -1;
		return NULL;
	}
	v->ret = stop_sources(v->x, &t0);
	if (v->ret == 0)
		v->ret = start_destinations(v->x, t0);
	if (cpu && v->ret == 0) {
		if (mig_cpu_thread_now(&run1, &wait1) < 0) {
			fail(v->x, "cannot read the front-end thread's CPU time");
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
evac_prepare(const struct mig_opts *o, const struct mig_stage_def *st, struct evac_vm *v)
{
	const unsigned int nvm = o->shape.vms;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < nvm; i++) {
		v[i].x = ctx_new(o, st, &v[i].r, i);
		if (v[i].x == NULL)
			ret = -1;
	}
	for (i = 0; i < nvm && ret == 0; i++)
		ret = setup(v[i].x);
	for (i = 0; i < nvm && ret == 0; i++)
		if (start_sources(v[i].x) < 0 || begin_logging(v[i].x) < 0 ||
		    handshake_destinations(v[i].x) < 0)
			ret = -1;
	for (i = 0; i < nvm && ret == 0; i++)
		pause_vm(v[i].x);
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
			fail(v[i].x, "cannot start the front-end thread");
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
		disconnect_all(v[i].x);
		if (teardown(v[i].x, leaked_now()) < 0)
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

	ret = evac_prepare(o, st, v);
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
		ret = svc_conf_after(v[i].x);
	for (i = 0; i < nmig && ret == 0; i++)
		if (finish(v[i].x) < 0)
			ret = -1;
	/* The VMs that stayed lose nothing either. */
	for (i = nmig; i < nvm && ret == 0; i++)
		count_packets(v[i].x);
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

	ret = evac_prepare(o, st, v);
	for (i = 0; i < nvm && ret == 0; i++) {
		ret = evac_release(o, v, i, 1, &v[i].win);
		if (ret == 0)
			ret = svc_conf_after(v[i].x);
		if (ret == 0)
			ret = finish(v[i].x);
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
	} else if (!o->no_alone) {
		printf(" vm%u alone (the other %u VMs%s idle on their sources)\n", o->vm_base,
		       nvm - 1, o->processes > 1 ? " of this process" : "");
		fflush(stdout);
		ret = evac_round(o, st, 1, v, false, NULL);
		evac_sum(r, v, nvm, 1);
		r->alone = vm_time(&v[0].r);
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
	}
	r->ok = ret == 0;
	free(v);
	return ret == 0 ? 0 : -1;
}
