"""End-to-end helpers: a Debian guest under QEMU/TCG over vhost-user to
dpdk-test-lm serve, a host bridge for its traffic, QMP, bounded waits.

Everything this needs is installed or fetched here when missing (apt-get for
host packages, `apt-get download` for the guest kernel, which is extracted and
never installed). Every wait has a deadline and looks for a condition (a line
of output, a QMP state); nothing sleeps and hopes.
"""
import fcntl
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
CACHE = os.environ.get('E2E_CACHE', os.path.join(os.getcwd(), 'e2e-cache'))

# Host packages the suite uses, with the program that shows each is present.
HOST_PACKAGES = {
    'qemu-system-x86': '/usr/bin/qemu-system-x86_64',
    'busybox-static': '/bin/busybox',
    'gcc': '/usr/bin/gcc',
    'libc6-dev': '/usr/lib/x86_64-linux-gnu/libc.a',
    'iproute2': '/sbin/ip',
}
# The guest's drivers: the module names virtio_net needs, loaded in dependency
# order (dependencies come from each module's own `depends=` modinfo).
GUEST_MODULES = ['virtio_pci', 'virtio_net']


class Skip(Exception):
    """A prerequisite cannot be had on this machine: the test exits 77."""


# The service and its CLI as the build leaves them (or as the environment names them).
VHOSTD = os.environ.get('VHOSTD', 'build/app/vhostd/mlx5-lm-vhostd')
CTL = os.environ.get('VHOSTD_CTL', 'build/app/ctl/mlx5-lm-ctl')


class Terminated(Exception):
    pass


def on_sigterm(signum, frame):
    """meson's timeout sends SIGTERM: raised, it unwinds through the cleanups."""
    raise Terminated(f'signal {signum}')


def run_test(name, variant, body):
    """An e2e program's run: body() passes (its RESULT line, 0), skips (SKIP) or fails
    (the traceback, 1)."""
    try:
        body()
    except Skip as e:
        print(f'SKIP: {e}', flush=True)
        return SKIP
    except Exception:
        traceback.print_exc()
        print(f'FAIL: e2e {name}', flush=True)
        return 1
    print(f'E2E RESULT variant={variant} ok', flush=True)
    return 0


def log(msg):
    print(f'[e2e {time.strftime("%H:%M:%S")}] {msg}', flush=True)


def run(args, **kw):
    kw.setdefault('check', True)
    kw.setdefault('stdout', subprocess.PIPE)
    kw.setdefault('stderr', subprocess.STDOUT)
    kw.setdefault('timeout', 600)
    return subprocess.run(args, **kw)


# ---- Host prerequisites --------------------------------------------------------------------

class _Lock:
    """An exclusive lock on a file in the cache: concurrent runs prepare once."""

    def __init__(self, name):
        os.makedirs(CACHE, exist_ok=True)
        self.f = open(os.path.join(CACHE, name + '.lock'), 'w')

    def __enter__(self):
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def _apt_env():
    e = dict(os.environ)
    e['DEBIAN_FRONTEND'] = 'noninteractive'
    return e


def ensure_host_packages():
    """apt-get install what is missing, quietly; idempotent."""
    if os.geteuid() != 0:
        raise Skip('needs root (tap devices, a bridge, apt-get)')
    if not os.path.exists('/dev/net/tun'):
        raise Skip('/dev/net/tun missing (net_tap uplink)')
    missing = [p for p, f in HOST_PACKAGES.items() if not os.path.exists(f)]
    if not missing:
        return
    with _Lock('apt'):
        missing = [p for p, f in HOST_PACKAGES.items() if not os.path.exists(f)]
        if not missing:
            return
        log(f'installing {" ".join(missing)}')
        cmd = ['apt-get', 'install', '-y', '-qq', '--no-install-recommends'] + missing
        r = run(cmd, check=False, env=_apt_env())
        if r.returncode != 0:
            run(['apt-get', 'update', '-qq'], check=False, env=_apt_env())
            r = run(cmd, check=False, env=_apt_env())
        if r.returncode != 0:
            raise Skip(f'cannot install {missing}: {r.stdout.decode(errors="replace")[-800:]}')


