/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm probe: probe one vdpa_mlx5_lm device, print its
 * capabilities as a table, tear it down. With an emulated device the exit
 * status also says whether teardown left device objects alive.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"

enum { EXIT_PROBE_FAILED = 1, EXIT_USAGE = 2, EXIT_LEAK = 3 };

static void
probe_usage(FILE *f)
{
	fprintf(f,
		"Usage: dpdk-test-lm probe --devargs \"<devargs>\" [--name NAME] [--eal \"ARGS\"]\n\n"
		"Probe one %s device, print its capabilities, tear it down.\n\n"
		"  --devargs ARGS  device arguments, e.g. \"emu=cx6dx\" (emulated ConnectX-6 Dx)\n"
		"                  or \"ibdev=mlx5_0\" (hardware); see doc/devargs.md\n"
		"  --name NAME     vdev instance name (default %s0)\n"
		"  --eal ARGS      extra EAL arguments (default: --no-huge -m 512 --no-shconf)\n"
		"  -h, --help      this text\n\n"
		"Exit status: 0 ok, 1 probe failed, 2 usage, 3 objects left alive at teardown.\n",
		TEST_LM_PMD, TEST_LM_PMD);
}

static const char *
bits_list(unsigned int v, const char *const *names, size_t n, char *buf, size_t len)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		if (v & (1u << i))
			used += snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
	if (used == 0)
		snprintf(buf, len, "none");
	return buf;
}

static void
print_caps(const char *name, const char *devargs, const struct rte_pmd_mlx5_lm_caps *c)
{
	static const char *const qtypes[] = { "split", "packed" };
	static const char *const emodes[] = { "none", "QP", "MSIX" };
	char buf[128];
	int i;

	printf("%s (%s), back end: %s\n\n", name, devargs, c->backend);
	printf("  %-32s %s\n", "capability", "value");
	printf("  %-32s %s\n", "--------------------------------", "------------------------");
#define ROW(label, fmt, ...) printf("  %-32s " fmt "\n", label, __VA_ARGS__)
	ROW("vhca_id", "%u", c->vhca_id);
	ROW("general_obj_types", "0x%016" PRIx64, c->general_obj_types);
	ROW("log_max_klm_list_size", "%u", c->log_max_klm_list_size);
	ROW("max_num_virtio_queues", "%u", c->max_num_virtio_queues);
	ROW("virtio_queue_type", "%s", bits_list(c->virtio_queue_type, qtypes, 2, buf, sizeof(buf)));
	ROW("event_mode", "%s", bits_list(c->event_mode, emodes, 3, buf, sizeof(buf)));
	ROW("virtio_version_1_0", "%s", c->virtio_version_1_0 ? "yes" : "no");
	ROW("device_features_bits_mask", "0x%04x", c->device_features_bits_mask);
	ROW("vnet_modify_ext", "%s", c->vnet_modify_ext ? "yes" : "no");
	ROW("virtio_net_q_addr_modify", "%s", c->virtio_net_q_addr_modify ? "yes" : "no");
	ROW("virtio_q_index_modify", "%s", c->virtio_q_index_modify ? "yes" : "no");
	ROW("freeze_to_rdy_supported", "%s", c->freeze_to_rdy_supported ? "yes" : "no");
	ROW("desc_group_mkey_supported", "%s", c->desc_group_mkey_supported ? "yes" : "no");
	ROW("doorbell_bar_offset", "0x%" PRIx64, c->doorbell_bar_offset);
	ROW("log_doorbell_stride", "%u", c->log_doorbell_stride);
	ROW("log_doorbell_bar_size", "%u", c->log_doorbell_bar_size);
	for (i = 0; i < 3; i++) {
		char label[32];

		snprintf(label, sizeof(label), "umem_%d size (bytes)", i + 1);
		ROW(label, "%u * queue_size + %u", c->umem_param_a[i], c->umem_param_b[i]);
	}
#undef ROW
}

int
cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "devargs", required_argument, NULL, 'd' },
		{ "name", required_argument, NULL, 'n' },
		{ "eal", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devargs = NULL, *eal = NULL;
	char name[64];
	struct rte_pmd_mlx5_lm_caps caps;
	unsigned long leaked;
	int c, ret = 0;

	snprintf(name, sizeof(name), "%s0", TEST_LM_PMD);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			devargs = optarg;
			break;
		case 'n':
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'e':
			eal = optarg;
			break;
		case 'h':
			probe_usage(stdout);
			return 0;
		default:
			probe_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (devargs == NULL || optind != argc) {
		probe_usage(stderr);
		return EXIT_USAGE;
	}
	if (strncmp(name, TEST_LM_PMD, strlen(TEST_LM_PMD)) != 0) {
		fprintf(stderr, "probe: --name must start with %s\n", TEST_LM_PMD);
		return EXIT_USAGE;
	}
	if (lm_app_eal_init("dpdk-test-lm", eal) < 0)
		return EXIT_PROBE_FAILED;
	if (lm_app_probe_device(name, devargs) < 0) {
		ret = EXIT_PROBE_FAILED;
		goto out;
	}
	if (rte_pmd_mlx5_lm_get_caps(name, &caps) == 0)
		print_caps(name, devargs, &caps);
	if (lm_app_remove_device(name) < 0) {
		ret = EXIT_PROBE_FAILED;
		goto out;
	}
	leaked = rte_pmd_mlx5_lm_emu_leaked_objects();
	if (leaked > 0) {
		fprintf(stderr, "%s: %lu device objects were left alive at teardown (listed above)\n",
			name, leaked);
		ret = EXIT_LEAK;
	} else if (strcmp(caps.backend, "emu") == 0) {
		printf("\nteardown: every device object destroyed\n");
	}
out:
	lm_app_eal_cleanup();
	return ret;
}
