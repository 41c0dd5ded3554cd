/* SPDX-License-Identifier: BSD-3-Clause */
/* Guest memory registration: chunked, parallel direct mkeys under one KLM mkey. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "mlx5_lm_pool.h"
#include "mlx5_lm_prereg.h"

/* mkc.qpn for mkeys not bound to a QP. */
#define MKC_QPN_NONE 0xffffff

double
mlx5_lm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void
mlx5_lm_deadline_ts(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static uint32_t
log2_floor(uint64_t v)
{
	uint32_t l = 0;

	while (l < 63 && (1ull << (l + 1)) <= v)
		l++;
	return l;
}

static int
cmp_region(const void *a, const void *b)
{
	const struct mlx5_lm_mem_region *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

/* ---- files ---------------------------------------------------------------- */

/*
 * Whether a registration's files still hold the pages it pinned.
 * (st_dev, st_ino) do not tell: a file emptied and grown again
 * (ftruncate) keeps them with new pages, and a disk filesystem gives a
 * freed inode's number to a new file (another front end's). Nor does
 * st_ctim: a write fault through a shared mapping of a memfd, tmpfs or
 * disk file sets it (the pinning itself, any guest page first written).
 * So each file is watched (inotify) from before the pages are pinned:
 * IN_MODIFY (ftruncate, fallocate, write(2)) or IN_DELETE_SELF /
 * IN_IGNORED (the file freed, its inode number free for another file) on
 * one of them, and the registration is never reused. Writes through a
 * mapping raise no event. Nor do fallocate and write(2) on a memfd (a
 * pseudo file, whose file events the kernel does not report): like a hole
 * punched under a running device, that orphans the front end's own pages
 * only. One instance for the process (at most 128 per
 * user by default); the registrations of one file share its watch,
 * counted here, each noting the file's event count when it began.
 *
 * The instance stays open while the driver has devices, and is closed
 * with the garbage thread (the last device's removal): closing an inotify
 * instance waits for the kernel's fsnotify mark reaper and an SRCU grace
 * period (fsnotify_destroy_group), measured at 1.4 s and 10 s on this
 * 2-CPU machine under load, and the last registration's release ran it
 * under the device's lock, which vhost's thread then waited for.
 */
struct file_watch {
	int wd;
	unsigned int refs;
	uint64_t events;
};

static struct {
	pthread_mutex_t lock;      /* guards everything below; taken after gc.lock */
	int fd;                    /* the inotify instance, -1 until the first watch */
	struct file_watch *w;
	uint32_t n, cap;
	uint64_t overflows;        /* events lost: every file may have changed */
} fw = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* Under fw.lock. */
static struct file_watch *
fw_find(int wd)
{
	for (uint32_t i = 0; i < fw.n; i++)
		if (fw.w[i].wd == wd)
			return &fw.w[i];
	return NULL;
}

/* Under fw.lock: count the events queued so far. */
static void
fw_drain(void)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	if (fw.fd < 0)
		return;
	while ((len = read(fw.fd, buf, sizeof(buf))) > 0) {
		for (char *at = buf; at < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)at;
			struct file_watch *w;

			if (ev->mask & IN_Q_OVERFLOW)
				fw.overflows++;
			else if ((w = fw_find(ev->wd)) != NULL)
				w->events++;
			at += sizeof(*ev) + ev->len;
		}
	}
}

/* Under fw.lock: one registration less on wd; the last one removes the watch. */
static void
fw_unref(int wd)
{
	struct file_watch *w = fw_find(wd);

	if (w == NULL || --w->refs > 0)
		return;
	/* EINVAL when the kernel removed it already (the file was freed): nothing to do. */
	(void)inotify_rm_watch(fw.fd, wd);
	*w = fw.w[--fw.n];
	if (fw.n == 0) {
		/* The instance stays (see above); the next watch drains what it queued. */
		free(fw.w);
		fw.w = NULL;
		fw.cap = 0;
	}
}

/* The last device's removal: the inotify instance goes, outside every lock. */
static void
fw_close(void)
{
	int fd = -1;

	pthread_mutex_lock(&fw.lock);
	/* A registration whose destroy failed keeps its watches: so does the instance. */
	if (fw.n == 0) {
		fd = fw.fd;
		fw.fd = -1;
	}
	pthread_mutex_unlock(&fw.lock);
	if (fd >= 0)
		close(fd);
}

/* Watch the file of region r for x. 0, or a negative errno (x->wd stays -1). */
static int
watch_file(const struct mlx5_lm_mem_region *r, struct mlx5_lm_mr_watch *x)
{
	struct file_watch *w;
	char path[32];
	struct stat st;
	int fd, wd, ret = 0;

	if (r->fd < 0)
		return -EBADF;
	/* Our own reference: vhost's fd number may name another file by now (a new table). */
	fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != r->file_dev ||
	    (uint64_t)st.st_ino != r->file_ino) {
		ret = -ESTALE;
		goto out_fd;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pthread_mutex_lock(&fw.lock);
	if (fw.n == fw.cap) {
		uint32_t cap = fw.cap ? 2 * fw.cap : 8;
		struct file_watch *grown = realloc(fw.w, cap * sizeof(*grown));

		if (grown == NULL) {
			ret = -ENOMEM;
			goto out_lock;
		}
		fw.w = grown;
		fw.cap = cap;
	}
	if (fw.fd < 0) {
		fw.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fw.fd < 0) {
			ret = -errno;
			goto out_lock;
		}
	}
	/* Events of the file until now are not x's: counted before its count is noted. */
	fw_drain();
	wd = inotify_add_watch(fw.fd, path, IN_MODIFY | IN_DELETE_SELF);
	if (wd < 0) {
		ret = -errno;
		goto out_lock;
	}
	w = fw_find(wd);
	if (w == NULL) {
		w = &fw.w[fw.n++];
		w->wd = wd;
		w->refs = 0;
		w->events = 0;
	}
	w->refs++;
	x->wd = wd;
	x->events = w->events;
