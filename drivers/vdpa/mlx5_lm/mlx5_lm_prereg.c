/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Preparation of a front end's guest memory before its memory table
 * (mlx5_lm_prereg.h). One preparation per device, owned by a thread of
 * its own that registers it on the MKEY workers as background work, then
 * waits for a DRIVER_OK to take it, for its time to run out, for its
 * front end to exit or disconnect, or for the device to go.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mlx5_lm.h"
#include "mlx5_lm_pool.h"
#include "mlx5_lm_prereg_priv.h"
#include "mlx5_lm_test.h"

#define PREP_MAX_REGIONS 64

/* ---- the registration ------------------------------------------------------ */

static int
chunk_reg(void *arg)
{
	struct prep_chunk *c = arg;
	struct mlx5_lm_dev *dev = c->p->dev;

	if (__atomic_load_n(&c->p->cancel, __ATOMIC_RELAXED))
		return -ECANCELED;
	c->mr_reg = devx_mr_reg(dev->res.pd, c->hva, c->size, c->off, MLX5_LM_DMA_ACCESS);
	if (c->mr_reg == NULL) {
		int err = -errno;

		DRV_LOG(ERR, dev, "preparation: region %u file offset 0x%" PRIx64 "+0x%" PRIx64
			": registration failed: %s%s", c->region, c->off, c->size, strerror(-err),
			mlx5_lm_pin_hint(err, c->p->regions[c->region].fs_writeback));
		return err;
	}
	return 0;
}

static int
chunk_dereg(void *arg)
{
	struct prep_chunk *c = arg;

	if (c->mr_reg != NULL && devx_mr_dereg(c->mr_reg) == 0)
		c->mr_reg = NULL;
	return 0;
}

static int
for_each_chunk(struct mlx5_lm_prereg *p, mlx5_lm_task_fn fn, int background)
{
	struct mlx5_lm_batch b;
	uint32_t i;
	int ret = 0;

	/* The registration pins while others upload page lists, as at DRIVER_OK. */
	if (fn == chunk_reg)
		mlx5_lm_batch_init_bulk(&b, mlx5_lm_pool_threads(p->dev));
	else if (background)
		mlx5_lm_batch_init_background(&b, p->dev->args.workers);
	else
		mlx5_lm_batch_init(&b, p->dev->args.workers);
	for (i = 0; i < p->nchunks; i++)
		if (mlx5_lm_batch_submit(&b, fn, &p->chunks[i]) < 0) {
			ret = -ENOMEM;
			break;
		}
	if (mlx5_lm_batch_wait(&b) != 0 && ret == 0)
		ret = b.first_err;
	mlx5_lm_batch_fini(&b);
	return ret;
}

static void
prereg_destroy(struct mlx5_lm_prereg *p, int background)
{
	uint32_t i;

	for_each_chunk(p, chunk_dereg, background);
	for (i = 0; i < p->nchunks; i++)
		if (p->chunks[i].mr_reg != NULL)
			DRV_LOG(ERR, p->dev, "preparation: a chunk the device did not release "
				"stays pinned (file offset 0x%" PRIx64 ")", p->chunks[i].off);
	/* The device let go of the pages before the mappings go. */
	for (i = 0; i < p->nregions; i++)
		if (p->regions[i].map != NULL)
			munmap(p->regions[i].map, p->regions[i].size);
	free(p->chunks);
	free(p->regions);
	free(p);
}

static void
prereg_gc(void *arg, int background)
{
	prereg_destroy(arg, background);
}

