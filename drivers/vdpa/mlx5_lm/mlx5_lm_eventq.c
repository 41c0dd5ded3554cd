/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event path of a virtq: the firmware QP the virtq writes a
 * notification to for used buffers, our QP connected to it (RC loopback)
 * and the collapsed CQ that counts them, in the device's one event buffer;
 * and what the notification thread does with them: count completions,
 * hand receive credits back, arm the CQ.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

/* Per queue slice of the event buffer: CQ ring, QP receive ring, doorbell records. */
#define CQE_SIZE 64
#define RQ_STRIDE 64
#define DBREC_SIZE 64

static uint32_t
log2_u32(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

/*
 * The event umem is described in 4 KiB pages whatever the host's page size
 * (registered with that pgsz_bitmap, see below), so every ring starts at a
 * page of it: each slice is a whole number of 4 KiB pages, the CQ ring at
 * its start and the RQ ring after it (qsize * 64 bytes, a multiple of
 * 4 KiB for the sizes we use), the doorbell records last.
 */
#define EVENT_PAGE 4096u

static size_t
event_slice_size(uint16_t qsize)
{
	size_t n = (size_t)qsize * CQE_SIZE + (size_t)qsize * RQ_STRIDE + 2 * DBREC_SIZE;

	return (n + EVENT_PAGE - 1) & ~(size_t)(EVENT_PAGE - 1);
}

/*
 * One umem for the event rings of every queue: registering it per queue
 * would cost a firmware command per queue at probe for 64 bytes of
 * doorbell record each (UMEM_REG_SMALL, twice per queue). The rings sit at
 * non-zero offsets of it, which the kernel allows only for a umem
 * registered with a page size bitmap (devx.c devx_umem_reg_cmd_alloc:
 * without one the caller promises umem_offset 0), and only where its page
 * list can place them: with 4 KiB pages allowed, the kernel describes the
 * umem in 4 KiB pages even on a 64 KiB-page host (devx_umem_find_best_pgsize),
 * so each ring starts at a page (page_offset 0). The event CQs also share
 * one UAR page (their arm doorbell) and report to completion EQ 0 of the
 * function.
 */
int
mlx5_lm_event_buf_create(struct mlx5_lm_dev *dev)
{
	size_t slice = event_slice_size(MLX5_LM_EVENTQ_SIZE);
	uint16_t i;
	int ret;

	dev->event_buf_size = slice * dev->nr_vq;
	dev->event_buf = aligned_alloc(EVENT_PAGE, dev->event_buf_size);
	if (dev->event_buf == NULL)
		return -ENOMEM;
	memset(dev->event_buf, 0, dev->event_buf_size);
	dev->event_umem = devx_umem_reg_pgsz(dev->devx, dev->event_buf, dev->event_buf_size,
					     MLX5_LM_DMA_ACCESS, EVENT_PAGE);
	if (dev->event_umem == NULL) {
		DRV_LOG(ERR, dev, "cannot register the event ring buffer (%zu bytes)",
			dev->event_buf_size);
		ret = -EIO;
		goto err_umem;
	}
	dev->event_uar = devx_uar_alloc(dev->devx);
	if (dev->event_uar == NULL) {
		DRV_LOG(ERR, dev, "cannot allocate a UAR page for the event CQs");
		ret = -EIO;
		goto err_uar;
	}
	ret = devx_query_eqn(dev->devx, 0, &dev->event_eqn);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "no completion EQ for the event CQs: %s", strerror(-ret));
		goto err_eqn;
	}
	for (i = 0; i < dev->nr_vq; i++)
		pthread_mutex_init(&dev->vq[i].eq.lock, NULL);
	return 0;
err_eqn:
	devx_uar_free(dev->event_uar);
	dev->event_uar = NULL;
err_uar:
	if (devx_umem_dereg(dev->event_umem) < 0)
		DRV_LOG(ERR, dev, "cannot deregister the event ring buffer");
	dev->event_umem = NULL;
err_umem:
	free(dev->event_buf);
	dev->event_buf = NULL;
	return ret;
}

