// SPDX-License-Identifier: GPL-2.0
/*
 * int_switch.bpf.c: one egress port of an emulated HPCC++ INT switch, as a
 * tc clsact egress program (clang -O2 -g --target=bpf). Load one instance
 * per port (each load has its own maps): selftests/int_switch.sh does
 *
 *   bpftool prog load int_switch.bpf.o /sys/fs/bpf/hpcc/<ns>/<dev>/prog \
 *       type classifier pinmaps /sys/fs/bpf/hpcc/<ns>/<dev>
 *   tc qdisc add dev <dev> root fq ...      (enforces skb->tstamp)
 *   tc filter add dev <dev> egress bpf da pinned .../prog
 *
 * The port is an earliest-departure-time virtual queue at rate B:
 *   dep      = max(now, next)          when the packet starts to leave
 *   backlog  = (dep - now) * B / 8     bytes queued ahead of it
 *   drop-tail if backlog + len > buffer
 *   next     = dep + len * 8 / B       when its last bit has left
 *   skb->tstamp = next + delay         sch_fq holds it until then
 * so sch_fq releases every packet when the emulated port has finished
 * serializing it (store and forward), and the queue the port reports is the
 * one its packets really wait in. The clock is CLOCK_MONOTONIC
 * (bpf_ktime_get_ns), the clock sch_fq compares skb->tstamp with. The
 * virtual clock is kept in picoseconds under a per-port bpf_spin_lock.
 *
 * Lengths are wire lengths at L2 (Ethernet header included, no preamble or
 * inter-frame gap): __sk_buff->wire_len, which for a GSO packet counts the
 * headers of every segment. A GSO packet is queued, dropped or CE-marked as
 * a whole; the queue histogram is still sampled once per segment, each
 * segment seeing the bytes ahead of it.
 *
 * Probes (IPv4, or IPv6 without extension headers; TCP; DSCP == probe
 * DSCP; payload beginning with the hpcc_probe_hdr of a PROBE) get one INT
 * hop record, see include/hpcc_int.h:
 *   speed   the configured speed code,
 *   ts      departure (last bit out, = next above) in 2 ns units,
 *   txBytes bytes this port has sent up to and including the probe,
 *   qlen    backlog ahead of the probe,
 * both in the speed's byte unit; nHop += 1 and pathID ^= switch ID. A probe
 * that arrives with nHop == HPCC_INT_MAX_HOPS is left alone and counted.
 * Responses and everything else only go through the queue.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "hpcc_int.h"
#include "hpcc_probe.h"
#include "int_switch.h"

#ifndef BPF_SKB_TSTAMP_DELIVERY_MONO
#define BPF_SKB_TSTAMP_DELIVERY_MONO	1
#endif

/* selftests/intsw.py unpacks these layouts */
_Static_assert(sizeof(struct int_sw_cfg) == 48, "int_sw_cfg layout");
_Static_assert(sizeof(struct int_sw_port) == 8 + 16 * 8, "int_sw_port layout");

#define PS_PER_NS	1000ULL
#define PS_PER_SEC	1000000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct int_sw_cfg);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct int_sw_port);
} port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct int_sw_hist);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INT_SW_LOG_LEN);
	__type(key, __u32);
	__type(value, struct int_sw_log_rec);
} plog SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} plogi SEC(".maps");

/* Byte unit of txBytes and qlen for a speed code (include/hpcc_int.h). */
static __always_inline int unit_shift(__u32 code)
{
	int s = hpcc_int_unit_shift(code);

	return s < 0 ? 0 : s;
}

enum pkt_kind { PKT_OTHER, PKT_PROBE, PKT_RESPONSE };

/* What the packet is; for an IP packet also its TOS byte (IPv4) or
 * traffic class (IPv6) and, for a probe, the offset of its INT stack and its
 * nHop/pathID word. */
struct pkt_info {
	__u32 kind;
	__u32 l4_off;	/* where TCP starts */
	__u32 int_off;
	__u32 segs;
	__u16 word0;	/* the first two bytes of the IP header, network order */
	__u16 int_word;	/* nHop:4 | pathID:12, host order */
	__u16 sport;	/* TCP source port, host order */
	__u8 tos;
	__u8 is_ip;	/* 4 or 6; 0 for anything else */
};

