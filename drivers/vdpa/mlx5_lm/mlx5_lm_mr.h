/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Guest memory registration.
 *
 * Each region of the vhost memory table is split into chunks of at most
 * mr_chunk_mb; a chunk is one memory region (the kernel's pin and mkey,
 * ibv_reg_mr_iova) whose addresses are guest-physical. One indirect (KLM) mkey then
 * covers the guest physical space, holes pointing at the null mkey; the
 * virtqs use that one. Chunks are created and destroyed in parallel on
 * the worker pool, because a large VM has few regions (QEMU sends 2) and
 * per-region parallelism alone buys nothing.
 */
#ifndef MLX5_LM_MR_H
#define MLX5_LM_MR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct mlx5_lm_dev;
struct devx_obj;
struct devx_mr;

/* One region of guest memory as vhost reports it. */
struct mlx5_lm_mem_region {
	uint64_t gpa;        /* guest physical address */
	uint64_t size;
	uint64_t hva;        /* host virtual address of the mapping */
	uint64_t page_size;  /* backing page size (4 KiB, 2 MiB, 1 GiB) */
	/*
	 * Which memory: the backing file (st_dev, st_ino of the region's fd)
	 * and the offset of gpa in it. A registration pins pages, not
	 * addresses: it is reused only for the same file and offset, never
	 * on address equality (another front end's memory may be mapped at
	 * the same host address). file_ino 0: unknown, never reused.
	 * (st_dev, st_ino) alone do not name the pages: a registration is
	 * reused only while its files are unchanged (mlx5_lm_mr.c, "files").
	 */
	uint64_t file_dev;
	uint64_t file_ino;
	uint64_t file_off;
	/*
	 * vhost's fd of the region, valid while its memory table is (-1:
	 * none): the file a new registration watches. Not part of the
	 * identity (mlx5_lm_mr_same_table).
	 */
	int fd;
	/*
	 * The file's filesystem writes dirty pages back (ext4, xfs...: not
	 * tmpfs, memfd or hugetlbfs), which Linux 6.5 and later do not pin for
	 * a device's writes: said when its registration fails.
	 */
	uint8_t fs_writeback;
};

struct mlx5_lm_mr;

/*
 * fd's backing page size (hugetlbfs: its huge page; else 4 KiB) and
 * whether its filesystem writes dirty pages back (not tmpfs, memfd,
 * ramfs or hugetlbfs), which Linux 6.5 and later do not pin for a
 * device's writes (mm/gup.c writable_file_mapping_allowed).
 */
void mlx5_lm_file_fs(int fd, uint64_t *page_size, uint8_t *writeback);
/*
 * What may have made the kernel refuse to pin memory, for the end of a
 * log line: the memlock limit (err -ENOMEM), or a file with writeback.
 * "" when neither.
 */
const char *mlx5_lm_pin_hint(int err, int writeback);
struct mlx5_lm_prereg;

/* A registration's watch on one region's file (mlx5_lm_mr.c, "files"). */
struct mlx5_lm_mr_watch {
	int wd;              /* inotify watch descriptor, -1: not watched */
	uint64_t events;     /* the file's event count when the watch began */
};

struct mlx5_lm_mr_chunk {
	struct mlx5_lm_mr *mr;
	uint64_t gpa;
	uint64_t size;
	uint64_t hva;
	uint32_t region;     /* index in the table, for messages */
	uint32_t log_page_size;
	struct devx_mr *mr_reg; /* the memory region (ibv_reg_mr_iova) */
	uint64_t iova;       /* where gpa lies in mr_reg's address space */
	uint8_t borrowed;    /* mr_reg is a preparation's (mlx5_lm_prereg.h), not ours */
	int err;
};

struct mlx5_lm_mr {
	struct mlx5_lm_dev *dev;
	uint32_t nregions;
	struct mlx5_lm_mem_region *regions;
	uint32_t nchunks;
	struct mlx5_lm_mr_chunk *chunks;
	struct devx_obj *indirect;   /* the KLM mkey the virtqs use */
	uint32_t nklm;
	uint64_t gpa_end;            /* indirect covers [0, gpa_end) */
	double create_ms;
	double destroy_ms;           /* measured by whoever destroyed it */
	/* A mapping the driver made for it (a log it mapped itself): unmapped with it. */
	void *own_map;
	size_t own_map_len;
	/* The preparation whose chunks it borrows (a reference), or NULL. */
	struct mlx5_lm_prereg *prereg;
	/* Its files changed since it was made: released, never taken back (reclaim). */
	uint8_t stale;
	/* One per region (sorted as regions): whether its file still holds the pages. */
	struct mlx5_lm_mr_watch *watch;
	uint64_t watch_overflows;    /* events the instance had lost when it began */
	/* Garbage list linkage (see mlx5_lm_mr_release), guarded by the GC lock. */
	TAILQ_ENTRY(mlx5_lm_mr) gc_next;
	double gc_deadline_ms;
	int gc_user_logged;          /* "still named by a queue" was logged */
};