def _kernel_package():
    """The linux-image-<ver>-amd64 package apt-cache knows (linux-image-amd64's target)."""
    r = run(['apt-cache', 'depends', 'linux-image-amd64'], check=False)
    m = re.search(rb'Depends:\s*(linux-image-[0-9][\w.+-]*-amd64)\b', r.stdout)
    if m:
        return m.group(1).decode()
    r = run(['apt-cache', 'search', '--names-only', r'^linux-image-[0-9.]+-[0-9]+-amd64$'],
            check=False)
    names = re.findall(rb'^(linux-image-[0-9.]+-([0-9]+)-amd64) ', r.stdout, re.M)
    if not names:
        return None
    return max(names, key=lambda n: int(n[1]))[0].decode()


def ensure_kernel():
    """Guest kernel and its virtio modules under CACHE/kernel-<release>/, fetched
    once per release. Returns (vmlinuz path, [module paths in load order], release)."""
    with _Lock('kernel'):
        cached = [os.path.dirname(d) for d in glob.glob(os.path.join(CACHE, 'kernel-*', 'done'))]
        pkg = _kernel_package()
        if pkg is None and not cached:
            # No package lists yet (a fresh machine): fetch them once.
            run(['apt-get', 'update', '-qq'], check=False, env=_apt_env())
            pkg = _kernel_package()
            if pkg is None:
                raise Skip('apt-cache knows no linux-image-<version>-amd64 package')
        kdir = os.path.join(CACHE, pkg[len('linux-image'):].replace('-', 'kernel-', 1)) \
            if pkg else cached[0]
        if not os.path.exists(os.path.join(kdir, 'done')):
            try:
                _fetch_kernel(pkg, kdir)
            except Skip:
                if not cached:
                    raise
                kdir = cached[0]   # offline: the kernel fetched before will do
                log(f'cannot fetch {pkg}; using {os.path.basename(kdir)}')
            else:
                for old in cached:
                    shutil.rmtree(old, ignore_errors=True)
        release = os.path.basename(kdir)[len('kernel-'):]
        with open(os.path.join(kdir, 'modules.order')) as f:
            mods = [os.path.join(kdir, 'modules', l.strip() + '.ko') for l in f if l.strip()]
        return os.path.join(kdir, 'vmlinuz'), mods, release


def _fetch_kernel(pkg, kdir):
    shutil.rmtree(kdir, ignore_errors=True)
    work = tempfile.mkdtemp(prefix='kdl-', dir=CACHE)
    try:
        log(f'apt-get download {pkg}')
        r = run(['apt-get', 'download', '-q', pkg], cwd=work, check=False, env=_apt_env())
        debs = glob.glob(os.path.join(work, '*.deb'))
        if r.returncode != 0 or not debs:
            run(['apt-get', 'update', '-qq'], check=False, env=_apt_env())
            r = run(['apt-get', 'download', '-q', pkg], cwd=work, check=False, env=_apt_env())
            debs = glob.glob(os.path.join(work, '*.deb'))
        if not debs:
            raise Skip(f'cannot download {pkg}: {r.stdout.decode(errors="replace")[-800:]}')
        x = os.path.join(work, 'x')
        run(['dpkg-deb', '-x', debs[0], x])
        vmlinuz = glob.glob(os.path.join(x, 'boot', 'vmlinuz-*'))
        mroot = glob.glob(os.path.join(x, 'lib', 'modules', '*', 'kernel'))
        if not vmlinuz or not mroot:
            raise Skip(f'{pkg} holds no vmlinuz or modules')
        by_name = {}
        for p in glob.glob(os.path.join(mroot[0], '**', '*.ko*'), recursive=True):
            name = os.path.basename(p).split('.ko')[0].replace('-', '_')
            by_name[name] = p
        order = []

        def want(name):
            if name in order:
                return
            if name not in by_name:
                # Built in (modules.builtin) needs no loading.
                return
            for d in _modinfo_depends(by_name[name]):
                want(d)
            order.append(name)
        for m in GUEST_MODULES:
            if m not in by_name and not _builtin(mroot[0], m):
                raise Skip(f'{pkg} has no module {m}')
            want(m)
        os.makedirs(os.path.join(kdir, 'modules'))
        shutil.copy(vmlinuz[0], os.path.join(kdir, 'vmlinuz'))
        for name in order:
            _copy_module(by_name[name], os.path.join(kdir, 'modules', name + '.ko'))
        with open(os.path.join(kdir, 'modules.order'), 'w') as f:
            f.write(''.join(n + '\n' for n in order))
        with open(os.path.join(kdir, 'done'), 'w') as f:
            f.write(pkg + '\n')
        log(f'guest kernel from {pkg}; modules: {" ".join(order)}')
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _builtin(mroot, name):
    try:
        with open(os.path.join(os.path.dirname(mroot), 'modules.builtin')) as f:
            return any(os.path.basename(l.strip()).split('.ko')[0].replace('-', '_') == name
                       for l in f)
    except OSError:
        return False


