/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault-injection matrix: every kind of command the driver sends
 * in each phase of a device's life fails once, at sampled positions, and
 * the device must fail or recover as designed.
 *
 * The commands are not listed here: a reference session (probe, DRIVER_OK,
 * a queue pair disabled and enabled again, GET_VRING_BASE, the background
 * restore of blank queues, a second session, removal) is run first with a
 * DevX trace, and its commands are grouped per phase by kind (opcode, and
 * object type for general objects; umem registrations count as opcodes
 * 0xa08/0xa0a as in the emulator's fault injection). Then, for each
 * (phase, kind, position n in {1, 2, last}) the same session runs again
 * with the emulator failing exactly that command, and:
 *
 *   probe      the probe fails and leaves nothing alive;
 *   dev_conf   dev_conf fails, every object is back to the probe state,
 *              and vhost's next call to dev_conf runs the device;
 *   qp_change  the device keeps running (a ring of pair 1 may stay
 *              stopped until the next DRIVER_OK);
 *   dev_close  every GET_VRING_BASE is answered;
 *   restore    the background restore reports it; the next DRIVER_OK runs;
 *              an object whose destroy failed (with what it pins) is the
 *              only thing left, and removal reports exactly it;
 *   removal    a failed destroy is a leak the emulator reports, naming the
 *              object; nothing else leaks: every object of a clean removal
 *              is destroyed, or is the failed one, or one it pins;
 *
 * and in every case the driver's error line names the command (PRM name
 * and opcode), the status and the syndrome, the next session (a new front
 * end) carries traffic on both pairs, and removal leaves zero objects alive
 * (but for a failed destroy). The matrix is printed with each outcome.
 *
 * Each case runs in a child process (this program with --from N): a crash
 * is recorded as that case's outcome and a new child resumes after it.
 * Run time: about a minute for some 130 cases.
 */
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_common.h>

#include "prm.h"
#include "lm_harness.h"

#define PAIRS 2
#define NRINGS (2 * PAIRS)
#define DEVARGS "queues=2,workers=2,mr_gc_ms=0"
#define MAX_KINDS 64
#define MAX_CASES 256
/* Wait for traffic that may legitimately not flow (a ring left stopped). */
#define MAYBE_MS 1500

enum phase { PH_PROBE, PH_CONF, PH_QP, PH_CLOSE, PH_RESTORE, PH_REMOVE, PH_N };

static const char *const phase_name[PH_N] = {
	"probe", "dev_conf", "qp_change", "dev_close", "restore", "removal",
};

/* Status injected per phase (any non-zero status: varied on purpose). */
static const uint8_t phase_status[PH_N] = {
	PRM_STATUS_NO_RESOURCES, PRM_STATUS_BAD_RES_STATE, PRM_STATUS_INTERNAL_ERR,
	PRM_STATUS_BAD_RES_STATE, PRM_STATUS_NO_RESOURCES, PRM_STATUS_INTERNAL_ERR,
};

struct kind {
	uint16_t opcode;          /* 0xa08 / 0xa0a for umem (de)registration */
	uint16_t obj_type;        /* general objects; 0xffff otherwise */
	char op[40];
	unsigned int count[PH_N]; /* in the reference session */
};

struct fault {
	enum phase ph;
	unsigned int kind;
	unsigned int pos;         /* 1-based among the phase's commands of the kind */
	uint8_t status;
	uint32_t syndrome;
};

struct result {
	bool ok;
	char outcome[96];
	char why[256];
};

/* A broken precondition of the whole run (not a case's outcome). */
#define REQUIRE(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "test_faults: " __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		exit(2); \
	} \
} while (0)

extern char **environ;

static struct kind kinds[MAX_KINDS];
static unsigned int nkinds;
static struct vu_mem *mem;
static struct vu_guest *guest;

/* ---- session -------------------------------------------------------------- */

/* Trace indexes where each phase starts and ends (reference bookkeeping). */
struct marks {
	size_t start[PH_N], end[PH_N];
};

struct ctx {
	const struct fault *f;    /* NULL: the reference session */
	struct result *r;
	struct lmh_dev d;
	struct lmh_trace tr;
	struct vu_client *c;
	struct marks m;
	size_t lmark;             /* log at the start of the faulted phase */
	long fired;               /* trace index of the injected failure */
	unsigned int extra;       /* objects a failed destroy left (with what it pins) */
	bool probed;
	jmp_buf fail;
};

static void
outcome(struct ctx *x, const char *fmt, ...)
{
	size_t n = strlen(x->r->outcome);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->r->outcome + n, sizeof(x->r->outcome) - n, fmt, ap);
	va_end(ap);
}

/* A check of the session: on failure, say why and abandon the session. */
#define CHECK(x, cond, ...) do { \
	if (!(cond)) { \
		snprintf((x)->r->why, sizeof((x)->r->why), __VA_ARGS__); \
		longjmp((x)->fail, 1); \
	} \
} while (0)

static bool
faulted(const struct ctx *x, enum phase ph)
{
	return x->f != NULL && x->f->ph == ph;
}

static const struct kind *
fkind(const struct ctx *x)
{
	return &kinds[x->f->kind];
}

static void
phase_begin(struct ctx *x, enum phase ph)
{
	x->m.start[ph] = lmh_trace_mark(&x->tr);
	if (faulted(x, ph))
		x->lmark = lmh_log_mark();
}

