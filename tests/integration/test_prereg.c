/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory prepared before the memory table (rte_pmd_mlx5_lm_prepare),
 * in process through the public path: the PMD API, then a vhost-user
 * front end whose SET_MEM_TABLE and DRIVER_OK take the preparation or not.
 *
 *   - a front end whose table lies in the prepared file uses it: no
 *     memory region is registered at DRIVER_OK (DevX trace), frames flow;
 *   - memory from another file, a file changed (truncated and grown back)
 *     after the preparation, a preparation made for another process, or
 *     one whose chunks would cut the table into more KLM entries than the
 *     device's mkey takes is never used: the table is registered as usual,
 *     the reason is reported, frames flow in the front end's own memory;
 *   - an unused preparation is released when its time runs out, when its
 *     process exits, when the device's front end disconnects, when
 *     cancelled, when the device is removed (a caller waiting for it
 *     returns at once: the removal does not wait it out); a used one
 *     when the DRIVER_OK that took it failed, never one taken as its time
 *     runs out; 1000 preparations in a row
 *     leave nothing; bad input and the per-device limit are refused; a
 *     preparation whose thread cannot start leaves no fd;
 *   - with the memory prepared, its mkey is made once vhost has the table
 *     (SET_MEM_TABLE), before any ring, and DRIVER_OK registers nothing
 *     (preconf=1); with
 *     preconf=2 each queue pair also gets its fields at its kicks, the
 *     queues staying INIT, and DRIVER_OK sends RDY alone; a ring resized
 *     after its kick is re-created at DRIVER_OK; a front end that leaves
 *     after its kicks, or whose DRIVER_OK fails, leaves blank queues and
 *     nothing alive; a file resized after the first kick is registered
 *     again at DRIVER_OK; preconf=0 does everything at DRIVER_OK;
 *   - a preparation replaced after a DRIVER_OK took it, before its
 *     configuration ran, does not hold that configuration for ever; a
 *     taken one's deregistration, when the next preparation replaces it,
 *     does not hold vhost's thread;
 *   - prepared ranges of one file that overlap serve a region once: the
 *     device finds the guest's rings where the guest put them;
 *   - a preparation refused after the first kick leaves the file's changes
 *     since then for DRIVER_OK to see;
 *   - at every removal the emulator finds nothing alive.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "../lm_files.h"
#include "lm_harness.h"
#include "mlx5_lm_test.h"
#include "prm.h"
#include "rte_pmd_mlx5_lm.h"

#define MIB (UINT64_C(1) << 20)
/* Two regions of one file, as QEMU lays out RAM below and above 4 GiB. */
#define MEM_SIZE (64 * MIB)

static const struct vu_mem_region layout[] = {
	{ .gpa = 0, .size = 32 * MIB, .offset = 0 },
	{ .gpa = 4ull << 30, .size = 32 * MIB, .offset = 32 * MIB },
};

static bool
is_mr_reg(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return strcmp(c->op, "MR_REG") == 0;
}

static uint64_t
mod_bits(const struct lmh_cmd *c)
{
	return PRM_GET(virtio_net_q, PRM_CADDR(virtq_cmd, c->in, obj), modify_field_select);
}

static bool
is_vq_modify(const struct lmh_cmd *c)
{
	return lmh_cmd_is_vq(c) && c->opcode == PRM_CMD_MODIFY_GENERAL_OBJECT && c->status == 0;
}

/* A MODIFY of fields that leaves the queue's state alone (arg: queue index or NULL). */
static bool
is_fields_only(const struct lmh_cmd *c, const void *arg)
{
	return is_vq_modify(c) && !(mod_bits(c) & PRM_VIRTQ_MODIFY_STATE) && mod_bits(c) != 0 &&
	       (arg == NULL || c->qidx == *(const int *)arg);
}

/* A MODIFY that makes the queue RDY and changes nothing else. */
static bool
is_rdy_alone(const struct lmh_cmd *c, const void *arg)
{
	return is_vq_modify(c) && mod_bits(c) == PRM_VIRTQ_MODIFY_STATE &&
	       PRM_GET(virtio_net_q, PRM_CADDR(virtq_cmd, c->in, obj), state) ==
	       PRM_VIRTQ_STATE_RDY && (arg == NULL || c->qidx == *(const int *)arg);
}

static bool
is_any_modify(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return is_vq_modify(c);
}

static bool
is_registration(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return strcmp(c->op, "MR_REG") == 0 || strcmp(c->op, "CREATE_MKEY") == 0 ||
	       strcmp(c->op, "UMEM_REG") == 0;
}

static int
prep_state(struct lmh_dev *d, struct rte_pmd_mlx5_lm_prep_status *st)
{
	assert_int_equal(rte_pmd_mlx5_lm_prepare_status(d->name, st), 0);
	return st->state;
}

/* Bounded wait until the preparation reaches state (its thread releases it). */
static bool
wait_prep_state(struct lmh_dev *d, int state, struct rte_pmd_mlx5_lm_prep_status *st)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;

	while (prep_state(d, st) != state) {
		if (lmh_now_ms() > end) {
			printf("  preparation in state %d, not %d (%s)\n", st->state, state,
			       st->reason);
			return false;
		}
		lmh_tick();
	}
	return true;
}

/* Bounded wait until the device holds only what it had right after its probe. */
static bool
wait_live0(struct lmh_dev *d)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;

	while (lmh_live(d) != d->live0) {
		if (lmh_now_ms() > end) {
			printf("  %u emulator objects alive, %u after the probe\n", lmh_live(d),
			       d->live0);
			return false;
		}
		lmh_tick();
	}
	return true;
}

static int
prepare_mem(struct lmh_dev *d, struct vu_mem *m, int pid)
{
	struct rte_pmd_mlx5_lm_prep_region r = { .fd = m->fd, .offset = 0, .size = m->size };

	return rte_pmd_mlx5_lm_prepare(d->name, pid, &r, 1);
}

/*
 * A front end on socket sock with guest g: started, frames looped, stopped,
 * gone. Returns the memory regions registered between its start and RDY.
 */
static unsigned int
run_front_end(struct lmh_dev *d, unsigned int sock, struct vu_guest *g)
{
	struct lmh_trace t;
	struct vu_client *c;
	uint32_t bases[2];
	unsigned int regs;
	size_t mark;

	lmh_trace_open(&t, d->trace);
	assert_int_equal(lmh_trace_sync(&t), 0);
	mark = lmh_trace_mark(&t);
	assert_non_null(c = lmh_fe_connect(sock));
	vu_guest_reset(g);
	assert_int_equal(vu_guest_new_eventfds(g), 0);
	assert_int_equal(vu_start_device(c, g, NULL), 0);
	assert_true(lmh_wait_running(d, LMH_DEADLINE_MS));
	regs = lmh_trace_count(&t, mark, is_mr_reg, NULL);
	assert_true(lmh_traffic(g, 0x1, 64, 3000));
	(void)vu_stop_device(c, bases, 2);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(sock));
	assert_true(lmh_wait_restored(d));
	lmh_trace_free(&t);
	return regs;
}

struct fixture {
	struct lmh_dev d;
	struct vu_mem *m;
	struct vu_guest *g;
};

/* A test's own cost profile (a file), else the suite's. */
static const char *probe_profile;

/* A cost profile (JSON) in a temporary file, for probe_profile: its path in path. */
static void
profile_file(char *path, const char *json)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
}

static void
fixture_up_pairs(struct fixture *f, const char *args, unsigned int pairs)
{
	struct vu_guest_cfg cfg = { .queue_pairs = pairs, .ring_size = 256 };

	memset(f, 0, sizeof(*f));
	if (probe_profile != NULL)
		assert_int_equal(lmh_probe_profile(&f->d, 0, probe_profile, args), 0);
	else
		assert_int_equal(lmh_probe(&f->d, 0, args), 0);
	assert_int_equal(vu_mem_create(&f->m, MEM_SIZE, layout, 2), 0);
	assert_int_equal(vu_guest_create(&f->g, f->m, &cfg), 0);
}

