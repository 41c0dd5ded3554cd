/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Honest measurement: the emulator's sleeping threads run with
 * minimal timer slack (prctl(2) PR_SET_TIMERSLACK) and the cost model
 * accounts what it charged against what its sleeps took; and the model
 * floor of dpdk-test-lm migrate (app/test-lm/migrate_floor.c) agrees with
 * shared/fw-model/floor.py, the reference method, for several shapes.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "prm.h"
#include "emu.h"
#include "emu_unit.h"
#include "emu_priv.h"
#include "rte_pmd_mlx5_lm.h"
#include "migrate_floor.h"

static void
quiet(int level, const char *line)
{
	(void)level;
	(void)line;
}

static char *
write_tmp(const char *text)
{
	return unit_write_tmp("test_cost", text);
}

static int
simple(struct emu_dev *dev, uint16_t opcode, uint32_t id, uint32_t *new_id)
{
	uint8_t in[256] = { 0 }, out[16];

	PRM_SET(destroy_in, in, opcode, opcode);
	PRM_SET(destroy_in, in, id, id);
	assert_int_equal(emu_cmd(dev, in, sizeof(in), out, sizeof(out)), 0);
	if (new_id != NULL)
		*new_id = (uint32_t)PRM_GET(create_out, out, id);
	return (int)PRM_GET(cmd_out, out, status);
}

/*
 * prctl(2): PR_SET_TIMERSLACK sets the calling thread's slack (default
 * 50 us): a thread that sleeps for the model must run at the minimum, 1 ns.
 * Every charge is accounted: the model's sum is exactly the profile's
 * costs, and a sleep to an absolute deadline never ends early, so the
 * measured time is at least the modelled one (overshoot >= 0).
 */
static void
test_sleeps_have_minimal_slack_and_account_overshoot(void **state)
{
	struct emu_cost_stats s;
	struct emu_dev *dev;
	size_t size = 64u << 20;
	uint32_t pd, umem, synd;
	void *buf;

	(void)state;
	/* Back to the kernel's default first: the emulator must set it itself. */
	assert_int_equal(prctl(PR_SET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), 0);
	assert_int_not_equal(prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), 1);
	dev = unit_emu_dev_profiled("cost",
		"{ \"cmd_slots\": 2, \"host_pin_parallel\": 1, \"commands\": {"
		"\"ALLOC_PD\": { \"base_us\": 2000 },"
		"\"DEALLOC_PD\": { \"base_us\": 1000 },"
		"\"GUEST_UMEM_PIN\": { \"base_us\": 0, \"per_gib_us\": 16000 },"
		"\"GUEST_UMEM_REG\": { \"base_us\": 100, \"per_gib_us\": 8000 },"
		"\"GUEST_UMEM_DEREG\": { \"base_us\": 50 } } }");
	emu_dev_cost_stats(dev, &s);
	assert_int_equal(s.cmds, 0);
	assert_int_equal(s.pins, 0);

	assert_int_equal(simple(dev, PRM_CMD_ALLOC_PD, 0, &pd), 0);
	assert_int_equal(prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), 1);
	assert_int_equal(simple(dev, PRM_CMD_DEALLOC_PD, pd, NULL), 0);
	emu_dev_cost_stats(dev, &s);
	assert_int_equal(s.cmds, 2);
	assert_true(fabs(s.model_us - 3000.0) < 1e-6);
	assert_true(s.actual_us >= s.model_us);
	assert_true(s.overshoot_max_us >= 0 && s.overshoot_max_us <= s.actual_us - s.model_us);

	/* A guest-sized umem: a pin token (host) then a slot (firmware), apart. */
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	assert_int_equal(emu_umem_reg(dev, buf, size, 0, &umem, &synd), 0);
	assert_int_equal(emu_umem_dereg(dev, umem, &synd), 0);
	emu_dev_cost_stats(dev, &s);
	assert_int_equal(s.pins, 1);
	assert_true(fabs(s.pin_model_us - 1000.0) < 1e-6);     /* 16000 us/GiB x 1/16 GiB */
	assert_true(s.pin_actual_us >= s.pin_model_us);
	assert_int_equal(s.cmds, 4);
	assert_true(fabs(s.model_us - (3000.0 + 600.0 + 50.0)) < 1e-6);
	assert_true(s.actual_us >= s.model_us);
	emu_set_log(quiet);
	assert_int_equal(emu_dev_destroy(dev), 0);
	emu_set_log(NULL);
	munmap(buf, size);
}

