/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory registration (mlx5_lm_mr.c) on an emulated device (fast
 * profile), linked against the real PMD and EAL: chunk boundaries, holes,
 * 8 regions, the KLM entry limit, a failing chunk unwinding, reuse of a
 * released registration, and garbage collection at device removal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_dev.h>
#include <rte_eal.h>

#include "prm.h"
#include "emu.h"
#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_lifecycle.h"
#include <rte_vhost.h>
#include "devx_emu.h"
#include "rte_pmd_mlx5_lm.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)


static uint8_t *guest;         /* sparse mapping backing every test's regions */
static const uint64_t guest_size = 64 * GIB;
static unsigned int dev_seq;

static struct mlx5_lm_dev *
probe(char *name, size_t len, const char *extra)
{
	struct mlx5_lm_dev *dev;
	char args[256];

	snprintf(name, len, "vdpa_mlx5_lm%u", dev_seq++);
	snprintf(args, sizeof(args), "emu=fast,queues=1,workers=4%s%s", extra ? "," : "",
		 extra ? extra : "");
	assert_int_equal(rte_eal_hotplug_add("vdev", name, args), 0);
	/* The test removes the device itself: no reference kept past the lookup. */
	dev = mlx5_lm_dev_get(name);
	if (dev != NULL)
		mlx5_lm_dev_put(dev);
	return dev;
}

static void
remove_dev(const char *name)
{
	unsigned long before = emu_leaked_total();

	assert_int_equal(rte_eal_hotplug_remove("vdev", name), 0);
	assert_int_equal(emu_leaked_total(), before);
}

static struct rte_pmd_mlx5_lm_region
region(uint64_t gpa, uint64_t size, uint64_t off)
{
	struct rte_pmd_mlx5_lm_region r = {
		.gpa = gpa, .size = size, .hva = (uintptr_t)guest + off, .page_size = 4096,
	};
	return r;
}

static void
bench_ok(const char *name, const struct rte_pmd_mlx5_lm_region *r, unsigned int n,
	 uint32_t want_chunks)
{
	struct rte_pmd_mlx5_lm_mr_result res;

	assert_int_equal(rte_pmd_mlx5_lm_mr_bench(name, r, n, 512, &res), 0);
	assert_int_equal(res.chunks, want_chunks);
	assert_true(res.checked_pages >= 2 * want_chunks);
	assert_int_equal(res.verified_pages, res.checked_pages);
}

/* A device of its own registers the one region r in want_chunks chunks. */
static void
bench_one_region(struct rte_pmd_mlx5_lm_region r, uint32_t want_chunks)
{
	char name[32];

	probe(name, sizeof(name), NULL);
	bench_ok(name, &r, 1, want_chunks);
	remove_dev(name);
}

static void
test_region_of_whole_chunks_is_registered_chunk_by_chunk(void **state)
{
	bench_one_region(region(0, 3 * GIB, 0), 3);
}

static void
test_unaligned_region_ends_in_a_partial_chunk(void **state)
{
	/* 2.5 GiB at a GPA that is not 1 GiB aligned: chunks 1, 1, 0.5 GiB. */
	bench_one_region(region(3 * MIB, 2 * GIB + 512 * MIB, 0), 3);
}

static void
test_hole_between_regions_maps_nothing(void **state)
{
	struct rte_pmd_mlx5_lm_region r[] = {
		region(0, 3 * GIB, 0), region(4 * GIB, 5 * GIB, 3 * GIB),
	};
	struct mlx5_lm_mem_region regs[2];
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	char name[32];
	void *host;
	int i;

	dev = probe(name, sizeof(name), "mr_gc_ms=0");
	bench_ok(name, r, 2, 8);
	for (i = 0; i < 2; i++) {
		regs[i].gpa = r[i].gpa;
		regs[i].size = r[i].size;
		regs[i].hva = r[i].hva;
		regs[i].page_size = r[i].page_size;
	}
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 2, &mr), 0);
	/* The hole [3, 4) GiB is the null mkey's: no translation. */
	assert_int_equal(devx_emu_translate(dev->devx, mlx5_lm_mr_mkey(mr), 3 * GIB + 4096, 8,
					    &host), -EFAULT);
	assert_int_equal(devx_emu_translate(dev->devx, mlx5_lm_mr_mkey(mr), 4 * GIB, 8, &host), 0);
	assert_ptr_equal(host, guest + 3 * GIB);
	assert_int_equal(mlx5_lm_mr_destroy(mr), 0);
	remove_dev(name);
}

