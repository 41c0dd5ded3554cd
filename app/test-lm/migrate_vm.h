/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the migration of one VM, what its files share.
 * migrate_phase.c has the phases of a migration in QEMU's order (set-up to
 * teardown), migrate_dev.c the VM's devices by kind (ours in this process,
 * ours in a worker of mlx5-lm-vhostd, the peer's), migrate_stage.c runs one
 * stage of one VM, migrate_evac.c the VMs of an evacuation at once.
 */
#ifndef MIGRATE_VM_H
#define MIGRATE_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "migrate_int.h"
#include "vu_client.h"

struct rte_pmd_mlx5_lm_timings;

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
struct mig_model_snap {
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
	/* The guest memory's data pages at the dirty checkpoint (logging on). */
	struct vu_snap *snap;
	struct vu_guest *g[MIG_MAX_DEVICES];
	struct mig_gen *gen;
	uint32_t bases[MIG_MAX_DEVICES][2 * MIG_MAX_QUEUE_PAIRS];
	struct mig_model_snap model_t0;  /* at the first GET_VRING_BASE */
	double phase_t0;
	/* --devx-trace: the run's number in its names (0 before its first device), */
	unsigned int trace_run;
	/* its round ("alone", "at-once" in an evacuation; "" otherwise), its t0 in ms. */
	const char *trace_round;
	double trace_t0;
	/* When the benchmark's checks at the stop began (ms, mig_now_ms): not downtime. */
	double checks_t0;
	/* The VM's vhost-user requests and replies when its downtime began (vu_counts). */
	uint64_t vu_req0, vu_rep0;
};

/* ---- the context and its progress lines (migrate_phase.c) ---- */

/* VM vm's context in a run of stage st; r cleared and named. NULL: no memory. */
struct mig_ctx *mig_ctx_new(const struct mig_opts *o, const struct mig_stage_def *st,
			    struct mig_result *r, unsigned int vm);
void mig_phase_begin(struct mig_ctx *x);
/* One progress line per phase: what happened and how long the phase took. */
void mig_phase_end(struct mig_ctx *x, const char *phase, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Why the stage fails, on stderr, named after the stage (and the VM). */
void mig_fail(struct mig_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- --devx-trace (migrate_trace.c) ---- */

/* ",devx_trace=PATH" for NIC k (role src or dst) of the run, or "" without --devx-trace. */
void mig_trace_devarg(struct mig_ctx *x, const char *role, unsigned int k, char *buf,
		      size_t len);
/* The run's downtime window beside its traces, once it ended well (t0: mig_vm_start_*). */
void mig_trace_window(struct mig_ctx *x);

/* ---- the phases, in their order (migrate_phase.c); 0, or -1 after mig_fail ---- */

int mig_vm_setup(struct mig_ctx *x);
int mig_vm_connect(struct mig_ctx *x);
void mig_vm_disconnect(struct mig_ctx *x);
int mig_vm_start_sources(struct mig_ctx *x);
int mig_vm_begin_logging(struct mig_ctx *x);
int mig_vm_handshake(struct mig_ctx *x);
void mig_vm_pause(struct mig_ctx *x);
/* t0: the first GET_VRING_BASE, where the downtime begins. */
int mig_vm_stop_sources(struct mig_ctx *x, double *t0);
int mig_vm_start_destinations(struct mig_ctx *x, double t0);
int mig_vm_svc_conf_after(struct mig_ctx *x);
/*
 * A prereg stage (migrate_prereg.c): before the pause, every destination
 * prepared with the VM's memory file and waited for, the sources' traffic
 * running; after the start, each preparation checked used whole, and its
 * times put relative to the stop t0.
 */
int mig_vm_prepare(struct mig_ctx *x);
int mig_vm_prepare_check(struct mig_ctx *x, double t0);
void mig_vm_count_packets(struct mig_ctx *x);
int mig_vm_finish(struct mig_ctx *x);
/* leaked_before: mig_leaked_now() before the set-up. */
int mig_vm_teardown(struct mig_ctx *x, unsigned long leaked_before);

/* ---- the devices by kind (migrate_dev.c) ---- */

/*
 * NIC k of the VM (role: "src" or "dst"), device idx of the run: ours in
 * this process, ours in a worker of the service (--service), or the peer's
 * (a peer stage); served on its vhost-user socket. 0, or -1 after mig_fail.
 */
int mig_dev_add(struct mig_ctx *x, struct mig_dev *d, unsigned int idx, const char *role,
		unsigned int k);
/*
 * The front end off d, d removed (any kind; nothing if it was never added).
 * 0, or -1 after mig_fail when the PMD refused the removal.
 */
int mig_dev_remove(struct mig_ctx *x, struct mig_dev *d);
int mig_dev_timings(struct mig_ctx *x, const struct mig_dev *d,
		    struct rte_pmd_mlx5_lm_timings *t);
int mig_dev_wait_conf(struct mig_ctx *x, struct mig_dev *d, struct rte_pmd_mlx5_lm_timings *t);
/* The cost model's counters summed over the VM's devices (zero with --service). */
void mig_model_snap(struct mig_ctx *x, struct mig_model_snap *m);
unsigned long mig_leaked_now(void);

#endif /* MIGRATE_VM_H */
