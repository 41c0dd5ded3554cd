/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator linked into the program (the in-process tests, which reach
 * into the emulated device they probe): registered with the transport
 * before main, so that emu= is served by this copy and nothing is loaded.
 */
#include "devx_priv.h"

static void __attribute__((constructor))
devx_emu_inproc_register(void)
{
	devx_emu_register(mlx5_lm_emu_ops_v2());
}
