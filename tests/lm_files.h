/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Files the tests need on a particular kind of filesystem.
 */
#ifndef LM_TEST_FILES_H
#define LM_TEST_FILES_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

/*
 * An fd of a file of size bytes, unlinked, on a filesystem that writes
 * dirty pages back (ext4, xfs, btrfs: what Linux 6.5+ does not pin for a
 * device's writes): in the working directory (the build directory), else
 * /var/tmp. -1 when neither is one (tmpfs, ramfs or hugetlbfs).
 */
static inline int
lmf_writeback_file(uint64_t size)
{
	const char *dirs[] = { ".", "/var/tmp" };
	unsigned int i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[256];
		struct statfs fs;
		int fd;

		if (statfs(dirs[i], &fs) < 0 || fs.f_type == TMPFS_MAGIC ||
		    fs.f_type == (typeof(fs.f_type))RAMFS_MAGIC ||
		    fs.f_type == (typeof(fs.f_type))HUGETLBFS_MAGIC)
			continue;
		snprintf(path, sizeof(path), "%s/lm-writeback-XXXXXX", dirs[i]);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			continue;
		unlink(path);
		if (ftruncate(fd, (off_t)size) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

#endif
