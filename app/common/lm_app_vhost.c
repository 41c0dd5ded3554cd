/* SPDX-License-Identifier: BSD-3-Clause */
/* The vhost-user set-up of one vdpa_mlx5_lm device (see lm_app.h). */
#include <stdio.h>
#include <sys/stat.h>

#include <rte_vdpa.h>
#include <rte_vhost.h>

#include "rte_pmd_mlx5_lm.h"
#include "lm_app.h"

int
lm_app_vhost_start(const char *path, struct rte_vdpa_device *vdpa, bool client,
		   const struct rte_vhost_device_ops *ops, char *msg, size_t len)
{
	return lm_app_vhost_start_perm(path, vdpa, client, NULL, ops, msg, len);
}

int
lm_app_vhost_start_perm(const char *path, struct rte_vdpa_device *vdpa, bool client,
			const struct lm_app_sock_perm *perm,
			const struct rte_vhost_device_ops *ops, char *msg, size_t len)
{
	mode_t old = 0;
	int ret;

	msg[0] = '\0';
	if (client)
		perm = NULL;
	if (rte_vhost_driver_register(path, client ? RTE_VHOST_USER_CLIENT : 0) < 0) {
		snprintf(msg, len, "cannot register vhost-user socket %s", path);
		return -1;
	}
	if (rte_vhost_driver_attach_vdpa_device(path, vdpa) < 0) {
		snprintf(msg, len, "cannot attach the device to vhost-user socket %s", path);
		goto err;
	}
	/*
	 * The socket's features stay vhost's own list ANDed with the device's,
	 * which leaves VIRTIO_F_ORDER_PLATFORM out. Setting them to the
	 * device's (rte_vhost_driver_set_features) would offer it, but vhost
	 * 22.11 then stops treating the socket as its built-in net device and
	 * waits for every ring the front end set up to be enabled before it
	 * configures the device: QEMU sets up every queue pair of an mq NIC and
	 * enables only those the guest uses, so a guest on one pair of four
	 * would never start (tests/e2e/test_qemu_doc.py). QEMU 7.2 does not
	 * pass ORDER_PLATFORM to its guest either.
	 */
	if (rte_vhost_driver_callback_register(path, ops) < 0) {
		snprintf(msg, len, "cannot start vhost-user on %s", path);
		goto err;
	}
	/*
	 * vhost binds a server's socket in rte_vhost_driver_start, in this
	 * thread, under the process's umask: narrowed for the bind, so that
	 * the socket is born with at most perm's owner bits. The umask is the
	 * process's, not this thread's: the other threads (EAL's, vhost's)
	 * create no file meanwhile.
	 */
	if (perm != NULL)
		old = umask(lm_app_sock_perm_umask(perm));
	ret = rte_vhost_driver_start(path);
	if (perm != NULL)
		umask(old);
	if (ret < 0) {
		snprintf(msg, len, "cannot start vhost-user on %s", path);
		goto err;
	}
	if (perm != NULL && lm_app_sock_set_perm(path, perm, msg, len) < 0)
		goto err;
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

int
lm_app_vhost_vet_stderr(int vid, unsigned int msg_timeout_ms, const char *who)
{
	char msg[160];
	int ret = lm_app_vhost_vet(vid, msg_timeout_ms, msg, sizeof(msg));

	if (msg[0] != '\0')
		fprintf(stderr, "%s: %s\n", who, msg);
	return ret;
}
