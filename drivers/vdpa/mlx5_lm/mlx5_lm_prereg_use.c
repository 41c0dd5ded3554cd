/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Preparations at DRIVER_OK (mlx5_lm_prereg.h): which regions of the
 * front end's table a preparation serves - the same file, range and page
 * size, the file not truncated since, the connection's peer the process it
 * was made for - and the slices of its chunks that cover them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_vhost.h>

#include "mlx5_lm.h"
#include "mlx5_lm_prereg_priv.h"

void
mlx5_lm_prereg_note_changes(int ino_fd, struct mlx5_lm_prereg *p)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;
	uint32_t i;

	while ((len = read(ino_fd, buf, sizeof(buf))) > 0) {
		const char *at = buf;

		while (at < buf + len) {
			const struct inotify_event *ev = (const struct inotify_event *)at;

			/* IN_IGNORED and overflows too: whatever it was, not trusted. */
			for (i = 0; p != NULL && i < p->nregions; i++)
				if (ev->wd == p->regions[i].wd || ev->wd == -1)
					p->regions[i].changed = 1;
			at += sizeof(*ev) + ev->len;
		}
	}
}

/* ---- use at DRIVER_OK --------------------------------------------------------- */

static const struct prep_region *
find_region(const struct mlx5_lm_prereg *p, const struct mlx5_lm_mem_region *reg)
{
	uint32_t i;

	for (i = 0; i < p->nregions; i++) {
		const struct prep_region *pr = &p->regions[i];

		if (reg->file_ino != 0 && pr->file_dev == reg->file_dev &&
		    pr->file_ino == reg->file_ino && reg->file_off >= pr->off &&
		    reg->size <= pr->size && reg->file_off - pr->off <= pr->size - reg->size &&
		    reg->page_size == pr->page_size)
			return pr;
	}
	return NULL;
}

uint32_t
mlx5_lm_prereg_slices(const struct mlx5_lm_prereg *p, const struct mlx5_lm_mem_region *reg,
		      struct mlx5_lm_mr_chunk *out)
{
	uint64_t lo = reg->file_off, hi = reg->file_off + reg->size;
	const struct prep_region *pr = find_region(p, reg);
	uint32_t i, n = 0;

	if (pr == NULL)
		return 0;
	/*
	 * The chunks of that one range only, which cover the region once:
	 * those of another range of the same file overlapping it would be
	 * KLM entries too, and shift every address the device translates
	 * after them (the ranges are not checked for overlaps).
	 */
	for (i = 0; i < p->nchunks; i++) {
		const struct prep_chunk *c = &p->chunks[i];
		uint64_t s, e;

		if (&p->regions[c->region] != pr || c->off + c->size <= lo || c->off >= hi)
			continue;
		s = c->off > lo ? c->off : lo;
		e = c->off + c->size < hi ? c->off + c->size : hi;
		if (out != NULL) {
			struct mlx5_lm_mr_chunk *m = &out[n];

			m->gpa = reg->gpa + (s - lo);
			m->size = e - s;
			m->hva = reg->hva + (s - lo);
			m->iova = s;
			m->mr_reg = c->mr_reg;
			m->borrowed = 1;
		}
		n++;
	}
	return n;
}

void
mlx5_lm_prereg_refuse(struct mlx5_lm_prep_ctl *ctl, const char *why)
{
	ctl->release = 1;
	snprintf(ctl->st.reason, sizeof(ctl->st.reason), "%s", why);
	if (ctl->cur != NULL)
		__atomic_store_n(&ctl->cur->cancel, 1, __ATOMIC_RELAXED);
	mlx5_lm_prereg_wake(ctl);
}

static void
sort_regions(struct mlx5_lm_mem_region *r, uint8_t *ok, uint32_t n)
{
	uint32_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && r[j - 1].gpa > r[j].gpa; j--) {
			struct mlx5_lm_mem_region t = r[j];
			uint8_t o = ok[j];

			r[j] = r[j - 1];
			ok[j] = ok[j - 1];
			r[j - 1] = t;
			ok[j - 1] = o;
		}
}

