/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: what its files share. cmd_migrate.c parses options
 * and reports, migrate_stage.c runs the migration of one stage and
 * migrate_evac.c an evacuation (both through the phases of
 * migrate_phase.c, on the devices of migrate_dev.c: migrate_vm.h),
 * migrate_traffic.c is the guest's traffic generator, migrate_procs.c
 * splits an evacuation over processes, migrate_service.c puts its devices
 * in mlx5-lm-vhostd's workers, migrate_cpu.c reads what CPU every process
 * spent and migrate_project.c projects it to larger hosts.
 */
#ifndef MIGRATE_INT_H
#define MIGRATE_INT_H

#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "vu_guest.h"

/*
 * Source and destination devices together are vdpa_mlx5_lm0 .. 2N-1 (VM v
 * of an evacuation: 2Nv .. 2N(v+1)-1). N per VM, and N x VMs, are at most
 * MIG_MAX_DEVICES.
 */
#define MIG_MAX_DEVICES 16
#define MIG_MAX_QUEUE_PAIRS 128
#define MIG_MAX_VMS 16

/* The VM: its NICs and its memory. */
struct mig_shape {
	const char *name;          /* scenario name, or "custom" */
	unsigned int devices;
	unsigned int queue_pairs;
	unsigned int mem_gb;
	unsigned int queue_size;
	bool packed;
	/*
	 * 0: one VM. K >= 1: a host evacuation, K VMs of this shape in the
	 * process, migrated at once (and VM 0 alone, for comparison).
	 */
	unsigned int vms;
};

/* Device settings of one stage (devargs). */
struct mig_stage_def {
	const char *name;
	unsigned int precreate;
	unsigned int workers;
	unsigned int mr_gc_ms;
	unsigned int parallel;
	/*
	 * The peer (DPDK's vdpa/mlx5) instead of ours, on the PCI function of
	 * RDMA device i (0000:5e:<i>.0) with class=vdpa; precreate then means
	 * its queues=Q,queue_size=S, and peer_threads its max_conf_threads
	 * (0: its default, none).
	 */
	bool peer;
	unsigned int peer_threads;
	/*
	 * The destinations' guest memory prepared (rte_pmd_mlx5_lm_prepare)
	 * while the sources still run, before the stop (migrate_prereg.c).
	 */
	bool prereg;
	/* More devargs for our PMD's devices (",key=value..."), or NULL. */
	const char *devargs;
};

/* Hidden test modes: front ends that do things in an order QEMU would not. */
enum mig_hostile {
	MIG_HOSTILE_NONE,
	/* GET_VRING_BASE on every ring of every device before DRIVER_OK. */
	MIG_HOSTILE_EARLY_BASE,
	/* Disconnect from every device after the source stop, then start over. */
	MIG_HOSTILE_DISCONNECT,
};

struct mig_svc;
struct rte_pmd_mlx5_lm_timings;

/* Which host of a migration a device is on (--service: which service). */
enum mig_side {
	MIG_SRC,
	MIG_DST,
};

/* Where the processes of a split evacuation wait for each other. */
enum mig_sync {
	/* VM 0 alone is done (the others did nothing meanwhile). */
	MIG_SYNC_ALONE_DONE,
	/* Every VM set up, running on its sources, paused: ready to stop. */
	MIG_SYNC_READY,
};