struct mlx5_lm_prereg *
mlx5_lm_prereg_ref(struct mlx5_lm_prereg *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void
mlx5_lm_prereg_put(struct mlx5_lm_prereg *p)
{
	if (p != NULL && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		mlx5_lm_mr_gc_defer(&p->gc);
}

/*
 * The same in the caller, which may wait: the preparation's own thread
 * (RELEASED is reported once the device let go), the removal, a
 * preparation that never registered anything.
 */
static void
put_here(struct mlx5_lm_prereg *p, int background)
{
	if (p != NULL && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		prereg_destroy(p, background);
}

/* ---- the thread that owns a preparation ----------------------------------- */

void
mlx5_lm_prereg_wake(struct mlx5_lm_prep_ctl *ctl)
{
	uint64_t one = 1;

	(void)!write(ctl->wake_fd, &one, sizeof(one));
}

void
mlx5_lm_prereg_set_state(struct mlx5_lm_prep_ctl *ctl, int state, const char *reason)
{
	ctl->st.state = state;
	if (reason != NULL)
		snprintf(ctl->st.reason, sizeof(ctl->st.reason), "%s", reason);
	pthread_cond_broadcast(&ctl->cv);
}

static int
ms_left(double deadline)
{
	double left = deadline - mlx5_lm_now_ms();

	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left + 1;
}

/* Wait until taken, released, the front end exits or the time runs out. */
static const char *
wait_for_use(struct mlx5_lm_dev *dev, struct mlx5_lm_prep_ctl *ctl)
{
	double deadline = mlx5_lm_now_ms() + dev->args.prereg_ttl_ms;
	struct pollfd fds[2] = {
		{ .fd = ctl->wake_fd, .events = POLLIN },
		{ .fd = ctl->pidfd, .events = POLLIN },
	};
	uint64_t v;

	for (;;) {
		pthread_mutex_lock(&ctl->lock);
		if (ctl->st.state == RTE_PMD_MLX5_LM_PREP_USED) {
			pthread_mutex_unlock(&ctl->lock);
			return NULL;
		}
		if (ctl->release) {
			pthread_mutex_unlock(&ctl->lock);
			return "";
		}
		pthread_mutex_unlock(&ctl->lock);
		if (ms_left(deadline) == 0)
			return "not used within prereg_ttl_ms";
		if (poll(fds, ctl->pidfd >= 0 ? 2 : 1, ms_left(deadline)) < 0 && errno != EINTR)
			return "cannot wait for its use";
		if (fds[0].revents & POLLIN)
			(void)!read(ctl->wake_fd, &v, sizeof(v));
		if (ctl->pidfd >= 0 && (fds[1].revents & POLLIN))
			return "its front end process exited";
	}
}

static void *
prep_thread(void *arg)
{
	struct mlx5_lm_dev *dev = arg;
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	struct mlx5_lm_prereg *p;
	void (*race)(void *arg);
	const char *why;
	char msg[160];
	double took;
	int ret;

	mlx5_lm_bg_thread(1);
	pthread_mutex_lock(&ctl->lock);
	p = mlx5_lm_prereg_ref(ctl->cur);
	pthread_mutex_unlock(&ctl->lock);
	ret = for_each_chunk(p, chunk_reg, 1);
	pthread_mutex_lock(&ctl->lock);
	ctl->st.end_ms = mlx5_lm_now_ms();
	if (ret < 0 && !ctl->release) {
		uint32_t i, writeback = 0;

		for (i = 0; i < p->nregions; i++)
			writeback |= p->regions[i].fs_writeback;
		ctl->st.error = ret;
		/* The reason holds 159 characters: the cause is told short (doc/hardware.md). */
		snprintf(msg, sizeof(msg), "registration failed: %s%s", strerror(-ret),
			 writeback ? " (a file with writeback, which Linux 6.5+ does not pin "
			 "for a device's writes)" : "");
		mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_FAILED, msg);
	} else if (ret == 0 && !ctl->release) {
		mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_READY, NULL);
	}
	took = ctl->st.end_ms - ctl->st.start_ms;
	snprintf(msg, sizeof(msg), "%s", ctl->st.reason);
	pthread_mutex_unlock(&ctl->lock);
	if (ret == 0) {
		DRV_LOG(INFO, dev, "preparation: %u chunks registered in %.1f ms", p->nchunks,
			took);
		why = wait_for_use(dev, ctl);
	} else {
		why = msg;
	}
	if (why == NULL) {
		/* Taken: the registration that took it holds it now. */
		put_here(p, 1);
		return NULL;
	}
	race = __atomic_load_n(&ctl->race, __ATOMIC_ACQUIRE);
	if (race != NULL)
		race(ctl->race_arg);
	pthread_mutex_lock(&ctl->lock);
	/*
	 * Taken after all: wait_for_use checked for a take under the lock,
	 * then let go of it before acting on the time limit or the front
	 * end's exit, and a DRIVER_OK may have taken it in between. Released,
	 * a preparation in use would be reported released for its time limit
	 * and lose the device's reference (ctl->cur), which the DRIVER_OK
	 * after a first kick checks.
	 */
	if (ctl->st.state == RTE_PMD_MLX5_LM_PREP_USED) {
		pthread_mutex_unlock(&ctl->lock);
		put_here(p, 1);
		return NULL;
	}
	/* Unused: this thread registered it, this thread releases it. */
	if (ctl->cur == p) {
		ctl->cur = NULL;
		__atomic_sub_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	}
	if (why[0] != '\0')
		snprintf(ctl->st.reason, sizeof(ctl->st.reason), "%s", why);
	snprintf(msg, sizeof(msg), "%s", ctl->st.reason);
	pthread_mutex_unlock(&ctl->lock);
	__atomic_store_n(&p->cancel, 1, __ATOMIC_RELAXED);
	put_here(p, 1);
	/* Released once the device let go of it: a caller that sees the state may count. */
	pthread_mutex_lock(&ctl->lock);
	if (ctl->st.state != RTE_PMD_MLX5_LM_PREP_FAILED)
		mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_RELEASED, NULL);
	pthread_mutex_unlock(&ctl->lock);
	DRV_LOG(INFO, dev, "preparation released: %s", msg);
	return NULL;
}

