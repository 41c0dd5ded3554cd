#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run one libFuzzer target for a bounded time, as a meson test (suite 'fuzz').

The seed corpus is copied (and, for the emulator target, generated) into a
scratch directory, so that libFuzzer's new inputs never land in the source
tree. A crash or sanitizer report fails the test; its reproducer is kept
in --artifacts (rerun: FUZZER ARTIFACT).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('fuzzer')
    ap.add_argument('--seeds', help='directory of seed inputs to copy')
    ap.add_argument('--seed-gen', help='program writing seed inputs into a directory')
    ap.add_argument('--artifacts', required=True, help='where crash reproducers go')
    ap.add_argument('--time', type=int, default=20, help='seconds (-max_total_time)')
    ap.add_argument('--runs', type=int, default=2000000, help='inputs at most (-runs)')
    ap.add_argument('--max-len', type=int, default=4096)
    ap.add_argument('--timeout', type=int, default=10, help='seconds per input (-timeout)')
    ap.add_argument('--no-leaks', action='store_true',
                    help='-detect_leaks=0 (targets that run DPDK, whose own allocations '
                    'outlive an input)')
    a = ap.parse_args()
    # FUZZ_SECONDS overrides the time of every target (longer runs by hand).
    if os.environ.get('FUZZ_SECONDS'):
        a.time = int(os.environ['FUZZ_SECONDS'])
        a.runs = 2 ** 31 - 1

    os.makedirs(a.artifacts, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='fuzz-') as tmp:
        corpus = os.path.join(tmp, 'corpus')
        seeds = os.path.join(tmp, 'seeds')
        os.makedirs(corpus)
        os.makedirs(seeds)
        if a.seeds:
            for name in sorted(os.listdir(a.seeds)):
                shutil.copy(os.path.join(a.seeds, name), seeds)
        if a.seed_gen:
            subprocess.run([a.seed_gen, seeds], check=True)
        n_seeds = len(os.listdir(seeds))
        cmd = [a.fuzzer, '-max_total_time=%d' % a.time, '-runs=%d' % a.runs,
               '-max_len=%d' % a.max_len, '-timeout=%d' % a.timeout, '-rss_limit_mb=2048',
               '-print_final_stats=1',
               '-artifact_prefix=' + os.path.join(os.path.abspath(a.artifacts), ''),
               corpus, seeds]
        if a.no_leaks:
            cmd.insert(1, '-detect_leaks=0')
        print('%d seeds; %s' % (n_seeds, ' '.join(cmd)), flush=True)
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print('fuzzer exited with %d: reproducer in %s' % (r.returncode, a.artifacts))
            # A finding is a failure, whatever the fuzzer's own code: libFuzzer exits
            # 77 on an abort() of the target, which meson would count as a skip.
            return 1
        return 0


if __name__ == '__main__':
    sys.exit(main())
