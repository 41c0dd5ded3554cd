#!/usr/bin/env python3
"""Valgrind memcheck over a serve lifecycle: probe, a testpmd front end
connecting, traffic through the emulated device, disconnect, SIGTERM and
teardown. Any memcheck error or definitely-lost block fails the test."""
import os
import re
import shutil
import tempfile
import unittest

from lmtest import Proc, testpmd_traffic

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')


@unittest.skipUnless(shutil.which('valgrind'), 'valgrind not installed')
class ServeUnderValgrind(unittest.TestCase):
    def test_serve_lifecycle_is_memcheck_clean(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            srv = Proc(['valgrind', '--error-exitcode=99', '--leak-check=full',
                        '--errors-for-leak-kinds=definite', TOOL, 'serve', '--socket', sock,
                        '--devargs', 'emu=fast,queues=1',
                        '--eal', '--log-level=lib.vhost.config:warning'], name='serve')
            try:
                srv.expect(r'serve: ready', timeout=180)
                rx, _ = testpmd_traffic(sock, f'tpvg{os.getpid()}', 300, timeout=120,
                                        queues=1, queue_size=256)
                srv.expect(r'front end gone', timeout=120)
            finally:
                rc = srv.stop(timeout=180)
        out = srv.text()
        self.assertGreaterEqual(rx, 300)
        self.assertEqual(rc, 0, out[-4000:])
        self.assertRegex(out, r'ERROR SUMMARY: 0 errors')
        self.assertRegex(out, r'definitely lost: 0 bytes|All heap blocks were freed')
        self.assertIn('clean teardown', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
