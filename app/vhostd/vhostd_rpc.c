/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON-RPC 2.0 decoding, replies and dispatch (see vhostd_rpc.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vhostd_rpc.h"

static json_t *
verror(json_t *id, int code, const char *fmt, va_list ap)
{
	char msg[512], *p;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/*
	 * Messages quote what the client sent (a method's name, jansson's view
	 * of a bad token), cut to length: bytes that may not make valid UTF-8,
	 * which a JSON string must be. Printable ASCII only.
	 */
	for (p = msg; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0",
			 "id", id != NULL ? id : json_null(), "error", "code", code,
			 "message", msg);
}

json_t *
vhostd_rpc_error(json_t *id, int code, const char *fmt, ...)
{
	va_list ap;
	json_t *r;

	va_start(ap, fmt);
	r = verror(id, code, fmt, ap);
	va_end(ap);
	return r;
}

json_t *
vhostd_rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0",
			 "id", id != NULL ? id : json_null(),
			 "result", result != NULL ? result : json_null());
}

char *
vhostd_rpc_dump(json_t *reply, size_t *len)
{
	char *s = json_dumps(reply, JSON_COMPACT), *line;
	size_t n;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (line == NULL) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*len = n + 1;
	return line;
}

static size_t
skip_space(const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	return i;
}

/* The request object's members, checked as the specification says (4, 4.1, 4.2). */
static json_t *
check_request(json_t *root, struct vhostd_rpc_req *req)
{
	json_t *id = json_object_get(root, "id"), *v;
	const char *key;

	/* An id of the wrong type cannot be echoed: the error carries id null. */
	if (id != NULL && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id))
		return vhostd_rpc_error(NULL, VHOSTD_RPC_INVALID_REQUEST,
					"invalid request: 'id' must be a string, an integer or null");
	v = json_object_get(root, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return vhostd_rpc_error(id, VHOSTD_RPC_INVALID_REQUEST,
					"invalid request: 'jsonrpc' must be \"2.0\"");
	v = json_object_get(root, "method");
	if (!json_is_string(v))
		return vhostd_rpc_error(id, VHOSTD_RPC_INVALID_REQUEST,
					"invalid request: 'method' must be a string");
	req->method = json_string_value(v);
	v = json_object_get(root, "params");
	if (v != NULL && json_is_array(v))
		return vhostd_rpc_error(id, VHOSTD_RPC_INVALID_PARAMS,
					"invalid params: 'params' must be an object (parameters "
					"by name), not an array");
	if (v != NULL && !json_is_object(v) && !json_is_null(v))
		return vhostd_rpc_error(id, VHOSTD_RPC_INVALID_REQUEST,
					"invalid request: 'params' must be an object");
	req->params = json_is_object(v) ? v : NULL;
	json_object_foreach(root, key, v) {
		if (strcmp(key, "jsonrpc") != 0 && strcmp(key, "id") != 0 &&
		    strcmp(key, "method") != 0 && strcmp(key, "params") != 0)
			return vhostd_rpc_error(id, VHOSTD_RPC_INVALID_REQUEST,
						"invalid request: unknown member '%.64s'", key);
	}
	req->id = id;
	return NULL;
}

/*
 * Whether the value at v[0] ends within v[0, len): *end gets its length.
 * An object, an array or a string ends at the byte that closes it, found
 * from the brackets and the strings alone (jansson checks all the rest
 * once the end is there); s goes on from s->pos, where the last call
 * stopped. Any other value (a number, a literal: never a request, and
 * ended by its token) goes to jansson as it is.
 */
static bool
scan_end(struct vhostd_rpc_scan *s, const char *v, size_t len, size_t *end)
{
	size_t i;

	if (v[0] != '{' && v[0] != '[' && v[0] != '"') {
		*end = len;
		return true;
	}
	for (i = s->pos; i < len; i++) {
		char c = v[i];

		s->examined++;
		if (s->in_string) {
			if (s->escape)
				s->escape = false;
			else if (c == '\\')
				s->escape = true;
			else if (c == '"')
				s->in_string = false;
			if (s->in_string || s->depth > 0)
				continue;
			*end = i + 1;
			return true;
		}
		if (c == '"') {
			s->in_string = true;
		} else if (c == '{' || c == '[') {
			s->depth++;
		} else if ((c == '}' || c == ']') && s->depth > 0 && --s->depth == 0) {
			*end = i + 1;
			return true;
		}
	}
	s->pos = len;
	return false;
}

