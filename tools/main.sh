#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install, build, then live-migrate
# a 256 GiB VM with 4 NICs x 16 queue pairs between emulated ConnectX-6 Dx
# devices three times per technique, and print the downtime table of the
# median runs with their spread and distance to the model floor (and write
# build/migrate-seed-mkey.json and .svg). Extra arguments go to migrate.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	# This script's own words (the comment above), before any install or build.
	sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
	echo
	echo "Usage: tools/main.sh [migrate options...]   (dpdk-test-lm migrate --help lists them)"
	exit 0
fi
bash tools/build.sh
exec build/app/test-lm/dpdk-test-lm migrate --scenario seed-mkey --repeat 3 \
	--stages baseline,precreate,parallel-mkey,deferred-delete,all,prereg \
	--json build/migrate-seed-mkey.json --plot build/migrate-seed-mkey.svg "$@"
