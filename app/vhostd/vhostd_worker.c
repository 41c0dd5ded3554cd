/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd-worker: the process of one VM. It holds that VM's devices,
 * their vhost-user sockets, its own EAL and vhost thread; the supervisor
 * (mlx5-lm-vhostd) starts it, speaks to it over one channel (a JSON object
 * per line, fd --channel) and restarts it when it dies. Nothing a front
 * end of this VM sends reaches another VM: they are other processes.
 *
 * Requests: {"id": N, "op": "add"|"remove"|"get"|"stats"|"prepare"|"exit", ...};
 * answers {"id": N, "result": ...} or {"id": N, "error": {"code", "message"}};
 * events {"event": "ready"|"state"|"metrics"|"exit", ...}.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <jansson.h>
#include <rte_eal.h>
#include <rte_log.h>
#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "lm_app.h"
#include "rte_pmd_mlx5_lm.h"
#include "vhostd_autoprep.h"
#include "vhostd_chan.h"
#include "vhostd_config.h"
#include "vhostd_rpc.h"
#include "vhostd_devinfo.h"

#define MAX_DEVS 64
/* How often device states are compared with what the supervisor was told. */
#define MONITOR_MS 50

static const char *vm_name = "?";

#define WLOG(fmt, ...) \
	fprintf(stderr, "vhostd-worker: vm %s: " fmt "\n", vm_name, ##__VA_ARGS__)
#define DLOG(d, fmt, ...) \
	fprintf(stderr, "vhostd-worker: vm %s device %s: " fmt "\n", vm_name, (d)->name, \
		##__VA_ARGS__)

struct wdev {
	bool used;
	char name[VHOSTD_NAME_MAX + 1];
	char devname[32];
	char socket[VHOSTD_SOCKET_MAX];
	bool client;
	char devargs[VHOSTD_DEVARGS_MAX];
	struct rte_vdpa_device *vdpa;
	/* Set by vhost's callbacks, read by the main thread: under wlock. */
	int vid;
	bool connected;
	int peer_pid;
	uint64_t connections;
	uint64_t conf_at_connect;
	uint64_t features;
	bool features_known;
	bool logging;
	uint16_t rings;
	/* Main thread only: what the supervisor was last told. */
	char state[16];
	char reason[160];
	/* Main thread only: the destination's memory prepared unasked. */
	struct vhostd_autoprep autoprep;
};

/* ---- the log: every line the worker's DPDK writes names its VM (and device) ---- */

/*
 * Every worker numbers its devices from vdpa_mlx5_lm0, and the driver's
 * lines (mlx5_lm vdpa_mlx5_lm0: ...) and vhost's reached the service's
 * one log unprefixed: a line could not be tied to a VM. EAL's log goes
 * through this stream instead: each line prefixed with the VM, and with
 * the service's device name when it names one of this worker's devices,
 * as WLOG and DLOG prefix the worker's own.
 */
#define LOG_LINE_MAX 2048

/* What the stream's lines name, kept apart from devs[]: its own lock, taken by nothing else. */
static pthread_mutex_t log_names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char devname[32];
	char name[VHOSTD_NAME_MAX + 1];
} log_names[MAX_DEVS];
/* Written under the FILE's own lock (stdio serializes a stream's writes). */
static char log_partial[LOG_LINE_MAX];
static size_t log_partial_len;
static FILE *log_stream;

static void
log_name_set(unsigned int slot, const char *devname, const char *name)
{
	pthread_mutex_lock(&log_names_lock);
	snprintf(log_names[slot].devname, sizeof(log_names[slot].devname), "%s", devname);
	snprintf(log_names[slot].name, sizeof(log_names[slot].name), "%s", name);
	pthread_mutex_unlock(&log_names_lock);
}

/* The service's name of the device line names (vdpa_mlx5_lm1 is not vdpa_mlx5_lm12). */
static bool
log_device_of(const char *line, char *name, size_t len)
{
	bool found = false;
	unsigned int i;

	pthread_mutex_lock(&log_names_lock);
	for (i = 0; i < MAX_DEVS && !found; i++) {
		size_t n = strlen(log_names[i].devname);
		const char *at = n > 0 ? strstr(line, log_names[i].devname) : NULL;

		for (; at != NULL && !found; at = strstr(at + 1, log_names[i].devname)) {
			if (at[n] < '0' || at[n] > '9') {
				snprintf(name, len, "%s", log_names[i].name);
				found = true;
			}
		}
	}
	pthread_mutex_unlock(&log_names_lock);
	return found;
}

/* One whole line, prefixed, in one write: lines of threads never interleave. */
static void
log_emit(const char *line, size_t n)
{
	char out[LOG_LINE_MAX + 128], dev[VHOSTD_NAME_MAX + 1], copy[LOG_LINE_MAX];
	int k;

	snprintf(copy, sizeof(copy), "%.*s", (int)n, line);
	if (log_device_of(copy, dev, sizeof(dev)))
		k = snprintf(out, sizeof(out), "vhostd-worker: vm %s device %s: %s\n", vm_name, dev,
			     copy);
	else
		k = snprintf(out, sizeof(out), "vhostd-worker: vm %s: %s\n", vm_name, copy);
	if (k > 0 && write(STDERR_FILENO, out, (size_t)k < sizeof(out) ? (size_t)k :
			   sizeof(out) - 1) < 0)
		return;
}

static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	size_t i, start = 0;

	for (i = 0; i < size; i++) {
		if (buf[i] != '\n' && log_partial_len + (i - start) < sizeof(log_partial) - 1)
			continue;
		/* A line, or as much of one as fits: out with what came before it. */
		if (log_partial_len > 0) {
			size_t add = i - start;

			memcpy(log_partial + log_partial_len, buf + start, add);
			log_emit(log_partial, log_partial_len + add);
			log_partial_len = 0;
		} else {
			log_emit(buf + start, i - start);
		}
		start = buf[i] == '\n' ? i + 1 : i;
	}
	if (start < size) {
		memcpy(log_partial + log_partial_len, buf + start, size - start);
		log_partial_len += size - start;
	}
	return (ssize_t)size;
}

