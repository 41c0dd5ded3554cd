/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared harness of the reliability tests: see lm_harness.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* fopencookie */
#endif
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kcmp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include <cmocka.h>
#include <jansson.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_log.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "prm.h"
#include "lm_harness.h"
#include "../lm_clock.h"
#include "rte_pmd_mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_test.h"
#include "devx_emu.h"


#define MAX_QP 4
/* Frames in flight per guest: the device drops past a small RX backlog. */
#define WINDOW 128

static char tmpdir[64];
static char socks[LMH_MAX_SOCKS][108];
static unsigned int nsocks;
static unsigned int dev_seq;
static char eal_runtime_dir[PATH_MAX];
static bool use_rdma;
static unsigned int n_ibdev;

bool
lmh_rdma(void)
{
	return use_rdma;
}

bool
lmh_skip_on_rdma(const char *check, const char *why)
{
	if (!use_rdma)
		return false;
	printf("  skipped on rdma: %s (%s)\n", check, why);
	return true;
}

/*
 * LM_BACKEND=rdma: the devices are the emulated rdma-core's, which only
 * exist under tools/with-emulated-rdma (MLX5_LM_ERDMA_DEVICES set, the
 * library first on LD_LIBRARY_PATH, a leak summary to read back).
 */
static int
backend_init(void)
{
	const char *be = getenv("LM_BACKEND"), *n = getenv("MLX5_LM_ERDMA_DEVICES");

	if (be == NULL || *be == '\0' || strcmp(be, "emu") == 0)
		return 0;
	if (strcmp(be, "rdma") != 0) {
		fprintf(stderr, "LM_BACKEND=%s: expected emu or rdma\n", be);
		return -1;
	}
	if (n == NULL || atoi(n) < 1 || getenv("MLX5_LM_ERDMA_SUMMARY") == NULL) {
		fprintf(stderr, "LM_BACKEND=rdma: run this under tools/with-emulated-rdma "
			"(no emulated RDMA devices or leak summary in the environment)\n");
		return -1;
	}
	use_rdma = true;
	n_ibdev = (unsigned int)atoi(n);
	printf("back end: rdma (ibdev=mlx5_<i> on %u emulated rdma-core devices)\n", n_ibdev);
	return 0;
}

int64_t
lmh_now_ms(void)
{
	return lmt_now_ms();
}

void
lmh_tick(void)
{
	nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

const char *
lmh_sock(unsigned int i)
{
	return socks[i];
}

const char *
lmh_tmpdir(void)
{
	return tmpdir;
}

/* ---- log capture ------------------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_buf;
static size_t log_len, log_cap;
static bool log_quiet;

static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	pthread_mutex_lock(&log_lock);
	if (log_len + size + 1 > log_cap) {
		size_t cap = (log_len + size + 1) * 2;
		char *p = realloc(log_buf, cap);

		if (p == NULL) {
			pthread_mutex_unlock(&log_lock);
			return -1;
		}
		log_buf = p;
		log_cap = cap;
	}
	memcpy(log_buf + log_len, buf, size);
	log_len += size;
	log_buf[log_len] = '\0';
	if (!log_quiet)
		(void)!fwrite(buf, 1, size, stderr);
	pthread_mutex_unlock(&log_lock);
	return (ssize_t)size;
}

void
lmh_log_quiet(bool quiet)
{
	pthread_mutex_lock(&log_lock);
	log_quiet = quiet;
	pthread_mutex_unlock(&log_lock);
}

size_t
lmh_log_mark(void)
{
	size_t n;

	pthread_mutex_lock(&log_lock);
	n = log_len;
	pthread_mutex_unlock(&log_lock);
	return n;
}

bool
lmh_log_has(size_t from, const char *needle)
{
	bool found;

	pthread_mutex_lock(&log_lock);
	found = log_buf != NULL && from <= log_len && strstr(log_buf + from, needle) != NULL;
	pthread_mutex_unlock(&log_lock);
	return found;
}

bool
lmh_wait_log(size_t from, const char *needle, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;

	while (!lmh_log_has(from, needle)) {
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
	return true;
}

bool
lmh_log_line_has_all(size_t from, const char *const *needles)
{
	char *copy = lmh_log_since(from), *line, *save = NULL;
	bool found = false;

	if (copy == NULL)
		return false;
	for (line = strtok_r(copy, "\n", &save); line != NULL && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *const *n;

		found = true;
		for (n = needles; *n != NULL; n++)
			if (strstr(line, *n) == NULL) {
				found = false;
				break;
			}
	}
	free(copy);
	return found;
}

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lmh_dev *attached[LMH_MAX_SOCKS];

void
lmh_log_trim(void)
{
	unsigned int i;

	pthread_mutex_lock(&cb_lock);
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	if (log_buf != NULL)
		log_buf[0] = '\0';
	for (i = 0; i < LMH_MAX_SOCKS; i++)
		if (attached[i] != NULL)
			attached[i]->scan = 0;
	pthread_mutex_unlock(&log_lock);
	pthread_mutex_unlock(&cb_lock);
}

char *
lmh_log_since(size_t from)
{
	char *s;

	pthread_mutex_lock(&log_lock);
	s = strdup(log_buf != NULL && from <= log_len ? log_buf + from : "");
	pthread_mutex_unlock(&log_lock);
	return s;
}

/* ---- vhost connections -------------------------------------------------------- */

static pthread_cond_t cb_cond = PTHREAD_COND_INITIALIZER;
static unsigned int n_opened[LMH_MAX_SOCKS], n_closed[LMH_MAX_SOCKS];

static int
sock_of_vid(int vid)
{
	char path[PATH_MAX];
	unsigned int i;

	if (rte_vhost_get_ifname(vid, path, sizeof(path)) < 0)
		return -1;
	for (i = 0; i < nsocks; i++)
		if (strcmp(path, socks[i]) == 0)
			return (int)i;
	return -1;
}

static volatile bool new_device_fails;

void
lmh_new_device_fails(bool fail)
{
	new_device_fails = fail;
}

static int
on_new_device(int vid)
{
	(void)vid;
	return new_device_fails ? -1 : 0;
}

static void
on_destroy_device(int vid)
{
	(void)vid;
}

static volatile bool vet_on = true;
static volatile unsigned int msg_timeout_ms;

void
lmh_vet(bool on)
{
	vet_on = on;
}

void
lmh_msg_timeout(unsigned int ms)
{
	msg_timeout_ms = ms;
}

/* As dpdk-test-lm serve does: every message vetted before vhost uses it. */
static int
on_new_connection(int vid)
{
	if (msg_timeout_ms > 0 && rte_pmd_mlx5_lm_vhost_msg_timeout(vid, msg_timeout_ms) < 0)
		return -1;
	if (!vet_on)
		return 0;
	return rte_pmd_mlx5_lm_vhost_vet_register(vid) == 0 ? 0 : -1;
}

/* vhost calls this once it has torn the device down (dev_close included). */
static void
on_destroy_connection(int vid)
{
	int s = sock_of_vid(vid);

	pthread_mutex_lock(&cb_lock);
	if (s >= 0)
		n_closed[s]++;
	pthread_cond_broadcast(&cb_cond);
	pthread_mutex_unlock(&cb_lock);
}

static const struct rte_vhost_device_ops vhost_ops = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
	.new_connection = on_new_connection,
	.destroy_connection = on_destroy_connection,
};


