#!/usr/bin/env python3
"""dpdk-test-lm probe through the public path: EAL, vdev hotplug, the PMD,
the DevX transport and the emulated ConnectX (or the rdma back end)."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')

# Classic objects are named by the 24-bit id in the create output/destroy input;
# general objects by obj_id. Map each destroy opcode to its create opcode.
DESTROY_OF = {0x202: 0x200, 0x401: 0x400, 0x501: 0x500, 0x801: 0x800, 0x817: 0x816,
              0x902: 0x900, 0x914: 0x912, 0x918: 0x916, 0xa03: 0xa00}


def run(devargs, env=None, extra=()):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([TOOL, 'probe', '--devargs', devargs, *extra], env=e,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def nonempty_lines(*texts):
    return [l for t in texts for l in t.splitlines() if l.strip()]


class ProbeEmulated(unittest.TestCase):
    def test_probe_prints_caps_and_destroys_every_object(self):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, 't.jsonl')
            rc, out, err = run(f'emu=cx6dx,devx_trace={trace}')
            self.assertEqual(rc, 0, out + err)
            self.assertRegex(out, r'max_num_virtio_queues\s+256')
            self.assertRegex(out, r'virtio_queue_type\s+split, packed')
            self.assertRegex(out, r'event_mode\s+none, QP')
            self.assertIn('every device object destroyed', out)
            with open(trace) as f:
                recs = [json.loads(l) for l in f]
        self.assertTrue(recs)
        umems = [r for r in recs if r['op'] in ('UMEM_REG', 'UMEM_DEREG')]
        regs = sorted(r['umem_id'] for r in umems if r['op'] == 'UMEM_REG')
        deregs = sorted(r['umem_id'] for r in umems if r['op'] == 'UMEM_DEREG')
        self.assertTrue(regs)
        self.assertEqual(regs, deregs)
        # Receive steering: rules in the kernel's NIC RX root, not DevX flow tables.
        flows = [r for r in recs if r['op'] in ('ROOT_FLOW_CREATE', 'ROOT_FLOW_DESTROY')]
        made = sorted(r['flow_id'] for r in flows if r['op'] == 'ROOT_FLOW_CREATE')
        gone = sorted(r['flow_id'] for r in flows if r['op'] == 'ROOT_FLOW_DESTROY')
        self.assertTrue(made)
        self.assertEqual(made, gone)
        # UAR pages (the event CQs' doorbell page) are freed as allocated.
        uars = [r for r in recs if r['op'] in ('UAR_ALLOC', 'UAR_FREE', 'UAR_DOORBELL')]
        allocs = sorted(r['page_id'] for r in uars if r['op'] == 'UAR_ALLOC')
        self.assertTrue(allocs)
        self.assertEqual(allocs, sorted(r['page_id'] for r in uars if r['op'] == 'UAR_FREE'))
        eqns = [r for r in recs if r['op'] == 'QUERY_EQN']
        self.assertTrue(eqns)
        pds = [r for r in recs if r['op'] in ('PD_ALLOC', 'PD_FREE', 'NULL_MR')]
        for r in recs:
            keys = ('dev', 'seq', 't_start_us', 't_end_us', 'op', 'status', 'syndrome')
            if r in umems:
                keys += ('addr', 'size', 'umem_id')
            elif r in flows:
                keys += ('flow_id',)
                if r['op'] == 'ROOT_FLOW_CREATE':
                    keys += ('priority', 'match_criteria_enable', 'dest_obj_id', 'mask',
                             'value')
            elif r in uars:
                keys += ('addr', 'size', 'page_id')
            elif r in eqns:
                keys += ('addr', 'eqn')
            elif r in pds:
                keys += ('mkey',) if r['op'] == 'NULL_MR' else ('pdn',)
            else:
                keys += ('opcode', 'op_mod', 'obj_type', 'obj_id', 'in', 'out')
            for k in keys:
                self.assertIn(k, r)
            self.assertEqual(r['dev'], 'vdpa_mlx5_lm0')
            self.assertEqual(r['status'], 0, r)
            self.assertLessEqual(r['t_start_us'], r['t_end_us'])
        self.assertEqual(sorted(r['seq'] for r in recs), list(range(len(recs))))
        caps = [r for r in recs if r['op'] == 'QUERY_HCA_CAP']
        self.assertIn(0x13 << 1 | 1, [r['op_mod'] for r in caps])
        self.assertIn(0 << 1 | 1, [r['op_mod'] for r in caps])
        # The PD and its null mkey come as ibv_alloc_pd + ibv_alloc_null_mr
        # do it, never from QUERY_SPECIAL_CONTEXTS (not a DevX command, Linux
        # devx.c devx_is_general_cmd); the PD is freed.
        self.assertEqual([r['op'] for r in pds], ['PD_ALLOC', 'NULL_MR', 'PD_FREE'])
        self.assertEqual(pds[0]['pdn'], pds[2]['pdn'])
        self.assertNotEqual(pds[1]['mkey'], 0)
        recs = [r for r in recs if r not in umems and r not in flows and r not in uars
                and r not in eqns and r not in pds]
        # In hex, the opcode is the first 4 digits and op_mod digits 12..16.
        vcap = [r for r in caps if r['op_mod'] == 0x27][0]
        self.assertEqual(vcap['in'][:4], '0100')
        self.assertEqual(vcap['in'][12:16], '0027')
        created = {(r['opcode'], r['obj_id']) for r in recs
                   if r['opcode'] in DESTROY_OF.values()}
        destroyed = {(DESTROY_OF[r['opcode']], r['obj_id']) for r in recs
                     if r['opcode'] in DESTROY_OF}
        self.assertTrue(created)
        self.assertEqual(created, destroyed)
        # Each root rule forwards to a TIR the driver created (0x900 CREATE_TIR).
        for r in flows:
            if r['op'] == 'ROOT_FLOW_CREATE':
                self.assertIn((0x900, r['dest_obj_id']), created, r)
        # Flow objects are named by table and index, not by a 24-bit id: count them.
        ops = collections.Counter(r['op'] for r in recs)
        self.assertEqual(ops['CREATE_FLOW_TABLE'], ops['DESTROY_FLOW_TABLE'])
        self.assertEqual(ops['CREATE_FLOW_GROUP'], ops['DESTROY_FLOW_GROUP'])
        self.assertEqual(ops['SET_FLOW_TABLE_ENTRY'], ops['DELETE_FLOW_TABLE_ENTRY'])
        # Transport domain and TIS at least; no null mkey query.
        ops = [r['op'] for r in recs]
        for op in ('ALLOC_TRANSPORT_DOMAIN', 'CREATE_TIS'):
            self.assertIn(op, ops)
        self.assertNotIn('QUERY_SPECIAL_CONTEXTS', ops)

    def test_upstream_devargs_are_accepted_and_moderation_reaches_the_queues(self):
        # DPDK vdpa/mlx5's keys (doc/guides/vdpadevs/mlx5.rst, 22.11), all at once.
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, 't.jsonl')
            rc, out, err = run('emu=fast,queues=2,event_mode=1,event_us=50,no_traffic_time=8,'
                               'event_core=0,max_conf_threads=4,hw_latency_mode=2,'
                               f'hw_max_latency_us=100,hw_max_pending_comp=16,devx_trace={trace}')
            self.assertEqual(rc, 0, out + err)
            with open(trace) as f:
                recs = [json.loads(l) for l in f]
        # Every virtq is created with queue_period_mode / _us / queue_max_count
        # (virtio_q at byte 80 of the command: 16-byte header, virtio_q at bit
        # 0x200 of the object; the fields at bits 0x342, 0x344, 0x350 of virtio_q).
        vqs = [bytes.fromhex(r['in']) for r in recs
               if r.get('opcode') == 0xa00 and r.get('obj_type') == 0x0d]
        self.assertEqual(len(vqs), 4)
        for b in vqs:
            q = b[80:]
            self.assertEqual((q[0x68] >> 4) & 3, 2)
            self.assertEqual((q[0x68] & 0xf) << 8 | q[0x69], 100)
            self.assertEqual(q[0x6a] << 8 | q[0x6b], 16)

    def test_name_option_names_the_probed_instance(self):
        rc, out, err = run('emu=fast', extra=('--name', 'vdpa_mlx5_lm7'))
        self.assertEqual(rc, 0, out + err)
        self.assertIn('vdpa_mlx5_lm7', out)

    def test_failed_destroy_is_reported_as_leak(self):
        # DEALLOC_PD (0x801) fails once: the PD stays alive, the emulator lists
        # it at close and the tool says so with exit status 3.
        rc, out, err = run('emu=fast', env={'MLX5_LM_EMU_FAULT': '0x801:1:0x6'})
        self.assertEqual(rc, 3, out + err)
        self.assertIn('left alive', err)
        self.assertRegex(out + err, r'(?i)\bPD\b')

    def test_no_eal_runtime_directory_is_left_behind(self):
        p = subprocess.Popen([TOOL, 'probe', '--devargs', 'emu=fast'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out + err)
        # EAL's runtime base: /var/run/dpdk as root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk.
        bases = ['/var/run/dpdk', os.path.join(os.environ.get('XDG_RUNTIME_DIR', '/tmp'),
                                               'dpdk'), '/tmp/dpdk']
        for b in bases:
            self.assertFalse(os.path.exists(os.path.join(b, f'test-lm-{p.pid}')), b)

    def test_failed_command_during_probe_unwinds(self):
        # ALLOC_TRANSPORT_DOMAIN (0x816) fails: probe fails naming the command,
        # status and syndrome, and the PD allocated before it is released.
        rc, out, err = run('emu=fast', env={'MLX5_LM_EMU_FAULT': '0x816:1:0xf'})
        self.assertEqual(rc, 1, out + err)
        text = out + err
        self.assertIn('ALLOC_TRANSPORT_DOMAIN', text)
        self.assertIn('status 0xf', text)
        self.assertIn('syndrome 0x', text)
        self.assertNotRegex(text, r'(?i)alive|leak')


class ProbeErrors(unittest.TestCase):
    def assert_one_line_error(self, devargs, *needles):
        rc, out, err = run(devargs)
        self.assertNotEqual(rc, 0)
        lines = nonempty_lines(out, err)
        self.assertEqual(len(lines), 1, lines)
        for n in needles:
            self.assertIn(n, lines[0])
        return lines[0]

    def test_missing_hardware_is_one_clear_line(self):
        self.assert_one_line_error('ibdev=mlx5_0', 'mlx5_0', 'no such RDMA device',
                                   'ibv_get_device_list')

    def test_unknown_key_is_one_line_naming_it(self):
        self.assert_one_line_error('emu=fast,foo=1', 'foo', 'unknown key')

    def test_value_out_of_range_is_one_line_naming_the_key(self):
        self.assert_one_line_error('emu=fast,queues=0', 'queues', 'out of range')
        self.assert_one_line_error('emu=fast,workers=1000', 'workers', 'out of range')

    def test_upstream_keys_are_validated(self):
        self.assert_one_line_error('emu=fast,event_mode=3', 'event_mode', 'out of range')
        self.assert_one_line_error('emu=fast,hw_latency_mode=3', 'hw_latency_mode',
                                   'out of range')
        self.assert_one_line_error('emu=fast,hw_max_latency_us=4096', 'hw_max_latency_us',
                                   'out of range')
        self.assert_one_line_error('emu=fast,hw_max_pending_comp=65536',
                                   'hw_max_pending_comp', 'out of range')
        self.assert_one_line_error(f'emu=fast,event_core={os.cpu_count()}', 'event_core',
                                   'CPUs online')
        # The worker pool under its two names: one of them, not both.
        self.assert_one_line_error('emu=fast,max_conf_threads=4,workers=4', 'max_conf_threads',
                                   'workers')

    def test_preconf_asked_for_without_what_it_needs_is_one_line(self):
        self.assert_one_line_error('emu=fast,preconf=2,parallel=0', 'preconf=2',
                                   'parallel=1')
        self.assert_one_line_error('emu=fast,preconf=1,precreate=0', 'preconf=1',
                                   'precreate=1')

    def test_key_given_twice_is_one_line(self):
        self.assert_one_line_error('emu=fast,queues=4,queues=8', 'queues', 'given 2 times')

    def test_queue_size_not_a_power_of_two_is_one_line(self):
        self.assert_one_line_error('emu=fast,queue_size=300', 'queue_size', 'power of two')

    def test_value_not_a_number_is_one_line(self):
        self.assert_one_line_error('emu=fast,mr_gc_ms=soon', 'mr_gc_ms', 'not a number')

    def test_boolean_other_than_0_or_1_is_one_line(self):
        self.assert_one_line_error('emu=fast,precreate=2', 'precreate')

    def test_exactly_one_back_end_must_be_chosen(self):
        self.assert_one_line_error('queues=4', 'emu=', 'ibdev=')
        self.assert_one_line_error('emu=fast,ibdev=mlx5_0', 'exactly one')

    def test_pci_and_sf_are_checked(self):
        self.assert_one_line_error('pci=zz', 'pci=zz', 'not a PCI address')
        self.assert_one_line_error('pci=0000:5e:00.8', 'not a PCI address')
        self.assert_one_line_error('emu=fast,pci=5e:00.0', 'exactly one')
        self.assert_one_line_error('ibdev=mlx5_0,sf=mlx5_core.sf.1', 'exactly one')
        self.assert_one_line_error('sf=../x', 'sf=../x', 'not a path')

    def test_unknown_profile_is_one_line_naming_it(self):
        self.assert_one_line_error('emu=nosuchprofile', 'nosuchprofile')


class Help(unittest.TestCase):
    def test_help_prints_usage_and_exits_0(self):
        for args in (['--help'], ['probe', '--help']):
            p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0)
            self.assertIn('Usage', p.stdout)

    def test_the_readme_scripts_help_before_any_build(self):
        # tools/main.sh and tools/test.sh used to install and build first, then pass
        # --help on (to migrate, to meson test): minutes for a usage line.
        tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools')
        for script, needle in (('main.sh', 'Usage: tools/main.sh'),
                               ('test.sh', '--sanitize')):
            p = subprocess.run(['bash', os.path.join(tools, script), '--help'],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(needle, p.stdout)
            self.assertNotIn('ninja', p.stdout + p.stderr)

    def test_usage_errors_exit_2(self):
        for args in (['probe'], ['nosuchcommand'], ['probe', '--devargs']):
            p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)


class PmdInfo(unittest.TestCase):
    def test_pmdinfo_names_the_driver_and_its_devargs(self):
        # DPDK's own tool, run by Debian's python3 (the one python3-pyelftools serves).
        lib = os.environ.get('PMD_LIB', 'build/drivers/vdpa/mlx5_lm/librte_vdpa_mlx5_lm.so')
        p = subprocess.run(['/usr/bin/python3', '/usr/bin/dpdk-pmdinfo.py', lib],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        info = [d for d in json.loads(p.stdout) if d.get('name') == 'vdpa_mlx5_lm']
        self.assertEqual(len(info), 1, p.stdout)
        for key in ('emu=', 'ibdev=', 'queues=', 'queue_size=', 'mr_gc_ms=', 'event_mode=',
                    'max_conf_threads=', 'hw_max_pending_comp='):
            self.assertIn(key, info[0]['params'])


class ArgumentsCheckedFirst(unittest.TestCase):
    """Every argument that cannot work is refused in one line before any work starts."""

    def refused(self, args, *needles):
        p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        lines = nonempty_lines(p.stdout, p.stderr)
        self.assertEqual(len(lines), 1, lines)  # no usage dump, no stage started
        for n in needles:
            self.assertIn(n, lines[0])

    def test_bench_mr_arguments_that_cannot_work_are_refused(self):
        self.refused(['bench', 'mr', '--mem-gb', '0', '--workers', '1'], '--mem-gb')
        self.refused(['bench', 'mr', '--mem-gb', '4'], '--workers', 'missing')
        self.refused(['bench', 'mr', '--mem-gb', '4', '--workers', '1', '--profile', 'nope'],
                     '--profile', 'nope')
        # Numbers are whole, in range and nothing else: strtoul alone took "abc" as 0
        # (--gc-ms 0: synchronous deletion, silently), "1G" as 1 and 2^32 + 1 as 1.
        base = ['bench', 'mr', '--mem-gb', '1', '--workers', '1']
        for opt, bad in (('--gc-ms', 'abc'), ('--chunk-mb', 'abc'), ('--mem-gb', '1G'),
                         ('--mem-gb', '4294967297'), ('--sample', '-5'),
                         ('--workers', '0'), ('--workers', 'x')):
            self.refused(base + [opt, bad], opt, repr(bad))
        self.refused(['bench', 'mr', '--mem-gb', '1', '--workers', ','], '--workers', 'empty')
        self.refused(['bench', 'mr', '--mem-gb', '1', '--workers', '1,2,3,4,5,6,7,8,9'],
                     '--workers', 'at most 8')

    def test_bench_rtt_arguments_that_cannot_work_are_refused(self):
        for bad in ('0', '99', 'abc', '1e3'):
            self.refused(['bench', 'rtt', '--count', bad], '--count', repr(bad))
        self.refused(['bench', 'rtt', 'extra'], 'unexpected', 'extra')
        self.refused(['bench', 'rtt', '--json', '/nonexistent-dir/x.json'], '--json')

    def test_migrate_arguments_that_cannot_work_are_refused(self):
        shape = ['migrate', '--devices', '1', '--queue-pairs', '1', '--mem-gb', '1']
        self.refused(shape + ['--profile', 'nope'], '--profile', 'nope')
        # A count for a stage that does not run was dropped silently.
        self.refused(shape + ['--stages', 'all', '--peer-conf-threads', '8'],
                     '--peer-conf-threads', 'peer-precreate')
        with tempfile.TemporaryDirectory() as d:
            self.refused(shape + ['--json', os.path.join(d, 'no', 'x.json')], '--json')
            self.refused(shape + ['--plot', os.path.join(d, 'no', 'x.svg')], '--plot')
            # A writable path passes the check and is not left behind by it.
            ok = os.path.join(d, 'x.json')
            self.refused(shape + ['--json', ok, '--profile', 'nope'], '--profile')
            self.assertFalse(os.path.exists(ok))


class BenchRtt(unittest.TestCase):
    """bench rtt times request/reply round trips on a Unix socket between two
    threads, on one CPU, on two and unpinned: what each of the vhost-user round
    trips that migrate counts in a downtime costs on this host."""

    def rtt(self, *args, taskset=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'r.json')
            cmd = [TOOL, 'bench', 'rtt', '--count', '500', '--json', path, *args]
            if taskset is not None:
                cmd = ['taskset', '-c', taskset] + cmd
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(path) as f:
                return json.load(f), p.stdout

    def test_every_placement_the_cpus_allow_is_timed(self):
        doc, out = self.rtt()
        places = {p['placement']: p for p in doc['placements']}
        self.assertEqual(set(places), {'one CPU', 'two CPUs', 'unpinned'})
        self.assertEqual(doc['request_bytes'], 20)
        two = os.cpu_count() >= 2 and len(os.sched_getaffinity(0)) >= 2
        for name, p in places.items():
            if name == 'two CPUs' and not two:
                continue
            self.assertTrue(p['measured'], p)
            self.assertEqual(p['round_trips'], 500, p)
            self.assertGreater(p['median_us'], 0, p)
            self.assertGreaterEqual(p['p90_us'], p['median_us'], p)
            self.assertIn('| %s ' % name, out)

    def test_one_allowed_cpu_leaves_the_two_cpu_placement_unmeasured(self):
        cpu = str(min(os.sched_getaffinity(0)))
        doc, out = self.rtt(taskset=cpu)
        places = {p['placement']: p for p in doc['placements']}
        self.assertFalse(places['two CPUs']['measured'])
        self.assertIsNone(places['two CPUs']['median_us'])
        self.assertTrue(places['one CPU']['measured'])
        self.assertTrue(places['unpinned']['measured'])
        self.assertRegex(out, r'\| two CPUs\s+\| -')


if __name__ == '__main__':
    unittest.main(verbosity=2)