/* Ask the thread to release an unused preparation and wait for it. Not under ctl->lock. */
static void
stop_thread(struct mlx5_lm_prep_ctl *ctl, const char *why)
{
	pthread_mutex_lock(&ctl->lock);
	if (!ctl->thread_up) {
		pthread_mutex_unlock(&ctl->lock);
		return;
	}
	/* Already being released: its first reason stays. */
	if (!ctl->release && (ctl->st.state == RTE_PMD_MLX5_LM_PREP_PREPARING ||
			      ctl->st.state == RTE_PMD_MLX5_LM_PREP_READY)) {
		ctl->release = 1;
		snprintf(ctl->st.reason, sizeof(ctl->st.reason), "%s", why);
		if (ctl->cur != NULL)
			__atomic_store_n(&ctl->cur->cancel, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ctl->lock);
	mlx5_lm_prereg_wake(ctl);
	pthread_join(ctl->thread, NULL);
	pthread_mutex_lock(&ctl->lock);
	ctl->thread_up = 0;
	ctl->release = 0;
	if (ctl->pidfd >= 0)
		close(ctl->pidfd);
	ctl->pidfd = -1;
	pthread_mutex_unlock(&ctl->lock);
}

/* ---- probe, removal, disconnection ----------------------------------------- */

int
mlx5_lm_prereg_init(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = calloc(1, sizeof(*ctl));

	if (ctl == NULL)
		return -ENOMEM;
	ctl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctl->wake_fd < 0) {
		free(ctl);
		return -errno;
	}
	ctl->pidfd = -1;
	ctl->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ctl->ino_fd < 0) {
		int err = -errno;

		DRV_LOG(ERR, dev, "no inotify instance for preparations: %s", strerror(-err));
		close(ctl->wake_fd);
		free(ctl);
		return err;
	}
	pthread_mutex_init(&ctl->call_lock, NULL);
	pthread_mutex_init(&ctl->lock, NULL);
	pthread_cond_init(&ctl->cv, NULL);
	dev->prep = ctl;
	return 0;
}

void
mlx5_lm_prereg_unlisted(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;

	if (ctl == NULL)
		return;
	pthread_mutex_lock(&ctl->lock);
	ctl->unlisted = 1;
	pthread_cond_broadcast(&ctl->cv);
	pthread_mutex_unlock(&ctl->lock);
}

void
mlx5_lm_prereg_fini(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;

	if (ctl == NULL)
		return;
	stop_thread(ctl, "the device was removed");
	/* Used: the registration that took it holds its own reference. */
	put_here(ctl->cur, 0);
	close(ctl->wake_fd);
	close(ctl->ino_fd);
	pthread_cond_destroy(&ctl->cv);
	pthread_mutex_destroy(&ctl->lock);
	pthread_mutex_destroy(&ctl->call_lock);
	free(ctl);
	dev->prep = NULL;
}

void
mlx5_lm_prereg_disconnected(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;

	pthread_mutex_lock(&ctl->lock);
	if (ctl->thread_up && !ctl->release &&
	    (ctl->st.state == RTE_PMD_MLX5_LM_PREP_PREPARING ||
	     ctl->st.state == RTE_PMD_MLX5_LM_PREP_READY)) {
		/* Deferred: the thread releases it; vhost's thread goes on. */
		ctl->release = 1;
		snprintf(ctl->st.reason, sizeof(ctl->st.reason),
			 "the device's front end disconnected before DRIVER_OK");
		if (ctl->cur != NULL)
			__atomic_store_n(&ctl->cur->cancel, 1, __ATOMIC_RELAXED);
		mlx5_lm_prereg_wake(ctl);
	}
	pthread_mutex_unlock(&ctl->lock);
	/* Taken at the first kick, with no DRIVER_OK since. */
	mlx5_lm_prereg_settle(dev);
}

