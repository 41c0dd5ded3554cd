#!/usr/bin/env python3
"""Where the downtime goes, from the DevX trace of one
`tools/with-emulated-rdma --trace T -- dpdk-test-lm migrate --backend rdma
--stages all,peer,peer-precreate --json J` run (doc/performance.md, "The peer").

Stages are told apart by the ALLOC_PD on mlx5_0 each one's probe makes. The
downtime window of a stage starts at the first virtq SUSPEND on a source
device after the sources' last resume (the first GET_VRING_BASE's work) and
lasts the stage's downtime from the JSON. Within it, per side (sources
mlx5_0..N-1, destinations mlx5_N..2N-1): the commands by kind, the command
time summed (slot time), the mean and peak of commands in flight, and the
serial sections: the time when at most one command, or none, was in flight
on any device of the VM.
Usage: peer_trace_summary.py TRACE.jsonl RESULT.json
"""
import collections
import json
import sys

VIRTQ = 13  # general object type of virtio_net_q
HOST = {'reg_mr', 'dereg_mr', 'umem_reg', 'umem_dereg'}


def virtq_state_change(r):
    """(state) of a MODIFY of a virtq that changes state, else None."""
    if r['op'] != 'MODIFY_GENERAL_OBJECT' or r['obj_type'] != VIRTQ:
        return None
    b = bytes.fromhex(r['in'])
    if not int.from_bytes(b[0x10:0x18], 'big') & 1:
        return None
    return b[0x10 + 0x13] & 0xf  # state[4] at bit 0x9c of the object


def in_flight(iv, lo, hi):
    """Time (us) in [lo, hi) with 0, 1 and more commands in flight, and the peak."""
    ev = []
    for a, b in iv:
        a, b = max(a, lo), min(b, hi)
        if b > a:
            ev += [(a, 1), (b, -1)]
    ev.sort()
    t, n, peak = lo, 0, 0
    acc = collections.Counter()
    for x, d in ev:
        acc[min(n, 2)] += x - t
        t, n = x, n + d
        peak = max(peak, n)
    acc[min(n, 2)] += hi - t
    return acc, peak


def main():
    recs = [json.loads(line) for line in open(sys.argv[1])]
    doc = json.load(open(sys.argv[2]))
    n = doc['scenario']['devices']
    src = {'mlx5_%d' % i for i in range(n)}
    dst = {'mlx5_%d' % i for i in range(n, 2 * n)}
    starts = sorted(r['t_start_us'] for r in recs
                    if r['op'] == 'ALLOC_PD' and r['dev'] == 'mlx5_0')
    stages = doc['stages']
    if len(starts) != len(stages):
        sys.exit('%d stages in the JSON, %d probes of mlx5_0 in the trace'
                 % (len(stages), len(starts)))
    bounds = starts[1:] + [float('inf')]
    for st, lo, hi in zip(stages, starts, bounds):
        seg = [r for r in recs if lo <= r['t_start_us'] < hi]
        resumed = [r['t_start_us'] for r in seg
                   if r['dev'] in src and virtq_state_change(r) == 1]
        last_rdy = max(resumed) if resumed else lo
        sus = [r['t_start_us'] for r in seg if r['dev'] in src and
               virtq_state_change(r) == 2 and r['t_start_us'] > last_rdy]
        t0 = min(sus)
        t1 = t0 + st['downtime_ms'] * 1000
        win = [r for r in seg if r['t_end_us'] > t0 and r['t_start_us'] < t1]
        print('## %s: downtime %.1f ms (trace window from the first source SUSPEND)'
              % (st['name'], st['downtime_ms']))
        print()
        print('| side | commands | of which | command time ms (slot time) | '
              'mean in flight | peak in flight |')
        print('|---|---|---|---|---|---|')
        for side, devs in (('sources', src), ('destinations', dst)):
            w = [r for r in win if r['dev'] in devs]
            cmds = [r for r in w if r['entry'] not in
                    ('uar_write', 'var_write', 'evch_subscribe', 'eqn_query')]
            kinds = collections.Counter(r['op'] for r in cmds)
            top = ', '.join('%s %d' % kv for kv in kinds.most_common(6))
            busy = sum(min(r['t_end_us'], t1) - max(r['t_start_us'], t0) for r in cmds)
            acc, peak = in_flight([(r['t_start_us'], r['t_end_us']) for r in cmds], t0, t1)
            print('| %s | %d | %s | %.1f | %.1f | %d |' % (
                side, len(cmds), top, busy / 1000, busy / (t1 - t0), peak))
        cmds = [r for r in win if r['entry'] not in
                ('uar_write', 'var_write', 'evch_subscribe', 'eqn_query')]
        acc, peak = in_flight([(r['t_start_us'], r['t_end_us']) for r in cmds], t0, t1)
        host = sum(min(r['t_end_us'], t1) - max(r['t_start_us'], t0)
                   for r in cmds if r['entry'] in HOST)
        print()
        print('serial sections over the VM: %.1f ms with no command in flight, %.1f ms '
              'with one, %.1f ms with more (host registration calls, reg_mr/umem_reg, '
              '%.1f ms of it)' % (acc[0] / 1000, acc[1] / 1000, acc[2] / 1000, host / 1000))
        print()


if __name__ == '__main__':
    main()
