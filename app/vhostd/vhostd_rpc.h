/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 for mlx5-lm-vhostd: decoding one request out of a byte
 * stream, the error replies of the standard, a table of methods and the
 * dispatch to them. No transport here (vhostd_server.c reads and writes
 * the sockets) and no method (vhostd_methods.c): this is what the unit
 * tests and the fuzzer drive.
 */
#ifndef VHOSTD_RPC_H
#define VHOSTD_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* JSON-RPC 2.0 error codes (jsonrpc.org/specification, 5.1). */
#define VHOSTD_RPC_PARSE_ERROR -32700
#define VHOSTD_RPC_INVALID_REQUEST -32600
#define VHOSTD_RPC_METHOD_NOT_FOUND -32601
#define VHOSTD_RPC_INVALID_PARAMS -32602
#define VHOSTD_RPC_INTERNAL_ERROR -32603
/* The service's own (the standard's server-error range; doc/vhostd.md lists them). */
#define VHOSTD_RPC_NOT_FOUND -32001       /* no such device */
#define VHOSTD_RPC_EXISTS -32002          /* name or socket already used */
#define VHOSTD_RPC_DEVICE_FAILED -32003   /* the worker could not create the device */
#define VHOSTD_RPC_UNAVAILABLE -32004     /* the VM's worker is down or the device busy */
#define VHOSTD_RPC_TOO_MANY -32005        /* too many control connections */
#define VHOSTD_RPC_CONFIG_FAILED -32006   /* the configuration file cannot be written */
#define VHOSTD_RPC_TOO_LARGE -32007       /* request over VHOSTD_RPC_MAX_REQUEST */

/* Largest request accepted; a connection that sends more is answered and closed. */
#define VHOSTD_RPC_MAX_REQUEST (1u << 20)

enum vhostd_rpc_status {
	VHOSTD_RPC_NEED_MORE = 0,  /* no complete request yet */
	VHOSTD_RPC_REQUEST,        /* req filled */
	VHOSTD_RPC_BAD,            /* *reply is the error to send; close after a parse error */
};

struct vhostd_rpc_req {
	json_t *root;          /* the request object (owns the rest) */
	json_t *id;            /* borrowed from root; NULL for a notification */
	const char *method;
	json_t *params;        /* borrowed, an object or NULL */
};

/*
 * Decode the first request of buf[0, len). *consumed gets the bytes used
 * (leading whitespace included; on NEED_MORE only the whitespace). On
 * BAD, *reply is a JSON-RPC error reply (id null when unknown) and
 * *fatal says whether the stream cannot be resynchronised (parse error,
 * oversized request): the connection must then be closed.
 */
enum vhostd_rpc_status vhostd_rpc_decode(const char *buf, size_t len, size_t *consumed,
					 struct vhostd_rpc_req *req, json_t **reply,
					 bool *fatal);

/*
 * How far the request at the head of a stream has been looked at, kept
 * between reads: a request that arrives a byte at a time was parsed again
 * from its first byte on every read (quadratic: 182 ms p50 with 8 clients
 * trickling large requests). Its end is found from the bytes new since
 * the last call alone, and jansson parses it once, when it is whole.
 * Zeroed for a new stream; vhostd_rpc_decode_next() keeps it.
 */
struct vhostd_rpc_scan {
	size_t pos;            /* bytes of the head request looked at */
	unsigned int depth;    /* objects and arrays open at pos */
	bool in_string;        /* pos is inside a string */
	bool escape;           /* ... right after its backslash */
	unsigned long long examined;  /* bytes the scan ever looked at (tests count it) */
};

/*
 * vhostd_rpc_decode() on a stream whose head request s has followed:
 * buf[0, len) is what the stream holds from the byte after the previous
 * call's *consumed on, the bytes of the previous call first.
 */
enum vhostd_rpc_status vhostd_rpc_decode_next(struct vhostd_rpc_scan *s, const char *buf,
					      size_t len, size_t *consumed,
					      struct vhostd_rpc_req *req, json_t **reply,
					      bool *fatal);
void vhostd_rpc_req_free(struct vhostd_rpc_req *req);

/* Replies (new references). id may be NULL (-> null). */
json_t *vhostd_rpc_result(json_t *id, json_t *result);
json_t *vhostd_rpc_error(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The reply as one line (compact JSON and "\n"); free() it. */
char *vhostd_rpc_dump(json_t *reply, size_t *len);

/* One call in flight: answered exactly once, now or later. */
struct vhostd_call;
typedef void (*vhostd_call_done_t)(struct vhostd_call *call, json_t *reply);

struct vhostd_call {
	json_t *id;              /* own reference; NULL: a notification, no reply sent */
	char method[64];
	void *ctx;               /* the service */
	vhostd_call_done_t done; /* the transport's: sends (or drops) the reply */
	void *conn;              /* the transport's */
	void *priv;              /* the method's, while the call waits */
};

struct vhostd_call *vhostd_call_new(json_t *id, const char *method, void *ctx,
				    vhostd_call_done_t done, void *conn);
/* Answer and free the call; result is stolen. */
void vhostd_call_reply(struct vhostd_call *call, json_t *result);
void vhostd_call_fail(struct vhostd_call *call, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A parameter of a method: its name, its JSON type, whether it must be there. */
enum vhostd_param_type {
	VHOSTD_PARAM_STRING,
	VHOSTD_PARAM_BOOL,
	VHOSTD_PARAM_UINT,
	VHOSTD_PARAM_OBJECT,
	VHOSTD_PARAM_ARRAY,
};

struct vhostd_param {
	const char *name;
	enum vhostd_param_type type;
	bool required;
	const char *help;
};

struct vhostd_method {
	const char *name;
	/* Validated params (an object, never NULL); answers call once. */
	void (*fn)(struct vhostd_call *call, json_t *params);
	const struct vhostd_param *params;  /* terminated by a NULL name */
	const char *help;
};

/*
 * 0 when params (NULL: none) has every required parameter, each of its
 * type, and nothing else; otherwise -1 and msg names the field.
 */
int vhostd_rpc_check_params(json_t *params, const struct vhostd_param *spec, char *msg,
			    size_t len);

/*
 * Run req's method from table[0, n) on call (which req's id and method
 * made): -32601 for an unknown one, -32602 for bad params, else the
 * method's own answer. Takes a reference on params for the call.
 */
void vhostd_rpc_dispatch(const struct vhostd_method *table, size_t n,
			 struct vhostd_call *call, json_t *params);
const struct vhostd_method *vhostd_rpc_find(const struct vhostd_method *table, size_t n,
					    const char *name);

#endif /* VHOSTD_RPC_H */
