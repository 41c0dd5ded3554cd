#!/usr/bin/env python3
"""The peer: DPDK's own vdpa/mlx5 (Debian's librte-vdpa-mlx5-23, loaded from the
PMD auto-load directory) probed on the emulated ConnectX through the emulated
rdma-core (tools/with-emulated-rdma --private-sys), serving testpmd's
virtio-user port through the stock dpdk-vdpa example.

Skipped only when the peer's package is not installed (tools/setup.sh installs
it), or without root and unshare(1) for the private mount namespace the
peer's hard-coded /sys/bus/pci/devices/<BDF>/roce_enable needs."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from lmtest import (EXAMPLE_SRC, Proc, assert_stage_migrated_clean, build_vdpa_example,
                    doc_block, run_example, testpmd_traffic, TOP)

WRAPPER = os.environ.get('LM_WRAPPER', os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools', 'with-emulated-rdma'))
LIBDIR = os.environ.get('LM_ERDMA_LIBDIR', 'build/emu-rdma')
FRONTEND = os.environ.get('LM_PEER_FRONTEND', 'build/tests/integration/peer_frontend')
PEER = '/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_vdpa_mlx5.so.23'
BDF = '0000:5e:00.0'


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class Peer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PEER):
            subprocess.run(['bash', os.path.join(os.path.dirname(WRAPPER), 'setup.sh')],
                           check=False)
        if not os.path.exists(PEER):
            raise unittest.SkipTest(f'{PEER} missing: librte-vdpa-mlx5-23 cannot be installed')
        if os.geteuid() != 0 or shutil.which('unshare') is None:
            raise unittest.SkipTest('--private-sys needs root and unshare(1)')
        if not os.path.isdir(EXAMPLE_SRC):
            raise unittest.SkipTest(f'{EXAMPLE_SRC} missing (package dpdk-doc)')
        cls.work = tempfile.mkdtemp(prefix='lm-peer-')
        cls.example = build_vdpa_example(cls.work)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def example_proc(self, devargs, iface, trace, prefix, log=()):
        return Proc([sys.executable, WRAPPER, '--private-sys', '--profile', 'fast',
                     '--trace', trace, '--',
                     self.example, '--no-huge', '-m', '512', '--no-shconf',
                     '-a', f'{BDF},class=vdpa,{devargs}', f'--file-prefix={prefix}',
                     '-l', '0', '--log-level=lib.eal:warning', *log, '--', '--iface', iface],
                    env={'MLX5_LM_ERDMA_LIBDIR': LIBDIR}, name='dpdk-vdpa', stdin=True)

    def assert_all_gone(self, recs):
        """Every firmware command succeeded; what was created was destroyed."""
        self.assertEqual([r for r in recs if r['status'] != 0], [])
        ops = collections.Counter(r['op'] for r in recs)
        for made, gone in (('CREATE_CQ', 'DESTROY_CQ'), ('CREATE_QP', 'DESTROY_QP'),
                           ('CREATE_TIR', 'DESTROY_TIR'), ('CREATE_RQT', 'DESTROY_RQT'),
                           ('CREATE_TIS', 'DESTROY_TIS'), ('CREATE_MKEY', 'DESTROY_MKEY'),
                           ('CREATE_GENERAL_OBJECT', 'DESTROY_GENERAL_OBJECT'),
                           ('UMEM_REG', 'UMEM_DEREG'), ('ALLOC_PD', 'DEALLOC_PD'),
                           ('MR_REG', 'MR_DEREG'),
                           ('ROOT_FLOW_CREATE', 'ROOT_FLOW_DESTROY'),
                           ('UAR_ALLOC', 'UAR_FREE')):
            self.assertEqual(ops[made], ops[gone], f'{made} / {gone}')
        return ops

    def test_peer_probes_precreates_and_tears_down(self):
        # queues=2,queue_size=256: the peer pre-creates at probe (DPDK 22.11
        # mlx5_vdpa_virtq_resource_prepare): 4 CQs, 8 QPs, 4 counters + 4 virtqs, an RQT, 7 TIRs
        # behind 7 root rules (its dr matchers by outer ip_version/protocol).
        with tempfile.TemporaryDirectory(dir=self.work) as d:
            trace = os.path.join(d, 'T')
            ex = self.example_proc('queues=2,queue_size=256', os.path.join(d, 'vh'), trace,
                                   f'pp{os.getpid()}')
            _, rc = run_example(ex)
            recs = records(trace)
        self.assertEqual(rc, 0, ex.text()[-3000:])
        self.assertNotIn('left alive', ex.text())
        self.assertNotIn('not implemented', ex.text())
        ops = self.assert_all_gone(recs)
        self.assertEqual(ops['CREATE_CQ'], 4)
        self.assertEqual(ops['CREATE_QP'], 8)
        self.assertEqual(ops['CREATE_GENERAL_OBJECT'], 8)
        self.assertEqual(ops['CREATE_RQT'], 1)
        self.assertEqual(ops['CREATE_TIR'], 7)
        self.assertEqual(ops['ROOT_FLOW_CREATE'], 7)
        prios = sorted(r['size'] for r in recs if r['op'] == 'ROOT_FLOW_CREATE')
        self.assertEqual(prios, [5, 5, 5, 5, 6, 6, 7])

    def test_peer_serves_testpmd_both_ways(self):
        # testpmd (virtio-user) <-> dpdk-vdpa <-> the peer <-> emulated device,
        # the uplink looping frames back: testpmd's TX returns on its RX, io
        # forwarding sends it out again. Kicks go through the peer's one
        # shared doorbell (VAR page), completions back to the peer by CQEs.
        with tempfile.TemporaryDirectory(dir=self.work) as d:
            trace = os.path.join(d, 'T')
            iface = os.path.join(d, 'vh')
            ex = self.example_proc('queues=1,queue_size=256', iface, trace, f'ps{os.getpid()}')
            (rx, tx), rc = run_example(
                ex, during=lambda: testpmd_traffic(iface + '0', f'tps{os.getpid()}', 2000,
                                                   queues=1, queue_size=256))
            recs = records(trace)
        self.assertEqual(rc, 0, ex.text()[-3000:])
        self.assertNotIn('left alive', ex.text())
        self.assertNotIn('not implemented', ex.text())
        self.assertGreaterEqual(rx, 2000)
        self.assertGreaterEqual(tx, rx)
        ops = self.assert_all_gone(recs)
        self.assertGreater(ops['DOORBELL'], 0)
        self.assertEqual({r['entry'] for r in recs if r['op'] == 'DOORBELL'}, {'var_write'})
        # Its guest memory: one ibv_reg_mr per region (the kernel's MR, no DevX
        # umem), one indirect mkey over them through DevX.
        self.assertEqual({r['entry'] for r in recs if r['op'] == 'MR_REG'}, {'reg_mr'})
        self.assertEqual({r['entry'] for r in recs if r['op'] == 'CREATE_MKEY'}, {'create'})

    def test_peer_call_path_signals_every_used_buffer(self):
        # peer_frontend sends one frame at a time and waits for the call
        # eventfd of the TX ring, then of the RX ring, before the next: the
        # emulator writes a CQE to the peer's collapsed CQ per notification,
        # the peer learns of it by polling cqes[0].wqe_counter and writes the
        # callfd. The peer's defaults: between rounds it arms its CQs (UAR
        # writes) and sleeps on their events; the merged-arm fix of the
        # emulator (doc/emulator.md, "The peer") made the event_us=100 /
        # no_traffic_time workaround unneeded.
        with tempfile.TemporaryDirectory(dir=self.work) as d:
            trace = os.path.join(d, 'T')
            iface = os.path.join(d, 'vh')
            ex = self.example_proc('queues=1,queue_size=256', iface, trace,
                                   f'pc{os.getpid()}', log=['--log-level=pmd.vdpa.mlx5:info'])

            def frontend():
                fe = Proc([FRONTEND, iface + '0', '300'], name='peer_frontend', stdin=True)
                try:
                    fe.expect(r'peer_frontend: started', timeout=60)
                    # The peer configures after replying to DRIVER_OK; its steering
                    # is in place when it says so.
                    ex.expect(r'vDPA device \d+ was configured', timeout=60)
                    fe.send('go')
                    return fe, fe.stop(sig=None, timeout=300)
                finally:
                    fe.kill()
            (fe, fe_rc), rc = run_example(ex, during=frontend)
            recs = records(trace)
        self.assertEqual(fe_rc, 0, fe.text() + ex.text()[-3000:])
        self.assertIn('300 frames, each signalled on both call eventfds', fe.text())
        self.assertEqual(rc, 0, ex.text()[-3000:])
        self.assertNotIn('left alive', ex.text())
        self.assertNotIn('not implemented', ex.text())
        ops = self.assert_all_gone(recs)
        # The event path was used: CQs armed again after their events, more
        # arms than the CQs' first.
        self.assertGreater(ops['UAR_WRITE'], ops['CREATE_CQ'])


TEST_LM = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')


class PeerMigrate(unittest.TestCase):
    """The peer's live-migration cycle: dpdk-test-lm
    migrate --stages peer,peer-precreate, DPDK's vdpa/mlx5 hot-plugged on the
    emulated PCI functions in the tool's process, the same guest, traffic and
    checks as our stages: its dirty log (log mkey, MODIFY of the bitmap on
    running queues, SUSPEND and QUERY at the stop) must hold every page the
    sources wrote, no frame lost or duplicated, nothing left alive."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PEER):
            raise unittest.SkipTest(f'{PEER} missing: librte-vdpa-mlx5-23 not installed')
        if os.geteuid() != 0 or shutil.which('unshare') is None:
            raise unittest.SkipTest('--private-sys needs root and unshare(1)')

    def run_tool(self, wrapper_args, args):
        cmd = [sys.executable, WRAPPER, *wrapper_args, '--profile', 'fast', '--',
               TEST_LM, 'migrate', '--profile', 'fast', *args]
        env = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
        # Only the wrapped program may load the emulated rdma-core.
        env.pop('LD_LIBRARY_PATH', None)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
        return p.returncode, p.stdout.decode(errors='replace')

    def test_peer_stages_migrate_without_loss_with_a_complete_dirty_log(self):
        with tempfile.TemporaryDirectory() as d:
            path, trace = os.path.join(d, 'r.json'), os.path.join(d, 'T')
            svg = os.path.join(d, 'c.svg')
            rc, out = self.run_tool(['--private-sys', '--devices', '2', '--trace', trace],
                                    ['--devices', '1', '--queue-pairs', '2', '--mem-gb', '2',
                                     '--stages', 'peer,peer-precreate', '--json', path,
                                     '--plot', svg, '--peer-conf-threads', '0'])
            # 3 would be a device closed with objects alive (the wrapper's summary).
            self.assertEqual(rc, 0, out[-4000:])
            self.assertNotIn('not implemented', out)
            with open(path) as f:
                doc = json.load(f)
            recs = records(trace)
            # The chart takes the peer's null parts.
            self.assertTrue(os.path.getsize(svg) > 0)
        self.assertEqual([s['name'] for s in doc['stages']], ['peer', 'peer-precreate'])
        for s in doc['stages']:
            self.assertTrue(s['ok'], s)
            self.assertTrue(s['peer'], s)
            assert_stage_migrated_clean(self, s, bad_packets=True)
            # Our PMD's API only: absent for the peer, not zero.
            self.assertIsNone(s['dst_vq_ms'], s)
            self.assertIsNone(s['dst_mr_ms'], s)
        # Without the peer's configuration threads: they lose a wake-up and hang
        # its probe in about 1 of 5 runs (doc/emulated-rdma.md); the benchmark
        # keeps 64 and its watchdog.
        self.assertEqual(doc['stages'][1]['devargs']['max_conf_threads'], 0)
        # Every command the peer sent was taken, and all it made is gone.
        self.assertEqual([r for r in recs if r['status'] != 0], [])
        ops = collections.Counter(r['op'] for r in recs)
        for made, gone in (('CREATE_MKEY', 'DESTROY_MKEY'), ('UMEM_REG', 'UMEM_DEREG'),
                           ('MR_REG', 'MR_DEREG'),
                           ('CREATE_GENERAL_OBJECT', 'DESTROY_GENERAL_OBJECT'),
                           ('CREATE_QP', 'DESTROY_QP'), ('CREATE_CQ', 'DESTROY_CQ')):
            self.assertEqual(ops[made], ops[gone], f'{made} / {gone}')
        # Its migration path, as DPDK's mlx5_vdpa_lm.c runs it: the log's bitmap set
        # on running queues (select bit 3, then bit 4), SUSPEND, then QUERY.
        vq_mods = [bytes.fromhex(r['in']) for r in recs
                   if r['op'] == 'MODIFY_GENERAL_OBJECT' and r['obj_type'] == 13]
        mods = [int.from_bytes(b[0x10:0x18], 'big') for b in vq_mods]
        self.assertTrue(any(m & (1 << 3) for m in mods), mods)
        self.assertTrue(any(m & (1 << 4) for m in mods), mods)
        # state[4] at bit 0x9c of the virtio_net_q object (mailbox 0x10 on): SUSPEND 2.
        self.assertTrue(any(int.from_bytes(b[0x10:0x18], 'big') & 1 and
                            (b[0x10 + 0x13] & 0xf) == 2 for b in vq_mods))
        self.assertGreater(ops['QUERY_GENERAL_OBJECT'], 0)
        # Source and destination: two devices, both used.
        self.assertEqual({r['dev'] for r in recs}, {'mlx5_0', 'mlx5_1'})

    def test_doc_command_prints_the_three_stages_without_loss(self):
        # doc/emulated-rdma.md's command, verbatim: one table, ours and the
        # peer's two stages, each without loss, duplicate or unlogged page.
        # The doc's paths are the source tree's, its build in build/.
        env = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=os.path.abspath(LIBDIR))
        env.pop('LD_LIBRARY_PATH', None)
        p = subprocess.run(['bash', '-e', '-c', doc_block('peer-migrate')], env=env, cwd=TOP,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        out = p.stdout.decode(errors='replace')
        self.assertEqual(p.returncode, 0, out)
        header = next(l for l in out.splitlines() if l.startswith('| stage'))
        cols = [c.strip() for c in header.strip('|').split('|')]
        rows = {}
        for line in out.splitlines():
            cells = [c.strip() for c in line.strip('|').split('|')]
            if line.startswith('| ') and len(cells) == len(cols) and cells[0] != 'stage':
                rows[cells[0]] = dict(zip(cols, cells))
        self.assertEqual(sorted(rows), ['all', 'peer', 'peer-precreate'], out)
        for name, r in rows.items():
            self.assertEqual((r['lost'], r['dup'], r['dirty ok']), ('0', '0', 'yes'),
                             f'{name}: {r}')

    def test_peer_stages_refused_without_private_sys(self):
        # The wrapper uses the namespace by default where it can: refused
        # only when it is switched off (or impossible).
        rc, out = self.run_tool(['--no-private-sys', '--devices', '2'],
                                ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '1',
                                 '--stages', 'peer'])
        self.assertEqual(rc, 2, out)
        self.assertIn('run it under tools/with-emulated-rdma --private-sys --devices 2', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
