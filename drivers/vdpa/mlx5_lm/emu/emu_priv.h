/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal state of the emulated ConnectX: the device, its object table,
 * one struct per object kind, the cost model and the command context that
 * the per-family handlers (emu_net.c, emu_virtq.c, emu_mkey.c) share.
 *
 * Locking: dev->lock guards the object table and the state of every
 * object of the device (fields marked "dev->lock" below). It is never
 * held while a command sleeps for its modelled time, so that commands
 * issued from many threads overlap as they do on the firmware's command
 * interface. The cost-model slots have their own lock (slot_lock); event
 * channels have theirs (ch->lock), always taken inside dev->lock.
 */
#ifndef MLX5_LM_EMU_PRIV_H
#define MLX5_LM_EMU_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "prm.h"
#include "emu.h"

/* ---- Cost model ---------------------------------------------------------- */
/* Cost-model entries the emulator charges (names as in the profile JSON). */
#define EMU_COST_LIST(X) \
	X(QUERY_HCA_CAP) X(QUERY_SPECIAL_CONTEXTS) \
	X(ALLOC_PD) X(DEALLOC_PD) X(ALLOC_TRANSPORT_DOMAIN) X(DEALLOC_TRANSPORT_DOMAIN) \
	X(CREATE_TIS) X(DESTROY_TIS) X(CREATE_RQT) X(MODIFY_RQT) X(DESTROY_RQT) \
	X(CREATE_TIR) X(DESTROY_TIR) X(CREATE_FLOW_TABLE) X(CREATE_FLOW_GROUP) \
	X(SET_FLOW_TABLE_ENTRY) X(DESTROY_FLOW_OBJECT) X(CREATE_CQ) X(DESTROY_CQ) \
	X(CREATE_QP) X(QP_TRANSITION) X(DESTROY_QP) X(UMEM_REG_SMALL) X(UMEM_DEREG_SMALL) \
	X(CREATE_VIRTQ_COUNTERS) X(QUERY_VIRTQ_COUNTERS) X(DESTROY_VIRTQ_COUNTERS) \
	X(CREATE_VIRTQ) X(MODIFY_VIRTQ_FIELDS) X(MODIFY_VIRTQ_STATE_RDY) \
	X(MODIFY_VIRTQ_STATE_SUSPEND) X(QUERY_VIRTQ) X(DESTROY_VIRTQ) \
	X(GUEST_UMEM_REG) X(GUEST_UMEM_PIN) X(GUEST_UMEM_DEREG) \
	X(CREATE_MKEY_DIRECT) X(CREATE_MKEY_DIRECT_MTT_LIST) X(CREATE_MKEY_INDIRECT) \
	X(DESTROY_MKEY) X(DESTROY_MKEY_DIRECT_MTT_LIST)

enum emu_cost_id {
	EMU_COST_NONE = -1,
#define EMU_COST_ENUM(n) EMU_COST_##n,
	EMU_COST_LIST(EMU_COST_ENUM)
#undef EMU_COST_ENUM
	EMU_COST_MAX
};

struct emu_cost_entry {
	char *name;
	double base_us;
	double per_gib_us;
	double per_entry_us;
};

/*
 * Capabilities the device reports, which a profile's "caps" object may
 * override (defaults: the EMU_CAP_* constants of a CX6 Dx below). The
 * emulator enforces what it reports: a command using a capability the
 * device does not announce is refused as firmware refuses it.
 */
struct emu_caps {
	uint8_t virtio_version_1_0;       /* virtio emulation caps: VERSION_1 queues */
	uint8_t freeze_to_rdy_supported;
	uint8_t vnet_modify_ext;
	uint8_t virtio_net_q_addr_modify;
	uint8_t virtio_q_index_modify;
	uint64_t general_obj_types;
	uint16_t device_features_bits_mask;
	uint8_t event_mode;
	uint64_t doorbell_bar_offset;
	uint32_t max_num_virtio_queues;
	uint8_t event_cap;                /* cmd_hca_cap.event_cap */
	uint8_t roce;                     /* cmd_hca_cap.roce: the RoCE caps exist */
	uint8_t cq_oi;                    /* cmd_hca_cap.cq_oi */
	uint8_t qp_ts_format;             /* roce_cap.qp_ts_format (prm_ts_format_cap) */
	uint8_t sq_ts_format;             /* cmd_hca_cap.sq_ts_format, also rq_ts_format */
	uint32_t comp_eqn_base;           /* number of the first completion EQ (emu_uar.c) */
	uint64_t user_affiliated_events;  /* device_event_cap, events 0..63 */
	/*
	 * Not a PRM capability: whether the firmware takes the dirty-bitmap
	 * fields on a RDY queue, as the vendor's DPDK vdpa/mlx5 relies on
	 * (mlx5_vdpa_lm.c). 0 models firmware that takes only STATE while RDY
	 * (the strict reading of Linux mlx5_vnet's INIT/SUSPEND rule), for
	 * the driver's fallback (tests/profiles/caps-no-rdy-dirty-log.json).
	 */
	uint8_t dirty_bitmap_in_rdy;
	/*
	 * Not a PRM capability either: whether the dirty bitmap also records
	 * the device's writes to the ring itself (split: used elements and
	 * used->idx; packed: the used descriptors' id, len and flags), or only
	 * the buffers it fills. No public text says; the vendor's DPDK
	 * vdpa/mlx5 marks the used ring in vhost's log itself after each
	 * queue's stop (mlx5_vdpa_lm.c, rte_vhost_log_used_vring), as if the
	 * hardware did not. 0 (the default, the strict reading): a driver
	 * must mark the rings it hands over, or the destination gets stale
	 * ones.
	 */
	uint8_t dirty_bitmap_logs_rings;
	/*
	 * Not a PRM capability: how many available chains a RDY split RX
	 * queue fetches ahead of the frames that will fill them (0..64,
	 * default 0: a chain is read only when a frame waits). Linux
	 * mlx5_vnet (mlx5_vdpa_get_vq_state) reports hw_used_index as the
	 * available index because the firmware's hw_available_index may
	 * count chains fetched and never used: with this set, QUERY after
	 * SUSPEND shows hw_available_index > hw_used_index by the chains
	 * fetched ahead, and a driver that hands hw_available_index over
	 * loses those guest buffers (tests/profiles/rx-prefetch.json).
	 */
	uint8_t rx_prefetch_chains;
	/*
	 * The umem parameters at power-up (virtio emulation caps); the device
	 * keeps the current ones (emu_dev umem_a/umem_b), which change at runtime.
	 */
	uint32_t umem_1_buffer_param_a;
	uint32_t umem_1_buffer_param_b;
	uint32_t umem_2_buffer_param_a;
	uint32_t umem_2_buffer_param_b;
	uint32_t umem_3_buffer_param_a;
	uint32_t umem_3_buffer_param_b;
};

