#!/usr/bin/env python3
"""dpdk-test-lm serve as a daemon: per-socket devargs, a front end that
restarts (server and client mode), periodic statistics, SIGTERM teardown,
and hostile front ends stopped by serve's own vetting (issue 11)."""
import os
import re
import select
import socket
import struct
import tempfile
import time
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

    def test_hostile_messages_are_vetted_and_a_stalled_payload_times_out(self):
        """The application's part of the security model (doc/reliability.md):
        serve vets every message before DPDK's vhost maps anything, and
        closes a connection whose announced payload never comes."""
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'h.sock')
            srv = serve(TOOL, [sock], 'emu=fast,queues=1', extra=['--msg-timeout', '500'])
            try:
                # A region of 2 MiB over a 1 MiB memfd (vhost-user.rst: SET_MEM_TABLE
                # is u32 nregions, u32 padding, {gpa, size, uaddr, mmap_offset}).
                fd = os.memfd_create('short')
                os.ftruncate(fd, 1 << 20)
                c = vu_connect(sock)
                payload = struct.pack('<II4Q', 1, 0, 0, 2 << 20, 0x10000000, 0)
                socket.send_fds(c, [struct.pack('<III', 5, 1, len(payload)) + payload], [fd])
                os.close(fd)
                srv.expect(r'is past the end of its file', timeout=30)
                self.assertTrue(closed_by_peer(c, 30), 'serve kept the connection')
                # A header announcing 8 bytes of SET_FEATURES, no payload.
                c = vu_connect(sock)
                c.sendall(struct.pack('<III', 2, 1, 8))
                self.assertTrue(closed_by_peer(c, 30), 'serve never gave up on the payload')
                # Still serving: GET_FEATURES answered.
                c = vu_connect(sock)
                c.sendall(struct.pack('<III', 1, 1, 0))
                hdr = recv_exact(c, 12, 30)
                self.assertEqual(struct.unpack('<III', hdr)[0], 1)
                c.close()
            finally:
                rc = srv.stop()
        self.assertEqual(rc, 0, srv.text()[-2000:])
        self.assertIn('clean teardown', srv.text())


def vu_connect(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    return c


def recv_exact(c, n, timeout):
    deadline = time.monotonic() + timeout
    data = b''
    while len(data) < n:
        left = deadline - time.monotonic()
        r, _, _ = select.select([c], [], [], max(left, 0))
        if not r:
            raise TimeoutError(f'{len(data)} of {n} bytes within {timeout}s')
        chunk = c.recv(n - len(data))
        if not chunk:
            raise EOFError('connection closed')
        data += chunk
    return data


def closed_by_peer(c, timeout):
    """True once the peer has closed the connection (anything it sent is skipped)."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([c], [], [], max(deadline - time.monotonic(), 0))
            if r:
                try:
                    if not c.recv(4096):
                        return True
                except ConnectionResetError:
                    return True
        return False
    finally:
        c.close()


if __name__ == '__main__':
    unittest.main(verbosity=2)
