/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's automatic preparation of one device (vhostd_autoprep.c): when
 * the process connected to the device is a migration's destination QEMU
 * (started with -incoming), watch its memory appear and prepare the device
 * with it, as device_prepare NAME --pid PID would, without being asked.
 * Main thread of the worker only.
 */
#ifndef VHOSTD_AUTOPREP_H
#define VHOSTD_AUTOPREP_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

enum vhostd_autoprep_state {
	VHOSTD_AUTOPREP_OFF,             /* device_add's auto_prepare false */
	VHOSTD_AUTOPREP_IDLE,            /* no front end yet */
	VHOSTD_AUTOPREP_NOT_DESTINATION, /* its process was not started with -incoming */
	VHOSTD_AUTOPREP_WATCHING,        /* waiting for its guest memory to appear */
	VHOSTD_AUTOPREP_PREPARED,        /* the device was given it (and still watches) */
	VHOSTD_AUTOPREP_MANUAL,          /* device_prepare took over for this connection */
	VHOSTD_AUTOPREP_STARTED,         /* the front end started the device first */
	VHOSTD_AUTOPREP_GAVE_UP,         /* no guest memory within the watch */
	VHOSTD_AUTOPREP_FAILED,          /* not allowed, or the device refused */
};

struct vhostd_autoprep {
	enum vhostd_autoprep_state state;
	bool enabled;
	uint64_t connection;     /* the front-end connection handled (the device's count) */
	int pid;
	int64_t deadline_ms;     /* end of the watch */
	int64_t next_ms;         /* next look at the process's maps */
	uint64_t layout;         /* the guest memory last seen (a hash; 0: none) */
	unsigned int seen;       /* looks in a row that saw that layout */
	uint64_t prepared;       /* the layout the device was last given */
	unsigned int preparations;
	uint64_t bytes;
	char reason[240];
};

/* What the worker knows of the device at one turn of its loop. */
struct vhostd_autoprep_view {
	const char *devname;     /* the PMD's device */
	bool connected;
	uint64_t connection;     /* front-end connections so far */
	int pid;                 /* the front end's (SO_PEERCRED), 0 when unknown */
	bool started;            /* the front end started the device since it connected */
	int64_t now_ms;          /* CLOCK_MONOTONIC */
};

void vhostd_autoprep_init(struct vhostd_autoprep *a, bool enabled);
/*
 * One turn: follow the connection, look at the process's memory when it is
 * time, prepare the device once that memory holds still. Returns a line
 * for the device's log when something happened, else NULL.
 */
const char *vhostd_autoprep_poll(struct vhostd_autoprep *a, const struct vhostd_autoprep_view *v);
/* An operator's device_prepare: no automatic one for this connection any more. */
void vhostd_autoprep_manual(struct vhostd_autoprep *a);
/* device_get's "auto_prepare": {"enabled", "state", "pid", "preparations", "bytes", "reason"}. */
json_t *vhostd_autoprep_json(const struct vhostd_autoprep *a);

#endif /* VHOSTD_AUTOPREP_H */
