/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate --service: the evacuation with every device in a
 * worker of mlx5-lm-vhostd, as an operator deploys it: one worker process
 * per VM, with its own EAL, vhost thread and devices.
 *
 * Two services, as on two hosts: the source's and the destination's. Each
 * side is then what an operator runs on a host (doc/vhostd.md, "Live
 * migration between two services"): the same VM and device names on both,
 * the destination's device added before the migration, each side's
 * supervisor and control socket its own, and a VM's source and destination
 * in different processes, as they are on different hosts. (One service
 * with a source and a destination worker per VM would have to name them
 * apart, vm3-src and vm3-dst, which no operator does.) Both services'
 * workers take one host's pinning tokens (mig_host_create), as one
 * process or --processes do: the cost model, and the floor the tables
 * compare with, stay those of the other runs (inside a window only the
 * destinations pin).
 *
 * The services are started for each run on private sockets in a 0700
 * temporary directory, which holds their logs, and stopped with SIGTERM at
 * the run's end: their exit status says whether a worker left a device
 * object alive (3) and their last line how many.
 *
 * Nothing is asked of a service inside a measured window: a request
 * wakes the supervisor and the worker's main thread, and every VM polling
 * its destination's state would take the CPUs of the others' windows. So
 * the destination's configuration is not waited for: the probe frames are
 * posted right after DRIVER_OK, as a resumed guest sends, and the PMD ends
 * a configuration with a doorbell on every queue it made ready
 * (mlx5_lm_notify_add_ring), which the emulated device needs before it
 * reads a ring; the workers' timings are read once the window is over.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lm_app_rpc.h"
#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"
#include "migrate_int.h"

/* The build tree's service, for a dpdk-test-lm run from the build tree. */
#ifndef TEST_LM_VHOSTD_BUILD
#define TEST_LM_VHOSTD_BUILD "mlx5-lm-vhostd"
#endif

/* Bounded waits (ms). */
#define SVC_READY_MS 30000         /* a supervisor listening (it links no DPDK) */
#define SVC_READY_POLL_MS 10       /* between two connection attempts meanwhile */
#define SVC_CALL_MS 60000          /* a device_add probes a device in a worker */
/* The service gives its workers 10 s at SIGTERM (vhostd_main.c), then kills them. */
#define SVC_STOP_MS 20000
#define SVC_GONE_MS 20000          /* a worker exiting once its last device is gone */
#define SVC_LOG_TAIL 20            /* lines of a service's log shown when it failed */
/* The service's path: a directory's and its name. */
#define SVC_PATH_MAX (PATH_MAX + 32)

struct svc_host {
	const char *label;         /* "source", "destination" */
	char dir[80];
	char rpc[108];
	char log[96];
	pid_t pid;
	int pidfd;
	struct lm_app_rpc c;
	pid_t worker[MIG_MAX_VMS]; /* each VM's worker, 0: none (or gone) */
	unsigned int devices;      /* added and not removed */
};

struct mig_svc {
	char dir[64];
	char vhostd[SVC_PATH_MAX];
	struct mig_host tokens;
	struct svc_host h[2];
	unsigned int nvm;          /* VMs that had a worker */
	/* The window being measured: its processes and their first reading. */
	struct mig_cpu_proc procs[3 + 2 * MIG_MAX_VMS];
	unsigned int nprocs;
	struct mig_cpu_snap *t0;
	/* --device-list-probe: device_list on the source in each at-once window. */
	struct mig_listprobe *probe;
};

static int
pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* mlx5-lm-vhostd: beside this program (one installed bindir), else the build tree's. */
static int
vhostd_path(char *buf, size_t len)
{
	if (test_lm_exe_path("mlx5-lm-vhostd", buf, len) == 0 && access(buf, X_OK) == 0)
		return 0;
	snprintf(buf, len, "%s", TEST_LM_VHOSTD_BUILD);
	if (access(buf, X_OK) == 0)
		return 0;
	fprintf(stderr, "migrate: --service: no mlx5-lm-vhostd beside this program nor at %s\n",
		TEST_LM_VHOSTD_BUILD);
	return -1;
}

int
mig_svc_check(void)
{
	char path[SVC_PATH_MAX];

	return vhostd_path(path, sizeof(path));
}

/* The last lines of a service's log, after it failed. */
static void
log_tail(const struct svc_host *h)
{
	char *lines[SVC_LOG_TAIL] = { NULL };
	char *line = NULL;
	size_t cap = 0;
	unsigned int n = 0, i;
	FILE *f = fopen(h->log, "re");

	if (f == NULL)
		return;
	while (getline(&line, &cap, f) > 0) {
		free(lines[n % SVC_LOG_TAIL]);
		lines[n % SVC_LOG_TAIL] = strdup(line);
		n++;
	}
	fclose(f);
	free(line);
	fprintf(stderr, "migrate: the %s service's log (%s), its last lines:\n", h->label, h->log);
	for (i = n > SVC_LOG_TAIL ? n - SVC_LOG_TAIL : 0; i < n; i++)
		if (lines[i % SVC_LOG_TAIL] != NULL)
			fprintf(stderr, "  %s", lines[i % SVC_LOG_TAIL]);
	for (i = 0; i < SVC_LOG_TAIL; i++)
		free(lines[i]);
}

/* The count of the service's last line ("stopped: N device objects ..."), -1 none. */
static long
log_leaked(const struct svc_host *h)
{
	char *line = NULL;
	size_t cap = 0;
	long n = -1, v;
	FILE *f = fopen(h->log, "re");

	if (f == NULL)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		const char *p = strstr(line, "vhostd: stopped: ");

		if (p != NULL && sscanf(p, "vhostd: stopped: %ld device objects", &v) == 1)
			n = v;
	}
	fclose(f);
	free(line);
	return n;
}

