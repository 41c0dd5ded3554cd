/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's metrics label values (app/vhostd/vhostd_prom.c): escaped
 * as the Prometheus text format says, whatever a worker sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "vhostd_prom.h"

static char *
label(const char *sep, const char *name, const char *value)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	vhostd_prom_label(f, sep, name, value);
	fclose(f);
	return text;
}

static void
test_label_values_are_escaped_as_the_text_format_says(void **state)
{
	static const struct {
		const char *sep, *value, *out;
	} cases[] = {
		{ "", "vm1-net0", "device=\"vm1-net0\"" },
		{ ",", "a\"b", ",device=\"a\\\"b\"" },
		{ "", "a\\b", "device=\"a\\\\b\"" },
		{ "", "a\nb", "device=\"a\\nb\"" },
		/* A value that would close the label and start a sample of its own. */
		{ "", "x\"} 1\nfake{a=\"\\", "device=\"x\\\"} 1\\nfake{a=\\\"\\\\\"" },
		{ "", "tab\tand ' stay", "device=\"tab\tand ' stay\"" },
		{ "", "", "device=\"\"" },
		{ "", NULL, "device=\"\"" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = label(cases[i].sep, "device", cases[i].value);

		assert_string_equal(t, cases[i].out);
		free(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_values_are_escaped_as_the_text_format_says),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
