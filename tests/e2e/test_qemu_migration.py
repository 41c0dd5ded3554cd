#!/usr/bin/env python3
"""QEMU live migration end to end, through the emulated device.

A Debian kernel with a busybox initrd boots under QEMU/TCG; its virtio-net is
vhost-user to `dpdk-test-lm serve` (emulated device, profile `fast`) whose
wire is a net_tap port in a host bridge that holds the host's address. The
guest pings the host: guest -> virtio ring -> device -> tap -> bridge -> host
kernel, and back. Then a second QEMU starts with -incoming, its device served
by a second `serve` whose tap is in the same bridge, and QMP `migrate` moves
the guest. The guest must keep running on the destination and its pings must
resume through the destination device (its counters move; the bridge learns
the guest's MAC on the destination's tap from the guest's first frame). That
first frame must be the guest's own announcement: the device offers
VIRTIO_NET_F_GUEST_ANNOUNCE, QEMU sets VIRTIO_NET_S_ANNOUNCE after the
switch-over and the guest sends a gratuitous ARP before any other traffic,
captured on the destination's tap.

Recorded: QEMU's downtime (query-migrate) and the traffic gap, the host time
between the last ping reply the guest printed on the source and the first on
the destination (both read from the guests' serial consoles as they arrive).

Usage: test_qemu_migration.py --variant base|mq|packed|rxq1024|ibdev|siblings [--json FILE]
Exit 0 pass, 1 fail, 77 skip (a prerequisite cannot be had on this machine).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import e2elib as L  # noqa: E402

VARIANTS = {
    'base': {},
    'mq': {'queues': 2},
    'packed': {'packed': True},
    'rxq1024': {'rx_queue_size': 1024},
    # The PMD's rdma back end: source ibdev=mlx5_0, destination ibdev=mlx5_1 on the
    # emulated rdma-core, each device's wire a tap.
    'ibdev': {'ibdev': True},
    # A second NIC (the guest leaves it unconfigured, its driver starts it) and
    # sibling_stop=1 on every device: the source's first NIC stopped while QEMU logs
    # asks the second one to stop ahead.
    'siblings': {'nics': 2, 'sibling_stop': True},
}
MEM_MB = 256
PING_INTERVAL = 0.1
REPLY = r'64 bytes from (\d+\.\d+\.\d+\.\d+): seq=(\d+)'
BOOT_TIMEOUT = 120
STEP_TIMEOUT = 60


class Run:
    def __init__(self, name, variant):
        self.name = name
        self.v = variant
        self.queues = variant.get('queues', 1)
        tag = f'{os.getpid() % 100000}'
        self.tmp = tempfile.mkdtemp(prefix='lm-e2e-')
        self.br_name = f'lme2e{tag}'[:15]
        self.taps = [f'lme{tag}s'[:15], f'lme{tag}d'[:15]]
        net = L.free_subnet()
        self.hosts = [f'{net}.1'] + ([f'{net}.3'] if self.queues > 1 else [])
        self.guest_ip = f'{net}.2/24'
        self.mac = '52:54:00:4c:4d:%02x' % (os.getpid() % 256)
        self.procs = []
        self.serves = []
        self.qmps = []
        self.bridge = None
        self.result = {'variant': name, 'config': variant}
        self.t0 = time.monotonic()

    # -- plumbing --
    def path(self, n):
        return os.path.join(self.tmp, n)

    def devargs(self, i):
        if self.v.get('ibdev'):
            return f'ibdev=mlx5_{i},queues={self.queues}'
        if self.v.get('sibling_stop'):
            return f'emu=fast,queues={self.queues},uplink=net_tap0,sibling_stop=1'
        return f'emu=fast,queues={self.queues},uplink=net_tap0'

    def start_serve(self, i):
        sock = self.path(f'vhost{i}.sock')
        # The second NIC's wire is the emulator's loopback: the guest sends nothing there.
        more = [(L.second_nic_sock(sock), 'emu=fast,queues=1,sibling_stop=1')] \
            if self.v.get('nics', 1) == 2 else []
        srv = L.serve(sock, self.devargs(i), self.taps[i],
                      ibdev=i if self.v.get('ibdev') else None, more=more)
        srv.name = f'serve-{["src", "dst"][i]}[{self.taps[i]}]'
        self.procs.append(srv)
        self.serves.append(srv)
        self.bridge.attach(self.taps[i])
        return srv

    def start_qemu(self, i, incoming=None):
        args = L.qemu_args(self.vmlinuz, self.initrd, MEM_MB, self.path(f'vhost{i}.sock'),
                           self.path(f'qmp{i}.sock'), self.v, self.mac, incoming)
        q = L.Proc(args, name=['qemu-src', 'qemu-dst'][i], stdin=True)
        # A serve that dies (crash) fails the wait on either guest at once.
        q.watch = list(self.serves)
        self.procs.append(q)
        q.qmp = None
        qmp = L.QMP(self.path(f'qmp{i}.sock'), proc=q)
        q.qmp = qmp
        self.qmps.append(qmp)
        return q, qmp

    def wait_replies(self, q, n, since, timeout=STEP_TIMEOUT):
        """n more ping replies from every host address after line `since`."""
        deadline = time.monotonic() + timeout
        for h in self.hosts:
            i = since
            for _ in range(n):
                left = deadline - time.monotonic()
                i, _, _ = q.expect(REPLY.replace(r'(\d+\.\d+\.\d+\.\d+)', re.escape(h)),
                                   max(left, 0.01), since=i)
                i += 1
        return q.mark()

    def guest_cmd(self, q, cmd, expect, timeout=STEP_TIMEOUT):
        start = q.mark()
        q.send(cmd)
        _, _, m = q.expect(expect + '|E2E-ERROR.*|lm-ethtool: .*', timeout, since=start)
        if m.group(0).startswith(('E2E-ERROR', 'lm-ethtool:')):
            raise AssertionError(f'guest: {cmd}: {m.group(0)}')
        return m

    def channels(self, q, n):
        """ethtool -L eth0 combined n while the pings run; they must keep flowing."""
        m = self.guest_cmd(q, f'lm-ethtool eth0 {n}', r'combined=(\d+) max=(\d+)')
        if int(m.group(1)) != n:
            raise AssertionError(f'guest has {m.group(1)} channels after asking for {n}')
        L.log(f'guest: {n} queue pair(s) enabled; waiting for pings')
        self.wait_replies(q, 5, q.mark())

    # -- the test --
    def run(self):
        self.vmlinuz, self.initrd = L.prepare()
        self.bridge = L.Bridge(self.br_name, [h + '/24' for h in self.hosts])
        src_srv = self.start_serve(0)
        dst_srv = self.start_serve(1)

        t0 = time.monotonic()
        src, src_qmp = self.start_qemu(0)
        _, t, m = src.expect(r'E2E-GUEST-READY.*', BOOT_TIMEOUT)
        self.result['boot_s'] = round(t - t0, 1)
        L.log(f'guest booted in {t - t0:.1f} s: {m.group(0)}')
        self.check_guest_device(m.group(0))
        self.guest_cmd(src, f'ip addr add {self.guest_ip} dev eth0 && echo E2E-IP-$((1+1))',
                       r'E2E-IP-2')
        for h in self.hosts:
            src.send(f'ping -i {PING_INTERVAL} {h} &')
        self.wait_replies(src, 10, 0)
        L.log('pings flow through the source device')
        if self.queues > 1:
            for n in (self.queues, 1, self.queues):
                self.channels(src, n)
        src_stats = L.serve_stats(src_srv)
        self.check_counters('source', src_stats)

        # Destination: QEMU waiting for the migration stream, its own serve and tap.
        mig = self.path('migrate.sock')
        dst, dst_qmp = self.start_qemu(1, incoming=f'unix:{mig}')
        st = dst_qmp.cmd('query-status')
        if st['status'] != 'inmigrate':
            raise AssertionError(f'destination QEMU is {st}')
        src_qmp.cmd('migrate-set-capabilities',
                    capabilities=[{'capability': 'events', 'state': True}])
        # What the destination device puts on its uplink, from before the switch-over.
        cap = L.UplinkCapture(self.taps[1], self.mac).start()
        L.log('migrating')
        tm = time.monotonic()
        src_qmp.cmd('migrate', uri=f'unix:{mig}')
        ev = src_qmp.wait_event('MIGRATION',
                                lambda e: e['data']['status'] in ('completed', 'failed',
                                                                  'cancelled'),
                                timeout=180)
        info = src_qmp.cmd('query-migrate')
        if ev['data']['status'] != 'completed':
            raise AssertionError(f'migration {ev["data"]["status"]}: {info}')
        # QEMU announces 'completed' a moment before it computes the times.
        deadline = time.monotonic() + STEP_TIMEOUT
        while not info.get('total-time') and time.monotonic() < deadline:
            info = src_qmp.cmd('query-migrate')
        t_done = time.monotonic()
        dst_qmp.wait_event('RESUME', lambda e: True, timeout=STEP_TIMEOUT)
        st = dst_qmp.cmd('query-status')
        if st['status'] != 'running':
            raise AssertionError(f'destination QEMU is {st} after migration')
        L.log(f'migration completed in {t_done - tm:.2f} s; QEMU downtime '
              f'{info.get("downtime")} ms; destination running')

        # Traffic resumes on the destination console.
        first_i, t_first, m_first = dst.expect(REPLY, STEP_TIMEOUT)
        self.wait_replies(dst, 10, first_i)
        self.check_announce(cap.stop())
        before = src.matches(REPLY)
        if not before:
            raise AssertionError('no ping reply on the source console')
        t_last = before[-1][0]
        gap_ms = (t_first - t_last) * 1000
        lost = 0
        for h in self.hosts:
            b = [int(m.group(2)) for _, m in before if m.group(1) == h]
            a = [int(m.group(2)) for _, m in dst.matches(REPLY) if m.group(1) == h]
            if b and a:
                lost += max(0, a[0] - b[-1] - 1)
        L.log(f'pings resumed on the destination: traffic gap {gap_ms:.0f} ms, '
              f'{lost} echo request(s) unanswered')
        dst_stats = L.serve_stats(dst_srv)
        self.check_counters('destination', dst_stats)
        # The device's part, as the PMD logs it: source stop (GET_VRING_BASE ->
        # every queue suspended) and destination start (DRIVER_OK -> queues RDY).
        if self.v.get('nics', 1) == 2:
            self.check_siblings(src_srv, dst_srv)
        stop = src_srv.matches(r'stopped in ([\d.]+) ms')
        start = dst_srv.matches(r'configured in ([\d.]+) ms')
        dev_stop_ms = float(stop[-1][1].group(1)) if stop else None
        dev_start_ms = float(start[0][1].group(1)) if start else None
        L.log(f'device: source stopped in {dev_stop_ms} ms, destination configured in '
              f'{dev_start_ms} ms')
        if self.queues > 1:
            for n in (1, self.queues):
                self.channels(dst, n)
            dst_stats = L.serve_stats(dst_srv)
        self.result.update({
            'qemu_downtime_ms': info.get('downtime'),
            'qemu_total_time_ms': info.get('total-time'),
            'qemu_setup_time_ms': info.get('setup-time'),
            'ram_transferred_bytes': info.get('ram', {}).get('transferred'),
            'traffic_gap_ms': round(gap_ms, 1),
            'device_src_stop_ms': dev_stop_ms,
            'device_dst_start_ms': dev_start_ms,
            'query_migrate': info,
            'unanswered_pings': lost,
            'ping_interval_ms': PING_INTERVAL * 1000,
            'src_device_counters': {f'{k[0]}{k[1]}': v['completed_descriptors']
                                    for k, v in src_stats.items()},
            'dst_device_counters': {f'{k[0]}{k[1]}': v['completed_descriptors']
                                    for k, v in dst_stats.items()},
        })

        # Both QEMUs go; each serve sees its front end leave, then tears down cleanly.
        for qmp, srv, q in ((src_qmp, src_srv, src), (dst_qmp, dst_srv, dst)):
            qmp.cmd('quit')
            q.stop(sig=None, timeout=STEP_TIMEOUT)
            srv.expect(r'serve: front end gone', STEP_TIMEOUT)
        for srv in (src_srv, dst_srv):
            rc = srv.stop(timeout=STEP_TIMEOUT)
            if rc != 0 or 'clean teardown' not in srv.text():
                raise AssertionError(f'{srv.name} exit {rc}:\n{srv.tail()}')

    def check_siblings(self, src_srv, dst_srv):
        """QEMU stopped the VM's two NICs one after another, logging: the first one it
        stopped (QEMU 7.2 stops the second NIC first) asked the other to stop ahead,
        once, naming the source QEMU's pid (whether the other's worker got there before
        QEMU's GET_VRING_BASE did is timing, and said); both stopped, both started
        again, and nothing was undone."""
        asked = src_srv.matches(r'vdpa_mlx5_lm(\d): stopping: 1 other devices of front end '
                                r'pid (\d+) asked to stop ahead')
        if len(asked) != 1:
            raise AssertionError(f'the first NIC\'s stop asked {len(asked)} times:\n'
                                 f'{src_srv.tail()}')
        first, pid = int(asked[0][1].group(1)), int(asked[0][1].group(2))
        other = 1 - first
        qemu_pid = self.procs[[p.name for p in self.procs].index('qemu-src')].p.pid
        if pid != qemu_pid:
            raise AssertionError(f'front end pid {pid}, the source QEMU is {qemu_pid}')
        for srv, what in ((src_srv, r'stopped in'), (dst_srv, r'configured in')):
            for d in (0, 1):
                if not srv.matches(rf'vdpa_mlx5_lm{d}: .*{what} [\d.]+ ms'):
                    raise AssertionError(f'{srv.name}: device {d} never {what}:\n{srv.tail()}')
        if src_srv.matches(r'queues stopped ahead resumed'):
            raise AssertionError(f'a stop ahead was undone:\n{src_srv.tail()}')
        ahead = bool(src_srv.matches(rf'vdpa_mlx5_lm{other}: stopped in [\d.]+ ms \(its '
                                     r'queues were stopped ahead'))
        self.result['sibling_stopped_ahead'] = ahead
        L.log(f'device {first} stopped first and asked device {other} to stop ahead (QEMU '
              f'pid {pid}); its own stop found it {"done" if ahead else "not done yet"}')

    def check_announce(self, frames):
        """Right after migration the guest announces itself (VIRTIO_NET_F_GUEST_ANNOUNCE:
        QEMU sets VIRTIO_NET_S_ANNOUNCE, the guest sends gratuitous ARPs) through the
        destination device, before any other frame of its own: the network learns
        the guest's new place before traffic needs it."""
        kinds = [L.describe_frame(f) for _, f in frames]
        L.log(f'destination uplink, first guest frames: ' +
              '; '.join(t for _, t in kinds[:6]))
        if not kinds:
            raise AssertionError('no guest frame on the destination uplink')
        ip4 = socket.inet_aton(self.guest_ip.split('/')[0])
        # Frames the guest posted before it was stopped and the source device had not
        # sent yet go out first, from the destination's first doorbell, before the guest
        # runs again: at most one echo request of each ping (one per host), the next
        # of its sequence. They are traffic from before the switch-over, not after it.
        queued = set()
        lead = 0
        for _, f in frames:
            dst = socket.inet_ntoa(f[30:34]) if len(f) >= 35 else None
            if (int.from_bytes(f[12:14], 'big') == 0x0800 and f[23] == 1 and f[34] == 8 and
                    f[26:30] == ip4 and dst in self.hosts and dst not in queued):
                queued.add(dst)
                lead += 1
                continue
            break
        first_other = next((i for i, (k, _) in enumerate(kinds) if k == 'other' and i >= lead),
                           len(kinds))
        garps = [i for i, (_, f) in enumerate(frames)
                 if kinds[i][0] in ('garp', 'rarp') and
                 (kinds[i][0] == 'rarp' or f[28:32] == ip4)]
        self.result['announce'] = {'first_frames': [t for _, t in kinds[:6]],
                                   'garp_index': garps[0] if garps else None}
        self.result['announce']['queued_before_stop'] = lead
        if lead == len(kinds) or kinds[lead][0] == 'other' or not garps or \
                garps[0] > first_other:
            raise AssertionError('the guest did not announce itself (gratuitous ARP or '
                                 'RARP) before other traffic on the destination uplink: '
                                 + '; '.join(t for _, t in kinds[:10]))

    def check_guest_device(self, ready):
        """What the guest's virtio_net got is what the variant asked for."""
        f = dict(re.findall(r'(\w+)=(\S+)', ready))
        bits = f.get('features', '')
        has = lambda b: len(bits) > b and bits[b] == '1'
        want = {'max': str(self.queues),
                'rx_ring': str(self.v.get('rx_queue_size', 256)), 'tx_ring': '256'}
        got = {k: f.get(k) for k in want}
        self.result['guest'] = dict(got, version_1=has(32), packed=has(34), mq=has(22),
                                    guest_announce=has(21), features=bits)
        if not has(21):
            raise AssertionError(f'guest lacks VIRTIO_NET_F_GUEST_ANNOUNCE: {bits}')
        if got != want or not has(32) or has(34) != bool(self.v.get('packed')) or \
                has(22) != (self.queues > 1):
            raise AssertionError(f'guest device {self.result["guest"]}, wanted {want}, '
                                 f'packed={bool(self.v.get("packed"))}, '
                                 f'mq={self.queues > 1}')

    def check_counters(self, which, stats):
        """The pings went through this device: its rx and tx queues completed descriptors."""
        rx = sum(v['completed_descriptors'] for k, v in stats.items() if k[0] == 'rx')
        tx = sum(v['completed_descriptors'] for k, v in stats.items() if k[0] == 'tx')
        errs = sum(v[c] for v in stats.values() for c in v if c != 'received_descriptors'
                   and c != 'completed_descriptors')
        L.log(f'{which} device: rx {rx} tx {tx} completed descriptors, {errs} errors; ' +
              ', '.join(f'{k[0]}{k[1]}={v["completed_descriptors"]}'
                        for k, v in sorted(stats.items())))
        if rx == 0 or tx == 0:
            raise AssertionError(f'no traffic through the {which} device: {stats}')
        if errs:
            raise AssertionError(f'{which} device reports errors: {stats}')

    def cleanup(self):
        for q in self.qmps:
            q.close()
        for p in reversed(self.procs):
            p.kill()
        if self.bridge:
            self.bridge.delete()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dump(self):
        """A failed run explains itself: the state of whatever is still alive (device
        counters, QEMU's view of its virtio device, the guest's interface counters and
        interrupts, the bridge's forwarding table), then every serve's whole log and the
        consoles' ends. Printed (meson keeps it in testlog.txt) and saved under
        build/tests/e2e/fail-<variant>-<time>/, which the next meson run does not overwrite."""
        out = os.path.join(os.path.dirname(L.CACHE),
                           f'fail-{self.name}-{time.strftime("%Y%m%d-%H%M%S")}-{os.getpid()}')
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            print(f'---- cannot keep the logs in {out}: {e}', flush=True)
            out = None
        t0_wall = time.time() - (time.monotonic() - self.t0)
        print(f'---- failed {time.monotonic() - self.t0:.3f} s after the start '
              f'({time.strftime("%H:%M:%S", time.localtime(t0_wall))}'
              f'.{int(t0_wall * 1000) % 1000:03d})', flush=True)
        sections = []
        for what, fn in (('device statistics (SIGUSR1)', self.diag_serves),
                         ('QEMU (QMP)', self.diag_qemus),
                         ('guest (serial console)', self.diag_guests),
                         ('host network', self.diag_host)):
            try:
                text = fn()
            except Exception as e:  # a diagnosis that fails must not hide the failure
                text = f'(failed: {type(e).__name__}: {e})'
            sections.append((what, text))
        for what, text in sections:
            print(f'---- {what} ----\n{text}', flush=True)
            self.keep(out, what.split()[0].lower() + '.txt', text, append=True)
        for p in self.procs:
            rc = p.p.poll()
            state = 'running' if rc is None else f'exited {rc}'
            # Host time (s since the run started) on every line: the logs of the four
            # processes and the test's own [e2e] lines can be put side by side.
            with p.cv:
                lines = [f'{t - self.t0:8.3f} {l}' for t, l in p.lines]
            self.keep(out, p.name + '.log', '\n'.join(lines))
            # The driver's log lines name device and queue: the serves' logs in full.
            text = '\n'.join(lines if p in self.serves else lines[-150:])
            print(f'---- {p.name} ({state}; {"whole log" if p in self.serves else "last lines"}'
                  f', host time in s since the start) ----\n{text}', flush=True)
        if out:
            print(f'---- logs kept in {out}', flush=True)

    @staticmethod
    def keep(out, name, text, append=False):
        if out is None:
            return
        try:
            with open(os.path.join(out, name), 'a' if append else 'w') as f:
                f.write(text + '\n')
        except OSError as e:
            print(f'---- cannot write {name}: {e}', flush=True)

    def alive(self, p):
        return p.p.poll() is None

    def diag_serves(self):
        """Each live serve's per-queue counters, as SIGUSR1 prints them (in its log)."""
        res = []
        for srv in self.serves:
            if not self.alive(srv):
                res.append(f'{srv.name}: exited {srv.p.returncode}')
                continue
            start = srv.mark()
            srv.p.send_signal(signal.SIGUSR1)
            try:
                end, _, _ = srv.expect(r'serve: end of statistics', 10, since=start)
            except (TimeoutError, EOFError) as e:
                res.append(f'{srv.name}: no statistics: {str(e).splitlines()[0]}')
                continue
            with srv.cv:
                res.append(f'{srv.name}:\n' + '\n'.join(l for _, l in
                                                        srv.lines[start:end + 1]))
            res.append(self.thread_times(srv.p.pid))
        return '\n'.join(res)

    @staticmethod
    def thread_times(pid):
        """CPU seconds of the threads of pid and of its descendants (the wrapper's serve)
        that used any: a thread spinning (e.g. a notification thread looping on events)
        stands out."""
        tick = os.sysconf('SC_CLK_TCK')
        out, todo, idle = [], [pid], 0
        while todo:
            p = todo.pop()
            for tid in sorted(os.listdir(f'/proc/{p}/task') if os.path.isdir(f'/proc/{p}/task')
                              else [], key=int):
                try:
                    with open(f'/proc/{p}/task/{tid}/stat') as f:
                        st = f.read()
                    with open(f'/proc/{p}/task/{tid}/children') as f:
                        todo += [int(c) for c in f.read().split()]
                except OSError:
                    continue  # ended meanwhile
                name = st[st.index('(') + 1:st.rindex(')')]
                fields = st[st.rindex(')') + 2:].split()
                # utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
                cpu = (int(fields[11]) + int(fields[12])) / tick
                if cpu == 0:
                    idle += 1
                    continue
                out.append(f'  pid {p} tid {tid} {name}: {cpu:.2f} s CPU')
        return f'threads ({idle} more used no CPU tick):\n' + '\n'.join(out)

    def diag_qemus(self):
        """QEMU's status, migration state and virtio device and queues (x-query-virtio*:
        the guest's avail/used indices as QEMU sees them, and vhost's)."""
        res = []
        for q in [p for p in self.procs if p.name.startswith('qemu')]:
            qmp = q.qmp
            if not self.alive(q) or qmp is None:
                res.append(f'{q.name}: exited {q.p.returncode}' if not self.alive(q) else
                           f'{q.name}: no QMP connection')
                continue
            qmp.s.settimeout(10)

            def ask(name, why='', **args):
                try:
                    r = qmp.cmd(name, **args)
                except Exception as e:
                    r = f'(failed: {type(e).__name__}: {e})'
                res.append(f'{q.name}: {name} {json.dumps(args) if args else ""}'
                           f'{" (queue " + why + ")" if why else ""} '
                           f'{json.dumps(r, sort_keys=True)}')
                return r
            ask('query-status')
            ask('query-migrate')
            devs = ask('x-query-virtio')
            for d in devs if isinstance(devs, list) else []:
                st = ask('x-query-virtio-status', path=d['path'])
                if not isinstance(st, dict):
                    continue
                vhost = st.get('vhost-started')
                nv = st.get('vhost-dev', {}).get('nvqs', 0) if vhost else 0
                for i in range(st.get('num-vqs', 0)):
                    if vhost and i < nv:
                        # Not x-query-virtio-queue-status: with vhost started, QEMU 7.2
                        # answers it with a GET_VRING_BASE, which stops the ring.
                        a = ask('x-query-virtio-vhost-queue-status', path=d['path'], queue=i)
                        ring = (a.get('avail-phys'), a.get('used-phys')) \
                            if isinstance(a, dict) else (None, None)
                    else:
                        a = ask('x-query-virtio-queue-status', path=d['path'], queue=i)
                        ring = (a.get('vring-avail'), a.get('vring-used')) \
                            if isinstance(a, dict) else (None, None)
                    # The indices in guest memory: avail flags, idx; used flags, idx.
                    for what, gpa in zip(('avail', 'used'), ring):
                        if gpa:
                            ask('human-monitor-command',
                                **{'command-line': f'xp /2hx {gpa:#x}'}, why=f'{i} {what}')
            ask('human-monitor-command', **{'command-line': 'info network'})
        return '\n'.join(res)

    def diag_guests(self):
        """What each live guest's kernel counted on eth0, its interrupts and its ARP table."""
        res = []
        for q in [p for p in self.procs if p.name.startswith('qemu')]:
            if not self.alive(q):
                continue
            try:
                st = q.qmp.cmd('query-status')['status'] if q.qmp else 'unknown'
            except Exception as e:
                st = f'unknown ({e})'
            if st != 'running':
                # A paused guest (the source after the switch-over) has no shell to answer.
                res.append(f'{q.name}: guest {st}, not asked')
                continue
            start = q.mark()
            try:
                q.send('cat /proc/net/dev /proc/interrupts /proc/net/arp; '
                       'echo E2E-DIAG-$((1+1))')
                end, _, _ = q.expect(r'E2E-DIAG-2', 10, since=start)
            except Exception as e:
                res.append(f'{q.name}: no answer: {str(e).splitlines()[0]}')
                continue
            with q.cv:
                res.append(f'{q.name}:\n' + '\n'.join(l for _, l in q.lines[start:end]))
        return '\n'.join(res)

    def diag_host(self):
        """Where the bridge forwards the guest's MAC (fdb), the taps' counters, neighbours."""
        if self.bridge is None:
            return '(no bridge)'
        res = []
        for cmd in (['bridge', 'fdb', 'show', 'br', self.br_name],
                    ['ip', '-s', 'link', 'show', 'master', self.br_name],
                    ['ip', '-s', 'link', 'show', 'dev', self.br_name],
                    ['ip', 'neigh', 'show', 'dev', self.br_name]):
            r = L.run(cmd, check=False, timeout=10)
            res.append(f'$ {" ".join(cmd)}\n{r.stdout.decode(errors="replace").rstrip()}')
        return '\n'.join(res)