struct emu_profile {
	char *name;
	struct emu_caps caps;
	unsigned int cmd_slots;
	unsigned int host_pin_parallel;
	/*
	 * The page size of the host the device is attached to (PAGE_SIZE of
	 * its kernel): what ib_umem_get pins and the smallest page the kernel
	 * describes a umem or an MR with. "host_page_size" in the profile
	 * (64 KiB models an aarch64 BlueField/Grace host); default: this
	 * machine's page size.
	 */
	uint64_t host_page_size;
	struct emu_cost_entry *entries;   /* every entry of the JSON */
	size_t n_entries;
	/* Entries the emulator charges, by id; NULL when absent (cost 0). */
	const struct emu_cost_entry *by_id[EMU_COST_MAX];
	bool zero_cost;                   /* every entry costs 0: skip the slots */
};

double emu_cost_us(const struct emu_profile *p, enum emu_cost_id id, double gib,
		   double entries);
double emu_cost_base_us(const struct emu_profile *p, enum emu_cost_id id);
uint64_t emu_now_ns(void);
/*
 * Sleep until an absolute CLOCK_MONOTONIC time (no busy wait), with the
 * calling thread's timer slack at its minimum. Returns the time woken.
 */
uint64_t emu_sleep_until_ns(uint64_t deadline_ns);
/*
 * A command holding a slot since t0_ns (emu_now_ns()) for its modelled
 * model_us: sleep to t0 + model_us and account the charge and its
 * overshoot (actual - modelled) to dev. The caller holds the slot.
 */
void emu_slot_sleep(struct emu_dev *dev, uint64_t t0_ns, double model_us);
/* One of the device's cmd_slots firmware command slots. */
void emu_slot_get(struct emu_dev *dev);
void emu_slot_put(struct emu_dev *dev);
/* Threads waiting in emu_slot_get for a slot of dev (tests). */
unsigned int emu_slot_waiting(struct emu_dev *dev);
/*
 * Hold a command slot for us microseconds: the modelled time of a command
 * that needs no mailbox work (umem registration, a rejected envelope).
 */
void emu_slot_hold(struct emu_dev *dev, double us);
/*
 * One of host_pin_parallel host CPU tokens shared by the whole process, or
 * by every process of the host named by MLX5_LM_EMU_HOST (emu.h).
 */
void emu_pin_get(const struct emu_profile *p);
/* The same without waiting: true when a token was taken. */
bool emu_pin_tryget(const struct emu_profile *p);
void emu_pin_put(void);
/* Threads of this process waiting in emu_pin_get (its own tokens only). */
unsigned int emu_pin_waiting(void);
/* Hold a pin token for us microseconds (host pinning for dev), accounted to dev. */
void emu_pin_hold(struct emu_dev *dev, double us);

/* ---- Objects ------------------------------------------------------------- */
enum emu_kind {
	EMU_KIND_PD,
	EMU_KIND_TD,
	EMU_KIND_TIS,
	EMU_KIND_RQT,
	EMU_KIND_TIR,
	EMU_KIND_FT,
	EMU_KIND_FG,
	EMU_KIND_FTE,
	EMU_KIND_CQ,
	EMU_KIND_QP,
	EMU_KIND_MKEY,
	EMU_KIND_UMEM,
	EMU_KIND_VIRTQ,
	EMU_KIND_VQ_COUNTERS,
	EMU_KIND_UAR,
	EMU_KIND_ROOT_RULE,          /* a rule the kernel put in the NIC RX root (emu_root.c) */
	EMU_KIND_MAX
};

/*
 * Id spaces: classic objects number per kind (24 bits); the general
 * objects (VIRTIO_NET_Q, VIRTIO_Q_COUNTERS) share one 32-bit obj_id space.
 */
enum emu_id_space {
	EMU_IDS_CLASSIC_FIRST = 0,  /* one per classic kind, indexed by kind */
	EMU_IDS_GENERAL = EMU_KIND_MAX,
	EMU_IDS_MAX
};

/*
 * The null mkey (QUERY_SPECIAL_CONTEXTS) is not an object: it owns mkey
 * index 1 so that no real mkey gets its key, and maps nothing.
 */
#define EMU_NULL_MKEY 0x100u
#define EMU_MKEY_FIRST_INDEX 2u

/* Header embedded first in every object; all fields guarded by dev->lock. */
struct emu_obj {
	enum emu_kind kind;
	uint32_t id;                 /* table key; mkey: its 24-bit index */
	uint32_t refs;               /* references held by other objects */
	struct emu_obj **held;       /* objects this one references */
	unsigned int nheld;
	unsigned int held_cap;
	struct emu_obj *hnext;       /* hash chain */
	struct emu_obj *prev, *next; /* list of every object (leak report) */
	struct emu_obj *kprev, *knext; /* list of the objects of its kind */
};

/* Every object of kind k of dev, in creation order (dev->lock held). */
#define EMU_FOR_KIND(o, dev, k) \
	for ((o) = (dev)->of_kind[k].knext; (o) != &(dev)->of_kind[k]; (o) = (o)->knext)

struct emu_umem {
	struct emu_obj obj;
	uint8_t *addr;               /* where the device reaches the memory */
	uint8_t *va;                 /* the registrant's address of it */
	size_t size;
	uint32_t access;
	/*
	 * Page size the kernel described the umem with (devx_umem_reg_cmd_alloc:
	 * devx_umem_find_best_pgsize), and whether the registrant passed a
	 * pgsz_bitmap: without one it promised umem_offset 0 for every object
	 * built on the umem.
	 */
	uint64_t page_size;
	bool pgsz_bitmap;
	/*
	 * The device's own mapping of shared memory (see emu_umem_pin): what
	 * the registering process maps or unmaps afterwards does not move it,
	 * as pinned pages do not move under a real device. NULL when the
	 * memory is private and addr is the caller's pointer.
	 */
	void *pin_base;
	size_t pin_len;
};

struct emu_klm {
	uint64_t start;              /* offset of this entry from mkey start_addr */
	uint64_t len;
	uint64_t addr;               /* address in the target mkey's space */
	struct emu_mkey *target;     /* NULL: the null mkey (a hole), or dead */
	bool dead;                   /* its target was destroyed: a bad translation */
};

