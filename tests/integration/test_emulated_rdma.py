#!/usr/bin/env python3
"""The unchanged rdma back end (ibdev=) on the emulated rdma-core, through
tools/with-emulated-rdma: the code that runs on real hardware, run here."""
import collections
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from lmtest import Proc, Testpmd, stopped_after, testpmd_traffic

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
WRAPPER = os.environ['LM_WRAPPER']
LIBDIR = os.environ['LM_ERDMA_LIBDIR']
# meson puts the build's library directories (emu-rdma among them) on
# LD_LIBRARY_PATH: only the wrapped program may load the emulated rdma-core,
# never testpmd (built elsewhere, and not with the sanitizer).
os.environ.pop('LD_LIBRARY_PATH', None)
QP_TRANSITIONS = {'RST2INIT_QP', 'INIT2RTR_QP', 'RTR2RTS_QP', '2RST_QP'}


def wrapped(args, trace=None, devices=1, profile='fast', env=None, sfs=0):
    e = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
    e.update(env or {})
    cmd = [sys.executable, WRAPPER, '--devices', str(devices), '--sfs', str(sfs),
           '--profile', profile]
    if trace:
        cmd += ['--trace', trace]
    p = subprocess.run(cmd + ['--'] + args, env=e, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class DeviceSelection(unittest.TestCase):
    """pci=<BDF> and sf=<auxiliary device> name a function by what does not change
    across reboots; the RDMA device is found through sysfs (<ibdev_path>/device)."""

    def probe_dev(self, devargs):
        """The RDMA device the probe used (every trace record names it)."""
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, 'T')
            rc, out, err = wrapped([TOOL, 'probe', '--devargs', devargs], trace=trace,
                                   devices=3, sfs=1)
            self.assertEqual(rc, 0, out + err)
            devs = {r['dev'] for r in records(trace)}
        self.assertEqual(len(devs), 1, devs)
        return devs.pop()

    def test_pci_address_selects_its_function_in_any_spelling(self):
        self.assertEqual(self.probe_dev('pci=0000:5e:01.0'), 'mlx5_1')
        self.assertEqual(self.probe_dev('pci=5E:00.0'), 'mlx5_0')

    def test_sf_selects_its_auxiliary_device(self):
        self.assertEqual(self.probe_dev('sf=mlx5_core.sf.1'), 'mlx5_2')

    def test_a_function_without_rdma_device_is_one_line_listing_what_exists(self):
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'pci=0000:5e:1f.0'], devices=3,
                               sfs=1)
        self.assertNotEqual(rc, 0)
        lines = [l for l in (out + err).splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, lines)
        for needle in ('pci=0000:5e:1f.0', 'no such RDMA device', 'mlx5_0 (0000:5e:00.0)',
                       'mlx5_2 (mlx5_core.sf.1)'):
            self.assertIn(needle, lines[0])


