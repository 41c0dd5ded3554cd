/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Doorbell and UAR pages. A context's cmd_fd is a memfd of ERDMA_PAGES
 * pages; mlx5dv_alloc_var and mlx5dv_devx_alloc_uar hand out one page each,
 * at distinct mmap offsets, which the program maps from cmd_fd as it maps
 * the real device's pages. The emulator must see what is written there: a
 * watcher thread per context swaps every word of the pages in use with a
 * sentinel and forwards each word it finds written, polling every few
 * microseconds while writes come and backing off to milliseconds when idle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "erdma.h"

#define SENTINEL32 0xffffffffu
#define SENTINEL64 0xffffffffffffffffull
#define POLL_MIN_NS 20000L        /* 20 us while writes come */
#define POLL_MAX_NS 2000000L      /* 2 ms when idle */

struct erdma_watch {
	pthread_t thread;
	int stop;                       /* atomic */
};

static uint8_t *
page_addr(struct erdma_ctx *c, unsigned int slot)
{
	return (uint8_t *)c->window + (size_t)slot * erdma_page_size();
}

static bool scan_uars(struct erdma_ctx *c);

/*
 * A VAR page: 32-bit doorbell writes, named by their offset in the BAR.
 * VAR k (page_id) is the doorbell at doorbell_bar_offset + k * stride; its
 * page is the BAR page holding it (Linux main.c alloc_var_entry).
 */
static bool
scan_var(struct erdma_ctx *c, unsigned int slot)
{
	uint32_t *w = (uint32_t *)page_addr(c, slot);
	size_t i, n = (size_t)erdma_page_size() / sizeof(*w);
	uint32_t base = (c->db_page_base + c->db_in_page + c->pages[slot].page_id * c->db_stride) &
			~(uint32_t)(erdma_page_size() - 1);
	bool hit = false;
	int rc;

	for (i = 0; i < n; i++) {
		uint32_t v;

		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) == SENTINEL32)
			continue;
		v = __atomic_exchange_n(&w[i], SENTINEL32, __ATOMIC_ACQ_REL);
		if (v == SENTINEL32)
			continue;
		/*
		 * The UAR writes made before this doorbell reach the device
		 * first, as posted writes of one function do (PCIe keeps their
		 * order): scanned after it, a CQ arm written before the kick
		 * could come after the completion the kick produces, and an
		 * arm the driver repeated (the same request, no event between)
		 * would be served twice, two events for one request.
		 */
		if (!hit)
			scan_uars(c);
		hit = true;
		/*
		 * The emulator checks the offset against the doorbell area. Two
		 * kicks between scans leave the last value only: any write is a
		 * kick of the queue it names, and the emulator also looks at
		 * every ready queue when told the value may hide others.
		 */
		rc = emu_doorbell_merged(c->emu, base + (uint32_t)(i * sizeof(*w)), v);
		erdma_trace_op(c, "var_write", "DOORBELL", erdma_now_us(), "value", v,
			       base + i * sizeof(*w), sizeof(*w), rc < 0 ? -1 : 0);
	}
	return hit;
}

/* A UAR page: 64-bit writes (0x20: CQ arm doorbell), forwarded to the emulator. */
static bool
scan_uar(struct erdma_ctx *c, unsigned int slot, uint32_t page_id)
{
	uint64_t *w = (uint64_t *)page_addr(c, slot);
	size_t i, n = (size_t)erdma_page_size() / sizeof(*w);
	bool hit = false;

	for (i = 0; i < n; i++) {
		uint64_t v;

		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) == SENTINEL64)
			continue;
		v = __atomic_exchange_n(&w[i], SENTINEL64, __ATOMIC_ACQ_REL);
		if (v == SENTINEL64)
			continue;
		hit = true;
		erdma_uar_forward(c, page_id, (uint32_t)(i * sizeof(*w)), v);
	}
	return hit;
}

/* Every UAR page of the context. c->lock held. */
static bool
scan_uars(struct erdma_ctx *c)
{
	bool hit = false;
	unsigned int i;

	for (i = 0; i < ERDMA_PAGES; i++)
		if (c->pages[i].kind == ERDMA_PAGE_UAR)
			hit |= scan_uar(c, i, c->pages[i].page_id);
	return hit;
}