out_lock:
	pthread_mutex_unlock(&fw.lock);
out_fd:
	close(fd);
	return ret;
}

/*
 * Watch every file of mr (regions sorted) before its pages are pinned. A
 * file that cannot be watched only makes mr never reused: not an error.
 */
static int
watch_files(struct mlx5_lm_mr *mr)
{
	int ret;

	mr->watch = calloc(mr->nregions, sizeof(*mr->watch));
	if (mr->watch == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&fw.lock);
	fw_drain();
	mr->watch_overflows = fw.overflows;
	pthread_mutex_unlock(&fw.lock);
	for (uint32_t i = 0; i < mr->nregions; i++) {
		struct mlx5_lm_mem_region *r = &mr->regions[i];

		mr->watch[i].wd = -1;
		if (r->file_ino == 0)
			continue;
		ret = watch_file(r, &mr->watch[i]);
		if (ret < 0)
			DRV_LOG(INFO, mr->dev, "region %u's file (inode %" PRIu64 ") cannot be "
				"watched (%s): this registration will not be reused", i,
				r->file_ino, strerror(-ret));
		/* A number for vhost's table only, meaningless once it changes. */
		r->fd = -1;
	}
	return 0;
}

static void
unwatch_files(struct mlx5_lm_mr *mr)
{
	if (mr->watch == NULL)
		return;
	pthread_mutex_lock(&fw.lock);
	for (uint32_t i = 0; i < mr->nregions; i++)
		if (mr->watch[i].wd >= 0)
			fw_unref(mr->watch[i].wd);
	pthread_mutex_unlock(&fw.lock);
	free(mr->watch);
	mr->watch = NULL;
}

/* 1 when every file of mr was watched from before its pinning and is unchanged since. */
static int
files_unchanged(const struct mlx5_lm_mr *mr)
{
	int same;

	if (mr->watch == NULL)
		return 0;
	pthread_mutex_lock(&fw.lock);
	fw_drain();
	same = mr->watch_overflows == fw.overflows;
	for (uint32_t i = 0; same && i < mr->nregions; i++) {
		const struct file_watch *w = fw_find(mr->watch[i].wd);

		same = mr->regions[i].file_ino != 0 && w != NULL &&
		       w->events == mr->watch[i].events;
	}
	pthread_mutex_unlock(&fw.lock);
	return same;
}

/* The mkey context both kinds share: local and remote read/write in the device's PD. */
static void
mkc_init(void *mkc, uint32_t access_mode, struct mlx5_lm_dev *dev, uint64_t start, uint64_t len)
{
	PRM_SET(mkc, mkc, access_mode_1_0, access_mode);
	PRM_SET(mkc, mkc, lw, 1);
	PRM_SET(mkc, mkc, lr, 1);
	PRM_SET(mkc, mkc, rw, 1);
	PRM_SET(mkc, mkc, rr, 1);
	PRM_SET(mkc, mkc, qpn, MKC_QPN_NONE);
	PRM_SET(mkc, mkc, pd, devx_pd_id(dev->res.pd));
	PRM_SET(mkc, mkc, start_addr, start);
	PRM_SET(mkc, mkc, len, len);
	/*
	 * A fresh variant byte for every mkey this device creates, as the
	 * kernel does for its own (mlx5_ib mr.c assign_mkey_variant): a
	 * recycled index then never makes an old key valid again.
	 */
	PRM_SET(mkc, mkc, mkey_7_0, __atomic_add_fetch(&dev->mkey_variant, 1, __ATOMIC_RELAXED));
}

void
mlx5_lm_file_fs(int fd, uint64_t *page_size, uint8_t *writeback)
{
	struct statfs fs;
	uint32_t type;

	*page_size = 4096;
	*writeback = 0;
	if (fd < 0 || fstatfs(fd, &fs) < 0)
		return;
	type = (uint32_t)fs.f_type;
	/* hugetlbfs reports its page size as the block size; memfd/tmpfs use 4 KiB. */
	if (type == HUGETLBFS_MAGIC)
		*page_size = (uint64_t)fs.f_bsize;
	*writeback = type != TMPFS_MAGIC && type != RAMFS_MAGIC && type != HUGETLBFS_MAGIC;
}

const char *
mlx5_lm_pin_hint(int err, int writeback)
{
	if (err == -ENOMEM)
		return " (pinning guest memory beyond RLIMIT_MEMLOCK needs CAP_IPC_LOCK or a "
		       "larger memlock limit: doc/hardware.md)";
	if (writeback)
		return " (its file is on a filesystem that writes dirty pages back, whose "
		       "memory Linux 6.5 and later do not pin for a device's writes: guest "
		       "memory on memfd, /dev/shm or hugetlbfs, doc/hardware.md)";
	return "";
}

/*
 * Task: the chunk's host range registered as a memory region at its guest
 * addresses (ibv_reg_mr_iova, as DPDK vdpa/mlx5 registers guest memory:
 * mlx5_vdpa_mem.c). The kernel pins it and builds the mkey for the iova;
 * a DevX umem is described in a page size picked for the host range alone
 * (devx.c devx_umem_reg_cmd_alloc: "mkeys are not supported on umem"),
 * which guest-physical addresses need not agree with.
 */
