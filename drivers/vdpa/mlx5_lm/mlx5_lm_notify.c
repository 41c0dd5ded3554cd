/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notification relay of one device, in one thread sleeping in epoll:
 *   - guest kicks (kickfd eventfds) become doorbell writes, for devices
 *     whose doorbell page is not mapped into the guest;
 *   - completion events of a queue's CQ become a write to its callfd;
 *   - OBJECT_CHANGE events (a queue went to ERR) start a recovery.
 *
 * How completions reach the callfds is the devarg event_mode, with DPDK
 * vdpa/mlx5's meanings (doc/guides/vdpadevs/mlx5.rst):
 *   2 (default here) interrupts: every CQ is armed, each event drains
 *     its CQ, re-arms it and writes the callfd. An idle device costs no CPU.
 *   1 fixed timer: the thread polls every queue's CQ each event_us
 *     microseconds (0: as fast as it can, yielding) and writes the callfd
 *     of the queues that completed something;
 *   0 dynamic timer: the same, the period growing by event_us while
 *     nothing completes and divided by the largest count of completions
 *     a poll found when traffic comes.
 * In both timer modes no_traffic_time empty polls in a row arm every CQ
 * and put the thread to sleep until the next completion event: an idle
 * device still costs no CPU. The thread runs on event_core when given.
 *
 * The kick and call fds are the front end's: it chose their flags and may
 * share one between rings, or hand over a pipe nobody reads. The relay
 * keeps its own duplicate of each (vhost closes its copy whenever the
 * front end replaces one or stops a ring: a number kept past that could
 * name another connection's file), and reads and writes them without
 * ever blocking and without holding a lock that vhost's thread takes:
 * only this thread closes the duplicates, so a number it read under the
 * lock stays its own until it closes it. One wait is left that the relay
 * cannot rule out: an eventfd's write takes no RWF_NOWAIT (Linux 6.18 still),
 * so a call fd is written after poll says it has room, and a front end that
 * keeps the fd blocking and fills its counter in between holds the thread
 * in that write until it reads the fd again: its own device's relay only
 * (a kernel without RWF_NOWAIT for reads has the same with a kick emptied).
 * The thread accepts cancellation in that read or write alone, and the
 * device's removal cancels it there (mlx5_lm_notify_stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "prm.h"
#include "mlx5_lm.h"
#include "mlx5_lm_pool.h"
#include "mlx5_lm_test.h"

/* How long a removal waits for the thread before cancelling it (mlx5_lm_notify_stop). */
#define NOTIFY_STOP_S 1

/* Longest polling period of the dynamic timer mode. */
#define MAX_DELAY_US 1000000u

/*
 * epoll cookies (data.u64): the event channel, the stop and wake eventfds,
 * or a kick fd's: its queue index in the low 32 bits and its generation
 * (kickgen[]) in the high 32 bits.
 */
#define TAG_EVCH 0x10000u
#define TAG_STOP 0x10001u
#define TAG_WAKE 0x10002u

struct mlx5_lm_notify {
	struct mlx5_lm_dev *dev;
	pthread_t thread;
	int epfd;
	int stopfd;
	int wakefd;                     /* retired duplicates to close */
	pthread_mutex_t lock;           /* guards kickfd[], callfd[], retired[] */
	/* Our duplicates of the front end's fds, -1 when none; kickfd[] are in epfd. */
	int kickfd[MLX5_LM_MAX_VIRTQS];
	int callfd[MLX5_LM_MAX_VIRTQS];
	/*
	 * The generation each kickfd[] was watched with (from kicks_watched):
	 * an event epoll_wait returned before the slot's fd was replaced names
	 * the old generation, and is not taken for the new fd's.
	 */
	uint32_t kickgen[MLX5_LM_MAX_VIRTQS];
	uint32_t kicks_watched;
	/*
	 * The thread's own: the call fd number whose write took no RWF_NOWAIT
	 * (an eventfd), -1 when none. Its next signals skip the attempt. A
	 * number reused for another kind of file only costs that file the
	 * fallback, which is safe for any file.
	 */
	int call_plain[MLX5_LM_MAX_VIRTQS];
	/*
	 * Duplicates out of use, closed by the thread. capretired is kept at
	 * least nretired + nlive (the fds in kickfd[] and callfd[]): retiring
	 * never allocates, the room is taken when a duplicate is added
	 * (reserve_retired), before anything is replaced.
	 */
	int *retired;
	unsigned int nretired, capretired, nlive;
	/* Timer event modes, the thread's own state. */
	/* Test seam (mlx5_lm_notify_race): between a ring fd's check and its use. */
	void (*race)(uint16_t index, int fd, int wr, void *arg);
	void *race_arg;
	int timer;                      /* event_mode 0 or 1 */
	int polling;                    /* polling; 0: CQs armed, waiting for an event */
	uint32_t delay_us;              /* current polling period */
	uint32_t idle;                  /* empty polls in a row */
};

/*
 * The read or write of a ring's fd that poll said would not block, and
 * that blocks all the same if the front end raced it (above): the only
 * place where the thread can be cancelled. It holds no lock here.
 */
#ifdef __SANITIZE_ADDRESS__
/*
 * A cancellation unwinds the thread's frames without their epilogues: ASan
 * leaves their redzones poisoned, and the thread's own exit then trips on
 * them (a false stack-buffer-underflow in sigaltstack). Unpoisoned as a
 * longjmp would be.
 */
static void
cancel_unpoison(void *arg)
{
	(void)arg;
	__asan_handle_no_return();
}
#endif

static ssize_t
ring_fd_io(struct mlx5_lm_notify *n, uint16_t index, int fd, void *buf, size_t len, int wr)
{
	void (*race)(uint16_t, int, int, void *) = __atomic_load_n(&n->race, __ATOMIC_ACQUIRE);
	ssize_t r;
	int old;

	if (race != NULL)
		race(index, fd, wr, __atomic_load_n(&n->race_arg, __ATOMIC_ACQUIRE));
#ifdef __SANITIZE_ADDRESS__
	pthread_cleanup_push(cancel_unpoison, NULL);
#endif
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	r = wr ? write(fd, buf, len) : read(fd, buf, len);
	pthread_setcancelstate(old, NULL);
#ifdef __SANITIZE_ADDRESS__
	pthread_cleanup_pop(0);
#endif
	return r;
}

/*
 * Read a kick's count without blocking, whatever flags the front end gave
 * its fd: RWF_NOWAIT (eventfd and pipes support it); a kernel without it
 * is asked first whether there is anything to read. Read until it would
 * block, at most KICK_READS times: 0 when drained (or interrupted: epoll
 * says so again), or why the relay must let go of the fd, since epoll
 * reports it readable at every wait whatever is read (the thread would spin
 * on it, taking a CPU from every other device):
 *   -ENODATA: a read found its end (a socket whose peer shut its writing
 *     side: EPOLLIN, no EPOLLHUP; a pipe whose writer is gone);
 *   -EBUSY: still readable after KICK_READS reads (an EFD_SEMAPHORE eventfd
 *     gives 1 per read, from a count of up to 2^64 - 2);
 *   another negative errno: the read fails, consuming nothing (a listening
 *     socket with a connection pending: EINVAL).
 * KICK_READS of KICK_READ_BYTES empty a pipe filled to its default 64 KiB:
 * 8192 kicks of 8 bytes, more than a front end sends between two waits.
 */
#define KICK_READS 64
#define KICK_READ_BYTES 1024

static int
fd_drain_nowait(struct mlx5_lm_notify *n, uint16_t index, int fd)
{
	uint64_t buf[KICK_READ_BYTES / sizeof(uint64_t)];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned int i;
	ssize_t r;

	for (i = 0; i < KICK_READS; i++) {
		r = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (r < 0 && errno == EOPNOTSUPP) {
			if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
				return 0;
			r = ring_fd_io(n, index, fd, buf, sizeof(buf), 0);
		}
		if (r == 0)
			return -ENODATA;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (r < 0)
			return -errno;
	}
	return -EBUSY;
}

/*
 * Signal a call fd without blocking: RWF_NOWAIT where the file supports
 * it (pipes); an eventfd (whose write takes no RWF_NOWAIT) is written only
 * when it has room, which it lacks only if the front end pushed its
 * counter to the maximum. A full pipe drops the signal: the guest's own
 * front end stopped reading it. Returns 0, or a negative errno.
 */
static int
fd_signal_nowait(struct mlx5_lm_notify *n, uint16_t index, int fd)
{
	uint64_t one = 1;
	struct iovec iov = { .iov_base = &one, .iov_len = sizeof(one) };
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (n->call_plain[index] != fd) {
		if (pwritev2(fd, &iov, 1, -1, RWF_NOWAIT) >= 0)
			return 0;
		if (errno != EOPNOTSUPP)
			return -errno;
		n->call_plain[index] = fd;
	}
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
		return -EAGAIN;
	return ring_fd_io(n, index, fd, &one, sizeof(one), 1) < 0 ? -errno : 0;
}

/*
 * A slot's duplicate goes out of use (n->lock held), the slot cleared: the
 * thread closes it, since it may be reading or writing it right now. The
 * list has room (capretired above): an fd that could not be listed was
 * reachable from nowhere and stayed open past the device's removal. The
 * thread is not woken here but by retire_end() once the caller has
 * retired everything it had (a stop retires 64 fds on vhost's thread):
 * woken at the first one, the thread took each fd as it came and, on a
 * busy 2-CPU host, preempted vhost's thread about 28 times per stop.
 */
static void
retire(struct mlx5_lm_notify *n, int *slot)
{
	if (*slot < 0)
		return;
	n->retired[n->nretired++] = *slot;
	n->nlive--;
	*slot = -1;
}

/*
 * Room to retire more duplicates than are now listed or in use (n->lock
 * held), before they are added. 0, or -ENOMEM with nothing changed.
 */
static int
reserve_retired(struct mlx5_lm_notify *n, unsigned int more)
{
	unsigned int need = n->nretired + n->nlive + more;
	int *r;

	if (need <= n->capretired)
		return 0;
	need = RTE_MAX(need, 2 * n->capretired);
	r = realloc(n->retired, need * sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	n->retired = r;
	n->capretired = need;
	return 0;
}

/*
 * Retiring fds: retire_begin() takes n->lock and says whether the list
 * was empty; retire_end() drops the lock and only then wakes the thread,
 * if the list went from empty to not. A list that was not empty has its
 * wake-up pending already, and the thread takes the whole list when it
 * runs.
 */
static bool
retire_begin(struct mlx5_lm_notify *n)
{
	pthread_mutex_lock(&n->lock);
	return n->nretired == 0;
}

static void
retire_end(struct mlx5_lm_notify *n, bool had_none)
{
	bool have = n->nretired != 0;
	uint64_t one = 1;

	pthread_mutex_unlock(&n->lock);
	if (had_none && have)
		(void)!write(n->wakefd, &one, sizeof(one));
}

/*
 * In the thread: close what was retired; none of it is in use now. Taken
 * out under the lock a chunk at a time and closed outside it (a close may
 * take its time); the list keeps its room (capretired above).
 */
static void
close_retired(struct mlx5_lm_notify *n)
{
	int fds[64];
	unsigned int i, k;
	uint64_t v;

	(void)!read(n->wakefd, &v, sizeof(v));
	do {
		pthread_mutex_lock(&n->lock);
		k = RTE_MIN(n->nretired, (unsigned int)RTE_DIM(fds));
		n->nretired -= k;
		memcpy(fds, n->retired + n->nretired, k * sizeof(fds[0]));
		pthread_mutex_unlock(&n->lock);
		for (i = 0; i < k; i++)
			close(fds[i]);
	} while (k != 0);
}

/*
 * In the thread: let go of ring index's kick or call duplicate fd, if it
 * is still the one the thread used (vhost's thread may have replaced it
 * meanwhile, retiring it itself). A kick fd leaves the epoll set first:
 * closing a duplicate does not, while the front end and vhost hold the
 * same file open.
 */
static bool
drop_fd(struct mlx5_lm_notify *n, int *slot, int fd, bool kick)
{
	bool had_none = retire_begin(n), dropped = *slot == fd;

	if (dropped) {
		if (kick)
			epoll_ctl(n->epfd, EPOLL_CTL_DEL, fd, NULL);
		retire(n, slot);
	}
	retire_end(n, had_none);
	return dropped;
}

static void
relay_kick(struct mlx5_lm_notify *n, uint16_t index, uint32_t gen, uint32_t events)
{
	int fd, drained;

	/*
	 * Events of one epoll_wait are handled in turn: one for a kick fd
	 * replaced meanwhile (vhost's thread, or a handler of an earlier event)
	 * is the old fd's, a hang-up included: the new fd is not dropped for it.
	 */
	pthread_mutex_lock(&n->lock);
	fd = n->kickgen[index] == gen ? n->kickfd[index] : -1;
	pthread_mutex_unlock(&n->lock);
	if (fd < 0)
		return;
	drained = fd_drain_nowait(n, index, fd);
	mlx5_lm_vq_doorbell(n->dev, index);
	/*
	 * A pipe or socket whose writer is gone reports a hang-up at every
	 * epoll_wait, for good, and a kick fd that no read empties (above) is
	 * readable at every wait: watched on, either would make this thread
	 * spin and ring the doorbell on every pass, taking a CPU from every
	 * other device. No kick can come through it again.
	 */
	if ((events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) &&
	    drop_fd(n, &n->kickfd[index], fd, true))
		DRV_LOG(ERR, n->dev, "queue %u: kick fd hung up (its writer is gone): the ring's "
			"kicks are no longer relayed until the front end gives a new one", index);
	else if (drained < 0 && drop_fd(n, &n->kickfd[index], fd, true))
		DRV_LOG(ERR, n->dev, "queue %u: kick fd %s%s: let go of, the ring's kicks are no "
			"longer relayed until the front end gives a new one", index,
			drained == -ENODATA ? "at its end (a read returned 0)" :
			drained == -EBUSY ? "still readable after " RTE_STR(KICK_READS) " reads "
			"(an EFD_SEMAPHORE eventfd?)" : "unreadable: ",
			drained == -ENODATA || drained == -EBUSY ? "" : strerror(-drained));
}

/*
 * A write to a pipe or socket whose reader is gone fails with EPIPE and
 * raises SIGPIPE in the writing thread, which this thread blocks (see
 * notify_thread): take it from the pending set.
 */
static sigset_t
sigpipe_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	return set;
}

static void
sigpipe_consume(void)
{
	const struct timespec now = { 0, 0 };
	sigset_t pipe_set = sigpipe_set();

	while (sigtimedwait(&pipe_set, NULL, &now) == SIGPIPE)
		;
}

static void
call(struct mlx5_lm_notify *n, uint16_t index)
{
	int fd, ret;

	pthread_mutex_lock(&n->lock);
	fd = n->callfd[index];
	pthread_mutex_unlock(&n->lock);
	if (fd < 0)
		return;
	ret = fd_signal_nowait(n, index, fd);
	if (ret == -EPIPE) {
		sigpipe_consume();
		/* Nobody can read it again: stop writing (and raising SIGPIPE) at each completion. */
		if (drop_fd(n, &n->callfd[index], fd, false))
			DRV_LOG(ERR, n->dev, "queue %u: call fd has no reader (EPIPE): the ring's "
				"interrupts are dropped until the front end gives a new one", index);
	} else if (ret < 0) {
		DRV_LOG(DEBUG, n->dev, "queue %u: callfd not written: %s", index, strerror(-ret));
	}
}

/*
 * One polling cycle of the timer modes: every queue's CQ read, the callfd
 * of each queue that completed something written. Returns the largest
 * count of completions of one queue.
 */
static uint32_t
poll_queues(struct mlx5_lm_notify *n)
{
	struct mlx5_lm_dev *dev = n->dev;
	uint32_t max = 0;
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++) {
		int c = mlx5_lm_eventq_drain(&dev->vq[i], 0);

		if (c <= 0)
			continue;
		call(n, i);
		if ((uint32_t)c > max)
			max = (uint32_t)c;
	}
	return max;
}

