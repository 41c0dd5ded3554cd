/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lm_app_fe_mem_find (app/common/lm_app_fe_mem.c): a front end's guest
 * memory found from its process id. A child process stands in for QEMU: a
 * memfd of guest RAM mapped shared (twice, as QEMU's aliases do, and a
 * second range of it), and mappings that are not guest memory a back end
 * could be sent (private, read-only, a file no longer open, a small one).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "lm_app.h"

#define MIB (1ull << 20)
#define RAM (64 * MIB)
#define MIN (4 * MIB)

struct child {
	pid_t pid;
	int to_child, from_child;
	struct stat ram;              /* the guest RAM file, as the child sees it */
};

static int
memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		_exit(10);
	return fd;
}

static void *
map(int fd, uint64_t size, int prot, int flags, uint64_t off)
{
	void *p = mmap(NULL, size, prot, flags, fd, (off_t)off);

	if (p == MAP_FAILED)
		_exit(11);
	return p;
}

/* The child: maps, reports the RAM file's identity, then echoes byte 0 of RAM on request. */
static void
child_main(int in, int out)
{
	int ram = memfd("guest-ram", RAM), other;
	volatile uint8_t *p;
	struct stat st;
	char c;

	p = map(ram, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	map(ram, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, 0);          /* an alias */
	map(ram, 16 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, 32 * MIB); /* another range */
	other = memfd("private", RAM);
	map(other, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0);
	other = memfd("read-only", RAM);
	map(other, RAM, PROT_READ, MAP_SHARED, 0);
	other = memfd("closed", RAM);
	map(other, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	close(other);
	other = memfd("small", MIB);
	map(other, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	if (fstat(ram, &st) < 0 || write(out, &st, sizeof(st)) != sizeof(st))
		_exit(12);
	while (read(in, &c, 1) == 1) {
		c = (char)p[0];
		if (write(out, &c, 1) != 1)
			_exit(13);
	}
	_exit(0);
}

static void
child_start(struct child *ch)
{
	int to[2], from[2];

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		close(to[1]);
		close(from[0]);
		child_main(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	ch->to_child = to[1];
	ch->from_child = from[0];
	assert_int_equal(read(ch->from_child, &ch->ram, sizeof(ch->ram)), sizeof(ch->ram));
}

static void
child_stop(struct child *ch)
{
	int status;

	close(ch->to_child);
	close(ch->from_child);
	assert_int_equal(waitpid(ch->pid, &status, 0), ch->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
test_shared_file_mappings_of_the_front_end_are_found(void **state)
{
	struct lm_app_fe_region r[16];
	struct child ch;
	char err[256], c = 0;
	uint8_t *mine;
	struct stat st;
	int n, i;

	(void)state;
	child_start(&ch);
	n = lm_app_fe_mem_find(ch.pid, MIN, r, 16, err, sizeof(err));
	if (n < 0)
		print_error("%s\n", err);
	/* The RAM from offset 0 (its alias folded in) and its range at 32 MiB, nothing else. */
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		assert_true(strstr(r[i].name, "guest-ram") != NULL);
		assert_int_equal(fstat(r[i].fd, &st), 0);
		assert_int_equal(st.st_ino, ch.ram.st_ino);
		assert_int_equal(st.st_dev, ch.ram.st_dev);
		assert_int_equal(r[i].ino, (uint64_t)ch.ram.st_ino);
	}
	/* In the order of the front end's addresses: put the range at offset 0 first. */
	if (r[0].offset != 0) {
		struct lm_app_fe_region t = r[0];

		r[0] = r[1];
		r[1] = t;
	}
	assert_int_equal(r[0].offset, 0);
	assert_int_equal(r[0].size, RAM);
	assert_int_equal(r[1].offset, 32 * MIB);
	assert_int_equal(r[1].size, 16 * MIB);
	/* The very memory the front end maps: a write here is read there. */
	mine = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, r[0].fd, 0);
	assert_true(mine != MAP_FAILED);
	mine[0] = 0x5a;
	assert_int_equal(write(ch.to_child, &c, 1), 1);
	assert_int_equal(read(ch.from_child, &c, 1), 1);
	assert_int_equal((uint8_t)c, 0x5a);
	munmap(mine, RAM);
	lm_app_fe_mem_close(r, (unsigned int)n);
	assert_int_equal(r[0].fd, -1);
	child_stop(&ch);
}

static void
test_no_room_and_no_process_are_errors_that_leave_nothing_open(void **state)
{
	struct lm_app_fe_region r[1];
	struct child ch;
	char err[256];
	int n, before, after, fd;

	(void)state;
	child_start(&ch);
	fd = dup(0);
	before = fd;
	close(fd);
	n = lm_app_fe_mem_find(ch.pid, MIN, r, 1, err, sizeof(err));
	assert_int_equal(n, -E2BIG);
	assert_true(strstr(err, "more than 1") != NULL);
	/* Nothing left open: the next fd is the one before. */
	fd = dup(0);
	after = fd;
	close(fd);
	assert_int_equal(after, before);
	child_stop(&ch);
	/* A process that is gone. */
	n = lm_app_fe_mem_find(ch.pid, MIN, r, 1, err, sizeof(err));
	assert_int_equal(n, -ENOENT);
	assert_true(strstr(err, "/maps") != NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_file_mappings_of_the_front_end_are_found),
		cmocka_unit_test(test_no_room_and_no_process_are_errors_that_leave_nothing_open),
	};

	return cmocka_run_group_tests_name("fe_mem", tests, NULL, NULL);
}
