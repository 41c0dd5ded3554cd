/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cost-model slots, measured: with the cx6dx profile, N = cmd_slots blank
 * virtq creations (7 ms each in the model) issued from N threads at once
 * should take about one command's time, 2N about twice, because the
 * emulated firmware runs at most cmd_slots commands at a time. Prints a
 * table; exits non-zero only when the emulator rejects a command.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prm.h"
#include "emu.h"
#include "../lm_clock.h"

#define QUEUE_SIZE 256u
#define MAX_THREADS 1024u

static struct emu_dev *dev;
static uint8_t create_in[PRM_SIZE(virtq_cmd)];
static pthread_barrier_t start;

struct worker {
	pthread_t tid;
	uint32_t vq;
	int status;
};

static int
cmd(const void *in, size_t inlen, void *out, size_t outlen)
{
	if (emu_cmd(dev, in, inlen, out, outlen) != 0)
		return -1;
	return (int)PRM_GET(cmd_out, out, status);
}

static void *
create_one(void *arg)
{
	struct worker *w = arg;
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];

	pthread_barrier_wait(&start);
	w->status = cmd(create_in, sizeof(create_in), out, sizeof(out));
	w->vq = (uint32_t)PRM_GET(general_obj_out_cmd_hdr, out, obj_id);
	return NULL;
}

