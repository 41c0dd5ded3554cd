/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-ctl: the command line of mlx5-lm-vhostd's JSON-RPC API. One
 * subcommand per method; a table for people by default, the reply's
 * result as JSON with --json. Exit status: 0 done, 1 the service
 * answered an error, 2 usage, 3 the service cannot be reached.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lm_app.h"
#include "lm_app_rpc.h"

#define DEFAULT_SOCKET "/run/mlx5-lm/vhostd.sock"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_UNREACHABLE = 3 };

static const char *rpc_socket = DEFAULT_SOCKET;
static bool as_json;
static int timeout_s = 60;

struct command {
	const char *name;
	const char *args;
	const char *summary;
	/* Builds the params from argv (NULL: usage printed, exit 2). */
	json_t *(*params)(const struct command *cmd, int argc, char **argv);
	void (*show)(json_t *result);
};

static void usage(FILE *f);

static void
cmd_usage(FILE *f, const struct command *c)
{
	fprintf(f, "Usage: mlx5-lm-ctl [--socket PATH] [--json] [--timeout S] %s%s%s\n\n%s.\n",
		c->name, c->args[0] ? " " : "", c->args, c->summary);
}

/* Only --help: commands that take no argument. */
static json_t *
no_params(const struct command *cmd, int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cmd_usage(stdout, cmd);
		exit(EXIT_OK);
	}
	if (argc != 1) {
		cmd_usage(stderr, cmd);
		return NULL;
	}
	return json_object();
}

/* NAME (or --name NAME): commands about one device. */
static json_t *
name_params(const struct command *cmd, int argc, char **argv)
{
	const char *name = NULL;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cmd_usage(stdout, cmd);
		exit(EXIT_OK);
	}
	if (argc == 2 && argv[1][0] != '-')
		name = argv[1];
	else if (argc == 3 && strcmp(argv[1], "--name") == 0)
		name = argv[2];
	if (name == NULL) {
		cmd_usage(stderr, cmd);
		return NULL;
	}
	return json_pack("{s:s}", "name", name);
}

static json_t *
add_params(const struct command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "vm", required_argument, NULL, 'v' },
		{ "vhost-socket", required_argument, NULL, 's' },
		{ "client", no_argument, NULL, 'c' },
		{ "devargs", required_argument, NULL, 'd' },
		{ "no-auto-prepare", no_argument, NULL, 'a' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "socket-mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	json_t *p = json_object();
	unsigned int mode;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			json_object_set_new(p, "name", json_string(optarg));
			break;
		case 'v':
			json_object_set_new(p, "vm", json_string(optarg));
			break;
		case 's':
			json_object_set_new(p, "socket", json_string(optarg));
			break;
		case 'c':
			json_object_set_new(p, "client", json_true());
			break;
		case 'd':
			json_object_set_new(p, "devargs", json_string(optarg));
			break;
		case 'a':
			json_object_set_new(p, "auto_prepare", json_false());
			break;
		case 'g':
			/* The service runs here: a group it would refuse is a typo to say now. */
			if (optarg[0] == '\0' || getgrnam(optarg) == NULL) {
				fprintf(stderr, "mlx5-lm-ctl: device_add: --socket-group: no group "
					"'%s'\n", optarg);
				json_decref(p);
				return NULL;
			}
			json_object_set_new(p, "socket_group", json_string(optarg));
			break;
		case 'm':
			if (lm_app_sock_parse_mode(optarg, &mode) < 0) {
				fprintf(stderr, "mlx5-lm-ctl: device_add: --socket-mode takes "
					"permission bits in octal, 0000 to 0777 (e.g. 0660), not "
					"'%s'\n", optarg);
				json_decref(p);
				return NULL;
			}
			json_object_set_new(p, "socket_mode", json_string(optarg));
			break;
		case 'h':
			cmd_usage(stdout, cmd);
			printf("\n  --name NAME          the device's name, unique in the service\n"
			       "  --vm VM              its VM: the VM's devices share one worker\n"
			       "  --vhost-socket PATH  its vhost-user socket\n"
			       "  --client             connect to the front end's socket (QEMU\n"
			       "                       server=on) instead of listening\n"
			       "  --devargs ARGS       emu=, ibdev=, pci= or sf=, and the keys of\n"
			       "                       doc/devargs.md, e.g. emu=cx6dx,queues=4\n"
			       "  --no-auto-prepare    do not register a destination front end's\n"
			       "                       guest memory before its start unasked\n"
			       "                       (doc/vhostd.md, preparing the destination)\n"
			       "  --socket-group NAME  the group of its socket: members (QEMU as\n"
			       "                       libvirt-qemu) may connect; mode 0660\n"
			       "                       unless --socket-mode (default the\n"
			       "                       service's --socket-group)\n"
			       "  --socket-mode MODE   its socket's mode in octal, e.g. 0660\n"
			       "                       (default the service's --socket-mode)\n");
			json_decref(p);
			exit(EXIT_OK);
		default:
			cmd_usage(stderr, cmd);
			json_decref(p);
			return NULL;
		}
	}
	if (optind != argc) {
		cmd_usage(stderr, cmd);
		json_decref(p);
		return NULL;
	}
	/*
	 * What is required is a usage error here, whether the service runs or
	 * not (it was 3 with the service down, 1 with it up); the values are the
	 * service's to judge (one rule, one message).
	 */
	{
		static const char *const need[][2] = {
			{ "name", "--name" }, { "vm", "--vm" }, { "socket", "--vhost-socket" },
			{ "devargs", "--devargs" },
		};
		char missing[80] = "";
		size_t i;

		for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (json_object_get(p, need[i][0]) == NULL)
				snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
					 "%s%s", missing[0] ? ", " : "", need[i][1]);
		if (missing[0] != '\0') {
			fprintf(stderr, "mlx5-lm-ctl: device_add: missing %s (--name, --vm, "
				"--vhost-socket and --devargs are required)\n", missing);
			json_decref(p);
			return NULL;
		}
	}
	return p;
}

