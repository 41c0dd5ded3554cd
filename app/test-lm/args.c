/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks of command-line arguments that the tool can make before any work
 * starts, so that a typo costs a second, not a benchmark run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rte_pmd_mlx5_lm.h"
#include "test_lm.h"

int
test_lm_check_profile(const char *cmd, const char *profile)
{
	char err[256];

	if (rte_pmd_mlx5_lm_emu_profile_check(profile, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "%s: --profile: %s\n", cmd, err);
	return -1;
}

int
test_lm_check_output(const char *cmd, const char *opt, const char *path)
{
	int fd;

	/* An existing file is kept as it is until the results replace it. */
	if (access(path, F_OK) == 0) {
		if (access(path, W_OK) == 0)
			return 0;
	} else {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			unlink(path);
			return 0;
		}
	}
	fprintf(stderr, "%s: %s: cannot write %s: %s\n", cmd, opt, path, strerror(errno));
	return -1;
}

int
test_lm_exe_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	if ((size_t)snprintf(buf, len, "%s/%s", exe, name) >= len)
		return -1;
	return 0;
}

int
test_lm_parse_uint(const char *cmd, const char *opt, const char *s, unsigned int min,
		   unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	/* strtoul takes "-5" as a huge value and "5x" as 5: neither is a number here. */
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "%s: %s: '%s' is not a number in [%u, %u]\n", cmd, opt, s, min,
			max);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}
