/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device-level objects, allocated once at probe and shared by every queue:
 * protection domain, transport domain, the TIS that TX queues name, and
 * the null mkey that fills holes of indirect mkeys.
 */
#include <errno.h>
#include <string.h>

#include "prm.h"
#include "mlx5_lm.h"

static struct devx_obj *
alloc_simple(struct mlx5_lm_dev *dev, uint16_t opcode, size_t inlen, const char *what)
{
	uint8_t in[64];
	uint8_t out[PRM_SIZE(create_out)];
	struct devx_obj *obj;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(cmd_in, in, opcode, opcode);
	obj = devx_obj_create(dev->devx, in, inlen, out, sizeof(out));
	if (obj == NULL)
		DRV_LOG(ERR, dev, "cannot allocate the %s", what);
	return obj;
}

static struct devx_obj *
create_tis(struct mlx5_lm_dev *dev)
{
	uint8_t in[PRM_SIZE(create_tis_in)];
	uint8_t out[PRM_SIZE(create_out)];
	struct devx_obj *obj;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(create_tis_in, in, opcode, PRM_CMD_CREATE_TIS);
	PRM_SET(tisc, PRM_ADDR(create_tis_in, in, ctx), transport_domain,
		devx_obj_id(dev->res.td));
	obj = devx_obj_create(dev->devx, in, sizeof(in), out, sizeof(out));
	if (obj == NULL)
		DRV_LOG(ERR, dev, "cannot create the TIS");
	return obj;
}

int
mlx5_lm_res_create(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_res *r = &dev->res;
	int ret = -EIO;

	/*
	 * QUERY_SPECIAL_CONTEXTS is not a DevX command (Linux devx.c
	 * devx_is_general_cmd): the null mkey comes with the PD, from
	 * ibv_alloc_null_mr as in DPDK's mlx5 drivers.
	 */
	r->pd = devx_pd_alloc(dev->devx);
	if (r->pd == NULL) {
		DRV_LOG(ERR, dev, "cannot allocate the protection domain and its null mkey");
		goto err_pd;
	}
	r->null_mkey = devx_pd_null_mkey(r->pd);
	r->td = alloc_simple(dev, PRM_CMD_ALLOC_TRANSPORT_DOMAIN,
			     PRM_SIZE(alloc_transport_domain_in), "transport domain");
	if (r->td == NULL)
		goto err_td;
	r->tis = create_tis(dev);
	if (r->tis == NULL)
		goto err_tis;
	return 0;
err_tis:
	devx_obj_destroy(r->td);
	r->td = NULL;
err_td:
	devx_pd_free(r->pd);
	r->pd = NULL;
err_pd:
	return ret;
}

/* Reverse order of mlx5_lm_res_create; a failed destroy is logged and left to the leak report. */
void
mlx5_lm_res_destroy(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_res *r = &dev->res;

	if (r->tis != NULL && devx_obj_destroy(r->tis) < 0)
		DRV_LOG(ERR, dev, "cannot destroy the TIS");
	r->tis = NULL;
	if (r->td != NULL && devx_obj_destroy(r->td) < 0)
		DRV_LOG(ERR, dev, "cannot deallocate the transport domain");
	r->td = NULL;
	if (r->pd != NULL && devx_pd_free(r->pd) < 0)
		DRV_LOG(ERR, dev, "cannot deallocate the protection domain");
	r->pd = NULL;
	r->null_mkey = 0;
}
