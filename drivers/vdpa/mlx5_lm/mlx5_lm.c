/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm vDPA PMD: the vdev driver "vdpa_mlx5_lm". Probe opens the DevX
 * transport named by the devargs (emulated or hardware), reads the caps
 * and allocates the device-level objects; remove undoes it in reverse.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <rte_common.h>
#include <rte_log.h>

#include "mlx5_lm_dpdk.h"
#include "mlx5_lm.h"
#include "mlx5_lm_pool.h"
#include "mlx5_lm_mr.h"
#include "devx_emu.h"
#include "mlx5_lm_prereg.h"

/* pmd.vdpa.mlx5_lm (RTE_LOG_DEFAULT_LOGTYPE, meson.build) and its two components. */
RTE_LOG_REGISTER_DEFAULT(mlx5_lm_logtype, NOTICE);
RTE_LOG_REGISTER_SUFFIX(mlx5_lm_devx_logtype, devx, NOTICE);
RTE_LOG_REGISTER_SUFFIX(mlx5_lm_emu_logtype, emu, NOTICE);

static TAILQ_HEAD(, mlx5_lm_dev) dev_list = TAILQ_HEAD_INITIALIZER(dev_list);
/* guards dev_list and every device's refs */
static pthread_mutex_t dev_list_lock = PTHREAD_MUTEX_INITIALIZER;
/* A device's references dropped to 0 (its removal waits for that). */
static pthread_cond_t dev_refs_cv = PTHREAD_COND_INITIALIZER;

/* The lower layers log in syslog levels; DPDK's are the same plus one. */
static void
devx_log_sink(int level, const char *line)
{
	rte_log(level + 1, mlx5_lm_devx_logtype, "mlx5_lm devx: %s\n", line);
}

static void
emu_log_sink(int level, const char *line)
{
	rte_log(level + 1, mlx5_lm_emu_logtype, "mlx5_lm emu: %s\n", line);
}

RTE_INIT(mlx5_lm_init_log)
{
	devx_set_log(devx_log_sink);
	devx_set_emu_log(emu_log_sink);
}

/* Name of the last device whose probe failed (guarded by dev_list_lock). */
static char probe_failed_name[64];

static struct mlx5_lm_dev *
find_dev_by_name(const char *name)
{
	struct mlx5_lm_dev *dev;

	TAILQ_FOREACH(dev, &dev_list, next)
		if (strcmp(dev->name, name) == 0)
			return dev;
	return NULL;
}

void
mlx5_lm_dev_foreach(void (*fn)(struct mlx5_lm_dev *dev, void *arg), void *arg)
{
	struct mlx5_lm_dev *dev;

	pthread_mutex_lock(&dev_list_lock);
	TAILQ_FOREACH(dev, &dev_list, next)
		fn(dev, arg);
	pthread_mutex_unlock(&dev_list_lock);
}

struct mlx5_lm_dev *
mlx5_lm_dev_by_vid(int vid)
{
	struct rte_vdpa_device *vdpa = rte_vhost_get_vdpa_device(vid);

	return vdpa != NULL ? mlx5_lm_dev_by_vdpa(vdpa) : NULL;
}

/* Per vid: counted in its device's conns[] (the vetting's messages skip the lookup then). */
static uint8_t conn_counted[RTE_MAX_VHOST_DEVICE];

int
mlx5_lm_conn_opened(int vid)
{
	struct rte_vdpa_device *vdpa;
	struct mlx5_lm_dev *dev;
	int ret = -ENODEV;

	if (vid < 0 || vid >= RTE_MAX_VHOST_DEVICE)
		return -ENODEV;
	if (__atomic_load_n(&conn_counted[vid], __ATOMIC_ACQUIRE))
		return 0;
	vdpa = rte_vhost_get_vdpa_device(vid);
	if (vdpa == NULL)
		return -ENODEV;
	/* Under the list's lock: a removal either sees the bit or came first. */
	pthread_mutex_lock(&dev_list_lock);
	TAILQ_FOREACH(dev, &dev_list, next)
		if (dev->vdpa == vdpa) {
			__atomic_or_fetch(&dev->conns[vid / 64], UINT64_C(1) << (vid % 64),
					  __ATOMIC_RELEASE);
			__atomic_store_n(&conn_counted[vid], 1, __ATOMIC_RELEASE);
			ret = 0;
			break;
		}
	pthread_mutex_unlock(&dev_list_lock);
	return ret;
}

