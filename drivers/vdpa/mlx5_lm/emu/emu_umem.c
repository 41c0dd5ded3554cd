/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The umem registry: what the kernel does for mlx5dv_devx_umem_reg. A
 * registration pins the pages (the device's own mapping of them, which
 * outlives vhost's) after checking that they are backed by their file,
 * and is described in the page size the kernel would pick from the
 * caller's bitmap; an object then sits only where that description can
 * place it. The kernel's MRs pin the same way (emu_mkey.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <linux/userfaultfd.h>

#include "emu_priv.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/*
 * Pin: a second mapping of the same pages for the device (mremap with
 * old size 0 duplicates a shared mapping). vhost unmaps and remaps areas
 * such as the dirty log when a front end sends them again; a real device
 * keeps writing to the pinned pages, so must the emulated one. Private
 * memory cannot be duplicated this way: the device uses the caller's
 * pointer, which the caller keeps valid while registered.
 */
void
emu_umem_pin(struct emu_umem *u)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)u->addr & ~(page - 1);
	size_t len = ((uintptr_t)u->addr + u->size - start + page - 1) & ~(page - 1);
	void *alias = mremap((void *)start, 0, len, MREMAP_MAYMOVE);

	if (alias == MAP_FAILED)
		return;
	u->pin_base = alias;
	u->pin_len = len;
	u->addr = (uint8_t *)alias + ((uintptr_t)u->addr - start);
}

/*
 * Pinning fails for memory that has no page behind it, as the kernel's
 * ib_umem_get() does (pin_user_pages() returns -EFAULT for a page of a
 * shared mapping beyond the end of its file): real hardware never sees
 * it, and a device reading it later would be a SIGBUS in the data path.
 * Probed with process_vm_readv() on ourselves, which returns EFAULT
 * instead of faulting. The duplicate mapping covers contiguous file
 * offsets, so its last page is the one furthest into the file: if it is
 * backed, every page is (as long as the front end does not shrink the
 * file afterwards, which a pinned page would survive and we do not).
 * Without a duplicate (private memory) the first and last pages are checked.
 */
static int
emu_page_backed(const uint8_t *p)
{
	uint8_t byte;
	struct iovec local = { .iov_base = &byte, .iov_len = 1 };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)p, .iov_len = 1 };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

int
emu_umem_backed(const struct emu_umem *u)
{
	if (u->pin_base != NULL)
		return emu_page_backed((const uint8_t *)u->pin_base + u->pin_len - 1);
	return emu_page_backed(u->addr) && emu_page_backed(u->addr + u->size - 1);
}

/* ib_access_writable(): the IB access flags that make a pin FOLL_WRITE. */
#define EMU_IB_ACCESS_WRITABLE (1u /* LOCAL_WRITE */ | 2u /* REMOTE_WRITE */ | \
				8u /* REMOTE_ATOMIC */ | 16u /* MW_BIND */)

/*
 * The device's userfaultfd (emu_dev.uffd, emu_umem_write_pin_allowed), or
 * -1 when none can be had (a seccomp filter, an old kernel): then the rule
 * is not checked, and the device says so.
 */
int
emu_umem_uffd_open(struct emu_dev *dev)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd, err;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && ioctl(fd, UFFDIO_API, &api) == 0)
		return fd;
	err = errno;
	if (fd >= 0)
		close(fd);
	emu_log(dev, 6, "userfaultfd unavailable (%s): writable pins of shared file mappings "
		"are not checked against Linux mm/gup.c writable_file_mapping_allowed",
		strerror(err));
	return -1;
}

