/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpdk-test-lm migrate: the guest's traffic generator. One thread drives
 * the virtio-net drivers of every NIC of the VM: it posts TX frames on
 * every queue pair and keeps the RX rings full; the emulated device loops
 * each frame back to one of its own RX queues (RSS steering), where the
 * driver checks its sequence number and payload.
 *
 * The number of frames sent and not yet received is bounded per NIC by
 * half a ring (split evenly between its pairs): RSS may steer every frame
 * to one RX queue, and with at most half of its buffers outstanding that
 * queue always has a free buffer, so the device never has to drop a frame
 * for want of one. A drop would be indistinguishable from a loss caused by
 * the migration.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "migrate_int.h"

enum gen_mode {
	GEN_IDLE,
	GEN_RUN,
	GEN_QUIESCE,
	GEN_EXIT,
};

struct mig_gen {
	pthread_t thread;
	pthread_mutex_t lock;      /* guards mode and parked */
	pthread_cond_t cond;
	enum gen_mode mode;
	bool parked;               /* the thread is idle and touches no guest */
	unsigned int n;
	struct vu_guest *g[MIG_MAX_DEVICES];
	/* Frames sent and not yet back, per pair: pairs x window <= half a ring. */
	unsigned int window[MIG_MAX_DEVICES];
};

double
mig_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void
sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* One round over every guest; returns the work done (frames posted or reaped). */
static unsigned int
gen_pass(struct mig_gen *gen, bool tx)
{
	unsigned int i, qp, work = 0;

	for (i = 0; i < gen->n; i++) {
		struct vu_guest *g = gen->g[i];
		unsigned int nqp = vu_guest_cfg(g)->queue_pairs;
		int ret;

		/*
		 * Each pair gets its own share of the NIC's budget: a pair that
		 * drew from a shared pool first could starve the others.
		 */
		for (qp = 0; tx && qp < nqp; qp++) {
			uint64_t out = vu_guest_lost(g, (int)qp);

			if (out >= gen->window[i])
				continue;
			ret = vu_guest_tx(g, qp, gen->window[i] - (unsigned int)out);
			if (ret > 0)
				work += (unsigned int)ret;
		}
		ret = vu_guest_poll(g);
		if (ret > 0)
			work += (unsigned int)ret;
	}
	return work;
}

static bool
gen_drained(struct mig_gen *gen)
{
	unsigned int i;

	for (i = 0; i < gen->n; i++)
		if (vu_guest_tx_inflight(gen->g[i], -1) != 0 || vu_guest_lost(gen->g[i], -1) != 0)
			return false;
	return true;
}

static void *
gen_main(void *arg)
{
	struct mig_gen *gen = arg;

	pthread_mutex_lock(&gen->lock);
	for (;;) {
		enum gen_mode mode;
		unsigned int work;

		while (gen->mode == GEN_IDLE) {
			gen->parked = true;
			pthread_cond_broadcast(&gen->cond);
			pthread_cond_wait(&gen->cond, &gen->lock);
		}
		if (gen->mode == GEN_EXIT)
			break;
		gen->parked = false;
		mode = gen->mode;
		pthread_mutex_unlock(&gen->lock);
		work = gen_pass(gen, mode == GEN_RUN);
		if (mode == GEN_QUIESCE && work == 0 && gen_drained(gen)) {
			pthread_mutex_lock(&gen->lock);
			if (gen->mode == GEN_QUIESCE)
				gen->mode = GEN_IDLE;
			continue;
		}
		/* Two CPUs may be all there is: leave them to the device threads. */
		if (work == 0)
			sleep_us(100);
		pthread_mutex_lock(&gen->lock);
	}
	gen->parked = true;
	pthread_cond_broadcast(&gen->cond);
	pthread_mutex_unlock(&gen->lock);
	return NULL;
}

int
mig_gen_create(struct mig_gen **out, struct vu_guest *const *g, unsigned int n)
{
	struct mig_gen *gen;
	unsigned int i;
	int ret;

	if (n == 0 || n > MIG_MAX_DEVICES)
		return -EINVAL;
	gen = calloc(1, sizeof(*gen));
	if (gen == NULL)
		return -ENOMEM;
	gen->n = n;
	for (i = 0; i < n; i++) {
		const struct vu_guest_cfg *cfg = vu_guest_cfg(g[i]);

		gen->g[i] = g[i];
		gen->window[i] = cfg->ring_size / 2 / cfg->queue_pairs;
		if (gen->window[i] == 0)
			gen->window[i] = 1;
	}
	pthread_mutex_init(&gen->lock, NULL);
	pthread_cond_init(&gen->cond, NULL);
	gen->mode = GEN_IDLE;
	ret = pthread_create(&gen->thread, NULL, gen_main, gen);
	if (ret != 0) {
		pthread_cond_destroy(&gen->cond);
		pthread_mutex_destroy(&gen->lock);
		free(gen);
		return -ret;
	}
	*out = gen;
	return 0;
}