void
lmh_conn_opened(unsigned int sock)
{
	pthread_mutex_lock(&cb_lock);
	n_opened[sock]++;
	if (attached[sock] != NULL)
		attached[sock]->conns++;
	pthread_mutex_unlock(&cb_lock);
}

struct vu_client *
lmh_fe_connect(unsigned int sock)
{
	struct vu_client *c;

	if (vu_connect(&c, lmh_sock(sock), 5000) != 0)
		return NULL;
	lmh_conn_opened(sock);
	vu_set_reply_timeout(c, LMH_DEADLINE_MS);
	return c;
}

/* Count the driver's dev_cleanup lines of d logged since the last look. */
static void
scan_cleanups(struct lmh_dev *d)
{
	char needle[2][96];
	const char *p, *end;
	unsigned int k;

	/* The owner's connection, or another one (one front end per device). */
	snprintf(needle[0], sizeof(needle[0]), "mlx5_lm %s: front end disconnected\n", d->name);
	snprintf(needle[1], sizeof(needle[1]), "mlx5_lm %s: front end disconnected (", d->name);
	pthread_mutex_lock(&log_lock);
	if (log_buf != NULL && d->scan < log_len) {
		/* Whole lines only: a line being written is looked at next time. */
		end = memrchr(log_buf + d->scan, '\n', log_len - d->scan);
		if (end != NULL) {
			for (k = 0; k < 2; k++)
				for (p = log_buf + d->scan; (p = strstr(p, needle[k])) != NULL &&
				     p < end; p += strlen(needle[k]))
					d->cleanups++;
			d->scan = (size_t)(end + 1 - log_buf);
		}
	}
	pthread_mutex_unlock(&log_lock);
}

static void dump_process(const char *why);
static atomic_flag cleanup_dumped = ATOMIC_FLAG_INIT;

bool
lmh_wait_closed(unsigned int sock)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	struct lmh_dev *d;
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += LMH_DEADLINE_MS / 1000;
	pthread_mutex_lock(&cb_lock);
	while (n_closed[sock] < n_opened[sock])
		if (pthread_cond_timedwait(&cb_cond, &cb_lock, &ts) != 0)
			break;
	ok = n_closed[sock] >= n_opened[sock];
	d = attached[sock];
	pthread_mutex_unlock(&cb_lock);
	if (!ok || d == NULL)
		return ok;
	for (;;) {
		scan_cleanups(d);
		if (d->cleanups >= d->conns)
			return true;
		if (lmh_now_ms() > deadline)
			break;
		lmh_tick();
	}
	/*
	 * The close was seen but its cleanup (the memory's release) did not end:
	 * where the driver's threads wait is what the failure alone does not say.
	 */
	if (getenv("LMH_STALL_DUMP") != NULL && !atomic_flag_test_and_set(&cleanup_dumped))
		dump_process("a closed connection's cleanup not logged within the deadline");
	return false;
}

