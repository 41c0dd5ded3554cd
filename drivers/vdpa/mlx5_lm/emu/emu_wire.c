/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire side of the emulated port: a received frame (from the uplink,
 * or looped back from TX) is steered the way a ConnectX steers it: from
 * the NIC RX root, whose rules only the kernel adds (emu_root.c: what
 * mlx5dv_create_flow does), by ascending priority, first match wins; the
 * rule forwards to a TIR or to a NIC RX flow table made through DevX, in
 * which the first entry (lowest flow_index) whose group criteria match
 * forwards to a TIR or a further table; the TIR's indirect table (RQT)
 * entry chosen by the TIR's RSS hash names the RX virtq. The frame then
 * waits in the queue's bounded backlog until a buffer is there. No root
 * rule matching, a miss, a DROP action or a target queue that is not
 * RDY drop the frame (counted in the device's wire drops). A flow table
 * no root rule leads to receives nothing, whatever its level: the root
 * belongs to the kernel (devx.c has no SET_FLOW_TABLE_ROOT in any
 * allow-list).
 *
 * Modelled: outer L2-L4 match criteria (fte_match_set_lyr_2_4); a DevX
 * flow group's misc and inner criteria are not modelled and match
 * anything (root rules refuse them, emu_root.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "emu_priv.h"

#define MATCH_SET_LEN 64u   /* fte_match_set_lyr_2_4, bytes */
#define ETH_HLEN 14u
#define ETHERTYPE_IPV4 0x0800u
#define ETHERTYPE_IPV6 0x86ddu
#define ETHERTYPE_VLAN 0x8100u
#define ETHERTYPE_QINQ 0x88a8u
#define PROTO_TCP 6u
#define PROTO_UDP 17u

_Static_assert(PRM_SIZE(fte_match_set_lyr_2_4) == MATCH_SET_LEN,
	       "outer header match set is 64 bytes");

/* What steering and RSS look at in a frame. */
struct pkt {
	uint8_t ipver;              /* 0 (not IP), 4, 6 */
	uint8_t proto;
	bool l4;                    /* TCP/UDP ports present (not a later fragment) */
	uint16_t sport, dport;
	const uint8_t *src, *dst;   /* 4 or 16 bytes */
	uint8_t set[MATCH_SET_LEN]; /* the frame as an fte_match_set_lyr_2_4 */
};

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
parse_l4(struct pkt *p, const uint8_t *f, uint32_t len, uint32_t off)
{
	void *s = p->set;

	if ((p->proto != PROTO_TCP && p->proto != PROTO_UDP) || len < off + 4)
		return;
	p->l4 = true;
	p->sport = be16(f + off);
	p->dport = be16(f + off + 2);
	if (p->proto == PROTO_TCP) {
		PRM_SET(fte_match_set_lyr_2_4, s, tcp_sport, p->sport);
		PRM_SET(fte_match_set_lyr_2_4, s, tcp_dport, p->dport);
		if (len >= off + 14)
			PRM_SET(fte_match_set_lyr_2_4, s, tcp_flags, be16(f + off + 12) & 0x1ff);
	} else {
		PRM_SET(fte_match_set_lyr_2_4, s, udp_sport, p->sport);
		PRM_SET(fte_match_set_lyr_2_4, s, udp_dport, p->dport);
	}
}

static void
parse_ipv4(struct pkt *p, const uint8_t *f, uint32_t len, uint32_t off)
{
	void *s = p->set;
	uint32_t ihl;
	uint16_t frag;

	if (len < off + 20 || (f[off] >> 4) != 4)
		return;
	ihl = (f[off] & 0xfu) * 4u;
	if (ihl < 20 || len < off + ihl)
		return;
	p->ipver = 4;
	p->proto = f[off + 9];
	p->src = f + off + 12;
	p->dst = f + off + 16;
	frag = be16(f + off + 6);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_version, 4);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_protocol, p->proto);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_dscp, f[off + 1] >> 2);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_ecn, f[off + 1] & 3);
	PRM_SET(fte_match_set_lyr_2_4, s, ttl_hoplimit, f[off + 8]);
	/* MF or an offset: a fragment; only the first one carries the ports. */
	PRM_SET(fte_match_set_lyr_2_4, s, frag, (frag & 0x3fff) != 0);
	memcpy((uint8_t *)s + PRM_OFF(fte_match_set_lyr_2_4, src_ipv4) / 8, p->src, 4);
	memcpy((uint8_t *)s + PRM_OFF(fte_match_set_lyr_2_4, dst_ipv4) / 8, p->dst, 4);
	if ((frag & 0x1fff) == 0)
		parse_l4(p, f, len, off + ihl);
}