/* The stream EAL logs to, and what probe_captured goes back to. */
static void
log_open(void)
{
	cookie_io_functions_t io = { .write = log_write };

	log_stream = fopencookie(NULL, "w", io);
	if (log_stream == NULL)
		return;
	setvbuf(log_stream, NULL, _IOLBF, 0);
	rte_openlog_stream(log_stream);
}

/*
 * EAL's start, its output kept: a bad --eal made EAL print ~100 lines of
 * usage (stdout) around the one line that says what is wrong (getopt's,
 * on stderr), in every worker's start, and the service's device_add only
 * said the worker "exited with status 1". Meanwhile stdout goes nowhere
 * and stderr (getopt's lines, and this worker's log stream) to a memory
 * file, then each line once to the log, prefixed; the first line is the
 * reason (why, on failure), without the program's name getopt puts first.
 * replay false: the lines are dropped (--check-eal prints the reason only).
 */
static int
eal_init_explained(const char *args, bool replay, char *why, size_t len)
{
	static const char prog[] = "mlx5-lm-vhostd-worker";
	int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
	int mem = memfd_create("eal-start", MFD_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char *text = NULL, *line, *save = NULL, last[LOG_LINE_MAX] = "";
	off_t size;
	int ret;

	why[0] = '\0';
	if (saved_out < 0 || saved_err < 0 || mem < 0 || null < 0) {
		/* Cannot capture: EAL's output as it comes. */
		ret = lm_app_eal_init(prog, args);
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	dup2(null, STDOUT_FILENO);
	dup2(mem, STDERR_FILENO);
	ret = lm_app_eal_init(prog, args);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	size = lseek(mem, 0, SEEK_END);
	if (size > 0 && size < (1 << 20) && (text = calloc(1, (size_t)size + 1)) != NULL &&
	    pread(mem, text, (size_t)size, 0) == size) {
		for (line = strtok_r(text, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			const char *bare = line;
			char own[64];

			/* EAL reads its arguments twice: the same complaint comes twice. */
			if (strcmp(line, last) == 0)
				continue;
			snprintf(last, sizeof(last), "%s", line);
			snprintf(own, sizeof(own), "vhostd-worker: vm %s", vm_name);
			if (strncmp(line, own, strlen(own)) == 0) {
				bare = strchr(line + strlen(own), ' ');
				bare = bare != NULL ? bare + 1 : line;
				if (replay)
					dprintf(STDERR_FILENO, "%s\n", line);
			} else {
				if (strncmp(line, prog, strlen(prog)) == 0 &&
				    strncmp(line + strlen(prog), ": ", 2) == 0)
					bare = line + strlen(prog) + 2;
				if (replay)
					log_emit(line, strlen(line));
			}
			if (why[0] == '\0')
				snprintf(why, len, "%s", bare);
		}
	}
	free(text);
out:
	if (ret < 0 && why[0] == '\0')
		snprintf(why, len, "EAL did not start (its arguments: %s)", args);
	if (saved_out >= 0)
		close(saved_out);
	if (saved_err >= 0)
		close(saved_err);
	if (mem >= 0)
		close(mem);
	if (null >= 0)
		close(null);
	return ret;
}

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static struct wdev devs[MAX_DEVS];
static unsigned int next_index;
static int chan_fd = -1;
static unsigned int msg_timeout_ms = LM_APP_MSG_TIMEOUT_MS;

static struct wdev *
find_by_name(const char *name)
{
	unsigned int i;

	for (i = 0; i < MAX_DEVS; i++)
		if (devs[i].used && strcmp(devs[i].name, name) == 0)
			return &devs[i];
	return NULL;
}

/* Under wlock. vhost names a connection by its socket path. */
static struct wdev *
find_by_vid(int vid)
{
	char path[VHOSTD_SOCKET_MAX] = "";
	unsigned int i;

	if (rte_vhost_get_ifname(vid, path, sizeof(path)) < 0)
		return NULL;
	for (i = 0; i < MAX_DEVS; i++)
		if (devs[i].used && strcmp(devs[i].socket, path) == 0)
			return &devs[i];
	return NULL;
}

/*
 * The front end's pid: SO_PEERCRED of our end of its connection. vhost
 * 22.11 does not tell an application its connection's fd, so find it: the
 * unix stream socket of this process whose own address (server) or peer
 * address (client) is the device's path and that is not a listener.
 */
static int
peer_pid_of(const char *path, bool client)
{
	struct dirent *e;
	DIR *dir = opendir("/proc/self/fd");
	int pid = -1;

	if (dir == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL) {
		struct sockaddr_un sa;
		socklen_t sl = sizeof(sa);
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		int fd = atoi(e->d_name), listening = 0;
		socklen_t ll = sizeof(listening);
		int r;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(dir))
			continue;
		memset(&sa, 0, sizeof(sa));
		r = client ? getpeername(fd, (struct sockaddr *)&sa, &sl) :
			     getsockname(fd, (struct sockaddr *)&sa, &sl);
		if (r < 0 || sa.sun_family != AF_UNIX || strcmp(sa.sun_path, path) != 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 || listening)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0)
			pid = (int)cr.pid;
	}
	closedir(dir);
	return pid;
}

static int
on_new_connection(int vid)
{
	struct rte_pmd_mlx5_lm_state st;
	char msg[160];
	struct wdev *d;
	int ret = lm_app_vhost_vet(vid, msg_timeout_ms, msg, sizeof(msg));

	pthread_mutex_lock(&wlock);
	d = find_by_vid(vid);
	if (d != NULL) {
		if (msg[0] != '\0')
			DLOG(d, "%s", msg);
		if (ret == 0) {
			d->vid = vid;
			d->connected = true;
			d->connections++;
			d->features_known = false;
			d->logging = false;
			d->peer_pid = peer_pid_of(d->socket, d->client);
			d->conf_at_connect = rte_pmd_mlx5_lm_get_state(d->devname, &st) == 0 ?
					     st.conf_count : 0;
			DLOG(d, "front end connected on %s (pid %d)", d->socket, d->peer_pid);
		}
	}
	pthread_mutex_unlock(&wlock);
	return ret;
}

static void
on_destroy_connection(int vid)
{
	struct wdev *d;

	pthread_mutex_lock(&wlock);
	d = find_by_vid(vid);
	if (d != NULL && d->vid == vid) {
		d->vid = -1;
		d->connected = false;
		DLOG(d, "front end gone from %s (pid %d)", d->socket, d->peer_pid);
	}
	pthread_mutex_unlock(&wlock);
}

/*
 * The front end's start, as vhost saw it (in vhost's thread, where its
 * state is consistent): what device_get reports, without the main thread
 * ever reading vhost's per-connection state while vhost changes it.
 */
static int
on_new_device(int vid)
{
	struct wdev *d;

	pthread_mutex_lock(&wlock);
	d = find_by_vid(vid);
	if (d != NULL) {
		d->features_known = rte_vhost_get_negotiated_features(vid, &d->features) == 0;
		d->logging = d->features_known && (d->features & (1ULL << 26));
		d->rings = rte_vhost_get_vring_num(vid);
	}
	pthread_mutex_unlock(&wlock);
	return 0;
}

static void
on_destroy_device(int vid)
{
}

static int
on_features_changed(int vid, uint64_t features)
{
	struct wdev *d;

	pthread_mutex_lock(&wlock);
	d = find_by_vid(vid);
	if (d != NULL) {
		d->features = features;
		d->features_known = true;
		d->logging = (features & (1ULL << 26)) != 0;
	}
	pthread_mutex_unlock(&wlock);
	return 0;
}

static const struct rte_vhost_device_ops vhost_ops = {
	.new_device = on_new_device,
	.destroy_device = on_destroy_device,
	.features_changed = on_features_changed,
	.new_connection = on_new_connection,
	.destroy_connection = on_destroy_connection,
};

/*
 * DPDK 22.11's vhost thread polls the fds it had when its poll began, for
 * up to 1 s, and a new listening socket does not wake it: a front end that
 * connects at once (one reconnecting to a restarted worker) waits that
 * second. Only a new connection wakes the thread (vhost's fdset pipe), so
 * make one: a vhost-user client socket, in this process's own EAL runtime
 * directory, connected to a listener that never answers, started (vhost
 * adds the connection and wakes its thread) and unregistered at once.
 */
static int
wake_nothing(int vid)
{
	return 0;
}

static void
wake_nothing_void(int vid)
{
}

static const struct rte_vhost_device_ops wake_ops = {
	.new_device = wake_nothing,
	.destroy_device = wake_nothing_void,
};

static void
wake_vhost_thread(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vhost-wake.sock",
			     rte_eal_get_runtime_dir()) >= sizeof(sa.sun_path))
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0 &&
	    rte_vhost_driver_register(sa.sun_path, RTE_VHOST_USER_CLIENT |
				      RTE_VHOST_USER_NO_RECONNECT) == 0) {
		if (rte_vhost_driver_callback_register(sa.sun_path, &wake_ops) == 0)
			rte_vhost_driver_start(sa.sun_path);
		rte_vhost_driver_unregister(sa.sun_path);
	}
	close(fd);
	unlink(sa.sun_path);
}

