/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event path of a virtq (mlx5_lm_eventq.c): the firmware QP the virtq
 * writes a notification to, our QP connected to it and their CQ, in one
 * event buffer of the device; the notification thread counts and arms it.
 */
#ifndef MLX5_LM_EVENTQ_H
#define MLX5_LM_EVENTQ_H

#include <pthread.h>
#include <stdint.h>

struct devx_obj;
struct mlx5_lm_dev;
struct mlx5_lm_virtq;

/* Entries of each queue's event CQ and QP receive ring. */
#define MLX5_LM_EVENTQ_SIZE 256

/*
 * Event path of one virtq: the firmware QP it writes to, our QP and CQ.
 * lock guards the fields below it between the notification thread (which
 * drains and re-arms) and whoever creates or destroys the pair.
 */
struct mlx5_lm_eventq {
	struct devx_obj *cq;
	struct devx_obj *fw_qp;
	struct devx_obj *sw_qp;
	uint64_t buf_off;            /* this queue's slice of the device event buffer */
	pthread_mutex_t lock;
	int live;                    /* created, subscribed and armed: events are ours */
	uint32_t cqn;
	uint32_t ci;                 /* completions consumed (CQ consumer counter) */
	uint8_t arm_sn;              /* 2-bit arm sequence number: events read, mod 4 */
	uint8_t armed;               /* an arm was sent and no event read for it since */
	uint8_t *cqe;                /* the collapsed CQ's one entry */
	uint8_t *cq_dbrec;           /* cq_dbrec: consumer index, arm request */
	uint8_t *qp_dbrec;           /* qp_dbrec of our QP: receive counter (credits) */
	uint32_t bad_reads;          /* CQE readings refused as no count (logged once) */
};

/*
 * The device's event buffer (a umem holding every queue's CQ and QP rings
 * and doorbell records), the UAR page and completion EQ of its CQs: at
 * probe, before the notification thread; destroyed after it.
 */
int mlx5_lm_event_buf_create(struct mlx5_lm_dev *dev);
void mlx5_lm_event_buf_destroy(struct mlx5_lm_dev *dev);
/*
 * vq's CQ and QP pair, connected and armed (RC loopback to RTS), in its
 * slice of the event buffer: at the queue's creation. -EBUSY when an old
 * pair the device would not destroy still owns the slice.
 */
int mlx5_lm_eventq_create(struct mlx5_lm_virtq *vq);
/* Reverse of create; a CQ or QP the device keeps stays named, for a retry. */
void mlx5_lm_eventq_destroy(struct mlx5_lm_virtq *vq);
/*
 * Count the new completions of vq's event CQ and hand the receive credits
 * back; with arm, also arm the CQ for the next event (interrupt mode, or a
 * poller going idle). Returns the completions (>= 0). Never blocks on the
 * device (the notification thread calls it).
 */
int mlx5_lm_eventq_drain(struct mlx5_lm_virtq *vq, int arm);
/*
 * A completion event of CQ cqn was read for vq: the CQ's arm was consumed,
 * the next arm carries the next arm sequence number (mod 4). Every
 * completion event read for a queue goes through here, in every event mode.
 * Returns 1 when cqn is the queue's live event CQ (0: a CQ since destroyed,
 * or none), with that CQ's number (0 when none) in *live_cqn.
 */
int mlx5_lm_eventq_event(struct mlx5_lm_virtq *vq, uint32_t cqn, uint32_t *live_cqn);
/*
 * After events were lost (the event channel's EOVERFLOW): count vq's new
 * completions, take a CQ that was armed and completed since as having
 * fired (its arm consumed), then arm it again (arm) or only hand the
 * credits back (a poller). Returns the completions, or -1 when the queue
 * has no live event CQ.
 */
int mlx5_lm_eventq_recover(struct mlx5_lm_virtq *vq, int arm);

#endif /* MLX5_LM_EVENTQ_H */