/* Timer modes, no traffic for no_traffic_time polls: arm every CQ and sleep. */
static void
go_idle(struct mlx5_lm_notify *n)
{
	struct mlx5_lm_dev *dev = n->dev;
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++)
		/* Completions that slipped in before the arm raise an event at once. */
		if (mlx5_lm_eventq_drain(&dev->vq[i], 1) > 0)
			call(n, i);
	n->polling = 0;
}

/* After a poll that found at most max completions of one queue (upstream's rule). */
static void
poll_done(struct mlx5_lm_notify *n, uint32_t max)
{
	const struct mlx5_lm_devargs *a = &n->dev->args;

	if (max == 0 && n->idle++ >= a->no_traffic_time) {
		go_idle(n);
		return;
	}
	if (max != 0)
		n->idle = 0;
	if (a->event_mode != MLX5_LM_EVENT_MODE_DYNAMIC_TIMER)
		return;
	/*
	 * Upstream's period has no ceiling; here it stops at 1 s, so that a
	 * long no_traffic_time cannot stretch one poll's latency without end.
	 */
	if (max == 0)
		n->delay_us = RTE_MIN(n->delay_us + a->event_us, (uint32_t)MAX_DELAY_US);
	else if (max > 1)
		n->delay_us /= max;
}

/*
 * The event channel lost events (EOVERFLOW: the kernel could not queue
 * them, Linux devx.c deliver_event): any CQ may have fired unseen, and
 * its arm is then used up. Every queue's CQ is read and armed again (or,
 * polling, read), every call eventfd written once so that the guest looks
 * at its used ring, and every running queue kicked once, so that a kick
 * whose work a lost event was to report is looked at again. A lost
 * OBJECT_CHANGE is found by the next query of its queue's state.
 */
