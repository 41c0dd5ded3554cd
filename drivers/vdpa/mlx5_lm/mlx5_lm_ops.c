/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rte_vdpa_dev_ops of the PMD: the queue lifecycle ops live in
 * mlx5_lm_vdpa.c; here are the ones that describe the device (features,
 * config space, statistics, notify area) and the ops table itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_vhost.h>

#include "mlx5_lm_dpdk.h"
#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_lifecycle.h"
#include "mlx5_lm_prereg.h"

#define dev_by_vid mlx5_lm_dev_by_vid

/*
 * The back-end channel's protocol features (vhost-user.rst: BACKEND_REQ,
 * BACKEND_SEND_FD) by the name the installed rte_vhost.h gives them:
 * DPDK 22.11's still says SLAVE, 23.03 renamed them.
 */
#ifdef VHOST_USER_PROTOCOL_F_BACKEND_REQ
#define MLX5_LM_PF_BACKEND_REQ VHOST_USER_PROTOCOL_F_BACKEND_REQ
#define MLX5_LM_PF_BACKEND_SEND_FD VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD
#else
#define MLX5_LM_PF_BACKEND_REQ VHOST_USER_PROTOCOL_F_SLAVE_REQ
#define MLX5_LM_PF_BACKEND_SEND_FD VHOST_USER_PROTOCOL_F_SLAVE_SEND_FD
#endif

static int
mlx5_lm_get_queue_num(struct rte_vdpa_device *vdpa, uint32_t *queue_num)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vdpa(vdpa);

	if (dev == NULL)
		return -ENODEV;
	*queue_num = dev->nr_vq / 2;
	return 0;
}

static int
mlx5_lm_get_features(struct rte_vdpa_device *vdpa, uint64_t *features)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vdpa(vdpa);
	uint64_t f;

	if (dev == NULL)
		return -ENODEV;
	f = 1ull << VIRTIO_F_ANY_LAYOUT |
	    1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_NET_F_STATUS |
	    1ull << VHOST_USER_F_PROTOCOL_FEATURES | 1ull << VHOST_F_LOG_ALL;
	/*
	 * VERSION_1 only when the virtio emulation caps report
	 * virtio_version_1_0, as Linux mlx5_vdpa (get_supported_features) and
	 * DPDK vdpa/mlx5 (mlx5_vdpa_get_vdpa_features) offer it: a queue is
	 * VERSION_1 on such a device only. Without it a legacy front end still
	 * works: the queues are created with virtio_version_1_0 = 0 and the
	 * device puts the legacy header (10 bytes, 12 with MRG_RXBUF) in front
	 * of each frame; a legacy guest negotiates none of the bits from 32 on
	 * (VERSION_1, RING_PACKED, ORDER_PLATFORM), and vhost refuses a
	 * SET_FEATURES beyond this offer.
	 */
	if (dev->caps.virtio_version_1_0)
		f |= 1ull << VIRTIO_F_VERSION_1;
	/*
	 * The device reads and writes guest memory by DMA: the driver must
	 * order its ring accesses with the platform's barriers (virtio 1.1,
	 * 6: VIRTIO_F_ORDER_PLATFORM), as DPDK vdpa/mlx5 offers.
	 */
	f |= 1ull << VIRTIO_F_ORDER_PLATFORM;
	/*
	 * GUEST_ANNOUNCE (DPDK vdpa/mlx5 offers it too): after a live
	 * migration the front end, which owns the control queue (not
	 * offloaded to this device), sets VIRTIO_NET_S_ANNOUNCE in its config
	 * status and the guest sends its gratuitous ARPs through our queues,
	 * so that the network learns the guest's new place. Without it QEMU
	 * asks a vhost-user back end for a RARP (VHOST_USER_SEND_RARP), which
	 * DPDK's vhost injects only on its software data path, never through
	 * a vDPA device: nothing would announce the guest. The spec ties the
	 * feature to CTRL_VQ, which the front end adds (QEMU's virtio-net
	 * emulates the control queue of a vhost-user device).
	 */
	f |= 1ull << VIRTIO_NET_F_GUEST_ANNOUNCE;
	/*
	 * Features the device implements per queue are offered only when the
	 * virtio emulation caps list them in device_features_bits_mask, as
	 * Linux mlx5_vdpa maps that mask to virtio feature bits. Of them the
	 * driver uses MRG_RXBUF (mask bit 2).
	 */
	if (dev->caps.device_features_bits_mask & (1u << PRM_VIRTQ_FEAT_MRG_RXBUF))
		f |= 1ull << VIRTIO_NET_F_MRG_RXBUF;
	/*
	 * Offloads, as upstream offers CSUM / GUEST_CSUM / HOST_TSO4 / HOST_TSO6:
	 * the device completes a transmitted frame's partial checksum (CSUM),
	 * segments TCP frames (HOST_TSO*, which need CSUM: virtio 1.1 5.1.3.1)
	 * and hands the guest only complete frames, which GUEST_CSUM allows.
	 * GUEST_TSO* are not offered (upstream neither): the device never
	 * delivers GSO frames, and a guest without MRG_RXBUF would have to post
	 * 64 KiB receive buffers for nothing.
	 */
	if (dev->caps.device_features_bits_mask & (1u << PRM_VIRTQ_FEAT_CSUM)) {
		f |= 1ull << VIRTIO_NET_F_CSUM;
		if (dev->caps.device_features_bits_mask & (1u << PRM_VIRTQ_FEAT_HOST_TSO4))
			f |= 1ull << VIRTIO_NET_F_HOST_TSO4;
		if (dev->caps.device_features_bits_mask & (1u << PRM_VIRTQ_FEAT_HOST_TSO6))
			f |= 1ull << VIRTIO_NET_F_HOST_TSO6;
	}
	if (dev->caps.device_features_bits_mask & (1u << PRM_VIRTQ_FEAT_GUEST_CSUM))
		f |= 1ull << VIRTIO_NET_F_GUEST_CSUM;
	if (dev->nr_vq > 2)
		f |= 1ull << VIRTIO_NET_F_MQ;
	if (dev->caps.virtio_queue_type & (1u << PRM_VIRTQ_TYPE_PACKED))
		f |= 1ull << VIRTIO_F_RING_PACKED;
	*features = f;
	return 0;
}

