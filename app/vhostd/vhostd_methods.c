/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control API: one small function per method, each validating its
 * parameters (the table's types first, then its own rules) and answering
 * one reply, now or when the VM's worker has answered. Names follow
 * SPDK's <subsystem>_<action>.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "vhostd.h"

#ifndef VHOSTD_VERSION
#define VHOSTD_VERSION "0"
#endif

static const struct vhostd_param p_none[] = { { NULL, 0, false, NULL } };
static const struct vhostd_param p_name[] = {
	{ "name", VHOSTD_PARAM_STRING, true, "the device's name" },
	{ NULL, 0, false, NULL },
};
static const struct vhostd_param p_prepare[] = {
	{ "name", VHOSTD_PARAM_STRING, true, "the device's name" },
	{ "pid", VHOSTD_PARAM_UINT, true,
	  "the front end's process (a destination QEMU): its shared guest-memory files" },
	{ NULL, 0, false, NULL },
};
static const struct vhostd_param p_add[] = {
	{ "name", VHOSTD_PARAM_STRING, true, "the device's name, unique in the service" },
	{ "vm", VHOSTD_PARAM_STRING, true, "the VM: its devices share one worker process" },
	{ "socket", VHOSTD_PARAM_STRING, true, "the vhost-user socket path" },
	{ "client", VHOSTD_PARAM_BOOL, false,
	  "connect to the front end's socket (QEMU server=on) instead of listening" },
	{ "devargs", VHOSTD_PARAM_STRING, true,
	  "device arguments: emu=, ibdev=, pci= or sf=, and any key of doc/devargs.md" },
	{ "auto_prepare", VHOSTD_PARAM_BOOL, false,
	  "prepare a destination front end's guest memory before its start, unasked "
	  "(default true; doc/vhostd.md)" },
	{ "socket_group", VHOSTD_PARAM_STRING, false,
	  "the group of the socket the service creates (default --socket-group)" },
	{ "socket_mode", VHOSTD_PARAM_STRING, false,
	  "its mode in octal, e.g. \"0660\" (default --socket-mode; 0660 with a group)" },
	{ NULL, 0, false, NULL },
};

static json_t *
dev_summary(struct vhostd_dev *d)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:b, s:s, s:b, s:s, s:i}", "name", d->cfg.name,
			      "vm", d->cfg.vm, "socket", d->cfg.socket, "client", d->cfg.client,
			      "devargs", d->cfg.devargs, "auto_prepare", d->cfg.auto_prepare,
			      "state", d->state, "worker_pid", d->vm != NULL ? (int)d->vm->pid : 0);

	if (d->reason[0] != '\0')
		json_object_set_new(j, "reason", json_string(d->reason));
	if (d->cfg.socket_group[0] != '\0')
		json_object_set_new(j, "socket_group", json_string(d->cfg.socket_group));
	if (d->cfg.socket_mode_set) {
		char mode[8];

		snprintf(mode, sizeof(mode), "%04o", d->cfg.socket_mode);
		json_object_set_new(j, "socket_mode", json_string(mode));
	}
	return j;
}

static void
m_device_add(struct vhostd_call *call, json_t *params)
{
	struct vhostd_config cur;
	struct vhostd_devcfg cfg;
	char msg[400];
	struct vhostd_dev *d;

	if (vhostd_devcfg_from_json(params, &cfg, msg, sizeof(msg)) < 0 ||
	    vhostd_devcfg_check_group(&cfg, msg, sizeof(msg)) < 0) {
		vhostd_call_fail(call, VHOSTD_RPC_INVALID_PARAMS, "device_add: %s", msg);
		return;
	}
	if (vhostd_devcfg_check_dir(&cfg, msg, sizeof(msg)) < 0) {
		vhostd_call_fail(call, VHOSTD_RPC_INVALID_PARAMS, "device_add: invalid params: "
				 "'socket': %s", msg);
		return;
	}
	/* Devices still being added count: two adds of one name cannot both win. */
	vhostd_config_init(&cur);
	TAILQ_FOREACH(d, &vhostd.devs, next)
		vhostd_config_append(&cur, &d->cfg);
	if (vhostd_config_check_new(&cur, &cfg, msg, sizeof(msg)) < 0) {
		vhostd_config_free(&cur);
		vhostd_call_fail(call, VHOSTD_RPC_EXISTS, "device_add: %s", msg);
		return;
	}
	vhostd_config_free(&cur);
	if (vhostd.shutting_down) {
		vhostd_call_fail(call, VHOSTD_RPC_UNAVAILABLE, "device_add: the service is stopping");
		return;
	}
	vhostd_dev_add(&cfg, call);
}