static void
phase_end(struct ctx *x, enum phase ph)
{
	x->m.end[ph] = lmh_trace_mark(&x->tr);
}

static void
arm(struct ctx *x, unsigned int offset)
{
	const struct kind *k = fkind(x);

	/* rdma: through the emulated rdma-core's control socket, same semantics. */
	CHECK(x, lmh_fault_inject(&x->d, k->opcode, k->obj_type, offset + x->f->pos,
				  x->f->status, x->f->syndrome) == 0, "cannot arm the fault");
}

/*
 * rdma: a destroy goes through mlx5dv_devx_obj_destroy, and the kernel keeps
 * the firmware's output of the destroy command to itself (devx.c
 * devx_obj_cleanup: an errno only, EREMOTEIO for a failed command). The
 * back end reports it as INTERNAL_ERR with the errno for syndrome
 * (devx_rdma.c rdma_obj_destroy): that is what the trace and the driver's
 * error line must then show.
 */
static bool
rdma_destroy(const struct kind *k)
{
	if (!lmh_rdma())
		return false;
	switch (k->opcode) {
	case PRM_CMD_DESTROY_MKEY:
	case PRM_CMD_DESTROY_CQ:
	case PRM_CMD_DESTROY_QP:
	case PRM_CMD_DEALLOC_TRANSPORT_DOMAIN:
	case PRM_CMD_DESTROY_TIR:
	case PRM_CMD_DESTROY_TIS:
	case PRM_CMD_DESTROY_RQT:
	case PRM_CMD_DESTROY_FLOW_TABLE:
	case PRM_CMD_DESTROY_FLOW_GROUP:
	case PRM_CMD_DESTROY_GENERAL_OBJECT:
		return true;
	default:
		return false;
	}
}

/*
 * The fault fired where it was meant to (the phase's trace holds the
 * command, failed with our status and syndrome), and the driver's error
 * line names the command, the status and the syndrome.
 */
static long
check_fired_and_reported(struct ctx *x, size_t from)
{
	const struct kind *k = fkind(x);
	char name[64], st[24], syn[32];
	const char *needles[5] = { x->d.name, name, st, syn, NULL };
	uint8_t status = x->f->status;
	uint32_t syndrome = x->f->syndrome;
	size_t i;

	if (rdma_destroy(k)) {
		status = PRM_STATUS_INTERNAL_ERR;
		syndrome = EREMOTEIO;
	}
	lmh_trace_sync(&x->tr);
	for (i = from; i < x->tr.n; i++) {
		const struct lmh_cmd *c = &x->tr.c[i];
		/* A kernel MR on rdma: the kernel's errno, no firmware answer (status -1). */
		bool mr_rdma = lmh_rdma() && strncmp(c->op, "MR_", 3) == 0;

		if (c->is_cmd && c->opcode == k->opcode && c->obj_type == k->obj_type &&
		    (mr_rdma ? c->status == -1 : c->status == status && c->syndrome == syndrome))
			break;
	}
	CHECK(x, i < x->tr.n, "the injected failure never happened in %s",
	      phase_name[x->f->ph]);
	/* MR_REG / MR_DEREG share CREATE_MKEY / DESTROY_MKEY: name the one that failed. */
	if (strncmp(x->tr.c[i].op, "MR_", 3) == 0) {
		snprintf(name, sizeof(name), "%s ", x->tr.c[i].op);
		if (lmh_rdma())
			needles[2] = NULL;
	} else if (k->opcode == PRM_CMD_CREATE_UMEM || k->opcode == PRM_CMD_DESTROY_UMEM ||
		   strncmp(k->op, "ROOT_FLOW_", 10) == 0) {
		snprintf(name, sizeof(name), "%s ", k->op);
	} else {
		snprintf(name, sizeof(name), "%s (0x%x)", x->tr.c[i].op, k->opcode);
	}
	snprintf(st, sizeof(st), "status 0x%x (", status);
	snprintf(syn, sizeof(syn), "syndrome 0x%08x", syndrome);
	CHECK(x, lmh_log_line_has_all(x->lmark, needles),
	      "no error line naming \"%s\", \"%s\" and \"%s\"", name, st, syn);
	x->fired = (long)i;
	return (long)i;
}

static void
connect_fe(struct ctx *x)
{
	CHECK(x, vu_connect(&x->c, lmh_sock(0), 5000) == 0, "cannot connect");
	lmh_conn_opened(0);
	vu_set_reply_timeout(x->c, LMH_DEADLINE_MS);
}

static void
disconnect_fe(struct ctx *x)
{
	if (x->c == NULL)
		return;
	vu_disconnect(x->c);
	x->c = NULL;
	CHECK(x, lmh_wait_closed(0), "vhost did not close the connection");
}

/* A round trip: vhost has handled every earlier message (dev_conf included). */
static void
round_trip(struct ctx *x)
{
	uint8_t status;

	CHECK(x, vu_get_status(x->c, &status) == 0, "GET_STATUS failed");
	lmh_barrier(&x->d);
}