/* ---- the requests ---- */

static json_t *
error_reply(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static json_t *
error_reply(json_t *id, int code, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:O, s:{s:i, s:s}}", "id", id, "error", "code", code, "message", msg);
}

/*
 * Probe with the PMD's own explanation kept: it logs why a probe fails
 * (the devargs key, the missing device); the log is captured meanwhile so
 * that the device_add caller reads the reason, not "probe failed".
 */
static int
probe_captured(const char *devname, const char *devargs, char *why, size_t len)
{
	char *text = NULL, *line, *save = NULL;
	size_t tlen = 0;
	FILE *mem = open_memstream(&text, &tlen);
	int ret;

	why[0] = '\0';
	if (mem != NULL)
		rte_openlog_stream(mem);
	ret = lm_app_probe_device(devname, devargs);
	if (mem != NULL) {
		rte_openlog_stream(log_stream);
		fclose(mem);
		for (line = strtok_r(text, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			log_emit(line, strlen(line));
			if (strstr(line, devname) != NULL)
				snprintf(why, len, "%s", line);
		}
		free(text);
	}
	if (ret < 0 && why[0] == '\0')
		snprintf(why, len, "%s: cannot probe: %s", devname, strerror(-ret));
	return ret;
}

static json_t *
op_add(json_t *id, json_t *req)
{
	const struct lm_app_sock_perm *perm_p = NULL;
	struct lm_app_sock_perm perm;
	struct vhostd_devcfg cfg;
	char why[600];
	struct wdev *d = NULL;
	struct stat st;
	unsigned int i;
	json_t *res;
	int r;

	if (vhostd_devcfg_from_json(req, &cfg, why, sizeof(why)) < 0)
		return error_reply(id, VHOSTD_RPC_INVALID_PARAMS, "%s", why);
	if (find_by_name(cfg.name) != NULL)
		return error_reply(id, VHOSTD_RPC_EXISTS, "device '%s' exists", cfg.name);
	for (i = 0; i < MAX_DEVS && d == NULL; i++)
		if (!devs[i].used)
			d = &devs[i];
	if (d == NULL)
		return error_reply(id, VHOSTD_RPC_DEVICE_FAILED, "at most %d devices per VM",
				   MAX_DEVS);
	if (!cfg.client) {
		r = lm_app_sock_check(cfg.socket, why, sizeof(why));
		if (r < 0)
			return error_reply(id, VHOSTD_RPC_DEVICE_FAILED, "%s", why);
		if (r > 0)
			WLOG("device %s: %s", cfg.name, why);
	}
	/* A group alone opens the socket to it (0660), as --rpc-group does. */
	if (!cfg.client && (cfg.socket_group[0] != '\0' || cfg.socket_mode_set)) {
		struct group *gr = cfg.socket_group[0] != '\0' ? getgrnam(cfg.socket_group) : NULL;

		if (cfg.socket_group[0] != '\0' && gr == NULL)
			return error_reply(id, VHOSTD_RPC_INVALID_PARAMS, "invalid params: "
					   "'socket_group': no group '%s'", cfg.socket_group);
		perm.gid = gr != NULL ? gr->gr_gid : (gid_t)-1;
		perm.mode = cfg.socket_mode_set ? (mode_t)cfg.socket_mode : 0660;
		perm_p = &perm;
	}
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", cfg.name);
	snprintf(d->socket, sizeof(d->socket), "%s", cfg.socket);
	snprintf(d->devargs, sizeof(d->devargs), "%s", cfg.devargs);
	snprintf(d->devname, sizeof(d->devname), "%s%u", LM_APP_PMD, next_index++);
	d->client = cfg.client;
	d->vid = -1;
	vhostd_autoprep_init(&d->autoprep, cfg.auto_prepare);
	log_name_set((unsigned int)(d - devs), d->devname, d->name);
	if (probe_captured(d->devname, d->devargs, why, sizeof(why)) < 0) {
		log_name_set((unsigned int)(d - devs), "", "");
		return error_reply(id, VHOSTD_RPC_DEVICE_FAILED, "device '%s': bad device: %s",
				   cfg.name, why);
	}
	d->vdpa = rte_vdpa_find_device_by_name(d->devname);
	if (d->vdpa == NULL) {
		snprintf(why, sizeof(why), "%s has no vDPA device", d->devname);
		goto err_remove;
	}
	/* Visible to the callbacks before vhost can call them. */
	pthread_mutex_lock(&wlock);
	d->used = true;
	pthread_mutex_unlock(&wlock);
	if (lm_app_vhost_start_perm(d->socket, d->vdpa, d->client, perm_p, &vhost_ops, why,
				    sizeof(why)) < 0)
		goto err_unuse;
	if (!d->client)
		wake_vhost_thread();
	snprintf(d->state, sizeof(d->state), "waiting");
	if (perm_p != NULL)
		DLOG(d, "%s on %s (server, group %s, mode %04o), devargs %s", d->devname,
		     d->socket, cfg.socket_group[0] ? cfg.socket_group : "unchanged",
		     (unsigned int)perm.mode, d->devargs);
	else
		DLOG(d, "%s on %s (%s), devargs %s", d->devname, d->socket,
		     d->client ? "client" : "server", d->devargs);
	res = json_pack("{s:s, s:s, s:s}", "name", d->name, "device", d->devname, "state",
			d->state);
	/*
	 * The socket file this worker created: should the worker die, the
	 * supervisor removes the device's socket itself, and only if the file
	 * there is still this one.
	 */
	if (!d->client && lstat(d->socket, &st) == 0 && S_ISSOCK(st.st_mode)) {
		json_object_set_new(res, "socket_dev", json_integer((json_int_t)st.st_dev));
		json_object_set_new(res, "socket_ino", json_integer((json_int_t)st.st_ino));
	}
	return json_pack("{s:O, s:o}", "id", id, "result", res);
err_unuse:
	pthread_mutex_lock(&wlock);
	d->used = false;
	pthread_mutex_unlock(&wlock);
err_remove:
	lm_app_remove_device(d->devname);
	log_name_set((unsigned int)(d - devs), "", "");
	return error_reply(id, VHOSTD_RPC_DEVICE_FAILED, "device '%s': %s", cfg.name, why);
}

/* vhost first (it closes the connection and stops the device), then the device. */
static void
dev_destroy(struct wdev *d)
{
	lm_app_vhost_stop(d->socket);
	pthread_mutex_lock(&wlock);
	d->used = false;
	pthread_mutex_unlock(&wlock);
	lm_app_remove_device(d->devname);
	log_name_set((unsigned int)(d - devs), "", "");
}

static json_t *
op_remove(json_t *id, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	struct wdev *d = name != NULL ? find_by_name(name) : NULL;
	char was[16];

	if (d == NULL)
		return error_reply(id, VHOSTD_RPC_NOT_FOUND, "no device '%s'", name ? name : "");
	snprintf(was, sizeof(was), "%s", d->state);
	DLOG(d, "removing (%s)", was);
	dev_destroy(d);
	return json_pack("{s:O, s:{s:s, s:s}}", "id", id, "result", "name", name,
			 "was", was);
}

/* The device's state as device_get names it, and why when failed. */
static void
dev_state(struct wdev *d, char *state, size_t slen, char *reason, size_t rlen)
{
	struct rte_pmd_mlx5_lm_state st;
	bool connected;
	uint64_t at_connect;

	reason[0] = '\0';
	pthread_mutex_lock(&wlock);
	connected = d->connected;
	at_connect = d->conf_at_connect;
	pthread_mutex_unlock(&wlock);
	if (rte_pmd_mlx5_lm_get_state(d->devname, &st) < 0) {
		snprintf(state, slen, "failed");
		snprintf(reason, rlen, "the device %s is gone", d->devname);
		return;
	}
	if (st.state == RTE_PMD_MLX5_LM_STATE_FAILED) {
		snprintf(state, slen, "failed");
		snprintf(reason, rlen, "configuration failed: %s (%d)", st.last_error_msg,
			 st.last_error);
	} else if (!connected) {
		snprintf(state, slen, "waiting");
	} else if (st.state == RTE_PMD_MLX5_LM_STATE_RUNNING) {
		snprintf(state, slen, "running");
	} else if (st.state == RTE_PMD_MLX5_LM_STATE_STOPPED && st.conf_count > at_connect) {
		snprintf(state, slen, "stopped");
	} else {
		snprintf(state, slen, "connected");
	}
}

/* Milliseconds to the microsecond: the timings' resolution, not float noise. */
static double
ms3(double ms)
{
	return (double)(int64_t)(ms * 1000.0 + 0.5) / 1000.0;
}

static json_t *
dev_info(struct wdev *d)
{
	struct rte_pmd_mlx5_lm_timings t = { 0 };
	struct rte_pmd_mlx5_lm_state st = { 0 };
	struct rte_pmd_mlx5_lm_caps caps = { 0 };
	char state[16], reason[160];
	uint32_t pairs = 0;
	json_t *j, *fe;

	dev_state(d, state, sizeof(state), reason, sizeof(reason));
	rte_pmd_mlx5_lm_get_state(d->devname, &st);
	rte_pmd_mlx5_lm_get_timings(d->devname, &t);
	rte_pmd_mlx5_lm_get_caps(d->devname, &caps);
	rte_vdpa_get_queue_num(d->vdpa, &pairs);
	pthread_mutex_lock(&wlock);
	fe = json_pack("{s:b, s:i, s:I}", "connected", d->connected,
		       "pid", d->connected ? d->peer_pid : -1, "connections",
		       (json_int_t)d->connections);
	j = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:o, s:o, s:{s:i, s:i},"
		      " s:{s:f, s:f, s:f, s:I}, s:{s:f}, s:{s:i, s:I}, s:I, s:I, s:b}",
		      "name", d->name, "device", d->devname, "backend", caps.backend,
		      "socket", d->socket, "client", d->client, "devargs", d->devargs,
		      "state", state, "frontend", fe,
		      "features", vhostd_features_json(d->features_known ? d->features : 0),
		      "queues", "device_pairs", (int)pairs, "rings",
		      d->features_known ? (int)d->rings : 0,
		      "last_start", "total_ms", ms3(t.conf_ms), "memory_ms", ms3(t.conf_mr_ms),
		      "queues_ms", ms3(t.conf_vq_ms), "count", (json_int_t)t.conf_count,
		      "last_stop", "total_ms", ms3(t.close_ms),
		      /* The PMD's: a table changed while running brings no new_device. */
		      "memory", "regions", (int)t.mem_regions, "bytes", (json_int_t)t.mem_bytes,
		      "configurations", (json_int_t)st.conf_count,
		      "configuration_failures", (json_int_t)st.conf_failures,
		      "logging", d->logging);
	pthread_mutex_unlock(&wlock);
	if (j != NULL && reason[0] != '\0')
		json_object_set_new(j, "reason", json_string(reason));
	if (j != NULL) {
		json_object_set_new(j, "preparation", vhostd_worker_prep_json(d->devname));
		json_object_set_new(j, "auto_prepare", vhostd_autoprep_json(&d->autoprep));
	}
	return j;
}

