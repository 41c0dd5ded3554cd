/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A client of mlx5-lm-vhostd's control socket (JSON-RPC 2.0, one request
 * object at a time, each answered by one reply; libc and jansson only):
 * mlx5-lm-ctl's, and dpdk-test-lm migrate --service's. Requests may follow
 * each other on one connection without waiting: the service answers each
 * when its VM's worker has, so replies about different VMs may come in
 * any order and are matched by their id.
 */
#ifndef LM_APP_RPC_H
#define LM_APP_RPC_H

#include <stddef.h>

#include <jansson.h>

struct lm_app_rpc {
	int fd;
	char path[108];
	char *buf;                 /* what was read and not yet returned as a reply */
	size_t len, cap;
	json_int_t next_id;        /* lm_app_rpc_call's */
};

/*
 * Connect to the service's control socket path within timeout_ms: a service
 * whose queue of connections is full (busy, stopped, hung) is given up on
 * then ("did not accept the connection within S s"). 0, or -1 with why in err.
 */
int lm_app_rpc_open(struct lm_app_rpc *c, const char *path, int timeout_ms, char *err,
		    size_t errlen);
void lm_app_rpc_close(struct lm_app_rpc *c);

/*
 * Send {"jsonrpc": "2.0", "id": id, "method": method, "params": params} (not
 * stolen), within timeout_ms. A connection the service closed as idle, with
 * no reply owed, is opened again first (within the same timeout_ms).
 */
int lm_app_rpc_send(struct lm_app_rpc *c, const char *method, json_t *params, json_int_t id,
		    int timeout_ms, char *err, size_t errlen);

/*
 * The next reply, whole ("result" or "error" with its "id"), within
 * timeout_ms. NULL with why in err: no reply in time, the connection
 * closed, or a reply that is not JSON.
 */
json_t *lm_app_rpc_recv(struct lm_app_rpc *c, int timeout_ms, char *err, size_t errlen);

/*
 * One call on c: send with the next id, then its reply, the whole within
 * timeout_ms (a connect again included). The reply's
 * "result" (a new reference) on success; NULL with err set on failure,
 * and *code the service's error code (0 when it did not answer).
 */
json_t *lm_app_rpc_call(struct lm_app_rpc *c, const char *method, json_t *params,
			int timeout_ms, int *code, char *err, size_t errlen);

/*
 * One request on a connection of its own (id 1), closed after: its whole
 * reply ("result" or "error"), the connect, the send and the reply within
 * timeout_ms together. NULL with why in err (no reply: not reached in time,
 * closed, not JSON).
 */
json_t *lm_app_rpc_once(const char *path, const char *method, json_t *params, int timeout_ms,
			char *err, size_t errlen);

#endif /* LM_APP_RPC_H */