static int
host_start(struct mig_svc *s, struct svc_host *h, const char *eal)
{
	char *argv[] = { s->vhostd, "--rpc-socket", h->rpc, "--eal", (char *)eal, NULL };
	pid_t parent = getpid();
	int fd;

	if (mkdir(h->dir, 0700) < 0) {
		fprintf(stderr, "migrate: cannot create %s: %s\n", h->dir, strerror(errno));
		return -1;
	}
	fd = open(h->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "migrate: cannot create %s: %s\n", h->log, strerror(errno));
		return -1;
	}
	if (eal == NULL)
		argv[3] = NULL;
	fflush(stdout);
	fflush(stderr);
	h->pid = fork();
	if (h->pid == 0) {
		mig_child_default_signals();
		/*
		 * A process group of its own: a terminal's Ctrl-C is for this tool,
		 * which ends the run in progress and then stops the service; the
		 * service taking it too would tear its devices down mid-migration.
		 */
		(void)setpgid(0, 0);
		/* Never outlive this process (the workers follow their supervisor). */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(127);
		if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
			_exit(127);
		execv(s->vhostd, argv);
		_exit(127);
	}
	close(fd);
	if (h->pid < 0) {
		fprintf(stderr, "migrate: cannot start the %s service: %s\n", h->label,
			strerror(errno));
		h->pid = 0;
		return -1;
	}
	h->pidfd = pidfd_open(h->pid);
	if (h->pidfd < 0) {
		fprintf(stderr, "migrate: the %s service (pid %d): pidfd_open: %s\n", h->label,
			(int)h->pid, strerror(errno));
		return -1;
	}
	return 0;
}