static int
mlx5_lm_get_protocol_features(struct rte_vdpa_device *vdpa, uint64_t *features)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vdpa(vdpa);
	uint64_t f;
	int fd;
	uint64_t off, size;

	if (dev == NULL)
		return -ENODEV;
	f = 1ull << VHOST_USER_PROTOCOL_F_MQ | 1ull << VHOST_USER_PROTOCOL_F_LOG_SHMFD |
	    1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK | 1ull << MLX5_LM_PF_BACKEND_REQ |
	    1ull << MLX5_LM_PF_BACKEND_SEND_FD | 1ull << VHOST_USER_PROTOCOL_F_CONFIG |
	    1ull << VHOST_USER_PROTOCOL_F_STATUS;
	/* The guest can write the doorbell itself only where the page can be mapped. */
	if (devx_db_mmap_info(dev->db, &fd, &off, &size) == 0)
		f |= 1ull << VHOST_USER_PROTOCOL_F_HOST_NOTIFIER;
	*features = f;
	return 0;
}

static int
mlx5_lm_set_features(int vid)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	int ret = 0;

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	/* Dirty logging turned on or off applies to the configured device. */
	mlx5_lm_wait_configured(dev);
	ret = mlx5_lm_owner(dev, vid, "SET_FEATURES");
	if (ret < 0)
		goto out;
	rte_vhost_get_negotiated_features(vid, &dev->features);
	/* Logging off: the migration whose pause stopped it ahead was cancelled. */
	if (dev->stopped_ahead && !(dev->features & (1ull << VHOST_F_LOG_ALL)))
		mlx5_lm_stop_ahead_undo(dev, "dirty logging stopped");
	if (dev->running) {
		int want = !!(dev->features & (1ull << VHOST_F_LOG_ALL));
		uint64_t base, size;

		if (want && dev->log_mr == NULL) {
			ret = mlx5_lm_log_area(dev, vid, &base, &size);
			if (ret == 0)
				ret = mlx5_lm_log_start(dev, base, size);
		} else if (!want && dev->log_mr != NULL) {
			mlx5_lm_log_stop(dev);
		}
	}
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/* Per vhost device: a RESET_OWNER is being handled (the vetting says). */
static uint8_t in_reset_owner[RTE_MAX_VHOST_DEVICE];

