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

static int
query_null_mkey(struct mlx5_lm_dev *dev)
{
	uint8_t in[PRM_SIZE(query_special_contexts_in)];
	uint8_t out[PRM_SIZE(query_special_contexts_out)];
	int ret;

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	PRM_SET(query_special_contexts_in, in, opcode, PRM_CMD_QUERY_SPECIAL_CONTEXTS);
	ret = devx_cmd(dev->devx, in, sizeof(in), out, sizeof(out));
	if (ret < 0) {
		DRV_LOG(ERR, dev, "cannot query the null mkey");
		return ret;
	}
	dev->res.null_mkey = PRM_GET(query_special_contexts_out, out, null_mkey);
	return 0;
}

int
mlx5_lm_res_create(struct mlx5_lm_dev *dev)
{
	struct mlx5_lm_res *r = &dev->res;
	int ret = -EIO;

	r->pd = alloc_simple(dev, PRM_CMD_ALLOC_PD, PRM_SIZE(alloc_pd_in), "protection domain");
	if (r->pd == NULL)
		goto err_pd;
	r->td = alloc_simple(dev, PRM_CMD_ALLOC_TRANSPORT_DOMAIN,
			     PRM_SIZE(alloc_transport_domain_in), "transport domain");
	if (r->td == NULL)
		goto err_td;
	r->tis = create_tis(dev);
	if (r->tis == NULL)
		goto err_tis;
	ret = query_null_mkey(dev);
	if (ret < 0)
		goto err_null_mkey;
	return 0;
err_null_mkey:
	devx_obj_destroy(r->tis);
	r->tis = NULL;
err_tis:
	devx_obj_destroy(r->td);
	r->td = NULL;
err_td:
	devx_obj_destroy(r->pd);
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
	if (r->pd != NULL && devx_obj_destroy(r->pd) < 0)
		DRV_LOG(ERR, dev, "cannot deallocate the protection domain");
	r->pd = NULL;
	r->null_mkey = 0;
}