/* Until the supervisor accepts a connection (bounded), or it ends. */
static int
host_wait_ready(struct svc_host *h)
{
	double deadline = mig_now_ms() + SVC_READY_MS;
	char err[256];

	for (;;) {
		struct pollfd p = { .fd = h->pidfd, .events = POLLIN };

		if (lm_app_rpc_open(&h->c, h->rpc, SVC_CALL_MS, err, sizeof(err)) == 0)
			return 0;
		if (poll(&p, 1, SVC_READY_POLL_MS) > 0) {
			fprintf(stderr, "migrate: the %s service ended before it listened\n",
				h->label);
			log_tail(h);
			return -1;
		}
		if (mig_now_ms() > deadline) {
			fprintf(stderr, "migrate: the %s service does not listen on %s within %d s: "
				"%s\n", h->label, h->rpc, SVC_READY_MS / 1000, err);
			log_tail(h);
			return -1;
		}
	}
}

/* SIGTERM, and its exit within SVC_STOP_MS: 0 clean, with *leaked what it said was left. */
static int
host_stop(struct svc_host *h, unsigned long *leaked)
{
	struct pollfd p = { .fd = h->pidfd, .events = POLLIN };
	int status = 0, ret = 0;
	long n;

	lm_app_rpc_close(&h->c);
	if (h->pid <= 0)
		return 0;
	kill(h->pid, SIGTERM);
	if (h->pidfd >= 0 && poll(&p, 1, SVC_STOP_MS) <= 0) {
		fprintf(stderr, "migrate: the %s service (pid %d) did not stop within %d s: "
			"killed\n", h->label, (int)h->pid, SVC_STOP_MS / 1000);
		kill(h->pid, SIGKILL);
		ret = -1;
	}
	while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (h->pidfd >= 0)
		close(h->pidfd);
	h->pidfd = -1;
	h->pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		/* Exit status 3: device objects left alive in its workers. */
		n = log_leaked(h);
		if (n <= 0) {
			fprintf(stderr, "migrate: the %s service exited 3 (objects left alive) "
				"without saying how many: counted as one\n", h->label);
			n = 1;
		}
		*leaked += (unsigned long)n;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "migrate: the %s service %s %d\n", h->label,
			WIFEXITED(status) ? "exited with status" : "was killed by signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		ret = -1;
	}
	if (ret < 0)
		log_tail(h);
	return ret;
}

/* The directory's files (logs, sockets left), then itself. */
static void
dir_remove(const char *path)
{
	struct dirent *e;
	DIR *d = opendir(path);
	char f[PATH_MAX];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		unlink(f);
	}
	closedir(d);
	rmdir(path);
}

static void
svc_free(struct mig_svc *s, bool keep)
{
	unsigned int i;

	mig_cpu_snap_free(s->t0);
	mig_host_destroy(&s->tokens);
	if (keep) {
		fprintf(stderr, "migrate: the services' logs are kept in %s\n", s->dir);
	} else {
		for (i = 0; i < 2; i++)
			dir_remove(s->h[i].dir);
		rmdir(s->dir);
	}
	free(s);
}

/* SIGTERM to both; 0 when both ended clean or said what they left alive. */
static int
svc_stop(struct mig_svc *s, unsigned long *leaked, bool ok)
{
	int ret = 0, i;

	/* A window that failed ends here: no call to a service that stops. */
	mig_listprobe_stop(s->probe);
	for (i = 0; i < 2; i++)
		if (host_stop(&s->h[i], leaked) < 0)
			ret = -1;
	svc_free(s, ret < 0 || !ok);
	return ret;
}

