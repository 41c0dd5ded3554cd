#!/usr/bin/env python3
"""Real front end: DPDK's testpmd with net_virtio_user against dpdk-test-lm serve.

Traffic goes testpmd -> TX virtq -> emulated device (loopback uplink, RSS) ->
RX virtq -> testpmd, which forwards it again (io mode). Packets are counted on
both ends: testpmd's port stats and the device's queue counters.
"""
import collections
import json
import os
import re
import sys
import tempfile
import unittest

from lmtest import Proc, Testpmd, serve, stopped_after

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
# meson puts the emulated rdma-core's directory on LD_LIBRARY_PATH (the test
# depends on it): only serve under tools/with-emulated-rdma may load it, never
# testpmd (built elsewhere, and not with the sanitizer of an ASan build).
os.environ.pop('LD_LIBRARY_PATH', None)

GENERAL = {'CREATE_GENERAL_OBJECT', 'MODIFY_GENERAL_OBJECT', 'QUERY_GENERAL_OBJECT',
           'DESTROY_GENERAL_OBJECT'}
VIRTQ = 0x0d


def virtq_state(rec):
    """(modify_field_select, state) of a virtq MODIFY: virtio_net_q starts at
    byte 16 of the input; state is 4 bits at bit 0x9c of it."""
    h = rec['in']
    return int(h[32:48], 16), int(h[32 + 2 * 19:32 + 2 * 20], 16) & 0xf


def load_trace(path):
    with open(path) as f:
        return [json.loads(l) for l in f]


def device_counters(text):
    """Parse serve's stats table: {(dir, pair): {name: value}}."""
    names, rows = None, {}
    for line in text.splitlines():
        if line.strip().startswith('queue '):
            names = line.split()[1:]
        m = re.match(r'\s+(rx|tx)\s+(\d+)\s+([\d\s]+)$', line)
        if m and names:
            rows[(m.group(1), int(m.group(2)))] = dict(zip(names, map(int, m.group(3).split())))
    return rows