static void
test_eight_regions_are_registered_in_two_chunks_each(void **state)
{
	struct rte_pmd_mlx5_lm_region r[8];
	char name[32];
	int i;

	for (i = 0; i < 8; i++)
		r[i] = region((uint64_t)i * 2 * GIB, GIB + 64 * MIB, (uint64_t)i * 2 * GIB);
	probe(name, sizeof(name), NULL);
	bench_ok(name, r, 8, 16);
	remove_dev(name);
}

static void
test_entry_limit_fails_with_a_message(void **state)
{
	/* 16 GiB in 2 MiB chunks: 8192 KLM entries, more than one command takes. */
	struct rte_pmd_mlx5_lm_region r[] = { region(0, 16 * GIB, 0) };
	struct rte_pmd_mlx5_lm_mr_result res;
	char name[32];

	probe(name, sizeof(name), "mr_chunk_mb=2");
	assert_int_equal(rte_pmd_mlx5_lm_mr_bench(name, r, 1, 0, &res), -E2BIG);
	remove_dev(name);
}

/*
 * A layout the device cannot address is refused before
 * any command. A region at GPA 2^63 needs 2^32 hole entries of 2 GiB (the
 * KLM builder's uint32_t count wrapped and it spun for tens of seconds);
 * one whose GPA + size wraps past 2^64 has no valid range at all.
 */
static void
test_unaddressable_layouts_refused_before_building(void **state)
{
	struct mlx5_lm_mem_region high[] = {
		{ .gpa = 0, .size = GIB, .hva = (uintptr_t)guest, .page_size = 4096 },
		{ .gpa = 1ull << 63, .size = GIB, .hva = (uintptr_t)guest + GIB,
		  .page_size = 4096 },
	};
	struct mlx5_lm_mem_region wrap[] = {
		{ .gpa = 0 - GIB, .size = 2 * GIB, .hva = (uintptr_t)guest, .page_size = 4096 },
	};
	/* Just past what 4078 entries of 2 GiB cover. */
	struct mlx5_lm_mem_region far[] = {
		{ .gpa = (uint64_t)PRM_MAX_KLM_PER_CMD * 2 * GIB, .size = GIB,
		  .hva = (uintptr_t)guest, .page_size = 4096 },
	};
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr = NULL;
	unsigned int live;
	char name[32];

	(void)state;
	dev = probe(name, sizeof(name), NULL);
	live = emu_dev_live_objects(devx_emu_dev(dev->devx));
	assert_int_equal(mlx5_lm_mr_create(dev, high, 2, &mr), -E2BIG);
	assert_int_equal(mlx5_lm_mr_create(dev, wrap, 1, &mr), -EINVAL);
	assert_int_equal(mlx5_lm_mr_create(dev, far, 1, &mr), -E2BIG);
	assert_null(mr);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(dev->devx)), live);
	/* The last entry the device can address still works. */
	far[0].gpa -= 2 * GIB;
	assert_int_equal(mlx5_lm_mr_create(dev, far, 1, &mr), 0);
	assert_int_equal(mlx5_lm_mr_destroy(mr), 0);
	remove_dev(name);
}

