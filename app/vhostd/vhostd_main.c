/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd: options, the one epoll loop, signals, readiness,
 * configuration replay and reload, shutdown. It never daemonizes
 * (systemd or the operator's shell keeps it) and exits quickly on
 * SIGTERM: every worker tears its devices down, then it goes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <systemd/sd-daemon.h>

#include "lm_app.h"
#include "vhostd.h"

#define DEFAULT_RPC_SOCKET "/run/mlx5-lm/vhostd.sock"
/*
 * A control connection that does nothing holds one of the 128 places:
 * mlx5-lm-ctl's calls take milliseconds, a client that keeps its
 * connection between calls gets half a minute of silence.
 */
#define DEFAULT_RPC_IDLE_MS 30000
/* SIGTERM: workers that have not torn down by then are killed. */
#define SHUTDOWN_TIMEOUT_MS 10000

struct vhostd vhostd;

int64_t
vhostd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
vhostd_watch_add(struct vhostd_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (epoll_ctl(vhostd.epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0) {
		SLOG("epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
vhostd_watch_mod(struct vhostd_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	epoll_ctl(vhostd.epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void
vhostd_watch_del(struct vhostd_watch *w)
{
	epoll_ctl(vhostd.epfd, EPOLL_CTL_DEL, w->fd, NULL);
}

/* Ready once the control socket listens and every configured device_add has answered. */
void
vhostd_check_ready(void)
{
	struct vhostd_dev *d;
	unsigned int n = 0, failed = 0;
	char status[128];

	if (vhostd.ready || vhostd.startup_pending > 0)
		return;
	vhostd.ready = true;
	TAILQ_FOREACH(d, &vhostd.devs, next)
		n++;
	if (vhostd.config_path != NULL) {
		struct vhostd_config c;
		char msg[256];

		if (vhostd_config_load(vhostd.config_path, &c, msg, sizeof(msg)) == 0) {
			failed = (unsigned int)c.n > n ? (unsigned int)c.n - n : 0;
			vhostd_config_free(&c);
		}
	}
	snprintf(status, sizeof(status), "%u devices%s", n, failed ? ", some configured ones "
		 "failed (see the log)" : "");
	sd_notifyf(0, "READY=1\nSTATUS=%s", status);
	SLOG("ready: RPC socket %s, %s", vhostd.rpc_socket, status);
}

static void
replay(const struct vhostd_config *c)
{
	size_t i;

	vhostd.startup_pending = (unsigned int)c->n;
	for (i = 0; i < c->n; i++)
		vhostd_dev_add(&c->dev[i], NULL);
}

/* SIGHUP: the file's devices become the service's: removals first, then additions. */
static void
reload(void)
{
	struct vhostd_config cur, next;
	size_t *rm, *add, nrm, nadd, i;
	char msg[400];

	if (vhostd.config_path == NULL) {
		SLOG("SIGHUP: no --config file to re-read: ignored");
		return;
	}
	if (vhostd.reload_removes > 0) {
		SLOG("SIGHUP: the previous reload is still being applied: ignored");
		return;
	}
	if (vhostd_config_load(vhostd.config_path, &next, msg, sizeof(msg)) < 0) {
		SLOG("SIGHUP: %s: nothing changed", msg);
		return;
	}
	vhostd_config_of_devs(&cur);
	rm = calloc(cur.n + 1, sizeof(*rm));
	add = calloc(next.n + 1, sizeof(*add));
	if (rm == NULL || add == NULL) {
		SLOG("SIGHUP: out of memory: nothing changed");
		goto out;
	}
	vhostd_config_diff(&cur, &next, rm, &nrm, add, &nadd);
	SLOG("SIGHUP: %s: %zu devices to remove, %zu to add", vhostd.config_path, nrm, nadd);
	vhostd_config_init(&vhostd.reload_next);
	for (i = 0; i < nadd; i++)
		vhostd_config_append(&vhostd.reload_next, &next.dev[add[i]]);
	vhostd.reload_removes = (unsigned int)nrm;
	for (i = 0; i < nrm; i++) {
		struct vhostd_dev *d = vhostd_dev_find(cur.dev[rm[i]].name);

		if (d != NULL)
			vhostd_dev_remove(d, NULL);
	}
	if (nrm == 0)
		vhostd_reload_add();
out:
	free(rm);
	free(add);
	vhostd_config_free(&cur);
	vhostd_config_free(&next);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: mlx5-lm-vhostd [--rpc-socket PATH] [--config FILE] [--metrics ADDRESS]\n"
		"                      [--rpc-group GROUP] [--rpc-idle-timeout MS]\n"
		"                      [--msg-timeout MS] [--eal \"ARGS\"] [--worker PATH]\n"
		"                      [--allow-missing-config] [--socket-group GROUP]\n"
		"                      [--socket-mode MODE]\n\n"
		"vhost-user back end service for vdpa_mlx5_lm devices: one worker process per VM,\n"
		"controlled by JSON-RPC 2.0 (mlx5-lm-ctl). Runs in the foreground until SIGTERM.\n\n"
		"  --rpc-socket PATH  the control socket (default %s)\n"
		"  --config FILE      devices to create at start (what config_save writes);\n"
		"                     SIGHUP re-reads it and applies the difference; it must\n"
		"                     exist unless --allow-missing-config\n"
		"  --allow-missing-config\n"
		"                     a --config FILE that does not exist yet (first boot) is\n"
		"                     no device; config_save creates it\n"
		"  --metrics ADDRESS  Prometheus metrics over HTTP at /metrics: a unix socket\n"
		"                     path, or 127.0.0.1:PORT / localhost:PORT (loopback only)\n"
		"  --rpc-group GROUP  members of GROUP may use the control socket too (0660)\n"
		"  --socket-group GROUP\n"
		"                     the group of the vhost-user sockets the service creates\n"
		"                     (a device's socket_group wins): QEMU running as a member\n"
		"                     of GROUP (libvirt's libvirt-qemu) may connect (mode 0660)\n"
		"  --socket-mode MODE the mode of those sockets, octal (default 0660 with a\n"
		"                     group, else as the umask makes them); a device's\n"
		"                     socket_mode wins\n"
		"  --rpc-idle-timeout MS\n"
		"                     close a control connection with no call in flight that\n"
		"                     sent and read nothing for MS (default %u; 0: never)\n"
		"  --msg-timeout MS   close a front end whose vhost-user message payload does not\n"
		"                     arrive within MS (default 3000; 0: wait forever)\n"
		"  --eal ARGS         extra EAL arguments of every worker: tried at start by a\n"
		"                     worker that starts EAL and stops; refused, exit 2\n"
		"  --worker PATH      the worker program (default: mlx5-lm-vhostd-worker beside\n"
		"                     this program, or in its libexec directory)\n"
		"  -h, --help         this text\n\n"
		"Exit status: 0 clean, 1 failure, 2 usage, 3 device objects left alive.\n",
		DEFAULT_RPC_SOCKET, DEFAULT_RPC_IDLE_MS);
}

/* The worker: --worker, else beside us (the build tree), else ../libexec (installed). */
static const char *
find_worker(const char *argv0)
{
	static char path[PATH_MAX + 64];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		snprintf(self, sizeof(self), "%s", argv0);
	else
		self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/mlx5-lm-vhostd-worker", self);
	if (access(path, X_OK) == 0)
		return path;
	snprintf(path, sizeof(path), "%s/%s/mlx5-lm-vhostd-worker", self, VHOSTD_LIBEXEC_FROM_BIN);
	return path;
}

static int
parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rpc-socket", required_argument, NULL, 's' },
		{ "config", required_argument, NULL, 'c' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "rpc-group", required_argument, NULL, 'g' },
		{ "msg-timeout", required_argument, NULL, 't' },
		{ "rpc-idle-timeout", required_argument, NULL, 'i' },
		{ "eal", required_argument, NULL, 'e' },
		{ "worker", required_argument, NULL, 'w' },
		{ "allow-missing-config", no_argument, NULL, 'A' },
		{ "socket-group", required_argument, NULL, 'G' },
		{ "socket-mode", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct {
		const char *opt;
		const char **val;
	} paths[] = {
		{ "--rpc-socket", &vhostd.rpc_socket },
		{ "--config", &vhostd.config_path },
		{ "--metrics", &vhostd.metrics_addr },
		{ "--worker", &vhostd.worker_path },
	};
	struct group *gr;
	char *end;
	int c;

	vhostd.rpc_socket = DEFAULT_RPC_SOCKET;
	vhostd.msg_timeout_ms = 3000;
	vhostd.rpc_idle_ms = DEFAULT_RPC_IDLE_MS;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			vhostd.rpc_socket = optarg;
			break;
		case 'c':
			vhostd.config_path = optarg;
			break;
		case 'm': {
			struct sockaddr_in sin;
			char msg[256];

			/* A malformed address is a usage error; one that cannot be bound, not. */
			/* An empty one is said below, with the other empty paths. */
			if (optarg[0] != '\0' &&
			    vhostd_metrics_parse(optarg, &sin, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "mlx5-lm-vhostd: %s\n", msg);
				return 2;
			}
			vhostd.metrics_addr = optarg;
			break;
		}
		case 'g':
			gr = getgrnam(optarg);
			if (gr == NULL) {
				fprintf(stderr, "mlx5-lm-vhostd: --rpc-group: no group '%s'\n", optarg);
				return 2;
			}
			vhostd.rpc_gid = gr->gr_gid;
			vhostd.rpc_group = true;
			break;
		case 't':
			vhostd.msg_timeout_ms = (unsigned int)strtoul(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || vhostd.msg_timeout_ms > 3600000) {
				fprintf(stderr, "mlx5-lm-vhostd: --msg-timeout takes milliseconds, "
					"0..3600000\n");
				return 2;
			}
			break;
		case 'i':
			vhostd.rpc_idle_ms = (unsigned int)strtoul(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || vhostd.rpc_idle_ms > 86400000) {
				fprintf(stderr, "mlx5-lm-vhostd: --rpc-idle-timeout takes "
					"milliseconds, 0..86400000\n");
				return 2;
			}
			break;
		case 'e':
			vhostd.worker_eal = optarg;
			break;
		case 'w':
			vhostd.worker_path = optarg;
			break;
		case 'A':
			vhostd.config_missing_ok = true;
			break;
		case 'G':
			if (optarg[0] == '\0' || strlen(optarg) > VHOSTD_GROUP_MAX ||
			    getgrnam(optarg) == NULL) {
				fprintf(stderr, "mlx5-lm-vhostd: --socket-group: no group '%s'\n",
					optarg);
				return 2;
			}
			vhostd.socket_group = optarg;
			break;
		case 'M':
			if (lm_app_sock_parse_mode(optarg, &vhostd.socket_mode) < 0) {
				fprintf(stderr, "mlx5-lm-vhostd: --socket-mode takes permission "
					"bits in octal, 0000 to 0777 (e.g. 0660), not '%s'\n",
					optarg);
				return 2;
			}
			vhostd.socket_mode_set = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	/* An empty path is no file: the service would listen nowhere, load nothing. */
	for (c = 0; c < (int)(sizeof(paths) / sizeof(paths[0])); c++) {
		if (*paths[c].val != NULL && (*paths[c].val)[0] == '\0') {
			fprintf(stderr, "mlx5-lm-vhostd: %s: the path is empty\n", paths[c].opt);
			return 2;
		}
	}
	if (vhostd.config_missing_ok && vhostd.config_path == NULL) {
		fprintf(stderr, "mlx5-lm-vhostd: --allow-missing-config needs --config FILE\n");
		return 2;
	}
	if (vhostd.worker_path == NULL)
		vhostd.worker_path = find_worker(argv[0]);
	if (access(vhostd.worker_path, X_OK) < 0) {
		fprintf(stderr, "mlx5-lm-vhostd: the worker %s: %s (--worker PATH)\n",
			vhostd.worker_path, strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * --eal is the workers' EAL's, which the service never starts itself: a
 * mistyped one started the service fine, then failed every device_add.
 * One worker tries them now (--check-eal: its EAL starts and stops, a
 * fraction of a second) and says why it cannot; the service then refuses
 * to start. 0 fine (or cannot tell: a check that does not end in time is
 * logged and the service starts), 2 refused. The check starts EAL for real:
 * a --vdev in --eal is created and removed once, and an allow-list (-a BDF)
 * probes its functions once, before any worker holds them.
 */
#define EAL_CHECK_TIMEOUT_MS 30000

/* The check's bound: EAL_CHECK_TIMEOUT_MS, or the tests' MLX5_LM_VHOSTD_EAL_CHECK_MS. */
static int
eal_check_timeout_ms(void)
{
	const char *e = getenv("MLX5_LM_VHOSTD_EAL_CHECK_MS");
	char *end;
	long v;

	if (e == NULL)
		return EAL_CHECK_TIMEOUT_MS;
	v = strtol(e, &end, 10);
	return *e != '\0' && *end == '\0' && v >= 1 && v <= 600000 ? (int)v :
	       EAL_CHECK_TIMEOUT_MS;
}

static int
check_worker_eal(void)
{
	char out[512] = "", *nl;
	int64_t deadline;
	size_t n = 0;
	int p[2], status = 0;
	pid_t pid;

	if (vhostd.worker_eal == NULL || pipe2(p, O_CLOEXEC) < 0)
		return 0;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	if (pid == 0) {
		/* Its stdout (the reason) to us; dup2 leaves the copy open across exec. */
		dup2(p[1], STDOUT_FILENO);
		execl(vhostd.worker_path, vhostd.worker_path, "--vm", "eal-check", "--check-eal",
		      "--eal", vhostd.worker_eal, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	deadline = vhostd_now_ms() + eal_check_timeout_ms();
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int64_t left = deadline - vhostd_now_ms();
		ssize_t r;

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			/*
			 * Cannot tell: EAL may take that long on a loaded host (a
			 * large -m zeroing hugepages). Starting is what was asked;
			 * a worker that then fails says why (its first line).
			 */
			kill(pid, SIGKILL);
			close(p[0]);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			vhostd_runtime_dir_remove("eal-check", pid);
			SLOG("--eal \"%s\": the check of a worker's EAL did not end within %d ms: "
			     "started without it", vhostd.worker_eal, eal_check_timeout_ms());
			return 0;
		}
		r = read(p[0], out + n, sizeof(out) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		out[n] = '\0';
		if (n == sizeof(out) - 1)
			break;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* EAL may fail after making its runtime directory (a --vdev it cannot parse). */
	vhostd_runtime_dir_remove("eal-check", pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	nl = strchr(out, '\n');
	if (nl != NULL)
		*nl = '\0';
	fprintf(stderr, "mlx5-lm-vhostd: --eal \"%s\": a worker's EAL refuses it: %s\n",
		vhostd.worker_eal, out[0] ? out : "no reason given");
	return 2;
}

/* The default socket's directory (/run/mlx5-lm) is ours to create; any other is not. */
static void
make_default_dir(void)
{
	if (strcmp(vhostd.rpc_socket, DEFAULT_RPC_SOCKET) == 0 &&
	    mkdir("/run/mlx5-lm", 0755) < 0 && errno != EEXIST)
		SLOG("cannot create /run/mlx5-lm: %s", strerror(errno));
}

static void
on_signal(struct vhostd_watch *w, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			pid_t pid;
			int status;

			while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
				vhostd_vm_reap(pid, status);
		} else if (si.ssi_signo == SIGHUP) {
			reload();
		} else if (!vhostd.shutting_down) {
			SLOG("%s: stopping every worker", strsignal((int)si.ssi_signo));
			sd_notify(0, "STOPPING=1");
			vhostd.shutting_down = true;
			vhostd_server_stop();
			vhostd_vm_shutdown_all();
		}
	}
}

int
main(int argc, char **argv)
{
	struct vhostd_watch sigw;
	struct vhostd_config boot;
	int64_t shutdown_by = 0;
	struct rlimit rl;
	bool missing;
	char msg[512];
	sigset_t sigs;
	int ret;

	ret = parse_args(argc, argv);
	if (ret == 0)
		ret = check_worker_eal();
	if (ret != 0)
		return ret;
	setvbuf(stderr, NULL, _IOLBF, 0);
	TAILQ_INIT(&vhostd.devs);
	TAILQ_INIT(&vhostd.vms);
	vhostd.start_ms = vhostd_now_ms();
	/* Control connections and workers' channels: room for MAX_CONNS and more. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	vhostd_config_init(&boot);
	/*
	 * A file that is not there is a mistake (a typo in a unit leaves every
	 * VM without its NICs) unless the operator said it may not exist yet:
	 * a first boot, before config_save has written it.
	 */
	missing = vhostd.config_path != NULL && access(vhostd.config_path, F_OK) < 0 &&
		  errno == ENOENT;
	if (missing && vhostd.config_missing_ok) {
		SLOG("configuration %s does not exist yet: no device to create "
		     "(--allow-missing-config; config_save writes it)", vhostd.config_path);
	} else if (vhostd.config_path != NULL &&
		   vhostd_config_load(vhostd.config_path, &boot, msg, sizeof(msg)) < 0) {
		SLOG("--config %s%s", msg, missing ? " (--allow-missing-config if config_save "
		     "is to create it)" : "");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	vhostd.epfd = epoll_create1(EPOLL_CLOEXEC);
	sigw.fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	sigw.fn = on_signal;
	if (vhostd.epfd < 0 || sigw.fd < 0 || vhostd_watch_add(&sigw, EPOLLIN) < 0)
		return 1;
	make_default_dir();
	if (vhostd_server_start() < 0)
		return 1;
	if (vhostd.metrics_addr != NULL && vhostd_metrics_start(vhostd.metrics_addr) < 0) {
		vhostd_server_stop();
		return 1;
	}
	SLOG("control socket %s%s%s, worker %s", vhostd.rpc_socket,
	     vhostd.config_path ? ", configuration " : "",
	     vhostd.config_path ? vhostd.config_path : "", vhostd.worker_path);
	replay(&boot);
	vhostd_config_free(&boot);
	vhostd_check_ready();
	for (;;) {
		/* One event at a time: a callback may free what a later event of a batch names. */
		struct epoll_event ev[1];
		int64_t t[3], next = -1, now;
		int i, n, timeout;

		if (vhostd.shutting_down && vhostd_vm_all_gone())
			break;
		t[0] = vhostd_vm_timers();
		t[1] = vhostd_server_timers();
		t[2] = vhostd.metrics_addr != NULL ? vhostd_metrics_timers() : -1;
		for (i = 0; i < 3; i++)
			if (t[i] >= 0 && (next < 0 || t[i] < next))
				next = t[i];
		now = vhostd_now_ms();
		if (vhostd.shutting_down) {
			if (shutdown_by == 0)
				shutdown_by = now + SHUTDOWN_TIMEOUT_MS;
			if (now >= shutdown_by) {
				struct vhostd_vm *vm;

				TAILQ_FOREACH(vm, &vhostd.vms, next)
					if (vm->pid > 0) {
						VMLOG(vm, "worker %d not gone within %d ms: killed",
						      (int)vm->pid, SHUTDOWN_TIMEOUT_MS);
						kill(vm->pid, SIGKILL);
					}
				shutdown_by = now + SHUTDOWN_TIMEOUT_MS;
			}
			if (next < 0 || shutdown_by < next)
				next = shutdown_by;
		}
		timeout = next < 0 ? -1 : (int)(next > now ? next - now : 0);
		n = epoll_wait(vhostd.epfd, ev, 1, timeout);
		for (i = 0; i < n; i++) {
			struct vhostd_watch *w = ev[i].data.ptr;

			w->fn(w, ev[i].events);
		}
	}
	if (vhostd.metrics_addr != NULL)
		vhostd_metrics_stop();
	vhostd_devs_free();
	vhostd_config_free(&vhostd.reload_next);
	close(sigw.fd);
	close(vhostd.epfd);
	if (vhostd.leaked_total > 0 || vhostd.leaked_uncounted > 0) {
		if (vhostd.leaked_uncounted > 0)
			SLOG("stopped: %ld device objects were left alive in the workers, and more "
			     "in %u whose exit status (3) said so but whose count was lost",
			     vhostd.leaked_total, vhostd.leaked_uncounted);
		else
			SLOG("stopped: %ld device objects were left alive in the workers",
			     vhostd.leaked_total);
		return 3;
	}
	SLOG("stopped: every worker gone, 0 device objects left alive");
	return 0;
}
