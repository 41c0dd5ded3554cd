/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's configuration: the devices, each as the parameters of
 * the device_add that created it. The file is what config_save writes and
 * --config replays: {"service": "mlx5-lm-vhostd", "version": 1,
 * "config": [{"method": "device_add", "params": {...}}, ...]}.
 */
#ifndef VHOSTD_CONFIG_H
#define VHOSTD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define VHOSTD_NAME_MAX 32       /* device and VM names, without the NUL */
#define VHOSTD_SOCKET_MAX 108    /* sun_path, with the NUL */
#define VHOSTD_DEVARGS_MAX 1024
#define VHOSTD_GROUP_MAX 64      /* a socket's group name, without the NUL */

struct vhostd_devcfg {
	char name[VHOSTD_NAME_MAX + 1];
	char vm[VHOSTD_NAME_MAX + 1];
	char socket[VHOSTD_SOCKET_MAX];
	bool client;
	char devargs[VHOSTD_DEVARGS_MAX];
	/* Prepare a destination front end's guest memory unasked (default true). */
	bool auto_prepare;
	/*
	 * Who may connect to a socket the service creates (not a client's):
	 * its group ("" the service's) and mode (unset: 0660 with a group,
	 * else as created).
	 */
	char socket_group[VHOSTD_GROUP_MAX + 1];
	bool socket_mode_set;
	unsigned int socket_mode;
};

struct vhostd_config {
	struct vhostd_devcfg *dev;
	size_t n;
};

/*
 * device_add's params (already type-checked) into d: names of 1-32 of
 * [A-Za-z0-9_.-], an absolute socket path that fits a unix socket, devargs
 * of printable characters naming exactly one of emu=, ibdev=, pci=, sf=;
 * auto_prepare true unless given false; socket_group a group that exists,
 * socket_mode octal permission bits ("0660"), both for a server's socket
 * only. -1 with msg naming the field.
 */
int vhostd_devcfg_from_json(json_t *params, struct vhostd_devcfg *d, char *msg, size_t len);
/*
 * d's socket_group names a group of this host now: 0, or -1 and why in msg.
 * device_add's check (the parser leaves it out: a saved configuration with a
 * group gone must fail that device alone, at its worker).
 */
int vhostd_devcfg_check_group(const struct vhostd_devcfg *d, char *msg, size_t len);
json_t *vhostd_devcfg_to_json(const struct vhostd_devcfg *d);
bool vhostd_devcfg_equal(const struct vhostd_devcfg *a, const struct vhostd_devcfg *b);

/*
 * Whether d's socket may be in its directory (vhostd_sockdir.h): -1 with
 * msg for a directory others may change; 0 otherwise (a client's socket is
 * not the service's file; a missing directory is the worker's to report).
 */
int vhostd_devcfg_check_dir(const struct vhostd_devcfg *d, char *msg, size_t len);

void vhostd_config_init(struct vhostd_config *c);
void vhostd_config_free(struct vhostd_config *c);
int vhostd_config_append(struct vhostd_config *c, const struct vhostd_devcfg *d);
/* Index of the device named name, or -1. */
int vhostd_config_find(const struct vhostd_config *c, const char *name);
/*
 * Whether d may join c: -1 with msg when its name or its socket is
 * already used ("exists"), 0 otherwise.
 */
int vhostd_config_check_new(const struct vhostd_config *c, const struct vhostd_devcfg *d,
			    char *msg, size_t len);

/* Parse the file's text into c (empty on error): -1 with msg naming the entry. */
int vhostd_config_parse(const char *text, size_t textlen, struct vhostd_config *c, char *msg,
			size_t len);
/* The file parsed, and its server sockets' directories checked (vhostd_devcfg_check_dir). */
int vhostd_config_load(const char *path, struct vhostd_config *c, char *msg, size_t len);
json_t *vhostd_config_to_json(const struct vhostd_config *c);
/* Write c to path atomically (a temporary file renamed over it), mode 0600. */
int vhostd_config_save(const char *path, const struct vhostd_config *c, char *msg, size_t len);

/*
 * What SIGHUP applies to go from cur to next: remove[] gets the indexes in
 * cur of devices gone or changed, add[] the indexes in next of devices new
 * or changed (a changed device is removed, then added). Arrays sized by
 * the callers (cur->n and next->n).
 */
void vhostd_config_diff(const struct vhostd_config *cur, const struct vhostd_config *next,
			size_t *remove, size_t *nremove, size_t *add, size_t *nadd);

#endif /* VHOSTD_CONFIG_H */