void
mlx5_lm_event_buf_destroy(struct mlx5_lm_dev *dev)
{
	uint16_t i;

	if (dev->event_buf == NULL)
		return;
	for (i = 0; i < dev->nr_vq; i++)
		pthread_mutex_destroy(&dev->vq[i].eq.lock);
	devx_uar_free(dev->event_uar);
	dev->event_uar = NULL;
	if (dev->event_umem != NULL && devx_umem_dereg(dev->event_umem) < 0)
		DRV_LOG(ERR, dev, "cannot deregister the event ring buffer");
	dev->event_umem = NULL;
	free(dev->event_buf);
	dev->event_buf = NULL;
}

/*
 * The event CQ is collapsed (cqc.cc: the device writes every CQE at
 * index 0) and ignores overrun (cqc.oi), as DPDK's vdpa/mlx5 event CQs:
 * a notification only says "look at the used ring", so the count of
 * completions (the collapsed CQE's wqe_counter) is all we need, one read
 * per event however many notifications it covers, and a CQ that cannot
 * overrun cannot be put in error by a relay thread that falls behind.
 * Flow control is the receive credits instead: the firmware QP waits
 * (RNR, retried forever with rnr_retry 7) until we hand them back.
 */
static struct devx_obj *
create_cq(struct mlx5_lm_virtq *vq, uint16_t qsize)
{
	struct mlx5_lm_dev *dev = vq->dev;
	uint8_t in[PRM_SIZE(create_cq_in)];
	uint8_t out[PRM_SIZE(create_out)];
	void *cqc = PRM_ADDR(create_cq_in, in, cq_context);
	uint64_t off = vq->eq.buf_off;
	struct devx_obj *cq;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(create_cq_in, in, opcode, PRM_CMD_CREATE_CQ);
	PRM_SET(cqc, cqc, cqe_sz, PRM_CQC_CQE_SZ_64);
	PRM_SET(cqc, cqc, cc, 1);
	/* Overrun ignore only where offered (cq_oi); collapsed, the CQ cannot overrun anyway. */
	if (dev->caps.cq_oi)
		PRM_SET(cqc, cqc, oi, 1);
	PRM_SET(cqc, cqc, log_cq_size, log2_u32(qsize));
	/* All 32 bits, as the kernel reads them (mlx5_core_create_cq): EQNs may pass 255. */
	PRM_SET(cqc, cqc, c_eqn_or_apu_element, dev->event_eqn);
	PRM_SET(cqc, cqc, uar_page, devx_uar_page_id(dev->event_uar));
	PRM_SET(cqc, cqc, dbr_umem_valid, 1);
	PRM_SET(cqc, cqc, dbr_umem_id, devx_umem_id(dev->event_umem));
	PRM_SET(cqc, cqc, dbr_addr, off + (uint64_t)qsize * (CQE_SIZE + RQ_STRIDE));
	PRM_SET(create_cq_in, in, cq_umem_valid, 1);
	PRM_SET(create_cq_in, in, cq_umem_id, devx_umem_id(dev->event_umem));
	PRM_SET(create_cq_in, in, cq_umem_offset, off);
	cq = devx_obj_create(dev->devx, in, sizeof(in), out, sizeof(out));
	if (cq == NULL)
		VQ_LOG(ERR, vq, "cannot create the event CQ");
	return cq;
}