static void
phase_probe(struct ctx *x)
{
	const struct kind *k;
	char env[64];
	int ret;

	phase_begin(x, PH_PROBE);
	x->lmark = lmh_log_mark();
	if (faulted(x, PH_PROBE)) {
		k = fkind(x);
		snprintf(env, sizeof(env), "%#x:%u:%#x:%#x", k->opcode, x->f->pos, x->f->status,
			 k->obj_type);
		CHECK(x, setenv("MLX5_LM_EMU_FAULT", env, 1) == 0, "setenv");
	}
	ret = lmh_probe(&x->d, 0, DEVARGS);
	unsetenv("MLX5_LM_EMU_FAULT");
	lmh_trace_open(&x->tr, x->d.trace);
	if (ret != 0) {
		CHECK(x, faulted(x, PH_PROBE), "probe failed: %d", ret);
		check_fired_and_reported(x, 0);
		/* The emulator was destroyed by the failed probe: nothing was left. */
		CHECK(x, lmh_failed_probe_left(&x->d) == 0, "a failed probe left %ld objects",
		      lmh_failed_probe_left(&x->d));
		outcome(x, "probe failed, nothing left");
		return;
	}
	x->probed = true;
	phase_end(x, PH_PROBE);
	if (faulted(x, PH_PROBE)) {
		check_fired_and_reported(x, 0);
		outcome(x, "probe recovered");
	}
}

static void
phase_conf(struct ctx *x)
{
	connect_fe(x);
	vu_guest_reset(guest);
	CHECK(x, vu_guest_new_eventfds(guest) == 0, "eventfds");
	phase_begin(x, PH_CONF);
	if (faulted(x, PH_CONF))
		arm(x, 0);
	/* vhost acks DRIVER_OK before it calls dev_conf. */
	CHECK(x, vu_start_device(x->c, guest, NULL) == 0, "start sequence refused");
	if (faulted(x, PH_CONF)) {
		CHECK(x, lmh_wait_failed_cmd(&x->tr, x->m.start[PH_CONF], LMH_DEADLINE_MS) >= 0,
		      "the injected failure never happened");
		lmh_barrier(&x->d);
		check_fired_and_reported(x, x->m.start[PH_CONF]);
		if (!lmh_running(&x->d)) {
			struct rte_pmd_mlx5_lm_state st;

			CHECK(x, lmh_live(&x->d) == x->d.live0,
			      "%u objects after the failed DRIVER_OK, %u after probe",
			      lmh_live(&x->d), x->d.live0);
			/*
			 * The configuration ran in the device's worker after vhost
			 * took DRIVER_OK: vhost never learns of the failure, which
			 * is visible through the PMD's public API, with its reason.
			 */
			CHECK(x, rte_pmd_mlx5_lm_get_state(x->d.name, &st) == 0 &&
			      st.state == RTE_PMD_MLX5_LM_STATE_FAILED && st.last_error < 0 &&
			      st.last_error_msg[0] != '\0' && st.conf_failures >= 1,
			      "failed DRIVER_OK not reported by rte_pmd_mlx5_lm_get_state (state %d, "
			      "error %d)", st.state, st.last_error);
			outcome(x, "DRIVER_OK failed clean (%s); ", st.last_error_msg);
			/* vhost does not call dev_conf again: the front end starts over. */
			disconnect_fe(x);
			connect_fe(x);
			vu_guest_reset(guest);
			CHECK(x, vu_guest_new_eventfds(guest) == 0, "eventfds");
			CHECK(x, vu_start_device(x->c, guest, NULL) == 0, "start sequence refused");
		} else {
			outcome(x, "DRIVER_OK recovered; ");
		}
	}
	round_trip(x);
	CHECK(x, lmh_wait_running(&x->d, LMH_DEADLINE_MS), "not running after DRIVER_OK");
	phase_end(x, PH_CONF);
	if (faulted(x, PH_CONF))
		outcome(x, "next dev_conf ran");
	CHECK(x, lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS), "no traffic after DRIVER_OK");
}

static void
phase_qp(struct ctx *x)
{
	unsigned int i;

	phase_begin(x, PH_QP);
	if (faulted(x, PH_QP))
		arm(x, 0);
	for (i = 2; i < NRINGS; i++)
		CHECK(x, vu_set_vring_enable(x->c, i, false) == 0, "disable ring %u", i);
	for (i = 2; i < NRINGS; i++)
		CHECK(x, vu_set_vring_enable(x->c, i, true) == 0, "enable ring %u", i);
	round_trip(x);
	phase_end(x, PH_QP);
	if (!faulted(x, PH_QP)) {
		CHECK(x, lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS),
		      "no traffic after the pair came back");
		return;
	}
	check_fired_and_reported(x, x->m.start[PH_QP]);
	CHECK(x, lmh_running(&x->d), "the device stopped");
	if (lmh_traffic(guest, 0x3, 100, MAYBE_MS)) {
		outcome(x, "both pairs carry traffic");
	} else {
		/* A ring may stay stopped until the next DRIVER_OK (proof_session). */
		outcome(x, "a ring stopped until next DRIVER_OK");
	}
}