/*
 * Linux 6.5 and later refuse a long-term writable pin of a shared mapping
 * of a file whose filesystem tracks dirty pages (mm/gup.c check_vma_flags:
 * FOLL_PIN | FOLL_LONGTERM | FOLL_WRITE and vma_needs_dirty_tracking ->
 * writable_file_mapping_allowed() false -> EFAULT): the device's writes
 * would bypass the page cache's write notification. ib_umem_get() pins
 * that way for every writable registration, so guest memory on ext4, xfs
 * or btrfs cannot be registered; memfd, tmpfs (/dev/shm) and hugetlbfs,
 * which need no writeback, can. The kernel tells which of them a mapping
 * is without a file descriptor through userfaultfd: a MISSING-mode
 * registration is taken for anonymous, shmem and hugetlb mappings only
 * (vma_can_userfault), which is the set the pin allows (ramfs, which the
 * pin also allows, is refused here: the stricter reading). Checked on one
 * page of the device's own mapping (emu_umem_pin: one mapping of one file,
 * as mremap duplicates within one VMA), registered and unregistered at
 * once; nothing faults through it meanwhile, as no one has its address
 * yet. Where userfaultfd cannot be had (a seccomp filter, an old kernel),
 * the rule is not checked, as the device said when it was created.
 */
int
emu_umem_write_pin_allowed(struct emu_dev *dev, const struct emu_umem *u, uint32_t access)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int uffd, ret, err;

	/*
	 * No duplicate (emu_umem_pin): private memory, never a shared file
	 * mapping; or hugetlb, which mremap does not duplicate and the pin
	 * takes (a userfaultfd registration of one base page of it would be
	 * EINVAL, not a refusal).
	 */
	if (u->pin_base == NULL || (access & EMU_IB_ACCESS_WRITABLE) == 0)
		return 1;
	uffd = dev->uffd;
	if (uffd < 0)
		return 1;
	reg.range.start = (uintptr_t)u->pin_base;
	reg.range.len = page;
	ret = ioctl(uffd, UFFDIO_REGISTER, &reg);
	err = errno;
	if (ret == 0)
		ioctl(uffd, UFFDIO_UNREGISTER, &reg.range);
	return ret == 0 || err != EINVAL;
}

void
emu_umem_unpin(struct emu_umem *u)
{
	if (u->pin_base != NULL)
		munmap(u->pin_base, u->pin_len);
	u->pin_base = NULL;
}

/*
 * The page size the kernel describes a umem with (Linux devx.c
 * devx_umem_find_best_pgsize over ib_umem_find_best_pgoff): the largest
 * size of the bitmap (without one: every size from 4 KiB) that is at most
 * max(order_base_2(length), PAGE_SHIFT) and that the pinned pages are
 * physically contiguous and aligned for. The emulator's host memory is
 * contiguous within a host page only (ordinary pages, no hugepage
 * guarantee), so that is the largest size it can give: a 64 KiB-page host
 * describes umems in 64 KiB pages unless the bitmap asks for smaller ones
 * ("if the page_size is less than the CPU page size then we can use the
 * offset"). 0 when the bitmap allows no usable size (EINVAL).
 */
static uint64_t
umem_best_pgsz(const struct emu_dev *dev, size_t size, uint64_t bitmap)
{
	uint64_t host = dev->prof->host_page_size, pg;
	unsigned int top = 12;

	while (top < 63 && (1ull << top) < size)
		top++;
	if ((1ull << top) < host)
		top = (unsigned int)__builtin_ctzll(host);
	for (pg = 1ull << top; pg >= 4096; pg >>= 1)
		if ((bitmap & pg) && pg <= host)
			return pg;
	return 0;
}

/* The plain call: rdma-core 44's _mlx5dv_devx_umem_reg sends every size from 4 KiB. */
int
emu_umem_reg(struct emu_dev *dev, void *addr, size_t size, uint32_t access, uint32_t *id,
	     uint32_t *syndrome)
{
	return emu_umem_reg_ex(dev, addr, size, access, EMU_UMEM_PGSZ_DEFAULT, id, syndrome);
}

