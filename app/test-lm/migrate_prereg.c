/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate, stage prereg: what an operator's migration hook
 * does once the destination QEMU runs with -incoming and has shared its
 * guest RAM - the destination devices prepared with that memory's file
 * while the source still runs - so that DRIVER_OK registers only the
 * indirect mkey. The front end is this process: the preparation names it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rte_pmd_mlx5_lm.h"
#include "migrate_vm.h"

/* Bounded wait for one device's preparation (256 GiB under cx6dx takes about a second). */
#define PREP_WAIT_MS 120000
/* --service: between two device_get of a preparation in progress (before the window). */
#define PREP_POLL_NS 5000000

/*
 * --service: what an operator's hook does, device_prepare with the front
 * end's process id on the destination's service (this process: one VM, so
 * every shared memory file it maps is that VM's), then device_get until the
 * worker's PMD has it ready. Its files include the dirty log's: prepared
 * and not used, released as any unused preparation.
 */
static int
svc_prepare(struct mig_ctx *x)
{
	double start = 0, end = 0;
	struct mig_svc_prep p;
	unsigned int k;

	mig_phase_begin(x);
	x->r->prereg = true;
	x->r->prep_bytes = 0;
	for (k = 0; k < x->n; k++)
		if (mig_svc_dev_prepare(x->o->svc, x->dst[k].name, getpid()) < 0) {
			mig_fail(x, "%s: device_prepare refused (the service's reason above)",
				 x->dst[k].name);
			return -1;
		}
	for (k = 0; k < x->n; k++) {
		const struct timespec pause = { .tv_nsec = PREP_POLL_NS };
		double deadline = mig_now_ms() + PREP_WAIT_MS;

		for (;;) {
			if (mig_svc_dev_prep(x->o->svc, x->dst[k].name, &p) < 0) {
				mig_fail(x, "%s: device_get failed (the service's reason above)",
					 x->dst[k].name);
				return -1;
			}
			if (strcmp(p.state, "ready") == 0)
				break;
			if (strcmp(p.state, "preparing") != 0 || mig_now_ms() > deadline) {
				mig_fail(x, "%s: preparation %s (%s)", x->dst[k].name,
					 strcmp(p.state, "preparing") == 0 ? "not done in time" :
					 p.state, p.reason);
				return -1;
			}
			nanosleep(&pause, NULL);
		}
		if (k == 0 || p.start_ms < start)
			start = p.start_ms;
		if (k == 0 || p.end_ms > end)
			end = p.end_ms;
		x->r->prep_bytes += p.bytes;
	}
	x->r->prep_start_ms = start;
	x->r->prep_end_ms = end;
	x->r->prep_ms = end - start;
	mig_phase_end(x, "prereg", "%u destinations prepared through the service (device_prepare "
		      "with this process's pid) in %.1f ms, traffic on the sources", x->n,
		      x->r->prep_ms);
	return 0;
}

int
mig_vm_prepare(struct mig_ctx *x)
{
	struct rte_pmd_mlx5_lm_prep_region reg = {
		.fd = x->mem->fd, .offset = 0, .size = x->mem->size,
	};
	struct rte_pmd_mlx5_lm_prep_status st;
	double start = 0, end = 0;
	unsigned int k;
	int ret;

	if (x->o->svc != NULL)
		return svc_prepare(x);
	mig_phase_begin(x);
	x->r->prereg = true;
	for (k = 0; k < x->n; k++) {
		ret = rte_pmd_mlx5_lm_prepare(x->dst[k].name, getpid(), &reg, 1);
		if (ret < 0) {
			mig_fail(x, "%s: preparation refused: %s", x->dst[k].name, strerror(-ret));
			return -1;
		}
	}
	/* The sources' traffic runs meanwhile (the generator is on until the pause). */
	for (k = 0; k < x->n; k++) {
		ret = rte_pmd_mlx5_lm_prepare_wait(x->dst[k].name, PREP_WAIT_MS);
		if (ret == 0)
			ret = rte_pmd_mlx5_lm_prepare_status(x->dst[k].name, &st);
		if (ret == 0 && st.state != RTE_PMD_MLX5_LM_PREP_READY)
			ret = st.error < 0 ? st.error : -EIO;
		if (ret < 0) {
			mig_fail(x, "%s: preparation failed: %s (%s)", x->dst[k].name,
				 strerror(-ret), ret == -ETIMEDOUT ? "not done in time" : st.reason);
			return -1;
		}
		if (k == 0 || st.start_ms < start)
			start = st.start_ms;
		if (k == 0 || st.end_ms > end)
			end = st.end_ms;
	}
	x->r->prep_start_ms = start;
	x->r->prep_end_ms = end;
	x->r->prep_ms = end - start;
	x->r->prep_bytes = (uint64_t)x->n * x->mem->size;
	mig_phase_end(x, "prereg", "%u destinations prepared with %" PRIu64 " GiB each in %.1f ms, "
		      "traffic on the sources", x->n, x->mem->size >> 30, x->r->prep_ms);
	return 0;
}

int
mig_vm_prepare_check(struct mig_ctx *x, double t0)
{
	struct rte_pmd_mlx5_lm_prep_status st;
	unsigned int k;

	x->r->prep_used_bytes = 0;
	for (k = 0; k < x->n && x->o->svc != NULL; k++) {
		struct mig_svc_prep p;

		/* Asked once the window is over, as the workers' timings are. */
		if (mig_svc_dev_prep(x->o->svc, x->dst[k].name, &p) < 0) {
			mig_fail(x, "%s: device_get failed (the service's reason above)",
				 x->dst[k].name);
			return -1;
		}
		if (strcmp(p.state, "used") != 0 || p.fallback_bytes != 0) {
			mig_fail(x, "%s: the preparation did not serve the memory table (%s: %s)",
				 x->dst[k].name, p.state, p.reason);
			return -1;
		}
		x->r->prep_used_bytes += p.used_bytes;
	}
	for (k = 0; k < x->n && x->o->svc == NULL; k++) {
		if (rte_pmd_mlx5_lm_prepare_status(x->dst[k].name, &st) < 0 ||
		    st.state != RTE_PMD_MLX5_LM_PREP_USED || st.fallback_bytes != 0) {
			mig_fail(x, "%s: the preparation did not serve the memory table (state %d: "
				 "%s)", x->dst[k].name, st.state, st.reason);
			return -1;
		}
		x->r->prep_used_bytes += st.used_bytes;
	}
	/* Both clocks are CLOCK_MONOTONIC milliseconds. */
	x->r->prep_start_ms -= t0;
	x->r->prep_end_ms -= t0;
	return 0;
}
