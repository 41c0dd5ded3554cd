/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's JSON-RPC layer alone (app/vhostd/vhostd_rpc.c): decoding
 * a stream of requests, the standard's errors, the parameter checks and
 * the dispatch to a table of fake methods; and the buffers of
 * app/vhostd/vhostd_chan.c: the one a client's replies wait in, the
 * line framing of a worker's channel. json_loadb and memchr are wrapped
 * (meson links with --wrap): the tests count the bytes the decoders have
 * jansson parse, and the bytes the channel searches for a line's end.
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

json_t *__real_json_loadb(const char *buffer, size_t buflen, size_t flags,
			  json_error_t *error);
json_t *__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags,
			  json_error_t *error);

void *__real_memchr(const void *s, int c, size_t n);
void *__wrap_memchr(const void *s, int c, size_t n);

static unsigned long long parsed_bytes, searched_bytes;

json_t *
__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	parsed_bytes += buflen;
	return __real_json_loadb(buffer, buflen, flags, error);
}

/* The bytes looked at: up to the one found, or all n. */
void *
__wrap_memchr(const void *s, int c, size_t n)
{
	void *p = __real_memchr(s, c, n);

	searched_bytes += p != NULL ? (size_t)((const char *)p - (const char *)s) + 1 : n;
	return p;
}

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

/*
 * A stream fed a byte at a time, as a client trickling its requests sends
 * it, through the decoder the control socket uses: each answer, its code,
 * in *out (one line each), and the bytes left undecoded.
 */
static size_t
trickle(const char *in, char *out, size_t outlen, unsigned long long *examined)
{
	size_t n = strlen(in), len = 0, off = 0, used, o = 0;
	struct vhostd_rpc_scan s = { 0 };
	struct vhostd_rpc_req req;
	char *buf = malloc(n + 1);
	json_t *reply;
	bool fatal;

	assert_non_null(buf);
	out[0] = '\0';
	while (len < n) {
		enum vhostd_rpc_status st;

		buf[len] = in[len];
		len++;
		do {
			st = vhostd_rpc_decode_next(&s, buf + off, len - off, &used, &req, &reply,
						    &fatal);
			off += used;
			if (st == VHOSTD_RPC_REQUEST) {
				o += (size_t)snprintf(out + o, outlen - o, "request %s\n",
						      req.method);
				vhostd_rpc_req_free(&req);
			} else if (st == VHOSTD_RPC_BAD) {
				o += (size_t)snprintf(out + o, outlen - o, "error %d%s\n",
						      error_code(reply), fatal ? " fatal" : "");
				json_decref(reply);
			}
			assert_true(o < outlen);
		} while (st != VHOSTD_RPC_NEED_MORE && !fatal && off < len);
		/* The connection closes: what it would have sent next is never decoded. */
		if (fatal) {
			off = n;
			break;
		}
	}
	free(buf);
	*examined = s.examined;
	return n - off;
}

/* The same stream decoded as it comes whole. */
static size_t
whole(const char *in, char *out, size_t outlen)
{
	size_t n = strlen(in), off = 0, used, o = 0;
	struct vhostd_rpc_req req;
	json_t *reply;
	bool fatal = false;

	out[0] = '\0';
	while (off < n && !fatal) {
		enum vhostd_rpc_status st = vhostd_rpc_decode(in + off, n - off, &used, &req,
							      &reply, &fatal);

		off += used;
		if (st == VHOSTD_RPC_NEED_MORE)
			break;
		if (st == VHOSTD_RPC_REQUEST) {
			o += (size_t)snprintf(out + o, outlen - o, "request %s\n", req.method);
			vhostd_rpc_req_free(&req);
		} else {
			o += (size_t)snprintf(out + o, outlen - o, "error %d%s\n",
					      error_code(reply), fatal ? " fatal" : "");
			json_decref(reply);
		}
		assert_true(o < outlen);
	}
	return n - off;
}

/*
 * A large request sent a byte at a time was parsed again from its first
 * byte on every read: 64 KiB cost jansson 2 GiB. Each byte is now looked
 * at once by the scan for the request's end, and once by jansson.
 */
static void
test_a_trickled_request_is_looked_at_once_per_byte(void **state)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"device_add\","
				   "\"params\":{\"devargs\":\"";
	/* Brackets, quotes and backslashes in a string: not the request's end. */
	static const char piece[] = "}]{[\\\"x\\\\";
	static const char tail[] = "\",\"n\":[{\"a\":[]}]}}  ";
	size_t n = sizeof(head) - 1 + 8192 * (sizeof(piece) - 1) + sizeof(tail) - 1;
	char *in = malloc(n + 1), out[256];
	unsigned long long examined;
	size_t i, o = 0;

	assert_non_null(in);
	o += (size_t)snprintf(in, n + 1, "%s", head);
	for (i = 0; i < 8192; i++)
		o += (size_t)snprintf(in + o, n + 1 - o, "%s", piece);
	snprintf(in + o, n + 1 - o, "%s", tail);
	assert_int_equal(strlen(in), n);
	parsed_bytes = 0;
	assert_int_equal(trickle(in, out, sizeof(out), &examined), 0);
	assert_string_equal(out, "request device_add\n");
	/* The trailing whitespace is examined by neither. */
	if (examined > n || parsed_bytes > n)
		print_error("%zu bytes: scanned %llu, parsed %llu\n", n, examined,
			    parsed_bytes);
	assert_true(examined <= n);
	assert_true(parsed_bytes <= n);
	free(in);
}