/* prepare: the device's guest memory registered from its front end's pid. */
static json_t *
op_prepare(json_t *id, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	json_int_t pid = json_integer_value(json_object_get(req, "pid"));
	struct wdev *d = name != NULL ? find_by_name(name) : NULL;
	char err[400];
	json_t *r;

	if (d == NULL)
		return error_reply(id, VHOSTD_RPC_NOT_FOUND, "no device '%s'", name ? name : "");
	/* The supervisor checks it too: cast to a pid_t, a larger one names another process. */
	if (pid <= 0 || pid > INT_MAX)
		return error_reply(id, VHOSTD_RPC_INVALID_PARAMS, "'pid' must be a process id "
				   "(1 to %d), not %lld", INT_MAX, (long long)pid);
	r = vhostd_worker_prepare(d->devname, (int)pid, err, sizeof(err));
	if (r == NULL) {
		DLOG(d, "not prepared for pid %lld: %s", (long long)pid, err);
		return error_reply(id, VHOSTD_RPC_INVALID_PARAMS, "%s", err);
	}
	/* The operator's word stands: no automatic preparation of this connection after it. */
	vhostd_autoprep_manual(&d->autoprep);
	DLOG(d, "preparing %lld bytes of pid %lld's guest memory",
	     (long long)json_integer_value(json_object_get(r, "bytes")), (long long)pid);
	json_object_set_new(r, "name", json_string(d->name));
	return json_pack("{s:O, s:o}", "id", id, "result", r);
}

