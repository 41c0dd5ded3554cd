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
/*
 * device_prepare (vhostd_prepare.c): device devname prepared with the
 * shared guest-memory files of process pid, for that process. The result
 * ({"pid", "bytes", "files": [...]}), or NULL with the reason in err.
 */
json_t *vhostd_worker_prepare(const char *devname, int pid, char *err, size_t errlen);
/* Its preparation as device_get shows it: {"state", "pid", "bytes", ...}. */
json_t *vhostd_worker_prep_json(const char *devname);

#endif /* VHOSTD_DEVINFO_H */