struct mig_opts {
	struct mig_shape shape;
	const char *profile;
	/* Devices as ibdev=mlx5_<i> (the rdma back end) instead of emu=<profile>. */
	bool rdma;
	/*
	 * --devx-trace: an absolute directory where each device of ours writes
	 * its DevX trace (devx_trace=) and each run its downtime window
	 * (migrate_trace.c); NULL: no traces.
	 */
	const char *trace_dir;
/*
 * Its longest: the PMD's devx_trace devarg holds 255 characters
 * (mlx5_lm.h), the file name after the directory up to 64 of them.
 */
#define MIG_TRACE_DIR_MAX (255 - 64)
	enum mig_hostile hostile;
	/* The peer's PMD (loaded with EAL -d) when a stage is a peer stage. */
	const char *peer_pmd;
	/*
	 * The front end asks for a REPLY_ACK on every request instead of only
	 * where QEMU waits (vu_client.h, enum vu_ack_policy): a round trip
	 * per message, which QEMU does not pay.
	 */
	bool acks_every;
	/* Frames every queue pair must get back in each traffic phase. */
	unsigned int frames;
	bool verbose;
	/*
	 * An evacuation split over processes (--processes P, migrate_procs.c):
	 * P back-end processes, each with its own EAL, vhost thread and
	 * devices. In one of them: its VMs are vm_base .. vm_base + vms - 1 of
	 * the run (shape.vms is this process's count); no_alone: another
	 * process measures VM 0 alone; sync, when set, is called at each
	 * mig_sync point of every run with ret (0 so far so good, -1 failed)
	 * and returns 0 to go on, -1 to give up (the other processes failed).
	 */
	unsigned int processes;
	unsigned int vm_base;
	bool no_alone;
	int (*sync)(void *arg, enum mig_sync point, int ret);
	void *sync_arg;
	/*
	 * An evacuation through mlx5-lm-vhostd (--service, migrate_service.c):
	 * every device in a worker of a source or a destination service,
	 * which this process starts for each run; svc is that run's (set by
	 * mig_svc_run_evacuate), NULL: the devices are in this process.
	 */
	bool service;
	const char *service_eal;   /* extra EAL arguments of the workers */
	struct mig_svc *svc;
	/* --device-list-probe (migrate_listprobe.c): NULL, off. */
	struct mig_listprobe *listprobe;
};

/* ---- CPU time by part (migrate_cpu.c) ---- */

/* What a thread of a VM is: its front end (ours), or in its workers by thread name. */
enum mig_cpu_part {
	MIG_CPU_FRONT_END,         /* the VM's front-end thread in this process */
	MIG_CPU_VHOST,             /* vhost-events of its workers */
	MIG_CPU_DRIVER,            /* mlx5-lm-* threads of its workers */
	MIG_CPU_EMULATOR,          /* emu-* threads of its workers */
	MIG_CPU_OTHER,             /* the rest of its workers: main thread (control), EAL's */
	MIG_CPU_NPARTS,
};

/* One VM's CPU in a window, by part (ms). */
struct mig_cpu_use {
	double cpu_ms[MIG_CPU_NPARTS];   /* on a CPU */
	double wait_ms[MIG_CPU_NPARTS];  /* runnable, waiting for a CPU */
};

/* A window's account over every process of the run (ms). */
struct mig_cpu_window {
	double window_ms;          /* the front ends released -> the last one done */
	double total_ms;           /* every process: this one, the services, the workers */
	double bench_ms;           /* this process, the VMs' front-end threads included */
	double services_ms;        /* the supervisors */
	double unattributed_ms;    /* workers' CPU beyond their threads read at both ends */
	double wait_ms;            /* the workers' threads, runnable and waiting for a CPU */
	unsigned int threads_ended;/* workers' threads gone by the window's end */
};

enum mig_cpu_kind {
	MIG_CPU_SELF,              /* this process: its clock only (front ends apart) */
	MIG_CPU_SERVICE,           /* a supervisor: its clock only */
	MIG_CPU_WORKER,            /* a VM's worker: every thread, by part */
};

struct mig_cpu_proc {
	pid_t pid;
	int vm;                    /* a worker's VM, -1 for the others */
	enum mig_cpu_kind kind;
};

struct mig_cpu_snap;

/*
 * What the processes spent so far (every thread of the workers), read in
 * the list's order or backwards. NULL after saying why.
 */
struct mig_cpu_snap *mig_cpu_snap_take(const struct mig_cpu_proc *procs, unsigned int n,
				       bool backwards);
