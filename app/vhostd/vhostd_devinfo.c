/* SPDX-License-Identifier: BSD-3-Clause */
/* Features and counters of a worker's device, as JSON (see vhostd_devinfo.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_vdpa.h>

#include "vhostd_devinfo.h"

/* Feature bits: virtio 1.1 (5.1.3 and 6) and vhost-user (PROTOCOL_FEATURES, LOG_ALL). */
static const struct {
	unsigned int bit;
	const char *name;
} feature_names[] = {
	{ 0, "CSUM" }, { 1, "GUEST_CSUM" }, { 3, "MTU" }, { 5, "MAC" },
	{ 7, "GUEST_TSO4" }, { 8, "GUEST_TSO6" }, { 11, "HOST_TSO4" }, { 12, "HOST_TSO6" },
	{ 15, "MRG_RXBUF" }, { 16, "STATUS" }, { 17, "CTRL_VQ" }, { 18, "CTRL_RX" },
	{ 19, "CTRL_VLAN" }, { 21, "GUEST_ANNOUNCE" }, { 22, "MQ" }, { 26, "LOG_ALL" },
	{ 27, "ANY_LAYOUT" }, { 28, "INDIRECT_DESC" }, { 29, "EVENT_IDX" },
	{ 30, "PROTOCOL_FEATURES" }, { 32, "VERSION_1" }, { 33, "ACCESS_PLATFORM" },
	{ 34, "RING_PACKED" }, { 35, "IN_ORDER" }, { 36, "ORDER_PLATFORM" },
};

json_t *
vhostd_features_json(uint64_t features)
{
	json_t *names = json_array();
	char bits[24];
	unsigned int i, b;

	for (b = 0; b < 64; b++) {
		const char *n = NULL;
		char other[16];

		if (!(features & (1ULL << b)))
			continue;
		for (i = 0; i < RTE_DIM(feature_names); i++)
			if (feature_names[i].bit == b)
				n = feature_names[i].name;
		if (n == NULL) {
			snprintf(other, sizeof(other), "bit%u", b);
			n = other;
		}
		json_array_append_new(names, json_string(n));
	}
	snprintf(bits, sizeof(bits), "0x%" PRIx64, features);
	return json_pack("{s:s, s:o}", "bits", bits, "names", names);
}

#define MAX_STATS 16

json_t *
vhostd_worker_dev_stats(const char *name, struct rte_vdpa_device *vdpa)
{
	struct rte_vdpa_stat_name names[MAX_STATS];
	struct rte_vdpa_stat vals[MAX_STATS];
	json_t *jnames = json_array(), *queues = json_array();
	bool supported = true;
	uint32_t pairs = 0;
	int n, q, i;

	n = rte_vdpa_get_stats_names(vdpa, names, MAX_STATS);
	if (n < 0)
		n = 0;
	for (i = 0; i < n; i++)
		json_array_append_new(jnames, json_string(names[i].name));
	rte_vdpa_get_queue_num(vdpa, &pairs);
	for (q = 0; n > 0 && q < (int)pairs * 2; q++) {
		int r = rte_vdpa_get_stats(vdpa, q, vals, n);
		json_t *counters;

		/* A device without counter sets lists the names but counts nothing. */
		if (r == -ENOTSUP) {
			supported = false;
			break;
		}
		if (r != n)
			continue;
		counters = json_object();
		for (i = 0; i < n; i++)
			json_object_set_new(counters, names[i].name,
					    json_integer((json_int_t)vals[i].value));
		json_array_append_new(queues, json_pack("{s:i, s:s, s:i, s:o}", "queue", q,
							"type", q & 1 ? "tx" : "rx", "pair", q / 2,
							"counters", counters));
	}
	return json_pack("{s:s, s:b, s:o, s:o}", "name", name, "supported", supported,
			 "names", jnames, "queues", queues);
}