void
mig_gen_destroy(struct mig_gen *gen)
{
	if (gen == NULL)
		return;
	pthread_mutex_lock(&gen->lock);
	gen->mode = GEN_EXIT;
	pthread_cond_broadcast(&gen->cond);
	pthread_mutex_unlock(&gen->lock);
	pthread_join(gen->thread, NULL);
	pthread_cond_destroy(&gen->cond);
	pthread_mutex_destroy(&gen->lock);
	free(gen);
}

void
mig_gen_run(struct mig_gen *gen)
{
	pthread_mutex_lock(&gen->lock);
	gen->mode = GEN_RUN;
	gen->parked = false;
	pthread_cond_broadcast(&gen->cond);
	pthread_mutex_unlock(&gen->lock);
}

void
mig_gen_idle(struct mig_gen *gen)
{
	pthread_mutex_lock(&gen->lock);
	gen->mode = GEN_IDLE;
	pthread_cond_broadcast(&gen->cond);
	while (!gen->parked)
		pthread_cond_wait(&gen->cond, &gen->lock);
	pthread_mutex_unlock(&gen->lock);
}

int
mig_gen_quiesce(struct mig_gen *gen, int timeout_ms)
{
	double deadline = mig_now_ms() + timeout_ms;
	bool drained;

	pthread_mutex_lock(&gen->lock);
	if (gen->mode == GEN_IDLE && gen->parked) {
		/* Parked already: drain from here (nothing else touches the guests). */
		pthread_mutex_unlock(&gen->lock);
		while (!gen_drained(gen) && mig_now_ms() < deadline)
			if (gen_pass(gen, false) == 0)
				sleep_us(100);
		return gen_drained(gen) ? 0 : -ETIMEDOUT;
	}
	gen->mode = GEN_QUIESCE;
	pthread_cond_broadcast(&gen->cond);
	pthread_mutex_unlock(&gen->lock);
	/* The thread parks itself once drained; a bounded wait for that. */
	for (;;) {
		pthread_mutex_lock(&gen->lock);
		drained = gen->mode == GEN_IDLE && gen->parked;
		pthread_mutex_unlock(&gen->lock);
		if (drained || mig_now_ms() >= deadline)
			break;
		sleep_us(200);
	}
	mig_gen_idle(gen);
	return drained ? 0 : -ETIMEDOUT;
}

int
mig_gen_wait_flow(struct mig_gen *gen, uint64_t frames, int timeout_ms)
{
	uint64_t *target;
	double deadline = mig_now_ms() + timeout_ms;
	unsigned int i, qp, k, total = 0;
	int ret = -ETIMEDOUT;

	for (i = 0; i < gen->n; i++)
		total += vu_guest_cfg(gen->g[i])->queue_pairs;
	target = calloc(total, sizeof(*target));
	if (target == NULL)
		return -ENOMEM;
	for (i = 0, k = 0; i < gen->n; i++) {
		for (qp = 0; qp < vu_guest_cfg(gen->g[i])->queue_pairs; qp++, k++) {
			struct vu_guest_stats st;

			vu_guest_stats(gen->g[i], (int)qp, &st);
			target[k] = st.rx_unique + frames;
		}
	}
	/* rx_unique of pair q counts q's frames that came back, whatever RX queue took them. */
	while (mig_now_ms() < deadline) {
		bool all = true;

		for (i = 0, k = 0; i < gen->n && all; i++) {
			for (qp = 0; qp < vu_guest_cfg(gen->g[i])->queue_pairs; qp++, k++) {
				struct vu_guest_stats st;

				vu_guest_stats(gen->g[i], (int)qp, &st);
				if (st.rx_unique < target[k]) {
					all = false;
					break;
				}
			}
		}
		if (all) {
			ret = 0;
			break;
		}
		sleep_us(1000);
	}
	free(target);
	return ret;
}
