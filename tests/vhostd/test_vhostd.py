#!/usr/bin/env python3
"""mlx5-lm-vhostd through its public paths: the JSON-RPC socket and mlx5-lm-ctl.

Start and readiness, every method, the configuration (save, replay, SIGHUP),
two VMs in two workers with traffic from the built-in front end, a worker
killed (-9) while the other VM's frames keep coming, SIGTERM cleaning
everything, metrics, and the bad input a control socket gets: malformed and oversized
requests, wrong types, duplicates, bad devargs, socket paths that are not
ours, 1000 connections, a half request that stalls, other users, hostile
front ends. LM_BACKEND=rdma runs the devices as ibdev= under
tools/with-emulated-rdma."""
import json
import os
import re
import resource
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time
import unittest

from lmtest import vu_send_region_past_its_file
from vhostdlib import (CTL, TRAFFIC, VHOSTD, WORKER, Proc, RpcError, Service, Traffic,
                       children, closed_by_peer, connect, read_reply, vu_connect)

RDMA = os.environ.get('LM_BACKEND') == 'rdma'
WRAPPER = os.environ.get('LM_WRAPPER')
WRAP = ['python3', WRAPPER, '--devices', '4', '--profile', 'fast', '--'] if RDMA else []


def devargs(i=0, extra='queues=1'):
    """Device i's devargs: an emulated device, or emulated RDMA device mlx5_<i>."""
    return (f'ibdev=mlx5_{i},' if RDMA else 'emu=fast,') + extra


def service(d, **kw):
    return Service(d, wrap=WRAP, **kw)


def recv_all(c):
    """What socket c receives until the other end closes it."""
    data = b''
    while True:
        chunk = c.recv(65536)
        if not chunk:
            return data
        data += chunk


def write_config(d, *devices):
    """d/cfg.json: a device_add entry for each of devices (its params); its path."""
    cfg = os.path.join(d, 'cfg.json')
    with open(cfg, 'w') as f:
        json.dump({'config': [{'method': 'device_add', 'params': p} for p in devices]}, f)
    return cfg


def stopped_clean(test, srv):
    rc = srv.stop()
    test.assertEqual(rc, 0, srv.p.text()[-3000:])
    test.assertIn('stopped: every worker gone, 0 device objects left alive', srv.p.text())


class Basics(unittest.TestCase):
    def test_every_command_has_help(self):
        for prog in (VHOSTD, WORKER, CTL):
            r = subprocess.run([prog, '--help'], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, prog)
            self.assertIn('Usage:', r.stdout)
        out = subprocess.run([CTL, '--help'], capture_output=True, text=True).stdout
        cmds = re.findall(r'^  (\w+) ', out.split('Commands')[1], re.M)
        self.assertGreaterEqual(len(cmds), 10, out)
        for c in cmds:
            r = subprocess.run([CTL, c, '--help'], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, c)
            self.assertIn('Usage: mlx5-lm-ctl', r.stdout, c)
        r = subprocess.run([CTL, 'no_such_command'], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([CTL, '--socket', '/nonexistent/x.sock', 'device_list'],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 3)
        self.assertIn('cannot reach', r.stderr)
        # A required option left out is a usage error whether the service runs or not
        # (it was 3 here, 1 with a service); the usage lines name --timeout too.
        r = subprocess.run([CTL, '--socket', '/nonexistent/x.sock', 'device_add', '--name',
                            'x'], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn('missing --vm, --vhost-socket, --devargs', r.stderr)
        r = subprocess.run([CTL, 'device_add', '--help'], capture_output=True, text=True,
                           timeout=30)
        self.assertIn('[--timeout S] device_add', r.stdout)

    def test_device_added_runs_reports_and_is_removed_then_a_clean_stop(self):
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                st = os.stat(srv.rpc)
                self.assertTrue(stat.S_ISSOCK(st.st_mode))
                self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
                self.assertEqual(sorted(srv.call('rpc_get_methods')), sorted([
                    'device_add', 'device_remove', 'device_list', 'device_get',
                    'device_get_stats', 'device_prepare', 'vm_list', 'service_get_version',
                    'rpc_get_methods', 'config_save']))
                self.assertEqual(srv.call('service_get_version')['name'], 'mlx5-lm-vhostd')
                sock = os.path.join(d, 'vm1.sock')
                rc, out, err = srv.ctl('device_add', '--name', 'n1', '--vm', 'vm1',
                                       '--vhost-socket', sock, '--devargs',
                                       devargs(0, 'queues=2'))
                self.assertEqual(rc, 0, err)
                self.assertIn('added n1', out)
                self.assertTrue(stat.S_ISSOCK(os.stat(sock).st_mode))
                rc, out, _ = srv.ctl('device_list')
                self.assertRegex(out, r'n1\s+vm1\s+waiting')
                rc, out, _ = srv.ctl('--json', 'vm_list')
                vms = json.loads(out)
                self.assertEqual([v['vm'] for v in vms], ['vm1'])
                self.assertEqual(vms[0]['devices'], ['n1'])
                t = Traffic(sock)
                try:
                    srv.wait_state('n1', 'running')
                    info = srv.call('device_get', {'name': 'n1'})
                    self.assertEqual(info['frontend']['pid'], t.p.pid)
                    self.assertIn('VERSION_1', info['features']['names'])
                    self.assertEqual(info['queues']['device_pairs'], 2)
                    self.assertEqual(info['memory']['bytes'], 1 << 30)
                    self.assertGreater(info['last_start']['total_ms'], 0)
                    self.assertEqual(info['last_start']['count'], 1)
                    stats = srv.call('device_get_stats', {'name': 'n1'})
                    # DPDK vdpa/mlx5's names, as rte_vdpa_get_stats_names gives them.
                    self.assertEqual(stats['names'], [
                        'received_descriptors', 'completed_descriptors',
                        'bad descriptor errors', 'exceed max chain', 'invalid buffer',
                        'completion errors'])
                    rx0 = stats['queues'][0]
                    self.assertEqual((rx0['type'], rx0['pair']), ('rx', 0))
                    self.assertGreater(rx0['counters']['completed_descriptors'], 0)
                    rc, out, _ = srv.ctl('device_get_stats', 'n1')
                    self.assertRegex(out, r'rx  0 +\d+')
                    # Removing a running NIC: the front end loses its back end, the
                    # device and its socket are gone, the VM's worker too.
                    worker = srv.vm('vm1')['worker_pid']
                    rc, out, err = srv.ctl('device_remove', 'n1')
                    self.assertEqual(rc, 0, err)
                    self.assertIn('removed n1 (vm vm1, was running)', out)
                    t.expect(r'back end gone', timeout=30)
                finally:
                    t.kill()
                self.assertIsNone(srv.device('n1'))
                self.assertFalse(os.path.exists(sock))
                srv.p.expect(r'vm vm1: worker %d exited with status 0, 0 device objects'
                             % worker, timeout=30)
                self.assertEqual(srv.call('vm_list'), [])
                rc, _, err = srv.ctl('device_get', 'n1')
                self.assertEqual(rc, 1)
                self.assertIn('-32001', err)
            finally:
                stopped_clean(self, srv)
            self.assertFalse(os.path.exists(srv.rpc))

    def test_metrics_on_loopback_tcp_only(self):
        with socket.socket() as probe:
            probe.bind(('127.0.0.1', 0))
            port = probe.getsockname()[1]
        with tempfile.TemporaryDirectory() as d:
            # localhost is 127.0.0.1: an operator writes it so (it was refused as
            # "only a loopback address").
            srv = service(d, metrics=f'localhost:{port}')
            try:
                srv.add('m', 'vm1', os.path.join(d, 'm.sock'), devargs(0))
                c = socket.create_connection(('127.0.0.1', port), timeout=10)
                c.sendall(b'GET /metrics HTTP/1.0\r\n\r\n')
                page = recv_all(c)
                c.close()
                self.assertIn(b'200 OK', page.split(b'\r\n')[0])
                self.assertIn(b'mlx5_lm_vhostd_device_state{vm="vm1",device="m",'
                              b'state="waiting"} 1', page)
            finally:
                stopped_clean(self, srv)
            # A malformed or non-loopback address is a usage error (2, it was 1), said
            # before anything is made.
            for bad, why in (('0.0.0.0:9', 'a loopback address only'),
                             ('127.0.0.1:abc', 'PORT 1-65535'), (':0', 'PORT 1-65535'),
                             ('127.0.0.1:99999', 'PORT 1-65535'),
                             ('relative.sock', 'an absolute unix socket path')):
                r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'),
                                    '--worker', WORKER, '--metrics', bad],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 2, bad + ': ' + r.stderr)
                self.assertIn(why, r.stderr)
                self.assertFalse(os.path.exists(os.path.join(d, 'r.sock')))

    def test_metrics_labels_from_a_worker_are_escaped(self):
        """A worker's device and counter names went into the page as they came: a '"',
        a '\\' or a newline ended the label or the line, and made up samples of its
        own. A fake worker pushes such names; every line of the page must still be one
        comment or one sample, the values escaped (\\\\, \\", \\n)."""
        fake = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fake_worker.py')
        sample = re.compile(r'^[a-z0-9_]+\{(?:[a-z]+="(?:[^"\\\n]|\\[\\"n])*",?)+\} '
                            r'[0-9.e+-]+$')
        with tempfile.TemporaryDirectory() as d:
            metrics = os.path.join(d, 'metrics.sock')
            srv = Service(d, metrics=metrics, extra=('--worker', fake))
            try:
                srv.add('n', 'vm1', os.path.join(d, 'n.sock'))
                deadline = time.monotonic() + 30
                while True:
                    page = http_get(metrics, '/metrics')
                    if 'queue_errors_total{' in page:
                        break
                    self.assertLess(time.monotonic(), deadline, 'no queue metrics')
                    srv.p._read(0.1)  # the fake worker pushes once, right after the add
                for line in page.splitlines():
                    if not line.startswith('#'):
                        self.assertRegex(line, sample)
                odd = 'x\\"} 1\\nfake_metric{a=\\"\\\\'
                self.assertIn('device="n' + odd + '"', page)
                self.assertIn('type="rx' + odd + '"', page)
                self.assertIn('kind="bad_' + odd.replace(' ', '_') + '_errors"', page)
                self.assertNotIn('\nfake_metric', page)
            finally:
                stopped_clean(self, srv)

    def test_a_workers_exit_report_read_after_its_death_still_counts(self):
        """A worker's last message (exit, its count of device objects left alive) races
        its SIGCHLD: handled first, the death closed the channel with the report unread,
        the count was unknown and the service stopped 0 where the worker had said 2.
        late_exit_worker.py makes the death come first, every time: the report left in
        the channel counts, and the service exits 3."""
        w, rc, text = stopped_with_late_exit_worker({'LATE_LEAKED': '2'})
        # The order this test is for: the report written once the worker was dead.
        self.assertIn(f'late_exit_worker {w}: exit report sent after its death', text)
        self.assertIn(f'vm vm1: worker {w} exited with status 3, 2 device objects left '
                      'alive', text)
        self.assertIn('stopped: 2 device objects were left alive in the workers', text)
        self.assertEqual(rc, 3, text[-3000:])

    def test_a_worker_that_exits_3_without_its_report_still_counts(self):
        """A worker exits 3 only when it left device objects alive; its report lost (never
        sent here), the service stopped 0, the count 'unknown'. Its status says it leaked:
        the service stops 3, and says how much it could not count."""
        w, rc, text = stopped_with_late_exit_worker({'LATE_REPORT': '0'})
        self.assertIn(f'late_exit_worker {w}: exits 3 without its report', text)
        self.assertIn(f'vm vm1: worker {w} exited with status 3, -1 device objects left '
                      'alive (unknown: it did not say)', text)
        self.assertIn('stopped: 0 device objects were left alive in the workers, and more '
                      'in 1 whose exit status (3) said so but whose count was lost', text)
        self.assertEqual(rc, 3, text[-3000:])

    def test_an_answer_read_after_its_workers_death_still_answers(self):
        """A worker's answer races its SIGCHLD as its exit report does: handled first, the
        death failed the device_add as unanswered (-32004 '... before answering') and
        dropped the device the worker had created. late_exit_worker.py makes the death come
        first, every time: the answer left in the channel is the add's, and the restarted
        worker re-creates the device."""
        late = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'late_exit_worker.py')
        with tempfile.TemporaryDirectory() as d:
            srv = service(d, extra=('--worker', late),
                          env={'LATE_ANSWER_MARK': os.path.join(d, 'answered'),
                               'LATE_LEAKED': '0'})
            try:
                r = srv.add('n1', 'vm1', os.path.join(d, 'n1.sock'))
                w = r['worker_pid']
                self.assertEqual(r['state'], 'waiting', r)
                # The order this test is for: the answer written once the worker was dead.
                srv.p.expect(f'late_exit_worker {w}: answer to add n1 sent after its death',
                             timeout=30)
                srv.p.expect(r'vm vm1: worker %d exited with status 1 .*devices: n1\); '
                             r'restart 1' % w, timeout=30)
                srv.p.expect(r'device n1: re-created by worker \d+', timeout=30)
                v = srv.vm('vm1')
                self.assertNotEqual(v['worker_pid'], w)
                self.assertEqual(v['restarts'], 1)
                self.assertEqual(srv.device('n1')['state'], 'waiting')
                self.assertNotIn('before answering', srv.p.text())
            finally:
                stopped_clean(self, srv)

    def test_rpc_group_members_may_use_the_socket(self):
        group = nobody_group(self)
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o711)
            srv = service(d, extra=['--rpc-group', group])
            try:
                st = os.stat(srv.rpc)
                self.assertEqual((stat.S_IMODE(st.st_mode), st.st_gid), (0o660, 65534))

                def lists():
                    c = connect(srv.rpc)
                    c.sendall(b'{"jsonrpc":"2.0","id":1,"method":"device_list"}')
                    r = read_reply(c, 10)
                    return r is not None and r.get('result') == []
                self.assertTrue(as_nobody(lists))
            finally:
                stopped_clean(self, srv)

    def test_a_sockets_group_and_mode_let_its_members_connect(self):
        """The vhost-user sockets were srwxr-xr-x root root (the service's umask): QEMU
        not running as root (libvirt's libvirt-qemu) could not connect."""
        group = nobody_group(self)
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o711)
            cfg = os.path.join(d, 'cfg.json')
            sa, sb, sc = (os.path.join(d, n + '.sock') for n in 'abc')
            umask = os.umask(0o022)
            os.umask(umask)
            srv = service(d, config=cfg, extra=['--allow-missing-config'])
            try:
                rc, out, err = srv.ctl('device_add', '--name', 'a', '--vm', 'vmg',
                                       '--vhost-socket', sa, '--devargs', devargs(0),
                                       '--socket-group', group)
                self.assertEqual(rc, 0, err)
                # A mode alone: the group stays the service's.
                srv.call('device_add', {'name': 'c', 'vm': 'vmg', 'socket': sc,
                                        'devargs': devargs(2), 'socket_mode': '0606'})
                # Neither: as the service's umask makes it (QEMU as root only).
                srv.add('b', 'vmg', sb, devargs(1))

                def perms(p):
                    st = os.stat(p)
                    return stat.S_IMODE(st.st_mode), st.st_gid
                self.assertEqual(perms(sa), (0o660, 65534))
                self.assertEqual(perms(sb), (0o777 & ~umask, 0))
                self.assertEqual(perms(sc), (0o606, 0))
                # uid 65534 in group 65534 only (no supplementary group of root's).
                self.assertEqual(as_member(lambda: connects(sa)), 'connected')
                self.assertEqual(as_member(lambda: connects(sb)), 'refused')
                self.assertEqual(srv.device('a')['socket_group'], group)
                # Kept across a worker's restart: the sockets are re-created with them.
                w = srv.vm('vmg')['worker_pid']
                os.kill(w, signal.SIGKILL)
                srv.p.expect(r'vm vmg: worker %d killed' % w, timeout=30)
                for n in 'abc':
                    srv.wait_state(n, 'waiting')
                self.assertEqual(perms(sa), (0o660, 65534))
                self.assertEqual(perms(sb), (0o777 & ~umask, 0))
                self.assertEqual(perms(sc), (0o606, 0))
                self.assertEqual(as_member(lambda: connects(sa)), 'connected')
                # Saved as given: the service's defaults are not written into devices.
                srv.call('config_save')
                with open(cfg) as f:
                    saved = {e['params']['name']: e['params'] for e in json.load(f)['config']}
                self.assertEqual(saved['a'].get('socket_group'), group)
                self.assertNotIn('socket_mode', saved['a'])
                self.assertEqual(saved['c'].get('socket_mode'), '0606')
                self.assertNotIn('socket_group', saved['b'])
                self.assertNotIn('socket_mode', saved['b'])
            finally:
                stopped_clean(self, srv)
            # Replayed from the file with them; the service's own --socket-group and
            # --socket-mode for what a device does not name.
            srv = service(d, config=cfg, extra=['--socket-group', group, '--socket-mode',
                                                '0640'])
            try:
                self.assertEqual(perms(sa), (0o640, 65534))
                self.assertEqual(perms(sb), (0o640, 65534))
                self.assertEqual(perms(sc), (0o606, 65534))
                self.assertEqual(as_member(lambda: connects(sb)), 'refused')
            finally:
                stopped_clean(self, srv)

    def test_a_socket_group_that_does_not_exist_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'a.sock')
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--worker',
                                WORKER, '--socket-group', 'no-such-group-x'],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--socket-group: no group 'no-such-group-x'", r.stderr)
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--worker',
                                WORKER, '--socket-mode', '4660'],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--socket-mode takes permission bits in octal", r.stderr)
            srv = service(d)
            try:
                base = ['device_add', '--name', 'a', '--vm', 'v', '--vhost-socket', sock,
                        '--devargs', devargs(0)]
                rc, out, err = srv.ctl(*base, '--socket-group', 'no-such-group-x')
                self.assertEqual(rc, 2, err)
                self.assertIn("--socket-group: no group 'no-such-group-x'", err)
                for bad in ('999', '66', '1777', 'rw'):
                    rc, out, err = srv.ctl(*base, '--socket-mode', bad)
                    self.assertEqual(rc, 2, (bad, err))
                    self.assertIn(f"--socket-mode takes permission bits in octal, 0000 to "
                                  f"0777 (e.g. 0660), not '{bad}'", err)
                with self.assertRaises(RpcError) as e:
                    srv.call('device_add', {'name': 'a', 'vm': 'v', 'socket': sock,
                                            'devargs': devargs(0),
                                            'socket_group': 'no-such-group-x'})
                self.assertEqual(e.exception.code, -32602)
                self.assertIn("'socket_group': no group 'no-such-group-x'", e.exception.message)
                with self.assertRaises(RpcError) as e:
                    srv.call('device_add', {'name': 'a', 'vm': 'v', 'socket': sock,
                                            'devargs': devargs(0), 'client': True,
                                            'socket_mode': '0660'})
                self.assertIn('not a client', e.exception.message)
                self.assertEqual(srv.call('device_list'), [])
                self.assertFalse(os.path.lexists(sock))
            finally:
                stopped_clean(self, srv)

    def test_a_saved_group_gone_fails_its_device_alone(self):
        """A saved device whose socket_group no longer resolves (deleted since, or
        not resolvable yet at boot: LDAP, sssd) used to refuse the whole file: the
        service exited 1 and every VM lost its NICs. Only that device fails now."""
        with tempfile.TemporaryDirectory() as d:
            sa, sb = os.path.join(d, 'a.sock'), os.path.join(d, 'b.sock')
            cfg = write_config(d, {'name': 'a', 'vm': 'va', 'socket': sa,
                                   'devargs': devargs(0), 'socket_group': 'no-such-group-x'},
                               {'name': 'b', 'vm': 'vb', 'socket': sb,
                                'devargs': devargs(1)})
            srv = service(d, config=cfg)
            try:
                # service() returned at the ready line, which counts the failure.
                self.assertRegex(srv.p.text(), r'ready: RPC socket .*, 1 devices, some '
                                 r'configured ones failed')
                self.assertIn("no group 'no-such-group-x'", srv.p.text())
                self.assertEqual([x['name'] for x in srv.call('device_list')], ['b'])
                self.assertTrue(stat.S_ISSOCK(os.stat(sb).st_mode))
                self.assertFalse(os.path.lexists(sa))
            finally:
                stopped_clean(self, srv)

    def test_ready_is_notified_once_the_configured_devices_exist(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'a.sock')
            cfg = write_config(d, {'name': 'a', 'vm': 'vma', 'socket': sock,
                                   'devargs': devargs()})
            notify = os.path.join(d, 'notify.sock')
            n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            n.bind(notify)
            srv = service(d, config=cfg, env={'NOTIFY_SOCKET': notify}, ready=False)
            try:
                n.settimeout(120)
                msg = n.recv(4096).decode()
                # READY=1 comes once the configured device exists and listens.
                self.assertIn('READY=1', msg)
                self.assertTrue(os.path.exists(sock))
                self.assertEqual(srv.device('a')['state'], 'waiting')
            finally:
                n.close()
                srv.stop()
                self.assertIn('STOPPING=1', 'STOPPING=1')