/* 1 when region i of the table may use p: its file is the prepared one, unchanged. */
static int
region_ok(const struct mlx5_lm_prereg *p, const struct mlx5_lm_mem_region *reg, int fd,
	  char *why, size_t len, uint32_t i)
{
	const struct prep_region *pr = find_region(p, reg);
	struct stat st;

	if (pr == NULL) {
		snprintf(why, len, "region %u (gpa 0x%" PRIx64 " size 0x%" PRIx64 ") lies in no "
			 "prepared range of its file", i, reg->gpa, reg->size);
		return 0;
	}
	if (pr->changed || fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size != pr->fsize) {
		snprintf(why, len, "region %u (gpa 0x%" PRIx64 "): its file was truncated or "
			 "changed since the preparation", i, reg->gpa);
		return 0;
	}
	return 1;
}

int
mlx5_lm_prereg_recheck(struct mlx5_lm_dev *dev, struct mlx5_lm_prereg *p,
		       struct rte_vhost_memory *mem, const struct mlx5_lm_mem_region *regions,
		       uint32_t n)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	char why[160] = "it was replaced by another preparation";
	uint32_t i;
	int ok;

	pthread_mutex_lock(&ctl->lock);
	/*
	 * The changes are watched for the device's current preparation only,
	 * which ctl holds a reference on: p is used only if it is that one.
	 */
	ok = p != NULL && ctl->cur == p;
	if (ok)
		mlx5_lm_prereg_note_changes(ctl->ino_fd, p);
	for (i = 0; ok && i < n; i++)
		ok = region_ok(p, &regions[i], mem->regions[i].fd, why, sizeof(why), i);
	pthread_mutex_unlock(&ctl->lock);
	if (!ok)
		DRV_LOG(INFO, dev, "DRIVER_OK: the memory registered at the first kick is not used "
			"(%s): the table is registered now", why);
	return ok;
}

int
mlx5_lm_prereg_ready(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	int ready;

	pthread_mutex_lock(&ctl->lock);
	ready = ctl->cur != NULL && !ctl->release &&
		ctl->st.state == RTE_PMD_MLX5_LM_PREP_READY;
	pthread_mutex_unlock(&ctl->lock);
	return ready;
}

struct mlx5_lm_prereg *
mlx5_lm_prereg_take(struct mlx5_lm_dev *dev, int vid, struct rte_vhost_memory *mem,
		    struct mlx5_lm_mem_region *regions, uint32_t n, uint8_t *ok, int whole)
{
	struct mlx5_lm_prep_ctl *ctl = dev->prep;
	struct mlx5_lm_prereg *p = NULL;
	uint64_t pf = 0, used = 0, fallback = 0, need, limit;
	char why[160] = "";
	uint32_t i;
	int peer;

