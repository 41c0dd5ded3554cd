/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's configuration alone (app/vhostd/vhostd_config.c): device
 * parameters, the file's parse, save and replay, and the difference a
 * SIGHUP applies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "vhostd_config.h"

static struct vhostd_devcfg
dev(const char *name, const char *vm, const char *sock, const char *devargs)
{
	struct vhostd_devcfg d = { 0 };

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.vm, sizeof(d.vm), "%s", vm);
	snprintf(d.socket, sizeof(d.socket), "%s", sock);
	snprintf(d.devargs, sizeof(d.devargs), "%s", devargs);
	return d;
}

static int
from(const char *text, struct vhostd_devcfg *d, char *msg, size_t len)
{
	json_t *p = json_loads(text, 0, NULL);
	int r = vhostd_devcfg_from_json(p, d, msg, len);

	json_decref(p);
	return r;
}

static void
test_device_parameters_are_checked_field_by_field(void **state)
{
	static const struct {
		const char *in;
		const char *field;
	} bad[] = {
		{ "{\"name\":\"\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":\"emu=fast\"}", "'name'" },
		{ "{\"name\":\"a/b\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":\"emu=fast\"}",
		  "'name'" },
		{ "{\"name\":\"a\",\"vm\":\"v v\",\"socket\":\"/s\",\"devargs\":\"emu=fast\"}",
		  "'vm'" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"s\",\"devargs\":\"emu=fast\"}",
		  "'socket'" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":\"queues=2\"}",
		  "exactly one of" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":\"emu=a,pci=b\"}",
		  "exactly one of" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":\"emu=fast\\n\"}",
		  "control character" },
		/* Another spelling of a path could name another device's socket. */
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/r//s\",\"devargs\":\"emu=fast\"}",
		  "plain path" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/r/./s\",\"devargs\":\"emu=fast\"}",
		  "plain path" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/r/x/../s\",\"devargs\":\"emu=fast\"}",
		  "plain path" },
		{ "{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/r/s/\",\"devargs\":\"emu=fast\"}",
		  "plain path" },
	};
	struct vhostd_devcfg d;
	char msg[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(from(bad[i].in, &d, msg, sizeof(msg)), -1);
		assert_non_null(strstr(msg, bad[i].field));
	}
	assert_int_equal(from("{\"name\":\"vm1-net0\",\"vm\":\"vm1\",\"socket\":\"/run/a.sock\","
			      "\"client\":true,\"devargs\":\"ibdev=mlx5_0,queues=4\"}", &d, msg,
			      sizeof(msg)), 0);
	assert_string_equal(d.name, "vm1-net0");
	assert_true(d.client);
	assert_string_equal(d.devargs, "ibdev=mlx5_0,queues=4");
	/* A destination's memory is prepared unasked unless the device says not. */
	assert_true(d.auto_prepare);
	assert_int_equal(from("{\"name\":\"a\",\"vm\":\"v\",\"socket\":\"/s\",\"devargs\":"
			      "\"emu=fast\",\"auto_prepare\":false}", &d, msg, sizeof(msg)), 0);
	assert_false(d.auto_prepare);
}

static void
test_names_and_sockets_are_unique(void **state)
{
	struct vhostd_config c;
	struct vhostd_devcfg a = dev("a", "v1", "/s/a", "emu=fast");
	struct vhostd_devcfg b = dev("a", "v2", "/s/b", "emu=fast");
	struct vhostd_devcfg s = dev("b", "v2", "/s/a", "emu=fast");
	char msg[256];

	vhostd_config_init(&c);
	assert_int_equal(vhostd_config_append(&c, &a), 0);
	assert_int_equal(vhostd_config_check_new(&c, &b, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "device 'a' exists"));
	assert_int_equal(vhostd_config_check_new(&c, &s, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "used by device 'a'"));
	vhostd_config_free(&c);
}

