/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory keys. A direct mkey maps its range to a umem or to an explicit
 * page list; an indirect one (KLM, KSM) is a concatenation of ranges of
 * other mkeys, with the null mkey as a hole. Translation (indirect ->
 * direct -> host address) is what the data path does per descriptor, so
 * indirect entries are kept sorted and searched. The kernel's MRs
 * (ibv_reg_mr) are direct mkeys over a range it pins (emu_umem.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* Indirect mkeys may nest; deeper chains are a driver bug (and a loop guard). */
#define EMU_MKEY_MAX_DEPTH 4

/* ---- mkey translation -------------------------------------------------------- */
struct emu_mkey *
emu_mkey_find_key(struct emu_dev *dev, uint32_t key)
{
	struct emu_mkey *mk;

	if (key == EMU_NULL_MKEY)
		return NULL;
	mk = (struct emu_mkey *)emu_obj_find(dev, EMU_KIND_MKEY, key >> 8);
	/* The low byte (mkey_7_0) is part of the key: a stale variant misses. */
	if (mk == NULL || mk->key != key)
		return NULL;
	return mk;
}

static const struct emu_klm *
klm_search(const struct emu_mkey *mk, uint64_t off)
{
	uint32_t lo = 0, hi = mk->n_klm;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct emu_klm *e = &mk->klm[mid];

		if (off < e->start)
			hi = mid;
		else if (off - e->start >= e->len)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

/*
 * Resolve through mkeys to host memory: the device's own mapping (the data
 * path), or with caller_view the registrant's address of the same bytes.
 */
static int
xlate(const struct emu_mkey *mk, uint64_t addr, uint64_t len, uint8_t **host,
      uint64_t *contig, int depth, int caller_view, bool write)
{
	uint64_t off, avail;

	if (depth > EMU_MKEY_MAX_DEPTH || addr < mk->start_addr ||
	    addr - mk->start_addr >= mk->len)
		return -EFAULT;
	/* The device writes through an mkey only if it grants local write (mkc lw). */
	if (write && !(mk->access & EMU_MKEY_ACCESS_LW))
		return -EACCES;
	off = addr - mk->start_addr;
	avail = mk->len - off;
	if (len > avail)
		len = avail;
	switch (mk->type) {
	case EMU_MKEY_UMEM:
		*host = (caller_view ? mk->umem->va : mk->umem->addr) + mk->umem_offset + off;
		*contig = len;
		return 0;
	case EMU_MKEY_MTT_LIST: {
		uint64_t pg = 1ull << mk->log_page_size;
		uint64_t o = off + (mk->start_addr & (pg - 1));
		uint64_t idx = o >> mk->log_page_size, in_pg = o & (pg - 1);

		if (idx >= mk->n_pages)
			return -EFAULT;
		/*
		 * Only the kernel's MRs have a page list (a DevX mkey is umem-backed):
		 * page k at pages_base + k * page size, one pin.
		 */
		*host = (uint8_t *)(uintptr_t)(mk->pages_base + idx * pg + in_pg);
		*contig = len;
		/* An MR's pages are the kernel's pin of the registrant's range. */
		if (caller_view && mk->mr_pin != NULL)
			*host = mk->mr_va + (*host - mk->mr_pin->addr);
		return 0;
	}
	case EMU_MKEY_KLM:
	case EMU_MKEY_KSM: {
		const struct emu_klm *e;
		uint64_t in_e;

		if (mk->type == EMU_MKEY_KSM) {
			uint64_t idx = off >> mk->log_page_size;

			e = idx < mk->n_klm ? &mk->klm[idx] : NULL;
		} else {
			e = klm_search(mk, off);
		}
		if (e == NULL || e->target == NULL)
			return -EFAULT;
		in_e = off - e->start;
		if (len > e->len - in_e)
			len = e->len - in_e;
		return xlate(e->target, e->addr + in_e, len, host, contig, depth + 1, caller_view,
			     write);
	}
	}
	return -EFAULT;
}

int
emu_mkey_xlate(const struct emu_mkey *mk, uint64_t addr, uint64_t len, uint8_t **host,
	       uint64_t *contig)
{
	return xlate(mk, addr, len, host, contig, 0, 0, false);
}

int
emu_mkey_xlate_write(const struct emu_mkey *mk, uint64_t addr, uint64_t len, uint8_t **host,
		     uint64_t *contig)
{
	return xlate(mk, addr, len, host, contig, 0, 0, true);
}

int
emu_mkey_translate(struct emu_dev *dev, uint32_t mkey, uint64_t addr, size_t len, void **host)
{
	const struct emu_mkey *mk;
	uint8_t *first = NULL, *h;
	uint64_t done = 0, got;
	int ret = 0;

	pthread_mutex_lock(&dev->lock);
	mk = emu_mkey_find_key(dev, mkey);
	if (mk == NULL)
		ret = -EFAULT;
	/* One pointer for the whole range: every extent must follow the last. */
	while (ret == 0 && (done < len || done == 0)) {
		ret = xlate(mk, addr + done, len - done, &h, &got, 0, 1, false);
		if (ret < 0)
			break;
		if (first == NULL)
			first = h;
		else if (h != first + done)
			ret = -EFAULT;
		done += got;
		if (got == 0)
			break;
	}
	pthread_mutex_unlock(&dev->lock);
	if (ret == 0)
		*host = first;
	return ret;
}

/* ---- CREATE_MKEY / DESTROY_MKEY ----------------------------------------------- */
static int
mkey_fill_klm(struct emu_ctx *c, struct emu_mkey *mk, uint32_t n)
{
	const uint8_t *list = PRM_CADDR(create_mkey_in, c->in, klm_pas_mtt);
	uint64_t at = 0, ksm = 1ull << mk->log_page_size;
	uint32_t i;

	mk->klm = calloc(n, sizeof(*mk->klm));
	if (mk->klm == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	mk->n_klm = n;
	for (i = 0; i < n; i++) {
		const uint8_t *e = list + i * PRM_SIZE(klm);
		struct emu_klm *k = &mk->klm[i];
		uint32_t key = (uint32_t)PRM_GET(klm, e, mkey);

		/*
		 * Entries past the mkey's length are padding: drivers round the
		 * list up to a multiple of 4 entries and leave the rest zero
		 * (Linux mlx5_ib mr.c: ndescs = ALIGN(max_num_sg, 4); DPDK
		 * mlx5_devx_cmd_mkey_create: RTE_ALIGN(klm_num, 4), mkey 0).
		 * The device translates [start_addr, start_addr + len) only and
		 * never walks them, so they are neither checked nor held.
		 */
		if (at >= mk->len) {
			mk->n_klm = i;
			break;
		}

		/* KSM entries have a fixed size and ignore byte_count. */
		k->len = mk->type == EMU_MKEY_KSM ? ksm : PRM_GET(klm, e, byte_count);
		k->addr = PRM_GET(klm, e, address);
		k->start = at;
		if (k->len == 0 || k->len > PRM_MAX_KLM_BYTE_COUNT)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		at += k->len;
		if (key == EMU_NULL_MKEY)
			continue;  /* a hole */
		k->target = emu_mkey_find_key(c->dev, key);
		if (k->target == NULL)
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		/* An mkey is usable only by objects of its PD, an indirect mkey included. */
		if (k->target->pd != mk->pd) {
			emu_log(c->dev, 4, "CREATE_MKEY refused: entry %u names mkey 0x%x of "
				"PD %u, the indirect mkey is in PD %u (an mkey serves its own "
				"PD only)",
				i, key, k->target->pd, mk->pd);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_MKEY_PD_MISMATCH);
		}
		/* The entry must lie inside what the target maps. */
		if (k->addr < k->target->start_addr ||
		    k->addr - k->target->start_addr > k->target->len ||
		    k->len > k->target->len - (k->addr - k->target->start_addr))
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		if (emu_obj_hold(&mk->obj, &k->target->obj) < 0)
			return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	}
	/* The entries must cover [start_addr, start_addr + len). */
	if (at < mk->len)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	return 0;
}

int
emu_mkey_create(struct emu_ctx *c)
{
	const void *mkc = PRM_CADDR(create_mkey_in, c->in, mkc);
	uint32_t mode = (uint32_t)(PRM_GET(mkc, mkc, access_mode_4_2) << 2 |
				   PRM_GET(mkc, mkc, access_mode_1_0));
	uint32_t octs = (uint32_t)PRM_GET(create_mkey_in, c->in,
					  translations_octword_actual_size), size;
	uint32_t umem_id = (uint32_t)PRM_GET(create_mkey_in, c->in, mkey_umem_id);
	bool umem_valid = PRM_GET(create_mkey_in, c->in, mkey_umem_valid) != 0;
	uint64_t umem_off = PRM_GET(create_mkey_in, c->in, mkey_umem_offset);
	struct emu_obj *pd, *umem = NULL;
	struct emu_mkey *mk;
	enum emu_mkey_type type;
	int status;

	c->gib = (double)PRM_GET(mkc, mkc, len) / GIB;
	switch (mode) {
	case PRM_MKC_ACCESS_MODE_MTT:
		/*
		 * The kernel sets mkey_umem_valid on every DevX CREATE_MKEY that
		 * is not KLM/KSM (Linux devx.c devx_handle_mkey_create): the
		 * firmware translates through the umem it names. Without it the
		 * MTT list would hold bus addresses, which user space has none
		 * of; the kernel's own MRs (emu_kernel_reg_mr) never come here.
		 */
		if (!umem_valid) {
			emu_log(c->dev, 4, "CREATE_MKEY MTT refused: mkey_umem_valid = 0, a DevX "
				"direct mkey is translated through a umem (Linux devx.c "
				"devx_handle_mkey_create sets mkey_umem_valid)");
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		}
		type = EMU_MKEY_UMEM;
		c->cost[0] = EMU_COST_CREATE_MKEY_DIRECT;
		break;
	case PRM_MKC_ACCESS_MODE_KLM:
	case PRM_MKC_ACCESS_MODE_KSM:
		type = mode == PRM_MKC_ACCESS_MODE_KLM ? EMU_MKEY_KLM : EMU_MKEY_KSM;
		c->cost[0] = EMU_COST_CREATE_MKEY_INDIRECT;
		c->entries = octs;
		break;
	default:
		/* PA mode needs physical addresses: not for user space. */
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
	/*
	 * A umem-backed mkey takes its translation from the umem: any
	 * octword count it carries (DPDK sets one) describes no list here.
	 */
	if (type != EMU_MKEY_UMEM) {
		/* One KLM per octword; the mailbox bounds how many fit in a command. */
		if (octs > PRM_MAX_KLM_PER_CMD)
			return emu_fail(c, PRM_STATUS_EXCEED_LIM, EMU_SYND_TOO_MANY_ENTRIES);
		if (c->inlen < PRM_SIZE(create_mkey_in) + (size_t)octs * 16)
			return emu_fail(c, PRM_STATUS_BAD_INPUT_LEN, EMU_SYND_BAD_INPUT_LEN);
		if (octs == 0)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		/*
		 * The mkey's list size (mkc translations_octword_size): in
		 * octwords, a multiple of 4 for KLM and KSM lists (Linux's
		 * mlx5_ib and mlx5_vdpa and DPDK's mlx5 all round it up so), at
		 * least the entries the command carries, at most the HCA cap
		 * log_max_klm_list_size allows.
		 */
		size = (uint32_t)PRM_GET(mkc, mkc, translations_octword_size);
		if (size > (1u << EMU_CAP_LOG_MAX_KLM_LIST_SIZE)) {
			emu_log(c->dev, 4, "CREATE_MKEY refused: translations_octword_size %u is "
				"past the HCA cap log_max_klm_list_size (%u)", size,
				EMU_CAP_LOG_MAX_KLM_LIST_SIZE);
			return emu_fail(c, PRM_STATUS_EXCEED_LIM, EMU_SYND_TOO_MANY_ENTRIES);
		}
		if (size % 4 != 0 || size < octs) {
			emu_log(c->dev, 4, "CREATE_MKEY refused: translations_octword_size %u for "
				"%u entries: an indirect list is a multiple of 4 octwords that "
				"holds them (Linux mlx5_ib, DPDK mlx5_devx_cmd_mkey_create: "
				"ALIGN(entries, 4))", size, octs);
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
		}
	}
	/*
	 * log_page_size is 5 bits: every value it holds, 31 included, is an
	 * entity size the device takes (Linux mlx5_ib.h: the largest shift is
	 * (1 << 5) - 1 without umr_log_entity_size_5); DPDK's vdpa/mlx5 maps a
	 * 2 GiB guest with one 2^31-byte KSM entry.
	 */
	if (PRM_GET(mkc, mkc, length64) || PRM_GET(mkc, mkc, len) == 0)
		return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	pd = emu_obj_find(c->dev, EMU_KIND_PD, (uint32_t)PRM_GET(mkc, mkc, pd));
	if (pd == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
	if (type == EMU_MKEY_UMEM) {
		/* Umem ids start at 1: 0, as any unknown id, names no umem. */
		umem = emu_obj_find(c->dev, EMU_KIND_UMEM, umem_id);
		if (umem == NULL) {
			emu_log(c->dev, 4, "CREATE_MKEY MTT refused: mkey_umem_id %u names no umem "
				"the mkey could translate through", umem_id);
			return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_BAD_REFERENCE);
		}
		if (umem_off > ((struct emu_umem *)umem)->size ||
		    PRM_GET(mkc, mkc, len) > ((struct emu_umem *)umem)->size - umem_off)
			return emu_fail(c, PRM_STATUS_BAD_PARAM, EMU_SYND_BAD_PARAM);
	}
	mk = (struct emu_mkey *)emu_obj_new(c->dev, EMU_KIND_MKEY, sizeof(*mk));
	if (mk == NULL)
		return emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
	mk->type = type;
	mk->key = mk->obj.id << 8 | (uint32_t)PRM_GET(mkc, mkc, mkey_7_0);
	mk->pd = pd->id;
	mk->start_addr = PRM_GET(mkc, mkc, start_addr);
	mk->len = PRM_GET(mkc, mkc, len);
	mk->log_page_size = (uint8_t)PRM_GET(mkc, mkc, log_page_size);
	mk->access = (uint8_t)((PRM_GET(mkc, mkc, lr) ? EMU_MKEY_ACCESS_LR : 0) |
			       (PRM_GET(mkc, mkc, lw) ? EMU_MKEY_ACCESS_LW : 0) |
			       (PRM_GET(mkc, mkc, rr) ? EMU_MKEY_ACCESS_RR : 0) |
			       (PRM_GET(mkc, mkc, rw) ? EMU_MKEY_ACCESS_RW : 0));
	status = emu_obj_hold(&mk->obj, pd) < 0 ?
		 emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM) : 0;
	if (status != 0)
		goto err;
	switch (type) {
	case EMU_MKEY_UMEM:
		mk->umem = (struct emu_umem *)umem;
		mk->umem_offset = umem_off;
		if (emu_obj_hold(&mk->obj, umem) < 0)
			status = emu_fail(c, PRM_STATUS_NO_RESOURCES, EMU_SYND_BAD_PARAM);
		break;
	default:
		status = mkey_fill_klm(c, mk, octs);
		break;
	}
	if (status != 0)
		goto err;
	PRM_SET(create_mkey_out, c->out, mkey_index, mk->obj.id);
	return PRM_STATUS_OK;
err:
	emu_obj_free(c->dev, &mk->obj);
	return status;
}

/* Drop every reference holder has on target (the held list keeps the others). */
static void
drop_held(struct emu_obj *holder, struct emu_obj *target)
{
	unsigned int i, n = 0;

	for (i = 0; i < holder->nheld; i++) {
		if (holder->held[i] == target) {
			target->refs--;
			continue;
		}
		holder->held[n++] = holder->held[i];
	}
	holder->nheld = n;
}

/*
 * DESTROY_MKEY destroys the mkey whoever still points at it: the firmware
 * keeps no count of the virtqs and indirect mkeys that name a key (the
 * PRM has no RES_BUSY for DESTROY_MKEY; Linux mlx5_ib and DPDK order
 * their own destroys). What named it faults on its next access: a virtq
 * whose virtio_q_mkey is gone goes to ERR with an OBJECT_CHANGE event at
 * its next descriptor (emu_datapath.c), a KLM entry that led to it is a
 * bad translation, and the key itself (index and variant) never
 * translates again. dev->lock held.
 */
static void
mkey_detach_users(struct emu_dev *dev, struct emu_mkey *mk)
{
	struct emu_obj *o;
	uint32_t i;

	for (o = dev->all.next; o != &dev->all && mk->obj.refs > 0; o = o->next) {
		bool holds = false;

		for (i = 0; i < o->nheld && !holds; i++)
			holds = o->held[i] == &mk->obj;
		if (!holds)
			continue;
		if (o->kind == EMU_KIND_VIRTQ) {
			struct emu_virtq *vq = (struct emu_virtq *)o;

			if (vq->mkey == mk)
				vq->mkey = NULL;
			emu_log(dev, 4, "virtq %u: its mkey 0x%x was destroyed while it names it: "
				"its next access faults", o->id, mk->key);
		} else if (o->kind == EMU_KIND_MKEY) {
			struct emu_mkey *ind = (struct emu_mkey *)o;

			for (i = 0; i < ind->n_klm; i++)
				if (ind->klm[i].target == mk) {
					ind->klm[i].target = NULL;
					ind->klm[i].dead = true;
				}
		}
		drop_held(o, &mk->obj);
	}
}

int
emu_mkey_destroy(struct emu_ctx *c)
{
	uint32_t idx = (uint32_t)PRM_GET(destroy_mkey_in, c->in, mkey_index);
	struct emu_mkey *mk = (struct emu_mkey *)emu_obj_find(c->dev, EMU_KIND_MKEY, idx);

	if (mk == NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	/* The kernel's MRs go through ibv_dereg_mr, never a DevX DESTROY_MKEY. */
	if (mk->mr_pin != NULL)
		return emu_fail(c, PRM_STATUS_BAD_RES, EMU_SYND_UNKNOWN_OBJ);
	c->gib = (double)mk->len / GIB;
	mkey_detach_users(c->dev, mk);
	return emu_obj_destroy(c->dev, &mk->obj, &c->syndrome);
}

/* ---- the kernel's MRs (ibv_reg_mr) ------------------------------------------------ */
/*
 * The page size mlx5_ib gives an MR's mkey (mr.c: mlx5_umem_find_best_pgsz
 * over ib_umem_find_best_pgsz with the MR's iova): the largest the mkey
 * takes (mkc.log_page_size: 2^31 here, as emu_mkey_create takes it), no
 * larger than the power of two covering [iova, iova + len), and such that
 * the pinned address and the iova agree below it (the device reaches
 * address + k through iova + k); down to the device's 4 KiB. When even
 * 4 KiB does not fit (they disagree below it) ib_umem_find_best_pgsz has
 * no page size left and returns 0, which mlx5_ib refuses (EINVAL): 0 here
 * too. The emulator's pin of the range is one contiguous mapping, so
 * physical contiguity bounds nothing more.
 */
static uint64_t
mr_best_pgsz(uintptr_t va, size_t len, uint64_t iova)
{
	uint64_t diff = va ^ iova;
	uint64_t span = (iova + len - 1) ^ iova;
	uint64_t pg = 1ull << 31;

	while (pg > 4096 && ((diff & (pg - 1)) != 0 || (pg >> 1) > span))
		pg >>= 1;
	return (diff & (pg - 1)) != 0 ? 0 : pg;
}

int
emu_kernel_reg_mr(struct emu_dev *dev, uint32_t pdn, void *addr, size_t len, uint64_t iova,
		  uint32_t access, uint32_t *lkey, uint32_t *syndrome)
{
	const struct emu_profile *p = dev->prof;
	double gib = (double)len / GIB;
	uint64_t pg, first;
	struct emu_umem *pin = NULL;
	struct emu_mkey *mk = NULL;
	struct emu_obj *pd;
	bool backed = false, writable_ok = false;
	int status;

	*syndrome = 0;
	*lkey = 0;
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_CREATE_MKEY], 1);
	if (addr == NULL || len == 0 || iova + len < iova) {
		*syndrome = EMU_SYND_BAD_PARAM;
		return PRM_STATUS_BAD_PARAM;
	}
	/* ib_umem_get: the pin, host work (a pin token), then the page list upload. */
	if (len < EMU_UMEM_SMALL) {
		emu_slot_hold(dev, emu_cost_us(p, EMU_COST_UMEM_REG_SMALL, gib, 0));
	} else {
		emu_pin_hold(dev, emu_cost_us(p, EMU_COST_GUEST_UMEM_PIN, gib, 0));
		emu_slot_hold(dev, emu_cost_us(p, EMU_COST_GUEST_UMEM_REG, gib, 0));
	}
	/*
	 * The pin's own mapping and its probe are host work on the caller's
	 * address space, not the device's state: made before the device's
	 * lock, which the MKEY workers of a preparation (up to 32 per device)
	 * and the data path all take. Their outcome is judged below in the
	 * order the kernel would (a fault injected for the command first).
	 */
	pin = calloc(1, sizeof(*pin));
	if (pin != NULL) {
		pin->obj.kind = EMU_KIND_UMEM;
		pin->addr = addr;
		pin->va = addr;
		pin->size = len;
		pin->access = access;
		emu_umem_pin(pin);
		backed = emu_umem_backed(pin);
		writable_ok = backed && emu_umem_write_pin_allowed(dev, pin, access);
	}
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_CREATE_MKEY, 0, false, syndrome);
	if (status != 0)
		goto out;
	pd = emu_obj_find(dev, EMU_KIND_PD, pdn);
	if (pd == NULL) {
		*syndrome = EMU_SYND_BAD_REFERENCE;
		status = PRM_STATUS_BAD_RES;
		goto out;
	}
	mk = pin == NULL ? NULL : (struct emu_mkey *)emu_obj_new(dev, EMU_KIND_MKEY, sizeof(*mk));
	if (mk == NULL) {
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_NO_RESOURCES;
		goto out;
	}
	mk->mr_pin = pin;
	mk->mr_va = addr;
	if (!backed) {
		emu_log(dev, 3, "MR %p+0x%zx: pages beyond the end of their file cannot be "
			"pinned (ib_umem_get: EFAULT): registration refused", addr, len);
		*syndrome = EMU_SYND_UMEM_NOT_BACKED;
		status = PRM_STATUS_BAD_PARAM;
		goto out;
	}
	if (!writable_ok) {
		emu_log(dev, 3, "MR %p+0x%zx: a writable pin of a shared mapping of a file whose "
			"filesystem tracks dirty pages (not memfd, tmpfs or hugetlbfs): refused "
			"(Linux 6.5+ mm/gup.c writable_file_mapping_allowed, ib_umem_get: EFAULT)",
			addr, len);
		*syndrome = EMU_SYND_UMEM_WRITEBACK_FILE;
		status = PRM_STATUS_BAD_PARAM;
		goto out;
	}
	/*
	 * Linux core/uverbs_cmd.c ib_uverbs_reg_mr: (start & ~PAGE_MASK) !=
	 * (hca_va & ~PAGE_MASK) is EINVAL before anything is pinned. Checked
	 * within 4 KiB, the page every host has: a 64 KiB-page profile runs on
	 * this machine's mmap, whose addresses need not be 64 KiB aligned.
	 */
	if ((((uintptr_t)addr ^ iova) & 4095) != 0) {
		emu_log(dev, 3, "MR %p+0x%zx at iova 0x%llx: address and iova at different "
			"offsets in a page: refused (uverbs_cmd.c ib_uverbs_reg_mr: EINVAL)",
			addr, len, (unsigned long long)iova);
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_BAD_PARAM;
		goto out;
	}
	pg = mr_best_pgsz((uintptr_t)addr, len, iova);
	if (pg == 0) {
		/* mlx5_ib mr.c: no page size fits the iova (best_pgsz 0): EINVAL. */
		emu_log(dev, 3, "MR %p+0x%zx at iova 0x%llx: no page size fits "
			"(ib_umem_find_best_pgsz 0, mlx5_ib mr.c: EINVAL)", addr, len,
			(unsigned long long)iova);
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_BAD_PARAM;
		goto out;
	}
	mk->type = EMU_MKEY_MTT_LIST;
	mk->key = mk->obj.id << 8 | ++dev->mr_variant;
	mk->pd = pd->id;
	mk->start_addr = iova;
	mk->len = len;
	mk->log_page_size = (uint8_t)__builtin_ctzll(pg);
	/*
	 * ibv access flags (IBV_ACCESS_LOCAL_WRITE 1, REMOTE_WRITE 2,
	 * REMOTE_READ 4); local read is always granted (Linux mlx5_ib
	 * set_mkc_access_pd_addr_fields sets lr).
	 */
	mk->access = (uint8_t)(EMU_MKEY_ACCESS_LR |
			       ((access & 1) ? EMU_MKEY_ACCESS_LW : 0) |
			       ((access & 2) ? EMU_MKEY_ACCESS_RW : 0) |
			       ((access & 4) ? EMU_MKEY_ACCESS_RR : 0));
	first = iova & ~(pg - 1);
	mk->n_pages = (uint32_t)((iova + len - first + pg - 1) / pg);
	if (emu_obj_hold(&mk->obj, pd) < 0) {
		*syndrome = EMU_SYND_BAD_PARAM;
		status = PRM_STATUS_NO_RESOURCES;
		goto out;
	}
	/*
	 * The page list the kernel uploads: page k holds iova page first + k.
	 * The emulator's pin is one contiguous mapping, so the list is that
	 * arithmetic (pages_base + k * page size) rather than an array.
	 */
	mk->pages_base = (uint64_t)(uintptr_t)pin->addr - (iova - first);
	*lkey = mk->key;
out:
	if (status != 0 && mk != NULL)
		emu_obj_free(dev, &mk->obj);
	pthread_mutex_unlock(&dev->lock);
	if (status != 0 && mk == NULL && pin != NULL) {
		emu_umem_unpin(pin);
		free(pin);
	}
	if (status == 0)
		emu_slot_hold(dev, emu_cost_us(p, EMU_COST_CREATE_MKEY_DIRECT, gib, 0));
	return status;
}

