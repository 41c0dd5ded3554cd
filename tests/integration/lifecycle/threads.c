/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_lifecycle, the driver's threads and fds: its threads stay off the
 * lcores' CPUs, a stop makes no thread, and the fd table is sized at
 * probe for every ring so that vhost's thread never waits for it to grow.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_lcore.h>

#include "mlx5_lm_pool.h"
#include "mlx5_lm_test.h"

#include "lifecycle.h"
#include "../../lm_threads.h"

struct off_lcore {
	const char *prefix;
	rte_cpuset_t lcore;
	bool several;
	unsigned int threads;
};

static bool
check_off_lcore(int tid, const char *name, void *arg)
{
	struct off_lcore *o = arg;
	cpu_set_t set, both;

	if (strncmp(name, o->prefix, strlen(o->prefix)) != 0)
		return true;
	assert_int_equal(sched_getaffinity(tid, sizeof(set), &set), 0);
	CPU_AND(&both, &set, &o->lcore);
	if (o->several && CPU_COUNT(&both) != 0) {
		print_error("thread %d (%s) may run on the lcore's CPU\n", tid, name);
		fail();
	}
	o->threads++;
	return true;
}

/*
 * The driver's threads whose name starts with prefix: none may run on the
 * main lcore's CPU when the machine has another (EAL's control CPUs are
 * the others). Returns how many there are.
 */
static unsigned int
driver_threads_off_the_lcore(const char *prefix)
{
	struct off_lcore o = {
		.prefix = prefix,
		.lcore = rte_lcore_cpuset(rte_get_main_lcore()),
		.several = sysconf(_SC_NPROCESSORS_ONLN) >= 2,
	};

	assert_int_equal(lmt_for_each_thread(check_off_lcore, &o), 0);
	return o.threads;
}

/*
 * The driver's threads name themselves once they run, and nobody waits for
 * that: look (bounded) until at least n threads named prefix* run off the
 * lcore. Returns how many there are then.
 */
static unsigned int
wait_driver_threads(const char *prefix, unsigned int n)
{
	int64_t deadline = lmh_now_ms() + DEADLINE_MS;
	unsigned int seen;

	while ((seen = driver_threads_off_the_lcore(prefix)) < n && lmh_now_ms() < deadline)
		lmh_tick();
	return seen;
}

/*
 * The PMD's threads (pool workers, configuration, deferred work,
 * notifications) are DPDK control threads: none runs on the CPU of an lcore,
 * where an application polls (the harness's EAL has lcore 0 only). Created
 * with plain pthread_create they inherited the main lcore's CPU: the whole
 * driver then shared one CPU with the application (measured in the
 * benchmark's downtime).
 */
static void
test_driver_threads_stay_off_the_lcores(void **state)
{
	const unsigned int pairs = 2;
	struct tc *t = *state;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		print_message("one CPU: EAL's control CPUs are the lcore's, nothing to check\n");
		skip();
	}
	t->g[0] = tc_start(t, pairs, NULL);
	/* At least a worker, the configuration thread and the notification thread. */
	assert_true(wait_driver_threads("mlx5-lm-", 3) >= 3);
	tc_disconnect(t);
	tc_remove(t);
}

/* The size of this process's fd table (/proc/self/status FDSize), or 0. */
static unsigned long
fd_table_size(void)
{
	char line[128];
	unsigned long n = 0;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "FDSize: %lu", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

/*
 * Descriptors vhost receives in its thread (a kick and a call eventfd per
 * ring) must not make the kernel grow the fd table there: expand_fdtable
 * waits for an RCU grace period (15 ms measured with 8 VMs starting at
 * once, in the downtime of all of them). The driver sizes the table at
 * probe for every ring of every probed device: both ends of each eventfd
 * and the relay's duplicates of the kick and call fds, 6 per ring.
 */
static void
test_fd_table_sized_at_probe_for_every_ring(void **state)
{
	const unsigned int pairs = 64;
	struct tc *t = *state;
	int low;

	tc_probe(t, pairs, NULL);
	low = open("/dev/null", O_RDONLY);
	assert_true(low >= 0);
	close(low);
	if (fd_table_size() < (unsigned long)low + 6 * 2 * pairs) {
		print_error("fd table of %lu for %u rings above fd %d\n", fd_table_size(),
			    2 * pairs, low);
		fail();
	}
	tc_remove(t);
}

/*
 * A stop runs in vhost's thread, inside the downtime of every VM whose
 * messages queue behind it: it must not wait for a thread to be scheduled
 * (rte_ctrl_thread_create polls until its new thread runs: 2.6 ms of each
 * stop measured with 8 VMs stopping at once on 2 CPUs), nor make one at
 * all: the deferred restore is the device's worker's job, and the worker
 * is the one thread of the device it was before the stop.
 */
static void
test_stop_makes_no_thread(void **state)
{
	const unsigned int pairs = 2, nrings = 2 * pairs;
	struct tc *t = *state;
	uint32_t bases[MAX_RINGS];
	unsigned int before;
	uint64_t made;

	tc_start(t, pairs, "mr_gc_ms=600000");
	before = wait_driver_threads("mlx5-lm-", 3);
	made = mlx5_lm_ctrl_thread_creates();
	assert_int_equal(vu_stop_device(t->c, bases, nrings), 0);
	assert_int_equal(mlx5_lm_ctrl_thread_creates(), made);
	/* Deferred (ten minutes): the worker holds it, no thread waits for it. */
	assert_int_equal(mlx5_lm_restore_pending(t->d.dev), 1);
	assert_int_equal(driver_threads_off_the_lcore("mlx5-lm-"), before);
	tc_disconnect(t);
	tc_remove(t);
}

int
tc_run_threads(void)
{
	static const struct CMUnitTest tests[] = {
		TC_TEST(test_driver_threads_stay_off_the_lcores),
		TC_TEST(test_fd_table_sized_at_probe_for_every_ring),
		TC_TEST(test_stop_makes_no_thread),
	};

	return cmocka_run_group_tests_name("lifecycle: threads and fds", tests, NULL, NULL);
}
