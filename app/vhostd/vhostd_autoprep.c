/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The destination's guest memory prepared without being asked.
 *
 * A migration's destination QEMU is started with -incoming (libvirt:
 * "-incoming defer") and shares its RAM from its start, long before it
 * sends SET_MEM_TABLE after the migration's last pass. Its connection
 * alone comes too early: QEMU creates its memory backends after its
 * netdevs ("late" objects, so that allocating much memory does not delay
 * the chardevs), so at the vhost-user connection and its first messages
 * /proc/PID/maps holds no guest memory yet. So the worker, for a
 * connection whose peer (SO_PEERCRED) was started with -incoming, looks
 * at the peer's maps every POLL_MS until its shared guest-memory
 * mappings have held still for STABLE_LOOKS looks, then prepares the
 * device with them (vhostd_worker_prepare, as device_prepare would). It
 * keeps looking until the front end starts the device or WATCH_MS
 * passes, and prepares again if the memory changes (a DIMM backend
 * created later), at most MAX_PREPARATIONS times per connection.
 *
 * Safety is the PMD's, as for device_prepare: the preparation serves only
 * that process's connection, matched by file identity and range,
 * re-checked at the start, released when unused. Reading another
 * process's maps and fds needs the right to trace it: without it the
 * state says so and nothing else happens.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_app.h"
#include "rte_pmd_mlx5_lm.h"
#include "vhostd_autoprep.h"
#include "vhostd_devinfo.h"

#define POLL_MS 100
#define STABLE_LOOKS 3
#define WATCH_MS 120000
#define MAX_PREPARATIONS 4
/* As device_prepare's: QEMU's RAM blocks, not its small shared files. */
#define MIN_BYTES (2u << 20)
#define MAX_FILES 16
/* A command line longer than this is not read to its end. */
#define CMDLINE_MAX (1u << 20)

static const char *const state_names[] = {
	[VHOSTD_AUTOPREP_OFF] = "off",
	[VHOSTD_AUTOPREP_IDLE] = "idle",
	[VHOSTD_AUTOPREP_NOT_DESTINATION] = "not a destination",
	[VHOSTD_AUTOPREP_WATCHING] = "watching",
	[VHOSTD_AUTOPREP_PREPARED] = "prepared",
	[VHOSTD_AUTOPREP_MANUAL] = "manual",
	[VHOSTD_AUTOPREP_STARTED] = "started first",
	[VHOSTD_AUTOPREP_GAVE_UP] = "gave up",
	[VHOSTD_AUTOPREP_FAILED] = "failed",
};

/*
 * 1 when process pid was started with -incoming (QEMU takes --incoming
 * too), 0 when not, -errno when its command line cannot be read.
 */
