/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk-test-lm: shared helpers of the subcommands. */
#ifndef TEST_LM_H
#define TEST_LM_H

#include <stdbool.h>
#include <stddef.h>

#include "lm_app.h"

#define TEST_LM_PMD "vdpa_mlx5_lm"

/*
 * Checks made before any work starts; each prints one line naming the
 * command and option and returns -1 when the argument cannot work.
 */
int test_lm_check_profile(const char *cmd, const char *profile);
/* path can be written (an existing file is left untouched). */
int test_lm_check_output(const char *cmd, const char *opt, const char *path);
/* opt's argument s as a whole number in [min, max], or -1 after saying so. */
int test_lm_parse_uint(const char *cmd, const char *opt, const char *s, unsigned int min,
		       unsigned int max, unsigned int *out);
/*
 * name (a relative path) from this program's directory: where what is
 * installed with it lives. 0, or -1 (no /proc/self/exe, buf too small).
 */
int test_lm_exe_path(const char *name, char *buf, size_t len);

int cmd_probe(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* bench rtt: the host's vhost-user round trip (bench_rtt.c); argv[0] is "rtt". */
int bench_rtt(int argc, char **argv);
int cmd_migrate(int argc, char **argv);

#endif /* TEST_LM_H */
