/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dpdk-test-lm and mlx5-lm-vhostd's workers share: EAL start-up with
 * defaults that need no hugepages, device hotplug, the checks made on a
 * vhost-user socket path before vhost sees it, and the vhost-user set-up
 * of one vDPA device (the vetting of every message).
 */
#ifndef LM_APP_H
#define LM_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LM_APP_PMD "vdpa_mlx5_lm"

/*
 * Start EAL with defaults that need no hugepages and no root-only set-up
 * (--no-huge -m 512 --no-shconf --no-pci, a per-process file prefix), plus
 * the user's extra EAL arguments (space separated, may be NULL).
 */
int lm_app_eal_init(const char *prog, const char *extra_eal);
/* The same, with EAL's PCI bus on when pci is true. */
int lm_app_eal_init_bus(const char *prog, const char *extra_eal, bool pci);
/* Before lm_app_eal_init: the --file-prefix to use (default test-lm-<pid>). */
void lm_app_eal_set_prefix(const char *prefix);
void lm_app_eal_cleanup(void);

/*
 * Probe one device of our PMD by hotplug. On failure prints one line that
 * says why and returns a negative errno.
 */
int lm_app_probe_device(const char *devname, const char *devargs);
int lm_app_remove_device(const char *devname);

/*
 * A listening socket path, checked before vhost sees it: vhost unlinks a
 * server's path when its start fails or at unregister, whatever is there
 * (a regular file, a symlink's target name), and explains a failed bind in
 * three generic lines. Returns 0 when the path is free, 1 when a stale
 * socket (nobody answers on it) was removed, -1 when it cannot be used;
 * msg gets one line saying what happened and, on -1, what to do.
 */
int lm_app_sock_check(const char *path, char *msg, size_t len);

/*
 * Who may connect to a server socket: its group (gid, or (gid_t)-1 to
 * keep the creator's) and its permission bits (mode & 0777).
 */
struct lm_app_sock_perm {
	gid_t gid;
	mode_t mode;
};

/*
 * A socket's mode as an operator writes it, "0660": 3 or 4 octal digits,
 * permission bits only (at most 0777). 0 with *mode, or -1.
 */
int lm_app_sock_parse_mode(const char *s, unsigned int *mode);

/*
 * The umask under which a socket to be given perm is bound: it is created
 * with no more than perm's owner bits, so that nobody else can connect
 * before lm_app_sock_set_perm() gives it its group, then its mode.
 */
mode_t lm_app_sock_perm_umask(const struct lm_app_sock_perm *perm);
/*
 * The socket file at path (just bound by us) given perm: through one fd
 * of the file (O_PATH, never through a symlink), the group first, then the
 * mode. 0, or -1 with msg saying what failed.
 */
int lm_app_sock_set_perm(const char *path, const struct lm_app_sock_perm *perm, char *msg,
			 size_t len);

struct rte_vdpa_device;
struct rte_vhost_device_ops;

/*
 * Serve vDPA device vdpa on vhost-user socket path (client: connect to
 * the front end's socket and reconnect when it goes, instead of
 * listening): register, attach, callbacks, start. The features offered are
 * the device's within vhost's own list (see lm_app_vhost.c for why not all
 * of them). 
 * ops must call lm_app_vhost_vet() from new_connection. 0, or -1 with the
 * reason in msg and nothing left registered.
 */
int lm_app_vhost_start(const char *path, struct rte_vdpa_device *vdpa, bool client,
		       const struct rte_vhost_device_ops *ops, char *msg, size_t len);
/*
 * The same, a server's socket given perm (NULL: as the process's umask
 * makes it) with no moment at which more than perm allows may connect.
 */
int lm_app_vhost_start_perm(const char *path, struct rte_vdpa_device *vdpa, bool client,
			    const struct lm_app_sock_perm *perm,
			    const struct rte_vhost_device_ops *ops, char *msg, size_t len);
void lm_app_vhost_stop(const char *path);

/*
 * For new_connection: vet every message of vhost device vid before
 * vhost uses it, and close its connection when a message's payload does
 * not arrive within msg_timeout_ms (0: never). -1 (refuse the connection)
 * when the vetting cannot be installed; msg says what happened (also on a
 * missing timeout, which is not fatal: msg non-empty, 0 returned).
 */
int lm_app_vhost_vet(int vid, unsigned int msg_timeout_ms, char *msg, size_t len);
/* The message timeout serve, the service's workers and migrate use unless told. */
#define LM_APP_MSG_TIMEOUT_MS 3000
/* lm_app_vhost_vet as a new_connection callback wants it: msg on stderr after "who: ". */
int lm_app_vhost_vet_stderr(int vid, unsigned int msg_timeout_ms, const char *who);

/*
 * A front end's guest memory, found from its process id (lm_app_fe_mem.c):
 * one shared, writable, file-backed mapping (memfd, hugetlbfs, /dev/shm),
 * its file re-opened here.
 */
struct lm_app_fe_region {
	int fd;                 /* O_RDWR, the caller's (lm_app_fe_mem_close) */
	uint64_t dev, ino;      /* the file's identity (st_dev, st_ino) */
	uint64_t offset;        /* file offset of the mapping */
	uint64_t size;
	uint64_t addr;          /* where the front end maps it, for messages */
	char name[64];          /* the file's name in /proc/<pid>/maps */
};

/*
 * The shared, writable, file-backed mappings of process pid of at least
 * min_size bytes whose file pid holds open (QEMU keeps each memory
 * backend's fd to send it in SET_MEM_TABLE), each file re-opened through
 * /proc/<pid>/fd. Needs the right to trace pid (same uid, or
 * CAP_SYS_PTRACE). The count found (>= 0), or a negative errno with the
 * reason in err and nothing left open.
 */
int lm_app_fe_mem_find(pid_t pid, uint64_t min_size, struct lm_app_fe_region *out,
		       unsigned int max, char *err, size_t errlen);
/*
 * The same mappings as lm_app_fe_mem_find without opening anything (fd -1,
 * and a mapping is listed whether or not pid holds its file open): cheap
 * enough to watch a process's memory appear (vhostd's automatic
 * preparation). Needs the right to read /proc/<pid>/maps, as above.
 */
int lm_app_fe_mem_layout(pid_t pid, uint64_t min_size, struct lm_app_fe_region *out,
			 unsigned int max, char *err, size_t errlen);
void lm_app_fe_mem_close(struct lm_app_fe_region *r, unsigned int n);

#endif /* LM_APP_H */
