/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uplink=<ethdev>: a DPDK port as the emulated device's wire. Frames the
 * device sends leave through the port; frames the port receives enter the
 * device's steering (flow table -> TIR -> RSS -> RX queue). Real hardware
 * has its own wire, so this applies to emulated devices only.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "mlx5_lm.h"
#include "mlx5_lm_pool.h"
#include "devx_emu.h"

#define UPLINK_MBUFS 4096
#define UPLINK_RING 512
#define UPLINK_BURST 32

struct mlx5_lm_uplink {
	struct mlx5_lm_dev *dev;
	uint16_t port;
	struct rte_mempool *pool;
	pthread_t rx_thread;
	int stop;                  /* atomic: set by uplink_stop, read by the RX thread */
	pthread_mutex_t tx_lock;   /* one TX queue, serialises the data path's sends */
	uint64_t tx_drops;
};

/* Called by the emulated data path for every frame the device sends. */
static void
uplink_tx(void *arg, const void *frame, size_t len)
{
	struct mlx5_lm_uplink *u = arg;
	struct rte_mbuf *m = rte_pktmbuf_alloc(u->pool);
	char *p;

	if (m == NULL || (p = rte_pktmbuf_append(m, (uint16_t)len)) == NULL) {
		rte_pktmbuf_free(m);
		u->tx_drops++;
		return;
	}
	memcpy(p, frame, len);
	pthread_mutex_lock(&u->tx_lock);
	if (rte_eth_tx_burst(u->port, 0, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		u->tx_drops++;
	}
	pthread_mutex_unlock(&u->tx_lock);
}

static void *
uplink_rx(void *arg)
{
	struct mlx5_lm_uplink *u = arg;
	struct rte_mbuf *pkts[UPLINK_BURST];
	const struct timespec idle = { .tv_nsec = 200 * 1000 };

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		uint16_t i, n = rte_eth_rx_burst(u->port, 0, pkts, UPLINK_BURST);

		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = pkts[i];

			/* Single-segment frames: the pool's buffers hold a full frame. */
			devx_emu_wire_rx(u->dev->devx, rte_pktmbuf_mtod(m, void *),
					 rte_pktmbuf_data_len(m));
			rte_pktmbuf_free(m);
		}
		/* An idle wire: back off instead of spinning a core. */
		if (n == 0)
			nanosleep(&idle, NULL);
	}
	return NULL;
}

int
mlx5_lm_uplink_start(struct mlx5_lm_dev *dev)
{
	struct rte_eth_conf conf;
	struct mlx5_lm_uplink *u;
	char pool_name[RTE_MEMPOOL_NAMESIZE];
	uint16_t port;
	int ret;

	if (strcmp(dev->args.uplink, "loopback") == 0)
		return 0;
	if (!devx_is_emulated(dev->devx)) {
		DRV_LOG(ERR, dev, "uplink=%s: only emulated devices take an uplink port",
			dev->args.uplink);
		return -EINVAL;
	}
	if (rte_eth_dev_get_port_by_name(dev->args.uplink, &port) != 0) {
		DRV_LOG(ERR, dev, "uplink=%s: no such ethdev (create it with --vdev, e.g. net_tap0)",
			dev->args.uplink);
		return -ENODEV;
	}
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return -ENOMEM;
	u->dev = dev;
	u->port = port;
	pthread_mutex_init(&u->tx_lock, NULL);
	snprintf(pool_name, sizeof(pool_name), "lm_up_%s", dev->name + strlen("vdpa_mlx5_"));
	u->pool = rte_pktmbuf_pool_create(pool_name, UPLINK_MBUFS, 0, 0,
					  RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	if (u->pool == NULL) {
		DRV_LOG(ERR, dev, "uplink=%s: cannot create its mbuf pool", dev->args.uplink);
		ret = -ENOMEM;
		goto err_pool;
	}
	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(port, 0, UPLINK_RING, SOCKET_ID_ANY, NULL, u->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(port, 0, UPLINK_RING, SOCKET_ID_ANY, NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(port);
	if (ret < 0) {
		DRV_LOG(ERR, dev, "uplink=%s: cannot start the port: %s", dev->args.uplink,
			strerror(-ret));
		goto err_port;
	}
	rte_eth_promiscuous_enable(port);
	ret = devx_emu_set_uplink(dev->devx, uplink_tx, u);
	if (ret < 0)
		goto err_wire;
	if (mlx5_lm_thread_create(&u->rx_thread, "mlx5-lm-uplink", NULL, uplink_rx,
				  u) != 0) {
		ret = -EAGAIN;
		goto err_thread;
	}
	dev->uplink = u;
	DRV_LOG(INFO, dev, "uplink: port %u (%s)", port, dev->args.uplink);
	return 0;
err_thread:
	devx_emu_set_uplink(dev->devx, NULL, NULL);
err_wire:
	rte_eth_dev_stop(port);
err_port:
	rte_mempool_free(u->pool);
err_pool:
	pthread_mutex_destroy(&u->tx_lock);
	free(u);
	return ret;
}

void
mlx5_lm_uplink_stop(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_uplink *u = dev->uplink;

	if (u == NULL)
		return;
	/* The data path calls uplink_tx: detach it before the port goes. */
	devx_emu_set_uplink(dev->devx, NULL, NULL);
	__atomic_store_n(&u->stop, 1, __ATOMIC_RELEASE);
	pthread_join(u->rx_thread, NULL);
	rte_eth_dev_stop(u->port);
	rte_mempool_free(u->pool);
	pthread_mutex_destroy(&u->tx_lock);
	free(u);
	dev->uplink = NULL;
}