/*
 * Register a memory table on dev (regions sorted or not; they must not
 * overlap). On failure everything created is destroyed and a negative
 * errno is returned with an error logged that names the chunk.
 */
int mlx5_lm_mr_create(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
		      uint32_t nregions, struct mlx5_lm_mr **out);
/*
 * The same, regions sorted by gpa, with the regions whose ok[i] is set
 * taken from preparation prep (mlx5_lm_prereg_take): on success the
 * registration holds the caller's reference on prep, on failure it is
 * dropped.
 */
int mlx5_lm_mr_create_prepared(struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
			       uint32_t nregions, struct mlx5_lm_prereg *prep, const uint8_t *ok,
			       struct mlx5_lm_mr **out);
/*
 * The KLM entries the registration of this table would make (*need), with
 * the regions whose ok[i] is set cut into slices of preparation prep's
 * chunks, against the most the device's mkey takes (*limit). A prepared
 * range that begins or ends inside a region adds an entry to it: a table
 * that fits as usual may not fit prepared. 0 when it fits, -E2BIG when
 * not, -EINVAL for a table the registration refuses anyway.
 */
int mlx5_lm_mr_klm_check(const struct mlx5_lm_dev *dev, const struct mlx5_lm_mem_region *regions,
			 uint32_t n, const struct mlx5_lm_prereg *prep, const uint8_t *ok,
			 uint64_t *need, uint64_t *limit);
/* Destroy a registration (chunks in parallel). Returns 0 or the first error. */
int mlx5_lm_mr_destroy(struct mlx5_lm_mr *mr);
/* The key the virtqs put in virtio_q_mkey. */
uint32_t mlx5_lm_mr_mkey(const struct mlx5_lm_mr *mr);
/*
 * 1 when mr registers exactly this table: the same guest and host ranges
 * over the same memory (file and offset known and equal for every region,
 * each file watched since before mr pinned its pages and unchanged since:
 * not truncated, punched, written with write(2), nor freed).
 */
int mlx5_lm_mr_same_table(const struct mlx5_lm_mr *mr, const struct mlx5_lm_mem_region *regions,
			  uint32_t nregions);

/*
 * Deferred deletion. Releasing a registration costs the caller almost
 * nothing: it joins a process-wide garbage list and a background thread
 * destroys it mr_gc_ms later (mr_gc_ms=0: destroyed in the caller). Until
 * then a DRIVER_OK bringing the identical table takes it back
 * (mlx5_lm_mr_reclaim) instead of registering again - a reconnect or a
 * reset without memory change pays nothing for memory.
 */
void mlx5_lm_mr_release(struct mlx5_lm_mr *mr);
struct mlx5_lm_mr *mlx5_lm_mr_reclaim(struct mlx5_lm_dev *dev,
				      const struct mlx5_lm_mem_region *regions, uint32_t nregions);
/*
 * Work for the garbage thread at once, not mr_gc_ms later: a preparation's
 * last reference deregisters every chunk of it (seconds for a large VM),
 * which neither vhost's thread nor a holder of dev->lock or of the
 * preparation's lock may wait for (mlx5_lm_prereg_put). Embedded in what
 * fn frees, so that handing it over cannot fail.
 */
struct mlx5_lm_gc_work {
	TAILQ_ENTRY(mlx5_lm_gc_work) next;  /* guarded by the GC lock */
	struct mlx5_lm_dev *dev;
	/* background: on the garbage thread (0: the removal's, mlx5_lm_mr_gc_flush). */
	void (*fn)(void *arg, int background);
	void *arg;
};
void mlx5_lm_mr_gc_defer(struct mlx5_lm_gc_work *w);
/*
 * Destroy now every released registration of dev, and run its work
 * handed to the garbage thread (device removal).
 */
void mlx5_lm_mr_gc_flush(struct mlx5_lm_dev *dev);
/* Start (first device) / stop (last device) the garbage thread. */
int mlx5_lm_mr_gc_get(void);
void mlx5_lm_mr_gc_put(void);
/* 1 while the last put joins the thread (tests: a get then waits for it). */
unsigned int mlx5_lm_mr_gc_joining(void);
/*
 * Wait until the garbage thread has destroyed every released registration
 * of dev and run its work, at most timeout_ms. 0, or -ETIMEDOUT.
 */
int mlx5_lm_mr_gc_wait(struct mlx5_lm_dev *dev, unsigned int timeout_ms);
/* Time the last destroyed registration of dev took to destroy (ms). */
double mlx5_lm_mr_gc_last_destroy_ms(struct mlx5_lm_dev *dev);

#endif /* MLX5_LM_MR_H */