void
mlx5_lm_prereg_settle(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	struct mlx5_lm_prereg *p = NULL;

	pthread_mutex_lock(&ctl->lock);
	/*
	 * USED is final (mlx5_lm_prereg_take serves only READY): nothing reads
	 * ctl->cur of a used preparation after its DRIVER_OK, and the status
	 * keeps its numbers in ctl->st. Let go of even when it is the last
	 * reference - the registration made of it failed, or was destroyed at
	 * once (mr_gc_ms=0) - for the preparation's thread, whose time limit
	 * would have released it, is gone: kept, it stayed pinned until the
	 * next preparation or the removal, the VM that left included.
	 */
	if (ctl->cur != NULL && ctl->st.state == RTE_PMD_MLX5_LM_PREP_USED) {
		p = ctl->cur;
		ctl->cur = NULL;
	}
	pthread_mutex_unlock(&ctl->lock);
	/* Deregistered by the garbage thread: the caller is vhost's or the worker (dev->lock). */
	mlx5_lm_prereg_put(p);
}

/* ---- preparing -------------------------------------------------------------- */

/* The files the inotify instance saw modified since it was last read (p NULL: forgotten). */
static int
region_open(struct mlx5_lm_prereg *p, const struct rte_pmd_mlx5_lm_prep_region *r,
	    unsigned int i, struct prep_region *pr, uint32_t *nchunks)
{
	struct mlx5_lm_dev *dev = p->dev;
	uint64_t chunk = (uint64_t)dev->args.mr_chunk_mb << 20;
	char path[64];
	struct stat st;

	if (r->fd < 0 || fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		DRV_LOG(ERR, dev, "preparation: region %u: fd %d is not a memory file", i, r->fd);
		return -EINVAL;
	}
	mlx5_lm_file_fs(r->fd, &pr->page_size, &pr->fs_writeback);
	if (r->size == 0 || r->offset % pr->page_size || r->size % pr->page_size ||
	    r->offset + r->size < r->offset || r->offset + r->size > (uint64_t)st.st_size) {
		DRV_LOG(ERR, dev, "preparation: region %u (offset 0x%" PRIx64 " size 0x%" PRIx64
			") is empty, not aligned to its 0x%" PRIx64 " pages or past the end of "
			"its file (0x%" PRIx64 " bytes)", i, r->offset, r->size, pr->page_size,
			(uint64_t)st.st_size);
		return -EINVAL;
	}
	pr->file_dev = (uint64_t)st.st_dev;
	pr->file_ino = (uint64_t)st.st_ino;
	pr->fsize = (uint64_t)st.st_size;
	/* The fd's file itself, through its /proc link (a memfd has no other name). */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", r->fd);
	pr->wd = inotify_add_watch(p->dev->prep->ino_fd, path, IN_MODIFY | IN_DELETE_SELF);
	if (pr->wd < 0) {
		int err = -errno;

		DRV_LOG(ERR, dev, "preparation: region %u: cannot watch its file for "
			"truncation: %s", i, strerror(-err));
		return err;
	}
	pr->off = r->offset;
	pr->size = r->size;
	pr->map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		       (off_t)r->offset);
	if (pr->map == MAP_FAILED) {
		int err = -errno;

		pr->map = NULL;
		DRV_LOG(ERR, dev, "preparation: region %u: cannot map it: %s", i, strerror(-err));
		return err;
	}
	if (chunk > PRM_MAX_KLM_BYTE_COUNT)
		chunk = PRM_MAX_KLM_BYTE_COUNT;
	chunk -= chunk % pr->page_size;
	if (chunk == 0)
		chunk = pr->page_size;
	*nchunks += (uint32_t)((r->size + chunk - 1) / chunk);
	return 0;
}

