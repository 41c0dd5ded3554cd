/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory and dirty-log area of the built-in front end.
 *
 * Like QEMU's memory-backend-memfd,share=on: one memfd holds all guest RAM,
 * mapped MAP_SHARED so a back end mapping the same fd sees the same bytes.
 * The file is sparse: only pages the rings and buffers touch are allocated,
 * so hundreds of GiB of "guest memory" cost nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vu_guest.h"

static int
vu_memfd(const char *name, uint64_t size, uint8_t **map)
{
	void *p;
	int fd, err;

	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	/* NORESERVE: the mapping may be far larger than RAM + swap. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	*map = p;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

static bool
vu_region_usable(const struct vu_mem *m, const struct vu_mem_region *r)
{
	return r->size != 0 && r->offset <= m->size && r->size <= m->size - r->offset &&
	       r->gpa + r->size > r->gpa;
}

int
vu_mem_create(struct vu_mem **out, uint64_t memfd_size,
	      const struct vu_mem_region *regions, unsigned int nregions)
{
	struct vu_mem *m;
	unsigned int i;
	int fd;

	*out = NULL;
	if (memfd_size == 0 || memfd_size % VU_PAGE_SIZE != 0 ||
	    nregions > VU_MEM_MAX_REGIONS || (nregions != 0 && regions == NULL))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	fd = vu_memfd("vu-guest-ram", memfd_size, &m->base);
	if (fd < 0) {
		free(m);
		return fd;
	}
	m->fd = fd;
	m->size = memfd_size;
	m->nregions = nregions;
	if (nregions != 0)
		memcpy(m->regions, regions, nregions * sizeof(*regions));
	pthread_mutex_init(&m->lock, NULL);
	/*
	 * Regions whose memfd bytes or GPAs overlap an earlier allocatable
	 * one are not allocated from (hostile layouts): two allocations must
	 * never share bytes. Page 0 is skipped so that GPA 0 never names a
	 * ring: a back end that forgets a translation then faults visibly.
	 */
	for (i = 0; i < nregions; i++) {
		const struct vu_mem_region *r = &m->regions[i];
		unsigned int j;
		bool clash = false;

		if (!vu_region_usable(m, r) || r->size < 2 * VU_PAGE_SIZE ||
		    r->gpa % VU_PAGE_SIZE != 0 || r->size % VU_PAGE_SIZE != 0)
			continue;
		for (j = 0; j < m->alloc_nregions; j++) {
			const struct vu_mem_region *o = &m->regions[m->alloc_region[j]];

			if ((r->offset < o->offset + o->size && o->offset < r->offset + r->size) ||
			    (r->gpa < o->gpa + o->size && o->gpa < r->gpa + r->size))
				clash = true;
		}
		if (clash)
			continue;
		m->alloc_lo[m->alloc_nregions] = r->gpa + (r->gpa == 0 ? VU_PAGE_SIZE : 0);
		m->alloc_hi[m->alloc_nregions] = r->gpa + r->size;
		m->alloc_region[m->alloc_nregions++] = i;
	}
	*out = m;
	return 0;
}

int
vu_mem_create_qemu(struct vu_mem **out, uint64_t gib)
{
	struct vu_mem_region r[2];
	unsigned int n = 1;

	if (gib == 0 || gib > (1ULL << 20))
		return -EINVAL;
	/* QEMU (pc/q35): RAM below the 3 GiB PCI hole, the rest above 4 GiB. */
	r[0].gpa = 0;
	r[0].offset = 0;
	r[0].size = (gib <= 3 ? gib : 3) * VU_GIB;
	if (gib > 3) {
		r[1].gpa = 4 * VU_GIB;
		r[1].offset = 3 * VU_GIB;
		r[1].size = (gib - 3) * VU_GIB;
		n = 2;
	}
	return vu_mem_create(out, gib * VU_GIB, r, n);
}