static void
phase_close(struct ctx *x)
{
	uint32_t bases[NRINGS];
	unsigned int offset = 0;

	phase_begin(x, PH_CLOSE);
	if (faulted(x, PH_CLOSE))
		arm(x, 0);
	if (faulted(x, PH_RESTORE)) {
		/* The restore's commands follow dev_close's: count past those. */
		offset = fkind(x)->count[PH_CLOSE];
		x->lmark = lmh_log_mark();
		arm(x, offset);
	}
	CHECK(x, vu_stop_device(x->c, bases, NRINGS) == 0, "GET_VRING_BASE not answered");
	CHECK(x, lmh_wait_restored(&x->d), "queues not restored in time");
	/* Close and restore are split by content, once the reference is read. */
	phase_end(x, PH_CLOSE);
	if (faulted(x, PH_CLOSE)) {
		check_fired_and_reported(x, x->m.start[PH_CLOSE]);
		outcome(x, "every GET_VRING_BASE answered%s",
			lmh_log_has(x->lmark, "suspending queues failed") ?
			", stale bases reported" : "");
	}
	if (faulted(x, PH_RESTORE)) {
		check_fired_and_reported(x, x->m.start[PH_CLOSE]);
		outcome(x, "%s", lmh_log_has(x->lmark, "could not be put back to blank") ?
			"queue left for the next DRIVER_OK" :
			lmh_log_has(x->lmark, "cannot rebuild the receive steering") ?
			"steering rebuilt at the next DRIVER_OK" : "restore recovered");
	}
	disconnect_fe(x);
}

/* The emulator kind name of what a destroy command destroys. */
static const char *
destroyed_kind(const struct kind *k)
{
	/* A rule in the kernel's NIC RX root (same opcode as a DevX entry's delete). */
	if (strcmp(k->op, "ROOT_FLOW_DESTROY") == 0)
		return "ROOT_FLOW_RULE";
	switch (k->opcode) {
	case PRM_CMD_DESTROY_MKEY: return "MKEY";
	case PRM_CMD_DESTROY_CQ: return "CQ";
	case PRM_CMD_DESTROY_QP: return "QP";
	case PRM_CMD_DEALLOC_PD: return "PD";
	case PRM_CMD_DEALLOC_TRANSPORT_DOMAIN: return "TRANSPORT_DOMAIN";
	case PRM_CMD_DESTROY_TIR: return "TIR";
	case PRM_CMD_DESTROY_TIS: return "TIS";
	case PRM_CMD_DESTROY_RQT: return "RQT";
	case PRM_CMD_DESTROY_FLOW_TABLE: return "FLOW_TABLE";
	case PRM_CMD_DESTROY_FLOW_GROUP: return "FLOW_GROUP";
	case PRM_CMD_DELETE_FLOW_TABLE_ENTRY: return "FLOW_TABLE_ENTRY";
	case PRM_CMD_DESTROY_UMEM: return "UMEM";
	case PRM_CMD_DESTROY_GENERAL_OBJECT: return lmh_obj_type_name(k->obj_type);
	default: return NULL;
	}
}

/*
 * rdma: a refusal as the kernel renders it. The firmware's RES_BUSY comes
 * back from mlx5dv_devx_obj_destroy as EREMOTEIO only (traced INTERNAL_ERR,
 * the errno for syndrome, see rdma_destroy()), and from
 * mlx5dv_devx_umem_dereg and ibv_dealloc_pd as EBUSY (an errno, no mailbox).
 * The injected failure itself is not one.
 */
static bool
rdma_refused(struct ctx *x, size_t i)
{
	const struct lmh_cmd *c = &x->tr.c[i];
	struct kind k = { .opcode = c->opcode };

	if ((long)i == x->fired)
		return false;
	/* ibv_dealloc_pd: EBUSY while an object of the PD lives (traced INTERNAL_ERR). */
	if (c->opcode == PRM_CMD_DESTROY_UMEM || c->opcode == PRM_CMD_DEALLOC_PD)
		return c->status != 0;
	return rdma_destroy(&k) && c->status == PRM_STATUS_INTERNAL_ERR &&
	       c->syndrome == EREMOTEIO;
}

/* Destroys the device refused since from because the object was still in use. */
static unsigned int
busy_refusals(struct ctx *x, size_t from)
{
	unsigned int n = 0;
	size_t i;

	lmh_trace_sync(&x->tr);
	for (i = from; i < x->tr.n; i++)
		if (x->tr.c[i].is_cmd && (lmh_rdma() ? rdma_refused(x, i) :
					  x->tr.c[i].status == PRM_STATUS_RES_BUSY))
			n++;
	return n;
}

/* "leaked KIND ID " for the object of the failed destroy (id when the trace has it). */
static void
leak_needle(struct ctx *x, const char *kind, char *buf, size_t len)
{
	uint32_t id = x->fired >= 0 ? x->tr.c[x->fired].obj_id : 0;

	if (id != 0 && strcmp(kind, "MKEY") != 0 && strcmp(kind, "FLOW_TABLE_ENTRY") != 0)
		snprintf(buf, len, "leaked %s %u ", kind, id);
	else
		snprintf(buf, len, "leaked %s ", kind);
}

/* A new front end: DRIVER_OK, traffic on both pairs, stop. */
static void
proof_session(struct ctx *x)
{
	uint32_t bases[NRINGS];

	connect_fe(x);
	vu_guest_reset(guest);
	CHECK(x, vu_guest_new_eventfds(guest) == 0, "eventfds");
	CHECK(x, vu_start_device(x->c, guest, NULL) == 0, "next start sequence refused");
	round_trip(x);
	CHECK(x, lmh_wait_running(&x->d, LMH_DEADLINE_MS), "next DRIVER_OK did not run");
	CHECK(x, lmh_traffic(guest, 0x3, 100, LMH_DEADLINE_MS), "no traffic in the next session");
	CHECK(x, vu_stop_device(x->c, bases, NRINGS) == 0, "next GET_VRING_BASE not answered");
	CHECK(x, lmh_wait_restored(&x->d), "queues not restored in time");
	if (faulted(x, PH_RESTORE) && destroyed_kind(fkind(x)) != NULL) {
		unsigned int live = lmh_live(&x->d), busy = busy_refusals(x, x->m.start[PH_CLOSE]);

		/*
		 * A destroy that failed in the background leaves its object (and
		 * what it pins, refused as busy) to the leak report at removal.
		 */
		CHECK(x, live >= x->d.live0 && live - x->d.live0 <= 1 + busy,
		      "%u objects after the next session, %u after probe, %u refused busy", live,
		      x->d.live0, busy);
		x->extra = live - x->d.live0;
	} else {
		CHECK(x, lmh_live(&x->d) == x->d.live0,
		      "%u objects after the next session, %u after probe", lmh_live(&x->d),
		      x->d.live0);
	}
	disconnect_fe(x);
}