static struct vhostd_dev *
named_device(struct vhostd_call *call, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	struct vhostd_dev *d = vhostd_dev_find(name);

	if (d == NULL)
		vhostd_call_fail(call, VHOSTD_RPC_NOT_FOUND, "%s: no device named '%.64s' "
				 "(device_list lists them)", call->method, name);
	return d;
}

static void
m_device_remove(struct vhostd_call *call, json_t *params)
{
	struct vhostd_dev *d = named_device(call, params);

	if (d == NULL)
		return;
	if (strcmp(d->state, "adding") == 0 || strcmp(d->state, "removing") == 0) {
		vhostd_call_fail(call, VHOSTD_RPC_UNAVAILABLE, "device_remove: device '%s' is "
				 "%s: retry once that has answered", d->cfg.name, d->state);
		return;
	}
	vhostd_dev_remove(d, call);
}

static void
m_device_list(struct vhostd_call *call, json_t *params)
{
	json_t *list = json_array();
	struct vhostd_dev *d;

	TAILQ_FOREACH(d, &vhostd.devs, next)
		json_array_append_new(list, dev_summary(d));
	vhostd_call_reply(call, list);
}

/* The worker's answer, with what the supervisor knows of the device added. */
static void
get_done(struct vhostd_wreq *r, json_t *result, int code, const char *msg)
{
	struct vhostd_dev *d = vhostd_dev_find(r->dev);
	json_t *j;

	if (code != 0 || d == NULL) {
		vhostd_call_fail(r->call, code ? code : VHOSTD_RPC_NOT_FOUND, "%s: %s",
				 r->call->method, msg ? msg : "the device is gone");
		return;
	}
	j = json_deep_copy(result);
	json_object_set_new(j, "vm", json_string(d->cfg.vm));
	json_object_set_new(j, "worker_pid", json_integer(d->vm->pid));
	vhostd_call_reply(r->call, j);
}

/* Without its worker (restarting) a device is described by the supervisor alone. */
static bool
worker_up(struct vhostd_call *call, struct vhostd_dev *d)
{
	if (d->vm->pid > 0 && d->vm->ready && strcmp(d->state, "adding") != 0)
		return true;
	if (strcmp(call->method, "device_get") == 0) {
		vhostd_call_reply(call, dev_summary(d));
		return false;
	}
	vhostd_call_fail(call, VHOSTD_RPC_UNAVAILABLE, "%s: device '%s' is %s%s%s",
			 call->method, d->cfg.name, d->state, d->reason[0] ? ": " : "",
			 d->reason);
	return false;
}

/* A request about one device, answered by its VM's worker. */
static void
ask_worker(struct vhostd_call *call, json_t *params, const char *op)
{
	struct vhostd_dev *d = named_device(call, params);

	if (d == NULL || !worker_up(call, d))
		return;
	if (vhostd_vm_request(d->vm, op, d->cfg.name, call, get_done) < 0)
		vhostd_call_fail(call, VHOSTD_RPC_INTERNAL_ERROR, "out of memory");
}

static void
m_device_get(struct vhostd_call *call, json_t *params)
{
	ask_worker(call, params, "get");
}

static void
m_device_get_stats(struct vhostd_call *call, json_t *params)
{
	ask_worker(call, params, "stats");
}

/*
 * The destination's guest memory registered before its SET_MEM_TABLE: the
 * worker finds the files process pid maps shared, and prepares the device
 * with them (rte_pmd_mlx5_lm_prepare) for that process only.
 */
static void
m_device_prepare(struct vhostd_call *call, json_t *params)
{
	struct vhostd_dev *d = named_device(call, params);
	json_int_t pid;
	json_t *args;

	if (d == NULL || !worker_up(call, d))
		return;
	/*
	 * A pid_t is an int: a larger number, cast on the way, named another
	 * process (2^32 + N was process N), which would then be prepared.
	 */
	pid = json_integer_value(json_object_get(params, "pid"));
	if (pid <= 0 || pid > INT_MAX) {
		vhostd_call_fail(call, VHOSTD_RPC_INVALID_PARAMS, "device_prepare: 'pid' must be "
				 "a process id (1 to %d), not %lld", INT_MAX, (long long)pid);
		return;
	}
	args = json_pack("{s:O}", "pid", json_object_get(params, "pid"));
	if (args == NULL ||
	    vhostd_vm_request_args(d->vm, "prepare", d->cfg.name, args, call, get_done) < 0)
		vhostd_call_fail(call, VHOSTD_RPC_INTERNAL_ERROR, "out of memory");
	json_decref(args);
}