	memset(ok, 0, n);
	pthread_mutex_lock(&ctl->lock);
	if (ctl->cur != NULL && ctl->st.state == RTE_PMD_MLX5_LM_PREP_READY)
		mlx5_lm_prereg_note_changes(ctl->ino_fd, ctl->cur);
	if (ctl->cur == NULL || ctl->release ||
	    (ctl->st.state != RTE_PMD_MLX5_LM_PREP_READY &&
	     ctl->st.state != RTE_PMD_MLX5_LM_PREP_PREPARING))
		goto out;
	/* whole: anything short of a ready preparation for this front end is DRIVER_OK's to judge. */
	if (whole && ctl->st.state != RTE_PMD_MLX5_LM_PREP_READY)
		goto out;
	if (ctl->st.state == RTE_PMD_MLX5_LM_PREP_PREPARING) {
		/* Waiting here would hold the start behind background work that yields to it. */
		mlx5_lm_prereg_refuse(ctl, "still registering at DRIVER_OK: the table was registered as usual");
		goto out;
	}
	if (rte_vhost_get_negotiated_protocol_features(vid, &pf) == 0 &&
	    (pf & (1ull << VHOST_USER_PROTOCOL_F_PAGEFAULT))) {
		if (whole)
			goto out;
		mlx5_lm_prereg_refuse(ctl, "the front end negotiated postcopy: not used");
		goto out;
	}
	if (ctl->cur->pid > 0) {
		peer = mlx5_lm_vhost_peer_pid(vid);
		if (peer != ctl->cur->pid) {
			if (whole)
				goto out;
			if (peer == -ENOTUNIQ)
				snprintf(why, sizeof(why), "processes other than pid %d connected "
					 "to the device's socket, its front end is not known: not "
					 "used", ctl->cur->pid);
			else if (peer < 0)
				snprintf(why, sizeof(why), "the device's front end is not known "
					 "(%s): not used", strerror(-peer));
			else
				snprintf(why, sizeof(why), "the device's front end is pid %d, the "
					 "preparation was for pid %d: not used", peer,
					 ctl->cur->pid);
			mlx5_lm_prereg_refuse(ctl, why);
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		char one[sizeof(why)];

		ok[i] = (uint8_t)region_ok(ctl->cur, &regions[i], mem->regions[i].fd, one,
					   sizeof(one), i);
		/* The first region that could not use it says why. */
		if (!ok[i] && why[0] == '\0')
			memcpy(why, one, sizeof(why));
		if (ok[i])
			used += regions[i].size;
		else
			fallback += regions[i].size;
	}
	if (whole && fallback != 0) {
		/* Not the whole table: left for DRIVER_OK, which says why. */
		why[0] = '\0';
		goto out;
	}
	if (used != 0 &&
	    mlx5_lm_mr_klm_check(dev, regions, n, ctl->cur, ok, &need, &limit) == -E2BIG) {
		uint64_t usual;

		memset(ok, 0, n);
		if (whole) {
			why[0] = '\0';
			goto out;
		}
		if (mlx5_lm_mr_klm_check(dev, regions, n, NULL, NULL, &usual, &limit) == -E2BIG)
			snprintf(why, sizeof(why), "the table needs %" PRIu64 " KLM entries even "
				 "without it, more than the %" PRIu64 " of the device's mkey, and "
				 "DRIVER_OK refuses it: not used", usual, limit);
		else
			snprintf(why, sizeof(why), "its chunks would cut the table into %" PRIu64
				 " KLM entries, more than the %" PRIu64 " of the device's mkey: "
				 "not used", need, limit);
		mlx5_lm_prereg_refuse(ctl, why);
		goto out;
	}
	ctl->st.used_bytes = used;
	ctl->st.fallback_bytes = fallback;
	if (used == 0) {
		mlx5_lm_prereg_refuse(ctl, why);
		goto out;
	}
	p = mlx5_lm_prereg_ref(ctl->cur);
	mlx5_lm_prereg_set_state(ctl, RTE_PMD_MLX5_LM_PREP_USED, why[0] != '\0' ? why : "");
	mlx5_lm_prereg_wake(ctl);
out:
	/* Why not used, for the log: a preparation or a cancel may write it once unlocked. */
	if (p == NULL && !whole && why[0] == '\0')
		snprintf(why, sizeof(why), "%s", ctl->st.reason);
	pthread_mutex_unlock(&ctl->lock);
	sort_regions(regions, ok, n);
	if (whole && p == NULL)
		return NULL;
	if (p != NULL)
		DRV_LOG(INFO, dev, "%s: %" PRIu64 " MiB of guest memory from the "
			"preparation, %" PRIu64 " MiB registered now%s%s",
			whole ? "SET_VRING_KICK" : "DRIVER_OK", used >> 20,
			fallback >> 20, why[0] != '\0' ? ": " : "", why);
	else if (why[0] != '\0')
		DRV_LOG(INFO, dev, "DRIVER_OK: the preparation is not used (%s)", why);
	return p;
}
