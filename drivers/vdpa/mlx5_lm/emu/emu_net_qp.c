/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CQ/QP pair of a virtq's event channel: CREATE_CQ and CREATE_QP on
 * umems, the QP state machine (RST -> INIT -> RTR -> RTS, 2RST), a
 * notification delivered from the firmware QP to its peer (a receive
 * credit consumed, a completion written into the collapsed or regular
 * CQ), and the CQ's arm doorbells with the completion events they raise.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

/*
 * A umem named by a create command must exist and hold `need` bytes at
 * off; *host (when asked) gets the device's address of that byte.
 */
static int
hold_umem(struct emu_ctx *c, struct emu_net_obj *o, uint32_t id, uint64_t off, uint64_t need,
	  int page_offset, const char *what, uint8_t **host)
{
	struct emu_umem *u = (struct emu_umem *)emu_obj_find(c->dev, EMU_KIND_UMEM, id);

	if (u == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	if (off > u->size || need > u->size - off)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_TOO_SMALL);
	/* Where the kernel's description of the umem can place it (emu_umem_offset_ok). */
	if (!emu_umem_offset_ok(c->dev, u, off, page_offset, what))
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_UMEM_BAD_OFFSET);
	if (host != NULL)
		*host = u->addr + off;
	return emu_net_hold(c, o, &u->obj);
}

/* A 32-bit big-endian doorbell-record field the driver writes at any time. */
static uint32_t
dbrec_load(const uint8_t *rec, uint32_t dword)
{
	uint32_t v = __atomic_load_n((const uint32_t *)rec + dword, __ATOMIC_ACQUIRE);

	return be32toh(v);
}

/*
 * CREATE_CQ. The CQ must name one of the function's completion EQs
 * (cqc.c_eqn: Linux's devx.c looks it up among the completion EQs and
 * fails with ENOENT otherwise; no completion EQ is number 0) and a UAR
 * page of this device (cqc.uar_page: the page whose CQ doorbell arms
 * it). DevX users give the CQE ring and the doorbell record in umems
 * (cq_umem_valid, dbr_umem_valid); the emulator models no PAS list.
 */
int
emu_net_create_cq(struct emu_ctx *c)
{
	const void *cqc = PRM_CADDR(create_cq_in, c->in, cq_context);
	uint32_t log_size = (uint32_t)PRM_GET(cqc, cqc, log_cq_size);
	uint64_t cqe = PRM_GET(cqc, cqc, cqe_sz) == PRM_CQC_CQE_SZ_128 ? 128 : 64;
	/* The kernel reads all 32 bits (mlx5_core_create_cq: c_eqn_or_apu_element). */
	uint32_t eqn = (uint32_t)PRM_GET(cqc, cqc, c_eqn_or_apu_element);
	uint32_t uar_id = (uint32_t)PRM_GET(cqc, cqc, uar_page);
	struct emu_obj *uar;
	struct emu_net_obj *o;
	int status = 0;

	if (log_size > 24)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	if (!emu_eqn_is_completion(c->dev, eqn)) {
		emu_log(c->dev, 4, "CREATE_CQ: c_eqn %u is not a completion EQ of the function "
			"(cqc.c_eqn_or_apu_element, 32 bits; Linux mlx5_core_create_cq: ENOENT)",
			eqn);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_BAD_EQN);
	}
	uar = emu_obj_find(c->dev, EMU_KIND_UAR, uar_id);
	if (uar == NULL) {
		emu_log(c->dev, 4, "CREATE_CQ: uar_page %u is not a UAR page of this device "
			"(cqc.uar_page)", uar_id);
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_BAD_UAR);
	}
	/* Overrun ignore is a capability (cmd_hca_cap.cq_oi). */
	if (PRM_GET(cqc, cqc, oi) && !c->dev->prof->caps.cq_oi) {
		emu_log(c->dev, 4, "CREATE_CQ: cqc.oi without the cq_oi capability");
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CAP_NOT_SUPPORTED);
	}
	if (!PRM_GET(create_cq_in, c->in, cq_umem_valid) || !PRM_GET(cqc, cqc, dbr_umem_valid)) {
		emu_log(c->dev, 4, "CREATE_CQ: CQE ring and doorbell record must be in umems "
			"(cq_umem_valid, cqc.dbr_umem_valid)");
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_CQ_NO_UMEM);
	}
	o = emu_net_new(c, EMU_KIND_CQ);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->size = log_size;
	o->uar_page = uar_id;
	o->eqn = eqn;
	o->cqe_size = (uint32_t)cqe;
	o->cc = PRM_GET(cqc, cqc, cc) != 0;
	o->oi = PRM_GET(cqc, cqc, oi) != 0;
	status = emu_net_hold(c, o, uar);
	if (status == 0)
		status = hold_umem(c, o, (uint32_t)PRM_GET(create_cq_in, c->in, cq_umem_id),
				   PRM_GET(create_cq_in, c->in, cq_umem_offset),
				   cqe << log_size, (int)PRM_GET(cqc, cqc, page_offset), "CQ ring",
				   &o->cqes);
	if (status == 0)
		status = hold_umem(c, o, (uint32_t)PRM_GET(cqc, cqc, dbr_umem_id),
				   PRM_GET(cqc, cqc, dbr_addr), PRM_SIZE(cq_dbrec),
				   EMU_UMEM_ANY_IN_PAGE, "CQ doorbell record", &o->dbrec);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	/* What the record holds now is no arm request (merged doorbells). */
	o->arm_dbrec_seen = dbrec_load(o->dbrec, 1);
	return emu_net_created(c, o);
}

