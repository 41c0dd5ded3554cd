/* SPDX-License-Identifier: BSD-3-Clause */
/* The vhost-user set-up of one vdpa_mlx5_lm device (see lm_app.h). */
#include <stdio.h>

#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "rte_pmd_mlx5_lm.h"
#include "lm_app.h"

int
lm_app_vhost_start(const char *path, struct rte_vdpa_device *vdpa, bool client,
		   const struct rte_vhost_device_ops *ops, char *msg, size_t len)
{
	uint64_t features;

	msg[0] = '\0';
	if (rte_vhost_driver_register(path, client ? RTE_VHOST_USER_CLIENT : 0) < 0) {
		snprintf(msg, len, "cannot register vhost-user socket %s", path);
		return -1;
	}
	if (rte_vhost_driver_attach_vdpa_device(path, vdpa) < 0) {
		snprintf(msg, len, "cannot attach the device to vhost-user socket %s", path);
		goto err;
	}
	/*
	 * vhost 22.11 answers GET_FEATURES with its own software list AND the
	 * device's: VIRTIO_F_ORDER_PLATFORM, which the device needs the guest
	 * to honour (it reads the rings by DMA), is not on that list. Setting
	 * the socket's features to the device's offers exactly what the
	 * device does.
	 */
	if (rte_vdpa_get_features(vdpa, &features) < 0 ||
	    rte_vhost_driver_set_features(path, features) < 0) {
		snprintf(msg, len, "cannot set the device's features on %s", path);
		goto err;
	}
	if (rte_vhost_driver_callback_register(path, ops) < 0 ||
	    rte_vhost_driver_start(path) < 0) {
		snprintf(msg, len, "cannot start vhost-user on %s", path);
		goto err;
	}
	return 0;
err:
	rte_vhost_driver_unregister(path);
	return -1;
}

void
lm_app_vhost_stop(const char *path)
{
	rte_vhost_driver_unregister(path);
}

/*
 * Every connection's messages are vetted before vhost uses them: DPDK
 * 22.11's vhost maps memory and log areas without checking them against
 * their files (doc/reliability.md, "Security model").
 */
int
lm_app_vhost_vet(int vid, unsigned int msg_timeout_ms, char *msg, size_t len)
{
	msg[0] = '\0';
	if (rte_pmd_mlx5_lm_vhost_vet_register(vid) < 0) {
		snprintf(msg, len, "cannot vet the messages of vhost device %d: "
			 "connection refused", vid);
		return -1;
	}
	/* A payload announced and never sent must not hold vhost's one thread. */
	if (msg_timeout_ms > 0 && rte_pmd_mlx5_lm_vhost_msg_timeout(vid, msg_timeout_ms) < 0)
		snprintf(msg, len, "vhost device %d: no message timeout on its connection", vid);
	return 0;
}