class Prepare(unittest.TestCase):
    def device_until(self, srv, name, part, states, timeout=30.0):
        """device_get once its part's ('preparation', 'auto_prepare') state is one of
        states, or the timeout passed (bounded): the whole answer."""
        deadline = time.monotonic() + timeout
        while True:
            g = srv.call('device_get', {'name': name})
            if g[part]['state'] in states or time.monotonic() > deadline:
                return g

    def preparation(self, srv, name, states, timeout=30.0):
        """device_get's preparation once its state is one of states (bounded)."""
        return self.device_until(srv, name, 'preparation', states, timeout)['preparation']

    def test_device_prepared_from_the_front_ends_pid_serves_its_start(self):
        """device_prepare NAME --pid PID: the worker finds the shared guest memory of
        that process (vu_traffic's 1 GiB memfd, made before it connects, as a
        destination QEMU's), the device registers it; the front end's start then takes
        it whole and frames flow. Prepared for one process and started by another: not
        used, and said why. A pid without such memory, one that is no process, pid 0:
        refused with the reason."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                sock = os.path.join(d, 'vm1.sock')
                srv.add('n1', 'vm1', sock, devargs(0))
                fe = Proc([TRAFFIC, sock, '--start-on-usr1'], name='vu_traffic')
                try:
                    fe.expect(r'vu_traffic: memory ready', timeout=30)
                    rc, out, err = srv.ctl('device_prepare', 'n1', '--pid', str(fe.p.pid))
                    self.assertEqual(rc, 0, err)
                    self.assertIn('preparing n1: 1024 MiB of pid %d' % fe.p.pid, out)
                    # The operator's call stands over the automatic preparation.
                    self.assertEqual(srv.call('device_get', {'name': 'n1'})['auto_prepare']
                                     ['state'], 'manual')
                    p = self.preparation(srv, 'n1', ('ready', 'failed', 'released'))
                    self.assertEqual((p['state'], p['pid'], p['bytes']),
                                     ('ready', fe.p.pid, 1 << 30), p)
                    # When it ran, on this host's CLOCK_MONOTONIC: before now.
                    self.assertLess(p['start_ms'], p['end_ms'], p)
                    self.assertLessEqual(p['end_ms'], time.clock_gettime(
                        time.CLOCK_MONOTONIC) * 1000, p)
                    os.kill(fe.p.pid, signal.SIGUSR1)
                    fe.expect(r'vu_traffic: running', timeout=60)
                    p = srv.call('device_get', {'name': 'n1'})['preparation']
                    self.assertEqual((p['state'], p['used_bytes'], p['fallback_bytes']),
                                     ('used', 1 << 30, 0), p)
                finally:
                    fe.kill()
                srv.wait_state('n1', ('waiting', 'stopped'))
                # Prepared for a process that is not the one that starts the device.
                other = Proc([TRAFFIC, sock + '.none', '--start-on-usr1'], name='other')
                try:
                    other.expect(r'vu_traffic: memory ready', timeout=30)
                    srv.call('device_prepare', {'name': 'n1', 'pid': other.p.pid})
                    self.assertEqual(self.preparation(srv, 'n1', ('ready',))['state'],
                                     'ready')
                    t = Traffic(sock)
                    t.kill()
                    p = self.preparation(srv, 'n1', ('released',))
                    self.assertEqual(p['state'], 'released', p)
                    self.assertIn('the preparation was for pid %d' % other.p.pid,
                                  p['reason'])
                finally:
                    other.kill()
                for pid, why in ((os.getpid(), 'maps no shared memory file'),
                                 (0x7ffffff0, 'no process %d' % 0x7ffffff0),
                                 (0, "'pid' must be a process id")):
                    with self.assertRaises(RpcError) as e:
                        srv.call('device_prepare', {'name': 'n1', 'pid': pid})
                    self.assertEqual(e.exception.code, -32602)
                    self.assertIn(why, e.exception.message)
                rc, _, err = srv.ctl('device_prepare', 'n1', '--pid', 'x')
                self.assertEqual(rc, 2, err)
            finally:
                stopped_clean(self, srv)

    def auto(self, srv, name, states, timeout=30.0):
        """device_get once its auto_prepare state is one of states (bounded)."""
        return self.device_until(srv, name, 'auto_prepare', states, timeout)

    def test_a_pid_past_a_pid_t_is_refused_not_cast_onto_another_process(self):
        """2^32 + N cast to a pid_t is N: this test's process, which maps shared memory.
        Refused instead, and so is one just past INT32_MAX."""
        import mmap
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            fd = os.memfd_create('guest-ram')
            os.ftruncate(fd, 4 << 20)
            ram = mmap.mmap(fd, 4 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                srv.add('p1', 'vmp', os.path.join(d, 'p1.sock'), devargs(0))
                for pid in ((1 << 32) + os.getpid(), 1 << 31):
                    try:
                        r = srv.call('device_prepare', {'name': 'p1', 'pid': pid},
                                     timeout=30)
                    except RpcError as e:
                        self.assertEqual(e.code, -32602, e.message)
                        self.assertIn("'pid' must be a process id (1 to 2147483647)",
                                      e.message)
                        continue
                    self.fail(f'device_prepare pid {pid} accepted: prepared {r}')
                self.assertEqual(srv.call('device_get', {'name': 'p1'})
                                 ['preparation']['state'], 'none')
            finally:
                ram.close()
                os.close(fd)
                srv.kill()

    def test_a_destination_that_leaves_while_watched_leaves_nothing(self):
        """A destination (--incoming) killed while its memory is being watched: the
        watch ends (prepared or not, as the kill fell), whatever was prepared is
        released, the worker stays up, and the next front end's start works and uses
        nothing of it."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                sock = os.path.join(d, 'vm1.sock')
                srv.add('n1', 'vm1', sock, devargs(0))
                fe = Proc([TRAFFIC, sock, '--incoming'], name='vu_traffic')
                try:
                    fe.expect(r'vu_traffic: connected', timeout=30)
                    self.auto(srv, 'n1', ('watching',))
                finally:
                    fe.kill()
                a = self.auto(srv, 'n1', ('idle', 'failed', 'prepared'))['auto_prepare']
                self.assertIn(a['state'], ('idle', 'failed', 'prepared'), a)
                if a['state'] == 'prepared':
                    p = self.preparation(srv, 'n1', ('released',))
                    self.assertEqual(p['state'], 'released', p)
                srv.wait_state('n1', 'waiting')
                t = Traffic(sock)
                t.kill()
                p = srv.call('device_get', {'name': 'n1'})['preparation']
                self.assertIn(p['state'], ('none', 'released'), p)
                self.assertEqual(p.get('used_bytes', 0), 0, p)
            finally:
                stopped_clean(self, srv)

    def test_a_destination_front_end_is_prepared_unasked(self):
        """A front end started with --incoming (as a migration's destination QEMU),
        connected before its guest memory exists, as QEMU creates its memory backends
        after its netdevs: the worker watches its maps, prepares the device once the
        memory holds still, and the start takes the preparation whole. A front end
        without --incoming is left alone; a device added with auto_prepare false
        never prepares."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                sock = os.path.join(d, 'vm1.sock')
                srv.add('n1', 'vm1', sock, devargs(0))
                self.assertTrue(srv.device('n1')['auto_prepare'])
                self.assertEqual(srv.call('device_get', {'name': 'n1'})['auto_prepare'],
                                 {'enabled': True, 'state': 'idle', 'pid': 0,
                                  'preparations': 0, 'bytes': 0})
                fe = Proc([TRAFFIC, sock, '--incoming'], name='vu_traffic')
                try:
                    fe.expect(r'vu_traffic: connected', timeout=30)
                    srv.p.expect(r'device n1: automatic preparation: pid %d is a '
                                 r"migration's destination \(-incoming\): watching"
                                 % fe.p.pid, timeout=30)
                    fe.expect(r'vu_traffic: memory ready', timeout=30)
                    g = self.auto(srv, 'n1', ('prepared', 'failed', 'gave up'))
                    self.assertEqual((g['auto_prepare']['state'], g['auto_prepare']['pid'],
                                      g['auto_prepare']['bytes']),
                                     ('prepared', fe.p.pid, 1 << 30), g['auto_prepare'])
                    srv.p.expect(r'device n1: automatic preparation: preparing 1024 MiB '
                                 r"of pid %d's guest memory" % fe.p.pid, timeout=30)
                    p = self.preparation(srv, 'n1', ('ready', 'failed', 'released'))
                    self.assertEqual((p['state'], p['pid'], p['bytes']),
                                     ('ready', fe.p.pid, 1 << 30), p)
                    os.kill(fe.p.pid, signal.SIGUSR1)
                    fe.expect(r'vu_traffic: running', timeout=60)
                    g = srv.call('device_get', {'name': 'n1'})
                    p = g['preparation']
                    self.assertEqual((p['state'], p['used_bytes'], p['fallback_bytes']),
                                     ('used', 1 << 30, 0), p)
                    self.assertEqual((g['auto_prepare']['state'],
                                      g['auto_prepare']['preparations']), ('prepared', 1))
                finally:
                    fe.kill()
                srv.wait_state('n1', ('waiting', 'stopped'))
                # A VM booting (no -incoming): nothing is watched or prepared.
                t = Traffic(sock)
                try:
                    # The worker looks at each new connection within its next turn.
                    a = self.auto(srv, 'n1', ('not a destination',))['auto_prepare']
                    self.assertEqual((a['state'], a['pid'], a['preparations']),
                                     ('not a destination', t.p.pid, 0), a)
                    self.assertIn('was not started with -incoming', a['reason'])
                finally:
                    t.kill()
                # auto_prepare false: a destination's start registers its memory itself.
                sock2 = os.path.join(d, 'vm2.sock')
                srv.add('n2', 'vm2', sock2, devargs(1), auto_prepare=False)
                self.assertFalse(srv.device('n2')['auto_prepare'])
                fe = Proc([TRAFFIC, sock2, '--incoming'], name='vu_traffic2')
                try:
                    fe.expect(r'vu_traffic: memory ready', timeout=30)
                    os.kill(fe.p.pid, signal.SIGUSR1)
                    fe.expect(r'vu_traffic: running', timeout=60)
                    g = srv.call('device_get', {'name': 'n2'})
                    self.assertEqual((g['auto_prepare']['enabled'],
                                      g['auto_prepare']['state']), (False, 'off'))
                    self.assertEqual(g['preparation']['state'], 'none', g['preparation'])
                finally:
                    fe.kill()
            finally:
                stopped_clean(self, srv)


class Config(unittest.TestCase):
    def test_saved_config_replays_at_start_and_applies_again_on_sighup(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, 'cfg.json')
            s = {n: os.path.join(d, n + '.sock') for n in 'abcd'}
            # No file yet: a first boot, which the operator allows.
            srv = service(d, config=cfg, extra=['--allow-missing-config'])
            self.assertIn(f'configuration {cfg} does not exist yet', srv.p.text())
            try:
                srv.add('a', 'vm1', s['a'], devargs(0))
                srv.add('b', 'vm1', s['b'], devargs(1))
                srv.add('c', 'vm2', s['c'], devargs(2))
                r = srv.call('config_save')
                self.assertEqual((r['file'], r['devices']), (cfg, 3))
                self.assertEqual(stat.S_IMODE(os.stat(cfg).st_mode), 0o600)
            finally:
                stopped_clean(self, srv)
            # Replayed at start: the same devices, in their VMs.
            srv = service(d, config=cfg)
            try:
                self.assertEqual({x['name']: x['vm'] for x in srv.call('device_list')},
                                 {'a': 'vm1', 'b': 'vm1', 'c': 'vm2'})
                # SIGHUP: b goes, c changes (its devargs), d comes; a stays untouched.
                a_worker = srv.vm('vm1')['worker_pid']
                with open(cfg) as f:
                    conf = json.load(f)
                conf['config'] = [e for e in conf['config'] if e['params']['name'] != 'b']
                for e in conf['config']:
                    if e['params']['name'] == 'c':
                        e['params']['devargs'] = devargs(2, 'queues=2')
                conf['config'].append({'method': 'device_add', 'params': {
                    'name': 'd', 'vm': 'vm3', 'socket': s['d'], 'devargs': devargs(3)}})
                with open(cfg, 'w') as f:
                    json.dump(conf, f)
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*2 devices to remove, 2 to add', timeout=30)
                srv.wait_state('d', 'waiting')
                srv.wait_state('c', 'waiting')
                self.assertIsNone(srv.device('b'))
                self.assertEqual(srv.call('device_get', {'name': 'c'})['queues']
                                 ['device_pairs'], 2)
                self.assertEqual(srv.vm('vm1')['worker_pid'], a_worker)
                # A broken file changes nothing.
                with open(cfg, 'w') as f:
                    f.write('{"config": [')
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*nothing changed', timeout=30)
                self.assertEqual(sorted(x['name'] for x in srv.call('device_list')),
                                 ['a', 'c', 'd'])
            finally:
                stopped_clean(self, srv)

    def test_a_reload_removing_a_device_a_client_removes_too_ends(self):
        """A client's device_remove and a reload's for the same device, both with the
        worker: the second answer found no device and never counted for the reload,
        whose additions never came, and every later SIGHUP was ignored."""
        with tempfile.TemporaryDirectory() as d:
            sa, sb = os.path.join(d, 'a.sock'), os.path.join(d, 'b.sock')
            cfg = write_config(d, {'name': 'a', 'vm': 'vm1', 'socket': sa,
                                   'devargs': devargs(0)})
            srv = service(d, config=cfg)
            c = None
            try:
                w = srv.vm('vm1')['worker_pid']
                os.kill(w, signal.SIGSTOP)
                c = connect(srv.rpc)
                c.sendall(json.dumps({'jsonrpc': '2.0', 'id': 5, 'method': 'device_remove',
                                      'params': {'name': 'a'}}).encode() + b'\n' +
                          json.dumps({'jsonrpc': '2.0', 'id': 6,
                                      'method': 'device_list'}).encode() + b'\n')
                self.assertEqual(read_reply(c, 30)['id'], 6)
                write_config(d, {'name': 'b', 'vm': 'vm2', 'socket': sb,
                                 'devargs': devargs(1)})
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*1 devices to remove, 1 to add', timeout=30)
                os.kill(w, signal.SIGCONT)
                r = read_reply(c, 30)
                self.assertEqual(r['id'], 5, r)
                self.assertIn('result', r)
                # The reload ended: its addition is made, and the next SIGHUP is heard.
                srv.wait_state('b', 'waiting')
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*0 devices to remove, 0 to add', timeout=30)
                self.assertNotIn('still being applied', srv.p.text())
                self.assertEqual([x['name'] for x in srv.call('device_list')], ['b'])
            finally:
                if c is not None:
                    c.close()
                stopped_clean(self, srv)

    def test_a_reload_adding_a_device_a_client_is_adding_ends_with_one_device(self):
        """A client's device_add in flight and a reload adding the same device: the reload
        made a second record of the name, the worker refused its add, and that answer
        freed the first record (found by name): the device stayed 'adding' for ever,
        its removal refused. Now the reload's add joins the client's (logged)."""
        with tempfile.TemporaryDirectory() as d:
            sa, sx = os.path.join(d, 'a.sock'), os.path.join(d, 'x.sock')
            a = {'name': 'a', 'vm': 'vm1', 'socket': sa, 'devargs': devargs(0)}
            x = {'name': 'x', 'vm': 'vm1', 'socket': sx, 'devargs': devargs(1)}
            cfg = write_config(d, a)
            srv = service(d, config=cfg)
            c = None
            try:
                w = srv.vm('vm1')['worker_pid']
                # The worker stopped: the client's add waits there, x is 'adding'.
                os.kill(w, signal.SIGSTOP)
                c = connect(srv.rpc)
                c.sendall(json.dumps({'jsonrpc': '2.0', 'id': 5, 'method': 'device_add',
                                      'params': x}).encode() + b'\n' +
                          json.dumps({'jsonrpc': '2.0', 'id': 6,
                                      'method': 'device_list'}).encode() + b'\n')
                r = read_reply(c, 30)
                self.assertEqual(r['id'], 6, r)
                self.assertEqual({e['name']: e['state'] for e in r['result']},
                                 {'a': 'waiting', 'x': 'adding'})
                write_config(d, a, x)
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*0 devices to remove, 1 to add', timeout=30)
                srv.p.expect(r'SIGHUP: device x is being added already', timeout=30)
                os.kill(w, signal.SIGCONT)
                r = read_reply(c, 30)
                self.assertEqual(r['id'], 5, r)
                self.assertEqual(r.get('result', {}).get('state'), 'waiting', r)
                srv.wait_state('x', 'waiting', timeout=30)
                self.assertEqual(sorted(e['name'] for e in srv.call('device_list')),
                                 ['a', 'x'])
                # Settled: the next SIGHUP finds nothing to do, and x can be removed.
                srv.p.p.send_signal(signal.SIGHUP)
                srv.p.expect(r'SIGHUP: .*0 devices to remove, 0 to add', timeout=30)
                self.assertEqual(srv.call('device_remove', {'name': 'x'})['was'], 'waiting')
                self.assertFalse(os.path.exists(sx))
            finally:
                if c is not None:
                    c.close()
                stopped_clean(self, srv)

    def test_a_configured_device_that_cannot_probe_is_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = write_config(d, {'name': 'bad', 'vm': 'v1', 'socket': os.path.join(d, 'b.sock'),
                                   'devargs': devargs(0, 'queues=0')},
                               {'name': 'good', 'vm': 'v2', 'socket': os.path.join(d, 'g.sock'),
                                'devargs': devargs(1)})
            srv = service(d, config=cfg)
            try:
                self.assertIn('device bad: not added: ', srv.p.text())
                self.assertIn('queues=0: out of range', srv.p.text())
                self.assertEqual([x['name'] for x in srv.call('device_list')], ['good'])
                self.assertRegex(srv.p.text(), r'ready: .*1 devices, some configured ones '
                                 r'failed')
            finally:
                stopped_clean(self, srv)

    def test_bad_config_file_refuses_to_start(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = write_config(d, {'name': 'a', 'vm': 'v', 'socket': 'relative.sock',
                                   'devargs': 'emu=fast'})
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--config',
                                cfg, '--worker', WORKER], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1)
            self.assertIn("config[0]: invalid params: 'socket'", r.stderr)

    def test_a_missing_config_file_refuses_to_start_unless_allowed(self):
        """A --config file that is not there was taken for an empty one: a typo in a
        unit started the service ready with no device, every VM without its NICs."""
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, 'typo.json')
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--config',
                                cfg, '--worker', WORKER], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(f'--config cannot read {cfg}: No such file or directory '
                          '(--allow-missing-config if config_save is to create it)', r.stderr)
            self.assertNotIn('ready', r.stderr)
            self.assertFalse(os.path.lexists(os.path.join(d, 'r.sock')))
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'),
                                '--allow-missing-config', '--worker', WORKER],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn('--allow-missing-config needs --config FILE', r.stderr)

    def test_empty_paths_are_usage_errors(self):
        """--rpc-socket "" started, 'ready: RPC socket ,' and at stop 'not removed'."""
        with tempfile.TemporaryDirectory() as d:
            for opt in ('--rpc-socket', '--config', '--metrics', '--worker'):
                args = [VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--worker',
                        WORKER, opt, '']
                r = subprocess.run(args, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, (opt, r.stderr))
                self.assertIn(f'mlx5-lm-vhostd: {opt}: the path is empty', r.stderr)
                self.assertNotIn('ready', r.stderr)

    def test_a_config_with_a_socket_directory_others_may_change_refuses_to_start(self):
        with tempfile.TemporaryDirectory() as d:
            loose = os.path.join(d, 'loose')
            os.mkdir(loose)
            os.chmod(loose, 0o777)
            cfg = write_config(d, {'name': 'a', 'vm': 'v', 'devargs': devargs(0),
                                   'socket': os.path.join(d, 'a.sock')},
                               {'name': 'b', 'vm': 'v', 'devargs': devargs(1),
                                'socket': os.path.join(loose, 'b.sock')})
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--config',
                                cfg, '--worker', WORKER], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(f"config[1]: invalid params: 'socket': directory {loose} of socket "
                          f'{loose}/b.sock is writable by group or others (mode 0777) and not '
                          'sticky', r.stderr)
            self.assertFalse(os.path.lexists(os.path.join(d, 'a.sock')))


class Logs(unittest.TestCase):
    def test_a_workers_driver_lines_name_its_vm_and_device(self):
        """Every worker numbers its devices from vdpa_mlx5_lm0, and the driver's lines
        reached the service's log unprefixed: 'mlx5_lm vdpa_mlx5_lm0: ...' of which VM?"""
        with tempfile.TemporaryDirectory() as d:
            # The driver's info lines too: a running device's, not only a failed probe's.
            srv = service(d, extra=['--eal', '--log-level=pmd.vdpa.mlx5_lm:info'])
            s1, s2 = os.path.join(d, 'a.sock'), os.path.join(d, 'b.sock')
            t = None
            try:
                srv.add('a', 'vmla', s1, devargs(0))
                t = Traffic(s1)
                srv.wait_state('a', 'running')
                with self.assertRaises(RpcError):
                    srv.add('b', 'vmlb', s2, devargs(1, 'queues=1,bogus=1'))
                rc, _ = t.done()
                t = None
                self.assertEqual(rc, 0)
            finally:
                if t is not None:
                    t.kill()
                stopped_clean(self, srv)
            text = srv.p.text()
            # Both workers' devices are vdpa_mlx5_lm0: the prefix tells them apart.
            self.assertIn('vhostd-worker: vm vmlb device b: mlx5_lm vdpa_mlx5_lm0: bad devargs: '
                          'bogus', text)
            self.assertRegex(text, r'vhostd-worker: vm vmla device a: mlx5_lm vdpa_mlx5_lm0: ')
            # Every line is the supervisor's or names the worker's VM.
            bare = [l for l in text.splitlines()
                    if l.strip() and not re.match(r'(vhostd: |vhostd-worker: vm )', l)]
            self.assertEqual(bare, [], text[-3000:])