/* The IP header: TOS or traffic class and, if it is TCP (and, for IPv4,
 * not a fragment; for IPv6, without extension headers), where TCP starts.
 * Returns 0 if the transport is not TCP. */
static __always_inline __u32 ip_head(struct __sk_buff *skb, struct pkt_info *pi)
{
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr iph;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &iph, sizeof(iph)) < 0)
			return 0;
		if (iph.version != 4 || iph.ihl < 5)
			return 0;
		pi->is_ip = 4;
		pi->tos = iph.tos;
		__builtin_memcpy(&pi->word0, &iph, 2);
		if (iph.protocol != IPPROTO_TCP ||
		    (iph.frag_off & bpf_htons(0x3fff)))	/* MF or a fragment offset */
			return 0;
		return ETH_HLEN + iph.ihl * 4;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6h;
		__u8 *b = (__u8 *)&ip6h;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6h, sizeof(ip6h)) < 0)
			return 0;
		if ((b[0] >> 4) != 6)
			return 0;
		pi->is_ip = 6;
		pi->tos = (b[0] << 4) | (b[1] >> 4);
		__builtin_memcpy(&pi->word0, b, 2);
		if (ip6h.nexthdr != IPPROTO_TCP)
			return 0;
		return ETH_HLEN + sizeof(ip6h);
	}
	return 0;
}

static __always_inline void classify(struct __sk_buff *skb, __u32 probe_dscp,
				     struct pkt_info *pi)
{
	struct hpcc_probe_hdr ph;
	__u8 doff_byte;
	__u32 l4, pay;
	__be16 w;

	l4 = ip_head(skb, pi);
	if (!l4)
		return;
	pi->l4_off = l4;
	if (bpf_skb_load_bytes(skb, l4, &w, sizeof(w)) < 0)
		return;
	pi->sport = bpf_ntohs(w);
	if (bpf_skb_load_bytes(skb, l4 + 12, &doff_byte, 1) < 0)
		return;
	pay = l4 + (doff_byte >> 4) * 4;
	if ((doff_byte >> 4) < 5 ||
	    bpf_skb_load_bytes(skb, pay, &ph, sizeof(ph)) < 0)
		return;
	if (ph.magic != bpf_htonl(HPCC_PROBE_MAGIC) ||
	    ph.version != HPCC_PROBE_VERSION)
		return;
	if (ph.type == HPCC_PROBE_TYPE_RESPONSE) {
		pi->kind = PKT_RESPONSE;
		return;
	}
	if (ph.type != HPCC_PROBE_TYPE_PROBE || (pi->tos >> 2) != probe_dscp)
		return;
	/* The whole INT space must be there: switches stamp in place. */
	pi->int_off = pay + HPCC_PROBE_INT_OFF;
	if (skb->len < pi->int_off + HPCC_INT_MAX_LEN)
		return;
	if (bpf_skb_load_bytes(skb, pi->int_off, &w, sizeof(w)) < 0)
		return;
	pi->int_word = bpf_ntohs(w);
	pi->kind = PKT_PROBE;
}

static __always_inline void log_packet(__u64 now, __u64 backlog, __u16 sport, __u64 wire,
				       int drop)
{
	struct int_sw_log_rec *r;
	__u32 key = 0, slot;
	__u64 *idx;

	idx = bpf_map_lookup_elem(&plogi, &key);
	if (!idx)
		return;
	slot = __sync_fetch_and_add(idx, 1) % INT_SW_LOG_LEN;
	r = bpf_map_lookup_elem(&plog, &slot);
	if (!r)
		return;
	r->t_ns = now;
	r->backlog_flags = (backlog > 0x7fffffffULL ? 0x7fffffff : backlog) |
			   (drop ? INT_SW_LOG_DROPPED : 0);
	r->sport = sport;
	r->wire = wire > 0xffff ? 0xffff : wire;
}

