/* SPDX-License-Identifier: BSD-3-Clause */
/* The directory of a vhost-user socket, checked (see vhostd_sockdir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "vhostd_config.h"
#include "vhostd_sockdir.h"

int
vhostd_sockdir_open(const char *sock, const char **base, char *msg, size_t len)
{
	const char *slash = strrchr(sock, '/');
	char dir[VHOSTD_SOCKET_MAX];
	struct stat st;
	int fd, err;

	if (slash == NULL || strlen(sock) >= sizeof(dir)) {
		snprintf(msg, len, "socket %s: not an absolute path", sock);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash == sock ? 1 : (int)(slash - sock), sock);
	*base = slash + 1;
	/*
	 * The path is followed as the worker followed it to create the socket
	 * (/var/run is a symlink): what is checked is the directory reached,
	 * and the fd keeps it whatever its path names later.
	 */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		snprintf(msg, len, "directory %s of socket %s: %s", dir, sock, strerror(err));
		return -err;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		snprintf(msg, len, "directory %s of socket %s: %s", dir, sock, strerror(err));
		goto err_close;
	}
	err = EPERM;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(msg, len, "directory %s of socket %s is owned by uid %u, neither root "
			 "nor the service's user (uid %u): its owner could swap the socket for "
			 "another file; choose a directory of root's or the service's user", dir,
			 sock, (unsigned int)st.st_uid, (unsigned int)geteuid());
		goto err_close;
	}
	/* Sticky: others may add names, but not remove or rename the service's. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
		snprintf(msg, len, "directory %s of socket %s is writable by group or others "
			 "(mode %04o) and not sticky: they could swap the socket for another "
			 "file; chmod go-w %s (or +t), or choose another directory", dir, sock,
			 (unsigned int)(st.st_mode & 07777), dir);
		goto err_close;
	}
	return fd;
err_close:
	close(fd);
	return -err;
}

enum vhostd_sock_removal
vhostd_sock_remove_if_same(int dfd, const char *name, dev_t dev, ino_t ino)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return VHOSTD_SOCK_NONE;
	if (!S_ISSOCK(st.st_mode) || st.st_dev != dev || st.st_ino != ino)
		return VHOSTD_SOCK_OTHER;
	return unlinkat(dfd, name, 0) < 0 ? VHOSTD_SOCK_FAILED : VHOSTD_SOCK_REMOVED;
}