enum vhostd_rpc_status
vhostd_rpc_decode(const char *buf, size_t len, size_t *consumed, struct vhostd_rpc_req *req,
		  json_t **reply, bool *fatal)
{
	struct vhostd_rpc_scan s = { 0 };

	return vhostd_rpc_decode_next(&s, buf, len, consumed, req, reply, fatal);
}

enum vhostd_rpc_status
vhostd_rpc_decode_next(struct vhostd_rpc_scan *s, const char *buf, size_t len,
		       size_t *consumed, struct vhostd_rpc_req *req, json_t **reply, bool *fatal)
{
	size_t start = skip_space(buf, len), end;
	json_error_t e;
	json_t *root;

	memset(req, 0, sizeof(*req));
	*reply = NULL;
	*fatal = false;
	*consumed = start;
	if (start == len)
		return VHOSTD_RPC_NEED_MORE;
	if (!scan_end(s, buf + start, len - start, &end)) {
		if (len - start < VHOSTD_RPC_MAX_REQUEST)
			return VHOSTD_RPC_NEED_MORE;
		*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_TOO_LARGE,
					  "request too large: over %u bytes",
					  VHOSTD_RPC_MAX_REQUEST);
		*fatal = true;
		*consumed = len;
		return VHOSTD_RPC_BAD;
	}
	/*
	 * Whatever jansson makes of it, the next call starts on the next
	 * request: the scan state goes, the count (the last member) stays.
	 */
	memset(s, 0, offsetof(struct vhostd_rpc_scan, examined));
	/*
	 * Requests follow each other on the stream: decode the first value and
	 * learn its end (JSON_DISABLE_EOF_CHECK). Duplicate members are refused:
	 * which of two "name"s was meant is not ours to guess.
	 */
	root = json_loadb(buf + start, end,
			  JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
	if (root == NULL) {
		if (json_error_code(&e) == json_error_premature_end_of_input) {
			if (len - start < VHOSTD_RPC_MAX_REQUEST)
				return VHOSTD_RPC_NEED_MORE;
			*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_TOO_LARGE,
						  "request too large: over %u bytes",
						  VHOSTD_RPC_MAX_REQUEST);
		} else {
			*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_PARSE_ERROR,
						  "parse error at byte %d: %s", e.position,
						  e.text);
		}
		*fatal = true;
		*consumed = len;
		return VHOSTD_RPC_BAD;
	}
	*consumed = start + (size_t)e.position;
	if ((size_t)e.position > VHOSTD_RPC_MAX_REQUEST) {
		json_decref(root);
		*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_TOO_LARGE,
					  "request too large: over %u bytes", VHOSTD_RPC_MAX_REQUEST);
		*fatal = true;
		return VHOSTD_RPC_BAD;
	}
	if (json_is_array(root)) {
		json_decref(root);
		*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_INVALID_REQUEST,
					  "invalid request: batches are not supported: send "
					  "one request object at a time");
		return VHOSTD_RPC_BAD;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		*reply = vhostd_rpc_error(NULL, VHOSTD_RPC_INVALID_REQUEST,
					  "invalid request: a request must be a JSON object");
		return VHOSTD_RPC_BAD;
	}
	*reply = check_request(root, req);
	if (*reply != NULL) {
		json_decref(root);
		memset(req, 0, sizeof(*req));
		return VHOSTD_RPC_BAD;
	}
	req->root = root;
	return VHOSTD_RPC_REQUEST;
}

void
vhostd_rpc_req_free(struct vhostd_rpc_req *req)
{
	json_decref(req->root);
	memset(req, 0, sizeof(*req));
}