class ProbeOnEmulatedRdma(unittest.TestCase):
    def test_probe_exits_0_and_keeps_the_kernels_devx_rules(self):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, 'T')
            rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_0'], trace=trace)
            self.assertEqual(rc, 0, out + err)
            self.assertIn('back end: rdma', out)
            self.assertRegex(out, r'max_num_virtio_queues\s+256')
            self.assertNotIn('left alive', err)
            recs = records(trace)
        self.assertTrue(recs)
        for r in recs:
            for k in ('dev', 'seq', 't_start_us', 't_end_us', 'op', 'entry', 'status'):
                self.assertIn(k, r)
            self.assertEqual(r['dev'], 'mlx5_0')
            self.assertEqual(r['status'], 0, r)
        general = {r['op'] for r in recs if r['entry'] == 'general'}
        self.assertEqual(general & (QP_TRANSITIONS | {'MODIFY_RQT', 'QUERY_SPECIAL_CONTEXTS'}),
                         set())
        entries = collections.Counter(r['entry'] for r in recs)
        for e in ('general', 'create', 'modify', 'destroy', 'umem_reg', 'umem_dereg',
                  'alloc_pd', 'null_mr', 'var_alloc', 'evch_subscribe', 'flow_create',
                  'flow_destroy'):
            self.assertIn(e, entries)
        # Every QP transition went through the QP's own handle.
        for r in recs:
            if r['op'] in QP_TRANSITIONS:
                self.assertEqual(r['entry'], 'modify', r)

    def test_devices_are_named_and_wrong_name_is_one_clear_error(self):
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_7'], devices=2)
        self.assertNotEqual(rc, 0)
        self.assertIn('mlx5_0 (0000:5e:00.0), mlx5_1 (0000:5e:01.0)', out + err)
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_1'], devices=2)
        self.assertEqual(rc, 0, out + err)

    def test_wrapper_refuses_what_cannot_work_before_starting(self):
        # Each used to show late: a bad profile only when a device opened (never
        # for a command that opens none: exit 0), a bad trace path as a Python
        # traceback, a missing command as an error naming an internal script.
        e = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
        for args, rc_want, needle in (
                (['--profile', 'nope', '--', 'true'], 2, '--profile nope'),
                (['--trace', '/nonexistent/t.json', '--', 'true'], 2, '--trace'),
                (['--', '/nonexistent/cmd'], 127, '/nonexistent/cmd: no such command')):
            p = subprocess.run([sys.executable, WRAPPER] + args, env=e, capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, rc_want, p.stdout + p.stderr)
            self.assertIn(needle, p.stderr)
            self.assertNotIn('Traceback', p.stderr)
        p = subprocess.run([sys.executable, WRAPPER, '--help'], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0)
        # Every option is described, not only named.
        self.assertIn('emulated RDMA devices mlx5_0', p.stdout)
        self.assertIn('Exit status', p.stdout)

    def test_objects_left_alive_make_the_wrapper_fail(self):
        # DEALLOC_PD (0x801) refused once by the emulated firmware: the PD
        # stays alive, the library reports it when the device closes, and
        # the wrapper turns the command's success into exit status 3.
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_0'],
                               env={'MLX5_LM_EMU_FAULT': '0x801:1:0x6'})
        self.assertEqual(rc, 3, out + err)
        self.assertIn('mlx5_0', err)
        self.assertIn('left alive', err)


