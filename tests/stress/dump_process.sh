#!/bin/sh
# What a hung or stalled process is doing, for a person to read: the state
# issue 23's hang would leave. Shared by lm_harness.c (its watchdog and stall
# dump) and stress_loop.sh (a run that hung).
set -u
usage() {
	cat <<'USAGE'
Usage: tests/stress/dump_process.sh [--no-gdb] PID

Prints, to stdout, for process PID:
  - the kernel's release (a wait inside the kernel differs between them);
  - every thread's name, the kernel function it sleeps in (wchan) and, where
    readable (root), its kernel stack - read before gdb attaches, which
    interrupts the sleeps;
  - every thread's user stack (gdb, where installed, unless --no-gdb: an
    attach takes seconds);
  - its open fds;
  - its unix sockets with their queues and peers (ss -xape, where installed:
    Recv-Q is what the socket's reader left unread, Send-Q what its writer has
    in flight); /proc/PID/net/unix otherwise.
USAGE
}
gdb=1
case "${1:-}" in
-h|--help) usage; exit 0 ;;
--no-gdb) gdb=0; shift ;;
esac
[ $# -eq 1 ] || { usage >&2; exit 2; }
pid=$1
[ -d "/proc/$pid/task" ] || { echo "dump_process: no process $pid" >&2; exit 2; }
echo "=== kernel $(uname -r)"
echo "=== threads (kernel wait point, kernel stack)"
for t in /proc/"$pid"/task/*; do
	echo "thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)): wchan $(cat "$t/wchan" 2>/dev/null)"
	sed 's/^/    /' "$t/stack" 2>/dev/null
done
if [ "$gdb" = 1 ] && command -v gdb >/dev/null; then
	echo "=== user stacks"
	gdb -p "$pid" -batch -nx -ex 'thread apply all bt' 2>&1
fi
echo "=== fds"
ls -l /proc/"$pid"/fd
echo "=== unix sockets"
if command -v ss >/dev/null; then
	ss -xape | awk -v p="pid=$pid," 'NR == 1 || index($0, p)'
else
	cat /proc/"$pid"/net/unix
fi