static void
fixture_up(struct fixture *f, const char *args)
{
	fixture_up_pairs(f, args, 1);
}

static void
fixture_down(struct fixture *f)
{
	vu_guest_destroy(f->g);
	vu_mem_destroy(f->m);
	assert_int_equal(lmh_remove(&f->d), 0);
}

/* A child process that lives until its pipe closes: another process's pid. */
static pid_t
child_start(int *wfd)
{
	int p[2];
	pid_t pid;
	char b;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		(void)!read(p[0], &b, 1);
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

static void
child_stop(pid_t pid, int wfd)
{
	close(wfd);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* ---- used --------------------------------------------------------------------- */

static void
test_prepared_memory_serves_the_table(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct fixture f;
	unsigned int regs;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=50");
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_READY);
	assert_int_equal(st.chunks, 4);
	printf("  prepared %" PRIu64 " MiB in %u chunks in %.1f ms\n", st.bytes / MIB,
	       st.chunks, st.end_ms - st.start_ms);
	regs = run_front_end(&f.d, 0, f.g);
	printf("  memory regions registered at DRIVER_OK: %u\n", regs);
	assert_int_equal(regs, 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_USED);
	assert_int_equal(st.used_bytes, MEM_SIZE);
	assert_int_equal(st.fallback_bytes, 0);
	/*
	 * The front end gone, its registration goes after mr_gc_ms, and with
	 * it the pins of the prepared chunks: a departed VM's memory is not
	 * held until the device's next preparation or its removal.
	 */
	assert_true(wait_live0(&f.d));
	fixture_down(&f);
}

/* ---- never used ----------------------------------------------------------------- */

static void
not_used(struct fixture *f, const char *reason)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	unsigned int regs = run_front_end(&f->d, 0, f->g);

	assert_true(wait_prep_state(&f->d, RTE_PMD_MLX5_LM_PREP_RELEASED, &st));
	printf("  not used (%s), %u memory regions registered at DRIVER_OK\n", st.reason, regs);
	assert_non_null(strstr(st.reason, reason));
	assert_true(regs >= 2);
}

static void
test_other_or_changed_memory_is_never_used(void **state)
{
	struct vu_mem *other;
	struct fixture f;
	pid_t child;
	int wfd;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16");
	/* Another file of the same size and layout. */
	assert_int_equal(vu_mem_create(&other, MEM_SIZE, layout, 2), 0);
	assert_int_equal(prepare_mem(&f.d, other, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	not_used(&f, "lies in no prepared range");
	vu_mem_destroy(other);
	/* The file truncated and grown back after the preparation: its pages are new. */
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_int_equal(ftruncate(f.m->fd, MEM_SIZE / 2), 0);
	assert_int_equal(ftruncate(f.m->fd, MEM_SIZE), 0);
	not_used(&f, "truncated or changed");
	/* Prepared for another process: this front end is not it. */
	child = child_start(&wfd);
	assert_int_equal(prepare_mem(&f.d, f.m, child), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	not_used(&f, "the preparation was for pid");
	child_stop(child, wfd);
	fixture_down(&f);
}

/* ---- queues configured at their kicks (mlx5_lm_preconf.c) ---------------------- */

#define PAIRS 2
#define RINGS (2 * PAIRS)
#define ARGS_FIELDS "queues=2,workers=2,mr_chunk_mb=16,preconf=2"

/*
 * A device probed with args, its memory prepared for this process, and a
 * front end on socket 0 up to its last SET_VRING_KICK/CALL, no enable, no
 * DRIVER_OK: what the device did meanwhile is in t from mark on.
 */
static struct vu_client *
prepared_start_until_kicks(struct fixture *f, const char *args, struct lmh_trace *t,
			   size_t *mark)
{
	struct vu_start_opts o = { .no_enable = true, .no_status = true };
	struct vu_client *c;

	fixture_up_pairs(f, args, PAIRS);
	assert_int_equal(prepare_mem(&f->d, f->m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f->d.name, LMH_DEADLINE_MS), 0);
	lmh_trace_open(t, f->d.trace);
	assert_int_equal(lmh_trace_sync(t), 0);
	*mark = lmh_trace_mark(t);
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f->g);
	assert_int_equal(vu_guest_new_eventfds(f->g), 0);
	assert_int_equal(vu_start_device(c, f->g, &o), 0);
	return c;
}

/* With preconf=2: the same, then until every queue got its fields (still INIT). */
static struct vu_client *
start_until_fields(struct fixture *f, struct lmh_trace *t, size_t *mark)
{
	struct vu_client *c = prepared_start_until_kicks(f, ARGS_FIELDS, t, mark);

	assert_true(lmh_wait_trace(t, *mark, is_fields_only, NULL, RINGS, LMH_DEADLINE_MS));
	return c;
}

/* The front end's enables and DRIVER_OK, as QEMU sends them; not waiting for the device. */
static void
send_driver_ok(struct vu_client *c)
{
	unsigned int i;

	for (i = 0; i < RINGS; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
}

static void
driver_ok(struct fixture *f, struct vu_client *c)
{
	send_driver_ok(c);
	assert_true(lmh_wait_running(&f->d, LMH_DEADLINE_MS));
}

static void
stop_and_leave(struct fixture *f, struct vu_client *c)
{
	uint32_t bases[RINGS];

	(void)vu_stop_device(c, bases, RINGS);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f->d));
}

static void
test_preconf_2_sends_the_queues_fields_at_their_kicks(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark, at_ok;
	int q;

	(void)state;
	/* Every queue's fields, before any enable or DRIVER_OK; every queue still INIT. */
	c = start_until_fields(&f, &t, &mark);
	for (q = 0; q < RINGS; q++) {
		assert_int_equal(lmh_trace_count(&t, mark, is_fields_only, &q), 1);
		assert_int_equal(lmh_vq_state(&f.d, (unsigned int)q), PRM_VIRTQ_STATE_INIT);
	}
	assert_int_equal(lmh_trace_count(&t, mark, is_rdy_alone, NULL), 0);
	/* The memory came from the preparation, taken at the first kick. */
	assert_int_equal(lmh_trace_count(&t, mark, is_mr_reg, NULL), 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_USED);
	at_ok = lmh_trace_mark(&t);
	driver_ok(&f, c);
	/* DRIVER_OK: one MODIFY per queue, RDY alone; nothing registered. */
	for (q = 0; q < RINGS; q++) {
		assert_int_equal(lmh_trace_count(&t, at_ok, is_rdy_alone, &q), 1);
		assert_int_equal(lmh_vq_state(&f.d, (unsigned int)q), PRM_VIRTQ_STATE_RDY);
	}
	assert_int_equal(lmh_trace_count(&t, at_ok, is_any_modify, NULL), RINGS);
	assert_int_equal(lmh_trace_count(&t, at_ok, is_registration, NULL), 0);
	assert_true(lmh_traffic(f.g, (1u << PAIRS) - 1, 64, 3000));
	stop_and_leave(&f, c);
	lmh_trace_free(&t);
	fixture_down(&f);
}

/*
 * preconf=2 on a device with fewer queue pairs than command slots: each
 * queue's fields go to the pool as a task of their own, so a pair's two
 * MODIFYs are on the command slots at once (one task per pair sent them
 * one after the other: a 4-pair device's 8 in two waves on 16 slots, which
 * its DRIVER_OK then waited for). The MODIFYs of fields cost 300 ms here:
 * RX's and TX's overlap in time, which one thread sending both cannot do.
 */
static void
test_preconf_2_sends_a_small_devices_fields_on_the_slots_at_once(void **state)
{
	char path[] = "/tmp/test-prereg-profile-XXXXXX";
	const char *profile = "{ \"cmd_slots\": 16, \"host_pin_parallel\": 32, \"commands\": "
			      "{ \"MODIFY_VIRTQ_FIELDS\": { \"base_us\": 300000 } } }";
	const struct lmh_cmd *m[2] = { NULL, NULL };
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark, i;

	(void)state;
	profile_file(path, profile);
	probe_profile = path;
	c = prepared_start_until_kicks(&f, "queues=2,workers=4,mr_chunk_mb=16,preconf=2", &t,
				       &mark);
	probe_profile = NULL;
	assert_true(lmh_wait_trace(&t, mark, is_fields_only, NULL, RINGS, LMH_DEADLINE_MS));
	for (i = mark; i < t.n; i++)
		if (is_fields_only(&t.c[i], NULL) && t.c[i].qidx < 2)
			m[t.c[i].qidx] = &t.c[i];
	assert_non_null(m[0]);
	assert_non_null(m[1]);
	/* Each began before the other ended. */
	assert_true(m[0]->t_start_us < m[1]->t_end_us && m[1]->t_start_us < m[0]->t_end_us);
	driver_ok(&f, c);
	assert_true(lmh_traffic(f.g, (1u << PAIRS) - 1, 64, 3000));
	stop_and_leave(&f, c);
	lmh_trace_free(&t);
	fixture_down(&f);
	unlink(path);
}

/* A CREATE of queue *arg (the queue's size in *(arg + 1)). */
static bool
is_create_of_size(const struct lmh_cmd *c, const void *arg)
{
	const int *a = arg;

	return lmh_cmd_is_vq(c) && c->opcode == PRM_CMD_CREATE_GENERAL_OBJECT &&
	       c->status == 0 && c->qidx == a[0] &&
	       (int)PRM_GET(virtio_q, PRM_CADDR(virtq_cmd, c->in, q), queue_size) == a[1];
}

static void
test_what_changes_after_a_kick_is_driver_oks_to_apply(void **state)
{
	/* Ring 3 (pair 1: no traffic) halved after its kick: a new object at DRIVER_OK. */
	const int changed[2] = { 3, 128 };
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark, at_ok;
	int q;

	(void)state;
	c = start_until_fields(&f, &t, &mark);
	assert_int_equal(vu_set_vring_num(c, (uint32_t)changed[0], (uint32_t)changed[1]), 0);
	at_ok = lmh_trace_mark(&t);
	driver_ok(&f, c);
	/* queue_size has no modify bit: what was sent at the kick is not reused for it. */
	assert_int_equal(lmh_trace_count(&t, at_ok, is_create_of_size, changed), 1);
	for (q = 0; q < RINGS; q++) {
		assert_int_equal(lmh_trace_count(&t, at_ok, is_rdy_alone, &q), q != changed[0]);
		assert_int_equal(lmh_vq_state(&f.d, (unsigned int)q), PRM_VIRTQ_STATE_RDY);
	}
	assert_true(lmh_traffic(f.g, 0x1, 64, 3000));
	stop_and_leave(&f, c);
	lmh_trace_free(&t);
	fixture_down(&f);
}

static bool
is_create_mkey(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return strcmp(c->op, "CREATE_MKEY") == 0 && c->status == 0;
}

static bool
is_destroy_mkey(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return strcmp(c->op, "DESTROY_MKEY") == 0 && c->status == 0;
}

/*
 * A front end gone after its kicks, before DRIVER_OK: the mkey made at the
 * first kick goes, and each queue that got fields (preconf=2) is re-created
 * blank; the next front end's start is a normal one; nothing stays alive.
 */
static void
leave_after_the_kicks(const char *args, bool fields)
{
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark;
	int q;

	c = prepared_start_until_kicks(&f, args, &t, &mark);
	assert_true(lmh_wait_trace(&t, mark, is_create_mkey, NULL, 1, LMH_DEADLINE_MS));
	if (fields)
		assert_true(lmh_wait_trace(&t, mark, is_fields_only, NULL, RINGS,
					   LMH_DEADLINE_MS));
	mark = lmh_trace_mark(&t);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f.d));
	/* The mkey goes with its registration, deferred (mr_gc_ms) like every deletion. */
	assert_true(lmh_wait_trace(&t, mark, is_destroy_mkey, NULL, 1, LMH_DEADLINE_MS));
	for (q = 0; q < RINGS; q++) {
		const int blank[2] = { q, 256 };

		assert_int_equal(lmh_trace_count(&t, mark, is_create_of_size, blank), fields);
		assert_int_equal(lmh_vq_state(&f.d, (unsigned int)q), PRM_VIRTQ_STATE_INIT);
	}
	/* And the prepared chunks with it: the preparation was taken, nothing holds them. */
	assert_true(wait_live0(&f.d));
	lmh_trace_free(&t);
	/* The next front end, nothing prepared: its DRIVER_OK registers and configures all. */
	assert_true(run_front_end(&f.d, 0, f.g) >= 2);
	fixture_down(&f);
}

