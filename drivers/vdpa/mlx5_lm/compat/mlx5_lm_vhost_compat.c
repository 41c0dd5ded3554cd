/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMD's workarounds for the DPDK it runs with, each with the reason it
 * exists and the DPDK versions that need it. All are needed with DPDK 22.11
 * (what the PMD builds against: Debian 12) and, read against each
 * release's lib/vhost, still with 23.11. Beside this file, mlx5_lm_dpdk.h
 * declares the driver-SDK types that Debian's DPDK does not install.
 *
 * 1. Message vetting (rte_pmd_mlx5_lm_vhost_vet, vhost's pre_msg_handle).
 *    vhost maps what the front end describes without checking it against
 *    the file behind the fd, and handles some requests whatever was
 *    negotiated:
 *    - SET_MEM_TABLE / ADD_MEM_REG: a region whose mmap_offset + size lies
 *      past the end of its file maps fine, and the first access to the
 *      part beyond (vhost reading a ring at SET_VRING_KICK, the device's
 *      data path) is a SIGBUS that kills the process;
 *    - SET_LOG_BASE: vhost maps mmap_size + mmap_offset bytes of the log
 *      fd from offset 0 and logs at addr + mmap_offset; a file smaller
 *      than that makes the log writes (rte_vhost_log_used_vring, the
 *      device's dirty bits) a SIGBUS. QEMU always sends offset 0
 *      (vhost-user.rst, "Log memory"): anything else is refused;
 *    - requests of protocol features that were not negotiated (inflight
 *      fd, memory slots, postcopy, IOTLB without IOMMU_PLATFORM): vhost
 *      handles SET_INFLIGHT_FD anyway and writes into the front end's
 *      mapping whatever its size.
 *    A pre_msg_handle receives vhost's private message context (struct
 *    vhu_msg_context, lib/vhost/vhost_user.h), which no public header
 *    describes: struct vet_msg overlays it. Its layout is 22.11's (the
 *    same through 23.11), and the vetting registers itself on 22.11 only.
 * 2. The back-end channel's reply bounded (SET_BACKEND_REQ_FD): vhost
 *    waits for the front end's answer to its own requests (host notifiers)
 *    with a blocking read on its one thread; a receive timeout on its end
 *    of the channel bounds that wait.
 * 3. The dirty log moved at SET_LOG_BASE: vhost remaps the log with no
 *    callback to the vDPA driver (rte_vdpa_dev_ops has none), while the
 *    device goes on writing dirty bits into the old one; the vetting hands
 *    the new log to the driver (mlx5_lm_log_rebase) before vhost replies.
 * 4. A receive timeout on the connection (rte_pmd_mlx5_lm_vhost_msg_timeout):
 *    vhost reads a message's payload with a blocking read() on its one
 *    thread, so a front end announcing a payload it never sends stops every
 *    socket's messages until it leaves. vhost gives the application no
 *    handle on the connection: its socket is found in /proc/self/fd by
 *    address.
 * 5. The queues configured ahead of DRIVER_OK (mlx5_lm_preconf.c): vDPA
 *    drivers get no callback for SET_MEM_TABLE (after which a prepared
 *    table can be registered) nor for SET_VRING_KICK, after which vhost
 *    holds everything a ring's queue needs; the post_msg_handle that
 *    rte_pmd_mlx5_lm_vhost_vet_register() also registers tells the driver.
 *
 * An application registers rte_pmd_mlx5_lm_vhost_vet() as the
 * pre_msg_handle of rte_vhost_extern_callback_register() on each new
 * connection (rte_pmd_mlx5_lm_vhost_vet_register() does it). A refused
 * message has its fds closed (vhost does not close them when a
 * pre_msg_handle fails) and vhost answers it as failed: with NEED_REPLY
 * an error ack, otherwise the connection is closed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* include/uapi/asm-generic/socket.h, for C libraries that predate it. */
#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

#include <rte_log.h>
#include <rte_version.h>
#include <rte_vhost.h>

#include "mlx5_lm_dpdk.h"
#include "prm.h"
#include "mlx5_lm.h"
#include "rte_pmd_mlx5_lm.h"

/*
 * What pre_msg_handle receives in DPDK 22.11 (struct vhu_msg_context of
 * lib/vhost/vhost_user.h, packed; workaround 1): the message - a 12-byte
 * header and the payload union, 632 bytes, its largest member being the
 * crypto session parameters - then the fds received with it and their
 * count.
 */
