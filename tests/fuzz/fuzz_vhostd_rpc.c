/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: mlx5-lm-vhostd's JSON-RPC decoder and dispatcher
 * (app/vhostd/vhostd_rpc.c) and its device-parameter checks
 * (vhostd_config.c), as the control socket feeds them: any bytes, as a
 * stream of requests. No crash, no sanitizer report, and coherent
 * results: progress on every request (a decode consumes bytes or waits
 * for more), every reply a JSON-RPC 2.0 object with a result or an error
 * code and message, exactly one reply per request with an id, none for a
 * notification; a device that passes the checks has well-formed fields.
 * The same bytes then arrive in chunks (their sizes from the first byte), as
 * the service reads them: the incremental decoder keeps its scan between
 * calls and must keep the same rules on every partial view of the stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vhostd_config.h"
#include "vhostd_rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned int replies;

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_vhostd_rpc: %s\n", what);
		abort();
	}
}

static void
check_reply(json_t *r)
{
	json_t *err = json_object_get(r, "error");

	check(json_is_object(r), "reply not an object");
	check(strcmp(json_string_value(json_object_get(r, "jsonrpc")), "2.0") == 0, "no 2.0");
	check(json_object_get(r, "id") != NULL, "reply without id");
	if (err != NULL) {
		check(json_is_integer(json_object_get(err, "code")), "error without code");
		check(json_string_length(json_object_get(err, "message")) > 0, "empty message");
	} else {
		check(json_object_get(r, "result") != NULL, "neither result nor error");
	}
}

static void
done(struct vhostd_call *call, json_t *reply)
{
	if (reply != NULL) {
		check_reply(reply);
		replies++;
	}
}

/* device_add's checks, as the service runs them: a device that passes is well formed. */
static void
fake_add(struct vhostd_call *call, json_t *params)
{
	struct vhostd_devcfg d;
	char msg[512];

	if (vhostd_devcfg_from_json(params, &d, msg, sizeof(msg)) < 0) {
		check(msg[0] != '\0', "refused without a reason");
		vhostd_call_fail(call, VHOSTD_RPC_INVALID_PARAMS, "%s", msg);
		return;
	}
	check(d.name[0] != '\0' && d.vm[0] != '\0' && d.socket[0] == '/', "bad device accepted");
	check(strlen(d.socket) < sizeof(d.socket) && strlen(d.devargs) < sizeof(d.devargs),
	      "unterminated field");
	vhostd_call_reply(call, vhostd_devcfg_to_json(&d));
}

static void
fake_list(struct vhostd_call *call, json_t *params)
{
	vhostd_call_reply(call, json_array());
}

static const struct vhostd_param add_params[] = {
	{ "name", VHOSTD_PARAM_STRING, true, NULL },
	{ "vm", VHOSTD_PARAM_STRING, true, NULL },
	{ "socket", VHOSTD_PARAM_STRING, true, NULL },
	{ "client", VHOSTD_PARAM_BOOL, false, NULL },
	{ "devargs", VHOSTD_PARAM_STRING, true, NULL },
	{ "n", VHOSTD_PARAM_UINT, false, NULL },
	{ NULL, 0, false, NULL },
};

static const struct vhostd_method table[] = {
	{ "device_add", fake_add, add_params, "" },
	{ "device_list", fake_list, NULL, "" },
};

/* The stream in chunks of 1..16 bytes, decoded as the server does (vhostd_server.c process). */
static void
trickle(const char *buf, size_t size)
{
	struct vhostd_rpc_scan scan = { 0 };
	size_t step = size > 0 ? 1 + (uint8_t)buf[0] % 16 : 1, have = 0, off = 0;

	while (have < size) {
		have = have + step < size ? have + step : size;
		for (;;) {
			struct vhostd_rpc_req req;
			json_t *reply = NULL;
			size_t used;
			bool fatal = false;
			enum vhostd_rpc_status st = vhostd_rpc_decode_next(&scan, buf + off,
									   have - off, &used, &req,
									   &reply, &fatal);

			check(used <= have - off, "trickled: consumed past what came");
			off += used;
			if (st == VHOSTD_RPC_NEED_MORE) {
				check(reply == NULL, "trickled: reply while waiting for more");
				break;
			}
			if (st == VHOSTD_RPC_BAD) {
				check(reply != NULL, "trickled: bad request without a reply");
				check_reply(reply);
				json_decref(reply);
				if (fatal)
					return;
				check(used > 0, "trickled: no progress");
				continue;
			}
			check(used > 0 && req.method != NULL, "trickled: request without method");
			vhostd_rpc_req_free(&req);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0;

	while (off < size) {
		struct vhostd_rpc_req req;
		struct vhostd_call *call;
		json_t *reply;
		size_t used;
		bool fatal;
		unsigned int before = replies;
		bool expect_reply;
		enum vhostd_rpc_status st = vhostd_rpc_decode(buf + off, size - off, &used, &req,
							      &reply, &fatal);

		check(used <= size - off, "consumed past the end");
		off += used;
		if (st == VHOSTD_RPC_NEED_MORE) {
			check(reply == NULL, "reply while waiting for more");
			break;
		}
		if (st == VHOSTD_RPC_BAD) {
			check(reply != NULL, "bad request without a reply");
			check_reply(reply);
			json_decref(reply);
			if (fatal)
				break;
			check(used > 0, "no progress");
			continue;
		}
		check(used > 0 && req.method != NULL, "request without progress or method");
		expect_reply = req.id != NULL;
		call = vhostd_call_new(req.id, req.method, NULL, done, NULL);
		vhostd_rpc_dispatch(table, 2, call, req.params);
		check(replies - before == (expect_reply ? 1u : 0u), "not exactly one reply");
		vhostd_rpc_req_free(&req);
	}
	trickle(buf, size);
	/* The configuration file's parser on the same bytes. */
	{
		struct vhostd_config c;
		char msg[512];

		if (vhostd_config_parse(buf, size, &c, msg, sizeof(msg)) == 0)
			vhostd_config_free(&c);
		else
			check(msg[0] != '\0' && c.n == 0, "config refused without a reason");
	}
	return 0;
}