int
emu_umem_reg_ex(struct emu_dev *dev, void *addr, size_t size, uint32_t access,
		uint64_t pgsz_bitmap, uint32_t *id, uint32_t *syndrome)
{
	const struct emu_profile *p = dev->prof;
	double gib = (double)size / GIB;
	/* devx_umem_reg_cmd_alloc(): without a bitmap, every page size from 4 KiB. */
	uint64_t pgsz = umem_best_pgsz(dev, size, pgsz_bitmap != 0 ? pgsz_bitmap :
				       EMU_UMEM_PGSZ_DEFAULT);
	struct emu_umem *u;
	int status;

	*syndrome = 0;
	*id = 0;
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_CREATE_UMEM], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_CREATE_UMEM, 0, false, syndrome);
	pthread_mutex_unlock(&dev->lock);
	if (status != 0)
		return status;
	if (addr == NULL || size == 0) {
		*syndrome = EMU_SYND_BAD_PARAM;
		return PRM_STATUS_BAD_PARAM;
	}
	if (pgsz == 0) {
		emu_log(dev, 3, "umem %p+0x%zx: page size bitmap 0x%" PRIx64 " allows no page "
			"size the kernel can describe it with (host pages of %" PRIu64 " bytes; "
			"Linux devx.c devx_umem_reg_cmd_alloc: EINVAL)", addr, size, pgsz_bitmap,
			p->host_page_size);
		*syndrome = EMU_SYND_UMEM_BAD_PGSZ;
		return PRM_STATUS_BAD_PARAM;
	}
	if (size < EMU_UMEM_SMALL) {
		emu_slot_hold(dev, emu_cost_us(p, EMU_COST_UMEM_REG_SMALL, gib, 0));
	} else {
		/* Pinning is host work: a host token, not a firmware slot. */
		double pin_us = emu_cost_us(p, EMU_COST_GUEST_UMEM_PIN, gib, 0);

		emu_pin_hold(dev, pin_us);
		emu_slot_hold(dev, emu_cost_us(p, EMU_COST_GUEST_UMEM_REG, gib, 0));
	}
	pthread_mutex_lock(&dev->lock);
	u = (struct emu_umem *)emu_obj_new(dev, EMU_KIND_UMEM, sizeof(*u));
	if (u != NULL) {
		u->addr = addr;
		u->va = addr;
		u->size = size;
		u->access = access;
		u->page_size = pgsz;
		u->pgsz_bitmap = pgsz_bitmap != 0;
		emu_umem_pin(u);
		if (!emu_umem_backed(u)) {
			emu_log(dev, 3, "umem %p+0x%zx: pages beyond the end of their file "
				"cannot be pinned (ib_umem_get: EFAULT): registration refused",
				addr, size);
			/* Never visible: it (and its pin) goes before anyone learns its id. */
			emu_obj_destroy(dev, &u->obj, syndrome);
			*syndrome = EMU_SYND_UMEM_NOT_BACKED;
			pthread_mutex_unlock(&dev->lock);
			return PRM_STATUS_BAD_PARAM;
		}
		if (!emu_umem_write_pin_allowed(dev, u, access)) {
			emu_log(dev, 3, "umem %p+0x%zx: a writable pin of a shared mapping of a "
				"file whose filesystem tracks dirty pages (not memfd, tmpfs or "
				"hugetlbfs): refused (Linux 6.5+ mm/gup.c "
				"writable_file_mapping_allowed, ib_umem_get: EFAULT)", addr, size);
			emu_obj_destroy(dev, &u->obj, syndrome);
			*syndrome = EMU_SYND_UMEM_WRITEBACK_FILE;
			pthread_mutex_unlock(&dev->lock);
			return PRM_STATUS_BAD_PARAM;
		}
		*id = u->obj.id;
	}
	pthread_mutex_unlock(&dev->lock);
	if (u == NULL) {
		*syndrome = EMU_SYND_BAD_PARAM;
		return PRM_STATUS_NO_RESOURCES;
	}
	return 0;
}

