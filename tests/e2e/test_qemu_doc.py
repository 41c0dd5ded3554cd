#!/usr/bin/env python3
"""The user guide's QEMU block (doc-test qemu), run verbatim.

The block is taken from doc/user-guide.md by its marker and run by bash as written:
the service (mlx5-lm-vhostd) in the background, the VM's NIC added with mlx5-lm-ctl,
QEMU in the foreground with the guest's serial console on stdio, then the service
stopped and waited for. Only the variables the guide's preceding
block leaves to the user are set here: KERNEL and INITRD are the e2e guest (a Debian
kernel, the busybox initrd of e2elib), MEM is 256M, ACCEL is tcg as in every e2e test
(a /dev/kvm may exist where KVM cannot run a guest: this project's machine has one);
`mlx5-lm-vhostd` and `mlx5-lm-ctl` are this build's.
The test plays the user at the console: once the guest is up it gives eth0 an address
and pings a neighbour that does not exist; the device's wire is its loopback, so the
guest's ARP requests come back to its own RX queue through the device (its rx_packets
counter moves). Then `poweroff -f`: QEMU exits, the block stops the service, whose
exit status (0: nothing left alive in any worker) is the block's.

Exit 0 pass, 1 fail, 77 skip (a prerequisite cannot be had on this machine).
"""
import os
import re
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
import e2elib as L  # noqa: E402
from lmtest import doc_block, socket_in_use  # noqa: E402

SOCK = '/run/mlx5-lm/vm1.sock'  # the block's
RPC = '/run/mlx5-lm/vhostd.sock'  # the service's default control socket
STEP_TIMEOUT = 300  # TCG boot of a Debian kernel on a loaded 2-CPU machine


def run():
    block = doc_block('qemu')
    vmlinuz, initrd = L.prepare()
    for path in (SOCK, RPC):
        if socket_in_use(path):
            raise L.Skip(f'{path} (the user guide\'s socket) is served by another process')
    env = {'KERNEL': vmlinuz, 'INITRD': initrd, 'MEM': '256M', 'ACCEL': 'tcg',
           'PATH': os.path.dirname(os.path.abspath(L.VHOSTD)) + ':' +
           os.path.dirname(os.path.abspath(L.CTL)) + ':' + os.environ['PATH']}
    sh = L.Proc(['bash', '-e', '-c', block], name='doc', stdin=True, env=env)
    # The block's shell ending early (QEMU failed: bash -e) fails the waits at once;
    # its background serve would otherwise keep the output open until the deadline.
    sh.watch = [sh]
    kids = []
    try:
        sh.expect(r'added vm1-net0 \(vm vm1', STEP_TIMEOUT)
        kids = subprocess.run(['pgrep', '-P', str(sh.p.pid), '-x', 'mlx5-lm-vhostd'],
                              stdout=subprocess.PIPE, text=True).stdout.split()
        _, _, m = sh.expect(r'E2E-GUEST-READY .*', STEP_TIMEOUT)
        L.log(f'guest up: {m.group(0)}')
        # 198.51.100.0/24 (TEST-NET-2, RFC 5737): nobody answers; the ARP requests
        # return through the device's loopback wire.
        m = L.guest_cmd(sh, 'ip addr add 198.51.100.1/24 dev eth0; '
                        'ping -c 3 -W 1 198.51.100.2 >/dev/null; '
                        'echo "RX=$(cat /sys/class/net/eth0/statistics/rx_packets)"',
                        r'^RX=(\d+)$', STEP_TIMEOUT)
        if int(m.group(1)) == 0:
            raise AssertionError('the guest received nothing through the device')
        L.log(f'guest received {m.group(1)} frames through the device')
        sh.send('poweroff -f')
        rc = sh.stop(sig=None, timeout=STEP_TIMEOUT)
        if rc != 0:
            raise AssertionError(f'the block exited {rc}:\n{sh.tail(60)}')
        if 'stopped: every worker gone, 0 device objects left alive' not in sh.text():
            raise AssertionError(f'the service did not tear down cleanly:\n{sh.tail(60)}')
    except BaseException:
        print(sh.tail(80), flush=True)
        # A failure on the way: bash's children (QEMU, the service; the service also
        # when bash already ended, its workers follow it), then bash.
        if sh.p.poll() is None:
            kids += subprocess.run(['pgrep', '-P', str(sh.p.pid)], stdout=subprocess.PIPE,
                                   text=True).stdout.split()
        for pid in kids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        sh.kill()
        raise


def main():
    # meson's timeout sends SIGTERM: clean up on the way out.
    signal.signal(signal.SIGTERM, L.on_sigterm)
    return L.run_test('qemu_doc', 'doc', run)


if __name__ == '__main__':
    sys.exit(main())
