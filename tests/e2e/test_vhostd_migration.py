#!/usr/bin/env python3
"""A QEMU live migration from one mlx5-lm-vhostd to another, as between hosts.

Two "hosts" on this machine: each a mount namespace with its own /run/mlx5-lm (a tmpfs),
so that each runs its service on the default control socket and serves the VM's NIC on
the same socket path, /run/mlx5-lm/vm1.sock, as doc/vhostd.md's procedure has it on two
hosts. Each service's workers get a tap of their own as the emulated device's wire
(--eal "--vdev net_tap0,iface=..."), both taps in one host bridge that holds the
address the guest pings. The network namespace is shared: only the files differ.

doc/vhostd.md's blocks run as written, in each host's namespace: the NIC added on the
source (vhostd-migrate-add), the source QEMU started (TCG) and its guest pinging the
host every 100 ms through the device; the same block on the destination, whose QEMU
starts with -incoming and -S (held after the migration, as libvirt starts one); QMP
migrate, the host pinging the guest every 10 ms meanwhile (frames the source device
writes into the guest's RAM while QEMU logs dirty pages). Then, both QEMUs stopped, the
guest's RAM is compared byte for byte (the memfds of both QEMUs): what the source device
wrote into it while QEMU logged dirty pages must have reached the destination. cont:
the pings resume through the destination device; every echo request without a reply
must lie in the switch-over (between the last reply on the source and the first on the
destination), and they are counted. The source's block (vhostd-migrate-source: its
stop, device_remove) and the destination's (vhostd-migrate-destination) run; the guest
powers off; SIGTERM to both services: each exits 0 with 0 device objects left alive,
and its /run/mlx5-lm is empty (the control socket and the NIC's socket removed).

Exit 0 pass, 1 fail, 77 skip (a prerequisite cannot be had on this machine).
"""
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'integration'))
import e2elib as L  # noqa: E402
import test_vhostd_qemu as V  # noqa: E402
from lmtest import doc_block  # noqa: E402

RUN = '/run/mlx5-lm'              # the blocks' directory, each host's own
NIC = 'vm1-net0'                  # the blocks' device
QUEUES = 4                        # the blocks' devargs: queues=4
MEM_MB = 256
PING_INTERVAL = 0.1
REPLY = r'64 bytes from [\d.]+: seq=(\d+)'
STEP = V.STEP


class Host:
    """One host: a mount namespace whose /run/mlx5-lm is its own, and its service."""

    def __init__(self, name, tap, procs):
        self.name = name
        self.tap = tap
        os.makedirs(RUN, exist_ok=True)  # the mount point (the service's default directory)
        # The namespace lives as long as its holder, cat, which ends with our stdin pipe.
        self.ns = L.Proc(['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c',
                          f'mount -t tmpfs -o mode=0755,size=16m tmpfs {RUN} && '
                          'echo E2E-HOST-UP && exec cat'], name=f'{name}-ns', stdin=True)
        procs.append(self.ns)
        self.ns.expect(r'E2E-HOST-UP', 30)
        self.enter = ['nsenter', '-t', str(self.ns.p.pid), '-m', '--']
        # The control socket as this machine's other namespace reaches it.
        self.rpc = f'/proc/{self.ns.p.pid}/root{RUN}/vhostd.sock'
        self.srv = L.Proc(self.enter + [L.VHOSTD, '--eal', f'--vdev net_tap0,iface={tap}'],
                          name=f'vhostd-{name}')
        procs.append(self.srv)
        self.srv.expect(r'vhostd: ready: RPC socket %s/vhostd.sock' % RUN, 60)

    def block(self, text):
        """A block of doc/vhostd.md (its text), verbatim, on this host: its output."""
        env = dict(os.environ)
        env['PATH'] = os.pathsep.join([os.path.dirname(os.path.abspath(L.VHOSTD)),
                                       os.path.dirname(os.path.abspath(L.CTL)), env['PATH']])
        r = L.run(self.enter + ['bash', '-e', '-c', text], check=False, env=env, timeout=STEP)
        out = r.stdout.decode(errors='replace')
        L.log(f'{self.name}: the doc block {text.splitlines()[0]!r}...:\n{out.rstrip()}')
        if r.returncode != 0:
            raise AssertionError(f'{self.name}: the doc block exited {r.returncode}')
        return out

    def files(self):
        return sorted(os.listdir(f'/proc/{self.ns.p.pid}/root{RUN}'))


def qemu(host, boot, tmp, procs, incoming=None):
    """The guest's QEMU on host: the user guide's client chardev (reconnect=1), QMP in tmp
    (a directory both hosts see); with incoming, held after the migration (-S)."""
    variant = {'queues': QUEUES, 'reconnect': True, 'hold': incoming is not None}
    qmp = os.path.join(tmp, f'qmp-{host.name}.sock')
    q = L.Proc(host.enter + L.qemu_args(boot[0], boot[1], MEM_MB, f'{RUN}/vm1.sock', qmp,
                                        variant, '52:54:00:4c:4e:01', incoming),
               name=f'qemu-{host.name}', stdin=True)
    procs.append(q)
    q.watch = [host.srv]
    q.qmp = L.QMP(qmp, proc=q)
    q.qmp.cmd('migrate-set-capabilities',
              capabilities=[{'capability': 'events', 'state': True}])
    return q


