#!/usr/bin/env python3
"""The commands of the documentation, run as written.

Every ```sh block of README.md and doc/*.md is preceded by a marker:
`<!-- doc-test: NAME -->` (run here, verbatim, by the test named after it) or
`<!-- doc-test: none: REASON -->` (what covers it instead). A block without a
marker fails the first test, so a new command cannot reach the docs untested
without saying so.
"""
import glob
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import unittest

from lmtest import Proc, Testpmd

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
TOOL = os.environ.get('TEST_LM', os.path.join(TOP, 'build/app/test-lm/dpdk-test-lm'))
BLOCK = re.compile(r'(?:<!-- doc-test: (.*?) -->\n)?```sh\n(.*?)```', re.S)


def doc_blocks():
    """(file, marker or None, block text) for every sh block of the docs."""
    for path in [os.path.join(TOP, 'README.md')] + sorted(glob.glob(os.path.join(TOP, 'doc',
                                                                              '*.md'))):
        with open(path) as f:
            for m in BLOCK.finditer(f.read()):
                yield os.path.relpath(path, TOP), m.group(1), m.group(2)


def blocks_named(name):
    found = [(p, b) for p, mark, b in doc_blocks() if mark == name]
    if not found:
        raise AssertionError(f'no doc block marked doc-test: {name}')
    return found


def world_writable_parent(path):
    while True:
        if os.stat(path).st_mode & stat.S_IWOTH:
            return True
        if path == '/':
            return False
        path = os.path.dirname(path)


class Docs(unittest.TestCase):
    def test_every_command_block_is_tested_or_says_what_covers_it(self):
        for path, mark, block in doc_blocks():
            self.assertIsNotNone(mark, f'{path}: a sh block without a doc-test marker:\n{block}')
            if mark.startswith('none'):
                self.assertRegex(mark, r'^none: \S', f'{path}: say what covers it')
            else:
                self.assertTrue(hasattr(self, 'test_block_' + mark.replace('-', '_')),
                                f'{path}: no test for doc-test: {mark}')

    def test_block_trace_one_liner(self):
        # The blocks read trace.jsonl: a trace of a probe, made in a scratch directory.
        for path, block in blocks_named('trace-one-liner'):
            with tempfile.TemporaryDirectory() as d:
                subprocess.run([TOOL, 'probe', '--devargs', 'emu=fast,devx_trace=trace.jsonl'],
                               cwd=d, check=True, capture_output=True, timeout=60)
                r = subprocess.run(['bash', '-e', '-c', block], cwd=d, capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(r.returncode, 0, f'{path}:\n{r.stdout}{r.stderr}')
                self.assertTrue(r.stdout.strip(), f'{path}: printed nothing')

    def probe_on_emulated_rdma(self, name, trace, dev):
        """Run the block from the top of the source tree with its trace in a scratch
        TMPDIR: a probe on the rdma back end whose trace names RDMA device dev."""
        (path, block), = blocks_named(name)
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TMPDIR=d)
            env.pop('LD_LIBRARY_PATH', None)
            r = subprocess.run(['bash', '-e', '-c', block], cwd=TOP, env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, f'{path}:\n{r.stdout}{r.stderr}')
            self.assertIn('back end: rdma', r.stdout)
            with open(os.path.join(d, trace)) as f:
                self.assertTrue(f.readline().startswith('{"dev":"%s"' % dev))

    def test_block_emulated_rdma_probe(self):
        self.probe_on_emulated_rdma('emulated-rdma-probe', 'devx.jsonl', 'mlx5_0')

    def test_block_hardware_rehearsal(self):
        # pci=0000:5e:01.0 is the second emulated function: mlx5_1.
        self.probe_on_emulated_rdma('hardware-rehearsal', 't.jsonl', 'mlx5_1')

    def test_block_quick_start_traffic(self):
        (path, block), = blocks_named('quick-start-traffic')
        sock = '/tmp/vhost0.sock'  # the socket the block names
        if os.path.exists(sock):
            probe = socket.socket(socket.AF_UNIX)
            try:
                probe.connect(sock)
                self.skipTest(f'{sock} is served by another process')
            except OSError:
                os.unlink(sock)  # stale: the block's wait would pass on it at once
            finally:
                probe.close()
        run = Proc(['bash', '-e', '-c', 'cd "$1"\n' + block, 'doc', TOP], name='quick-start')
        try:
            # The person at the keyboard: Ctrl-C to testpmd once frames came back.
            run.expect(r'RX-packets: +[1-9]', timeout=120)
            pids = subprocess.run(['pgrep', '-P', str(run.p.pid), '-x', 'dpdk-testpmd'],
                                  capture_output=True, text=True).stdout.split()
            self.assertEqual(len(pids), 1, pids)
            os.kill(int(pids[0]), signal.SIGINT)
            run.expect(r'serve: clean teardown, every device object destroyed', timeout=60)
            rc = run.stop(sig=None, timeout=60)
        finally:
            run.kill()
            shutil.rmtree('/var/run/dpdk/tp', ignore_errors=True)
        self.assertEqual(rc, 0, run.text()[-3000:])
        self.assertRegex(run.text(), r'max_num_virtio_queues\s+256')

    def test_block_quick_start_benchmarks(self):
        (path, block), = blocks_named('quick-start-benchmarks')
        r = subprocess.run(['bash', '-e', '-c', block], cwd=TOP, capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(r.returncode, 0, f'{path}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}')
        self.assertRegex(r.stdout, r'verified')
        self.assertRegex(r.stdout, r'\| all +\|')

    def test_block_dpdk_vdpa(self):
        (path, block), = blocks_named('dpdk-vdpa')
        if world_writable_parent(TOP):
            self.skipTest(f'{TOP} has a world-writable parent: EAL -d refuses plugins there')
        iface = '/tmp/vdpa-0'  # what the documented --iface /tmp/vdpa- serves
        if os.path.exists(iface):
            self.skipTest(f'{iface} is in use')
        # From the top of the source tree, as the user guide's commands are written.
        ex = Proc(['bash', '-e', '-c', 'cd "$1"\n' + block, 'doc', TOP], name='dpdk-vdpa',
                  stdin=True)
        try:
            ex.expect(r"enter 'q' to quit", timeout=300)
            pmd = Testpmd(iface, f'tpd{os.getpid()}', queues=1, queue_size=256)
            try:
                pmd.cmd('start tx_first')
                rx, _ = pmd.wait_rx(1000, timeout=60)
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