/* Post a completion event of cq if it is armed; one event disarms it. */
static void
cq_event(struct emu_dev *dev, struct emu_net_obj *cq)
{
	if (!cq->arm_valid)
		return;
	cq->arm_valid = false;
	emu_event_post(dev, EMU_KIND_CQ, cq->obj.id, PRM_EVENT_COMPLETION, NULL);
}

/*
 * Write one CQE (PRM: 64-byte CQE, opcode/owner byte last) for a
 * completion of QP qpn's WQE wqe_counter. A CQ without cqc.oi whose
 * consumer index (doorbell record) lags a whole ring behind overruns:
 * it goes to error, nothing more is written, and a CQ error event
 * (PRM event type 0x04) is posted. Returns 0, or -1 on overrun.
 */
static int
cq_complete(struct emu_dev *dev, struct emu_net_obj *cq, uint32_t qpn, uint16_t wqe_counter,
	    uint8_t opcode)
{
	uint8_t next[PRM_SIZE(cqe64)];
	uint32_t n = 1u << cq->size, idx, last;
	uint8_t *cqe;

	if (cq->cq_error)
		return -1;
	if (!cq->oi) {
		uint32_t ci = dbrec_load(cq->dbrec, 0) & 0xffffff;

		if (((cq->pc - ci) & 0xffffff) >= n) {
			cq->cq_error = true;
			emu_log(dev, 4, "CQ 0x%x overrun: %u CQEs produced, consumer index %u, %u "
				"entries and no cqc.oi (PRM: CQ error event 0x04)", cq->obj.id,
				cq->pc, ci, n);
			emu_event_post(dev, EMU_KIND_CQ, cq->obj.id, PRM_EVENT_CQ_ERROR, NULL);
			return -1;
		}
	}
	idx = cq->cc ? 0 : (cq->pc & (n - 1));
	cqe = cq->cqes + (size_t)idx * cq->cqe_size + (cq->cqe_size - PRM_SIZE(cqe64));
	/*
	 * Composed aside, then written as the device writes a CQE: never a
	 * state of the entry that is neither the old nor the new one. The
	 * last dword {wqe_counter, signature, op_own} goes in one store, after
	 * the rest (release): a collapsed CQ (cqc.cc) is rewritten in place
	 * while the driver may be reading it, and zeroing the entry first
	 * could show it the previous opcode beside a wqe_counter of 0, a state
	 * no ConnectX writes (DPDK vdpa/mlx5 and the PMD read that dword as
	 * one word; test_events' torn read is what the PMD made of it).
	 */
	memset(next, 0, sizeof(next));
	PRM_SET(cqe64, next, byte_cnt, 0);
	PRM_SET(cqe64, next, qpn, qpn);
	PRM_SET(cqe64, next, wqe_counter, wqe_counter);
	PRM_SET(cqe64, next, opcode, opcode);
	PRM_SET(cqe64, next, owner, (cq->pc >> cq->size) & 1);
	memcpy(&last, next + sizeof(next) - sizeof(last), sizeof(last));
	memcpy(cqe, next, sizeof(next) - sizeof(last));
	__atomic_store_n((uint32_t *)(cqe + sizeof(next) - sizeof(last)), last, __ATOMIC_RELEASE);
	cq->pc++;
	cq_event(dev, cq);
	return 0;
}

