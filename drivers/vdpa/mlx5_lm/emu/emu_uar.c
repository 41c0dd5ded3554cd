/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UAR pages and completion EQs: the two things a DevX context gets from
 * the kernel rather than from a firmware command of its own
 * (mlx5dv_devx_alloc_uar, mlx5dv_devx_query_eqn). The kernel allocates
 * a UAR with ALLOC_UAR on the context's behalf, so the emulator counts
 * it as a device object; the completion EQs are the function's, created
 * by the kernel at driver load, and only their numbers are visible.
 */
#include <errno.h>
#include <inttypes.h>

#include "emu_priv.h"


int
emu_uar_alloc(struct emu_dev *dev, uint32_t *page_id)
{
	uint32_t syndrome = 0;
	struct emu_obj *o;
	int status;

	atomic_fetch_add(&dev->cmd_count[PRM_CMD_ALLOC_UAR], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_ALLOC_UAR, 0, false, &syndrome);
	o = status == 0 ? emu_obj_new(dev, EMU_KIND_UAR, sizeof(struct emu_uar)) : NULL;
	pthread_mutex_unlock(&dev->lock);
	if (status != 0) {
		emu_log(dev, 4, "ALLOC_UAR failed: status 0x%x syndrome 0x%x", status, syndrome);
		return -EIO;
	}
	if (o == NULL)
		return -ENOMEM;
	*page_id = o->id;
	return 0;
}

int
emu_uar_free(struct emu_dev *dev, uint32_t page_id)
{
	uint32_t syndrome = 0;
	struct emu_obj *o;
	int status;

	pthread_mutex_lock(&dev->lock);
	o = emu_obj_find(dev, EMU_KIND_UAR, page_id);
	status = o != NULL ? emu_obj_destroy(dev, o, &syndrome) : -1;
	pthread_mutex_unlock(&dev->lock);
	if (o == NULL)
		return -ENOENT;
	return status == PRM_STATUS_OK ? 0 : -EBUSY;
}

static void
uar_write(struct emu_dev *dev, uint32_t page_id, uint32_t offset, uint64_t value, bool merged)
{
	uint32_t hi = (uint32_t)(value >> 32);

	pthread_mutex_lock(&dev->lock);
	if (emu_obj_find(dev, EMU_KIND_UAR, page_id) == NULL) {
		/* A process can only write a page it mapped: this is a driver bug. */
		emu_log(dev, 3, "write to UAR page %u that is not allocated (offset 0x%x)",
			page_id, offset);
	} else if (offset == EMU_UAR_CQ_DOORBELL) {
		emu_net_cq_doorbell(dev, page_id, (uint32_t)value & 0xffffff, (hi >> 28) & 0x3,
				    (hi >> 24) & 0x3, hi & 0xffffff);
		if (merged)
			emu_net_cq_doorbell_others(dev, page_id);
	} else {
		emu_log(dev, 4, "UAR page %u: write at offset 0x%x (0x%" PRIx64 ") is no "
			"doorbell this device models", page_id, offset, value);
	}
	pthread_mutex_unlock(&dev->lock);
}

void
emu_uar_write(struct emu_dev *dev, uint32_t page_id, uint32_t offset, uint64_t value)
{
	uar_write(dev, page_id, offset, value, false);
}

void
emu_uar_write_merged(struct emu_dev *dev, uint32_t page_id, uint32_t offset, uint64_t value)
{
	uar_write(dev, page_id, offset, value, true);
}

int
emu_eqn_query(struct emu_dev *dev, uint32_t vector, uint32_t *eqn)
{
	/* mlx5dv_devx_query_eqn: EINVAL for a vector the function does not have. */
	if (vector >= EMU_NUM_COMP_EQS)
		return -EINVAL;
	/* Numbered from the profile's comp_eqn_base (EMU_CAP_COMP_EQN_BASE). */
	*eqn = dev->prof->caps.comp_eqn_base + vector;
	return 0;
}

bool
emu_eqn_is_completion(const struct emu_dev *dev, uint32_t eqn)
{
	uint32_t base = dev->prof->caps.comp_eqn_base;

	return eqn >= base && eqn < base + EMU_NUM_COMP_EQS;
}
