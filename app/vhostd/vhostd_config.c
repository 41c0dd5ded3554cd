/* SPDX-License-Identifier: BSD-3-Clause */
/* mlx5-lm-vhostd's configuration (see vhostd_config.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lm_app.h"
#include "vhostd_config.h"
#include "vhostd_rpc.h"
#include "vhostd_sockdir.h"

static bool
name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > VHOSTD_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

/* How many of the keys that name the function (devargs.md: exactly one) devargs has. */
static int
function_keys(const char *devargs)
{
	static const char *const keys[] = { "emu", "ibdev", "pci", "sf" };
	char copy[VHOSTD_DEVARGS_MAX], *tok, *save = NULL;
	int n = 0;
	size_t k;

	snprintf(copy, sizeof(copy), "%s", devargs);
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (eq != NULL)
			*eq = '\0';
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			if (strcmp(tok, keys[k]) == 0)
				n++;
	}
	return n;
}

static bool
ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);

	return n >= m && strcmp(s + n - m, end) == 0;
}

/* The socket's group and mode, of params into d (see vhostd_devcfg_from_json). */
static int
perm_from_json(json_t *params, struct vhostd_devcfg *d, char *msg, size_t len)
{
	const char *group = json_string_value(json_object_get(params, "socket_group"));
	const char *mode = json_string_value(json_object_get(params, "socket_mode"));

	if (group == NULL && mode == NULL)
		return 0;
	if (d->client) {
		snprintf(msg, len, "invalid params: 'socket_group' and 'socket_mode' are for a "
			 "socket the service creates, not a client's (the front end's socket)");
		return -1;
	}
	if (group != NULL) {
		if (group[0] == '\0' || strlen(group) > VHOSTD_GROUP_MAX) {
			snprintf(msg, len, "invalid params: 'socket_group' must be a group name of "
				 "1 to %d characters", VHOSTD_GROUP_MAX);
			return -1;
		}
		/*
		 * Whether the group exists is not this parser's to say: a saved
		 * configuration is read with it at every start and SIGHUP, where a
		 * group deleted since, or not resolvable yet at boot (LDAP, sssd),
		 * must fail its device alone (the worker looks it up when it makes
		 * the socket), not the whole file. device_add looks it up too, so
		 * that the operator reads the answer (vhostd_devcfg_check_group).
		 */
		snprintf(d->socket_group, sizeof(d->socket_group), "%s", group);
	}
	if (mode != NULL && lm_app_sock_parse_mode(mode, &d->socket_mode) < 0) {
		snprintf(msg, len, "invalid params: 'socket_mode' must be permission bits in "
			 "octal, 0000 to 0777 (e.g. \"0660\"), not '%.16s'", mode);
		return -1;
	}
	d->socket_mode_set = mode != NULL;
	return 0;
}

int
vhostd_devcfg_check_group(const struct vhostd_devcfg *d, char *msg, size_t len)
{
	if (d->socket_group[0] != '\0' && getgrnam(d->socket_group) == NULL) {
		snprintf(msg, len, "invalid params: 'socket_group': no group '%s'",
			 d->socket_group);
		return -1;
	}
	return 0;
}