/* device_prepare NAME --pid PID */
static json_t *
prepare_params(const struct command *cmd, int argc, char **argv)
{
	char *end;
	long pid;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cmd_usage(stdout, cmd);
		printf("\n  NAME       the device (of the destination, before its QEMU starts it)\n"
		       "  --pid PID  that QEMU's process: its shared guest-memory files are\n"
		       "             registered now, for it only (the right to trace it is needed)\n");
		exit(EXIT_OK);
	}
	if (argc != 4 || argv[1][0] == '-' || strcmp(argv[2], "--pid") != 0) {
		cmd_usage(stderr, cmd);
		return NULL;
	}
	errno = 0;
	pid = strtol(argv[3], &end, 10);
	if (errno != 0 || *end != '\0' || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, "mlx5-lm-ctl: device_prepare: --pid %s is not a process id\n",
			argv[3]);
		return NULL;
	}
	return json_pack("{s:s, s:I}", "name", argv[1], "pid", (json_int_t)pid);
}

/* call METHOD [PARAMS-JSON]: any method, as the API takes it. */
static json_t *
raw_params(const struct command *cmd, int argc, char **argv)
{
	json_error_t e;
	json_t *p;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cmd_usage(stdout, cmd);
		exit(EXIT_OK);
	}
	if (argc < 2 || argc > 3) {
		cmd_usage(stderr, cmd);
		return NULL;
	}
	p = argc == 3 ? json_loads(argv[2], 0, &e) : json_object();
	if (p == NULL)
		fprintf(stderr, "mlx5-lm-ctl: call: params: %s\n", e.text);
	return p;
}

static const char *
str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL ? s : "-";
}

static void
show_device_list(json_t *r)
{
	json_t *d;
	size_t i;

	printf("%-20s %-16s %-10s %-8s %s\n", "NAME", "VM", "STATE", "WORKER", "SOCKET");
	json_array_foreach(r, i, d) {
		printf("%-20s %-16s %-10s %-8lld %s%s%s\n", str(d, "name"), str(d, "vm"),
		       str(d, "state"), (long long)json_integer_value(json_object_get(d,
									     "worker_pid")),
		       str(d, "socket"), json_object_get(d, "reason") ? "  " : "",
		       json_object_get(d, "reason") ? str(d, "reason") : "");
	}
}

