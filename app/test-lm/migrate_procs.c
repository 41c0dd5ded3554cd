/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate --scenario evacuate --processes P: the host
 * evacuation as an operator would deploy it to get around DPDK's vhost
 * library, which serves every socket of a process from one thread (one
 * VM's stop waits for the others'): P back-end processes on distinct
 * devices, each with its own EAL, vhost thread and emulated devices, each
 * running the one-process evacuation code for its share of the VMs.
 *
 * The parent never starts EAL: it forks the children first, then only
 * relays. Per run (every stage, repeat times, in the same order as the
 * one-process loop) each child writes a tag at each mig_sync point and
 * waits for the parent's answer, and at the end of the run writes its
 * struct mig_result:
 *   child -> parent  'A' / 'a'  VM 0 alone done / failed (first child only
 *                               measures it; the others answer at once)
 *                    'R' / 'r'  every VM ready to stop / failed
 *                    'S' + struct mig_result
 *   parent -> child  'G' go, 'X' give up (some child failed)
 * The parent answers a sync point only when every child reached it, so all
 * children stop their VMs at the same moment, and nobody sets up while VM
 * 0 is measured alone. The host's pinning tokens are shared through
 * MLX5_LM_EMU_HOST (emu.h): the parent creates the semaphore before the
 * first fork and unlinks it at the end. Children die with the parent
 * (PR_SET_PDEATHSIG); when one fails, the parent closes every pipe and the
 * others give up at their next start line, tearing their VMs down.
 */
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu.h"
#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"
#include "migrate_int.h"

struct procs_child {
	pid_t pid;
	int up;                    /* child -> parent (parent's read end) */
	int down;                  /* parent -> child (parent's write end) */
	unsigned int vm_base, vms;
	bool dead;                 /* its pipe closed: it exited or crashed */
};

/* A child's ends of its two pipes. */
struct procs_link {
	int up, down;
};

/* All of len bytes through the pipe, or -1 (EOF or an error but EINTR). */
static int
xfer_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = out ? write(fd, p, len) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	return xfer_all(fd, (void *)(uintptr_t)buf, len, true);
}

static int
read_all(int fd, void *buf, size_t len)
{
	return xfer_all(fd, buf, len, false);
}

/* ---- a child ---- */

static int
child_sync(void *arg, enum mig_sync point, int ret)
{
	const struct procs_link *l = arg;
	char tag = point == MIG_SYNC_ALONE_DONE ? (ret == 0 ? 'A' : 'a') :
						  (ret == 0 ? 'R' : 'r');
	char answer;

	if (write_all(l->up, &tag, 1) < 0 || read_all(l->down, &answer, 1) < 0)
		return -1;
	return answer == 'G' ? 0 : -1;
}

static void __attribute__((noreturn))
child_main(const struct mig_opts *po, const struct mig_stage_def *const *defs,
	   unsigned int ndefs, unsigned int repeat, const char *eal,
	   const struct procs_child *me, struct procs_link *l)
{
	struct mig_opts o = *po;
	struct mig_result r;
	unsigned int rep, i;
	char tag = 'S';
	int ret = 0;

	o.shape.vms = me->vms;
	o.vm_base = me->vm_base;
	o.no_alone = me->vm_base != 0;
	o.sync = child_sync;
	o.sync_arg = l;
	if (lm_app_eal_init_bus("dpdk-test-lm", eal, false) < 0)
		_exit(1);
	for (rep = 0; rep < repeat; rep++) {
		for (i = 0; i < ndefs; i++) {
			if (repeat > 1)
				printf("vm%u-vm%u: run %u of %u: ", me->vm_base,
				       me->vm_base + me->vms - 1, rep + 1, repeat);
			unsigned long alive_before = mig_alive_now();

			if (mig_run_evacuate(&o, defs[i], &r) < 0)
				ret = 1;
			if (mig_check_alive(&r, alive_before) < 0)
				ret = 1;
			if (write_all(l->up, &tag, 1) < 0 || write_all(l->up, &r, sizeof(r)) < 0) {
				fprintf(stderr, "migrate: vm%u-vm%u: the parent gave up or is "
					"gone\n", me->vm_base, me->vm_base + me->vms - 1);
				lm_app_eal_cleanup();
				_exit(1);
			}
		}
	}
	lm_app_eal_cleanup();
	fflush(stdout);
	_exit(ret);
}

/* ---- the parent ---- */

static void
child_failed(struct procs_child *c, const char *what)
{
	if (!c->dead)
		fprintf(stderr, "migrate: the process of vm%u-vm%u (pid %d) %s\n", c->vm_base,
			c->vm_base + c->vms - 1, (int)c->pid, what);
	c->dead = true;
}

