// SPDX-License-Identifier: GPL-2.0
/*
 * int_switch.bpf.c: one egress port of an emulated HPCC++ INT switch, as a
 * tc clsact egress program (clang -O2 -g --target=bpf). Load one instance
 * per port (each load has its own maps): selftests/lib/sh/int_switch.sh does
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
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "hpcc_int.h"
#include "hpcc_probe.h"
#include "hpcc_sfc.h"
#include "int_switch.h"

#ifndef BPF_SKB_TSTAMP_DELIVERY_MONO
#define BPF_SKB_TSTAMP_DELIVERY_MONO	1
#endif

/* selftests/lib/py/intsw.py unpacks these layouts */
_Static_assert(sizeof(struct int_sw_cfg) == 48, "int_sw_cfg layout");
_Static_assert(sizeof(struct int_sw_port) == 8 + 16 * 8, "int_sw_port layout");
_Static_assert(sizeof(struct int_sw_sfc_cfg) == 64, "int_sw_sfc_cfg layout");
_Static_assert(sizeof(struct int_sw_sfc) == 8 + 9 * 8, "int_sw_sfc layout");

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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct int_sw_sfc_cfg);
} sfc_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct int_sw_sfc);
} sfc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, INT_SW_SFC_RING);
	__type(key, __u32);
	__type(value, struct int_sw_sfc_rec);
} sfc_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, INT_SW_SFC_FLOWS);
	__type(key, struct int_sw_sfc_key);
	__type(value, __u64);
} sfc_flows SEC(".maps");

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
	__u32 l4_off;	/* where TCP or UDP starts; 0: neither */
	__u32 int_off;
	__u32 segs;
	__u16 word0;	/* the first two bytes of the IP header, network order */
	__u16 int_word;	/* nHop:4 | pathID:12, host order */
	__u16 sport;	/* TCP or UDP source port, host order */
	__u16 dport;	/* TCP or UDP destination port, host order */
	__u8 proto;	/* IPPROTO_TCP or IPPROTO_UDP when l4_off is set */
	__u8 tos;
	__u8 is_ip;	/* 4 or 6; 0 for anything else */
};

/* The IP header: TOS or traffic class and, if it is TCP or UDP (and, for
 * IPv4, not a fragment; for IPv6, without extension headers), the protocol
 * and where it starts. Returns 0 if the transport is neither. */
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
		if ((iph.protocol != IPPROTO_TCP && iph.protocol != IPPROTO_UDP) ||
		    (iph.frag_off & bpf_htons(0x3fff)))	/* MF or a fragment offset */
			return 0;
		pi->proto = iph.protocol;
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
		if (ip6h.nexthdr != IPPROTO_TCP && ip6h.nexthdr != IPPROTO_UDP)
			return 0;
		pi->proto = ip6h.nexthdr;
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

	__be16 ports[2];

	l4 = ip_head(skb, pi);
	if (!l4)
		return;
	if (bpf_skb_load_bytes(skb, l4, ports, sizeof(ports)) < 0)
		return;
	pi->l4_off = l4;
	pi->sport = bpf_ntohs(ports[0]);
	pi->dport = bpf_ntohs(ports[1]);
	if (pi->proto != IPPROTO_TCP)
		return;
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

/* The data packet's addresses into an SFC key (IPv4: first 4 of 16 bytes). */
static __always_inline int sfc_addrs(struct __sk_buff *skb, struct pkt_info *pi,
				     __u8 *saddr, __u8 *daddr)
{
	if (pi->is_ip == 4) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct iphdr, saddr), saddr, 4) < 0 ||
		    bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct iphdr, daddr), daddr, 4) < 0)
			return -1;
		return 0;
	}
	if (bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct ipv6hdr, saddr), saddr, 16) < 0 ||
	    bpf_skb_load_bytes(skb, ETH_HLEN + offsetof(struct ipv6hdr, daddr), daddr, 16) < 0)
		return -1;
	return 0;
}