static void
test_failed_chunk_unwinds_without_leak(void **state)
{
	struct rte_pmd_mlx5_lm_region r[] = { region(0, 8 * GIB, 0) };
	struct rte_pmd_mlx5_lm_mr_result res;
	struct mlx5_lm_dev *dev;
	unsigned int live;
	char name[32];

	dev = probe(name, sizeof(name), NULL);
	live = emu_dev_live_objects(devx_emu_dev(dev->devx));
	/* The 5th CREATE_MKEY of the 8 chunks fails. */
	assert_int_equal(emu_fault_inject(devx_emu_dev(dev->devx), PRM_CMD_CREATE_MKEY, 0xffff, 5,
					  PRM_STATUS_NO_RESOURCES, 0), 0);
	assert_true(rte_pmd_mlx5_lm_mr_bench(name, r, 1, 0, &res) < 0);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(dev->devx)), live);
	/* And the next registration works. */
	bench_ok(name, r, 1, 8);
	remove_dev(name);
}

/* The driver's own view (mlx5_lm_mem_regions) of a 2 MiB region backed by fd, mapped at map. */
static void
file_regions(struct mlx5_lm_dev *dev, int fd, void *map, struct mlx5_lm_mem_region *regs)
{
	struct rte_vhost_memory *mem = calloc(1, sizeof(*mem) + sizeof(mem->regions[0]));
	uint32_t n = 0;

	assert_non_null(mem);
	mem->nregions = 1;
	mem->regions[0].guest_phys_addr = 0;
	mem->regions[0].size = 2 * MIB;
	mem->regions[0].host_user_addr = (uintptr_t)map;
	mem->regions[0].mmap_addr = map;
	mem->regions[0].mmap_size = 2 * MIB;
	mem->regions[0].fd = fd;
	assert_int_equal(mlx5_lm_mem_regions(dev, mem, regs, &n), 0);
	assert_int_equal(n, 1);
	free(mem);
}

/*
 * 2 MiB of a memfd (tmpfile: an unnamed file in /dev/shm instead) mapped
 * shared, as a front end's guest memory.
 */