enum emu_mkey_type {
	EMU_MKEY_UMEM,               /* direct, umem-backed MTT */
	EMU_MKEY_MTT_LIST,           /* direct, a kernel MR's page list (never DevX) */
	EMU_MKEY_KLM,                /* indirect */
	EMU_MKEY_KSM,                /* indirect, fixed entry size */
};

/* An mkey's access rights (mkc lr, lw, rr, rw). */
#define EMU_MKEY_ACCESS_LR 1u
#define EMU_MKEY_ACCESS_LW 2u
#define EMU_MKEY_ACCESS_RR 4u
#define EMU_MKEY_ACCESS_RW 8u

struct emu_mkey {
	struct emu_obj obj;
	uint32_t key;                /* index << 8 | mkey_7_0 */
	enum emu_mkey_type type;
	uint32_t pd;
	uint64_t start_addr;
	uint64_t len;
	uint8_t log_page_size;
	uint8_t access;              /* EMU_MKEY_ACCESS_*: mkc lr/lw/rr/rw, an MR's ibv access */
	/* EMU_MKEY_UMEM */
	struct emu_umem *umem;
	uint64_t umem_offset;
	/* EMU_MKEY_MTT_LIST: pages of 1 << log_page_size */
	uint32_t n_pages;
	/*
	 * An MR the kernel registered (ibv_reg_mr: emu_kernel_reg_mr): its
	 * pinned pages (a kernel umem, no DevX object) and the registrant's
	 * address of the first byte, for the caller's view of a translation.
	 */
	struct emu_umem *mr_pin;
	uint8_t *mr_va;
	uint64_t pages_base;         /* MR: its page list is pages_base + k << log_page_size */
	/* EMU_MKEY_KLM / KSM, sorted by start (KSM: entry i at i << log_page_size) */
	struct emu_klm *klm;
	uint32_t n_klm;
};

struct emu_umem_ref {
	uint32_t id;
	uint32_t size;
	uint64_t offset;
	struct emu_umem *umem;
};

/*
 * One virtio_net_q object with every decoded field. The data path
 * (emu_datapath.c) reads the rings through mkey and advances
 * hw_available_index / hw_used_index and the counters, all under dev->lock.
 */
struct emu_virtq {
	struct emu_obj obj;
	/* virtio_net_q part */
	uint8_t state;               /* PRM_VIRTQ_STATE_* */
	uint8_t error_type;
	uint16_t vhca_id;
	uint16_t queue_features;     /* 13-bit mask: 12_3 << 3 | 2_0 */
	uint8_t dirty_bitmap_dump_enable;
	uint8_t vhost_log_page;
	uint32_t tisn_or_qpn;
	uint32_t dirty_bitmap_mkey;
	uint32_t dirty_bitmap_size;
	uint64_t dirty_bitmap_addr;
	/* Device writes the bitmap could not mark (emu_datapath.c dp_log); lock */
	uint64_t log_misses;
	bool log_warned;             /* one warning per queue, not per page */
	uint16_t hw_available_index;
	uint16_t hw_used_index;
	/* virtio_q context */
	uint8_t q_type;
	uint8_t event_mode;
	uint16_t queue_index;
	uint8_t full_emulation;
	uint8_t virtio_version_1_0;
	uint8_t offload_type;
	uint32_t event_qpn_or_msix;
	uint16_t doorbell_stride_index;
	uint16_t queue_size;
	uint32_t device_emulation_id;
	uint64_t desc_addr;
	uint64_t used_addr;
	uint64_t available_addr;
	uint32_t virtio_q_mkey;
	uint16_t max_tunnel_desc;
	struct emu_umem_ref umem[3];
	uint32_t counter_set_id;
	uint32_t pd;
	uint8_t queue_period_mode;
	uint16_t queue_period_us;
	uint16_t queue_max_count;
	uint32_t desc_group_mkey;
	/* Resolved references (also in obj.held). */
	struct emu_mkey *mkey;
	struct emu_obj *pd_obj;
	struct emu_obj *counters;
	struct emu_obj *tis;
	struct emu_obj *event_qp;
	/* Doorbells received while RDY (the data path's work trigger). */
	uint64_t doorbells;
	/* Data path state (pending flag, RX backlog); NULL until first used. */
	struct emu_dp_vq *dp;
};

struct emu_vq_counters {
	struct emu_obj obj;
	uint64_t received_desc;
	uint64_t completed_desc;
	uint32_t error_cqes;
	uint32_t bad_desc_errors;
	uint32_t exceed_max_chain;
	uint32_t invalid_buffer;
};

/*
 * Net, CQ and QP objects: a number, references (obj.held: RQT entries in
 * list order, TIR's TD and RQT, FTE's table, group and destinations, CQ's
 * and QP's umems, QP's PD and CQs) and a little decoded state.
 */
struct emu_net_obj {
	struct emu_obj obj;
	uint32_t state;              /* QP: PRM_QPC_STATE_* */
	uint32_t table_id;           /* FG, FTE: owning table */
	uint32_t table_type;         /* FT */
	uint32_t flow_index;         /* FTE; FG: first index */
	uint32_t flow_end;           /* FG: last index */
	uint32_t group_id;           /* FTE */
	uint32_t size;               /* RQT: entries; FT: log_size; CQ: log_cq_size */
	uint32_t max;                /* RQT: rqt_max_size at its CREATE (its actual size if 0) */
	uint32_t td;                 /* TIS, TIR: transport domain */
	uint32_t rqtn;               /* TIR: indirect table */
	uint32_t cqn_snd, cqn_rcv;   /* QP */
	uint32_t remote_qpn;         /* QP (INIT2RTR) */
	/* What the data path's steering needs (emu_wire.c). */
	uint32_t level;              /* FT: flow_table_context.level */
	uint32_t action;             /* FTE: flow_context.action */
	uint32_t disp_type;          /* TIR */
	uint8_t match_enable;        /* FG: match_criteria_enable */
	/* FG: outer-header criteria; FTE: outer-header values (fte_match_set_lyr_2_4). */
	uint8_t match[64];
	uint8_t hash_fn;             /* TIR: rx_hash_fn */
	uint8_t hash_sel[4];         /* TIR: rx_hash_field_selector_outer (PRM bytes) */
	uint8_t hash_key[40];        /* TIR: rx_hash_toeplitz_key */
	/* CQ: UAR page and completion EQ it was created with, and the last arm request. */
	uint32_t uar_page;
	uint32_t eqn;
	bool arm_valid;              /* an arm doorbell was rung since the last event */
	uint8_t arm_cmd;             /* CQ doorbell cmd: 0 next completion, 1 solicited */
	uint8_t arm_sn;              /* the arm sequence number of that request */
	uint32_t arm_ci;             /* the consumer index the request carried */
	uint32_t arm_dbrec_seen;     /* dbrec arm dword at the last arm (merged doorbells) */
	bool arm_rung;               /* a CQ doorbell reached it since creation */
	/*
	 * The last arm was taken from the record (a merged UAR write): its
	 * own UAR write, seen later with the same dword, is that same arm.
	 */
	bool arm_from_record;
	uint32_t arm_record;         /* the dword that arm was taken with */
	/*
	 * CQ: where completions go (emu_net_cq_complete). cqes / dbrec are
	 * the device's view of the umems named at creation.
	 */
	uint8_t *cqes;               /* CQE ring, 1 << size entries of cqe_size bytes */
	uint32_t cqe_size;           /* 64 or 128 */
	bool cc;                     /* collapsed: every CQE at index 0 */
	bool oi;                     /* overrun ignore */
	bool cq_error;               /* overran: no CQE written any more */
	uint32_t pc;                 /* producer counter: CQEs written */
	uint32_t wait_qpn;           /* a QP's message waiting for the arm (RNR), 0 none */
	/* CQ and QP: doorbell record (cq_dbrec / qp_dbrec), NULL when none. */
	uint8_t *dbrec;
	/* QP: event-path state (INIT2RTR, RTR2RTS, receive side). */
	bool fl;                     /* primary_address_path.fl (force loopback) */
	uint8_t retry_count, rnr_retry, ack_timeout;
	uint8_t rnr_left;            /* RNR retries left for the message in flight */
	bool rnr_pending;            /* a message waits for a receive credit */
	uint32_t rq_type;
	uint32_t log_rq_size;
	uint32_t rq_consumed;        /* receive WQEs consumed (hw receive counter) */
};