static void
test_front_end_leaving_after_its_kicks_leaves_blank_queues(void **state)
{
	(void)state;
	leave_after_the_kicks(ARGS_FIELDS, true);
	leave_after_the_kicks("queues=2,workers=2,mr_chunk_mb=16,mr_gc_ms=50", false);
}

/*
 * preconf=0 and 1: no queue touched before DRIVER_OK, which sends fields
 * and RDY in one MODIFY per queue; the prepared table's mkey made before
 * the kicks are done (1) or at DRIVER_OK (0).
 */
static void
preconf_memory_or_nothing(const char *args, bool mkey_ahead)
{
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark, at_ok;

	c = prepared_start_until_kicks(&f, args, &t, &mark);
	if (mkey_ahead)
		assert_true(lmh_wait_trace(&t, mark, is_create_mkey, NULL, 1, LMH_DEADLINE_MS));
	/* Everything vhost does for a message is done once its reply is read. */
	lmh_barrier(&f.d);
	at_ok = lmh_trace_mark(&t);
	assert_int_equal(lmh_trace_count(&t, mark, is_create_mkey, NULL), mkey_ahead);
	assert_int_equal(lmh_trace_count(&t, mark, is_any_modify, NULL), 0);
	driver_ok(&f, c);
	assert_int_equal(lmh_trace_count(&t, at_ok, is_create_mkey, NULL), !mkey_ahead);
	assert_int_equal(lmh_trace_count(&t, at_ok, is_mr_reg, NULL), 0);
	assert_int_equal(lmh_trace_count(&t, at_ok, is_any_modify, NULL), RINGS);
	assert_int_equal(lmh_trace_count(&t, at_ok, is_rdy_alone, NULL), 0);
	assert_true(lmh_traffic(f.g, (1u << PAIRS) - 1, 64, 3000));
	stop_and_leave(&f, c);
	lmh_trace_free(&t);
	fixture_down(&f);
}

static void
test_preconf_1_makes_the_mkey_before_the_kicks(void **state)
{
	(void)state;
	/* The default. */
	preconf_memory_or_nothing("queues=2,workers=2,mr_chunk_mb=16", true);
}

/*
 * preconf=1: the prepared table's mkey is made once vhost has the table,
 * before any ring's message. Made at the first kick, a small device's
 * mkey was still in flight at its DRIVER_OK, whose MODIFYs waited for it.
 * A front end that leaves then takes it with it: the mkey goes, deferred,
 * and the prepared chunks, the preparation being taken; nothing stays.
 */