def _decompressed(path):
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('.xz'):
        import lzma
        data = lzma.decompress(data)
    elif path.endswith('.gz'):
        data = gzip.decompress(data)
    elif path.endswith('.zst'):
        data = run(['zstd', '-dc', path]).stdout
    return data


def _modinfo_depends(path):
    data = _decompressed(path)
    m = re.search(rb'(?:^|\0)depends=([^\0]*)\0', data)
    return [d for d in m.group(1).decode().split(',') if d] if m else []


def _copy_module(src, dst):
    with open(dst, 'wb') as f:
        f.write(_decompressed(src))


# ---- Guest initrd --------------------------------------------------------------------------

def _cpio_newc(entries):
    """entries: (name, mode, data bytes, rdev major, rdev minor). Returns the archive."""
    out = bytearray()
    ino = 1

    def pad4():
        out.extend(b'\0' * (-len(out) % 4))
    for name, mode, data, major, minor in entries + [('TRAILER!!!', 0, b'', 0, 0)]:
        nb = name.encode() + b'\0'
        hdr = '070701' + ''.join(f'{v:08x}' for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, major, minor, len(nb), 0))
        out.extend(hdr.encode())
        out.extend(nb)
        pad4()
        out.extend(data)
        pad4()
        ino += 1
    return bytes(out)


def build_helper():
    """lm-ethtool: ETHTOOL_[GS]CHANNELS for the guest (busybox has no ethtool)."""
    src = os.path.join(HERE, 'guest', 'lm_ethtool.c')
    with open(src, 'rb') as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    out = os.path.join(CACHE, f'lm-ethtool-{digest}')
    if not os.path.exists(out):
        tmp = out + f'.{os.getpid()}'
        run(['gcc', '-static', '-Os', '-s', '-o', tmp, src])
        os.rename(tmp, out)
    return out


def ensure_initrd(modules, release):
    """Static busybox, the helper, the modules and init: a gzip'd newc cpio."""
    with _Lock('initrd'):
        helper = build_helper()
        init = os.path.join(HERE, 'guest', 'init')
        h = hashlib.sha256()
        for p in [init, helper, '/bin/busybox'] + modules:
            with open(p, 'rb') as f:
                h.update(f.read())
        out = os.path.join(CACHE, f'initrd-{release}-{h.hexdigest()[:12]}.cpio.gz')
        if os.path.exists(out):
            return out

        def rd(p):
            with open(p, 'rb') as f:
                return f.read()
        d, x, r = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
        names = [os.path.basename(m)[:-3] for m in modules]
        entries = [(n, d, b'', 0, 0) for n in ('bin', 'dev', 'proc', 'sys', 'tmp', 'lib',
                                               'lib/modules')]
        entries += [('dev/console', stat.S_IFCHR | 0o600, b'', 5, 1),
                    ('dev/null', stat.S_IFCHR | 0o666, b'', 1, 3),
                    ('init', x, rd(init), 0, 0),
                    ('bin/busybox', x, rd('/bin/busybox'), 0, 0),
                    ('bin/lm-ethtool', x, rd(helper), 0, 0),
                    ('etc', d, b'', 0, 0),
                    ('etc/modules', r, ''.join(n + '\n' for n in names).encode(), 0, 0)]
        entries += [(f'lib/modules/{os.path.basename(m)}', r, rd(m), 0, 0) for m in modules]
        tmp = out + f'.{os.getpid()}'
        with open(tmp, 'wb') as f:
            f.write(gzip.compress(_cpio_newc(entries), 6))
        os.rename(tmp, out)
        for old in glob.glob(os.path.join(CACHE, 'initrd-*.cpio.gz')):
            if old != out:
                os.unlink(old)
        return out