static int
destroy_vq(uint32_t id)
{
	uint8_t in[PRM_SIZE(general_obj_in_cmd_hdr)] = { 0 };
	uint8_t out[PRM_SIZE(general_obj_out_cmd_hdr)];

	PRM_SET(general_obj_in_cmd_hdr, in, opcode, PRM_CMD_DESTROY_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(general_obj_in_cmd_hdr, in, obj_id, id);
	return cmd(in, sizeof(in), out, sizeof(out));
}

/* n creations from n threads released together; wall time in ms, < 0 on failure. */
static double
round_ms(unsigned int n)
{
	struct worker *w = calloc(n, sizeof(*w));
	double t0, t1;
	unsigned int i;
	int bad = 0;

	if (w == NULL)
		return -1;
	pthread_barrier_init(&start, NULL, n + 1);
	for (i = 0; i < n; i++)
		pthread_create(&w[i].tid, NULL, create_one, &w[i]);
	pthread_barrier_wait(&start);
	t0 = lmt_now_ms_f();
	for (i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
	t1 = lmt_now_ms_f();
	pthread_barrier_destroy(&start);
	for (i = 0; i < n; i++) {
		if (w[i].status != 0) {
			fprintf(stderr, "bench_cost: CREATE_VIRTQ failed, status 0x%x\n",
				w[i].status);
			bad = 1;
		} else if (destroy_vq(w[i].vq) != 0) {
			fprintf(stderr, "bench_cost: DESTROY_VIRTQ %u failed\n", w[i].vq);
			bad = 1;
		}
	}
	free(w);
	return bad ? -1 : t1 - t0;
}

/* Blank queue (size, umems, pd): what the driver pre-creates at probe. */
static int
prepare(uint32_t umem_id[3], uint32_t *pd, void *bufs[3])
{
	/* The emulated CX6 Dx's umem parameters at power-up (emu_priv.h EMU_CAP_UMEM_*). */
	static const uint32_t a[3] = { 128, 96, 16 }, b[3] = { 4096, 8192, 12288 };
	uint8_t in[PRM_SIZE(alloc_pd_in)] = { 0 }, out[PRM_SIZE(create_out)];
	void *q = PRM_ADDR(virtq_cmd, create_in, q);
	uint32_t synd;
	int i;

	PRM_SET(alloc_pd_in, in, opcode, PRM_CMD_ALLOC_PD);
	if (cmd(in, sizeof(in), out, sizeof(out)) != 0)
		return -1;
	*pd = (uint32_t)PRM_GET(create_out, out, id);
	PRM_SET(general_obj_in_cmd_hdr, create_in, opcode, PRM_CMD_CREATE_GENERAL_OBJECT);
	PRM_SET(general_obj_in_cmd_hdr, create_in, obj_type, PRM_OBJ_VIRTIO_NET_Q);
	PRM_SET(virtio_q, q, queue_size, QUEUE_SIZE);
	PRM_SET(virtio_q, q, pd, *pd);
	for (i = 0; i < 3; i++) {
		size_t size = a[i] * QUEUE_SIZE + b[i];

		bufs[i] = calloc(1, size);
		if (bufs[i] == NULL || emu_umem_reg(dev, bufs[i], size, 0, &umem_id[i], &synd))
			return -1;
	}
	PRM_SET(virtio_q, q, umem_1_id, umem_id[0]);
	PRM_SET(virtio_q, q, umem_1_size, a[0] * QUEUE_SIZE + b[0]);
	PRM_SET(virtio_q, q, umem_2_id, umem_id[1]);
	PRM_SET(virtio_q, q, umem_2_size, a[1] * QUEUE_SIZE + b[1]);
	PRM_SET(virtio_q, q, umem_3_id, umem_id[2]);
	PRM_SET(virtio_q, q, umem_3_size, a[2] * QUEUE_SIZE + b[2]);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *profile = argc > 1 ? argv[1] : "cx6dx";
	struct emu_profile *p;
	uint32_t umem_id[3], pd, synd;
	unsigned int slots, counts[3], i;
	double ms[3];
	void *bufs[3] = { NULL, NULL, NULL };
	char err[256];
	int ret = 0;

	if (emu_profile_load(profile, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_cost: %s\n", err);
		return 1;
	}
	slots = emu_profile_cmd_slots(p);
	printf("profile %s: cmd_slots %u, CREATE_VIRTQ %.0f us\n", emu_profile_name(p), slots,
	       emu_profile_cost_us(p, "CREATE_VIRTQ", 0, 0));
	emu_profile_free(p);
	if (2 * slots > MAX_THREADS || 2 * slots > 256) {
		fprintf(stderr, "bench_cost: %u slots is more than this bench drives\n", slots);
		return 1;
	}
	dev = emu_dev_create("bench", profile, err, sizeof(err));
	if (dev == NULL) {
		fprintf(stderr, "bench_cost: %s\n", err);
		return 1;
	}
	if (prepare(umem_id, &pd, bufs) < 0) {
		fprintf(stderr, "bench_cost: setup failed\n");
		ret = 1;
		goto out;
	}
	/* Warm-up (thread stacks, first-touch pages): not reported. */
	if (round_ms(slots) < 0) {
		ret = 1;
		goto out;
	}
	counts[0] = slots;
	counts[1] = 2 * slots;
	counts[2] = 1;
	for (i = 0; i < 3; i++) {
		ms[i] = round_ms(counts[i]);
		if (ms[i] < 0) {
			ret = 1;
			goto out;
		}
	}
	printf("%8s %8s %10s %8s\n", "commands", "threads", "wall_ms", "ratio");
	for (i = 0; i < 3; i++)
		printf("%8u %8u %10.2f %8.2f\n", counts[i], counts[i], ms[i], ms[i] / ms[2]);
out:
	for (i = 0; i < 3; i++)
		if (bufs[i] != NULL && emu_umem_dereg(dev, umem_id[i], &synd) == 0)
			free(bufs[i]);
	if (ret == 0) {
		uint8_t in[PRM_SIZE(dealloc_pd_in)] = { 0 }, o[PRM_SIZE(create_out)];

		PRM_SET(dealloc_pd_in, in, opcode, PRM_CMD_DEALLOC_PD);
		PRM_SET(dealloc_pd_in, in, pd, pd);
		cmd(in, sizeof(in), o, sizeof(o));
	}
	if (emu_dev_destroy(dev) != 0)
		ret = 1;
	return ret;
}