static void
relay_overflow(struct mlx5_lm_notify *n)
{
	struct mlx5_lm_dev *dev = n->dev;
	unsigned int fired = 0;
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++) {
		struct mlx5_lm_virtq *vq = &dev->vq[i];
		int c = mlx5_lm_eventq_recover(vq, !n->polling);

		if (c < 0)
			continue;
		fired += c > 0;
		call(n, i);
		/*
		 * Every queue with an event path: the device ignores the doorbell
		 * of a queue that is not RDY, and the queue's state is the
		 * lifecycle's, under dev->lock, which this thread never takes.
		 */
		mlx5_lm_vq_doorbell(dev, i);
	}
	DRV_LOG(WARNING, dev, "event channel overflowed (EOVERFLOW: events lost): every CQ read "
		"and %s, %u with new completions, every queue called and every running queue "
		"kicked once", n->polling ? "left to the poller" : "armed again", fired);
}

static void
relay_events(struct mlx5_lm_notify *n)
{
	struct mlx5_lm_dev *dev = n->dev;
	struct devx_event ev;
	int rc;

	while ((rc = devx_evch_read(dev->evch, &ev)) != 0) {
		if (rc == -EOVERFLOW) {
			relay_overflow(n);
			continue;
		}
		if (rc < 0) {
			DRV_LOG(ERR, dev, "event channel read: %s", strerror(-rc));
			break;
		}
		uint16_t index = (uint16_t)ev.cookie;

		uint32_t live_cqn = 0;
		int ours = 0;

		if (index >= MLX5_LM_MAX_VIRTQS)
			continue;
		/* The event consumed the CQ's arm: the next arm is a new request. */
		if (ev.type == PRM_EVENT_COMPLETION && index < dev->nr_vq)
			ours = mlx5_lm_eventq_event(&dev->vq[index], ev.obj_id, &live_cqn);
		if (ev.type == PRM_EVENT_COMPLETION && n->timer) {
			/* Traffic again: back to polling, from the first period. */
			if (!n->polling) {
				n->polling = 1;
				n->idle = 0;
				n->delay_us = dev->args.event_us;
			}
		} else if (ev.type == PRM_EVENT_COMPLETION) {
			/*
			 * Credits back and the CQ re-armed before the call: a
			 * notification arriving meanwhile raises the next event.
			 */
			/* The transport's reading of the event must name the queue's own CQ. */
			if (index < dev->nr_vq && !ours && live_cqn != 0)
				DRV_LOG(ERR, dev, "queue %u: completion event names CQ 0x%x, "
					"not its event CQ 0x%x", index, ev.obj_id, live_cqn);
			if (index < dev->nr_vq)
				mlx5_lm_eventq_drain(&dev->vq[index], 1);
			call(n, index);
		} else if (ev.type == PRM_EVENT_OBJECT_CHANGE) {
			/* The device's worker recovers it: no wait here for a configuration. */
			mlx5_lm_worker_recover(dev, index);
		}
	}
}

