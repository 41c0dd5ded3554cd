/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the emulator's unit tests (test_emu, test_cost, test_emu_datapath)
 * share: cost profiles written for a test, devices made from them, the
 * commands they build alike. Include after cmocka.h, prm.h and emu.h.
 */
#ifndef MLX5_LM_EMU_UNIT_H
#define MLX5_LM_EMU_UNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A new file /tmp/<prefix>_XXXXXX holding text; its path, valid until the
 * next call (the test unlinks it when it wants to).
 */
static char *
unit_write_tmp(const char *prefix, const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/%s_XXXXXX", prefix);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/*
 * An emulated device called name whose cost profile is the JSON text
 * profile (its file is gone once the device has read it); the test
 * destroys the device.
 */
static inline struct emu_dev *
unit_emu_dev_profiled(const char *name, const char *profile)
{
	char err[256], *path = unit_write_tmp("emu_profile", profile);
	struct emu_dev *dev = emu_dev_create(name, path, err, sizeof(err));

	unlink(path);
	assert_non_null(dev);
	return dev;
}

/*
 * A QP transition (RST2INIT, INIT2RTR, RTR2RTS: one layout) written into in
 * with what Linux's mlx5_vnet (setup_vq's connect_qps) and DPDK's
 * vdpa/mlx5 event QPs carry: the peer, force loopback (ads.fl) at
 * INIT2RTR, ack_timeout, retry_count and rnr_retry at RTR2RTS. The test
 * runs it through its own command path.
 */
static inline void
unit_qp_transition(uint8_t in[PRM_SIZE(rst2init_qp_in)], uint16_t opcode, uint32_t qpn,
		   uint32_t remote, bool fl, uint8_t retry, uint8_t rnr, uint8_t ack)
{
	void *qpc = PRM_ADDR(rst2init_qp_in, in, qpc);
	void *ads = PRM_ADDR(qpc, qpc, primary_address_path);

	memset(in, 0, PRM_SIZE(rst2init_qp_in));
	PRM_SET(rst2init_qp_in, in, opcode, opcode);
	PRM_SET(rst2init_qp_in, in, qpn, qpn);
	PRM_SET(qpc, qpc, remote_qpn, remote);
	PRM_SET(ads, ads, fl, fl);
	PRM_SET(ads, ads, ack_timeout, ack);
	PRM_SET(qpc, qpc, retry_count, retry);
	PRM_SET(qpc, qpc, rnr_retry, rnr);
}

#endif /* MLX5_LM_EMU_UNIT_H */