def service_once(d, then):
    """The service, whose VMs' workers are real only once (tests/vhostd/once_worker.py):
    their restarts 'fail' (down) or 'hang' (never ready)."""
    once = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'once_worker.py')
    env = {'ONCE_MARK': os.path.join(d, 'started'), 'ONCE_WORKER': WORKER, 'ONCE_THEN': then}
    return service(d, extra=('--worker', once), env=env)


class Isolation(unittest.TestCase):
    """Two VMs, two workers: one VM's worker killed, the other's frames never stop."""

    def test_killed_worker_restarts_its_vm_alone(self):
        with tempfile.TemporaryDirectory() as d:
            metrics = os.path.join(d, 'metrics.sock')
            srv = service(d, metrics=metrics)
            s1, s2 = os.path.join(d, 'vm1.sock'), os.path.join(d, 'vm2.sock')
            t1 = t2 = None
            try:
                srv.add('vm1-net0', 'vm1', s1, devargs(0))
                srv.add('vm2-net0', 'vm2', s2, devargs(1))
                w1, w2 = srv.vm('vm1')['worker_pid'], srv.vm('vm2')['worker_pid']
                self.assertNotEqual(w1, w2)
                t1, t2 = Traffic(s1), Traffic(s2)
                srv.wait_state('vm2-net0', 'running')
                os.kill(w2, signal.SIGKILL)
                srv.p.expect(r'vm vm2: worker %d killed by signal 9 .*devices: vm2-net0' % w2,
                             timeout=30)
                t2.expect(r'back end gone', timeout=30)
                m = t2.expect(r'traffic again after ([\d.]+) ms', timeout=60)
                print(f'BENCH worker_crash_to_traffic_ms={float(m.group(1)):.1f}', flush=True)
                srv.wait_state('vm2-net0', 'running')
                v2 = srv.vm('vm2')
                self.assertEqual(v2['restarts'], 1)
                self.assertNotEqual(v2['worker_pid'], w2)
                self.assertEqual(srv.vm('vm1')['worker_pid'], w1)
                self.assertEqual(srv.vm('vm1')['restarts'], 0)
                # The metrics say so too (the workers push every second).
                deadline = time.monotonic() + 30
                while True:
                    page = http_get(metrics, '/metrics')
                    if re.search(r'queue_descriptors_total\{vm="vm2",device="vm2-net0",'
                                 r'queue="0",type="rx",kind="completed"\} [1-9]', page):
                        break
                    self.assertLess(time.monotonic(), deadline, page)
                    srv.p._read(0.2)
                self.assertIn('mlx5_lm_vhostd_worker_restarts_total{vm="vm2"} 1', page)
                self.assertIn('mlx5_lm_vhostd_worker_restarts_total{vm="vm1"} 0', page)
                self.assertRegex(page, r'device_last_start_milliseconds\{vm="vm1",'
                                 r'device="vm1-net0",part="memory"\} [\d.]+')
                rc, r1 = t1.done()
                self.assertEqual(rc, 0)
                print(f'BENCH other_vm_max_gap_ms={r1["max_gap_ms"]:.1f} '
                      f'other_vm_lost={r1["lost"]}', flush=True)
                # The other VM: never disconnected, nothing lost, no pause a crash
                # would make (a dead back end is seconds, never tens of ms).
                self.assertEqual(r1['reconnects'], 0)
                self.assertEqual(r1['lost'], 0)
                self.assertGreater(r1['rx'], 0)
                self.assertLess(r1['max_gap_ms'], 1000)
                rc, r2 = t2.done()
                self.assertEqual(r2['reconnects'], 1)
                t1 = t2 = None
            finally:
                for t in (t1, t2):
                    if t is not None:
                        t.kill()
                stopped_clean(self, srv)
            for p in (s1, s2, metrics, srv.rpc):
                self.assertFalse(os.path.exists(p), p)
            for w in children(srv.p.p.pid):
                self.fail(f'process {w} left behind')

    def test_a_killed_workers_eal_runtime_directory_is_removed(self):
        """EAL's runtime directory of a worker killed -9 stayed, one more per crash,
        after the restart and after the service stopped."""
        run = (('/var/run' if os.getuid() == 0 else
                os.environ.get('XDG_RUNTIME_DIR', '/tmp')) + '/dpdk')
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                sock = os.path.join(d, 'a.sock')
                srv.add('a', 'vmrt', sock, devargs(0))
                w = srv.vm('vmrt')['worker_pid']
                gone = os.path.join(run, f'vhostd-vmrt-{w}')
                self.assertTrue(os.path.isdir(gone), gone)
                os.kill(w, signal.SIGKILL)
                srv.p.expect(r'vm vmrt: worker %d killed by signal 9' % w, timeout=30)
                srv.wait_state('a', 'waiting')
                w2 = srv.vm('vmrt')['worker_pid']
                self.assertNotEqual(w2, w)
                self.assertFalse(os.path.lexists(gone), gone)
                self.assertIn(f"worker {w}'s EAL runtime directory {gone} removed",
                              srv.p.text())
                # The new worker's own is left to it: it removes it at its teardown.
                self.assertTrue(os.path.isdir(os.path.join(run, f'vhostd-vmrt-{w2}')))
            finally:
                stopped_clean(self, srv)
            self.assertFalse(os.path.lexists(os.path.join(run, f'vhostd-vmrt-{w2}')))

    def test_a_worker_dying_while_its_last_device_is_removed_leaves_no_vm(self):
        """The removal's answer, failed by the worker's death, took the VM's last device,
        and the reap went on with the VM freed under it (a use after free)."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            s1 = os.path.join(d, 'vm1.sock')
            try:
                srv.add('vm1-net0', 'vm1', s1, devargs(0))
                w = srv.vm('vm1')['worker_pid']
                os.kill(w, signal.SIGSTOP)
                c = connect(srv.rpc)
                try:
                    c.sendall(json.dumps({'jsonrpc': '2.0', 'id': 7, 'method': 'device_remove',
                                          'params': {'name': 'vm1-net0'}}).encode() + b'\n' +
                              json.dumps({'jsonrpc': '2.0', 'id': 8,
                                          'method': 'device_list'}).encode() + b'\n')
                    # Answered in order by the supervisor: the removal is with the worker.
                    r = read_reply(c, 30)
                    self.assertEqual(r['id'], 8, r)
                    os.kill(w, signal.SIGKILL)
                    r = read_reply(c, 30)
                finally:
                    c.close()
                self.assertEqual(r['id'], 7, r)
                self.assertEqual(r['result']['was'], 'gone', r)
                srv.p.expect(r'vm vm1: worker %d killed by signal 9 .*no device left: '
                             r'not restarted' % w, timeout=30)
                self.assertEqual(srv.call('device_list'), [])
                self.assertNotIn('vm1', [v['vm'] for v in srv.call('vm_list')])
            finally:
                stopped_clean(self, srv)

    def test_removing_a_device_whose_worker_is_down_removes_its_socket(self):
        """device_remove while the device's worker was down (killed, not yet back) left
        the socket file the dead worker had created on disk. The service removes it now,
        and only that file: another one at the path is not its to remove. The worker's
        first restart is immediate: its restarts fail (once_worker.py) so that it is down,
        for 3.2 s, when the removals come."""
        with tempfile.TemporaryDirectory() as d:
            srv = service_once(d, 'fail')
            s1, s2 = os.path.join(d, 'n1.sock'), os.path.join(d, 'n2.sock')
            try:
                two_devices_worker_killed(srv, s1, s2)
                srv.p.expect(r'vm vm1: worker \d+ exited with status 1 .*restart \d+ '
                             r'in 3200 ms', timeout=60)
                self.assertTrue(stat.S_ISSOCK(os.lstat(s1).st_mode))
                # A file put in the place of a dead worker's socket is not the service's.
                os.unlink(s2)
                with open(s2, 'w') as f:
                    f.write('keep me')
                self.assertEqual(srv.call('device_remove', {'name': 'n1'})['was'], 'gone')
                self.assertEqual(srv.call('device_remove', {'name': 'n2'})['was'], 'gone')
                # Removed without a worker to ask: the path this test is for.
                srv.p.expect(r'device n1: removed \(was gone: its worker is down\)',
                             timeout=10)
                srv.p.expect(f'device n1: its worker gone, its socket {re.escape(s1)} '
                             'removed', timeout=10)
                srv.p.expect(r'device n2: removed \(was gone: its worker is down\)',
                             timeout=10)
                srv.p.expect(f'device n2: {re.escape(s2)} is no longer the socket its '
                             'worker created', timeout=10)
                self.assertFalse(os.path.lexists(s1), 'the dead worker\'s socket left')
                with open(s2) as f:
                    self.assertEqual(f.read(), 'keep me')
                self.assertEqual(srv.call('device_list'), [])
                self.assertNotIn('vm1', [v['vm'] for v in srv.call('vm_list')])
                # The device comes back on its socket, its VM's worker a real one again.
                os.unlink(os.path.join(d, 'started'))
                self.assertEqual(srv.add('n1', 'vm1', s1, devargs(0))['state'], 'waiting')
                self.assertTrue(stat.S_ISSOCK(os.lstat(s1).st_mode))
                self.assertEqual(srv.call('device_get', {'name': 'n1'})['state'], 'waiting')
            finally:
                stopped_clean(self, srv)

    def stop_with_the_worker_down(self, then):
        """vm1's worker killed, its restarts kept from coming back (once_worker.py,
        ONCE_THEN then), the service stopped (SIGTERM): the socket the dead worker made
        is removed; a file an operator put at the other device's path meanwhile is not
        the service's to remove."""
        with tempfile.TemporaryDirectory() as d:
            srv = service_once(d, then)
            s1, s2 = os.path.join(d, 'n1.sock'), os.path.join(d, 'n2.sock')
            try:
                two_devices_worker_killed(srv, s1, s2)
                if then == 'fail':
                    # Down, and for a while: each restart fails, the next one 3.2 s away.
                    srv.p.expect(r'vm vm1: worker \d+ exited with status 1 .*restart \d+ '
                                 r'in 3200 ms', timeout=60)
                else:
                    # Restarting, never ready: it never re-creates the devices.
                    srv.p.expect(r'once_worker \d+: a restart, hang', timeout=60)
                self.assertTrue(stat.S_ISSOCK(os.lstat(s1).st_mode))
                os.unlink(s2)
                with open(s2, 'w') as f:
                    f.write('keep me')
                rc = srv.stop()
            except BaseException:
                srv.kill()
                raise
            self.assertEqual(rc, 0, srv.p.text()[-3000:])
            self.assertFalse(os.path.lexists(s1), 'the dead worker\'s socket left at stop')
            self.assertIn(f'device n1: its worker gone, its socket {s1} removed', srv.p.text())
            with open(s2) as f:
                self.assertEqual(f.read(), 'keep me')
            self.assertIn(f'device n2: {s2} is no longer the socket its worker created',
                          srv.p.text())

    def test_stopping_with_a_worker_down_removes_its_sockets(self):
        """SIGTERM while a VM's worker was down (killed, its restart not due yet) left
        the dead worker's sockets on disk: no worker was left to remove them."""
        self.stop_with_the_worker_down('fail')

    def test_stopping_with_a_worker_restarting_removes_its_sockets(self):
        """The same while its restarted worker was starting: stopped before it re-created
        its devices, it had none of their sockets to remove."""
        self.stop_with_the_worker_down('hang')

    def test_a_dead_workers_socket_in_a_directory_others_may_change_is_left(self):
        """The service checks that the file at a dead worker's socket path is its socket,
        then removes it: where others may change names in the directory they could swap
        another file in between, so there (made so after the add) nothing is removed."""
        with tempfile.TemporaryDirectory() as d:
            sub = os.path.join(d, 'socks')
            os.mkdir(sub, 0o755)
            s1 = os.path.join(sub, 'n1.sock')
            srv = service_once(d, 'fail')
            try:
                srv.add('n1', 'vm1', s1, devargs(0))
                w = srv.vm('vm1')['worker_pid']
                os.kill(w, signal.SIGKILL)
                srv.p.expect(r'vm vm1: worker \d+ exited with status 1', timeout=60)
                os.chmod(sub, 0o777)
                self.assertEqual(srv.call('device_remove', {'name': 'n1'})['was'], 'gone')
                self.assertTrue(stat.S_ISSOCK(os.lstat(s1).st_mode),
                                'removed from a directory others may change')
                srv.p.expect(r'device n1: its socket %s left: directory %s of socket %s is '
                             r'writable by group or others \(mode 0777\) and not sticky'
                             % (re.escape(s1), re.escape(sub), re.escape(s1)), timeout=10)
            finally:
                stopped_clean(self, srv)

    def test_a_worker_that_cannot_start_fails_the_add_instead_of_hanging_it(self):
        """The workers' EAL refuses an option: the device_add that started the worker is
        answered with why (EAL's line, not only 'exited with status 1'), instead of
        waiting through one restart after another, and the service is left as it was;
        EAL's usage text (a hundred lines a start) is left out of the log."""
        fake = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'eal_refused_worker.py')
        with tempfile.TemporaryDirectory() as d:
            srv = service(d, extra=('--worker', fake), env={'EAL_REFUSED_WORKER': WORKER})
            try:
                with self.assertRaises(RpcError) as e:
                    srv.call('device_add', {'name': 'n0', 'vm': 'v0', 'devargs': devargs(0),
                                            'socket': os.path.join(d, 'n0.sock')},
                             timeout=60)
                self.assertRegex(e.exception.message, r"vm v0: its worker \d+ exited with "
                                 r"status 1 before it was ready: unrecognized option "
                                 r"'--no-such-eal-option'")
                self.assertEqual(srv.call('device_list'), [])
                self.assertEqual(srv.call('vm_list'), [])
            finally:
                stopped_clean(self, srv)
            text = srv.p.text()
            self.assertNotIn('EAL common options', text)
            # What EAL said, once a line, naming the VM.
            self.assertEqual(text.count("vhostd-worker: vm v0: mlx5-lm-vhostd-worker: "
                                        "unrecognized option '--no-such-eal-option'"), 1, text)

    def test_an_eal_check_that_does_not_end_lets_the_service_start(self):
        """The start's check of --eal cannot tell when a worker's EAL takes longer than
        its bound (a loaded host, a large -m): the service starts, saying so, rather
        than refusing an --eal that may be right (it exited 2 before)."""
        with tempfile.TemporaryDirectory() as d:
            slow = os.path.join(d, 'slow_worker.sh')
            with open(slow, 'w') as f:
                f.write('#!/bin/sh\n'
                        'case " $* " in *" --check-eal "*) exec sleep 60 ;; esac\n'
                        f'exec {WORKER} "$@"\n')
            os.chmod(slow, 0o755)
            srv = service(d, extra=('--worker', slow, '--eal', '--log-level=lib.eal:4'),
                          env={'MLX5_LM_VHOSTD_EAL_CHECK_MS': '500'})
            try:
                self.assertIn("the check of a worker's EAL did not end within 500 ms: "
                              "started without it", srv.p.text())
                srv.add('a', 'va', os.path.join(d, 'a.sock'), devargs(0))
                self.assertEqual([x['name'] for x in srv.call('device_list')], ['a'])
            finally:
                stopped_clean(self, srv)

    def test_an_eal_option_the_workers_refuse_stops_the_start(self):
        """A bad --eal was accepted at start, and every device_add failed later."""
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--worker',
                                WORKER, '--eal', '--no-such-eal-option'],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr, 'mlx5-lm-vhostd: --eal "--no-such-eal-option": a '
                             "worker's EAL refuses it: unrecognized option "
                             "'--no-such-eal-option'\n")
            self.assertEqual(r.stdout, '')
            self.assertFalse(os.path.lexists(os.path.join(d, 'r.sock')))
            # Refused after EAL made its runtime directory: the check's is removed too.
            run = (('/var/run' if os.getuid() == 0 else
                    os.environ.get('XDG_RUNTIME_DIR', '/tmp')) + '/dpdk')
            r = subprocess.run([VHOSTD, '--rpc-socket', os.path.join(d, 'r.sock'), '--worker',
                                WORKER, '--eal', '--vdev=net_nosuch0'],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn('a worker\'s EAL refuses it: EAL: failed to parse device '
                          '"net_nosuch0"', r.stderr)
            m = re.search(r"worker (\d+)'s EAL runtime directory \S+ removed", r.stderr)
            self.assertIsNotNone(m, r.stderr)
            self.assertFalse(os.path.lexists(os.path.join(run, f'vhostd-eal-check-{m.group(1)}')))

    def test_device_list_is_not_delayed_by_another_vms_probe(self):
        if RDMA:
            self.skipTest('the cx6dx cost model is what makes the probe slow')
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            try:
                srv.add('fast', 'vm1', os.path.join(d, 'f.sock'))
                slow = connect(srv.rpc)
                # 16 queue pairs on the CX6 Dx model: hundreds of ms of firmware time.
                slow.sendall(json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'device_add',
                                         'params': {'name': 'slow', 'vm': 'vm2',
                                                    'socket': os.path.join(d, 's.sock'),
                                                    'devargs': 'emu=cx6dx,queues=16'}})
                             .encode())
                srv.p.expect(r'vm vm2: worker \d+ started', timeout=30)
                t0 = time.monotonic()
                names = [x['name'] for x in srv.call('device_list')]
                listed = time.monotonic() - t0
                self.assertIn('slow', names)
                self.assertEqual(srv.device('slow')['state'], 'adding')
                self.assertEqual(srv.call('device_get', {'name': 'fast'})['state'], 'waiting')
                r = read_reply(slow, 120)
                self.assertIn('result', r, r)
                print(f'BENCH device_list_during_probe_ms={listed * 1000:.1f}', flush=True)
                slow.close()
            finally:
                stopped_clean(self, srv)


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.d = cls.tmp.name
        cls.srv = service(cls.d)
        cls.sock = os.path.join(cls.d, 'ok.sock')
        cls.srv.add('ok', 'vmok', cls.sock, devargs(0))
        cls.traffic = Traffic(cls.sock)

    @classmethod
    def tearDownClass(cls):
        try:
            rc, r = cls.traffic.done()
            # Through every bad input: the good VM's frames never stopped.
            assert r['reconnects'] == 0 and r['lost'] == 0, r
        finally:
            cls.traffic.kill()
            rc = cls.srv.stop()
            cls.tmp.cleanup()
            assert rc == 0, cls.srv.p.text()[-3000:]

    def raw(self, data, timeout=30):
        c = connect(self.srv.rpc)
        try:
            c.sendall(data)
            return read_reply(c, timeout), c
        except BaseException:
            c.close()
            raise

    def error(self, method, params=None):
        with self.assertRaises(RpcError) as e:
            self.srv.call(method, params)
        return e.exception

    def unchanged(self):
        self.assertEqual([x['name'] for x in self.srv.call('device_list')], ['ok'])

    def test_malformed_json_is_a_parse_error_and_the_connection_closes(self):
        r, c = self.raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        c.close()
        r, c = self.raw(b'{"jsonrpc": "2.0", "id": 1, "method": }')
        self.assertEqual(r['error']['code'], -32700)
        self.assertTrue(closed_by_peer(c, 10))
        self.unchanged()

    def test_invalid_requests_get_their_json_rpc_error_codes(self):
        for body, code, text in [
                (b'[{"jsonrpc":"2.0","id":1,"method":"device_list"}]', -32600, 'batch'),
                (b'"hello"', -32600, 'JSON object'),
                (b'{"jsonrpc":"1.0","id":1,"method":"device_list"}', -32600, "'jsonrpc'"),
                (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600, "'method'"),
                (b'{"jsonrpc":"2.0","id":{},"method":"device_list"}', -32600, "'id'"),
                (b'{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}', -32700, 'duplicate'),
                (b'{"jsonrpc":"2.0","id":1,"method":"device_list","extra":1}', -32600,
                 "'extra'"),
                (b'{"jsonrpc":"2.0","id":1,"method":"device_get","params":["a"]}', -32602,
                 'object')]:
            r, c = self.raw(body)
            c.close()
            self.assertEqual(r['error']['code'], code, body)
            self.assertIn(text, r['error']['message'], body)
        e = self.error('no_such_method')
        self.assertEqual(e.code, -32601)
        self.assertIn('no_such_method', e.message)
        self.unchanged()

    def test_notification_gets_no_reply_and_requests_follow_on_one_connection(self):
        c = connect(self.srv.rpc)
        try:
            c.sendall(b'{"jsonrpc":"2.0","method":"device_list"}\n'
                      b'{"jsonrpc":"2.0","id":"x","method":"service_get_version"}')
            r = read_reply(c)
            self.assertEqual(r['id'], 'x')
        finally:
            c.close()

    def test_wrong_params_name_the_field(self):
        ok = {'name': 'n', 'vm': 'v', 'socket': os.path.join(self.d, 'n.sock'),
              'devargs': devargs(1)}
        for change, text in [({'name': 7}, "'name' must be a string"),
                             ({'client': 'yes'}, "'client' must be a boolean"),
                             ({'name': 'a b'}, "'name' must be"),
                             ({'vm': ''}, "'vm' must be"),
                             ({'socket': 'rel.sock'}, "'socket' must be an absolute path"),
                             ({'socket': '/' + 'x' * 200}, "'socket'"),
                             ({'devargs': 'queues=1'}, "exactly one of emu="),
                             ({'devargs': 'emu=fast,ibdev=mlx5_0'}, 'exactly one of'),
                             ({'devargs': 'emu=fast queues=1'}, "'devargs' has a space"),
                             ({'colour': 'red'}, "unknown parameter 'colour'")]:
            p = dict(ok, **change)
            e = self.error('device_add', p)
            self.assertEqual(e.code, -32602, change)
            self.assertIn(text, e.message, change)
        p = dict(ok)
        del p['devargs']
        self.assertIn("'devargs' is required", self.error('device_add', p).message)
        self.assertIn("'name' is required", self.error('device_get', {}).message)
        self.unchanged()

    def test_duplicate_names_or_sockets_and_bad_devargs_are_refused(self):
        e = self.error('device_add', {'name': 'ok', 'vm': 'v2', 'socket':
                                      os.path.join(self.d, 'x.sock'), 'devargs': devargs(1)})
        self.assertEqual(e.code, -32002)
        self.assertIn("device 'ok' exists", e.message)
        e = self.error('device_add', {'name': 'x', 'vm': 'v2', 'socket': self.sock,
                                      'devargs': devargs(1)})
        self.assertEqual(e.code, -32002)
        self.assertIn("used by device 'ok'", e.message)
        e = self.error('device_add', {'name': 'x', 'vm': 'v2', 'socket':
                                      os.path.join(self.d, 'x.sock'),
                                      'devargs': devargs(1, 'queues=0')})
        self.assertEqual(e.code, -32003)
        self.assertIn('queues=0: out of range', e.message)
        e = self.error('device_add', {'name': 'x', 'vm': 'vmok', 'socket':
                                      os.path.join(self.d, 'x.sock'),
                                      'devargs': devargs(1, 'colour=red')})
        self.assertIn('colour', e.message)
        self.unchanged()
        # The failed VM's worker goes; the good VM's worker is the same.
        self.srv.p.expect(r'vm v2: worker \d+ exited with status 0', timeout=30)
        self.assertEqual([v['vm'] for v in self.srv.call('vm_list')], ['vmok'])

    def test_a_socket_directory_others_may_change_is_refused(self):
        """A socket in a directory where group or others (not sticky), or its owner, not
        root nor the service's user, may change names: the service could not remove a dead
        worker's socket there without maybe removing another file swapped in. Refused."""
        loose, sticky, theirs = (os.path.join(self.d, x) for x in ('loose', 'sticky', 'theirs'))
        os.mkdir(loose)
        os.chmod(loose, 0o777)
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        os.mkdir(theirs, 0o755)
        os.chown(theirs, 65534, 65534)
        for path, text in [(loose, 'is writable by group or others (mode 0777) and not sticky'),
                           (theirs, 'is owned by uid 65534, neither root nor the service')]:
            rc, out, err = self.srv.ctl('device_add', '--name', 'x', '--vm', 'vx',
                                        '--vhost-socket', os.path.join(path, 'x.sock'),
                                        '--devargs', devargs(1))
            self.assertNotEqual(rc, 0, out)
            self.assertIn("error -32602: device_add: invalid params: 'socket': directory "
                          f'{path} of socket {path}/x.sock {text}', err)
            self.assertFalse(os.path.lexists(os.path.join(path, 'x.sock')))
        self.unchanged()
        # Sticky (as /tmp): others may add names there, but not remove or rename ours.
        rc, out, err = self.srv.ctl('device_add', '--name', 'x', '--vm', 'vx',
                                    '--vhost-socket', os.path.join(sticky, 'x.sock'),
                                    '--devargs', devargs(1))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.srv.call('device_remove', {'name': 'x'})['name'], 'x')
        self.srv.p.expect(r'vm vx: worker \d+ exited with status 0', timeout=30)
        self.unchanged()

    def test_socket_paths_that_are_not_ours_are_refused(self):
        f = os.path.join(self.d, 'file')
        with open(f, 'w') as fh:
            fh.write('keep me')
        link = os.path.join(self.d, 'link.sock')
        os.symlink(os.path.join(self.d, 'target.sock'), link)
        for path, text in [(f, 'exists and is not a socket'),
                           (link, 'exists and is not a socket'),
                           (self.sock, 'used by device'),
                           (os.path.join(self.d, 'nodir', 'x.sock'), 'mkdir -p')]:
            e = self.error('device_add', {'name': 'x', 'vm': 'vx', 'socket': path,
                                          'devargs': devargs(1)})
            self.assertIn(text, e.message, path)
        with open(f) as fh:
            self.assertEqual(fh.read(), 'keep me')
        self.assertFalse(os.path.exists(os.path.join(self.d, 'target.sock')))
        self.unchanged()

    def test_request_over_1_mib_is_refused_and_the_connection_closed(self):
        big = b'{"jsonrpc":"2.0","id":1,"method":"device_list","params":{"x":"' + \
              b'a' * (1 << 20) + b'"}}'
        c = connect(self.srv.rpc)
        try:
            try:
                c.sendall(big)
            except (BrokenPipeError, ConnectionResetError):
                pass
            r = read_reply(c)
            self.assertEqual(r['error']['code'], -32007)
            self.assertTrue(closed_by_peer(c, 10))
        finally:
            c.close()
        self.unchanged()

    def test_half_request_that_stalls_is_dropped_and_blocks_nobody(self):
        c = connect(self.srv.rpc)
        try:
            c.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
            t0 = time.monotonic()
            self.unchanged()  # answered meanwhile
            self.assertTrue(closed_by_peer(c, 30))
            self.assertLess(time.monotonic() - t0, 15)
        finally:
            c.close()
        self.srv.p.expect(r'sent half a request and stalled', timeout=10)

    def test_a_client_that_never_reads_is_dropped_and_nobody_else_notices(self):
        """Pipelined requests whose replies are never read: past 16 MiB of replies the
        client is dropped. Its requests used to pile up unread (a reply's turn dispatched
        nothing) until they were refused as one request too large, and the client then
        hung on a connection never closed; and the answer that crossed the limit freed the
        connection under the code that sent it (a use after free, under ASan)."""
        c = connect(self.srv.rpc)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        req = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'device_get_stats',
                          'params': {'name': 'ok'}}).encode() + b'\n'
        sent = 0
        try:
            c.settimeout(60)
            while True:
                try:
                    c.sendall(req * 64)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += 64
                self.assertLess(sent, 1000000, 'never dropped')
        finally:
            c.close()
        self.srv.p.expect(r'does not read its replies: dropped', timeout=30)
        self.assertNotIn('request too large', self.srv.p.text())
        self.unchanged()

    def test_1000_connections_at_once_are_answered_or_refused(self):
        conns = []
        try:
            for _ in range(1000):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.setblocking(False)
                try:
                    c.connect(self.srv.rpc)
                except (BlockingIOError, ConnectionRefusedError, OSError):
                    pass
                conns.append(c)
            answered = refused = 0
            for c in conns:
                c.setblocking(True)
                c.settimeout(30)
                try:
                    c.sendall(b'{"jsonrpc":"2.0","id":1,"method":"service_get_version"}')
                    r = read_reply(c, 30)
                except (BrokenPipeError, ConnectionResetError, ConnectionRefusedError,
                        OSError):
                    r = None
                if r is None:
                    refused += 1
                elif 'result' in r:
                    answered += 1
                else:
                    self.assertEqual(r['error']['code'], -32005, r)
                    refused += 1
            self.assertEqual(answered + refused, 1000)
            self.assertGreater(answered, 0)
        finally:
            for c in conns:
                c.close()
        self.unchanged()

    def test_other_users_are_refused(self):
        if os.geteuid() != 0:
            self.skipTest('needs root to act as another user')
        # The directory lets others reach the socket: its own mode and SO_PEERCRED decide.
        os.chmod(self.d, 0o711)
        self.assertTrue(as_nobody(lambda: refused_by_mode(self.srv.rpc)))
        # Even with the socket opened to everyone, SO_PEERCRED refuses the peer.
        os.chmod(self.srv.rpc, 0o666)
        try:
            self.assertTrue(as_nobody(lambda: refused_by_peercred(self.srv.rpc)))
        finally:
            os.chmod(self.srv.rpc, 0o600)
        self.srv.p.expect(r'uid 65534 refused', timeout=10)
        self.unchanged()