/* A UAR page (emu_uar.c): a doorbell page of one device context. */
struct emu_uar {
	struct emu_obj obj;          /* obj.id = page index */
};

/*
 * A rule in the NIC RX root flow table. The root belongs to the kernel:
 * user space adds rules to it through mlx5dv_create_flow (mlx5_ib's flow
 * steering), never by DevX commands. held[0] is the destination (a TIR
 * or a NIC RX flow table).
 */
struct emu_root_rule {
	struct emu_obj obj;
	uint16_t priority;           /* lower first (kernel: one table per priority) */
	uint8_t match_enable;        /* match_criteria_enable */
	uint8_t mask[64];            /* outer headers (fte_match_set_lyr_2_4) */
	uint8_t value[64];
};

/* ---- Events -------------------------------------------------------------- */
struct emu_ev_node {
	struct emu_event ev;
	struct emu_ev_node *next;
};

struct emu_evch {
	struct emu_dev *dev;         /* NULL once the device is gone */
	int fd;                      /* eventfd, EFD_SEMAPHORE: one count per event */
	pthread_mutex_t lock;        /* guards head, tail and the rest below */
	struct emu_ev_node *head, *tail;
	unsigned int n;              /* events queued */
	unsigned int depth;          /* at most this many queued, 0: unbounded (emu_evch_hold) */
	unsigned int unsignalled;    /* queued while held, not yet counted on fd */
	bool held;                   /* the reader sees nothing (emu_evch_hold) */
	bool overflow;               /* an event was dropped: -EOVERFLOW at the next read */
	unsigned long dropped;       /* events dropped, ever */
	struct emu_evch *next;       /* dev->evchs, guarded by dev->lock */
};

struct emu_sub {
	struct emu_evch *ch;
	enum emu_kind kind;
	uint32_t id;
	uint16_t type;
	uint64_t cookie;
	uint64_t seq;      /* unique per subscription: what emu_event.sub names */
	struct emu_sub *next;
};

/*
 * Queue an event to every subscriber of (kind, id, type), as an EQE:
 * completions, CQ and QP errors name id in their data as the PRM places
 * it; other events carry data (PRM_SIZE(eqe_comp) bytes: the EQE's event
 * data, e.g. affiliated_event_header) as given. dev->lock held.
 */
void emu_event_post(struct emu_dev *dev, enum emu_kind kind, uint32_t id, uint16_t type,
		    const uint8_t *data);
/* Drop every subscription to an object (destroyed). dev->lock held. */
void emu_event_drop_obj(struct emu_dev *dev, enum emu_kind kind, uint32_t id);
/* Detach every channel from a device being destroyed. */
void emu_event_dev_gone(struct emu_dev *dev);

/* ---- Faults -------------------------------------------------------------- */
struct emu_fault {
	uint16_t opcode;
	uint16_t obj_type;           /* 0xffff = any */
	unsigned int remaining;      /* fires when it reaches 0 */
	uint8_t status;
	uint32_t syndrome;
	struct emu_fault *next;
};

/* Count a command against the armed faults; the status of one that fires. */
int emu_fault_check(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, bool general,
		    uint32_t *syndrome);

/* ---- Device -------------------------------------------------------------- */
/*
 * Smallest mailboxes the command interface accepts: the 16-byte input
 * header (opcode, uid, op_mod, obj_id) and the 16-byte output header.
 */
#define EMU_MIN_INLEN 16u
#define EMU_MIN_OUTLEN 16u
#define EMU_HASH_BUCKETS 4096u
#define EMU_OPCODE_SLOTS 0x1000u

/*
 * Threads waiting for a command slot or a host pin token, in arrival order
 * (emu_cost.c); guarded by the lock of what they wait for.
 */
struct emu_waiter;
struct emu_waitq {
	struct emu_waiter *head, **tailp;   /* tailp: valid while head is not NULL */
	unsigned int n;
};

struct emu_dev {
	char name[64];
	struct emu_profile *prof;
	/*
	 * The userfaultfd that tells shmem and hugetlb mappings from files with
	 * writeback (emu_umem_write_pin_allowed), the device's for its life:
	 * closing one walks every mapping of the process, 0.1 ms and more per
	 * registration. -1: unavailable.
	 */
	int uffd;

	/* Firmware command slots of the cost model (emu_cost.c). */
	pthread_mutex_t slot_lock;
	unsigned int slots_busy;     /* slot_lock */
	struct emu_waitq slot_q;     /* slot_lock */
	/*
	 * What the cost model charged and what the sleeps really took
	 * (emu_cost.c), summed since the device was created; atomics, read
	 * without any lock while commands run.
	 */
	atomic_ullong cost_cmds;        /* charges that held a command slot */
	atomic_ullong cost_model_ns;    /* their modelled time */
	atomic_ullong cost_actual_ns;   /* the time they held the slot */
	atomic_ullong cost_over_max_ns; /* largest actual - modelled */
	atomic_ullong pin_count;        /* host pinning charges (no slot) */
	atomic_ullong pin_model_ns;
	atomic_ullong pin_actual_ns;