/*
 * rdma: UAR pages the emulator found alive, pinned by the object whose
 * destroy failed. mlx5dv_devx_free_uar returns void (rdma-core's
 * mlx5dv_devx_alloc_uar(3)): the driver saw its UAR_FREE succeed and cannot
 * know the device still holds the page; on emu= the refusal is a RES_BUSY
 * status in the trace, counted as busy.
 */
static unsigned int
rdma_uars_pinned(size_t from)
{
	char *log, *p;
	unsigned int n = 0;

	if (!lmh_rdma())
		return 0;
	log = lmh_log_since(from);
	for (p = log; p != NULL && (p = strstr(p, ": leaked UAR ")) != NULL; p++)
		n++;
	free(log);
	return n;
}

/* Leak lines of the emulator since from: "leaked KIND ID ...". */
static unsigned int
count_leak_lines(size_t from, char *first, size_t len)
{
	char *log = lmh_log_since(from), *p, *q;
	unsigned int n = 0;

	first[0] = '\0';
	for (p = log; p != NULL && (p = strstr(p, ": leaked ")) != NULL; p = q) {
		q = strchr(p, '\n');
		if (n++ == 0)
			snprintf(first, len, "%.*s", (int)(q != NULL ? q - p - 2 : 60), p + 2);
	}
	free(log);
	return n;
}

static unsigned int remove_total;  /* commands of the reference removal */

/* The failed command's opcode was sent again after the failure and succeeded. */
static bool
retried(struct ctx *x, const struct kind *k, size_t from)
{
	size_t i;

	if (x->fired < 0)
		return false;
	for (i = (size_t)x->fired + 1; i < x->tr.n; i++)
		if (i >= from && x->tr.c[i].is_cmd && x->tr.c[i].opcode == x->tr.c[x->fired].opcode &&
		    x->tr.c[i].status == 0)
			return true;
	return false;
}

static void
phase_remove(struct ctx *x)
{
	const struct kind *k;
	const char *kind;
	char needle[64], first[128];
	unsigned int busy, lines, done = 0, skipped, uars;
	long leaks;
	size_t i;

	phase_begin(x, PH_REMOVE);
	x->lmark = lmh_log_mark();
	if (faulted(x, PH_REMOVE))
		arm(x, 0);
	leaks = lmh_remove(&x->d);
	x->probed = false;
	phase_end(x, PH_REMOVE);
	CHECK(x, leaks >= 0, "removal failed");
	if (!faulted(x, PH_REMOVE)) {
		/* A destroy failed earlier: its object, and what it pins at removal. */
		busy = x->extra > 0 ? busy_refusals(x, x->m.start[PH_REMOVE]) +
				      rdma_uars_pinned(x->lmark) : 0;
		CHECK(x, leaks == x->extra + busy,
		      "%ld objects left alive at removal, %u expected (+ %u refused busy)", leaks,
		      x->extra, busy);
		if (x->extra > 0) {
			leak_needle(x, destroyed_kind(fkind(x)), needle, sizeof(needle));
			CHECK(x, lmh_log_has(x->lmark, needle), "no leak report \"%s\"", needle);
			outcome(x, "; at removal %s", needle);
			if (leaks > 1)
				outcome(x, "+ %ld pinned", leaks - 1);
		}
		return;
	}
	k = fkind(x);
	check_fired_and_reported(x, x->m.start[PH_REMOVE]);
	kind = destroyed_kind(k);
	if (kind == NULL) {
		CHECK(x, leaks == 0, "%ld objects left alive after a failed %s", leaks, k->op);
		outcome(x, "removed, nothing left");
		return;
	}
	if (leaks == 0 && retried(x, k, x->m.start[PH_REMOVE])) {
		/* The driver tried the refused destroy again, and it went through. */
		outcome(x, "retried, nothing left");
		return;
	}
	/* A failed destroy is a leak, and the emulator names the object. */
	leak_needle(x, kind, needle, sizeof(needle));
	CHECK(x, leaks >= 1, "the failed %s leaked nothing the emulator saw", k->op);
	CHECK(x, lmh_log_has(x->lmark, needle), "no leak report \"%s\"", needle);
	/*
	 * Nothing else leaked: every object of the reference removal was either
	 * destroyed, or is the failed one, or one it pins (refused as busy, or
	 * not attempted by the driver because the failed one holds it).
	 */
	for (i = x->m.start[PH_REMOVE]; i < x->tr.n; i++)
		if (x->tr.c[i].is_cmd && x->tr.c[i].status == 0)
			done++;
	busy = busy_refusals(x, x->m.start[PH_REMOVE]);
	lines = count_leak_lines(x->lmark, first, sizeof(first));
	CHECK(x, lines == (unsigned int)leaks, "%u leak lines for %ld leaks", lines, leaks);
	uars = rdma_uars_pinned(x->lmark);
	/* rdma: a pinned UAR page is both "destroyed" (UAR_FREE) and leaked. */
	CHECK(x, (unsigned int)leaks + done == remove_total + uars,
	      "%ld leaked + %u destroyed != the %u objects of a clean removal (+ %u UAR "
	      "pages freed while pinned)", leaks, done, remove_total, uars);
	busy += uars;
	/*
	 * busy counts refusals, and the driver may retry a refused destroy:
	 * more refusals than pinned objects means every one was attempted.
	 */
	skipped = busy >= (unsigned int)leaks - 1 ? 0 : (unsigned int)leaks - 1 - busy;
	outcome(x, "%s", needle);
	if (leaks > 1)
		outcome(x, "+ %ld pinned (%u busy refusals, %u not attempted)", leaks - 1, busy,
			skipped);
}

