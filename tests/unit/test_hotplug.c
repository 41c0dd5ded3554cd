/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device's probe and removal through DPDK's hotplug, and what they
 * share with the other devices of the process: the fd table grown for
 * what the probed devices may hold, the garbage thread and the pool of
 * MKEY workers, which the first probe starts and the last removal stops;
 * a probe whose vDPA registration fails, found meanwhile by a public call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* fopencookie */
#endif
#include <errno.h>
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
#include "mlx5_lm_dpdk.h"
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

/* ---- a failed vDPA registration ------------------------------------------------ */

/*
 * What rte_vdpa_register_device reads of a struct rte_device (opaque in the
 * public headers; ABI 23 dev_driver.h): its name, after the list linkage.
 * A vDPA device registered under this name makes the probe's own
 * registration fail ("already registered"), the one seam that does.
 */
struct name_only_device {
	void *next[2];
	const char *name;
	void *rest[5];
};

static int
stub_queue_num(struct rte_vdpa_device *d, uint32_t *n)
{
	(void)d;
	*n = 1;
	return 0;
}

static int
stub_features(struct rte_vdpa_device *d, uint64_t *f)
{
	(void)d;
	*f = 0;
	return 0;
}

static int
stub_vid(int vid)
{
	(void)vid;
	return 0;
}

static int
stub_vring_state(int vid, int vring, int state)
{
	(void)vid;
	(void)vring;
	(void)state;
	return 0;
}

static struct rte_vdpa_dev_ops stub_ops = {
	.get_queue_num = stub_queue_num,
	.get_features = stub_features,
	.get_protocol_features = stub_features,
	.dev_conf = stub_vid,
	.dev_close = stub_vid,
	.set_vring_state = stub_vring_state,
	.set_features = stub_vid,
};

/*
 * A public call that finds the device listed while its probe fails: taken
 * by the probe's own thread when it logs the failure (the device is
 * listed then), held by a thread of its own until the probe returns or a
 * bound, whichever first.
 */
struct holder {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct mlx5_lm_dev *dev;
	pthread_t thread;
	bool armed, started, probe_returned, released;
};

static struct holder holder = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

/* How long the holder keeps the device if the probe waits for it (it must). */
#define HOLD_MS 300

static void *
hold(void *arg)
{
	struct holder *h = arg;
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_nsec += (HOLD_MS % 1000) * 1000000L;
	end.tv_sec += HOLD_MS / 1000 + end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&h->lock);
	while (!h->probe_returned &&
	       pthread_cond_timedwait(&h->cv, &h->lock, &end) != ETIMEDOUT)
		;
	/* A probe that returned while the device was held freed it: not touched then. */
	h->released = !h->probe_returned;
	pthread_mutex_unlock(&h->lock);
	if (h->released)
		mlx5_lm_dev_put(h->dev);
	return NULL;
}

static ssize_t
log_write(void *cookie, const char *buf, size_t len)
{
	struct holder *h = cookie;

	fwrite(buf, 1, len, stdout);
	if (h->armed && memmem(buf, len, "rte_vdpa_register_device failed", 31) != NULL) {
		h->armed = false;
		h->dev = mlx5_lm_dev_get(DEV);
		if (h->dev != NULL)
			h->started = pthread_create(&h->thread, NULL, hold, h) == 0;
	}
	return (ssize_t)len;
}

/*
 * The probe lists the device before it registers it with vDPA: a public
 * call may find it then, and the failed registration must wait for that
 * call as a removal does before the device is freed (it freed it under the
 * caller before).
 */
static void
test_a_failed_registration_waits_for_the_callers_that_found_it(void **state)
{
	cookie_io_functions_t io = { .write = log_write };
	struct name_only_device other = { .name = DEV };
	struct rte_vdpa_device *taken;
	FILE *logf;
	int ret;

	(void)state;
	taken = rte_vdpa_register_device((struct rte_device *)&other, &stub_ops);
	assert_non_null(taken);
	logf = fopencookie(&holder, "w", io);
	assert_non_null(logf);
	setvbuf(logf, NULL, _IOLBF, 0);
	rte_openlog_stream(logf);
	holder.armed = true;
	ret = rte_eal_hotplug_add("vdev", DEV, DEV_ARGS);
	pthread_mutex_lock(&holder.lock);
	holder.probe_returned = true;
	pthread_cond_broadcast(&holder.cv);
	pthread_mutex_unlock(&holder.lock);
	rte_openlog_stream(NULL);
	fclose(logf);
	assert_int_equal(rte_vdpa_unregister_device(taken), 0);
	assert_true(ret < 0);
	assert_true(holder.started);
	assert_int_equal(pthread_join(holder.thread, NULL), 0);
	printf("  the probe failed (%d) %s the caller let go of the device\n", ret,
	       holder.released ? "after" : "BEFORE");
	assert_true(holder.released);
	/* The name free again, the device probes. */
	assert_int_equal(rte_eal_hotplug_add("vdev", DEV, DEV_ARGS), 0);
	assert_int_equal(rte_eal_hotplug_remove("vdev", DEV), 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_removed_device_gives_its_fd_share_back),
		cmocka_unit_test(test_a_failed_registration_waits_for_the_callers_that_found_it),
	};
	char prefix[64];
	char *eal[] = { "test_hotplug", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
			"--no-telemetry", "--log-level=lib.eal:warning", prefix, NULL };

	snprintf(prefix, sizeof(prefix), "--file-prefix=test-hotplug-%d", (int)getpid());
	if (rte_eal_init(9, eal) < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