static void
parse_ipv6(struct pkt *p, const uint8_t *f, uint32_t len, uint32_t off)
{
	void *s = p->set;
	uint8_t tc;

	if (len < off + 40 || (f[off] >> 4) != 6)
		return;
	p->ipver = 6;
	p->proto = f[off + 6];
	p->src = f + off + 8;
	p->dst = f + off + 24;
	tc = (uint8_t)((f[off] & 0xfu) << 4 | f[off + 1] >> 4);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_version, 6);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_protocol, p->proto);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_dscp, tc >> 2);
	PRM_SET(fte_match_set_lyr_2_4, s, ip_ecn, tc & 3);
	PRM_SET(fte_match_set_lyr_2_4, s, ttl_hoplimit, f[off + 7]);
	memcpy(PRM_ADDR(fte_match_set_lyr_2_4, s, src_ipv4_src_ipv6), p->src, 16);
	memcpy(PRM_ADDR(fte_match_set_lyr_2_4, s, dst_ipv4_dst_ipv6), p->dst, 16);
	/* Extension headers are not walked: ports only right after the header. */
	parse_l4(p, f, len, off + 40);
}

static void
parse(struct pkt *p, const uint8_t *f, uint32_t len)
{
	void *s = p->set;
	uint32_t off = 12;
	uint16_t et;

	memset(p, 0, sizeof(*p));
	if (len < ETH_HLEN)
		return;
	PRM_SET(fte_match_set_lyr_2_4, s, dmac_47_16, (uint32_t)be16(f) << 16 | be16(f + 2));
	PRM_SET(fte_match_set_lyr_2_4, s, dmac_15_0, be16(f + 4));
	PRM_SET(fte_match_set_lyr_2_4, s, smac_47_16,
		(uint32_t)be16(f + 6) << 16 | be16(f + 8));
	PRM_SET(fte_match_set_lyr_2_4, s, smac_15_0, be16(f + 10));
	et = be16(f + off);
	/* One VLAN tag is looked through; ethertype is the one after it. */
	if ((et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ) && len >= off + 6) {
		uint16_t tci = be16(f + off + 2);

		if (et == ETHERTYPE_VLAN)
			PRM_SET(fte_match_set_lyr_2_4, s, cvlan_tag, 1);
		else
			PRM_SET(fte_match_set_lyr_2_4, s, svlan_tag, 1);
		PRM_SET(fte_match_set_lyr_2_4, s, first_vid, tci & 0xfff);
		PRM_SET(fte_match_set_lyr_2_4, s, first_cfi, (tci >> 12) & 1);
		PRM_SET(fte_match_set_lyr_2_4, s, first_prio, tci >> 13);
		off += 4;
		et = be16(f + off);
	}
	PRM_SET(fte_match_set_lyr_2_4, s, ethertype, et);
	if (et == ETHERTYPE_IPV4)
		parse_ipv4(p, f, len, off + 2);
	else if (et == ETHERTYPE_IPV6)
		parse_ipv6(p, f, len, off + 2);
}