void
mlx5_lm_reset_message(int vid)
{
	if (vid >= 0 && vid < RTE_MAX_VHOST_DEVICE)
		__atomic_store_n(&in_reset_owner[vid], 1, __ATOMIC_RELAXED);
}

/*
 * The front end's connection is gone, or it sent RESET_OWNER (vhost calls
 * dev_cleanup for both): its fds and memory go with it.
 */
static int
mlx5_lm_dev_cleanup(int vid)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	/* Taken here: vhost calls dev_cleanup for each RESET_OWNER it handles. */
	int reset = vid >= 0 && vid < RTE_MAX_VHOST_DEVICE &&
		    __atomic_exchange_n(&in_reset_owner[vid], 0, __ATOMIC_RELAXED);

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	/* The configuration uses this connection's vid (host notifiers): it ends first. */
	mlx5_lm_wait_configured(dev);
	/*
	 * Uncounted before the line that says it left (which the application may
	 * wait for, then remove the device): the removal takes dev->lock once
	 * before tearing down, so it waits for this hold to end. A RESET_OWNER's
	 * connection stays, and stays counted.
	 */
	if (!reset)
		mlx5_lm_conn_closed(dev, vid);
	/* A former owner's connection, reset earlier, now closes: it holds the device no more. */
	if (!reset && dev->vid != vid && __atomic_load_n(&dev->held_vid, __ATOMIC_ACQUIRE) == vid)
		__atomic_store_n(&dev->held_vid, -1, __ATOMIC_RELEASE);
	if (dev->vid != vid) {
		/* A connection that never owned the device leaves the owner's state alone. */
		DRV_LOG(INFO, dev, "front end disconnected (vhost device %d, not the owner)", vid);
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	/* Its queues ran on its rings: nothing of them may stay in use. */
	mlx5_lm_stop_orphaned(dev);
	/* Or were configured ahead of a DRIVER_OK that did not come. */
	mlx5_lm_preconf_abort(dev);
	/* Memory prepared for this front end and not used yet: it will not be. */
	mlx5_lm_prereg_disconnected(dev);
	__atomic_store_n(&dev->vid, -1, __ATOMIC_RELEASE);
	/* After a RESET_OWNER the connection stays, and vhost may call the device for it. */
	__atomic_store_n(&dev->held_vid, reset ? vid : -1, __ATOMIC_RELEASE);
	__atomic_store_n(&dev->owner_pid, 0, __ATOMIC_RELEASE);
	/* The next front end enables its own rings. */
	for (uint16_t i = 0; i < dev->nr_vq; i++)
		dev->vq[i].enabled = 0;
	DRV_LOG(INFO, dev, "front end disconnected");
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

static int
mlx5_lm_migration_done(int vid)
{
	return 0;
}

/*
 * The doorbell page rings the owner's queues: only the owner may map it.
 * Read without dev->lock: vhost asks from dev_conf's host-notifier call
 * while the device's worker may hold the lock for the whole configuration.
 * The owner is whoever's DRIVER_OK queued it, claimed under the lock.
 */
static int
owned_by(struct mlx5_lm_dev *dev, int vid, const char *what)
{
	int owner = __atomic_load_n(&dev->vid, __ATOMIC_ACQUIRE);

	if (owner == vid)
		return 1;
	DRV_LOG(ERR, dev, "%s from vhost device %d refused: the device is owned by vhost "
		"device %d (one front end per device)", what, vid, owner);
	return 0;
}

static int
mlx5_lm_get_vfio_device_fd(int vid)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	uint64_t off, size;
	int fd;

	if (dev == NULL || !owned_by(dev, vid, "host notifier") ||
	    devx_db_mmap_info(dev->db, &fd, &off, &size) < 0)
		return -1;
	return fd;
}