void
mlx5_lm_conn_closed(struct mlx5_lm_dev *dev, int vid)
{
	if (vid < 0 || vid >= RTE_MAX_VHOST_DEVICE)
		return;
	__atomic_store_n(&conn_counted[vid], 0, __ATOMIC_RELEASE);
	__atomic_and_fetch(&dev->conns[vid / 64], ~(UINT64_C(1) << (vid % 64)),
			   __ATOMIC_RELEASE);
}

/* A connection still attached (mlx5_lm_conn_opened), the lowest vid; -1 when none. */
static int
conn_attached(const struct mlx5_lm_dev *dev)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(dev->conns); i++) {
		uint64_t w = __atomic_load_n(&dev->conns[i], __ATOMIC_ACQUIRE);

		if (w != 0)
			return (int)(i * 64) + __builtin_ctzll(w);
	}
	return -1;
}

struct mlx5_lm_dev *
mlx5_lm_dev_by_vdpa(struct rte_vdpa_device *vdpa)
{
	struct mlx5_lm_dev *dev, *found = NULL;

	pthread_mutex_lock(&dev_list_lock);
	TAILQ_FOREACH(dev, &dev_list, next)
		if (dev->vdpa == vdpa) {
			found = dev;
			break;
		}
	pthread_mutex_unlock(&dev_list_lock);
	return found;
}

/*
 * Everything between the device-level objects and vhost: the worker pool,
 * doorbell area, event channel and relay thread, event rings, and the
 * pre-created queues with their steering.
 */
static int
queues_setup(struct mlx5_lm_dev *dev)
{
	uint32_t pairs = dev->caps.max_num_virtio_queues / 2;
	int ret;

	if (dev->args.queues > pairs) {
		DRV_LOG(ERR, dev, "queues=%u: the device supports %u queue pairs", dev->args.queues,
			pairs);
		return -EINVAL;
	}
	if (dev->args.queues == 0)
		dev->args.queues = RTE_MIN(pairs, (uint32_t)MLX5_LM_DEFAULT_QUEUE_PAIRS);
	dev->nr_vq = (uint16_t)(dev->args.queues * 2);
	dev->vid = -1;
	dev->held_vid = -1;
	pthread_mutex_init(&dev->lock, NULL);
	ret = mlx5_lm_worker_start(dev);
	if (ret < 0)
		goto err_worker;
	ret = mlx5_lm_pool_get(mlx5_lm_pool_threads(dev));
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot start %u worker threads", dev->args.workers);
		goto err_pool;
	}
	ret = mlx5_lm_mr_gc_get();
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot start the memory garbage thread");
		goto err_gc;
	}
	ret = mlx5_lm_prereg_init(dev);
	if (ret < 0)
		goto err_prereg;
	dev->db = devx_db_alloc(dev->devx);
	if (dev->db == NULL) {
		ret = -EIO;
		goto err_db;
	}
	dev->evch = devx_evch_create(dev->devx);
	if (dev->evch == NULL) {
		ret = -EIO;
		goto err_evch;
	}
	/* The event rings (and their locks) before the thread that reads them. */
	ret = mlx5_lm_event_buf_create(dev);
	if (ret < 0)
		goto err_event_buf;
	ret = mlx5_lm_notify_start(dev);
	if (ret < 0)
		goto err_notify;
	for (uint16_t i = 0; i < dev->nr_vq; i++) {
		dev->vq[i].dev = dev;
		dev->vq[i].index = i;
		dev->vq[i].kickfd = -1;
		dev->vq[i].callfd = -1;
	}
	ret = mlx5_lm_uplink_start(dev);
	if (ret < 0)
		goto err_uplink;
	ret = mlx5_lm_virtqs_precreate(dev);
	if (ret < 0)
		goto err_precreate;
	return 0;
err_precreate:
	mlx5_lm_virtq_counters_release(dev);
	mlx5_lm_uplink_stop(dev);
err_uplink:
	mlx5_lm_notify_stop(dev);
err_notify:
	mlx5_lm_event_buf_destroy(dev);
err_event_buf:
	devx_evch_destroy(dev->evch);
	dev->evch = NULL;
err_evch:
	devx_db_free(dev->db);
	dev->db = NULL;
err_db:
	mlx5_lm_prereg_fini(dev);
err_prereg:
	mlx5_lm_mr_gc_put();
err_gc:
	mlx5_lm_pool_put(mlx5_lm_pool_threads(dev));
