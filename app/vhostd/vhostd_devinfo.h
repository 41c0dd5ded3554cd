/* SPDX-License-Identifier: BSD-3-Clause */
/* What a worker reports of a device beyond its state: features and counters, as JSON. */
#ifndef VHOSTD_DEVINFO_H
#define VHOSTD_DEVINFO_H

#include <stdint.h>

#include <jansson.h>

struct rte_vdpa_device;

/* {"bits": "0x...", "names": [...]}: the virtio and vhost-user names of the bits set. */
json_t *vhostd_features_json(uint64_t features);
/*
 * The device's per-queue counters under DPDK's vdpa names (as
 * rte_vdpa_get_stats_names gives them): {"name", "supported", "names": [...],
 * "queues": [{"queue": q, "type": "rx"|"tx", "pair": p, "counters": {...}}]}.
 */
json_t *vhostd_worker_dev_stats(const char *name, struct rte_vdpa_device *vdpa);

#endif /* VHOSTD_DEVINFO_H */