/* A zero-cost profile charges nothing and takes no slot. */
static void
test_zero_cost_profile_accounts_nothing(void **state)
{
	struct emu_cost_stats s;
	struct emu_dev *dev;
	char err[256];
	uint32_t pd;

	(void)state;
	dev = emu_dev_create("fast", "fast", err, sizeof(err));
	assert_non_null(dev);
	assert_int_equal(simple(dev, PRM_CMD_ALLOC_PD, 0, &pd), 0);
	assert_int_equal(simple(dev, PRM_CMD_DEALLOC_PD, pd, NULL), 0);
	emu_dev_cost_stats(dev, &s);
	assert_int_equal(s.cmds, 0);
	assert_true(s.model_us == 0 && s.actual_us == 0);
	assert_int_equal(emu_dev_destroy(dev), 0);
}

/*
 * floor.py's output for the cx6dx profile (shared/fw-model/floor.py,
 * rounded as it prints: 0.1 ms, the source stop 0.01 ms).
 */
static const struct {
	unsigned int d, q, g, chunks;
	double base, serial, overlapped, dstq_base, dstq_floor, mr_1w, mr_floor, src_stop;
} floor_py[] = {
	{ 4, 16, 256, 256, 5460.9, 152.5, 38.1, 359.7, 3.8, 743.0, 32.0, 2.3 },
	{ 1, 4, 16, 16, 172.3, 6.5, 6.5, 90.9, 1.9, 46.9, 3.4, 1.15 },
	{ 8, 4, 16, 16, 1378.5, 51.7, 7.1, 90.9, 1.9, 46.9, 3.4, 1.15 },
	{ 1, 2, 4, 4, 72.9, 5.0, 5.0, 46.1, 1.9, 12.1, 2.0, 1.15 },
};

#define near(a, b, tol) (fabs((a) - (b)) <= (tol) + 1e-9)

static void
check_floor(const struct mig_floor *f, unsigned int i)
{
	assert_int_equal(f->chunks, floor_py[i].chunks);
	assert_true(near(f->baseline_ms, floor_py[i].base, 0.05));
	assert_true(near(f->floor_serial_ms, floor_py[i].serial, 0.05));
	assert_true(near(f->floor_overlapped_ms, floor_py[i].overlapped, 0.05));
	assert_true(near(f->dst_queues_baseline_ms, floor_py[i].dstq_base, 0.05));
	assert_true(near(f->dst_queues_floor_ms, floor_py[i].dstq_floor, 0.05));
	assert_true(near(f->mr_create_1worker_ms, floor_py[i].mr_1w, 0.05));
	assert_true(near(f->mr_create_floor_ms, floor_py[i].mr_floor, 0.05));
	assert_true(near(f->src_stop_floor_per_device_ms, floor_py[i].src_stop, 0.005));
}

static void
test_floor_matches_the_figures_of_floor_py(void **state)
{
	struct mig_floor f;
	char err[256];
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(floor_py) / sizeof(floor_py[0]); i++) {
		assert_int_equal(mig_floor_compute("cx6dx", floor_py[i].d, floor_py[i].q,
						   floor_py[i].g, &f, err, sizeof(err)), 0);
		check_floor(&f, i);
	}
	/* The fast profile costs nothing: no floor. */
	assert_int_equal(mig_floor_compute("fast", 1, 2, 4, &f, err, sizeof(err)), 0);
	assert_true(f.floor_overlapped_ms == 0 && f.baseline_ms == 0);
	/* A profile without an entry the method needs is refused, naming it. */
	assert_int_equal(mig_floor_compute(write_tmp("{ \"cmd_slots\": 1, \"host_pin_parallel\""
			 ": 1, \"commands\": { \"ALLOC_PD\": { \"base_us\": 1 } } }"), 1, 1, 1, &f,
			 err, sizeof(err)), -1);
	assert_non_null(strstr(err, "GUEST_UMEM_PIN"));
}

/*
 * The reference itself, where the checkout has it beside the project
 * (../shared/fw-model): run floor.py on the shared profile and compare.
 */
