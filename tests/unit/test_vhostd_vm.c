/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm-vhostd's requests to a VM's worker (app/vhostd/vhostd_vm.c) where
 * no worker process is needed: what a failure to queue a request does. The
 * supervisor's loop is stubbed here (its epoll, its clock, its readiness),
 * and calloc is wrapped (meson links with --wrap) so that a test can make
 * the next allocation fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vhostd.h"

/* The supervisor's (vhostd_main.c): its state, and what its loop does. */
struct vhostd vhostd;

int64_t
vhostd_now_ms(void)
{
	return 0;
}

int
vhostd_watch_add(struct vhostd_watch *w, uint32_t events)
{
	return 0;
}

void
vhostd_watch_mod(struct vhostd_watch *w, uint32_t events)
{
}

void
vhostd_watch_del(struct vhostd_watch *w)
{
}

void
vhostd_check_ready(void)
{
}

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

/* The next allocations of vhostd_vm.c that fail: as many as this. */
static unsigned int calloc_failures;

void *
__wrap_calloc(size_t n, size_t size)
{
	if (calloc_failures > 0) {
		calloc_failures--;
		return NULL;
	}
	return __real_calloc(n, size);
}

static json_t *answer;

static void
call_done(struct vhostd_call *call, json_t *reply)
{
	answer = json_incref(reply);
}

/* VM vm1, its worker (pid 4242, not a process) ready, and its device n1, running. */
static struct vhostd_dev *
vm_with_a_device(void)
{
	struct vhostd_vm *vm = __real_calloc(1, sizeof(*vm));
	struct vhostd_dev *d = __real_calloc(1, sizeof(*d));

	memset(&vhostd, 0, sizeof(vhostd));
	TAILQ_INIT(&vhostd.devs);
	TAILQ_INIT(&vhostd.vms);
	assert_non_null(vm);
	assert_non_null(d);
	snprintf(vm->name, sizeof(vm->name), "vm1");
	vm->pid = 4242;
	vm->ready = true;
	vm->chan.fd = -1;
	vm->leaked = -1;
	TAILQ_INIT(&vm->sent);
	TAILQ_INIT(&vm->queued);
	TAILQ_INSERT_TAIL(&vhostd.vms, vm, next);
	snprintf(d->cfg.name, sizeof(d->cfg.name), "n1");
	snprintf(d->cfg.vm, sizeof(d->cfg.vm), "vm1");
	snprintf(d->cfg.socket, sizeof(d->cfg.socket), "/nonexistent/n1.sock");
	snprintf(d->cfg.devargs, sizeof(d->cfg.devargs), "emu=fast");
	snprintf(d->state, sizeof(d->state), "running");
	d->vm = vm;
	TAILQ_INSERT_TAIL(&vhostd.devs, d, next);
	return d;
}

/* What the worker was left with: its device as it was, no request, not told to stop. */
static void
left_alone(struct vhostd_dev *d, struct vhostd_vm *vm)
{
	assert_ptr_equal(vhostd_dev_find("n1"), d);
	assert_string_equal(d->state, "running");
	assert_ptr_equal(vhostd_vm_find("vm1"), vm);
	assert_int_equal(vm->pid, 4242);
	assert_false(vm->stopping);
	assert_true(TAILQ_EMPTY(&vm->sent));
	assert_true(TAILQ_EMPTY(&vm->queued));
	vhostd_devs_free();
	TAILQ_REMOVE(&vhostd.vms, vm, next);
	vhostd_buf_free(&vm->out);
	free(vm);
}

/*
 * A device_remove whose request cannot be allocated was taken for a worker
 * that is down: the device dropped and its client told 'gone' while the
 * worker still ran it, and the VM's worker told to exit with its 'last'
 * device. It fails that call alone: the device and its worker are as they were.
 */
static void
test_a_remove_without_memory_to_queue_fails_alone(void **state)
{
	struct vhostd_dev *d = vm_with_a_device();
	struct vhostd_vm *vm = d->vm;
	json_t *id = json_integer(7);
	struct vhostd_call *call = vhostd_call_new(id, "device_remove", &vhostd, call_done,
						   NULL);
	json_t *err;

	assert_non_null(call);
	answer = NULL;
	calloc_failures = 1;
	vhostd_dev_remove(d, call);
	calloc_failures = 0;
	assert_non_null(answer);
	err = json_object_get(answer, "error");
	assert_non_null(err);
	assert_int_equal(json_integer_value(json_object_get(err, "code")),
			 VHOSTD_RPC_INTERNAL_ERROR);
	assert_non_null(strstr(json_string_value(json_object_get(err, "message")),
			       "no memory to queue the request"));
	assert_null(json_object_get(answer, "result"));
	json_decref(answer);
	json_decref(id);
	left_alone(d, vm);
}

/* The same for a SIGHUP's removal: the device stays, and the reload goes on to its adds. */
static void
test_a_reload_remove_without_memory_to_queue_fails_alone(void **state)
{
	struct vhostd_dev *d = vm_with_a_device();
	struct vhostd_vm *vm = d->vm;

	vhostd_config_init(&vhostd.reload_next);
	vhostd.reload_removes = 1;
	calloc_failures = 1;
	vhostd_dev_remove(d, NULL);
	calloc_failures = 0;
	assert_int_equal(vhostd.reload_removes, 0);
	left_alone(d, vm);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_remove_without_memory_to_queue_fails_alone),
		cmocka_unit_test(test_a_reload_remove_without_memory_to_queue_fails_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