/* get and stats: what the main thread knows of one device. */
static json_t *
op_describe(json_t *id, json_t *req, bool stats)
{
	const char *name = json_string_value(json_object_get(req, "name"));
	struct wdev *d = name != NULL ? find_by_name(name) : NULL;

	if (d == NULL)
		return error_reply(id, VHOSTD_RPC_NOT_FOUND, "no device '%s'", name ? name : "");
	return json_pack("{s:O, s:o}", "id", id, "result",
			 stats ? vhostd_worker_dev_stats(d->name, d->vdpa) : dev_info(d));
}

static void
teardown(void)
{
	unsigned int i;

	for (i = 0; i < MAX_DEVS; i++)
		if (devs[i].used)
			dev_destroy(&devs[i]);
}

static void
send_msg(json_t *m)
{
	if (m == NULL)
		return;
	/* The supervisor gone: the reads of the main loop see it and end the worker. */
	if (vhostd_chan_send_blocking(chan_fd, m) < 0 && errno != EPIPE)
		WLOG("cannot write to the supervisor: %s", strerror(errno));
	json_decref(m);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One turn of the device's automatic preparation (vhostd_autoprep.c). */
static void
autoprep_turn(struct wdev *d)
{
	struct vhostd_autoprep_view v = { .devname = d->devname, .now_ms = now_ms() };
	struct rte_pmd_mlx5_lm_state st;
	uint64_t at_connect;
	const char *said;

	pthread_mutex_lock(&wlock);
	v.connected = d->connected;
	v.connection = d->connections;
	v.pid = d->peer_pid;
	at_connect = d->conf_at_connect;
	pthread_mutex_unlock(&wlock);
	v.started = rte_pmd_mlx5_lm_get_state(d->devname, &st) == 0 &&
		    (st.conf_count > at_connect || st.state == RTE_PMD_MLX5_LM_STATE_RUNNING);
	said = vhostd_autoprep_poll(&d->autoprep, &v);
	if (said != NULL)
		DLOG(d, "automatic preparation: %s", said);
}

/*
 * Tell the supervisor of every state change, once; log it with its reason.
 * And give each device's automatic preparation its turn.
 */
static void
monitor(void)
{
	char state[16], reason[160];
	unsigned int i;

	for (i = 0; i < MAX_DEVS; i++) {
		struct wdev *d = &devs[i];

		if (!d->used)
			continue;
		autoprep_turn(d);
		dev_state(d, state, sizeof(state), reason, sizeof(reason));
		if (strcmp(state, d->state) == 0 && strcmp(reason, d->reason) == 0)
			continue;
		snprintf(d->state, sizeof(d->state), "%s", state);
		snprintf(d->reason, sizeof(d->reason), "%s", reason);
		DLOG(d, "%s%s%s", state, reason[0] ? ": " : "", reason);
		send_msg(json_pack("{s:s, s:s, s:s, s:s}", "event", "state", "name", d->name,
				   "state", state, "reason", reason));
	}
}

static void
send_metrics(void)
{
	json_t *list = json_array();
	unsigned int i;

	for (i = 0; i < MAX_DEVS; i++) {
		json_t *info;

		if (!devs[i].used)
			continue;
		info = dev_info(&devs[i]);
		json_object_set_new(info, "stats",
				    vhostd_worker_dev_stats(devs[i].name, devs[i].vdpa));
		json_array_append_new(list, info);
	}
	send_msg(json_pack("{s:s, s:o}", "event", "metrics", "devices", list));
}

/* One request; returns false after "exit". */
static bool
handle(json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	json_t *id = json_object_get(req, "id");

	if (op == NULL || id == NULL) {
		WLOG("malformed request from the supervisor: ignored");
		return true;
	}
	if (strcmp(op, "add") == 0)
		send_msg(op_add(id, req));
	else if (strcmp(op, "remove") == 0)
		send_msg(op_remove(id, req));
	else if (strcmp(op, "prepare") == 0)
		send_msg(op_prepare(id, req));
	else if (strcmp(op, "get") == 0 || strcmp(op, "stats") == 0)
		send_msg(op_describe(id, req, strcmp(op, "stats") == 0));
	else if (strcmp(op, "exit") == 0)
		return false;
	else
		send_msg(error_reply(id, VHOSTD_RPC_INTERNAL_ERROR, "unknown op '%s'", op));
	monitor();
	return true;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: mlx5-lm-vhostd-worker --vm NAME --channel FD [--metrics-ms MS]\n"
		"                             [--msg-timeout MS] [--eal \"ARGS\"]\n"
		"       mlx5-lm-vhostd-worker --check-eal [--eal \"ARGS\"]\n\n"
		"The process of one VM of mlx5-lm-vhostd, started by it (not by hand): its\n"
		"devices, their vhost-user sockets, its EAL and vhost thread.\n\n"
		"  --vm NAME        the VM (log lines name it)\n"
		"  --channel FD     the supervisor's channel (a connected unix socket)\n"
		"  --metrics-ms MS  push every device's counters each MS (0: never)\n"
		"  --msg-timeout MS close a front end whose message payload does not arrive\n"
		"                   within MS (default 3000)\n"
		"  --eal ARGS       extra EAL arguments\n"
		"  --check-eal      start EAL with them and stop: exit 0, or 1 with EAL's\n"
		"                   reason on stdout (the service checks its --eal so)\n"
		"  -h, --help       this text\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vm", required_argument, NULL, 'v' },
		{ "channel", required_argument, NULL, 'c' },
		{ "metrics-ms", required_argument, NULL, 'm' },
		{ "msg-timeout", required_argument, NULL, 't' },
		{ "eal", required_argument, NULL, 'e' },
		{ "check-eal", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vhostd_buf in = { 0 };
	char eal_args[1200], prefix[64], why[LOG_LINE_MAX];
	bool check_eal = false;
	const char *eal = NULL;
	unsigned int metrics_ms = 0;
	int64_t next_metrics = 0;
	unsigned long leaked;
	bool running = true;
	sigset_t sigs;
	int c, sfd;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			vm_name = optarg;
			break;
		case 'c':
			chan_fd = atoi(optarg);
			break;
		case 'm':
			metrics_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			msg_timeout_ms = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'e':
			eal = optarg;
			break;
		case 'C':
			check_eal = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((chan_fd < 0 && !check_eal) || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* The supervisor gone, so is its VM's worker (also when it was SIGKILLed). */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	/* Blocked before EAL starts its threads: they inherit the mask, we take the signals. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (getppid() == 1) {
		WLOG("the supervisor is gone: not starting");
		return 1;
	}
	log_open();
	snprintf(prefix, sizeof(prefix), "vhostd-%s-%d", vm_name, (int)getpid());
	lm_app_eal_set_prefix(prefix);
	snprintf(eal_args, sizeof(eal_args), "--log-level=lib.vhost.*:warning%s%s",
		 eal != NULL ? " " : "", eal != NULL ? eal : "");
	if (eal_init_explained(eal_args, !check_eal, why, sizeof(why)) < 0) {
		/* The reason to the supervisor, for the device_add that waits for this worker. */
		if (check_eal)
			printf("%s\n", why);
		else
			send_msg(json_pack("{s:s, s:s}", "event", "failed", "reason", why));
		return 1;
	}
	if (check_eal) {
		lm_app_eal_cleanup();
		return 0;
	}
	send_msg(json_pack("{s:s, s:i}", "event", "ready", "pid", (int)getpid()));
	while (running) {
		struct pollfd p[2] = { { .fd = chan_fd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		json_t *m;
		ssize_t r;
		int n;

		poll(p, 2, MONITOR_MS);
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				WLOG("%s: tearing down", strsignal((int)si.ssi_signo));
			break;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = vhostd_buf_read(chan_fd, &in, VHOSTD_CHAN_MAX_LINE);
			if (r == 0 || (r < 0 && r != -EAGAIN)) {
				WLOG("the supervisor closed the channel: tearing down");
				break;
			}
			while (running && (n = vhostd_chan_next(&in, &m)) != 0) {
				if (n < 0) {
					WLOG("malformed line from the supervisor: ignored");
					continue;
				}
				running = handle(m);
				json_decref(m);
			}
		}
		monitor();
		if (metrics_ms > 0 && now_ms() >= next_metrics) {
			send_metrics();
			next_metrics = now_ms() + metrics_ms;
		}
	}
	teardown();
	leaked = rte_pmd_mlx5_lm_emu_leaked_objects();
	if (leaked > 0)
		WLOG("teardown: %lu device objects were left alive", leaked);
	else
		WLOG("teardown: clean, every device object destroyed");
	send_msg(json_pack("{s:s, s:I}", "event", "exit", "leaked", (json_int_t)leaked));
	vhostd_buf_free(&in);
	lm_app_eal_cleanup();
	return leaked > 0 ? 3 : 0;
}
