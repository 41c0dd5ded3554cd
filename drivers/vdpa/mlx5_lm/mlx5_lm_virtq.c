/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware virtqs and their sub-resources: three umems sized from the
 * caps (size_i = a_i * queue_size + b_i), a counter set, and the event
 * path (CQ, the firmware QP the virtq writes to, our QP connected to it).
 *
 * A virtq is created "blank" at probe (INIT, nothing but size and
 * resources) and configured at DRIVER_OK with one MODIFY carrying only the
 * fields that differ plus STATE=RDY. The PRM has no modify bit for
 * queue_size, so a size change means destroy and re-create.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

/* IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ */
#define UMEM_ACCESS 0x7
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
					     UMEM_ACCESS, EVENT_PAGE);
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

void
mlx5_lm_vq_doorbell(struct mlx5_lm_dev *dev, uint16_t index)
{
	/* Our VAR's doorbell: doorbell_bar_offset + k * stride (VAR k, Linux alloc_var_entry). */
	uint64_t off = dev->caps.doorbell_bar_offset +
		       ((uint64_t)devx_db_index(dev->db) << dev->caps.log_doorbell_stride);

	devx_db_ring(dev->db, (uint32_t)off, index);
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
 * The arm carries the current arm sequence number and leaves it as it is:
 * the number counts the completion events read (mlx5_lm_eventq_event),
 * not the arms. That is how the mlx5 drivers keep it: Linux increments
 * cq->arm_sn in mlx5_cq_completion (mlx5/core/cq.c) and mlx5_cq_arm
 * (include/linux/mlx5/cq.h) only sends it; rdma-core increments it in
 * mlx5_cq_event (called by ibv_get_cq_event) and mlx5_arm_cq only sends
 * it; DPDK net/mlx5 increments it in mlx5_rx_intr_disable, once the event
 * is read. DPDK vdpa/mlx5 increments it in mlx5_vdpa_cq_arm, but arms a
 * CQ again only after consuming its CQEs (cq->armed): there too it moves
 * once per event. So every arm until the next event repeats the same
 * request, and the first arm after an event is the next one. Counted per
 * arm (as here before), a poller going idle again and again (event_mode
 * 0/1) re-armed a CQ that had no event with a new number each time, and
 * the fourth such arm carried the number of the arm the device had last
 * served: no public source says what the device makes of that.
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
	 * interrupts.
	 */
	if (arm)
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

static void
eventq_destroy(struct mlx5_lm_virtq *vq)
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

static int
eventq_create(struct mlx5_lm_virtq *vq)
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
		eventq_destroy(vq);
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
	eventq_destroy(vq);
	return ret < 0 ? ret : -EIO;
}

void
mlx5_lm_virtq_orphans_release(struct mlx5_lm_virtq *vq, int closed)
{
	uint8_t i, kept = 0;

	for (i = 0; i < vq->n_orphans; i++) {
		if (closed || devx_umem_dereg(vq->orphans[i].umem) == 0) {
			free(vq->orphans[i].buf);
			continue;
		}
		vq->orphans[kept++] = vq->orphans[i];
	}
	vq->n_orphans = kept;
}

static void
umems_destroy(struct mlx5_lm_virtq *vq)
{
	int i;

	mlx5_lm_virtq_orphans_release(vq, 0);
	for (i = 0; i < 3; i++) {
		if (vq->umem[i] != NULL && devx_umem_dereg(vq->umem[i]) < 0) {
			/* The device still holds it: keep it and its memory aside. */
			if (vq->n_orphans == RTE_DIM(vq->orphans)) {
				VQ_LOG(ERR, vq, "umem %d kept by the device, no room to track it", i + 1);
				continue;
			}
			vq->orphans[vq->n_orphans].umem = vq->umem[i];
			vq->orphans[vq->n_orphans].buf = vq->umem_buf[i];
			vq->n_orphans++;
			vq->umem[i] = NULL;
			vq->umem_buf[i] = NULL;
			continue;
		}
		vq->umem[i] = NULL;
		free(vq->umem_buf[i]);
		vq->umem_buf[i] = NULL;
	}
}

