/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tests' clock: CLOCK_MONOTONIC in milliseconds, for deadlines and
 * measured durations. One definition for the suites, the harness and the
 * stand-alone test programs (which link no harness).
 */
#ifndef LM_TEST_CLOCK_H
#define LM_TEST_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Whole milliseconds: deadlines. */
static inline int64_t
lmt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* With the part below a millisecond: durations that are measured. */
static inline double
lmt_now_ms_f(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif /* LM_TEST_CLOCK_H */