int
vhostd_devcfg_from_json(json_t *params, struct vhostd_devcfg *d, char *msg, size_t len)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const char *vm = json_string_value(json_object_get(params, "vm"));
	const char *sock = json_string_value(json_object_get(params, "socket"));
	const char *devargs = json_string_value(json_object_get(params, "devargs"));
	json_t *client = json_object_get(params, "client");
	json_t *auto_prepare = json_object_get(params, "auto_prepare");
	size_t i;

	memset(d, 0, sizeof(*d));
	if (name == NULL || !name_ok(name)) {
		snprintf(msg, len, "invalid params: 'name' must be 1 to %d characters of "
			 "A-Z a-z 0-9 _ . -", VHOSTD_NAME_MAX);
		return -1;
	}
	if (vm == NULL || !name_ok(vm)) {
		snprintf(msg, len, "invalid params: 'vm' must be 1 to %d characters of "
			 "A-Z a-z 0-9 _ . -", VHOSTD_NAME_MAX);
		return -1;
	}
	if (sock == NULL || sock[0] != '/' || strlen(sock) >= VHOSTD_SOCKET_MAX) {
		snprintf(msg, len, "invalid params: 'socket' must be an absolute path of at most "
			 "%d bytes (a unix socket's limit)", VHOSTD_SOCKET_MAX - 1);
		return -1;
	}
	/* One spelling per path: two devices' sockets are told apart by it. */
	if (strstr(sock, "//") != NULL || strstr(sock, "/./") != NULL ||
	    strstr(sock, "/../") != NULL || ends_with(sock, "/") || ends_with(sock, "/.") ||
	    ends_with(sock, "/..")) {
		snprintf(msg, len, "invalid params: 'socket' must be a plain path: no '//', '.' "
			 "or '..' in it, no '/' at its end");
		return -1;
	}
	if (devargs == NULL || strlen(devargs) >= VHOSTD_DEVARGS_MAX) {
		snprintf(msg, len, "invalid params: 'devargs' must be a string of at most %d bytes",
			 VHOSTD_DEVARGS_MAX - 1);
		return -1;
	}
	for (i = 0; devargs[i] != '\0'; i++) {
		if (devargs[i] <= ' ' || devargs[i] > '~') {
			snprintf(msg, len, "invalid params: 'devargs' has a space or a control "
				 "character at byte %zu", i);
			return -1;
		}
	}
	if (function_keys(devargs) != 1) {
		snprintf(msg, len, "invalid params: 'devargs' must name the device with exactly "
			 "one of emu=, ibdev=, pci=, sf= (doc/devargs.md)");
		return -1;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->vm, sizeof(d->vm), "%s", vm);
	snprintf(d->socket, sizeof(d->socket), "%s", sock);
	snprintf(d->devargs, sizeof(d->devargs), "%s", devargs);
	d->client = client != NULL && json_is_true(client);
	d->auto_prepare = auto_prepare == NULL || json_is_true(auto_prepare);
	return perm_from_json(params, d, msg, len);
}

json_t *
vhostd_devcfg_to_json(const struct vhostd_devcfg *d)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:s, s:b}", "name", d->name, "vm", d->vm,
			      "socket", d->socket, "client", d->client, "devargs", d->devargs,
			      "auto_prepare", d->auto_prepare);
	char mode[8];

	/* Only when given: a configuration without them reads as it always did. */
	if (j != NULL && d->socket_group[0] != '\0')
		json_object_set_new(j, "socket_group", json_string(d->socket_group));
	if (j != NULL && d->socket_mode_set) {
		snprintf(mode, sizeof(mode), "%04o", d->socket_mode);
		json_object_set_new(j, "socket_mode", json_string(mode));
	}
	return j;
}

bool
vhostd_devcfg_equal(const struct vhostd_devcfg *a, const struct vhostd_devcfg *b)
{
	return strcmp(a->name, b->name) == 0 && strcmp(a->vm, b->vm) == 0 &&
	       strcmp(a->socket, b->socket) == 0 && a->client == b->client &&
	       strcmp(a->devargs, b->devargs) == 0 && a->auto_prepare == b->auto_prepare &&
	       strcmp(a->socket_group, b->socket_group) == 0 &&
	       a->socket_mode_set == b->socket_mode_set && a->socket_mode == b->socket_mode;
}

void
vhostd_config_init(struct vhostd_config *c)
{
	c->dev = NULL;
	c->n = 0;
}

void
vhostd_config_free(struct vhostd_config *c)
{
	free(c->dev);
	vhostd_config_init(c);
}

int
vhostd_config_append(struct vhostd_config *c, const struct vhostd_devcfg *d)
{
	struct vhostd_devcfg *n = realloc(c->dev, (c->n + 1) * sizeof(*n));

	if (n == NULL)
		return -ENOMEM;
	c->dev = n;
	c->dev[c->n++] = *d;
	return 0;
}

int
vhostd_config_find(const struct vhostd_config *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->dev[i].name, name) == 0)
			return (int)i;
	return -1;
}

/*
 * Whether two sockets' paths name one file: the same string, or the same
 * name in directories that resolve to one (a symlink to a directory).
 */