static int
umems_create(struct mlx5_lm_virtq *vq, uint16_t qsize)
{
	const struct rte_pmd_mlx5_lm_caps *c = &vq->dev->caps;
	int i;

	for (i = 0; i < 3; i++) {
		size_t size = (size_t)c->umem_param_a[i] * qsize + c->umem_param_b[i];

		vq->umem_size[i] = (uint32_t)size;
		vq->umem_buf[i] = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		if (vq->umem_buf[i] == NULL)
			goto err;
		memset(vq->umem_buf[i], 0, size);
		vq->umem[i] = devx_umem_reg(vq->dev->devx, vq->umem_buf[i], size, UMEM_ACCESS);
		if (vq->umem[i] == NULL) {
			VQ_LOG(ERR, vq, "cannot register umem %d (%zu bytes)", i + 1, size);
			goto err;
		}
	}
	return 0;
err:
	umems_destroy(vq);
	return -EIO;
}

static struct devx_obj *
counters_create(struct mlx5_lm_virtq *vq)
{
	uint8_t in[PRM_SIZE(virtq_counters_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_counters_cmd, in, hdr);
	struct devx_obj *obj;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	obj = devx_obj_create(vq->dev->devx, in, sizeof(in), out, sizeof(out));
	if (obj == NULL)
		VQ_LOG(ERR, vq, "cannot create the counter set");
	return obj;
}

/* Write the modifiable fields of cfg into a virtio_net_q / virtio_q pair. */
static void
put_cfg(void *obj, void *q, const struct mlx5_lm_vq_cfg *cfg)
{
	PRM_SET(virtio_net_q, obj, hw_available_index, cfg->hw_available_index);
	PRM_SET(virtio_net_q, obj, hw_used_index, cfg->hw_used_index);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_12_3, cfg->features >> 3);
	PRM_SET(virtio_net_q, obj, queue_feature_bit_mask_2_0, cfg->features & 7);
	PRM_SET(virtio_q, q, virtio_q_type, cfg->type);
	PRM_SET(virtio_q, q, virtio_version_1_0, cfg->version_1);
	PRM_SET(virtio_q, q, desc_addr, cfg->desc);
	PRM_SET(virtio_q, q, used_addr, cfg->used);
	PRM_SET(virtio_q, q, available_addr, cfg->avail);
	PRM_SET(virtio_q, q, virtio_q_mkey, cfg->mkey);
	PRM_SET(virtio_q, q, event_mode, cfg->event_mode);
	PRM_SET(virtio_q, q, event_qpn_or_msix, cfg->event_qpn);
	PRM_SET(virtio_q, q, queue_period_mode, cfg->period_mode);
	PRM_SET(virtio_q, q, queue_period_us, cfg->period_us);
	PRM_SET(virtio_q, q, queue_max_count, cfg->max_count);
}

/*
 * Completion moderation of every queue of the device, from the devargs
 * hw_latency_mode / hw_max_latency_us / hw_max_pending_comp, as DPDK
 * vdpa/mlx5 fills queue_period_mode / queue_period_us / queue_max_count
 * (0 = the device's default). A property of the device, not of the ring:
 * whatever configuration the caller built, these are what the queue gets.
 */
static void
put_moderation(const struct mlx5_lm_dev *dev, struct mlx5_lm_vq_cfg *cfg)
{
	cfg->period_mode = (uint8_t)dev->args.hw_latency_mode;
	cfg->period_us = (uint16_t)dev->args.hw_max_latency_us;
	cfg->max_count = (uint16_t)dev->args.hw_max_pending_comp;
}