err_pool:
	mlx5_lm_worker_stop(dev);
	mlx5_lm_worker_fini(dev);
err_worker:
	pthread_mutex_destroy(&dev->lock);
	return ret;
}

static void
queues_teardown(struct mlx5_lm_dev *dev)
{
	/* The configuration in progress ends first, then a deferred restore runs now. */
	mlx5_lm_worker_stop(dev);
	/* An unused preparation goes; one in use goes with the registration that took it. */
	mlx5_lm_prereg_fini(dev);
	mlx5_lm_notify_stop(dev);
	mlx5_lm_virtqs_destroy(dev);
	mlx5_lm_virtq_counters_release(dev);
	mlx5_lm_uplink_stop(dev);
	mlx5_lm_event_buf_destroy(dev);
	devx_evch_destroy(dev->evch);
	dev->evch = NULL;
	devx_db_free(dev->db);
	dev->db = NULL;
	mlx5_lm_mr_gc_put();
	mlx5_lm_pool_put(mlx5_lm_pool_threads(dev));
	mlx5_lm_worker_fini(dev);
	pthread_mutex_destroy(&dev->lock);
}

/*
 * vhost's thread receives every device's descriptors: a kick and a call
 * eventfd per ring, the memory regions, the log. When the process's fd
 * table is full the kernel grows it and, since threads share it, first
 * waits for an RCU grace period (fs/file.c expand_fdtable:
 * synchronize_rcu): measured 15 ms in vhost's thread on the 2-CPU
 * machine, in the downtime of every VM whose messages queued behind it
 * (migrate --scenario evacuate). The table never shrinks: grow it at
 * probe, for what all probed devices and their front ends may hold at
 * once (both ends of every eventfd when the front end is in this
 * process, as in dpdk-test-lm, and the relay's own duplicates of the kick
 * and call fds), within RLIMIT_NOFILE.
 */
#define FDS_PER_RING 6
#define FDS_PER_DEVICE 32

static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int fd_budget; /* fd_lock: what the devices probed now may hold */

static unsigned int
fd_share(const struct mlx5_lm_dev *dev)
{
	return FDS_PER_RING * dev->nr_vq + FDS_PER_DEVICE;
}

static void
fd_table_reserve(struct mlx5_lm_dev *dev)
{
	struct rlimit rl;
	unsigned int want;
	int low, fd;

	pthread_mutex_lock(&fd_lock);
	fd_budget += fd_share(dev);
	low = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (low < 0) {
		pthread_mutex_unlock(&fd_lock);
		return;
	}
	want = (unsigned int)low + fd_budget;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    want >= rl.rlim_cur) {
		DRV_LOG(INFO, dev, "RLIMIT_NOFILE %lu is below the %u descriptors the probed "
			"devices may hold: vhost may stall growing the fd table",
			(unsigned long)rl.rlim_cur, want);
		want = rl.rlim_cur > 1 ? (unsigned int)rl.rlim_cur - 1 : 0;
	}
	/* The lowest free descriptor at or above want: the table grows to hold it. */
	fd = want > (unsigned int)low ? fcntl(low, F_DUPFD_CLOEXEC, (int)want) : -1;
	if (fd >= 0)
		close(fd);
	close(low);
	pthread_mutex_unlock(&fd_lock);
}

/*
 * A device gone gives its share back: the table itself never shrinks, but
 * a device probed and removed again and again must not grow it each time
 * (to RLIMIT_NOFILE, in the end).
 */
static void
fd_table_release(struct mlx5_lm_dev *dev)
{
	pthread_mutex_lock(&fd_lock);
	fd_budget -= RTE_MIN(fd_budget, fd_share(dev));
	pthread_mutex_unlock(&fd_lock);
}

/*
 * The device is off the list: wait for the public calls that found it
 * before (one waiting for a preparation is told to leave, not waited out).
 */
static void
wait_unreferenced(struct mlx5_lm_dev *dev)
{
	mlx5_lm_prereg_unlisted(dev);
	pthread_mutex_lock(&dev_list_lock);
	while (dev->refs > 0)
		pthread_cond_wait(&dev_refs_cv, &dev_list_lock);
	pthread_mutex_unlock(&dev_list_lock);
}