static int
chunk_create(void *arg)
{
	struct mlx5_lm_mr_chunk *c = arg;
	struct mlx5_lm_dev *dev = c->mr->dev;

	if (c->borrowed)
		return 0;
	c->mr_reg = devx_mr_reg(dev->res.pd, (void *)(uintptr_t)c->hva, c->size, c->gpa,
				MLX5_LM_DMA_ACCESS);
	if (c->mr_reg == NULL) {
		c->err = -errno;
		DRV_LOG(ERR, dev, "memory region %u chunk gpa 0x%" PRIx64 "+0x%" PRIx64
			": registration failed: %s%s", c->region, c->gpa, c->size,
			strerror(-c->err),
			mlx5_lm_pin_hint(c->err, c->mr->regions[c->region].fs_writeback));
		return c->err;
	}
	return 0;
}

/* Task: the reverse of chunk_create. */
static int
chunk_destroy(void *arg)
{
	struct mlx5_lm_mr_chunk *c = arg;
	int ret;

	/* A preparation's chunk goes with the preparation's last reference. */
	if (c->borrowed) {
		c->mr_reg = NULL;
		return 0;
	}
	if (c->mr_reg != NULL) {
		ret = devx_mr_dereg(c->mr_reg);
		if (ret < 0)
			return ret;
		c->mr_reg = NULL;
	}
	return 0;
}

/* Run fn on every chunk through the pool, at most `workers` at once. */
static int
for_each_chunk(struct mlx5_lm_mr *mr, mlx5_lm_task_fn fn, int background)
{
	struct mlx5_lm_batch b;
	uint32_t i;
	int ret = 0;

	if (background)
		mlx5_lm_batch_init_background(&b, mr->dev->args.workers);
	else if (fn == chunk_create && mr->dev->args.workers > 1)
		/*
		 * Pins of some overlap the firmware work of others
		 * (MLX5_LM_MR_PIPELINE); workers=1 stays serial, for comparison.
		 */
		mlx5_lm_batch_init(&b, mr->dev->args.workers * MLX5_LM_MR_PIPELINE);
	else
		mlx5_lm_batch_init(&b, mr->dev->args.workers);
	for (i = 0; i < mr->nchunks; i++) {
		/* A preparation's chunk has nothing to do here: no task, no wake-up. */
		if (mr->chunks[i].borrowed) {
			mr->chunks[i].mr_reg = fn == chunk_destroy ? NULL : mr->chunks[i].mr_reg;
			continue;
		}
		ret = mlx5_lm_batch_submit(&b, fn, &mr->chunks[i]);
		if (ret < 0)
			break;
	}
	if (mlx5_lm_batch_wait(&b) != 0 && ret == 0)
		ret = b.first_err;
	mlx5_lm_batch_fini(&b);
	return ret;
}