def wait_replies(q, n, since):
    """n more ping replies on q's console after line since; the index after the last."""
    for _ in range(n):
        since, _, _ = q.expect(REPLY, STEP, since=since)
        since += 1
    return since


def migration_done(qmp):
    ev = qmp.wait_event('MIGRATION', lambda e: e['data']['status'] in
                        ('completed', 'failed', 'cancelled'), timeout=STEP)
    if ev['data']['status'] != 'completed':
        raise AssertionError(f'migration {ev["data"]["status"]}: {qmp.cmd("query-migrate")}')


def device(host, what):
    _, d, _ = V.ctl(host.rpc, 'device_get', NIC)
    L.log(f'{host.name}: {NIC} {d["state"]}, {what}')
    return d


def run(tmp, procs, res):
    boot = L.prepare()
    net = L.free_subnet()
    tag = f'{os.getpid() % 100000}'
    bridge = L.Bridge(f'lmsm{tag}'[:15], [f'{net}.1/24'])
    try:
        migrate(boot, net, tag, bridge, tmp, procs, res)
    finally:
        bridge.delete()


def migrate(boot, net, tag, bridge, tmp, procs, res):
    src = Host('source', f'lms{tag}s'[:15], procs)
    dst = Host('destination', f'lms{tag}d'[:15], procs)
    # The source: its NIC (the worker creates the tap), then its VM.
    src.block(doc_block('vhostd-migrate-add'))
    bridge.attach(src.tap)
    qs = qemu(src, boot, tmp, procs)
    _, _, m = qs.expect(r'E2E-GUEST-READY .*', STEP)
    L.log(f'guest up: {m.group(0)}')
    V.wait_state(src.srv, src.rpc, NIC, 'running')
    V.guest_cmd(qs, f'ip addr add {net}.2/24 dev eth0; echo E2E-IP-$((1+1))', r'E2E-IP-2')
    qs.send(f'ping -i {PING_INTERVAL} {net}.1 &')
    wait_replies(qs, 10, 0)
    L.log('pings flow through the source service\'s device')
    # The destination: the same block, then QEMU waiting for the migration, held after it.
    dst.block(doc_block('vhostd-migrate-add'))
    bridge.attach(dst.tap)
    mig = os.path.join(tmp, 'migrate.sock')
    qd = qemu(dst, boot, tmp, procs, incoming=f'unix:{mig}')
    qd.watch.append(src.srv)
    qs.watch.append(dst.srv)
    V.wait_state(dst.srv, dst.rpc, NIC, 'connected')
    # The host pings the guest too, every 10 ms, while it migrates: the source device
    # writes the requests into the guest's RAM while QEMU logs dirty pages, which the
    # comparison below then covers. Its replies all come before the stop (it is
    # interrupted before the destination resumes).
    hp = L.Proc(['ping', '-i', '0.01', '-q', f'{net}.2'], name='host-ping')
    procs.append(hp)
    L.log('migrating')
    t0 = time.monotonic()
    qs.qmp.cmd('migrate', uri=f'unix:{mig}')
    migration_done(qs.qmp)
    migration_done(qd.qmp)
    t_arrived = time.monotonic()
    hp.p.send_signal(signal.SIGINT)
    _, _, m = hp.expect(r'(\d+) packets transmitted, (\d+) received', STEP)
    res.update(host_pings_sent=int(m.group(1)), host_pings_answered=int(m.group(2)))
    if res['host_pings_answered'] == 0:
        raise AssertionError('no reply to the host\'s pings while the guest migrated')
    info = qs.qmp.cmd('query-migrate')
    # QEMU announces 'completed' a moment before it computes the times.
    deadline = time.monotonic() + STEP
    while not info.get('downtime') and time.monotonic() < deadline:
        info = qs.qmp.cmd('query-migrate')
    for q, want in ((qs, 'postmigrate'), (qd, 'paused')):
        st = q.qmp.cmd('query-status')['status']
        if st != want:
            raise AssertionError(f'{q.name} is {st}, not {want}, after the migration')
    size, differ = L.compare_ram(qs.p.pid, qd.p.pid)
    L.log(f'migration completed in {t_arrived - t0:.2f} s, QEMU downtime '
          f'{info.get("downtime")} ms; the host\'s pings meanwhile: '
          f'{res["host_pings_sent"]} sent, {res["host_pings_answered"]} answered; guest RAM: '
          f'{size >> 20} MiB compared, {len(differ)} pages differ')
    if differ:
        raise AssertionError(f'{len(differ)} pages of the guest RAM differ after the '
                             f'migration, the first at ' +
                             ', '.join(f'{o:#x}' for o in differ[:8]))
    res.update(ram_mib=size >> 20, ram_pages_differing=0,
               qemu_downtime_ms=info.get('downtime'),
               migration_total_ms=info.get('total-time'))
    since = qd.mark()
    t_cont = time.monotonic()
    qd.qmp.cmd('cont')
    qd.qmp.wait_event('RESUME', lambda e: True, timeout=STEP)
    res['held_ms'] = round((t_cont - t_arrived) * 1000)
    first, t_first, _ = qd.expect(REPLY, STEP, since=since)
    wait_replies(qd, 10, first)
    count_pings(qs, qd, res)
    # The source's stop and the destination's start, as each service reports them.
    d = device(src, 'after the migration')
    if d['state'] != 'stopped':
        raise AssertionError(f'the source device is {d["state"]} after the migration')
    res['device_src_stop_ms'] = d['last_stop']['total_ms']
    out = src.block(doc_block('vhostd-migrate-source'))
    if not re.search(r'^last_stop\.total_ms\s', out, re.M) or \
            f'removed {NIC} (vm vm1, was stopped)' not in out:
        raise AssertionError('the source block shows no last stop or no removal')
    src.srv.expect(r'vm vm1: worker \d+ exited with status 0, 0 device objects', STEP)
    out = dst.block(doc_block('vhostd-migrate-destination'))
    if not re.search(r'^state\s+running$', out, re.M) or \
            not re.search(r'^last_start\.queues_ms\s', out, re.M):
        raise AssertionError('the destination block shows no running device or last start')
    d = device(dst, 'after the migration')
    res['device_dst_start_ms'] = d['last_start']['total_ms']
    # The VMs go: the source's (postmigrate) by QMP, the guest by powering off.
    qs.qmp.cmd('quit')
    qs.stop(sig=None, timeout=STEP)
    qd.send('poweroff -f')
    qd.stop(sig=None, timeout=STEP)
    for h in (src, dst):
        rc = h.srv.stop(timeout=60)
        if rc != 0 or 'stopped: every worker gone, 0 device objects left alive' not in \
                h.srv.text():
            raise AssertionError(f'the {h.name} service exited {rc}:\n{h.srv.tail(30)}')
        left = h.files()
        if left:
            raise AssertionError(f'the {h.name} service left {left} in {RUN}')
    L.log('both services stopped: 0 device objects left alive, every socket removed')


