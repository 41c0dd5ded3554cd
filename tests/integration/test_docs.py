#!/usr/bin/env python3
"""The commands of the documentation, run as written.

Every ```sh block of README.md and doc/*.md is preceded by a marker:
`<!-- doc-test: NAME -->` (run here, verbatim, by the test named after it),
`<!-- doc-test: NAME by FILE -->` (run verbatim by FILE, which takes the text from
the doc with lmtest.doc_block('NAME'), so that the doc cannot drift from what runs) or
`<!-- doc-test: none: REASON -->` (what covers it instead). A block without a
marker fails the first test, so a new command cannot reach the docs untested
without saying so.

Class Docs is meson's `docs`; class MainJob, the README's 3-minute main job, is
`docs_main_job` (suite main-job: run by tools/test.sh, not by the sanitizer build).
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from lmtest import (EXAMPLE_SRC, TOP, Proc, doc_block, doc_blocks,
                    doc_marker_name, socket_in_use,
                    testpmd_through_example, world_writable_parent)

TOOL = os.environ.get('TEST_LM', os.path.join(TOP, 'build/app/test-lm/dpdk-test-lm'))
# DPDK's own vdpa/mlx5 (Debian's librte-vdpa-mlx5-23), the peer of emulated-rdma.md.
PEER = '/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_vdpa_mlx5.so.23'


def blocks_named(name):
    found = [(p, b) for p, mark, b in doc_blocks() if mark == name]
    if not found:
        raise AssertionError(f'no doc block marked doc-test: {name}')
    return found


class Docs(unittest.TestCase):
    def test_every_command_block_is_tested_or_says_what_covers_it(self):
        for path, mark, block in doc_blocks():
            self.assertIsNotNone(mark, f'{path}: a sh block without a doc-test marker:\n{block}')
            if mark.startswith('none'):
                self.assertRegex(mark, r'^none: \S', f'{path}: say what covers it')
            elif ' by ' in mark:
                # Claimed by another test: it must take this block from the doc by name.
                name, by = mark.split(' by ', 1)
                self.assertRegex(name, r'^[a-z0-9-]+$', f'{path}: doc-test: {mark}')
                f = os.path.join(TOP, by)
                self.assertTrue(os.path.isfile(f), f'{path}: doc-test: {mark}: no {by}')
                with open(f) as src:
                    self.assertRegex(src.read(), r'doc_block\W+' + re.escape(name) + r'\b',
                                     f'{path}: {by} does not run doc block {name}')
                doc_block(name)  # blocks sharing a name are the same text
            else:
                self.assertTrue(hasattr(self, 'test_block_' + mark.replace('-', '_')) or
                                hasattr(MainJob, 'test_block_' + mark.replace('-', '_')),
                                f'{path}: no test for doc-test: {mark}')

    def test_every_relative_link_and_its_anchor_exist(self):
        # A page split or a heading renamed must not leave a link pointing at nothing,
        # and nothing of the docs may point outside the repository (../ above TOP).
        def slug(heading):
            h = re.sub(r'[^\w\- ]', '', heading.strip().lower())
            return h.replace(' ', '-')

        def anchors(path):
            with open(path) as f:
                text = re.sub(r'```.*?```', '', f.read(), flags=re.S)
            return {slug(m) for m in re.findall(r'^#+ (.*)$', text, flags=re.M)}

        pages = [os.path.join(TOP, 'README.md')] + sorted(
            glob.glob(os.path.join(TOP, 'doc', '*.md')))
        for page in pages:
            with open(page) as f:
                text = re.sub(r'```.*?```', '', f.read(), flags=re.S)
            for target in re.findall(r'\]\(([^)\s]+)\)', text):
                if re.match(r'[a-z]+:', target):
                    continue
                path, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) \
                    if path else page
                rel = os.path.relpath(page, TOP)
                self.assertTrue(dest.startswith(TOP + os.sep), f'{rel}: {target} is outside the tree')
                self.assertTrue(os.path.exists(dest), f'{rel}: {target}: no such file')
                if anchor and dest.endswith('.md'):
                    self.assertIn(anchor, anchors(dest), f'{rel}: {target}: no such heading')

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
        if socket_in_use(sock):
            self.skipTest(f'{sock} is served by another process')
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
        rx, rc = testpmd_through_example(ex, iface, f'tpd{os.getpid()}')
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, ex.text()[-2000:])
        self.assertNotIn('left alive', ex.text())

    def test_block_emulated_rdma_by_hand(self):
        # The by-hand versions of meson's events_rdma and migrate_rdma, from the top of
        # the source tree (the wrapper's default library directory, build/emu-rdma).
        (path, block), = blocks_named('emulated-rdma-by-hand')
        env = dict(os.environ)
        env.pop('LD_LIBRARY_PATH', None)
        env.pop('LM_BACKEND', None)
        r = subprocess.run(['bash', '-e', '-c', block], cwd=TOP, env=env, capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(r.returncode, 0, f'{path}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}')
        # (An object left alive makes the wrapper exit 3: the block fails.)
        # test_events (cmocka) and migrate's table, the latter's devices on ibdev=.
        self.assertRegex(r.stdout + r.stderr, r'\[  PASSED  \] \d+ test')
        self.assertNotRegex(r.stdout + r.stderr, r'\[  FAILED  \]')
        self.assertRegex(r.stdout, r'\| all +\|')

    def test_block_control_socket(self):
        # The block, as the doc says, in a command under the wrapper while a program (serve
        # on ibdev=mlx5_0) holds the device open, so that its control socket exists.
        (path, block), = blocks_named('control-socket')
        script = ('"$1" serve --socket "$2" --devargs ibdev=mlx5_0,queues=1 &\n'
                  'while [ ! -S "$2" ]; do sleep 0.1; done  # serve probed: mlx5_0 is open\n' +
                  block + 'kill %1\nwait %1\n')
        env = dict(os.environ)
        env.pop('LD_LIBRARY_PATH', None)
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(['tools/with-emulated-rdma', '--profile', 'fast', '--',
                                'bash', '-e', '-c', script, 'doc', TOOL,
                                os.path.join(d, 'vhost.sock')],
                               cwd=TOP, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, f'{path}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}')
        # The fault was armed (it stays unused: no front end comes).
        self.assertIn("b'ok'", r.stdout)
        self.assertIn('serve: clean teardown', r.stdout)

    def test_block_peer(self):
        (path, block), = blocks_named('peer')
        if not os.path.exists(PEER):
            self.skipTest(f'{PEER} missing (librte-vdpa-mlx5-23, tools/setup.sh)')
        if os.geteuid() != 0 or shutil.which('unshare') is None:
            self.skipTest('--private-sys needs root and unshare(1)')
        if not os.path.isdir(EXAMPLE_SRC):
            self.skipTest(f'{EXAMPLE_SRC} missing (package dpdk-doc)')
        iface = '/tmp/vhost-peer0'  # what the documented --iface /tmp/vhost-peer serves
        if socket_in_use(iface):
            self.skipTest(f'{iface} is served by another process')
        env = dict(os.environ)
        env.pop('LD_LIBRARY_PATH', None)
        env.pop('MLX5_LM_ERDMA_LIBDIR', None)
        ex = Proc(['bash', '-e', '-c', 'cd "$1"\n' + block, 'doc', TOP], env=env, name='peer',
                  stdin=True)
        rx, rc = testpmd_through_example(ex, iface, f'tpq{os.getpid()}')
        self.assertGreaterEqual(rx, 1000)
        self.assertEqual(rc, 0, ex.text()[-3000:])
        self.assertNotIn('left alive', ex.text())
        self.assertNotIn('not implemented', ex.text())


class MainJob(unittest.TestCase):
    """The README's main job, `./tools/main.sh` (about 3 minutes): meson's docs_main_job."""

    def test_block_main_job(self):
        block = doc_block('main-job')
        r = subprocess.run(['bash', '-e', '-c', block], cwd=TOP, capture_output=True, text=True,
                           timeout=1500)
        self.assertEqual(r.returncode, 0, f'{r.stdout[-3000:]}{r.stderr[-3000:]}')
        # The table of the README: every stage, the model's floor, both files written.
        for stage in ('baseline', 'precreate', 'parallel-mkey', 'deferred-delete', 'all',
                      'prereg'):
            self.assertRegex(r.stdout, r'\| %s +\| +\d' % re.escape(stage), r.stdout)
        self.assertIn('floor (profile cx6dx', r.stdout)
        for f in ('build/migrate-seed-mkey.json', 'build/migrate-seed-mkey.svg'):
            self.assertTrue(os.path.getsize(os.path.join(TOP, f)) > 0, f)


if __name__ == '__main__':
    unittest.main(verbosity=2)