/*
 * Wait for the next fd event; while polling, at most the current period
 * (epoll_pwait2 for microseconds; a kernel without it gets milliseconds).
 */
static int
wait_events(struct mlx5_lm_notify *n, struct epoll_event *evs, int max)
{
	struct timespec ts;
	int k;

	if (!n->polling)
		return epoll_wait(n->epfd, evs, max, -1);
	if (n->delay_us == 0) {
		/* Upstream's event_us=0: poll without sleeping, but let others run. */
		sched_yield();
		return epoll_wait(n->epfd, evs, max, 0);
	}
	ts.tv_sec = n->delay_us / 1000000;
	ts.tv_nsec = (long)(n->delay_us % 1000000) * 1000;
	k = epoll_pwait2(n->epfd, evs, max, &ts, NULL);
	if (k < 0 && errno == ENOSYS)
		k = epoll_wait(n->epfd, evs, max,
			       (int)RTE_MIN((n->delay_us + 999u) / 1000u, (uint32_t)INT32_MAX));
	return k;
}

static void *
notify_thread(void *arg)
{
	struct mlx5_lm_notify *n = arg;
	struct epoll_event evs[32];
	sigset_t pipe_set = sigpipe_set();

	/*
	 * A call fd is the front end's: a pipe whose reader it closed makes a
	 * write raise SIGPIPE here, which kills a host that does not ignore it
	 * (DPDK's vdpa example does not). Blocked in this thread only; the
	 * write then fails with EPIPE (call()).
	 */
	pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	for (;;) {
		int i, k = wait_events(n, evs, RTE_DIM(evs));

		if (k < 0) {
			if (errno == EINTR)
				continue;
			DRV_LOG(ERR, n->dev, "notification thread: epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < k; i++) {
			uint32_t tag = (uint32_t)evs[i].data.u64;

			if (tag == TAG_STOP)
				return NULL;
			if (tag == TAG_EVCH) {
				relay_events(n);
				continue;
			}
			if (tag == TAG_WAKE) {
				close_retired(n);
				continue;
			}
			if (tag < MLX5_LM_MAX_VIRTQS)
				relay_kick(n, (uint16_t)tag, (uint32_t)(evs[i].data.u64 >> 32),
					   evs[i].events);
		}
		if (n->polling)
			poll_done(n, poll_queues(n));
	}
	return NULL;
}

/* Start the thread; with event_core on that CPU (upstream pins its event thread there). */
static int
start_thread(struct mlx5_lm_notify *n)
{
	uint32_t core = n->dev->args.event_core;
	pthread_attr_t attr;
	cpu_set_t set;
	int ret;

	pthread_attr_init(&attr);
	if (core != MLX5_LM_EVENT_CORE_ANY) {
		CPU_ZERO(&set);
		CPU_SET(core, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	ret = mlx5_lm_thread_create(&n->thread, "mlx5-lm-notify", &attr, notify_thread, n);
	/* A control thread starts on the control CPUs: event_core, when given, wins. */
	if (ret == 0 && core != MLX5_LM_EVENT_CORE_ANY)
		ret = pthread_setaffinity_np(n->thread, sizeof(set), &set);
	pthread_attr_destroy(&attr);
	if (ret != 0)
		DRV_LOG(ERR, n->dev, "cannot start the notification thread%s: %s",
			core != MLX5_LM_EVENT_CORE_ANY ? " on event_core" : "", strerror(ret));
	return -ret;
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
	/* Timer modes start waiting for the first completion, CQs armed at creation. */
	n->timer = dev->args.event_mode != MLX5_LM_EVENT_MODE_INTERRUPT;
	n->delay_us = dev->args.event_us;
	for (i = 0; i < MLX5_LM_MAX_VIRTQS; i++)
		n->kickfd[i] = n->callfd[i] = n->call_plain[i] = -1;
	pthread_mutex_init(&n->lock, NULL);
	/* Every ring's two duplicates, twice: grown only while the thread is held. */
	if (reserve_retired(n, 4 * MLX5_LM_MAX_VIRTQS) < 0) {
		errno = ENOMEM;
		goto err_ep;
	}
	n->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (n->epfd < 0)
		goto err_ep;
	n->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->stopfd < 0)
		goto err_stop;
	n->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->wakefd < 0)
		goto err_wake;
	ev.data.u64 = TAG_STOP;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->stopfd, &ev) < 0)
		goto err_ctl;
	ev.data.u64 = TAG_WAKE;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->wakefd, &ev) < 0)
		goto err_ctl;
	ev.data.u64 = TAG_EVCH;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, devx_evch_fd(dev->evch), &ev) < 0)
		goto err_ctl;
	if (start_thread(n) < 0)
		goto err_ctl;
	dev->notify = n;
	return 0;
