/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test's hand on an open device: with MLX5_LM_ERDMA_CONTROL set to a
 * directory, each context serves a unix seqpacket socket <dir>/<ibdev>
 * (mlx5_<i>) on a thread of its own. A test program whose devices live in
 * this library (the emulator out of its reach) sends one request per
 * connection and reads one reply, so that it can do on rdma what it does
 * with the emulator's test hooks on emu= (emu.h), at the moment it
 * chooses:
 *
 *   fault OPCODE OBJ_TYPE NTH STATUS SYNDROME   emu_fault_inject(): the NTH
 *                         next command of OPCODE (and OBJ_TYPE, 0xffff any)
 *                         fails with STATUS/SYNDROME, counted from the reply
 *   virtq_error ID TYPE   emu_virtq_force_error()
 *   virtq_state ID        QUERY_GENERAL_OBJECT of virtq ID, answered with its
 *                         state (as the emulator's test hook emu_cmd() would:
 *                         not a DevX call, not traced)
 *   live                  emu_dev_live_objects()
 *   evch_hold DEPTH       emu_evch_hold(): the device's event channels (one
 *                         under each of the library's) bounded to DEPTH
 *                         queued events and held back until evch_release;
 *                         what they drop reaches the program as EOVERFLOW
 *   evch_release          emu_evch_release()
 *   evch_overflows        emu_evch_overflows(): events dropped so far
 *   event OPCODE OBJ_TYPE ID TYPE
 *                         emu_event_inject(): event TYPE of the object
 *                         OPCODE (OBJ_TYPE) created, numbered ID
 *   dp_idle MS            the doorbells written so far forwarded, then
 *                         emu_dev_dp_wait_idle(): every kick and
 *                         deliverable frame handled, within MS ms
 *   umem_params A1 B1 A2 B2 A3 B3
 *                         emu_dev_set_umem_params(): the virtio emulation
 *                         caps' umem parameters change, as firmware changes
 *                         them at runtime (the PF's MTU)
 *
 * Replies: "ok [VALUE]" or "err ERRNO MESSAGE". Numbers in C syntax. These
 * are the emulator's own hooks, not a kernel interface: nothing of rdma-core
 * is extended (the library still exports only ibv_* and mlx5dv_*).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "prm.h"
#include "erdma.h"

struct erdma_ctl {
	pthread_t thread;
	int listen_fd;
	int stop_fd;               /* eventfd: the context is closing */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static int
virtq_state(struct erdma_ctx *c, uint32_t id, char *reply, size_t len)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)];
	uint8_t out[PRM_SIZE(virtq_cmd)];
	int rc;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_QUERY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, id);
	rc = emu_cmd(c->emu, in, sizeof(in), out, sizeof(out));
	if (rc != 0)
		return rc < 0 ? rc : -EIO;
	if (PRM_GET(general_obj_out_cmd_hdr, out, status) != 0) {
		snprintf(reply, len, "err %d status 0x%x syndrome 0x%08x", EREMOTEIO,
			 (unsigned int)PRM_GET(general_obj_out_cmd_hdr, out, status),
			 (unsigned int)PRM_GET(general_obj_out_cmd_hdr, out, syndrome));
		return 1;
	}
	snprintf(reply, len, "ok %u",
		 (unsigned int)PRM_GET(virtio_net_q, PRM_ADDR(virtq_cmd, out, obj), state));
	return 0;
}