SEC("tc")
int int_switch_egress(struct __sk_buff *skb)
{
	struct int_sw_hist *hg;
	struct int_sw_port *p;
	struct int_sw_cfg *c;
	struct pkt_info pi = {};
	__u64 now, now_ps, dep_ps, end_ps = 0, tx_ps, ahead_ps, backlog, wire;
	__u64 seg_len, qstep, qmax, txb = 0, rate, buffer, ecn_k, bucket;
	__u32 key = 0, nhop = 0, segs, i;
	int drop = 0, mark = 0, stamp = 0;

	c = bpf_map_lookup_elem(&cfg, &key);
	p = bpf_map_lookup_elem(&port, &key);
	hg = bpf_map_lookup_elem(&hist, &key);
	if (!c || !p || !hg)
		return TC_ACT_OK;
	rate = c->rate_bps;
	buffer = c->buffer_bytes;
	ecn_k = c->ecn_k_bytes;
	bucket = c->hist_bucket_bytes ? c->hist_bucket_bytes : INT_SW_HIST_BUCKET_DEFAULT;

	classify(skb, c->probe_dscp ? c->probe_dscp : HPCC_PROBE_DSCP_DEFAULT, &pi);
	if (pi.kind == PKT_PROBE)
		nhop = pi.int_word >> HPCC_INT_NHOP_POS;

	wire = skb->wire_len;
	if (wire < skb->len)
		wire = skb->len;
	segs = skb->gso_segs;
	if (segs < 1 || !skb->gso_size)
		segs = 1;
	if (segs > 64)	/* bounds the histogram loop; 64 KiB GSO at 1 KiB MSS */
		segs = 64;
	seg_len = wire / segs;
	qstep = seg_len;

	now = bpf_ktime_get_ns();
	now_ps = now * PS_PER_NS;
	/* wire < 2^20, 8e12 < 2^43: no overflow */
	tx_ps = rate ? wire * 8 * PS_PER_SEC / rate : 0;

	bpf_spin_lock(&p->lock);
	/* The clock was read before the lock (no helper calls under it). If
	 * another CPU took the lock in between, with a later clock, this
	 * packet is queued as arriving at that later time: the port's time
	 * never runs backwards, so a stale clock read (a vCPU preempted
	 * between the two, for milliseconds under TCG) cannot make the
	 * backlog look larger than the buffer, drop a packet the buffer had
	 * room for, or stamp an inflated qlen. */
	if (now < p->last_ns) {
		now = p->last_ns;
		now_ps = now * PS_PER_NS;
	}
	dep_ps = p->next_ps > now_ps ? p->next_ps : now_ps;
	ahead_ps = dep_ps - now_ps;
	/* in ns, ahead * rate < 2^64 for up to 18 s of queue at 1 Gbit/s */
	backlog = rate ? (ahead_ps / PS_PER_NS) * rate / (8 * 1000000000ULL) : 0;
	if (!p->first_ns)
		p->first_ns = now;
	p->last_ns = now;
	if (buffer && backlog + wire > buffer) {
		/* Every segment of a dropped skb saw the same queue. */
		drop = 1;
		p->drops++;
		p->drop_bytes += wire;
		p->last_drop_ns = now;
		qstep = 0;
	} else {
		end_ps = dep_ps + tx_ps;
		p->next_ps = end_ps;
		p->tx_bytes += wire;
		p->tx_packets++;
		p->tx_segs += segs;
		txb = p->tx_bytes;
		/* ECT(0) or ECT(1) above K becomes CE */
		if (ecn_k && backlog > ecn_k && pi.is_ip &&
		    ((pi.tos & 3) == 1 || (pi.tos & 3) == 2)) {
			mark = 1;
			p->ce_marks++;
		}
		if (pi.kind == PKT_PROBE) {
			if (nhop < HPCC_INT_MAX_HOPS) {
				stamp = 1;
				p->probes_stamped++;
			} else {
				p->probes_full++;
			}
		} else if (pi.kind == PKT_RESPONSE) {
			p->responses++;
		}
	}
	/* Segment i of the skb has backlog + i * qstep bytes ahead of it. */
	qmax = backlog + (segs - 1) * qstep;
	if (qmax > p->max_qlen_bytes)
		p->max_qlen_bytes = qmax;
	p->qlen_sum += segs * backlog + qstep * segs * (segs - 1) / 2;
	p->qlen_samples += segs;
	bpf_spin_unlock(&p->lock);

	log_packet(now, backlog, pi.sport, wire, drop);

	/* Queue occupancy seen by each arriving segment. */
	for (i = 0; i < 64; i++) {
		__u64 b;

		if (i >= segs)
			break;
		b = (backlog + i * qstep) / bucket;
		if (b >= INT_SW_HIST_BUCKETS)
			b = INT_SW_HIST_BUCKETS - 1;
		__sync_fetch_and_add(&hg->bucket[b], 1);
	}

	if (drop)
		return TC_ACT_SHOT;

	if (rate)
		bpf_skb_set_tstamp(skb, end_ps / PS_PER_NS + c->delay_ns,
				   BPF_SKB_TSTAMP_DELIVERY_MONO);

	if (mark && pi.is_ip == 4) {
		__u8 tos = pi.tos | 3;
		__u16 to = pi.word0;

		((__u8 *)&to)[1] = tos;	/* word0 is in network order */
		bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check),
				    pi.word0, to, 2);
		bpf_skb_store_bytes(skb, ETH_HLEN + 1, &tos, 1, 0);
	} else if (mark) {
		/* The ECN bits of the traffic class are bits 5:4 of the second
		 * byte; IPv6 has no header checksum. */
		__u8 b1 = ((__u8 *)&pi.word0)[1] | 0x30;

		bpf_skb_store_bytes(skb, ETH_HLEN + 1, &b1, 1, 0);
	}

	if (stamp) {
		struct hpcc_int_hop hop;
		struct hpcc_int_hdr hdr;
		__u32 code = c->speed_code;
		int sh = unit_shift(code);
		__u64 q = backlog >> sh;
		__u32 path = (pi.int_word & HPCC_INT_PATHID_MASK) ^
			     (c->switch_id & HPCC_INT_PATHID_MASK);

		if (q > HPCC_INT_QLEN_MASK)
			q = HPCC_INT_QLEN_MASK;
		hpcc_int_hop_pack(&hop, code,
				  (__u32)((end_ps / PS_PER_NS) >> HPCC_INT_TS_UNIT_SHIFT),
				  (__u32)(txb >> sh), (__u32)q);
		__u32 hop_off = pi.int_off + HPCC_INT_HDR_LEN + nhop * HPCC_INT_HOP_LEN;
		struct hpcc_int_hop old_hop;
		__u32 old_hdr, new_hdr;
		__s64 diff;

		hpcc_int_hdr_pack(&hdr, nhop + 1, path);
		/* The probe's TCP checksum is the valid one plus one, never
		 * valid (include/hpcc_probe.h): updated incrementally
		 * (RFC 1624) for the bytes stamped, so it stays exactly that. */
		if (bpf_skb_load_bytes(skb, hop_off, &old_hop, sizeof(old_hop)) < 0 ||
		    bpf_skb_load_bytes(skb, pi.int_off, &old_hdr, sizeof(old_hdr)) < 0)
			return TC_ACT_OK;
		new_hdr = old_hdr;
		__builtin_memcpy(&new_hdr, &hdr, 2);
		diff = bpf_csum_diff((__be32 *)&old_hop, sizeof(old_hop),
				     (__be32 *)&hop, sizeof(hop), 0);
		diff = bpf_csum_diff(&old_hdr, sizeof(old_hdr), &new_hdr,
				     sizeof(new_hdr), (__wsum)diff);
		bpf_skb_store_bytes(skb, hop_off, &hop, sizeof(hop), 0);
		/* nHop and pathID only; the padding stays as it was */
		bpf_skb_store_bytes(skb, pi.int_off, &hdr, 2, 0);
		if (diff >= 0)
			bpf_l4_csum_replace(skb, pi.l4_off + 16, 0, (__u64)diff, 0);
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