def version_or_refused(srv):
    """service_get_version's reply on a new connection, or the refusal the service sends
    (and closes) before reading the request."""
    c = connect(srv.rpc)
    try:
        try:
            c.sendall(b'{"jsonrpc":"2.0","id":1,"method":"service_get_version"}')
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_reply(c, 30)
    finally:
        c.close()


def read_reply_after(c, request):
    """The reply to request sent on connection c, or the refusal the service sent (and
    closed c) before reading it; None when c closed without either."""
    try:
        c.sendall(request)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return read_reply(c, 30)


def each_and_counted(test, srv, n, each, counted, timeout=15.0):
    """Until n events of one kind are told in srv's log, each in a line of its own
    (regex each) or counted in a line (regex counted, the count its group 1); the
    number of lines of each kind, and the counts."""
    deadline = time.monotonic() + timeout
    while True:
        text = srv.p.text()
        lines = len(re.findall(each, text))
        counts = [int(x) for x in re.findall(counted, text)]
        if lines + sum(counts) >= n:
            return lines, counts
        test.assertLess(time.monotonic(), deadline, f'{lines} lines and {counts} counted of {n}')
        srv.p._read(0.2)  # the service's next line, or 0.2 s


def stopped_with_late_exit_worker(env):
    """A service whose worker is late_exit_worker.py (env its settings), a device added
    on vm1, then the service stopped: the worker's pid, the service's exit status, its
    log."""
    late = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'late_exit_worker.py')
    with tempfile.TemporaryDirectory() as d:
        srv = service(d, extra=('--worker', late), env=env)
        try:
            srv.add('n1', 'vm1', os.path.join(d, 'n1.sock'))
            w = srv.vm('vm1')['worker_pid']
            rc = srv.stop()
        except BaseException:
            srv.kill()
            raise
        return w, rc, srv.p.text()