void mig_cpu_snap_free(struct mig_cpu_snap *s);
/*
 * b - a (the same process list): use[0..nvm-1] the workers' parts of each
 * VM (front ends left at 0: the caller has them); w all but window_ms.
 */
void mig_cpu_snap_diff(const struct mig_cpu_snap *a, const struct mig_cpu_snap *b,
		       struct mig_cpu_use *use, unsigned int nvm, struct mig_cpu_window *w);
/* The calling thread's CPU so far and its wait for one (ms). 0, or -1. */
int mig_cpu_thread_now(double *run_ms, double *wait_ms);

struct mig_result {
	char name[32];
	bool ok;                   /* the migration ran to its end */
	/*
	 * A peer stage: the fields marked PMD below do not exist (its driver
	 * has no such API); the front end's and the model's do.
	 */
	bool peer;
	/* Milliseconds (design.md): */
	double downtime_ms;        /* first GET_VRING_BASE -> every destination forwards */
	double src_stop_ms;        /* GET_VRING_BASE of every source ring */
	double dst_start_ms;       /* first destination message -> every destination forwards */
	double dst_mr_ms;          /* PMD: memory registration in dev_conf, summed */
	double dst_vq_ms;          /* PMD: queue configuration in dev_conf, summed */
	double dst_conf_ms;        /* PMD: whole dev_conf, summed */
	double src_close_ms;       /* PMD: dev_close, summed */
	double src_first_ring_ms;  /* each source's first GET_VRING_BASE (dev_close), summed */
	double dirty_check_ms;     /* the front end's log check, inside the downtime */
	/*
	 * A prereg stage: the destinations' preparation, its first start and
	 * last end relative to the first GET_VRING_BASE (negative: before the
	 * stop), its length, and the memory it served at DRIVER_OK.
	 */
	bool prereg;
	double prep_start_ms, prep_end_ms, prep_ms;
	uint64_t prep_bytes, prep_used_bytes;
	/* Packets (exact: counted once nothing is in flight). */
	uint64_t frames;           /* sent by the guest over the whole migration */
	uint64_t lost_packets;
	uint64_t duplicated_packets;
	uint64_t bad_packets;      /* corrupted, or used entries for buffers not posted */
	/* Dirty log. */
	bool dirty_logged;         /* the devices accepted LOG_ALL */
	uint64_t dirty_pages_checked;
	uint64_t dirty_pages_missing;
	/* Data pages compared to the checkpoint's snapshot (not logged, not CPU-written). */
	uint64_t snap_pages_compared;
	/*
	 * The VM's vhost-user requests in its downtime (sources and
	 * destinations), and of them the round trips: the replies and
	 * REPLY_ACKs the front end waited for before its next request.
	 */
	uint64_t vu_requests, vu_round_trips;
	unsigned long leaked_objects;
	/*
	 * The cost model's account of the VM's devices (sources and
	 * destinations) over the downtime: the modelled time of the commands
	 * that held a firmware slot and of the host pinning, summed (work, not
	 * the critical path: slots run in parallel), what those sleeps really
	 * took, and how many charges there were.
	 */
	double model_busy_ms;
	double model_pin_ms;
	double model_actual_ms;    /* slots + pins, measured */
	uint64_t model_charges;
	double model_src_ms;       /* slots + pins of the sources (modelled) */
	double model_dst_ms;       /* slots + pins of the destinations (modelled) */
	/* Evacuation (shape.vms > 0); the fields above are the slowest VM's. */
	unsigned int vms;
	struct mig_vm_time {
		double downtime_ms, src_stop_ms, dst_start_ms, dst_mr_ms, dst_vq_ms;
	} vm[MIG_MAX_VMS], alone;  /* each VM at once; VM 0 with the others idle */
	/*
	 * --service: every VM was also migrated alone (one after another, the
	 * others idle; alone above is the median VM's), and each window's CPU
	 * was read by part. No model
	 * account (its counters are in the workers, which do not report it).
	 */
	bool service;
	struct mig_vm_time vm_alone[MIG_MAX_VMS];
	unsigned int alone_vm;     /* the VM whose time alone is "alone": their median */
	struct mig_cpu_use cpu_at_once[MIG_MAX_VMS], cpu_alone[MIG_MAX_VMS];
	struct mig_cpu_window win_at_once, win_alone[MIG_MAX_VMS];
};