static struct devx_obj *
create_qp(struct mlx5_lm_virtq *vq, uint16_t qsize, int fw)
{
	struct mlx5_lm_dev *dev = vq->dev;
	uint8_t in[PRM_SIZE(create_qp_in)];
	uint8_t out[PRM_SIZE(create_out)];
	void *qpc = PRM_ADDR(create_qp_in, in, qpc);
	uint64_t off = vq->eq.buf_off + (uint64_t)qsize * CQE_SIZE;
	struct devx_obj *qp;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(create_qp_in, in, opcode, PRM_CMD_CREATE_QP);
	PRM_SET(qpc, qpc, st, PRM_QPC_ST_RC);
	PRM_SET(qpc, qpc, pm_state, PRM_QPC_PM_STATE_MIGRATED);
	PRM_SET(qpc, qpc, pd, devx_pd_id(dev->res.pd));
	PRM_SET(qpc, qpc, no_sq, 1);
	/*
	 * The format the timestamp caps allow: free-running where only that
	 * is offered, else the device's default (Linux mlx5_get_qp_default_ts,
	 * DPDK vdpa/mlx5 mlx5_ts_format_conv, on both event QPs).
	 */
	PRM_SET(qpc, qpc, ts_format,
		dev->caps.qp_ts_format == PRM_TS_FORMAT_CAP_FREE_RUNNING ?
		PRM_TS_FORMAT_FREE_RUNNING : PRM_TS_FORMAT_DEFAULT);
	if (fw) {
		/* The firmware's side only sends: no receive queue at all. */
		PRM_SET(qpc, qpc, rq_type, PRM_QPC_RQ_TYPE_ZERO_SIZE);
	} else {
		/* Our side receives one message per completion notification. */
		PRM_SET(qpc, qpc, rq_type, PRM_QPC_RQ_TYPE_REGULAR);
		/* Its UAR page, as Linux mlx5_vnet and DPDK vdpa/mlx5 name it. */
		PRM_SET(qpc, qpc, uar_page, devx_uar_page_id(dev->event_uar));
		PRM_SET(qpc, qpc, log_rq_size, log2_u32(qsize));
		PRM_SET(qpc, qpc, log_rq_stride, log2_u32(RQ_STRIDE) - 4);
		PRM_SET(qpc, qpc, cqn_rcv, devx_obj_id(vq->eq.cq));
		PRM_SET(qpc, qpc, cqn_snd, devx_obj_id(vq->eq.cq));
		PRM_SET(qpc, qpc, dbr_umem_valid, 1);
		PRM_SET(qpc, qpc, dbr_umem_id, devx_umem_id(dev->event_umem));
		PRM_SET(qpc, qpc, dbr_addr, vq->eq.buf_off + (uint64_t)qsize * (CQE_SIZE + RQ_STRIDE) +
			DBREC_SIZE);
		PRM_SET(create_qp_in, in, wq_umem_valid, 1);
		PRM_SET(create_qp_in, in, wq_umem_id, devx_umem_id(dev->event_umem));
		PRM_SET(create_qp_in, in, wq_umem_offset, off);
	}
	qp = devx_obj_create(dev->devx, in, sizeof(in), out, sizeof(out));
	if (qp == NULL)
		VQ_LOG(ERR, vq, "cannot create the event %s QP", fw ? "firmware" : "driver");
	return qp;
}

/*
 * One QP state transition (RST2INIT, INIT2RTR, RTR2RTS) towards remote,
 * with what Linux's mlx5_vnet and DPDK's vdpa/mlx5 give their event QP
 * pair: force loopback (ads.fl) at INIT2RTR, the two QPs being on one
 * function, and at RTR2RTS an ack timeout of 14 and retry / RNR retry 7
 * (RNR retried forever: a notification waits for our credits).
 */
static int
qp_transition(struct mlx5_lm_virtq *vq, struct devx_obj *qp, uint16_t opcode, uint32_t remote)
{
	/* The three transition layouts share header, qpn and qpc offsets. */
	uint8_t in[PRM_SIZE(rst2init_qp_in)];
	uint8_t out[PRM_SIZE(cmd_out) * 2];
	void *qpc = PRM_ADDR(rst2init_qp_in, in, qpc);
	void *ads = PRM_ADDR(qpc, qpc, primary_address_path);
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(rst2init_qp_in, in, opcode, opcode);
	PRM_SET(rst2init_qp_in, in, qpn, devx_obj_id(qp));
	PRM_SET(qpc, qpc, primary_address_path_vhca_port_num, 1);
	if (opcode == PRM_CMD_INIT2RTR_QP) {
		PRM_SET(qpc, qpc, mtu, PRM_QPC_MTU_1K);
		PRM_SET(qpc, qpc, log_msg_max, 30);
		PRM_SET(qpc, qpc, remote_qpn, remote);
		PRM_SET(ads, ads, fl, 1);
	} else if (opcode == PRM_CMD_RST2INIT_QP) {
		PRM_SET(qpc, qpc, rwe, 1);
		PRM_SET(qpc, qpc, rre, 1);
	} else if (opcode == PRM_CMD_RTR2RTS_QP) {
		PRM_SET(ads, ads, ack_timeout, 14);
		PRM_SET(qpc, qpc, retry_count, 7);
		PRM_SET(qpc, qpc, rnr_retry, 7);
	}
	/* A QP transition is a modify of the QP object (Linux devx.c). */
	ret = devx_obj_modify(qp, in, sizeof(in), out, sizeof(out));
	if (ret < 0)
		VQ_LOG(ERR, vq, "event QP 0x%x: %s failed", devx_obj_id(qp), prm_opcode_name(opcode));
	return ret;
}