/*
 * Every child's tag at a sync point (ok_tag or its failed form); then one
 * answer to all, 'G' only when all are ready. -1 when a child is gone.
 */
static int
parent_sync(struct procs_child *ch, unsigned int p, char ok_tag, bool *all_ok)
{
	unsigned int c;
	char tag, go;
	int ret = 0;

	*all_ok = true;
	for (c = 0; c < p; c++) {
		if (ch[c].dead || read_all(ch[c].up, &tag, 1) < 0) {
			child_failed(&ch[c], "ended before the start line");
			ret = -1;
			*all_ok = false;
			continue;
		}
		if (tag != ok_tag)
			*all_ok = false;
	}
	go = *all_ok ? 'G' : 'X';
	/* The release: one byte to each child, back to back. */
	for (c = 0; c < p; c++)
		if (!ch[c].dead && write_all(ch[c].down, &go, 1) < 0)
			child_failed(&ch[c], "is gone");
	return ret;
}

/* The run's results of every child into r (VM v of the run at r->vm[v]). */
static void
merge(struct mig_result *r, const struct mig_result *cr, const struct procs_child *c,
      bool first)
{
	unsigned int j;

	if (first) {
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", cr->name);
		r->ok = true;
		r->dirty_logged = true;
	}
	r->ok = r->ok && cr->ok;
	for (j = 0; j < c->vms && j < cr->vms; j++)
		r->vm[c->vm_base + j] = cr->vm[j];
	if (c->vm_base == 0) {
		r->alone = cr->alone;
		r->vu_requests = cr->vu_requests;
		r->vu_round_trips = cr->vu_round_trips;
	}
	r->frames += cr->frames;
	r->lost_packets += cr->lost_packets;
	r->duplicated_packets += cr->duplicated_packets;
	r->bad_packets += cr->bad_packets;
	r->leaked_objects += cr->leaked_objects;
	r->dirty_logged = r->dirty_logged && cr->dirty_logged;
	r->dirty_pages_checked += cr->dirty_pages_checked;
	r->dirty_pages_missing += cr->dirty_pages_missing;
	r->snap_pages_compared += cr->snap_pages_compared;
	r->model_busy_ms += cr->model_busy_ms;
	r->model_pin_ms += cr->model_pin_ms;
	r->model_actual_ms += cr->model_actual_ms;
	r->model_charges += cr->model_charges;
	r->model_src_ms += cr->model_src_ms;
	r->model_dst_ms += cr->model_dst_ms;
	/* The host is drained when its slowest VM runs again. */
	if (first || cr->downtime_ms > r->downtime_ms) {
		r->downtime_ms = cr->downtime_ms;
		r->src_stop_ms = cr->src_stop_ms;
		r->dst_start_ms = cr->dst_start_ms;
		r->dst_mr_ms = cr->dst_mr_ms;
		r->dst_vq_ms = cr->dst_vq_ms;
		r->dst_conf_ms = cr->dst_conf_ms;
		r->src_close_ms = cr->src_close_ms;
		r->src_first_ring_ms = cr->src_first_ring_ms;
		r->dirty_check_ms = cr->dirty_check_ms;
	}
}

/* migrate_int.h does not see emu.h: its sizes are the emulator's. */
_Static_assert(sizeof(((struct mig_host *)0)->host) == EMU_HOST_NAME_MAX,
	       "struct mig_host: host is a name of the emulator's size");
_Static_assert(sizeof(((struct mig_host *)0)->name) >= EMU_HOST_NAME_MAX + 32,
	       "struct mig_host: name holds emu_host_sem_name()'s");

int
mig_host_create(struct mig_host *h, const char *profile, const char *who)
{
	unsigned int slots, pins;
	char err[256];

	h->sem = SEM_FAILED;
	if (rte_pmd_mlx5_lm_emu_profile_costs(profile, &slots, &pins, NULL, 0, err,
					      sizeof(err)) < 0) {
		fprintf(stderr, "migrate: profile %s: %s\n", profile, err);
		return -1;
	}
	snprintf(h->host, sizeof(h->host), "migrate-%d", (int)getpid());
	if (emu_host_sem_name(h->host, h->name, sizeof(h->name)) < 0)
		return -1;
	sem_unlink(h->name);
	h->sem = sem_open(h->name, O_CREAT | O_EXCL, 0600, pins);
	if (h->sem == SEM_FAILED) {
		fprintf(stderr, "migrate: cannot create the host's pin tokens %s: %s\n", h->name,
			strerror(errno));
		return -1;
	}
	if (setenv(EMU_HOST_ENV, h->host, 1) < 0) {
		mig_host_destroy(h);
		return -1;
	}
	printf("migrate: %s share the host's %u pinning tokens (%s)\n", who, pins, h->name);
	return 0;
}