static uint64_t
div_up(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* A region's chunk: at most chunk bytes, whole pages of the region. */
static uint64_t
region_step(const struct mlx5_lm_mem_region *reg, uint64_t chunk)
{
	uint64_t step = chunk < reg->size ? chunk : reg->size;

	step -= step % reg->page_size;
	return step != 0 ? step : reg->page_size;
}

/*
 * The KLM entries (chunks) of one region: the slices of preparation prep's
 * chunks that cover it when prep serves it, else its own chunks.
 */
static uint64_t
region_entries(const struct mlx5_lm_mem_region *reg, uint64_t chunk,
	       const struct mlx5_lm_prereg *prep)
{
	if (prep != NULL)
		return mlx5_lm_prereg_slices(prep, reg, NULL);
	return div_up(reg->size, region_step(reg, chunk));
}

/* Most KLM entries one indirect mkey of this device takes. */
static uint64_t
klm_limit(const struct mlx5_lm_dev *dev)
{
	uint64_t lim = PRM_MAX_KLM_PER_CMD;
	uint8_t log = dev->caps.log_max_klm_list_size;

	/* HCA cap log_max_klm_list_size bounds an mkey's list (PRM); one command bounds it too. */
	if (log != 0 && log < 63 && (1ull << log) < lim)
		lim = 1ull << log;
	return lim;
}

/* The registration chunk of dev: mr_chunk_mb, at most what one KLM entry spans. */
static uint64_t
mr_chunk(const struct mlx5_lm_dev *dev)
{
	uint64_t chunk = (uint64_t)dev->args.mr_chunk_mb << 20;

	return chunk > PRM_MAX_KLM_BYTE_COUNT ? PRM_MAX_KLM_BYTE_COUNT : chunk;
}

/*
 * Split the sorted table into chunks of at most chunk bytes, aligned to
 * each region's pages; a region prep serves (ok[r]) into slices of its
 * prepared chunks instead.
 */
static int
plan_chunks(struct mlx5_lm_mr *mr, uint64_t chunk, const uint8_t *ok)
{
	uint32_t r, n = 0;

	for (r = 0; r < mr->nregions; r++)
		n += (uint32_t)region_entries(&mr->regions[r], chunk,
					      ok != NULL && ok[r] ? mr->prereg : NULL);
	mr->chunks = calloc(n, sizeof(*mr->chunks));
	if (mr->chunks == NULL)
		return -ENOMEM;
	for (r = 0; r < mr->nregions; r++) {
		const struct mlx5_lm_mem_region *reg = &mr->regions[r];
		uint64_t step, off;
		uint32_t k, got;

		if (ok != NULL && ok[r]) {
			got = mlx5_lm_prereg_slices(mr->prereg, reg, &mr->chunks[mr->nchunks]);
			for (k = 0; k < got; k++) {
				mr->chunks[mr->nchunks + k].mr = mr;
				mr->chunks[mr->nchunks + k].region = r;
				mr->chunks[mr->nchunks + k].log_page_size =
					log2_floor(reg->page_size);
			}
			mr->nchunks += got;
			continue;
		}
		step = region_step(reg, chunk);
		for (off = 0; off < reg->size; off += step) {
			struct mlx5_lm_mr_chunk *c = &mr->chunks[mr->nchunks++];

			c->mr = mr;
			c->region = r;
			c->gpa = reg->gpa + off;
			c->iova = c->gpa;
			c->hva = reg->hva + off;
			c->size = reg->size - off < step ? reg->size - off : step;
			c->log_page_size = log2_floor(reg->page_size);
		}
	}
	return 0;
}

/*
 * KLM entries covering [0, gpa_end): one per chunk (chunks are at most
 * 2 GiB, the KLM entry limit, see mlx5_lm_mr_create) and null-mkey
 * entries for holes, themselves split at 2 GiB. Returns the count; with
 * klm == NULL only counts.
 */
static uint32_t
fill_klm(const struct mlx5_lm_mr *mr, uint8_t *klm)
{
	uint64_t pos = 0;
	uint32_t i, n = 0;

	for (i = 0; i <= mr->nchunks; i++) {
		uint64_t next = i < mr->nchunks ? mr->chunks[i].gpa : mr->gpa_end;

		while (pos < next) {
			uint64_t len = next - pos;

			if (len > PRM_MAX_KLM_BYTE_COUNT)
				len = PRM_MAX_KLM_BYTE_COUNT;
			if (klm != NULL) {
				uint8_t *e = klm + n * PRM_SIZE(klm);

				PRM_SET(klm, e, byte_count, len);
				PRM_SET(klm, e, mkey, mr->dev->res.null_mkey);
				PRM_SET(klm, e, address, pos);
			}
			n++;
			pos += len;
		}
		if (i == mr->nchunks)
			break;
		if (klm != NULL) {
			uint8_t *e = klm + n * PRM_SIZE(klm);

			PRM_SET(klm, e, byte_count, mr->chunks[i].size);
			PRM_SET(klm, e, mkey, devx_mr_lkey(mr->chunks[i].mr_reg));
			PRM_SET(klm, e, address, mr->chunks[i].iova);
		}
		n++;
		pos = mr->chunks[i].gpa + mr->chunks[i].size;
	}
	return n;
}

static int
indirect_create(struct mlx5_lm_mr *mr)
{
	struct mlx5_lm_dev *dev = mr->dev;
	uint32_t n = fill_klm(mr, NULL);
	/* The translation size is in octwords, a multiple of 4 for KLM lists. */
	uint32_t octw = (n + 3) & ~3u;
	size_t inlen = PRM_SIZE(create_mkey_in) + (size_t)octw * PRM_SIZE(klm);
	uint8_t out[PRM_SIZE(create_mkey_out)];
	uint8_t *in;
	void *mkc;

	/* check_layout and mlx5_lm_prereg_take counted them: a bug if it fires. */
	if (n > klm_limit(dev)) {
		DRV_LOG(ERR, dev, "memory table needs %u KLM entries, the device's mkey takes at "
			"most %" PRIu64 ": use a larger mr_chunk_mb (now %u)", n, klm_limit(dev),
			dev->args.mr_chunk_mb);
		return -E2BIG;
	}
	in = calloc(1, inlen);
	if (in == NULL)
		return -ENOMEM;
	mkc = PRM_ADDR(create_mkey_in, in, mkc);
	PRM_SET(create_mkey_in, in, opcode, PRM_CMD_CREATE_MKEY);
	PRM_SET(create_mkey_in, in, translations_octword_actual_size, n);
	mkc_init(mkc, PRM_MKC_ACCESS_MODE_KLM, dev, 0, mr->gpa_end);
	PRM_SET(mkc, mkc, translations_octword_size, octw);
	fill_klm(mr, PRM_ADDR(create_mkey_in, in, klm_pas_mtt));
	memset(out, 0, sizeof(out));
	mr->indirect = devx_obj_create(dev->devx, in, inlen, out, sizeof(out));
	free(in);
	if (mr->indirect == NULL) {
		DRV_LOG(ERR, dev, "indirect mkey over %u entries failed (status 0x%x, syndrome 0x%08x)",
			n, (unsigned int)PRM_GET(create_mkey_out, out, status),
			(uint32_t)PRM_GET(create_mkey_out, out, syndrome));
		return -EIO;
	}
	mr->nklm = n;
	return 0;
}

/*
 * The front end's table, sorted, checked before anything is built: no
 * region wraps past 2^64 (guest or host side), and the KLM list covering
 * [0, end of the last region) fits the device (counted in 64 bits, by
 * division: a region near 2^63 would otherwise mean billions of hole
 * entries, a uint32_t count that wraps and a KLM builder that spins).
 * The covered range, limit x 2 GiB, is the device's guest address range.
 */
static int
check_layout(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *r, uint32_t n,
	     uint64_t chunk)
{
	uint64_t lim = klm_limit(dev), need = 0, pos = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (r[i].gpa + r[i].size < r[i].gpa || r[i].hva + r[i].size < r[i].hva) {
			DRV_LOG(ERR, dev, "memory region gpa 0x%" PRIx64 " size 0x%" PRIx64
				" wraps past 2^64: memory table refused", r[i].gpa, r[i].size);
			return -EINVAL;
		}
		/* Holes (null mkey entries of at most 2 GiB), then the region's chunks. */
		need += div_up(r[i].gpa - pos, PRM_MAX_KLM_BYTE_COUNT);
		need += region_entries(&r[i], chunk, NULL);
		pos = r[i].gpa + r[i].size;
		if (need > lim) {
			DRV_LOG(ERR, dev, "memory region gpa 0x%" PRIx64 " size 0x%" PRIx64
				" needs more than %" PRIu64 " KLM entries: beyond the device's "
				"guest address range (0x%" PRIx64 " with mr_chunk_mb=%u); memory "
				"table refused", r[i].gpa, r[i].size, lim,
				(uint64_t)(lim * PRM_MAX_KLM_BYTE_COUNT), dev->args.mr_chunk_mb);
			return -E2BIG;
		}
	}
	return 0;
}