#define VET_PAYLOAD_SIZE 632
#define VET_MAX_FDS 8

struct vet_msg {
	uint32_t request;
	uint32_t flags;
	uint32_t size;
	uint8_t payload[VET_PAYLOAD_SIZE];
	int fds[VET_MAX_FDS];
	int fd_num;
} __attribute__((packed));

_Static_assert(offsetof(struct vet_msg, fds) == 644, "vhu_msg_context.fds of DPDK 22.11");
_Static_assert(offsetof(struct vet_msg, fd_num) == 676, "vhu_msg_context.fd_num of DPDK 22.11");

/*
 * Front-end requests vetted here (vhost-user.rst, "Front-end message
 * types"): vhost's own names for them are in its private vhost_user.h.
 */
#define VET_RESET_OWNER 4
#define VET_SET_MEM_TABLE 5
#define VET_SET_LOG_BASE 6
#define VET_GET_VRING_BASE 11
#define VET_SET_VRING_KICK 12
#define VET_SET_VRING_CALL 13
#define VET_SET_VRING_ERR 14
#define VET_VRING_IDX_MASK 0xff
#define VET_VRING_NOFD 0x100
#define VET_SET_BACKEND_REQ_FD 21
#define VET_IOTLB_MSG 22
#define VET_POSTCOPY_ADVISE 28
#define VET_POSTCOPY_END 30
#define VET_GET_INFLIGHT_FD 31
#define VET_SET_INFLIGHT_FD 32
#define VET_GET_MAX_MEM_SLOTS 36
#define VET_ADD_MEM_REG 37
#define VET_REM_MEM_REG 38

/*
 * The protocol feature of the memory-slot requests (vhost-user.rst), which
 * DPDK 22.11's rte_vhost.h does not define; the others those requests need
 * are VHOST_USER_PROTOCOL_F_PAGEFAULT, _INFLIGHT_SHMFD and
 * VIRTIO_F_IOMMU_PLATFORM.
 */
#define VET_PF_CONFIGURE_MEM_SLOTS 15

static void
vet_log(int vid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
vet_log(int vid, const char *fmt, ...)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vid(vid);
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* The one line that says why a front end's message was refused. */
	DRV_LOG(ERR, dev, "vhost device %d: %s", vid, text);
}

