/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Metrics in the Prometheus text format (version 0.0.4) at /metrics,
 * served by libmicrohttpd on a unix socket or a loopback TCP port. MHD
 * runs inside the supervisor's epoll loop (MHD_USE_EPOLL, its epoll fd
 * watched there): no thread, no lock, the page is rendered from the
 * state the loop owns. Each worker pushes its devices' counters every
 * second; the page shows the last push. Every label value is escaped
 * (vhostd_prom.c): what a worker pushes must not make one sample two.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <microhttpd.h>

#include "lm_app.h"
#include "vhostd.h"
#include "vhostd_prom.h"

static struct MHD_Daemon *mhd;
static struct vhostd_watch mhd_watch = { .fd = -1 };
static int listen_fd = -1;
static char unix_path[VHOSTD_SOCKET_MAX];

/* One family of per-device gauges or counters: every device's sample, in one group. */
struct family {
	const char *name;
	const char *type;
	const char *help;
	const char *obj;     /* member of the worker's device object, or NULL: top level */
	const char *key;
	const char *part;    /* label part="..." or NULL */
};

static const struct family families[] = {
	{ "device_last_start_milliseconds", "gauge",
	  "the last start (DRIVER_OK) of the device and its parts", "last_start", "total_ms",
	  "total" },
	{ "device_last_start_milliseconds", NULL, NULL, "last_start", "memory_ms", "memory" },
	{ "device_last_start_milliseconds", NULL, NULL, "last_start", "queues_ms", "queues" },
	{ "device_last_stop_milliseconds", "gauge",
	  "the last stop (GET_VRING_BASE) of the device, until vhost may reply", "last_stop",
	  "total_ms", NULL },
	{ "device_configurations_total", "counter",
	  "successful configurations (guest memory registrations) since the probe", NULL,
	  "configurations", NULL },
	{ "device_configuration_failures_total", "counter", "failed configurations", NULL,
	  "configuration_failures", NULL },
	{ "device_memory_registered_bytes", "gauge",
	  "guest memory of the front end's last start", "memory", "bytes", NULL },
	{ "device_frontend_connections_total", "counter", "front-end connections", "frontend",
	  "connections", NULL },
};

static void
family_samples(FILE *f, const struct family *fam)
{
	struct vhostd_vm *vm;
	json_t *d;
	size_t i;

	if (fam->type != NULL)
		fprintf(f, "# HELP mlx5_lm_vhostd_%s %s\n# TYPE mlx5_lm_vhostd_%s %s\n",
			fam->name, fam->help, fam->name, fam->type);
	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		json_array_foreach(vm->metrics, i, d) {
			const char *dev = json_string_value(json_object_get(d, "name"));
			json_t *o = fam->obj != NULL ? json_object_get(d, fam->obj) : d;

			if (dev == NULL)
				continue;
			fprintf(f, "mlx5_lm_vhostd_%s{", fam->name);
			vhostd_prom_label(f, "", "vm", vm->name);
			vhostd_prom_label(f, ",", "device", dev);
			if (fam->part != NULL)
				vhostd_prom_label(f, ",", "part", fam->part);
			fprintf(f, "} %.3f\n", json_number_value(json_object_get(o, fam->key)));
		}
	}
}

/*
 * Queue counters under DPDK's names: *_descriptors into one family, the
 * errors into another, the name a label (spaces become '_').
 */
