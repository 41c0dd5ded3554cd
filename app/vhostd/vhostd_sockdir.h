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

/*
 * Open the directory of socket path sock (absolute) and check it: the fd
 * (O_DIRECTORY), *base the socket's name in it. -ENOENT no such directory,
 * -EPERM a directory others may change (msg says what and what to do),
 * other -errno; msg set on every error.
 */
int vhostd_sockdir_open(const char *sock, const char **base, char *msg, size_t len);

#endif /* VHOSTD_SOCKDIR_H */
