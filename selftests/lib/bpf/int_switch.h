/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map layouts of the INT switch emulator (selftests/lib/bpf/int_switch.bpf.c).
 * selftests/lib/py/intsw.py reads these structs from this file (ctypes, natural
 * alignment as here): this is the one definition. All fields are host
 * order.
 *
 * Maps of one port, pinned under /sys/fs/bpf/hpcc/<netns>/<dev>/:
 *   cfg   ARRAY[1]   struct int_sw_cfg   written by the loader, read per packet
 *   port  ARRAY[1]   struct int_sw_port  virtual clock and counters
 *   hist  ARRAY[1]   struct int_sw_hist  queue occupancy histogram
 *   plog  ARRAY[INT_SW_LOG_LEN] struct int_sw_log_rec  the last packets (ring)
 *   plogi ARRAY[1]   __u64               packets logged so far (ring index)
 */
#ifndef _HPCC_INT_SWITCH_H
#define _HPCC_INT_SWITCH_H

#include <linux/types.h>

#define INT_SW_HIST_BUCKETS		512
#define INT_SW_HIST_BUCKET_DEFAULT	512	/* bytes */

struct int_sw_cfg {
	__u64 rate_bps;		/* capacity B in bit/s; 0: no queue, no tstamp */
	__u64 buffer_bytes;	/* drop-tail buffer; 0: unlimited */
	__u64 ecn_k_bytes;	/* CE-mark ECT packets with backlog > K; 0: off */
	__u64 delay_ns;		/* added to skb->tstamp after departure */
	__u32 switch_id;	/* 12 bits, XORed into pathID */
	__u32 speed_code;	/* HPCC_INT_RATE_* reported in hop records */
	__u32 probe_dscp;	/* 0: HPCC_PROBE_DSCP_DEFAULT */
	__u32 hist_bucket_bytes; /* 0: INT_SW_HIST_BUCKET_DEFAULT */
};

struct int_sw_port {
	struct bpf_spin_lock lock;
	__u32 _pad;
	__u64 next_ps;		/* virtual clock: last accepted bit leaves, ps (CLOCK_MONOTONIC) */
	__u64 tx_bytes;		/* wire bytes accepted into the queue (all of them leave) */
	__u64 tx_packets;	/* skbs accepted */
	__u64 tx_segs;		/* segments accepted (GSO counted per segment) */
	__u64 drops;		/* skbs dropped by drop-tail */
	__u64 drop_bytes;
	__u64 ce_marks;		/* skbs marked ECT -> CE */
	__u64 probes_stamped;
	__u64 probes_full;	/* probes that arrived with nHop == HPCC_INT_MAX_HOPS */
	__u64 responses;	/* response packets (passed unstamped) */
	__u64 max_qlen_bytes;	/* largest sampled queue */
	__u64 qlen_sum;		/* sum of sampled queues, bytes */
	__u64 qlen_samples;	/* number of samples (arriving segments, dropped ones too) */
	__u64 first_ns;		/* first packet, bpf_ktime_get_ns */
	__u64 last_ns;		/* last packet: the port's clock, never decreases */
	__u64 last_drop_ns;	/* last drop; 0: none */
};

/*
 * Queue occupancy seen by each arriving segment (GSO counted per segment,
 * dropped ones included): bucket[i] counts samples with
 * i * width <= qlen < (i + 1) * width bytes, width = cfg.hist_bucket_bytes;
 * the last bucket also counts everything above.
 */
struct int_sw_hist {
	__u64 bucket[INT_SW_HIST_BUCKETS];
};

/*
 * Packet log: every skb that reaches the port (dropped ones too), in a ring
 * of INT_SW_LOG_LEN records; record i % INT_SW_LOG_LEN is the i-th packet,
 * plogi holds how many were logged. For attributing queue build-ups to flows
 * and instants (intsw.py log). 2 MB: it reaches back about 8 s at 200 Mbit/s in
 * 1,448-byte packets, over a late joiner's whole run (bench_join).
 */
#define INT_SW_LOG_LEN		131072

#define INT_SW_LOG_DROPPED		0x80000000U	/* in backlog_flags */

struct int_sw_log_rec {
	__u64 t_ns;		/* arrival, bpf_ktime_get_ns */
	__u32 backlog_flags;	/* bytes queued ahead of it (31 bits, saturated)
				 * | INT_SW_LOG_DROPPED if drop-tail dropped it */
	__u16 sport;		/* TCP source port (0: not IPv4/TCP) */
	__u16 wire;		/* wire bytes, saturated at 0xffff */
};

/*
 * Source Flow Control (include/hpcc_sfc.h), per port, off unless
 * sfc_cfg.trigger_bytes is set. A data packet (TCP or UDP over IPv4, or
 * IPv6 without extension headers; not a probe, a response or a signal)
 * that finds backlog >= trigger_bytes queued ahead of it makes the port
 * signal its sender, unless that flow was signalled within suppress_ns
 * (sfc_flows, LRU) or the port's token bucket (rate per second, burst) is
 * empty. pause = (backlog - target_bytes) * 8 / rate_bps, at least 1 ns.
 *
 * The signal leaves at once, not behind the queue: the egress program
 * records it in sfc_ring, tags a clone of the data packet with
 * INT_SW_SFC_MARK | slot in skb->mark and redirects the clone to the
 * ingress of port ifindex; the ingress program (int_switch_sfc) rewrites
 * the clone into the signal (source addr4/addr6, TTL 255, UDP to
 * udp_port) and redirects it toward the data packet's source by a FIB
 * lookup. The data packet itself is not changed (its mark is restored).
 */
#define INT_SW_SFC_MARK		0x5fc00000U
#define INT_SW_SFC_MARK_MASK	0xffff0000U
#define INT_SW_SFC_RING		256	/* in-flight signals (slot = low bits) */
#define INT_SW_SFC_FLOWS	4096	/* suppression entries (LRU) */

struct int_sw_sfc_cfg {
	__u64 trigger_bytes;	/* 0: SFC off on this port */
	__u64 target_bytes;	/* drain target */
	__u64 suppress_ns;	/* per-flow: at most one signal per interval */
	__u32 rate;		/* signals per second (token bucket) */
	__u32 burst;		/* bucket depth, signals */
	__u32 ifindex;		/* this port's ifindex (the clone's ingress) */
	__u32 udp_port;		/* destination port of signals */
	__u8 addr4[4];		/* the switch's own IPv4 address (signal source) */
	__u8 addr6[16];		/* the switch's own IPv6 address */
	__u32 _pad;
};

struct int_sw_sfc {
	struct bpf_spin_lock lock;
	__u32 _pad;
	__u64 tokens;		/* token bucket, in 10^-9 signals */
	__u64 last_ns;		/* last refill */
	__u64 ring_next;	/* next sfc_ring slot (mod INT_SW_SFC_RING) */
	__u64 triggered;	/* data packets that found backlog >= trigger */
	__u64 suppressed;	/* of those, within suppress_ns of the flow's last signal */
	__u64 rate_limited;	/* of those, refused by the bucket */
	__u64 clone_errors;	/* bpf_clone_redirect failed */
	__u64 signals_sent;	/* signals built and redirected toward the sender */
	__u64 build_errors;	/* clones that could not be made into a signal or routed */
};

/* One signal in flight from the egress to the ingress program. */
struct int_sw_sfc_rec {
	__u32 pause_ns;
	__u32 qlen;
};

struct int_sw_sfc_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u32 proto;
};

#endif /* _HPCC_INT_SWITCH_H */
