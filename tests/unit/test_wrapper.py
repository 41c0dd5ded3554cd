#!/usr/bin/env python3
"""tools/with-emulated-rdma: the fake sysfs tree (what DPDK's EAL PCI scan
and rdma-core's users read), the environment, the exit status."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

WRAPPER = os.environ['LM_WRAPPER']
LIBDIR = os.environ['LM_ERDMA_LIBDIR']

# Runs inside the wrapper: describe what the program sees.
PROBE = r'''
import json, os
root = os.environ["MLX5_LM_ERDMA_SYSFS"]
pci = os.environ["SYSFS_PCI_DEVICES"]
out = {"root": root, "pci": pci, "ld": os.environ["LD_LIBRARY_PATH"].split(":")[0],
       "devices": os.environ["MLX5_LM_ERDMA_DEVICES"], "profile": os.environ["MLX5_LM_ERDMA_PROFILE"],
       "bdfs": sorted(os.listdir(pci)), "ib": {}}
for name in sorted(os.listdir(os.path.join(root, "class", "infiniband"))):
    dev = os.path.join(root, "class", "infiniband", name, "device")
    uevent = dict(l.split("=", 1) for l in open(os.path.join(dev, "uevent")).read().split())
    out["ib"][name] = {"slot": uevent["PCI_SLOT_NAME"],
                       "real": os.path.basename(os.path.realpath(dev)),
                       "vendor": open(os.path.join(dev, "vendor")).read().strip(),
                       "device": open(os.path.join(dev, "device")).read().strip(),
                       "class": open(os.path.join(dev, "class")).read().strip(),
                       "resource_lines": len(open(os.path.join(dev, "resource")).readlines()),
                       "driver": os.path.basename(os.path.realpath(os.path.join(dev, "driver")))}
print(json.dumps(out))
'''


def run(*args, env=None):
    e = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
    e.update(env or {})
    return subprocess.run([sys.executable, WRAPPER, *args], env=e, capture_output=True,
                          text=True, timeout=60)


def wrapped_python(child):
    """The wrapper running python3 -c child, started (not waited for), its stdout a
    text pipe: for tests that talk to the command while it runs."""
    e = dict(os.environ, MLX5_LM_ERDMA_LIBDIR=LIBDIR)
    return subprocess.Popen([sys.executable, WRAPPER, '--', sys.executable, '-c', child],
                            env=e, stdout=subprocess.PIPE, text=True)


class FakeSysfs(unittest.TestCase):
    def test_three_devices_appear_as_mlx5_functions_and_go_at_exit(self):
        p = run('--devices', '3', '--profile', 'fast', '--', sys.executable, '-c', PROBE)
        self.assertEqual(p.returncode, 0, p.stderr)
        t = json.loads(p.stdout)
        self.assertEqual(t['bdfs'], ['0000:5e:00.0', '0000:5e:01.0', '0000:5e:02.0'])
        self.assertEqual(sorted(t['ib']), ['mlx5_0', 'mlx5_1', 'mlx5_2'])
        for i, name in enumerate(sorted(t['ib'])):
            d = t['ib'][name]
            self.assertEqual(d['slot'], '0000:5e:%02x.0' % i)
            self.assertEqual(d['real'], d['slot'])
            self.assertEqual((d['vendor'], d['device'], d['class']),
                             ('0x15b3', '0x101d', '0x020000'))
            self.assertEqual(d['resource_lines'], 6)
            self.assertEqual(d['driver'], 'mlx5_core')
        self.assertEqual(t['pci'], os.path.join(t['root'], 'bus', 'pci', 'devices'))
        self.assertEqual(os.path.realpath(t['ld']), os.path.realpath(LIBDIR))
        self.assertEqual((t['devices'], t['profile']), ('3', 'fast'))
        # Removed at exit.
        self.assertFalse(os.path.exists(t['root']))

    def test_exit_status_is_the_commands(self):
        self.assertEqual(run('--', sys.executable, '-c', 'raise SystemExit(7)').returncode, 7)

    def test_signals_reach_the_command(self):
        """SIGUSR1 (serve: statistics) and SIGTERM go to the command, as unwrapped."""
        child = ('import signal, sys\n'
                 'signal.signal(signal.SIGUSR1, lambda s, f: print("usr1", flush=True))\n'
                 'signal.signal(signal.SIGTERM, lambda s, f: (print("term", flush=True),\n'
                 '                                           sys.exit(0)))\n'
                 'print("ready", flush=True)\n'
                 'while True:\n'
                 '    signal.pause()\n')
        p = wrapped_python(child)
        try:
            self.assertEqual(p.stdout.readline().strip(), 'ready')
            p.send_signal(signal.SIGUSR1)
            self.assertEqual(p.stdout.readline().strip(), 'usr1')
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.stdout.readline().strip(), 'term')
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            p.kill()
            p.stdout.close()

    def test_command_dies_with_the_wrapper(self):
        """SIGKILL cannot be passed on: the command gets SIGTERM when the wrapper dies."""
        child = ('import os, signal\n'
                 'print(os.getpid(), flush=True)\n'
                 'while True:\n'
                 '    signal.pause()\n')
        p = wrapped_python(child)
        try:
            pid = int(p.stdout.readline())
            p.kill()
            p.wait(timeout=30)
            deadline = time.monotonic() + 10
            while os.path.exists(f'/proc/{pid}') and time.monotonic() < deadline:
                try:
                    # Reaped by init once it exits; a zombie counts as gone.
                    with open(f'/proc/{pid}/stat') as f:
                        if f.read().split(') ')[1].startswith('Z'):
                            break
                except OSError:
                    break
                time.sleep(0.01)
            else:
                self.assertFalse(os.path.exists(f'/proc/{pid}'), 'the command outlived it')
        finally:
            p.stdout.close()

    def test_bad_arguments_exit_2_and_help_exits_0(self):
        self.assertEqual(run().returncode, 2)
        self.assertNotEqual(run('--devices', '0', '--', 'true').returncode, 0)
        # --tap names one of the devices, and an interface name Linux takes.
        self.assertEqual(run('--tap', '1=t0', '--', 'true').returncode, 2)
        self.assertEqual(run('--tap', '0=' + 'x' * 16, '--', 'true').returncode, 2)
        self.assertEqual(run('--tap', 'x', '--', 'true').returncode, 2)
        p = run('--help')
        self.assertEqual(p.returncode, 0)
        self.assertIn('--devices', p.stdout)

    def test_missing_library_is_one_clear_line(self):
        p = run('--', 'true', env={'MLX5_LM_ERDMA_LIBDIR': '/nonexistent'})
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('libibverbs.so.1 not found', p.stderr)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which('unshare'),
                         '--private-sys needs root and unshare(1)')
    def test_private_sys_shows_the_emulated_functions_only_inside(self):
        # DPDK's mlx5 common driver writes /sys/bus/pci/devices/<BDF>/roce_enable,
        # hard-coded: inside the namespace it is there and writable,
        # the real functions stay listed, and outside nothing changed.
        real = sorted(os.listdir('/sys/bus/pci/devices'))
        script = ('import json, os; d = "/sys/bus/pci/devices"; b = d + "/0000:5e:01.0"; '
                  'r = open(b + "/roce_enable").read(); open(b + "/roce_enable", "w").write("0"); '
                  'print(json.dumps({"ls": sorted(os.listdir(d)), "roce": r, '
                  '"after": open(b + "/roce_enable").read(), "net": os.path.isdir(b + "/net")}))')
        p = run('--devices', '2', '--private-sys', '--', sys.executable, '-c', script)
        self.assertEqual(p.returncode, 0, p.stderr)
        t = json.loads(p.stdout)
        self.assertEqual(t['ls'], sorted(real + ['0000:5e:00.0', '0000:5e:01.0']))
        self.assertEqual((t['roce'], t['after'], t['net']), ('1\n', '0', True))
        self.assertEqual(sorted(os.listdir('/sys/bus/pci/devices')), real)
        self.assertFalse(os.path.exists('/sys/bus/pci/devices/0000:5e:00.0'))

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which('unshare'),
                         '--private-sys needs root and unshare(1)')
    def test_private_sys_is_the_default_where_possible(self):
        # What the peer needs comes without asking (doc/emulated-rdma.md's peer
        # command has no --private-sys); --no-private-sys leaves /sys as it is.
        script = 'import os; print(os.path.exists("/sys/bus/pci/devices/0000:5e:00.0"))'
        p = run('--', sys.executable, '-c', script)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, 'True'), p.stderr)
        p = run('--no-private-sys', '--', sys.executable, '-c', script)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, 'False'), p.stderr)


if __name__ == '__main__':
    unittest.main(verbosity=2)
