#!/usr/bin/env bash
# Every test on a fresh Debian 12 machine: install, build, run meson's
# suites. Extra arguments go to `meson test`.
#   tools/test.sh               the normal build (./build): every suite
#   tools/test.sh --sanitize    an AddressSanitizer + UBSan build (./build-asan):
#                               unit and integration suites
#   tools/test.sh --tsan        a ThreadSanitizer build (./build-tsan): unit and
#                               integration suites, DPDK's uninstrumented internals
#                               suppressed (tools/sanitizers/tsan.supp)
#   tools/test.sh --fuzz        the libFuzzer targets (./build-fuzz, clang), ~20 s each
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	# This script's own words (the comment above), before any install or build.
	sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
	echo
	echo "The mode (--sanitize, --tsan, --fuzz) comes first; meson test's options follow"
	echo "(meson test --help), e.g. tools/test.sh --sanitize lifecycle."
	exit 0
fi
if [ "${1:-}" = "--fuzz" ]; then
	shift
	bash tools/setup.sh
	if [ ! -f build-fuzz/build.ninja ]; then
		CC=clang meson setup build-fuzz -Dfuzz=true >/dev/null
	fi
	# --quiet: no progress lines, but a compiler error is printed (>/dev/null hid it).
	ninja -C build-fuzz --quiet
	exec meson test -C build-fuzz --print-errorlogs --suite fuzz "$@"
fi
if [ "${1:-}" = "--sanitize" ]; then
	shift
	bash tools/setup.sh
	if [ ! -f build-asan/build.ninja ]; then
		# b_lundef=false: the sanitizer runtime resolves symbols at load time.
		meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	fi
	ninja -C build-asan --quiet
	# stdbuf's LD_PRELOAD in the test harness would otherwise come before ASan.
	export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:abort_on_error=0
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# 'nosanitize': the PMD inside programs built elsewhere, and valgrind.
	exec meson test -C build-asan --print-errorlogs --suite unit --suite integration \
		--no-suite nosanitize "$@"
fi
if [ "${1:-}" = "--tsan" ]; then
	shift
	bash tools/setup.sh
	if [ ! -f build-tsan/build.ninja ]; then
		meson setup build-tsan -Db_sanitize=thread -Db_lundef=false >/dev/null
	fi
	ninja -C build-tsan --quiet
	# halt_on_error: the first race fails its test (exit 66), with both stacks.
	export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tools/sanitizers/tsan.supp"
	exec meson test -C build-tsan --print-errorlogs --suite unit --suite integration \
		--no-suite nosanitize "$@"
fi
bash tools/build.sh
exec meson test -C build --print-errorlogs "$@"
