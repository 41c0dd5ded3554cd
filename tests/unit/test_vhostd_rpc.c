/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's JSON-RPC layer alone (app/vhostd/vhostd_rpc.c): decoding
 * a stream of requests, the standard's errors, the parameter checks and
 * the dispatch to a table of fake methods; and the output buffer a client's
 * replies wait in (app/vhostd/vhostd_chan.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "vhostd_chan.h"
#include "vhostd_rpc.h"

static enum vhostd_rpc_status
decode(const char *s, size_t *used, struct vhostd_rpc_req *req, json_t **reply, bool *fatal)
{
	return vhostd_rpc_decode(s, strlen(s), used, req, reply, fatal);
}

static int
error_code(json_t *reply)
{
	return (int)json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static const char *
error_msg(json_t *reply)
{
	return json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
}

static void
test_two_requests_in_one_buffer_are_decoded_one_after_the_other(void **state)
{
	const char *s = " {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\n"
			"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"b\",\"params\":{\"k\":1}}";
	struct vhostd_rpc_req req;
	json_t *reply;
	size_t used, off;
	bool fatal;

	assert_int_equal(decode(s, &used, &req, &reply, &fatal), VHOSTD_RPC_REQUEST);
	assert_string_equal(req.method, "a");
	assert_int_equal(json_integer_value(req.id), 1);
	assert_null(req.params);
	vhostd_rpc_req_free(&req);
	off = used;
	assert_int_equal(vhostd_rpc_decode(s + off, strlen(s) - off, &used, &req, &reply, &fatal),
			 VHOSTD_RPC_REQUEST);
	assert_string_equal(req.method, "b");
	assert_string_equal(json_string_value(req.id), "x");
	assert_non_null(req.params);
	vhostd_rpc_req_free(&req);
	assert_int_equal(off + used, strlen(s));
}

static void
test_an_incomplete_request_waits_for_more(void **state)
{
	const char *s = "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth";
	struct vhostd_rpc_req req;
	json_t *reply;
	size_t used;
	bool fatal;

	assert_int_equal(decode(s, &used, &req, &reply, &fatal), VHOSTD_RPC_NEED_MORE);
	assert_int_equal(used, 0);
	assert_null(reply);
	assert_int_equal(decode("  \n ", &used, &req, &reply, &fatal), VHOSTD_RPC_NEED_MORE);
	assert_int_equal(used, 4);
}

static void
test_malformed_json_is_a_fatal_parse_error(void **state)
{
	struct vhostd_rpc_req req;
	json_t *reply;
	size_t used;
	bool fatal;

	assert_int_equal(decode("{\"a\": }", &used, &req, &reply, &fatal), VHOSTD_RPC_BAD);
	assert_true(fatal);
	assert_int_equal(error_code(reply), VHOSTD_RPC_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(reply, "id")));
	json_decref(reply);
	assert_int_equal(decode("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}",
				&used, &req, &reply, &fatal), VHOSTD_RPC_BAD);
	assert_int_equal(error_code(reply), VHOSTD_RPC_PARSE_ERROR);
	assert_non_null(strstr(error_msg(reply), "duplicate"));
	json_decref(reply);
}

static void
test_invalid_requests_name_what_is_wrong(void **state)
{
	static const struct {
		const char *in;
		int code;
		const char *text;
		bool echo_id;
	} cases[] = {
		{ "[]", VHOSTD_RPC_INVALID_REQUEST, "batches", false },
		{ "42", VHOSTD_RPC_INVALID_REQUEST, "JSON object", false },
		{ "{\"id\":1,\"method\":\"a\"}", VHOSTD_RPC_INVALID_REQUEST, "'jsonrpc'", true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":1}", VHOSTD_RPC_INVALID_REQUEST,
		  "'method'", true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"a\"}", VHOSTD_RPC_INVALID_REQUEST,
		  "'id'", false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"a\",\"params\":[1]}",
		  VHOSTD_RPC_INVALID_PARAMS, "by name", true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"a\",\"params\":5}",
		  VHOSTD_RPC_INVALID_REQUEST, "'params'", true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"a\",\"x\":5}",
		  VHOSTD_RPC_INVALID_REQUEST, "'x'", true },
	};
	struct vhostd_rpc_req req;
	json_t *reply;
	size_t used, i;
	bool fatal;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(decode(cases[i].in, &used, &req, &reply, &fatal), VHOSTD_RPC_BAD);
		assert_false(fatal);
		assert_int_equal(used, strlen(cases[i].in));
		assert_int_equal(error_code(reply), cases[i].code);
		assert_non_null(strstr(error_msg(reply), cases[i].text));
		assert_int_equal(json_is_integer(json_object_get(reply, "id")), cases[i].echo_id);
		json_decref(reply);
	}
}

static void
test_a_request_over_the_limit_is_refused(void **state)
{
	size_t n = VHOSTD_RPC_MAX_REQUEST + 10, used;
	char *s = malloc(n + 1);
	struct vhostd_rpc_req req;
	json_t *reply;
	bool fatal;

	memset(s, ' ', n);
	memcpy(s, "{\"a\":\"", 6);
	memset(s + 6, 'x', n - 6);
	s[n] = '\0';
	assert_int_equal(vhostd_rpc_decode(s, n, &used, &req, &reply, &fatal), VHOSTD_RPC_BAD);
	assert_true(fatal);
	assert_int_equal(error_code(reply), VHOSTD_RPC_TOO_LARGE);
	json_decref(reply);
	free(s);
}

/* ---- dispatch ---- */

static json_t *last_reply;
static int fake_calls;

