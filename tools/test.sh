#!/usr/bin/env bash
# Every test on a fresh Debian 12 machine: install, build, run meson's
# suites (unit, integration). Extra arguments go to `meson test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
exec meson test -C build --print-errorlogs "$@"