static int
prereg_build(struct mlx5_lm_dev *dev, int pid, const struct rte_pmd_mlx5_lm_prep_region *r,
	     unsigned int n, struct mlx5_lm_prereg **out, uint64_t *bytes)
{
	uint64_t limit = (uint64_t)dev->args.prereg_max_gb << 30, chunk;
	struct mlx5_lm_prereg *p;
	uint32_t i, nchunks = 0;
	int ret;

	*bytes = 0;
	for (i = 0; i < n; i++) {
		*bytes += r[i].size;
		if (*bytes > limit || *bytes < r[i].size) {
			DRV_LOG(ERR, dev, "preparation of more than prereg_max_gb=%u GiB refused",
				dev->args.prereg_max_gb);
			return -E2BIG;
		}
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->dev = dev;
	p->pid = pid;
	p->gc.dev = dev;
	p->gc.fn = prereg_gc;
	p->gc.arg = p;
	/*
	 * Changes seen before are an earlier preparation's: recorded on the
	 * device's current one, not dropped. A registration made of it ahead
	 * of DRIVER_OK is kept only if its files did not change
	 * (mlx5_lm_prereg_recheck), and this call may yet fail and leave it
	 * the device's.
	 */
	pthread_mutex_lock(&dev->prep->lock);
	mlx5_lm_prereg_note_changes(dev->prep->ino_fd, dev->prep->cur);
	pthread_mutex_unlock(&dev->prep->lock);
	p->regions = calloc(n, sizeof(*p->regions));
	if (p->regions == NULL) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < n; i++) {
		ret = region_open(p, &r[i], i, &p->regions[i], &nchunks);
		if (ret < 0)
			goto err;
		p->nregions++;
	}
	p->chunks = calloc(nchunks, sizeof(*p->chunks));
	if (p->chunks == NULL) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < p->nregions; i++) {
		struct prep_region *pr = &p->regions[i];
		uint64_t o;

		chunk = (uint64_t)dev->args.mr_chunk_mb << 20;
		if (chunk > PRM_MAX_KLM_BYTE_COUNT)
			chunk = PRM_MAX_KLM_BYTE_COUNT;
		chunk -= chunk % pr->page_size;
		if (chunk == 0)
			chunk = pr->page_size;
		for (o = 0; o < pr->size; o += chunk) {
			struct prep_chunk *c = &p->chunks[p->nchunks++];

			c->p = p;
			c->region = i;
			c->off = pr->off + o;
			c->size = pr->size - o < chunk ? pr->size - o : chunk;
			c->hva = (uint8_t *)pr->map + o;
		}
	}
	*out = p;
	return 0;
err:
	prereg_destroy(p, 0);
	return ret;
}

static int
prepare(struct mlx5_lm_dev *dev, int pid, const struct rte_pmd_mlx5_lm_prep_region *r,
	unsigned int n)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	struct mlx5_lm_prereg *p, *old;
	uint64_t bytes, n_prep;
	int pidfd = -1, ret;

	if (dev->args.prereg_max_gb == 0) {
		DRV_LOG(ERR, dev, "preparation refused: prereg_max_gb=0");
		return -EOPNOTSUPP;
	}
	if (r == NULL || n == 0 || n > PREP_MAX_REGIONS || pid < 0) {
		DRV_LOG(ERR, dev, "preparation refused: %u regions (1 to %u), pid %d", n,
			PREP_MAX_REGIONS, pid);
		return -EINVAL;
	}
	/*
	 * Postcopy (pinning would fault in every page) is not asked about
	 * here: a front end cannot negotiate it with this PMD, which never
	 * offers VHOST_USER_PROTOCOL_F_PAGEFAULT (mlx5_lm_get_protocol_features,
	 * test_prereg), and the use checks again on vhost's thread
	 * (mlx5_lm_prereg_take). Asking vhost from the caller's thread would
	 * read a connection's state that vhost's thread may be freeing.
	 */
	if (pid > 0) {
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0) {
			ret = -errno;
			DRV_LOG(ERR, dev, "preparation refused: front end pid %d: %s", pid,
				strerror(-ret));
			return ret;
		}
	}
	/* One preparation per device: an unused earlier one goes first. */
	stop_thread(ctl, "replaced by a new preparation");
	ret = prereg_build(dev, pid, r, n, &p, &bytes);
	if (ret < 0) {
		if (pidfd >= 0)
			close(pidfd);
		return ret;
	}
	pthread_mutex_lock(&ctl->lock);
	/*
	 * A used one not settled yet (taken at a first kick, its DRIVER_OK to
	 * come): the last reference if the registration made of it failed.
	 * Dropped once the lock is let go, which vhost's thread may be waiting
	 * for, and deregistered by the garbage thread (mlx5_lm_prereg_put).
	 */
	old = ctl->cur;
	p->refs = 1;
	ctl->cur = p;
	n_prep = ctl->st.preparations;
	memset(&ctl->st, 0, sizeof(ctl->st));
	ctl->st.preparations = n_prep + 1;
	ctl->st.pid = pid;
	ctl->st.regions = p->nregions;
	ctl->st.chunks = p->nchunks;
	ctl->st.bytes = bytes;
	ctl->st.start_ms = mlx5_lm_now_ms();
	mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_PREPARING, NULL);
	ret = mlx5_lm_thread_create(&ctl->thread, "mlx5-lm-prep", NULL, prep_thread, dev);
	if (ret != 0) {
		ctl->cur = NULL;
		mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_FAILED, "cannot start its thread");
		ctl->st.error = -ret;
		pthread_mutex_unlock(&ctl->lock);
		mlx5_lm_prereg_put(old);
		put_here(p, 0);
		/* No thread, nothing to stop: stop_thread would never close it. */
		if (pidfd >= 0)
			close(pidfd);
		return -ret;
	}
	/* Under ctl->lock still: the thread reads it once it has taken the lock. */
	ctl->pidfd = pidfd;
	ctl->thread_up = 1;
	pthread_mutex_unlock(&ctl->lock);
	mlx5_lm_prereg_put(old);
	DRV_LOG(INFO, dev, "preparation of %u regions (%" PRIu64 " MiB) for pid %d started",
		n, bytes >> 20, pid);
	return 0;
}