/* The modify_field_select bits for going from cur to want. */
static uint64_t
cfg_diff(const struct mlx5_lm_vq_cfg *cur, const struct mlx5_lm_vq_cfg *want)
{
	uint64_t bits = 0;

	if (cur->desc != want->desc || cur->used != want->used || cur->avail != want->avail)
		bits |= PRM_VIRTQ_MODIFY_ADDRS;
	if (cur->hw_available_index != want->hw_available_index)
		bits |= PRM_VIRTQ_MODIFY_HW_AVAILABLE_INDEX;
	if (cur->hw_used_index != want->hw_used_index)
		bits |= PRM_VIRTQ_MODIFY_HW_USED_INDEX;
	if (cur->type != want->type)
		bits |= PRM_VIRTQ_MODIFY_Q_TYPE;
	if (cur->version_1 != want->version_1)
		bits |= PRM_VIRTQ_MODIFY_VIRTIO_VERSION_1_0;
	if (cur->features != want->features)
		bits |= PRM_VIRTQ_MODIFY_QUEUE_FEATURES;
	if (cur->mkey != want->mkey)
		bits |= PRM_VIRTQ_MODIFY_Q_MKEY;
	if (cur->event_mode != want->event_mode || cur->event_qpn != want->event_qpn)
		bits |= PRM_VIRTQ_MODIFY_EVENT_MODE;
	if (cur->period_mode != want->period_mode || cur->period_us != want->period_us ||
	    cur->max_count != want->max_count)
		bits |= PRM_VIRTQ_MODIFY_QUEUE_PERIOD;
	return bits;
}

int
mlx5_lm_virtq_create(struct mlx5_lm_virtq *vq, uint16_t size, const struct mlx5_lm_vq_cfg *cfg,
		     int ready)
{
	struct mlx5_lm_dev *dev = vq->dev;
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	void *q = PRM_ADDR(virtq_cmd, in, q);
	struct mlx5_lm_vq_cfg blank = {
		.type = PRM_VIRTQ_TYPE_SPLIT,
		.version_1 = 1,
		.event_mode = PRM_VIRTQ_EVENT_MODE_QP,
	};
	struct mlx5_lm_vq_cfg full;
	int ret, i;

	ret = umems_create(vq, size);
	if (ret < 0)
		goto err_umems;
	/*
	 * A device without VIRTIO_Q_COUNTERS (general_obj_types bit 28) counts
	 * nothing. The counter set of an earlier object of this queue is kept:
	 * the count goes on (DPDK vdpa/mlx5 creates virtq->counters once).
	 */
	if (vq->counters == NULL && mlx5_lm_has_counters(dev)) {
		vq->counters = counters_create(vq);
		if (vq->counters == NULL) {
			ret = -EIO;
			goto err_counters;
		}
	}
	ret = eventq_create(vq);
	if (ret < 0)
		goto err_eventq;
	blank.event_qpn = devx_obj_id(vq->eq.fw_qp);
	/* Blank or not, a queue is created with the device's moderation. */
	put_moderation(dev, &blank);
	if (cfg != NULL) {
		/* Created configured: its events go to the QP made just now. */
		full = *cfg;
		full.event_mode = PRM_VIRTQ_EVENT_MODE_QP;
		full.event_qpn = blank.event_qpn;
		put_moderation(dev, &full);
		cfg = &full;
	} else {
		cfg = &blank;
	}

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	/*
	 * No vhca_id, and the doorbell stride we write, our VAR's: 0 with the
	 * function's first (or only) VAR, as every public driver leaves both
	 * for its own function (Linux mlx5_vnet create_virtqueue, DPDK
	 * mlx5_devx_cmd_create_virtq) and writes every queue's index there.
	 * Firmware that binds a queue to the stride it names would drop the
	 * kicks of every queue named at a stride it does not write.
	 */
	PRM_SET(virtio_q, q, doorbell_stride_index, devx_db_index(dev->db));
	/* TX queues send through the TIS; RX queues are fed by the RQT. */
	if (vq->index & 1)
		PRM_SET(virtio_net_q, obj, tisn_or_qpn, devx_obj_id(dev->res.tis));
	PRM_SET(virtio_q, q, queue_index, vq->index);
	PRM_SET(virtio_q, q, queue_size, size);
	PRM_SET(virtio_q, q, pd, devx_pd_id(dev->res.pd));
	if (vq->counters != NULL)
		PRM_SET(virtio_q, q, counter_set_id, devx_obj_id(vq->counters));
	PRM_SET(virtio_q, q, umem_1_id, devx_umem_id(vq->umem[0]));
	PRM_SET(virtio_q, q, umem_1_size, vq->umem_size[0]);
	PRM_SET(virtio_q, q, umem_2_id, devx_umem_id(vq->umem[1]));
	PRM_SET(virtio_q, q, umem_2_size, vq->umem_size[1]);
	PRM_SET(virtio_q, q, umem_3_id, devx_umem_id(vq->umem[2]));
	PRM_SET(virtio_q, q, umem_3_size, vq->umem_size[2]);
	put_cfg(obj, q, cfg);
	vq->obj = devx_obj_create(dev->devx, in, sizeof(in), out, sizeof(out));
	if (vq->obj == NULL) {
		VQ_LOG(ERR, vq, "cannot create the virtq (size %u)", size);
		ret = -EIO;
		goto err_obj;
	}
	ret = devx_evch_subscribe(dev->evch, vq->obj, PRM_EVENT_OBJECT_CHANGE, vq->index);
	if (ret < 0)
		goto err_subscribe;
	vq->size = size;
	vq->cur = *cfg;
	vq->hw_state = PRM_VIRTQ_STATE_INIT;
	vq->used = cfg != &blank;
	if (ready) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
		if (ret < 0)
			goto err_subscribe;
	}
	return 0;