def two_devices_worker_killed(srv, s1, s2):
    """Devices n1 and n2 (sockets s1, s2) added on vm1, whose worker is then killed."""
    srv.add('n1', 'vm1', s1, devargs(0))
    srv.add('n2', 'vm1', s2, devargs(1))
    w = srv.vm('vm1')['worker_pid']
    os.kill(w, signal.SIGKILL)
    srv.p.expect(r'vm vm1: worker %d killed by signal 9' % w, timeout=30)


def told_in_few_lines(test, srv, n, each, counted):
    """n events made within a second or so: every one told (each_and_counted), in one
    line and one count, two of each should they straddle an interval's end."""
    lines, counts = each_and_counted(test, srv, n, each, counted)
    test.assertEqual(lines + sum(counts), n)
    test.assertLessEqual(lines + len(counts), 4, srv.p.text()[-3000:])
    test.assertGreaterEqual(lines, 1)


class Connections(unittest.TestCase):
    def test_idle_connections_are_closed_and_no_longer_lock_others_out(self):
        """128 connections that never send a byte held every place for ever: each new
        client was refused. Past --rpc-idle-timeout with nothing sent, read or in flight
        they are closed and the next client is served; one whose call waits for its
        worker is not idle."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d, extra=('--rpc-idle-timeout', '1000'))
            held = []
            busy = None
            try:
                srv.add('a', 'vm1', os.path.join(d, 'a.sock'), devargs(0))
                w = srv.vm('vm1')['worker_pid']
                os.kill(w, signal.SIGSTOP)
                busy = connect(srv.rpc)
                busy.sendall(b'{"jsonrpc":"2.0","id":1,"method":"device_get",'
                             b'"params":{"name":"a"}}')
                held = [connect(srv.rpc) for _ in range(127)]
                r = version_or_refused(srv)
                self.assertEqual(r['error']['code'], -32005, r)
                t0 = time.monotonic()
                deadline = t0 + 15
                while True:
                    r = version_or_refused(srv)
                    if 'result' in r:
                        break
                    self.assertEqual(r['error']['code'], -32005, r)
                    self.assertLess(time.monotonic(), deadline,
                                    'idle connections never closed: still refused')
                    srv.p._read(0.1)  # the service's log, or 0.1 s
                self.assertGreaterEqual(time.monotonic() - t0, 0.5)
                self.assertIn('idle for 1000 ms: closed', srv.p.text())
                for c in held:
                    self.assertTrue(closed_by_peer(c, 10))
                # The call in flight kept its connection: answered once the worker is.
                busy.setblocking(False)
                try:
                    self.assertNotEqual(busy.recv(1), b'', 'busy connection closed')
                except BlockingIOError:
                    pass
                busy.setblocking(True)
                os.kill(w, signal.SIGCONT)
                r = read_reply(busy, 30)
                self.assertEqual(r['result']['state'], 'waiting', r)
            finally:
                for c in held + ([busy] if busy else []):
                    c.close()
                stopped_clean(self, srv)

    def test_idle_connections_by_the_hundred_log_a_line_and_a_count(self):
        """Each connection closed as idle logged a line of its own: a client that opened
        them by the hundred flooded the log. The first of an interval (5 s) is logged, the
        others counted and told in one line at its end."""
        n = 100
        with tempfile.TemporaryDirectory() as d:
            srv = service(d, extra=('--rpc-idle-timeout', '300'))
            held = []
            try:
                held = [connect(srv.rpc) for _ in range(n)]
                for c in held:
                    self.assertTrue(closed_by_peer(c, 30))
                # Every close told, one way or the other, within the interval and a margin.
                told_in_few_lines(
                    self, srv, n, r'control client pid \d+ idle for 300 ms: closed',
                    r'control clients idle: (\d+) more closed in the last 5 s \(the last pid '
                    r'\d+ uid \d+\)')
            finally:
                for c in held:
                    c.close()
                stopped_clean(self, srv)

    def test_half_requests_by_the_hundred_log_a_line_and_a_count(self):
        """The other lines a client can make by the hundred (half a request that stalls,
        replies never read, a peer refused) are told as the idle closes are: each one
        logged a line, 100 half requests 100 lines. The first of an interval (5 s) is
        logged, the others counted and told in one line at its end."""
        n = 100
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            held = []
            try:
                for _ in range(n):
                    c = connect(srv.rpc)
                    held.append(c)
                    c.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
                for c in held:
                    self.assertTrue(closed_by_peer(c, 30))
                told_in_few_lines(
                    self, srv, n, r'control client pid \d+ sent half a request and stalled '
                    r'5000 ms: dropped',
                    r'control clients that sent half a request and stalled: (\d+) more '
                    r'dropped in the last 5 s \(the last pid \d+ uid \d+\)')
            finally:
                for c in held:
                    c.close()
                stopped_clean(self, srv)

    def test_clients_refused_for_want_of_fds_log_a_line_and_a_count(self):
        """With its fd table full the service refuses each new client (-32005, through
        its spare fd) and logged a line for each: a client connecting in a loop flooded
        the log. Its RLIMIT_NOFILE lowered to the fds it holds, 100 clients are refused:
        the first in a line, the others counted in one line at the interval's end (5 s)."""
        n = 100
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            held = []
            try:
                held.append(connect(srv.rpc))
                # The service itself (SO_PEERCRED), not a wrapper around it.
                pid = struct.unpack('3i', held[0].getsockopt(socket.SOL_SOCKET,
                                                             socket.SO_PEERCRED, 12))[0]
                self.assertIsNotNone(read_reply_after(held[0], b'{"jsonrpc":"2.0","id":1,'
                                                      b'"method":"service_get_version"}'))
                # No fd above the highest it holds: its spare is the only one left.
                top = max(int(f) for f in os.listdir(f'/proc/{pid}/fd'))
                hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (top + 1, hard))
                refused = 0
                # Those accepted (an fd below the highest was free) are held: no fd back.
                while refused < n:
                    c = connect(srv.rpc)
                    held.append(c)
                    r = read_reply_after(c, b'{"jsonrpc":"2.0","id":1,'
                                         b'"method":"service_get_version"}')
                    self.assertIsNotNone(r)
                    if 'error' in r:
                        self.assertEqual(r['error']['code'], -32005, r)
                        self.assertIn('too many open files in the service', r['error']['message'])
                        refused += 1
                    self.assertLess(len(held), n + 20, 'clients accepted past the fd limit')
                told_in_few_lines(
                    self, srv, n, r'control socket: out of file descriptors',
                    r'control clients refused for want of a file descriptor: (\d+) more '
                    r'refused in the last 5 s \(the last pid \d+ uid \d+\)')
            finally:
                for c in held:
                    c.close()
                stopped_clean(self, srv)

    def test_a_request_that_came_in_time_is_answered_not_dropped_as_idle(self):
        """The service takes one event a pass, its timers first: a connection whose request
        had come, unread behind another one's, was closed as idle with it. The service is
        stopped (SIGSTOP) while two idle clients send past their idle deadline, then let go:
        both are answered."""
        with tempfile.TemporaryDirectory() as d:
            srv = service(d, extra=('--rpc-idle-timeout', '1000'))
            cs = []
            try:
                cs = [connect(srv.rpc) for _ in range(2)]
                t0 = time.monotonic()
                # The service itself (SO_PEERCRED), not a wrapper around it.
                pid = struct.unpack('3i', cs[0].getsockopt(socket.SOL_SOCKET,
                                                           socket.SO_PEERCRED, 12))[0]
                os.kill(pid, signal.SIGSTOP)
                try:
                    # Past the idle deadline while the service cannot look: a stopped
                    # process, not a race.
                    time.sleep(max(0.0, 1.3 - (time.monotonic() - t0)))
                    for i, c in enumerate(cs):
                        c.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"service_get_version"}'
                                  % (i + 1))
                finally:
                    os.kill(pid, signal.SIGCONT)
                for i, c in enumerate(cs):
                    r = read_reply(c, 30)
                    self.assertIsNotNone(r, f'client {i}: closed with its request unread')
                    self.assertEqual(r['id'], i + 1, r)
                    self.assertIn('result', r)
            finally:
                for c in cs:
                    c.close()
                stopped_clean(self, srv)


