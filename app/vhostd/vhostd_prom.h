/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text format's label values (exposition format 0.0.4):
 * what vhostd_metrics.c writes, apart so that the unit tests reach it
 * without libmicrohttpd.
 */
#ifndef VHOSTD_PROM_H
#define VHOSTD_PROM_H

#include <stdio.h>

/*
 * sep (",", or "" for the first label), then name="value" with value
 * escaped as the format says: \ as \\, " as \", a newline as \n. value
 * comes from a worker (a device's name, DPDK's counter names): whatever
 * it holds, the line stays one sample. NULL is written as "".
 */
void vhostd_prom_label(FILE *f, const char *sep, const char *name, const char *value);

#endif /* VHOSTD_PROM_H */