/*
 * One message from qp to its peer's receive queue. The peer's receive
 * credits are its doorbell record's receive counter minus the WQEs the
 * device consumed; with none, the message waits (RNR NAK) and is retried
 * at the next notification or at the next arm of the peer's CQ, at most
 * qpc.rnr_retry times (7 = forever, as in IB); past that the sender goes
 * to ERR and a WQ catastrophic error event (type 0x05) reports it.
 */
static void
qp_deliver(struct emu_dev *dev, struct emu_net_obj *qp, struct emu_net_obj *peer,
	   struct emu_net_obj *cq)
{
	uint32_t wqes = 1u << peer->log_rq_size;
	uint32_t credits = (dbrec_load(peer->dbrec, 0) - peer->rq_consumed) & 0xffff;

	if (credits == 0 || credits > wqes) {
		/* More than a ring of credits is a corrupt counter: no credit either. */
		if (!qp->rnr_pending) {
			qp->rnr_pending = true;
			qp->rnr_left = qp->rnr_retry;
		} else if (qp->rnr_retry != 7 && qp->rnr_left-- == 0) {
			qp->rnr_pending = false;
			qp->state = PRM_QPC_STATE_ERR;
			emu_log(dev, 4, "QP 0x%x: RNR retries (qpc.rnr_retry %u) exhausted, "
				"QP 0x%x has no receive credit (receive counter %u, "
				"consumed %u): QP to ERR", qp->obj.id, qp->rnr_retry,
				peer->obj.id, dbrec_load(peer->dbrec, 0), peer->rq_consumed);
			emu_event_post(dev, EMU_KIND_QP, qp->obj.id, PRM_EVENT_WQ_CATAS_ERROR,
				       NULL);
			return;
		}
		cq->wait_qpn = qp->obj.id;
		return;
	}
	qp->rnr_pending = false;
	if (cq->wait_qpn == qp->obj.id)
		cq->wait_qpn = 0;
	if (cq_complete(dev, cq, peer->obj.id, (uint16_t)peer->rq_consumed,
			PRM_CQE_RESP_SEND) == 0)
		peer->rq_consumed++;
}

void
emu_net_qp_notify(struct emu_dev *dev, struct emu_net_obj *qp)
{
	struct emu_net_obj *peer, *cq;

	/* An RC sender sends in RTS only; its peer receives from RTR on. */
	if (qp->state != PRM_QPC_STATE_RTS)
		return;
	peer = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_QP, qp->remote_qpn);
	if (peer == NULL || peer->cqn_rcv == 0 || peer->dbrec == NULL ||
	    peer->rq_type != PRM_QPC_RQ_TYPE_REGULAR ||
	    (peer->state != PRM_QPC_STATE_RTR && peer->state != PRM_QPC_STATE_RTS))
		return;
	cq = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_CQ, peer->cqn_rcv);
	if (cq == NULL)
		return;
	qp_deliver(dev, qp, peer, cq);
}

/* The CQ arm dword: sn << 28 | cmd << 24 | ci, in the record as on the UAR. */
static uint32_t
arm_dword(uint8_t sn, uint8_t cmd, uint32_t ci)
{
	return (uint32_t)(sn & 3) << 28 | (uint32_t)(cmd & 3) << 24 | (ci & 0xffffff);
}

/* Arm cq with the request (sn, cmd, ci). dev->lock held. */
static void
cq_arm(struct emu_dev *dev, struct emu_net_obj *cq, uint8_t sn, uint8_t cmd, uint32_t ci)
{
	if (cq->dbrec != NULL)
		cq->arm_dbrec_seen = dbrec_load(cq->dbrec, 1);
	cq->arm_rung = true;
	cq->arm_valid = true;
	cq->arm_cmd = cmd;
	/*
	 * Recorded, not checked: no public source says what the device does
	 * with an arm's sequence number, stale or repeated (mlx5_ifc.h has no
	 * CQ doorbell layout; Linux mlx5_cq_arm, rdma-core mlx5_arm_cq and
	 * DPDK's mlx5_vdpa_cq_arm only write it). The mlx5 drivers keep it as
	 * the count of completion events mod 4; the emulator invents no rule
	 * on it (doc/emulator.md, "CQ arm sequence number").
	 */
	cq->arm_sn = sn;
	cq->arm_ci = ci;
	/* A message that waited for credits is retried now (the driver replenished). */
	if (cq->wait_qpn != 0) {
		struct emu_net_obj *qp =
			(struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_QP, cq->wait_qpn);

		cq->wait_qpn = 0;
		if (qp != NULL && qp->rnr_pending)
			emu_net_qp_notify(dev, qp);
	}
	/* Armed behind the producer: CQEs past ci exist, the event is due now. */
	if (cq->arm_valid && !cq->cq_error && ((cq->pc - ci) & 0xffffff) != 0)
		cq_event(dev, cq);
}

