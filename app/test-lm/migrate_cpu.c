/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate --service: the CPU time every process of the run
 * spent in a window, by thread, read from /proc at the window's two ends.
 *
 * The time is each thread's sum_exec_runtime, the first field of
 * /proc/<pid>/task/<tid>/schedstat, in nanoseconds; the second field is
 * the time it was runnable and waited for a CPU. (utime + stime of
 * .../stat are the same time in clock ticks, 10 ms each: coarser than a
 * VM's whole control path.) The kernel brings a thread's sum up to date
 * when it leaves a CPU, so a thread that is not running when it is read is
 * exact; one that is running lags by at most a scheduler tick. At both
 * ends of a window the VMs' threads are idle (paused VMs at the start,
 * migrated ones at the end).
 *
 * A process's own CPU clock (clock_getcpuclockid) counts its threads that
 * ended too: what a worker spent beyond its threads sampled at both ends is
 * "unattributed" (threads that ended in the window, and the lag above).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrate_int.h"

struct cpu_thread {
	pid_t tid;
	enum mig_cpu_part part;
	double run_ms, wait_ms;
};

struct cpu_proc {
	struct mig_cpu_proc who;
	double cpu_ms;             /* the process's CPU clock: every thread, ended ones too */
	struct cpu_thread *th;
	unsigned int nth;
};

struct mig_cpu_snap {
	struct cpu_proc *p;
	unsigned int n;
};

/*
 * A worker's thread by its name: vhost's event thread, the PMD's threads
 * (mlx5-lm-*: configuration, pool workers, notifications, deferred work),
 * the emulated device's own (emu-*). The main thread is the worker's
 * control loop whatever its name (the program's, mlx5-lm-vhostd-w...).
 */
static enum mig_cpu_part
part_of(pid_t pid, pid_t tid, const char *comm)
{
	if (tid == pid)
		return MIG_CPU_OTHER;
	if (strcmp(comm, "vhost-events") == 0)
		return MIG_CPU_VHOST;
	if (strncmp(comm, "mlx5-lm-", 8) == 0)
		return MIG_CPU_DRIVER;
	if (strncmp(comm, "emu-", 4) == 0)
		return MIG_CPU_EMULATOR;
	return MIG_CPU_OTHER;
}

static int
read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = -1;

	if (f == NULL)
		return -1;
	if (fgets(buf, (int)len, f) != NULL) {
		buf[strcspn(buf, "\n")] = '\0';
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* Time on a CPU and waiting for one, of thread tid of pid (ms). */
static int
read_schedstat(pid_t pid, pid_t tid, double *run_ms, double *wait_ms)
{
	unsigned long long run, wait;
	char path[96], line[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if (read_line(path, line, sizeof(line)) < 0 || sscanf(line, "%llu %llu", &run, &wait) != 2)
		return -1;
	*run_ms = (double)run / 1e6;
	*wait_ms = (double)wait / 1e6;
	return 0;
}

int
mig_cpu_thread_now(double *run_ms, double *wait_ms)
{
	struct timespec ts;

	/* The calling thread's own clock is exact (schedstat lags while it runs). */
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0 ||
	    read_schedstat(getpid(), gettid(), run_ms, wait_ms) < 0)
		return -1;
	*run_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	return 0;
}

static int
proc_clock_ms(pid_t pid, double *ms)
{
	struct timespec ts;
	clockid_t id;

	if (pid == getpid())
		id = CLOCK_PROCESS_CPUTIME_ID;
	else if (clock_getcpuclockid(pid, &id) != 0)
		return -1;
	if (clock_gettime(id, &ts) < 0)
		return -1;
	*ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
	return 0;
}

/* Every thread of a worker; a thread that ends while we read is skipped. */
static int
threads_read(struct cpu_proc *p)
{
	char path[64], comm[32];
	struct dirent *e;
	unsigned int cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->who.pid);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		struct cpu_thread t;
		char cpath[96];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		t.tid = (pid_t)atoi(e->d_name);
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%d/comm", (int)p->who.pid,
			 (int)t.tid);
		if (read_line(cpath, comm, sizeof(comm)) < 0 ||
		    read_schedstat(p->who.pid, t.tid, &t.run_ms, &t.wait_ms) < 0)
			continue;
		t.part = part_of(p->who.pid, t.tid, comm);
		if (p->nth == cap) {
			struct cpu_thread *n;

			cap = cap ? 2 * cap : 64;
			n = realloc(p->th, cap * sizeof(*n));
			if (n == NULL) {
				closedir(d);
				return -1;
			}
			p->th = n;
		}
		p->th[p->nth++] = t;
	}
	closedir(d);
	return 0;
}