	pthread_mutex_t lock;
	struct emu_obj *hash[EMU_HASH_BUCKETS]; /* lock */
	struct emu_obj all;          /* lock: list head of every object */
	/*
	 * lock: list heads by kind (knext), in creation order as in all:
	 * a doorbell looks for its queue among the virtqs, not among the
	 * hundreds of keys and umems of a large guest's memory.
	 */
	struct emu_obj of_kind[EMU_KIND_MAX];
	unsigned int live[EMU_KIND_MAX];        /* lock */
	uint32_t next_id[EMU_IDS_MAX];          /* lock */
	struct emu_sub *subs;        /* lock */
	struct emu_evch *evchs;      /* lock */
	struct emu_fault *faults;    /* lock */

	atomic_ulong cmd_count[EMU_OPCODE_SLOTS];
	/* Dirty-log misses of every queue, destroyed ones included. */
	atomic_ulong log_misses;

	/* Data path (emu_datapath.c); its state is guarded by lock. */
	struct emu_dp *dp;
	/* Bumped on every object creation/destruction (steering cache). lock */
	uint64_t obj_gen;
	/* The kernel's mkey variant counter for the MRs it creates (mr.c assign_mkey_variant). lock */
	uint8_t mr_variant;
	/*
	 * The umem parameters reported and enforced now, umem 1..3: the
	 * profile's at creation, changed at runtime as firmware changes them
	 * (emu_dev_set_umem_params). lock
	 */
	uint32_t umem_a[3];
	uint32_t umem_b[3];
};