/* Run one stage: probe, migrate, tear down. 0, or -1 after printing why. */
/*
 * Emulated devices and device objects alive now in this process: the
 * emulator's own count, not the driver's closes (a device its driver never
 * closes reports no leak at a close that never comes).
 */
unsigned long mig_alive_now(void);
/* In a forked child: SIGINT and SIGTERM unblocked (cmd_migrate.c blocks them). */
void mig_child_default_signals(void);
/*
 * After a stage: more alive than before it (alive_before) is a failure,
 * said with the kinds and added to r's leaked objects. 0, or -1.
 */
int mig_check_alive(struct mig_result *r, unsigned long alive_before);
int mig_run_stage(const struct mig_opts *o, const struct mig_stage_def *st,
		  struct mig_result *r);
/*
 * An evacuation (shape.vms VMs): VM 0 migrated alone with the others idle,
 * then every VM at once, each from its own front-end thread; r sums the
 * packets, the dirty log and the model over both, and its times are those
 * of the slowest VM at once. 0, or -1 after printing why.
 */
int mig_run_evacuate(const struct mig_opts *o, const struct mig_stage_def *st,
		     struct mig_result *r);

/*
 * The evacuation split over o->processes child processes (fork before EAL
 * init in each child), every stage of defs repeat times in rounds, as the
 * one-process loop does; res[rep * ndefs + i] gets the run's results
 * merged over the children (VM v's times at v, VM 0 alone from the first
 * child). eal: the EAL arguments of every child. 0 when every child ran
 * every run to its end and exited 0; -1 after naming the failed children.
 */
int mig_procs_run(const struct mig_opts *o, const struct mig_stage_def *const *defs,
		  unsigned int ndefs, unsigned int repeat, const char *eal,
		  struct mig_result *res);

/*
 * The host's pinning tokens (the profile's host_pin_parallel) in a POSIX
 * named semaphore, which every emulated device of the processes this one
 * starts takes them from: EMU_HOST_ENV (emu.h) is set in this process's
 * environment until mig_host_destroy. The tokens model the host's CPUs,
 * which processes share; one counter per process would multiply them.
 * who: what shares them, for the progress line. 0, or -1 after saying why.
 */
struct mig_host {
	sem_t *sem;
	char host[64];
	char name[96];
};

int mig_host_create(struct mig_host *h, const char *profile, const char *who);
void mig_host_destroy(struct mig_host *h);

/* ---- the devices in mlx5-lm-vhostd's workers (migrate_service.c) ---- */

/* mlx5-lm-vhostd can be found (before any work). 0, or -1 after saying why. */
int mig_svc_check(void);
/*
 * One run of an evacuation through the service: a source and a destination
 * service started on private sockets, mig_run_evacuate with every device in
 * their workers, both services stopped; what they say was left alive in
 * their workers is added to r. 0, or -1 after saying why.
 */
int mig_svc_run_evacuate(const struct mig_opts *o, const struct mig_stage_def *st,
			 struct mig_result *r);
/*
 * NIC nic of VM vm on side's service, with devargs: its name there (the
 * same on both sides, as an operator names it) and its vhost-user socket.
 */
int mig_svc_dev_add(struct mig_svc *s, enum mig_side side, unsigned int vm, unsigned int nic,
		    const char *devargs, char *name, size_t nlen, char *path, size_t plen);
int mig_svc_dev_remove(struct mig_svc *s, enum mig_side side, const char *name);
/* device_get's last start and stop, in the PMD's terms. */
int mig_svc_dev_timings(struct mig_svc *s, enum mig_side side, const char *name,
			struct rte_pmd_mlx5_lm_timings *t);