static bool
same_socket(const char *a, const char *b)
{
	const char *na = strrchr(a, '/'), *nb = strrchr(b, '/');
	char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];

	if (strcmp(a, b) == 0)
		return true;
	if (na == NULL || nb == NULL || strcmp(na, nb) != 0)
		return false;
	snprintf(da, sizeof(da), "%.*s", na == a ? 1 : (int)(na - a), a);
	snprintf(db, sizeof(db), "%.*s", nb == b ? 1 : (int)(nb - b), b);
	return realpath(da, ra) != NULL && realpath(db, rb) != NULL && strcmp(ra, rb) == 0;
}

int
vhostd_config_check_new(const struct vhostd_config *c, const struct vhostd_devcfg *d,
			char *msg, size_t len)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (strcmp(c->dev[i].name, d->name) == 0) {
			snprintf(msg, len, "device '%s' exists (vm '%s')", d->name, c->dev[i].vm);
			return -1;
		}
		if (same_socket(c->dev[i].socket, d->socket)) {
			snprintf(msg, len, "socket %s is used by device '%s'", d->socket,
				 c->dev[i].name);
			return -1;
		}
	}
	return 0;
}

/* device_add's parameters, for the file: the same rules as the method's. */
static const struct vhostd_param devcfg_params[] = {
	{ "name", VHOSTD_PARAM_STRING, true, NULL },
	{ "vm", VHOSTD_PARAM_STRING, true, NULL },
	{ "socket", VHOSTD_PARAM_STRING, true, NULL },
	{ "client", VHOSTD_PARAM_BOOL, false, NULL },
	{ "devargs", VHOSTD_PARAM_STRING, true, NULL },
	{ "auto_prepare", VHOSTD_PARAM_BOOL, false, NULL },
	{ "socket_group", VHOSTD_PARAM_STRING, false, NULL },
	{ "socket_mode", VHOSTD_PARAM_STRING, false, NULL },
	{ NULL, 0, false, NULL },
};

static int
parse_entry(json_t *e, size_t i, struct vhostd_config *c, char *msg, size_t len)
{
	const char *method = json_string_value(json_object_get(e, "method"));
	json_t *params = json_object_get(e, "params");
	struct vhostd_devcfg d;
	char why[320];

	if (!json_is_object(e) || method == NULL || !json_is_object(params)) {
		snprintf(msg, len, "config[%zu]: must be {\"method\": \"device_add\", "
			 "\"params\": {...}}", i);
		return -1;
	}
	if (strcmp(method, "device_add") != 0) {
		snprintf(msg, len, "config[%zu]: method '%.64s' cannot be replayed (only "
			 "device_add)", i, method);
		return -1;
	}
	if (vhostd_rpc_check_params(params, devcfg_params, why, sizeof(why)) < 0 ||
	    vhostd_devcfg_from_json(params, &d, why, sizeof(why)) < 0 ||
	    vhostd_config_check_new(c, &d, why, sizeof(why)) < 0) {
		snprintf(msg, len, "config[%zu]: %s", i, why);
		return -1;
	}
	if (vhostd_config_append(c, &d) < 0) {
		snprintf(msg, len, "config[%zu]: out of memory", i);
		return -1;
	}
	return 0;
}

int
vhostd_config_parse(const char *text, size_t textlen, struct vhostd_config *c, char *msg,
		    size_t len)
{
	json_t *root, *list, *v;
	json_error_t e;
	size_t i;

	vhostd_config_init(c);
	root = json_loadb(text, textlen, JSON_REJECT_DUPLICATES, &e);
	if (root == NULL) {
		snprintf(msg, len, "line %d column %d: %s", e.line, e.column, e.text);
		return -1;
	}
	v = json_object_get(root, "version");
	list = json_object_get(root, "config");
	if (!json_is_object(root) || !json_is_array(list)) {
		snprintf(msg, len, "not a configuration: an object with a \"config\" array of "
			 "device_add calls expected");
		goto err;
	}
	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) != 1)) {
		snprintf(msg, len, "\"version\" must be 1");
		goto err;
	}
	json_array_foreach(list, i, v) {
		if (parse_entry(v, i, c, msg, len) < 0)
			goto err;
	}
	json_decref(root);
	return 0;
