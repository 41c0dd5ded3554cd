/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's preparation of a device from a front end's process id
 * (app/vhostd/vhostd_prepare.c), with the PMD played by this test: the
 * files a child process maps are found and handed over for that process,
 * and a process that exits while it is being prepared (its pid free to
 * name another process by the time the PMD watches it) gets its
 * preparation cancelled instead of reported.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rte_pmd_mlx5_lm.h"
#include "vhostd_devinfo.h"

#define MEM_BYTES (4u << 20)

/* ---- the PMD, as the test plays it ---------------------------------------------- */

static struct {
	int prepares, cancels;
	int pid;
	unsigned int n;
	uint64_t bytes;
	pid_t kill_child;     /* > 0: this child is killed and reaped inside the prepare */
} pmd;

int
rte_pmd_mlx5_lm_prepare(const char *name, int pid, const struct rte_pmd_mlx5_lm_prep_region *r,
			unsigned int n)
{
	unsigned int i;

	(void)name;
	pmd.prepares++;
	pmd.pid = pid;
	pmd.n = n;
	for (i = 0; i < n; i++)
		pmd.bytes += r[i].size;
	if (pmd.kill_child > 0) {
		kill(pmd.kill_child, SIGKILL);
		(void)waitpid(pmd.kill_child, NULL, 0);
		pmd.kill_child = 0;
	}
	return 0;
}

int
rte_pmd_mlx5_lm_prepare_cancel(const char *name)
{
	(void)name;
	pmd.cancels++;
	return 0;
}

int
rte_pmd_mlx5_lm_prepare_status(const char *name, struct rte_pmd_mlx5_lm_prep_status *st)
{
	(void)name;
	(void)st;
	return -ENODEV;
}

/* ---- a front end: a child mapping a shared memory file it holds open ------------ */

struct fe {
	pid_t pid;
	int release;          /* closed: the child exits */
};

static void
fe_start(struct fe *f)
{
	int ready[2], rel[2];
	char b = 0;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(rel), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		int fd = memfd_create("guest-ram", 0);
		void *p;

		close(ready[0]);
		close(rel[1]);
		if (fd < 0 || ftruncate(fd, MEM_BYTES) != 0)
			_exit(1);
		p = mmap(NULL, MEM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(1);
		(void)!write(ready[1], &b, 1);
		(void)!read(rel[0], &b, 1);
		_exit(0);
	}
	close(ready[1]);
	close(rel[0]);
	/* Its mapping exists once it says so (or it failed: EOF). */
	assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);
	f->release = rel[1];
}

static void
fe_stop(struct fe *f)
{
	close(f->release);
	if (f->pid > 0)
		(void)waitpid(f->pid, NULL, 0);
}

/* ---- tests --------------------------------------------------------------------- */

static void
test_a_front_ends_files_are_prepared_for_it(void **state)
{
	char err[256] = "";
	struct fe f;
	json_t *j;

	(void)state;
	memset(&pmd, 0, sizeof(pmd));
	fe_start(&f);
	j = vhostd_worker_prepare("dev0", f.pid, err, sizeof(err));
	if (j == NULL)
		print_error("refused: %s\n", err);
	assert_non_null(j);
	assert_int_equal(pmd.prepares, 1);
	assert_int_equal(pmd.pid, f.pid);
	assert_int_equal(pmd.n, 1);
	assert_int_equal(pmd.bytes, MEM_BYTES);
	assert_int_equal(pmd.cancels, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), f.pid);
	json_decref(j);
	fe_stop(&f);
}

static void
test_a_front_end_gone_while_prepared_is_cancelled(void **state)
{
	char err[256] = "";
	struct fe f;
	json_t *j;

	(void)state;
	memset(&pmd, 0, sizeof(pmd));
	fe_start(&f);
	pmd.kill_child = f.pid;
	j = vhostd_worker_prepare("dev0", f.pid, err, sizeof(err));
	assert_null(j);
	printf("  %s\n", err);
	assert_int_equal(pmd.prepares, 1);
	assert_int_equal(pmd.cancels, 1);
	assert_non_null(strstr(err, "exited while it was being prepared"));
	f.pid = 0;            /* reaped by the prepare */
	fe_stop(&f);
}

static void
test_a_process_that_is_gone_is_refused_before_anything(void **state)
{
	char err[256] = "";
	struct fe f;

	(void)state;
	memset(&pmd, 0, sizeof(pmd));
	fe_start(&f);
	fe_stop(&f);
	assert_null(vhostd_worker_prepare("dev0", f.pid, err, sizeof(err)));
	printf("  %s\n", err);
	assert_int_equal(pmd.prepares, 0);
	assert_int_equal(pmd.cancels, 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_front_ends_files_are_prepared_for_it),
		cmocka_unit_test(test_a_front_end_gone_while_prepared_is_cancelled),
		cmocka_unit_test(test_a_process_that_is_gone_is_refused_before_anything),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
