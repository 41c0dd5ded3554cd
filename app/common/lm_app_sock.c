/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The checks made on a vhost-user socket path before vhost sees it (see
 * lm_app.h): never over a file we did not create, never through a
 * symlink, never over a live server; one line that says what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>

#include "lm_app.h"

/* A socket exists at path (lstat said so): 0 stale and removed, -1 otherwise. */
static int
remove_if_stale(const char *path, char *msg, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc, err;

	memcpy(sa.sun_path, path, strlen(path) + 1);
	/*
	 * Non-blocking: a blocking connect to a live listener whose queue of
	 * connections is full (it listens, never accepts) waits until it
	 * accepts, maybe never, and the caller (a VM's worker, the service
	 * starting) with it. Non-blocking, that listener answers EAGAIN at once.
	 */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(msg, len, "cannot check socket %s: %s", path, strerror(errno));
		return -1;
	}
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	err = errno;
	close(fd);
	if (rc == 0) {
		snprintf(msg, len, "%s is served by another process: stop it or choose "
			 "another path", path);
		return -1;
	}
	/* A listener that exists but takes no connection now: alive all the same. */
	if (err == EAGAIN || err == EINPROGRESS) {
		snprintf(msg, len, "%s is served by another process (in use by a live listener "
			 "that accepts no connection now): stop it or choose another path", path);
		return -1;
	}
	errno = err;
	if (errno != ECONNREFUSED) {
		snprintf(msg, len, "cannot check socket %s: %s", path, strerror(errno));
		return -1;
	}
	/* Nobody listens: a server that died left it; ours replaces it. */
	if (unlink(path) < 0) {
		snprintf(msg, len, "cannot remove stale socket %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(msg, len, "removed stale socket %s (nobody was listening)", path);
	return 0;
}

/* The directory path would be created in: exists, writable, not read-only. */
static int
check_dir(const char *path, char *msg, size_t len)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct statvfs vfs;
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(msg, len, "cannot create socket %s: directory %s does not exist: "
			 "create it first (mkdir -p %s)", path, dir, dir);
		return -1;
	}
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
		snprintf(msg, len, "cannot create socket %s: %s is on a read-only file system: "
			 "choose a path on a writable one", path, dir);
		return -1;
	}
	if (access(dir, W_OK | X_OK) < 0) {
		snprintf(msg, len, "cannot create socket %s: no permission to write in %s: "
			 "choose another directory or run as a user who may write there",
			 path, dir);
		return -1;
	}
	return 0;
}

int
lm_app_sock_check(const char *path, char *msg, size_t len)
{
	struct sockaddr_un sa;
	struct stat st;

	msg[0] = '\0';
	/* "" would reach bind() as an unnamed (abstract, autobound) address: no file at all. */
	if (path[0] == '\0') {
		snprintf(msg, len, "the socket path is empty: give one");
		return -1;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(msg, len, "socket path %s is longer than %zu bytes, the limit of a "
			 "unix socket: choose a shorter path", path, sizeof(sa.sun_path) - 1);
		return -1;
	}
	/* lstat: a symlink is "not a socket", whatever it points at. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(msg, len, "%s exists and is not a socket: not replacing it; "
				 "remove it yourself or choose another path", path);
			return -1;
		}
		return remove_if_stale(path, msg, len) == 0 ? 1 : -1;
	}
	if (errno != ENOENT) {
		snprintf(msg, len, "cannot use socket path %s: %s", path, strerror(errno));
		return -1;
	}
	return check_dir(path, msg, len);
}

int
lm_app_sock_parse_mode(const char *s, unsigned int *mode)
{
	size_t n = strlen(s), i;
	unsigned int m = 0;

	/* No setuid, setgid or sticky bit: they mean nothing on a socket. */
	if (n < 3 || n > 4 || (n == 4 && s[0] != '0'))
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '7')
			return -1;
		m = m * 8 + (unsigned int)(s[i] - '0');
	}
	*mode = m;
	return 0;
}

mode_t
lm_app_sock_perm_umask(const struct lm_app_sock_perm *perm)
{
	return 0777 & ~(perm->mode & 0700);
}

int
lm_app_sock_set_perm(const char *path, const struct lm_app_sock_perm *perm, char *msg,
		     size_t len)
{
	char self[64];
	struct stat st;
	int fd, ret = -1;

	/* One fd of the file bound: what is checked is what is changed. */
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(msg, len, "socket %s: cannot set its group and mode: %s", path,
			 strerror(errno));
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(msg, len, "socket %s: not a socket once bound: its group and mode left "
			 "unset", path);
		goto out;
	}
	/* The group while only the owner may connect; the wider mode after it. */
	if (perm->gid != (gid_t)-1 && fchownat(fd, "", (uid_t)-1, perm->gid, AT_EMPTY_PATH) < 0) {
		snprintf(msg, len, "socket %s: cannot give it group %u: %s", path,
			 (unsigned int)perm->gid, strerror(errno));
		goto out;
	}
	/* An O_PATH fd takes no fchmod; its /proc link names the same file. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (chmod(self, perm->mode & 0777) < 0) {
		snprintf(msg, len, "socket %s: cannot give it mode %04o: %s", path,
			 (unsigned int)(perm->mode & 0777), strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}