static void
show_vm_list(json_t *r)
{
	json_t *v, *n;
	size_t i, j;

	printf("%-16s %-8s %-10s %-8s %-10s %s\n", "VM", "WORKER", "STATE", "RESTARTS",
	       "UPTIME_S", "DEVICES");
	json_array_foreach(r, i, v) {
		printf("%-16s %-8lld %-10s %-8lld %-10.1f ", str(v, "vm"),
		       (long long)json_integer_value(json_object_get(v, "worker_pid")),
		       str(v, "state"),
		       (long long)json_integer_value(json_object_get(v, "restarts")),
		       json_number_value(json_object_get(v, "uptime_s")));
		json_array_foreach(json_object_get(v, "devices"), j, n)
			printf("%s%s", j ? "," : "", json_string_value(n));
		printf("\n");
	}
}

/* Nested objects as dotted keys, one "key: value" line each. */
static void
show_flat(const char *prefix, json_t *o)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v) {
		char key[256];

		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "", k);
		if (json_is_object(v)) {
			show_flat(key, v);
		} else {
			char *s = json_is_string(v) ? strdup(json_string_value(v)) :
				  json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

			printf("%-28s %s\n", key, s != NULL ? s : "?");
			free(s);
		}
	}
}

static void
show_object(json_t *r)
{
	show_flat("", r);
}

static void
show_stats(json_t *r)
{
	json_t *names = json_object_get(r, "names"), *q, *n;
	size_t i, j;

	printf("%s:\n  %-8s", str(r, "name"), "queue");
	json_array_foreach(names, j, n)
		printf("  %21s", json_string_value(n));
	printf("\n");
	if (!json_is_true(json_object_get(r, "supported")))
		printf("  no queue counters on this device: statistics not supported\n");
	json_array_foreach(json_object_get(r, "queues"), i, q) {
		json_t *c = json_object_get(q, "counters");

		printf("  %-3s %-4lld", str(q, "type"),
		       (long long)json_integer_value(json_object_get(q, "pair")));
		json_array_foreach(names, j, n)
			printf("  %21lld", (long long)json_integer_value(
				json_object_get(c, json_string_value(n))));
		printf("\n");
	}
}

static void
show_lines(json_t *r)
{
	json_t *v;
	size_t i;

	json_array_foreach(r, i, v)
		printf("%s\n", json_string_value(v));
}

static void
show_added(json_t *r)
{
	printf("added %s (vm %s, worker %lld) on %s: %s\n", str(r, "name"), str(r, "vm"),
	       (long long)json_integer_value(json_object_get(r, "worker_pid")), str(r, "socket"),
	       str(r, "state"));
}

static void
show_removed(json_t *r)
{
	printf("removed %s (vm %s, was %s)\n", str(r, "name"), str(r, "vm"), str(r, "was"));
}

static void
show_saved(json_t *r)
{
	if (json_is_string(json_object_get(r, "file"))) {
		printf("saved %lld devices to %s\n",
		       (long long)json_integer_value(json_object_get(r, "devices")),
		       str(r, "file"));
	} else {
		char *s = json_dumps(json_object_get(r, "config"), JSON_INDENT(2));

		/* No --config: the configuration itself, for a file of the operator's. */
		printf("%s\n", s != NULL ? s : "");
		free(s);
	}
}

static void
show_prepared(json_t *r)
{
	printf("preparing %s: %lld MiB of pid %lld's guest memory in %zu files\n",
	       str(r, "name"), (long long)json_integer_value(json_object_get(r, "bytes")) >> 20,
	       (long long)json_integer_value(json_object_get(r, "pid")),
	       json_array_size(json_object_get(r, "files")));
}

static void
show_json(json_t *r)
{
	char *s = json_dumps(r, JSON_INDENT(2) | JSON_ENCODE_ANY);

	printf("%s\n", s != NULL ? s : "null");
	free(s);
}