/* ---- process ---------------------------------------------------------------- */

/*
 * Why, then the process as tests/stress/dump_process.sh prints it (every
 * thread's kernel wait point and stack, gdb's stacks, the fds, the unix
 * sockets with their queues), to stderr.
 */
static void
dump_process(const char *why)
{
	posix_spawn_file_actions_t fa;
	char pid_arg[16];
	char *argv[] = { "sh", LMH_DUMP_SCRIPT, pid_arg, NULL };
	pid_t pid;
	int st;

	fprintf(stderr, "\nlm_harness %s: the process's threads, fds and unix sockets "
		"follow\n", why);
	fflush(stderr);
	/* gdb attaches to its parent only if the parent allows it (Yama ptrace_scope 1). */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)getpid());
	/*
	 * stdio only: vhost opens its sockets without close-on-exec, and a
	 * shell, gdb or ss holding a copy of a connection would keep it open
	 * past vhost's close, the very state the dump is there to show.
	 */
	if (posix_spawn_file_actions_init(&fa) != 0)
		return;
	if (posix_spawn_file_actions_adddup2(&fa, 2, 1) == 0 &&
	    posix_spawn_file_actions_addclosefrom_np(&fa, 3) == 0 &&
	    posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ) == 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	posix_spawn_file_actions_destroy(&fa);
}

/*
 * A watchdog for the whole test process (LMH_WATCHDOG_S, set by meson a
 * little below the test's timeout): a wait inside the driver or DPDK that
 * never ends otherwise shows as meson's bare timeout. When it fires, the
 * process is dumped, then aborts, so that the run's log says where it hung.
 */
static void *
watchdog_main(void *arg)
{
	unsigned int secs = (unsigned int)(uintptr_t)arg;
	char why[64];

	sleep(secs);
	snprintf(why, sizeof(why), "watchdog: still running after %u s", secs);
	dump_process(why);
	abort();
	return NULL;
}

/*
 * LMH_STALL_DUMP (set by meson for suites where no request is meant to go
 * unanswered): the first front-end request of the process whose send or
 * reply runs out of its deadline (or the first closed connection whose
 * cleanup is not logged in time, lmh_wait_closed) has the process dumped
 * as the watchdog does, before the test fails - vhost's thread, its
 * connections and the driver's threads as they are at that moment, which
 * the test's failure alone does not say.
 */
static void
stall_dump(uint32_t request, const char *what)
{
	static atomic_flag done = ATOMIC_FLAG_INIT;
	char why[96];

	if (atomic_flag_test_and_set(&done))
		return;
	snprintf(why, sizeof(why), "front-end request %u stalled (%s)", request, what);
	dump_process(why);
}

static void
watchdog_start(void)
{
	const char *v = getenv("LMH_WATCHDOG_S");
	pthread_t th;
	long secs;

	if (v == NULL || (secs = strtol(v, NULL, 10)) <= 0)
		return;
	if (pthread_create(&th, NULL, watchdog_main, (void *)(uintptr_t)secs) == 0)
		pthread_detach(th);
}

