/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notification relay of one device, in one thread sleeping in epoll:
 *   - guest kicks (kickfd eventfds) become doorbell writes, for devices
 *     whose doorbell page is not mapped into the guest;
 *   - completion events of a queue's CQ become a write to its callfd;
 *   - OBJECT_CHANGE events (a queue went to ERR) start a recovery.
 * No work is polled: an idle device costs no CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "prm.h"
#include "mlx5_lm.h"

/* epoll cookies: the event channel, the stop eventfd, or a queue index. */
#define TAG_EVCH 0x10000u
#define TAG_STOP 0x10001u

struct mlx5_lm_notify {
	struct mlx5_lm_dev *dev;
	pthread_t thread;
	int epfd;
	int stopfd;
	int kickfd[MLX5_LM_MAX_VIRTQS]; /* registered in epfd, -1 when none */
	pthread_mutex_t lock;           /* guards kickfd[] and callfd[] */
	int callfd[MLX5_LM_MAX_VIRTQS];
};

void mlx5_lm_recover_queue(struct mlx5_lm_dev *dev, uint16_t index);

static void
relay_kick(struct mlx5_lm_notify *n, uint16_t index)
{
	struct mlx5_lm_dev *dev = n->dev;
	uint64_t v;

	if (read(n->kickfd[index], &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	/* All queues share one doorbell; the value written names the queue. */
	devx_db_ring(dev->db, (uint32_t)dev->caps.doorbell_bar_offset, index);
}

static void
relay_events(struct mlx5_lm_notify *n)
{
	struct mlx5_lm_dev *dev = n->dev;
	struct devx_event ev;
	uint64_t one = 1;

	while (devx_evch_read(dev->evch, &ev) > 0) {
		uint16_t index = (uint16_t)ev.cookie;
		int fd;

		if (index >= MLX5_LM_MAX_VIRTQS)
			continue;
		if (ev.type == PRM_EVENT_COMPLETION) {
			/*
			 * Credits back and the CQ re-armed before the call: a
			 * notification arriving meanwhile raises the next event.
			 */
			if (index < dev->nr_vq)
				mlx5_lm_eventq_drain(&dev->vq[index]);
			pthread_mutex_lock(&n->lock);
			fd = n->callfd[index];
			if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				DRV_LOG(DEBUG, dev, "queue %u: callfd write failed: %s", index,
					strerror(errno));
			pthread_mutex_unlock(&n->lock);
		} else if (ev.type == PRM_EVENT_OBJECT_CHANGE) {
			mlx5_lm_recover_queue(dev, index);
		}
	}
}

static void *
notify_thread(void *arg)
{
	struct mlx5_lm_notify *n = arg;
	struct epoll_event evs[32];

	for (;;) {
		int i, k = epoll_wait(n->epfd, evs, RTE_DIM(evs), -1);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			DRV_LOG(ERR, n->dev, "notification thread: epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < k; i++) {
			uint32_t tag = evs[i].data.u32;

			if (tag == TAG_STOP)
				return NULL;
			if (tag == TAG_EVCH) {
				relay_events(n);
				continue;
			}
			pthread_mutex_lock(&n->lock);
			if (tag < MLX5_LM_MAX_VIRTQS && n->kickfd[tag] >= 0)
				relay_kick(n, (uint16_t)tag);
			pthread_mutex_unlock(&n->lock);
		}
	}
	return NULL;
}

int
mlx5_lm_notify_start(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_notify *n = calloc(1, sizeof(*n));
	struct epoll_event ev = { .events = EPOLLIN };
	int i, ret = -EIO;

	if (n == NULL)
		return -ENOMEM;
	n->dev = dev;
	for (i = 0; i < MLX5_LM_MAX_VIRTQS; i++)
		n->kickfd[i] = n->callfd[i] = -1;
	pthread_mutex_init(&n->lock, NULL);
	n->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (n->epfd < 0)
		goto err_ep;
	n->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->stopfd < 0)
		goto err_stop;
	ev.data.u32 = TAG_STOP;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->stopfd, &ev) < 0)
		goto err_ctl;
	ev.data.u32 = TAG_EVCH;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, devx_evch_fd(dev->evch), &ev) < 0)
		goto err_ctl;
	if (pthread_create(&n->thread, NULL, notify_thread, n) != 0)
		goto err_ctl;
	dev->notify = n;
	return 0;
err_ctl:
	close(n->stopfd);
err_stop:
	close(n->epfd);
err_ep:
	DRV_LOG(ERR, dev, "cannot start the notification thread: %s", strerror(errno));
	pthread_mutex_destroy(&n->lock);
	free(n);
	return ret;
}

void
mlx5_lm_notify_stop(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_notify *n = dev->notify;
	uint64_t one = 1;

	if (n == NULL)
		return;
	if (write(n->stopfd, &one, sizeof(one)) < 0)
		DRV_LOG(ERR, dev, "cannot stop the notification thread: %s", strerror(errno));
	pthread_join(n->thread, NULL);
	close(n->stopfd);
	close(n->epfd);
	pthread_mutex_destroy(&n->lock);
	free(n);
	dev->notify = NULL;
}

int
mlx5_lm_notify_add_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_notify *n = dev->notify;
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = vq->index };
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	n->callfd[vq->index] = vq->callfd;
	if (n->kickfd[vq->index] >= 0 && n->kickfd[vq->index] != vq->kickfd) {
		/* vhost replaced the ring's kickfd (and closed the old one). */
		epoll_ctl(n->epfd, EPOLL_CTL_DEL, n->kickfd[vq->index], NULL);
		n->kickfd[vq->index] = -1;
	}
	if (n->kickfd[vq->index] < 0 && vq->kickfd >= 0) {
		if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, vq->kickfd, &ev) < 0) {
			ret = -errno;
			VQ_LOG(ERR, vq, "cannot watch kickfd %d: %s", vq->kickfd, strerror(errno));
		} else {
			n->kickfd[vq->index] = vq->kickfd;
		}
	}
	pthread_mutex_unlock(&n->lock);
	/* Kicks sent before we watched the fd must not be lost. */
	if (ret == 0 && vq->kickfd >= 0)
		devx_db_ring(dev->db, (uint32_t)dev->caps.doorbell_bar_offset, vq->index);
	return ret;
}

void
mlx5_lm_notify_del_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_notify *n = dev->notify;

	pthread_mutex_lock(&n->lock);
	if (n->kickfd[vq->index] >= 0)
		epoll_ctl(n->epfd, EPOLL_CTL_DEL, n->kickfd[vq->index], NULL);
	n->kickfd[vq->index] = -1;
	n->callfd[vq->index] = -1;
	pthread_mutex_unlock(&n->lock);
}
