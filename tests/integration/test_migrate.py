#!/usr/bin/env python3
"""dpdk-test-lm migrate on the fast profile: small migrations and hostile front ends.

Each run is a whole in-process migration (sources and destinations served by
DPDK's vhost library, the built-in front end in QEMU's order, guest traffic);
the tool itself checks packets (lost, duplicated, corrupted), the dirty log
and leaked device objects, and says so in its exit status and JSON.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.dom.minidom

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
STAGES = ['baseline', 'precreate', 'parallel-mkey', 'deferred-delete', 'all']
# design.md's JSON, plus what the tool adds and the checks below rely on.
STAGE_KEYS = {'name': str, 'downtime_ms': float, 'src_stop_ms': float, 'dst_start_ms': float,
              'dst_mr_ms': float, 'dst_vq_ms': float, 'lost_packets': int,
              'duplicated_packets': int, 'dirty_pages_checked': int,
              'dirty_pages_missing': int, 'leaked_objects': int, 'frames': int,
              'snapshot_pages_compared': int, 'vu_requests': int, 'vu_round_trips': int}


# Zero-cost test profiles with optional capabilities turned off.
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'profiles')
# The reference floor method, beside the project in its checkout (CI has it).
FLOOR_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..',
                        'shared', 'fw-model', 'floor.py')
# Fields the tool adds per stage: the model, the floor, the runs.
MODEL_KEYS = {'model_busy_ms': float, 'model_pin_ms': float, 'model_actual_ms': float,
              'model_charges': int, 'overshoot_mean_us': float, 'floor_ms': float,
              'model_src_ms': float, 'model_dst_ms': float,
              'repeat': int, 'downtime_min_ms': float, 'downtime_median_ms': float,
              'downtime_max_ms': float, 'runs': list}


def host_semaphore(test, out):
    """The /dev/shm file of the host pin-token semaphore (MLX5_LM_EMU_HOST) that the run
    whose output is out created and named. Its own, not any of that prefix: another
    build's tests may run a migration beside this one (.ci/run)."""
    m = re.search(r'pinning tokens \(/(mlx5-lm-host-migrate-\d+)\)', out)
    test.assertIsNotNone(m, out)
    return os.path.join('/dev/shm', 'sem.' + m.group(1))


