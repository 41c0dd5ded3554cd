/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm: the vDPA PMD's device state and the helpers its modules share.
 */
#ifndef MLX5_LM_H
#define MLX5_LM_H

#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rte_log.h>
#include <rte_vhost.h>

#include "devx.h"
#include "prm.h"
#include "rte_pmd_mlx5_lm.h"
#include "mlx5_lm_eventq.h"
#include "mlx5_lm_pool.h"

extern int mlx5_lm_logtype;

/* Every driver log line names the device (and the queue, where there is one). */
#define DRV_LOG(level, dev, fmt, ...) \
	rte_log(RTE_LOG_ ## level, mlx5_lm_logtype, "mlx5_lm %s: " fmt "\n", \
		(dev) != NULL ? (dev)->name : "-", ##__VA_ARGS__)

/* Validated device arguments (design.md "Device devargs"). */
/* devarg preconf: what a destination with prepared memory does before DRIVER_OK. */
#define MLX5_LM_PRECONF_OFF 0            /* nothing */
#define MLX5_LM_PRECONF_MEMORY 1         /* the indirect mkey, at the first kick */
#define MLX5_LM_PRECONF_FIELDS 2         /* and each queue pair's fields, at its kicks */

struct mlx5_lm_devargs {
	char emu[256];          /* emulated device profile, "" for hardware */
	char ibdev[64];         /* RDMA device name, "" for emulated */
	char pci[32];           /* or the RDMA device of this PCI function (dddd:bb:dd.f) */
	char sf[64];            /* or of this sub-function (auxiliary device name) */
	uint32_t queues;        /* queue pairs to pre-create, 0 = min(caps, 16) */
	uint32_t queue_size;
	uint32_t precreate;
	uint32_t workers;
	uint32_t mr_chunk_mb;
	uint32_t mr_gc_ms;
	uint32_t parallel;
	uint32_t preconf;                /* MLX5_LM_PRECONF_*: mlx5_lm_preconf.c */
	uint32_t sibling_stop;           /* stop ahead at a sibling's stop: mlx5_lm_stop.c */
	char uplink[64];
	char devx_trace[256];
	/* DPDK vdpa/mlx5's keys (doc/devargs.md, "coming from DPDK's vdpa/mlx5"). */
	uint32_t event_mode;         /* MLX5_LM_EVENT_MODE_* */
	uint32_t event_us;           /* timer step (dynamic) or period (fixed) */
	uint32_t no_traffic_time;    /* empty polls before falling back to interrupts */
	uint32_t event_core;         /* CPU of the notification thread, or _ANY */
	uint32_t max_conf_threads;   /* upstream name of workers */
	uint32_t hw_latency_mode;    /* virtq queue_period_mode */
	uint32_t hw_max_latency_us;  /* virtq queue_period_us */
	uint32_t hw_max_pending_comp; /* virtq queue_max_count */
	uint32_t prereg_max_gb;      /* most guest memory one preparation may pin, 0: none */
	uint32_t prereg_ttl_ms;      /* an unused preparation is released after this */
};

/* event_mode: upstream's values (mlx5_vdpa.h MLX5_VDPA_EVENT_MODE_*). */
#define MLX5_LM_EVENT_MODE_DYNAMIC_TIMER 0
#define MLX5_LM_EVENT_MODE_FIXED_TIMER 1
#define MLX5_LM_EVENT_MODE_INTERRUPT 2
#define MLX5_LM_DEFAULT_NO_TRAFFIC_TIME 16
#define MLX5_LM_EVENT_CORE_ANY UINT32_MAX

/* IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ: umems and guest memory (DMA). */
#define MLX5_LM_DMA_ACCESS 0x7

/* Device-level PRM objects allocated at probe. */
struct mlx5_lm_res {
	struct devx_pd *pd;     /* the PD every object names, with the null mkey */
	struct devx_obj *td;
	struct devx_obj *tis;
	uint32_t null_mkey;     /* the PD's null mr (ibv_alloc_null_mr on rdma) */
};

/* What a hardware virtq is configured with: the fields MODIFY can change. */
struct mlx5_lm_vq_cfg {
	uint64_t desc, used, avail;  /* guest physical (the mkey's address space) */
	uint16_t hw_available_index;
	uint16_t hw_used_index;
	uint8_t type;                /* PRM_VIRTQ_TYPE_* */
	uint8_t version_1;
	uint16_t features;           /* 13-bit queue feature mask */
	uint32_t mkey;
	uint8_t event_mode;          /* PRM_VIRTQ_EVENT_MODE_* */
	uint32_t event_qpn;
	/* Completion moderation (QUEUE_PERIOD): from the hw_* devargs. */
	uint8_t period_mode;
	uint16_t period_us;
	uint16_t max_count;
};

/* Per-queue statistics (rte_vdpa_get_stats), in DPDK vdpa/mlx5's order. */
#define MLX5_LM_NB_STATS 6

struct mlx5_lm_virtq {
	struct mlx5_lm_dev *dev;
	uint16_t index;              /* virtio index: even RX, odd TX */
	/* Hardware objects (created blank at probe when precreate=1). */
	struct devx_obj *obj;
	struct devx_obj *counters;
	struct devx_umem *umem[3];
	void *umem_buf[3];
	uint32_t umem_size[3];
	struct mlx5_lm_eventq eq;
	/*
	 * Umems the device refused to release (a failed UMEM_DEREG), with
	 * their memory: retried at the next re-creation and at removal, the
	 * memory freed only once the device lets go of it.
	 */
	struct {
		struct devx_umem *umem;
		void *buf;
	} orphans[4];
	uint8_t n_orphans;
	uint16_t size;               /* queue_size the object was created with */
	uint8_t hw_state;            /* PRM_VIRTQ_STATE_* as last set or queried */
	uint8_t used;                /* left INIT since creation: needs a reset */
	struct mlx5_lm_vq_cfg cur;   /* what the object holds */
	uint32_t log_mkey;           /* the object's dirty_bitmap_mkey while logging, else 0 */
	uint8_t started;             /* configured for the current DRIVER_OK */
	/*
	 * The ring as the front end described it when the queue was last
	 * configured (vhost's addresses as guest physical, its size and base):
	 * a ring the front end moves while it is disabled (SET_VRING_ADDR,
	 * _NUM or _BASE between its disable and its enable) is configured
	 * again at its enable, never resumed on the ring it left.
	 */
	struct {
		uint64_t desc, avail, used;
		uint16_t size, avail_idx, used_idx;
	} fe;
	/* Guest side (from vhost). */
	uint8_t enabled;             /* guest enabled the ring (set_vring_state) */
	uint8_t configured;          /* part of the running configuration */
	uint8_t stopped_ahead;       /* suspended by a sibling's stop, RDY before (dev->lock) */
	uint8_t ahead_base;          /* queried by a stop ahead: its dev_close hands these over */
	uint16_t ahead_avail, ahead_used;
	int kickfd;
	int callfd;
	uint32_t recoveries;         /* ERR recoveries since DRIVER_OK */
	/*
	 * The counter set lives as long as the device (created with the first
	 * queue object, kept across re-creations and front-end reconnects,
	 * as DPDK vdpa/mlx5 keeps virtq->counters): statistics run until the
	 * device is removed or reset_stats.
	 */
	uint64_t stats_base[MLX5_LM_NB_STATS]; /* counter values at the last reset */
};

#define MLX5_LM_MAX_VIRTQS 256

struct mlx5_lm_mr;
struct mlx5_lm_steer;
struct mlx5_lm_notify;
struct mlx5_lm_uplink;
struct mlx5_lm_conf_job;
struct mlx5_lm_prep_ctl;
struct mlx5_lm_preconf;
struct mlx5_lm_preconf_mem;
struct rte_vdpa_device;

/*
 * The configuration DRIVER_OK asked for (mlx5_lm_conf.c), under dev->lock.
 * busy is set from dev_conf's queueing of the job to its end: everything
 * that must see a configured device waits for it to drop
 * (mlx5_lm_wait_configured).
 */
struct mlx5_lm_conf {
	int busy;
	int ret;                         /* result of the last job (parallel=0 returns it) */
	unsigned int waiters;            /* threads in mlx5_lm_wait_configured (tests) */
	pthread_cond_t done;             /* busy dropped */
};

/*
 * A stopped device's queues put back to blank (mlx5_lm_worker.c), under
 * dev->lock. Deferred mr_gc_ms after the stop, like the registrations,
 * unless the device is needed sooner (a DRIVER_OK, a removal).
 */
struct mlx5_lm_restore {
	int pending;                     /* from the stop until the queues are blank again */
	int swapping;                    /* past the deferral: objects change without dev->lock */
	pthread_cond_t done;             /* pending dropped to 0 */
};

/*
 * The device's own worker thread (mlx5_lm_worker.c) and what it is asked
 * to do: the configuration of a DRIVER_OK, the deferred restore of a stop,
 * the recovery of queues the relay saw go to ERR. lock guards the fields
 * below it and is never held while taking another lock but the pool's (a
 * leaf: mlx5_lm_bg_promote): the relay posts a recovery without waiting for
 * a configuration that holds dev->lock.
 */
struct mlx5_lm_worker {
	pthread_t thread;
	int up;
	int made;                        /* its locks and conditions exist (start to fini) */
	pthread_mutex_t lock;
	pthread_cond_t cv;               /* work posted, hold released, stop (CLOCK_MONOTONIC) */
	struct mlx5_lm_conf_job *conf;   /* the DRIVER_OK to configure */
	struct mlx5_lm_preconf_mem *preconf; /* memory for queues configured ahead: before conf */
	int restore;                     /* a stop's restore to run... */
	int restore_now;                 /* ...at once, not at its deadline */
	double restore_deadline_ms;      /* mlx5_lm_now_ms() clock */
	int restoring;                   /* a restore runs as background work... */
	struct mlx5_lm_bg_work restore_bg; /* ...promoted once needed (mlx5_lm_worker.c) */
	uint8_t recover[MLX5_LM_MAX_VIRTQS]; /* queues to recover */
	int recover_pending;
	int ahead_posted;                /* a sibling's stop: stop ahead... */
	int ahead_vid;                   /* ...if still running for this connection... */
	int ahead_pid;                   /* ...of this front-end process */
	int ahead_armed;                 /* stopped ahead: resumed at ahead_deadline_ms... */
	double ahead_deadline_ms;        /* ...unless its own stop came (mlx5_lm_now_ms clock) */
	int hold;                        /* test seam (mlx5_lm_worker_hold): 0, 1, 2, 3 */
	int stop;
};

/* What rte_pmd_mlx5_lm_get_state() reports: its own lock, so it answers during a configuration. */
struct mlx5_lm_report {
	pthread_mutex_t lock;
	int state;                       /* RTE_PMD_MLX5_LM_STATE_* */
	int last_err;
	char last_err_msg[128];
	uint64_t conf_failures;
};

/* What the driver measured of its last operations (ms), for benchmarks and logs. */
struct mlx5_lm_times {
	double conf_ms, conf_mr_ms, conf_vq_ms;  /* last configuration, dev->lock */
	double close_ms;                 /* last stop, dev->lock */
	uint32_t mem_regions;            /* last configuration's memory table, dev->lock */
	uint64_t mem_bytes;
	uint64_t conf_count;             /* successful configurations since probe (atomic) */
	unsigned int stop_queries_skipped; /* last stop: idle split rings not queried (atomic) */
	uint8_t stop_ahead_used;         /* last stop found its queues stopped ahead (dev->lock) */
	double mr_last_destroy_ms;       /* whoever destroyed a registration last (atomic) */
};

struct mlx5_lm_dev {
	TAILQ_ENTRY(mlx5_lm_dev) next;
	unsigned int refs;               /* mlx5_lm_dev_get references (list lock) */
	char name[64];
	struct rte_device *rte_dev;
	struct rte_vdpa_device *vdpa;
	struct mlx5_lm_devargs args;
	struct devx_ctx *devx;
	struct rte_pmd_mlx5_lm_caps caps;
	/*
	 * The virtio emulation caps' umem parameters as last read, umem 1..3,
	 * a << 32 | b: a queue's umems are sized from them. Current values,
	 * which firmware changes at runtime (the PF's MTU: Linux commit
	 * abb0dcf9938c), so read at probe and again before each batch of
	 * queue creations (mlx5_lm_umem_params_read); caps keeps the probe's.
	 * Stored and loaded atomically: a queue's retry may read them again
	 * while other queues of its batch are being sized.
	 */
	uint64_t umem_param[3];
	struct mlx5_lm_res res;
	struct devx_db *db;
	struct devx_evch *evch;
	struct devx_umem *event_umem;    /* CQ/QP rings and doorbell records of every queue */
	struct devx_uar *event_uar;      /* UAR page of the event CQs (their arm doorbell) */
	uint32_t event_eqn;              /* completion EQ the event CQs report to */
	uint8_t mkey_variant;            /* mkey_7_0 of the next mkey it creates (mkc_init) */
	/* The device refused the dirty bitmap on a RDY queue: SUSPEND or re-create instead. */
	int dirty_log_rdy_refused;
	void *event_buf;
	size_t event_buf_size;
	struct mlx5_lm_steer *steer;
	struct mlx5_lm_notify *notify;
	struct mlx5_lm_uplink *uplink;   /* uplink=<ethdev>, NULL for loopback */
	/*
	 * lock serialises the vhost-facing operations (dev_conf, dev_close,
	 * set_vring_state, background restore) of this device; the fields
	 * below are guarded by it.
	 */
	pthread_mutex_t lock;
	/*
	 * The vhost device (connection) that owns this device, -1 when none:
	 * one front end per device, see mlx5_lm_owner().
	 */
	int vid;
	/*
	 * The last owner's connection while vhost may still call the device for
	 * it, -1 when none: a RESET_OWNER ends the ownership (dev_cleanup) but
	 * not the connection. Removal waits for it (atomic).
	 */
	int held_vid;
	/*
	 * Every vhost device (connection) attached to this device that the
	 * application told of (rte_pmd_mlx5_lm_vhost_vet_register, at its
	 * new_connection), owner or not, until vhost's dev_cleanup for its
	 * close: vhost calls the device for each of them. Removal waits for
	 * all (atomic bits, by vid).
	 */
	uint64_t conns[(RTE_MAX_VHOST_DEVICE + 63) / 64];
	int running;                     /* between dev_conf and dev_close */
	uint64_t features;               /* negotiated */
	uint16_t nr_vq;                  /* virtqs the driver manages (pre-created or not) */
	struct mlx5_lm_virtq vq[MLX5_LM_MAX_VIRTQS];
	struct mlx5_lm_mr *mr;           /* registration the virtqs use */
	struct mlx5_lm_mr *prev_mr;      /* replaced by mr, released once no queue uses it */
	struct mlx5_lm_mr *log_mr;       /* vhost's dirty log, while VHOST_F_LOG_ALL */
	uint64_t log_size;
	uint32_t instance;               /* N of vdpa_mlx5_lmN, for the MAC address */
	struct mlx5_lm_conf conf;        /* dev->lock */
	struct mlx5_lm_restore restore;  /* dev->lock */
	struct mlx5_lm_worker worker;    /* its own lock */
	struct mlx5_lm_report report;    /* its own lock */
	struct mlx5_lm_times times;
	uint8_t stop_handover;           /* the stop hands indices to vhost (0: front end gone) */
	uint8_t stopped_ahead;           /* queues suspended at a sibling's stop (dev->lock) */
	/*
	 * A sibling's stop asked it to stop ahead since its DRIVER_OK: its own
	 * stop is then not the VM's first, and asks nobody. Set by that stop,
	 * cleared at the next DRIVER_OK or undo; read and written atomically.
	 */
	uint8_t asked_ahead;
	/*
	 * sibling_stop: the owner's front-end process (SO_PEERCRED), found at
	 * its DRIVER_OK on vhost's thread; 0 when none. Written under
	 * dev->lock, read atomically by a sibling's stop.
	 */
	int owner_pid;
	struct mlx5_lm_prep_ctl *prep;   /* guest memory prepared ahead (mlx5_lm_prereg.c) */
	/* Queues configured ahead of DRIVER_OK (mlx5_lm_preconf.c), dev->lock. */
	struct mlx5_lm_preconf *preconf;
	uint32_t preconf_seq;
	int removing;                    /* dev->lock: its worker stops, nothing new is started */
};

/*
 * Optional capabilities the driver has fallbacks for (test_caps.c runs each).
 * Resuming a suspended queue needs freeze_to_rdy_supported (PRM state
 * machine); configuring a blank pre-created queue by MODIFY needs the
 * three modify caps (DPDK vdpa/mlx5: mlx5_vdpa_is_modify_virtq_supported);
 * counter sets need VIRTIO_Q_COUNTERS in general_obj_types.
 */
static inline int
mlx5_lm_can_resume(const struct mlx5_lm_dev *dev)
{
	return dev->caps.freeze_to_rdy_supported;
}

static inline int
mlx5_lm_can_modify_blank(const struct mlx5_lm_dev *dev)
{
	return dev->caps.vnet_modify_ext && dev->caps.virtio_net_q_addr_modify &&
	       dev->caps.virtio_q_index_modify;
}

static inline int
mlx5_lm_has_counters(const struct mlx5_lm_dev *dev)
{
	return !!(dev->caps.general_obj_types & PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS);
}

/*
 * Negotiated features a queue cannot be configured from, or NULL. A packed
 * ring exists only in virtio 1.x: RING_PACKED is bit 34, beyond the 32 bits
 * a legacy driver can negotiate, so a front end that acks it without
 * VERSION_1 says it is legacy and modern at once, and the queue would be a
 * packed ring with virtio_version_1_0 = 0, which no virtio driver makes.
 * vhost passes any subset of the offer, consistent or not.
 */
static inline const char *
mlx5_lm_features_refused(uint64_t f)
{
	if ((f & (1ull << VIRTIO_F_RING_PACKED)) && !(f & (1ull << VIRTIO_F_VERSION_1)))
		return "RING_PACKED acked without VERSION_1";
	return NULL;
}

/*
 * Guest memory registrations in flight per device, per worker. A
 * registration is one ioctl that first pins the pages in the host kernel
 * (no command slot: mlx5dv_devx_umem_reg -> ib_umem_get) and then holds a
 * slot for the firmware's page-list upload, then a CREATE_MKEY. With only `workers` (the device's slots) in flight, the
 * slots idle while every registration pins; with twice as many, some pin
 * while the others hold every slot, as long as pinning a chunk takes no
 * longer than its firmware part (the cx6dx model: 1.0 ms against 1.9 ms).
 */
#define MLX5_LM_MR_PIPELINE 2

/* Pool threads a device asks for: enough for its registrations in flight. */
static inline unsigned int
mlx5_lm_pool_threads(const struct mlx5_lm_dev *dev)
{
	return dev->args.workers * MLX5_LM_MR_PIPELINE;
}

/* Monotonic time in milliseconds. */
double mlx5_lm_now_ms(void);
/* The CLOCK_REALTIME instant ms from now, for pthread_cond_timedwait. */
void mlx5_lm_deadline_ts(struct timespec *ts, unsigned int ms);

/* devargs */
#define MLX5_LM_DEFAULT_QUEUE_SIZE 256
#define MLX5_LM_DEFAULT_QUEUE_PAIRS 16
#define MLX5_LM_DEFAULT_WORKERS 16
#define MLX5_LM_DEFAULT_MR_CHUNK_MB 1024
#define MLX5_LM_DEFAULT_MR_GC_MS 100
#define MLX5_LM_DEFAULT_PREREG_MAX_GB 1024
#define MLX5_LM_DEFAULT_PREREG_TTL_MS 1800000
int mlx5_lm_devargs_parse(const char *name, const char *args, struct mlx5_lm_devargs *out,
			  char *err, size_t errlen);

/* caps */
int mlx5_lm_caps_query(struct mlx5_lm_dev *dev);
/*
 * Read the umem parameters again (one QUERY_HCA_CAP of the virtio emulation
 * caps) before creating queues after probe; why goes into the log. 1 when
 * they changed since the last read, 0 when not, < 0 when they could not be
 * read (logged; the last values stay, and the creations tell).
 */
int mlx5_lm_umem_params_read(struct mlx5_lm_dev *dev, const char *why);
/*
 * The same once for a batch of creations made one queue at a time: read
 * when *done is 0, which it then sets. A batch starts with *done = 0.
 */
void mlx5_lm_umem_params_once(struct mlx5_lm_dev *dev, int *done, const char *why);

/* device-level resources */
int mlx5_lm_res_create(struct mlx5_lm_dev *dev);
void mlx5_lm_res_destroy(struct mlx5_lm_dev *dev);

/* virtq (mlx5_lm_virtq.c) */
int mlx5_lm_virtq_create(struct mlx5_lm_virtq *vq, uint16_t size,
			 const struct mlx5_lm_vq_cfg *cfg, int ready);
void mlx5_lm_virtq_destroy(struct mlx5_lm_virtq *vq);
/* Retry releasing orphaned umems; with closed set (device closed) just free their memory. */
void mlx5_lm_virtq_orphans_release(struct mlx5_lm_virtq *vq, int closed);
/* One MODIFY carrying the fields of cfg that differ, plus STATE=RDY when ready. */
int mlx5_lm_virtq_modify(struct mlx5_lm_virtq *vq, const struct mlx5_lm_vq_cfg *cfg, int ready);
int mlx5_lm_virtq_set_state(struct mlx5_lm_virtq *vq, uint8_t state);
/*
 * The one way a queue is re-created (another size, ERR, a restore): the
 * object destroyed (-EBUSY when the device keeps it), a new one created
 * blank and, with cfg, configured from it (made RDY with ready), by one
 * MODIFY or, on a device that cannot MODIFY a blank queue, created whole.
 * RX queues: the caller keeps the RQT off it (mlx5_lm_steer_detach).
 */
int mlx5_lm_virtq_recreate(struct mlx5_lm_virtq *vq, uint16_t size,
			   const struct mlx5_lm_vq_cfg *cfg, int ready);
/* QUERY: state, error_type and the hardware indices. */
int mlx5_lm_virtq_query(struct mlx5_lm_virtq *vq, uint8_t *state, uint8_t *error_type,
			uint16_t *avail, uint16_t *used);
/*
 * The available index a suspended (or ERR) queue restarts from, wherever
 * it restarts (vhost's base, a re-created object): see mlx5_lm_virtq.c.
 */
uint16_t mlx5_lm_virtq_restart_avail(const struct mlx5_lm_virtq *vq, uint8_t state,
				     uint16_t avail, uint16_t used);
/* received, completed, bad descriptor, exceed max chain, invalid buffer, error CQEs. */
int mlx5_lm_virtq_counters(struct mlx5_lm_virtq *vq, uint64_t vals[MLX5_LM_NB_STATS]);
/* The counter sets of every queue (they outlive queue objects): at device removal. */
void mlx5_lm_virtq_counters_release(struct mlx5_lm_dev *dev);
int mlx5_lm_virtq_set_dirty_log(struct mlx5_lm_virtq *vq, uint32_t mkey, uint64_t addr,
				uint32_t size, int enable);
/*
 * 1 when the queue's object names key (virtio_q_mkey or dirty_bitmap_mkey):
 * the registration behind it must outlive the object (mlx5_lm_mr.c).
 */
int mlx5_lm_virtq_names_mkey(const struct mlx5_lm_virtq *vq, uint32_t key);
/*
 * No freeze_to_rdy: re-create a queue from the indices it reached (suspended
 * first if RDY), with the dirty log if log_enable, RDY if ready. RX queues:
 * the caller keeps the RQT off it.
 */
int mlx5_lm_virtq_recreate_suspended(struct mlx5_lm_virtq *vq, uint32_t log_mkey,
				     uint32_t log_size, int log_enable, int ready);
/*
 * Ring queue `index`'s doorbell: the device reads that queue's avail
 * index (every queue shares one doorbell; the value names the queue).
 */
void mlx5_lm_vq_doorbell(struct mlx5_lm_dev *dev, uint16_t index);

/* steering (mlx5_lm_steer.c) */
int mlx5_lm_steer_create(struct mlx5_lm_dev *dev);
void mlx5_lm_steer_destroy(struct mlx5_lm_dev *dev);
/* Point the RQT at the RX virtqs that are ready (enabled and RDY). */
int mlx5_lm_steer_update(struct mlx5_lm_dev *dev);
/*
 * Stop the RQT naming virtqs gone[0..n-1] (about to be destroyed), in one
 * MODIFY; -EBUSY if it names no other and no other RX queue exists.
 */
int mlx5_lm_steer_forget(struct mlx5_lm_dev *dev, const uint32_t *gone, uint32_t n);

/*
 * Feature bits go by their names in the installed headers, which
 * rte_vhost.h includes: virtio's (linux/virtio_config.h, virtio_ring.h,
 * virtio_net.h), vhost's (linux/vhost.h: VHOST_F_LOG_ALL) and
 * vhost-user's (rte_vhost.h: VHOST_USER_F_*, VHOST_USER_PROTOCOL_F_*).
 */

struct rte_vdpa_device;
struct mlx5_lm_dev *mlx5_lm_dev_by_vdpa(struct rte_vdpa_device *vdpa);
/*
 * The probed device of that vdev name with a reference taken, NULL when
 * none: the public calls that name a device use it until they drop the
 * reference (mlx5_lm_dev_put); its removal waits for that.
 */
struct mlx5_lm_dev *mlx5_lm_dev_get(const char *name);
void mlx5_lm_dev_put(struct mlx5_lm_dev *dev);
/* The device behind a vhost device id, NULL when none. */
struct mlx5_lm_dev *mlx5_lm_dev_by_vid(int vid);
/*
 * The connection vid, attached to one of our devices, counts until it
 * closes (mlx5_lm_conn_closed): that device is not removed meanwhile.
 * 0, or -ENODEV when vid's vDPA device is none of ours.
 */
int mlx5_lm_conn_opened(int vid);
void mlx5_lm_conn_closed(struct mlx5_lm_dev *dev, int vid);

/*
 * One front end per device: the first vhost device (vid) that
 * reaches the driver through a per-connection callback owns the device
 * until vhost cleans that connection up (dev_cleanup); every callback of
 * another vid is refused (-EBUSY, logged) and touches nothing. Under
 * dev->lock. 0 when vid owns the device (claimed now if it had no owner).
 * (mlx5_lm_queues.c)
 */
int mlx5_lm_owner(struct mlx5_lm_dev *dev, int vid, const char *what);

/* The vDPA ops that change queue state: DRIVER_OK, stop, ring enable. */
int mlx5_lm_dev_conf(int vid);                       /* mlx5_lm_conf.c */
/* vhost's thread, SET_MEM_TABLE or SET_VRING_KICK of ring handled (the vetting's post-handler). */
void mlx5_lm_preconf_table(int vid);                 /* mlx5_lm_preconf.c */
void mlx5_lm_preconf_ring(int vid, uint16_t ring);    /* mlx5_lm_preconf.c */
/*
 * The vetting, around vhost's handling of a GET_VRING_BASE of vhost device
 * vid (1 before, 0 after): a dev_close meanwhile is a front end's stop, not
 * a memory-table change, a reset or a teardown (mlx5_lm_stop.c).
 */
void mlx5_lm_stop_message(int vid, int in);
/* The vetting, before vhost handles a RESET_OWNER of vhost device vid (mlx5_lm_ops.c). */
void mlx5_lm_reset_message(int vid);
int mlx5_lm_dev_close(int vid);                      /* mlx5_lm_stop.c */
/* dev->lock held: stop a device still running for a front end that is gone (dev_cleanup). */
void mlx5_lm_stop_orphaned(struct mlx5_lm_dev *dev);
/*
 * sibling_stop (mlx5_lm_stop.c): a device stopped ahead whose own stop
 * does not come within this is resumed.
 */
#define MLX5_LM_STOP_AHEAD_MS 500
/* On the device's worker: stop ahead if still running for vid of process pid; 1 when it did. */
int mlx5_lm_stop_ahead(struct mlx5_lm_dev *dev, int vid, int pid);
/* dev->lock held: queues stopped ahead run again (why: logged). */
void mlx5_lm_stop_ahead_undo(struct mlx5_lm_dev *dev, const char *why);
/* Post a stop ahead to the device's worker (never waits for dev->lock). */
void mlx5_lm_worker_stop_ahead(struct mlx5_lm_dev *dev, int vid, int pid);
/* fn on every probed device, under the device list's lock (fn takes no device lock). */
void mlx5_lm_dev_foreach(void (*fn)(struct mlx5_lm_dev *dev, void *arg), void *arg);
int mlx5_lm_set_vring_state(int vid, int vring, int state); /* mlx5_lm_rings.c */
/*
 * dev->lock held: a suspended queue of a running device runs again (RDY, or
 * without freeze_to_rdy_supported re-created from the indices it reached,
 * the umem parameters read first once for the caller's batch: umem_read).
 */
int mlx5_lm_resume_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int *umem_read);

