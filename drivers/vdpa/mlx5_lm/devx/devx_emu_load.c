/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator on demand: the emu back end and its hooks (devx_emu.h) are
 * in librte_vdpa_mlx5_lm_emu.so, which the production library does not
 * link (nor the libjansson the emulator needs). It is loaded once, at the
 * first emu= open or profile query, from the directory of the library
 * this code is in (where meson install puts both, and where the build
 * tree has both), else by its soname through the dynamic linker's search;
 * it stays loaded for the life of the process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devx_priv.h"

static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
/* Written once under emu_lock, then only read (acquire). */
static const struct devx_emu_ops *emu_ops;
static devx_log_fn emu_log_sink;       /* emu_lock */

/* emu_lock held: the ops are the process's from now on. */
static void
emu_ops_set(const struct devx_emu_ops *ops)
{
	if (emu_log_sink != NULL)
		ops->set_log(emu_log_sink);
	__atomic_store_n(&emu_ops, ops, __ATOMIC_RELEASE);
}

static const struct devx_emu_ops *
emu_ops_loaded(void)
{
	return __atomic_load_n(&emu_ops, __ATOMIC_ACQUIRE);
}

void
devx_emu_register(const struct devx_emu_ops *ops)
{
	pthread_mutex_lock(&emu_lock);
	if (emu_ops == NULL)
		emu_ops_set(ops);
	pthread_mutex_unlock(&emu_lock);
}

void
devx_set_emu_log(devx_log_fn fn)
{
	pthread_mutex_lock(&emu_lock);
	emu_log_sink = fn;
	if (emu_ops != NULL)
		emu_ops->set_log(fn);
	pthread_mutex_unlock(&emu_lock);
}

/*
 * dlopen dir/DEVX_EMU_LIBRARY when there is such a file; NULL, with
 * dlerror()'s reason in why when there was one that would not load.
 */
static void *
open_in(const char *dir, char *why, size_t whylen)
{
	char path[PATH_MAX];
	void *h;

	if (snprintf(path, sizeof(path), "%s/%s", dir, DEVX_EMU_LIBRARY) >= (int)sizeof(path) ||
	    access(path, F_OK) != 0)
		return NULL;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		snprintf(why, whylen, "%s", dlerror());
	return h;
}

/*
 * Beside this library's file as it was loaded (a link in DPDK's driver
 * directory, say), then beside the file that link names. dir gets the
 * first directory looked in ("" when this code is in no file of its own,
 * as in a program linked with the static library).
 */
static void *
open_beside_self(char *dir, size_t dirlen, char *why, size_t whylen)
{
	char *real, *slash;
	Dl_info info;
	void *h;

	dir[0] = '\0';
	if (dladdr((void *)devx_emu_load, &info) == 0 || info.dli_fname == NULL ||
	    strchr(info.dli_fname, '/') == NULL)
		return NULL;
	snprintf(dir, dirlen, "%s", info.dli_fname);
	slash = strrchr(dir, '/');
	*slash = '\0';
	h = open_in(dir, why, whylen);
	if (h != NULL || why[0] != '\0')
		return h;
	real = realpath(info.dli_fname, NULL);
	if (real == NULL)
		return NULL;
	slash = strrchr(real, '/');
	*slash = '\0';
	if (strcmp(real, dir) != 0)
		h = open_in(real, why, whylen);
	free(real);
	return h;
}

static const struct devx_emu_ops *
emu_library_load(char *err, size_t errlen)
{
	const struct devx_emu_ops *(*entry)(void);
	const struct devx_emu_ops *ops;
	char dir[PATH_MAX], why[512] = "";
	void *h;

	h = open_beside_self(dir, sizeof(dir), why, sizeof(why));
	if (h == NULL && why[0] != '\0') {
		/* There, but it would not load (libjansson missing, say). */
		snprintf(err, errlen, "cannot load the emulator library %s: %s",
			 DEVX_EMU_LIBRARY, why);
		return NULL;
	}
	if (h == NULL)
		h = dlopen(DEVX_EMU_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, errlen, "cannot load the emulator library %s (installed beside "
			 "the PMD): not in %s, and %s", DEVX_EMU_LIBRARY,
			 dir[0] != '\0' ? dir : "the PMD's directory", dlerror());
		return NULL;
	}
	*(void **)&entry = dlsym(h, DEVX_EMU_ENTRY);
	ops = entry != NULL ? entry() : NULL;
	if (ops == NULL || ops->size != sizeof(*ops)) {
		snprintf(err, errlen, "the emulator library %s is of another build of mlx5-lm "
			 "(no %s of this layout): install the one built with the PMD",
			 DEVX_EMU_LIBRARY, DEVX_EMU_ENTRY);
		dlclose(h);
		return NULL;
	}
	return ops;
}

const struct devx_emu_ops *
devx_emu_load(char *err, size_t errlen)
{
	const struct devx_emu_ops *ops = emu_ops_loaded();

	if (ops != NULL)
		return ops;
	pthread_mutex_lock(&emu_lock);
	if (emu_ops == NULL) {
		ops = emu_library_load(err, errlen);
		if (ops != NULL)
			emu_ops_set(ops);
	}
	ops = emu_ops;
	pthread_mutex_unlock(&emu_lock);
	return ops;
}

void *
devx_emu_dev(struct devx_ctx *ctx)
{
	return ctx->emu != NULL ? ctx->be_priv : NULL;
}

unsigned long
devx_emu_leaked_total(void)
{
	const struct devx_emu_ops *ops = emu_ops_loaded();

	/* No emulator loaded: no emulated device was ever opened. */
	return ops != NULL ? ops->leaked_total() : 0;
}

unsigned long
devx_emu_live_total(char *desc, size_t len)
{
	const struct devx_emu_ops *ops = emu_ops_loaded();

	if (desc != NULL && len != 0)
		desc[0] = '\0';
	return ops != NULL ? ops->live_total(desc, len) : 0;
}

int
devx_emu_profile_check(const char *profile, char *err, size_t errlen)
{
	const struct devx_emu_ops *ops = devx_emu_load(err, errlen);

	return ops != NULL ? ops->profile_check(profile, err, errlen) : -ENOTSUP;
}

int
devx_emu_profile_costs(const char *profile, unsigned int *cmd_slots,
		       unsigned int *host_pin_parallel, struct devx_cost_entry *e,
		       unsigned int n, char *err, size_t errlen)
{
	const struct devx_emu_ops *ops = devx_emu_load(err, errlen);

	if (ops == NULL)
		return -ENOTSUP;
	return ops->profile_costs(profile, cmd_slots, host_pin_parallel, e, n, err, errlen);
}

int
devx_emu_cost_stats(struct devx_ctx *ctx, struct devx_cost_stats *s)
{
	return ctx->emu != NULL ? ctx->emu->cost_stats(ctx, s) : -ENOTSUP;
}

int
devx_emu_set_uplink(struct devx_ctx *ctx, devx_wire_tx_fn fn, void *arg)
{
	return ctx->emu != NULL ? ctx->emu->set_uplink(ctx, fn, arg) : -ENOTSUP;
}

int
devx_emu_wire_rx(struct devx_ctx *ctx, const void *frame, size_t len)
{
	return ctx->emu != NULL ? ctx->emu->wire_rx(ctx, frame, len) : -ENOTSUP;
}

int
devx_emu_translate(struct devx_ctx *ctx, uint32_t mkey, uint64_t addr, size_t len, void **host)
{
	return ctx->emu != NULL ? ctx->emu->translate(ctx, mkey, addr, len, host) : -ENOTSUP;
}
