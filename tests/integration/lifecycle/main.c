/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle: every phase's group in turn (lifecycle.h), all or the
 * tests named by a filter (argv[1]); or, with --isolated NAME, one of the
 * isolated tests below, in the fresh process tc_run_isolated started.
 */
#include <stdbool.h>
#include <string.h>

#include <rte_common.h>

#include "lifecycle.h"

/* A crash there must not take the other tests down: each runs in a process of its own. */
static const struct CMUnitTest isolated_tests[] = {
	TC_TEST(isolated_failed_recreation_two_pairs),
	TC_TEST(isolated_failed_recreation_single_pair),
	TC_TEST(isolated_failed_rx_recovery),
};

int
main(int argc, char **argv)
{
	static int (*const phases[])(void) = {
		tc_run_conf, tc_run_rings, tc_run_stop, tc_run_recovery, tc_run_async,
		tc_run_logging, tc_run_threads, tc_run_umem,
	};
	bool isolated = argc == 3 && strcmp(argv[1], "--isolated") == 0;
	unsigned int i;
	int ret = 0;

	if (isolated && tc_check_inherited_fds() < 0)
		return 1;
	/* One socket for the whole run; each test attaches its own device to it. */
	if (lmh_main_init(argv[0], isolated ? argv[2] : argc == 2 ? argv[1] : NULL,
			  "test-lifecycle", 1) < 0)
		return 1;
	if (isolated)
		ret = cmocka_run_group_tests_name("isolated", isolated_tests, NULL, NULL);
	for (i = 0; !isolated && i < RTE_DIM(phases); i++)
		ret += phases[i]();
	lmh_fini();
	return ret;
}