void emu_log(const struct emu_dev *dev, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

const char *emu_kind_name(enum emu_kind kind);
/* Lookup by (kind, id); mkeys by index. dev->lock held. */
struct emu_obj *emu_obj_find(struct emu_dev *dev, enum emu_kind kind, uint32_t id);
/* Allocate an object of `size` bytes with a fresh id and insert it. */
struct emu_obj *emu_obj_new(struct emu_dev *dev, enum emu_kind kind, size_t size);
/* Record that obj references target (target cannot be destroyed). */
int emu_obj_hold(struct emu_obj *obj, struct emu_obj *target);
/* Drop every reference obj holds. */
void emu_obj_release_all(struct emu_obj *obj);
/*
 * Destroy: RES_BUSY while referenced; otherwise drop references and
 * subscriptions, unlink and free. Returns a PRM status.
 */
int emu_obj_destroy(struct emu_dev *dev, struct emu_obj *obj, uint32_t *syndrome);
/* Unlink and free without checks (device teardown, failed create). */
void emu_obj_free(struct emu_dev *dev, struct emu_obj *obj);
/* Mkey by key (index << 8 | variant); NULL for the null mkey or unknown. */
struct emu_mkey *emu_mkey_find_key(struct emu_dev *dev, uint32_t key);

/* ---- Commands ------------------------------------------------------------ */
struct emu_ctx {
	struct emu_dev *dev;
	const uint8_t *in;
	size_t inlen;
	uint8_t *out;
	size_t outlen;
	uint16_t opcode;
	uint16_t obj_type;
	uint32_t syndrome;
	/* What the command costs: up to two entries (virtq MODIFY: fields + state). */
	enum emu_cost_id cost[2];
	double gib;
	double entries;
};

static inline int
emu_fail(struct emu_ctx *c, int status, uint32_t syndrome)
{
	c->syndrome = syndrome;
	return status;
}

/* Write the new number of a classic object at create_out.id. */
static inline void
emu_out_id(struct emu_ctx *c, uint32_t id)
{
	PRM_SET(create_out, c->out, id, id);
}

/* A handler returns a PRM status; c->syndrome when non-zero. dev->lock held. */
typedef int (*emu_handler_t)(struct emu_ctx *c);

/* emu_net.c */
/* Shared by emu_net.c and emu_net_qp.c: an object of kind, its create answered. */
struct emu_net_obj *emu_net_new(struct emu_ctx *c, enum emu_kind kind);
int emu_net_created(struct emu_ctx *c, struct emu_net_obj *o);
/* Hold target for o or fail the create (caller frees o). */
int emu_net_hold(struct emu_ctx *c, struct emu_net_obj *o, struct emu_obj *target);
/* Free o, not created, and return status. */
int emu_net_create_failed(struct emu_ctx *c, struct emu_net_obj *o, int status);
/* Destroy the object of kind named at destroy_in.id. */
int emu_net_destroy(struct emu_ctx *c, enum emu_kind kind);
int emu_net_alloc_pd(struct emu_ctx *c);
int emu_net_dealloc_pd(struct emu_ctx *c);
int emu_net_alloc_td(struct emu_ctx *c);
int emu_net_dealloc_td(struct emu_ctx *c);
int emu_net_create_tis(struct emu_ctx *c);
int emu_net_destroy_tis(struct emu_ctx *c);
int emu_net_create_rqt(struct emu_ctx *c);
int emu_net_modify_rqt(struct emu_ctx *c);
int emu_net_destroy_rqt(struct emu_ctx *c);
int emu_net_create_tir(struct emu_ctx *c);
int emu_net_destroy_tir(struct emu_ctx *c);
int emu_net_create_ft(struct emu_ctx *c);
int emu_net_destroy_ft(struct emu_ctx *c);
int emu_net_create_fg(struct emu_ctx *c);
int emu_net_destroy_fg(struct emu_ctx *c);
int emu_net_set_fte(struct emu_ctx *c);
int emu_net_delete_fte(struct emu_ctx *c);
/* emu_net_qp.c */
int emu_net_create_cq(struct emu_ctx *c);
int emu_net_destroy_cq(struct emu_ctx *c);
int emu_net_create_qp(struct emu_ctx *c);
int emu_net_qp_transition(struct emu_ctx *c);
int emu_net_destroy_qp(struct emu_ctx *c);
/* General caps (QUERY_HCA_CAP cap_type 0) into the capability area. */
void emu_net_general_caps(const struct emu_caps *caps, void *cap);
/* Input/output sizes the net commands need. */
size_t emu_net_min_inlen(uint16_t opcode);
size_t emu_net_min_outlen(uint16_t opcode);
/* NIC flow table caps (QUERY_HCA_CAP cap_type 0x7). */
void emu_net_flow_caps(void *cap);
/*
 * A CQ doorbell rung on UAR page uar (emu_uar_write): record the arm
 * request (cmd, sn, ci) of CQ cqn. dev->lock held.
 */
void emu_net_cq_doorbell(struct emu_dev *dev, uint32_t uar, uint32_t cqn, uint8_t sn,
			 uint8_t cmd, uint32_t ci);
/*
 * After a merged CQ doorbell on UAR page uar: arm every CQ of the page
 * whose doorbell record's arm dword changed since last seen. dev->lock held.
 */
void emu_net_cq_doorbell_others(struct emu_dev *dev, uint32_t uar);

/*
 * The firmware QP qp sends one message to its peer (the event path of a
 * virtq in event_mode QP): it consumes a receive credit of the peer and
 * completes into the peer's receive CQ, or waits (RNR) / goes to ERR when
 * the peer has no credit. dev->lock held.
 */
void emu_net_qp_notify(struct emu_dev *dev, struct emu_net_obj *qp);

/* emu_uar.c: whether eqn is one of the device's completion EQs. */
bool emu_eqn_is_completion(const struct emu_dev *dev, uint32_t eqn);

/* emu_umem.c */
/* Below this a umem is a queue ring buffer, not guest memory (its costs differ). */
#define EMU_UMEM_SMALL (1u << 20)
/* Map u's pages for the device (u->pin_base); emu_umem_unpin releases them. */
void emu_umem_pin(struct emu_umem *u);
void emu_umem_unpin(struct emu_umem *u);
/* 1 when every page of u is backed by its file (a pin would not fail with EFAULT). */
int emu_umem_backed(const struct emu_umem *u);
/*
 * 1 when the kernel would pin u's pages for the device's writes: private
 * and anonymous memory, shmem (memfd, tmpfs) and hugetlbfs; 0 for a shared
 * mapping of a file whose filesystem tracks dirty pages (mm/gup.c, Linux
 * 6.5 and later). access: the IB access flags of the registration.
 */
int emu_umem_write_pin_allowed(struct emu_dev *dev, const struct emu_umem *u, uint32_t access);
/* The userfaultfd of a new device (emu_dev.uffd), -1 when the kernel gives none. */
int emu_umem_uffd_open(struct emu_dev *dev);
/*
 * A umem object is used by a command at offset off (CQ ring, QP ring,
 * doorbell record, virtq umem): whether the kernel's description of the
 * umem allows it (see emu_umem_offset_ok in emu_umem.c). page_offset is
 * the object's own sub-page offset field in page/64 quanta (cqc, qpc
 * page_offset), or -1 for an object that has none. true, or false with a
 * log line naming the rule.
 */
bool emu_umem_offset_ok(struct emu_dev *dev, const struct emu_umem *u, uint64_t off,
			int page_offset, const char *what);
/* page_offset of a doorbell record: an address in the umem, no page rule (8-byte aligned). */
#define EMU_UMEM_ANY_IN_PAGE (-2)
int emu_mkey_create(struct emu_ctx *c);
int emu_mkey_destroy(struct emu_ctx *c);
int emu_query_special_contexts(struct emu_ctx *c);
/*
 * Translate [addr, addr+len) through an mkey, dev->lock held: *host gets
 * the host address of addr and *contig how many bytes from there are
 * host-contiguous and covered (<= len). -EFAULT when addr itself is not
 * covered (or lies in a hole). The data path walks a buffer with this.
 */
int emu_mkey_xlate(const struct emu_mkey *mk, uint64_t addr, uint64_t len, uint8_t **host,
		   uint64_t *contig);
/*
 * The same for a device write: -EACCES when an mkey on the way lacks
 * local write (mkc lw), which the device needs to write through it.
 */
int emu_mkey_xlate_write(const struct emu_mkey *mk, uint64_t addr, uint64_t len,
			 uint8_t **host, uint64_t *contig);

/* emu_virtq.c: general objects */
int emu_virtq_create(struct emu_ctx *c);
int emu_virtq_modify(struct emu_ctx *c);
int emu_virtq_query(struct emu_ctx *c);
int emu_virtq_destroy(struct emu_ctx *c);
/* Move a RDY queue to ERR and post OBJECT_CHANGE. dev->lock held. */
int emu_virtq_set_error(struct emu_dev *dev, struct emu_virtq *vq, uint8_t error_type);
int emu_counters_create(struct emu_ctx *c);
int emu_counters_query(struct emu_ctx *c);
int emu_counters_destroy(struct emu_ctx *c);

/* ---- Data path (emu_datapath.c, emu_ring_split.c, emu_ring_packed.c, emu_wire.c) ---- */
/*
 * One thread per device processes the rings of RDY virtqs. Everything it
 * touches (rings through mkeys, indices, counters, backlogs, steering)
 * is guarded by dev->lock, taken for one bounded batch per queue, so a
 * command (MODIFY to SUSPEND, QUERY) sees a queue between two batches.
 */
#define EMU_DP_BATCH 64u             /* chains per queue per batch */
#define EMU_DP_MAX_FRAME 65536u      /* largest frame (without virtio-net header) */
#define EMU_DP_MAX_STEER_DEPTH 8u    /* flow table -> flow table forwarding */

/* Split/packed descriptor flags (virtio 1.1, 2.6.5 and 2.7.1). */
#define EMU_VRING_DESC_F_NEXT 1u
#define EMU_VRING_DESC_F_WRITE 2u
#define EMU_VRING_DESC_F_INDIRECT 4u
#define EMU_VRING_DESC_F_AVAIL (1u << 7)
#define EMU_VRING_DESC_F_USED (1u << 15)

struct emu_frame {
	struct emu_frame *next;
	uint32_t len;
	uint8_t data[];
};

/* Per-virtq data path state; dev->lock. */
#define EMU_RX_PREFETCH_MAX 64

struct emu_dp_vq {
	struct emu_virtq *vq;
	struct emu_dp_vq *next_pending;
	bool pending;                /* on dp->pend list */
	struct emu_frame *bl_head, *bl_tail; /* RX backlog (frames steered here) */
	uint32_t bl_len;
	/*
	 * Heads of the RX chains fetched ahead (caps rx_prefetch_chains), in
	 * ring order from pf_first: counted in hw_available_index, not yet
	 * in hw_used_index, filled before any chain fetched later.
	 */
	uint16_t pf_heads[EMU_RX_PREFETCH_MAX];
	uint8_t pf_first, pf_n;
};

/* The device's data path; every field guarded by dev->lock. */
struct emu_dp {
	pthread_t thread;
	bool started;                /* thread created */
	bool stop;                   /* emu_dp_stop: the thread exits */
	bool busy;                   /* the thread is inside one queue's turn */
	pthread_cond_t wake;         /* work was queued (with dev->lock) */
	pthread_cond_t idle;         /* nothing pending / uplink call finished */
	struct emu_dp_vq *pend_head, *pend_tail;  /* queues with work, FIFO */
	/* Wire. */
	emu_wire_tx_fn uplink;       /* NULL: loopback */
	void *uplink_ctx;
	unsigned int uplink_calls;   /* calls to uplink in flight (lock dropped) */
	struct emu_frame *tx_head, *tx_tail; /* TX frames for uplink, sent unlocked */
	uint64_t tx_frames, rx_frames, drops;
	/* Scratch of the thread. */
	struct emu_seg *segs;
	uint32_t seg_cap;
	uint8_t *frame_buf;          /* TX gather: header + EMU_DP_MAX_FRAME */
	/* Steering cache (emu_wire.c), valid while steer_gen == dev->obj_gen. */
	uint64_t steer_gen;
	bool steer_valid;
	struct emu_root_rule **roots; /* sorted by (priority, id) */
	uint32_t n_roots, roots_cap;
	struct emu_net_obj **ftes;   /* sorted by (table_id, flow_index) */
	uint32_t n_ftes, ftes_cap;
};

/* One buffer segment of a descriptor chain (guest address in the mkey's space). */
struct emu_seg {
	uint64_t addr;
	uint32_t len;
};

enum emu_dp_cnt {
	EMU_DP_CNT_BAD_DESC,         /* malformed descriptor */
	EMU_DP_CNT_INVALID_BUFFER,   /* address the mkey does not map */
	EMU_DP_CNT_EXCEED_CHAIN,     /* chain longer than the queue */
};

/* One batch of work on one queue (emu_ring_*.c fill it). dev->lock held. */
struct emu_dp_batch {
	struct emu_dev *dev;
	struct emu_virtq *vq;
	struct emu_dp_vq *dq;
	struct emu_vq_counters *cnt;
	const struct emu_mkey *mk;
	const struct emu_mkey *log_mk;   /* dirty bitmap, NULL when not logging */
	bool log_ring;                   /* the bitmap records ring writes (caps) */
	bool rx;
	uint32_t hdr_len;                /* virtio-net header: 10 or 12 */
	struct emu_seg *segs;            /* current chain */
	uint32_t nsegs, seg_cap;
	uint64_t chain_bytes;
	uint32_t completed;
	bool more;                       /* budget ran out with work left */
	bool failed;                     /* the queue went to ERR */
};

/* emu_datapath.c */
int emu_dp_init(struct emu_dev *dev);
/* Stop and join the thread (dev->lock not held). */
void emu_dp_stop(struct emu_dev *dev);
void emu_dp_fini(struct emu_dev *dev);
/* A queue became RDY, or got a doorbell: (re)consider it. dev->lock held. */
void emu_dp_vq_kick(struct emu_dev *dev, struct emu_virtq *vq);
/* A queue is being freed: drop its backlog and pending mark. dev->lock held. */
void emu_dp_vq_free(struct emu_dev *dev, struct emu_virtq *vq);
struct emu_dp_vq *emu_dp_vq_get(struct emu_dev *dev, struct emu_virtq *vq);
/* Guest memory through the batch's mkey; -EFAULT when not mapped. */
int emu_dp_read(struct emu_dp_batch *b, uint64_t addr, void *buf, size_t len);
/* A buffer the device fills: always in the dirty bitmap while logging. */
int emu_dp_write(struct emu_dp_batch *b, uint64_t addr, const void *buf, size_t len);
/* The ring's own fields: in the bitmap only if the caps say so (log_ring). */
int emu_dp_write_ring(struct emu_dp_batch *b, uint64_t addr, const void *buf, size_t len);
int emu_dp_load16(struct emu_dp_batch *b, uint64_t addr, uint16_t *v);
int emu_dp_store16_ring(struct emu_dp_batch *b, uint64_t addr, uint16_t v);
/*
 * The driver's notification choice at addr, read only once everything the
 * device wrote to the used ring is globally visible (a full fence: the
 * store-load order a notification decision needs, virtio 1.1 2.6.7.2, 2.7.10).
 */
static inline int
emu_dp_driver_flags(struct emu_dp_batch *b, uint64_t addr, uint16_t *flags)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return emu_dp_load16(b, addr, flags);
}
/* Move the queue to ERR, count, post OBJECT_CHANGE. Returns -1. */
int emu_dp_fail(struct emu_dp_batch *b, uint8_t error_type, enum emu_dp_cnt cnt);
/*
 * A 16-byte descriptor of either ring format: both put the buffer's
 * address at byte 0 and its length at byte 8, little endian (virtio 1.1
 * 2.7.5, 2.7.13); the other four bytes stay in raw for the caller. -1
 * with the queue in ERR when the descriptor is outside guest memory.
 */