err_subscribe:
	if (devx_obj_destroy(vq->obj) == 0)
		vq->obj = NULL;
	else
		vq->cur = *cfg;  /* what the object that stays names (mlx5_lm_virtq_names_mkey) */
err_obj:
	eventq_destroy(vq);
err_eventq:
	/* The counter set stays with the queue until the device goes. */
err_counters:
	umems_destroy(vq);
err_umems:
	for (i = 0; i < 3; i++)
		vq->umem_size[i] = 0;
	return ret;
}

/* Reverse of mlx5_lm_virtq_create: the virtq first, it references everything else. */
void
mlx5_lm_virtq_destroy(struct mlx5_lm_virtq *vq)
{
	if (vq->obj != NULL) {
		if (devx_obj_destroy(vq->obj) < 0)
			VQ_LOG(ERR, vq, "cannot destroy the virtq");
		else
			vq->obj = NULL;
	}
	eventq_destroy(vq);
	umems_destroy(vq);
	vq->size = 0;
	vq->hw_state = PRM_VIRTQ_STATE_INIT;
	vq->used = 0;
	/* An object whose destroy failed still names its keys: they are kept for it. */
	if (vq->obj == NULL) {
		memset(&vq->cur, 0, sizeof(vq->cur));
		__atomic_store_n(&vq->log_mkey, 0, __ATOMIC_RELEASE);
	}
}

int
mlx5_lm_virtq_names_mkey(const struct mlx5_lm_virtq *vq, uint32_t key)
{
	/* Read by the garbage thread without the device lock: see mlx5_lm_mr.c mr_user. */
	if (key == 0 || __atomic_load_n(&vq->obj, __ATOMIC_ACQUIRE) == NULL)
		return 0;
	return __atomic_load_n(&vq->cur.mkey, __ATOMIC_ACQUIRE) == key ||
	       __atomic_load_n(&vq->log_mkey, __ATOMIC_ACQUIRE) == key;
}

int
mlx5_lm_virtq_recreate(struct mlx5_lm_virtq *vq, uint16_t size, const struct mlx5_lm_vq_cfg *cfg,
		       int ready)
{
	struct mlx5_lm_vq_cfg c;
	int ret;

	if (vq->obj != NULL) {
		mlx5_lm_virtq_destroy(vq);
		if (vq->obj != NULL)
			return -EBUSY;
	}
	if (cfg == NULL)
		return mlx5_lm_virtq_create(vq, size, NULL, 0);
	/* No MODIFY of a blank queue's configuration on this device: create it whole. */
	if (!mlx5_lm_can_modify_blank(vq->dev))
		return mlx5_lm_virtq_create(vq, size, cfg, ready);
	/* Blank first: its event QP exists only then, and the MODIFY names it. */
	ret = mlx5_lm_virtq_create(vq, size, NULL, 0);
	if (ret < 0)
		return ret;
	c = *cfg;
	c.event_qpn = vq->cur.event_qpn;
	return mlx5_lm_virtq_modify(vq, &c, ready);
}