static void
dbrec_store(uint8_t *rec, uint32_t dword, uint32_t v)
{
	__atomic_store_n((uint32_t *)rec + dword, htobe32(v), __ATOMIC_RELEASE);
}

/* Credits back and the consumer index published, without asking for an event. */
static void
eventq_credit(struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_eventq *eq = &vq->eq;

	/* One ring of receive WQEs past what we consumed. */
	dbrec_store(eq->qp_dbrec, 0, eq->ci + MLX5_LM_EVENTQ_SIZE);
	dbrec_store(eq->cq_dbrec, 0, eq->ci & 0xffffff);
}

/*
 * Hand receive credits back and arm the CQ for the next completion past
 * eq->ci: credits first, so that a notification waiting for them (RNR)
 * is retried by the arm. eq->lock held.
 *
 * The arm carries the current arm sequence number without moving it: the
 * number counts the completion events read (mlx5_lm_eventq_event), not
 * the arms, as the mlx5 drivers keep it (Linux mlx5_cq_completion and
 * mlx5_cq_arm, rdma-core mlx5_cq_event and mlx5_arm_cq, DPDK net/mlx5
 * mlx5_rx_intr_disable). Moved per arm, a poller going idle again and
 * again would re-arm an idle CQ with a new number each time, the fourth
 * repeating the one the device last served.
 */
static void
eventq_rearm(struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_eventq *eq = &vq->eq;
	uint32_t ci = eq->ci & 0xffffff;
	uint32_t arm = (uint32_t)eq->arm_sn << 28 | ci;   /* cmd 0: next completion */

	eventq_credit(vq);
	dbrec_store(eq->cq_dbrec, 1, arm);
	devx_uar_ring(vq->dev->event_uar, DEVX_UAR_CQ_DOORBELL, (uint64_t)arm << 32 | eq->cqn);
	eq->armed = 1;
}

int
mlx5_lm_eventq_event(struct mlx5_lm_virtq *vq, uint32_t cqn, uint32_t *live_cqn)
{
	struct mlx5_lm_eventq *eq = &vq->eq;
	int ours;

	pthread_mutex_lock(&eq->lock);
	/*
	 * An event of a CQ since destroyed (the queue re-created, its new CQ
	 * starting from 0) consumed no arm of the current one.
	 */
	ours = eq->live && eq->cqn == cqn;
	if (ours) {
		eq->arm_sn = (eq->arm_sn + 1) & 3;
		eq->armed = 0;
	}
	*live_cqn = eq->live ? eq->cqn : 0;
	pthread_mutex_unlock(&eq->lock);
	return ours;
}

