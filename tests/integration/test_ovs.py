#!/usr/bin/env python3
"""OVS-DPDK deployment: a vDPA device serves the VM, OVS switches the NIC's uplink.

Upstream OVS 3.1 (Debian's openvswitch-switch-dpdk, on the same DPDK 22.11) has no
vDPA port type: the vhost-user socket is served by the vDPA back end (`serve`), and
OVS-DPDK bridges the NIC's uplink. Here the emulated device's wire is a net_tap port
(uplink=net_tap0), OVS-DPDK (datapath_type=netdev) attaches the tap's kernel side as
a net_af_packet port of bridge br0, and a virtio-user testpmd in icmpecho mode plays
the guest. Everything runs in a network namespace of its own: pings from br0's
address to the guest's are answered through OVS, the tap and the emulated device,
and the device's own counters show the frames it completed.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from lmtest import Proc, Testpmd

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
VSWITCHD = '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk'
SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
# TEST-NET-1 (RFC 5737) inside the test's own namespace: reaches nothing outside it.
HOST_IP, GUEST_IP = '192.0.2.1', '192.0.2.2'


def run(*args, **kw):
    return subprocess.run(list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=kw.pop('timeout', 60),
                          **kw)


@unittest.skipUnless(os.geteuid() == 0 and os.path.exists('/dev/net/tun'),
                     'needs root and /dev/net/tun')
@unittest.skipUnless(os.path.exists(VSWITCHD) and shutil.which('ovsdb-server') and
                     shutil.which('ping'),
                     'OVS-DPDK (openvswitch-switch-dpdk) or ping not installed')
class OvsDpdk(unittest.TestCase):
    def setUp(self):
        self.ns = f'lmovs{os.getpid()}'
        self.dir = tempfile.mkdtemp(prefix='lm-ovs-')
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_LOGDIR=self.dir,
                        OVS_DBDIR=self.dir, OVS_SYSCONFDIR=self.dir)
        self.db = f'unix:{self.dir}/db.sock'
        self.procs = []
        run('ip', 'netns', 'add', self.ns)
        self.nsx = ['ip', 'netns', 'exec', self.ns]
        run(*self.nsx, 'ip', 'link', 'set', 'lo', 'up')

    def tearDown(self):
        for pidfile in ('vswitchd.pid', 'ovsdb.pid'):
            try:
                with open(os.path.join(self.dir, pidfile)) as f:
                    os.kill(int(f.read().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.kill()
        subprocess.run(['ip', 'netns', 'del', self.ns], timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
        # OVS's EAL keeps a runtime directory per file prefix.
        shutil.rmtree(f'/var/run/dpdk/ovs{os.getpid()}', ignore_errors=True)

    def vsctl(self, *args):
        return run('ovs-vsctl', f'--db={self.db}', '--timeout=60', *args, env=self.env).stdout

    def start_ovs(self):
        run('ovsdb-tool', 'create', f'{self.dir}/conf.db', SCHEMA, env=self.env)
        run(*self.nsx, 'ovsdb-server', f'{self.dir}/conf.db', f'--remote=punix:{self.dir}/db.sock',
            f'--pidfile={self.dir}/ovsdb.pid', '--detach', f'--log-file={self.dir}/ovsdb.log',
            env=self.env)
        self.vsctl('--no-wait', 'init')
        # OVS's EAL without hugepages: --legacy-mem (its default dynamic memory
        # needs hugepages); no PCI scan of the machine's own NICs.
        self.vsctl('--no-wait', 'set', 'Open_vSwitch', '.', 'other_config:dpdk-init=true',
                   'other_config:dpdk-extra=--no-huge --legacy-mem -m 1024 --no-pci '
                   f'--file-prefix=ovs{os.getpid()}')
        run(*self.nsx, VSWITCHD, self.db, f'--pidfile={self.dir}/vswitchd.pid', '--detach',
            f'--log-file={self.dir}/vswitchd.log', env=self.env, timeout=120)

    def test_ping_through_ovs_dpdk_and_the_emulated_device(self):
        sock = os.path.join(self.dir, 'vm1.sock')
        tap = 'lmup0'
        srv = Proc([*self.nsx, 'stdbuf', '-oL', TOOL, 'serve', '--socket', sock, '--devargs',
                    'emu=fast,queues=1,uplink=net_tap0', '--eal', f'--vdev net_tap0,iface={tap}'],
                   name='serve')
        self.procs.append(srv)
        srv.expect(r'serve: ready', timeout=60)
        guest = Testpmd(sock, f'tpo{os.getpid()}', queues=1, queue_size=256)
        self.procs.append(guest)
        guest.cmd('set fwd icmpecho')
        guest.cmd('start')
        self.start_ovs()
        self.vsctl('add-br', 'br0', '--', 'set', 'bridge', 'br0', 'datapath_type=netdev')
        self.vsctl('add-port', 'br0', 'up0', '--', 'set', 'Interface', 'up0', 'type=dpdk',
                   f'options:dpdk-devargs=net_af_packet0,iface={tap}')
        run(*self.nsx, 'ip', 'addr', 'add', f'{HOST_IP}/24', 'dev', 'br0')
        run(*self.nsx, 'ip', 'link', 'set', 'br0', 'up')
        # The first pings also resolve the guest's address (ARP through the same path).
        p = subprocess.run([*self.nsx, 'ping', '-c', '5', '-i', '0.2', '-W', '5', GUEST_IP],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        replies = int(re.search(r'(\d+) received', p.stdout).group(1))
        self.assertGreaterEqual(replies, 4, p.stdout)
        # The device itself completed the guest's frames (not some other path).
        os.kill(srv.p.pid, signal.SIGUSR1)
        m = srv.expect(r'vdpa_mlx5_lm0 \(.*\):\n\s+queue (.*)\n([\s\S]*?)serve: end of statistics',
                       timeout=30)
        # Counter names have single spaces ("bad descriptor errors"): split on two or more.
        names = re.split(r'\s{2,}', m.group(1).decode().strip())
        rows = {tuple(l.split()[:2]): l.split()[2:] for l in m.group(2).decode().splitlines()}
        col = next(i for i, n in enumerate(names) if n.startswith('completed'))
        self.assertGreater(int(rows[('tx', '0')][col]), 0, m.group(0))
        self.assertGreater(int(rows[('rx', '0')][col]), 0, m.group(0))
        guest.cmd('stop')
        guest.quit()
        self.procs.remove(guest)
        rc = srv.stop()
        self.procs.remove(srv)
        self.assertEqual(rc, 0, srv.text()[-2000:])
        self.assertIn('clean teardown', srv.text())


if __name__ == '__main__':
    unittest.main(verbosity=2)