static int
virtq_modify(struct mlx5_lm_virtq *vq, uint64_t bits, const struct mlx5_lm_vq_cfg *cfg,
	     uint8_t state)
{
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	void *q = PRM_ADDR(virtq_cmd, in, q);
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_id, devx_obj_id(vq->obj));
	PRM_SET(virtio_net_q, obj, modify_field_select, bits);
	put_cfg(obj, q, cfg);
	PRM_SET(virtio_net_q, obj, state, state);
	ret = devx_obj_modify(vq->obj, in, sizeof(in), out, sizeof(out));
	if (ret < 0) {
		VQ_LOG(ERR, vq, "MODIFY (fields 0x%" PRIx64 ", state %u) failed: status 0x%x, "
		       "syndrome 0x%08x", bits, state,
		       (unsigned int)PRM_GET(general_obj_out_cmd_hdr, out, status),
		       (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, syndrome));
		return ret;
	}
	if (bits & ~PRM_VIRTQ_MODIFY_STATE) {
		vq->cur = *cfg;
		vq->used = 1;
	}
	if (bits & PRM_VIRTQ_MODIFY_STATE) {
		vq->hw_state = state;
		vq->used = 1;
	}
	return 0;
}

int
mlx5_lm_virtq_modify(struct mlx5_lm_virtq *vq, const struct mlx5_lm_vq_cfg *cfg, int ready)
{
	struct mlx5_lm_vq_cfg want = *cfg;
	uint64_t bits;

	put_moderation(vq->dev, &want);
	bits = cfg_diff(&vq->cur, &want);
	if (ready && vq->hw_state != PRM_VIRTQ_STATE_RDY)
		bits |= PRM_VIRTQ_MODIFY_STATE;
	if (bits == 0)
		return 0;
	return virtq_modify(vq, bits, &want, ready ? PRM_VIRTQ_STATE_RDY : vq->hw_state);
}

int
mlx5_lm_virtq_set_state(struct mlx5_lm_virtq *vq, uint8_t state)
{
	return virtq_modify(vq, PRM_VIRTQ_MODIFY_STATE, &vq->cur, state);
}

int
mlx5_lm_virtq_query(struct mlx5_lm_virtq *vq, uint8_t *state, uint8_t *error_type,
		    uint16_t *avail, uint16_t *used)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_cmd)];
	void *obj = PRM_ADDR(virtq_cmd, out, obj);
	void *q = PRM_ADDR(virtq_cmd, out, q);
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, devx_obj_id(vq->obj));
	ret = devx_obj_query(vq->obj, in, sizeof(in), out, sizeof(out));
	if (ret < 0) {
		VQ_LOG(ERR, vq, "QUERY failed");
		return ret;
	}
	if (state != NULL)
		*state = PRM_GET(virtio_net_q, obj, state);
	if (error_type != NULL)
		*error_type = PRM_GET(virtio_q, q, error_type);
	if (avail != NULL)
		*avail = PRM_GET(virtio_net_q, obj, hw_available_index);
	if (used != NULL)
		*used = PRM_GET(virtio_net_q, obj, hw_used_index);
	return 0;
}

void
mlx5_lm_virtq_counters_release(struct mlx5_lm_dev *dev)
{
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];

		if (vq->counters == NULL)
			continue;
		/* Still referenced by a queue the device would not destroy: leave it. */
		if (devx_obj_destroy(vq->counters) < 0) {
			VQ_LOG(ERR, vq, "cannot destroy the counter set");
			continue;
		}
		vq->counters = NULL;
		memset(vq->stats_base, 0, sizeof(vq->stats_base));
	}
}

