#!/usr/bin/env python3
"""dpdk-test-lm serve as a daemon: per-socket devargs, a front end that
restarts (server and client mode), periodic statistics, SIGTERM teardown,
and hostile front ends stopped by serve's own vetting."""
import contextlib
import os
import re
import select
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from lmtest import (closed_by_peer, serve, stopped_after, testpmd_traffic, vu_connect,
                    vu_send_region_past_its_file)

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')


def traffic(sock, prefix, n=500, queues=1, server=False):
    rx, _ = testpmd_traffic(sock, prefix, n, queues=queues, queue_size=256,
                            extra_vdev=',server=1' if server else '')
    return rx


@contextlib.contextmanager
def serving(test, socks, devargs='emu=fast,queues=1', **kw):
    """serve on socks for the with-block, then SIGTERM: test asserts it exited 0
    (after the block's own failure, if any, which is then the one reported)."""
    with stopped_after(test, serve(TOOL, socks, devargs, **kw), tail=2000) as srv:
        yield srv


# drivers/vdpa/mlx5/mlx5_vdpa.c (DPDK 22.11), mlx5_vdpa_stats_names.
UPSTREAM_STATS = ['received_descriptors', 'completed_descriptors', 'bad descriptor errors',
                  'exceed max chain', 'invalid buffer', 'completion errors']


def stats_of(srv, dev, sock):
    """The next --stats table of dev: (names, {(rx|tx, q): [values]})."""
    m = srv.expect(re.escape(dev) + r' \(' + re.escape(sock) +
                   r'\):\n(.*)\n([\s\S]*?)serve: end of statistics', timeout=30)
    # Names have single spaces; columns are two or more spaces apart.
    names = re.split(r'\s{2,}', m.group(1).decode().strip())[1:]
    rows = {}
    for line in m.group(2).decode().splitlines():
        s = line.split()
        if s[:1] not in (['rx'], ['tx']):
            break  # the next device's table
        rows[(s[0], s[1])] = [int(v) for v in s[2:]]
    return names, rows


def threads(pid):
    """{tid: (name, CPUs it may run on)} of process pid."""
    out = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/comm') as f:
                out[int(tid)] = (f.read().strip(), os.sched_getaffinity(int(tid)))
        except (FileNotFoundError, ProcessLookupError):
            pass  # ended meanwhile
    return out


class ServeCpus(unittest.TestCase):
    """serve has no data-plane lcore (the device moves the packets): by default
    it runs on every CPU it was given, not all on the first one as EAL's
    default lcore pinning made it; with lcores the user chose, the
    PMD's threads keep off them (DPDK control threads)."""

    def setUp(self):
        self.cpus = os.sched_getaffinity(0)
        if len(self.cpus) < 2:
            self.skipTest('one CPU: nothing to spread')

    def run_serve(self, extra):
        with tempfile.TemporaryDirectory() as d:
            srv = serve(TOOL, [os.path.join(d, 'a.sock')], 'emu=fast,queues=2', extra=extra)
            try:
                return threads(srv.p.pid)
            finally:
                self.assertEqual(srv.stop(), 0)

    def test_every_thread_may_use_every_cpu_given(self):
        ts = self.run_serve([])
        self.assertTrue(any(n.startswith('mlx5-lm-') for n, _ in ts.values()), ts)
        for tid, (name, cpus) in ts.items():
            self.assertEqual(cpus, self.cpus, f'thread {tid} ({name})')

    def test_driver_threads_keep_off_the_users_lcores(self):
        first = min(self.cpus)
        ts = self.run_serve(['--eal', f'-l {first}'])
        mine = {tid: c for tid, (n, c) in ts.items() if n.startswith('mlx5-lm-')}
        self.assertTrue(mine, ts)
        for tid, cpus in mine.items():
            self.assertNotIn(first, cpus, f'thread {tid} ({ts[tid][0]})')