static struct mig_svc *
svc_start(const struct mig_opts *o)
{
	static const char *const label[2] = { "source", "destination" };
	static const char *const sub[2] = { "src", "dst" };
	struct mig_svc *s = calloc(1, sizeof(*s));
	unsigned int i;

	if (s == NULL)
		return NULL;
	s->tokens.sem = SEM_FAILED;
	s->probe = o->listprobe;
	for (i = 0; i < 2; i++) {
		s->h[i].pidfd = -1;
		s->h[i].c.fd = -1;
		s->h[i].label = label[i];
	}
	snprintf(s->dir, sizeof(s->dir), "/tmp/test-lm-service-XXXXXX");
	/* mkdtemp makes it 0700: only we reach the control and vhost-user sockets. */
	if (vhostd_path(s->vhostd, sizeof(s->vhostd)) < 0) {
		free(s);
		return NULL;
	}
	if (mkdtemp(s->dir) == NULL) {
		fprintf(stderr, "migrate: --service: cannot create a directory for the services: "
			"%s\n", strerror(errno));
		free(s);
		return NULL;
	}
	/*
	 * A reader of our output that goes away (| head) must not kill us before
	 * the services stop and the host's semaphore is unlinked (as for
	 * --processes); the control sockets are written with MSG_NOSIGNAL.
	 */
	signal(SIGPIPE, SIG_IGN);
	/* Set before the services start: their workers inherit it. */
	if (mig_host_create(&s->tokens, o->profile, "the workers of both services") < 0)
		goto err;
	for (i = 0; i < 2; i++) {
		struct svc_host *h = &s->h[i];

		snprintf(h->dir, sizeof(h->dir), "%s/%s", s->dir, sub[i]);
		snprintf(h->rpc, sizeof(h->rpc), "%s/rpc.sock", h->dir);
		snprintf(h->log, sizeof(h->log), "%s/vhostd.log", h->dir);
		if (host_start(s, h, o->service_eal) < 0)
			goto err;
	}
	for (i = 0; i < 2; i++)
		if (host_wait_ready(&s->h[i]) < 0)
			goto err;
	printf("migrate: a source and a destination mlx5-lm-vhostd (pids %d, %d) in %s\n",
	       (int)s->h[0].pid, (int)s->h[1].pid, s->dir);
	return s;
err:
	{
		unsigned long leaked = 0;

		svc_stop(s, &leaked, false);
	}
	return NULL;
}

int
mig_svc_run_evacuate(const struct mig_opts *o, const struct mig_stage_def *st,
		     struct mig_result *r)
{
	struct mig_opts so = *o;
	unsigned long leaked = 0;
	int ret;

	so.svc = svc_start(o);
	if (so.svc == NULL) {
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", st->name);
		r->vms = o->shape.vms;
		r->service = true;
		return -1;
	}
	ret = mig_run_evacuate(&so, st, r);
	if (svc_stop(so.svc, &leaked, ret == 0) < 0) {
		ret = -1;
		r->ok = false;
	}
	r->leaked_objects += leaked;
	r->service = true;
	return ret;
}

/*
 * The front ends' new eventfds at each destination start are made inside
 * the window; when the fd table is full the kernel grows it, and since
 * threads share it, first waits for an RCU grace period (fs/file.c
 * expand_fdtable: synchronize_rcu), a stall of every front end of the
 * process (measured: 23 ms in the at-once window). In one process the
 * PMD's probe grows the table for the front ends too (mlx5_lm.c,
 * fd_table_reserve); with the devices in the workers this process does
 * it: room for fds more descriptors than it holds now, within
 * RLIMIT_NOFILE. The table never shrinks.
 */
int
mig_svc_fd_reserve(unsigned int fds)
{
	struct rlimit rl;
	unsigned int want;
	int low, fd;

	low = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (low < 0) {
		fprintf(stderr, "migrate: /dev/null: %s\n", strerror(errno));
		return -1;
	}
	want = (unsigned int)low + fds;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    want >= rl.rlim_cur) {
		fprintf(stderr, "migrate: RLIMIT_NOFILE %lu is below the %u descriptors the front "
			"ends will hold: the fd table may grow inside a window\n",
			(unsigned long)rl.rlim_cur, want);
		want = rl.rlim_cur > 1 ? (unsigned int)rl.rlim_cur - 1 : 0;
	}
	/* The lowest free descriptor at or above want: the table grows to hold it. */
	fd = want > (unsigned int)low ? fcntl(low, F_DUPFD_CLOEXEC, (int)want) : -1;
	if (fd >= 0)
		close(fd);
	close(low);
	return 0;
}