int
mlx5_lm_virtq_counters(struct mlx5_lm_virtq *vq, uint64_t vals[MLX5_LM_NB_STATS])
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_counters_cmd)];
	void *obj = PRM_ADDR(virtq_counters_cmd, out, obj);
	int ret;

	if (!mlx5_lm_has_counters(vq->dev))
		return -ENOTSUP;
	if (vq->counters == NULL)
		return -ENODEV;
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_Q_COUNTERS);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, devx_obj_id(vq->counters));
	ret = devx_obj_query(vq->counters, in, sizeof(in), out, sizeof(out));
	if (ret < 0)
		return ret;
	vals[0] = PRM_GET(virtio_q_counters, obj, received_desc);
	vals[1] = PRM_GET(virtio_q_counters, obj, completed_desc);
	vals[2] = PRM_GET(virtio_q_counters, obj, bad_desc_errors);
	vals[3] = PRM_GET(virtio_q_counters, obj, exceed_max_chain);
	vals[4] = PRM_GET(virtio_q_counters, obj, invalid_buffer);
	vals[5] = PRM_GET(virtio_q_counters, obj, error_cqes);
	return 0;
}

/* One MODIFY of the dirty-bitmap fields (with STATE=to when state_too). */
static int
dirty_log_modify(struct mlx5_lm_virtq *vq, uint32_t mkey, uint64_t addr, uint32_t size,
		 int enable, int state_too, uint8_t to, uint8_t *status)
{
	uint8_t in[PRM_SIZE(virtq_cmd)];
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];
	void *hdr = PRM_ADDR(virtq_cmd, in, hdr);
	void *obj = PRM_ADDR(virtq_cmd, in, obj);
	uint64_t bits = PRM_VIRTQ_MODIFY_DIRTY_BITMAP_DUMP_ENABLE;
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, hdr, opcode, PRM_CMD_MODIFY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, hdr, obj_id, devx_obj_id(vq->obj));
	if (enable) {
		bits |= PRM_VIRTQ_MODIFY_DIRTY_BITMAP_PARAMS;
		PRM_SET(virtio_net_q, obj, dirty_bitmap_mkey, mkey);
		PRM_SET(virtio_net_q, obj, dirty_bitmap_addr, addr);
		PRM_SET(virtio_net_q, obj, dirty_bitmap_size, size);
		/* vhost logs 4 KiB pages: log2(page) - 12 = 0. */
		PRM_SET(virtio_net_q, obj, vhost_log_page, 0);
	}
	if (state_too) {
		bits |= PRM_VIRTQ_MODIFY_STATE;
		PRM_SET(virtio_net_q, obj, state, to);
	}
	PRM_SET(virtio_net_q, obj, dirty_bitmap_dump_enable, !!enable);
	PRM_SET(virtio_net_q, obj, modify_field_select, bits);
	ret = devx_obj_modify(vq->obj, in, sizeof(in), out, sizeof(out));
	*status = (uint8_t)PRM_GET(cmd_out, out, status);
	return ret;
}

/*
 * Start or stop the device's dirty-page logging on a queue. A running
 * queue takes the dirty-bitmap fields as they are, without leaving RDY:
 * the vendor's driver starts and stops logging that way on running queues
 * (DPDK vdpa/mlx5 mlx5_vdpa_lm.c mlx5_vdpa_dirty_bitmap_set and
 * mlx5_vdpa_logging_enable, no capability gating it), so the guest never
 * stops and never runs unlogged. Firmware that takes only STATE while RDY
 * (BAD_RES_STATE, the strict reading of the PRM's INIT/SUSPEND rule) is
 * remembered per device and logged once; then the fields go through
 * SUSPEND and back to RDY in one MODIFY (freeze_to_rdy), and without
 * freeze_to_rdy_supported this function refuses a running queue (-ENOTSUP)
 * and the caller re-creates it (mlx5_lm_virtq_recreate_suspended).
 */