void
emu_net_cq_doorbell(struct emu_dev *dev, uint32_t uar, uint32_t cqn, uint8_t sn, uint8_t cmd,
		    uint32_t ci)
{
	struct emu_net_obj *cq = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_CQ, cqn);
	bool taken;

	if (cq == NULL || cq->uar_page != uar) {
		/* The CQ doorbell of another page does not reach this CQ. */
		emu_log(dev, 4, "CQ doorbell for CQ 0x%x on UAR page %u: %s", cqn, uar,
			cq == NULL ? "no such CQ" : "not the CQ's UAR page");
		return;
	}
	/*
	 * An arm the watcher already took from the record, its UAR write now
	 * seen (the record is written first, and a look between the two
	 * stores finds it there): the same request, which the device of a
	 * real UAR receives once. Taken again, it re-arms a CQ whose first
	 * arm a completion may have used meanwhile, at the consumer index of
	 * before that completion: a second event for one request, the
	 * driver's arm sequence number moved twice.
	 */
	taken = cq->arm_from_record && cq->arm_record == arm_dword(sn, cmd, ci);
	cq->arm_from_record = false;
	if (taken) {
		emu_log(dev, 7, "CQ 0x%x: UAR arm 0x%x already taken from its doorbell record",
			cqn, cq->arm_record);
		return;
	}
	cq_arm(dev, cq, sn, cmd, ci);
}

void
emu_net_cq_doorbell_others(struct emu_dev *dev, uint32_t uar)
{
	struct emu_obj *o;

	EMU_FOR_KIND(o, dev, EMU_KIND_CQ) {
		struct emu_net_obj *cq = (struct emu_net_obj *)o;
		uint8_t sn, cmd;
		uint32_t arm;

		if (cq->uar_page != uar || cq->dbrec == NULL)
			continue;
		arm = dbrec_load(cq->dbrec, 1);
		/*
		 * The first arm (sn 0, ci 0) writes a record that may look
		 * unchanged: a CQ no doorbell reached yet is taken as asking.
		 * An early arm costs at most one event more, which the mlx5
		 * event handlers (poll the CQ, re-arm) absorb.
		 */
		if (arm == cq->arm_dbrec_seen && cq->arm_rung)
			continue;
		/* The arm dword: sn << 28 | cmd << 24 | ci, as on the UAR. */
		sn = (arm >> 28) & 0x3;
		cmd = (arm >> 24) & 0x3;
		cq_arm(dev, cq, sn, cmd, arm & 0xffffff);
		cq->arm_from_record = true;
		cq->arm_record = arm_dword(sn, cmd, arm);
	}
}

int
emu_net_destroy_cq(struct emu_ctx *c)
{
	/* RES_BUSY while a QP completes into it. */
	return emu_net_destroy(c, EMU_KIND_CQ);
}

/*
 * May a QP carry timestamp format fmt, the device's cap being cap
 * (prm_ts_format_cap)? Free-running only with free-running timestamps,
 * real time only with real-time ones, the device's default with either
 * but not on a free-running-only device, where Linux and DPDK both ask for
 * free-running (mlx5_get_qp_default_ts, mlx5_ts_format_conv): the
 * stricter reading.
 */
static bool
ts_format_allowed(uint8_t cap, uint8_t fmt)
{
	switch (fmt) {
	case PRM_TS_FORMAT_FREE_RUNNING:
		return cap != PRM_TS_FORMAT_CAP_REAL_TIME;
	case PRM_TS_FORMAT_DEFAULT:
	case PRM_TS_FORMAT_REAL_TIME:
		return cap != PRM_TS_FORMAT_CAP_FREE_RUNNING;
	default:
		return false;
	}
}