static int
mlx5_lm_probe(struct rte_vdev_device *vdev)
{
	struct rte_device *rdev = MLX5_LM_VDEV_DEVICE(vdev);
	const char *name = rte_dev_name(rdev);
	const struct rte_devargs *da = rte_dev_devargs(rdev);
	struct devx_open_params params = { .name = name };
	struct mlx5_lm_dev *dev;
	char err[512];
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return -ENOMEM;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	dev->rte_dev = rdev;
	dev->instance = (uint32_t)strtoul(name + strlen("vdpa_mlx5_lm"), NULL, 10);
	ret = mlx5_lm_devargs_parse(name, da != NULL ? da->args : NULL, &dev->args, err,
				    sizeof(err));
	if (ret < 0) {
		DRV_LOG(ERR, dev, "bad devargs: %s", err);
		goto err_args;
	}
	params.emu_profile = dev->args.emu[0] ? dev->args.emu : NULL;
	params.ibdev = dev->args.ibdev[0] ? dev->args.ibdev : NULL;
	params.parent = dev->args.pci[0] ? dev->args.pci : dev->args.sf[0] ? dev->args.sf : NULL;
	params.trace_path = dev->args.devx_trace[0] ? dev->args.devx_trace : NULL;
	ret = devx_open(&params, &dev->devx, err, sizeof(err));
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot open the device: %s", err);
		goto err_open;
	}
	ret = mlx5_lm_caps_query(dev);
	if (ret < 0)
		goto err_caps;
	ret = mlx5_lm_res_create(dev);
	if (ret < 0)
		goto err_res;
	ret = queues_setup(dev);
	if (ret < 0)
		goto err_queues;
	fd_table_reserve(dev);
	pthread_mutex_lock(&dev_list_lock);
	if (strcmp(probe_failed_name, name) == 0)
		probe_failed_name[0] = '\0';
	TAILQ_INSERT_TAIL(&dev_list, dev, next);
	pthread_mutex_unlock(&dev_list_lock);
	ret = mlx5_lm_vdpa_register(dev);
	if (ret < 0)
		goto err_register;
	DRV_LOG(INFO, dev, "probed on %s back end: %u queue pairs of size %u%s", dev->caps.backend,
		dev->nr_vq / 2, dev->args.queue_size, dev->args.precreate ? " pre-created" : "");
	return 0;
err_register:
	pthread_mutex_lock(&dev_list_lock);
	TAILQ_REMOVE(&dev_list, dev, next);
	pthread_mutex_unlock(&dev_list_lock);
	/* Listed meanwhile: a public call may hold it (as at a removal). */
	wait_unreferenced(dev);
	fd_table_release(dev);
	queues_teardown(dev);
err_queues:
	mlx5_lm_res_destroy(dev);
err_res:
err_caps:
	devx_close(dev->devx);
err_open:
err_args:
	pthread_mutex_lock(&dev_list_lock);
	snprintf(probe_failed_name, sizeof(probe_failed_name), "%s", name);
	pthread_mutex_unlock(&dev_list_lock);
	free(dev);
	return ret;
}

static int
mlx5_lm_remove(struct rte_vdev_device *vdev)
{
	const char *name = rte_dev_name(MLX5_LM_VDEV_DEVICE(vdev));
	struct mlx5_lm_dev *dev;
	int alive, vid;

	pthread_mutex_lock(&dev_list_lock);
	dev = find_dev_by_name(name);
	/*
	 * vhost keeps the vDPA device of a connection and calls it at the
	 * connection's next message and at its close (dev_close, dev_cleanup):
	 * removed under a front end, the device would be used after its free.
	 * The application unregisters the vhost-user socket first (which closes
	 * its connections); until then the device stays. The owner's connection
	 * counts until it closes, through a RESET_OWNER too (with the vetting,
	 * which tells dev_cleanup which one it is); so does every connection
	 * the application told of (the vetting's registration at its
	 * new_connection), owner or not. Without the vetting, a connection
	 * that has not owned the device is not known here.
	 */
	if (dev != NULL && ((vid = __atomic_load_n(&dev->vid, __ATOMIC_ACQUIRE)) >= 0 ||
			    (vid = __atomic_load_n(&dev->held_vid, __ATOMIC_ACQUIRE)) >= 0 ||
			    (vid = conn_attached(dev)) >= 0)) {
		pthread_mutex_unlock(&dev_list_lock);
		DRV_LOG(ERR, dev, "not removed: vhost device %d (a front end) still uses it; "
			"unregister its vhost-user socket (rte_vhost_driver_unregister) first",
			vid);
		return -EBUSY;
	}
	if (dev != NULL)
		TAILQ_REMOVE(&dev_list, dev, next);
	pthread_mutex_unlock(&dev_list_lock);
	if (dev == NULL)
		return -ENODEV;
	/* A public call that found the device before finishes with it first. */
	wait_unreferenced(dev);
	/*
	 * vhost's dev_cleanup for the last connection uncounts it under dev->lock
	 * and touches the device no more once it lets go: waited for here.
	 */
	pthread_mutex_lock(&dev->lock);
	pthread_mutex_unlock(&dev->lock);
	mlx5_lm_vdpa_unregister(dev);
	fd_table_release(dev);
	queues_teardown(dev);
	for (uint16_t i = 0; i < dev->nr_vq; i++)
		mlx5_lm_virtq_orphans_release(&dev->vq[i], 0);
	mlx5_lm_res_destroy(dev);
	alive = devx_close(dev->devx);
	if (alive > 0)
		DRV_LOG(ERR, dev, "%d device objects were still alive at removal", alive);
	/*
	 * Queue memory whose umem the device refused to release was kept while
	 * the device could still reach it; with the device closed it can go.
	 */
	for (uint16_t i = 0; i < dev->nr_vq; i++) {
		mlx5_lm_virtq_orphans_release(&dev->vq[i], 1);
		for (int k = 0; k < 3; k++)
			free(dev->vq[i].umem_buf[k]);
	}
	free(dev);
	return 0;
}