/* The new completions of vq's event CQ, counted into eq->ci. eq->lock held. */
static int
eventq_count(struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_eventq *eq = &vq->eq;
	uint8_t seen[PRM_SIZE(cqe64)];
	uint32_t dw;
	uint8_t opcode;
	int n = 0;

	/*
	 * wqe_counter, signature and op_own share the CQE's last dword, which
	 * the device writes at once: one load gives an opcode and the
	 * wqe_counter that came with it (DPDK vdpa/mlx5 reads its collapsed
	 * CQE the same way). Two loads can pair the previous CQE's opcode with
	 * a wqe_counter being rewritten. The dword is read into a blank CQE so
	 * that the fields are still read through their layout.
	 */
	dw = __atomic_load_n((uint32_t *)(eq->cqe + PRM_SIZE(cqe64) - sizeof(dw)),
			     __ATOMIC_ACQUIRE);
	memset(seen, 0, sizeof(seen));
	memcpy(seen + sizeof(seen) - sizeof(dw), &dw, sizeof(dw));
	opcode = (uint8_t)PRM_GET(cqe64, seen, opcode);
	if (opcode == PRM_CQE_RESP_SEND) {
		/* Collapsed: the one CQE carries the last receive WQE completed. */
		uint16_t last = (uint16_t)PRM_GET(cqe64, seen, wqe_counter);
		uint16_t got = (uint16_t)(last + 1 - (uint16_t)eq->ci);

		/*
		 * The device completes at most the receive credits we handed out,
		 * one ring past ci (eventq_credit): a larger count is a reading of
		 * no CQE the device wrote. Taken, it would put ci past the CQ's
		 * producer for good; every arm would then find CQEs past ci and
		 * the event would come back at once, forever: a storm of calls
		 * that keeps this thread from relaying kicks (one such reading
		 * forced in the e2e migration test: 2 million guest interrupts,
		 * TX timeouts, no ping answered again). Refused, the arm below
		 * (ci unchanged) brings the event back for a fresh reading.
		 */
		if (got > MLX5_LM_EVENTQ_SIZE) {
			if (eq->bad_reads++ == 0)
				VQ_LOG(ERR, vq, "event CQ 0x%x: wqe_counter %u is %u completions "
				       "past consumer index %u, more than the %u credits given: "
				       "not a count of completions, read again", eq->cqn, last,
				       got, eq->ci, MLX5_LM_EVENTQ_SIZE);
		} else {
			n = got;
			eq->ci += (uint32_t)n;
		}
	} else if (opcode != PRM_CQE_INVALID) {
		VQ_LOG(ERR, vq, "event CQ 0x%x: completion with opcode 0x%x", eq->cqn, opcode);
	}
	return n;
}

/*
 * Count the new completions and arm (or only credit) the CQ; after lost
 * events (lost), also take an armed CQ that completed since as having
 * fired. -1 (lost) or 0 when the queue has no live event CQ.
 */
static int
eventq_poll(struct mlx5_lm_virtq *vq, int arm, bool lost)
{
	struct mlx5_lm_eventq *eq = &vq->eq;
	int n;

	pthread_mutex_lock(&eq->lock);
	if (!eq->live) {
		pthread_mutex_unlock(&eq->lock);
		return lost ? -1 : 0;
	}
	n = eventq_count(vq);
	/*
	 * An armed CQ that completed since raised its event, which may be
	 * among the lost ones: that arm is consumed, the next carries the
	 * next number (as if the event had been read). Should the event
	 * still be queued, reading it moves the number once more: an arm
	 * that differs from the one the device served is a new request
	 * either way, whereas repeating the served one could be ignored.
	 */
	if (lost && eq->armed && n > 0) {
		eq->arm_sn = (eq->arm_sn + 1) & 3;
		eq->armed = 0;
	}
	/*
	 * Polled (timer event modes), a poll that found nothing leaves the
	 * records alone; the CQ is armed only when the poller falls back to
	 * interrupts. An arm whose event was not read yet stands: the device
	 * still holds it, or has served it and the event, on its way, clears
	 * eq->armed. Sent again, the same request (the same sequence number)
	 * would reach a device that may have served the first one by then, at
	 * a consumer index a completion has passed: a second event for one
	 * request. DPDK's vdpa/mlx5 likewise arms a CQ again only once its
	 * event was handled (mlx5_vdpa_cq_arm, cq->armed). After lost events
	 * every CQ is armed again: a completion counted by an earlier poll
	 * may have used the arm, its event among the lost ones.
	 */
	if (arm && (!eq->armed || lost))
		eventq_rearm(vq);
	else if (n > 0)
		eventq_credit(vq);
	pthread_mutex_unlock(&eq->lock);
	return n;
}

int
mlx5_lm_eventq_drain(struct mlx5_lm_virtq *vq, int arm)
{
	return eventq_poll(vq, arm, false);
}

int
mlx5_lm_eventq_recover(struct mlx5_lm_virtq *vq, int arm)
{
	return eventq_poll(vq, arm, true);
}