static void *
watcher(void *arg)
{
	struct erdma_ctx *c = arg;
	long ns = POLL_MAX_NS;

	while (!__atomic_load_n(&c->watch->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts;
		bool hit = false;
		unsigned int i;

		pthread_mutex_lock(&c->lock);
		for (i = 0; i < ERDMA_PAGES; i++) {
			if (c->pages[i].kind == ERDMA_PAGE_VAR)
				hit |= scan_var(c, i);
			else if (c->pages[i].kind == ERDMA_PAGE_UAR)
				hit |= scan_uar(c, i, c->pages[i].page_id);
		}
		pthread_mutex_unlock(&c->lock);
		ns = hit ? POLL_MIN_NS : (ns * 2 > POLL_MAX_NS ? POLL_MAX_NS : ns * 2);
		ts.tv_sec = 0;
		ts.tv_nsec = ns;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int
erdma_db_init(struct erdma_ctx *c)
{
	size_t len = (size_t)ERDMA_PAGES * erdma_page_size();
	int fd, rc;

	fd = memfd_create("emu-rdma-cmd_fd", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0)
		goto err_fd;
	c->window = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c->window == MAP_FAILED)
		goto err_fd;
	c->watch = calloc(1, sizeof(*c->watch));
	if (c->watch == NULL)
		goto err_map;
	rc = pthread_create(&c->watch->thread, NULL, watcher, c);
	if (rc != 0) {
		errno = rc;
		goto err_watch;
	}
	c->vctx.context.cmd_fd = fd;
	return 0;
err_watch:
	free(c->watch);
	c->watch = NULL;
err_map:
	munmap(c->window, len);
err_fd:
	rc = -errno;
	close(fd);
	return rc;
}

void
erdma_db_fini(struct erdma_ctx *c)
{
	unsigned int i;

	__atomic_store_n(&c->watch->stop, 1, __ATOMIC_RELEASE);
	pthread_join(c->watch->thread, NULL);
	/* Writes after the last scan are still doorbells. */
	for (i = 0; i < ERDMA_PAGES; i++)
		if (c->pages[i].kind == ERDMA_PAGE_VAR)
			scan_var(c, i);
	free(c->watch);
	munmap(c->window, (size_t)ERDMA_PAGES * erdma_page_size());
	close(c->vctx.context.cmd_fd);
}

int
erdma_page_get(struct erdma_ctx *c, int kind, uint32_t page_id, unsigned int *slot)
{
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < ERDMA_PAGES; i++) {
		if (c->pages[i].kind != ERDMA_PAGE_FREE)
			continue;
		memset(page_addr(c, i), 0xff, (size_t)erdma_page_size());
		c->pages[i].kind = kind;
		c->pages[i].page_id = page_id;
		*slot = i;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	pthread_mutex_unlock(&c->lock);
	return -ENOMEM;
}

/*
 * Forward every doorbell (VAR) and UAR write made so far, now, in the
 * caller's thread: what the watcher would find at its next scan.
 */
void
erdma_db_flush(struct erdma_ctx *c)
{
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < ERDMA_PAGES; i++) {
		if (c->pages[i].kind == ERDMA_PAGE_VAR)
			scan_var(c, i);
		else if (c->pages[i].kind == ERDMA_PAGE_UAR)
			scan_uar(c, i, c->pages[i].page_id);
	}
	pthread_mutex_unlock(&c->lock);
}

void
erdma_uar_flush(struct erdma_ctx *c)
{
	pthread_mutex_lock(&c->lock);
	scan_uars(c);
	pthread_mutex_unlock(&c->lock);
}

void
erdma_page_put(struct erdma_ctx *c, unsigned int slot)
{
	pthread_mutex_lock(&c->lock);
	/* What was written before the free still reaches the device. */
	if (c->pages[slot].kind == ERDMA_PAGE_VAR)
		scan_var(c, slot);
	else if (c->pages[slot].kind == ERDMA_PAGE_UAR)
		scan_uar(c, slot, c->pages[slot].page_id);
	c->pages[slot].kind = ERDMA_PAGE_FREE;
	pthread_mutex_unlock(&c->lock);
}
