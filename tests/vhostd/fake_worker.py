#!/usr/bin/env python3
"""A stand-in for mlx5-lm-vhostd-worker that speaks its channel (a JSON object per
line on fd --channel) and pushes metrics a real worker would not: a device name and
DPDK-style counter names holding '"', '\\' and newlines, as a worker gone wrong
could. No DPDK, no socket: the supervisor's metrics page is what is tested."""
import argparse
import json
import os

ODD = 'x"} 1\nfake_metric{a="\\'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--vm')
    ap.add_argument('--channel', type=int)
    ap.add_argument('--metrics-ms')
    ap.add_argument('--msg-timeout')
    ap.add_argument('--eal')
    a = ap.parse_args()
    ch = os.fdopen(a.channel, 'r+b', buffering=0)

    def send(m):
        ch.write(json.dumps(m).encode() + b'\n')

    send({'event': 'ready'})
    for line in ch:
        req = json.loads(line)
        if req['op'] == 'add':
            send({'id': req['id'], 'result': {'name': req['name'], 'state': 'waiting'}})
            send({'event': 'metrics', 'devices': [{
                'name': req['name'] + ODD, 'configurations': 1,
                'stats': {'queues': [{'queue': 0, 'type': 'rx' + ODD, 'counters': {
                    'received_descriptors': 5, 'bad ' + ODD + ' errors': 1}}]}}]})
        elif req['op'] == 'exit':
            send({'event': 'exit', 'leaked': 0})
            return
        else:
            send({'id': req['id'], 'error': {'code': -32001, 'message': 'fake worker'}})


if __name__ == '__main__':
    main()