void
mig_host_destroy(struct mig_host *h)
{
	if (h->sem == SEM_FAILED)
		return;
	unsetenv(EMU_HOST_ENV);
	sem_close(h->sem);
	sem_unlink(h->name);
	h->sem = SEM_FAILED;
}

int
mig_procs_run(const struct mig_opts *o, const struct mig_stage_def *const *defs,
	      unsigned int ndefs, unsigned int repeat, const char *eal,
	      struct mig_result *res)
{
	const unsigned int p = o->processes, k = o->shape.vms;
	struct procs_child ch[MIG_MAX_VMS];
	unsigned int c, rep, i, started = 0;
	pid_t parent = getpid();
	struct mig_result cr;
	struct mig_host host;
	char who[64];
	int ret = 0, status;
	bool ok;

	snprintf(who, sizeof(who), "%u back-end processes", p);
	if (mig_host_create(&host, o->profile, who) < 0)
		return -1;
	/* A child that dies leaves a closed pipe, not a signal that kills us. */
	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);
	fflush(stderr);
	for (c = 0; c < p; c++) {
		int up[2], down[2];

		/* K VMs over P processes: the first K mod P get one more. */
		ch[c].vm_base = c == 0 ? 0 : ch[c - 1].vm_base + ch[c - 1].vms;
		ch[c].vms = k / p + (c < k % p ? 1 : 0);
		ch[c].dead = false;
		if (pipe2(up, O_CLOEXEC) < 0)
			break;
		if (pipe2(down, O_CLOEXEC) < 0) {
			close(up[0]);
			close(up[1]);
			break;
		}
		ch[c].pid = fork();
		if (ch[c].pid < 0) {
			close(up[0]);
			close(up[1]);
			close(down[0]);
			close(down[1]);
			break;
		}
		if (ch[c].pid == 0) {
			struct procs_link l = { .up = up[1], .down = down[0] };
			unsigned int j;

			mig_child_default_signals();
			/* Never outlive the parent (prctl(2)); it may be gone already. */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
				_exit(1);
			for (j = 0; j < c; j++) {
				close(ch[j].up);
				close(ch[j].down);
			}
			close(up[0]);
			close(down[1]);
			child_main(o, defs, ndefs, repeat, eal, &ch[c], &l);
		}
		close(up[1]);
		close(down[0]);
		ch[c].up = up[0];
		ch[c].down = down[1];
		started++;
	}
	if (started < p) {
		fprintf(stderr, "migrate: cannot start back-end process %u of %u: %s\n",
			started + 1, p, strerror(errno));
		ret = -1;
	}
	for (rep = 0; rep < repeat && ret == 0; rep++) {
		for (i = 0; i < ndefs && ret == 0; i++) {
			struct mig_result *r = &res[rep * ndefs + i];

			memset(r, 0, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", defs[i]->name);
			if (parent_sync(ch, p, 'A', &ok) < 0 || parent_sync(ch, p, 'R', &ok) < 0) {
				ret = -1;
				break;
			}
			for (c = 0; c < p; c++) {
				char tag;

				if (ch[c].dead || read_all(ch[c].up, &tag, 1) < 0 || tag != 'S' ||
				    read_all(ch[c].up, &cr, sizeof(cr)) < 0) {
					child_failed(&ch[c], "ended without its results");
					ret = -1;
					break;
				}
				merge(r, &cr, &ch[c], c == 0);
				if (!cr.ok)
					fprintf(stderr, "migrate: stage %s: the process of "
						"vm%u-vm%u failed its run\n", defs[i]->name,
						ch[c].vm_base, ch[c].vm_base + ch[c].vms - 1);
			}
			r->vms = k;
			if (ret < 0)
				r->ok = false;
		}
	}
	/*
	 * Closed pipes end the children: after a failed protocol, a child
	 * waiting at a start line reads end-of-file, gives up, tears its VMs
	 * down (its leak check included) and exits; every wait of a run is
	 * bounded, so none hangs here.
	 */
	for (c = 0; c < started; c++) {
		close(ch[c].down);
		close(ch[c].up);
	}
	for (c = 0; c < started; c++) {
		while (waitpid(ch[c].pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		/* After a failure, the others' exit status 1 is our giving up. */
		if (ret == 0 || !WIFEXITED(status)) {
			ch[c].dead = false;
			child_failed(&ch[c], WIFEXITED(status) ? "exited with an error" :
					     "was killed by a signal");
		}
		ret = -1;
	}
	mig_host_destroy(&host);
	return ret;
}
