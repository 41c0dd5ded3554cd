#!/usr/bin/env python3
"""QEMU's own page loss, without mlx5-lm: migrate the e2e guest between two QEMUs (TCG,
-netdev user, no vhost-user device) N times while it pings every 10 ms, and count the
migrations after which the guest's RAM differs (tests/e2e/README.md). Not a test: it
reports what QEMU does here; --pad-kb 8 gives the RAM e2elib.qemu_args gives.

  python3 tests/e2e/qemu_page_loss.py [--dimm] [--pad-kb N] [--runs N]
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault('E2E_CACHE', os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                '..', '..', 'build', 'tests', 'e2e', 'cache'))
import e2elib as L  # noqa: E402

STEP = 300


def qemu_args(boot, qmp, dimm, pad_kb, incoming=None):
    kb = (256 << 10) + pad_kb
    a = ['qemu-system-x86_64', '-machine', 'q35,accel=tcg,memory-backend=mem0',
         '-m', f'{kb}k' + (',slots=2,maxmem=1024M' if dimm else ''), '-smp', '1',
         '-nodefaults', '-no-user-config', '-display', 'none',
         '-object', f'memory-backend-memfd,id=mem0,size={kb << 10},share=on',
         '-kernel', boot[0], '-initrd', boot[1],
         '-append', 'console=ttyS0 quiet panic=-1 mitigations=off', '-serial', 'stdio',
         '-qmp', f'unix:{qmp},server=on,wait=off', '-no-reboot',
         '-netdev', 'user,id=n0', '-device', 'virtio-net-pci,netdev=n0,vectors=0']
    if dimm:
        a += ['-object', 'memory-backend-memfd,id=hp0,size=128M,share=on',
              '-device', 'pc-dimm,id=d0,memdev=hp0']
    if incoming:
        a += ['-incoming', incoming, '-S']
    return a


def once(boot, dimm, pad_kb):
    tmp, procs = tempfile.mkdtemp(prefix='lm-qemu-loss-'), []
    try:
        qs = L.Proc(qemu_args(boot, f'{tmp}/qs', dimm, pad_kb), 'source', stdin=True)
        procs.append(qs)
        qs.qmp = L.QMP(f'{tmp}/qs', proc=qs)
        qs.expect(r'E2E-GUEST-READY', STEP)
        L.guest_cmd(qs, 'ip addr add 10.0.2.15/24 dev eth0; ping -i 0.01 10.0.2.2 | '
                    'head -n 3; ping -i 0.01 10.0.2.2 >/dev/null & echo E2E-PING-$((1+1))',
                    r'E2E-PING-2', STEP)
        qd = L.Proc(qemu_args(boot, f'{tmp}/qd', dimm, pad_kb, f'unix:{tmp}/mig'),
                    'destination',
                    stdin=True)
        procs.append(qd)
        qd.qmp = L.QMP(f'{tmp}/qd', proc=qd)
        for q in (qs, qd):
            q.qmp.cmd('migrate-set-capabilities',
                      capabilities=[{'capability': 'events', 'state': True}])
        qs.qmp.cmd('migrate', uri=f'unix:{tmp}/mig')
        for q in (qs, qd):
            q.qmp.wait_event('MIGRATION', lambda e: e['data']['status'] in
                             ('completed', 'failed', 'cancelled'), STEP)
        size, differ = L.compare_ram(qs.p.pid, qd.p.pid)
        return size, differ, qs.qmp.cmd('query-migrate').get('downtime')
    finally:
        for p in procs:
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dimm', action='store_true', help='a 128 MiB pc-dimm on both QEMUs')
    ap.add_argument('--pad-kb', type=int, default=0,
                    help='KiB of RAM beyond 256 MiB, a multiple of 8 (default 0)')
    ap.add_argument('--runs', type=int, default=8, help='migrations (default 8)')
    args = ap.parse_args()
    boot = L.prepare()
    lost = 0
    for i in range(args.runs):
        size, differ, downtime = once(boot, args.dimm, args.pad_kb)
        lost += bool(differ)
        print(f'migration {i + 1}/{args.runs}: {size >> 20} MiB, {len(differ)} pages differ, '
              f'QEMU downtime {downtime} ms', flush=True)
    print(f'{lost} of {args.runs} migrations lost guest pages', flush=True)


if __name__ == '__main__':
    main()
