#!/usr/bin/env python3
"""Two QEMU VMs on one mlx5-lm-vhostd, their NICs added with mlx5-lm-ctl.

VM1's NIC is served (QEMU connects, chardev reconnect=1), VM2's is a client (QEMU
listens, server=on; the device added with --client). Each guest sends through its NIC:
ARP requests for a neighbour nobody is (TEST-NET-2) come back through the emulated
device's loopback wire, so each guest's rx_packets moves only through its own device.
Then VM2's worker is killed (-9): the service restarts it, the worker connects back
to VM2's QEMU, the device runs again and VM2 receives again, while VM1's NIC and
worker are untouched. device_remove of VM1's running NIC: the device is gone (list,
get, socket, worker) and VM1's link is down. SIGTERM: every worker down, every socket removed, 0 device
objects left alive.

Exit 0 pass, 1 fail, 77 skip (a prerequisite cannot be had on this machine).
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
import e2elib as L  # noqa: E402

STEP = 300  # TCG boot of a Debian kernel on a loaded 2-CPU machine


def ctl(rpc, *args, check=True):
    r = subprocess.run([L.CTL, '--socket', rpc, '--json'] + list(args), capture_output=True,
                       text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f'mlx5-lm-ctl {" ".join(args)}: {r.returncode} {r.stderr}')
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr


def guest_cmd(vm, cmd, expect):
    return L.guest_cmd(vm, cmd, expect, STEP)


def received(vm, addr):
    """Frames eth0 received after a ping of a neighbour nobody is (its ARPs return)."""
    m = guest_cmd(vm, f'ping -c 3 -W 1 {addr} >/dev/null; '
                  'echo "RX=$(cat /sys/class/net/eth0/statistics/rx_packets)"', r'^RX=(\d+)$')
    return int(m.group(1))


def wait_state(srv, rpc, name, state):
    """device_list until name is in state, within STEP: each change is logged, so each
    round waits for the device's next line (or 1 s, for a line logged meanwhile)."""
    deadline = time.monotonic() + STEP
    while True:
        mark = srv.mark()
        _, devs, _ = ctl(rpc, 'device_list')
        d = next((x for x in devs if x['name'] == name), None)
        if d is not None and d['state'] == state:
            return d
        if time.monotonic() > deadline:
            raise AssertionError(f'{name} not {state} within {STEP}s: {d}')
        try:
            srv.expect(r'device %s: ' % name, 1.0, since=mark)
        except TimeoutError:
            pass


def qemu(vmlinuz, initrd, sock, server, mac, name):
    chardev = f'socket,id=c0,path={sock}' + (',server=on,wait=off' if server else
                                              ',reconnect=1')
    return L.Proc(['qemu-system-x86_64', '-machine', 'q35,accel=tcg,memory-backend=mem0',
                   '-m', '256M', '-smp', '1', '-nodefaults', '-no-user-config',
                   '-display', 'none',
                   '-object', 'memory-backend-memfd,id=mem0,size=256M,share=on',
                   '-kernel', vmlinuz, '-initrd', initrd,
                   '-append', 'console=ttyS0 quiet panic=-1 mitigations=off',
                   '-serial', 'stdio', '-no-reboot', '-chardev', chardev,
                   '-netdev', 'vhost-user,id=n0,chardev=c0',
                   '-device', f'virtio-net-pci,netdev=n0,vectors=0,mac={mac}'],
                  name=name, stdin=True)


