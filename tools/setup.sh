#!/usr/bin/env bash
# Install the Debian 12 packages mlx5-lm needs to build and test.
# Idempotent: quiet and quick when everything is already there.
set -euo pipefail

packages=(
	gcc pkg-config meson ninja-build python3
	libdpdk-dev dpdk-dev dpdk-doc make  # DPDK 22.11: headers, libraries, dpdk-testpmd, examples
	dpdk python3-pyelftools           # dpdk-pmdinfo.py, which reads the PMD's embedded info
	libibverbs-dev ibverbs-providers  # rdma-core 44: mlx5dv DevX for real hardware
	libnuma-dev libjansson-dev libcmocka-dev valgrind
	clang libclang-rt-14-dev          # libFuzzer targets (tools/test.sh --fuzz)
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
