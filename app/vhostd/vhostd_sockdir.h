/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The directory of a vhost-user socket the service creates, and may remove
 * for a dead worker: it checks the file at the path, then removes it. That
 * is safe only where nobody else can change which file a name is between
 * the two, so the directory must be one only root or the service's user
 * can change entries in (sshd's StrictModes, for one directory): owned by
 * one of them, and writable by group or others only if sticky.
 */
#ifndef VHOSTD_SOCKDIR_H
#define VHOSTD_SOCKDIR_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Open the directory of socket path sock (absolute) and check it: the fd
 * (O_DIRECTORY), *base the socket's name in it. -ENOENT no such directory,
 * -EPERM a directory others may change (msg says what and what to do),
 * other -errno; msg set on every error.
 */
int vhostd_sockdir_open(const char *sock, const char **base, char *msg, size_t len);

/* What vhostd_sock_remove_if_same() found and did. */
enum vhostd_sock_removal {
	VHOSTD_SOCK_REMOVED,   /* the socket created: removed */
	VHOSTD_SOCK_OTHER,     /* another file there (or a symlink): left alone */
	VHOSTD_SOCK_NONE,      /* nothing there (or nothing that can be looked at) */
	VHOSTD_SOCK_FAILED,    /* the socket created, its removal failed: errno says why */
};

/*
 * Remove name (in directory dfd: a vhostd_sockdir_open() fd, or AT_FDCWD)
 * only if it is still the socket the service created, the file (dev, ino),
 * never through a symlink: a file that took its path since is someone
 * else's, never ours to remove.
 */
enum vhostd_sock_removal vhostd_sock_remove_if_same(int dfd, const char *name, dev_t dev,
						    ino_t ino);

#endif /* VHOSTD_SOCKDIR_H */