static void
done(struct vhostd_call *call, json_t *reply)
{
	json_decref(last_reply);
	last_reply = json_incref(reply);
}

static void
fake_echo(struct vhostd_call *call, json_t *params)
{
	fake_calls++;
	vhostd_call_reply(call, json_incref(params));
}

static const struct vhostd_param echo_params[] = {
	{ "name", VHOSTD_PARAM_STRING, true, NULL },
	{ "flag", VHOSTD_PARAM_BOOL, false, NULL },
	{ "n", VHOSTD_PARAM_UINT, false, NULL },
	{ NULL, 0, false, NULL },
};

static const struct vhostd_method table[] = {
	{ "echo", fake_echo, echo_params, "" },
};

static void
call(const char *method, const char *params_text)
{
	json_t *id = json_integer(7);
	json_t *params = params_text != NULL ? json_loads(params_text, 0, NULL) : NULL;
	struct vhostd_call *c = vhostd_call_new(id, method, NULL, done, NULL);

	vhostd_rpc_dispatch(table, 1, c, params);
	json_decref(params);
	json_decref(id);
}

static void
test_dispatch_checks_method_and_params_before_the_method_runs(void **state)
{
	fake_calls = 0;
	call("nope", NULL);
	assert_int_equal(error_code(last_reply), VHOSTD_RPC_METHOD_NOT_FOUND);
	assert_non_null(strstr(error_msg(last_reply), "'nope'"));
	call("echo", NULL);
	assert_int_equal(error_code(last_reply), VHOSTD_RPC_INVALID_PARAMS);
	assert_non_null(strstr(error_msg(last_reply), "'name' is required"));
	call("echo", "{\"name\": 1}");
	assert_non_null(strstr(error_msg(last_reply), "'name' must be a string"));
	call("echo", "{\"name\": \"a\", \"flag\": 1}");
	assert_non_null(strstr(error_msg(last_reply), "'flag' must be a boolean"));
	call("echo", "{\"name\": \"a\", \"n\": -1}");
	assert_non_null(strstr(error_msg(last_reply), "'n' must be a non-negative integer"));
	call("echo", "{\"name\": \"a\", \"other\": 1}");
	assert_non_null(strstr(error_msg(last_reply), "unknown parameter 'other'"));
	assert_int_equal(fake_calls, 0);
	call("echo", "{\"name\": \"a\", \"flag\": true, \"n\": 3}");
	assert_int_equal(fake_calls, 1);
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(last_reply, "result"), "name")), "a");
	assert_int_equal(json_integer_value(json_object_get(last_reply, "id")), 7);
	assert_string_equal(json_string_value(json_object_get(last_reply, "jsonrpc")), "2.0");
}

static void
test_a_notification_runs_but_gets_no_reply(void **state)
{
	struct vhostd_call *c = vhostd_call_new(NULL, "echo", NULL, done, NULL);
	json_t *params = json_pack("{s:s}", "name", "a");

	json_decref(last_reply);
	last_reply = json_string("untouched");
	fake_calls = 0;
	vhostd_rpc_dispatch(table, 1, c, params);
	json_decref(params);
	assert_int_equal(fake_calls, 1);
	assert_null(last_reply);
}

/*
 * A client that reads its replies, but always some way behind: the buffer
 * is never written out whole, and used to keep every byte it ever sent
 * (the supervisor grew by the total of the replies, 1.8 GB in 35 s in a
 * review). What was sent must go.
 */
static void
test_a_client_reading_behind_does_not_grow_its_output_buffer(void **state)
{
	static char chunk[4096], sink[4096];
	struct vhostd_buf b = { 0 };
	size_t i, most = 0;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	/* The socket full and 1 MiB waiting behind it: the client is 1 MiB and more behind. */
	while (write(sv[0], chunk, sizeof(chunk)) > 0)
		;
	assert_int_equal(errno, EAGAIN);
	for (i = 0; i < 256; i++)
		assert_int_equal(vhostd_buf_append(&b, chunk, sizeof(chunk)), 0);
	assert_int_equal(vhostd_buf_flush(sv[0], &b), 0);
	/* 64 MiB of replies, the client reading as much as is added, never catching up. */
	for (i = 0; i < 16384; i++) {
		assert_int_equal(vhostd_buf_append(&b, chunk, sizeof(chunk)), 0);
		assert_true(read(sv[1], sink, sizeof(sink)) > 0);
		assert_true(vhostd_buf_flush(sv[0], &b) >= 0);
		if (b.cap > most)
			most = b.cap;
	}
	assert_true(b.len > b.off);
	/* Twice what waits, at most, and a doubling's rounding. */
	if (most > (8u << 20))
		print_error("output buffer grew to %zu bytes with %zu waiting\n", most,
			    b.len - b.off);
	assert_true(most <= (8u << 20));
	vhostd_buf_free(&b);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_requests_in_one_buffer_are_decoded_one_after_the_other),
		cmocka_unit_test(test_an_incomplete_request_waits_for_more),
		cmocka_unit_test(test_malformed_json_is_a_fatal_parse_error),
		cmocka_unit_test(test_invalid_requests_name_what_is_wrong),
		cmocka_unit_test(test_a_request_over_the_limit_is_refused),
		cmocka_unit_test(test_dispatch_checks_method_and_params_before_the_method_runs),
		cmocka_unit_test(test_a_notification_runs_but_gets_no_reply),
		cmocka_unit_test(test_a_client_reading_behind_does_not_grow_its_output_buffer),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	json_decref(last_reply);
	return r;
}