static void
close_fds(struct vet_msg *m)
{
	int i;

	for (i = 0; i < m->fd_num && i < VET_MAX_FDS; i++) {
		if (m->fds[i] >= 0)
			close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->fd_num = 0;
}

/* Bytes of the file behind fd, or -1 (logged by the caller). */
static int64_t
file_size(int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	return (int64_t)st.st_size;
}

static bool
fd_is_device(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
}

static const char *
ring_fd_request_name(uint32_t request)
{
	switch (request) {
	case VET_SET_VRING_KICK:
		return "SET_VRING_KICK";
	case VET_SET_VRING_CALL:
		return "SET_VRING_CALL";
	default:
		return "SET_VRING_ERR";
	}
}

/*
 * A ring's kick, call or error fd is an eventfd (QEMU's), a pipe or a
 * socket: files whose readiness the kernel answers at once. The relay
 * polls and reads or writes them in its thread; a file of any other kind
 * may wait on someone else (a FUSE file's poll waits for its daemon, which
 * the front end may be), where no removal could take the thread back.
 */
static int
vet_ring_fd(int vid, const struct vet_msg *m)
{
	static const char eventfd_link[] = "anon_inode:[eventfd]";
	char path[64], link[sizeof(eventfd_link) + 1];
	uint64_t v;
	struct stat st;
	ssize_t n;

	/*
	 * DPDK 22.11 never checks this size: it takes the ring index from the
	 * payload's first 8 bytes and the fd from the first one sent. Its
	 * message buffer is not cleared, so a shorter payload's index is a
	 * previous message's bytes; a longer one was let through here
	 * unchecked, its fd taken whatever its kind.
	 */
	if (m->size != sizeof(v)) {
		vet_log(vid, "request %u (%s) with a %u-byte payload, not the 8 bytes of its "
			"ring index: refused", m->request, ring_fd_request_name(m->request),
			m->size);
		return -EINVAL;
	}
	if (m->fd_num < 1)
		return 0;
	memcpy(&v, m->payload, sizeof(v));
	if ((v & VET_VRING_NOFD) || fstat(m->fds[0], &st) < 0)
		return 0;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", m->fds[0]);
	n = readlink(path, link, sizeof(link) - 1);
	if (n == (ssize_t)strlen(eventfd_link) && memcmp(link, eventfd_link, (size_t)n) == 0)
		return 0;
	vet_log(vid, "request %u for ring %u: its fd is not an eventfd, a pipe or a socket "
		"(st_mode 0%o): refused", m->request, (unsigned int)(v & VET_VRING_IDX_MASK),
		(unsigned int)st.st_mode);
	return -EINVAL;
}

/* One region {gpa, size, uaddr, mmap_offset} mapped from fd: its bytes must all be in the file. */
static int
vet_region(int vid, unsigned int i, const uint8_t *r, int fd)
{
	uint64_t v[4];
	int64_t fsize;

	memcpy(v, r, sizeof(v));
	fsize = file_size(fd);
	if (fsize < 0) {
		vet_log(vid, "memory region %u: no file behind its fd (%d): refused", i, fd);
		return -EBADF;
	}
	/*
	 * A device file (QEMU's mem-path=/dev/dax0.0) has no size to fstat: how
	 * far the region may reach cannot be checked, and past the device's end
	 * is a SIGBUS in vhost's thread. Said as such, not as "past its file".
	 */
	if (fsize == 0 && fd_is_device(fd)) {
		vet_log(vid, "memory region %u (gpa 0x%" PRIx64 ") is on a device file, whose size "
			"cannot be checked: refused (guest memory backed by memfd, hugetlbfs or "
			"shared memory files is)", i, v[0]);
		return -EINVAL;
	}
	/* An empty region vhost refuses itself. */
	if (v[3] + v[1] < v[3] || v[3] + v[1] > (uint64_t)fsize) {
		vet_log(vid, "memory region %u (gpa 0x%" PRIx64 "): mmap_offset 0x%" PRIx64
			" + size 0x%" PRIx64 " is past the end of its file (0x%" PRIx64
			" bytes): a SIGBUS on first access, refused", i, v[0], v[3], v[1],
			(uint64_t)fsize);
		return -EINVAL;
	}
	return 0;
}

static int
vet_mem_table(int vid, const struct vet_msg *m)
{
	uint32_t n, i;
	int ret;

	/*
	 * vhost 22.11 checks neither the payload's size nor its region count
	 * against it: what the message lacks it reads from the previous
	 * message's bytes (its context is reused), so a table one byte short
	 * can map a region past its file. The size is exactly what QEMU sends.
	 */
	if (m->size < 8) {
		vet_log(vid, "SET_MEM_TABLE of %u bytes, shorter than its region count: refused",
			m->size);
		return -EINVAL;
	}
	memcpy(&n, m->payload, 4);
	/* vhost itself refuses more regions than it holds or than fds. */
	if (n > VET_MAX_FDS || (int)n > m->fd_num)
		return 0;
	if (m->size != 8 + 32 * n) {
		vet_log(vid, "SET_MEM_TABLE of %u regions in %u bytes (%u expected): vhost would "
			"take the rest from the previous message: refused", n, m->size, 8 + 32 * n);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		ret = vet_region(vid, i, m->payload + 8 + 32 * i, m->fds[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int
vet_add_region(int vid, const struct vet_msg *m)
{
	/* Payload: u64 padding, then one region; exactly (see vet_mem_table). */
	if (m->size != 8 + 32) {
		vet_log(vid, "ADD_MEM_REG of %u bytes (40 expected): refused", m->size);
		return -EINVAL;
	}
	if (m->fd_num < 1)
		return 0;
	return vet_region(vid, 0, m->payload + 8, m->fds[0]);
}

static int
vet_log_base(int vid, const struct vet_msg *m)
{
	uint64_t size, off;
	int64_t fsize;

	if (m->size != 16 || m->fd_num < 1)
		return 0;
	memcpy(&size, m->payload, 8);
	memcpy(&off, m->payload + 8, 8);
	if (off != 0) {
		vet_log(vid, "SET_LOG_BASE with mmap_offset 0x%" PRIx64 " refused: the log is "
			"mapped from the start of its fd", off);
		return -EINVAL;
	}
	fsize = file_size(m->fds[0]);
	if (fsize < 0 || size == 0 || size > (uint64_t)fsize) {
		vet_log(vid, "SET_LOG_BASE of 0x%" PRIx64 " bytes refused: its fd holds 0x%"
			PRIx64 " bytes (logging there would be a SIGBUS)", size,
			fsize < 0 ? 0 : (uint64_t)fsize);
		return -EINVAL;
	}
	return 0;
}

/*
 * How long vhost's thread waits for the front end's answer on the back-end
 * channel: vhost 22.11 reads it with a blocking read (host notifiers,
 * rte_vhost_host_notifier_ctrl, sent from dev_conf on vhost's thread: one
 * message per ring, and on a failure one more per ring to take them back),
 * and a front end that never answers would stop every socket's messages.
 * QEMU answers from its main loop, and watches the channel while it waits
 * for a reply of its own; an answer this late only leaves kicks on the
 * driver's relay.
 */
#define VET_BACKEND_REPLY_MS 500

/*
 * SET_BACKEND_REQ_FD (workaround 2): the fd is vhost's end of the channel
 * (the front end keeps the other end), so a receive timeout on it bounds
 * vhost's wait for a reply and changes nothing for the front end. vhost
 * also sends on it with a blocking sendmsg, and the front end can hand it
 * over with its send buffer already full: a send timeout bounds that too
 * (QEMU reads the channel from its main loop; the host notifiers are a
 * few dozen small messages).
 */
static int
vet_backend_channel(int vid, const struct vet_msg *m)
{
	struct timeval tv = { .tv_sec = VET_BACKEND_REPLY_MS / 1000,
			      .tv_usec = (VET_BACKEND_REPLY_MS % 1000) * 1000 };

	if (m->fd_num < 1 || m->fds[0] < 0)
		return 0;
	/* Not a socket: vhost refuses to use it itself (its replies fail). */
	if ((setsockopt(m->fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	     setsockopt(m->fds[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) &&
	    errno != ENOTSOCK)
		vet_log(vid, "back-end channel fd %d: no timeout (%s): a front end that never "
			"reads or answers would hold vhost's thread", m->fds[0], strerror(errno));
	return 0;
}

/*
 * vhost-user.rst: a request of a protocol feature may be sent only once it
 * is negotiated. DPDK 22.11 handles some regardless, and SET_INFLIGHT_FD
 * then writes into a mapping of the front end's size and fd (past both
 * when they are short); this PMD offers none of these features.
 */
static int
vet_negotiated(int vid, const struct vet_msg *m)
{
	uint64_t pf = 0, f = 0;
	int bit = -1, fbit = -1;

	switch (m->request) {
	case VET_POSTCOPY_ADVISE ... VET_POSTCOPY_END:
		bit = VHOST_USER_PROTOCOL_F_PAGEFAULT;
		break;
	case VET_GET_INFLIGHT_FD:
	case VET_SET_INFLIGHT_FD:
		bit = VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD;
		break;
	case VET_GET_MAX_MEM_SLOTS ... VET_REM_MEM_REG:
		bit = VET_PF_CONFIGURE_MEM_SLOTS;
		break;
	case VET_IOTLB_MSG:
		fbit = VIRTIO_F_IOMMU_PLATFORM;
		break;
	default:
		return 0;
	}
	if (bit >= 0 && (rte_vhost_get_negotiated_protocol_features(vid, &pf) < 0 ||
			 !(pf & (1ull << bit)))) {
		vet_log(vid, "request %u needs protocol feature %d, not negotiated: refused",
			m->request, bit);
		return -EPROTO;
	}
	if (fbit >= 0 && (rte_vhost_get_negotiated_features(vid, &f) < 0 ||
			  !(f & (1ull << fbit)))) {
		vet_log(vid, "request %u needs feature %d, not negotiated: refused",
			m->request, fbit);
		return -EPROTO;
	}
	return 0;
}

/*
 * The requests of DPDK 22.11's message table that take no fd (accepts_fd
 * false), by name. The others of its table (SET_MEM_TABLE, SET_LOG_BASE,
 * SET_LOG_FD, SET_VRING_KICK, CALL and ERR, SET_SLAVE_REQ_FD,
 * SET_INFLIGHT_FD) take fds; requests outside it vhost refuses itself,
 * ADD_MEM_REG and REM_MEM_REG (vetted here, never negotiated) included.
 */
static const char *const vet_no_fd_request[] = {
	[1] = "GET_FEATURES", [2] = "SET_FEATURES", [3] = "SET_OWNER", [4] = "RESET_OWNER",
	[8] = "SET_VRING_NUM", [9] = "SET_VRING_ADDR", [10] = "SET_VRING_BASE",
	[11] = "GET_VRING_BASE", [15] = "GET_PROTOCOL_FEATURES",
	[16] = "SET_PROTOCOL_FEATURES", [17] = "GET_QUEUE_NUM", [18] = "SET_VRING_ENABLE",
	[19] = "SEND_RARP", [20] = "NET_SET_MTU", [22] = "IOTLB_MSG", [24] = "GET_CONFIG",
	[25] = "SET_CONFIG", [28] = "POSTCOPY_ADVISE", [29] = "POSTCOPY_LISTEN",
	[30] = "POSTCOPY_END", [31] = "GET_INFLIGHT_FD", [39] = "SET_STATUS",
	[40] = "GET_STATUS",
};

/*
 * vhost refuses a message with an fd its request never carries, but only
 * after this pre-handler, and then calls neither its handler nor the
 * post-handler: what the driver was told here would outlive the message.
 * GET_VRING_BASE's stop mark made the teardown that follows look like a
 * stop; RESET_OWNER's reset mark made the connection's close look like a
 * reset, never uncounted, the device then never removable. vhost's verdict,
 * given here first, before the driver hears of the message.
 */
static int
vet_fds_carried(int vid, struct vet_msg *m)
{
	if (m->fd_num == 0 || m->request >= RTE_DIM(vet_no_fd_request) ||
	    vet_no_fd_request[m->request] == NULL)
		return 0;
	vet_log(vid, "%s (request %u) with %d fd(s), which it never carries: refused",
		vet_no_fd_request[m->request], m->request, m->fd_num);
	return -EINVAL;
}

int
rte_pmd_mlx5_lm_vhost_vet(int vid, void *msg)
{
	struct vet_msg *m = msg;
	int ret;

	if (m->fd_num < 0 || m->fd_num > VET_MAX_FDS)
		return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
	/* An application with extern ops of its own did not register: counted at its first. */
	(void)mlx5_lm_conn_opened(vid);
	ret = vet_fds_carried(vid, m);
	if (ret == 0)
		ret = vet_negotiated(vid, m);
	if (ret < 0) {
		close_fds(m);
		return RTE_VHOST_MSG_RESULT_ERR;
	}
	switch (m->request) {
	case VET_SET_MEM_TABLE:
		ret = vet_mem_table(vid, m);
		break;
	case VET_ADD_MEM_REG:
		ret = vet_add_region(vid, m);
		break;
	case VET_SET_LOG_BASE:
		ret = vet_log_base(vid, m);
		/* Workaround 3: the device moves to the new log before vhost maps it. */
		if (ret == 0 && m->size == 16 && m->fd_num >= 1) {
			uint64_t size;

			memcpy(&size, m->payload, sizeof(size));
			ret = mlx5_lm_log_rebase(vid, m->fds[0], size);
		}
		break;
	case VET_SET_BACKEND_REQ_FD:
		ret = vet_backend_channel(vid, m);
		break;
	case VET_SET_VRING_KICK:
	case VET_SET_VRING_CALL:
	case VET_SET_VRING_ERR:
		ret = vet_ring_fd(vid, m);
		break;
	case VET_RESET_OWNER:
		/*
		 * vhost calls dev_cleanup for it, the connection staying: the driver is
		 * told (one with an fd was refused above, never reaching dev_cleanup).
		 */
		mlx5_lm_reset_message(vid);
		ret = 0;
		break;
	case VET_GET_VRING_BASE:
		/*
		 * vhost calls dev_close for more than this: the driver is told which one
		 * it is (one with an fd was refused above, never reaching dev_close).
		 */
		mlx5_lm_stop_message(vid, 1);
		ret = 0;
		break;
	default:
		ret = 0;
		break;
	}
	if (ret == 0)
		return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
	close_fds(m);
	return RTE_VHOST_MSG_RESULT_ERR;
}

static enum rte_vhost_msg_result
vet_pre(int vid, void *msg)
{
	return (enum rte_vhost_msg_result)rte_pmd_mlx5_lm_vhost_vet(vid, msg);
}

/* Workaround 5, after vhost handled the message: never a verdict, vhost's answer stands. */
int
rte_pmd_mlx5_lm_vhost_post(int vid, void *msg)
{
	const struct vet_msg *m = msg;
	uint64_t idx;

	if (m->request == VET_SET_MEM_TABLE)
		mlx5_lm_preconf_table(vid);
	/* The vetting refused a kick of any other size; the check keeps the copy in bounds. */
	if (m->request == VET_SET_VRING_KICK && m->size == sizeof(idx)) {
		memcpy(&idx, m->payload, sizeof(idx));
		mlx5_lm_preconf_ring(vid, (uint16_t)(idx & VET_VRING_IDX_MASK));
	}
	if (m->request == VET_GET_VRING_BASE)
		mlx5_lm_stop_message(vid, 0);
	return RTE_VHOST_MSG_RESULT_NOT_HANDLED;
}

static enum rte_vhost_msg_result
vet_post(int vid, void *msg)
{
	return (enum rte_vhost_msg_result)rte_pmd_mlx5_lm_vhost_post(vid, msg);
}

static const struct rte_vhost_user_extern_ops vet_ops = {
	.pre_msg_handle = vet_pre,
	.post_msg_handle = vet_post,
};

int
rte_pmd_mlx5_lm_vhost_vet_register(int vid)
{
	/*
	 * vhost calls this connection's vDPA device from now until its close
	 * (dev_cleanup): counted, the device is not removed under it, owner or
	 * not, even before its first message.
	 */
	(void)mlx5_lm_conn_opened(vid);
	/* The message layout above is DPDK 22.11's; another vhost gets no vetting. */
	if (RTE_VER_YEAR != 22 || RTE_VER_MONTH != 11) {
		DRV_LOG(ERR, mlx5_lm_dev_by_vid(vid), "vhost-user message vetting is built for "
			"DPDK 22.11, not %s: not registered", rte_version());
		return -ENOTSUP;
	}
	return rte_vhost_extern_callback_register(vid, &vet_ops, NULL) == 0 ? 0 : -EINVAL;
}

/* fd is a connected (not listening) unix stream socket whose address or peer is path. */
static int
conn_of_path(int fd, const char *path)
{
	struct sockaddr_un sa;
	socklen_t len;
	int listening = 0;
	socklen_t olen = sizeof(listening);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) < 0 || listening)
		return 0;
	len = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_family == AF_UNIX &&
	    strncmp(sa.sun_path, path, sizeof(sa.sun_path)) == 0)
		return 1;
	len = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	return getpeername(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_family == AF_UNIX &&
	       strncmp(sa.sun_path, path, sizeof(sa.sun_path)) == 0;
}

/*
 * Connection fds of one path a record keeps (both ends when the front end
 * is in-process); a path with more is scanned every time. A lookup itself
 * has no limit: any connection to the path may be the one asked about.
 */
#define MAX_CONN_FDS 8

/*
 * The sockets of each vid's connection as last found: scanning
 * /proc/self/fd costs about 1 ms with the ~1500 fds of a process serving
 * 8 devices of 32 rings (measured, seed-mkey), and the DRIVER_OK of a
 * prepared device asks for its peer on vhost's thread, inside the
 * downtime. The scan is made once, when the application sets the
 * connection's message timeout at its new_connection; a later lookup
 * uses the sockets it found only if each fd still names the same socket,
 * known by its cookie (SO_COOKIE: unique to a socket for the system's
 * uptime, never reused), else it scans again: a closed connection's fd
 * number that now names another socket, or a vid vhost gave to a new
 * connection, never matches. A kernel without socket cookies gets no
 * record: every lookup scans.
 */
struct conn_rec {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n;
	int fd[MAX_CONN_FDS];
	uint64_t cookie[MAX_CONN_FDS];
};

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn_rec conn_recs[RTE_MAX_VHOST_DEVICE];

/* 0 and fd's socket cookie, or -1. */
static int
sock_cookie(int fd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len) == 0 &&
	       len == sizeof(*cookie) ? 0 : -1;
}

/* rec still describes the same sockets, found for path: their fds into fds, their count. */
static int
conn_rec_valid(const struct conn_rec *rec, const char *path, int *fds)
{
	uint64_t cookie;
	int i;

	if (rec->n <= 0 || strcmp(rec->path, path) != 0)
		return 0;
	for (i = 0; i < rec->n; i++) {
		if (sock_cookie(rec->fd[i], &cookie) < 0 || cookie != rec->cookie[i])
			return 0;
		fds[i] = rec->fd[i];
	}
	return rec->n;
}

static void
conn_rec_store(struct conn_rec *rec, const char *path, const int *fds, int n)
{
	int i;

	rec->n = 0;
	if ((size_t)snprintf(rec->path, sizeof(rec->path), "%s", path) >= sizeof(rec->path))
		return;
	for (i = 0; i < n; i++) {
		if (sock_cookie(fds[i], &rec->cookie[i]) < 0)
			return;
		rec->fd[i] = fds[i];
	}
	rec->n = n;
}

/*
 * The fds of vid's connection, found by the vhost-user path (vhost names no
 * fd), into *fds (malloc'ed, the caller frees it): every connection fd of
 * the path, as any may be vid's. Their count (>= 0), or a negative errno.
 */
static int
conn_fds(int vid, char *path, size_t plen, int **fds)
{
	struct conn_rec *rec = vid >= 0 && vid < RTE_MAX_VHOST_DEVICE ? &conn_recs[vid] : NULL;
	int n = 0, cap = MAX_CONN_FDS, *a;
	struct dirent *e;
	DIR *d;

	*fds = NULL;
	if (rte_vhost_get_ifname(vid, path, plen) < 0)
		return -EINVAL;
	a = malloc(cap * sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&conn_lock);
	if (rec != NULL && (n = conn_rec_valid(rec, path, a)) > 0)
		goto out;
	n = 0;
	d = opendir("/proc/self/fd");
	if (d == NULL) {
		n = -errno;
		goto out;
	}
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d) ||
		    !conn_of_path(fd, path))
			continue;
		if (n == cap) {
			int *b = realloc(a, 2 * cap * sizeof(*a));

			if (b == NULL) {
				n = -ENOMEM;
				break;
			}
			a = b;
			cap *= 2;
		}
		a[n++] = fd;
	}
	closedir(d);
	if (rec != NULL)
		conn_rec_store(rec, path, a, n > MAX_CONN_FDS ? 0 : n);
out:
	pthread_mutex_unlock(&conn_lock);
	if (n < 0)
		free(a);
	else
		*fds = a;
	return n;
}

/*
 * The peer of vid's connection (SO_PEERCRED). The connection is found by
 * its path, which another connection to the same socket shares (vhost
 * accepts it, the driver refuses it as a second front end): peers that
 * differ are no answer (-ENOTUNIQ), rather than whichever fd came first.
 */
int
mlx5_lm_vhost_peer_pid(int vid)
{
	int *fds, n, i, pid = -ENOENT;
	char path[PATH_MAX];
	struct ucred cr;
	socklen_t len;

	n = conn_fds(vid, path, sizeof(path), &fds);
	for (i = 0; i < n; i++) {
		len = sizeof(cr);
		if (getsockopt(fds[i], SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
			continue;
		if (pid > 0 && cr.pid != pid) {
			pid = -ENOTUNIQ;
			break;
		}
		pid = cr.pid;
	}
	free(fds);
	return n < 0 ? n : pid;
}

/*
 * Workaround 4: the connection's socket is found by address (the
 * vhost-user path, as local address of an accepted connection or peer of
 * a client one) and gets a receive timeout: a payload read that would
 * block for ever then fails, vhost closes that connection and goes on.
 * And a send timeout: vhost sends each reply with a blocking sendmsg, so
 * a front end that reads none of its replies held vhost's thread, every
 * socket's messages, for as long as it stayed connected. vhost ignores a
 * failed reply and keeps the connection: each of that front end's
 * messages then costs at most the timeout, the other connections served
 * between them.
 */
int
rte_pmd_mlx5_lm_vhost_msg_timeout(int vid, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	int *fds, found, i, n = 0;
	char path[PATH_MAX];

	found = conn_fds(vid, path, sizeof(path), &fds);
	if (found < 0)
		return found;
	for (i = 0; i < found; i++)
		if (setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
		    setsockopt(fds[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0)
			n++;
	free(fds);
	if (n == 0) {
		vet_log(vid, "no connection of %s found: no message timeout", path);
		return -ENOENT;
	}
	return 0;
}