static int
mlx5_lm_get_notify_area(int vid, int qid, uint64_t *offset, uint64_t *size)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	int fd;

	if (dev == NULL || !owned_by(dev, vid, "host notifier") ||
	    devx_db_mmap_info(dev->db, &fd, offset, size) < 0)
		return -1;
	return 0;
}

/*
 * DPDK vdpa/mlx5's names, in its order (drivers/vdpa/mlx5/mlx5_vdpa.c,
 * mlx5_vdpa_stats_names, DPDK 22.11): a tool that reads counters by id
 * gets the same counter from either driver. The values come in this order
 * from mlx5_lm_virtq_counters().
 */
static const char *const stat_names[MLX5_LM_NB_STATS] = {
	"received_descriptors", "completed_descriptors", "bad descriptor errors",
	"exceed max chain", "invalid buffer", "completion errors",
};

static int
mlx5_lm_get_stats_names(struct rte_vdpa_device *vdpa, struct rte_vdpa_stat_name *names,
			unsigned int size)
{
	unsigned int i;

	if (names == NULL)
		return RTE_DIM(stat_names);
	for (i = 0; i < size && i < RTE_DIM(stat_names); i++)
		snprintf(names[i].name, RTE_VDPA_STATS_NAME_SIZE, "%s", stat_names[i]);
	return i;
}

/*
 * Read queue qid's counters, as counted since the last reset; with reset,
 * make the current values the new zero. 0 (vals filled) or a negative errno.
 * The base is read and written under dev->lock with the counters.
 */