err:
	json_decref(root);
	vhostd_config_free(c);
	return -1;
}

int
vhostd_devcfg_check_dir(const struct vhostd_devcfg *d, char *msg, size_t len)
{
	const char *base;
	int fd;

	if (d->client)
		return 0;
	fd = vhostd_sockdir_open(d->socket, &base, msg, len);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	/* A directory missing or unusable is the worker's to report, as it always was. */
	return fd == -EPERM ? -1 : 0;
}

int
vhostd_config_load(const char *path, struct vhostd_config *c, char *msg, size_t len)
{
	char why[640];
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t n = 0, cap = 0, i;
	int ret;

	vhostd_config_init(c);
	if (f == NULL) {
		snprintf(msg, len, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n + 4096 > cap) {
			char *t;

			/* A configuration is a few KiB: refuse what cannot be one. */
			if (cap >= (16u << 20)) {
				snprintf(msg, len, "%s: larger than 16 MiB", path);
				free(text);
				fclose(f);
				return -1;
			}
			cap = cap ? cap * 2 : 8192;
			t = realloc(text, cap);
			if (t == NULL) {
				free(text);
				fclose(f);
				snprintf(msg, len, "%s: out of memory", path);
				return -1;
			}
			text = t;
		}
		size_t r = fread(text + n, 1, cap - n, f);

		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	ret = vhostd_config_parse(text != NULL ? text : "", n, c, why, sizeof(why));
	free(text);
	if (ret < 0) {
		snprintf(msg, len, "%s: %s", path, why);
		return ret;
	}
	/* Refused with the entry's index here rather than found out at a socket left. */
	for (i = 0; i < c->n; i++) {
		if (vhostd_devcfg_check_dir(&c->dev[i], why, sizeof(why)) < 0) {
			snprintf(msg, len, "%s: config[%zu]: invalid params: 'socket': %s", path,
				 i, why);
			vhostd_config_free(c);
			return -1;
		}
	}
	return 0;
}

json_t *
vhostd_config_to_json(const struct vhostd_config *c)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; i < c->n; i++)
		json_array_append_new(list, json_pack("{s:s, s:o}", "method", "device_add",
						      "params",
						      vhostd_devcfg_to_json(&c->dev[i])));
	return json_pack("{s:s, s:i, s:o}", "service", "mlx5-lm-vhostd", "version", 1,
			 "config", list);
}

int
vhostd_config_save(const char *path, const struct vhostd_config *c, char *msg, size_t len)
{
	char tmp[4096];
	json_t *j = vhostd_config_to_json(c);
	char *text = json_dumps(j, JSON_INDENT(2));
	size_t n = text != NULL ? strlen(text) : 0;
	int fd = -1, ret = -1;

	json_decref(j);
	if (text == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= sizeof(tmp)) {
		snprintf(msg, len, "configuration path too long");
		goto out;
	}
	/* O_EXCL | O_NOFOLLOW: never through a link someone left at the temporary name. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, len, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write(fd, text, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
		snprintf(msg, len, "cannot write %s: %s", tmp, strerror(errno));
		goto err_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		snprintf(msg, len, "cannot write %s: %s", tmp, strerror(errno));
		goto err_unlink;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		snprintf(msg, len, "cannot replace %s: %s", path, strerror(errno));
		goto err_unlink;
	}
	ret = 0;
	goto out;
err_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(text);
	return ret;
}

void
vhostd_config_diff(const struct vhostd_config *cur, const struct vhostd_config *next,
		   size_t *remove, size_t *nremove, size_t *add, size_t *nadd)
{
	size_t i;
	int j;

	*nremove = 0;
	*nadd = 0;
	for (i = 0; i < cur->n; i++) {
		j = vhostd_config_find(next, cur->dev[i].name);
		if (j < 0 || !vhostd_devcfg_equal(&cur->dev[i], &next->dev[j]))
			remove[(*nremove)++] = i;
	}
	for (i = 0; i < next->n; i++) {
		j = vhostd_config_find(cur, next->dev[i].name);
		if (j < 0 || !vhostd_devcfg_equal(&cur->dev[j], &next->dev[i]))
			add[(*nadd)++] = i;
	}
}
