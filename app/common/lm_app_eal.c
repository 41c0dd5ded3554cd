/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL start-up and device hotplug for dpdk-test-lm and mlx5-lm-vhostd's workers. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "rte_pmd_mlx5_lm.h"
#include "lm_app.h"

#define MAX_EAL_ARGS 160

/* EAL's --file-prefix: distinct per process (a shared one makes EAL refuse to start). */
static char file_prefix[64];

void
lm_app_eal_set_prefix(const char *prefix)
{
	snprintf(file_prefix, sizeof(file_prefix), "%s", prefix);
}

int
lm_app_eal_init(const char *prog, const char *extra_eal)
{
	return lm_app_eal_init_bus(prog, extra_eal, false);
}

/* The user's EAL arguments choose lcores (-l, -c, --lcores, -s is not one). */
static bool
names_lcores(const char *eal)
{
	char copy[4096], *tok, *save = NULL;

	snprintf(copy, sizeof(copy), "%s", eal);
	for (tok = strtok_r(copy, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save))
		if (strncmp(tok, "-l", 2) == 0 || strncmp(tok, "-c", 2) == 0 ||
		    strncmp(tok, "--lcores", 8) == 0)
			return true;
	return false;
}

/* "--lcores=0@(a,b,...)": lcore 0 on every CPU of this process's affinity. */
static int
cpus_arg(char *buf, size_t len)
{
	cpu_set_t set;
	size_t n;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) == 0)
		return -1;
	n = (size_t)snprintf(buf, len, "--lcores=0@(");
	for (cpu = 0; cpu < CPU_SETSIZE && n < len; cpu++)
		if (CPU_ISSET(cpu, &set))
			n += (size_t)snprintf(buf + n, len - n, "%s%d",
					      buf[n - 1] == '(' ? "" : ",", cpu);
	if (n + 2 > len)
		return -1;
	snprintf(buf + n, len - n, ")");
	return 0;
}

/*
 * pci: leave EAL's PCI bus on (no --no-pci), for a driver probed on it by
 * hotplug (migrate's peer stages). The caller restricts what the bus sees.
 */
int
lm_app_eal_init_bus(const char *prog, const char *extra_eal, bool pci)
{
	static char prefix[sizeof(file_prefix) + 16];
	static char extra_copy[4096];
	static char lcores[4200];
	char *argv[MAX_EAL_ARGS];
	int argc = 0, ret;
	char *tok, *save = NULL;

	if (file_prefix[0] != '\0')
		snprintf(prefix, sizeof(prefix), "--file-prefix=%s", file_prefix);
	else
		snprintf(prefix, sizeof(prefix), "--file-prefix=test-lm-%d", (int)getpid());
	argv[argc++] = (char *)prog;
	argv[argc++] = "--no-huge";
	argv[argc++] = "-m";
	argv[argc++] = "512";
	argv[argc++] = "--no-shconf";
	if (!pci)
		argv[argc++] = "--no-pci";
	argv[argc++] = "--no-telemetry";
	argv[argc++] = prefix;
	/* EAL's start-up chatter hides the tables users run this for. */
	argv[argc++] = "--log-level=lib.eal:warning";
	/*
	 * No data-plane lcore here: vDPA moves the packets in the device. EAL
	 * would pin the main thread to the first CPU, and with every CPU an
	 * lcore its control threads (vhost's, the PMD's) to that CPU too: the
	 * whole process on one CPU. One lcore over all the CPUs we were given
	 * (taskset/cgroups confine it), unless the user chose lcores.
	 */
	if (extra_eal == NULL || !names_lcores(extra_eal)) {
		if (cpus_arg(lcores, sizeof(lcores)) == 0)
			argv[argc++] = lcores;
	}
	if (extra_eal != NULL) {
		snprintf(extra_copy, sizeof(extra_copy), "%s", extra_eal);
		for (tok = strtok_r(extra_copy, " ", &save); tok != NULL && argc < MAX_EAL_ARGS - 1;
		     tok = strtok_r(NULL, " ", &save))
			argv[argc++] = tok;
	}
	argv[argc] = NULL;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot initialise DPDK EAL: %s\n", prog,
			rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

void
lm_app_eal_cleanup(void)
{
	char dir[PATH_MAX];

	/*
	 * EAL makes a runtime directory per file prefix (ours: one per pid)
	 * even with --no-shconf, and leaves it behind: hundreds pile up in
	 * /var/run/dpdk. Nothing else uses it; rmdir only removes it empty.
	 */
	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	if (dir[0] != '\0' && rmdir(dir) < 0 && errno != ENOENT)
		fprintf(stderr, "cannot remove EAL runtime directory %s: %s\n", dir,
			strerror(errno));
}

int
lm_app_probe_device(const char *devname, const char *devargs)
{
	int eal_level = rte_log_get_level(RTE_LOGTYPE_EAL);
	int ret;

	/*
	 * EAL adds two generic lines to the driver's own explanation of a
	 * failed probe; keep only the driver's.
	 */
	rte_log_set_level(RTE_LOGTYPE_EAL, RTE_LOG_CRIT);
	ret = rte_eal_hotplug_add("vdev", devname, devargs != NULL ? devargs : "");
	rte_log_set_level(RTE_LOGTYPE_EAL, eal_level);
	/* Through EAL's log: where the application sends it (a worker names its VM there). */
	if (ret < 0 && !rte_pmd_mlx5_lm_probe_failed(devname))
		rte_log(RTE_LOG_ERR, RTE_LOGTYPE_USER1, "%s: cannot probe: %s\n", devname,
			strerror(-ret));
	return ret < 0 ? ret : 0;
}

int
lm_app_remove_device(const char *devname)
{
	int ret = rte_eal_hotplug_remove("vdev", devname);

	if (ret < 0)
		rte_log(RTE_LOG_ERR, RTE_LOGTYPE_USER1, "%s: cannot remove: %s\n", devname,
			strerror(-ret));
	return ret;
}