static void
queue_samples(FILE *f, bool descriptors)
{
	struct vhostd_vm *vm;
	json_t *d, *q, *v;
	const char *key;
	size_t i, j;

	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		json_array_foreach(vm->metrics, i, d) {
			const char *dev = json_string_value(json_object_get(d, "name"));
			json_t *queues = json_object_get(json_object_get(d, "stats"), "queues");

			json_array_foreach(queues, j, q) {
				const char *type = json_string_value(json_object_get(q, "type"));
				char queue[16];

				snprintf(queue, sizeof(queue), "%d",
					 (int)json_integer_value(json_object_get(q, "queue")));
				json_object_foreach(json_object_get(q, "counters"), key, v) {
					size_t n = strlen(key), k;
					bool desc = n > 12 &&
						    strcmp(key + n - 12, "_descriptors") == 0;
					char kind[64];

					if (desc != descriptors || dev == NULL)
						continue;
					snprintf(kind, sizeof(kind), "%.*s",
						 desc ? (int)(n - 12) : (int)n, key);
					for (k = 0; kind[k] != '\0'; k++)
						if (kind[k] == ' ')
							kind[k] = '_';
					fprintf(f, "mlx5_lm_vhostd_queue_%s_total{",
						desc ? "descriptors" : "errors");
					vhostd_prom_label(f, "", "vm", vm->name);
					vhostd_prom_label(f, ",", "device", dev);
					vhostd_prom_label(f, ",", "queue", queue);
					vhostd_prom_label(f, ",", "type", type);
					vhostd_prom_label(f, ",", "kind", kind);
					fprintf(f, "} %lld\n", (long long)json_integer_value(v));
				}
			}
		}
	}
}

static char *
render(size_t *len)
{
	int64_t now = vhostd_now_ms();
	struct vhostd_dev *d;
	struct vhostd_vm *vm;
	char *text = NULL;
	size_t i;
	FILE *f = open_memstream(&text, len);

	if (f == NULL)
		return NULL;
	fprintf(f, "# HELP mlx5_lm_vhostd_worker_up 1 while the VM's worker runs\n"
		"# TYPE mlx5_lm_vhostd_worker_up gauge\n");
	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		fputs("mlx5_lm_vhostd_worker_up{", f);
		vhostd_prom_label(f, "", "vm", vm->name);
		fprintf(f, "} %d\n", vm->pid > 0 && vm->ready);
	}
	fprintf(f, "# HELP mlx5_lm_vhostd_worker_restarts_total restarts of the VM's worker\n"
		"# TYPE mlx5_lm_vhostd_worker_restarts_total counter\n");
	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		fputs("mlx5_lm_vhostd_worker_restarts_total{", f);
		vhostd_prom_label(f, "", "vm", vm->name);
		fprintf(f, "} %u\n", vm->restarts);
	}
	fprintf(f, "# HELP mlx5_lm_vhostd_worker_uptime_seconds since the worker started\n"
		"# TYPE mlx5_lm_vhostd_worker_uptime_seconds gauge\n");
	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		fputs("mlx5_lm_vhostd_worker_uptime_seconds{", f);
		vhostd_prom_label(f, "", "vm", vm->name);
		fprintf(f, "} %.3f\n", vm->pid > 0 ? (now - vm->started_ms) / 1000.0 : 0.0);
	}
	fprintf(f, "# HELP mlx5_lm_vhostd_device_state 1 for the device's state\n"
		"# TYPE mlx5_lm_vhostd_device_state gauge\n");
	TAILQ_FOREACH(d, &vhostd.devs, next) {
		fputs("mlx5_lm_vhostd_device_state{", f);
		vhostd_prom_label(f, "", "vm", d->cfg.vm);
		vhostd_prom_label(f, ",", "device", d->cfg.name);
		vhostd_prom_label(f, ",", "state", d->state);
		fputs("} 1\n", f);
	}
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		family_samples(f, &families[i]);
	fprintf(f, "# HELP mlx5_lm_vhostd_queue_descriptors_total descriptors by queue (DPDK "
		"vdpa counter names)\n# TYPE mlx5_lm_vhostd_queue_descriptors_total counter\n");
	queue_samples(f, true);
	fprintf(f, "# HELP mlx5_lm_vhostd_queue_errors_total errors by queue (DPDK vdpa "
		"counter names)\n# TYPE mlx5_lm_vhostd_queue_errors_total counter\n");
	queue_samples(f, false);
	fclose(f);
	return text;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	char *text;

	if (strcmp(method, "GET") != 0 || strcmp(url, "/metrics") != 0) {
		static const char nf[] = "not found: GET /metrics\n";

		r = MHD_create_response_from_buffer(sizeof(nf) - 1, (void *)nf,
						    MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, r);
		MHD_destroy_response(r);
		return ret;
	}
	text = render(&len);
	if (text == NULL)
		return MHD_NO;
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void
mhd_event(struct vhostd_watch *w, uint32_t events)
{
	MHD_run(mhd);
}