/* What a stream decodes to does not depend on how its bytes arrive. */
static void
test_a_trickled_stream_decodes_as_the_whole_one(void **state)
{
	static const char *const streams[] = {
		" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":\"}{\\\"\",\"method\":\"b\",\"params\":{\"k\":[1]}}",
		"\"hello\" {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"c\"}",
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}]\t{\"jsonrpc\":\"2.0\",\"id\":3,"
		"\"method\":\"d\",\"x\":1}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"method\":\"y\"}",
		"{\"a\": } {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"e\"} "
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"me",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"f\"}] {\"jsonrpc\":\"2.0\",\"id\":2}",
	};
	char a[512], b[512];
	unsigned long long examined;
	size_t i;

	for (i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		size_t left_whole = whole(streams[i], a, sizeof(a));

		size_t left = trickle(streams[i], b, sizeof(b), &examined);

		if (left != left_whole || strcmp(a, b) != 0)
			print_error("stream %zu: whole: %s(%zu left), trickled: %s(%zu left)\n",
				    i, a, left_whole, b, left);
		assert_int_equal(left, left_whole);
		assert_string_equal(b, a);
	}
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

/*
 * A worker's message arrives in many reads (a device's statistics are
 * large; the channel's socket hands them over as they come): the search
 * for its end began again at the message's first byte at every read, n^2
 * over the reads of one message. Each byte is now searched once, and what
 * the channel frames does not depend on how the bytes arrive.
 */
static void
test_a_worker_message_in_small_chunks_is_searched_once_per_byte(void **state)
{
	static const char tail[] = "\"}\n{\"id\":1,\"result\":{}}\n{\"event\":\"ready\"}\n"
				   "{\"id\":2,\"res";
	size_t big = 65536, n, sent = 0, got = 0;
	struct vhostd_buf b = { 0 };
	char *in, *o;
	json_t *m;
	int sv[2], r;

	(void)state;
	n = strlen("{\"event\":\"metrics\",\"devices\":\"") + big + strlen(tail);
	in = malloc(n + 1);
	assert_non_null(in);
	o = in + sprintf(in, "{\"event\":\"metrics\",\"devices\":\"");
	memset(o, 'x', big);
	strcpy(o + big, tail);
	assert_int_equal(strlen(in), n);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	searched_bytes = 0;
	/* 7 bytes a read: chunks that end within a line and span two. */
	while (sent < n) {
		size_t k = n - sent < 7 ? n - sent : 7;

		assert_int_equal(write(sv[0], in + sent, k), (ssize_t)k);
		sent += k;
		assert_int_equal(vhostd_buf_read(sv[1], &b, 1u << 20), (ssize_t)k);
		while ((r = vhostd_chan_next(&b, &m)) != 0) {
			assert_int_equal(r, 1);
			if (got == 0)
				assert_int_equal(strlen(json_string_value(
					json_object_get(m, "devices"))), big);
			else if (got == 1)
				assert_int_equal(json_integer_value(json_object_get(m, "id")), 1);
			else
				assert_string_equal(json_string_value(json_object_get(m, "event")),
						    "ready");
			json_decref(m);
			got++;
		}
	}
	assert_int_equal(got, 3);
	/* The last line's start waits for the rest: searched, once. */
	assert_int_equal(b.len - b.off, strlen("{\"id\":2,\"res"));
	if (searched_bytes > n)
		print_error("%zu bytes in 7-byte reads: %llu searched\n", n, searched_bytes);
	assert_true(searched_bytes <= n);
	vhostd_buf_free(&b);
	free(in);
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
		cmocka_unit_test(test_a_trickled_request_is_looked_at_once_per_byte),
		cmocka_unit_test(test_a_trickled_stream_decodes_as_the_whole_one),
		cmocka_unit_test(test_dispatch_checks_method_and_params_before_the_method_runs),
		cmocka_unit_test(test_a_notification_runs_but_gets_no_reply),
		cmocka_unit_test(test_a_client_reading_behind_does_not_grow_its_output_buffer),
		cmocka_unit_test(test_a_worker_message_in_small_chunks_is_searched_once_per_byte),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	json_decref(last_reply);
	return r;
}
