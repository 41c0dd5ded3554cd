/* SPDX-License-Identifier: BSD-3-Clause */
/* dpdk-test-lm: shared helpers of the subcommands. */
#ifndef TEST_LM_H
#define TEST_LM_H

#include <stdbool.h>
#include <stddef.h>

#define TEST_LM_PMD "vdpa_mlx5_lm"

/*
 * Start EAL with defaults that need no hugepages and no root-only set-up
 * (--no-huge -m 512 --no-shconf --no-pci, a per-process file prefix), plus
 * the user's extra EAL arguments (space separated, may be NULL).
 */
int test_lm_eal_init(const char *prog, const char *extra_eal);
/* The same, with EAL's PCI bus on when pci is true. */
int test_lm_eal_init_bus(const char *prog, const char *extra_eal, bool pci);
void test_lm_eal_cleanup(void);

/*
 * Probe one device of our PMD by hotplug. On failure prints one line that
 * says why and returns a negative errno.
 */
int test_lm_probe_device(const char *devname, const char *devargs);
int test_lm_remove_device(const char *devname);

/*
 * Checks made before any work starts; each prints one line naming the
 * command and option and returns -1 when the argument cannot work.
 */
int test_lm_check_profile(const char *cmd, const char *profile);
/* path can be written (an existing file is left untouched). */
int test_lm_check_output(const char *cmd, const char *opt, const char *path);

int cmd_probe(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_migrate(int argc, char **argv);

#endif /* TEST_LM_H */