def count_pings(qs, qd, res):
    """The echo requests without a reply on either console, by sequence number: each must
    lie in the switch-over, between the last reply on the source and the first on the
    destination (or be the one in flight when ping was interrupted)."""
    m = V.guest_cmd(qd, 'kill -INT $(pidof ping); wait',
                    r'(\d+) packets transmitted, (\d+) packets received')
    sent, got = int(m.group(1)), int(m.group(2))
    before = [int(x.group(1)) for _, x in qs.matches(REPLY)]
    after = [int(x.group(1)) for _, x in qd.matches(REPLY)]
    t_last, t_first = qs.matches(REPLY)[-1][0], qd.matches(REPLY)[0][0]
    seen = set(before) | set(after)
    missing = [s for s in range(sent) if s not in seen]
    switch = [s for s in missing if before[-1] < s < after[0]]
    at_end = [s for s in missing if s > after[-1]]
    beyond = sorted(set(missing) - set(switch) - set(at_end))
    res.update(pings_sent=sent, pings_answered=got, pings_lost=len(switch),
               traffic_gap_ms=round((t_first - t_last) * 1000 - res['held_ms']))
    L.log(f'pings: {sent} sent, {got} answered (ping\'s count); {len(switch)} unanswered at '
          f'the switch-over {switch} (the last reply on the source seq={before[-1]}, the '
          f'first on the destination seq={after[0]}), {len(at_end)} in flight when ping '
          f'was interrupted; traffic gap {res["traffic_gap_ms"]} ms, not counting '
          f'{res["held_ms"]} ms held for the RAM comparison')
    if beyond:
        raise AssertionError(f'echo requests {beyond} unanswered outside the switch-over '
                             f'(seq {before[-1]} to {after[0]})')


def main():
    # meson's timeout sends SIGTERM: clean up on the way out.
    signal.signal(signal.SIGTERM, L.on_sigterm)
    procs, res = [], {}
    tmp = tempfile.mkdtemp(prefix='lm-e2e-svc-')
    t0 = time.monotonic()
    try:
        run(tmp, procs, res)
    except L.Skip as e:
        print(f'SKIP: {e}', flush=True)
        return L.SKIP
    except Exception:
        traceback.print_exc()
        for p in procs:
            print(f'--- {p.name}:\n{p.tail(60)}', flush=True)
        print('FAIL: e2e vhostd_migration', flush=True)
        return 1
    finally:
        for p in reversed(procs):
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print('E2E RESULT variant=vhostd_migration ' +
          ' '.join(f'{k}={v}' for k, v in res.items() if not isinstance(v, list)) +
          f' wall_s={time.monotonic() - t0:.1f}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