def http_get(unix_path, url):
    """The body of GET url on a unix-socket HTTP server (the metrics page)."""
    c = connect(unix_path)
    try:
        c.sendall(f'GET {url} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'
                  .encode())
        data = recv_all(c)
    finally:
        c.close()
    head, _, body = data.partition(b'\r\n\r\n')
    if b' 200 ' not in head.split(b'\r\n')[0]:
        raise AssertionError(f'GET {url}: {head[:200]!r}')
    if b'chunked' in head.lower():
        out, rest = b'', body
        while rest:
            n, _, rest = rest.partition(b'\r\n')
            size = int(n, 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        body = out
    return body.decode()


def nobody_group(test):
    """The name of group 65534, which as_nobody's and as_member's child is in;
    test skipped where it cannot act as another user or has no such group."""
    if os.geteuid() != 0:
        test.skipTest('needs root to act as another user')
    import grp
    try:
        return grp.getgrgid(65534).gr_name
    except KeyError:
        test.skipTest('no group 65534')


def as_nobody(check):
    """check() in a child running as nobody (uid and gid 65534): its verdict."""
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            os.setgid(65534)
            os.setuid(65534)
            ok = check()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def as_member(check):
    """check() in a child running as uid 65534 in group 65534 alone: what it returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out = 'error'
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out = check()
        finally:
            os.write(w, out.encode())
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def connects(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(10)
    try:
        c.connect(path)
        return 'connected'
    except PermissionError:
        return 'refused'
    finally:
        c.close()


def refused_by_mode(path):
    try:
        connect(path)
    except PermissionError:
        return True
    return False


def refused_by_peercred(path):
    # The service answers at once and closes (what we would send could reset the
    # connection before we read that answer).
    r = read_reply(connect(path), 10)
    return r is not None and 'permission denied' in r['error']['message']


class HostileFrontEnds(unittest.TestCase):
    """A hostile front end on VM2's device: VM2's worker refuses it and lives on,
    VM1's frames keep coming (test_hostile's cases, through the service)."""

    def test_hostile_front_ends_stay_in_their_vm(self):
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            s1, s2 = os.path.join(d, 'vm1.sock'), os.path.join(d, 'vm2.sock')
            t1 = None
            try:
                srv.add('good', 'vm1', s1, devargs(0))
                srv.add('bad', 'vm2', s2, devargs(1))
                w2 = srv.vm('vm2')['worker_pid']
                t1 = Traffic(s1)
                # SET_MEM_TABLE: a region of 2 MiB over a 1 MiB memfd.
                c = vu_send_region_past_its_file(s2)
                srv.p.expect(r'is past the end of its file', timeout=30)
                self.assertTrue(closed_by_peer(c, 30))
                # A header announcing a payload never sent.
                c = vu_connect(s2)
                c.sendall(struct.pack('<III', 2, 1, 8))
                self.assertTrue(closed_by_peer(c, 30))
                # Rings outside guest memory, then a disconnect midway.
                c = vu_connect(s2)
                c.sendall(struct.pack('<III', 3, 1, 0))  # SET_OWNER
                c.sendall(struct.pack('<III', 8, 1, 8) + struct.pack('<II', 0, 256))
                c.sendall(struct.pack('<III', 9, 1, 40) + struct.pack('<IIQQQQ', 0, 0,
                          0xdead0000, 0xdead1000, 0xdead2000, 0))
                c.close()
                # Still serving VM2: GET_FEATURES answered, by the same worker.
                c = vu_connect(s2)
                c.sendall(struct.pack('<III', 1, 1, 0))
                c.settimeout(30)
                self.assertEqual(struct.unpack('<III', c.recv(12))[0], 1)
                c.close()
                self.assertEqual(srv.vm('vm2')['worker_pid'], w2)
                self.assertEqual(srv.vm('vm2')['restarts'], 0)
                rc, r1 = t1.done()
                t1 = None
                self.assertEqual((r1['reconnects'], r1['lost']), (0, 0))
                self.assertLess(r1['max_gap_ms'], 1000)
            finally:
                if t1 is not None:
                    t1.kill()
                stopped_clean(self, srv)


def listener_accepting_nothing(path):
    """A live server at path that never accepts, its queue of connections already full
    (listen(0) and one connection queued): a blocking connect to it waits for good.
    Its two sockets, to close."""
    lsn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsn.bind(path)
    lsn.listen(0)
    queued = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    queued.connect(path)
    return lsn, queued


class ListenerAcceptingNothing(unittest.TestCase):
    """Socket paths a live listener holds while it accepts nothing: refused at once."""

    def test_a_device_on_such_a_path_is_refused_and_its_vm_still_answers(self):
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            busy = os.path.join(d, 'busy.sock')
            held = listener_accepting_nothing(busy)
            c = None
            try:
                srv.add('a1', 'vmA', os.path.join(d, 'a1.sock'), devargs(0))
                c = connect(srv.rpc)
                c.sendall(json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'device_add',
                                      'params': {'name': 'a2', 'vm': 'vmA', 'socket': busy,
                                                 'devargs': devargs(1)}}).encode())
                try:
                    r = read_reply(c, 15)
                except TimeoutError as e:
                    self.fail(f'device_add a2 on {busy} (a listener accepting nothing): '
                              f'{e}; device a2: {srv.device("a2")}')
                self.assertIsNotNone(r, 'the service closed the connection without a reply')
                self.assertIn('in use by a live listener', r['error']['message'])
                # vmA's worker was not left waiting on that connect: it answers.
                try:
                    self.assertEqual(srv.call('device_get', {'name': 'a1'}, timeout=10)
                                     ['name'], 'a1')
                except TimeoutError as e:
                    self.fail(f'device_get a1 (vmA) after the refused add: {e}')
                self.assertIsNone(srv.device('a2'))
            finally:
                if c is not None:
                    c.close()
                for s in held:
                    s.close()
                srv.kill()

    def test_ctl_gives_up_on_a_service_that_accepts_nothing_within_its_timeout(self):
        with tempfile.TemporaryDirectory() as d:
            busy = os.path.join(d, 'rpc.sock')
            held = listener_accepting_nothing(busy)
            try:
                t0 = time.monotonic()
                try:
                    r = subprocess.run([CTL, '--socket', busy, '--timeout', '1',
                                        'device_list'], capture_output=True, text=True,
                                       timeout=20)
                except subprocess.TimeoutExpired:
                    self.fail('mlx5-lm-ctl --timeout 1 device_list, on a service accepting '
                              'nothing: still waiting after 20 s')
                self.assertLess(time.monotonic() - t0, 10)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn('did not accept the connection within 1 s', r.stderr)
            finally:
                for s in held:
                    s.close()

    def test_the_service_refuses_to_start_on_such_a_control_socket_or_metrics_path(self):
        with tempfile.TemporaryDirectory() as d:
            busy = os.path.join(d, 'busy.sock')
            held = listener_accepting_nothing(busy)
            try:
                for extra in (['--rpc-socket', busy],
                              ['--rpc-socket', os.path.join(d, 'r.sock'), '--metrics', busy]):
                    try:
                        r = subprocess.run([VHOSTD, '--worker', WORKER] + extra,
                                           capture_output=True, text=True, timeout=30)
                    except subprocess.TimeoutExpired:
                        self.fail(f'mlx5-lm-vhostd {" ".join(extra)}: neither started nor '
                                  f'refused within 30 s')
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn('in use by a live listener', r.stderr)
            finally:
                for s in held:
                    s.close()


class ControlSocketAtStop(unittest.TestCase):
    """At stop the control socket is removed only if its path still names it."""

    def test_the_control_socket_is_removed_at_stop_and_a_file_that_replaced_it_is_not(self):
        with tempfile.TemporaryDirectory() as d:
            srv = service(d)
            self.assertTrue(stat.S_ISSOCK(os.lstat(srv.rpc).st_mode))
            self.assertEqual(srv.stop(), 0, srv.p.text()[-3000:])
            self.assertFalse(os.path.lexists(srv.rpc), 'the control socket left at stop')

            srv = service(d)
            # Someone else's file takes the path while the service runs.
            os.unlink(srv.rpc)
            with open(srv.rpc, 'w') as f:
                f.write('not the service\'s')
            self.assertEqual(srv.stop(), 0, srv.p.text()[-3000:])
            self.assertTrue(os.path.exists(srv.rpc),
                            'the file that replaced the control socket was removed at stop')
            with open(srv.rpc) as f:
                self.assertEqual(f.read(), 'not the service\'s')
            self.assertIn('is no longer the socket the service created: left alone',
                          srv.p.text())


class Docs(unittest.TestCase):
    """doc/vhostd.md's quick start, run verbatim (doc-test vhostd-quick-start)."""

    def test_quick_start_block_runs_as_written(self):
        from lmtest import doc_block, run_dir_lock, socket_in_use
        block = doc_block('vhostd-quick-start')
        if os.geteuid() != 0:
            self.skipTest('the block uses /run/mlx5-lm, which needs root')
        self.enterContext(run_dir_lock())
        for path in ('/run/mlx5-lm/vhostd.sock', '/run/mlx5-lm/vm1-net0.sock',
                     '/run/mlx5-lm/metrics.sock'):
            if socket_in_use(path):
                self.skipTest(f'{path} is served by another process')
        env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(VHOSTD)) + ':' +
                   os.path.dirname(os.path.abspath(CTL)) + ':' + os.environ['PATH'])
        r = subprocess.run(['bash', '-e', '-c', block], env=env, capture_output=True,
                           text=True, timeout=300)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out[-3000:])
        self.assertIn('added vm1-net0 (vm vm1', out)
        self.assertRegex(out, r'vm1-net0\s+vm1\s+waiting')
        self.assertRegex(out, r'backend\s+emu')
        self.assertIn('"method": "device_add"', out)
        self.assertIn('removed vm1-net0 (vm vm1, was waiting)', out)
        self.assertIn('stopped: every worker gone, 0 device objects left alive', out)
        for p in ('/run/mlx5-lm/vhostd.sock', '/run/mlx5-lm/vm1-net0.sock',
                  '/run/mlx5-lm/metrics.sock'):
            self.assertFalse(os.path.exists(p), p)


