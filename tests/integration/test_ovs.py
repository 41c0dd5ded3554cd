"""OVS-DPDK deployment: a vDPA device serves the VM, OVS switches the NIC's uplink.

Upstream OVS 3.1 (Debian's openvswitch-switch-dpdk, on the same DPDK 22.11) has no
vDPA port type: the vhost-user socket is served by the vDPA back end (the service,
mlx5-lm-vhostd), and OVS-DPDK bridges the NIC's uplink. The user guide's two blocks
(doc-test ovs-deployment, ovs-cleanup) run here verbatim, taken from the doc: the
service, its worker's emulated device's wire on a net_tap port (uplink=net_tap0), OVS-DPDK
(datapath_type=netdev) attaching the tap's kernel side as a net_af_packet port of
bridge br0. A virtio-user testpmd in icmpecho mode plays the guest. Everything runs in
a network namespace of its own, with an OVS of its own (OVS_RUNDIR, which ovs-vsctl
reads): pings from br0's address to the guest's are answered through OVS, the tap and
the emulated device, and the device's own counters show the frames it completed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

from lmtest import Proc, Testpmd, doc_block, run_dir_lock, socket_in_use

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')
VSWITCHD = '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk'
SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
VHOSTD = os.environ.get('VHOSTD', 'build/app/vhostd/mlx5-lm-vhostd')
CTL = os.environ.get('VHOSTD_CTL', 'build/app/ctl/mlx5-lm-ctl')
SOCK = '/run/mlx5-lm/vm1.sock'  # the user guide's
RPC = '/run/mlx5-lm/vhostd.sock'  # the service's default control socket
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
        # Released at cleanup, after tearDown: the service is gone by then.
        self.enterContext(run_dir_lock())
        for path in (SOCK, RPC):
            if socket_in_use(path):
                self.skipTest(f'{path} (the user guide\'s socket) is served by another process')
        self.ns = f'lmovs{os.getpid()}'
        self.dir = tempfile.mkdtemp(prefix='lm-ovs-')
        # The doc's commands: dpdk-test-lm from this build, ovs-vsctl on this OVS.
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_LOGDIR=self.dir,
                        OVS_DBDIR=self.dir, OVS_SYSCONFDIR=self.dir,
                        PATH=os.path.dirname(os.path.abspath(VHOSTD)) + ':' +
                        os.path.dirname(os.path.abspath(CTL)) + ':' + os.environ['PATH'])
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

    def start_ovs(self):
        """ovsdb-server and ovs-vswitchd-dpdk, DPDK not initialised yet (the doc's
        block sets dpdk-init as a user does on a running OVS). `ip netns exec` gives
        vswitchd a mount namespace of its own: a tmpfs there over /var/run/dpdk keeps
        its EAL's default runtime directory (file prefix rte) to itself."""
        run('ovsdb-tool', 'create', f'{self.dir}/conf.db', SCHEMA, env=self.env)
        run(*self.nsx, 'ovsdb-server', f'{self.dir}/conf.db', f'--remote=punix:{self.dir}/db.sock',
            f'--pidfile={self.dir}/ovsdb.pid', '--detach', f'--log-file={self.dir}/ovsdb.log',
            env=self.env)
        run('ovs-vsctl', '--timeout=60', '--no-wait', 'init', env=self.env)
        run(*self.nsx, 'sh', '-e', '-c', 'mkdir -p /var/run/dpdk\n'
            'mount -t tmpfs lm-ovs /var/run/dpdk\nexec "$@"', 'vswitchd', VSWITCHD,
            f'unix:{self.dir}/db.sock', f'--pidfile={self.dir}/vswitchd.pid', '--detach',
            f'--log-file={self.dir}/vswitchd.log', env=self.env, timeout=120)

    def test_ping_through_ovs_dpdk_and_the_emulated_device(self):
        self.start_ovs()
        # The two blocks in one shell, as the user guide has them; between them the
        # test plays the VM, then lets the shell go on to the clean-up.
        script = (doc_block('ovs-deployment') + 'echo "== deployed"\nread _\n' +
                  doc_block('ovs-cleanup'))
        sh = Proc([*self.nsx, 'bash', '-e', '-c', script], env=self.env, name='doc', stdin=True)
        self.procs.append(sh)
        sh.expect(r'== deployed', timeout=300)
        srv = subprocess.run(['pgrep', '-P', str(sh.p.pid), '-x', 'mlx5-lm-vhostd'],
                             stdout=subprocess.PIPE, text=True).stdout.split()
        self.assertEqual(len(srv), 1, srv)
        guest = Testpmd(SOCK, f'tpo{os.getpid()}', queues=1, queue_size=256)
        self.procs.append(guest)
        guest.cmd('set fwd icmpecho')
        guest.cmd('start')
        run(*self.nsx, 'ip', 'addr', 'add', f'{HOST_IP}/24', 'dev', 'br0')
        run(*self.nsx, 'ip', 'link', 'set', 'br0', 'up')
        # The first pings also resolve the guest's address (ARP through the same path).
        p = subprocess.run([*self.nsx, 'ping', '-c', '5', '-i', '0.2', '-W', '5', GUEST_IP],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
        replies = int(re.search(r'(\d+) received', p.stdout).group(1))
        self.assertGreaterEqual(replies, 4, p.stdout)
        # The device itself completed the guest's frames (not some other path).
        # The device's own counters, through the service's control API.
        st = json.loads(run(CTL, '--json', 'device_get_stats', 'vm1-net0').stdout)
        done = {(q['type'], q['pair']): q['counters']['completed_descriptors']
                for q in st['queues']}
        self.assertGreater(done[('tx', 0)], 0, st)
        self.assertGreater(done[('rx', 0)], 0, st)
        guest.cmd('stop')
        guest.quit()
        self.procs.remove(guest)
        # The VM is gone: the clean-up block (del-br, then serve stopped and waited for).
        sh.send('')
        rc = sh.stop(sig=None, timeout=120)
        self.procs.remove(sh)
        self.assertEqual(rc, 0, sh.text()[-3000:])
        self.assertIn('stopped: every worker gone, 0 device objects left alive', sh.text())
        self.assertNotIn('br0', run('ovs-vsctl', '--timeout=60', 'list-br', env=self.env).stdout)


if __name__ == '__main__':
    unittest.main(verbosity=2)
