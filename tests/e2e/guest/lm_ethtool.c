/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lm-ethtool IFACE [COMBINED]: the guest's `ethtool -l` / `ethtool -L IFACE
 * combined N` (busybox has no ethtool). Built static into the e2e initrd.
 * Prints "combined=<current> max=<max> rx_ring=<size> tx_ring=<size>" (after
 * any change).
 */
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int
ethtool(int fd, const char *iface, void *data)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	ifr.ifr_data = data;
	return ioctl(fd, SIOCETHTOOL, &ifr);
}

static int
channels(int fd, const char *iface, struct ethtool_channels *ch, unsigned int cmd)
{
	ch->cmd = cmd;
	return ethtool(fd, iface, ch);
}

int
main(int argc, char **argv)
{
	struct ethtool_ringparam ring;
	struct ethtool_channels ch;
	int fd;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: lm-ethtool IFACE [COMBINED]\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	memset(&ch, 0, sizeof(ch));
	if (channels(fd, argv[1], &ch, ETHTOOL_GCHANNELS) < 0) {
		fprintf(stderr, "lm-ethtool: ETHTOOL_GCHANNELS %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (argc == 3) {
		ch.combined_count = (unsigned int)atoi(argv[2]);
		if (channels(fd, argv[1], &ch, ETHTOOL_SCHANNELS) < 0) {
			fprintf(stderr, "lm-ethtool: ETHTOOL_SCHANNELS %s combined %s: %s\n",
				argv[1], argv[2], strerror(errno));
			return 1;
		}
		memset(&ch, 0, sizeof(ch));
		if (channels(fd, argv[1], &ch, ETHTOOL_GCHANNELS) < 0) {
			fprintf(stderr, "lm-ethtool: ETHTOOL_GCHANNELS %s: %s\n", argv[1],
				strerror(errno));
			return 1;
		}
	}
	memset(&ring, 0, sizeof(ring));
	ring.cmd = ETHTOOL_GRINGPARAM;
	if (ethtool(fd, argv[1], &ring) < 0) {
		fprintf(stderr, "lm-ethtool: ETHTOOL_GRINGPARAM %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("combined=%u max=%u rx_ring=%u tx_ring=%u\n", ch.combined_count, ch.max_combined,
	       ring.rx_pending, ring.tx_pending);
	close(fd);
	return 0;
}