/*
 * addr as --metrics takes it: a unix socket path, or a loopback address and
 * port (127.x.y.z:PORT, or localhost:PORT for 127.0.0.1), since the page has
 * no authentication. 0 and *sin filled for a TCP address (sin_family 0 for
 * a path), or -1 and why in msg: the command line's check, before any work,
 * and the listener's.
 */
int
vhostd_metrics_parse(const char *addr, struct sockaddr_in *sin, char *msg, size_t len)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end = NULL;
	unsigned long port;

	memset(sin, 0, sizeof(*sin));
	if (addr[0] == '/')
		return 0;
	errno = 0;
	port = colon != NULL && colon[1] != '\0' ? strtoul(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == addr || end == NULL || *end != '\0' || errno != 0 ||
	    port == 0 || port > 65535 || (size_t)(colon - addr) >= sizeof(host)) {
		snprintf(msg, len, "--metrics %s: an absolute unix socket path, or "
			 "127.0.0.1:PORT (PORT 1-65535)", addr);
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1 ||
	    (ntohl(sin->sin_addr.s_addr) >> 24) != 127) {
		snprintf(msg, len, "--metrics %s: a loopback address only (127.0.0.1 or "
			 "localhost): the page has no authentication", addr);
		return -1;
	}
	sin->sin_port = htons((uint16_t)port);
	return 0;
}

/* A unix path, or a loopback address: the page has no authentication, so never further. */
static int
open_listener(const char *addr)
{
	struct sockaddr_in sin;
	char msg[512];
	int fd;

	if (vhostd_metrics_parse(addr, &sin, msg, sizeof(msg)) < 0) {
		SLOG("%s", msg);
		return -1;
	}
	if (sin.sin_family == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int r = lm_app_sock_check(addr, msg, sizeof(msg));

		if (r < 0) {
			SLOG("--metrics: %s", msg);
			return -1;
		}
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", addr);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			SLOG("--metrics %s: %s", addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		snprintf(unix_path, sizeof(unix_path), "%s", addr);
	} else {
		int one = 1;

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
			SLOG("--metrics %s: %s", addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
	}
	if (listen(fd, 64) < 0) {
		SLOG("--metrics %s: %s", addr, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int
vhostd_metrics_start(const char *addr)
{
	const union MHD_DaemonInfo *info;

	listen_fd = open_listener(addr);
	if (listen_fd < 0)
		return -1;
	mhd = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, handler, NULL,
			       MHD_OPTION_LISTEN_SOCKET, listen_fd,
			       MHD_OPTION_CONNECTION_LIMIT, (unsigned int)32,
			       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
			       MHD_OPTION_END);
	if (mhd == NULL) {
		SLOG("--metrics %s: cannot start the HTTP server", addr);
		goto err;
	}
	info = MHD_get_daemon_info(mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL)
		goto err_stop;
	mhd_watch.fd = info->epoll_fd;
	mhd_watch.fn = mhd_event;
	if (vhostd_watch_add(&mhd_watch, EPOLLIN) < 0)
		goto err_stop;
	SLOG("metrics at http://%s/metrics", addr);
	return 0;
err_stop:
	MHD_stop_daemon(mhd);
	mhd = NULL;
err:
	close(listen_fd);
	listen_fd = -1;
	if (unix_path[0] != '\0')
		unlink(unix_path);
	return -1;
}

void
vhostd_metrics_stop(void)
{
	if (mhd == NULL)
		return;
	vhostd_watch_del(&mhd_watch);
	MHD_stop_daemon(mhd);
	mhd = NULL;
	close(listen_fd);
	listen_fd = -1;
	if (unix_path[0] != '\0')
		unlink(unix_path);
}

/* MHD's own timeouts (idle connections): when the loop must run it next. */
int64_t
vhostd_metrics_timers(void)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (mhd == NULL)
		return -1;
	MHD_run(mhd);
	if (MHD_get_timeout(mhd, &ms) != MHD_YES)
		return -1;
	return vhostd_now_ms() + (int64_t)ms;
}