int
mlx5_lm_mr_klm_check(const struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
		     uint32_t n, const struct mlx5_lm_prereg *prep, const uint8_t *ok,
		     uint64_t *need, uint64_t *limit)
{
	uint64_t chunk = mr_chunk(dev), pos = 0;
	uint32_t k, i;

	*need = 0;
	*limit = klm_limit(dev);
	/* By gpa, as the registration lays them out: the next one at or above pos each time. */
	for (k = 0; k < n; k++) {
		const struct mlx5_lm_mem_region *r = NULL;

		for (i = 0; i < n; i++)
			if (regions[i].gpa >= pos && (r == NULL || regions[i].gpa < r->gpa))
				r = &regions[i];
		/*
		 * None left above pos (an overlap), an empty or wrapping region:
		 * the registration's to refuse, with its message.
		 */
		if (r == NULL || r->size == 0 || r->page_size == 0 || r->gpa + r->size < r->gpa)
			return -EINVAL;
		*need += div_up(r->gpa - pos, PRM_MAX_KLM_BYTE_COUNT);
		*need += region_entries(r, chunk, ok != NULL && ok[r - regions] ? prep : NULL);
		pos = r->gpa + r->size;
	}
	return *need > *limit ? -E2BIG : 0;
}

int
mlx5_lm_mr_create(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
		  uint32_t nregions, struct mlx5_lm_mr **out)
{
	return mlx5_lm_mr_create_prepared(dev, regions, nregions, NULL, NULL, out);
}

int
mlx5_lm_mr_create_prepared(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
			   uint32_t nregions, struct mlx5_lm_prereg *prep, const uint8_t *ok,
			   struct mlx5_lm_mr **out)
{
	uint64_t chunk = mr_chunk(dev);
	double t0 = mlx5_lm_now_ms();
	struct mlx5_lm_mr *mr;
	uint32_t i, borrowed = 0;
	int ret;

	if (nregions == 0) {
		DRV_LOG(ERR, dev, "empty memory table");
		mlx5_lm_prereg_put(prep);
		return -EINVAL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		mlx5_lm_prereg_put(prep);
		return -ENOMEM;
	}
	mr->dev = dev;
	mr->prereg = prep;
	mr->regions = calloc(nregions, sizeof(*regions));
	if (mr->regions == NULL) {
		ret = -ENOMEM;
		goto err_regions;
	}
	memcpy(mr->regions, regions, nregions * sizeof(*regions));
	mr->nregions = nregions;
	/* With ok[] the table comes sorted: distinct gpas, so this keeps ok[]'s order. */
	qsort(mr->regions, nregions, sizeof(*regions), cmp_region);
	for (i = 0; i < nregions; i++) {
		const struct mlx5_lm_mem_region *r = &mr->regions[i];

		if (r->size == 0 || r->page_size == 0 || (r->page_size & (r->page_size - 1)) ||
		    r->gpa % r->page_size || r->size % r->page_size || r->hva % r->page_size ||
		    (i > 0 && mr->regions[i - 1].gpa + mr->regions[i - 1].size > r->gpa)) {
			DRV_LOG(ERR, dev, "memory region gpa 0x%" PRIx64 " size 0x%" PRIx64
				" page 0x%" PRIx64 " is empty, unaligned or overlaps another",
				r->gpa, r->size, r->page_size);
			ret = -EINVAL;
			goto err_plan;
		}
	}
	ret = check_layout(dev, mr->regions, nregions, chunk);
	if (ret < 0)
		goto err_plan;
	mr->gpa_end = mr->regions[nregions - 1].gpa + mr->regions[nregions - 1].size;
	ret = plan_chunks(mr, chunk, prep != NULL ? ok : NULL);
	if (ret < 0)
		goto err_plan;
	/* Before the pages are pinned: a change of a file from then on is seen. */
	ret = watch_files(mr);
	if (ret < 0)
		goto err_watch;
	ret = for_each_chunk(mr, chunk_create, 0);
	if (ret < 0)
		goto err_chunks;
	ret = indirect_create(mr);
	if (ret < 0)
		goto err_chunks;
	mr->create_ms = mlx5_lm_now_ms() - t0;
	for (i = 0; i < mr->nchunks; i++)
		borrowed += mr->chunks[i].borrowed;
	DRV_LOG(INFO, dev, "registered %u regions in %u chunks (%u of them prepared), %u KLM "
		"entries, in %.1f ms", nregions, mr->nchunks, borrowed, mr->nklm, mr->create_ms);
	*out = mr;
	return 0;
err_chunks:
	/* Chunks that failed cleaned up after themselves; undo the others. */
	for_each_chunk(mr, chunk_destroy, 0);
	unwatch_files(mr);
err_watch:
	free(mr->chunks);
err_plan:
	free(mr->regions);
err_regions:
	mlx5_lm_prereg_put(prep);
	free(mr);
	return ret;
}