int
lmh_init(const char *argv0, const char *name, unsigned int n)
{
	char prefix[96];
	char *eal[] = { (char *)argv0, "-l", "0", "--no-huge", "-m", "512", "--no-shconf",
			"--no-pci", "--no-telemetry", "--log-level=lib.eal:warning",
			"--log-level=lib.vhost.*:error", prefix, NULL };
	cookie_io_functions_t io = { .write = log_write };
	unsigned int i;
	FILE *logf;

	if (n > LMH_MAX_SOCKS || backend_init() < 0)
		return -1;
	watchdog_start();
	if (getenv("LMH_STALL_DUMP") != NULL)
		vu_set_stall_hook(stall_dump);
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s-%d", name, (int)getpid());
	/* A child process of a test works inside its parent's directory (removed with it). */
	if (getenv("LMH_TMPDIR_PARENT") != NULL)
		snprintf(tmpdir, sizeof(tmpdir), "%s/%s-XXXXXX", getenv("LMH_TMPDIR_PARENT"),
			 name);
	else
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s-XXXXXX", name);
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	if (rte_eal_init((int)RTE_DIM(eal) - 1, eal) < 0)
		return -1;
	snprintf(eal_runtime_dir, sizeof(eal_runtime_dir), "%s", rte_eal_get_runtime_dir());
	logf = fopencookie(NULL, "w", io);
	if (logf == NULL)
		return -1;
	setvbuf(logf, NULL, _IOLBF, 0);
	rte_openlog_stream(logf);
	/* The driver's INFO lines say when things happen; tests wait for them. */
	rte_log_set_level(mlx5_lm_logtype, RTE_LOG_INFO);
	nsocks = n;
	for (i = 0; i < n; i++) {
		snprintf(socks[i], sizeof(socks[i]), "%s/vhost%u.sock", tmpdir, i);
		if (rte_vhost_driver_register(socks[i], 0) != 0 ||
		    rte_vhost_driver_callback_register(socks[i], &vhost_ops) != 0 ||
		    rte_vhost_driver_start(socks[i]) != 0) {
			fprintf(stderr, "cannot serve %s\n", socks[i]);
			return -1;
		}
	}
	return 0;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void
lmh_rm_tree(const char *path)
{
	if (path[0] != '\0')
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int
lmh_main_init(const char *argv0, const char *filter, const char *name, unsigned int nsocks)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return lmh_init(argv0, name, nsocks);
}

void
lmh_fini(void)
{
	unsigned int i;

	for (i = 0; i < nsocks; i++)
		rte_vhost_driver_unregister(socks[i]);
	rte_eal_cleanup();
	lmh_rm_tree(tmpdir);
	lmh_rm_tree(eal_runtime_dir);
}

int
lmh_run_main(int argc, char **argv, const char *name, unsigned int nsocks, const char *group,
	     const struct CMUnitTest *tests, size_t ntests, CMFixtureFunction setup,
	     CMFixtureFunction teardown)
{
	int ret;

	if (lmh_main_init(argv[0], argc == 2 ? argv[1] : NULL, name, nsocks) < 0)
		return 1;
	ret = _cmocka_run_group_tests(group, tests, ntests, setup, teardown);
	lmh_fini();
	return ret;
}

/* ---- devices ------------------------------------------------------------------ */

int
lmh_probe(struct lmh_dev *d, int sock, const char *args)
{
	/* LM_PROFILE: the suites run again on another profile (meson: *_page64k). */
	const char *p = getenv("LM_PROFILE");

	return lmh_probe_profile(d, sock, p != NULL && *p != '\0' ? p : "fast", args);
}

/*
 * rdma: the profile the emulated rdma-core reads when the PMD opens the
 * device (ibv_open_device); the variable exists (the wrapper sets it), so
 * setenv only swaps its value.
 */
static long file_size(const char *path);
static long rdma_left_alive(const struct lmh_dev *d, long off);

static int
rdma_profile(const char *profile)
{
	const char *cur = getenv("MLX5_LM_ERDMA_PROFILE");

	if (cur != NULL && strcmp(cur, profile) == 0)
		return 0;
	return setenv("MLX5_LM_ERDMA_PROFILE", profile, 1) == 0 ? 0 : -errno;
}

int
lmh_probe_profile(struct lmh_dev *d, int sock, const char *profile, const char *args)
{
	char all[PATH_MAX + 512];
	int ret;

	memset(d, 0, sizeof(*d));
	d->sock = -1;
	snprintf(d->name, sizeof(d->name), "vdpa_mlx5_lm%u", dev_seq);
	snprintf(d->trace, sizeof(d->trace), "%s/%s.trace", tmpdir, d->name);
	if (use_rdma) {
		/* Devices in turn: those alive together have distinct names in the summary. */
		snprintf(d->ibdev, sizeof(d->ibdev), "mlx5_%u", dev_seq % n_ibdev);
		ret = rdma_profile(profile);
		if (ret != 0)
			return ret;
		snprintf(all, sizeof(all), "ibdev=%s%s%s,devx_trace=%s", d->ibdev,
			 args != NULL ? "," : "", args != NULL ? args : "", d->trace);
		d->summary_off = file_size(getenv("MLX5_LM_ERDMA_SUMMARY"));
	} else {
		snprintf(all, sizeof(all), "emu=%s%s%s,devx_trace=%s", profile,
			 args != NULL ? "," : "", args != NULL ? args : "", d->trace);
		d->leaked0 = emu_leaked_total();
	}
	dev_seq++;
	ret = rte_eal_hotplug_add("vdev", d->name, all);
	if (ret != 0)
		return ret;
	/* The harness removes the device itself: no reference kept past the lookup. */
	d->dev = mlx5_lm_dev_get(d->name);
	if (d->dev != NULL)
		mlx5_lm_dev_put(d->dev);
	if (d->dev == NULL)
		return -ENODEV;
	d->emu = use_rdma ? NULL : devx_emu_dev(d->dev->devx);
	d->vdpa = rte_vdpa_find_device_by_name(d->name);
	if ((!use_rdma && d->emu == NULL) || d->vdpa == NULL)
		return -ENODEV;
	if (sock >= 0) {
		ret = rte_vhost_driver_attach_vdpa_device(socks[sock], d->vdpa);
		if (ret != 0)
			return ret;
		d->sock = sock;
		d->scan = lmh_log_mark();
		pthread_mutex_lock(&cb_lock);
		attached[sock] = d;
		pthread_mutex_unlock(&cb_lock);
	}
	d->live0 = lmh_live(d);
	return 0;
}

void
lmh_reuse_ibdev(const struct lmh_dev *prev)
{
	unsigned int want;

	if (!use_rdma || n_ibdev == 0 || sscanf(prev->ibdev, "mlx5_%u", &want) != 1)
		return;
	/* Forward only: names of devices still probed stay unique. */
	while (dev_seq % n_ibdev != want)
		dev_seq++;
}

static long
file_size(const char *path)
{
	FILE *f = path != NULL ? fopen(path, "r") : NULL;
	long n;

	if (f == NULL)
		return 0;
	n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
	fclose(f);
	return n;
}

/*
 * rdma: what the emulated rdma-core found alive when the PMD closed d's
 * device: its summary line (this process, d's ibdev) written since off.
 */
static long
rdma_left_alive(const struct lmh_dev *d, long off)
{
	const char *path = getenv("MLX5_LM_ERDMA_SUMMARY");
	char *line = NULL;
	size_t cap = 0;
	long left = -ENOENT;
	FILE *f;

	f = path != NULL ? fopen(path, "r") : NULL;
	if (f == NULL || fseek(f, off, SEEK_SET) != 0)
		goto out;
	while (getline(&line, &cap, f) > 0) {
		json_t *j = json_loads(line, 0, NULL);
		const char *dev = json_string_value(json_object_get(j, "dev"));

		if (j != NULL && dev != NULL && strcmp(dev, d->ibdev) == 0 &&
		    json_integer_value(json_object_get(j, "pid")) == (json_int_t)getpid()) {
			json_t *leaked = json_object_get(j, "leaked"), *v;
			size_t k;

			left = (long)json_integer_value(json_object_get(j, "left_alive"));
			/*
			 * The emulator's leak lines went to the library's stderr:
			 * into the log here, where emu= has them ("<dev>: leaked
			 * KIND ID ...").
			 */
			json_array_foreach(leaked, k, v) {
				char buf[600];
				int len = snprintf(buf, sizeof(buf), "emu-rdma: %s\n",
						   json_string_value(v) != NULL ?
						   json_string_value(v) : "?");

				(void)log_write(NULL, buf, (size_t)len < sizeof(buf) ?
						(size_t)len : sizeof(buf) - 1);
			}
		}
		json_decref(j);
	}
out:
	if (left < 0)
		fprintf(stderr, "%s: no leak summary line for %s in %s\n", d->name, d->ibdev,
			path != NULL ? path : "(none)");
	free(line);
	if (f != NULL)
		fclose(f);
	return left;
}

long
lmh_remove(struct lmh_dev *d)
{
	unsigned long misses;
	long off;

	if (d->sock >= 0) {
		pthread_mutex_lock(&cb_lock);
		attached[d->sock] = NULL;
		pthread_mutex_unlock(&cb_lock);
		if (rte_vhost_driver_detach_vdpa_device(socks[d->sock]) != 0)
			return -EIO;
		d->sock = -1;
	}
	if (d->dev == NULL)
		return 0;
	/*
	 * A page the device wrote outside the dirty bitmap the driver gave it
	 * is a page the migration never copies again: none, ever, in any run.
	 */
	misses = d->emu != NULL ? emu_dev_log_misses(d->emu) : 0;
	d->dev = NULL;
	d->emu = NULL;
	off = use_rdma ? file_size(getenv("MLX5_LM_ERDMA_SUMMARY")) : 0;
	if (rte_eal_hotplug_remove("vdev", d->name) != 0)
		return -EIO;
	if (use_rdma)
		return rdma_left_alive(d, off);
	if (misses != 0) {
		fprintf(stderr, "%s: %lu device writes outside the dirty bitmap\n", d->name,
			misses);
		return -EPROTO;
	}
	return (long)(emu_leaked_total() - d->leaked0);
}

long
lmh_failed_probe_left(struct lmh_dev *d)
{
	if (use_rdma)
		return rdma_left_alive(d, d->summary_off);
	return (long)(emu_leaked_total() - d->leaked0);
}

bool
lmh_running(struct lmh_dev *d)
{
	int running;

	pthread_mutex_lock(&d->dev->lock);
	running = d->dev->running;
	pthread_mutex_unlock(&d->dev->lock);
	return running != 0;
}

bool
lmh_wait_running(struct lmh_dev *d, int timeout_ms)
{
	int64_t deadline = lmh_now_ms() + timeout_ms;

	while (!lmh_running(d)) {
		if (lmh_now_ms() > deadline)
			return false;
		lmh_tick();
	}
	return true;
}

/*
 * Every vhost-facing operation of the driver holds dev->lock from start to
 * end; a configuration handed to the device's worker holds conf.busy.
 */
void
lmh_barrier(struct lmh_dev *d)
{
	pthread_mutex_lock(&d->dev->lock);
	mlx5_lm_wait_configured(d->dev);
	pthread_mutex_unlock(&d->dev->lock);
}

bool
lmh_wait_restored(struct lmh_dev *d)
{
	/* The restore is deferred (mr_gc_ms) until the device is needed: the test needs it now. */
	int ret = mlx5_lm_restore_wait(d->dev, LMH_DEADLINE_MS);

	/*
	 * Released registrations the garbage thread retries (a destroy that
	 * failed once) are part of "restored": wait for them too.
	 */
	mlx5_lm_mr_gc_wait(d->dev, 1000);
	return ret == 0;
}

/* +1 for an operation of the trace that makes a device object, -1 for one that ends it. */
static int
trace_live_delta(const char *op)
{
	static const char *const made[] = { "CREATE_", "ALLOC_", "UMEM_REG", "UAR_ALLOC",
		"PD_ALLOC", "ROOT_FLOW_CREATE", "SET_FLOW_TABLE_ENTRY", "MR_REG" };
	static const char *const ended[] = { "DESTROY_", "DEALLOC_", "UMEM_DEREG", "UAR_FREE",
		"PD_FREE", "ROOT_FLOW_DESTROY", "DELETE_FLOW_TABLE_ENTRY", "MR_DEREG" };
	size_t i;

	for (i = 0; i < RTE_DIM(made); i++)
		if (strncmp(op, made[i], strlen(made[i])) == 0)
			return 1;
	for (i = 0; i < RTE_DIM(ended); i++)
		if (strncmp(op, ended[i], strlen(ended[i])) == 0)
			return -1;
	return 0;
}

/*
 * rdma: the objects d's device holds, from its DevX trace: every successful
 * operation that makes one minus every successful one that ends one (a
 * failed destroy leaves its object counted, as the emulator would).
 */
static unsigned int
trace_live(const struct lmh_dev *d)
{
	struct lmh_trace t;
	long live = 0;
	size_t i;

	lmh_trace_open(&t, d->trace);
	lmh_trace_sync(&t);
	for (i = 0; i < t.n; i++)
		if (t.c[i].status == 0)
			live += trace_live_delta(t.c[i].op);
	lmh_trace_free(&t);
	return live > 0 ? (unsigned int)live : 0;
}

/*
 * rdma: one request to the control socket of d's open device; the reply
 * ("ok [VALUE]" or "err ERRNO ...") in reply. 0, or < 0 when it could not
 * be asked or refused (the reason printed).
 */
static int
rdma_ctl(const struct lmh_dev *d, const char *req, char *reply, size_t len)
{
	const char *dir = getenv("MLX5_LM_ERDMA_CONTROL");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = LMH_DEADLINE_MS / 1000 };
	ssize_t n;
	int fd, err;

	if (dir == NULL) {
		fprintf(stderr, "%s: no MLX5_LM_ERDMA_CONTROL: run under "
			"tools/with-emulated-rdma\n", d->name);
		return -ENOENT;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, d->ibdev);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Bounded: the device's control thread answers every request. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 ||
	    (n = recv(fd, reply, len - 1, 0)) <= 0) {
		err = errno != 0 ? errno : EIO;
		fprintf(stderr, "%s: control request \"%s\" to %s: %s\n", d->name, req,
			sa.sun_path, strerror(err));
		close(fd);
		return -err;
	}
	/*
	 * Then the device's end closes (EOF, bounded by the timeout): its fd is
	 * gone before the caller goes on, say, to count the process's fds.
	 */
	if (recv(fd, &(char){ 0 }, 1, 0) != 0) {
		fprintf(stderr, "%s: control request \"%s\": the device kept the connection "
			"open\n", d->name, req);
		close(fd);
		return -EPROTO;
	}
	close(fd);
	reply[n] = '\0';
	if (strncmp(reply, "ok", 2) != 0) {
		fprintf(stderr, "%s: control request \"%s\": %s\n", d->name, req, reply);
		err = atoi(reply + 3);
		return err > 0 ? -err : -EIO;
	}
	return 0;
}

