#!/usr/bin/env python3
"""dpdk-test-lm migrate on the fast profile: small migrations and hostile front ends.

Each run is a whole in-process migration (sources and destinations served by
DPDK's vhost library, the built-in front end in QEMU's order, guest traffic);
the tool itself checks packets (lost, duplicated, corrupted), the dirty log
and leaked device objects, and says so in its exit status and JSON.
"""
import json
import os
import subprocess
import tempfile
import unittest
import xml.dom.minidom

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
STAGES = ['baseline', 'precreate', 'parallel-mkey', 'deferred-delete', 'all']
# design.md's JSON, plus what the tool adds and the checks below rely on.
STAGE_KEYS = {'name': str, 'downtime_ms': float, 'src_stop_ms': float, 'dst_start_ms': float,
              'dst_mr_ms': float, 'dst_vq_ms': float, 'lost_packets': int,
              'duplicated_packets': int, 'dirty_pages_checked': int,
              'dirty_pages_missing': int, 'leaked_objects': int, 'frames': int}


# Zero-cost test profiles with optional capabilities turned off (issue 10).
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'profiles')


def migrate(*args, timeout=240, profile='fast'):
    """Run migrate on the fast profile (or another); returns (exit status, output)."""
    p = subprocess.run([TOOL, 'migrate', '--profile', profile, *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors='replace')


class Migrate(unittest.TestCase):
    def run_json(self, *args, profile='fast'):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            rc, out = migrate(*args, '--json', path, profile=profile)
            self.assertEqual(rc, 0, out)
            with open(path) as f:
                return json.load(f), out

    def check_doc(self, doc, devices, pairs, mem_gb, size, stages, ring, model='fast'):
        self.assertEqual(doc['model'], model)
        sc = doc['scenario']
        self.assertEqual((sc['name'], sc['devices'], sc['queue_pairs'], sc['mem_gb'],
                          sc['queue_size'], sc['ring']),
                         ('custom', devices, pairs, mem_gb, size, ring))
        self.assertEqual([s['name'] for s in doc['stages']], stages)
        for s in doc['stages']:
            for key, kind in STAGE_KEYS.items():
                self.assertIsInstance(s[key], kind, f'{s["name"]}: {key}')
            self.assertTrue(s['ok'], s)
            self.assertEqual(s['lost_packets'], 0, s)
            self.assertEqual(s['duplicated_packets'], 0, s)
            self.assertTrue(s['dirty_logged'], s)
            self.assertGreater(s['dirty_pages_checked'], 0, s)
            self.assertEqual(s['dirty_pages_missing'], 0, s)
            self.assertEqual(s['leaked_objects'], 0, s)
            self.assertGreater(s['frames'], 0, s)
            # The breakdown is part of the downtime it explains.
            self.assertGreater(s['downtime_ms'], 0)
            self.assertLessEqual(s['src_stop_ms'] + s['dst_start_ms'], s['downtime_ms'] + 1e-6)
            self.assertLessEqual(s['dst_mr_ms'] + s['dst_vq_ms'], s['dst_start_ms'] + 1e-6)
        if 'baseline' in stages and 'all' in stages:
            self.assertIn('downtime_baseline_over_all', doc['ratios'])

    def test_one_device_split(self):
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '4')
        self.check_doc(doc, 1, 2, 4, 256, STAGES, 'split')
        self.assertIn('| stage ', out)
        self.assertIn('baseline/all: downtime', out)

    def test_devices_lacking_optional_caps_still_migrate(self):
        """Issue 10 A8, B1, B2: without freeze_to_rdy, the modify caps or counters
        (tests/profiles/), every stage forwards and migrates with no lost or
        duplicated frame and a complete dirty log."""
        for name in ('caps-no-freeze', 'caps-no-modify', 'caps-no-counters',
                     'caps-minimal'):
            with self.subTest(profile=name):
                path = os.path.join(PROFILES, name + '.json')
                doc, _ = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '2',
                                       '--stages', 'baseline,all', profile=path)
                self.check_doc(doc, 1, 2, 2, 256, ['baseline', 'all'], 'split', model=path)

    def test_two_devices_packed(self):
        doc, _ = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                               '--packed')
        self.check_doc(doc, 2, 2, 4, 256, STAGES, 'packed')

    def test_two_devices_split_large_rings(self):
        doc, _ = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                               '--queue-size', '1024', '--stages', 'baseline,all')
        self.check_doc(doc, 2, 2, 4, 1024, ['baseline', 'all'], 'split')

    def test_one_device_packed_precreated(self):
        doc, _ = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '4',
                               '--packed', '--stages', 'precreate,all')
        self.check_doc(doc, 1, 2, 4, 256, ['precreate', 'all'], 'packed')

    def test_hostile_early_base(self):
        """GET_VRING_BASE on every ring before DRIVER_OK, then a normal migration."""
        for stages in ('baseline', 'all'):
            doc, out = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                                     '--stages', stages, '--hostile', 'early-base')
            self.assertIn('GET_VRING_BASE before DRIVER_OK', out)
            self.check_doc(doc, 2, 2, 4, 256, [stages], 'split')

    def test_hostile_disconnect(self):
        """The front end goes away between the source stop and the destination start;
        both sides must then carry a normal migration."""
        for stages, packed in (('baseline', []), ('all', ['--packed'])):
            doc, out = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                                     '--stages', stages, '--hostile', 'disconnect', *packed)
            self.assertIn('front end gone', out)
            self.check_doc(doc, 2, 2, 4, 256, [stages], 'packed' if packed else 'split')

    def test_plot(self):
        with tempfile.TemporaryDirectory() as d:
            svg = os.path.join(d, 'r.svg')
            rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                              '--stages', 'baseline,all', '--plot', svg)
            self.assertEqual(rc, 0, out)
            dom = xml.dom.minidom.parse(svg)
            texts = [t.firstChild.data for t in dom.getElementsByTagName('text')
                     if t.firstChild is not None]
            self.assertIn('baseline', texts)
            self.assertIn('all', texts)
            self.assertGreaterEqual(len(dom.getElementsByTagName('rect')), 4)

    def test_usage(self):
        for args in (['--devices', '1'],
                     ['--scenario', 'nope'],
                     ['--scenario', 'seed-mkey', '--devices', '2'],
                     ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                      '--stages', 'baseline,fastest'],
                     ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                      '--queue-size', '300']):
            rc, out = migrate(*args)
            self.assertEqual(rc, 2, f'{args}: {out}')
            self.assertIn('migrate', out)
        rc, out = migrate('--help')
        self.assertEqual(rc, 0)
        self.assertIn('--scenario', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
