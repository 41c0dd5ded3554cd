#!/usr/bin/env bash
# Set up (packages), configure and build mlx5-lm into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build --quiet
