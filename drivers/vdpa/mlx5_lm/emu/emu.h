/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated ConnectX: a device model that receives the bytes of PRM
 * commands, validates them as firmware would, keeps every object with its
 * references, charges the firmware cost model and (later) runs a virtio
 * data path. It depends on prm/ only; the DevX transport's emu back end is
 * its only caller in the driver. It never calls into the driver.
 */
#ifndef MLX5_LM_EMU_H
#define MLX5_LM_EMU_H

#include <stddef.h>
#include <stdint.h>

struct emu_dev;
struct emu_evch;
struct emu_profile;

/*
 * Syndromes the emulated firmware returns. Real firmware syndromes are
 * opaque 32-bit codes; ours carry a fixed prefix so that a trace reader
 * can tell them apart, and each names one rejection reason.
 */
enum emu_syndrome {
	EMU_SYND_NONE = 0,
	EMU_SYND_BAD_OPCODE = 0x5e0c0001,        /* status BAD_OP */
	EMU_SYND_BAD_INPUT_LEN = 0x5e0c0002,     /* status BAD_INPUT_LEN */
	EMU_SYND_BAD_OUTPUT_LEN = 0x5e0c0003,    /* status BAD_OUTPUT_LEN */
	EMU_SYND_BAD_OBJ_TYPE = 0x5e0c0004,      /* status BAD_PARAM */
	EMU_SYND_UNKNOWN_OBJ = 0x5e0c0005,       /* status BAD_RES: no such id */
	EMU_SYND_OBJ_IN_USE = 0x5e0c0006,        /* status RES_BUSY: still referenced */
	EMU_SYND_BAD_STATE_TRANSITION = 0x5e0c0007, /* status BAD_RES_STATE */
	EMU_SYND_MODIFY_NOT_ALLOWED = 0x5e0c0008,   /* status BAD_RES_STATE: fields outside INIT/SUSPEND */
	EMU_SYND_BAD_MODIFY_FIELD = 0x5e0c0009,  /* status BAD_PARAM: unknown/unmodifiable field bit */
	EMU_SYND_TOO_MANY_VIRTQS = 0x5e0c000a,   /* status EXCEED_LIM: > max_num_virtio_queues */
	EMU_SYND_BAD_PARAM = 0x5e0c000b,         /* status BAD_PARAM: a field value is invalid */
	EMU_SYND_BAD_REFERENCE = 0x5e0c000c,     /* status BAD_RES: a referenced object does not exist */
	EMU_SYND_UMEM_TOO_SMALL = 0x5e0c000d,    /* status BAD_PARAM: virtq umem smaller than a*size+b */
	EMU_SYND_TOO_MANY_ENTRIES = 0x5e0c000e,  /* status EXCEED_LIM: mkey entry list too long */
	EMU_SYND_QP_BAD_TRANSITION = 0x5e0c000f, /* status BAD_RES_STATE */
	EMU_SYND_UMEM_NOT_BACKED = 0x5e0c00b5,   /* status BAD_PARAM: umem past its file (pin) */
	EMU_SYND_INJECTED = 0x5e0cfa17,          /* default syndrome of an injected fault */
};

/*
 * Log sink: the emulator sits below the driver and does not depend on
 * DPDK; the transport routes these lines to the PMD's emu log type.
 * level is syslog style (3 error, 4 warning, 6 info, 7 debug). Default:
 * stderr for levels <= 4.
 */
typedef void (*emu_log_fn)(int level, const char *line);
void emu_set_log(emu_log_fn fn);

/* ---- Cost-model profiles ------------------------------------------------ */
/*
 * Load a profile: "cx6dx" (the shared firmware model, built in), "fast"
 * (zero cost, built in) or a path to a JSON file with the same schema.
 */
int emu_profile_load(const char *name_or_path, struct emu_profile **out,
		     char *err, size_t errlen);
void emu_profile_free(struct emu_profile *p);
const char *emu_profile_name(const struct emu_profile *p);
unsigned int emu_profile_cmd_slots(const struct emu_profile *p);
/* Cost in microseconds of a cost-model entry ("CREATE_VIRTQ", ...); < 0 if absent. */
double emu_profile_cost_us(const struct emu_profile *p, const char *cmd, double gib,
			   double entries);

/* ---- Devices ------------------------------------------------------------- */
/* Create an emulated device with a profile (see emu_profile_load). */
struct emu_dev *emu_dev_create(const char *name, const char *profile, char *err, size_t errlen);
/*
 * Destroy the device. Every object still alive is reported (one log line
 * each, naming type, id and state), counted in emu_leaked_total() and
 * freed. Returns the number of objects that were still alive.
 */
int emu_dev_destroy(struct emu_dev *dev);
const char *emu_dev_name(const struct emu_dev *dev);
/* Objects currently alive in the device (umems included). */
unsigned int emu_dev_live_objects(struct emu_dev *dev);
/* Objects found alive at emu_dev_destroy(), summed over the process. */
unsigned long emu_leaked_total(void);
/* Number of commands executed with this opcode (any status). */
unsigned long emu_dev_cmd_count(struct emu_dev *dev, uint16_t opcode);

/*
 * Execute one PRM command mailbox as the firmware would. The output header
 * (status, syndrome) is always written when outlen allows. Returns 0 when
 * the command was executed (whatever its status), -EINVAL when out is too
 * small to hold even the header.
 */
