#!/usr/bin/env python3
"""A --worker for mlx5-lm-vhostd whose EAL refuses its arguments when it runs a VM,
but not when the service checks its --eal at start (--check-eal): what a worker
that cannot start looks like to a device_add, whatever the service checked. It
execs the real worker (EAL_REFUSED_WORKER) with an EAL option nobody knows."""
import os
import sys


def main():
    real = os.environ['EAL_REFUSED_WORKER']
    args = sys.argv[1:]
    if '--check-eal' not in args:
        args += ['--eal', '--no-such-eal-option']
    os.execv(real, [real] + args)


if __name__ == '__main__':
    sys.exit(main())
