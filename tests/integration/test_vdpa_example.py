#!/usr/bin/env python3
"""The stock dpdk-vdpa example (from dpdk-doc) loads the PMD with EAL -d and
serves testpmd's virtio-user port through the emulated device."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from lmtest import EXAMPLE_SRC, build_vdpa_example, vdpa_example_serves_testpmd

PMD = os.environ.get('LM_PMD', 'build/drivers/vdpa/mlx5_lm/librte_vdpa_mlx5_lm.so')
# The emulator library, which the PMD loads from its own directory for emu=.
EMU = os.environ.get('LM_EMU', 'build/drivers/vdpa/mlx5_lm/librte_vdpa_mlx5_lm_emu.so')


def secure_dir_for_plugins():
    """EAL -d refuses a plugin under any world-writable directory (e.g. /tmp)."""
    for base in (os.path.dirname(os.path.abspath(PMD)), os.path.expanduser('~')):
        path, ok = base, True
        while True:
            if os.stat(path).st_mode & stat.S_IWOTH:
                ok = False
                break
            if path == '/':
                break
            path = os.path.dirname(path)
        if ok:
            return tempfile.mkdtemp(prefix='lm-plugin-', dir=base)
    raise unittest.SkipTest('no directory without world-writable parents for EAL -d')


class VdpaExample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(EXAMPLE_SRC):
            raise unittest.SkipTest(f'{EXAMPLE_SRC} missing (package dpdk-doc)')
        cls.work = tempfile.mkdtemp(prefix='lm-vdpa-ex-')
        cls.example = build_vdpa_example(cls.work)
        cls.plugins = secure_dir_for_plugins()
        cls.pmd = os.path.join(cls.plugins, os.path.basename(PMD))
        shutil.copy(PMD, cls.pmd)
        shutil.copy(EMU, cls.plugins)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)
        shutil.rmtree(cls.plugins, ignore_errors=True)

    def test_example_serves_testpmd(self):
        rx, rc, out = vdpa_example_serves_testpmd(self.example, self.pmd,
                                                  os.path.join(self.work, 'vhost-'),
                                                  f'vx{os.getpid()}')
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, out[-2000:])
        self.assertNotIn('left alive', out)

    def test_example_serves_testpmd_on_ibdev(self):
        """The same through the PMD's rdma back end (ibdev=mlx5_0) on the emulated
        rdma-core: dpdk-vdpa runs under tools/with-emulated-rdma, whose exit
        status is 3 if the device was closed with objects alive."""
        wrapper, libdir = os.environ.get('LM_WRAPPER'), os.environ.get('LM_ERDMA_LIBDIR')
        if not wrapper or not libdir:
            self.fail('LM_WRAPPER / LM_ERDMA_LIBDIR not set (meson sets them)')
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, 'T')
            rx, rc, out = vdpa_example_serves_testpmd(
                self.example, self.pmd, os.path.join(self.work, 'vhost-ib-'),
                f'vi{os.getpid()}', devargs='ibdev=mlx5_0,queues=1',
                wrap=[sys.executable, wrapper, '--profile', 'fast', '--trace', trace, '--'],
                env={'MLX5_LM_ERDMA_LIBDIR': libdir})
            with open(trace) as f:
                ops = [json.loads(line) for line in f]
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, out[-2000:])
        self.assertNotIn('left alive', out)
        # The device was the emulated RDMA device, reached through rdma-core's entry points.
        self.assertEqual({r['dev'] for r in ops}, {'mlx5_0'})
        self.assertIn('DOORBELL', {r['op'] for r in ops})

if __name__ == '__main__':
    unittest.main(verbosity=2)