class ServeDaemon(unittest.TestCase):
    def test_per_socket_devargs_and_front_end_restarts(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, 'a.sock'), os.path.join(d, 'b.sock')
            with serving(self, [a, b], 'emu=fast,queues=1',
                         extra=['--devargs', 'emu=fast,queues=2', '--stats', '1']) as srv:
                # The second device got its own devargs: 2 queue pairs.
                m = srv.expect(r'vdpa_mlx5_lm1 \(' + re.escape(b) +
                               r'\):\n([\s\S]*?)serve: end of statistics', timeout=30)
                self.assertRegex(m.group(1).decode(), r'rx  1 ')
                received = 0
                for i in range(2):  # the same front end comes back: served again
                    rx = traffic(a, f'tpa{os.getpid()}{i}')
                    self.assertGreaterEqual(rx, 500)
                    received += rx
                    srv.expect(r'front end gone from ' + re.escape(a), timeout=30)
                # DPDK vdpa/mlx5's counter names, in its order (tools read them by id),
                # and counts that survive the front end's reconnect: the device's RX
                # queue completed at least the frames testpmd received in both runs.
                names, rows = stats_of(srv, 'vdpa_mlx5_lm0', a)
                self.assertEqual(names, UPSTREAM_STATS)
                self.assertGreaterEqual(rows[('rx', '0')][1], received, rows)
                self.assertGreaterEqual(traffic(b, f'tpb{os.getpid()}', queues=2), 500)
        self.assertIn('clean teardown', srv.text())
        # vhost's per-message info lines are off by default: serve's own lines stand out.
        self.assertNotIn('VHOST_CONFIG', srv.text())

    def test_client_mode_reconnects_to_a_restarted_front_end(self):
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'c.sock')
            with serving(self, [sock], 'emu=fast,queues=1', extra=['--client']) as srv:
                for i in range(2):  # testpmd is the server; serve connects back each time
                    self.assertGreaterEqual(traffic(sock, f'tpc{os.getpid()}{i}',
                                                    server=True), 500)
                    srv.expect(r'front end gone', timeout=30)

    def test_hostile_messages_are_vetted_and_a_stalled_payload_times_out(self):
        """The application's part of the security model (doc/reliability.md):
        serve vets every message before DPDK's vhost maps anything, and
        closes a connection whose announced payload never comes."""
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'h.sock')
            with serving(self, [sock], 'emu=fast,queues=1', extra=['--msg-timeout', '500']) as srv:
                c = vu_send_region_past_its_file(sock)
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
                # vhost let go of all three connections before serve stops: its
                # unregister then closes none vhost may still be replying on.
                for _ in range(3):
                    srv.expect(r'serve: front end connection closed on', timeout=30)
        self.assertIn('clean teardown', srv.text())


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


def serve_fails(path):
    """serve on path, expected to refuse at once: (exit status, non-empty output lines)."""
    p = subprocess.run([TOOL, 'serve', '--socket', path, '--devargs', 'emu=fast'],
                       capture_output=True, text=True, timeout=60)
    lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
    return p.returncode, lines


class SocketPaths(unittest.TestCase):
    """serve never removes a file it did not create, and says why it cannot serve."""

    def assert_refused(self, path, why):
        """serve on path exits 1 at once with one line, which says why; that line."""
        rc, lines = serve_fails(path)
        self.assertEqual(rc, 1, lines)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn(why, lines[0])
        return lines[0]

    def test_regular_file_is_left_alone(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'notasocket')
            with open(path, 'w') as f:
                f.write('keep me')
            self.assert_refused(path, 'exists and is not a socket')
            with open(path) as f:
                self.assertEqual(f.read(), 'keep me')

    def test_live_server_socket_is_not_taken_over(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'live.sock')
            with serving(self, [path], 'emu=fast,queues=1'):
                self.assert_refused(path, 'served by another process')
                # The first server's socket is still there and still answers.
                self.assertGreaterEqual(traffic(path, f'tpl{os.getpid()}', n=100), 100)

    def test_stale_socket_is_replaced(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'stale.sock')
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)  # bound, never listening, then gone: what a killed server leaves
            s.close()
            with serving(self, [path], 'emu=fast,queues=1') as srv:
                self.assertIn('removed stale socket', srv.text())
                self.assertGreaterEqual(traffic(path, f'tps{os.getpid()}', n=100), 100)

    def test_missing_directory_is_one_line_with_the_fix(self):
        with tempfile.TemporaryDirectory() as d:
            line = self.assert_refused(os.path.join(d, 'nodir', 'x.sock'), 'does not exist')
            self.assertIn('mkdir -p', line)


class Options(unittest.TestCase):
    """Options that name nothing, twice the same, or half a number are usage errors."""

    def usage(self, *args):
        p = subprocess.run([TOOL, 'serve'] + list(args), capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout + p.stderr

    def test_an_empty_socket_path_is_a_usage_error(self):
        # It printed 'ready' and listened on no path.
        rc, out = self.usage('--socket', '', '--devargs', 'emu=fast')
        self.assertEqual(rc, 2, out)
        self.assertIn('serve: --socket: the path is empty', out)
        self.assertNotIn('ready', out)

    def test_one_socket_given_twice_is_a_usage_error(self):
        # The second was checked against the first, listening: "another process".
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'x.sock')
            rc, out = self.usage('--socket', path, '--socket', path, '--devargs', 'emu=fast')
            self.assertEqual(rc, 2, out)
            self.assertIn(f'serve: --socket {path} given twice', out)
            self.assertNotIn('another process', out)
            self.assertFalse(os.path.lexists(path))

    def test_stats_takes_a_whole_number(self):
        with tempfile.TemporaryDirectory() as d:
            for bad in ('5x', '', '0', '1e3', '-1', '86401'):
                rc, out = self.usage('--socket', os.path.join(d, 'x.sock'), '--devargs',
                                     'emu=fast', '--stats', bad)
                self.assertEqual(rc, 2, (bad, out))
                self.assertIn(f"serve: --stats: '{bad}' is not a number in [1, 86400]", out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