/* ---- RSS -------------------------------------------------------------------------- */
uint32_t
emu_wire_toeplitz(const uint8_t key[40], const uint8_t *data, size_t len)
{
	/*
	 * Microsoft RSS Toeplitz: for each set bit i of the input (most
	 * significant first) XOR in the 32 key bits starting at key bit i.
	 * 36 input bytes (IPv6 + ports) need key bits up to 319: 40 bytes.
	 */
	uint32_t hash = 0, window;
	size_t i, kbit = 32;
	int bit;

	window = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 | key[3];
	for (i = 0; i < len; i++) {
		for (bit = 7; bit >= 0; bit--, kbit++) {
			if (data[i] & (1u << bit))
				hash ^= window;
			window <<= 1;
			if (kbit < 320)
				window |= (key[kbit / 8] >> (7 - kbit % 8)) & 1u;
		}
	}
	return hash;
}

/*
 * The TIR's hash over the fields rx_hash_field_selector_outer selects:
 * source then destination address, source then destination port (the
 * RSS input order). Fields of another L3/L4 type than the selector's,
 * frames that are not IP, or no selected field: hash 0.
 */
static uint32_t
rss_hash(const struct emu_net_obj *tir, const struct pkt *p)
{
	uint32_t fields = (uint32_t)PRM_GET(rx_hash_field_select, tir->hash_sel, selected_fields);
	uint32_t l3 = (uint32_t)PRM_GET(rx_hash_field_select, tir->hash_sel, l3_prot_type);
	uint32_t l4 = (uint32_t)PRM_GET(rx_hash_field_select, tir->hash_sel, l4_prot_type);
	uint8_t in[36];
	size_t n = 0, alen;

	if (tir->hash_fn != PRM_RX_HASH_FN_TOEPLITZ || fields == 0 || p->ipver == 0)
		return 0;
	if ((l3 == PRM_L3_PROT_TYPE_IPV4) != (p->ipver == 4))
		return 0;
	alen = p->ipver == 4 ? 4 : 16;
	if (fields & PRM_RX_HASH_SRC_IP) {
		memcpy(in + n, p->src, alen);
		n += alen;
	}
	if (fields & PRM_RX_HASH_DST_IP) {
		memcpy(in + n, p->dst, alen);
		n += alen;
	}
	if (p->l4 && ((l4 == PRM_L4_PROT_TYPE_TCP && p->proto == PROTO_TCP) ||
		      (l4 == PRM_L4_PROT_TYPE_UDP && p->proto == PROTO_UDP))) {
		if (fields & PRM_RX_HASH_L4_SPORT) {
			in[n++] = (uint8_t)(p->sport >> 8);
			in[n++] = (uint8_t)p->sport;
		}
		if (fields & PRM_RX_HASH_L4_DPORT) {
			in[n++] = (uint8_t)(p->dport >> 8);
			in[n++] = (uint8_t)p->dport;
		}
	}
	return n == 0 ? 0 : emu_wire_toeplitz(tir->hash_key, in, n);
}

/* ---- Steering cache ------------------------------------------------------------------ */
static int
fte_cmp(const void *a, const void *b)
{
	const struct emu_net_obj *x = *(struct emu_net_obj *const *)a;
	const struct emu_net_obj *y = *(struct emu_net_obj *const *)b;

	if (x->table_id != y->table_id)
		return x->table_id < y->table_id ? -1 : 1;
	return x->flow_index < y->flow_index ? -1 : x->flow_index > y->flow_index;
}

static int
root_cmp(const void *a, const void *b)
{
	const struct emu_root_rule *x = *(struct emu_root_rule *const *)a;
	const struct emu_root_rule *y = *(struct emu_root_rule *const *)b;

	/* The kernel keeps one table per priority, lower values first. */
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	return x->obj.id < y->obj.id ? -1 : x->obj.id > y->obj.id;
}

