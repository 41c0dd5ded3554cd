#!/bin/bash
# Run a test binary N times under delay_preload.so (random delays around
# fd and socket calls, doc/reliability.md "Hunting a race"), keeping the
# log of every run that failed, hung or closed a number twice.
set -u
usage() {
	cat <<'USAGE'
Usage: tests/stress/stress_loop.sh [--hang-s S] BINARY N LOGDIR [ARGS...]

Runs BINARY ARGS... N times under build/tests/stress/delay_preload.so
(DELAY_PRELOAD overrides the path) with STRESS_EBADF=1; STRESS_PCT,
STRESS_US and STRESS_THREAD pass through (delay_preload.c says what they
do). A run still alive after S seconds (default 240) is a hang: what
tests/stress/dump_process.sh prints of it (every thread's kernel wait point
and stack, gdb's stacks, its fds and unix sockets with their queues) goes to
LOGDIR/hang-I.txt and it is killed. LOGDIR/progress has the counts, LOGDIR/summary one line per
run kept (failed, hung, or a close() that failed with EBADF).
For ASan builds ASAN_OPTIONS gets verify_asan_link_order=0 (the module
comes before the sanitizer runtime).
USAGE
}
hang_s=240
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) usage; exit 0 ;;
	--hang-s) hang_s=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 3 ] || { usage >&2; exit 2; }
bin=$1 n=$2 log=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
preload=${DELAY_PRELOAD:-$here/../../build/tests/stress/delay_preload.so}
[ -f "$preload" ] || { echo "stress_loop: no $preload (build first)" >&2; exit 2; }
mkdir -p "$log"
export STRESS_EBADF=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
pass=0 fail=0 hang=0
for i in $(seq 1 "$n"); do
	LD_PRELOAD=$preload "$bin" "$@" >"$log/run-$i.log" 2>&1 &
	pid=$!
	t=0
	while kill -0 "$pid" 2>/dev/null && [ "$t" -lt "$hang_s" ]; do
		sleep 1
		t=$((t + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		hang=$((hang + 1))
		{
			echo "=== still running after $t s"
			sh "$here/dump_process.sh" "$pid"
		} >"$log/hang-$i.txt" 2>&1
		kill -9 "$pid"
		wait "$pid" 2>/dev/null
		echo "run $i: hung" >>"$log/summary"
	elif wait "$pid"; then
		pass=$((pass + 1))
		if grep -q "delay_preload: close(" "$log/run-$i.log"; then
			echo "run $i: passed, closed a number twice" >>"$log/summary"
		else
			rm -f "$log/run-$i.log"
		fi
	else
		fail=$((fail + 1))
		echo "run $i: failed" >>"$log/summary"
	fi
	echo "$i runs: $pass passed, $fail failed, $hang hung" >"$log/progress"
done
cat "$log/progress"
[ $((fail + hang)) -eq 0 ]
