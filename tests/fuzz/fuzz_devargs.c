/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the devargs parser (mlx5_lm_devargs_parse, on top of
 * rte_kvargs; no EAL needed). Any string: no crash, no sanitizer report,
 * and the result is coherent: on success exactly one back end is named,
 * every number is within its documented range and every string is
 * terminated; on failure the message is a terminated, non-empty string.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_lm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
is_pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static void
check(int cond, const char *what, const char *args)
{
	if (!cond) {
		fprintf(stderr, "devargs \"%s\": %s\n", args, what);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mlx5_lm_devargs a;
	char err[512];
	char *args;
	int ret;

	/* Exactly sized: reading past the terminator is a sanitizer report. */
	args = malloc(size + 1);
	if (args == NULL)
		return 0;
	memcpy(args, data, size);
	args[size] = '\0';
	memset(err, 0x5a, sizeof(err));
	ret = mlx5_lm_devargs_parse("vdpa_mlx5_lm0", args, &a, err, sizeof(err));
	if (ret < 0) {
		check(memchr(err, '\0', sizeof(err)) != NULL, "error not terminated", args);
		check(err[0] != '\0', "empty error message", args);
	} else {
		check(ret == 0, "positive return", args);
		check((a.emu[0] != '\0') + (a.ibdev[0] != '\0') + (a.pci[0] != '\0') +
		      (a.sf[0] != '\0') == 1, "not exactly one back end", args);
		check(memchr(a.emu, '\0', sizeof(a.emu)) != NULL &&
		      memchr(a.ibdev, '\0', sizeof(a.ibdev)) != NULL &&
		      memchr(a.pci, '\0', sizeof(a.pci)) != NULL &&
		      memchr(a.sf, '\0', sizeof(a.sf)) != NULL &&
		      memchr(a.uplink, '\0', sizeof(a.uplink)) != NULL &&
		      memchr(a.devx_trace, '\0', sizeof(a.devx_trace)) != NULL,
		      "string not terminated", args);
		check(a.queues <= 128, "queues out of range", args);
		check(is_pow2(a.queue_size) && a.queue_size >= 2 && a.queue_size <= 32768,
		      "queue_size out of range", args);
		check(a.precreate <= 1 && a.parallel <= 1, "boolean out of range", args);
		check(a.workers >= 1 && a.workers <= 64, "workers out of range", args);
		check(is_pow2(a.mr_chunk_mb) && a.mr_chunk_mb <= 65536,
		      "mr_chunk_mb out of range", args);
		check(a.mr_gc_ms <= 600000, "mr_gc_ms out of range", args);
		/* pci= comes back in sysfs's form, dddd:bb:dd.f. */
		check(a.pci[0] == '\0' || (strlen(a.pci) == 12 && a.pci[4] == ':' &&
					    a.pci[7] == ':' && a.pci[10] == '.'),
		      "pci not normalized", args);
	}
	free(args);
	return 0;
}
