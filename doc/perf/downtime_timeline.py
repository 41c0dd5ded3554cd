#!/usr/bin/env python3
"""Where a run's downtime went, device by device, from the DevX traces of
`dpdk-test-lm migrate --devx-trace DIR` (doc/performance.md, "prereg on
seed-mkey, command by command").

For each run's window (DIR/STAGE-runN[-ROUND]-vmV.json: the first
GET_VRING_BASE in the traces' clock, the downtime, and the benchmark's
checks between the stop and the start, which the downtime leaves out; empty
for a VM the run did not migrate or a run that failed), every device's
commands inside it
(doorbells left out): when its first one started and its last one ended, in
ms from the first GET_VRING_BASE, how long at least one of them was in
flight, and what they were. Then the VM's whole window: the time with no
command of any of its devices in flight - the front end's messages on
vhost's thread, the hand-offs between threads and, at the end, the frames
that prove the destinations forward.

Usage: downtime_timeline.py DIR [--stage S] [--run N] [--round R] [--vm V]
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

from peer_trace_summary import in_flight

WINDOW = re.compile(r'^(?P<stage>.+?)-run(?P<run>\d+)(?:-(?P<round>alone|at-once))?'
                    r'-vm(?P<vm>\d+)\.json$')
DEVICE = re.compile(r'-(?P<role>src|dst)(?P<k>\d+)\.jsonl$')


def busy(intervals, lo, hi):
    """Time (us) in [lo, hi) with at least one interval in flight."""
    idle, _ = in_flight(intervals, lo, hi)
    return (hi - lo) - idle[0]


def commands(path, lo, hi):
    """The commands of one trace that overlap [lo, hi), doorbells left out."""
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if 'DOORBELL' in r['op'] or r['t_end_us'] < lo or r['t_start_us'] >= hi:
                continue
            out.append(r)
    return out


def summary(ops):
    c = collections.Counter(r['op'] for r in ops)
    return ', '.join('%s x%d' % (op, n) for op, n in sorted(c.items(), key=lambda x: -x[1]))


def report(directory, name, w):
    t0 = w['t0_us']
    # The benchmark's checks run inside the window (between the stop and the
    # start) and are not downtime: the window on the traces' clock is longer.
    checks = w.get('checks_ms', 0.0)
    c0 = t0 + w.get('checks_from_ms', 0.0) * 1e3
    c1 = c0 + checks * 1e3
    hi = t0 + (w['downtime_ms'] + checks) * 1e3
    prefix = os.path.join(directory, name[:-len('.json')])
    rows, every = [], []
    for path in sorted(glob.glob(prefix + '-*.jsonl'),
                       key=lambda p: (DEVICE.search(p).group('role') == 'dst',
                                      int(DEVICE.search(p).group('k')))):
        m = DEVICE.search(path)
        ops = commands(path, t0, hi)
        iv = [(r['t_start_us'], r['t_end_us']) for r in ops]
        every += iv
        if not ops:
            rows.append((m.group('role') + m.group('k'), None, None, 0.0, 'none'))
            continue
        rows.append((m.group('role') + m.group('k'),
                     (min(a for a, _ in iv) - t0) / 1e3, (max(b for _, b in iv) - t0) / 1e3,
                     (busy(iv, t0, hi) - busy(iv, c0, c1)) / 1e3, summary(ops)))
    print('## %s, run %d%s, VM %d: downtime %.1f ms (source stop %.1f ms)\n'
          % (w['stage'], w['run'], ', ' + w['round'] if w.get('round') else '', w['vm'],
             w['downtime_ms'], w['src_stop_ms']))
    if not rows:
        print('no device traces (a peer stage: its devices are not ours)\n')
        return
    if checks > 0:
        print('times from the first GET_VRING_BASE; the benchmark\'s checks, %.1f to %.1f ms, '
              'are not part of the downtime nor of the figures below\n'
              % ((c0 - t0) / 1e3, (c1 - t0) / 1e3))
    print('| device | first command ms | last ends ms | commands in flight ms | commands |')
    print('|---|---|---|---|---|')
    for dev, first, last, b, what in rows:
        if first is None:
            print('| %s | - | - | 0.0 | none |' % dev)
        else:
            print('| %s | %.2f | %.2f | %.2f | %s |' % (dev, first, last, b, what))
    idle = w['downtime_ms'] - (busy(every, t0, hi) - busy(every, c0, c1)) / 1e3
    last = max((r[2] for r in rows if r[2] is not None), default=None)
    print('\nno command of the VM in flight: %.1f ms of %.1f (%.0f%%)'
          % (idle, w['downtime_ms'], 100 * idle / w['downtime_ms']), end='')
    if last is None:
        print('; no command inside the window\n')
    else:
        print('; after the last command ended (%.1f ms): %.1f ms\n'
              % (last, (hi - t0) / 1e3 - last))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('dir', help='the directory given to migrate --devx-trace')
    ap.add_argument('--stage', help='only this stage')
    ap.add_argument('--run', type=int, help='only this run')
    ap.add_argument('--round', choices=('alone', 'at-once'),
                    help="only this round of an evacuation")
    ap.add_argument('--vm', type=int, help='only this VM')
    a = ap.parse_args()
    found = 0
    for path in sorted(glob.glob(os.path.join(a.dir, '*.json'))):
        m = WINDOW.match(os.path.basename(path))
        if m is None:
            continue
        if ((a.stage and m.group('stage') != a.stage) or
                (a.run is not None and int(m.group('run')) != a.run) or
                (a.round and m.group('round') != a.round) or
                (a.vm is not None and int(m.group('vm')) != a.vm)):
            continue
        found += 1
        if os.path.getsize(path) == 0:
            print('## %s: no window: the VM was not migrated in this run (an evacuation\'s '
                  'idle VM) or its run failed\n' % os.path.basename(path))
            continue
        with open(path) as f:
            report(a.dir, os.path.basename(path), json.load(f))
    if not found:
        filtered = a.stage or a.run is not None or a.round or a.vm is not None
        print('downtime_timeline: no run window in %s%s' % (
            a.dir, ' matching the filters' if filtered else ''), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
