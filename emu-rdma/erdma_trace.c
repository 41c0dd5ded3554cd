/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DevX trace of every call made through the library (design.md "DevX
 * command trace", plus "entry": the rdma-core entry point used) and the
 * leak summary that tools/with-emulated-rdma reads. Both files are shared
 * by every process of a run: each record is one write() on an O_APPEND
 * descriptor, so lines never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prm.h"
#include "erdma.h"

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -2;         /* -2: not opened yet, -1: no trace */
static uint64_t trace_seq;

uint64_t
erdma_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int
append_fd(const char *env)
{
	const char *path = getenv(env);
	int fd;

	if (path == NULL || *path == '\0')
		return -1;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		erdma_log("%s=%s: cannot open: %s", env, path, strerror(errno));
	return fd;
}

/* Text buffer of one record. */
struct rec {
	char *buf;
	size_t len, cap;
};

static void
put(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(r->buf + r->len, r->cap - r->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < r->cap - r->len) {
			r->len += (size_t)n;
			return;
		}
		r->cap = 2 * r->cap + (size_t)(n > 0 ? n : 64);
		r->buf = realloc(r->buf, r->cap);
		if (r->buf == NULL)
			abort();
	}
}

static void
put_hex(struct rec *r, const void *p, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = p;
	size_t i;

	if (r->cap - r->len < 2 * len + 1) {
		r->cap = r->len + 2 * len + 256;
		r->buf = realloc(r->buf, r->cap);
		if (r->buf == NULL)
			abort();
	}
	for (i = 0; i < len; i++) {
		r->buf[r->len++] = digits[b[i] >> 4];
		r->buf[r->len++] = digits[b[i] & 0xf];
	}
	r->buf[r->len] = '\0';
}

/* Open the file on first use; the record starts with the common fields. */
static bool
begin(struct rec *r, struct erdma_ctx *c, uint64_t t0)
{
	pthread_mutex_lock(&trace_lock);
	if (trace_fd == -2)
		trace_fd = append_fd(ERDMA_ENV_TRACE);
	if (trace_fd < 0) {
		pthread_mutex_unlock(&trace_lock);
		return false;
	}
	r->cap = 512;
	r->len = 0;
	r->buf = malloc(r->cap);
	if (r->buf == NULL)
		abort();
	put(r, "{\"dev\":\"%s\",\"pid\":%d,\"seq\":%" PRIu64 ",\"t_start_us\":%" PRIu64
	    ",\"t_end_us\":%" PRIu64, c->vctx.context.device->name, (int)getpid(), trace_seq++,
	    t0, erdma_now_us());
	return true;
}

static void
end(struct rec *r)
{
	put(r, "}\n");
	if (write(trace_fd, r->buf, r->len) != (ssize_t)r->len)
		erdma_log("trace: short write: %s", strerror(errno));
	pthread_mutex_unlock(&trace_lock);
	free(r->buf);
}

/* The object a mailbox names: what it created, or what it acts on. */
static uint32_t
obj_id_of(uint16_t opcode, const void *in, size_t inlen, const void *out, size_t outlen,
	  bool done)
{
	if (opcode >= PRM_CMD_CREATE_GENERAL_OBJECT && opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT) {
		if (opcode == PRM_CMD_CREATE_GENERAL_OBJECT)
			return done && outlen >= PRM_SIZE(general_obj_out_cmd_hdr) ?
				(uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id) : 0;
		return inlen >= PRM_SIZE(general_obj_in_cmd_hdr) ?
			(uint32_t)PRM_GET(general_obj_in_cmd_hdr, in, obj_id) : 0;
	}
	if (prm_opcode_is_create_out(opcode))
		return done && outlen >= PRM_SIZE(create_out) ?
			(uint32_t)PRM_GET(create_out, out, id) : 0;
	switch (opcode) {
	case PRM_CMD_QUERY_HCA_CAP:
	case PRM_CMD_SET_FLOW_TABLE_ENTRY:
		return 0;
	default:
		return inlen >= PRM_SIZE(destroy_in) ? (uint32_t)PRM_GET(destroy_in, in, id) : 0;
	}
}

