/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlx5-lm vDPA PMD: the vdev driver "vdpa_mlx5_lm". Probe opens the DevX
 * transport named by the devargs (emulated or hardware), reads the caps
 * and allocates the device-level objects; remove undoes it in reverse.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_log.h>

#include "mlx5_lm_dpdk.h"
#include "mlx5_lm.h"

RTE_LOG_REGISTER(mlx5_lm_logtype, pmd.vdpa.mlx5_lm, NOTICE);
RTE_LOG_REGISTER(mlx5_lm_devx_logtype, pmd.vdpa.mlx5_lm.devx, NOTICE);
RTE_LOG_REGISTER(mlx5_lm_emu_logtype, pmd.vdpa.mlx5_lm.emu, NOTICE);

static TAILQ_HEAD(, mlx5_lm_dev) dev_list = TAILQ_HEAD_INITIALIZER(dev_list);
static pthread_mutex_t dev_list_lock = PTHREAD_MUTEX_INITIALIZER; /* guards dev_list */

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
	ret = mlx5_lm_devargs_parse(name, da != NULL ? da->args : NULL, &dev->args, err,
				    sizeof(err));
	if (ret < 0) {
		DRV_LOG(ERR, dev, "bad devargs: %s", err);
		goto err_args;
	}
	params.emu_profile = dev->args.emu[0] ? dev->args.emu : NULL;
	params.ibdev = dev->args.ibdev[0] ? dev->args.ibdev : NULL;
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
	pthread_mutex_lock(&dev_list_lock);
	if (strcmp(probe_failed_name, name) == 0)
		probe_failed_name[0] = '\0';
	TAILQ_INSERT_TAIL(&dev_list, dev, next);
	pthread_mutex_unlock(&dev_list_lock);
	DRV_LOG(INFO, dev, "probed on %s back end: %u virtio queues, vhca_id %u",
		dev->caps.backend, dev->caps.max_num_virtio_queues, dev->caps.vhca_id);
	return 0;
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
	int alive;

	pthread_mutex_lock(&dev_list_lock);
	dev = find_dev_by_name(name);
	if (dev != NULL)
		TAILQ_REMOVE(&dev_list, dev, next);
	pthread_mutex_unlock(&dev_list_lock);
	if (dev == NULL)
		return -ENODEV;
	mlx5_lm_res_destroy(dev);
	alive = devx_close(dev->devx);
	if (alive > 0)
		DRV_LOG(ERR, dev, "%d device objects were still alive at removal", alive);
	free(dev);
	return 0;
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

unsigned long
rte_pmd_mlx5_lm_emu_leaked_objects(void)
{
	return devx_emu_leaked_total();
}

static struct rte_vdev_driver mlx5_lm_vdev_driver = {
	.probe = mlx5_lm_probe,
	.remove = mlx5_lm_remove,
};

MLX5_LM_VDEV_REGISTER(vdpa_mlx5_lm, mlx5_lm_vdev_driver);
RTE_PMD_REGISTER_PARAM_STRING(vdpa_mlx5_lm,
	"emu=<profile|path> ibdev=<name> queues=<1-128> queue_size=<pow2> precreate=<0|1> "
	"workers=<1-64> mr_chunk_mb=<pow2> mr_gc_ms=<ms> parallel=<0|1> "
	"uplink=<loopback|ethdev> devx_trace=<path>");