static int
is_destination(int pid)
{
	char path[64], *buf;
	size_t len = 0;
	ssize_t r;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(CMDLINE_MAX + 1);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (len < CMDLINE_MAX && (r = read(fd, buf + len, CMDLINE_MAX - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(fd);
	/* Arguments end with a NUL each: the last one too. */
	for (size_t at = 0; at < len && ret == 0; at += strlen(buf + at) + 1)
		ret = strcmp(buf + at, "-incoming") == 0 || strcmp(buf + at, "--incoming") == 0;
	free(buf);
	return ret;
}

/* The layout of the mappings as one number (FNV-1a): 0 when there is none. */
static uint64_t
layout_hash(const struct lm_app_fe_region *r, int n)
{
	uint64_t h = 14695981039346656037ULL;
	int i;

	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		const uint64_t v[4] = { r[i].dev, r[i].ino, r[i].offset, r[i].size };
		const uint8_t *b = (const uint8_t *)v;
		size_t k;

		for (k = 0; k < sizeof(v); k++)
			h = (h ^ b[k]) * 1099511628211ULL;
	}
	return h != 0 ? h : 1;
}

void
vhostd_autoprep_init(struct vhostd_autoprep *a, bool enabled)
{
	memset(a, 0, sizeof(*a));
	a->enabled = enabled;
	a->state = enabled ? VHOSTD_AUTOPREP_IDLE : VHOSTD_AUTOPREP_OFF;
}

static const char *
say(struct vhostd_autoprep *a, enum vhostd_autoprep_state state, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static const char *
say(struct vhostd_autoprep *a, enum vhostd_autoprep_state state, const char *fmt, ...)
{
	va_list ap;

	a->state = state;
	va_start(ap, fmt);
	vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
	va_end(ap);
	return a->reason;
}

/* A new connection: is its process a destination? */
static const char *
on_connection(struct vhostd_autoprep *a, const struct vhostd_autoprep_view *v)
{
	int r;

	a->connection = v->connection;
	a->pid = v->pid;
	a->layout = a->prepared = a->bytes = 0;
	a->seen = a->preparations = 0;
	if (v->pid <= 0)
		return say(a, VHOSTD_AUTOPREP_FAILED, "the front end's process is unknown");
	r = is_destination(v->pid);
	if (r < 0)
		return say(a, VHOSTD_AUTOPREP_FAILED, "cannot read pid %d's command line: %s",
			   v->pid, strerror(-r));
	if (r == 0) {
		/* Nothing to log: every VM's boot is such a connection. */
		say(a, VHOSTD_AUTOPREP_NOT_DESTINATION, "pid %d was not started with -incoming",
		    v->pid);
		return NULL;
	}
	if (v->started)
		return say(a, VHOSTD_AUTOPREP_STARTED, "pid %d started the device before it "
			   "was looked at", v->pid);
	a->deadline_ms = v->now_ms + WATCH_MS;
	a->next_ms = v->now_ms;
	return say(a, VHOSTD_AUTOPREP_WATCHING, "pid %d is a migration's destination "
		   "(-incoming): watching for its guest memory", v->pid);
}

/* The layout held still: give it to the device. */
static const char *
prepare(struct vhostd_autoprep *a, const struct vhostd_autoprep_view *v, uint64_t layout)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	bool again = a->preparations > 0;
	char err[400];
	json_t *r;

	/* An operator's device_prepare for this process came first: it stands. */
	if (!again && rte_pmd_mlx5_lm_prepare_status(v->devname, &st) == 0 && st.pid == a->pid &&
	    (st.state == RTE_PMD_MLX5_LM_PREP_PREPARING || st.state == RTE_PMD_MLX5_LM_PREP_READY)) {
		a->next_ms = INT64_MAX;
		return say(a, VHOSTD_AUTOPREP_MANUAL, "pid %d's memory was prepared by "
			   "device_prepare", a->pid);
	}
	r = vhostd_worker_prepare(v->devname, a->pid, err, sizeof(err));
	if (r == NULL)
		return say(a, VHOSTD_AUTOPREP_FAILED, "not prepared for pid %d: %s", a->pid, err);
	a->prepared = layout;
	a->preparations++;
	a->bytes = (uint64_t)json_integer_value(json_object_get(r, "bytes"));
	json_decref(r);
	return say(a, VHOSTD_AUTOPREP_PREPARED, "%s %" PRIu64 " MiB of pid %d's guest memory",
		   again ? "its guest memory changed: preparing again" : "preparing",
		   a->bytes >> 20, a->pid);
}

const char *
vhostd_autoprep_poll(struct vhostd_autoprep *a, const struct vhostd_autoprep_view *v)
{
	struct lm_app_fe_region fr[MAX_FILES];
	bool watching;
	uint64_t h;
	char err[320];
	int n;

	if (!a->enabled)
		return NULL;
	if (v->connected && v->connection != a->connection)
		return on_connection(a, v);
	watching = a->state == VHOSTD_AUTOPREP_WATCHING ||
		   (a->state == VHOSTD_AUTOPREP_PREPARED && a->next_ms != INT64_MAX);
	if (!watching)
		return NULL;
	/* Gone, started or out of time: the watch ends; the PMD has the rest. */
	if (!v->connected) {
		a->next_ms = INT64_MAX;
		if (a->state == VHOSTD_AUTOPREP_WATCHING)
			return say(a, VHOSTD_AUTOPREP_IDLE, "pid %d left before its guest memory "
				   "was found", a->pid);
		return NULL;
	}
	if (v->started) {
		a->next_ms = INT64_MAX;
		if (a->state == VHOSTD_AUTOPREP_WATCHING)
			return say(a, VHOSTD_AUTOPREP_STARTED, "pid %d started the device before "
				   "its guest memory held still", a->pid);
		return NULL;
	}
	if (v->now_ms > a->deadline_ms) {
		a->next_ms = INT64_MAX;
		if (a->state == VHOSTD_AUTOPREP_WATCHING)
			return say(a, VHOSTD_AUTOPREP_GAVE_UP, "no shared guest memory in pid %d "
				   "within %d s", a->pid, WATCH_MS / 1000);
		return NULL;
	}
	if (v->now_ms < a->next_ms)
		return NULL;
	a->next_ms = v->now_ms + POLL_MS;
	n = lm_app_fe_mem_layout(a->pid, MIN_BYTES, fr, MAX_FILES, err, sizeof(err));
	if (n < 0)
		return say(a, VHOSTD_AUTOPREP_FAILED, "cannot read pid %d's memory (the worker "
			   "must be allowed to trace it): %s", a->pid, err);
	h = layout_hash(fr, n);
	if (h == 0 || h != a->layout) {
		a->layout = h;
		a->seen = h != 0;
		return NULL;
	}
	if (++a->seen < STABLE_LOOKS || h == a->prepared ||
	    a->preparations >= MAX_PREPARATIONS)
		return NULL;
	return prepare(a, v, h);
}

void
vhostd_autoprep_manual(struct vhostd_autoprep *a)
{
	if (!a->enabled)
		return;
	a->next_ms = INT64_MAX;
	say(a, VHOSTD_AUTOPREP_MANUAL, "device_prepare was called for this connection");
}

json_t *
vhostd_autoprep_json(const struct vhostd_autoprep *a)
{
	json_t *j = json_pack("{s:b, s:s, s:i, s:I, s:I}", "enabled", a->enabled,
			      "state", state_names[a->state], "pid", a->pid,
			      "preparations", (json_int_t)a->preparations,
			      "bytes", (json_int_t)a->bytes);

	if (j != NULL && a->reason[0] != '\0' && a->state != VHOSTD_AUTOPREP_PREPARED)
		json_object_set_new(j, "reason", json_string(a->reason));
	return j;
}
