"""Helpers for mlx5-lm-vhostd's tests: the service, JSON-RPC calls, its CLI, the
front ends of tests/vhostd/vu_traffic.c. Every wait has a deadline and looks for a
condition; nothing sleeps and hopes."""
import json
import os
import select
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
from lmtest import Proc, closed_by_peer, vu_connect  # noqa: E402,F401

VHOSTD = os.environ.get('VHOSTD', 'build/app/vhostd/mlx5-lm-vhostd')
WORKER = os.environ.get('VHOSTD_WORKER', 'build/app/vhostd/mlx5-lm-vhostd-worker')
CTL = os.environ.get('VHOSTD_CTL', 'build/app/ctl/mlx5-lm-ctl')
TRAFFIC = os.environ.get('VHOSTD_TRAFFIC', 'build/tests/vhostd/vu_traffic')


def connect(path, timeout=10.0):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(timeout)
    c.connect(path)
    return c


def read_reply(c, timeout=60.0):
    """One JSON value from c (a reply), or None when c closed first."""
    deadline = time.monotonic() + timeout
    buf = b''
    dec = json.JSONDecoder()
    while True:
        s = buf.decode(errors='replace').lstrip()
        if s:
            try:
                obj, _ = dec.raw_decode(s)
                return obj
            except json.JSONDecodeError:
                pass
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no reply within {timeout}s (have {buf[:200]!r})')
        r, _, _ = select.select([c], [], [], left)
        if not r:
            continue
        try:
            chunk = c.recv(65536)
        except ConnectionResetError:
            chunk = b''
        if not chunk:
            return None
        buf += chunk


class Service:
    """mlx5-lm-vhostd, ready (its 'ready' line), on sockets in directory d."""

    def __init__(self, d, config=None, metrics=None, extra=(), wrap=(), env=None,
                 ready=True):
        self.d = d
        self.rpc = os.path.join(d, 'rpc.sock')
        args = list(wrap) + [VHOSTD, '--rpc-socket', self.rpc, '--worker', WORKER]
        if config:
            args += ['--config', config]
        if metrics:
            args += ['--metrics', metrics]
        self.p = Proc(args + list(extra), env=env, name='vhostd')
        if ready:
            self.p.expect(r'vhostd: ready', timeout=120)
        self.next_id = 0

    def call(self, method, params=None, timeout=60.0, raw=False):
        """The reply of one call on a connection of its own (raw: the whole reply)."""
        self.next_id += 1
        req = {'jsonrpc': '2.0', 'id': self.next_id, 'method': method}
        if params is not None:
            req['params'] = params
        c = connect(self.rpc)
        try:
            c.sendall(json.dumps(req).encode())
            reply = read_reply(c, timeout)
        finally:
            c.close()
        if raw:
            return reply
        if 'error' in reply:
            raise RpcError(reply['error'])
        return reply['result']

    def ctl(self, *args, timeout=120):
        r = subprocess.run([CTL, '--socket', self.rpc] + list(args), capture_output=True,
                           text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def add(self, name, vm, sock, devargs='emu=fast,queues=1', client=False,
            auto_prepare=None):
        p = {'name': name, 'vm': vm, 'socket': sock, 'devargs': devargs}
        if client:
            p['client'] = True
        if auto_prepare is not None:
            p['auto_prepare'] = auto_prepare
        return self.call('device_add', p)

    def device(self, name):
        for d in self.call('device_list'):
            if d['name'] == name:
                return d
        return None

    def vm(self, name):
        for v in self.call('vm_list'):
            if v['vm'] == name:
                return v
        return None

    def wait_state(self, name, states, timeout=60.0):
        """device_list until device name is in one of states; its entry."""
        states = (states,) if isinstance(states, str) else states
        deadline = time.monotonic() + timeout
        d = None
        while time.monotonic() < deadline:
            d = self.device(name)
            if d is not None and d['state'] in states:
                return d
            # The state changes on the worker's next report (every 50 ms), which
            # the service logs: wait for output (kept for later expects) or 0.1 s.
            self.p._read(0.1)
        raise TimeoutError(f'device {name} not {states} within {timeout}s: {d}\n'
                           f'{self.p.text()[-3000:]}')

    def stop(self, timeout=60.0):
        return self.p.stop(timeout=timeout)

    def kill(self):
        self.p.kill()


class RpcError(Exception):
    def __init__(self, err):
        super().__init__(f"{err.get('code')}: {err.get('message')}")
        self.code = err.get('code')
        self.message = err.get('message', '')


class Traffic(Proc):
    """tests/vhostd/vu_traffic on a device's socket, frames flowing."""

    def __init__(self, sock):
        super().__init__([TRAFFIC, sock], name='vu_traffic')
        self.expect(r'vu_traffic: running', timeout=60)

    def done(self):
        """SIGTERM, then its last line as a dict of numbers."""
        rc = self.stop(timeout=30)
        m = self.expect(r'vu_traffic: done rx=(\d+) lost=(\d+) max_gap_ms=([\d.]+) '
                        r'reconnects=(\d+)', timeout=5)
        return rc, {'rx': int(m.group(1)), 'lost': int(m.group(2)),
                    'max_gap_ms': float(m.group(3)), 'reconnects': int(m.group(4))}


def children(pid):
    r = subprocess.run(['pgrep', '-P', str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]