/*
 * SFC at egress, after the queue decision (a dropped packet signals too):
 * threshold, per-flow suppression, token bucket; then the clone to the
 * port's ingress, tagged with the ring slot that holds pause and qlen.
 */
static __always_inline void sfc_egress(struct __sk_buff *skb, struct pkt_info *pi,
				       __u64 backlog, __u64 rate, __u64 now)
{
	struct int_sw_sfc_key k = {};
	struct int_sw_sfc_cfg *sc;
	struct int_sw_sfc_rec *rec;
	struct int_sw_sfc *st;
	__u64 *last, prev, add, cap, pause, ahead;
	__u32 key = 0, slot, mark;
	int ok;

	sc = bpf_map_lookup_elem(&sfc_cfg, &key);
	st = bpf_map_lookup_elem(&sfc, &key);
	if (!sc || !st || !sc->trigger_bytes || backlog < sc->trigger_bytes || !rate)
		return;
	if (!pi->l4_off || pi->kind != PKT_OTHER ||
	    (pi->proto == IPPROTO_UDP && pi->dport == sc->udp_port))
		return;
	__sync_fetch_and_add(&st->triggered, 1);
	if (sfc_addrs(skb, pi, k.saddr, k.daddr) < 0)
		return;
	k.sport = pi->sport;
	k.dport = pi->dport;
	k.proto = pi->proto;
	last = bpf_map_lookup_elem(&sfc_flows, &k);
	prev = last ? *last : 0;
	if (last && now - prev < sc->suppress_ns) {
		__sync_fetch_and_add(&st->suppressed, 1);
		return;
	}
	/* Token bucket in 10^-9 signals: rate <= 2^32 and a gap of up to
	 * 2^32 ns keep the product below 2^64; longer gaps fill it anyway. */
	cap = (__u64)sc->burst * 1000000000ULL;
	bpf_spin_lock(&st->lock);
	add = now - st->last_ns;
	if (now < st->last_ns)
		add = 0;
	else
		st->last_ns = now;
	add = add > 0xffffffffULL ? cap : add * sc->rate;
	st->tokens = st->tokens + add > cap ? cap : st->tokens + add;
	ok = st->tokens >= 1000000000ULL;
	if (ok)
		st->tokens -= 1000000000ULL;
	slot = st->ring_next++ % INT_SW_SFC_RING;
	bpf_spin_unlock(&st->lock);
	if (!ok) {
		__sync_fetch_and_add(&st->rate_limited, 1);
		return;
	}
	/* Claim the flow's window: of packets of one flow racing on two CPUs
	 * only one signals. */
	if (last ? __sync_val_compare_and_swap(last, prev, now) != prev :
		   bpf_map_update_elem(&sfc_flows, &k, &now, BPF_NOEXIST) < 0) {
		__sync_fetch_and_add(&st->suppressed, 1);
		return;
	}
	rec = bpf_map_lookup_elem(&sfc_ring, &slot);
	if (!rec)
		return;
	/* backlog < 2^33 at any realistic buffer, 8e9 < 2^33: no overflow */
	ahead = backlog > sc->target_bytes ? backlog - sc->target_bytes : 0;
	pause = ahead * 8000000000ULL / rate;
	rec->pause_ns = pause > 0xffffffffULL ? 0xffffffff : (pause ? pause : 1);
	rec->qlen = backlog > 0xffffffffULL ? 0xffffffff : backlog;
	mark = skb->mark;
	skb->mark = INT_SW_SFC_MARK | slot;
	if (bpf_clone_redirect(skb, sc->ifindex, BPF_F_INGRESS) < 0)
		__sync_fetch_and_add(&st->clone_errors, 1);
	skb->mark = mark;
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

	sfc_egress(skb, &pi, backlog, rate, now);

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

/* Folds a 32-bit ones'-complement sum into 16 bits. */
static __always_inline __u16 csum_fold32(__u64 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* The pseudo-headers of the UDP checksum (RFC 768; RFC 8200 section 8.1). */
struct sfc_pseudo4 {
	__be32 saddr;
	__be32 daddr;
	__u8 zero;
	__u8 proto;
	__be16 len;
};

struct sfc_pseudo6 {
	__u8 saddr[16];
	__u8 daddr[16];
	__be32 len;
	__be32 nexthdr;
};

/* Sets @uh's checksum over the pseudo-header @ph (@ph_len bytes, a
 * multiple of 4), @uh and the signal @h; a signal carries one in both
 * families (hosts refuse one without). -1 on a helper's error. */
static __always_inline int sfc_udp_csum(void *ph, __u32 ph_len, struct udphdr *uh,
					struct hpcc_sfc_hdr *h)
{
	__s64 sum = bpf_csum_diff(NULL, 0, ph, ph_len, 0);

	if (sum >= 0)
		sum = bpf_csum_diff(NULL, 0, (__be32 *)uh, sizeof(*uh), sum);
	if (sum >= 0)
		sum = bpf_csum_diff(NULL, 0, (__be32 *)h, sizeof(*h), sum);
	if (sum < 0)
		return -1;
	uh->check = csum_fold32(sum);
	if (!uh->check)
		uh->check = 0xffff;
	return 0;
}

/*
 * The clsact ingress program of a port with SFC: a clone tagged by
 * sfc_egress becomes the signal (include/hpcc_sfc.h) and leaves toward the
 * data packet's source; every other packet passes untouched.
 */
SEC("tc")
int int_switch_sfc(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	struct hpcc_sfc_hdr h = {};
	struct int_sw_sfc_cfg *sc;
	struct int_sw_sfc_rec *rec;
	struct pkt_info pi = {};
	struct int_sw_sfc *st;
	struct udphdr uh = {};
	__u32 key = 0, slot, l4, len;
	__be32 seq = 0;
	__s64 sum;
	int rc;

	if ((skb->mark & INT_SW_SFC_MARK_MASK) != INT_SW_SFC_MARK)
		return TC_ACT_OK;
	slot = skb->mark & ~INT_SW_SFC_MARK_MASK;
	skb->mark = 0;
	sc = bpf_map_lookup_elem(&sfc_cfg, &key);
	st = bpf_map_lookup_elem(&sfc, &key);
	rec = bpf_map_lookup_elem(&sfc_ring, &slot);
	if (!sc || !st || !rec)
		return TC_ACT_SHOT;
	l4 = ip_head(skb, &pi);
	if (!l4 || sfc_addrs(skb, &pi, h.saddr, h.daddr) < 0 ||
	    bpf_skb_load_bytes(skb, l4, &h.sport, 4) < 0 ||
	    (pi.proto == IPPROTO_TCP && bpf_skb_load_bytes(skb, l4 + 4, &seq, 4) < 0))
		goto bad;
	h.magic = bpf_htonl(HPCC_SFC_MAGIC);
	h.version = HPCC_SFC_VERSION;
	h.family = pi.is_ip;
	h.l4proto = pi.proto;
	h.len = bpf_htons(HPCC_SFC_LEN);
	h.pause_ns = bpf_htonl(rec->pause_ns);
	h.qlen = bpf_htonl(rec->qlen);
	h.seq = seq;
	{
		struct int_sw_cfg *c = bpf_map_lookup_elem(&cfg, &key);

		if (!c)
			goto bad;
		h.speed = c->speed_code;
		h.switch_id = bpf_htonl(c->switch_id);
		h.port_id = bpf_htons(sc->ifindex);
	}
	uh.source = bpf_htons(sc->udp_port);
	uh.dest = bpf_htons(sc->udp_port);
	uh.len = bpf_htons(sizeof(uh) + HPCC_SFC_LEN);

	if (pi.is_ip == 4) {
		struct iphdr iph = {};

		l4 = ETH_HLEN + sizeof(iph);
		len = l4 + sizeof(uh) + HPCC_SFC_LEN;
		iph.version = 4;
		iph.ihl = 5;
		iph.tos = pi.tos & ~3;
		iph.tot_len = bpf_htons(len - ETH_HLEN);
		iph.frag_off = bpf_htons(0x4000);	/* DF */
		iph.ttl = HPCC_SFC_TTL;
		iph.protocol = IPPROTO_UDP;
		__builtin_memcpy(&iph.saddr, sc->addr4, 4);
		__builtin_memcpy(&iph.daddr, h.saddr, 4);
		sum = bpf_csum_diff(NULL, 0, (__be32 *)&iph, sizeof(iph), 0);
		if (sum < 0)
			goto bad;
		iph.check = csum_fold32(sum);
		{
			struct sfc_pseudo4 ph = {
				.saddr = iph.saddr,
				.daddr = iph.daddr,
				.proto = IPPROTO_UDP,
				.len = uh.len,
			};

			if (sfc_udp_csum(&ph, sizeof(ph), &uh, &h) < 0)
				goto bad;
		}
		if (bpf_skb_change_tail(skb, len, 0) < 0 ||
		    bpf_skb_store_bytes(skb, ETH_HLEN, &iph, sizeof(iph), 0) < 0)
			goto bad;
		fib.family = 2;	/* AF_INET */
		fib.ipv4_src = iph.saddr;
		fib.ipv4_dst = iph.daddr;
	} else {
		struct ipv6hdr ip6h = {};
		struct sfc_pseudo6 ph = {};
		__u8 *b = (__u8 *)&ip6h;

		l4 = ETH_HLEN + sizeof(ip6h);
		len = l4 + sizeof(uh) + HPCC_SFC_LEN;
		b[0] = 0x60 | ((pi.tos & ~3) >> 4);
		b[1] = (pi.tos & ~3) << 4;
		ip6h.payload_len = uh.len;
		ip6h.nexthdr = IPPROTO_UDP;
		ip6h.hop_limit = HPCC_SFC_TTL;
		__builtin_memcpy(&ip6h.saddr, sc->addr6, 16);
		__builtin_memcpy(&ip6h.daddr, h.saddr, 16);
		__builtin_memcpy(ph.saddr, sc->addr6, 16);
		__builtin_memcpy(ph.daddr, h.saddr, 16);
		ph.len = bpf_htonl(sizeof(uh) + HPCC_SFC_LEN);
		ph.nexthdr = bpf_htonl(IPPROTO_UDP);
		if (sfc_udp_csum(&ph, sizeof(ph), &uh, &h) < 0)
			goto bad;
		if (bpf_skb_change_tail(skb, len, 0) < 0 ||
		    bpf_skb_store_bytes(skb, ETH_HLEN, &ip6h, sizeof(ip6h), 0) < 0)
			goto bad;
		fib.family = 10;	/* AF_INET6 */
		__builtin_memcpy(fib.ipv6_src, sc->addr6, 16);
		__builtin_memcpy(fib.ipv6_dst, h.saddr, 16);
	}
	if (bpf_skb_store_bytes(skb, l4, &uh, sizeof(uh), 0) < 0 ||
	    bpf_skb_store_bytes(skb, l4 + sizeof(uh), &h, sizeof(h), 0) < 0)
		goto bad;
	fib.ifindex = skb->ingress_ifindex;
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
		goto bad;
	/* Not held by the next port's fq: the signal skips every queue. */
	bpf_skb_set_tstamp(skb, 0, 0);
	__sync_fetch_and_add(&st->signals_sent, 1);
	return bpf_redirect_neigh(fib.ifindex, NULL, 0, 0);
bad:
	if (st)
		__sync_fetch_and_add(&st->build_errors, 1);
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "GPL";
