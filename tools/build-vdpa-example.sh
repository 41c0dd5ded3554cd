#!/usr/bin/env bash
# Build DPDK's stock dpdk-vdpa example, whose source Debian ships in dpdk-doc
# (/usr/share/dpdk/examples/vdpa) but not its binary, into DIR (default
# build/examples) as DIR/dpdk-vdpa, and print that path.
set -euo pipefail
usage() {
	echo "Usage: tools/build-vdpa-example.sh [DIR]"
	echo "Builds DPDK's dpdk-vdpa example (package dpdk-doc) into DIR/dpdk-vdpa"
	echo "(default DIR: build/examples) and prints its path."
}
case "${1:-}" in
-h|--help) usage; exit 0 ;;
-*) usage >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mkdir -p "${1:-$top/build/examples}" && cd "${1:-$top/build/examples}" && pwd)
src=/usr/share/dpdk/examples/vdpa
if [ ! -d "$src" ]; then
	bash "$top/tools/setup.sh"
fi
if [ ! -d "$src" ]; then
	echo "build-vdpa-example: $src missing: install the dpdk-doc package" >&2
	exit 1
fi
rm -rf "$dir/vdpa-src"
cp -r "$src" "$dir/vdpa-src"
make -s -C "$dir/vdpa-src" >/dev/null
cp "$dir/vdpa-src/build/vdpa" "$dir/dpdk-vdpa"
echo "$dir/dpdk-vdpa"