static int
mr_destroy(struct mlx5_lm_mr *mr, int background)
{
	int ret = 0;

	if (mr == NULL)
		return 0;
	if (mr->indirect != NULL) {
		/* The direct mkeys are referenced by the indirect one: it goes first. */
		ret = devx_obj_destroy(mr->indirect);
		if (ret < 0)
			return ret;
		mr->indirect = NULL;
	}
	ret = for_each_chunk(mr, chunk_destroy, background);
	if (ret < 0)
		return ret;
	/* The device lets go of the pages before the mapping goes. */
	if (mr->own_map != NULL)
		munmap(mr->own_map, mr->own_map_len);
	unwatch_files(mr);
	mlx5_lm_prereg_put(mr->prereg);
	free(mr->chunks);
	free(mr->regions);
	free(mr);
	return 0;
}

int
mlx5_lm_mr_destroy(struct mlx5_lm_mr *mr)
{
	return mr_destroy(mr, 0);
}

uint32_t
mlx5_lm_mr_mkey(const struct mlx5_lm_mr *mr)
{
	return devx_obj_mkey(mr->indirect);
}

int
mlx5_lm_mr_same_table(const struct mlx5_lm_mr *mr, const struct mlx5_lm_mem_region *regions,
		      uint32_t nregions)
{
	struct mlx5_lm_mem_region *sorted;
	int same = 1;

	if (mr == NULL || nregions != mr->nregions)
		return 0;
	for (uint32_t i = 0; i < nregions; i++)
		if (regions[i].file_ino == 0)
			return 0;
	sorted = malloc(nregions * sizeof(*regions));
	if (sorted == NULL)
		return 0;
	memcpy(sorted, regions, nregions * sizeof(*regions));
	qsort(sorted, nregions, sizeof(*regions), cmp_region);
	/* Field by field: fd is no part of the identity. */
	for (uint32_t i = 0; same && i < nregions; i++) {
		const struct mlx5_lm_mem_region *a = &sorted[i], *b = &mr->regions[i];

		same = a->gpa == b->gpa && a->size == b->size && a->hva == b->hva &&
		       a->page_size == b->page_size && a->file_dev == b->file_dev &&
		       a->file_ino == b->file_ino && a->file_off == b->file_off;
	}
	free(sorted);
	/* The same file may hold other pages now. */
	return same && files_unchanged(mr);
}

/* ---- deferred deletion ---------------------------------------------------- */

/* A released registration its queues still use is retried this much later. */
#define GC_RETRY_MS 100
/*
 * At removal a failed destroy (a transient firmware error) is retried as
 * the garbage thread would, this many times in all: nothing retries it
 * once its device is gone, and the removal must end.
 */
#define GC_FLUSH_TRIES 10

static struct {
	pthread_mutex_t lock;          /* guards everything below */
	pthread_cond_t cv;             /* list changed, or stop */
	TAILQ_HEAD(, mlx5_lm_mr) list; /* ordered by deadline */
	TAILQ_HEAD(, mlx5_lm_gc_work) work; /* at once, before the list */
	pthread_t thread;
	unsigned int refs;
	int stop;
	/* The last put is joining the stopped thread: a get waits (one thread at a time). */
	int joining;
	pthread_cond_t joined;         /* joining dropped to 0 */
	unsigned int busy;             /* registrations being destroyed by the thread */
	pthread_cond_t idle;           /* busy dropped to 0 */
} gc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.joined = PTHREAD_COND_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.list = TAILQ_HEAD_INITIALIZER(gc.list),
	.work = TAILQ_HEAD_INITIALIZER(gc.work),
};

/*
 * The index of a queue object of dev that still names mr's key (as its
 * virtio_q_mkey or dirty_bitmap_mkey), or -1. The firmware destroys an
 * mkey whoever names it (the next access of such a queue faults), so the
 * driver keeps a registration until no queue object of its device names
 * it. A released registration only loses users (nothing is pointed at a
 * key on the garbage list), so a "no" stays true once read.
 */
static int
mr_user(const struct mlx5_lm_mr *mr)
{
	const struct mlx5_lm_dev *dev = mr->dev;
	uint32_t key;
	uint16_t i;

	if (mr->indirect == NULL)
		return -1;
	key = devx_obj_mkey(mr->indirect);
	for (i = 0; i < dev->nr_vq; i++)
		if (mlx5_lm_virtq_names_mkey(&dev->vq[i], key))
			return i;
	return -1;
}