int
lmh_fault_inject(struct lmh_dev *d, uint16_t opcode, uint16_t obj_type, unsigned int nth,
		 uint8_t status, uint32_t syndrome)
{
	char req[128], reply[256];

	if (!use_rdma)
		return emu_fault_inject(d->emu, opcode, obj_type, nth, status, syndrome);
	snprintf(req, sizeof(req), "fault %#x %#x %u %#x %#x", opcode, obj_type, nth, status,
		 syndrome);
	return rdma_ctl(d, req, reply, sizeof(reply));
}

int
lmh_evch_hold(struct lmh_dev *d, unsigned int depth)
{
	char req[64], reply[256];

	if (!use_rdma) {
		emu_evch_hold(d->emu, depth);
		return 0;
	}
	snprintf(req, sizeof(req), "evch_hold %u", depth);
	return rdma_ctl(d, req, reply, sizeof(reply));
}

int
lmh_evch_release(struct lmh_dev *d)
{
	char reply[256];

	if (!use_rdma) {
		emu_evch_release(d->emu);
		return 0;
	}
	return rdma_ctl(d, "evch_release", reply, sizeof(reply));
}

long
lmh_evch_overflows(struct lmh_dev *d)
{
	char reply[256];
	int rc;

	if (!use_rdma)
		return (long)emu_evch_overflows(d->emu);
	rc = rdma_ctl(d, "evch_overflows", reply, sizeof(reply));
	return rc < 0 ? rc : strtol(reply + 2, NULL, 0);
}