static int
read_counters(struct rte_vdpa_device *vdpa, int qid, uint64_t vals[MLX5_LM_NB_STATS], int reset)
{
	uint64_t raw[MLX5_LM_NB_STATS];
	int ret, i;
	struct mlx5_lm_dev *dev = mlx5_lm_dev_by_vdpa(vdpa);

	if (dev == NULL || qid < 0 || qid >= dev->nr_vq)
		return dev == NULL ? -ENODEV : -EINVAL;
	/*
	 * No VIRTIO_Q_COUNTERS on this device (general_obj_types bit 28): the
	 * names still describe what a virtio-net vDPA device counts, but there
	 * are no values. -ENOTSUP, not zeroes, so that a caller of
	 * rte_vdpa_get_stats() can tell "not counted" from "nothing happened".
	 */
	if (!mlx5_lm_has_counters(dev))
		return -ENOTSUP;
	pthread_mutex_lock(&dev->lock);
	/*
	 * The background restore swaps queue objects without the lock, once
	 * its deferral (mr_gc_ms) is over; until then a stopped device's
	 * counters are there to read, as they were before the stop.
	 */
	ret = dev->restore.swapping ? -EBUSY : mlx5_lm_virtq_counters(&dev->vq[qid], raw);
	if (ret == 0) {
		for (i = 0; i < MLX5_LM_NB_STATS; i++)
			vals[i] = raw[i] - dev->vq[qid].stats_base[i];
		if (reset)
			memcpy(dev->vq[qid].stats_base, raw, sizeof(dev->vq[qid].stats_base));
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static int
mlx5_lm_get_stats(struct rte_vdpa_device *vdpa, int qid, struct rte_vdpa_stat *stats,
		  unsigned int n)
{
	uint64_t vals[MLX5_LM_NB_STATS];
	unsigned int i;
	int ret;

	ret = read_counters(vdpa, qid, vals, 0);
	if (ret < 0)
		return ret;
	for (i = 0; i < n && i < RTE_DIM(stat_names); i++) {
		stats[i].id = i;
		stats[i].value = vals[i];
	}
	return i;
}

static int
mlx5_lm_reset_stats(struct rte_vdpa_device *vdpa, int qid)
{
	uint64_t vals[MLX5_LM_NB_STATS];

	return read_counters(vdpa, qid, vals, 1);
}

/*
 * virtio-net config space: mac[6], status, max_virtqueue_pairs, mtu.
 * size comes from the front end's GET_CONFIG unchecked (DPDK 22.11 passes
 * msg.payload.cfg.size with its 256-byte region): nothing is written past
 * the device's own config space, a larger request is refused (vhost then
 * replies with an empty payload).
 */
static int
mlx5_lm_get_config(int vid, uint8_t *config, uint32_t size)
{
	struct mlx5_lm_dev *dev = dev_by_vid(vid);
	uint8_t cfg[12] = { 0x02, 0x4c, 0x4d, 0x00, 0x00, 0x00 };
	uint64_t f = 0;
	uint16_t v;
	bool le;
	int ret;

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	ret = mlx5_lm_owner(dev, vid, "GET_CONFIG");
	pthread_mutex_unlock(&dev->lock);
	if (ret < 0)
		return ret;
	if (size > sizeof(cfg)) {
		DRV_LOG(ERR, dev, "vhost device %d: GET_CONFIG of %u bytes refused, the config "
			"space has %zu", vid, size, sizeof(cfg));
		return -EINVAL;
	}
	cfg[5] = (uint8_t)dev->instance;
	/*
	 * VIRTIO_NET_S_LINK_UP only, never VIRTIO_NET_S_ANNOUNCE: the guest
	 * acknowledges an announcement on the control queue, which the front
	 * end handles, not this device; a bit set here could never be cleared.
	 * The front end ORs its own ANNOUNCE bit into the status it shows the
	 * guest (QEMU's virtio-net does for vhost-vdpa devices).
	 */
	/*
	 * Little-endian for a virtio 1.x driver (virtio 1.1, 2.4); the legacy
	 * interface uses the guest's own order, the host's for a vhost-user
	 * front end on it. The same bytes on a little-endian host.
	 */
	le = rte_vhost_get_negotiated_features(vid, &f) == 0 && (f & (1ull << VIRTIO_F_VERSION_1));
	v = le ? rte_cpu_to_le_16(1) : 1;
	memcpy(&cfg[6], &v, 2);
	v = le ? rte_cpu_to_le_16(dev->nr_vq / 2) : dev->nr_vq / 2;
	memcpy(&cfg[8], &v, 2);
	v = le ? rte_cpu_to_le_16(1500) : 1500;
	memcpy(&cfg[10], &v, 2);
	memcpy(config, cfg, size);
	return 0;
}

static int
mlx5_lm_get_dev_type(struct rte_vdpa_device *vdpa, uint32_t *type)
{
	*type = 0; /* RTE_VHOST_VDPA_DEVICE_TYPE_NET */
	return 0;
}

static struct rte_vdpa_dev_ops mlx5_lm_vdpa_ops = {
	.get_queue_num = mlx5_lm_get_queue_num,
	.get_features = mlx5_lm_get_features,
	.get_protocol_features = mlx5_lm_get_protocol_features,
	.dev_conf = mlx5_lm_dev_conf,
	.dev_close = mlx5_lm_dev_close,
	.dev_cleanup = mlx5_lm_dev_cleanup,
	.set_vring_state = mlx5_lm_set_vring_state,
	.set_features = mlx5_lm_set_features,
	.migration_done = mlx5_lm_migration_done,
	.get_vfio_group_fd = NULL,
	.get_vfio_device_fd = mlx5_lm_get_vfio_device_fd,
	.get_notify_area = mlx5_lm_get_notify_area,
	.get_stats_names = mlx5_lm_get_stats_names,
	.get_stats = mlx5_lm_get_stats,
	.reset_stats = mlx5_lm_reset_stats,
	.get_config = mlx5_lm_get_config,
	.get_dev_type = mlx5_lm_get_dev_type,
};

int
mlx5_lm_vdpa_register(struct mlx5_lm_dev *dev)
{
	dev->vdpa = rte_vdpa_register_device(dev->rte_dev, &mlx5_lm_vdpa_ops);
	if (dev->vdpa == NULL) {
		DRV_LOG(ERR, dev, "rte_vdpa_register_device failed");
		return -EIO;
	}
	return 0;
}

void
mlx5_lm_vdpa_unregister(struct mlx5_lm_dev *dev)
{
	if (dev->vdpa != NULL)
		rte_vdpa_unregister_device(dev->vdpa);
	dev->vdpa = NULL;
}