def run(d):
    vmlinuz, initrd = L.prepare()
    rpc = os.path.join(d, 'rpc.sock')
    s1, s2 = os.path.join(d, 'vm1.sock'), os.path.join(d, 'vm2.sock')
    procs = []
    srv = L.Proc([L.VHOSTD, '--rpc-socket', rpc], name='vhostd')
    procs.append(srv)
    try:
        srv.expect(r'vhostd: ready', 60)
        # VM2's QEMU listens first: the worker connects to it.
        vm2 = qemu(vmlinuz, initrd, s2, True, '52:54:00:12:00:02', 'vm2')
        procs.append(vm2)
        ctl(rpc, 'device_add', '--name', 'vm1-net0', '--vm', 'vm1', '--vhost-socket', s1,
            '--devargs', 'emu=fast,queues=1')
        ctl(rpc, 'device_add', '--name', 'vm2-net0', '--vm', 'vm2', '--vhost-socket', s2,
            '--client', '--devargs', 'emu=fast,queues=1')
        vm1 = qemu(vmlinuz, initrd, s1, False, '52:54:00:12:00:01', 'vm1')
        procs.append(vm1)
        for vm in (vm1, vm2):
            vm.watch = [srv]
            _, _, m = vm.expect(r'E2E-GUEST-READY .*', STEP)
            L.log(f'{vm.name} up: {m.group(0)}')
        wait_state(srv, rpc, 'vm1-net0', 'running')
        wait_state(srv, rpc, 'vm2-net0', 'running')
        guest_cmd(vm1, 'ip addr add 198.51.100.1/24 dev eth0; echo OK1', r'^OK1$')
        guest_cmd(vm2, 'ip addr add 198.51.100.11/24 dev eth0; echo OK2', r'^OK2$')
        rx1, rx2 = received(vm1, '198.51.100.2'), received(vm2, '198.51.100.12')
        if rx1 == 0 or rx2 == 0:
            raise AssertionError(f'nothing received through the devices: {rx1}, {rx2}')
        _, vms, _ = ctl(rpc, 'vm_list')
        pid = {v['vm']: v['worker_pid'] for v in vms}
        L.log(f'workers {pid}; received {rx1}, {rx2}')
        # VM2's worker killed: restarted, it connects back to VM2's QEMU by itself.
        os.kill(pid['vm2'], signal.SIGKILL)
        srv.expect(r'vm vm2: worker %d killed by signal 9' % pid['vm2'], 60)
        srv.expect(r'vm vm2 device vm2-net0: re-created', 60)
        wait_state(srv, rpc, 'vm2-net0', 'running')
        again = received(vm2, '198.51.100.12')
        if again <= rx2:
            raise AssertionError(f'VM2 received nothing after its worker restarted: {again}')
        _, vms, _ = ctl(rpc, 'vm_list')
        now = {v['vm']: (v['worker_pid'], v['restarts']) for v in vms}
        if now['vm1'] != (pid['vm1'], 0) or now['vm2'][1] != 1:
            raise AssertionError(f'workers after the kill: {now}, before {pid}')
        if received(vm1, '198.51.100.2') <= rx1:
            raise AssertionError('VM1 stopped receiving')
        L.log(f'VM2 back after its worker restarted ({again} frames); VM1 untouched')
        # device_remove of a running NIC: gone everywhere, its worker with it.
        _, r, _ = ctl(rpc, 'device_remove', 'vm1-net0')
        if r['was'] != 'running':
            raise AssertionError(f'device_remove: {r}')
        rc, _, err = ctl(rpc, 'device_get', 'vm1-net0', check=False)
        if rc != 1 or '-32001' not in err or os.path.exists(s1):
            raise AssertionError(f'after device_remove: {rc} {err}')
        srv.expect(r'vm vm1: worker %d exited with status 0, 0 device objects' % pid['vm1'],
                   60)
        m = guest_cmd(vm1, 'i=0; while [ "$(cat /sys/class/net/eth0/carrier)" != 0 ] && '
                      '[ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done; '
                      'echo "CARRIER=$(cat /sys/class/net/eth0/carrier)"', r'^CARRIER=(\d)')
        # QEMU takes its NIC's link down when the back end's socket closes.
        if m.group(1) != '0':
            raise AssertionError('VM1\'s link is still up after its NIC was removed')
        L.log('VM1 after device_remove: link down')
        # SIGTERM: the remaining worker down, its socket (a client's: QEMU's) kept.
        rc = srv.stop(timeout=60)
        if rc != 0 or 'stopped: every worker gone, 0 device objects left alive' not in \
                srv.text():
            raise AssertionError(f'the service exited {rc}:\n{srv.tail(30)}')
        if os.path.exists(rpc):
            raise AssertionError('the control socket is left behind')
        for vm in (vm1, vm2):
            vm.send('poweroff -f')
            vm.stop(sig=None, timeout=STEP)
    except BaseException:
        for p in procs:
            print(f'--- {p.name}:\n{p.tail(60)}', flush=True)
        raise
    finally:
        for p in procs:
            p.kill()


def main():
    signal.signal(signal.SIGTERM, L.on_sigterm)

    def body():
        with tempfile.TemporaryDirectory() as d:
            run(d)
    return L.run_test('vhostd_qemu', 'vhostd', body)


if __name__ == '__main__':
    sys.exit(main())