static void *
file_map(int *fd, int tmpfile)
{
	void *m;

	if (tmpfile)
		*fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	else
		*fd = memfd_create("test-mr-file", MFD_CLOEXEC);
	assert_true(*fd >= 0);
	assert_int_equal(ftruncate(*fd, 2 * MIB), 0);
	m = mmap(NULL, 2 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(m != MAP_FAILED);
	return m;
}

static void
test_released_registration_is_reused(void **state)
{
	struct mlx5_lm_mem_region regs[MLX5_LM_MAX_REGIONS], other[MLX5_LM_MAX_REGIONS];
	struct mlx5_lm_mem_region unknown;
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr, *again;
	char name[32];
	void *m;
	int fd;

	(void)state;
	dev = probe(name, sizeof(name), "mr_gc_ms=600000");
	m = file_map(&fd, 0);
	file_regions(dev, fd, m, regs);
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	mlx5_lm_mr_release(mr);
	other[0] = regs[0];
	other[0].size = MIB;
	assert_null(mlx5_lm_mr_reclaim(dev, other, 1));
	/* Same addresses, other memory (a new front end's): never reused. */
	other[0] = regs[0];
	other[0].file_ino++;
	assert_null(mlx5_lm_mr_reclaim(dev, other, 1));
	other[0] = regs[0];
	other[0].file_dev++;
	assert_null(mlx5_lm_mr_reclaim(dev, other, 1));
	other[0] = regs[0];
	other[0].file_off = 4096;
	assert_null(mlx5_lm_mr_reclaim(dev, other, 1));
	/* Memory whose file is unknown is never taken for another's. */
	unknown = regs[0];
	unknown.file_dev = 0;
	unknown.file_ino = 0;
	assert_null(mlx5_lm_mr_reclaim(dev, &unknown, 1));
	/* The guest writing its memory changes no page of the file. */
	memset(m, 0x5a, 2 * MIB);
	again = mlx5_lm_mr_reclaim(dev, regs, 1);
	assert_ptr_equal(again, mr);
	assert_null(mlx5_lm_mr_reclaim(dev, regs, 1));
	mlx5_lm_mr_release(again);
	remove_dev(name);
	munmap(m, 2 * MIB);
	close(fd);
}

/*
 * The same file emptied and grown again after the registration was
 * released (or while it was the device's): same (st_dev, st_ino), offset
 * and addresses, new pages - it pins the former ones, which no file holds
 * any more. It is neither taken back nor kept.
 */
static void
test_file_emptied_after_release_is_not_taken_back(void **state)
{
	struct mlx5_lm_mem_region r[MLX5_LM_MAX_REGIONS];
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	char name[32];
	void *m;
	int fd;

	(void)state;
	dev = probe(name, sizeof(name), "mr_gc_ms=600000");
	m = file_map(&fd, 0);
	file_regions(dev, fd, m, r);
	assert_int_equal(mlx5_lm_mr_create(dev, r, 1, &mr), 0);
	assert_true(mlx5_lm_mr_same_table(mr, r, 1));
	mlx5_lm_mr_release(mr);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(ftruncate(fd, 2 * MIB), 0);
	file_regions(dev, fd, m, r);
	assert_false(mlx5_lm_mr_same_table(mr, r, 1));
	assert_null(mlx5_lm_mr_reclaim(dev, r, 1));
	munmap(m, 2 * MIB);
	close(fd);
	/*
	 * A hole punched in a file: the same. (Not in a memfd: the kernel
	 * raises no inotify event for fallocate on one.)
	 */
	m = file_map(&fd, 1);
	file_regions(dev, fd, m, r);
	assert_int_equal(mlx5_lm_mr_create(dev, r, 1, &mr), 0);
	mlx5_lm_mr_release(mr);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
	assert_null(mlx5_lm_mr_reclaim(dev, r, 1));
	remove_dev(name);
	munmap(m, 2 * MIB);
	close(fd);
}

/* The process's inotify instances (fds whose link is anon_inode:inotify). */
static unsigned int
inotify_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], link[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = '\0';
			n += strcmp(link, "anon_inode:inotify") == 0;
		}
	}
	closedir(d);
	return n;
}

/*
 * The files' inotify instance is not closed when the last watched
 * registration goes: closing one waits for the kernel's mark reaper and
 * an SRCU grace period (seconds on a loaded host), and a release runs
 * under its device's lock. It lives while the driver has devices, one for
 * the process however many registrations come and go, and goes with the
 * last device.
 */
static void
test_files_watch_outlives_its_registrations_not_the_devices(void **state)
{
	struct mlx5_lm_mem_region r[MLX5_LM_MAX_REGIONS];
	unsigned int base = inotify_fds(), dev_fds;
	struct mlx5_lm_mr *mr;
	struct mlx5_lm_dev *dev;
	char name[32];
	void *m;
	int fd;

	(void)state;
	dev = probe(name, sizeof(name), "mr_gc_ms=0");
	/* The device's own (its preparations' files, mlx5_lm_prereg.c), if any. */
	dev_fds = inotify_fds();
	m = file_map(&fd, 0);
	for (int i = 0; i < 3; i++) {
		file_regions(dev, fd, m, r);
		assert_int_equal(mlx5_lm_mr_create(dev, r, 1, &mr), 0);
		assert_int_equal(inotify_fds(), dev_fds + 1);
		mlx5_lm_mr_release(mr);
		/* Destroyed (mr_gc_ms=0), its watch removed: the instance stays, one. */
		assert_int_equal(inotify_fds(), dev_fds + 1);
	}
	remove_dev(name);
	assert_int_equal(inotify_fds(), base);
	munmap(m, 2 * MIB);
	close(fd);
}

