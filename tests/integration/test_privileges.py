#!/usr/bin/env python3
"""The rdma path as a non-root user: dpdk-test-lm migrate
--backend rdma under tools/with-emulated-rdma, run through setpriv(1) as
nobody with exactly the capabilities doc/hardware.md lists for a non-root
deployment (CAP_NET_RAW, CAP_IPC_LOCK), then without CAP_IPC_LOCK under a
small RLIMIT_MEMLOCK, then without CAP_NET_RAW. The emulated rdma-core
checks what the kernel checks (devx.c mlx5_ib_devx_create and fs.c
MLX5_IB_METHOD_CREATE_FLOW: CAP_NET_RAW, EPERM; core/umem.c ib_umem_get:
pinned pages against RLIMIT_MEMLOCK unless CAP_IPC_LOCK, ENOMEM); the driver
must fail with an error naming what is missing, and leave nothing alive
(the wrapper's exit status 3 would say so)."""
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.abspath(os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm'))
WRAPPER = os.environ['LM_WRAPPER']
LIBDIR = os.environ['LM_ERDMA_LIBDIR']
os.environ.pop('LD_LIBRARY_PATH', None)
LEAK_STATUS = 3
# The wrapper runs as nobody: an interpreter nobody can execute (not one under /root).
PYTHON = '/usr/bin/python3' if os.access('/usr/bin/python3', os.X_OK) else sys.executable
# What doc/hardware.md "What the host needs" asks of a non-root back end.
DOC_CAPS = ('net_raw', 'ipc_lock')


def doc_caps():
    """The capabilities doc/hardware.md lists, as setpriv names them."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', 'doc', 'hardware.md'), encoding='utf-8') as f:
        text = f.read()
    part = text.split('## What the host needs', 1)[1].split('\n## ', 1)[0]
    return sorted({c.lower() for c in re.findall(r'CAP_([A-Z_]+)', part)})


def run(caps, memlock=None):
    """migrate on 2 emulated devices as nobody with caps (setpriv names)."""
    work = tempfile.mkdtemp(prefix='lm-priv-')
    os.chmod(work, 0o777)
    spec = ','.join(['-all'] + ['+' + c for c in caps])

    def limits():
        if memlock is not None:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (memlock, memlock))

    cmd = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups',
           '--inh-caps=' + spec, '--ambient-caps=' + spec, '--',
           'env', 'HOME=' + work, 'TMPDIR=' + work, 'MLX5_LM_ERDMA_LIBDIR=' + LIBDIR,
           PYTHON, WRAPPER, '--devices', '2', '--profile', 'fast', '--',
           TOOL, 'migrate', '--backend', 'rdma', '--profile', 'fast', '--devices', '1',
           '--queue-pairs', '1', '--mem-gb', '1', '--stages', 'all']
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=240, preexec_fn=limits, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return p.returncode, p.stdout.decode(errors='replace')


@unittest.skipUnless(os.geteuid() == 0 and shutil.which('setpriv'),
                     'needs root and setpriv(1) to become nobody with chosen capabilities')
class NonRoot(unittest.TestCase):
    def test_doc_lists_the_capabilities(self):
        self.assertEqual(doc_caps(), sorted(DOC_CAPS))

    def test_documented_capabilities_are_enough_for_a_clean_run(self):
        # 8 MiB, the usual default memlock limit: CAP_IPC_LOCK lifts it.
        rc, out = run(DOC_CAPS, memlock=8 << 20)
        self.assertEqual(rc, 0, out[-4000:])
        self.assertIn('0 device objects left alive', out)
        self.assertNotIn('Operation not permitted', out)

    def test_without_ipc_lock_the_memlock_limit_is_named(self):
        rc, out = run(['net_raw'], memlock=8 << 20)
        self.assertNotEqual(rc, 0, out[-4000:])
        self.assertNotEqual(rc, LEAK_STATUS, out[-4000:])
        self.assertRegex(out, r'registration failed: Cannot allocate memory \(pinning guest '
                              r'memory beyond RLIMIT_MEMLOCK needs CAP_IPC_LOCK')
        self.assertIn('0 device objects left alive', out)

    def test_without_net_raw_the_capability_is_named(self):
        rc, out = run(['ipc_lock'])
        self.assertNotEqual(rc, 0, out[-4000:])
        self.assertNotEqual(rc, LEAK_STATUS, out[-4000:])
        self.assertIn('Operation not permitted (a DevX context needs CAP_NET_RAW', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