/* The device's worker (mlx5_lm_worker.c): started at probe, stopped (joined) at removal. */
int mlx5_lm_worker_start(struct mlx5_lm_dev *dev);
/* Removal: the configuration and restore in flight finish first. */
void mlx5_lm_worker_stop(struct mlx5_lm_dev *dev);
/* Its locks and conditions, once nothing can post to it (the notification thread gone). */
void mlx5_lm_worker_fini(struct mlx5_lm_dev *dev);
/* Under dev->lock: wait until no configuration is queued or running. */
void mlx5_lm_wait_configured(struct mlx5_lm_dev *dev);
/* From the relay: queue index went to ERR (OBJECT_CHANGE); never waits for dev->lock. */
void mlx5_lm_worker_recover(struct mlx5_lm_dev *dev, uint16_t index);
/* What rte_pmd_mlx5_lm_get_state() reports from now on (mlx5_lm_caps.c). */
void mlx5_lm_set_state(struct mlx5_lm_dev *dev, int state, int err, const char *why);

/* vhost glue (mlx5_lm_ops.c) */
int mlx5_lm_vdpa_register(struct mlx5_lm_dev *dev);
void mlx5_lm_vdpa_unregister(struct mlx5_lm_dev *dev);
int mlx5_lm_virtqs_precreate(struct mlx5_lm_dev *dev);
void mlx5_lm_virtqs_destroy(struct mlx5_lm_dev *dev);