def processes_with_arg(arg):
    """Pids of the processes whose command line has arg (a run's children are forks)."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if arg.encode() in f.read().split(b'\0'):
                    found.append(pid)
        except OSError:
            pass
    return found


def processes_with_env(name, value):
    """Pids of the processes whose environment has name=value."""
    want = ('%s=%s' % (name, value)).encode()
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/environ' % pid, 'rb') as f:
                if want in f.read().split(b'\0'):
                    found.append(pid)
        except OSError:
            pass
    return found


def migrate(*args, timeout=240, profile='fast'):
    """Run migrate on the fast profile (or another); returns (exit status, output)."""
    p = subprocess.run([TOOL, 'migrate', '--profile', profile, *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors='replace')


class Migrate(unittest.TestCase):
    def test_ctrl_c_reports_what_completed_and_cleans_up(self):
        """SIGINT: the run in progress ends with its teardown, the complete rounds
        are reported and written, exit 130; it used to leave the run's sockets and
        EAL's runtime directory behind and lose every result."""
        import select
        import signal
        import time
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            p = subprocess.Popen([TOOL, 'migrate', '--profile', 'fast', '--devices', '1',
                                  '--queue-pairs', '2', '--mem-gb', '2', '--stages', 'all',
                                  '--repeat', '20', '--json', path],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out, deadline = b'', time.monotonic() + 120
            try:
                # Once run 2 has begun, run 1 is complete.
                while b'run 2 of 20' not in out:
                    self.assertLess(time.monotonic(), deadline, 'run 2 never began: ' +
                                    out.decode(errors='replace'))
                    if select.select([p.stdout], [], [], 1)[0]:
                        chunk = os.read(p.stdout.fileno(), 65536)
                        self.assertTrue(chunk, out.decode(errors='replace'))
                        out += chunk
                p.send_signal(signal.SIGINT)
                rest, _ = p.communicate(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            out = (out + rest).decode(errors='replace')
            self.assertEqual(p.returncode, 130, out)
            self.assertIn('migrate: SIGINT: stopping after the current run', out)
            self.assertIn('migrate: interrupted: reporting', out)
            with open(path) as f:
                doc = json.load(f)
            self.assertGreaterEqual(doc['repeat'], 1)
            self.assertLess(doc['repeat'], 20)
            self.assertEqual(len(doc['stages'][0]['runs']), doc['repeat'])
            # EAL's runtime directory (eal_get_runtime_dir: /var/run for root).
            run = '/var/run' if os.geteuid() == 0 else os.environ.get('XDG_RUNTIME_DIR', '/tmp')
            self.assertFalse(os.path.exists('%s/dpdk/test-lm-%d' % (run, p.pid)), out)

    def run_json(self, *args, profile='fast'):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            rc, out = migrate(*args, '--json', path, profile=profile)
            self.assertEqual(rc, 0, out)
            # The user is told where the results went, as for --plot.
            self.assertIn('migrate: results written to ' + path, out)
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
            for key, kind in {**STAGE_KEYS, **MODEL_KEYS}.items():
                self.assertIsInstance(s[key], kind, f'{s["name"]}: {key}')
            self.assertEqual(len(s['runs']), s['repeat'])
            self.assertEqual(s['repeat'], doc['repeat'])
            self.assertGreaterEqual(s['model_busy_ms'], 0)
            self.assertGreaterEqual(s['model_pin_ms'], 0)
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
            # Memory and queue times are summed over the devices, which are
            # configured at once: each device's two parts are within its own
            # configuration, and each configuration within the start window.
            self.assertLessEqual(s['dst_mr_ms'] + s['dst_vq_ms'], s['dst_conf_ms'] + 1e-6)
            self.assertLessEqual(s['dst_conf_ms'], devices * s['dst_start_ms'] + 1e-6)
        if 'baseline' in stages and 'all' in stages:
            self.assertIn('downtime_baseline_over_all', doc['ratios'])

    def test_one_split_device_migrates_every_stage_and_prints_the_table(self):
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '4')
        self.check_doc(doc, 1, 2, 4, 256, STAGES, 'split')
        self.assertIn('| stage ', out)
        self.assertIn('baseline/all: downtime', out)

    def test_devices_lacking_optional_caps_still_migrate(self):
        """Without freeze_to_rdy, the modify caps or counters
        (tests/profiles/), every stage forwards and migrates with no lost or
        duplicated frame and a complete dirty log."""
        for name in ('caps-no-freeze', 'caps-no-modify', 'caps-no-counters',
                     'caps-minimal'):
            with self.subTest(profile=name):
                path = os.path.join(PROFILES, name + '.json')
                doc, _ = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '2',
                                       '--stages', 'baseline,all', profile=path)
                self.check_doc(doc, 1, 2, 2, 256, ['baseline', 'all'], 'split', model=path)

    def test_two_packed_devices_migrate_every_stage(self):
        doc, _ = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                               '--packed')
        self.check_doc(doc, 2, 2, 4, 256, STAGES, 'packed')

    def test_two_devices_with_1024_entry_rings_migrate(self):
        doc, _ = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                               '--queue-size', '1024', '--stages', 'baseline,all')
        self.check_doc(doc, 2, 2, 4, 1024, ['baseline', 'all'], 'split')

    def test_packed_device_migrates_with_precreated_queues(self):
        doc, _ = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '4',
                               '--packed', '--stages', 'precreate,all')
        self.check_doc(doc, 1, 2, 4, 256, ['precreate', 'all'], 'packed')

    def test_migrates_with_qemus_acks_and_with_every_request_acked(self):
        """The front end asks acks where QEMU does by default (vu_client.h,
        VU_ACK_QEMU; unit test vu: test_acks_are_asked_for_every_request_or_where_qemu_waits);
        --acks every makes every request a round trip. Both migrate without loss; the
        JSON says which."""
        for acks in (None, 'every'):
            with self.subTest(acks=acks):
                extra = ['--acks', acks] if acks else []
                doc, _ = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '2',
                                       '--stages', 'all', *extra)
                self.check_doc(doc, 1, 2, 2, 256, ['all'], 'split')
                self.assertEqual(doc['scenario']['acks'], acks or 'qemu')
                # The downtime's requests, and the replies waited for among them.
                s = doc['stages'][0]
                req, rt = s['vu_requests'], s['vu_round_trips']
                # At least each source ring's GET_VRING_BASE, the destination's
                # four rings' NUM, BASE, ADDR, KICK, CALL and ENABLE, its table.
                self.assertGreaterEqual(req, 4 + 4 * 6 + 1, s)
                if acks == 'every':
                    self.assertEqual(rt, req, s)
                else:
                    # QEMU waits for the GET_VRING_BASEs, the table, the enables.
                    self.assertGreaterEqual(rt, 4 + 1 + 4, s)
                    self.assertLessEqual(rt, req - 4 * 5, s)

    def test_vring_base_before_driver_ok_then_a_clean_migration(self):
        """GET_VRING_BASE on every ring before DRIVER_OK, then a normal migration."""
        for stages in ('baseline', 'all'):
            doc, out = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                                     '--stages', stages, '--hostile', 'early-base')
            self.assertIn('GET_VRING_BASE before DRIVER_OK', out)
            self.check_doc(doc, 2, 2, 4, 256, [stages], 'split')

    def test_front_end_gone_between_stop_and_start_then_a_clean_migration(self):
        """The front end goes away between the source stop and the destination start;
        both sides must then carry a normal migration."""
        for stages, packed in (('baseline', []), ('all', ['--packed'])):
            doc, out = self.run_json('--devices', '2', '--queue-pairs', '2', '--mem-gb', '4',
                                     '--stages', stages, '--hostile', 'disconnect', *packed)
            self.assertIn('front end gone', out)
            self.check_doc(doc, 2, 2, 4, 256, [stages], 'packed' if packed else 'split')

    def test_plot_is_an_svg_naming_every_stage(self):
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

    def test_repeat_reports_the_median_run(self):
        """--repeat 3: three runs per stage in the JSON, the stage's numbers are its
        median run's (by downtime), min <= median <= max, and the table says so."""
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                                 '--stages', 'baseline,all', '--repeat', '3')
        self.check_doc(doc, 1, 1, 2, 256, ['baseline', 'all'], 'split')
        self.assertIn('median of 3 runs', out)
        self.assertIn('min-max ms', out)
        for s in doc['stages']:
            runs = s['runs']
            self.assertEqual(len(runs), 3)
            for r in runs:
                self.assertTrue(r['ok'], r)
                self.assertEqual(r['lost_packets'], 0)
                self.assertEqual(r['duplicated_packets'], 0)
                self.assertEqual(r['dirty_pages_missing'], 0)
            med = sorted(runs, key=lambda r: r['downtime_ms'])[1]
            self.assertEqual(s['downtime_ms'], med['downtime_ms'])
            self.assertEqual(s['downtime_median_ms'], med['downtime_ms'])
            self.assertEqual(s['src_stop_ms'], med['src_stop_ms'])
            self.assertEqual(s['downtime_min_ms'], min(r['downtime_ms'] for r in runs))
            self.assertEqual(s['downtime_max_ms'], max(r['downtime_ms'] for r in runs))

    def test_floor_and_model_columns_follow_the_cost_model(self):
        """cx6dx, a small shape: the floor of the shape (floor.py's method) is in the
        JSON and the table, x_floor = downtime / floor, the model's sums are >= 0 and
        the model charged commands; where floor.py is at hand, the floors agree."""
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                                 '--stages', 'baseline,all', profile='cx6dx')
        self.check_doc(doc, 1, 1, 2, 256, ['baseline', 'all'], 'split', model='cx6dx')
        self.assertIn('x floor', out)
        self.assertIn('model busy ms', out)
        self.assertIn('floor (profile cx6dx', out)
        fl = doc['floor']
        self.assertGreater(fl['floor_overlapped_devices_ms'], 0)
        for s in doc['stages']:
            self.assertEqual(s['floor_ms'], fl['floor_overlapped_devices_ms'])
            self.assertAlmostEqual(s['x_floor'], s['downtime_ms'] / s['floor_ms'], places=9)
            self.assertGreater(s['model_charges'], 0, s)
            self.assertGreater(s['model_busy_ms'], 0, s)
            self.assertGreaterEqual(s['model_actual_ms'],
                                    s['model_busy_ms'] + s['model_pin_ms'] - 1e-6, s)
            self.assertAlmostEqual(s['model_src_ms'] + s['model_dst_ms'],
                                   s['model_busy_ms'] + s['model_pin_ms'], delta=1e-6)
        if os.path.exists(FLOOR_PY):
            ref = json.loads(subprocess.run(
                ['python3', FLOOR_PY, os.path.join(os.path.dirname(FLOOR_PY), 'cx6dx.json'),
                 '1', '1', '2'], check=True, stdout=subprocess.PIPE).stdout)
            for key in ('baseline_ms', 'floor_serial_devices_ms',
                        'floor_overlapped_devices_ms', 'mr_create_floor_ms',
                        'dst_queues_floor_ms'):
                self.assertAlmostEqual(fl[key], ref[key], delta=0.051, msg=key)
            self.assertEqual(fl['chunks'], ref['chunks'])
        # The fast profile charges nothing: no floor, no ratio to it.
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                                 '--stages', 'all')
        self.assertEqual(doc['stages'][0]['floor_ms'], 0)
        self.assertIsNone(doc['stages'][0]['x_floor'])
        self.assertEqual(doc['stages'][0]['model_charges'], 0)
        self.assertIn('floor: none', out)

    def check_prereg(self, s, mem_bytes, evacuation=False):
        """A prereg stage's preparation: whole, before the stop, used whole (an
        evacuation's: the slowest VM's, within the span of all of them)."""
        pr = s['prereg']
        self.assertLess(pr['start_ms'], pr['end_ms'], pr)
        self.assertLess(pr['end_ms'], 0, pr)
        if evacuation:
            self.assertGreater(pr['prep_ms'], 0, pr)
            self.assertLessEqual(pr['prep_ms'], pr['end_ms'] - pr['start_ms'] + 1e-6, pr)
        else:
            self.assertAlmostEqual(pr['prep_ms'], pr['end_ms'] - pr['start_ms'], places=6)
        self.assertEqual(pr['bytes'], mem_bytes)
        self.assertEqual(pr['used_bytes'], mem_bytes)

    def test_prereg_stage_prepares_the_destinations_while_the_sources_run(self):
        """Stage prereg = all + the destinations' memory prepared before the stop:
        the same checks as every stage (no frame lost or duplicated, the dirty log
        complete, nothing left alive), the preparation started and ended before the
        first GET_VRING_BASE and served the whole table; under cx6dx its own floor
        (stop, indirect mkey, queues) is the one x_floor compares with."""
        doc, out = self.run_json('--devices', '2', '--queue-pairs', '1', '--mem-gb', '2',
                                 '--stages', 'all,prereg', profile='cx6dx')
        self.check_doc(doc, 2, 1, 2, 256, ['all', 'prereg'], 'split', model='cx6dx')
        fl = doc['floor']
        all_, pre = doc['stages']
        self.assertNotIn('prereg', all_)
        self.check_prereg(pre, 2 * 2 << 30)
        self.assertEqual(all_['floor_ms'], fl['floor_overlapped_devices_ms'])
        self.assertEqual(pre['floor_ms'], fl['floor_prereg_ms'])
        self.assertGreater(fl['floor_prereg_ms'], 0)
        self.assertLess(fl['floor_prereg_ms'], fl['floor_overlapped_devices_ms'])
        self.assertEqual(pre['prereg']['model_floor_ms'], fl['prereg_model_ms'])
        self.assertIn('prereg: the destinations\' memory (4 GiB) prepared from', out)
        self.assertIn('4 GiB of it used at DRIVER_OK', out)
        # An evacuation: every VM's destinations prepared, each VM checked.
        doc, _ = self.run_json('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                               '--vms', '2', '--stages', 'prereg')
        self.check_doc(doc, 1, 1, 2, 256, ['prereg'], 'split')
        self.check_evacuate(doc, 2)
        self.check_prereg(doc['stages'][0], 2 * 2 << 30, evacuation=True)
        # Through the service, device_prepare takes a front-end process: this one is
        # every VM's, so each VM's destination would get every VM's memory.
        rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2', '--vms',
                          '2', '--service', '--stages', 'prereg')
        self.assertEqual(rc, 2, out)
        self.assertIn('give --vms 1', out)

    def test_prereg_through_the_service_prepares_with_device_prepare(self):
        """--service --vms 1: the destination service's device_prepare with this
        process's pid, as an operator's hook calls it, prepares the VM's memory before
        the stop; the start uses it whole (state used, nothing registered as a
        fallback), with the checks of every stage."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                              '--vms', '1', '--service', '--stages', 'all,prereg',
                              '--json', path, profile='fast')
            self.assertEqual(rc, 0, out)
            with open(path) as f:
                doc = json.load(f)
        self.check_evacuate(doc, 1)
        self.assertTrue(doc['scenario']['service'])
        all_, pre = doc['stages']
        self.assertNotIn('prereg', all_)
        for s in (all_, pre):
            self.assertTrue(s['ok'], s)
            self.assertEqual((s['lost_packets'], s['duplicated_packets'],
                              s['dirty_pages_missing'], s['leaked_objects']), (0, 0, 0, 0))
        pr = pre['prereg']
        self.assertLess(pr['start_ms'], pr['end_ms'], pr)
        self.assertLess(pr['end_ms'], 0, pr)
        # Every shared memory file of 2 MiB or more that this process maps: the
        # guest's, which the start used whole.
        self.assertGreaterEqual(pr['bytes'], 2 << 30, pr)
        self.assertEqual(pr['used_bytes'], 2 << 30, pr)
        self.assertIn('through the service (device_prepare', out)
        # The destination's memory left the start: at DRIVER_OK only what the
        # prepared chunks need (their indirect mkey, made once vhost had the table).
        self.assertLess(pre['dst_mr_ms'], all_['dst_mr_ms'], (pre, all_))

    def test_prereg_siblings_stops_the_vms_other_nics_at_its_first_stop(self):
        """Stage prereg-siblings = prereg + sibling_stop=1: at the first source's stop
        the VM's other source is asked to stop ahead (whether its worker gets there
        before its own GET_VRING_BASE is timing: test_sibling_stop waits for it); the
        checks of every stage hold (no frame lost or duplicated, the dirty log
        complete, nothing left alive). Refused for an evacuation, whose VMs all have
        this process as front end."""
        doc, out = self.run_json('--devices', '2', '--queue-pairs', '1', '--mem-gb', '2',
                                 '--stages', 'prereg-siblings', '--eal',
                                 '--log-level=pmd.vdpa.mlx5_lm:info')
        self.check_doc(doc, 2, 1, 2, 256, ['prereg-siblings'], 'split')
        self.check_prereg(doc['stages'][0], 2 * 2 << 30)
        self.assertEqual(len(re.findall(r'asked to stop ahead', out)), 1, out)
        self.assertEqual(len(re.findall(r'vdpa_mlx5_lm[01]: stopped in', out)), 2, out)
        rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2', '--vms',
                          '2', '--stages', 'prereg-siblings')
        self.assertEqual(rc, 2, out)
        self.assertIn('is for one VM, not an evacuation', out)

    def test_devx_trace_writes_each_devices_trace_and_the_runs_window(self):
        """--devx-trace DIR: every device of ours traces its DevX commands beside the
        run's downtime window, in the traces' clock; downtime_timeline.py finds each
        device's stop or start inside the window; a second invocation into the same
        directory adds run 2 instead of writing over run 1."""
        timeline = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                'doc', 'perf', 'downtime_timeline.py')
        with tempfile.TemporaryDirectory() as d:
            args = ('--devices', '2', '--queue-pairs', '2', '--mem-gb', '2', '--stages',
                    'prereg', '--devx-trace', d)
            doc, _ = self.run_json(*args)
            rc, out = migrate(*args)
            self.assertEqual(rc, 0, out)
            for run in (1, 2):
                with open(os.path.join(d, 'prereg-run%d-vm0.json' % run)) as f:
                    w = json.load(f)
                self.assertEqual((w['stage'], w['run'], w['round'], w['vm'], w['devices']),
                                 ('prereg', run, '', 0, 2))
                self.assertGreater(w['t0_us'], 0)
                for dev in ('src0', 'src1', 'dst0', 'dst1'):
                    self.assertTrue(os.path.getsize(os.path.join(
                        d, 'prereg-run%d-vm0-%s.jsonl' % (run, dev))) > 0, dev)
            self.assertGreater(w['downtime_ms'], 0)
            with open(os.path.join(d, 'prereg-run1-vm0.json')) as f:
                w1 = json.load(f)
            self.assertAlmostEqual(w1['downtime_ms'], doc['stages'][0]['downtime_ms'],
                                   delta=0.001)
            p = subprocess.run([sys.executable, timeline, d, '--run', '1'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            rows = {l.split('|')[1].strip(): l for l in p.stdout.splitlines()
                    if re.match(r'\| (src|dst)\d ', l)}
            self.assertEqual(sorted(rows), ['dst0', 'dst1', 'src0', 'src1'], p.stdout)
            # Each source suspends its 4 queues, each destination makes them RDY
            # (its mkey made at the first kick, preconf=1), inside the window
            # (every time from 0, the first GET_VRING_BASE).
            # The benchmark's checks run between the stop and the start and are left
            # out of the downtime: the window on the traces' clock is that much longer,
            # or the last destination's MODIFYs would fall outside it.
            self.assertGreaterEqual(w1['checks_ms'], 0)
            self.assertGreaterEqual(w1['checks_from_ms'], w1['src_stop_ms'])
            checks_end = w1['checks_from_ms'] + w1['checks_ms']
            for dev, row in rows.items():
                self.assertRegex(row, r'MODIFY_GENERAL_OBJECT x4\b', p.stdout)
                first = float(row.split('|')[2])
                self.assertGreaterEqual(first, 0)
                self.assertLessEqual(first, w1['downtime_ms'] + w1['checks_ms'])
                if dev.startswith('dst'):
                    self.assertGreaterEqual(first, checks_end, p.stdout)
            self.assertIn('no command of the VM in flight', p.stdout)
            p = subprocess.run([sys.executable, timeline, d, '--stage', 'all'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(p.returncode, 1, p.stdout)
        # An evacuation over 2 processes: each round named, the same run number in both
        # processes (only the first runs VM 0 alone); the VM idle in the round alone
        # keeps an empty window.
        with tempfile.TemporaryDirectory() as d:
            rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                              '--vms', '3', '--processes', '2', '--stages', 'prereg',
                              '--devx-trace', d)
            self.assertEqual(rc, 0, out)
            windows = {f[:-5]: os.path.getsize(os.path.join(d, f))
                       for f in os.listdir(d) if f.endswith('.json')}
            self.assertEqual(sorted(windows), ['prereg-run1-alone-vm0', 'prereg-run1-alone-vm1',
                                               'prereg-run1-at-once-vm0',
                                               'prereg-run1-at-once-vm1',
                                               'prereg-run1-at-once-vm2'])
            self.assertEqual(windows['prereg-run1-alone-vm1'], 0)
            for name, want in (('prereg-run1-alone-vm0', ('alone', 0)),
                               ('prereg-run1-at-once-vm2', ('at-once', 2))):
                with open(os.path.join(d, name + '.json')) as f:
                    w = json.load(f)
                self.assertEqual((w['round'], w['vm']), want)
            p = subprocess.run([sys.executable, timeline, d, '--round', 'at-once'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            self.assertEqual(len(re.findall(r'^## prereg, run 1, at-once, VM \d', p.stdout,
                                            re.M)), 3, p.stdout)
            long_dir = os.path.join(d, 'x' * 200)
            os.mkdir(long_dir)
            self.assert_refused_in_one_line(('--devices', '1', '--queue-pairs', '1',
                                             '--mem-gb', '2', '--devx-trace', long_dir),
                                            'at most 191 long')
        self.assert_refused_in_one_line(('--devices', '1', '--queue-pairs', '1', '--mem-gb',
                                         '2', '--devx-trace', '/nonexistent-dir'),
                                        'No such file or directory')
        self.assert_refused_in_one_line(('--devices', '1', '--queue-pairs', '1', '--mem-gb',
                                         '2', '--devx-trace', timeline), 'not a directory')

    def assert_refused_in_one_line(self, args, why):
        """migrate ARGS exits 2 with one line of output that says why."""
        rc, out = migrate(*args)
        self.assertEqual(rc, 2, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertIn(why, out)

    def check_evacuate(self, doc, vms):
        self.assertEqual(doc['scenario']['vms'], vms)
        for s in doc['stages']:
            ev = s['evacuate']
            self.assertEqual(ev['vms'], vms)
            self.assertEqual(len(ev['vm']), vms)
            self.assertGreater(ev['alone']['downtime_ms'], 0)
            times = sorted(v['downtime_ms'] for v in ev['vm'])
            self.assertEqual(ev['downtime_max_ms'], times[-1])
            self.assertEqual(ev['downtime_median_ms'], times[(vms - 1) // 2])
            # The stage's downtime is the slowest VM's at once.
            self.assertEqual(s['downtime_ms'], times[-1])
            self.assertAlmostEqual(ev['max_over_alone'],
                                   times[-1] / ev['alone']['downtime_ms'], places=9)

    def test_evacuation_of_small_vms_migrates_each_without_loss(self):
        """Host evacuation, small: 3 VMs of 1 NIC x 2 pairs x 2 GiB, VM 0 alone then
        all at once from their own front-end threads; every VM forwards after its
        migration with no lost or duplicated frame, a complete dirty log and no
        device object left (checked per VM and summed; never timed)."""
        doc, out = self.run_json('--devices', '1', '--queue-pairs', '2', '--mem-gb', '2',
                                 '--vms', '3')
        self.check_doc(doc, 1, 2, 2, 256, ['all'], 'split')
        self.check_evacuate(doc, 3)
        self.assertIn('all 3 VMs at once', out)
        self.assertIn('at once max ms', out)
        # Two NICs per VM, packed rings, two rounds: the same guarantees.
        doc, _ = self.run_json('--devices', '2', '--queue-pairs', '1', '--mem-gb', '2',
                               '--vms', '2', '--packed', '--stages', 'baseline,all',
                               '--repeat', '2')
        self.check_doc(doc, 2, 1, 2, 256, ['baseline', 'all'], 'packed')
        self.check_evacuate(doc, 2)

    def test_evacuate_scenario_is_8_vms_and_vms_sets_how_many(self):
        """--scenario evacuate is 8 VMs x 1 NIC x 4 pairs x 16 GiB; --vms changes K."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            rc, out = migrate('--scenario', 'evacuate', '--vms', '2', '--json', path)
            self.assertEqual(rc, 0, out)
            with open(path) as f:
                doc = json.load(f)
        sc = doc['scenario']
        self.assertEqual((sc['name'], sc['devices'], sc['queue_pairs'], sc['mem_gb'],
                          sc['vms']), ('evacuate', 1, 4, 16, 2))
        self.check_evacuate(doc, 2)
        s = doc['stages'][0]
        self.assertEqual((s['lost_packets'], s['duplicated_packets'], s['dirty_pages_missing'],
                          s['leaked_objects']), (0, 0, 0, 0))
        rc, out = migrate('--help')
        self.assertIn('evacuate (8 VMs of 1 device x 4 queue pairs x 16 GiB', out)

    def test_evacuation_over_processes_migrates_each_vm_and_leaves_nothing(self):
        """--processes P: the K VMs split over P back-end processes (one EAL, vhost thread
        and set of devices each), stopped at the same moment: every VM migrates with no
        lost or duplicated frame, a complete dirty log and no device object left; no
        child process and no host semaphore outlives the run."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            args = ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '2', '--vms', '3',
                    '--processes', '3', '--json', path]
            rc, out = migrate(*args)
            self.assertEqual(rc, 0, out)
            with open(path) as f:
                doc = json.load(f)
            # The children ran the same command line (they are forks): none is left.
            self.assertEqual(processes_with_arg(path), [])
        self.assertFalse(os.path.exists(host_semaphore(self, out)))
        self.assertEqual(doc['scenario']['processes'], 3)
        self.check_evacuate(doc, 3)
        s = doc['stages'][0]
        self.assertTrue(s['ok'], s)
        self.assertEqual((s['lost_packets'], s['duplicated_packets'], s['dirty_pages_missing'],
                          s['leaked_objects']), (0, 0, 0, 0))
        self.assertGreater(s['dirty_pages_checked'], 0)
        self.assertTrue(all(v['downtime_ms'] > 0 for v in s['evacuate']['vm']))
        self.assertIn('in 3 back-end processes', out)
        self.assertIn('all, 3 procs', out)
        for v in range(3):
            self.assertIn('vm%u-vm%u at once (in this process of 3)' % (v, v), out)

    def test_killed_back_end_process_is_named_and_nothing_outlives_the_run(self):
        """A back-end process that dies mid-run is named by the parent, which exits 1;
        the other process gives up and tears down; nothing outlives the run."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            p = subprocess.Popen([TOOL, 'migrate', '--profile', 'fast', '--devices', '1',
                                  '--queue-pairs', '1', '--mem-gb', '2', '--vms', '2',
                                  '--processes', '2', '--repeat', '100', '--json', path],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = b''
            # Synchronised on the output: both children past their first start line.
            for line in p.stdout:
                out += line
                if out.count(b'at once (in this process of 2)') == 2:
                    break
            children = []
            for pid in filter(str.isdigit, os.listdir('/proc')):
                try:
                    with open('/proc/%s/status' % pid) as f:
                        if ('PPid:\t%d\n' % p.pid) in f.read():
                            children.append(int(pid))
                except OSError:
                    pass
            self.assertEqual(len(children), 2, out.decode(errors='replace'))
            victim = max(children)
            os.kill(victim, 9)
            out += p.stdout.read()
            rc = p.wait(timeout=120)
            text = out.decode(errors='replace')
            self.assertEqual(rc, 1, text)
            self.assertIn('(pid %d) was killed by a signal' % victim, text)
            self.assertEqual(processes_with_arg(path), [])
        sem = host_semaphore(self, text)
        self.assertTrue(sem.endswith('-%d' % p.pid), sem)
        self.assertFalse(os.path.exists(sem))

    def test_evacuate_service(self):
        """--service: 2 VMs whose devices are in mlx5-lm-vhostd workers (a source and a
        destination service, one worker per VM each), each VM migrated alone and then
        both at once: no lost or duplicated frame, complete dirty logs, every VM's CPU
        by part in each window, the projection to 2, 16 and 64 CPUs (more CPUs never a
        larger bound), and nothing left alive: no device object (the services' exit),
        no service or worker process, no host semaphore, no socket directory."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            p = subprocess.Popen([TOOL, 'migrate', '--profile', 'fast', '--devices', '1',
                                  '--queue-pairs', '1', '--mem-gb', '2', '--vms', '2',
                                  '--service', '--json', path],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            out = p.communicate(timeout=240)[0].decode(errors='replace')
            self.assertEqual(p.returncode, 0, out)
            with open(path) as f:
                doc = json.load(f)
        # Every process of the run took the host's pin tokens through this name.
        self.assertEqual(processes_with_env('MLX5_LM_EMU_HOST', 'migrate-%d' % p.pid), [], out)
        sem = host_semaphore(self, out)
        self.assertTrue(sem.endswith('-%d' % p.pid), sem)
        self.assertFalse(os.path.exists(sem))
        dirs = re.findall(r'a source and a destination mlx5-lm-vhostd \(pids \d+, \d+\) in (\S+)',
                          out)
        self.assertEqual(len(dirs), 1, out)
        self.assertFalse(os.path.exists(dirs[0]), out)
        self.assertTrue(doc['scenario']['service'])
        # --device-list-probe is off by default: nothing perturbs the figures.
        self.assertNotIn('device_list_probe', doc)
        self.check_evacuate(doc, 2)
        s = doc['stages'][0]
        for key, kind in STAGE_KEYS.items():
            self.assertIsInstance(s[key], kind, key)
        self.assertTrue(s['ok'], s)
        self.assertEqual((s['lost_packets'], s['duplicated_packets'], s['bad_packets'],
                          s['dirty_pages_missing'], s['leaked_objects']), (0, 0, 0, 0, 0))
        self.assertTrue(s['dirty_logged'])
        self.assertGreater(s['dirty_pages_checked'], 0)
        # The workers' configuration timings, read through the service after the window.
        # device_get rounds each to the microsecond apart (vhostd_worker.c, ms3): the two
        # parts may sum to 1.5 us over the total.
        self.assertGreater(s['dst_conf_ms'], 0)
        self.assertLessEqual(s['dst_mr_ms'] + s['dst_vq_ms'], s['dst_conf_ms'] + 2e-3)
        # The service's workers do not report the cost model: absent, not 0.
        self.assertIsNone(s['model_busy_ms'])
        ev = s['evacuate']
        parts = ('front_end_ms', 'vhost_ms', 'driver_ms', 'emulator_ms', 'other_ms')
        for v in ev['vm']:
            self.assertGreater(v['alone']['downtime_ms'], 0)
            for rnd in ('at_once', 'alone'):
                cpu = v['cpu'][rnd]
                for k in parts:
                    self.assertGreaterEqual(cpu[k], 0, (rnd, k, cpu))
                    self.assertGreaterEqual(cpu['waited'][k], 0, (rnd, k, cpu))
                self.assertAlmostEqual(cpu['total_ms'], sum(cpu[k] for k in parts), places=6)
                # Each VM's own front end, vhost and driver threads worked in its window.
                for k in ('front_end_ms', 'vhost_ms', 'driver_ms'):
                    self.assertGreater(cpu[k], 0, (rnd, k, cpu))
        # "alone" is the median VM's time alone (the lower middle one of two).
        alone = sorted(range(2), key=lambda i: ev['vm'][i]['alone']['downtime_ms'])[0]
        self.assertEqual(ev['alone_vm'], alone)
        self.assertEqual(ev['alone'], {k: ev['vm'][alone]['alone'][k] for k in ev['alone']})
        win = ev['cpu']['at_once']
        self.assertGreater(win['window_ms'], 0)
        self.assertGreaterEqual(win['total_ms'], sum(v['cpu']['at_once']['total_ms']
                                                     for v in ev['vm']) - 1e-3)
        self.assertEqual(len(ev['cpu']['alone']), 2)
        pr = ev['projection']
        rows = pr['rows']
        cpus = [r['cpus'] for r in rows]
        self.assertTrue({2, 16, 64} <= set(cpus), rows)
        self.assertEqual(cpus, sorted(cpus))
        here = len(os.sched_getaffinity(0))
        self.assertEqual([r['cpus'] for r in rows if r['this_machine']], [here], rows)
        for a, b in zip(rows, rows[1:]):
            self.assertLessEqual(b['over_alone_at_least'], a['over_alone_at_least'])
            self.assertLessEqual(b['at_least_ms'], a['at_least_ms'])
        for r in rows:
            terms = {'model': pr['model_bound_ms'], 'alone': pr['alone_ms'],
                     'CPU': pr['window_cpu_ms'] / r['cpus'], 'serial': pr['serial_cpu_ms']}
            self.assertAlmostEqual(r['at_least_ms'], max(terms.values()), places=6)
            self.assertAlmostEqual(r['at_least_ms'], terms[r['bound']], places=6)
            self.assertGreaterEqual(r['over_alone_at_least'], 1.0)
        self.assertEqual(pr['window_cpu_ms'], win['total_ms'])
        m = pr['measured']
        self.assertAlmostEqual(m['max_over_alone'], ev['max_over_alone'], places=9)
        # The window holds the slowest VM's downtime.
        self.assertGreaterEqual(m['window_ms'], ev['downtime_max_ms'])
        self.assertEqual(m['window_ms'], win['window_ms'])
        self.assertGreater(m['runnable_mean'], 0)
        self.assertIn(pr['dominant_part'] + '_ms', parts)
        for text in ('all, service', 'CPU time by part', 'projection:', 'dominate'):
            self.assertIn(text, out)

    def test_evacuate_service_device_list_probe(self):
        """--device-list-probe: device_list called on the source service in a loop during
        the at-once window (and only then), every call answered with the source's
        devices; its figures in the output (which says they perturb the evacuation's) and
        in the JSON, the whole the sum of the windows."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            rc, out = migrate('--devices', '1', '--queue-pairs', '1', '--mem-gb', '2',
                              '--vms', '2', '--service', '--device-list-probe', '--json', path)
            self.assertEqual(rc, 0, out)
            with open(path) as f:
                doc = json.load(f)
        self.assertTrue(doc['stages'][0]['ok'], out)
        pr = doc['device_list_probe']
        self.assertEqual((pr['service'], pr['method'], pr['failed']),
                         ('source', 'device_list', 0), pr)
        # One window: the at-once round's (each VM alone is not probed).
        self.assertEqual(len(pr['windows']), 1, pr)
        w = pr['windows'][0]
        self.assertGreater(w['calls'], 0, pr)
        self.assertEqual(pr['calls'], w['calls'])
        for s in (pr, w):
            self.assertLessEqual(0, s['p50_ms'])
            self.assertLessEqual(s['p50_ms'], s['p99_ms'])
            self.assertLessEqual(s['p99_ms'], s['max_ms'])
        # The window's line as it ends, after the at-once round's start, and the summary.
        at_once = out.index('all 2 VMs at once')
        m = re.search(r'device_list on the source service meanwhile: (\d+) calls, p50 ([\d.]+) '
                      r'ms, p99 ([\d.]+) ms, max ([\d.]+) ms\n', out[at_once:])
        self.assertIsNotNone(m, out)
        self.assertEqual(int(m.group(1)), w['calls'])
        self.assertEqual(out.count('device_list on the source service meanwhile'), 1, out)
        m = re.search(r'perturb\s+the figures above\): 1 window, (\d+) calls, p50 ([\d.]+) ms, '
                      r'p99 ([\d.]+) ms, max ([\d.]+) ms, 0 failed', out)
        self.assertIsNotNone(m, out)
        self.assertEqual(int(m.group(1)), pr['calls'])
        self.assertAlmostEqual(float(m.group(4)), pr['max_ms'], places=2)

    def test_evacuate_service_refused(self):
        """--service with what it cannot do is refused with one line, before any work."""
        small = ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '2']
        for args, why in ((small + ['--service'], 'give --scenario evacuate or --vms'),
                          (small + ['--vms', '2', '--service', '--processes', '2'],
                           '--service or --processes, not both'),
                          (small + ['--vms', '2', '--service', '--backend', 'rdma'],
                           '--service is for the emu back end'),
                          (['--scenario', 'evacuate', '--service', '--stages', 'peer'],
                           'the peer stages are for one VM'),
                          (small + ['--vms', '2', '--device-list-probe'],
                           'give --service and 2 VMs or more'),
                          (small + ['--vms', '1', '--service', '--device-list-probe'],
                           'give --service and 2 VMs or more')):
            self.assert_refused_in_one_line(args, why)

    def test_bad_processes_values_are_refused_in_one_line(self):
        """Bad --processes values are refused with one line, before any work."""
        small = ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '2']
        for args, why in ((small + ['--vms', '3', '--processes', '0'], 'not a number in'),
                          (small + ['--vms', '3', '--processes', '4'], '4 processes for 3'),
                          (['--scenario', 'evacuate', '--processes', '9'], '9 processes for 8'),
                          (small + ['--processes', '2'], 'give --scenario evacuate or --vms'),
                          (['--scenario', 'seed-mkey', '--processes', '1'], 'give --scenario'),
                          (small + ['--vms', '2', '--processes', '2', '--backend', 'rdma'],
                           'for the emu back end')):
            self.assert_refused_in_one_line(args, why)

    def test_bad_arguments_exit_2_and_help_lists_the_options(self):
        for args in (['--devices', '1'],
                     ['--scenario', 'nope'],
                     ['--scenario', 'seed-mkey', '--devices', '2'],
                     ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                      '--stages', 'baseline,fastest'],
                     ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                      '--queue-size', '300'],
                     ['--devices', '1', '--queue-pairs', '1', '--mem-gb', '4',
                      '--repeat', '0'],
                     ['--scenario', 'seed-mkey', '--repeat', '101'],
                     ['--scenario', 'seed-mkey', '--repeat', 'x'],
                     ['--scenario', 'evacuate', '--vms', '0'],
                     ['--scenario', 'evacuate', '--vms', '17'],
                     ['--devices', '3', '--queue-pairs', '1', '--mem-gb', '4', '--vms', '6'],
                     ['--scenario', 'evacuate', '--hostile', 'early-base'],
                     ['--scenario', 'seed-mkey', '--acks', 'sometimes']):
            rc, out = migrate(*args)
            self.assertEqual(rc, 2, f'{args}: {out}')
            self.assertIn('migrate', out)
        rc, out = migrate('--help')
        self.assertEqual(rc, 0)
        for opt in ('--scenario', '--repeat', '--vms', 'evacuate', 'x floor', 'model busy',
                    '--acks', '--service', '--device-list-probe'):
            self.assertIn(opt, out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
