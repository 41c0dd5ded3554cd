#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install, build, then probe an
# emulated ConnectX-6 Dx and print its capabilities.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
exec build/app/test-lm/dpdk-test-lm probe --devargs "emu=cx6dx" "$@"