/* One call on side's control connection; its result, or NULL after saying why. */
static json_t *
host_call(struct svc_host *h, const char *method, json_t *params)
{
	char err[700];
	json_t *res;
	int code;

	res = lm_app_rpc_call(&h->c, method, params, SVC_CALL_MS, &code, err, sizeof(err));
	json_decref(params);
	if (res == NULL)
		fprintf(stderr, "migrate: the %s service: %s\n", h->label, err);
	return res;
}

int
mig_svc_dev_add(struct mig_svc *s, enum mig_side side, unsigned int vm, unsigned int nic,
		const char *devargs, char *name, size_t nlen, char *path, size_t plen)
{
	struct svc_host *h = &s->h[side];
	char vmname[16];
	json_t *res;
	pid_t pid;

	snprintf(vmname, sizeof(vmname), "vm%u", vm);
	snprintf(name, nlen, "vm%u-net%u", vm, nic);
	snprintf(path, plen, "%s/%s.sock", h->dir, name);
	res = host_call(h, "device_add", json_pack("{s:s, s:s, s:s, s:s}", "name", name,
						   "vm", vmname, "socket", path,
						   "devargs", devargs));
	if (res == NULL)
		return -1;
	pid = (pid_t)json_integer_value(json_object_get(res, "worker_pid"));
	json_decref(res);
	if (pid <= 0) {
		fprintf(stderr, "migrate: the %s service added %s without a worker pid\n",
			h->label, name);
		return -1;
	}
	h->worker[vm] = pid;
	h->devices++;
	if (vm >= s->nvm)
		s->nvm = vm + 1;
	return 0;
}

int
mig_svc_dev_remove(struct mig_svc *s, enum mig_side side, const char *name)
{
	json_t *res = host_call(&s->h[side], "device_remove", json_pack("{s:s}", "name", name));

	json_decref(res);
	if (res == NULL)
		return -1;
	s->h[side].devices--;
	return 0;
}

int
mig_svc_dev_timings(struct mig_svc *s, enum mig_side side, const char *name,
		    struct rte_pmd_mlx5_lm_timings *t)
{
	struct svc_host *h = &s->h[side];
	json_t *res = host_call(h, "device_get", json_pack("{s:s}", "name", name));
	json_t *start, *stop;
	int ret = -1;

	if (res == NULL)
		return -1;
	start = json_object_get(res, "last_start");
	stop = json_object_get(res, "last_stop");
	if (json_is_integer(json_object_get(start, "count")) &&
	    json_is_number(json_object_get(stop, "total_ms"))) {
		t->conf_ms = json_number_value(json_object_get(start, "total_ms"));
		t->conf_mr_ms = json_number_value(json_object_get(start, "memory_ms"));
		t->conf_vq_ms = json_number_value(json_object_get(start, "queues_ms"));
		t->conf_count = (uint64_t)json_integer_value(json_object_get(start, "count"));
		t->close_ms = json_number_value(json_object_get(stop, "total_ms"));
		ret = 0;
	} else {
		fprintf(stderr, "migrate: the %s service's device_get of %s has no last_start "
			"count or last_stop\n", h->label, name);
	}
	json_decref(res);
	return ret;
}

int
mig_svc_dev_prepare(struct mig_svc *s, const char *name, int pid)
{
	json_t *res = host_call(&s->h[MIG_DST], "device_prepare",
				json_pack("{s:s, s:i}", "name", name, "pid", pid));

	json_decref(res);
	return res == NULL ? -1 : 0;
}