static void
test_preconf_1_makes_the_mkey_once_vhost_has_the_table(void **state)
{
	const uint64_t want = (1ULL << VU_F_VERSION_1) | (1ULL << VU_F_PROTOCOL_FEATURES) |
			      (1ULL << VU_F_NET_MQ);
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark;

	(void)state;
	fixture_up_pairs(&f, "queues=2,workers=2,mr_chunk_mb=16", PAIRS);
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	lmh_trace_open(&t, f.d.trace);
	assert_int_equal(lmh_trace_sync(&t), 0);
	mark = lmh_trace_mark(&t);
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f.g);
	assert_int_equal(vu_device_init(c, NULL), 0);
	assert_int_equal(vu_set_features(c, want & vu_backend_features(c)), 0);
	assert_int_equal(vu_set_mem_table(c, vu_guest_mem(f.g)), 0);
	assert_true(lmh_wait_trace(&t, mark, is_create_mkey, NULL, 1, LMH_DEADLINE_MS));
	/* The prepared chunks serve it: nothing registered, no queue touched. */
	assert_int_equal(lmh_trace_count(&t, mark, is_mr_reg, NULL), 0);
	assert_int_equal(lmh_trace_count(&t, mark, is_any_modify, NULL), 0);
	mark = lmh_trace_mark(&t);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f.d));
	assert_true(lmh_wait_trace(&t, mark, is_destroy_mkey, NULL, 1, LMH_DEADLINE_MS));
	assert_true(wait_live0(&f.d));
	lmh_trace_free(&t);
	assert_true(run_front_end(&f.d, 0, f.g) >= 2);
	fixture_down(&f);
}

static void
test_preconf_0_does_everything_at_driver_ok(void **state)
{
	(void)state;
	preconf_memory_or_nothing("queues=2,workers=2,mr_chunk_mb=16,preconf=0", false);
}

/*
 * The table's prepared registration was not kept: DRIVER_OK registers the
 * table itself (its chunks and a new mkey), and the frames flow. Then the
 * front end leaves and everything goes.
 */
static void
driver_ok_registers_itself(struct fixture *f, struct vu_client *c, struct lmh_trace *t)
{
	size_t at_ok = lmh_trace_mark(t);

	driver_ok(f, c);
	assert_true(lmh_trace_count(t, at_ok, is_mr_reg, NULL) >= 2);
	assert_int_equal(lmh_trace_count(t, at_ok, is_create_mkey, NULL), 1);
	assert_true(lmh_traffic(f->g, (1u << PAIRS) - 1, 64, 3000));
	stop_and_leave(f, c);
	lmh_trace_free(t);
	fixture_down(f);
}

/* Bounded wait until the device reports state (rte_pmd_mlx5_lm_get_state). */
static bool
wait_dev_state(struct lmh_dev *d, int state)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	struct rte_pmd_mlx5_lm_state st;

	for (;;) {
		assert_int_equal(rte_pmd_mlx5_lm_get_state(d->name, &st), 0);
		if (st.state == state)
			return true;
		if (lmh_now_ms() > end) {
			printf("  device in state %d, not %d\n", st.state, state);
			return false;
		}
		lmh_tick();
	}
}

static void
test_failed_driver_ok_undoes_what_was_done_ahead(void **state)
{
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark, at_ok;
	int q;

	(void)state;
	c = start_until_fields(&f, &t, &mark);
	/* DRIVER_OK's first MODIFY is refused: the configuration fails. */
	assert_int_equal(lmh_fault_inject(&f.d, PRM_CMD_MODIFY_GENERAL_OBJECT,
					  PRM_OBJ_VIRTIO_NET_Q, 1, PRM_STATUS_NO_RESOURCES, 0), 0);
	at_ok = lmh_trace_mark(&t);
	send_driver_ok(c);
	assert_true(wait_dev_state(&f.d, RTE_PMD_MLX5_LM_STATE_FAILED));
	/* The queues that had the front end's fields are blank again, the mkey goes. */
	for (q = 0; q < RINGS; q++) {
		const int blank[2] = { q, 256 };

		assert_int_equal(lmh_trace_count(&t, at_ok, is_create_of_size, blank), 1);
		assert_int_equal(lmh_vq_state(&f.d, (unsigned int)q), PRM_VIRTQ_STATE_INIT);
	}
	assert_true(lmh_wait_trace(&t, at_ok, is_destroy_mkey, NULL, 1, LMH_DEADLINE_MS));
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	lmh_trace_free(&t);
	/* The next front end starts as on a new device; nothing stays alive (fixture_down). */
	assert_true(run_front_end(&f.d, 0, f.g) >= 2);
	fixture_down(&f);
}

static void
test_memory_changed_after_the_first_kick_is_registered_again(void **state)
{
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark;

	(void)state;
	c = prepared_start_until_kicks(&f, "queues=2,workers=2,mr_chunk_mb=16", &t, &mark);
	assert_true(lmh_wait_trace(&t, mark, is_create_mkey, NULL, 1, LMH_DEADLINE_MS));
	/* The file grown by a page after the kick (its table's pages untouched): a change. */
	assert_int_equal(ftruncate(f.m->fd, MEM_SIZE + 4096), 0);
	driver_ok_registers_itself(&f, c, &t);
}

/*
 * A preparation replaced (rte_pmd_mlx5_lm_prepare again) after a DRIVER_OK
 * took it and before the device's worker ran that configuration: the
 * configuration's reference is then the last one. When the configuration
 * does not need the prepared chunks (the table's released registration is
 * taken back), it drops that reference itself, on the worker, inside the
 * foreground and under dev->lock. The worker is held here to make the
 * window (a few microseconds otherwise) certain.
 */
static void
test_preparation_replaced_before_its_driver_ok_ran(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_client *c;
	struct fixture f;
	uint32_t bases[2];
	bool running;

	(void)state;
	/* preconf=0: DRIVER_OK takes the preparation; the registration is kept 60 s. */
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=60000,preconf=0");
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f.g);
	assert_int_equal(vu_guest_new_eventfds(f.g), 0);
	assert_int_equal(vu_start_device(c, f.g, NULL), 0);
	assert_true(lmh_wait_running(&f.d, LMH_DEADLINE_MS));
	assert_int_equal(vu_stop_device(c, bases, 2), 0);
	/* The queues blank again, the table's registration released (reusable). */
	assert_true(lmh_wait_restored(&f.d));
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	mlx5_lm_worker_hold(f.d.dev, 1);
	assert_int_equal(vu_start_device(c, f.g, NULL), 0);
	/* vhost's thread took it at DRIVER_OK; the configuration is queued. */
	assert_true(wait_prep_state(&f.d, RTE_PMD_MLX5_LM_PREP_USED, &st));
	/* The application prepares the device again: the device lets go of the one taken. */
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	mlx5_lm_worker_hold(f.d.dev, 0);
	/* The report's lock, not dev->lock, which a stuck configuration would hold. */
	running = wait_dev_state(&f.d, RTE_PMD_MLX5_LM_STATE_RUNNING);
	if (!running) {
		printf("  DRIVER_OK's configuration never ended: the worker is stuck\n");
		/* The removal would wait for it for ever: leave at once. */
		fflush(stdout);
		_exit(1);
	}
	assert_true(lmh_traffic(f.g, 0x1, 64, 3000));
	(void)vu_stop_device(c, bases, 2);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f.d));
	fixture_down(&f);
}

static bool
is_mr_dereg(const struct lmh_cmd *c, const void *arg)
{
	(void)arg;
	return strcmp(c->op, "MR_DEREG") == 0;
}

/* rte_pmd_mlx5_lm_prepare() on a thread of its own: the application's. */
struct prep_call {
	const char *name;
	struct rte_pmd_mlx5_lm_prep_region r;
	int ret;
};

static void *
prep_call_main(void *arg)
{
	struct prep_call *a = arg;

	a->ret = rte_pmd_mlx5_lm_prepare(a->name, getpid(), &a->r, 1);
	return NULL;
}

/*
 * A taken preparation whose registration failed (its mkey, made once vhost
 * has the table) is held by the device alone until the DRIVER_OK: the
 * application's next rte_pmd_mlx5_lm_prepare() drops that last reference.
 * Its chunks' deregistration (2 s a chunk here, 2 at a time) ran in that
 * call, under the preparation's lock, which a DRIVER_OK sent meanwhile
 * waited for on vhost's thread (dev->lock held): the front end's next
 * message was answered once the last chunk was deregistered. The
 * deregistration is the garbage thread's: vhost's thread answers while it
 * runs (the bound, 1 s, is half a deregistration, and far above the few
 * milliseconds of DRIVER_OK and a message).
 */
