/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's device prepared from its front end's process id (device_prepare,
 * vhostd_prepare.h): the process's shared file-backed mappings found and
 * their files re-opened (lm_app_fe_mem_find: the right to trace it is
 * needed), the PMD given them as regions for that process only, the fds
 * closed again (the PMD maps what it registers).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lm_app.h"
#include "rte_pmd_mlx5_lm.h"
#include "vhostd_devinfo.h"

/* QEMU's RAM blocks; smaller shared files (a ring, a log) are not guest RAM worth pinning. */
#define PREP_MIN_BYTES (2u << 20)
#define PREP_MAX_FILES 16

static const char *const state_names[] = {
	[RTE_PMD_MLX5_LM_PREP_NONE] = "none",
	[RTE_PMD_MLX5_LM_PREP_PREPARING] = "preparing",
	[RTE_PMD_MLX5_LM_PREP_READY] = "ready",
	[RTE_PMD_MLX5_LM_PREP_USED] = "used",
	[RTE_PMD_MLX5_LM_PREP_RELEASED] = "released",
	[RTE_PMD_MLX5_LM_PREP_FAILED] = "failed",
};

json_t *
vhostd_worker_prep_json(const char *devname)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	json_t *j;

	if (rte_pmd_mlx5_lm_prepare_status(devname, &st) < 0)
		return json_null();
	j = json_pack("{s:s, s:i, s:I, s:I, s:I, s:f, s:I}", "state",
		      st.state >= 0 && st.state <= RTE_PMD_MLX5_LM_PREP_FAILED ?
		      state_names[st.state] : "?", "pid", st.pid, "bytes", (json_int_t)st.bytes,
		      "used_bytes", (json_int_t)st.used_bytes,
		      "fallback_bytes", (json_int_t)st.fallback_bytes,
		      "prepare_ms", st.end_ms > st.start_ms ? st.end_ms - st.start_ms : 0.0,
		      "preparations", (json_int_t)st.preparations);
	/* When it ran, on the host's CLOCK_MONOTONIC (ms): a hook can place it in a migration. */
	if (j != NULL && st.end_ms > st.start_ms) {
		json_object_set_new(j, "start_ms", json_real(st.start_ms));
		json_object_set_new(j, "end_ms", json_real(st.end_ms));
	}
	if (j != NULL && st.reason[0] != '\0')
		json_object_set_new(j, "reason", json_string(st.reason));
	return j;
}

json_t *
vhostd_worker_prepare(const char *devname, int pid, char *err, size_t errlen)
{
	struct lm_app_fe_region fr[PREP_MAX_FILES];
	struct rte_pmd_mlx5_lm_prep_region r[PREP_MAX_FILES];
	json_t *files;
	uint64_t bytes = 0;
	int n, i, ret, pidfd;

	/*
	 * The process held by a pidfd before /proc/<pid> is read and before
	 * the PMD opens its own: if it is still alive once the PMD has the
	 * preparation, the pid named that one process throughout (a pid is
	 * reused only once its process is gone). Without it, a pid reused in
	 * between made the PMD watch a stranger for the exit of the process
	 * whose files it registered.
	 */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		if (errno == ESRCH)
			snprintf(err, errlen, "no process %d", pid);
		else
			snprintf(err, errlen, "process %d cannot be watched: %s", pid,
				 strerror(errno));
		return NULL;
	}
	n = lm_app_fe_mem_find(pid, PREP_MIN_BYTES, fr, PREP_MAX_FILES, err, errlen);
	if (n <= 0) {
		if (n == 0)
			snprintf(err, errlen, "process %d maps no shared memory file of %u MiB "
				 "or more that it holds open (memory-backend-memfd/-file with "
				 "share=on)", pid, PREP_MIN_BYTES >> 20);
		close(pidfd);
		return NULL;
	}
	files = json_array();
	for (i = 0; i < n; i++) {
		r[i].fd = fr[i].fd;
		r[i].offset = fr[i].offset;
		r[i].size = fr[i].size;
		bytes += fr[i].size;
		json_array_append_new(files, json_pack("{s:s, s:I, s:I}", "file", fr[i].name,
						       "offset", (json_int_t)fr[i].offset,
						       "size", (json_int_t)fr[i].size));
	}
	ret = rte_pmd_mlx5_lm_prepare(devname, pid, r, (unsigned int)n);
	lm_app_fe_mem_close(fr, (unsigned int)n);
	if (ret < 0) {
		snprintf(err, errlen, "the device refused the preparation: %s%s", strerror(-ret),
			 ret == -E2BIG ? " (beyond its prereg_max_gb)" : "");
		close(pidfd);
		json_decref(files);
		return NULL;
	}
	/* Readable: the process exited (its pid may name another one by now). */
	if (poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 0) != 0) {
		(void)rte_pmd_mlx5_lm_prepare_cancel(devname);
		snprintf(err, errlen, "process %d exited while it was being prepared: "
			 "preparation cancelled", pid);
		close(pidfd);
		json_decref(files);
		return NULL;
	}
	close(pidfd);
	return json_pack("{s:i, s:I, s:o}", "pid", pid, "bytes", (json_int_t)bytes, "files",
			 files);
}
