#!/usr/bin/env python3
"""dpdk-test-lm migrate --backend rdma: the
sources and destinations are the PMD's rdma back end (ibdev=mlx5_<i>) on the
emulated rdma-core, under tools/with-emulated-rdma. The tool checks frames
(lost, duplicated) and the dirty log; the wrapper's exit status says whether
a device was closed with objects alive (3)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from lmtest import assert_stage_migrated_clean

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
WRAPPER = os.environ['LM_WRAPPER']
LIBDIR = os.environ['LM_ERDMA_LIBDIR']
# Only the wrapped program may load the emulated rdma-core.
os.environ.pop('LD_LIBRARY_PATH', None)


def run(args, devices=None, trace=None):
    cmd = [TOOL, 'migrate', '--backend', 'rdma', '--profile', 'fast'] + args
    if devices is not None:
        w = [sys.executable, WRAPPER, '--devices', str(devices), '--profile', 'fast']
        if trace:
            w += ['--trace', trace]
        cmd = w + ['--'] + cmd
    p = subprocess.run(cmd, env=dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
    return p.returncode, p.stdout.decode(errors='replace')


class MigrateOnRdma(unittest.TestCase):
    def test_two_devices_migrate_on_ibdev(self):
        with tempfile.TemporaryDirectory() as d:
            path, trace = os.path.join(d, 'r.json'), os.path.join(d, 'T')
            rc, out = run(['--devices', '2', '--queue-pairs', '2', '--mem-gb', '2',
                           '--stages', 'baseline,all', '--json', path], devices=4, trace=trace)
            # 3 would be a device closed with objects alive (the wrapper's summary).
            self.assertEqual(rc, 0, out[-4000:])
            self.assertNotIn('left alive', out.replace('0 device objects left alive', ''))
            # Every CQ doorbell reached its CQ before the CQ was destroyed.
            self.assertNotIn('no such CQ', out)
            with open(path) as f:
                doc = json.load(f)
            with open(trace) as f:
                recs = [json.loads(line) for line in f]
            devs = {r['dev'] for r in recs}
        self.check_arm_sn_moves_per_event(recs)
        # Guest memory and the dirty log are the kernel's MRs (DevX umems cannot back mkeys):
        # ibv_reg_mr per chunk, every umem a ring buffer (< 1 MiB), every
        # CREATE_MKEY the indirect one over MRs (an mkey naming a umem would
        # have been refused, and the run with it).
        self.assertTrue(any(r['op'] == 'MR_REG' and r['entry'] == 'reg_mr' for r in recs))
        self.assertEqual([r for r in recs if r['op'] == 'UMEM_REG' and r['size'] >= 1 << 20], [])
        self.assertEqual([r for r in recs if r['op'] == 'CREATE_MKEY' and r['status'] != 0], [])
        # Two sources and two destinations, each its own RDMA device.
        self.assertEqual(devs, {'mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'})
        self.assertEqual([s['name'] for s in doc['stages']], ['baseline', 'all'])
        for s in doc['stages']:
            self.assertTrue(s['ok'], s)
            assert_stage_migrated_clean(self, s)

    def check_arm_sn_moves_per_event(self, recs):
        """The CQ arm sequence number advances once per completion event:
        between two arms of a CQ traced by the emulated rdma-core (UAR_WRITE
        at 0x20, value (sn << 28 | cmd << 24 | ci) << 32 | cqn), the second
        carries the first's sn plus the completion events of that CQ read
        in between (EVENT, addr 0: the type; obj_id: the CQN the EQE names),
        mod 4 (Linux mlx5_cq_completion / mlx5_cq_arm, rdma-core
        mlx5_cq_event / mlx5_arm_cq: the number counts events; an arm that
        repeats the served number may be ignored by the device). A CQ starts
        at sn 0 with its CREATE_CQ. The library forwards the last of the
        writes between two looks at the UAR page (shared by the CQs), so not
        every arm is traced, and an arm the device took from its doorbell
        record (another CQ's write forwarded meanwhile) may raise its event
        before the arm's own write is traced: such an arm shows one event
        fewer, or, the event of an arm traced late, one more (seen once in a
        loaded ThreadSanitizer run). That is allowed for a few; a driver that
        never advances the number (every pair one or more behind) fails."""
        state, checked, behind = {}, 0, 0
        for r in recs:
            op = r.get('op')
            if op == 'CREATE_CQ' and r.get('status') == 0:
                state[(r['dev'], r['obj_id'])] = [0, 0]
            elif op == 'EVENT' and r.get('addr') == 0:
                st = state.get((r['dev'], r['obj_id']))
                if st is not None:
                    st[1] += 1
            elif op == 'UAR_WRITE' and r.get('addr') == 0x20:
                v = r['value']
                key, sn = (r['dev'], v & 0xffffff), (v >> 60) & 3
                st = state.get(key)
                if st is None:
                    continue
                if st[1] != 0:
                    checked += 1
                    if sn != (st[0] + st[1]) & 3:
                        self.assertIn(sn, ((st[0] + st[1] - 1) & 3, (st[0] + st[1] + 1) & 3),
                                      'CQ 0x%x of %s: arm with sn %d after sn %d and %d '
                                      'completion events' % (key[1], key[0], sn, st[0],
                                                             st[1]))
                        behind += 1
                state[key] = [sn, 0]
        # The traffic raised events on the devices' CQs, with arms around them.
        self.assertGreater(checked, 8, 'arms with completion events between them')
        self.assertLessEqual(behind * 10, checked, '%d of %d arms one event off' %
                             (behind, checked))

    def test_refused_without_enough_devices(self):
        rc, out = run(['--devices', '2', '--queue-pairs', '1', '--mem-gb', '1'])
        self.assertEqual(rc, 2, out)
        self.assertIn('run it under tools/with-emulated-rdma --devices 4', out)
        rc, out = run(['--devices', '2', '--queue-pairs', '1', '--mem-gb', '1'], devices=3)
        self.assertEqual(rc, 2, out)
        self.assertIn('needs 4 RDMA devices mlx5_0..mlx5_3 (too few)', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