/* ---- test seam (tests/integration: mlx5_lm_test.h) ------------------------- */

void
mlx5_lm_prereg_race(struct mlx5_lm_dev *dev, void (*fn)(void *arg), void *arg)
{
	dev->prep->race_arg = arg;
	__atomic_store_n(&dev->prep->race, fn, __ATOMIC_RELEASE);
}

/* ---- public API ------------------------------------------------------------------ */

int
rte_pmd_mlx5_lm_prepare(const char *name, int pid, const struct rte_pmd_mlx5_lm_prep_region *r,
			unsigned int n)
{
	struct mlx5_lm_dev *dev = name != NULL ? mlx5_lm_dev_get(name) : NULL;
	int ret;

	if (dev == NULL)
		return -ENODEV;
	/* One call at a time: each stops the thread of the one before and starts its own. */
	pthread_mutex_lock(&dev->prep->call_lock);
	ret = prepare(dev, pid, r, n);
	pthread_mutex_unlock(&dev->prep->call_lock);
	mlx5_lm_dev_put(dev);
	return ret;
}

int
rte_pmd_mlx5_lm_prepare_status(const char *name, struct rte_pmd_mlx5_lm_prep_status *st)
{
	struct mlx5_lm_dev *dev = name != NULL ? mlx5_lm_dev_get(name) : NULL;

	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->prep->lock);
	*st = dev->prep->st;
	pthread_mutex_unlock(&dev->prep->lock);
	mlx5_lm_dev_put(dev);
	return 0;
}

int
rte_pmd_mlx5_lm_prepare_wait(const char *name, unsigned int timeout_ms)
{
	struct mlx5_lm_dev *dev = name != NULL ? mlx5_lm_dev_get(name) : NULL;
	struct mlx5_lm_prep_ctl *ctl;
	struct timespec ts;
	int ret = 0;

	if (dev == NULL)
		return -ENODEV;
	ctl = dev->prep;
	mlx5_lm_deadline_ts(&ts, timeout_ms);
	pthread_mutex_lock(&ctl->lock);
	while (ctl->st.state == RTE_PMD_MLX5_LM_PREP_PREPARING && ret == 0 && !ctl->unlisted)
		if (pthread_cond_timedwait(&ctl->cv, &ctl->lock, &ts) == ETIMEDOUT)
			ret = -ETIMEDOUT;
	if (ctl->unlisted)
		ret = -ENODEV;
	pthread_mutex_unlock(&ctl->lock);
	mlx5_lm_dev_put(dev);
	return ret;
}

int
rte_pmd_mlx5_lm_prepare_cancel(const char *name)
{
	struct mlx5_lm_dev *dev = name != NULL ? mlx5_lm_dev_get(name) : NULL;
	struct mlx5_lm_prep_ctl *ctl;
	int ret = -ENOENT;

	if (dev == NULL)
		return -ENODEV;
	ctl = dev->prep;
	pthread_mutex_lock(&ctl->lock);
	if (ctl->thread_up && !ctl->release &&
	    (ctl->st.state == RTE_PMD_MLX5_LM_PREP_PREPARING ||
	     ctl->st.state == RTE_PMD_MLX5_LM_PREP_READY)) {
		mlx5_lm_prereg_refuse(ctl, "cancelled");
		ret = 0;
	}
	pthread_mutex_unlock(&ctl->lock);
	mlx5_lm_dev_put(dev);
	return ret;
}
