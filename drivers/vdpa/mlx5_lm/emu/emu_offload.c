/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit offloads of the emulated data path, as the virtio-net header
 * asks for them (virtio 1.1, 5.1.6.2) and only where the queue's feature
 * mask (set by the driver inside device_features_bits_mask) has them:
 *   - CSUM (queue feature bit 10): complete a partial checksum;
 *   - HOST_TSO4 / HOST_TSO6 (bits 12 / 11): cut a TCP frame into
 *     gso_size segments, each a frame of its own with its IP length, IPv4
 *     id and header checksum, TCP sequence number, flags and checksum.
 * Anything the header asks for that the queue does not have, or offsets
 * and headers that do not hold, is refused: the caller drops the frame
 * rather than send it half-made.
 */
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

#define VNET_HDR_F_NEEDS_CSUM 1
#define VNET_HDR_GSO_TCPV4 1
#define VNET_HDR_GSO_TCPV6 4
#define VNET_HDR_GSO_ECN 0x80

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* RFC 1071 sum of p[0, len), added to sum (not folded). */
static uint32_t
sum16(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (i < len)
		sum += (uint32_t)p[i] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int
emu_offload_csum(uint8_t *frame, uint32_t len, const uint8_t *hdr)
{
	uint32_t start = (uint32_t)hdr[6] | (uint32_t)hdr[7] << 8;
	uint32_t off = (uint32_t)hdr[8] | (uint32_t)hdr[9] << 8;
	uint16_t c;

	if ((uint64_t)start + off + 2 > len)
		return -1;
	/* The field holds the pseudo-header sum: it is part of the sum. */
	c = fold(sum16(0, frame + start, len - start));
	/* 0 goes out as 0xffff, as Linux's skb_checksum_help (UDP: 0 = none). */
	put16(frame + start + off, c != 0 ? c : 0xffff);
	return 0;
}

/* Where the L3 and L4 headers of a TCP frame start; -1 when it is not one. */
static int
tcp_layout(const uint8_t *f, uint32_t len, int v6, uint32_t *l3, uint32_t *l4, uint32_t *hl)
{
	uint32_t at = 12, thl;
	uint16_t et;

	if (len < 14)
		return -1;
	et = get16(f + at);
	if (et == 0x8100 && len >= 18) {        /* one VLAN tag */
		at += 4;
		et = get16(f + at);
	}
	*l3 = at + 2;
	if (!v6) {
		if (et != 0x0800 || len < *l3 + 20 || (f[*l3] >> 4) != 4 ||
		    (f[*l3] & 0xf) < 5 || f[*l3 + 9] != 6)
			return -1;
		*l4 = *l3 + (uint32_t)(f[*l3] & 0xf) * 4;
	} else {
		/* No extension headers: TCP right after the fixed header. */
		if (et != 0x86dd || len < *l3 + 40 || (f[*l3] >> 4) != 6 || f[*l3 + 6] != 6)
			return -1;
		*l4 = *l3 + 40;
	}
	if (len < *l4 + 20)
		return -1;
	thl = (uint32_t)(f[*l4 + 12] >> 4) * 4;
	if (thl < 20 || len < *l4 + thl)
		return -1;
	*hl = *l4 + thl;
	return 0;
}

/* TCP checksum over the pseudo header, the TCP header and its payload. */
static void
tcp_checksum(uint8_t *s, uint32_t l3, uint32_t l4, uint32_t len, int v6)
{
	uint32_t sum, tcplen = len - l4;

	put16(s + l4 + 16, 0);
	if (!v6)
		sum = sum16(0, s + l3 + 12, 8);    /* source, destination */
	else
		sum = sum16(0, s + l3 + 8, 32);
	sum += 6 + (tcplen >> 16) + (tcplen & 0xffff);
	sum = sum16(sum, s + l4, tcplen);
	put16(s + l4 + 16, fold(sum));
}

int
emu_offload_tso(struct emu_dev *dev, const uint8_t *frame, uint32_t len, const uint8_t *hdr,
		uint16_t features)
{
	uint8_t gso = hdr[1] & (uint8_t)~VNET_HDR_GSO_ECN;
	uint16_t mss = (uint16_t)(hdr[4] | hdr[5] << 8);
	int v6 = gso == VNET_HDR_GSO_TCPV6;
	uint32_t l3, l4, hl, payload, off, seq;
	uint16_t id;
	uint8_t *s;
	int n = 0;

	/* What the header asks for must be what the queue has; GSO needs NEEDS_CSUM. */
	if ((gso != VNET_HDR_GSO_TCPV4 && gso != VNET_HDR_GSO_TCPV6) ||
	    !(features & (1u << (v6 ? PRM_VIRTQ_FEAT_HOST_TSO6 : PRM_VIRTQ_FEAT_HOST_TSO4))) ||
	    ((hdr[1] & VNET_HDR_GSO_ECN) && !(features & (1u << PRM_VIRTQ_FEAT_HOST_ECN))) ||
	    !(hdr[0] & VNET_HDR_F_NEEDS_CSUM) || mss == 0 ||
	    tcp_layout(frame, len, v6, &l3, &l4, &hl) < 0)
		return -1;
	payload = len - hl;
	s = malloc(hl + mss);
	if (s == NULL)
		return -1;
	seq = (uint32_t)get16(frame + l4 + 4) << 16 | get16(frame + l4 + 6);
	id = get16(frame + l3 + 4);
	off = 0;
	do {
		uint32_t seg = payload - off < mss ? payload - off : mss;
		int last = off + seg >= payload;

		memcpy(s, frame, hl);
		memcpy(s + hl, frame + hl + off, seg);
		if (!v6) {
			put16(s + l3 + 2, (uint16_t)(hl - l3 + seg));
			put16(s + l3 + 4, (uint16_t)(id + n));
			put16(s + l3 + 10, 0);
			put16(s + l3 + 10, fold(sum16(0, s + l3, l4 - l3)));
		} else {
			put16(s + l3 + 4, (uint16_t)(hl - l4 + seg));
		}
		put16(s + l4 + 4, (uint16_t)((seq + off) >> 16));
		put16(s + l4 + 6, (uint16_t)(seq + off));
		/* FIN and PSH end the stream's burst: last segment only; CWR first only. */
		if (!last)
			s[l4 + 13] &= (uint8_t)~(TCP_FIN | TCP_PSH);
		if (n > 0)
			s[l4 + 13] &= (uint8_t)~TCP_CWR;
		tcp_checksum(s, l3, l4, hl + seg, v6);
		emu_dp_wire_tx(dev, s, hl + seg);
		off += seg;
		n++;
	} while (off < payload);
	free(s);
	return n;
}
