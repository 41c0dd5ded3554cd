/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device's probe and removal through DPDK's hotplug, and what they
 * share with the other devices of the process: the fd table grown for
 * what the probed devices may hold, the garbage thread and the pool of
 * MKEY workers, which the first probe starts and the last removal stops.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_dev.h>
#include <rte_eal.h>

#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_pool.h"

#define DEV "vdpa_mlx5_lm7"
#define DEV_ARGS "emu=fast,queues=1,workers=1,precreate=0"

/* The process's fd table (FDSize in /proc/self/status): it never shrinks. */
static long
fd_table_size(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "FDSize: %ld", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

/*
 * The fd table is grown at probe for what the probed devices may hold at
 * once. A device probed and removed 200 times, one at a time, may hold
 * what one device holds: the table stays that size. The removal used to
 * keep its share counted, and the table grew to RLIMIT_NOFILE.
 */
static void
test_a_removed_device_gives_its_fd_share_back(void **state)
{
	struct rlimit rl;
	long one, after;
	int i;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(rte_eal_hotplug_add("vdev", DEV, DEV_ARGS), 0);
	one = fd_table_size();
	assert_int_equal(rte_eal_hotplug_remove("vdev", DEV), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(rte_eal_hotplug_add("vdev", DEV, DEV_ARGS), 0);
		assert_int_equal(rte_eal_hotplug_remove("vdev", DEV), 0);
	}
	after = fd_table_size();
	printf("  fd table: %ld entries with the device probed once, %ld after 200 probes "
	       "and removals (RLIMIT_NOFILE %lu)\n", one, after, (unsigned long)rl.rlim_cur);
	assert_true(after <= 2 * one);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_removed_device_gives_its_fd_share_back),
	};
	char prefix[64];
	char *eal[] = { "test_hotplug", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
			"--no-telemetry", "--log-level=lib.eal:warning", prefix, NULL };

	snprintf(prefix, sizeof(prefix), "--file-prefix=test-hotplug-%d", (int)getpid());
	if (rte_eal_init(9, eal) < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
