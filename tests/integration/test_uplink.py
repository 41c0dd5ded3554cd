#!/usr/bin/env python3
"""uplink=<ethdev>: a net_tap port as the emulated device's wire. Frames the
guest (testpmd) sends reach the kernel side of the tap; frames the kernel
sends into the tap reach the guest through the device's RSS steering."""
import os
import socket
import tempfile
import time
import unittest

from lmtest import Testpmd, serve

TOOL = os.environ.get('TEST_LM', 'build/app/test-lm/dpdk-test-lm')


def counter(iface, name):
    with open(f'/sys/class/net/{iface}/statistics/{name}') as f:
        return int(f.read())


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)  # polls a kernel counter; the deadline bounds it
    raise TimeoutError(what)


@unittest.skipUnless(os.geteuid() == 0 and os.path.exists('/dev/net/tun'),
                     'needs root and /dev/net/tun for net_tap')
class UplinkTap(unittest.TestCase):
    def test_frames_cross_the_tap_both_ways(self):
        iface = f'lmtap{os.getpid()}'  # unique: two builds' tests may run at once
        with tempfile.TemporaryDirectory() as d:
            sock = os.path.join(d, 'vhost.sock')
            srv = serve(TOOL, [sock], 'emu=fast,queues=1,uplink=net_tap0',
                        extra=['--eal', f'--vdev net_tap0,iface={iface} '
                               '--log-level=lib.vhost.config:warning'])
            try:
                pmd = Testpmd(sock, f'tpu{os.getpid()}', queues=1, queue_size=256)
                try:
                    base = counter(iface, 'rx_packets')
                    pmd.cmd('start tx_first')
                    # Guest -> device TX -> tap: the kernel receives the burst.
                    wait_for(lambda: counter(iface, 'rx_packets') >= base + 32, 30,
                             'the kernel never received the guest\'s frames')
                    rx0, _ = pmd.port_stats()
                    # Kernel -> tap -> device steering -> RX queue -> guest.
                    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                    s.bind((iface, 0))
                    frame = (b'\x02\x4c\x4d\x00\x00\x00' + b'\x02\x00\x00\x00\x00\x01' +
                             b'\x88\xb5' + bytes(range(46)))
                    for _ in range(100):
                        s.send(frame)
                    s.close()
                    deadline = time.monotonic() + 30
                    rx = rx0
                    while rx < rx0 + 100 and time.monotonic() < deadline:
                        rx, _ = pmd.port_stats()
                    pmd.cmd('stop')
                finally:
                    pmd.quit()
            finally:
                rc = srv.stop()
        self.assertGreaterEqual(rx, rx0 + 100)
        self.assertEqual(rc, 0, srv.text()[-2000:])


if __name__ == '__main__':
    unittest.main(verbosity=2)
