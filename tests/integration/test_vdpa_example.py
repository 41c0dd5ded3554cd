#!/usr/bin/env python3
"""The stock dpdk-vdpa example (from dpdk-doc) loads the PMD with EAL -d and
serves testpmd's virtio-user port through the emulated device."""
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

from lmtest import Proc, Testpmd

PMD = os.environ.get('LM_PMD', 'build/drivers/vdpa/mlx5_lm/librte_vdpa_mlx5_lm.so')
EXAMPLE_SRC = '/usr/share/dpdk/examples/vdpa'


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
        src = os.path.join(cls.work, 'vdpa')
        shutil.copytree(EXAMPLE_SRC, src)
        subprocess.run(['make', '-s', '-C', src], check=True, capture_output=True, timeout=300)
        cls.example = os.path.join(src, 'build', 'vdpa')
        cls.plugins = secure_dir_for_plugins()
        cls.pmd = os.path.join(cls.plugins, os.path.basename(PMD))
        shutil.copy(PMD, cls.pmd)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)
        shutil.rmtree(cls.plugins, ignore_errors=True)

    def test_example_serves_testpmd(self):
        iface = os.path.join(self.work, 'vhost-')
        ex = Proc([self.example, '--no-huge', '-m', '512', '--no-shconf', '--no-pci',
                   f'--file-prefix=vx{os.getpid()}', '-l', '0', '-d', self.pmd,
                   '--vdev', 'vdpa_mlx5_lm0,emu=fast,queues=1',
                   '--log-level=lib.eal:warning', '--', '--iface', iface],
                  name='dpdk-vdpa', stdin=True)
        try:
            ex.expect(r"enter 'q' to quit", timeout=60)
            pmd = Testpmd(iface + '0', f'tpx{os.getpid()}', queues=1, queue_size=256)
            try:
                pmd.cmd('start tx_first')
                rx, tx = pmd.wait_rx(1000, timeout=60)
                pmd.cmd('stop')
            finally:
                pmd.quit()
            ex.send('q')
            rc = ex.stop(sig=None, timeout=60)
        finally:
            ex.kill()
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, ex.text()[-2000:])
        self.assertNotIn('left alive', ex.text())


if __name__ == '__main__':
    unittest.main(verbosity=2)