class TestpmdThroughDevice(unittest.TestCase):
    def run_traffic(self, pairs, queue_size, packed, device_pairs=4, device_qsize=256,
                    ibdev=False):
        """ibdev: the device is the PMD's rdma back end (ibdev=mlx5_0) on the emulated
        rdma-core, serve running under tools/with-emulated-rdma (exit status 3 if a
        device was closed with objects alive)."""
        wrap, env, dev = (), None, 'emu=fast'
        if ibdev:
            wrap = [sys.executable, os.environ['LM_WRAPPER'], '--profile', 'fast', '--']
            env = {'MLX5_LM_ERDMA_LIBDIR': os.environ['LM_ERDMA_LIBDIR']}
            dev = 'ibdev=mlx5_0'
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            trace = os.path.join(d, 'trace.jsonl')
            srv = serve(TOOL, [sock], f'{dev},queues={device_pairs},'
                        f'queue_size={device_qsize},devx_trace={trace}', wrap=wrap, env=env)
            with stopped_after(self, srv):
                pmd = Testpmd(sock, f'tp{os.getpid()}', queues=pairs, queue_size=queue_size,
                              packed=packed)
                before_connect = len(load_trace(trace))
                try:
                    pmd.cmd('start tx_first')
                    rx, tx = pmd.wait_rx(2000, timeout=60)
                    pmd.cmd('stop')
                    # The device's counters, while the queues still hold them.
                    srv.p.send_signal(10)  # SIGUSR1: statistics now
                    m = srv.expect(r'(\S+ \(' + re.escape(sock) +
                                   r'\):\n[\s\S]*?)serve: end of statistics', timeout=30)
                    counters = device_counters(m.group(1).decode())
                finally:
                    pmd.quit()
                srv.expect(r'front end gone', timeout=30)
            self.assertIn('clean teardown', srv.text())
            recs = load_trace(trace)
        self.assertGreaterEqual(rx, 2000)
        self.assertGreaterEqual(tx, rx)
        # The device saw the traffic too: descriptors completed on every used queue.
        for p in range(pairs):
            self.assertGreater(counters[('tx', p)]['completed_descriptors'], 0, counters)
        total_rx_done = sum(counters[('rx', p)]['completed_descriptors'] for p in range(pairs))
        self.assertGreaterEqual(total_rx_done, rx)
        return recs, before_connect

    def check_lifecycle(self, recs, before_connect, pairs, recreated):
        vq = [r for r in recs if r['op'] in GENERAL and r['obj_type'] == VIRTQ]
        creates = [r for r in vq if r['op'] == 'CREATE_GENERAL_OBJECT']
        # Every pre-created virtq exists before the front end connects.
        self.assertTrue(all(r['seq'] < recs[before_connect - 1]['seq'] + 1
                            for r in creates[:8]))
        first_mkey = min(r['seq'] for r in recs if r['op'] == 'CREATE_MKEY')
        # The stop begins with the first suspend (the guest disabling a ring, or
        # GET_VRING_BASE): state 2 with the STATE bit selected.
        first_suspend = min(r['seq'] for r in vq if r['op'] == 'MODIFY_GENERAL_OBJECT'
                            and virtq_state(r)[0] & 1 and virtq_state(r)[1] == 2)
        conf = [r for r in vq if first_mkey < r['seq'] < first_suspend]
        conf_creates = [r for r in conf if r['op'] == 'CREATE_GENERAL_OBJECT']
        modifies = collections.Counter(r['obj_id'] for r in conf
                                       if r['op'] == 'MODIFY_GENERAL_OBJECT')
        if recreated:
            self.assertEqual(len(conf_creates), 2 * pairs)
        else:
            # Only MODIFY between DRIVER_OK and traffic: no CREATE.
            self.assertEqual(conf_creates, [])
        self.assertEqual(len(modifies), 2 * pairs)
        self.assertTrue(all(n == 1 for n in modifies.values()), modifies)
        # ... and that MODIFY carries STATE=RDY with the fields.
        for r in conf:
            if r['op'] == 'MODIFY_GENERAL_OBJECT':
                select, state = virtq_state(r)
                self.assertTrue(select & 1 and state == 1, r['in'][:80])
                self.assertTrue(select & ~1, 'fields changed with the state')
        # At close: a suspend (MODIFY) then a QUERY for each queue.
        close = [r for r in vq if r['seq'] >= first_suspend - 2 * pairs]
        queries = {r['obj_id'] for r in close if r['op'] == 'QUERY_GENERAL_OBJECT'}
        self.assertEqual(len(queries), 2 * pairs)


def forwarding_test(pairs, queue_size, packed, recreated=False, ibdev=False):
    """A test: testpmd forwards through pairs pairs of rings of queue_size (packed
    or split), each queue configured by one MODIFY (recreated: the mismatched
    queues destroyed and created first)."""
    def test(self):
        recs, n = self.run_traffic(pairs, queue_size, packed, ibdev=ibdev)
        self.check_lifecycle(recs, n, pairs, recreated=recreated)
    return test


# The forwarding tests, their names and (pairs, ring size, packed, recreated, on ibdev):
# the last two go through rdma-core's entry points.
for name, case in {
        'split_1_pair_forwards_with_one_modify_per_queue': (1, 256, False, False, False),
        'packed_1_pair_forwards_with_one_modify_per_queue': (1, 256, True, False, False),
        'split_4_pairs_forward_with_one_modify_per_queue': (4, 256, False, False, False),
        'packed_4_pairs_forward_with_one_modify_per_queue': (4, 256, True, False, False),
        'queue_size_1024_recreates_only_mismatched': (1, 1024, False, True, False),
        'split_2_pairs_on_ibdev_forward_with_one_modify_per_queue': (2, 256, False, False, True),
        'packed_2_pairs_on_ibdev_forward_with_one_modify_per_queue': (2, 256, True, False, True),
}.items():
    setattr(TestpmdThroughDevice, 'test_' + name, forwarding_test(*case))


if __name__ == '__main__':
    unittest.main(verbosity=2)