def prepare():
    """Everything the guest needs: (vmlinuz, initrd). Raises Skip."""
    ensure_host_packages()
    vmlinuz, modules, release = ensure_kernel()
    return vmlinuz, ensure_initrd(modules, release)


# ---- Processes with timestamped output -----------------------------------------------------

class Proc:
    """A child whose output is read by a thread into (host time, line) pairs."""

    def __init__(self, args, name, stdin=False, env=None):
        e = dict(os.environ)
        e.update(env or {})
        self.name = name
        self.p = subprocess.Popen(['stdbuf', '-oL'] + list(args), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT,
                                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  env=e, bufsize=0)
        self.lines = []           # (time.monotonic(), str)
        self.watch = []           # processes whose death fails our waits at once
        self.cv = threading.Condition()
        self.eof = False
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _reader(self):
        buf = b''
        fd = self.p.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b''
            now = time.monotonic()
            if not chunk:
                with self.cv:
                    if buf:
                        self.lines.append((now, buf.decode(errors='replace')))
                    self.eof = True
                    self.cv.notify_all()
                return
            buf += chunk
            *full, buf = buf.split(b'\n')
            if full:
                with self.cv:
                    for l in full:
                        self.lines.append((now, l.decode(errors='replace').rstrip('\r')))
                    self.cv.notify_all()

    def mark(self):
        with self.cv:
            return len(self.lines)

    def expect(self, pattern, timeout, since=0):
        """First line at index >= since matching pattern: (index, time, match)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        i = since
        with self.cv:
            while True:
                while i < len(self.lines):
                    m = rx.search(self.lines[i][1])
                    if m:
                        return i, self.lines[i][0], m
                    i += 1
                if self.eof:
                    raise EOFError(f'{self.name} exited ({self.p.poll()}) before '
                                   f'{pattern!r}:\n{self.tail()}')
                for w in self.watch:
                    if w.p.poll() is not None:
                        raise EOFError(f'{w.name} exited ({w.p.returncode}) while {self.name} '
                                       f'waited for {pattern!r}:\n{w.tail()}')
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f'{self.name}: no {pattern!r} within {timeout}s:\n'
                                       f'{self.tail()}')
                # Wakes on output; the short period only re-checks the watched processes.
                self.cv.wait(min(left, 0.5) if self.watch else left)

    def matches(self, pattern, start=0, end=None):
        rx = re.compile(pattern)
        with self.cv:
            sel = self.lines[start:end]
        return [(t, m) for t, l in sel for m in [rx.search(l)] if m]

    def tail(self, n=40):
        with self.cv:
            return '\n'.join(l for _, l in self.lines[-n:])

    def text(self):
        with self.cv:
            return '\n'.join(l for _, l in self.lines)

    def send(self, line):
        self.p.stdin.write((line + '\n').encode())
        self.p.stdin.flush()

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        if sig is not None and self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TimeoutError(f'{self.name} did not exit within {timeout}s after {sig}')
        self.t.join(5)
        return rc

    def kill(self):
        # stdbuf execs the program: the pid is the program's.
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def guest_cmd(vm, cmd, expect, timeout):
    """Run cmd in a guest's shell (its serial console, Proc vm); the match of expect in
    what it prints, or AssertionError on the guest's E2E-ERROR lines."""
    start = vm.mark()
    vm.send(cmd)
    _, _, m = vm.expect(expect + '|E2E-ERROR.*', timeout, since=start)
    if m.group(0).startswith('E2E-ERROR'):
        raise AssertionError(f'{vm.name}: {cmd}: {m.group(0)}')
    return m


