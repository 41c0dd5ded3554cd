/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * This process's threads as /proc/self/task lists them, by name: what
 * the tests check of the threads the driver and the emulator start (their
 * number, their CPUs).
 */
#ifndef LM_TEST_THREADS_H
#define LM_TEST_THREADS_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * fn(tid, name, arg) for each thread of the process (name without its
 * newline; a thread that ends meanwhile is left out) until fn returns
 * false. 0, or -1 if /proc/self/task cannot be read.
 */
static inline int
lmt_for_each_thread(bool (*fn)(int tid, const char *name, void *arg), void *arg)
{
	struct dirent *e;
	DIR *dir = opendir("/proc/self/task");

	if (dir == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL) {
		char path[300], name[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof(name), f) == NULL)
			name[0] = '\0';
		fclose(f);
		name[strcspn(name, "\n")] = '\0';
		if (!fn(atoi(e->d_name), name, arg))
			break;
	}
	closedir(dir);
	return 0;
}

#endif /* LM_TEST_THREADS_H */