err_ctl:
	close(n->wakefd);
err_wake:
	close(n->stopfd);
err_stop:
	close(n->epfd);
err_ep:
	DRV_LOG(ERR, dev, "cannot start the notification thread: %s", strerror(errno));
	pthread_mutex_destroy(&n->lock);
	free(n->retired);
	free(n);
	return ret;
}

void
mlx5_lm_notify_stop(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_notify *n = dev->notify;
	struct timespec until;
	bool joined = false;
	uint64_t one = 1;
	unsigned int i;

	if (n == NULL)
		return;
	if (write(n->stopfd, &one, sizeof(one)) < 0)
		DRV_LOG(ERR, dev, "cannot stop the notification thread: %s", strerror(errno));
	if (clock_gettime(CLOCK_REALTIME, &until) == 0) {
		until.tv_sec += NOTIFY_STOP_S;
		if (pthread_timedjoin_np(n->thread, NULL, &until) == 0)
			joined = true;
	}
	if (!joined) {
		/* Held by a front end's fd (above): cancelled in that read or write. */
		DRV_LOG(ERR, dev, "notification thread still held after %d s, in a read or write "
			"of a front end's kick or call fd (a blocking eventfd emptied or filled "
			"after its check): cancelled", NOTIFY_STOP_S);
		pthread_cancel(n->thread);
		pthread_join(n->thread, NULL);
	}
	/* The thread is gone: its duplicates, retired or still in place, go now. */
	for (i = 0; i < n->nretired; i++)
		close(n->retired[i]);
	free(n->retired);
	for (i = 0; i < MLX5_LM_MAX_VIRTQS; i++) {
		if (n->kickfd[i] >= 0)
			close(n->kickfd[i]);
		if (n->callfd[i] >= 0)
			close(n->callfd[i]);
	}
	close(n->wakefd);
	close(n->stopfd);
	close(n->epfd);
	pthread_mutex_destroy(&n->lock);
	free(n);
	dev->notify = NULL;
}