/* Serve one request; the reply goes in reply. */
static void
serve(struct erdma_ctx *c, char *req, char *reply, size_t len)
{
	unsigned long v[6];
	int rc = -EINVAL;

	if (sscanf(req, "fault %li %li %li %li %li", (long *)&v[0], (long *)&v[1],
		   (long *)&v[2], (long *)&v[3], (long *)&v[4]) == 5) {
		if (v[0] > 0xffff || v[1] > 0xffff || v[2] == 0 || v[2] > 1000000 ||
		    v[3] == 0 || v[3] > 0xff || v[4] > 0xffffffffu)
			goto bad;
		rc = emu_fault_inject(c->emu, (uint16_t)v[0], (uint16_t)v[1], (unsigned int)v[2],
				      (uint8_t)v[3], (uint32_t)v[4]);
		if (rc == 0)
			erdma_log("%s: control: fault armed: opcode 0x%lx obj_type 0x%lx, "
				  "command %lu from now, status 0x%lx syndrome 0x%08lx",
				  c->vctx.context.device->name, v[0], v[1], v[2], v[3], v[4]);
	} else if (sscanf(req, "virtq_error %li %li", (long *)&v[0], (long *)&v[1]) == 2) {
		if (v[0] > 0xffffffffu || v[1] > 0xff)
			goto bad;
		rc = emu_virtq_force_error(c->emu, (uint32_t)v[0], (uint8_t)v[1]);
	} else if (sscanf(req, "virtq_state %li", (long *)&v[0]) == 1) {
		if (v[0] > 0xffffffffu)
			goto bad;
		rc = virtq_state(c, (uint32_t)v[0], reply, len);
		if (rc >= 0)
			return;
	} else if (sscanf(req, "dp_idle %li", (long *)&v[0]) == 1) {
		if (v[0] > 600000)
			goto bad;
		/* Doorbells are seen by polling: those written so far count too. */
		erdma_db_flush(c);
		rc = emu_dev_dp_wait_idle(c->emu, (unsigned int)v[0]);
	} else if (sscanf(req, "evch_hold %li", (long *)&v[0]) == 1) {
		if (v[0] > 1000000)
			goto bad;
		emu_evch_hold(c->emu, (unsigned int)v[0]);
		rc = 0;
	} else if (sscanf(req, "event %li %li %li %li", (long *)&v[0], (long *)&v[1],
			  (long *)&v[2], (long *)&v[3]) == 4) {
		if (v[0] > 0xffff || v[1] > 0xffff || v[2] > 0xffffffffu || v[3] > 0xff)
			goto bad;
		rc = emu_event_inject(c->emu, (uint16_t)v[0], (uint16_t)v[1], (uint32_t)v[2],
				      (uint16_t)v[3]);
	} else if (sscanf(req, "umem_params %li %li %li %li %li %li", (long *)&v[0],
			  (long *)&v[1], (long *)&v[2], (long *)&v[3], (long *)&v[4],
			  (long *)&v[5]) == 6) {
		uint32_t a[3], b[3];
		int i;

		for (i = 0; i < 3; i++) {
			if (v[2 * i] > 0xffffffffu || v[2 * i + 1] > 0xffffffffu)
				goto bad;
			a[i] = (uint32_t)v[2 * i];
			b[i] = (uint32_t)v[2 * i + 1];
		}
		rc = emu_dev_set_umem_params(c->emu, a, b);
	} else if (strcmp(req, "evch_release") == 0) {
		emu_evch_release(c->emu);
		rc = 0;
	} else if (strcmp(req, "evch_overflows") == 0) {
		snprintf(reply, len, "ok %lu", emu_evch_overflows(c->emu));
		return;
	} else if (strcmp(req, "live") == 0) {
		snprintf(reply, len, "ok %u", emu_dev_live_objects(c->emu));
		return;
	} else {
		goto bad;
	}
	if (rc == 0)
		snprintf(reply, len, "ok");
	else
		snprintf(reply, len, "err %d %s", -rc, strerror(-rc));
	return;
bad:
	snprintf(reply, len, "err %d bad request \"%.160s\" (doc/emulated-rdma.md)", EINVAL, req);
}

static void *
ctl_main(void *arg)
{
	struct erdma_ctx *c = arg;
	struct erdma_ctl *ctl = c->ctl;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = ctl->listen_fd, .events = POLLIN },
			{ .fd = ctl->stop_fd, .events = POLLIN },
		};
		char req[256], reply[256];
		ssize_t n;
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			erdma_log("%s: control: poll: %s", c->vctx.context.device->name,
				  strerror(errno));
			return NULL;
		}
		if (p[1].revents != 0)
			return NULL;
		fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* The client writes its request right after connecting. */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 5 },
			   sizeof(struct timeval));
		n = recv(fd, req, sizeof(req) - 1, 0);
		if (n > 0) {
			req[n] = '\0';
			req[strcspn(req, "\n")] = '\0';
			serve(c, req, reply, sizeof(reply));
			(void)!send(fd, reply, strlen(reply), MSG_NOSIGNAL);
		}
		close(fd);
	}
}

int
erdma_ctl_init(struct erdma_ctx *c)
{
	const char *dir = getenv(ERDMA_ENV_CONTROL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct erdma_ctl *ctl;
	int rc;

	if (dir == NULL || *dir == '\0')
		return 0;
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return -ENOMEM;
	if ((size_t)snprintf(ctl->path, sizeof(ctl->path), "%s/%s", dir,
			     c->vctx.context.device->name) >= sizeof(ctl->path)) {
		erdma_log("%s=%s: path too long for a unix socket", ERDMA_ENV_CONTROL, dir);
		rc = -ENAMETOOLONG;
		goto err_free;
	}
	memcpy(sa.sun_path, ctl->path, sizeof(ctl->path));
	ctl->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0) {
		rc = -errno;
		goto err_free;
	}
	/*
	 * One context per device at a time can be controlled: a second one
	 * opened while the first is (the socket exists) works, uncontrolled,
	 * and says so; the requests keep going to the first.
	 */
	if (bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		erdma_log("%s: control socket %s: %s%s", c->vctx.context.device->name, ctl->path,
			  strerror(errno), rc == -EADDRINUSE ?
			  " (another context of the device has it: this one is not controlled)" :
			  "");
		if (rc == -EADDRINUSE)
			rc = 0;
		goto err_sock;
	}
	if (listen(ctl->listen_fd, 4) < 0) {
		rc = -errno;
		goto err_bound;
	}
	ctl->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (ctl->stop_fd < 0) {
		rc = -errno;
		goto err_bound;
	}
	c->ctl = ctl;
	rc = pthread_create(&ctl->thread, NULL, ctl_main, c);
	if (rc != 0) {
		c->ctl = NULL;
		rc = -rc;
		goto err_stop;
	}
	return 0;
err_stop:
	close(ctl->stop_fd);
err_bound:
	unlink(ctl->path);
err_sock:
	close(ctl->listen_fd);
err_free:
	free(ctl);
	return rc;
}

void
erdma_ctl_fini(struct erdma_ctx *c)
{
	struct erdma_ctl *ctl = c->ctl;

	if (ctl == NULL)
		return;
	/* Gone from the directory first: no client connects to a closing device. */
	unlink(ctl->path);
	(void)!write(ctl->stop_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
	pthread_join(ctl->thread, NULL);
	close(ctl->stop_fd);
	close(ctl->listen_fd);
	free(ctl);
	c->ctl = NULL;
}