int emu_dp_read_desc(struct emu_dp_batch *b, uint64_t addr, uint8_t raw[16], uint64_t *buf,
		     uint32_t *len);
/* A new chain: no segment, no byte yet. */
static inline void
emu_dp_chain_reset(struct emu_dp_batch *b)
{
	b->nsegs = 0;
	b->chain_bytes = 0;
}

/*
 * One more descriptor in the chain: a chain longer than the queue is a
 * loop (virtio 1.1 2.6.5.3.1, 2.7.17), the queue goes to ERR (-1).
 */
static inline int
emu_dp_chain_step(struct emu_dp_batch *b, uint32_t *seen)
{
	if (++*seen > b->vq->queue_size)
		return emu_dp_fail(b, EMU_VQ_ERROR_EXCEED_MAX_CHAIN, EMU_DP_CNT_EXCEED_CHAIN);
	return 0;
}

/* Append a descriptor's buffer to the current chain (checks direction and length). */
int emu_dp_add_seg(struct emu_dp_batch *b, uint64_t addr, uint32_t len, uint16_t flags);
/*
 * Consume the current chain: TX sends its frame, RX writes the next
 * backlog frame. 1 = consumed (*used_len = bytes written), 0 = not
 * consumed (RX: no frame fits), -1 = queue in ERR.
 */
int emu_dp_consume(struct emu_dp_batch *b, uint32_t *used_len);
/* A frame from TX: to the uplink, or back through steering (loopback). */
void emu_dp_wire_tx(struct emu_dev *dev, const uint8_t *frame, uint32_t len);

/*
 * emu_offload.c: transmit offloads (virtio-net header hdr, frame after it).
 * CSUM: complete the partial checksum in place; -1 when the offsets lie
 * outside the frame. TSO: send the frame's segments with emu_dp_wire_tx,
 * the number sent, or -1 (nothing sent) when the queue lacks the TSO the
 * header asks for or the frame is not TCP over IPv4/IPv6.
 */
