"""Helpers for integration tests: processes with bounded waits.

Every wait has a deadline and looks for a condition (a line of output, a
counter reaching a value); nothing sleeps and hopes.
"""
import contextlib
import glob
import os
import re
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))

# A ```sh block of the docs and the marker before it: `<!-- doc-test: NAME -->` (run
# verbatim by a test: test_docs.py's test_block_NAME, or the test the marker names
# after `by`), or `<!-- doc-test: none: REASON -->`.
DOC_BLOCK = re.compile(r'(?:<!-- doc-test: (.*?) -->\n)?```sh\n(.*?)```', re.S)


def doc_blocks(top=TOP):
    """(file relative to top, marker or None, block text) for every sh block of
    README.md and doc/*.md."""
    for path in [os.path.join(top, 'README.md')] + sorted(glob.glob(os.path.join(top, 'doc',
                                                                             '*.md'))):
        with open(path) as f:
            for m in DOC_BLOCK.finditer(f.read()):
                yield os.path.relpath(path, top), m.group(1), m.group(2)


def doc_marker_name(mark):
    """NAME of a marker `NAME` or `NAME by FILE`."""
    return mark.split(' by ', 1)[0]


def doc_block(name, top=TOP):
    """The text of the doc block(s) marked NAME, for a test to run verbatim. A name
    may mark several blocks (the README and the user guide show the same commands):
    they must then be the same text, so that running one runs them all."""
    found = [(p, b) for p, mark, b in doc_blocks(top)
             if mark is not None and doc_marker_name(mark) == name]
    if not found:
        raise AssertionError(f'no doc block marked doc-test: {name}')
    texts = {b for _, b in found}
    if len(texts) != 1:
        raise AssertionError(f'the blocks marked doc-test: {name} differ: ' +
                             ', '.join(p for p, _ in found))
    return texts.pop()


@contextlib.contextmanager
def run_dir_lock(timeout=900.0):
    """Held while a test uses the user guide's /run/mlx5-lm (its default control socket
    and its NICs' sockets): the tests of two builds may run at once (.ci/run runs the
    sanitizer builds side by side), and the second would find the first's service there
    and skip. Bounded: a holder that never lets go fails the waiter, naming the lock."""
    import fcntl
    path = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'mlx5-lm-run-dir.lock')
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f'{path}: held by another test for {timeout:.0f} s')
                time.sleep(0.1)  # polls the lock; the deadline bounds it
        yield
    finally:
        os.close(fd)


def socket_in_use(path):
    """True when a process answers on the unix socket path; a stale one is removed
    (a doc block's wait for its socket would pass on it at once)."""
    if not os.path.exists(path):
        return False
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(path)
        return True
    except OSError:
        os.unlink(path)
        return False
    finally:
        probe.close()


def world_writable_parent(path):
    """Whether path or a directory above it is writable by anyone (where a root
    process must not run or install what is there)."""
    path = os.path.abspath(path)
    while True:
        if os.stat(path).st_mode & stat.S_IWOTH:
            return True
        if path == '/':
            return False
        path = os.path.dirname(path)


@contextlib.contextmanager
def stopped_after(test, proc, tail=3000):
    """The with-block, then proc (a Proc) stopped whatever the block did; once the
    block passed, test asserts proc exited 0 (the last tail characters of its
    output as the message)."""
    try:
        yield proc
    finally:
        rc = proc.stop()
    test.assertEqual(rc, 0, proc.text()[-tail:])


def testpmd_traffic(sock, prefix, frames, timeout=60, **testpmd_args):
    """testpmd (a virtio-user port on sock, Testpmd's other arguments as given) sends
    its first burst and forwards until it has received frames within timeout, then
    quits; returns its port's (rx, tx) packets."""
    pmd = Testpmd(sock, prefix, **testpmd_args)
    try:
        pmd.cmd('start tx_first')
        rx, tx = pmd.wait_rx(frames, timeout=timeout)
        pmd.cmd('stop')
    finally:
        pmd.quit()
    return rx, tx


def run_example(ex, ready_timeout=60, during=None):
    """A dpdk-vdpa example (Proc ex, started with stdin) once it is ready: during()
    if given, then 'q'; the example is killed whatever happens. Returns (what
    during returned, the example's exit status)."""
    try:
        ex.expect(r"enter 'q' to quit", timeout=ready_timeout)
        got = during() if during else None
        ex.send('q')
        rc = ex.stop(sig=None, timeout=60)
    finally:
        ex.kill()
    return got, rc