int
mlx5_lm_virtq_set_dirty_log(struct mlx5_lm_virtq *vq, uint32_t mkey, uint64_t addr,
			    uint32_t size, int enable)
{
	struct mlx5_lm_dev *dev = vq->dev;
	int was_ready = vq->hw_state == PRM_VIRTQ_STATE_RDY;
	uint8_t status = 0;
	int ret;

	if (was_ready && !__atomic_load_n(&dev->dirty_log_rdy_refused, __ATOMIC_ACQUIRE)) {
		ret = dirty_log_modify(vq, mkey, addr, size, enable, 0, 0, &status);
		if (ret == 0)
			goto done;
		if (ret != -EIO || status != PRM_STATUS_BAD_RES_STATE) {
			VQ_LOG(ERR, vq, "cannot %s dirty-page logging on the running queue",
			       enable ? "start" : "stop");
			return ret;
		}
		if (!__atomic_exchange_n(&dev->dirty_log_rdy_refused, 1, __ATOMIC_ACQ_REL))
			DRV_LOG(WARNING, dev, "the device does not take the dirty bitmap on a "
				"running queue (BAD_RES_STATE): dirty logging falls back to %s",
				mlx5_lm_can_resume(dev) ? "SUSPEND and resume of every running "
				"queue" : "re-creating every running queue (no freeze_to_rdy)");
	}
	if (was_ready && !mlx5_lm_can_resume(dev))
		return -ENOTSUP;
	if (was_ready) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
		if (ret < 0)
			return ret;
	}
	ret = dirty_log_modify(vq, mkey, addr, size, enable, was_ready, PRM_VIRTQ_STATE_RDY,
			       &status);
	if (ret < 0) {
		VQ_LOG(ERR, vq, "cannot %s dirty-page logging", enable ? "start" : "stop");
		return ret;
	}
	if (was_ready)
		vq->hw_state = PRM_VIRTQ_STATE_RDY;
done:
	/*
	 * The object names the log's key now, even a queue still INIT (kept
	 * for its enable): it is no longer blank, and the restore must
	 * re-create it, or the log's registration stays named (so alive) after
	 * its front end has gone.
	 */
	if (enable)
		vq->used = 1;
	__atomic_store_n(&vq->log_mkey, enable ? mkey : 0, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Without freeze_to_rdy_supported a SUSPENDed queue never returns to RDY
 * (PRM virtq state machine), and a RDY queue takes no field but STATE. The
 * fallback, as DPDK vdpa/mlx5 does when it re-sets a queue up: suspend it,
 * read the indices the device reached, destroy it and create it again
 * whole from there (with the dirty log when logging), then make it RDY if
 * asked. An RX queue must not be in the RQT meanwhile: the caller's job.
 */
int
mlx5_lm_virtq_recreate_suspended(struct mlx5_lm_virtq *vq, uint32_t log_mkey, uint32_t log_size,
				 int log_enable, int ready)
{
	struct mlx5_lm_vq_cfg cfg = vq->cur;
	uint16_t size = vq->size, avail, used;
	uint8_t state;
	int ret;

	if (vq->hw_state == PRM_VIRTQ_STATE_RDY) {
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_SUSPEND);
		if (ret < 0)
			return ret;
	}
	ret = mlx5_lm_virtq_query(vq, &state, NULL, &avail, &used);
	if (ret < 0)
		return ret;
	/* A queue that went to ERR restarts from what it completed, as a recovery does. */
	cfg.hw_available_index = state == PRM_VIRTQ_STATE_ERR ? used : avail;
	cfg.hw_used_index = used;
	mlx5_lm_virtq_destroy(vq);
	if (vq->obj != NULL)
		return -EBUSY;
	/* The new object counts on the same counter set. */
	ret = mlx5_lm_virtq_create(vq, size, &cfg, 0);
	if (ret < 0)
		return ret;
	if (log_enable) {
		ret = mlx5_lm_virtq_set_dirty_log(vq, log_mkey, 0, log_size, 1);
		if (ret < 0)
			return ret;
	}
	if (ready)
		ret = mlx5_lm_virtq_set_state(vq, PRM_VIRTQ_STATE_RDY);
	return ret;
}