def main():
    # meson's timeout sends SIGTERM: clean up (QEMUs, serves, bridge) on the way out.
    signal.signal(signal.SIGTERM, L.on_sigterm)
    ap = argparse.ArgumentParser()
    ap.add_argument('--variant', choices=sorted(VARIANTS), default='base')
    ap.add_argument('--json', help='write the measurements here')
    a = ap.parse_args()
    r = Run(a.variant, VARIANTS[a.variant])
    t0 = time.monotonic()
    try:
        r.run()
    except L.Skip as e:
        print(f'SKIP: {e}', flush=True)
        r.cleanup()
        return L.SKIP
    except Exception:
        traceback.print_exc()
        r.dump()
        r.cleanup()
        print(f'FAIL: e2e {a.variant}', flush=True)
        return 1
    r.cleanup()
    r.result['wall_s'] = round(time.monotonic() - t0, 1)
    res = r.result
    print(f'E2E RESULT variant={a.variant} qemu_downtime_ms={res["qemu_downtime_ms"]} '
          f'traffic_gap_ms={res["traffic_gap_ms"]} unanswered_pings={res["unanswered_pings"]} '
          f'device_src_stop_ms={res["device_src_stop_ms"]} '
          f'device_dst_start_ms={res["device_dst_start_ms"]} '
          f'migration_total_ms={res["qemu_total_time_ms"]} boot_s={res["boot_s"]} '
          f'wall_s={res["wall_s"]}', flush=True)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