/* Run one session; the reference when x->f is NULL. */
static void
run_session(struct ctx *x)
{
	if (setjmp(x->fail) != 0) {
		x->r->ok = false;
		if (x->c != NULL) {
			vu_disconnect(x->c);
			x->c = NULL;
			(void)lmh_wait_closed(0);
		}
		if (x->probed) {
			x->probed = false;
			(void)lmh_wait_restored(&x->d);
			(void)lmh_remove(&x->d);
		}
		return;
	}
	x->r->ok = true;
	phase_probe(x);
	if (!x->probed)
		return;
	phase_conf(x);
	phase_qp(x);
	phase_close(x);
	proof_session(x);
	phase_remove(x);
}

/* ---- the reference: which commands each phase sends ------------------------ */

static unsigned int
kind_of(const struct lmh_cmd *c)
{
	unsigned int i;

	for (i = 0; i < nkinds; i++)
		if (kinds[i].opcode == c->opcode && kinds[i].obj_type == c->obj_type)
			return i;
	REQUIRE(nkinds < MAX_KINDS, "more than %d command kinds", MAX_KINDS);
	kinds[nkinds].opcode = c->opcode;
	kinds[nkinds].obj_type = c->obj_type;
	snprintf(kinds[nkinds].op, sizeof(kinds[nkinds].op), "%s", c->op);
	return nkinds++;
}

static bool
is_close_cmd(const struct lmh_cmd *c)
{
	return (c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT ||
		c->opcode == PRM_CMD_QUERY_GENERAL_OBJECT) && c->obj_type == PRM_OBJ_VIRTIO_NET_Q;
}

static void
count_phase(const struct lmh_trace *tr, enum phase ph, size_t from, size_t to,
	    unsigned int *counts)
{
	size_t i;

	for (i = from; i < to; i++) {
		const struct lmh_cmd *c = &tr->c[i];

		if (!c->is_cmd)
			continue;
		REQUIRE(c->status == 0, "the reference session had a failed %s", c->op);
		counts[kind_of(c) * PH_N + ph]++;
	}
}

/* Phase of every command of a reference session, counted per kind. */
static void
reference(unsigned int *counts)
{
	struct result r = { 0 };
	struct ctx x = { .f = NULL, .r = &r, .fired = -1 };
	size_t i, split;

	run_session(&x);
	REQUIRE(r.ok, "reference session: %s", r.why);
	lmh_trace_sync(&x.tr);
	/*
	 * dev_close holds the device until every queue is suspended and
	 * queried; the restore starts after it: the close is the leading run
	 * of virtq MODIFY/QUERY commands.
	 */
	for (split = x.m.start[PH_CLOSE]; split < x.m.end[PH_CLOSE]; split++)
		if (x.tr.c[split].is_cmd && !is_close_cmd(&x.tr.c[split]))
			break;
	x.m.start[PH_RESTORE] = split;
	x.m.end[PH_RESTORE] = x.m.end[PH_CLOSE];
	x.m.end[PH_CLOSE] = split;
	for (i = 0; i < PH_N; i++)
		count_phase(&x.tr, (enum phase)i, x.m.start[i], x.m.end[i], counts);
	remove_total = 0;
	for (i = x.m.start[PH_REMOVE]; i < x.m.end[PH_REMOVE]; i++)
		remove_total += x.tr.c[i].is_cmd;
	lmh_trace_free(&x.tr);
	unlink(x.d.trace);
}

static void
derive_kinds(void)
{
	static unsigned int a[MAX_KINDS * PH_N], b[MAX_KINDS * PH_N];
	unsigned int i, p;

	reference(a);
	/* Twice: positions mean something only if the counts are stable. */
	reference(b);
	for (i = 0; i < nkinds; i++)
		for (p = 0; p < PH_N; p++) {
			REQUIRE(a[i * PH_N + p] == b[i * PH_N + p],
				"%s %s: %u then %u commands", phase_name[p], kinds[i].op,
				a[i * PH_N + p], b[i * PH_N + p]);
			kinds[i].count[p] = a[i * PH_N + p];
		}
}

/* ---- the matrix --------------------------------------------------------------- */

/*
 * rdma: kinds whose injected failure cannot be checked as on emu=, and why.
 * NULL for the others.
 */