int
emu_net_create_qp(struct emu_ctx *c)
{
	const void *qpc = PRM_CADDR(create_qp_in, c->in, qpc);
	uint32_t pdn = (uint32_t)PRM_GET(qpc, qpc, pd);
	uint32_t cqs[2] = {
		(uint32_t)PRM_GET(qpc, qpc, cqn_snd), (uint32_t)PRM_GET(qpc, qpc, cqn_rcv),
	};
	struct emu_obj *pd, *cq[2] = { NULL, NULL };
	struct emu_net_obj *o;
	int status, i;
	bool has_wq;

	pd = emu_obj_find(c->dev, EMU_KIND_PD, pdn);
	if (pd == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	for (i = 0; i < 2; i++) {
		if (cqs[i] == 0)
			continue;
		cq[i] = emu_obj_find(c->dev, EMU_KIND_CQ, cqs[i]);
		if (cq[i] == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	}
	has_wq = PRM_GET(qpc, qpc, rq_type) != PRM_QPC_RQ_TYPE_ZERO_SIZE ||
		 !PRM_GET(qpc, qpc, no_sq);
	if (has_wq) {
		const struct emu_caps *caps = &c->dev->prof->caps;
		uint8_t cap = caps->roce ? caps->qp_ts_format : caps->sq_ts_format;
		uint8_t fmt = (uint8_t)PRM_GET(qpc, qpc, ts_format);
		uint32_t uar = (uint32_t)PRM_GET(qpc, qpc, uar_page);

		/*
		 * A QP with a work queue names its UAR page, as Linux mlx5_vnet
		 * and DPDK vdpa/mlx5 name theirs for the driver-side event QP
		 * (the firmware-side one, with neither queue, needs none).
		 */
		if (emu_obj_find(c->dev, EMU_KIND_UAR, uar) == NULL) {
			emu_log(c->dev, 4, "CREATE_QP: uar_page %u is not a UAR page of this "
				"device (qpc.uar_page)", uar);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_UAR);
		}
		if (!ts_format_allowed(cap, fmt)) {
			emu_log(c->dev, 4, "CREATE_QP: qpc.ts_format %u refused: the device's %s "
				"is %u (Linux mlx5_get_qp_default_ts)", fmt,
				caps->roce ? "roce_cap.qp_ts_format" : "sq_ts_format", cap);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_TS_FORMAT);
		}
	}
	o = emu_net_new(c, EMU_KIND_QP);
	if (o == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	o->state = PRM_QPC_STATE_RST;
	o->cqn_snd = cqs[0];
	o->cqn_rcv = cqs[1];
	o->rq_type = (uint32_t)PRM_GET(qpc, qpc, rq_type);
	o->log_rq_size = (uint32_t)PRM_GET(qpc, qpc, log_rq_size);
	status = emu_net_hold(c, o, pd);
	for (i = 0; status == 0 && i < 2; i++)
		status = emu_net_hold(c, o, cq[i]);
	/*
	 * The kernel sets wq_umem_valid and qpc.dbr_umem_valid on every DevX
	 * CREATE_QP (Linux devx.c devx_set_umem_valid): they say nothing of a
	 * QP without a work queue (zero-size RQ and no SQ, the event path's
	 * firmware QP, as DPDK vdpa/mlx5 creates it with no umem), which has
	 * no buffer and no doorbell record to find. With a queue, they name
	 * its umems.
	 */
	if (status == 0 && has_wq && PRM_GET(create_qp_in, c->in, wq_umem_valid))
		status = hold_umem(c, o, (uint32_t)PRM_GET(create_qp_in, c->in, wq_umem_id),
				   PRM_GET(create_qp_in, c->in, wq_umem_offset), 1,
				   (int)PRM_GET(qpc, qpc, page_offset), "QP ring", NULL);
	if (status == 0 && has_wq && PRM_GET(qpc, qpc, dbr_umem_valid))
		status = hold_umem(c, o, (uint32_t)PRM_GET(qpc, qpc, dbr_umem_id),
				   PRM_GET(qpc, qpc, dbr_addr), PRM_SIZE(qp_dbrec),
				   EMU_UMEM_ANY_IN_PAGE, "QP doorbell record", &o->dbrec);
	if (status != 0)
		return emu_net_create_failed(c, o, status);
	return emu_net_created(c, o);
}

/*
 * QP state machine (PRM): RST -> INIT -> RTR -> RTS through the three
 * forward commands, any state -> RST through 2RST.
 */
int
emu_net_qp_transition(struct emu_ctx *c)
{
	/* All four transition inputs name the QP at 0x48. */
	uint32_t qpn = (uint32_t)PRM_GET(qp_2rst_in, c->in, qpn);
	struct emu_net_obj *qp = (struct emu_net_obj *)emu_obj_find(c->dev, EMU_KIND_QP, qpn);
	uint32_t from, to;

	if (qp == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	switch (c->opcode) {
	case PRM_CMD_RST2INIT_QP:
		from = PRM_QPC_STATE_RST;
		to = PRM_QPC_STATE_INIT;
		break;
	case PRM_CMD_INIT2RTR_QP:
		from = PRM_QPC_STATE_INIT;
		to = PRM_QPC_STATE_RTR;
		break;
	case PRM_CMD_RTR2RTS_QP:
		from = PRM_QPC_STATE_RTR;
		to = PRM_QPC_STATE_RTS;
		break;
	default:
		/* 2RST: the receive queue and any message in flight are gone. */
		qp->state = PRM_QPC_STATE_RST;
		qp->rq_consumed = 0;
		qp->rnr_pending = false;
		return PRM_STATUS_OK;
	}
	if (qp->state != from)
		return emu_fail(c, PRM_STATUS_BAD_RES_STATE, EMU_SYND_QP_BAD_TRANSITION);
	if (c->opcode == PRM_CMD_INIT2RTR_QP) {
		const void *qpc = PRM_CADDR(init2rtr_qp_in, c->in, qpc);
		const void *ads = PRM_CADDR(qpc, qpc, primary_address_path);
		uint32_t remote = (uint32_t)PRM_GET(qpc, qpc, remote_qpn);

		/*
		 * Two QPs of one function talk through the port only in force
		 * loopback (ads.fl), which Linux's mlx5_vnet and DPDK's vdpa/mlx5
		 * set at INIT2RTR for the event QP pair; the peer must exist.
		 */
		if (!PRM_GET(ads, ads, fl)) {
			emu_log(c->dev, 4, "INIT2RTR_QP 0x%x: primary_address_path.fl is 0; a QP "
				"pair on one function needs force loopback", qpn);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_NO_LOOPBACK);
		}
		if (remote == 0 || emu_obj_find(c->dev, EMU_KIND_QP, remote) == NULL) {
			emu_log(c->dev, 4, "INIT2RTR_QP 0x%x: remote_qpn 0x%x names no QP", qpn,
				remote);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_BAD_REMOTE);
		}
		qp->remote_qpn = remote;
		qp->fl = true;
	} else if (c->opcode == PRM_CMD_RTR2RTS_QP) {
		const void *qpc = PRM_CADDR(rtr2rts_qp_in, c->in, qpc);
		const void *ads = PRM_CADDR(qpc, qpc, primary_address_path);
		uint8_t retry = (uint8_t)PRM_GET(qpc, qpc, retry_count);
		uint8_t rnr = (uint8_t)PRM_GET(qpc, qpc, rnr_retry);
		uint8_t ack = (uint8_t)PRM_GET(ads, ads, ack_timeout);

		/*
		 * An RC sender needs its ack timeout and retry counts (qpc.retry_count,
		 * qpc.rnr_retry, ads.ack_timeout; Linux mlx5_vnet and DPDK set 14/7/7):
		 * with 0 the first RNR NAK or lost ack kills the QP.
		 */
		if (retry == 0 || rnr == 0 || ack == 0) {
			emu_log(c->dev, 4, "RTR2RTS_QP 0x%x: retry_count %u, rnr_retry %u, "
				"ack_timeout %u: all three must be set", qpn, retry, rnr, ack);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_QP_NO_RETRY);
		}
		qp->retry_count = retry;
		qp->rnr_retry = rnr;
		qp->ack_timeout = ack;
	}
	qp->state = to;
	return PRM_STATUS_OK;
}

int
emu_net_destroy_qp(struct emu_ctx *c)
{
	/* RES_BUSY while a virtq posts its events to it. */
	return emu_net_destroy(c, EMU_KIND_QP);
}