int
emu_umem_dereg(struct emu_dev *dev, uint32_t id, uint32_t *syndrome)
{
	struct emu_obj *o;
	enum emu_cost_id cost = EMU_COST_UMEM_DEREG_SMALL;
	double gib = 0;
	int status;

	*syndrome = 0;
	atomic_fetch_add(&dev->cmd_count[PRM_CMD_DESTROY_UMEM], 1);
	pthread_mutex_lock(&dev->lock);
	status = emu_fault_check(dev, PRM_CMD_DESTROY_UMEM, 0, false, syndrome);
	if (status != 0) {
		pthread_mutex_unlock(&dev->lock);
		return status;
	}
	o = emu_obj_find(dev, EMU_KIND_UMEM, id);
	if (o == NULL) {
		*syndrome = EMU_SYND_UNKNOWN_OBJ;
		status = PRM_STATUS_BAD_RES;
	} else {
		size_t size = ((struct emu_umem *)o)->size;

		if (size >= EMU_UMEM_SMALL) {
			cost = EMU_COST_GUEST_UMEM_DEREG;
			gib = (double)size / GIB;
		}
		/* RES_BUSY while an mkey, virtq, CQ or QP still uses it. */
		status = emu_obj_destroy(dev, o, syndrome);
	}
	pthread_mutex_unlock(&dev->lock);
	emu_slot_hold(dev, status == 0 ? emu_cost_us(dev->prof, cost, gib, 0) :
				      emu_cost_base_us(dev->prof, cost));
	return status;
}

/*
 * An object built on a umem at offset off. Linux devx.c
 * devx_umem_reg_cmd_alloc(): "If the user does not pass in pgsz_bitmap
 * then the user promises not to use umem_offset!=0 in any commands that
 * allocate on top of the umem" (rdma-core's plain mlx5dv_devx_umem_reg
 * sends its bitmap as an optional attribute, which a kernel may drop: only
 * mlx5dv_devx_umem_reg_ex makes it part of the call). The kernel
 * describes the umem in pages of u->page_size (its start at the umem's
 * own page_offset), and an object's buffer must start where its page list
 * can say: at a page of the umem (offset a multiple of the page size),
 * or, for objects with a page_offset field (cqc, qpc: in page/64 quanta),
 * that many quanta into one.
 */
bool
emu_umem_offset_ok(struct emu_dev *dev, const struct emu_umem *u, uint64_t off, int page_offset,
		   const char *what)
{
	uint64_t pg = u->page_size ? u->page_size : 4096;
	/* The umem's own start in its first page is the kernel's (umem page_offset). */
	uint64_t start = off & (pg - 1);

	if (off != 0 && !u->pgsz_bitmap) {
		emu_log(dev, 3, "%s at offset 0x%" PRIx64 " of umem %u registered without a page "
			"size bitmap: refused (Linux devx.c devx_umem_reg_cmd_alloc: without "
			"pgsz_bitmap the caller promises umem_offset 0)", what, off, u->obj.id);
		return false;
	}
	if (page_offset == EMU_UMEM_ANY_IN_PAGE) {
		if (off % 8 == 0)
			return true;
		emu_log(dev, 3, "%s at offset 0x%" PRIx64 " of umem %u: not 8-byte aligned: "
			"refused (PRM dbr_addr)", what, off, u->obj.id);
		return false;
	}
	if (page_offset < 0 ? start != 0 : start != (uint64_t)page_offset * (pg / 64)) {
		emu_log(dev, 3, "%s at offset 0x%" PRIx64 " of umem %u: starts 0x%" PRIx64 " into "
			"a %" PRIu64 "-byte page of the umem, page_offset says 0x%" PRIx64 ": refused "
			"(PRM: a buffer starts at a umem page, plus page_offset in page/64 quanta)",
			what, off, u->obj.id, start, pg,
			page_offset < 0 ? 0 : (uint64_t)page_offset * (pg / 64));
		return false;
	}
	return true;
}
