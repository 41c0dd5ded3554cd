#!/usr/bin/env python3
"""e2elib's RAM comparison tells a frame the device wrote (which the destination must
have) from the guest CPU's data around it (which QEMU carries, or not)."""
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

MAC = '52:54:00:4c:4e:01'


def page_with_frame(at, payload):
    """A 4 KiB page holding, at `at`, a virtio-net header and an IPv4 frame to MAC."""
    page = bytearray(L.PAGE)
    ip = bytes([0x45, 0]) + (20 + len(payload)).to_bytes(2, 'big') + bytes(16) + payload
    frame = bytes.fromhex(MAC.replace(':', '')) + bytes(6) + b'\x08\x00' + ip
    page[at:at + L.VNET_HDR + len(frame)] = bytes(L.VNET_HDR) + frame
    return page


class InFrame(unittest.TestCase):
    def test_a_frame_missing_at_the_destination_is_the_devices(self):
        a = page_with_frame(0x100, b'ping' * 8)
        b = bytearray(a)
        b[0x100 + L.VNET_HDR + 14 + 20 + 3] ^= 0xff  # one payload byte
        self.assertTrue(L.in_frame(bytes(a), bytes(b), MAC))
        b = bytearray(L.PAGE)  # the frame not there at all
        self.assertTrue(L.in_frame(bytes(a), bytes(b), MAC))

    def test_cpu_data_beside_a_frame_is_not(self):
        a = page_with_frame(0x100, b'ping' * 8)
        b = bytearray(a)
        b[0x800] ^= 1  # after the frame: the guest's own data
        b[0x10] ^= 1   # before its header
        self.assertFalse(L.in_frame(bytes(a), bytes(b), MAC))
        self.assertEqual(L.frames_in(bytes(a), MAC), [(0x100, 0x100 + L.VNET_HDR + 14 + 52)])


if __name__ == '__main__':
    unittest.main()