int
lmh_event_inject(struct lmh_dev *d, uint16_t create_opcode, uint16_t obj_type, uint32_t id,
		 uint16_t type)
{
	char req[128], reply[256];

	if (!use_rdma)
		return emu_event_inject(d->emu, create_opcode, obj_type, id, type);
	snprintf(req, sizeof(req), "event %u %u %u %u", create_opcode, obj_type, id, type);
	return rdma_ctl(d, req, reply, sizeof(reply));
}

int
lmh_vq_force_error(struct lmh_dev *d, uint32_t virtq_id, uint8_t error_type)
{
	char req[128], reply[256];

	if (!use_rdma)
		return emu_virtq_force_error(d->emu, virtq_id, error_type);
	snprintf(req, sizeof(req), "virtq_error %u %u", virtq_id, error_type);
	return rdma_ctl(d, req, reply, sizeof(reply));
}

int
lmh_set_umem_params(struct lmh_dev *d, const uint32_t a[3], const uint32_t b[3])
{
	char req[160], reply[256];

	if (!use_rdma)
		return emu_dev_set_umem_params(d->emu, a, b);
	snprintf(req, sizeof(req), "umem_params %u %u %u %u %u %u", a[0], b[0], a[1], b[1], a[2],
		 b[2]);
	return rdma_ctl(d, req, reply, sizeof(reply));
}