int emu_cmd(struct emu_dev *dev, const void *in, size_t inlen, void *out, size_t outlen);

/*
 * Register host memory (what the kernel does for mlx5dv_devx_umem_reg).
 * Returns 0 and sets *id, or a PRM status (> 0) with *syndrome set.
 */
int emu_umem_reg(struct emu_dev *dev, void *addr, size_t size, uint32_t access,
		 uint32_t *id, uint32_t *syndrome);
/* Returns 0, or a PRM status (RES_BUSY when an mkey or virtq still uses it). */
int emu_umem_dereg(struct emu_dev *dev, uint32_t id, uint32_t *syndrome);

/* Doorbell write (a kick): the value is the virtq's queue index. */
void emu_doorbell(struct emu_dev *dev, uint32_t offset, uint32_t value);

/* ---- Data path and wire ---------------------------------------------------- */
/*
 * The data path processes the rings of every RDY virtq in a per-device
 * thread (started when the first queue becomes RDY, joined by
 * emu_dev_destroy), through the queue's mkey only. Even queue_index =
 * RX, odd = TX. TX frames go to the uplink; received frames are steered
 * by the NIC RX flow table -> TIR -> RQT (Toeplitz RSS) to an RX queue.
 */
/* error_type of a queue the data path moved to ERR (QUERY shows it). */
enum emu_vq_error {
	EMU_VQ_ERROR_BAD_DESC = 1,        /* malformed descriptor, or address not mapped */
	EMU_VQ_ERROR_EXCEED_MAX_CHAIN = 2, /* chain longer than queue_size (a loop) */
};
/* Frames an RX queue keeps while the guest has no buffer posted. */
#define EMU_DP_RX_BACKLOG 1024u

/* A frame leaving the device on its wire (no virtio-net header). */
typedef void (*emu_wire_tx_fn)(void *ctx, const void *frame, size_t len);
/*
 * Attach a wire: fn receives every TX frame (called from the data path
 * thread, without device locks held). NULL fn = loopback (the default):
 * TX frames come back as received frames of the same device. Returns 0
 * once no call to the previous fn is in flight (so not from within fn).
 */
int emu_dev_set_uplink(struct emu_dev *dev, emu_wire_tx_fn fn, void *ctx);
/*
 * A frame arriving from the wire, steered like any received frame.
 * Returns 0 when queued for an RX queue, -ENOENT when dropped for lack
 * of steering or of a RDY target, -ENOBUFS when that queue's backlog is
 * full, -EINVAL for a bad length. Drops are counted.
 */
int emu_dev_wire_rx(struct emu_dev *dev, const void *frame, size_t len);
/* Frames sent to the wire, received from it (loopback included), dropped. */
void emu_dev_wire_stats(struct emu_dev *dev, uint64_t *tx_frames, uint64_t *rx_frames,
			uint64_t *drops);
/*
 * Wait until the data path has no queue with pending work (every kick,
 * RDY transition and deliverable frame handled). 0, or -ETIMEDOUT.
 */
int emu_dev_dp_wait_idle(struct emu_dev *dev, unsigned int timeout_ms);

/* ---- Events -------------------------------------------------------------- */
struct emu_event {
	uint64_t cookie;
	uint16_t type;     /* PRM_EVENT_* */
	uint32_t obj_id;
	uint8_t data[32];  /* OBJECT_CHANGE: obj_type[16]@0, obj_id[32]@0x20 (PRM bits) */
};
struct emu_evch *emu_evch_create(struct emu_dev *dev);
void emu_evch_destroy(struct emu_evch *ch);
/* An eventfd that is readable while events are pending. */
int emu_evch_fd(const struct emu_evch *ch);
/*
 * Subscribe to events of the object created by `create_opcode` (and
 * obj_type for general objects) with number id.
 */
int emu_evch_subscribe(struct emu_evch *ch, uint16_t create_opcode, uint16_t obj_type,
		       uint32_t id, uint16_t type, uint64_t cookie);
/* Returns 1 and fills ev when an event was pending, 0 when none. */
int emu_evch_read(struct emu_evch *ch, struct emu_event *ev);

/* ---- Test and benchmark hooks -------------------------------------------- */
/*
 * Make the nth (1-based) next command with this opcode (and obj_type for
 * general-object commands; 0xffff = any) fail with status/syndrome
 * without executing. Also settable for a whole process through the
 * environment: MLX5_LM_EMU_FAULT="opcode:nth:status[:obj_type]" (numbers
 * in C syntax), applied to every device created afterwards.
 */
int emu_fault_inject(struct emu_dev *dev, uint16_t opcode, uint16_t obj_type, unsigned int nth,
		     uint8_t status, uint32_t syndrome);
/* Move a RDY virtq to ERR with error_type and post OBJECT_CHANGE. */
int emu_virtq_force_error(struct emu_dev *dev, uint32_t virtq_id, uint8_t error_type);
/*
 * Translate [addr, addr+len) through mkey (indirect -> direct -> umem) to
 * a host pointer. Returns 0, or -EFAULT when any byte is not covered.
 */
int emu_mkey_translate(struct emu_dev *dev, uint32_t mkey, uint64_t addr, size_t len,
		       void **host);

#endif /* MLX5_LM_EMU_H */