static void
m_vm_list(struct vhostd_call *call, json_t *params)
{
	json_t *list = json_array();
	int64_t now = vhostd_now_ms();
	struct vhostd_vm *vm;

	TAILQ_FOREACH(vm, &vhostd.vms, next) {
		json_t *devs = json_array(), *j;
		struct vhostd_dev *d;

		TAILQ_FOREACH(d, &vhostd.devs, next)
			if (d->vm == vm)
				json_array_append_new(devs, json_string(d->cfg.name));
		j = json_pack("{s:s, s:i, s:s, s:i, s:f, s:o}", "vm", vm->name,
			      "worker_pid", (int)vm->pid,
			      "state", vm->pid == 0 ? "restarting" : vm->stopping ? "stopping" :
				       vm->ready ? "running" : "starting",
			      "restarts", (int)vm->restarts,
			      "uptime_s", vm->pid > 0 ? (now - vm->started_ms) / 1000.0 : 0.0,
			      "devices", devs);
		if (vm->last_exit[0] != '\0')
			json_object_set_new(j, "last_exit", json_string(vm->last_exit));
		json_array_append_new(list, j);
	}
	vhostd_call_reply(call, list);
}

static void
m_service_get_version(struct vhostd_call *call, json_t *params)
{
	vhostd_call_reply(call, json_pack("{s:s, s:s, s:i, s:s, s:f}", "name", "mlx5-lm-vhostd",
					  "version", VHOSTD_VERSION, "api", VHOSTD_VERSION_API,
					  "pmd", "vdpa_mlx5_lm", "uptime_s",
					  (vhostd_now_ms() - vhostd.start_ms) / 1000.0));
}

static void
m_rpc_get_methods(struct vhostd_call *call, json_t *params)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; i < vhostd_nmethods; i++)
		json_array_append_new(list, json_string(vhostd_methods[i].name));
	vhostd_call_reply(call, list);
}

static void
m_config_save(struct vhostd_call *call, json_t *params)
{
	struct vhostd_config c;
	char msg[400];
	json_t *j;

	vhostd_config_of_devs(&c);
	if (vhostd.config_path != NULL &&
	    vhostd_config_save(vhostd.config_path, &c, msg, sizeof(msg)) < 0) {
		vhostd_config_free(&c);
		vhostd_call_fail(call, VHOSTD_RPC_CONFIG_FAILED, "config_save: %s", msg);
		return;
	}
	if (vhostd.config_path != NULL)
		SLOG("configuration saved to %s (%zu devices)", vhostd.config_path, c.n);
	j = json_pack("{s:s?, s:i, s:o}", "file", vhostd.config_path, "devices", (int)c.n,
		      "config", vhostd_config_to_json(&c));
	vhostd_config_free(&c);
	vhostd_call_reply(call, j);
}

const struct vhostd_method vhostd_methods[] = {
	{ "device_add", m_device_add, p_add,
	  "create a device in its VM's worker and serve its vhost-user socket" },
	{ "device_remove", m_device_remove, p_name,
	  "stop serving a device (its front end is disconnected) and destroy it" },
	{ "device_list", m_device_list, p_none, "every device, its VM and state" },
	{ "device_get", m_device_get, p_name,
	  "a device's state, front end, features, queues, last stop and start, memory" },
	{ "device_get_stats", m_device_get_stats, p_name,
	  "a device's per-queue counters, under DPDK's vdpa counter names" },
	{ "device_prepare", m_device_prepare, p_prepare,
	  "register a front end's guest memory (from its pid) before it starts the device" },
	{ "vm_list", m_vm_list, p_none, "every VM: its worker, restarts, uptime, devices" },
	{ "service_get_version", m_service_get_version, p_none, "the service's version" },
	{ "rpc_get_methods", m_rpc_get_methods, p_none, "the methods of this API" },
	{ "config_save", m_config_save, p_none,
	  "write the devices as a configuration (--config FILE) and return it" },
};
const size_t vhostd_nmethods = sizeof(vhostd_methods) / sizeof(vhostd_methods[0]);