static void
test_an_old_preparations_deregistration_does_not_hold_vhosts_thread(void **state)
{
	char path[] = "/tmp/test-prereg-profile-XXXXXX";
	const char *profile = "{ \"cmd_slots\": 16, \"host_pin_parallel\": 32, \"commands\": "
			      "{ \"GUEST_UMEM_DEREG\": { \"base_us\": 2000000 } } }";
	struct vu_start_opts o = { .no_status = true };
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_client *c;
	struct prep_call a;
	struct lmh_trace t;
	struct fixture f;
	int64_t t0, took;
	uint64_t feat;
	pthread_t th;
	size_t mark, log;
	unsigned int i;

	(void)state;
	profile_file(path, profile);
	probe_profile = path;
	/* preconf=1 (the default): the table's mkey is made once vhost has the table. */
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=50");
	probe_profile = NULL;
	unlink(path);
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	lmh_trace_open(&t, f.d.trace);
	assert_int_equal(lmh_trace_sync(&t), 0);
	log = lmh_log_mark();
	assert_int_equal(lmh_fault_inject(&f.d, PRM_CMD_CREATE_MKEY, 0xffff, 1,
					  PRM_STATUS_NO_RESOURCES, 0), 0);
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f.g);
	assert_int_equal(vu_guest_new_eventfds(f.g), 0);
	assert_int_equal(vu_start_device(c, f.g, &o), 0);
	/* The worker gave up the registration, and with it the job's reference. */
	assert_true(lmh_wait_log(log, "prepared registration failed ahead of DRIVER_OK",
				 LMH_DEADLINE_MS));
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_USED);
	/* The application prepares the device again. */
	mark = lmh_trace_mark(&t);
	a = (struct prep_call){ .name = f.d.name,
		.r = { .fd = f.m->fd, .offset = 0, .size = MEM_SIZE } };
	assert_int_equal(pthread_create(&th, NULL, prep_call_main, &a), 0);
	/* The old chunks' first deregistrations ended, the next ones are under way. */
	assert_true(lmh_wait_trace(&t, mark, is_mr_dereg, NULL, 1, LMH_DEADLINE_MS));
	t0 = lmh_now_ms();
	for (i = 0; i < 2; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
	assert_int_equal(vu_get_features(c, &feat), 0);
	took = lmh_now_ms() - t0;
	printf("  DRIVER_OK and the next message answered in %" PRId64 " ms\n", took);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(a.ret, 0);
	assert_true(took < 1000);
	assert_true(lmh_wait_running(&f.d, LMH_DEADLINE_MS));
	assert_true(lmh_traffic(f.g, 0x1, 64, 3000));
	stop_and_leave(&f, c);
	lmh_trace_free(&t);
	fixture_down(&f);
}

/*
 * Two prepared ranges of one file that overlap (a front end that maps its
 * memory file twice, at different offsets: vhostd prepares each mapping):
 * a region of the table lies in the first, and the chunks of the second
 * that overlap it must not be taken too. Each is a KLM entry, which the
 * device places one after the other: an extra one shifts every region
 * after it, and the device would look for the guest's rings, and write
 * its frames and used entries, 4 MiB away from where the guest put them.
 */
static void
test_overlapping_prepared_ranges_serve_a_region_once(void **state)
{
	/* The rings and buffers go in the first (gpa 4 GiB); gpa 1 GiB comes first in the KLM. */
	static const struct vu_mem_region two[] = {
		{ .gpa = 4ull << 30, .size = 32 * MIB, .offset = 32 * MIB },
		{ .gpa = 1ull << 30, .size = 32 * MIB, .offset = 0 },
	};
	struct vu_guest_cfg cfg = { .queue_pairs = 1, .ring_size = 256 };
	struct rte_pmd_mlx5_lm_prep_region r[2];
	struct vu_guest *g;
	struct vu_mem *m;
	struct lmh_dev d;
	uint64_t gpa;
	size_t mark;

	(void)state;
	assert_int_equal(lmh_probe(&d, 0, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=50"), 0);
	assert_int_equal(vu_mem_create(&m, MEM_SIZE, two, 2), 0);
	/* The guest's rings past the first 8 MiB of its region. */
	assert_int_equal(vu_mem_alloc(m, 8 * MIB, 4096, &gpa), 0);
	assert_int_equal(vu_guest_create(&g, m, &cfg), 0);
	/* The whole file, and its last 4 MiB below 32 MiB again. */
	r[0] = (struct rte_pmd_mlx5_lm_prep_region){ .fd = m->fd, .offset = 0, .size = MEM_SIZE };
	r[1] = (struct rte_pmd_mlx5_lm_prep_region){ .fd = m->fd, .offset = 28 * MIB,
						     .size = 4 * MIB };
	assert_int_equal(rte_pmd_mlx5_lm_prepare(d.name, getpid(), r, 2), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(d.name, LMH_DEADLINE_MS), 0);
	mark = lmh_log_mark();
	/* Four chunks of 16 MiB cover the table: no more. */
	assert_int_equal(run_front_end(&d, 0, g), 0);
	assert_true(lmh_log_has(mark, "registered 2 regions in 4 chunks (4 of them prepared)"));
	vu_guest_destroy(g);
	vu_mem_destroy(m);
	assert_int_equal(lmh_remove(&d), 0);
}

/*
 * The file truncated and grown back to its size after the first kick (new
 * pages: the registration made ahead pins the old ones), then a
 * preparation refused (a region the device cannot use): the refused one
 * must not take the news of that change with it. DRIVER_OK registers the
 * table again, as without the refused call.
 */
static void
test_a_refused_preparation_keeps_the_changes_seen_since_the_kick(void **state)
{
	struct rte_pmd_mlx5_lm_prep_region bad = { .fd = -1, .offset = 0, .size = 4096 };
	struct vu_client *c;
	struct lmh_trace t;
	struct fixture f;
	size_t mark;

	(void)state;
	c = prepared_start_until_kicks(&f, "queues=2,workers=2,mr_chunk_mb=16", &t, &mark);
	assert_true(lmh_wait_trace(&t, mark, is_create_mkey, NULL, 1, LMH_DEADLINE_MS));
	/* Its size unchanged: only the watch on the file tells. */
	assert_int_equal(ftruncate(f.m->fd, MEM_SIZE / 2), 0);
	assert_int_equal(ftruncate(f.m->fd, MEM_SIZE), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, getpid(), &bad, 1), -EINVAL);
	driver_ok_registers_itself(&f, c, &t);
}

/* ---- released ------------------------------------------------------------------- */

static void
released(struct fixture *f, const char *reason)
{
	struct rte_pmd_mlx5_lm_prep_status st;

	assert_true(wait_prep_state(&f->d, RTE_PMD_MLX5_LM_PREP_RELEASED, &st));
	printf("  released: %s\n", st.reason);
	assert_non_null(strstr(st.reason, reason));
	/* Its memory regions are gone from the device. */
	assert_int_equal(lmh_live(&f->d), f->d.live0);
}

static void
test_unused_preparation_is_released(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_client *c;
	struct fixture f;
	uint64_t feat;
	pid_t child;
	int wfd;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,prereg_ttl_ms=300");
	assert_int_equal(prepare_mem(&f.d, f.m, 0), 0);
	released(&f, "prereg_ttl_ms");
	assert_int_equal(lmh_remove(&f.d), 0);
	memset(&f.d, 0, sizeof(f.d));
	assert_int_equal(lmh_probe(&f.d, 0, "queues=1,workers=2,mr_chunk_mb=16"), 0);
	/* Its process exits. */
	child = child_start(&wfd);
	assert_int_equal(prepare_mem(&f.d, f.m, child), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	child_stop(child, wfd);
	released(&f, "process exited");
	/* Cancelled. */
	assert_int_equal(prepare_mem(&f.d, f.m, 0), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_cancel(f.d.name), 0);
	released(&f, "cancelled");
	assert_int_equal(rte_pmd_mlx5_lm_prepare_cancel(f.d.name), -ENOENT);
	/* The device's front end leaves before DRIVER_OK. */
	assert_int_equal(prepare_mem(&f.d, f.m, 0), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_non_null(c = lmh_fe_connect(0));
	assert_int_equal(vu_get_features(c, &feat), 0);
	assert_int_equal(vu_set_features(c, feat & (1ull << VU_F_VERSION_1)), 0);
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	released(&f, "disconnected before DRIVER_OK");
	/* Prepared, then the device goes: nothing stays alive (fixture_down). */
	assert_int_equal(prepare_mem(&f.d, f.m, 0), 0);
	assert_int_equal(prep_state(&f.d, &st) == RTE_PMD_MLX5_LM_PREP_PREPARING ||
			 st.state == RTE_PMD_MLX5_LM_PREP_READY, 1);
	fixture_down(&f);
}

/* How the DRIVER_OK that took a preparation fails. */
enum taken_then_failed {
	/* The table's regions overlap: refused before any command. */
	FAIL_TABLE,
	/* The device refuses the mkey over the prepared chunks. */
	FAIL_MKEY,
	/* Logging without a log area: refused before the configuration. */
	FAIL_LOG,
};

/*
 * A DRIVER_OK (preconf=0) takes the preparation, then fails; the front end
 * stays, then leaves. Once the DRIVER_OK ended, the device lets go of the
 * preparation: nothing of it stays alive in the emulator (its chunks
 * deregistered, its mapping gone). It kept it when the registration made
 * of it failed - its own reference then the last one - and its thread,
 * whose time limit would have released it, had ended at its use: the
 * departed VM's memory stayed pinned until the next preparation or the
 * device's removal.
 */
static void
taken_then_failed(enum taken_then_failed how)
{
	static const struct vu_mem_region overlapping[] = {
		{ .gpa = 0, .size = 32 * MIB, .offset = 0 },
		{ .gpa = 16 * MIB, .size = 32 * MIB, .offset = 32 * MIB },
	};
	struct vu_start_opts o = { .no_status = true };
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_client *c;
	struct fixture f;
	unsigned int i;

	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=50,preconf=0");
	if (how == FAIL_TABLE) {
		struct vu_guest_cfg cfg = { .queue_pairs = 1, .ring_size = 256 };

		vu_guest_destroy(f.g);
		vu_mem_destroy(f.m);
		assert_int_equal(vu_mem_create(&f.m, MEM_SIZE, overlapping, 2), 0);
		assert_int_equal(vu_guest_create(&f.g, f.m, &cfg), 0);
	}
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f.g);
	assert_int_equal(vu_guest_new_eventfds(f.g), 0);
	assert_int_equal(vu_start_device(c, f.g, &o), 0);
	if (how == FAIL_MKEY)
		assert_int_equal(lmh_fault_inject(&f.d, PRM_CMD_CREATE_MKEY, 0xffff, 1,
						  PRM_STATUS_NO_RESOURCES, 0), 0);
	if (how == FAIL_LOG)
		assert_int_equal(vu_set_features(c, vu_acked_features(c) |
						 (1ull << VU_F_LOG_ALL)), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
	assert_true(wait_dev_state(&f.d, RTE_PMD_MLX5_LM_STATE_FAILED));
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_USED);
	printf("  taken, DRIVER_OK failed: %u emulator objects alive, %u after the probe\n",
	       lmh_live(&f.d), f.d.live0);
	assert_true(wait_live0(&f.d));
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f.d));
	assert_true(wait_live0(&f.d));
	/* The next preparation and front end as on a new device. */
	if (how != FAIL_TABLE) {
		assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
		assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
		assert_int_equal(run_front_end(&f.d, 0, f.g), 0);
	}
	fixture_down(&f);
}

