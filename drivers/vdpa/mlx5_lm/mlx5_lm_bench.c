/* SPDX-License-Identifier: BSD-3-Clause */
/* PMD-specific benchmark entry points (rte_pmd_mlx5_lm.h). */
#include <errno.h>
#include <string.h>

#include "mlx5_lm.h"
#include "mlx5_lm_mr.h"
#include "devx_emu.h"


/* Host address the registration must give for guest page gpa; 0 if outside. */
static uint64_t
expected_hva(const struct rte_pmd_mlx5_lm_region *r, unsigned int n, uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (gpa >= r[i].gpa && gpa < r[i].gpa + r[i].size)
			return r[i].hva + (gpa - r[i].gpa);
	return 0;
}

static void
check_page(struct mlx5_lm_dev *dev, struct mlx5_lm_mr *mr,
	   const struct rte_pmd_mlx5_lm_region *r, unsigned int n, uint64_t gpa,
	   struct rte_pmd_mlx5_lm_mr_result *res)
{
	void *host = NULL;
	uint64_t want = expected_hva(r, n, gpa);

	res->checked_pages++;
	if (devx_emu_translate(dev->devx, mlx5_lm_mr_mkey(mr), gpa, 8, &host) == 0 &&
	    want != 0 && (uint64_t)(uintptr_t)host == want)
		res->verified_pages++;
}

static int
mr_bench(struct mlx5_lm_dev *dev, const struct rte_pmd_mlx5_lm_region *regions,
	 unsigned int nregions, unsigned int sample, struct rte_pmd_mlx5_lm_mr_result *res)
{
	struct mlx5_lm_mem_region regs[8];
	struct mlx5_lm_mr *mr;
	uint64_t total = 0, step, off;
	double t0;
	unsigned int i;
	int ret;

	if (nregions == 0 || nregions > RTE_DIM(regs))
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	/* No file identity: a bench registration is never taken back. */
	memset(regs, 0, sizeof(regs));
	for (i = 0; i < nregions; i++) {
		regs[i].gpa = regions[i].gpa;
		regs[i].size = regions[i].size;
		regs[i].hva = regions[i].hva;
		regs[i].page_size = regions[i].page_size;
		regs[i].fd = -1;
		total += regions[i].size;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->running) {
		pthread_mutex_unlock(&dev->lock);
		return -EBUSY;
	}
	ret = mlx5_lm_mr_create(dev, regs, nregions, &mr);
	if (ret < 0)
		goto out;
	res->create_ms = mr->create_ms;
	res->chunks = mr->nchunks;
	res->klm_entries = mr->nklm;
	if (devx_is_emulated(dev->devx)) {
		for (i = 0; i < mr->nchunks; i++) {
			const struct mlx5_lm_mr_chunk *c = &mr->chunks[i];
			uint64_t page = 1ull << c->log_page_size;

			check_page(dev, mr, regions, nregions, c->gpa, res);
			check_page(dev, mr, regions, nregions, c->gpa + c->size - page, res);
		}
		/* A spread sample over the whole table, region by region. */
		step = sample ? total / sample : 0;
		for (i = 0; step && i < nregions; i++)
			for (off = step / 2; off < regions[i].size; off += step)
				check_page(dev, mr, regions, nregions,
					   regions[i].gpa + (off & ~(regions[i].page_size - 1)), res);
	}
	t0 = mlx5_lm_now_ms();
	mlx5_lm_mr_release(mr);
	res->close_path_ms = mlx5_lm_now_ms() - t0;
	mlx5_lm_mr_gc_wait(dev, 600000);
	res->destroy_ms = mlx5_lm_mr_gc_last_destroy_ms(dev);
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int
rte_pmd_mlx5_lm_mr_bench(const char *name, const struct rte_pmd_mlx5_lm_region *regions,
			 unsigned int nregions, unsigned int sample,
			 struct rte_pmd_mlx5_lm_mr_result *res)
{
	struct mlx5_lm_dev *dev = mlx5_lm_dev_get(name);
	int ret;

	if (dev == NULL)
		return -ENODEV;
	ret = mr_bench(dev, regions, nregions, sample, res);
	mlx5_lm_dev_put(dev);
	return ret;
}