static void
test_floor_matches_floor_py_run_on_the_shared_profile(void **state)
{
	static const unsigned int shapes[][3] = { { 4, 16, 256 }, { 1, 16, 256 },
						  { 8, 4, 16 }, { 3, 8, 64 } };
	char cmd[1024];
	unsigned int i;

	(void)state;
	if (access(FLOOR_PY, R_OK) != 0 || access(FLOOR_PROFILE, R_OK) != 0) {
		printf("skipped: %s not here\n", FLOOR_PY);
		skip();
	}
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		json_error_t jerr;
		struct mig_floor f;
		char err[256];
		json_t *doc;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "python3 %s %s %u %u %u", FLOOR_PY, FLOOR_PROFILE,
			 shapes[i][0], shapes[i][1], shapes[i][2]);
		p = popen(cmd, "r");
		assert_non_null(p);
		doc = json_loadf(p, 0, &jerr);
		assert_int_equal(pclose(p), 0);
		assert_non_null(doc);
		assert_int_equal(mig_floor_compute("cx6dx", shapes[i][0], shapes[i][1],
						   shapes[i][2], &f, err, sizeof(err)), 0);
#define J(k) json_number_value(json_object_get(doc, k))
		assert_int_equal(f.chunks, (unsigned int)J("chunks"));
		assert_true(near(f.baseline_ms, J("baseline_ms"), 0.05));
		assert_true(near(f.floor_serial_ms, J("floor_serial_devices_ms"), 0.05));
		assert_true(near(f.floor_overlapped_ms, J("floor_overlapped_devices_ms"), 0.05));
		assert_true(near(f.dst_queues_baseline_ms, J("dst_queues_baseline_ms"), 0.05));
		assert_true(near(f.dst_queues_floor_ms, J("dst_queues_floor_ms"), 0.05));
		assert_true(near(f.mr_create_1worker_ms, J("mr_create_1worker_ms"), 0.05));
		assert_true(near(f.mr_create_floor_ms, J("mr_create_floor_ms"), 0.05));
		assert_true(near(f.src_stop_floor_per_device_ms,
				 J("src_stop_floor_per_device_ms"), 0.005));
#undef J
		json_decref(doc);
	}
}

/*
 * Host pinning tokens across processes (emu.h, MLX5_LM_EMU_HOST): the
 * processes of one run share the host's CPUs, so they share its
 * host_pin_parallel tokens through one POSIX named semaphore
 * (sem_overview(7)), created by the parent and unlinked by it. With a host
 * of one token, a child process holding it leaves none to this process
 * although this process's own profile allows 4; once the child gives it
 * back, this process gets it. Unset, the tokens are the process's own.
 */
static void
test_pin_tokens_shared_by_processes_of_one_host(void **state)
{
	struct emu_profile *p;
	char err[256], host[32], name[EMU_HOST_NAME_MAX + 32], c;
	int to_child[2], to_parent[2], status, val;
	sem_t *s;
	pid_t pid;

	(void)state;
	assert_int_equal(emu_profile_load(write_tmp("{ \"cmd_slots\": 1, "
		"\"host_pin_parallel\": 4, \"commands\": {} }"), &p, err, sizeof(err)), 0);
	assert_int_equal(emu_host_sem_name("a/b", name, sizeof(name)), -EINVAL);
	assert_int_equal(emu_host_sem_name("", name, sizeof(name)), -EINVAL);
	snprintf(host, sizeof(host), "test-cost-%d", (int)getpid());
	assert_int_equal(emu_host_sem_name(host, name, sizeof(name)), 0);
	sem_unlink(name);
	s = sem_open(name, O_CREAT | O_EXCL, 0600, 1);
	assert_true(s != SEM_FAILED);
	assert_int_equal(setenv(EMU_HOST_ENV, host, 1), 0);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The child: take the host's token, hold it until told. */
		emu_pin_get(p);
		if (write(to_parent[1], "g", 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(2);
		emu_pin_put();
		_exit(write(to_parent[1], "p", 1) == 1 ? 0 : 2);
	}
	assert_int_equal(read(to_parent[0], &c, 1), 1);
	assert_int_equal(c, 'g');
	/* The child holds the host's only token: none here, whatever the profile says. */
	assert_false(emu_pin_tryget(p));
	assert_int_equal(sem_getvalue(s, &val), 0);
	assert_int_equal(val, 0);
	assert_int_equal(write(to_child[1], "x", 1), 1);
	assert_int_equal(read(to_parent[0], &c, 1), 1);
	assert_int_equal(c, 'p');
	assert_true(emu_pin_tryget(p));
	assert_false(emu_pin_tryget(p));
	emu_pin_put();
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sem_getvalue(s, &val), 0);
	assert_int_equal(val, 1);
	/* Unset: the process's own 4 tokens, the semaphore untouched. */
	assert_int_equal(unsetenv(EMU_HOST_ENV), 0);
	assert_true(emu_pin_tryget(p));
	assert_true(emu_pin_tryget(p));
	assert_true(emu_pin_tryget(p));
	assert_true(emu_pin_tryget(p));
	assert_false(emu_pin_tryget(p));
	emu_pin_put();
	emu_pin_put();
	emu_pin_put();
	emu_pin_put();
	assert_int_equal(sem_getvalue(s, &val), 0);
	assert_int_equal(val, 1);
	sem_close(s);
	assert_int_equal(sem_unlink(name), 0);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	emu_profile_free(p);
}