# ---- QMP -----------------------------------------------------------------------------------

class QMP:
    def __init__(self, path, timeout=30.0, proc=None):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.s.close()
                if proc is not None and proc.p.poll() is not None:
                    raise EOFError(f'{proc.name} exited ({proc.p.returncode}) before its QMP '
                                   f'socket was up:\n{proc.tail()}')
                if time.monotonic() > deadline:
                    raise TimeoutError(f'QMP socket {path} not up within {timeout}s')
                # QEMU creates the socket while starting; the deadline bounds this poll.
                time.sleep(0.05)
        self.s.settimeout(timeout)
        self.f = self.s.makefile('rb')
        self.events = []
        # QEMU 7.2 emits MIGRATION 'setup' when it starts with -incoming, whatever the
        # events capability; a client connecting at that moment can read it before the
        # greeting (CI, 2026-12-04: the destination's QMP). Keep what comes before the
        # greeting; the socket's timeout bounds the wait.
        while True:
            greeting = self._read()
            if 'QMP' in greeting:
                break
            assert 'event' in greeting, f'QMP {path}: neither greeting nor event: {greeting}'
            self.events.append(greeting)
        self.cmd('qmp_capabilities')

    def _read(self):
        line = self.f.readline()
        if not line:
            raise EOFError('QMP connection closed')
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.s.sendall(json.dumps(msg).encode() + b'\n')
        while True:
            r = self._read()
            if 'event' in r:
                self.events.append(r)
                continue
            if 'error' in r:
                raise RuntimeError(f'QMP {name}: {r["error"]}')
            return r.get('return')

    def wait_event(self, name, pred, timeout):
        """The first event `name` (already received or coming) for which pred(event)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e['event'] == name and pred(e):
                    del self.events[:i + 1]
                    return e
            self.events.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f'no QMP event {name} within {timeout}s')
            self.s.settimeout(left)
            try:
                r = self._read()
            except socket.timeout:
                raise TimeoutError(f'no QMP event {name} within {timeout}s') from None
            finally:
                self.s.settimeout(30.0)
            if 'event' in r:
                self.events.append(r)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


# ---- Host network: one bridge, a tap per serve ---------------------------------------------

def ip(*args, check=True):
    return run(['ip'] + list(args), check=check)


def free_subnet():
    """A 10.N.77.0/24 (N in 200..249) no host interface uses."""
    used = ip('-4', '-o', 'addr', 'show').stdout.decode()
    for i in range(50):
        n = 200 + (os.getpid() + i) % 50
        if f' 10.{n}.77.' not in used:
            return f'10.{n}.77'
    raise RuntimeError('no free 10.N.77.0/24 subnet for the e2e bridge')


class Bridge:
    """A host bridge holding the host's addresses; each serve's tap uplink joins it.

    The guest's frames reach the host through whichever tap belongs to the
    device that serves it; after migration the bridge learns the guest's MAC
    on the destination's tap from the guest's next frame."""

    def __init__(self, name, addrs):
        self.name = name
        ip('link', 'del', name, check=False)
        # An address of its own: a bridge without one takes the lowest of its ports'
        # (Linux br_stp_recalculate_bridge_id), so attaching the destination's tap while
        # the guest pings through the source's could change it, and a changed address
        # flushes the host's neighbour entries on the bridge (NETDEV_CHANGEADDR) under
        # the guest's traffic. Locally administered, unicast, from the pid.
        mac = '02:4c:4d:%02x:%02x:%02x' % ((os.getpid() >> 16) & 0xff,
                                            (os.getpid() >> 8) & 0xff, os.getpid() & 0xff)
        ip('link', 'add', name, 'address', mac, 'type', 'bridge', 'stp_state', '0',
           'forward_delay', '0')
        for a in addrs:
            ip('addr', 'add', a, 'dev', name)
        ip('link', 'set', name, 'up')

    def attach(self, tap, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not os.path.exists(f'/sys/class/net/{tap}'):
            if time.monotonic() > deadline:
                raise TimeoutError(f'tap {tap} never appeared')
            time.sleep(0.05)  # serve creates it before it says ready; bounded
        ip('link', 'set', tap, 'master', self.name)
        ip('link', 'set', tap, 'up')

    def delete(self):
        ip('link', 'del', self.name, check=False)


class UplinkCapture:
    """Frames a device sends on its tap uplink (what the host kernel receives from
    serve), from one source MAC, captured from start() to stop() with AF_PACKET.
    Frames the bridge forwards out of the tap (PACKET_OUTGOING) are not the device's."""

    PACKET_OUTGOING = 4

    def __init__(self, ifname, src_mac):
        self.src = bytes.fromhex(src_mac.replace(':', ''))
        self.frames = []  # (monotonic time, frame)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        self.sock.bind((ifname, 0))
        self.sock.settimeout(0.2)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        while self.running:
            try:
                data, addr = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if addr[2] != self.PACKET_OUTGOING and data[6:12] == self.src:
                self.frames.append((time.monotonic(), data))

    def stop(self):
        self.running = False
        self.thread.join(timeout=5)
        self.sock.close()
        return list(self.frames)