/* The driver's view of the test's guest memory: size bytes at gpa 0, 4 KiB pages. */
static struct mlx5_lm_mem_region
guest_region(uint64_t size)
{
	return (struct mlx5_lm_mem_region){
		.gpa = 0, .size = size, .hva = (uintptr_t)guest, .page_size = 4096,
	};
}

static void
test_garbage_destroyed_at_removal(void **state)
{
	struct mlx5_lm_mem_region regs[] = { guest_region(4 * GIB) };
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	char name[32];

	/* Ten minutes of delay: only the removal can destroy it in time. */
	dev = probe(name, sizeof(name), "mr_gc_ms=600000");
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	mlx5_lm_mr_release(mr);
	assert_true(emu_dev_live_objects(devx_emu_dev(dev->devx)) > 0);
	remove_dev(name); /* checks that nothing was left alive */
}

static void
test_garbage_thread_destroys_after_delay(void **state)
{
	struct mlx5_lm_mem_region regs[] = { guest_region(2 * GIB) };
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	unsigned int live;
	char name[32];

	dev = probe(name, sizeof(name), "mr_gc_ms=20");
	live = emu_dev_live_objects(devx_emu_dev(dev->devx));
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	mlx5_lm_mr_release(mr);
	assert_int_equal(mlx5_lm_mr_gc_wait(dev, 10000), 0);
	assert_int_equal(emu_dev_live_objects(devx_emu_dev(dev->devx)), live);
	remove_dev(name);
}

/*
 * Guest memory goes through the kernel's memory regions
 * (ibv_reg_mr_iova, one per chunk, in parallel), not DevX umems with
 * mkeys on them: no CREATE_UMEM reaches the device for it, one
 * CREATE_MKEY per chunk (the kernel's) plus the indirect one.
 */
static void
test_guest_memory_is_registered_as_memory_regions(void **state)
{
	struct mlx5_lm_mem_region regs[] = { guest_region(4 * GIB) };
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	struct emu_dev *e;
	unsigned long umems, mkeys;
	char name[32];

	(void)state;
	dev = probe(name, sizeof(name), "mr_chunk_mb=1024,mr_gc_ms=0");
	e = devx_emu_dev(dev->devx);
	umems = emu_dev_cmd_count(e, PRM_CMD_CREATE_UMEM);
	mkeys = emu_dev_cmd_count(e, PRM_CMD_CREATE_MKEY);
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	assert_int_equal(mr->nchunks, 4);
	assert_int_equal(emu_dev_cmd_count(e, PRM_CMD_CREATE_UMEM), umems);
	assert_int_equal(emu_dev_cmd_count(e, PRM_CMD_CREATE_MKEY), mkeys + 4 + 1);
	mlx5_lm_mr_release(mr);
	remove_dev(name);
}

/*
 * The firmware destroys an mkey whoever names it (no
 * RES_BUSY), so the driver keeps a released registration while a queue
 * object of its device names the key, and destroys it once none does:
 * its key keeps translating meanwhile, never a stale key under a queue.
 */