struct pin_waiter {
	const struct emu_profile *p;
	atomic_bool got;
};

static void *
pin_waiter_main(void *arg)
{
	struct pin_waiter *w = arg;

	emu_pin_get(w->p);
	atomic_store(&w->got, true);
	return NULL;
}

/* Until cond() holds or 5 s passed: whether it held. */
static bool
pin_until(bool (*cond)(const void *), const void *arg)
{
	int i;

	for (i = 0; i < 5000 && !cond(arg); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	return cond(arg);
}

static bool
pin_waiting_is(const void *n)
{
	return emu_pin_waiting() == *(const unsigned int *)n;
}

static bool
pin_got(const void *w)
{
	return atomic_load(&((const struct pin_waiter *)w)->got);
}

/*
 * A returned token wakes one waiter when every waiter has the same limit,
 * and all of them when devices of different profiles wait: with 2 tokens
 * taken, a waiter whose profile allows 1 (waiting first) and one whose
 * profile allows 2; a token given back is the second one's, which must
 * get it although the first, woken alone, could not take it.
 */
static void
test_pin_token_reaches_the_waiter_it_fits(void **state)
{
	struct emu_profile *p1, *p2;
	struct pin_waiter a = { 0 }, b = { 0 };
	const unsigned int one = 1, two = 2, none = 0;
	pthread_t ta, tb;
	char err[256];

	(void)state;
	assert_int_equal(unsetenv(EMU_HOST_ENV), 0);
	assert_int_equal(emu_profile_load(write_tmp("{ \"cmd_slots\": 1, "
		"\"host_pin_parallel\": 1, \"commands\": {} }"), &p1, err, sizeof(err)), 0);
	assert_int_equal(emu_profile_load(write_tmp("{ \"cmd_slots\": 1, "
		"\"host_pin_parallel\": 2, \"commands\": {} }"), &p2, err, sizeof(err)), 0);
	assert_true(emu_pin_tryget(p2));
	assert_true(emu_pin_tryget(p2));
	a.p = p1;
	b.p = p2;
	assert_int_equal(pthread_create(&ta, NULL, pin_waiter_main, &a), 0);
	assert_true(pin_until(pin_waiting_is, &one));
	assert_int_equal(pthread_create(&tb, NULL, pin_waiter_main, &b), 0);
	assert_true(pin_until(pin_waiting_is, &two));
	emu_pin_put();
	assert_true(pin_until(pin_got, &b));
	assert_int_equal(pthread_join(tb, NULL), 0);
	assert_false(atomic_load(&a.got));
	/* The other token and b's: none taken, the limit-1 waiter goes. */
	emu_pin_put();
	emu_pin_put();
	assert_true(pin_until(pin_got, &a));
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_true(pin_until(pin_waiting_is, &none));
	emu_pin_put();
	emu_profile_free(p1);
	emu_profile_free(p2);
}

/*
 * A token given back goes to the thread that waited for it, not to the
 * next one to ask: with one token, taken, and a waiter, a token given back
 * leaves none to take here, even before the waiter ran; the waiter has it.
 * (Were it free for anyone, the waiter, once on a CPU, would find it taken
 * and sleep again: a context switch per token lost, for up to 128 MKEY
 * workers of a preparation.)
 */
static void
test_pin_token_handed_to_its_waiter(void **state)
{
	struct emu_profile *p;
	struct pin_waiter a = { 0 };
	const unsigned int one = 1, none = 0;
	pthread_t ta;
	char err[256];

	(void)state;
	assert_int_equal(unsetenv(EMU_HOST_ENV), 0);
	assert_int_equal(emu_profile_load(write_tmp("{ \"cmd_slots\": 1, "
		"\"host_pin_parallel\": 1, \"commands\": {} }"), &p, err, sizeof(err)), 0);
	assert_true(emu_pin_tryget(p));
	a.p = p;
	assert_int_equal(pthread_create(&ta, NULL, pin_waiter_main, &a), 0);
	assert_true(pin_until(pin_waiting_is, &one));
	emu_pin_put();
	assert_int_equal(emu_pin_waiting(), 0);
	assert_false(emu_pin_tryget(p));
	assert_true(pin_until(pin_got, &a));
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_false(emu_pin_tryget(p));
	emu_pin_put();
	assert_true(pin_until(pin_waiting_is, &none));
	assert_true(emu_pin_tryget(p));
	emu_pin_put();
	emu_profile_free(p);
}

struct slot_waiter {
	struct emu_dev *dev;
	atomic_uint *order;
	atomic_uint got;  /* 1 + its rank among the threads given a slot */
	atomic_bool release;
};

static void *
slot_waiter_main(void *arg)
{
	struct slot_waiter *w = arg;

	emu_slot_get(w->dev);
	atomic_store(&w->got, atomic_fetch_add(w->order, 1) + 1);
	while (!atomic_load(&w->release))
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	emu_slot_put(w->dev);
	return NULL;
}

static struct emu_dev *slot_dev;
static unsigned int slot_want;

static bool
slot_waiting_is(const void *n)
{
	return emu_slot_waiting(slot_dev) == *(const unsigned int *)n;
}

static bool
slot_got(const void *w)
{
	return atomic_load(&((const struct slot_waiter *)w)->got) != 0;
}

/*
 * Command slots go to their waiters in the order they came, as the
 * kernel's command interface hands out its entries: with one slot, held
 * here, waiters a then b; the slot given back is a's (none left to take);
 * c comes while a holds it; a's goes to b, b's to c.
 */
static void
test_command_slots_go_to_waiters_in_order(void **state)
{
	struct slot_waiter w[3] = { 0 };
	atomic_uint order = 0;
	pthread_t th[3];
	char err[256];
	unsigned int i;

	(void)state;
	slot_dev = emu_dev_create("slots", write_tmp("{ \"cmd_slots\": 1, "
		"\"host_pin_parallel\": 1, \"commands\": {} }"), err, sizeof(err));
	assert_non_null(slot_dev);
	for (i = 0; i < 3; i++) {
		w[i].dev = slot_dev;
		w[i].order = &order;
	}
	emu_slot_get(slot_dev);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&th[i], NULL, slot_waiter_main, &w[i]), 0);
		slot_want = i + 1;
		assert_true(pin_until(slot_waiting_is, &slot_want));
	}
	emu_slot_put(slot_dev);
	/* Handed to a at once: b still waits, nothing is free. */
	slot_want = 1;
	assert_int_equal(emu_slot_waiting(slot_dev), 1);
	assert_true(pin_until(slot_got, &w[0]));
	assert_int_equal(pthread_create(&th[2], NULL, slot_waiter_main, &w[2]), 0);
	slot_want = 2;
	assert_true(pin_until(slot_waiting_is, &slot_want));
	for (i = 0; i < 3; i++) {
		atomic_store(&w[i].release, true);
		assert_true(pin_until(slot_got, &w[i]));
		assert_int_equal(atomic_load(&w[i].got), i + 1);
		assert_int_equal(pthread_join(th[i], NULL), 0);
	}
	assert_int_equal(emu_slot_waiting(slot_dev), 0);
	assert_int_equal(emu_dev_destroy(slot_dev), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sleeps_have_minimal_slack_and_account_overshoot),
		cmocka_unit_test(test_zero_cost_profile_accounts_nothing),
		cmocka_unit_test(test_floor_matches_the_figures_of_floor_py),
		cmocka_unit_test(test_floor_matches_floor_py_run_on_the_shared_profile),
		cmocka_unit_test(test_pin_tokens_shared_by_processes_of_one_host),
		cmocka_unit_test(test_pin_token_reaches_the_waiter_it_fits),
		cmocka_unit_test(test_pin_token_handed_to_its_waiter),
		cmocka_unit_test(test_command_slots_go_to_waiters_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