/* notifications (mlx5_lm_notify.c): kicks to doorbells, completions to callfds, errors */
int mlx5_lm_notify_start(struct mlx5_lm_dev *dev);
void mlx5_lm_notify_stop(struct mlx5_lm_dev *dev);
/* On vhost's thread: the ring's relay on our duplicates of vq->kickfd and vq->callfd. */
int mlx5_lm_notify_add_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq);
/*
 * Our duplicates of vq->kickfd and vq->callfd (-1 where it has none), on
 * vhost's thread only: elsewhere vhost may have closed the numbers and the
 * process reused them. 0, or -EMFILE with neither kept (logged).
 */
int mlx5_lm_notify_dup_ring(struct mlx5_lm_virtq *vq, int *kick, int *callfd);
/* On any thread: the ring's relay on duplicates made on vhost's thread (taken, even on failure). */
int mlx5_lm_notify_take_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int kick,
			     int callfd);
void mlx5_lm_notify_del_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq);
/* Every configured ring's relay off, the thread woken once for all their fds. */
void mlx5_lm_notify_del_configured(struct mlx5_lm_dev *dev);

/* uplink=<ethdev> (mlx5_lm_uplink.c) */
int mlx5_lm_uplink_start(struct mlx5_lm_dev *dev);
void mlx5_lm_uplink_stop(struct mlx5_lm_dev *dev);