/* One socket through a symlinked directory is the same socket. */
static void
test_a_socket_through_a_symlinked_directory_is_the_same(void **state)
{
	char dir[] = "/tmp/test-vhostd-config-XXXXXX", link[64], pa[96], pb[96], pc[96];
	struct vhostd_config c;
	struct vhostd_devcfg a, b, other;
	char msg[256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s-link", dir);
	assert_int_equal(symlink(dir, link), 0);
	snprintf(pa, sizeof(pa), "%s/a.sock", dir);
	snprintf(pb, sizeof(pb), "%s/a.sock", link);
	snprintf(pc, sizeof(pc), "%s/c.sock", link);
	a = dev("a", "v1", pa, "emu=fast");
	b = dev("b", "v2", pb, "emu=fast");
	other = dev("c", "v2", pc, "emu=fast");
	vhostd_config_init(&c);
	assert_int_equal(vhostd_config_append(&c, &a), 0);
	assert_int_equal(vhostd_config_check_new(&c, &b, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "used by device 'a'"));
	assert_int_equal(vhostd_config_check_new(&c, &other, msg, sizeof(msg)), 0);
	vhostd_config_free(&c);
	unlink(link);
	rmdir(dir);
}

static void
test_saved_configuration_replays_to_the_same_devices(void **state)
{
	char path[] = "/tmp/test_vhostd_config_XXXXXX";
	struct vhostd_config c, back;
	struct vhostd_devcfg a = dev("a", "v1", "/s/a", "emu=fast,queues=2");
	struct vhostd_devcfg b = dev("b", "v2", "/s/b", "ibdev=mlx5_1");
	struct stat st;
	char msg[256];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	b.client = true;
	a.auto_prepare = true;
	vhostd_config_init(&c);
	vhostd_config_append(&c, &a);
	vhostd_config_append(&c, &b);
	assert_int_equal(vhostd_config_save(path, &c, msg, sizeof(msg)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(vhostd_config_load(path, &back, msg, sizeof(msg)), 0);
	assert_int_equal(back.n, 2);
	assert_true(vhostd_devcfg_equal(&back.dev[0], &a));
	assert_true(vhostd_devcfg_equal(&back.dev[1], &b));
	assert_true(back.dev[0].auto_prepare);
	assert_false(back.dev[1].auto_prepare);
	unlink(path);
	vhostd_config_free(&c);
	vhostd_config_free(&back);
}

static void
test_bad_files_say_which_entry(void **state)
{
	static const struct {
		const char *text;
		const char *why;
	} bad[] = {
		{ "{", "line 1" },
		{ "[]", "\"config\" array" },
		{ "{\"version\": 2, \"config\": []}", "\"version\" must be 1" },
		{ "{\"config\": [{\"method\": \"device_remove\", \"params\": {}}]}",
		  "config[0]: method 'device_remove'" },
		{ "{\"config\": [{\"method\": \"device_add\", \"params\": {\"name\": \"a\"}}]}",
		  "config[0]: invalid params: 'vm' is required" },
		{ "{\"config\": [{\"method\": \"device_add\", \"params\": {\"name\": \"a\", \"vm\": "
		  "\"v\", \"socket\": \"/s\", \"devargs\": \"emu=fast\"}}, {\"method\": "
		  "\"device_add\", \"params\": {\"name\": \"a\", \"vm\": \"v\", \"socket\": \"/t\", "
		  "\"devargs\": \"emu=fast\"}}]}", "config[1]: device 'a' exists" },
		{ "{\"config\": [{\"method\": \"device_add\", \"params\": {\"name\": \"a\", \"vm\": "
		  "\"v\", \"socket\": \"/s\", \"devargs\": \"emu=fast\", \"auto_prepare\": \"no\"}}]}",
		  "config[0]: invalid params: 'auto_prepare'" },
	};
	struct vhostd_config c;
	char msg[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vhostd_config_parse(bad[i].text, strlen(bad[i].text), &c, msg,
						     sizeof(msg)), -1);
		assert_non_null(strstr(msg, bad[i].why));
		assert_int_equal(c.n, 0);
	}
}

static void
test_diff_removes_gone_and_changed_and_adds_new_and_changed(void **state)
{
	struct vhostd_config cur, next;
	struct vhostd_devcfg a = dev("a", "v1", "/s/a", "emu=fast");
	struct vhostd_devcfg b = dev("b", "v1", "/s/b", "emu=fast");
	struct vhostd_devcfg c = dev("c", "v2", "/s/c", "emu=fast");
	struct vhostd_devcfg c2 = dev("c", "v2", "/s/c", "emu=fast,queues=2");
	struct vhostd_devcfg d = dev("d", "v3", "/s/d", "emu=fast");
	size_t rm[3], add[3], nrm, nadd;

	vhostd_config_init(&cur);
	vhostd_config_init(&next);
	vhostd_config_append(&cur, &a);
	vhostd_config_append(&cur, &b);
	vhostd_config_append(&cur, &c);
	vhostd_config_append(&next, &a);
	vhostd_config_append(&next, &c2);
	vhostd_config_append(&next, &d);
	vhostd_config_diff(&cur, &next, rm, &nrm, add, &nadd);
	assert_int_equal(nrm, 2);
	assert_string_equal(cur.dev[rm[0]].name, "b");
	assert_string_equal(cur.dev[rm[1]].name, "c");
	assert_int_equal(nadd, 2);
	assert_string_equal(next.dev[add[0]].devargs, "emu=fast,queues=2");
	assert_string_equal(next.dev[add[1]].name, "d");
	/* The same file again: nothing to do. */
	vhostd_config_diff(&next, &next, rm, &nrm, add, &nadd);
	assert_int_equal(nrm + nadd, 0);
	vhostd_config_free(&cur);
	vhostd_config_free(&next);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_parameters_are_checked_field_by_field),
		cmocka_unit_test(test_names_and_sockets_are_unique),
		cmocka_unit_test(test_a_socket_through_a_symlinked_directory_is_the_same),
		cmocka_unit_test(test_saved_configuration_replays_to_the_same_devices),
		cmocka_unit_test(test_bad_files_say_which_entry),
		cmocka_unit_test(test_diff_removes_gone_and_changed_and_adds_new_and_changed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