def describe_frame(f):
    """(kind, text): kind 'garp', 'rarp', 'announce' (IPv6 NA, MLD, IGMP) or 'other'."""
    et = int.from_bytes(f[12:14], 'big')
    if et == 0x0806 and len(f) >= 42:
        spa, tpa = f[28:32], f[38:42]
        text = f'ARP op {int.from_bytes(f[20:22], "big")} {socket.inet_ntoa(spa)} -> ' \
               f'{socket.inet_ntoa(tpa)}'
        return ('garp' if spa == tpa else 'other'), text
    if et == 0x8035:
        return 'rarp', 'RARP'
    if et == 0x86dd and len(f) >= 55 and f[20] == 58:
        t = f[54]
        return ('announce' if t in (131, 136, 143) else 'other'), f'ICMPv6 type {t}'
    if et == 0x86dd and len(f) >= 55 and f[20] == 0:  # hop-by-hop: MLD reports
        return 'announce', 'IPv6 hop-by-hop (MLD)'
    if et == 0x0800 and len(f) >= 34:
        proto = f[23]
        return ('announce' if proto == 2 else 'other'), f'IPv4 proto {proto} ' \
            f'{socket.inet_ntoa(f[26:30])} -> {socket.inet_ntoa(f[30:34])}'
    return 'other', f'ethertype 0x{et:04x}'


# ---- Pieces of a run -----------------------------------------------------------------------

def serve(sock, devargs, tap, ibdev=None, more=()):
    """serve with its device's wire on tap: emu= through a net_tap port (uplink=),
    or, ibdev=N, the emulated rdma-core's device mlx5_<N> (tools/with-emulated-rdma,
    two devices, device N's wire being the tap, as a ConnectX's port would be).
    more: further (socket, devargs) pairs, one device each, after the first."""
    # vhost's INFO lines are the front end's messages in order (SET_VRING_*, SET_STATUS),
    # the driver's DEBUG ones each ring's enable and disable: with the host time of every
    # line, a failed run's serve logs show which message the device was handling when
    # (about 100 lines per migration). E2E_SERVE_EAL: more EAL arguments, which can
    # override these, e.g. --log-level=lib.vhost.config:debug
    eal = ('--log-level=lib.vhost.config:info --log-level=pmd.vdpa.mlx5_lm:debug')
    wrap, env = [], None
    if ibdev is None:
        eal = f'--vdev net_tap0,iface={tap} ' + eal
    else:
        wrap = [sys.executable, os.environ['LM_WRAPPER'], '--devices', '2', '--profile', 'fast',
                '--tap', f'{ibdev}={tap}', '--']
        env = {'MLX5_LM_ERDMA_LIBDIR': os.environ['LM_ERDMA_LIBDIR']}
    socks = [a for s, _ in [(sock, devargs)] + list(more) for a in ('--socket', s)]
    das = [a for _, d in [(sock, devargs)] + list(more) for a in ('--devargs', d)]
    args = wrap + [TOOL, 'serve'] + socks + das + [
        '--eal', (eal + ' ' + os.environ.get('E2E_SERVE_EAL', '')).strip()]
    p = Proc(args, name=f'serve[{tap}]', env=env)
    p.expect(r'serve: ready', timeout=60)
    return p