/*
 * The fixture on a table at the mkey's edge, prepared. 16 MiB chunks, the
 * file's 32 MiB prepared in two. Region 0, file [8, 24) MiB: one chunk of
 * its own, a slice of each prepared chunk. Region 1, file [0, 8) MiB, past
 * a hole of null entries (2 GiB each) that brings the usual count to the
 * limit exactly, plus extra (the emulator's log_max_klm_list_size allows
 * more than one command carries).
 */
static void
edge_up(struct fixture *f, const char *args, unsigned int extra)
{
	const struct vu_mem_region edge[] = {
		{ .gpa = 0, .size = 16 * MIB, .offset = 8 * MIB },
		{ .gpa = 16 * MIB + (uint64_t)(PRM_MAX_KLM_PER_CMD - 2 + extra) * (2ull << 30),
		  .size = 8 * MIB, .offset = 0 },
	};
	struct vu_guest_cfg cfg = { .queue_pairs = 1, .ring_size = 256 };

	memset(f, 0, sizeof(*f));
	assert_int_equal(lmh_probe(&f->d, 0, args), 0);
	assert_int_equal(vu_mem_create(&f->m, 32 * MIB, edge, 2), 0);
	assert_int_equal(vu_guest_create(&f->g, f->m, &cfg), 0);
	assert_int_equal(prepare_mem(&f->d, f->m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f->d.name, LMH_DEADLINE_MS), 0);
}

/*
 * A prepared range that begins inside a region cuts that region into one
 * KLM entry more than its own chunks: a table that just fits the device's
 * mkey as usual does not fit prepared. The preparation is then not used,
 * says why, and the table is registered as usual. Before, DRIVER_OK failed
 * on an indirect mkey past the limit (preconf=0), or the mkey made at the
 * table failed and DRIVER_OK registered the table while the preparation
 * said it was used (preconf=1).
 */
static void
past_the_mkeys_entries(const char *args)
{
	struct fixture f;

	edge_up(&f, args, 0);
	not_used(&f, "KLM entries, more than the 4078 of the device's mkey");
	fixture_down(&f);
}

/*
 * One null entry more: the table does not fit even as usual. The
 * preparation says so, not that its chunks are the cause, and DRIVER_OK
 * refuses the table.
 */
static void
past_the_mkeys_entries_anyway(void)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct vu_start_opts o = { .no_status = true };
	struct vu_client *c;
	struct fixture f;
	unsigned int i;

	edge_up(&f, "queues=1,workers=2,mr_chunk_mb=16,preconf=0", 1);
	assert_non_null(c = lmh_fe_connect(0));
	vu_guest_reset(f.g);
	assert_int_equal(vu_guest_new_eventfds(f.g), 0);
	assert_int_equal(vu_start_device(c, f.g, &o), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(vu_set_vring_enable(c, i, true), 0);
	assert_int_equal(vu_set_status(c, VU_STATUS_ACK | VU_STATUS_DRIVER |
				       VU_STATUS_FEATURES_OK | VU_STATUS_DRIVER_OK), 0);
	assert_true(wait_dev_state(&f.d, RTE_PMD_MLX5_LM_STATE_FAILED));
	assert_true(wait_prep_state(&f.d, RTE_PMD_MLX5_LM_PREP_RELEASED, &st));
	printf("  not used (%s), DRIVER_OK failed\n", st.reason);
	assert_non_null(strstr(st.reason, "KLM entries even without it"));
	vu_disconnect(c);
	assert_true(lmh_wait_closed(0));
	assert_true(lmh_wait_restored(&f.d));
	assert_true(wait_live0(&f.d));
	fixture_down(&f);
}

static void
test_a_preparation_past_the_mkeys_entries_is_not_used(void **state)
{
	(void)state;
	past_the_mkeys_entries("queues=1,workers=2,mr_chunk_mb=16,preconf=0");
	past_the_mkeys_entries("queues=1,workers=2,mr_chunk_mb=16");
	past_the_mkeys_entries_anyway();
}

static void
test_a_preparation_taken_by_a_failed_driver_ok_is_released(void **state)
{
	(void)state;
	taken_then_failed(FAIL_TABLE);
	taken_then_failed(FAIL_MKEY);
	taken_then_failed(FAIL_LOG);
}