static int
destroy_timed(struct mlx5_lm_mr *mr, int background, int force)
{
	struct mlx5_lm_dev *dev = mr->dev;
	double t0 = mlx5_lm_now_ms();
	uint32_t chunks = mr->nchunks;
	int user = mr_user(mr);
	double ms;

	if (user >= 0 && !force) {
		if (!mr->gc_user_logged)
			DRV_LOG(INFO, dev, "released registration of %u chunks still named by queue "
				"%d: destroyed once no queue object names it", chunks, user);
		mr->gc_user_logged = 1;
		return -EBUSY;
	}
	if (user >= 0)
		DRV_LOG(WARNING, dev, "registration of %u chunks destroyed while queue %d's "
			"object (whose destroy failed) still names it: that queue must not run",
			chunks, user);
	if (mr_destroy(mr, background) < 0) {
		DRV_LOG(ERR, dev, "cannot destroy a released memory registration (%u chunks)",
			chunks);
		return -EBUSY;
	}
	ms = mlx5_lm_now_ms() - t0;
	/* Written by the GC thread or a caller, read by anyone: no lock in common. */
	__atomic_store(&dev->times.mr_last_destroy_ms, &ms, __ATOMIC_RELAXED);
	DRV_LOG(INFO, dev, "released registration of %u chunks destroyed in %.1f ms", chunks, ms);
	return 0;
}

/* Under gc.lock: insert in deadline order. */
static void
gc_insert(struct mlx5_lm_mr *mr)
{
	struct mlx5_lm_mr *it;

	TAILQ_FOREACH(it, &gc.list, gc_next)
		if (it->gc_deadline_ms > mr->gc_deadline_ms)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, mr, gc_next);
	else
		TAILQ_INSERT_TAIL(&gc.list, mr, gc_next);
}

static void *
gc_thread(void *arg)
{
	int ret;

	/* Deferred deletion is background work: it yields to devices starting or stopping. */
	mlx5_lm_bg_thread(1);
	pthread_mutex_lock(&gc.lock);
	while (!gc.stop) {
		struct mlx5_lm_gc_work *w = TAILQ_FIRST(&gc.work);
		struct mlx5_lm_mr *mr = TAILQ_FIRST(&gc.list);
		double now = mlx5_lm_now_ms();

		if (w != NULL) {
			TAILQ_REMOVE(&gc.work, w, next);
			gc.busy++;
			pthread_mutex_unlock(&gc.lock);
			/* w is freed by its fn. */
			w->fn(w->arg, 1);
			pthread_mutex_lock(&gc.lock);
			if (--gc.busy == 0)
				pthread_cond_broadcast(&gc.idle);
			continue;
		}
		if (mr == NULL) {
			pthread_cond_wait(&gc.cv, &gc.lock);
			continue;
		}
		if (mr->gc_deadline_ms > now) {
			struct timespec ts;
			double wake;

			clock_gettime(CLOCK_REALTIME, &ts);
			wake = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 + (mr->gc_deadline_ms - now);
			ts.tv_sec = (time_t)(wake / 1e3);
			ts.tv_nsec = (long)((wake - ts.tv_sec * 1e3) * 1e6);
			pthread_cond_timedwait(&gc.cv, &gc.lock, &ts);
			continue;
		}
		TAILQ_REMOVE(&gc.list, mr, gc_next);
		gc.busy++;
		pthread_mutex_unlock(&gc.lock);
		ret = destroy_timed(mr, 1, 0);
		pthread_mutex_lock(&gc.lock);
		if (ret < 0) {
			/* A queue still names it: try again later; removal of its device forces it. */
			mr->gc_deadline_ms = mlx5_lm_now_ms() + GC_RETRY_MS;
			gc_insert(mr);
		}
		if (--gc.busy == 0)
			pthread_cond_broadcast(&gc.idle);
	}
	pthread_mutex_unlock(&gc.lock);
	return NULL;
}

int
mlx5_lm_mr_gc_get(void)
{
	int ret = 0;

	pthread_mutex_lock(&gc.lock);
	/*
	 * A thread told to stop may not have seen it yet: clearing stop would
	 * keep it running beside a new one, whose id would replace the one its
	 * put joins. Its put joins it first.
	 */
	while (gc.joining)
		pthread_cond_wait(&gc.joined, &gc.lock);
	if (gc.refs == 0) {
		gc.stop = 0;
		if (mlx5_lm_thread_create(&gc.thread, "mlx5-lm-gc", NULL, gc_thread, NULL) != 0)
			ret = -EAGAIN;
	}
	if (ret == 0)
		gc.refs++;
	pthread_mutex_unlock(&gc.lock);
	return ret;
}

void
mlx5_lm_mr_gc_put(void)
{
	pthread_t thread;

	pthread_mutex_lock(&gc.lock);
	if (gc.refs == 0 || --gc.refs > 0) {
		pthread_mutex_unlock(&gc.lock);
		return;
	}
	gc.stop = 1;
	gc.joining = 1;
	/* Read under the lock: a get (another device's probe) waits until the join. */
	thread = gc.thread;
	pthread_cond_broadcast(&gc.cv);
	pthread_mutex_unlock(&gc.lock);
	pthread_join(thread, NULL);
	pthread_mutex_lock(&gc.lock);
	gc.joining = 0;
	pthread_cond_broadcast(&gc.joined);
	pthread_mutex_unlock(&gc.lock);
	/* After the join: a device probed meanwhile (its files watched) keeps the instance. */
	fw_close();
}

unsigned int
mlx5_lm_mr_gc_joining(void)
{
	unsigned int joining;

	pthread_mutex_lock(&gc.lock);
	joining = (unsigned int)gc.joining;
	pthread_mutex_unlock(&gc.lock);
	return joining;
}