void
erdma_trace_cmd(struct erdma_ctx *c, const char *entry, uint64_t t0, const void *in,
		size_t inlen, const void *out, size_t outlen, int rc)
{
	uint16_t opcode, op_mod;
	bool general;
	struct rec r;

	if (inlen < PRM_SIZE(cmd_in) || !begin(&r, c, t0))
		return;
	opcode = (uint16_t)PRM_GET(cmd_in, in, opcode);
	op_mod = (uint16_t)PRM_GET(cmd_in, in, op_mod);
	general = opcode >= PRM_CMD_CREATE_GENERAL_OBJECT &&
		  opcode <= PRM_CMD_DESTROY_GENERAL_OBJECT;
	put(&r, ",\"entry\":\"%s\",\"op\":\"%s\",\"opcode\":%u,\"op_mod\":%u,\"obj_type\":%u,"
	    "\"obj_id\":%u,\"in\":\"", entry, prm_opcode_name(opcode), opcode,
	    general ? 0 : op_mod, general ? op_mod : 0,
	    obj_id_of(opcode, in, inlen, out, outlen, rc == 0));
	put_hex(&r, in, inlen);
	put(&r, "\",\"out\":\"");
	if (rc == 0)
		put_hex(&r, out, outlen);
	if (rc == 0 && outlen >= PRM_SIZE(cmd_out))
		put(&r, "\",\"status\":%u,\"syndrome\":%u",
		    (unsigned int)PRM_GET(cmd_out, out, status),
		    (uint32_t)PRM_GET(cmd_out, out, syndrome));
	else
		put(&r, "\",\"status\":-1,\"syndrome\":0,\"error\":\"%s\"", strerror(rc < 0 ? -rc : EINVAL));
	end(&r);
}

void
erdma_trace_op(struct erdma_ctx *c, const char *entry, const char *op, uint64_t t0,
	       const char *id_key, uint64_t id, uint64_t addr, uint64_t size, int status)
{
	struct rec r;

	if (!begin(&r, c, t0))
		return;
	put(&r, ",\"entry\":\"%s\",\"op\":\"%s\",\"%s\":%" PRIu64 ",\"addr\":%" PRIu64
	    ",\"size\":%" PRIu64 ",\"status\":%d,\"syndrome\":0", entry, op, id_key, id, addr,
	    size, status);
	end(&r);
}

/*
 * One line per closed device: what the emulator found alive, and its leak
 * lines (which name each object) for a test that cannot read our stderr.
 */
void
erdma_summary(const char *dev, int left_alive, const char *leaks)
{
	int fd = append_fd(ERDMA_ENV_SUMMARY);
	size_t len = 256 + (leaks != NULL ? 2 * strlen(leaks) + 8 : 0), n;
	const char *p;
	char *line;

	if (fd < 0)
		return;
	line = malloc(len);
	if (line == NULL) {
		erdma_log("summary: %s", strerror(ENOMEM));
		close(fd);
		return;
	}
	n = (size_t)snprintf(line, len, "{\"pid\":%d,\"dev\":\"%s\",\"left_alive\":%d,"
			     "\"leaked\":[", (int)getpid(), dev, left_alive);
	/* The lines hold no control characters: '\n' separates them; quote " and \. */
	for (p = leaks; p != NULL && *p != '\0'; p++) {
		if (p == leaks || p[-1] == '\n')
			line[n++] = '"';
		if (*p == '\n') {
			line[n++] = '"';
			if (p[1] != '\0')
				line[n++] = ',';
			continue;
		}
		if (*p == '"' || *p == '\\')
			line[n++] = '\\';
		line[n++] = *p;
	}
	n += (size_t)snprintf(line + n, len - n, "]}\n");
	if (write(fd, line, n) != (ssize_t)n)
		erdma_log("summary: short write: %s", strerror(errno));
	free(line);
	close(fd);
}