/* The preparation thread inside its window (mlx5_lm_prereg_race). */
struct late_take {
	const char *name;
	_Atomic pid_t tid;           /* the preparation's thread, once in the window */
};

/* In the window: stay until a DRIVER_OK took the preparation (bounded). */
static void
wait_for_the_take(void *arg)
{
	struct late_take *l = arg;
	struct rte_pmd_mlx5_lm_prep_status st;
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;

	atomic_store(&l->tid, (pid_t)syscall(SYS_gettid));
	while (rte_pmd_mlx5_lm_prepare_status(l->name, &st) == 0 &&
	       st.state != RTE_PMD_MLX5_LM_PREP_USED && lmh_now_ms() < end)
		lmh_tick();
}

/* Bounded wait until thread tid of this process has exited. */
static bool
thread_gone(pid_t tid)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	while (access(path, F_OK) == 0) {
		if (lmh_now_ms() > end)
			return false;
		lmh_tick();
	}
	return true;
}

/*
 * The preparation's time runs out as a DRIVER_OK takes it: its thread
 * checks for the take under the preparation's lock, lets go of the lock,
 * then releases it. A take in between (the seam holds the thread there
 * until it came) made it USED; the thread still released it as unused:
 * state RELEASED "not used within prereg_ttl_ms" for a preparation in use,
 * the device's reference dropped (a registration made of it at the first
 * kick would then be found replaced at DRIVER_OK and done again), its
 * registration cancelled. Used, it stays USED; the device runs on its
 * chunks, and lets go of them with the front end.
 */
static void
test_a_preparation_taken_as_its_time_runs_out_stays_used(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct late_take l = { .tid = 0 };
	struct fixture f;
	int64_t end;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,mr_gc_ms=50,preconf=0,"
		   "prereg_ttl_ms=300");
	l.name = f.d.name;
	mlx5_lm_prereg_race(f.d.dev, wait_for_the_take, &l);
	assert_int_equal(prepare_mem(&f.d, f.m, getpid()), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	/* Its time ran out: its thread is between the wait's end and the release. */
	end = lmh_now_ms() + LMH_DEADLINE_MS;
	while (atomic_load(&l.tid) == 0 && lmh_now_ms() < end)
		lmh_tick();
	assert_true(atomic_load(&l.tid) != 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_READY);
	/* A front end: its DRIVER_OK takes it; the thread goes on and ends. */
	assert_int_equal(run_front_end(&f.d, 0, f.g), 0);
	assert_true(thread_gone(atomic_load(&l.tid)));
	mlx5_lm_prereg_race(f.d.dev, NULL, NULL);
	printf("  state %d, reason '%s'\n", prep_state(&f.d, &st), st.reason);
	assert_int_equal(st.state, RTE_PMD_MLX5_LM_PREP_USED);
	assert_null(strstr(st.reason, "prereg_ttl_ms"));
	assert_int_equal(st.used_bytes, MEM_SIZE);
	assert_true(wait_live0(&f.d));
	fixture_down(&f);
}

/* A thread waiting for a device's preparation (rte_pmd_mlx5_lm_prepare_wait). */
struct prep_waiter {
	const char *name;
	_Atomic pid_t tid;
	int ret;
};

static void *
prep_waiter_main(void *arg)
{
	struct prep_waiter *w = arg;

	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	w->ret = rte_pmd_mlx5_lm_prepare_wait(w->name, 60000);
	return NULL;
}

/* Bounded wait until the waiter sleeps in a futex (its condition variable's wait). */
static bool
waiter_sleeps(struct prep_waiter *w)
{
	int64_t end = lmh_now_ms() + LMH_DEADLINE_MS;
	char path[64], buf[64];
	pid_t tid;
	FILE *f;

	while (lmh_now_ms() < end) {
		tid = atomic_load(&w->tid);
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
		f = tid != 0 ? fopen(path, "r") : NULL;
		if (f != NULL) {
			/* "<nr> <args...>" in a system call, "running" otherwise. */
			bool in = fgets(buf, sizeof(buf), f) != NULL && isdigit((unsigned char)buf[0]) &&
				  strtol(buf, NULL, 10) == SYS_futex;

			fclose(f);
			if (in)
				return true;
		}
		lmh_tick();
	}
	printf("  the waiting thread never slept in a futex\n");
	return false;
}

/*
 * A caller waiting for a preparation holds the device: its removal tells
 * it to leave (-ENODEV) rather than waiting for it. The preparation's
 * chunk registrations cost 1.5 s each here; before, the removal waited
 * until the last of them ended (or the caller's timeout) and the caller
 * got 0 for a device that was going.
 */
static void
test_removal_does_not_wait_for_a_caller_of_prepare_wait(void **state)
{
	char path[] = "/tmp/test-prereg-profile-XXXXXX";
	const char *profile = "{ \"cmd_slots\": 16, \"host_pin_parallel\": 32, \"commands\": "
			      "{ \"GUEST_UMEM_REG\": { \"base_us\": 1500000 } } }";
	struct rte_pmd_mlx5_lm_prep_status st;
	struct prep_waiter w = { .tid = 0 };
	struct fixture f;
	pthread_t th;

	(void)state;
	profile_file(path, profile);
	probe_profile = path;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16");
	probe_profile = NULL;
	unlink(path);
	assert_int_equal(prepare_mem(&f.d, f.m, 0), 0);
	w.name = f.d.name;
	assert_int_equal(pthread_create(&th, NULL, prep_waiter_main, &w), 0);
	assert_true(waiter_sleeps(&w));
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_PREPARING);
	/* Nothing left alive: the registrations in flight end, the rest never starts. */
	assert_int_equal(lmh_remove(&f.d), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.ret, -ENODEV);
	vu_guest_destroy(f.g);
	vu_mem_destroy(f.m);
}

/* One of two threads that prepare the same device over and over. */
struct prep_racer {
	const char *name;
	struct rte_pmd_mlx5_lm_prep_region r;
	int pid;
	int fails;
};

static void *
prep_racer_main(void *arg)
{
	struct prep_racer *x = arg;
	int i, ret;

	for (i = 0; i < 200; i++) {
		ret = rte_pmd_mlx5_lm_prepare(x->name, x->pid, &x->r, 1);
		if (ret != 0 && x->fails++ == 0)
			printf("  prepare: %s\n", strerror(-ret));
	}
	return NULL;
}

/*
 * Two callers preparing one device at once (two control clients, a
 * migration hook beside the automatic preparation): each call replaces
 * the one before, as in a row. Both used to stop "the" thread and start
 * their own over the same state: a thread joined twice or never, the
 * earlier preparation (and its pidfd) kept by nobody.
 */