int
emu_kernel_dereg_mr(struct emu_dev *dev, uint32_t lkey, uint32_t *syndrome)
{
	struct emu_mkey *mk;
	double gib = 0;
	int status = 0;

	*syndrome = 0;
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_DESTROY_MKEY], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_DESTROY_MKEY, 0, false, syndrome);
	mk = status == 0 ? emu_mkey_find_key(dev, lkey) : NULL;
	if (status == 0 && (mk == NULL || mk->mr_pin == NULL)) {
		*syndrome = EMU_SYND_UNKNOWN_OBJ;
		status = PRM_STATUS_BAD_RES;
	}
	if (status == 0) {
		gib = (double)mk->len / GIB;
		mkey_detach_users(dev, mk);
		status = emu_obj_destroy(dev, &mk->obj, syndrome);
	}
	pthread_mutex_unlock(&dev->lock);
	/* DESTROY_MKEY, then the unpin and the page list, as a umem's deregistration. */
	emu_slot_hold(dev, emu_cost_us(dev->prof, EMU_COST_DESTROY_MKEY, gib, 0));
	if (status == 0)
		emu_slot_hold(dev, gib * GIB >= EMU_UMEM_SMALL ?
			      emu_cost_us(dev->prof, EMU_COST_GUEST_UMEM_DEREG, gib, 0) :
			      emu_cost_us(dev->prof, EMU_COST_UMEM_DEREG_SMALL, 0, 0));
	return status;
}

uint64_t
emu_dev_host_page_size(const struct emu_dev *dev)
{
	return dev->prof->host_page_size;
}

int
emu_query_special_contexts(struct emu_ctx *c)
{
	PRM_SET(query_special_contexts_out, c->out, null_mkey, EMU_NULL_MKEY);
	/*
	 * rdma-core's ibv_alloc_null_mr hands out the dump-fill mkey: reads
	 * through it return nothing and writes are dropped, which is what the
	 * null mkey does in an indirect mkey's holes. The emulator gives both
	 * the same key.
	 */
	PRM_SET(query_special_contexts_out, c->out, dump_fill_mkey, EMU_NULL_MKEY);
	return PRM_STATUS_OK;
}