def testpmd_through_example(ex, iface, prefix, frames=1000, ready_timeout=300):
    """Frames testpmd got back through a dpdk-vdpa example (Proc ex, started with
    stdin) serving iface; quits the example and returns (frames, its exit status)."""
    (rx, _), rc = run_example(ex, ready_timeout,
                              lambda: testpmd_traffic(iface, prefix, frames,
                                                      queues=1, queue_size=256))
    return rx, rc


def assert_stage_migrated_clean(test, s, bad_packets=False):
    """A stage s of migrate --json moved frames, none lost or duplicated (nor bad,
    where the caller's stages count them), with a complete dirty log and no device
    object left."""
    test.assertGreater(s['frames'], 0, s)
    test.assertEqual(s['lost_packets'], 0, s)
    test.assertEqual(s['duplicated_packets'], 0, s)
    if bad_packets:
        test.assertEqual(s['bad_packets'], 0, s)
    test.assertTrue(s['dirty_logged'], s)
    test.assertGreater(s['dirty_pages_checked'], 0, s)
    test.assertEqual(s['dirty_pages_missing'], 0, s)
    test.assertEqual(s['leaked_objects'], 0, s)


def vu_connect(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    return c


def vu_send_region_past_its_file(sock):
    """A hostile front end's SET_MEM_TABLE on a new connection to sock: a region of
    2 MiB over a 1 MiB memfd (vhost-user.rst: SET_MEM_TABLE is u32 nregions, u32
    padding, {gpa, size, uaddr, mmap_offset}). The connection, for the caller to see
    it closed."""
    fd = os.memfd_create('short')
    try:
        os.ftruncate(fd, 1 << 20)
        c = vu_connect(sock)
        payload = struct.pack('<II4Q', 1, 0, 0, 2 << 20, 0x10000000, 0)
        socket.send_fds(c, [struct.pack('<III', 5, 1, len(payload)) + payload], [fd])
    finally:
        os.close(fd)
    return c


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


class Proc:
    """A child process whose combined output is read line by line."""

    def __init__(self, args, env=None, name=None, stdin=False):
        e = dict(os.environ)
        e.update(env or {})
        self.name = name or os.path.basename(args[0])
        self.args = args
        # Programs block-buffer stdout on a pipe: line-buffer it so that
        # what we wait for arrives when it is printed.
        self.p = subprocess.Popen(['stdbuf', '-oL'] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  env=e, bufsize=0)
        self.out = b''
        self.pos = 0

    def _read(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], max(timeout, 0))
        if not r:
            return False
        chunk = os.read(self.p.stdout.fileno(), 65536)
        if not chunk:
            return None
        self.out += chunk
        return True

    def expect(self, pattern, timeout=30.0):
        """Wait for pattern in output not consumed yet; return the match."""
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f'{self.name}: no {pattern!r} within {timeout}s; '
                                   f'output:\n{self.text()[-3000:]}')
            if self._read(min(left, 0.5)) is None:
                # EOF: one last look, then fail.
                m = rx.search(self.out, self.pos)
                if m:
                    self.pos = m.end()
                    return m
                raise EOFError(f'{self.name} exited ({self.p.poll()}) before {pattern!r}; '
                               f'output:\n{self.text()[-3000:]}')

    def send(self, line):
        self.p.stdin.write((line + '\n').encode())
        self.p.stdin.flush()

    def text(self):
        return self.out.decode(errors='replace')

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        """Signal the process and collect the rest of its output and exit status."""
        if sig is not None and self.p.poll() is None:
            self.p.send_signal(sig)
        deadline = time.monotonic() + timeout
        while self.p.poll() is None or self._read(0):
            if time.monotonic() > deadline:
                self.p.kill()
                self.p.wait()
                raise TimeoutError(f'{self.name} did not exit within {timeout}s after {sig}')
            self._read(0.2)
        while self._read(0):
            pass
        return self.p.returncode

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Testpmd(Proc):
    """dpdk-testpmd in interactive mode with a virtio-user port."""

    PROMPT = r'testpmd> '

    def __init__(self, socket_path, prefix, queues=1, queue_size=256, packed=False,
                 extra_vdev=''):
        mbufs = max(8192, 4 * queues * queue_size * 2)
        vdev = (f'net_virtio_user0,path={socket_path},queues={queues},'
                f'queue_size={queue_size}' + (',packed_vq=1' if packed else '') + extra_vdev)
        # (testpmd's command line writes its prompt directly while printf
        # output is buffered: the line buffering of Proc keeps them in order.)
        args = ['dpdk-testpmd', '--no-huge', '-m', '1024', '--no-shconf', '--no-pci',
                f'--file-prefix={prefix}', '-l', '0-1', '--vdev', vdev,
                '--log-level=lib.eal:warning', '--', '-i', f'--rxq={queues}', f'--txq={queues}',
                f'--rxd={queue_size}', f'--txd={queue_size}', f'--total-num-mbufs={mbufs}',
                '--forward-mode=io', '--burst=32']
        super().__init__(args, name='testpmd', stdin=True)
        self.expect(self.PROMPT, timeout=60)

    def cmd(self, line, timeout=30.0):
        self.send(line)
        m = self.expect(r'([\s\S]*?)' + self.PROMPT, timeout=timeout)
        return m.group(1).decode(errors='replace')

    def port_stats(self):
        out = self.cmd('show port stats 0')
        rx = int(re.search(r'RX-packets:\s+(\d+)', out).group(1))
        tx = int(re.search(r'TX-packets:\s+(\d+)', out).group(1))
        return rx, tx

    def wait_rx(self, n, timeout=30.0):
        """Poll port stats until n packets were received, within timeout."""
        deadline = time.monotonic() + timeout
        rx = tx = 0
        while time.monotonic() < deadline:
            rx, tx = self.port_stats()
            if rx >= n:
                return rx, tx
            # Each poll is a testpmd round trip; the deadline bounds the loop.
        raise TimeoutError(f'testpmd received {rx} packets (sent {tx}), wanted {n}')

    def quit(self):
        self.send('quit')
        return self.stop(sig=None, timeout=30)


