#!/usr/bin/env python3
"""The unchanged rdma back end (ibdev=) on the emulated rdma-core, through
tools/with-emulated-rdma (issue 10, first "done when" bullet)."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
WRAPPER = os.environ['LM_WRAPPER']
LIBDIR = os.environ['LM_ERDMA_LIBDIR']
QP_TRANSITIONS = {'RST2INIT_QP', 'INIT2RTR_QP', 'RTR2RTS_QP', '2RST_QP'}


def wrapped(args, trace=None, devices=1, profile='fast', env=None):
    e = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
    e.update(env or {})
    cmd = [sys.executable, WRAPPER, '--devices', str(devices), '--profile', profile]
    if trace:
        cmd += ['--trace', trace]
    p = subprocess.run(cmd + ['--'] + args, env=e, capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


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
        self.assertIn('mlx5_0, mlx5_1', out + err)
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_1'], devices=2)
        self.assertEqual(rc, 0, out + err)

    def test_objects_left_alive_make_the_wrapper_fail(self):
        # DEALLOC_PD (0x801) refused once by the emulated firmware: the PD
        # stays alive, the library reports it when the device closes, and
        # the wrapper turns the command's success into exit status 3.
        rc, out, err = wrapped([TOOL, 'probe', '--devargs', 'ibdev=mlx5_0'],
                               env={'MLX5_LM_EMU_FAULT': '0x801:1:0x6'})
        self.assertEqual(rc, 3, out + err)
        self.assertIn('mlx5_0', err)
        self.assertIn('left alive', err)


if __name__ == '__main__':
    unittest.main(verbosity=2)