def serve_stats(srv, timeout=30.0):
    """SIGUSR1 -> {('rx'|'tx', q): {counter: value}} of serve's first device."""
    start = srv.mark()
    srv.p.send_signal(signal.SIGUSR1)
    end, _, _ = srv.expect(r'serve: end of statistics', timeout, since=start)
    with srv.cv:
        lines = srv.lines[start:end]
    names, table, devices = [], {}, 0
    for _, line in lines:
        s = line.split()
        if re.match(r'\S+ \(.*\):$', line.strip()):
            devices += 1
            if devices > 1:
                break
        if s[:1] == ['queue']:
            # Counter names have single spaces; columns are two or more apart.
            names = re.split(r'\s{2,}', line.strip())[1:]
        elif len(s) == 2 + len(names) and s[0] in ('rx', 'tx') and names:
            table[(s[0], int(s[1]))] = dict(zip(names, map(int, s[2:])))
    return table


# QEMU 7.2 under TCG loses guest pages in migrations of a RAM block whose size is a
# multiple of 64 pages: its dirty-bitmap sync then takes a path that clears the
# migration's dirty bits without making the vCPU's TLB trap the next write, so writes
# through entries that stay cached (the guest kernel's global mappings: its stacks, its
# counters) are not sent again, and the destination's guest dies. 8 KiB more RAM takes
# the path that re-arms the TLB: qemu_page_loss.py lost pages in 5 of 19 migrations with
# 256 MiB and in none of 16 with 256 MiB + 8 KiB (and no vhost-user device at all).
# KVM tracks dirty pages in the MMU and is not concerned.
TCG_RAM_PAD = 8 << 10


def ram_bytes(mem_mb):
    """The guest RAM qemu_args gives for mem_mb: mem_mb MiB and TCG_RAM_PAD."""
    return (mem_mb << 20) + TCG_RAM_PAD


def second_nic_sock(sock):
    """The socket of a VM's second NIC (qemu_args' nics=2) beside its first one's."""
    return sock + '-nic1'


def qemu_args(vmlinuz, initrd, mem_mb, sock, qmp, variant, mac, incoming=None):
    """variant: queues (mq), packed, rx_queue_size; reconnect: the chardev comes back to a
    back end that restarts (QEMU connects, as the user guide starts it); hold: with
    incoming, the guest stays paused after the migration until QMP cont (as libvirt
    starts a destination, -S), so that its RAM can be read as it arrived; nics=2: a
    second vhost-user NIC on second_nic_sock(sock), which the guest leaves unconfigured
    (its driver still starts the device)."""
    nd = 'vhost-user,id=n0,chardev=c0'
    chardev = f'socket,id=c0,path={sock}' + (',reconnect=1' if variant.get('reconnect') else '')
    dev = f'virtio-net-pci,netdev=n0,vectors=0,mac={mac}'
    if variant.get('queues', 1) > 1:
        nd += f',queues={variant["queues"]}'
        dev += ',mq=on'
    if variant.get('packed'):
        dev += ',packed=on'
    if variant.get('rx_queue_size'):
        dev += f',rx_queue_size={variant["rx_queue_size"]}'
    # maxmem_mb: room (and two slots) for pc-dimms plugged later (QMP device_add).
    m = f'{ram_bytes(mem_mb) >> 10}k' + (f',slots=2,maxmem={variant["maxmem_mb"]}M'
                                        if variant.get('maxmem_mb') else '')
    a = ['qemu-system-x86_64', '-machine', 'q35,accel=tcg,memory-backend=mem0',
         '-m', m, '-smp', '1', '-nodefaults', '-no-user-config', '-display', 'none',
         # ram_file: the machine's RAM on that file (memory-backend-file) rather than a memfd.
         '-object', (f'memory-backend-file,mem-path={variant["ram_file"]}'
                     if variant.get('ram_file') else 'memory-backend-memfd') +
         f',id=mem0,size={ram_bytes(mem_mb)},share=on',
         '-kernel', vmlinuz, '-initrd', initrd,
         '-append', 'console=ttyS0 quiet panic=-1 mitigations=off',
         '-serial', 'stdio', '-qmp', f'unix:{qmp},server=on,wait=off', '-no-reboot',
         '-chardev', chardev, '-netdev', nd, '-device', dev]
    if variant.get('nics', 1) == 2:
        a += ['-chardev', f'socket,id=c1,path={second_nic_sock(sock)}',
              '-netdev', 'vhost-user,id=n1,chardev=c1',
              '-device', f'virtio-net-pci,netdev=n1,vectors=0,mac={mac[:-2]}fe']
    if incoming:
        a += ['-incoming', incoming] + (['-S'] if variant.get('hold') else [])
    return a