struct vhostd_call *
vhostd_call_new(json_t *id, const char *method, void *ctx, vhostd_call_done_t done,
		void *conn)
{
	struct vhostd_call *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->id = json_incref(id);
	snprintf(c->method, sizeof(c->method), "%s", method);
	c->ctx = ctx;
	c->done = done;
	c->conn = conn;
	return c;
}

static void
call_finish(struct vhostd_call *call, json_t *reply)
{
	/* A notification gets no reply (specification, 4.1): done() still runs. */
	if (call->id == NULL) {
		json_decref(reply);
		reply = NULL;
	}
	call->done(call, reply);
	json_decref(reply);
	json_decref(call->id);
	free(call);
}

void
vhostd_call_reply(struct vhostd_call *call, json_t *result)
{
	call_finish(call, vhostd_rpc_result(call->id, result));
}

void
vhostd_call_fail(struct vhostd_call *call, int code, const char *fmt, ...)
{
	va_list ap;
	json_t *r;

	va_start(ap, fmt);
	r = verror(call->id, code, fmt, ap);
	va_end(ap);
	call_finish(call, r);
}

static const char *
type_name(enum vhostd_param_type t)
{
	switch (t) {
	case VHOSTD_PARAM_STRING: return "a string";
	case VHOSTD_PARAM_BOOL: return "a boolean";
	case VHOSTD_PARAM_UINT: return "a non-negative integer";
	case VHOSTD_PARAM_OBJECT: return "an object";
	case VHOSTD_PARAM_ARRAY: return "an array";
	}
	return "?";
}

static bool
type_ok(json_t *v, enum vhostd_param_type t)
{
	switch (t) {
	case VHOSTD_PARAM_STRING: return json_is_string(v);
	case VHOSTD_PARAM_BOOL: return json_is_boolean(v);
	case VHOSTD_PARAM_UINT: return json_is_integer(v) && json_integer_value(v) >= 0;
	case VHOSTD_PARAM_OBJECT: return json_is_object(v);
	case VHOSTD_PARAM_ARRAY: return json_is_array(v);
	}
	return false;
}

int
vhostd_rpc_check_params(json_t *params, const struct vhostd_param *spec, char *msg, size_t len)
{
	const struct vhostd_param *p;
	const char *key;
	json_t *v;

	for (p = spec; p != NULL && p->name != NULL; p++) {
		v = params != NULL ? json_object_get(params, p->name) : NULL;
		if (v == NULL) {
			if (p->required) {
				snprintf(msg, len, "invalid params: '%s' is required (%s)",
					 p->name, type_name(p->type));
				return -1;
			}
			continue;
		}
		if (!type_ok(v, p->type)) {
			snprintf(msg, len, "invalid params: '%s' must be %s", p->name,
				 type_name(p->type));
			return -1;
		}
	}
	if (params == NULL)
		return 0;
	json_object_foreach(params, key, v) {
		for (p = spec; p != NULL && p->name != NULL; p++)
			if (strcmp(p->name, key) == 0)
				break;
		if (p == NULL || p->name == NULL) {
			snprintf(msg, len, "invalid params: unknown parameter '%.64s'", key);
			return -1;
		}
	}
	return 0;
}

const struct vhostd_method *
vhostd_rpc_find(const struct vhostd_method *table, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

void
vhostd_rpc_dispatch(const struct vhostd_method *table, size_t n, struct vhostd_call *call,
		    json_t *params)
{
	const struct vhostd_method *m = vhostd_rpc_find(table, n, call->method);
	char msg[256];
	json_t *p;

	if (m == NULL) {
		vhostd_call_fail(call, VHOSTD_RPC_METHOD_NOT_FOUND,
				 "method '%s' not found (rpc_get_methods lists them)",
				 call->method);
		return;
	}
	if (vhostd_rpc_check_params(params, m->params, msg, sizeof(msg)) < 0) {
		vhostd_call_fail(call, VHOSTD_RPC_INVALID_PARAMS, "%s: %s", m->name, msg);
		return;
	}
	p = params != NULL ? json_incref(params) : json_object();
	m->fn(call, p);
	json_decref(p);
}