void
vu_mem_destroy(struct vu_mem *m)
{
	if (m == NULL)
		return;
	munmap(m->base, m->size);
	close(m->fd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void *
vu_mem_gpa_to_hva(const struct vu_mem *m, uint64_t gpa, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < m->nregions; i++) {
		const struct vu_mem_region *r = &m->regions[i];

		if (!vu_region_usable(m, r) || gpa < r->gpa)
			continue;
		if (gpa - r->gpa >= r->size || len > r->size - (gpa - r->gpa))
			continue;
		return m->base + r->offset + (gpa - r->gpa);
	}
	return NULL;
}

int
vu_mem_hva_to_gpa(const struct vu_mem *m, const void *hva, uint64_t *gpa)
{
	uintptr_t p = (uintptr_t)hva, b = (uintptr_t)m->base;
	unsigned int i;

	if (p < b || p - b >= m->size)
		return -EFAULT;
	for (i = 0; i < m->nregions; i++) {
		const struct vu_mem_region *r = &m->regions[i];

		if (!vu_region_usable(m, r))
			continue;
		if (p - b >= r->offset && p - b - r->offset < r->size) {
			*gpa = r->gpa + (p - b - r->offset);
			return 0;
		}
	}
	return -EFAULT;
}

uint64_t
vu_mem_region_uaddr(const struct vu_mem *m, unsigned int i)
{
	/* Regions outside the memfd still get a (meaningless) address. */
	return (uint64_t)(uintptr_t)m->base + m->regions[i].offset;
}

uint64_t
vu_mem_gpa_end(const struct vu_mem *m)
{
	uint64_t end = 0;
	unsigned int i;

	for (i = 0; i < m->nregions; i++) {
		const struct vu_mem_region *r = &m->regions[i];

		if (vu_region_usable(m, r) && r->gpa + r->size > end)
			end = r->gpa + r->size;
	}
	return end;
}

unsigned int
vu_mem_alloc_places(const struct vu_mem *m)
{
	return 2 * m->alloc_nregions;
}

/* Place p: even, the start of region p / 2; odd, the end of region p / 2 + 1. */
static int
vu_alloc_place_locked(struct vu_mem *m, unsigned int p, uint64_t size, uint64_t align,
		      uint64_t *gpa)
{
	unsigned int k = (p / 2 + (p % 2)) % m->alloc_nregions;
	uint64_t lo = m->alloc_lo[k], hi = m->alloc_hi[k], start;

	size = (size + VU_PAGE_SIZE - 1) & ~(VU_PAGE_SIZE - 1);
	if (size == 0 || size > hi - lo)
		return -ENOMEM;
	if (p % 2 == 0) {
		start = (lo + align - 1) & ~(align - 1);
		if (start < lo || start > hi || size > hi - start)
			return -ENOMEM;
		m->alloc_lo[k] = start + size;
	} else {
		start = (hi - size) & ~(align - 1);
		if (start < lo)
			return -ENOMEM;
		m->alloc_hi[k] = start;
	}
	*gpa = start;
	return 0;
}

static int
vu_alloc_check(uint64_t size, uint64_t *align)
{
	if (size == 0 || *align == 0 || (*align & (*align - 1)) != 0 ||
	    size > UINT64_MAX - VU_PAGE_SIZE)
		return -EINVAL;
	if (*align < VU_PAGE_SIZE)
		*align = VU_PAGE_SIZE;
	return 0;
}

/*
 * From place on (turn: from the place whose turn it is, which then passes
 * to the next one); a full place passes to the next one: the memory is
 * used up, not one end.
 */
static int
vu_alloc_from(struct vu_mem *m, bool turn, unsigned int place, uint64_t size, uint64_t align,
	      uint64_t *gpa)
{
	unsigned int n = vu_mem_alloc_places(m), t, p = 0, first;
	int ret = vu_alloc_check(size, &align);

	if (ret < 0)
		return ret;
	if (n == 0)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	first = turn ? m->alloc_turn : place % n;
	for (t = 0, ret = -ENOMEM; t < n && ret < 0; t++) {
		p = (first + t) % n;
		ret = vu_alloc_place_locked(m, p, size, align, gpa);
	}
	if (ret == 0 && turn)
		m->alloc_turn = (p + 1) % n;
	pthread_mutex_unlock(&m->lock);
	return ret;
}

int
vu_mem_alloc_at(struct vu_mem *m, unsigned int place, uint64_t size, uint64_t align,
		uint64_t *gpa)
{
	return vu_alloc_from(m, false, place, size, align, gpa);
}

unsigned int
vu_mem_next_place(struct vu_mem *m)
{
	unsigned int n = vu_mem_alloc_places(m), p;

	pthread_mutex_lock(&m->lock);
	p = m->alloc_turn;
	m->alloc_turn = n != 0 ? (p + 1) % n : 0;
	pthread_mutex_unlock(&m->lock);
	return p;
}

int
vu_mem_alloc(struct vu_mem *m, uint64_t size, uint64_t align, uint64_t *gpa)
{
	return vu_alloc_from(m, true, 0, size, align, gpa);
}

int
vu_log_create(struct vu_log **out, uint64_t gpa_end)
{
	uint64_t pages = (gpa_end + VU_PAGE_SIZE - 1) >> VU_PAGE_SHIFT;
	uint64_t bytes = (pages + 7) / 8;
	struct vu_log *log;
	int fd;

	*out = NULL;
	/* Page multiple: back ends OR whole 64-bit words into the bitmap. */
	bytes = (bytes + VU_PAGE_SIZE - 1) & ~(VU_PAGE_SIZE - 1);
	if (bytes == 0)
		bytes = VU_PAGE_SIZE;
	log = calloc(1, sizeof(*log));
	if (log == NULL)
		return -ENOMEM;
	fd = vu_memfd("vu-dirty-log", bytes, &log->bitmap);
	if (fd < 0) {
		free(log);
		return fd;
	}
	log->fd = fd;
	log->size = bytes;
	*out = log;
	return 0;
}

void
vu_log_destroy(struct vu_log *log)
{
	if (log == NULL)
		return;
	munmap(log->bitmap, log->size);
	close(log->fd);
	free(log);
}

void
vu_log_reset(struct vu_log *log)
{
	uint64_t *w = (uint64_t *)log->bitmap;
	uint64_t i;

	/* Atomic per word: a back end may be setting bits concurrently. */
	for (i = 0; i < log->size / 8; i++)
		if (__atomic_load_n(&w[i], __ATOMIC_RELAXED) != 0)
			__atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
}

bool
vu_log_test(const struct vu_log *log, uint64_t gpa)
{
	uint64_t page = gpa >> VU_PAGE_SHIFT;

	if (page / 8 >= log->size)
		return false;
	/* vhost-user spec: page n is bit (n % 8) of byte n / 8. */
	return (__atomic_load_n(&log->bitmap[page / 8], __ATOMIC_RELAXED) >> (page % 8)) & 1;
}

uint64_t
vu_log_count(const struct vu_log *log)
{
	const uint64_t *w = (const uint64_t *)log->bitmap;
	uint64_t i, n = 0;

	for (i = 0; i < log->size / 8; i++)
		n += (uint64_t)__builtin_popcountll(__atomic_load_n(&w[i], __ATOMIC_RELAXED));
	return n;
}

/* ---- snapshot of the guest memory's data pages ---- */

struct vu_snap_extent {
	uint64_t off, len;	/* memfd bytes, whole pages */
	uint64_t at;		/* where in data */
};

struct vu_snap {
	struct vu_snap_extent *ext;
	unsigned int n;
	uint8_t *data;
	uint64_t bytes;
};

/*
 * The memfd's data extents, page-rounded: what was ever written. Holes read
 * as zero and cost nothing to skip: hundreds of GiB of guest memory have a
 * few MiB of data. fn(arg, off, len) for each; 0 or -errno.
 */
static int
vu_mem_extents(const struct vu_mem *m, int (*fn)(void *arg, uint64_t off, uint64_t len),
	       void *arg)
{
	off_t off = 0, end;
	int ret;

	while ((uint64_t)off < m->size) {
		off = lseek(m->fd, off, SEEK_DATA);
		if (off < 0)
			return errno == ENXIO ? 0 : -errno;
		end = lseek(m->fd, off, SEEK_HOLE);
		if (end < 0)
			return -errno;
		off &= ~(off_t)(VU_PAGE_SIZE - 1);
		if ((uint64_t)end > m->size)
			end = (off_t)m->size;
		end = (off_t)(((uint64_t)end + VU_PAGE_SIZE - 1) & ~(VU_PAGE_SIZE - 1));
		if (end <= off)
			return -EIO;
		ret = fn(arg, (uint64_t)off, (uint64_t)(end - off));
		if (ret < 0)
			return ret;
		off = end;
	}
	return 0;
}

static int
vu_snap_count(void *arg, uint64_t off, uint64_t len)
{
	struct vu_snap *s = arg;

	(void)off;
	s->n++;
	s->bytes += len;
	return 0;
}

static int
vu_snap_copy(void *arg, uint64_t off, uint64_t len)
{
	struct vu_snap *s = arg;
	struct vu_snap_extent *e;

	/* The memory grew since the count (a writer we do not know): retry. */
	if (s->ext[s->n].len == UINT64_MAX || s->bytes + len < s->bytes)
		return -EAGAIN;
	e = &s->ext[s->n];
	e->off = off;
	e->len = len;
	e->at = s->bytes;
	s->n++;
	s->bytes += len;
	return 0;
}

int
vu_mem_snapshot(const struct vu_mem *m, struct vu_snap **out)
{
	struct vu_snap c = { 0 }, *s;
	int ret;
	unsigned int i;

	*out = NULL;
	ret = vu_mem_extents(m, vu_snap_count, &c);
	if (ret < 0)
		return ret;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	/* Room for one more extent: a sentinel that says "grew since the count". */
	s->ext = calloc(c.n + 1, sizeof(*s->ext));
	s->data = malloc(c.bytes != 0 ? c.bytes : 1);
	if (s->ext == NULL || s->data == NULL) {
		vu_snap_free(s);
		return -ENOMEM;
	}
	s->ext[c.n].len = UINT64_MAX;
	ret = vu_mem_extents(m, vu_snap_copy, s);
	if (ret == 0 && s->bytes > c.bytes)
		ret = -EAGAIN;
	if (ret < 0) {
		vu_snap_free(s);
		return ret;
	}
	for (i = 0; i < s->n; i++)
		memcpy(s->data + s->ext[i].at, m->base + s->ext[i].off, s->ext[i].len);
	*out = s;
	return 0;
}

void
vu_snap_free(struct vu_snap *s)
{
	if (s == NULL)
		return;
	free(s->ext);
	free(s->data);
	free(s);
}

uint64_t
vu_snap_bytes(const struct vu_snap *s)
{
	return s->bytes;
}

struct vu_diff {
	const struct vu_mem *m;
	const struct vu_snap *s;
	unsigned int cur;	/* snapshot extent cursor: offsets only grow */
	struct vu_snap_diff *d;
};

/* The page at memfd offset off in the snapshot, NULL if it was a hole. */
static const uint8_t *
vu_snap_page(struct vu_diff *x, uint64_t off)
{
	const struct vu_snap *s = x->s;

	while (x->cur < s->n && s->ext[x->cur].off + s->ext[x->cur].len <= off)
		x->cur++;
	if (x->cur < s->n && s->ext[x->cur].off <= off)
		return s->data + s->ext[x->cur].at + (off - s->ext[x->cur].off);
	return NULL;
}

static int
vu_diff_extent(void *arg, uint64_t off, uint64_t len)
{
	static const uint8_t zero[VU_PAGE_SIZE];
	struct vu_diff *x = arg;
	struct vu_snap_diff *d = x->d;
	uint64_t o, gpa;

	for (o = off; o < off + len; o += VU_PAGE_SIZE) {
		const uint8_t *old = vu_snap_page(x, o);

		/* A page no region maps is no guest page (hostile layouts). */
		if (vu_mem_hva_to_gpa(x->m, x->m->base + o, &gpa) < 0)
			continue;
		d->pages++;
		if (d->excused(d->arg, gpa)) {
			d->excused_pages++;
			continue;
		}
		d->compared++;
		if (memcmp(x->m->base + o, old != NULL ? old : zero, VU_PAGE_SIZE) == 0)
			continue;
		if (d->changed++ == 0)
			d->first_changed = gpa;
	}
	return 0;
}

int
vu_mem_snapshot_diff(const struct vu_mem *m, const struct vu_snap *s, struct vu_snap_diff *d)
{
	struct vu_diff x = { .m = m, .s = s, .d = d };

	d->pages = d->excused_pages = d->compared = d->changed = 0;
	d->first_changed = UINT64_MAX;
	return vu_mem_extents(m, vu_diff_extent, &x);
}