struct mlx5_lm_dev *
mlx5_lm_dev_get(const char *name)
{
	struct mlx5_lm_dev *dev;

	pthread_mutex_lock(&dev_list_lock);
	dev = find_dev_by_name(name);
	if (dev != NULL)
		dev->refs++;
	pthread_mutex_unlock(&dev_list_lock);
	return dev;
}

void
mlx5_lm_dev_put(struct mlx5_lm_dev *dev)
{
	pthread_mutex_lock(&dev_list_lock);
	if (--dev->refs == 0)
		pthread_cond_broadcast(&dev_refs_cv);
	pthread_mutex_unlock(&dev_list_lock);
}

int
rte_pmd_mlx5_lm_get_caps(const char *name, struct rte_pmd_mlx5_lm_caps *caps)
{
	struct mlx5_lm_dev *dev;
	int ret = -ENODEV;

	pthread_mutex_lock(&dev_list_lock);
	dev = find_dev_by_name(name);
	if (dev != NULL) {
		*caps = dev->caps;
		ret = 0;
	}
	pthread_mutex_unlock(&dev_list_lock);
	return ret;
}

int
rte_pmd_mlx5_lm_probe_failed(const char *name)
{
	int failed;

	pthread_mutex_lock(&dev_list_lock);
	failed = strcmp(probe_failed_name, name) == 0;
	pthread_mutex_unlock(&dev_list_lock);
	return failed;
}

int
rte_pmd_mlx5_lm_get_timings(const char *name, struct rte_pmd_mlx5_lm_timings *t)
{
	struct mlx5_lm_dev *dev;

	/*
	 * The list lock is not held while waiting for dev->lock: a dev_conf in
	 * progress holds it for as long as it runs, and vhost's callbacks on
	 * other devices need the list lock meanwhile.
	 */
	dev = mlx5_lm_dev_get(name);
	if (dev == NULL)
		return -ENODEV;
	pthread_mutex_lock(&dev->lock);
	t->conf_ms = dev->times.conf_ms;
	t->conf_mr_ms = dev->times.conf_mr_ms;
	t->conf_vq_ms = dev->times.conf_vq_ms;
	t->close_ms = dev->times.close_ms;
	t->conf_count = dev->times.conf_count;
	t->mem_regions = dev->times.mem_regions;
	t->mem_bytes = dev->times.mem_bytes;
	pthread_mutex_unlock(&dev->lock);
	mlx5_lm_dev_put(dev);
	return 0;
}

unsigned long
rte_pmd_mlx5_lm_emu_leaked_objects(void)
{
	return devx_emu_leaked_total();
}

unsigned long
rte_pmd_mlx5_lm_emu_live_objects(char *desc, size_t len)
{
	return devx_emu_live_total(desc, len);
}

int
rte_pmd_mlx5_lm_emu_profile_check(const char *profile, char *err, size_t errlen)
{
	return devx_emu_profile_check(profile, err, errlen);
}