class ServeOnEmulatedRdma(unittest.TestCase):
    def test_testpmd_forwards_through_serve_ibdev(self):
        # testpmd (virtio-user) <-> dpdk-test-lm serve ibdev=mlx5_0 under the
        # wrapper: the rdma back end's doorbells land on the VAR page and
        # reach the emulated device, traffic comes back through RX.
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            trace = os.path.join(d, 'T')
            srv = Proc([sys.executable, WRAPPER, '--profile', 'fast', '--trace', trace, '--',
                        TOOL, 'serve', '--devargs', 'ibdev=mlx5_0,queues=2', '--socket', sock],
                       env={'MLX5_LM_ERDMA_LIBDIR': LIBDIR}, name='serve')
            with stopped_after(self, srv):
                srv.expect(r'serve: ready', timeout=60)
                rx, tx = testpmd_traffic(sock, f'tpe{os.getpid()}', 2000, queues=1)
                srv.expect(r'front end gone', timeout=30)
            self.assertIn('clean teardown', srv.text())
            recs = records(trace)
        self.assertGreaterEqual(rx, 2000)
        self.assertGreaterEqual(tx, rx)
        bells = [r for r in recs if r['op'] == 'DOORBELL']
        self.assertTrue(bells)
        self.assertEqual({r['status'] for r in bells}, {0})
        self.assertEqual({r['entry'] for r in recs if r['op'] in QP_TRANSITIONS | {'MODIFY_RQT'}},
                         {'modify'})


    def test_control_socket_serves_the_emulators_test_hooks(self):
        # emu-rdma/erdma_ctl.c: an open device answers on
        # $MLX5_LM_ERDMA_CONTROL/mlx5_0; bad requests are refused, not guessed.
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            where = os.path.join(d, 'control')
            srv = Proc([sys.executable, WRAPPER, '--profile', 'fast', '--', 'sh', '-c',
                        'echo "$MLX5_LM_ERDMA_CONTROL" > "$0"; exec "$@"', where,
                        TOOL, 'serve', '--devargs', 'ibdev=mlx5_0,queues=1', '--socket', sock],
                       env={'MLX5_LM_ERDMA_LIBDIR': LIBDIR}, name='serve')
            with stopped_after(self, srv):
                srv.expect(r'serve: ready', timeout=60)
                with open(where) as f:
                    path = os.path.join(f.read().strip(), 'mlx5_0')

                def ask(req):
                    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as c:
                        c.settimeout(10)
                        c.connect(path)
                        c.send(req.encode())
                        return c.recv(256).decode()

                live = ask('live')
                self.assertRegex(live, r'^ok [1-9][0-9]*$')
                self.assertTrue(ask('nonsense').startswith('err 22 bad request'))
                # nth counts from 1; a status of 0 would be no failure.
                self.assertTrue(ask('fault 0xa01 0xd 0 0x4 0').startswith('err 22'))
                self.assertTrue(ask('fault 0xa01 0xd 1 0 0').startswith('err 22'))
                # No such virtq: the emulator's answer, not a made-up state.
                self.assertRegex(ask('virtq_state 0xfffff'), r'^err \d+ status 0x')
                # The umem parameters firmware changes at runtime: a and b of each umem,
                # within what umem_N_size can say for the largest queue.
                self.assertTrue(ask('umem_params 128 4096').startswith('err 22 bad request'))
                self.assertTrue(ask('umem_params 65537 0 0 0 0 0').startswith('err 22 '))
                self.assertEqual(ask('umem_params 128 4096 96 8192 16 12288'), 'ok')
                self.assertEqual(ask('fault 0xa01 0xd 1 0x4 0x5e0f0001'), 'ok')
                self.assertEqual(ask('live'), live)
            self.assertIn('fault armed: opcode 0xa01 obj_type 0xd, command 1 from now, '
                          'status 0x4 syndrome 0x5e0f0001', srv.text())

    def test_tap_is_the_devices_wire(self):
        """--tap 0=IF: the device's wire is the tap IF (no loopback): frames the host
        writes to IF reach testpmd through the device's RX, and what testpmd sends
        back leaves the device on IF."""
        if os.geteuid() != 0 or not os.path.exists('/dev/net/tun'):
            self.skipTest('needs root and /dev/net/tun for a tap')
        tap = f'lmrt{os.getpid()}'  # unique: two builds' tests may run at once
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            srv = Proc([sys.executable, WRAPPER, '--profile', 'fast', '--tap', f'0={tap}', '--',
                        TOOL, 'serve', '--devargs', 'ibdev=mlx5_0,queues=1', '--socket', sock],
                       env={'MLX5_LM_ERDMA_LIBDIR': LIBDIR}, name='serve')
            with stopped_after(self, srv):
                srv.expect(r'serve: ready', timeout=60)
                stats = f'/sys/class/net/{tap}/statistics/'
                self.assertTrue(os.path.exists(stats))
                pmd = Testpmd(sock, f'tpt{os.getpid()}', queues=1)
                try:
                    pmd.cmd('start')
                    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                    s.bind((tap, 0))
                    frame = b'\xff' * 6 + b'\x02\x00\x00\x00\x00\x01' + b'\x88\xb5' + \
                        bytes(50)
                    sent = 0
                    deadline = time.monotonic() + 30
                    rx = 0
                    while rx < 100 and time.monotonic() < deadline:
                        s.send(frame)
                        sent += 1
                        rx, _ = pmd.port_stats()
                    s.close()
                    pmd.cmd('stop')
                    _, tx = pmd.port_stats()
                    # What testpmd queued is the device's to send: wait (bounded) until
                    # the tap has it, before the front end's exit stops the device.
                    deadline = time.monotonic() + 30
                    while True:
                        with open(stats + 'rx_packets') as f:
                            host_rx = int(f.read())
                        if host_rx >= tx or time.monotonic() > deadline:
                            break
                        time.sleep(0.05)  # polls a kernel counter; the deadline bounds it
                finally:
                    pmd.quit()
                srv.expect(r'front end gone', timeout=30)
            self.assertFalse(os.path.exists(stats), 'the tap outlived its device')
        self.assertGreaterEqual(rx, 100)
        # testpmd (io) sent back what it got; all of it left on the tap.
        self.assertGreaterEqual(host_rx, tx)
        self.assertGreater(tx, 0)


if __name__ == '__main__':
    unittest.main(verbosity=2)
