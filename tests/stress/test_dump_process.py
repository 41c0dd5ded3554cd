#!/usr/bin/env python3
"""dump_process.sh on a process whose state is known: a child that holds a
listening unix socket (as vhost's server socket) and a unix socket pair with
100 bytes its reader left unread, and sleeps. What the
harness's stall dump and stress_loop.sh print comes from this script, so a
dump that lost a section would hide what a hang needs to show."""
import os
import re
import subprocess
import sys
import time

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dump_process.sh')
CHILD = '''
import os, socket, sys, time
a, b = socket.socketpair()
a.send(b'x' * 100)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind('\\0dump-process-test-%d' % os.getpid())
listener.listen()
print(b.fileno(), listener.fileno(), flush=True)
time.sleep(60)
'''


def run(*args):
    return subprocess.run(['sh', SCRIPT, *args], capture_output=True, text=True, timeout=60)


def main():
    assert run('--help').returncode == 0
    assert run().returncode == 2, 'no pid is a usage error'
    missing = run('--no-gdb', '999999999')
    assert missing.returncode == 2 and 'no process' in missing.stderr, missing
    child = subprocess.Popen([sys.executable, '-c', CHILD], stdout=subprocess.PIPE, text=True)
    try:
        reader_fd, listen_fd = (int(x) for x in child.stdout.readline().split())
        # Asleep (S) before the dump: a thread on a CPU has no wait point to name.
        deadline = time.monotonic() + 30
        while open('/proc/%d/stat' % child.pid).read().rsplit(')', 1)[1].split()[0] != 'S':
            assert time.monotonic() < deadline, 'the child never went to sleep'
            time.sleep(0.01)
        r = run('--no-gdb', str(child.pid))
        assert r.returncode == 0, r.stderr
        out = r.stdout
        print(out)
        assert '=== kernel ' + os.uname().release in out
        # The sleeping main thread: its kernel wait point is named.
        m = re.search(r'^thread %d \((python[^)]*)\): wchan (\S+)' % child.pid, out, re.M)
        assert m and m.group(2) not in ('', '0'), 'no wait point for the main thread'
        fds = out.split('=== fds', 1)[1].split('=== unix sockets', 1)[0]
        assert re.search(r' %d -> socket:\[\d+\]' % reader_fd, fds), 'the socket fd is not listed'
        socks = out.split('=== unix sockets', 1)[1]
        if 'Recv-Q' in socks:
            # ss: the reader's end shows the 100 bytes it left unread.
            line = [l for l in socks.splitlines() if 'pid=%d,fd=%d)' % (child.pid, reader_fd) in l]
            assert line and line[0].split()[2] == '100', socks
            # A listening socket is listed too (ss leaves them out without -a).
            line = [l for l in socks.splitlines() if 'pid=%d,fd=%d)' % (child.pid, listen_fd) in l]
            assert line and line[0].split()[1] == 'LISTEN', socks
        else:
            for fd in (reader_fd, listen_fd):
                ino = re.search(r' %d -> socket:\[(\d+)\]' % fd, fds).group(1)
                assert re.search(r'\s%s(\s|$)' % ino, socks, re.M), socks
    finally:
        child.kill()
        child.wait()
    print('dump_process: every section present')


if __name__ == '__main__':
    main()