/* The relay of ring index off (n->lock held): its duplicates retired. */
static void
unwatch_locked(struct mlx5_lm_notify *n, uint16_t index)
{
	if (n->kickfd[index] >= 0)
		epoll_ctl(n->epfd, EPOLL_CTL_DEL, n->kickfd[index], NULL);
	retire(n, &n->kickfd[index]);
	retire(n, &n->callfd[index]);
}

/* Our own duplicate of a front end's fd (vhost closes its copy when it likes). */
static int
dup_fd(struct mlx5_lm_virtq *vq, int fd, const char *what)
{
	int d;

	if (fd < 0)
		return -1;
	d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		VQ_LOG(ERR, vq, "cannot duplicate its %s %d: %s", what, fd, strerror(errno));
	return d;
}

int
mlx5_lm_notify_dup_ring(struct mlx5_lm_virtq *vq, int *kick, int *callfd)
{
	*kick = dup_fd(vq, vq->kickfd, "kickfd");
	*callfd = dup_fd(vq, vq->callfd, "callfd");
	if ((*kick < 0 && vq->kickfd >= 0) || (*callfd < 0 && vq->callfd >= 0)) {
		if (*kick >= 0)
			close(*kick);
		if (*callfd >= 0)
			close(*callfd);
		*kick = *callfd = -1;
		return -EMFILE;
	}
	return 0;
}