int
lmh_vq_state(struct lmh_dev *d, unsigned int i)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_cmd)];
	uint32_t id = lmh_vq_id(d, i);
	char req[64], reply[256];

	if (id == 0)
		return -1;
	if (use_rdma) {
		snprintf(req, sizeof(req), "virtq_state %u", id);
		if (rdma_ctl(d, req, reply, sizeof(reply)) != 0)
			return -2;
		return atoi(reply + 3);
	}
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, id);
	if (emu_cmd(d->emu, in, sizeof(in), out, sizeof(out)) != 0 ||
	    PRM_GET(general_obj_out_cmd_hdr, out, status) != 0)
		return -2;
	return (int)PRM_GET(virtio_net_q, PRM_ADDR(virtq_cmd, out, obj), state);
}

bool
lmh_dp_idle(struct lmh_dev *d)
{
	char req[32], reply[256];

	if (!use_rdma)
		return emu_dev_dp_wait_idle(d->emu, LMH_DEADLINE_MS) == 0;
	snprintf(req, sizeof(req), "dp_idle %d", LMH_DEADLINE_MS);
	return rdma_ctl(d, req, reply, sizeof(reply)) == 0 && strncmp(reply, "ok", 2) == 0;
}

unsigned int
lmh_live(struct lmh_dev *d)
{
	char reply[256];

	if (!use_rdma)
		return emu_dev_live_objects(d->emu);
	/* The emulator's own count when the library serves a control socket. */
	if (getenv("MLX5_LM_ERDMA_CONTROL") != NULL) {
		if (rdma_ctl(d, "live", reply, sizeof(reply)) != 0)
			return UINT_MAX;
		return (unsigned int)strtoul(reply + 3, NULL, 10);
	}
	return trace_live(d);
}

uint32_t
lmh_vq_id(struct lmh_dev *d, unsigned int i)
{
	uint32_t id;

	pthread_mutex_lock(&d->dev->lock);
	id = d->dev->vq[i].obj != NULL ? devx_obj_id(d->dev->vq[i].obj) : 0;
	pthread_mutex_unlock(&d->dev->lock);
	return id;
}

/* ---- traffic -------------------------------------------------------------------- */

static uint64_t
outstanding(struct vu_guest *g, uint32_t mask)
{
	uint64_t n = 0;
	unsigned int q;

	for (q = 0; q < MAX_QP; q++)
		if (mask & (1u << q))
			n += vu_guest_lost(g, (int)q);
	return n;
}

static bool
settled(struct vu_guest *g, uint32_t mask, const uint64_t *target)
{
	unsigned int q;

	for (q = 0; q < MAX_QP; q++) {
		if (!(mask & (1u << q)))
			continue;
		if ((target != NULL && vu_guest_tx_sent(g, (int)q) != target[q]) ||
		    vu_guest_lost(g, (int)q) != 0 || vu_guest_tx_inflight(g, (int)q) != 0)
			return false;
	}
	return true;
}

static bool
clean(struct vu_guest *g)
{
	struct vu_guest_stats st;

	vu_guest_stats(g, -1, &st);
	return st.rx_bad == 0 && st.duplicates == 0 && st.dev_errors == 0;
}

bool
lmh_traffic(struct vu_guest *g, uint32_t mask, unsigned int npp, int timeout_ms)
{
	uint64_t target[MAX_QP] = { 0 };
	int64_t deadline = lmh_now_ms() + timeout_ms;
	unsigned int q;

	for (q = 0; q < MAX_QP; q++)
		if (mask & (1u << q))
			target[q] = vu_guest_tx_sent(g, (int)q) + npp;
	while (!settled(g, mask, target)) {
		int work = 0;

		for (q = 0; q < MAX_QP; q++) {
			uint64_t left;

			if (!(mask & (1u << q)))
				continue;
			left = target[q] - vu_guest_tx_sent(g, (int)q);
			if (left > 16)
				left = 16;
			if (left != 0 && outstanding(g, mask) + left <= WINDOW)
				work += vu_guest_tx(g, q, (unsigned int)left);
		}
		work += vu_guest_poll(g);
		if (lmh_now_ms() > deadline)
			return false;
		if (work == 0)
			vu_guest_wait(g, 2);
	}
	return clean(g);
}

