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

--variant prereg: the destination's NIC is added with a DevX trace and nothing else: its
service sees that the QEMU connecting to it was started with -incoming, watches its
memory appear and registers it (doc/vhostd.md, "Preparing the destination") while the
source still runs, unasked. After `cont` the device's start must use the preparation
whole: in the trace, every guest-memory registration (MR_REG) ended before `cont`, none
comes after it, and the queues' MODIFYs follow; device_get says `used`, nothing fell
back. --variant prereg-grown: the NIC is added with --no-auto-prepare and, once the
destination QEMU waits for the migration, `mlx5-lm-ctl device_prepare NIC --pid <that
QEMU>` prepares it, as an operator's migration hook would; its RAM is on a file in
/dev/shm, which grows by 2 MiB after the preparation: its memory is no longer what was
prepared, so the start registers it all, as without preparation, and says why
(device_get's reason, the PMD's DRIVER_OK line); the trace has the registration after
cont. Then a DIMM plugged into the
running destination: the device restarts on the new memory table, device_get reports
it, pings are answered. (No DIMM during the migration: QEMU 7.2 under TCG loses pages
of the guest's RAM in a quarter of such migrations here, with no vhost-user device at
all, and the guest then dies; tests/e2e/README.md.)
RAM (every backend), pings and clean exits as in the base run.

