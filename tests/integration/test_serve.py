#!/usr/bin/env python3
"""dpdk-test-lm serve as a daemon: per-socket devargs, a front end that
restarts (server and client mode), periodic statistics, SIGTERM teardown."""
import os
import re
import tempfile
import unittest

from lmtest import Testpmd, serve

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')


def traffic(sock, prefix, n=500, queues=1, server=False):
    pmd = Testpmd(sock, prefix, queues=queues, queue_size=256,
                  extra_vdev=',server=1' if server else '')
    try:
        pmd.cmd('start tx_first')
        rx, _ = pmd.wait_rx(n, timeout=60)
        pmd.cmd('stop')
    finally:
        pmd.quit()
    return rx


class ServeDaemon(unittest.TestCase):
    def test_per_socket_devargs_and_front_end_restarts(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, 'a.sock'), os.path.join(d, 'b.sock')
            srv = serve(TOOL, [a, b], 'emu=fast,queues=1',
                        extra=['--devargs', 'emu=fast,queues=2', '--stats', '1'])
            try:
                # The second device got its own devargs: 2 queue pairs.
                m = srv.expect(r'vdpa_mlx5_lm1 \(' + re.escape(b) +
                               r'\):\n([\s\S]*?)serve: end of statistics', timeout=30)
                self.assertRegex(m.group(1).decode(), r'rx  1 ')
                for i in range(2):  # the same front end comes back: served again
                    self.assertGreaterEqual(traffic(a, f'tpa{os.getpid()}{i}'), 500)
                    srv.expect(r'front end gone from ' + re.escape(a), timeout=30)
                self.assertGreaterEqual(traffic(b, f'tpb{os.getpid()}', queues=2), 500)
            finally:
                rc = srv.stop()
        self.assertEqual(rc, 0, srv.text()[-2000:])
        self.assertIn('clean teardown', srv.text())

    def test_client_mode_reconnects_to_a_restarted_front_end(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'c.sock')
            srv = serve(TOOL, [sock], 'emu=fast,queues=1', extra=['--client'])
            try:
                for i in range(2):  # testpmd is the server; serve connects back each time
                    self.assertGreaterEqual(traffic(sock, f'tpc{os.getpid()}{i}',
                                                    server=True), 500)
                    srv.expect(r'front end gone', timeout=30)
            finally:
                rc = srv.stop()
        self.assertEqual(rc, 0, srv.text()[-2000:])


if __name__ == '__main__':
    unittest.main(verbosity=2)