struct mig_cpu_snap *
mig_cpu_snap_take(const struct mig_cpu_proc *procs, unsigned int n, bool backwards)
{
	struct mig_cpu_snap *s = calloc(1, sizeof(*s));
	unsigned int k, i;

	if (s == NULL)
		return NULL;
	s->p = calloc(n, sizeof(*s->p));
	if (s->p == NULL)
		goto err;
	s->n = n;
	for (k = 0; k < n; k++) {
		struct cpu_proc *p;

		i = backwards ? n - 1 - k : k;
		p = &s->p[i];
		p->who = procs[i];
		/* The clock first: what the threads show is then within it. */
		if (proc_clock_ms(p->who.pid, &p->cpu_ms) < 0) {
			fprintf(stderr, "migrate: cannot read the CPU clock of process %d: %s\n",
				(int)p->who.pid, strerror(errno));
			goto err;
		}
		if (p->who.kind == MIG_CPU_WORKER && threads_read(p) < 0) {
			fprintf(stderr, "migrate: cannot read the threads of process %d: %s\n",
				(int)p->who.pid, strerror(errno));
			goto err;
		}
	}
	return s;
err:
	mig_cpu_snap_free(s);
	return NULL;
}

void
mig_cpu_snap_free(struct mig_cpu_snap *s)
{
	unsigned int i;

	if (s == NULL)
		return;
	for (i = 0; s->p != NULL && i < s->n; i++)
		free(s->p[i].th);
	free(s->p);
	free(s);
}

static const struct cpu_thread *
thread_find(const struct cpu_proc *p, pid_t tid)
{
	unsigned int i;

	for (i = 0; i < p->nth; i++)
		if (p->th[i].tid == tid)
			return &p->th[i];
	return NULL;
}

void
mig_cpu_snap_diff(const struct mig_cpu_snap *a, const struct mig_cpu_snap *b,
		  struct mig_cpu_use *use, unsigned int nvm, struct mig_cpu_window *w)
{
	unsigned int i, j;

	memset(use, 0, nvm * sizeof(*use));
	w->total_ms = w->bench_ms = w->services_ms = w->unattributed_ms = w->wait_ms = 0;
	w->threads_ended = 0;
	for (i = 0; i < b->n && i < a->n; i++) {
		const struct cpu_proc *pa = &a->p[i], *pb = &b->p[i];
		double proc = pb->cpu_ms - pa->cpu_ms, threads = 0;
		struct mig_cpu_use *u = pb->who.vm >= 0 && (unsigned int)pb->who.vm < nvm ?
					&use[pb->who.vm] : NULL;

		w->total_ms += proc;
		if (pb->who.kind == MIG_CPU_SELF)
			w->bench_ms += proc;
		else if (pb->who.kind == MIG_CPU_SERVICE)
			w->services_ms += proc;
		for (j = 0; j < pb->nth; j++) {
			const struct cpu_thread *tb = &pb->th[j], *ta = thread_find(pa, tb->tid);
			/* A thread born in the window spent all its time in it. */
			double run = tb->run_ms - (ta != NULL ? ta->run_ms : 0);
			double wait = tb->wait_ms - (ta != NULL ? ta->wait_ms : 0);

			threads += run;
			w->wait_ms += wait;
			if (u != NULL) {
				u->cpu_ms[tb->part] += run;
				u->wait_ms[tb->part] += wait;
			}
		}
		for (j = 0; j < pa->nth; j++)
			if (thread_find(pb, pa->th[j].tid) == NULL)
				w->threads_ended++;
		if (pb->who.kind == MIG_CPU_WORKER)
			w->unattributed_ms += proc - threads;
	}
}
