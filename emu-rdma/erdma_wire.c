/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A device's wire as a Linux tap interface. A real ConnectX sends and
 * receives on its port; an emulated device's wire is a loopback unless the
 * program runs with MLX5_LM_ERDMA_TAPS="<i>=<ifname>[,...]" (the wrapper's
 * --tap): then device mlx5_<i> sends every frame to the tap <ifname>
 * (created, brought up, removed when the context closes) and every frame
 * the host sends to the tap enters the device's steering. The interface
 * is what a host bridge attaches, as it would the ConnectX's port
 * representor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "erdma.h"

#define WIRE_FRAME_MAX 16384

struct erdma_wire {
	int fd;
	int stopfd[2];
	pthread_t rx;
	char ifname[IFNAMSIZ];
};

/* The tap of device index, from the environment; false when it has none. */
static bool
tap_name(unsigned int index, char *name, size_t len)
{
	const char *env = getenv(ERDMA_ENV_TAPS);
	char *copy, *tok, *save = NULL;
	bool found = false;

	if (env == NULL || *env == '\0' || (copy = strdup(env)) == NULL)
		return false;
	for (tok = strtok_r(copy, ",", &save); tok != NULL && !found;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (eq != NULL && strtoul(tok, NULL, 10) == index && eq[1] != '\0') {
			snprintf(name, len, "%s", eq + 1);
			found = true;
		}
	}
	free(copy);
	return found;
}

/* Called by the emulated data path for every frame the device sends. */
static void
wire_tx(void *arg, const void *frame, size_t len)
{
	struct erdma_wire *w = arg;

	/* A tap takes whole frames; a full queue drops, as a port would. */
	if (write(w->fd, frame, len) < 0 && errno != EAGAIN)
		erdma_log("tap %s: write: %s", w->ifname, strerror(errno));
}

struct rx_arg {
	struct erdma_wire *w;
	struct emu_dev *emu;
};

static void *
wire_rx(void *arg)
{
	struct rx_arg a = *(struct rx_arg *)arg;
	struct pollfd pfd[2] = {
		{ .fd = a.w->fd, .events = POLLIN },
		{ .fd = a.w->stopfd[0], .events = POLLIN },
	};
	static __thread uint8_t frame[WIRE_FRAME_MAX];

	free(arg);
	for (;;) {
		ssize_t n;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		while ((n = read(a.w->fd, frame, sizeof(frame))) > 0)
			emu_dev_wire_rx(a.emu, frame, (size_t)n);
	}
	return NULL;
}

static int
tap_up(const char *name)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		rc = -errno;
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			rc = -errno;
	}
	close(s);
	return rc;
}

int
erdma_wire_open(struct erdma_ctx *c, unsigned int index)
{
	struct ifreq ifr = { 0 };
	struct erdma_wire *w;
	struct rx_arg *a;
	char name[IFNAMSIZ];
	int rc;

	if (!tap_name(index, name, sizeof(name)))
		return 0;
	w = calloc(1, sizeof(*w));
	a = calloc(1, sizeof(*a));
	if (w == NULL || a == NULL) {
		rc = -ENOMEM;
		goto err_alloc;
	}
	w->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (w->fd < 0) {
		rc = -errno;
		goto err_alloc;
	}
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(w->fd, TUNSETIFF, &ifr) < 0) {
		rc = -errno;
		goto err_fd;
	}
	snprintf(w->ifname, sizeof(w->ifname), "%s", ifr.ifr_name);
	rc = tap_up(w->ifname);
	if (rc < 0)
		goto err_fd;
	if (pipe2(w->stopfd, O_CLOEXEC) < 0) {
		rc = -errno;
		goto err_fd;
	}
	rc = emu_dev_set_uplink(c->emu, wire_tx, w);
	if (rc < 0)
		goto err_pipe;
	a->w = w;
	a->emu = c->emu;
	rc = -pthread_create(&w->rx, NULL, wire_rx, a);
	if (rc < 0)
		goto err_uplink;
	c->wire = w;
	return 0;
err_uplink:
	emu_dev_set_uplink(c->emu, NULL, NULL);
err_pipe:
	close(w->stopfd[0]);
	close(w->stopfd[1]);
err_fd:
	close(w->fd);
err_alloc:
	erdma_log("mlx5_%u: wire to tap %s: %s", index, name, strerror(-rc));
	free(a);
	free(w);
	return rc;
}

void
erdma_wire_close(struct erdma_ctx *c)
{
	struct erdma_wire *w = c->wire;
	char one = 1;

	if (w == NULL)
		return;
	emu_dev_set_uplink(c->emu, NULL, NULL);
	if (write(w->stopfd[1], &one, 1) != 1)
		erdma_log("tap %s: cannot stop its reader: %s", w->ifname, strerror(errno));
	pthread_join(w->rx, NULL);
	close(w->stopfd[0]);
	close(w->stopfd[1]);
	close(w->fd);
	free(w);
	c->wire = NULL;
}