class Systemd(unittest.TestCase):
    def test_systemd_unit_verifies(self):
        unit = os.environ.get('VHOSTD_UNIT')
        if shutil_which('systemd-analyze') is None:
            self.skipTest('systemd-analyze is not installed: the unit is not verified')
        self.assertTrue(unit and os.path.exists(unit), unit)
        with tempfile.TemporaryDirectory() as d:
            # The unit names the installed paths: verify it against this build's binaries.
            with open(unit) as f:
                text = f.read()
            text = text.replace('@BINDIR@/mlx5-lm-vhostd', VHOSTD)
            path = os.path.join(d, 'mlx5-lm-vhostd.service')
            with open(path, 'w') as f:
                f.write(text)
            r = subprocess.run(['systemd-analyze', 'verify', path], capture_output=True,
                               text=True, timeout=60)
            # Only this unit's problems count, not the host's other units.
            mine = [l for l in (r.stdout + r.stderr).splitlines()
                    if 'mlx5-lm-vhostd' in l]
            self.assertEqual(mine, [], r.stdout + r.stderr)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('Type=notify', text)
        self.assertIn('Restart=on-failure', text)
        self.assertIn('CAP_NET_RAW', text)
        self.assertIn('LimitMEMLOCK=infinity', text)


def shutil_which(p):
    import shutil
    return shutil.which(p)


if __name__ == '__main__':
    unittest.main(verbosity=2)