static const struct command commands[] = {
	{ "device_add", "--name NAME --vm VM --vhost-socket PATH [--client] --devargs ARGS "
	  "[--no-auto-prepare] [--socket-group NAME] [--socket-mode MODE]",
	  "create a device in its VM's worker and serve its vhost-user socket", add_params,
	  show_added },
	{ "device_remove", "NAME", "stop serving a device and destroy it", name_params,
	  show_removed },
	{ "device_list", "", "every device, its VM and state", no_params, show_device_list },
	{ "device_get", "NAME",
	  "a device's state, front end, features, queues, last stop and start, memory",
	  name_params, show_object },
	{ "device_get_stats", "NAME", "a device's per-queue counters", name_params, show_stats },
	{ "device_prepare", "NAME --pid PID",
	  "register a front end's guest memory before it starts the device", prepare_params,
	  show_prepared },
	{ "vm_list", "", "every VM: its worker, restarts, uptime, devices", no_params,
	  show_vm_list },
	{ "service_get_version", "", "the service's version", no_params, show_object },
	{ "rpc_get_methods", "", "the methods of the API", no_params, show_lines },
	{ "config_save", "", "write the devices to the service's --config file", no_params,
	  show_saved },
	{ "call", "METHOD [PARAMS-JSON]", "call any method with these params", raw_params,
	  show_json },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: mlx5-lm-ctl [--socket PATH] [--json] [--timeout S] <command> [args]\n\n"
		"Control mlx5-lm-vhostd through its JSON-RPC socket.\n\n"
		"  --socket PATH  the service's control socket (default %s)\n"
		"  --json         print the reply's result as JSON\n"
		"  --timeout S    the whole call (connect, request, reply) within S seconds (default 60)\n"
		"  -h, --help     this text\n\nCommands ('<command> --help' for each):\n",
		DEFAULT_SOCKET);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-20s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nExit status: 0 done, 1 the service answered an error, 2 usage,\n"
		"3 the service cannot be reached.\n");
}

/*
 * One request, one reply (the whole reply object): the connect, the send
 * and the reply within timeout_s, so that a service that accepts nothing
 * (its queue of connections full: busy, stopped, hung) does not hold us.
 */
static json_t *
rpc(const char *method, json_t *params)
{
	char err[512];
	json_t *reply = lm_app_rpc_once(rpc_socket, method, params, timeout_s * 1000, err,
					sizeof(err));

	if (reply == NULL)
		fprintf(stderr, "mlx5-lm-ctl: %s\n", err);
	return reply;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *cmd = NULL;
	json_t *params, *reply, *err;
	const char *method;
	size_t i;
	int c;

	/* "+": options stop at the command; what follows is the command's. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			rpc_socket = optarg;
			break;
		case 'j':
			as_json = true;
			break;
		case 't':
			timeout_s = atoi(optarg);
			if (timeout_s <= 0) {
				fprintf(stderr, "mlx5-lm-ctl: --timeout takes seconds (> 0)\n");
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char alias[64];
		size_t k;

		/* device-add as well as device_add. */
		snprintf(alias, sizeof(alias), "%s", commands[i].name);
		for (k = 0; alias[k] != '\0'; k++)
			if (alias[k] == '_')
				alias[k] = '-';
		if (strcmp(argv[optind], commands[i].name) == 0 || strcmp(argv[optind], alias) == 0)
			cmd = &commands[i];
	}
	if (cmd == NULL) {
		fprintf(stderr, "mlx5-lm-ctl: unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	params = cmd->params(cmd, argc - optind, argv + optind);
	if (params == NULL)
		return EXIT_USAGE;
	method = strcmp(cmd->name, "call") == 0 ? argv[optind + 1] : cmd->name;
	reply = rpc(method, params);
	json_decref(params);
	if (reply == NULL)
		return EXIT_UNREACHABLE;
	err = json_object_get(reply, "error");
	if (err != NULL) {
		fprintf(stderr, "mlx5-lm-ctl: %s: error %lld: %s\n", method,
			(long long)json_integer_value(json_object_get(err, "code")),
			str(err, "message"));
		if (as_json)
			show_json(reply);
		json_decref(reply);
		return EXIT_ERROR;
	}
	if (as_json)
		show_json(json_object_get(reply, "result"));
	else
		cmd->show(json_object_get(reply, "result"));
	json_decref(reply);
	return EXIT_OK;
}