# ---- Guest RAM ------------------------------------------------------------------------------

PAGE = 4096


SHM_PREFIX = '/dev/shm/lm-e2e-'   # guest RAM files of memory-backend-file


def guest_rams(pid):
    """The guest RAM files of QEMU pid (memory-backend-memfd: the machine's and a DIMM's;
    memory-backend-file under SHM_PREFIX), opened through /proc (which reaches them in any
    mount namespace), largest first."""
    fd_dir = f'/proc/{pid}/fd'
    files = []
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue  # closed meanwhile
        # QEMU names the memfd after the backend's type (hostmem-memfd.c).
        if link.startswith('/memfd:memory-backend-memfd') or link.startswith(SHM_PREFIX):
            files.append(open(os.path.join(fd_dir, fd), 'rb'))
    if not files:
        raise AssertionError(f'QEMU {pid} holds no guest RAM file')
    return sorted(files, key=lambda f: -os.fstat(f.fileno()).st_size)


def compare_ram(pid_a, pid_b, chunk=1 << 20, b_grown=0):
    """Two QEMUs' guest RAM byte for byte (both stopped: a migration's source after it
    completed, its destination held): (bytes compared, offsets of the pages that differ;
    a second backend's offsets follow the first's). b_grown: bytes a file of b's has
    beyond its backend (a file grown after QEMU mapped it), not compared."""
    a_all, b_all = guest_rams(pid_a), guest_rams(pid_b)
    try:
        sizes = [[os.fstat(f.fileno()).st_size for f in x] for x in (a_all, b_all)]
        if sorted(sizes[0]) != sorted(x - b_grown if x - b_grown in sizes[0] else x
                                      for x in sizes[1]):
            raise AssertionError(f'guest RAM backends differ: {sizes[0]} and {sizes[1]} bytes')
        total, differ = 0, []
        for a, b in zip(a_all, b_all):
            n, d = _compare_file(a, b, chunk)
            differ += [total + o for o in d]
            total += n
        return total, differ
    finally:
        for f in a_all + b_all:
            f.close()


def ram_page(pid, off):
    """The page at off of QEMU pid's guest RAM (its backends one after the other, largest
    first, as compare_ram counts offsets)."""
    files = guest_rams(pid)
    try:
        for f in files:
            size = os.fstat(f.fileno()).st_size
            if off < size:
                f.seek(off & ~(PAGE - 1))
                return f.read(PAGE)
            off -= size
        raise ValueError(f'offset past the guest RAM of {pid}')
    finally:
        for f in files:
            f.close()


def _compare_file(a, b, chunk):
    """(size, offsets of the pages that differ) of two files of a's size."""
    size, differ = os.fstat(a.fileno()).st_size, []
    for off in range(0, size, chunk):
        x, y = a.read(chunk), b.read(chunk)
        if x != y:
            differ += [off + p for p in range(0, len(x), PAGE) if x[p:p + PAGE] != y[p:p + PAGE]]
    return size, differ