int
rte_pmd_mlx5_lm_emu_model_stats(const char *name, struct rte_pmd_mlx5_lm_model_stats *s)
{
	struct devx_cost_stats cs;
	struct mlx5_lm_dev *dev;
	int ret;

	/* Atomic counters in the emulator: no device lock, a dev_conf may be running. */
	dev = mlx5_lm_dev_get(name);
	if (dev == NULL)
		return -ENODEV;
	ret = devx_emu_cost_stats(dev->devx, &cs);
	mlx5_lm_dev_put(dev);
	if (ret < 0)
		return ret;
	s->cmds = cs.cmds;
	s->model_busy_ms = cs.model_us / 1000.0;
	s->actual_busy_ms = cs.actual_us / 1000.0;
	s->overshoot_max_us = cs.overshoot_max_us;
	s->pins = cs.pins;
	s->pin_model_ms = cs.pin_model_us / 1000.0;
	s->pin_actual_ms = cs.pin_actual_us / 1000.0;
	return 0;
}

int
rte_pmd_mlx5_lm_emu_profile_costs(const char *profile, unsigned int *cmd_slots,
				  unsigned int *host_pin_parallel,
				  struct rte_pmd_mlx5_lm_cost *costs, unsigned int n,
				  char *err, size_t errlen)
{
	struct devx_cost_entry *e;
	unsigned int i;
	int ret;

	e = calloc(n > 0 ? n : 1, sizeof(*e));
	if (e == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		e[i].name = costs[i].name;
	ret = devx_emu_profile_costs(profile, cmd_slots, host_pin_parallel, e, n, err,
				     errlen);
	for (i = 0; ret == 0 && i < n; i++) {
		costs[i].base_us = e[i].base_us;
		costs[i].per_gib_us = e[i].per_gib_us;
		costs[i].per_entry_us = e[i].per_entry_us;
	}
	free(e);
	return ret;
}

static struct rte_vdev_driver mlx5_lm_vdev_driver = {
	.probe = mlx5_lm_probe,
	.remove = mlx5_lm_remove,
};

/* This copy's own address of a public symbol (a hidden alias binds locally). */
extern __typeof__(rte_pmd_mlx5_lm_get_caps) mlx5_lm_own_get_caps
	__attribute__((visibility("hidden"), alias("rte_pmd_mlx5_lm_get_caps")));

/*
 * Register the vdev driver, once per process: an application linked with
 * the PMD also gets the copy EAL loads from its driver directory once the
 * PMD is installed there, and two drivers of one name would split the
 * devices between two device lists.
 */
RTE_INIT(mlx5_lm_register)
{
	void *first = dlsym(RTLD_DEFAULT, "rte_pmd_mlx5_lm_get_caps");

	if (first != NULL && first != (void *)mlx5_lm_own_get_caps) {
		RTE_LOG(DEBUG, EAL, "vdpa_mlx5_lm: already loaded, this copy stays idle\n");
		return;
	}
	mlx5_lm_vdev_driver.driver.name = "vdpa_mlx5_lm";
	rte_vdev_register(&mlx5_lm_vdev_driver);
}
#define MLX5_LM_PARAMS \
	"emu=<profile|path> ibdev=<name> pci=<BDF> sf=<auxdev> queues=<1-128> queue_size=<pow2> precreate=<0|1> " \
	"workers=<1-64> mr_chunk_mb=<pow2> mr_gc_ms=<ms> parallel=<0|1> " \
	"uplink=<loopback|ethdev> devx_trace=<path> event_mode=<0-2> event_us=<us> " \
	"no_traffic_time=<polls> event_core=<cpu> max_conf_threads=<0-64> " \
	"hw_latency_mode=<0-2> hw_max_latency_us=<0-4095> hw_max_pending_comp=<0-65535>"
RTE_PMD_REGISTER_PARAM_STRING(vdpa_mlx5_lm, MLX5_LM_PARAMS);
/*
 * What dpdk-pmdinfo.py reads: a "PMD_INFO_STRING=<json>" string in
 * .rodata, which DPDK's own build generates from the registration macros
 * (buildtools/pmdinfogen); a driver built outside DPDK's tree embeds it.
 */
static const char mlx5_lm_pmd_info[] __rte_used =
	"PMD_INFO_STRING={\"name\": \"vdpa_mlx5_lm\", \"params\": \"" MLX5_LM_PARAMS "\", "
	"\"pci_ids\": []}";
