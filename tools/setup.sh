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
	libmicrohttpd-dev libsystemd-dev  # mlx5-lm-vhostd: its metrics page, sd_notify
	clang libclang-rt-14-dev          # libFuzzer targets (tools/test.sh --fuzz)
	iproute2 iputils-ping
)
# Only the OVS-DPDK deployment test, the peer's test (DPDK's own vdpa/mlx5 on
# the emulated device, integration/peer) and the check of mlx5-lm-vhostd's unit
# (systemd-analyze, in systemd) need these; each is skipped without them.
optional=(openvswitch-switch-dpdk librte-vdpa-mlx5-23 librte-common-mlx5-23 systemd)

# One set-up at a time: .ci/run starts the sanitizer builds side by side, and two
# apt-get runs at once would fail on dpkg's lock.
exec 9>"${TMPDIR:-/tmp}/mlx5-lm-setup.lock"
flock -w 1800 9

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
missing_optional=()
for p in "${optional[@]}"; do
	installed "$p" || missing_optional+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
echo "setup: installing ${missing[*]} ${missing_optional[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# One by one: a package that cannot be installed skips only its own test.
for p in ${missing_optional[@]+"${missing_optional[@]}"}; do
	if ! $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null; then
		echo "setup: could not install $p: the tests that need it are skipped"
	fi
done
