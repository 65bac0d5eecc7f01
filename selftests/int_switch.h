/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map layouts of the INT switch emulator (selftests/int_switch.bpf.c).
 * selftests/intsw.py packs and unpacks the same layouts (struct module):
 * change both together. All fields are host order.
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
 * and instants (intsw.py log).
 */
#define INT_SW_LOG_LEN		65536

#define INT_SW_LOG_DROPPED		0x80000000U	/* in backlog_flags */

struct int_sw_log_rec {
	__u64 t_ns;		/* arrival, bpf_ktime_get_ns */
	__u32 backlog_flags;	/* bytes queued ahead of it (31 bits, saturated)
				 * | INT_SW_LOG_DROPPED if drop-tail dropped it */
	__u16 sport;		/* TCP source port (0: not IPv4/TCP) */
	__u16 wire;		/* wire bytes, saturated at 0xffff */
};

#endif /* _HPCC_INT_SWITCH_H */
