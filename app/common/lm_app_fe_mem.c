/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A front end's guest memory, found from its process id: what a back end
 * can register before the front end's SET_MEM_TABLE (QEMU sends it only
 * when it starts the device, after a migration's last pass, although the
 * destination QEMU shares its RAM from the moment it starts).
 *
 * QEMU's memory backends with share=on (memory-backend-memfd, -file on
 * hugetlbfs or /dev/shm) are shared, writable, file-backed mappings of the
 * front end, and it keeps each file's fd open to send it in SET_MEM_TABLE.
 * /proc/<pid>/maps names the mappings (device, inode, file offset, range);
 * /proc/<pid>/fd names the open files: a mapping whose file is open there
 * is re-opened through that link. Both need the right to trace pid (the
 * same uid, or CAP_SYS_PTRACE), as ptrace(2)'s access mode check says.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lm_app.h"

/* One line of /proc/<pid>/maps: "start-end perms offset maj:min inode [path]". */
struct maps_line {
	uint64_t start, end, offset;
	char perms[5];
	unsigned int major, minor;
	uint64_t inode;
	char path[PATH_MAX];
};

static int
parse_maps_line(const char *line, struct maps_line *m)
{
	int n = 0;

	m->path[0] = '\0';
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, m->perms, &m->offset, &m->major, &m->minor, &m->inode,
		   &n) < 7)
		return -1;
	if (n > 0) {
		size_t len;

		snprintf(m->path, sizeof(m->path), "%s", line + n);
		len = strlen(m->path);
		if (len > 0 && m->path[len - 1] == '\n')
			m->path[len - 1] = '\0';
	}
	return 0;
}

/*
 * Guest memory can only be a shared, writable mapping of a file: private
 * mappings (copy on write) and anonymous memory cannot be handed to a back
 * end; read-only ones are not guest RAM.
 */
static int
candidate(const struct maps_line *m, uint64_t min_size)
{
	return m->perms[0] == 'r' && m->perms[1] == 'w' && m->perms[3] == 's' && m->inode != 0 &&
	       m->end - m->start >= min_size;
}

/* The fd of pid that has the file (dev, ino) open, re-opened here; -errno when none. */
static int
open_file_of(pid_t pid, dev_t dev, uint64_t ino, char *err, size_t errlen)
{
	char dir[64], path[64 + sizeof(((struct dirent *)0)->d_name)];
	struct dirent *e;
	int fd = -ENOENT;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (d == NULL) {
		fd = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return fd;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != dev ||
		    (uint64_t)st.st_ino != ino)
			continue;
		/*
		 * The process may have put another file at that number since the
		 * stat (dup2): what was opened is checked, not the path. O_NOCTTY
		 * and O_NONBLOCK: opening whatever it is has no effect of its own.
		 */
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			fd = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != dev ||
			   (uint64_t)st.st_ino != ino) {
			close(fd);
			fd = -EAGAIN;
			snprintf(err, errlen, "%s: replaced while it was opened", path);
		}
		break;
	}
	closedir(d);
	return fd;
}

/*
 * The candidate mappings of pid into out; with open_files, each file
 * re-opened through /proc/<pid>/fd and a mapping whose file pid does not
 * hold open left out; without, every candidate listed with fd -1.
 */
static int
fe_mem_list(pid_t pid, uint64_t min_size, struct lm_app_fe_region *out, unsigned int max,
	    bool open_files, char *err, size_t errlen)
{
	char path[64], *line = NULL;
	unsigned int n = 0, i;
	size_t cap = 0;
	FILE *f;
	int ret = 0;

	err[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	while (getline(&line, &cap, f) > 0) {
		struct maps_line m;
		int fd;

		if (parse_maps_line(line, &m) < 0 || !candidate(&m, min_size))
			continue;
		/* One file mapped twice (QEMU's aliases) is one region: the first. */
		for (i = 0; i < n; i++)
			if (out[i].dev == makedev(m.major, m.minor) && out[i].ino == m.inode &&
			    out[i].offset == m.offset)
				break;
		if (i < n)
			continue;
		if (n == max) {
			snprintf(err, errlen, "more than %u shared file mappings in %s", max, path);
			ret = -E2BIG;
			break;
		}
		fd = open_files ? open_file_of(pid, makedev(m.major, m.minor), m.inode, err,
					       errlen) : -1;
		if (open_files && fd == -ENOENT) {
			/* Mapped but not open: the front end could not send it anyway. */
			err[0] = '\0';
			continue;
		}
		if (open_files && fd < 0) {
			ret = fd;
			break;
		}
		out[n].fd = fd;
		out[n].dev = makedev(m.major, m.minor);
		out[n].ino = m.inode;
		out[n].offset = m.offset;
		out[n].size = m.end - m.start;
		out[n].addr = m.start;
		snprintf(out[n].name, sizeof(out[n].name), "%s", m.path);
		n++;
	}
	free(line);
	fclose(f);
	if (ret < 0) {
		lm_app_fe_mem_close(out, n);
		return ret;
	}
	return (int)n;
}

int
lm_app_fe_mem_find(pid_t pid, uint64_t min_size, struct lm_app_fe_region *out,
		   unsigned int max, char *err, size_t errlen)
{
	return fe_mem_list(pid, min_size, out, max, true, err, errlen);
}

int
lm_app_fe_mem_layout(pid_t pid, uint64_t min_size, struct lm_app_fe_region *out,
		     unsigned int max, char *err, size_t errlen)
{
	return fe_mem_list(pid, min_size, out, max, false, err, errlen);
}

void
lm_app_fe_mem_close(struct lm_app_fe_region *r, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (r[i].fd >= 0)
			close(r[i].fd);
		r[i].fd = -1;
	}
}
