/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The few DPDK driver-SDK types a vdev vDPA driver needs.
 *
 * DPDK installs bus_vdev_driver.h, dev_driver.h and vdpa_driver.h only
 * when built with -Denable_driver_sdk=true, which Debian's libdpdk-dev
 * (22.11, ABI 23) is not. When the installed DPDK has them we use them;
 * otherwise these declarations describe the same layouts (written from
 * the ABI, member for member, so that the structures we hand to EAL and
 * vhost have the layout the libraries expect). Those layouts are 22.11's
 * and unchanged through 23.11 (read against each release's headers).
 * The vhost workarounds are beside this file (mlx5_lm_vhost_compat.c).
 */
#ifndef MLX5_LM_DPDK_COMPAT_H
#define MLX5_LM_DPDK_COMPAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rte_common.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_vhost.h>
#include <rte_vdpa.h>

#if __has_include(<bus_vdev_driver.h>)
#include <bus_vdev_driver.h>
#define MLX5_LM_VDEV_DEVICE(vdev) (&(vdev)->device)
#else
/* ABI 23 struct rte_driver: list linkage, then name and alias. */
struct rte_driver {
	RTE_TAILQ_ENTRY(rte_driver) next;
	const char *name;
	const char *alias;
};

/* ABI 23 struct rte_vdev_device: list linkage, then the embedded rte_device. */
struct rte_vdev_device {
	RTE_TAILQ_ENTRY(rte_vdev_device) next;
	/* struct rte_device device; -- opaque in the public headers */
};
#define MLX5_LM_VDEV_DEVICE(vdev) ((struct rte_device *)((struct rte_vdev_device *)(vdev) + 1))

typedef int (rte_vdev_probe_t)(struct rte_vdev_device *dev);
typedef int (rte_vdev_remove_t)(struct rte_vdev_device *dev);
typedef int (rte_vdev_dma_map_t)(struct rte_vdev_device *dev, void *addr, uint64_t iova,
				 size_t len);
typedef int (rte_vdev_dma_unmap_t)(struct rte_vdev_device *dev, void *addr, uint64_t iova,
				   size_t len);

struct rte_vdev_driver {
	RTE_TAILQ_ENTRY(rte_vdev_driver) next;
	struct rte_driver driver;
	rte_vdev_probe_t *probe;
	rte_vdev_remove_t *remove;
	rte_vdev_dma_map_t *dma_map;
	rte_vdev_dma_unmap_t *dma_unmap;
	uint32_t drv_flags;
};

__rte_internal void rte_vdev_register(struct rte_vdev_driver *driver);
__rte_internal void rte_vdev_unregister(struct rte_vdev_driver *driver);
#endif

#if __has_include(<vdpa_driver.h>)
#include <vdpa_driver.h>
#else
/*
 * ABI 23 vDPA driver operations, in the order lib/vhost calls them by
 * offset. Checked against Debian's librte_vhost.so.23: it tests the
 * mandatory ops at offsets 0x8..0x38 (dev_cleanup at 0x28 makes
 * set_vring_state 0x30), reads get_stats_names at 0x60 and get_dev_type
 * at 0x88.
 */
struct rte_vdpa_dev_ops {
	int (*get_queue_num)(struct rte_vdpa_device *dev, uint32_t *queue_num);
	int (*get_features)(struct rte_vdpa_device *dev, uint64_t *features);
	int (*get_protocol_features)(struct rte_vdpa_device *dev, uint64_t *protocol_features);
	int (*dev_conf)(int vid);
	int (*dev_close)(int vid);
	int (*dev_cleanup)(int vid);
	int (*set_vring_state)(int vid, int vring, int state);
	int (*set_features)(int vid);
	int (*migration_done)(int vid);
	int (*get_vfio_group_fd)(int vid);
	int (*get_vfio_device_fd)(int vid);
	int (*get_notify_area)(int vid, int qid, uint64_t *offset, uint64_t *size);
	int (*get_stats_names)(struct rte_vdpa_device *dev,
			       struct rte_vdpa_stat_name *stats_names, unsigned int size);
	int (*get_stats)(struct rte_vdpa_device *dev, int qid, struct rte_vdpa_stat *stats,
			 unsigned int n);
	int (*reset_stats)(struct rte_vdpa_device *dev, int qid);
	int (*get_config)(int vid, uint8_t *config, uint32_t size);
	int (*set_config)(int vid, uint8_t *config, uint32_t offset, uint32_t size,
			  uint32_t flags);
	int (*get_dev_type)(struct rte_vdpa_device *dev, uint32_t *type);
};

/* Allocated by lib/vhost; ops at 0x18 and type at 0x20 in ABI 23. */
struct rte_vdpa_device {
	RTE_TAILQ_ENTRY(rte_vdpa_device) next;
	struct rte_device *device;
	struct rte_vdpa_dev_ops *ops;
	uint32_t type;
};

__rte_internal struct rte_vdpa_device *
rte_vdpa_register_device(struct rte_device *rte_dev, struct rte_vdpa_dev_ops *ops);
__rte_internal int rte_vdpa_unregister_device(struct rte_vdpa_device *dev);
__rte_internal int rte_vhost_host_notifier_ctrl(int vid, uint16_t qid, bool enable);
__rte_internal int rte_vdpa_relay_vring_used(int vid, uint16_t qid, void *vring_m);
#endif

#endif /* MLX5_LM_DPDK_COMPAT_H */
