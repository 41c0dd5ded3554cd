/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the tests on the emulated rdma-core (test_erdma through its
 * rdma-core API, test_rdma_backend through the DevX transport) share: the
 * process environment it reads, its trace read back, and the doorbell
 * offset its device reports. Include after cmocka.h, jansson.h and prm.h.
 */
#ifndef MLX5_LM_ERDMA_TEST_H
#define MLX5_LM_ERDMA_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "erdma_ctl_client.h"

/*
 * The records of the trace at path whose op is `op`, in order (at most
 * max; the caller json_decref()s them).
 */
static size_t
erdma_trace_ops(const char *path, const char *op, json_t **recs, size_t max)
{
	FILE *f = fopen(path, "r");
	static char line[65536];
	size_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *j = json_loads(line, 0, NULL);

		assert_non_null(j);
		if (strcmp(json_string_value(json_object_get(j, "op")), op) == 0 && n < max)
			recs[n++] = j;
		else
			json_decref(j);
	}
	fclose(f);
	return n;
}

/* QUERY_HCA_CAP of the current virtio emulation caps: the command and its reply. */
struct erdma_cap_query {
	uint8_t in[PRM_SIZE(query_hca_cap_in)];
	uint8_t out[PRM_SIZE(query_hca_cap_out)];
};

/* The query, ready for the test's own command path (one at a time: it is static). */
static struct erdma_cap_query *
erdma_emulation_cap_query(void)
{
	static struct erdma_cap_query q;

	memset(&q, 0, sizeof(q));
	PRM_SET(query_hca_cap_in, q.in, opcode, PRM_CMD_QUERY_HCA_CAP);
	PRM_SET(query_hca_cap_in, q.in, op_mod,
		PRM_HCA_CAP_OP_MOD(PRM_CAP_VIRTIO_EMULATION, 1));
	return &q;
}

/* doorbell_bar_offset in the query's reply. */
static uint64_t
erdma_doorbell_bar_offset(const struct erdma_cap_query *q)
{
	return PRM_GET(virtio_emulation_cap, PRM_CADDR(query_hca_cap_out, q->out, capability),
		       doorbell_bar_offset);
}

/*
 * main()'s set-up: a trace file made from the template trace_path, the
 * fast cost profile and a control socket directory (ctl_dir) for the
 * emulated rdma-core the test will load.
 */
static void
erdma_test_env(char *trace_path)
{
	int fd = mkstemp(trace_path);

	assert_true(fd >= 0);
	close(fd);
	setenv("MLX5_LM_ERDMA_TRACE", trace_path, 1);
	setenv("MLX5_LM_ERDMA_PROFILE", "fast", 1);
	assert_non_null(mkdtemp(ctl_dir));
	setenv("MLX5_LM_ERDMA_CONTROL", ctl_dir, 1);
}

/* What erdma_test_env made, removed. */
static void
erdma_test_env_done(const char *trace_path)
{
	rmdir(ctl_dir);
	unlink(trace_path);
}

#endif /* MLX5_LM_ERDMA_TEST_H */