int emu_offload_csum(uint8_t *frame, uint32_t len, const uint8_t *hdr);
int emu_offload_tso(struct emu_dev *dev, const uint8_t *frame, uint32_t len, const uint8_t *hdr,
		    uint16_t features);

/* emu_ring_split.c / emu_ring_packed.c: process up to budget chains. */
void emu_ring_split_run(struct emu_dp_batch *b, unsigned int budget);
void emu_ring_packed_run(struct emu_dp_batch *b, unsigned int budget);
/* Whether the driver wants a notification now (after completions). */
bool emu_ring_split_notify(struct emu_dp_batch *b);
bool emu_ring_packed_notify(struct emu_dp_batch *b);

/* emu_wire.c: steer a received frame to an RX queue's backlog. dev->lock held. */
int emu_wire_deliver(struct emu_dev *dev, const uint8_t *frame, uint32_t len);
/* Toeplitz hash of data with a 40-byte key (exposed for tests of RSS). */
uint32_t emu_wire_toeplitz(const uint8_t key[40], const uint8_t *data, size_t len);
void emu_wire_cache_free(struct emu_dev *dev);

/* Virtio emulation caps of the emulated CX6 Dx (QUERY_HCA_CAP 0x13). */
#define EMU_CAP_DEVICE_FEATURES_MASK 0x1fffu
#define EMU_CAP_EVENT_MODES ((1u << PRM_VIRTQ_EVENT_MODE_NONE) | \
			     (1u << PRM_VIRTQ_EVENT_MODE_QP))
#define EMU_CAP_QUEUE_TYPES (1u | 2u)   /* split, packed */
/*
 * Offload types (virtio_emulation_cap eth_frame_offload_type and
 * desc_tunnel_offload_type, one support bit each; DPDK's
 * mlx5_devx_cmd_query_hca_vdpa_attr and snap-rdma's snap_fill_virtio_caps
 * read them so). A vDPA function moves Ethernet frames between the ring and
 * the wire (ETH_FRAME, what every vDPA driver creates: offload_type 0);
 * descriptor tunnelling is the DPU emulation manager's (snap-rdma creates
 * its virtio-blk/fs/net emulation queues DESC_TUNNEL), not a vDPA
 * function's: no tunnelled descriptor, max_tunnel_desc 0.
 */
#define EMU_CAP_ETH_FRAME_OFFLOAD 1u
#define EMU_CAP_DESC_TUNNEL_OFFLOAD 0u
#define EMU_CAP_MAX_TUNNEL_DESC 0u
/*
 * One doorbell stride of 4 KiB, the whole area: one VAR per function
 * (Linux mlx5_ib_init_var_table: area / stride entries). DPDK vdpa/mlx5
 * waits for QEMU to release "the VAR" when it probes again (its retry
 * loop in mlx5_vdpa_create_dev_resources), which a table of one entry
 * explains; every queue's doorbell is then that stride.
 */
#define EMU_CAP_LOG_DOORBELL_STRIDE 12u
/*
 * log_doorbell_bar_size counts 4 KiB units (Linux main.c
 * mlx5_ib_init_var_table: bar_size = (1 << log_doorbell_bar_size) * 4096):
 * 0 is one 4 KiB page, 1024 doorbells of 4 bytes.
 */
#define EMU_CAP_LOG_DOORBELL_BAR_SIZE 0u
#define EMU_DOORBELL_AREA_UNIT 4096ull
/*
 * Where the doorbells sit in the BAR (a profile may move them). Not page
 * aligned on purpose: the kernel maps the doorbell page (VAR) from its
 * start, so a driver must write at the in-page part only (0x808), never at
 * the whole offset.
 */
#define EMU_CAP_DOORBELL_BAR_OFFSET 0x1808ull
#define EMU_CAP_MAX_VIRTQS 256u
/*
 * Event caps: the affiliated events this device raises, which user space
 * may then subscribe to (Linux devx.c is_valid_events): CQ error, QP
 * error, OBJECT_CHANGE. Completions need no bit.
 */
#define EMU_CAP_EVENT_CAP 1u
/* A CX6 Dx: RoCE, overrun ignore, free-running and real-time timestamps. */
#define EMU_CAP_ROCE 1u
#define EMU_CAP_CQ_OI 1u
#define EMU_CAP_TS_FORMAT PRM_TS_FORMAT_CAP_FREE_RUNNING_AND_REAL_TIME
/*
 * Completion EQ numbers: the kernel creates its async, command and page
 * EQs first, so completion EQs do not start at 0 (and c_eqn 0 names
 * none). A profile may number them past 255 (caps comp_eqn_base).
 */
#define EMU_CAP_COMP_EQN_BASE 0x10u
#define EMU_CAP_USER_AFFILIATED_EVENTS ((1ull << PRM_EVENT_CQ_ERROR) | \
					(1ull << PRM_EVENT_WQ_CATAS_ERROR) | \
					(1ull << PRM_EVENT_OBJECT_CHANGE))
#define EMU_CAP_VIRTIO_VERSION_1_0 1u
#define EMU_CAP_FREEZE_TO_RDY 1u
#define EMU_CAP_VNET_MODIFY_EXT 1u
#define EMU_CAP_VIRTIO_NET_Q_ADDR_MODIFY 1u
#define EMU_CAP_VIRTIO_Q_INDEX_MODIFY 1u
#define EMU_CAP_GENERAL_OBJ_TYPES (PRM_GENERAL_OBJ_TYPES_CAP_VIRTQ_NET_Q | \
				   PRM_GENERAL_OBJ_TYPES_CAP_VIRTIO_Q_COUNTERS)
#define EMU_CAP_DESC_GROUP_MKEY 0u
/*
 * Umem N of a virtq holds at least umem_N_buffer_param_a * queue_size +
 * umem_N_buffer_param_b bytes. No public source gives a device's figures:
 * these are the emulator's own, different for each umem in both terms, so
 * that a driver sizing one umem with another's parameters is refused. They
 * are the values at power-up: firmware changes them at runtime
 * (emu_dev_set_umem_params), and a profile may set others (caps).
 */
#define EMU_CAP_UMEM_1_A 128u
#define EMU_CAP_UMEM_1_B 4096u
#define EMU_CAP_UMEM_2_A 96u
#define EMU_CAP_UMEM_2_B 8192u
#define EMU_CAP_UMEM_3_A 16u
#define EMU_CAP_UMEM_3_B 12288u
#define EMU_CAP_VHCA_ID 1u
#define EMU_CAP_LOG_MAX_KLM_LIST_SIZE 16u

#endif /* MLX5_LM_EMU_PRIV_H */