/* Grow *arr to hold need pointers. */
static int
cache_grow(void *arr, uint32_t *cap, uint32_t need)
{
	void **a;

	if (*cap >= need)
		return 0;
	a = realloc(*(void ***)arr, (need + 16) * sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	*(void ***)arr = a;
	*cap = need + 16;
	return 0;
}

/* Rebuild when any object came or went (dev->obj_gen): pointers stay valid. */
static int
cache_refresh(struct emu_dev *dev)
{
	struct emu_dp *dp = dev->dp;
	struct emu_obj *o;
	uint32_t n = 0, nr = 0;

	if (dp->steer_valid && dp->steer_gen == dev->obj_gen)
		return 0;
	dp->n_ftes = 0;
	dp->n_roots = 0;
	if (cache_grow(&dp->ftes, &dp->ftes_cap, dev->live[EMU_KIND_FTE]) < 0 ||
	    cache_grow(&dp->roots, &dp->roots_cap, dev->live[EMU_KIND_ROOT_RULE]) < 0)
		return -ENOMEM;
	EMU_FOR_KIND(o, dev, EMU_KIND_FTE)
		if (n < dp->ftes_cap)
			dp->ftes[n++] = (struct emu_net_obj *)o;
	EMU_FOR_KIND(o, dev, EMU_KIND_ROOT_RULE)
		if (nr < dp->roots_cap)
			dp->roots[nr++] = (struct emu_root_rule *)o;
	if (n > 1)
		qsort(dp->ftes, n, sizeof(*dp->ftes), fte_cmp);
	if (nr > 1)
		qsort(dp->roots, nr, sizeof(*dp->roots), root_cmp);
	dp->n_ftes = n;
	dp->n_roots = nr;
	dp->steer_gen = dev->obj_gen;
	dp->steer_valid = true;
	return 0;
}

void
emu_wire_cache_free(struct emu_dev *dev)
{
	free(dev->dp->ftes);
	dev->dp->ftes = NULL;
	dev->dp->ftes_cap = 0;
	dev->dp->n_ftes = 0;
	free(dev->dp->roots);
	dev->dp->roots = NULL;
	dev->dp->roots_cap = 0;
	dev->dp->n_roots = 0;
	dev->dp->steer_valid = false;
}

/* The FTE's group criteria, applied to the frame and to the entry's values. */
static bool
fte_matches(const struct emu_net_obj *fte, const struct emu_net_obj *fg, const struct pkt *p)
{
	unsigned int i;

	if (fg == NULL || !(fg->match_enable & PRM_MATCH_CRITERIA_ENABLE_OUTER_HEADERS))
		return true;
	for (i = 0; i < MATCH_SET_LEN; i++)
		if ((p->set[i] & fg->match[i]) != (fte->match[i] & fg->match[i]))
			return false;
	return true;
}

static struct emu_net_obj *
table_lookup(struct emu_dev *dev, uint32_t table_id, const struct pkt *p)
{
	struct emu_dp *dp = dev->dp;
	uint32_t lo = 0, hi = dp->n_ftes, i;

	/* First entry of the table in the sorted array. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (dp->ftes[mid]->table_id < table_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < dp->n_ftes && dp->ftes[i]->table_id == table_id; i++) {
		struct emu_net_obj *fte = dp->ftes[i];
		struct emu_net_obj *fg = (struct emu_net_obj *)emu_obj_find(dev, EMU_KIND_FG,
									  fte->group_id);

		if (fte_matches(fte, fg, p))
			return fte;
	}
	return NULL;
}

static struct emu_virtq *
tir_pick(const struct emu_net_obj *tir, const struct pkt *p)
{
	const struct emu_net_obj *rqt = NULL;
	unsigned int i;

	/* A direct TIR names an RQ; the emulated port has only virtqs. */
	if (tir->disp_type != PRM_TIRC_DISP_TYPE_INDIRECT)
		return NULL;
	for (i = 0; i < tir->obj.nheld; i++)
		if (tir->obj.held[i]->kind == EMU_KIND_RQT)
			rqt = (const struct emu_net_obj *)tir->obj.held[i];
	/*
	 * RQT's references are its entries, in list order. The RQT is indexed
	 * by hash & (size - 1): its size is a power of two (emu_net.c refuses
	 * any other).
	 */
	if (rqt == NULL || rqt->obj.nheld == 0)
		return NULL;
	return (struct emu_virtq *)rqt->obj.held[rss_hash(tir, p) & (rqt->obj.nheld - 1)];
}

/* A root rule's outer-header criteria against the frame. */
static bool
root_matches(const struct emu_root_rule *r, const struct pkt *p)
{
	unsigned int i;

	if (!(r->match_enable & PRM_MATCH_CRITERIA_ENABLE_OUTER_HEADERS))
		return true;
	for (i = 0; i < MATCH_SET_LEN; i++)
		if ((p->set[i] & r->mask[i]) != r->value[i])
			return false;
	return true;
}

static struct emu_virtq *
steer(struct emu_dev *dev, const struct pkt *p)
{
	struct emu_dp *dp = dev->dp;
	struct emu_net_obj *ft = NULL;
	struct emu_obj *d = NULL;
	unsigned int depth;
	uint32_t r;

	if (cache_refresh(dev) < 0)
		return NULL;
	/* Steering starts at the root, and only the kernel's rules are in it. */
	for (r = 0; r < dp->n_roots; r++) {
		if (root_matches(dp->roots[r], p)) {
			d = dp->roots[r]->obj.held[0];
			break;
		}
	}
	if (d == NULL)
		return NULL;
	if (d->kind == EMU_KIND_TIR)
		return tir_pick((struct emu_net_obj *)d, p);
	ft = (struct emu_net_obj *)d;
	for (depth = 0; ft != NULL && depth < EMU_DP_MAX_STEER_DEPTH; depth++) {
		struct emu_net_obj *fte = table_lookup(dev, ft->obj.id, p), *next = NULL;
		unsigned int i;

		if (fte == NULL || !(fte->action & PRM_FLOW_CONTEXT_ACTION_FWD_DEST))
			return NULL;
		for (i = 0; i < fte->obj.nheld; i++) {
			d = fte->obj.held[i];
			if (d->kind == EMU_KIND_TIR)
				return tir_pick((struct emu_net_obj *)d, p);
			/* held[] also names the entry's own table: skip it. */
			if (d->kind == EMU_KIND_FT && d->id != fte->table_id && next == NULL)
				next = (struct emu_net_obj *)d;
		}
		ft = next;
	}
	return NULL;
}

int
emu_wire_deliver(struct emu_dev *dev, const uint8_t *frame, uint32_t len)
{
	struct emu_dp *dp = dev->dp;
	struct emu_virtq *vq;
	struct emu_dp_vq *dq;
	struct emu_frame *f;
	struct pkt p;

	dp->rx_frames++;
	parse(&p, frame, len);
	vq = steer(dev, &p);
	/* Only a RDY receive queue (even index) takes frames. */
	if (vq == NULL || vq->state != PRM_VIRTQ_STATE_RDY || (vq->queue_index & 1) != 0) {
		dp->drops++;
		return -ENOENT;
	}
	dq = emu_dp_vq_get(dev, vq);
	if (dq == NULL || dq->bl_len >= EMU_DP_RX_BACKLOG) {
		dp->drops++;
		return -ENOBUFS;
	}
	f = malloc(sizeof(*f) + len);
	if (f == NULL) {
		dp->drops++;
		return -ENOBUFS;
	}
	f->next = NULL;
	f->len = len;
	memcpy(f->data, frame, len);
	if (dq->bl_tail != NULL)
		dq->bl_tail->next = f;
	else
		dq->bl_head = f;
	dq->bl_tail = f;
	dq->bl_len++;
	emu_dp_vq_kick(dev, vq);
	return 0;
}