void
mlx5_lm_mr_release(struct mlx5_lm_mr *mr)
{
	if (mr == NULL)
		return;
	if (mr->dev->args.mr_gc_ms == 0) {
		if (destroy_timed(mr, 0, 0) == 0)
			return;
		/* Something still uses it: the garbage thread retries. */
		mr->gc_deadline_ms = mlx5_lm_now_ms() + GC_RETRY_MS;
	} else {
		mr->gc_deadline_ms = mlx5_lm_now_ms() + mr->dev->args.mr_gc_ms;
	}
	pthread_mutex_lock(&gc.lock);
	gc_insert(mr);
	pthread_cond_broadcast(&gc.cv);
	pthread_mutex_unlock(&gc.lock);
}

void
mlx5_lm_mr_gc_defer(struct mlx5_lm_gc_work *w)
{
	pthread_mutex_lock(&gc.lock);
	TAILQ_INSERT_TAIL(&gc.work, w, next);
	pthread_cond_broadcast(&gc.cv);
	pthread_mutex_unlock(&gc.lock);
}

struct mlx5_lm_mr *
mlx5_lm_mr_reclaim(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
		   uint32_t nregions)
{
	struct mlx5_lm_mr *mr;

	pthread_mutex_lock(&gc.lock);
	/* A registration whose destruction had begun (no indirect mkey) is not reusable. */
	TAILQ_FOREACH(mr, &gc.list, gc_next)
		if (mr->dev == dev && mr->indirect != NULL && !mr->stale &&
		    mlx5_lm_mr_same_table(mr, regions, nregions)) {
			TAILQ_REMOVE(&gc.list, mr, gc_next);
			break;
		}
	pthread_mutex_unlock(&gc.lock);
	return mr;
}

/* Removal: destroy mr, retried GC_RETRY_MS apart; what cannot be destroyed is named. */
static void
flush_destroy(struct mlx5_lm_mr *mr)
{
	const struct timespec pause = { .tv_nsec = GC_RETRY_MS * 1000000L };
	struct mlx5_lm_dev *dev = mr->dev;
	uint32_t chunks = mr->nchunks;
	int prepared = mr->prereg != NULL;

	for (int i = 0; i < GC_FLUSH_TRIES; i++) {
		if (i > 0)
			nanosleep(&pause, NULL);
		/* The device goes: its queue objects are gone, or leaked by a failed destroy. */
		if (destroy_timed(mr, 0, 1) == 0)
			return;
	}
	DRV_LOG(ERR, dev, "a released registration could not be destroyed in %d tries at "
		"removal: its KLM mkey and %u memory regions%s leak", GC_FLUSH_TRIES, chunks,
		prepared ? ", and its reference on the preparation" : "");
}

void
mlx5_lm_mr_gc_flush(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_mr *mr, *next;
	TAILQ_HEAD(, mlx5_lm_mr) mine = TAILQ_HEAD_INITIALIZER(mine);
	struct mlx5_lm_gc_work *w, *wnext;
	TAILQ_HEAD(, mlx5_lm_gc_work) work = TAILQ_HEAD_INITIALIZER(work);

	pthread_mutex_lock(&gc.lock);
	/* One being destroyed by the thread must finish before the device goes. */
	while (gc.busy > 0)
		pthread_cond_wait(&gc.idle, &gc.lock);
	for (mr = TAILQ_FIRST(&gc.list); mr != NULL; mr = next) {
		next = TAILQ_NEXT(mr, gc_next);
		if (mr->dev == dev) {
			TAILQ_REMOVE(&gc.list, mr, gc_next);
			TAILQ_INSERT_TAIL(&mine, mr, gc_next);
		}
	}
	pthread_mutex_unlock(&gc.lock);
	while ((mr = TAILQ_FIRST(&mine)) != NULL) {
		TAILQ_REMOVE(&mine, mr, gc_next);
		flush_destroy(mr);
	}
	/* Its work, that handed over by the registrations just destroyed included. */
	pthread_mutex_lock(&gc.lock);
	while (gc.busy > 0)
		pthread_cond_wait(&gc.idle, &gc.lock);
	for (w = TAILQ_FIRST(&gc.work); w != NULL; w = wnext) {
		wnext = TAILQ_NEXT(w, next);
		if (w->dev == dev) {
			TAILQ_REMOVE(&gc.work, w, next);
			TAILQ_INSERT_TAIL(&work, w, next);
		}
	}
	pthread_mutex_unlock(&gc.lock);
	while ((w = TAILQ_FIRST(&work)) != NULL) {
		TAILQ_REMOVE(&work, w, next);
		w->fn(w->arg, 0);
	}
}

int
mlx5_lm_mr_gc_wait(struct mlx5_lm_dev *dev, unsigned int timeout_ms)
{
	struct mlx5_lm_mr *mr;
	struct timespec ts;
	int pending, ret = 0;

	mlx5_lm_deadline_ts(&ts, timeout_ms);
	pthread_mutex_lock(&gc.lock);
	for (;;) {
		struct mlx5_lm_gc_work *w;

		pending = gc.busy > 0;
		TAILQ_FOREACH(mr, &gc.list, gc_next)
			if (mr->dev == dev)
				pending = 1;
		TAILQ_FOREACH(w, &gc.work, next)
			if (w->dev == dev)
				pending = 1;
		if (!pending)
			break;
		/* A registration its queues still hold is retried forever: bounded. */
		if (pthread_cond_timedwait(&gc.idle, &gc.lock, &ts) == ETIMEDOUT) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&gc.lock);
	return ret;
}

double
mlx5_lm_mr_gc_last_destroy_ms(struct mlx5_lm_dev *dev)
{
	double ms;

	__atomic_load(&dev->times.mr_last_destroy_ms, &ms, __ATOMIC_RELAXED);
	return ms;
}