void
mlx5_lm_eventq_destroy(struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_eventq *eq = &vq->eq;

	/* The notification thread stops touching the rings first. */
	pthread_mutex_lock(&eq->lock);
	eq->live = 0;
	pthread_mutex_unlock(&eq->lock);
	if (eq->sw_qp != NULL && devx_obj_destroy(eq->sw_qp) == 0)
		eq->sw_qp = NULL;
	if (eq->fw_qp != NULL && devx_obj_destroy(eq->fw_qp) == 0)
		eq->fw_qp = NULL;
	if (eq->cq != NULL && devx_obj_destroy(eq->cq) == 0)
		eq->cq = NULL;
}

int
mlx5_lm_eventq_create(struct mlx5_lm_virtq *vq)
{
	/*
	 * The event rings carry "something completed" notices, not one entry
	 * per descriptor: their size is fixed, whatever the virtq's size.
	 */
	uint16_t qsize = MLX5_LM_EVENTQ_SIZE;
	static const uint16_t steps[] = {
		PRM_CMD_RST2INIT_QP, PRM_CMD_INIT2RTR_QP, PRM_CMD_RTR2RTS_QP,
	};
	struct mlx5_lm_eventq *eq = &vq->eq;
	uint8_t *slice;
	unsigned int i;
	int ret = -EIO;

	/*
	 * A CQ or QP the device would not destroy (a failed DESTROY) still
	 * owns this queue's slice of the event buffer: the device may read its
	 * doorbell records and write its rings. Tried again; kept, the slice
	 * is not the driver's to reuse.
	 */
	if (eq->cq != NULL || eq->fw_qp != NULL || eq->sw_qp != NULL) {
		mlx5_lm_eventq_destroy(vq);
		if (eq->cq != NULL || eq->fw_qp != NULL || eq->sw_qp != NULL) {
			VQ_LOG(ERR, vq, "its old event CQ/QPs are still on the device: no new ones "
			       "over their rings");
			return -EBUSY;
		}
	}
	eq->buf_off = (uint64_t)vq->index * event_slice_size(MLX5_LM_EVENTQ_SIZE);
	slice = (uint8_t *)vq->dev->event_buf + eq->buf_off;
	/* A fresh slice: no CQE yet (invalid, owned by software), zero records. */
	memset(slice, 0, event_slice_size(MLX5_LM_EVENTQ_SIZE));
	eq->cqe = slice;
	eq->cq_dbrec = slice + (size_t)qsize * (CQE_SIZE + RQ_STRIDE);
	eq->qp_dbrec = eq->cq_dbrec + DBREC_SIZE;
	PRM_SET(cqe64, eq->cqe, opcode, PRM_CQE_INVALID);
	PRM_SET(cqe64, eq->cqe, owner, 1);
	eq->ci = 0;
	eq->arm_sn = 0;
	eq->armed = 0;
	eq->bad_reads = 0;
	eq->cq = create_cq(vq, qsize);
	if (eq->cq == NULL)
		goto err;
	eq->cqn = devx_obj_id(eq->cq);
	eq->fw_qp = create_qp(vq, qsize, 1);
	if (eq->fw_qp == NULL)
		goto err;
	eq->sw_qp = create_qp(vq, qsize, 0);
	if (eq->sw_qp == NULL)
		goto err;
	/* Connect the two QPs to each other (RC loopback), both to RTS. */
	for (i = 0; i < RTE_DIM(steps); i++) {
		ret = qp_transition(vq, eq->fw_qp, steps[i], devx_obj_id(eq->sw_qp));
		if (ret < 0)
			goto err;
		ret = qp_transition(vq, eq->sw_qp, steps[i], devx_obj_id(eq->fw_qp));
		if (ret < 0)
			goto err;
	}
	ret = devx_evch_subscribe(vq->dev->evch, eq->cq, PRM_EVENT_COMPLETION, vq->index);
	if (ret < 0)
		goto err;
	/* Receive credits for a whole ring, and the first arm. */
	pthread_mutex_lock(&eq->lock);
	eventq_rearm(vq);
	eq->live = 1;
	pthread_mutex_unlock(&eq->lock);
	return 0;
err:
	mlx5_lm_eventq_destroy(vq);
	return ret < 0 ? ret : -EIO;
}
