/* SPDX-License-Identifier: BSD-3-Clause */
/* Prometheus label values, escaped (see vhostd_prom.h). */
#include "vhostd_prom.h"

void
vhostd_prom_label(FILE *f, const char *sep, const char *name, const char *value)
{
	const char *p;

	fprintf(f, "%s%s=\"", sep, name);
	for (p = value != NULL ? value : ""; *p != '\0'; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}