static const char *
rdma_unchecked(const struct kind *k)
{
	switch (k->opcode) {
	case PRM_CMD_CREATE_UMEM:
	case PRM_CMD_DESTROY_UMEM:
	case PRM_CMD_ALLOC_PD:
	case PRM_CMD_DEALLOC_PD:
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
	case PRM_CMD_DELETE_FLOW_TABLE_ENTRY:
		/* mlx5dv_devx_umem_reg, ibv_alloc_pd, mlx5dv_create_flow, ... */
		return "a verbs call: the kernel returns an errno, no firmware status and "
		       "syndrome for the driver to report";
	case PRM_CMD_QUERY_HCA_CAP:
		return "the kernel's own QUERY_HCA_CAP when the context opens is counted by "
		       "the device too: positions differ from the driver's trace";
	default:
		return NULL;
	}
}

static unsigned int
plan(struct fault *cases)
{
	unsigned int n = 0, i, p, j;

	for (p = 0; p < PH_N; p++)
		for (i = 0; i < nkinds; i++) {
			unsigned int cnt = kinds[i].count[p];
			unsigned int pos[3] = { 1, 2, cnt };

			/*
			 * UAR pages come from the kernel (mlx5dv_devx_alloc_uar):
			 * an errno, no firmware status and syndrome to trace and
			 * check. They count as objects, but are not failed here.
			 */
			if (kinds[i].opcode == PRM_CMD_ALLOC_UAR ||
			    kinds[i].opcode == PRM_CMD_DEALLOC_UAR)
				continue;
			if (lmh_rdma() && rdma_unchecked(&kinds[i]) != NULL)
				continue;

			for (j = 0; j < 3; j++) {
				if (pos[j] > cnt || (j == 2 && cnt <= 2) || (j == 1 && cnt < 2))
					continue;
				REQUIRE(n < MAX_CASES, "more than %d cases", MAX_CASES);
				cases[n] = (struct fault){
					.ph = (enum phase)p, .kind = i, .pos = pos[j],
					.status = phase_status[p],
					/* Probe faults: from the environment, default syndrome. */
					.syndrome = p == PH_PROBE ? EMU_SYND_INJECTED :
						    0x5e0f0000u | n,
				};
				n++;
			}
		}
	return n;
}

static void
kind_label(const struct kind *k, char *buf, size_t len)
{
	if (k->obj_type != 0xffff)
		snprintf(buf, len, "%s(%s)", k->op, lmh_obj_type_name(k->obj_type));
	else
		snprintf(buf, len, "%s", k->op);
}

/* ---- child: run cases from `first`, one result line each ---------------------- */

static volatile int current_case = -1;

static void
on_crash(int sig)
{
	void *frames[64];
	char line[96];
	int n, len;

	len = snprintf(line, sizeof(line), "\ntest_faults: case %d crashed with signal %d:\n",
		       current_case, sig);
	(void)!write(2, line, (size_t)len);
	n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int
child(const char *argv0, unsigned int first)
{
	static struct fault cases[MAX_CASES];
	unsigned int n, i, p;
	char label[64];

	signal(SIGSEGV, on_crash);
	signal(SIGABRT, on_crash);
	signal(SIGBUS, on_crash);
	if (lmh_init(argv0, "test-faults", 1) < 0)
		return 2;
	REQUIRE(vu_mem_create_qemu(&mem, 1) == 0, "guest memory");
	REQUIRE(vu_guest_create(&guest, mem, &(struct vu_guest_cfg){
		.queue_pairs = PAIRS, .ring_size = 256 }) == 0, "guest");
	lmh_log_quiet(first != 0);
	derive_kinds();
	n = plan(cases);
	if (first == 0) {
		printf("\nCommands of a reference session, per phase:\n");
		for (p = 0; p < PH_N; p++) {
			printf("  %-10s", phase_name[p]);
			for (i = 0; i < nkinds; i++)
				if (kinds[i].count[p] != 0) {
					kind_label(&kinds[i], label, sizeof(label));
					printf(" %s x%u", label, kinds[i].count[p]);
				}
			printf("\n");
		}
	}
	if (first == 0 && lmh_rdma()) {
		for (i = 0; i < nkinds; i++)
			if (rdma_unchecked(&kinds[i]) != NULL) {
				kind_label(&kinds[i], label, sizeof(label));
				(void)lmh_skip_on_rdma(label, rdma_unchecked(&kinds[i]));
			}
	}
	printf("PLAN %u\n", n);
	/* The driver's error lines are expected now: shown only for a failed case. */
	lmh_log_quiet(true);
	for (i = first; i < n; i++) {
		struct result r = { 0 };
		struct ctx x = { .f = &cases[i], .r = &r, .fired = -1 };
		const struct fault *f = &cases[i];
		size_t lmark = lmh_log_mark();

		kind_label(&kinds[f->kind], label, sizeof(label));
		snprintf(label + strlen(label), sizeof(label) - strlen(label), " st 0x%x",
			 f->status);
		printf("START %u %s|%s|%u/%u\n", i, phase_name[f->ph], label, f->pos,
		       kinds[f->kind].count[f->ph]);
		current_case = (int)i;
		run_session(&x);
		lmh_trace_free(&x.tr);
		unlink(x.d.trace);
		if (!r.ok) {
			char *log = lmh_log_since(lmark);

			fprintf(stderr, "---- log of failed case %u (%s %s %u) ----\n%s----\n", i,
				phase_name[f->ph], label, f->pos, log);
			free(log);
		}
		printf("DONE %u %s|%s%s%s\n", i, r.ok ? "ok" : "FAIL", r.outcome,
		       r.ok ? "" : " -- ", r.why);
	}
	vu_guest_destroy(guest);
	vu_mem_destroy(mem);
	lmh_fini();
	return 0;
}

/* ---- parent: children until every case has a result; the matrix ------------- */

struct row {
	char phase[16], label[64], pos[16], result[8], outcome[360];
	bool done;
};

/* Children that died outside any case (a crash in a vhost thread, say). */
static unsigned int between_crashes;

static void
parse_line(char *line, struct row *rows, unsigned int *n, int *started)
{
	unsigned int i;
	char *a, *b;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "PLAN %u", n) == 1)
		return;
	if (sscanf(line, "START %u", &i) == 1 && i < MAX_CASES) {
		a = strchr(line + 6, ' ') + 1;
		b = strchr(a, '|');
		snprintf(rows[i].phase, sizeof(rows[i].phase), "%.*s", (int)(b - a), a);
		a = b + 1;
		b = strchr(a, '|');
		snprintf(rows[i].label, sizeof(rows[i].label), "%.*s", (int)(b - a), a);
		snprintf(rows[i].pos, sizeof(rows[i].pos), "%s", b + 1);
		*started = (int)i;
		return;
	}
	if (sscanf(line, "DONE %u", &i) == 1 && i < MAX_CASES) {
		a = strchr(line + 5, ' ') + 1;
		b = strchr(a, '|');
		snprintf(rows[i].result, sizeof(rows[i].result), "%.*s", (int)(b - a), a);
		snprintf(rows[i].outcome, sizeof(rows[i].outcome), "%s", b + 1);
		rows[i].done = true;
		return;
	}
	printf("%s\n", line);
}