static void
test_registration_outlives_the_queue_objects_naming_it(void **state)
{
	struct mlx5_lm_mem_region regs[] = { guest_region(GIB) };
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_virtq *vq;
	struct mlx5_lm_vq_cfg cfg;
	struct mlx5_lm_mr *mr;
	uint32_t key;
	void *host;
	char name[32];

	(void)state;
	dev = probe(name, sizeof(name), "mr_gc_ms=0");
	vq = &dev->vq[0];
	assert_non_null(vq->obj);  /* pre-created blank */
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	key = mlx5_lm_mr_mkey(mr);
	pthread_mutex_lock(&dev->lock);
	cfg = vq->cur;
	cfg.mkey = key;
	assert_int_equal(mlx5_lm_virtq_modify(vq, &cfg, 0), 0);
	pthread_mutex_unlock(&dev->lock);
	/* Released while the queue names it: kept (the garbage thread retries). */
	mlx5_lm_mr_release(mr);
	assert_int_equal(devx_emu_translate(dev->devx, key, 0x1000, 8, &host), 0);
	assert_ptr_equal(host, guest + 0x1000);
	assert_int_equal(mlx5_lm_mr_gc_wait(dev, 300), -ETIMEDOUT);
	assert_int_equal(devx_emu_translate(dev->devx, key, 0x1000, 8, &host), 0);
	/* The queue lets go of it: destroyed at the next retry. */
	pthread_mutex_lock(&dev->lock);
	cfg.mkey = 0;
	assert_int_equal(mlx5_lm_virtq_modify(vq, &cfg, 0), 0);
	pthread_mutex_unlock(&dev->lock);
	assert_int_equal(mlx5_lm_mr_gc_wait(dev, 10000), 0);
	assert_int_equal(devx_emu_translate(dev->devx, key, 0x1000, 8, &host), -EFAULT);
	remove_dev(name);
}

/*
 * A released registration whose destroy fails once at the removal (a
 * transient DESTROY_MKEY failure) is tried again: none of its objects
 * outlives the device.
 */
static void
test_failed_destroy_at_removal_is_retried(void **state)
{
	struct mlx5_lm_mem_region regs[] = { guest_region(GIB) };
	unsigned long before = emu_leaked_total();
	struct mlx5_lm_dev *dev;
	struct mlx5_lm_mr *mr;
	char name[32];

	(void)state;
	dev = probe(name, sizeof(name), "mr_gc_ms=600000");
	assert_int_equal(mlx5_lm_mr_create(dev, regs, 1, &mr), 0);
	mlx5_lm_mr_release(mr);
	assert_int_equal(emu_fault_inject(devx_emu_dev(dev->devx), PRM_CMD_DESTROY_MKEY, 0xffff, 1,
					  PRM_STATUS_NO_RESOURCES, 0), 0);
	assert_int_equal(rte_eal_hotplug_remove("vdev", name), 0);
	assert_int_equal(emu_leaked_total(), before);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_region_of_whole_chunks_is_registered_chunk_by_chunk),
		cmocka_unit_test(test_unaligned_region_ends_in_a_partial_chunk),
		cmocka_unit_test(test_hole_between_regions_maps_nothing),
		cmocka_unit_test(test_eight_regions_are_registered_in_two_chunks_each),
		cmocka_unit_test(test_entry_limit_fails_with_a_message),
		cmocka_unit_test(test_unaddressable_layouts_refused_before_building),
		cmocka_unit_test(test_failed_chunk_unwinds_without_leak),
		cmocka_unit_test(test_released_registration_is_reused),
		cmocka_unit_test(test_garbage_destroyed_at_removal),
		cmocka_unit_test(test_garbage_thread_destroys_after_delay),
		cmocka_unit_test(test_guest_memory_is_registered_as_memory_regions),
		cmocka_unit_test(test_registration_outlives_the_queue_objects_naming_it),
		cmocka_unit_test(test_file_emptied_after_release_is_not_taken_back),
		cmocka_unit_test(test_files_watch_outlives_its_registrations_not_the_devices),
		cmocka_unit_test(test_failed_destroy_at_removal_is_retried),
	};
	char prefix[64];
	char *eal[] = { "test_mr", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
			"--no-telemetry", "--log-level=lib.eal:warning", prefix, NULL };
	int fd, ret;

	snprintf(prefix, sizeof(prefix), "--file-prefix=test-mr-%d", (int)getpid());
	fd = memfd_create("test-mr", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)guest_size) < 0)
		return 1;
	guest = mmap(NULL, guest_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (guest == MAP_FAILED)
		return 1;
	if (rte_eal_init(9, eal) < 0)
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	rte_eal_cleanup();
	munmap(guest, guest_size);
	close(fd);
	return ret;
}