Exit 0 pass, 1 fail, 77 skip (a prerequisite cannot be had on this machine).
"""
import argparse
import json
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
RAM = L.ram_bytes(MEM_MB)         # what qemu_args gives the guest for MEM_MB
PING_INTERVAL = 0.1
MAC = '52:54:00:4c:4e:01'
REPLY = r'64 bytes from [\d.]+: seq=(\d+)'
STEP = V.STEP
DIMM_MB = 128                     # prereg-grown: the DIMM plugged in after (a Linux memory block)
GROW_MB = 2                       # what the destination's RAM file grows by once prepared
MAXMEM_MB = 1024
VARIANTS = {'base': {}, 'prereg': {'prepare': 'auto'},
            'prereg-grown': {'prepare': 'manual', 'grow_mb': GROW_MB, 'dimm_mb': DIMM_MB}}


class Host:
    """One host: a mount namespace whose /run/mlx5-lm is its own, and its service."""

    def __init__(self, name, tap, procs, eal=''):
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
        self.srv = L.Proc(self.enter + [L.VHOSTD, '--eal', f'--vdev net_tap0,iface={tap}{eal}'],
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


def qemu(host, boot, tmp, procs, var, incoming=None):
    """The guest's QEMU on host: the user guide's client chardev (reconnect=1), QMP in tmp
    (a directory both hosts see); with incoming, held after the migration (-S); the
    variant's room for a DIMM plugged in later."""
    variant = {'queues': QUEUES, 'reconnect': True, 'hold': incoming is not None}
    if var.get('dimm_mb'):
        variant['maxmem_mb'] = MAXMEM_MB  # on both sides: the machines must match
    if var.get('grow_mb') and incoming:
        variant['ram_file'] = var['ram_file']  # the destination's RAM, which then grows
    qmp = os.path.join(tmp, f'qmp-{host.name}.sock')
    q = L.Proc(host.enter + L.qemu_args(boot[0], boot[1], MEM_MB, f'{RUN}/vm1.sock', qmp,
                                        variant, MAC, incoming),
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


def hotplug(q, dimm, mb):
    """A DIMM of mb MiB (a shared memfd, as the machine's RAM) plugged into q's running VM."""
    q.qmp.cmd('object-add', **{'qom-type': 'memory-backend-memfd', 'id': dimm,
                               'size': mb << 20, 'share': True})
    q.qmp.cmd('device_add', driver='pc-dimm', id=f'{dimm}-dimm', memdev=dimm)
    L.log(f'{q.name}: a DIMM of {mb} MiB plugged in ({dimm})')


def wait_memory(host, nbytes):
    """device_get until the NIC runs on a memory table of nbytes (bounded, STEP)."""
    deadline = time.monotonic() + STEP
    while True:
        mark = host.srv.mark()
        d = device(host, 'waiting for its memory table')
        if d['state'] == 'running' and d['memory']['bytes'] == nbytes:
            return d
        if time.monotonic() > deadline:
            raise AssertionError(f'{NIC} not running on {nbytes >> 20} MiB within {STEP}s: {d}')
        try:
            host.srv.expect(r'device %s: |DRIVER_OK' % NIC, 1.0, since=mark)
        except TimeoutError:
            pass


def prepare(dst, qd, var, res):
    """device_prepare NIC --pid <destination QEMU>, as an operator's migration hook does;
    waits (bounded) until the registration is ready."""
    mark = dst.srv.mark()
    _, out, _ = V.ctl(dst.rpc, 'device_prepare', NIC, '--pid', str(qd.p.pid))
    L.log(f'destination: device_prepare {NIC} --pid {qd.p.pid}: {out}')
    # The registration runs in the background; the PMD logs its end.
    _, _, m = dst.srv.expect(r'preparation: \d+ chunks registered in [\d.]+ ms', STEP,
                             since=mark)
    L.log(f'destination: {m.group(0)}')
    p = device(dst, 'prepared')['preparation']
    want = RAM
    if (p['state'], p['pid'], p['bytes']) != ('ready', qd.p.pid, want):
        raise AssertionError(f'the preparation is not ready with the QEMU\'s {want >> 20} MiB: {p}')
    res.update(prep_bytes=p['bytes'], prep_ms=p['prepare_ms'])


def auto_prepared(dst, qd, since, res):
    """The service prepared the destination QEMU's memory by itself: its worker watched
    it (a destination: -incoming) and prepared it; waits (bounded) until it is ready."""
    pid = qd.p.pid
    _, _, m = dst.srv.expect(r"device %s: automatic preparation: pid %d is a migration's "
                             r'destination \(-incoming\): watching' % (NIC, pid), STEP,
                             since=since)
    L.log(f'destination: {m.group(0)}')
    _, _, m = dst.srv.expect(r"device %s: automatic preparation: preparing \d+ MiB of pid "
                             r"%d's guest memory" % (NIC, pid), STEP, since=since)
    L.log(f'destination: {m.group(0)}')
    _, _, m = dst.srv.expect(r'preparation: \d+ chunks registered in [\d.]+ ms', STEP,
                             since=since)
    L.log(f'destination: {m.group(0)}')
    d = device(dst, 'prepared unasked')
    p, a = d['preparation'], d['auto_prepare']
    if (a['state'], a['pid'], a['bytes']) != ('prepared', pid, RAM) or \
            (p['state'], p['pid'], p['bytes']) != ('ready', pid, RAM):
        raise AssertionError(f'the QEMU\'s {RAM >> 20} MiB are not prepared unasked: {a}, {p}')
    res.update(prep_bytes=p['bytes'], prep_ms=p['prepare_ms'], auto_prepare=a['state'])


def check_prepared(dst, trace, t_cont, var, res):
    """The destination's start used the preparation whole, or (prereg-grown: its RAM file
    grew after it) not at all and said why; device_get and the PMD's log agree, and the
    DevX trace holds a guest-memory registration after cont only for what fell back."""
    grown = bool(var.get('grow_mb'))
    fb = RAM if grown else 0
    p = device(dst, 'started')['preparation']
    if (p['state'] == 'used') == grown or (p['used_bytes'], p['fallback_bytes']) != \
            (RAM - fb, fb):
        raise AssertionError(f'the start did not use the preparation as expected '
                             f'({RAM - fb} bytes from it, {fb} registered then): {p}')
    if grown:
        if 'its file was truncated or changed since the preparation' not in \
                p.get('reason', ''):
            raise AssertionError(f'the fallback gives no reason: {p}')
        line = r'DRIVER_OK: the preparation is not used \(region 0 .*its file was ' \
            r'truncated or changed'
    else:
        # Taken at the first ring's SET_VRING_KICK (preconf=1, the default),
        # or at DRIVER_OK.
        line = r'(?:SET_VRING_KICK|DRIVER_OK): %d MiB of guest memory from the preparation, ' \
            r'0 MiB registered now' % MEM_MB
    _, _, m = dst.srv.expect(line, STEP)
    L.log(f'destination: {m.group(0)}; preparation {p}')
    cont_us = t_cont * 1e6
    with open(trace) as f:
        cmds = [json.loads(x) for x in f if x.strip()]
    regs = [c for c in cmds if c['op'] == 'MR_REG' and c['status'] == 0]
    before = sum(c['size'] for c in regs if c['t_end_us'] < cont_us)
    after = [c for c in regs if c['t_end_us'] >= cont_us]
    starts = [c for c in cmds if c['op'] == 'MODIFY_GENERAL_OBJECT' and
              c['t_start_us'] >= cont_us]
    L.log(f'destination trace: {len(cmds)} commands; guest memory registered before cont '
          f'{before >> 20} MiB, after it {sum(c["size"] for c in after) >> 20} MiB in '
          f'{len(after)} MR_REG; {len(starts)} MODIFYs after cont')
    if before < res['prep_bytes']:
        raise AssertionError(f'only {before >> 20} MiB registered before cont, '
                             f'{res["prep_bytes"] >> 20} MiB prepared')
    if not starts:
        raise AssertionError('no MODIFY after cont: the queues were not started by it')
    if sum(c['size'] for c in after) != fb:
        raise AssertionError(f'{len(after)} registrations after cont, '
                             f'{sum(c["size"] for c in after) >> 20} MiB; expected '
                             f'{fb >> 20} MiB: {after[:4]}')
    res.update(prep_used_bytes=p['used_bytes'], prep_fallback_bytes=p['fallback_bytes'],
               mr_reg_after_cont=len(after))


def device(host, what):
    _, d, _ = V.ctl(host.rpc, 'device_get', NIC)
    L.log(f'{host.name}: {NIC} {d["state"]}, {what}')
    return d


def run(tmp, procs, res, var):
    boot = L.prepare()
    net = L.free_subnet()
    tag = f'{os.getpid() % 100000}'
    bridge = L.Bridge(f'lmsm{tag}'[:15], [f'{net}.1/24'])
    var = dict(var, ram_file=f'{L.SHM_PREFIX}{tag}-ram')
    try:
        migrate(boot, net, tag, bridge, tmp, procs, res, var)
    finally:
        bridge.delete()
        if os.path.exists(var['ram_file']):
            os.unlink(var['ram_file'])


def migrate(boot, net, tag, bridge, tmp, procs, res, var):
    src = Host('source', f'lms{tag}s'[:15], procs)
    # Prepared: the PMD's INFO lines say when the registration ended and what the start used.
    dst = Host('destination', f'lms{tag}d'[:15], procs,
               ' --log-level=pmd.vdpa.mlx5_lm:info' if var.get('prepare') else '')
    # The source: its NIC (the worker creates the tap), then its VM.
    src.block(doc_block('vhostd-migrate-add'))
    bridge.attach(src.tap)
    qs = qemu(src, boot, tmp, procs, var)
    _, _, m = qs.expect(r'E2E-GUEST-READY .*', STEP)
    L.log(f'guest up: {m.group(0)}')
    V.wait_state(src.srv, src.rpc, NIC, 'running')
    V.guest_cmd(qs, f'ip addr add {net}.2/24 dev eth0; echo E2E-IP-$((1+1))', r'E2E-IP-2')
    qs.send(f'ping -i {PING_INTERVAL} {net}.1 &')
    wait_replies(qs, 10, 0)
    L.log('pings flow through the source service\'s device')
    # The destination: the same block (with a DevX trace when prepared), then QEMU waiting
    # for the migration, held after it.
    trace = os.path.join(tmp, 'destination-devx.jsonl')
    if var.get('prepare'):
        V.ctl(dst.rpc, 'device_add', '--name', NIC, '--vm', 'vm1', '--vhost-socket',
              f'{RUN}/vm1.sock', '--devargs',
              f'emu=cx6dx,queues={QUEUES},uplink=net_tap0,devx_trace={trace}',
              *(['--no-auto-prepare'] if var['prepare'] == 'manual' else []))
    else:
        dst.block(doc_block('vhostd-migrate-add'))
    bridge.attach(dst.tap)
    mig = os.path.join(tmp, 'migrate.sock')
    since = dst.srv.mark()
    qd = qemu(dst, boot, tmp, procs, var, incoming=f'unix:{mig}')
    qd.watch.append(src.srv)
    qs.watch.append(dst.srv)
    V.wait_state(dst.srv, dst.rpc, NIC, 'connected')
    if var.get('prepare') == 'manual':
        prepare(dst, qd, var, res)
    elif var.get('prepare') == 'auto':
        auto_prepared(dst, qd, since, res)
    if var.get('grow_mb'):
        # The destination's memory is no longer what was prepared: its RAM file grows
        # (QEMU's mapping is unchanged; the preparation watched the file).
        os.truncate(var['ram_file'], RAM + (var['grow_mb'] << 20))
        L.log(f'destination: {var["ram_file"]} grown by {var["grow_mb"]} MiB after its '
              f'preparation')
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
    size, differ = L.compare_ram(qs.p.pid, qd.p.pid, b_grown=var.get('grow_mb', 0) << 20)
    L.log(f'migration completed in {t_arrived - t0:.2f} s, QEMU downtime '
          f'{info.get("downtime")} ms; the host\'s pings meanwhile: '
          f'{res["host_pings_sent"]} sent, {res["host_pings_answered"]} answered; guest RAM: '
          f'{size >> 20} MiB compared, {len(differ)} pages differ')
    for o in differ[:4]:
        a, b = L.ram_page(qs.p.pid, o), L.ram_page(qd.p.pid, o)
        i = next(k for k in range(len(a)) if a[k] != b[k])
        j = max(k for k in range(len(a)) if a[k] != b[k])
        L.log(f'page {o:#x}: bytes {i:#x}..{j:#x} differ; source {a[i & ~15:][:64].hex()} '
              f'destination {b[i & ~15:][:64].hex()}')
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
    if var.get('prepare'):
        check_prepared(dst, trace, t_cont, var, res)
    count_pings(qs, qd, res)
    if var.get('dimm_mb'):
        # More memory for the running VM: the device restarts on the new table (vhost
        # calls no new_device for it), device_get says so, frames flow on it.
        hotplug(qd, 'hp1', var['dimm_mb'])
        wait_memory(dst, RAM + (var['dimm_mb'] << 20))
        m = V.guest_cmd(qd, f'ping -c 3 -i 0.2 -W 2 {net}.1 | tail -n 2',
                        r'(\d+) packets transmitted, (\d+) packets received')
        if m.group(2) != '3':
            raise AssertionError(f'after the DIMM: {m.group(0)}')
        L.log(f'destination: a DIMM, the device on {MEM_MB + var["dimm_mb"]} '
              f'MiB, pings answered: {m.group(0)}')
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
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--variant', choices=sorted(VARIANTS), default='base',
                    help='base: the guide\'s blocks; prereg: the destination prepared by its '
                    'service unasked; prereg-grown: prepared from its QEMU\'s pid by '
                    'device_prepare, and a memory file of it grown after that')
    args = ap.parse_args()
    # meson's timeout sends SIGTERM: clean up on the way out.
    signal.signal(signal.SIGTERM, L.on_sigterm)
    procs, res = [], {}
    tmp = tempfile.mkdtemp(prefix='lm-e2e-svc-')
    t0 = time.monotonic()
    try:
        run(tmp, procs, res, VARIANTS[args.variant])
    except L.Skip as e:
        print(f'SKIP: {e}', flush=True)
        return L.SKIP
    except Exception:
        traceback.print_exc()
        for p in procs:
            print(f'--- {p.name}:\n{p.tail(60)}', flush=True)
        print(f'FAIL: e2e vhostd_migration {args.variant}', flush=True)
        return 1
    finally:
        for p in reversed(procs):
            p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'E2E RESULT variant=vhostd_migration-{args.variant} ' +
          ' '.join(f'{k}={v}' for k, v in res.items() if not isinstance(v, list)) +
          f' wall_s={time.monotonic() - t0:.1f}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