/*
 * Run a child from case `first`. Returns -1 when it ran to the end, else
 * the case to resume after: the one it crashed in (marked), or the last
 * one it finished when it died between cases.
 */
static int
run_child(const char *self, unsigned int first, struct row *rows, unsigned int *n,
	  int *status)
{
	char from[16];
	char *argv[] = { (char *)self, (char *)"--from", from, NULL };
	posix_spawn_file_actions_t fa;
	int pipefd[2], started = -1;
	char line[1024];
	pid_t pid;
	FILE *f;

	snprintf(from, sizeof(from), "%u", first);
	REQUIRE(pipe(pipefd) == 0, "pipe");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pipefd[0]);
	REQUIRE(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ) == 0, "spawn");
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	REQUIRE(f != NULL, "fdopen");
	/* Bounded: every wait of the child is bounded; meson's timeout is the backstop. */
	while (fgets(line, sizeof(line), f) != NULL)
		parse_line(line, rows, n, &started);
	fclose(f);
	REQUIRE(waitpid(pid, status, 0) == pid, "waitpid");
	if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
		return -1;
	if (started < 0 || rows[started].done) {
		fprintf(stderr, "test_faults: a child died after case %d (status 0x%x)\n",
			started, *status);
		between_crashes++;
		return started < 0 ? (int)first - 1 : started;
	}
	snprintf(rows[started].result, sizeof(rows[started].result), "CRASH");
	snprintf(rows[started].outcome, sizeof(rows[started].outcome), "process %s %d",
		 WIFSIGNALED(*status) ? "killed by signal" : "exited with",
		 WIFSIGNALED(*status) ? WTERMSIG(*status) : WEXITSTATUS(*status));
	rows[started].done = true;
	return started;
}

int
main(int argc, char **argv)
{
	static struct row rows[MAX_CASES];
	unsigned int n = 0, i, first = 0, failed = 0, crashed = 0;
	int64_t t0;
	int status, at;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "--from") == 0)
		return child(argv[0], (unsigned int)strtoul(argv[2], NULL, 10));
	/*
	 * Each case runs in a child process; a crash ends that child only, the
	 * case is recorded as a crash, and a new child resumes after it.
	 */
	t0 = lmh_now_ms();
	for (;;) {
		at = run_child(argv[0], first, rows, &n, &status);
		if (at < 0 || between_crashes > 3)
			break;
		first = (unsigned int)(at + 1);
		if (n > 0 && first >= n)
			break;
	}
	REQUIRE(n > 0, "the matrix did not run (status 0x%x)", status);
	printf("\nFault matrix: %u cases, each command kind failed once per phase at "
	       "positions first, second, last\n", n);
	printf("  %-10s %-48s %-7s %-6s %s\n", "phase", "command (injected status)", "pos",
	       "result", "outcome");
	for (i = 0; i < n; i++) {
		if (!rows[i].done)
			snprintf(rows[i].result, sizeof(rows[i].result), "LOST");
		printf("  %-10s %-48s %-7s %-6s %s\n", rows[i].phase, rows[i].label, rows[i].pos,
		       rows[i].result, rows[i].outcome);
		failed += strcmp(rows[i].result, "ok") != 0;
		crashed += strcmp(rows[i].result, "CRASH") == 0;
	}
	printf("\n%u cases, %u passed, %u failed (%u crashes), %u deaths between cases, "
	       "%.1f s\n", n, n - failed, failed, crashed, between_crashes,
	       (double)(lmh_now_ms() - t0) / 1000.0);
	return failed != 0 || between_crashes != 0;
}