/*
 * dirty-page logging (mlx5_lm_lm.c), dev->lock held. vhost's log area is
 * vhost's state: read it (mlx5_lm_log_area) on vhost's thread, in the
 * callback that asks for logging, never from the device's worker (vhost
 * may unmap it for a new SET_LOG_BASE meanwhile, with no callback).
 */
int mlx5_lm_log_area(struct mlx5_lm_dev *dev, int vid, uint64_t *base, uint64_t *size);
/* Every configured queue (RDY or not yet) logs its writes into [base, base + size). */
int mlx5_lm_log_start(struct mlx5_lm_dev *dev, uint64_t base, uint64_t size);
void mlx5_lm_log_stop(struct mlx5_lm_dev *dev);
/*
 * Before vhost handles a SET_LOG_BASE of vhost device vid (the vetting,
 * on vhost's thread): a device that logs moves to the new log (fd, size)
 * now. 0, or a negative errno (the message must be refused).
 */
int mlx5_lm_log_rebase(int vid, int fd, uint64_t size);
/* The process at the other end of vhost device vid's connection, or a negative errno. */
int mlx5_lm_vhost_peer_pid(int vid);

/* DRV_LOG for a queue: names the device and the queue. */
#define VQ_LOG(level, vq, fmt, ...) \
	DRV_LOG(level, (vq)->dev, "queue %u (%s %u): " fmt, (vq)->index, \
		(vq)->index & 1 ? "tx" : "rx", (vq)->index / 2, ##__VA_ARGS__)

#endif /* MLX5_LM_H */
