#!/usr/bin/env python3
"""device_list latency while VMs' devices are busy (doc/vhostd.md, "Measured").

Starts mlx5-lm-vhostd with N VMs (default 8), one emulated NIC each, every NIC
with the built-in front end's traffic (tests/vhostd/vu_traffic), then times
CALLS device_list calls, one connection each as mlx5-lm-ctl makes them, and
prints p50, p99 and the largest, in ms. A benchmark, not a test: nothing is
asserted. From the top of the source tree after a build:
    python3 tests/vhostd/bench_vhostd.py [--vms 8] [--calls 2000]
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vhostdlib import Service, Traffic, connect, read_reply  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--vms', type=int, default=8)
    ap.add_argument('--calls', type=int, default=2000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        srv = Service(d)
        traffic = []
        try:
            for i in range(a.vms):
                sock = os.path.join(d, f'vm{i}.sock')
                srv.add(f'vm{i}-net0', f'vm{i}', sock)
                traffic.append(Traffic(sock))
            for i in range(a.vms):
                srv.wait_state(f'vm{i}-net0', 'running')
            req = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'device_list'}).encode()
            lat = []
            for _ in range(a.calls):
                t0 = time.perf_counter()
                c = connect(srv.rpc)
                c.sendall(req)
                r = read_reply(c)
                c.close()
                lat.append((time.perf_counter() - t0) * 1000)
                assert len(r['result']) == a.vms, r
            lat.sort()
            print(f'device_list with {a.vms} VMs busy, {a.calls} calls: '
                  f'p50 {lat[len(lat) // 2]:.2f} ms, p99 {lat[int(len(lat) * 0.99)]:.2f} ms, '
                  f'max {lat[-1]:.2f} ms')
            for t in traffic:
                _, r = t.done()
                assert r['reconnects'] == 0 and r['rx'] > 0, r
        finally:
            for t in traffic:
                t.kill()
            srv.stop()


if __name__ == '__main__':
    main()