/*
 * device_prepare on the destination service: its device name prepared
 * with the shared memory files of front-end process pid (prereg).
 */
int mig_svc_dev_prepare(struct mig_svc *s, const char *name, int pid);
/* The destination device's preparation as device_get says it. */
struct mig_svc_prep {
	char state[16];            /* none, preparing, ready, used, released, failed */
	char reason[160];
	uint64_t bytes, used_bytes, fallback_bytes;
	double start_ms, end_ms;   /* CLOCK_MONOTONIC ms; 0 before it ran */
};
int mig_svc_dev_prep(struct mig_svc *s, const char *name, struct mig_svc_prep *p);
/* After VM vm's last devices were removed: wait (bounded) until its workers are gone. */
int mig_svc_vm_gone(struct mig_svc *s, unsigned int vm);
/* Room in this process's fd table for fds more descriptors (before a window). */
int mig_svc_fd_reserve(unsigned int fds);
/*
 * The CPU of every process of the run, read at a window's start and end;
 * nmig: the VMs released in the window (all: the at-once window).
 */
int mig_svc_window_begin(struct mig_svc *s, unsigned int nmig);
int mig_svc_window_end(struct mig_svc *s, struct mig_cpu_use *use, unsigned int nvm,
		       struct mig_cpu_window *w);

/* ---- device_list on the source service during the at-once windows (migrate_listprobe.c) ---- */

struct mig_listprobe;

struct mig_listprobe *mig_listprobe_new(void);
void mig_listprobe_free(struct mig_listprobe *p);
/*
 * A window opens: a thread calls device_list on the service at rpc in a
 * loop, each reply listing devices devices, until mig_listprobe_stop,
 * which prints the window's line. 0, or -1 after saying why.
 */
int mig_listprobe_start(struct mig_listprobe *p, const char *rpc, unsigned int devices);
void mig_listprobe_stop(struct mig_listprobe *p);
/* Every window's calls: the line under the table, the run's JSON member. */
void mig_listprobe_print(const struct mig_listprobe *p);
void mig_listprobe_json(json_t *root, const struct mig_listprobe *p);
/* 0 when every call was answered; -1 after saying how many were not, and the first why. */
int mig_listprobe_failed(const struct mig_listprobe *p);

/* ---- the projection to larger hosts (migrate_project.c) ---- */

/* Under the evacuation table: each VM's CPU by part, and the projection. */
void mig_proj_print(const struct mig_result *r, double model_ms);
/* The same as JSON, into the run's "evacuate" object. */
void mig_proj_json(json_t *evacuate, const struct mig_result *r, double model_ms);

/* ---- traffic generator (migrate_traffic.c) ---- */
struct mig_gen;

/* A thread driving guests g[0..n-1]; created idle. */
int mig_gen_create(struct mig_gen **out, struct vu_guest *const *g, unsigned int n);
void mig_gen_destroy(struct mig_gen *gen);
/* Post TX frames on every pair within a window, keep RX full. */
void mig_gen_run(struct mig_gen *gen);
/*
 * The VM pauses: no more TX, keep reaping until every TX descriptor has
 * completed and every frame sent came back (or timeout_ms), then idle.
 * Returns 0 when drained, -ETIMEDOUT.
 */
int mig_gen_quiesce(struct mig_gen *gen, int timeout_ms);
/* Stop touching the guests (returns once the thread is idle). */
void mig_gen_idle(struct mig_gen *gen);
/*
 * With the generator running: wait until every queue pair of every guest
 * got `frames` more of its frames back than when called. 0, or -ETIMEDOUT.
 */
int mig_gen_wait_flow(struct mig_gen *gen, uint64_t frames, int timeout_ms);

double mig_now_ms(void);

/* A column of a printed table: its title, its width (negative: left-aligned). */
struct mig_col {
	const char *name;
	int width;
};

/* A table's title line and its |---| line, as a markdown table. */
void mig_table_head(const struct mig_col *cols, unsigned int n);

#endif /* MIGRATE_INT_H */