int
mlx5_lm_notify_add_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	int kick, callfd, ret = mlx5_lm_notify_dup_ring(vq, &kick, &callfd);

	return ret < 0 ? ret : mlx5_lm_notify_take_ring(dev, vq, kick, callfd);
}

int
mlx5_lm_notify_take_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq, int kick, int callfd)
{
	struct mlx5_lm_notify *n = dev->notify;
	/* EPOLLRDHUP: a socket whose peer shut its writing side reports no EPOLLHUP. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	bool had_none;
	int ret = 0;

	had_none = retire_begin(n);
	/* Room to retire them later, taken now: retiring cannot fail (retire()). */
	if (reserve_retired(n, (kick >= 0) + (callfd >= 0)) < 0) {
		ret = -ENOMEM;
		VQ_LOG(ERR, vq, "no memory to relay its kick and call fds: not relayed");
		if (kick >= 0)
			close(kick);
		if (callfd >= 0)
			close(callfd);
		kick = callfd = -1;
	} else if (kick >= 0) {
		ev.data.u64 = (uint64_t)++n->kicks_watched << 32 | vq->index;
		if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, kick, &ev) < 0) {
			ret = -errno;
			VQ_LOG(ERR, vq, "cannot watch kickfd %d: %s", vq->kickfd, strerror(errno));
			close(kick);
			kick = -1;
		}
	}
	/* A ring added again (new fds from vhost) replaces what it had. */
	unwatch_locked(n, vq->index);
	n->kickfd[vq->index] = kick;
	n->kickgen[vq->index] = n->kicks_watched;
	n->callfd[vq->index] = callfd;
	n->nlive += (kick >= 0) + (callfd >= 0);
	retire_end(n, had_none);
	/* Kicks sent before we watched the fd must not be lost. */
	if (ret == 0 && kick >= 0)
		mlx5_lm_vq_doorbell(dev, vq->index);
	return ret;
}

void
mlx5_lm_notify_del_ring(struct mlx5_lm_dev *dev, struct mlx5_lm_virtq *vq)
{
	struct mlx5_lm_notify *n = dev->notify;
	bool had_none = retire_begin(n);

	unwatch_locked(n, vq->index);
	retire_end(n, had_none);
}

void
mlx5_lm_notify_del_configured(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_notify *n = dev->notify;
	bool had_none = retire_begin(n);
	uint16_t i;

	for (i = 0; i < dev->nr_vq; i++)
		if (dev->vq[i].configured)
			unwatch_locked(n, i);
	retire_end(n, had_none);
}

void
mlx5_lm_notify_race(struct mlx5_lm_dev *dev, void (*fn)(uint16_t index, int fd, int wr, void *arg),
		    void *arg)
{
	struct mlx5_lm_notify *n = dev->notify;

	/* The relay may be calling the previous one: both read atomically there. */
	__atomic_store_n(&n->race_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&n->race, fn, __ATOMIC_RELEASE);
}