def serve(tool, sockets, devargs, extra=(), wrap=(), env=None):
    """dpdk-test-lm serve, ready; wrap: a command it runs under (e.g.
    tools/with-emulated-rdma ... -- for devargs ibdev=mlx5_0)."""
    args = list(wrap) + [tool, 'serve', '--devargs', devargs]
    for s in sockets:
        args += ['--socket', s]
    p = Proc(args + list(extra), env=env, name='serve')
    p.expect(r'serve: ready', timeout=60)
    return p


EXAMPLE_SRC = '/usr/share/dpdk/examples/vdpa'


BUILD_EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools',
                             'build-vdpa-example.sh')


def build_vdpa_example(workdir):
    """Build DPDK's stock dpdk-vdpa example (package dpdk-doc) in workdir with the
    project's tool, as a user does; its path."""
    r = subprocess.run([BUILD_EXAMPLE, workdir], check=True, capture_output=True, text=True,
                       timeout=300)
    return r.stdout.strip().splitlines()[-1]


def vdpa_example_serves_testpmd(example, plugin, iface, prefix, frames=1000,
                                devargs='emu=fast,queues=1', wrap=(), env=None):
    """dpdk-vdpa loads the PMD with EAL -d <plugin> (a file or a directory) and
    serves testpmd on <iface>0; returns (frames testpmd received, exit status,
    dpdk-vdpa's output). wrap: a command dpdk-vdpa runs under (e.g.
    tools/with-emulated-rdma ... -- for devargs ibdev=mlx5_0)."""
    ex = Proc(list(wrap) + [example, '--no-huge', '-m', '512', '--no-shconf', '--no-pci',
                            f'--file-prefix={prefix}', '-l', '0', '-d', plugin,
                            '--vdev', 'vdpa_mlx5_lm0,' + devargs,
                            '--log-level=lib.eal:warning', '--', '--iface', iface],
              env=env, name='dpdk-vdpa', stdin=True)
    rx, rc = testpmd_through_example(ex, iface + '0', f'tp{prefix}', frames, ready_timeout=60)
    return rx, rc, ex.text()


if __name__ == '__main__':
    # `python3 lmtest.py doc_block NAME`: print the block, for scripts (.ci/run) that
    # run a documented command verbatim.
    if len(sys.argv) != 3 or sys.argv[1] != 'doc_block':
        sys.exit('usage: lmtest.py doc_block NAME')
    sys.stdout.write(doc_block(sys.argv[2]))