int
mig_svc_dev_prep(struct mig_svc *s, const char *name, struct mig_svc_prep *p)
{
	json_t *res = host_call(&s->h[MIG_DST], "device_get", json_pack("{s:s}", "name", name));
	json_t *j;

	if (res == NULL)
		return -1;
	memset(p, 0, sizeof(*p));
	j = json_object_get(res, "preparation");
	if (json_is_object(j)) {
		snprintf(p->state, sizeof(p->state), "%s",
			 json_string_value(json_object_get(j, "state")) ?: "?");
		snprintf(p->reason, sizeof(p->reason), "%s",
			 json_string_value(json_object_get(j, "reason")) ?: "");
		p->bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
		p->used_bytes = (uint64_t)json_integer_value(json_object_get(j, "used_bytes"));
		p->fallback_bytes =
			(uint64_t)json_integer_value(json_object_get(j, "fallback_bytes"));
		p->start_ms = json_number_value(json_object_get(j, "start_ms"));
		p->end_ms = json_number_value(json_object_get(j, "end_ms"));
	} else {
		snprintf(p->state, sizeof(p->state), "none");
	}
	json_decref(res);
	return 0;
}

int
mig_svc_vm_gone(struct mig_svc *s, unsigned int vm)
{
	int side, ret = 0;

	for (side = 0; side < 2; side++) {
		struct svc_host *h = &s->h[side];
		pid_t pid = vm < MIG_MAX_VMS ? h->worker[vm] : 0;
		struct pollfd p = { .events = POLLIN };

		if (pid <= 0)
			continue;
		h->worker[vm] = 0;
		p.fd = pidfd_open(pid);
		if (p.fd < 0) {
			if (errno == ESRCH)
				continue;
			fprintf(stderr, "migrate: the %s worker of vm%u (pid %d): pidfd_open: %s\n",
				h->label, vm, (int)pid, strerror(errno));
			ret = -1;
			continue;
		}
		/* The pidfd reads once the process has exited. */
		if (poll(&p, 1, SVC_GONE_MS) <= 0) {
			fprintf(stderr, "migrate: the %s worker of vm%u (pid %d) is still there %d s "
				"after its last device was removed\n", h->label, vm, (int)pid,
				SVC_GONE_MS / 1000);
			ret = -1;
		}
		close(p.fd);
	}
	return ret;
}

/*
 * This process reads the others' /proc at both ends of the window: its own
 * clock last at the start and first at the end, so that the reading is in
 * no window. --device-list-probe's calls are in the window they measure:
 * their CPU is part of its account.
 */
int
mig_svc_window_begin(struct mig_svc *s, unsigned int nmig)
{
	unsigned int v, side, n = 0;

	for (side = 0; side < 2; side++)
		for (v = 0; v < s->nvm; v++)
			if (s->h[side].worker[v] > 0)
				s->procs[n++] = (struct mig_cpu_proc){ s->h[side].worker[v], (int)v,
								      MIG_CPU_WORKER };
	for (side = 0; side < 2; side++)
		s->procs[n++] = (struct mig_cpu_proc){ s->h[side].pid, -1, MIG_CPU_SERVICE };
	s->procs[n++] = (struct mig_cpu_proc){ getpid(), -1, MIG_CPU_SELF };
	s->nprocs = n;
	mig_cpu_snap_free(s->t0);
	s->t0 = mig_cpu_snap_take(s->procs, n, false);
	if (s->t0 == NULL)
		return -1;
	/* Every VM at once (a VM alone, one after another, is not what it measures). */
	if (s->probe != NULL && nmig > 1 && nmig == s->nvm)
		return mig_listprobe_start(s->probe, s->h[MIG_SRC].rpc, s->h[MIG_SRC].devices);
	return 0;
}

int
mig_svc_window_end(struct mig_svc *s, struct mig_cpu_use *use, unsigned int nvm,
		   struct mig_cpu_window *w)
{
	struct mig_cpu_snap *t1 = NULL;

	mig_listprobe_stop(s->probe);
	if (s->t0 != NULL)
		t1 = mig_cpu_snap_take(s->procs, s->nprocs, true);
	if (t1 != NULL)
		mig_cpu_snap_diff(s->t0, t1, use, nvm, w);
	mig_cpu_snap_free(t1);
	mig_cpu_snap_free(s->t0);
	s->t0 = NULL;
	return t1 != NULL ? 0 : -1;
}