static void
test_concurrent_preparations_replace_each_other(void **state)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	struct prep_racer x[2];
	pthread_t th[2];
	unsigned int fds0;
	struct fixture f;
	int i;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16");
	fds0 = lmh_open_fds();
	for (i = 0; i < 2; i++) {
		x[i] = (struct prep_racer){ .name = f.d.name, .pid = i == 0 ? 0 : getpid(),
			.r = { .fd = f.m->fd, .offset = 0, .size = 2 * MIB } };
		assert_int_equal(pthread_create(&th[i], NULL, prep_racer_main, &x[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(x[i].fails, 0);
	}
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_READY);
	assert_int_equal(st.preparations, 400);
	/* The last one, cancelled, leaves the device as it was: no registration, no fd. */
	assert_int_equal(rte_pmd_mlx5_lm_prepare_cancel(f.d.name), 0);
	assert_true(wait_prep_state(&f.d, RTE_PMD_MLX5_LM_PREP_RELEASED, &st));
	assert_true(wait_live0(&f.d));
	assert_int_equal(lmh_open_fds(), fds0 + (st.pid > 0 ? 1 : 0));
	fixture_down(&f);
}

static void
test_bad_preparations_are_refused_and_leave_nothing(void **state)
{
	struct rte_pmd_mlx5_lm_prep_region r;
	struct rte_pmd_mlx5_lm_prep_status st;
	struct fixture f;
	int64_t t0;
	int i;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16,prereg_max_gb=1");
	r = (struct rte_pmd_mlx5_lm_prep_region){ .fd = -1, .offset = 0, .size = MEM_SIZE };
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 1), -EINVAL);
	r.fd = f.m->fd;
	r.offset = 100;
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 1), -EINVAL);
	r.offset = 0;
	r.size = MEM_SIZE * 2;
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 1), -EINVAL);
	r.size = MEM_SIZE;
	assert_int_equal(rte_pmd_mlx5_lm_prepare("vdpa_mlx5_lm_none", 0, &r, 1), -ENODEV);
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 0), -EINVAL);
	/* More than prereg_max_gb in all, though each region fits. */
	{
		struct rte_pmd_mlx5_lm_prep_region many[17];

		for (i = 0; i < 17; i++)
			many[i] = r;
		assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, many, 17), -E2BIG);
	}
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_NONE);
	/*
	 * Postcopy (which would fault in every pinned page) cannot come: the
	 * PMD never offers it, which is why a preparation does not ask vhost.
	 */
	{
		struct rte_vdpa_device *vd = rte_vdpa_find_device_by_name(f.d.name);
		uint64_t pf = 0;

		assert_non_null(vd);
		assert_int_equal(rte_vdpa_get_protocol_features(vd, &pf), 0);
		assert_true(pf & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
		assert_false(pf & (1ull << VHOST_USER_PROTOCOL_F_PAGEFAULT));
	}
	/* 1000 preparations in a row: each replaces the one before. */
	t0 = lmh_now_ms();
	r.size = 2 * MIB;
	for (i = 0; i < 1000; i++)
		assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 1), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_READY);
	assert_int_equal(st.preparations, 1000);
	printf("  1000 preparations in %" PRId64 " ms\n", lmh_now_ms() - t0);
	fixture_down(&f);
	/* prereg_max_gb=0: none at all. */
	fixture_up(&f, "queues=1,workers=2,prereg_max_gb=0");
	assert_int_equal(prepare_mem(&f.d, f.m, 0), -EOPNOTSUPP);
	fixture_down(&f);
}

/*
 * A preparation of a file on a filesystem with writeback (ext4 here):
 * Linux 6.5+ does not pin it for the device's writes, so its registration
 * fails, its status says why, and nothing of it is left.
 */
static void
test_a_preparation_of_a_file_with_writeback_fails_saying_why(void **state)
{
	struct rte_pmd_mlx5_lm_prep_region r;
	struct rte_pmd_mlx5_lm_prep_status st;
	struct fixture f;
	int fd;

	(void)state;
	fd = lmf_writeback_file(2 * MIB);
	if (fd < 0) {
		print_message("no directory on a filesystem with writeback: not run\n");
		skip();
	}
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16");
	r = (struct rte_pmd_mlx5_lm_prep_region){ .fd = fd, .offset = 0, .size = 2 * MIB };
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, 0, &r, 1), 0);
	assert_true(wait_prep_state(&f.d, RTE_PMD_MLX5_LM_PREP_FAILED, &st));
	assert_non_null(strstr(st.reason, "a file with writeback"));
	printf("  status: %s\n", st.reason);
	assert_true(wait_live0(&f.d));
	fixture_down(&f);
	close(fd);
}

/*
 * The next thread this process starts fails with EAGAIN, once: the test's
 * own pthread_create comes before libc's for every caller in the process
 * (the driver starts its threads through it, or through DPDK, which does).
 */
static _Atomic int fail_next_thread;

int
pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (real == NULL)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	if (atomic_exchange(&fail_next_thread, 0))
		return EAGAIN;
	return real(th, a, fn, arg);
}

/*
 * A preparation whose thread cannot start (no thread left to the process)
 * fails, and leaves nothing of its own: its front end's pidfd was the
 * thread's to close at its stop, which never comes for a thread that never
 * ran - an fd lost at every such call. The next preparation works.
 */
static void
test_a_preparation_whose_thread_cannot_start_leaves_no_fd(void **state)
{
	struct rte_pmd_mlx5_lm_prep_region r;
	struct rte_pmd_mlx5_lm_prep_status st;
	unsigned int fds0;
	struct fixture f;
	int ret;

	(void)state;
	fixture_up(&f, "queues=1,workers=2,mr_chunk_mb=16");
	r = (struct rte_pmd_mlx5_lm_prep_region){ .fd = f.m->fd, .offset = 0, .size = 2 * MIB };
	fds0 = lmh_open_fds();
	atomic_store(&fail_next_thread, 1);
	ret = rte_pmd_mlx5_lm_prepare(f.d.name, getpid(), &r, 1);
	/* Consumed by the preparation's thread and no other: its call failed. */
	assert_int_equal(atomic_exchange(&fail_next_thread, 0), 0);
	assert_int_equal(ret, -EAGAIN);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_FAILED);
	printf("  failed: %s; open fds %u before, %u after\n", st.reason, fds0,
	       lmh_open_fds());
	assert_int_equal(lmh_open_fds(), fds0);
	assert_true(wait_live0(&f.d));
	assert_int_equal(rte_pmd_mlx5_lm_prepare(f.d.name, getpid(), &r, 1), 0);
	assert_int_equal(rte_pmd_mlx5_lm_prepare_wait(f.d.name, LMH_DEADLINE_MS), 0);
	assert_int_equal(prep_state(&f.d, &st), RTE_PMD_MLX5_LM_PREP_READY);
	fixture_down(&f);
}

LMH_TEST_MAIN("test-prereg", 1, "prereg", NULL, NULL,
	cmocka_unit_test(test_prepared_memory_serves_the_table),
	cmocka_unit_test(test_other_or_changed_memory_is_never_used),
	cmocka_unit_test(test_a_preparation_past_the_mkeys_entries_is_not_used),
	cmocka_unit_test(test_unused_preparation_is_released),
	cmocka_unit_test(test_removal_does_not_wait_for_a_caller_of_prepare_wait),
	cmocka_unit_test(test_bad_preparations_are_refused_and_leave_nothing),
	cmocka_unit_test(test_a_preparation_of_a_file_with_writeback_fails_saying_why),
	cmocka_unit_test(test_concurrent_preparations_replace_each_other),
	cmocka_unit_test(test_preconf_2_sends_the_queues_fields_at_their_kicks),
	cmocka_unit_test(test_preconf_2_sends_a_small_devices_fields_on_the_slots_at_once),
	cmocka_unit_test(test_what_changes_after_a_kick_is_driver_oks_to_apply),
	cmocka_unit_test(test_front_end_leaving_after_its_kicks_leaves_blank_queues),
	cmocka_unit_test(test_preconf_1_makes_the_mkey_before_the_kicks),
	cmocka_unit_test(test_preconf_1_makes_the_mkey_once_vhost_has_the_table),
	cmocka_unit_test(test_preconf_0_does_everything_at_driver_ok),
	cmocka_unit_test(test_failed_driver_ok_undoes_what_was_done_ahead),
	cmocka_unit_test(test_memory_changed_after_the_first_kick_is_registered_again),
	cmocka_unit_test(test_preparation_replaced_before_its_driver_ok_ran),
	cmocka_unit_test(test_overlapping_prepared_ranges_serve_a_region_once),
	cmocka_unit_test(test_a_refused_preparation_keeps_the_changes_seen_since_the_kick),
	cmocka_unit_test(test_a_preparation_whose_thread_cannot_start_leaves_no_fd),
	cmocka_unit_test(test_an_old_preparations_deregistration_does_not_hold_vhosts_thread),
	cmocka_unit_test(test_a_preparation_taken_by_a_failed_driver_ok_is_released),
	cmocka_unit_test(test_a_preparation_taken_as_its_time_runs_out_stays_used))
