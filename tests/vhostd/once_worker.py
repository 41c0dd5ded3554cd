#!/usr/bin/env python3
"""A --worker for mlx5-lm-vhostd that is the real worker once, so that a test can
keep a VM's worker down after killing it: the first start (marker file ONCE_MARK
absent) execs ONCE_WORKER, the real one; every later start, the restarts, says so
on stderr and then, as ONCE_THEN says, 'fail': exits 1 at once (the VM's worker is
down, its next restart ever further away), or 'hang': never gets ready, until
SIGTERM or the supervisor's end of its channel closes (the VM's worker restarting)."""
import os
import sys


def main():
    mark = os.environ['ONCE_MARK']
    if not os.path.exists(mark):
        open(mark, 'w').close()
        real = os.environ['ONCE_WORKER']
        os.execv(real, [real] + sys.argv[1:])
    then = os.environ.get('ONCE_THEN', 'fail')
    print(f'once_worker {os.getpid()}: a restart, {then}', file=sys.stderr, flush=True)
    if then == 'fail':
        return 1
    chan = int(sys.argv[sys.argv.index('--channel') + 1])
    while os.read(chan, 4096):
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