static void *
pump_main(void *arg)
{
	struct lmh_pump *p = arg;
	unsigned int q;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		for (q = 0; q < MAX_QP; q++)
			if ((p->mask & (1u << q)) && outstanding(p->g, p->mask) + 8 <= WINDOW)
				vu_guest_tx(p->g, q, 8);
		if (vu_guest_poll(p->g) == 0)
			vu_guest_wait(p->g, 1);
	}
	return NULL;
}

int
lmh_pump_start(struct lmh_pump *p, struct vu_guest *g, uint32_t mask)
{
	pthread_t *th = malloc(sizeof(*th));

	if (th == NULL)
		return -ENOMEM;
	p->g = g;
	p->mask = mask;
	p->stop = false;
	p->thread = th;
	if (pthread_create(th, NULL, pump_main, p) != 0) {
		free(th);
		p->thread = NULL;
		return -EAGAIN;
	}
	return 0;
}

bool
lmh_pump_stop(struct lmh_pump *p)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;

	if (p->thread == NULL)
		return false;
	__atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
	pthread_join(*(pthread_t *)p->thread, NULL);
	free(p->thread);
	p->thread = NULL;
	while (!settled(p->g, p->mask, NULL)) {
		if (vu_guest_poll(p->g) == 0)
			vu_guest_wait(p->g, 2);
		if (lmh_now_ms() > deadline)
			return false;
	}
	return clean(p->g);
}

uint64_t
lmh_rx_received(struct vu_guest *g)
{
	struct vu_guest_stats st;

	vu_guest_stats(g, -1, &st);
	return st.rx_received;
}

uint64_t
lmh_dirty_pages_missing(struct vu_guest *g, const struct vu_log *log, int64_t *written)
{
	uint64_t missing = 0, first = 0;
	int64_t pages = vu_guest_dirty_check(g, log, &missing, &first);

	if (missing != 0)
		fprintf(stderr, "%" PRIu64 " of %" PRId64 " written pages not logged "
			"(first: gpa 0x%" PRIx64 ")\n", missing, pages, first);
	if (written != NULL)
		*written = pages;
	return missing;
}

uint64_t
lmh_dirty_buffers_missing(struct vu_guest *g, const struct vu_log *log, int64_t *written)
{
	struct vu_log rings = { .fd = -1, .size = log->size };
	uint64_t missing;
	unsigned int i;

	/* A copy of log with every ring's device-written pages set (vhost's layout). */
	rings.bitmap = malloc(log->size);
	assert_non_null(rings.bitmap);
	memcpy(rings.bitmap, log->bitmap, log->size);
	for (i = 0; i < vu_guest_nrings(g); i++) {
		struct vu_ring_info ri;
		uint64_t len, page;

		assert_int_equal(vu_guest_ring_info(g, i, &ri), 0);
		/* log_gpa is the descriptor ring for a packed ring, the used ring for a split one. */
		len = ri.log_gpa == ri.desc_gpa ? 16ull * ri.num : 4 + 8ull * ri.num + 2;
		for (page = ri.log_gpa >> 12; page <= (ri.log_gpa + len - 1) >> 12; page++)
			if (page / 8 < rings.size)
				rings.bitmap[page / 8] |= (uint8_t)(1u << (page % 8));
	}
	missing = lmh_dirty_pages_missing(g, &rings, written);
	free(rings.bitmap);
	return missing;
}

/* ---- process figures -------------------------------------------------------------- */

int
lmh_fds_of_file(int fd)
{
	return lmh_fds_sharing(fd, NULL, 0);
}

int
lmh_fds_sharing(int fd, int *out, int max)
{
	pid_t pid = getpid();
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, fd) != 0)
		return -1;
	d = opendir("/proc/self/fd");
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		int other = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || other == dirfd(d))
			continue;
		if (syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, other) != 0)
			continue;
		if (n < max)
			out[n] = other;
		n++;
	}
	closedir(d);
	return n;
}

bool
lmh_wait_fds_of_file(int fd, int n)
{
	int64_t deadline = lmh_now_ms() + LMH_DEADLINE_MS;
	int seen;

	while ((seen = lmh_fds_of_file(fd)) != n && seen >= 0) {
		if (lmh_now_ms() > deadline) {
			fprintf(stderr, "%d fds share the file of fd %d, %d expected\n", seen, fd, n);
			return false;
		}
		lmh_tick();
	}
	if (seen < 0)
		printf("  no kcmp(2) here: the fds the driver keeps are not counted\n");
	return true;
}


unsigned int
lmh_open_fds(void)
{
	unsigned int n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

uint64_t
lmh_rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}
