/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of tcp_hpcc (defined in rust/tcp_hpcc/trace_events.c):
 *
 *   tcp_hpcc:hpcc_sample   one per probe response applied to a flow's
 *                          HPCC++ law (see struct hpcc_trace_rec)
 *   tcp_hpcc:hpcc_sfc      one per Source Flow Control signal received:
 *                          the flow, the switch and port, the queue, the
 *                          pause asked and applied, or why it was refused
 *                          (see struct hpcc_sfc_trace_rec)
 *   tcp_hpcc:hpcc_ctl      one per hook of an hpcc connection (init,
 *                          ACK, transmit start, ssthresh): the
 *                          controller's inputs and decision, which
 *                          hpcc-replay --ctl replays on the host (see
 *                          struct hpcc_ctl_rec)
 *
 *   echo 1 > /sys/kernel/tracing/events/tcp_hpcc/hpcc_sample/enable
 *   cat /sys/kernel/tracing/trace_pipe
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tcp_hpcc

#if !defined(_HPCC_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _HPCC_TRACE_H

#include <linux/tracepoint.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/inet_sock.h>
#include <net/ipv6.h>
#include <trace/events/net_probe_common.h>

#include "hpcc_shim.h"

TRACE_EVENT(hpcc_sample,
	TP_PROTO(const struct sock *sk, const struct hpcc_trace_rec *r),
	TP_ARGS(sk, r),
	TP_STRUCT__entry(
		/* sockaddr_in or sockaddr_in6, as tcp:tcp_probe stores them */
		__array(__u8, saddr, sizeof(struct sockaddr_in6))
		__array(__u8, daddr, sizeof(struct sockaddr_in6))
		__field(__u8, event)
		__field(__u8, hop)
		__field(__u8, n_hops)
		__field(__u8, inc_stage)
		__field(__u32, u_ppm)
		__field(__u32, sample_u_ppm)
		__field(__u32, qlen)
		__field(__u32, window)
		__field(__u32, wc)
		__field(__u32, cwnd)
		__field(__u32, inflight)
		__field(__u32, srtt_us)
		__field(__u32, base_rtt_us)
		__field(__u64, pacing_rate)
		__field(__u64, path_rate)
	),
	TP_fast_assign(
		const struct inet_sock *inet = inet_sk(sk);

		memset(__entry->saddr, 0, sizeof(struct sockaddr_in6));
		memset(__entry->daddr, 0, sizeof(struct sockaddr_in6));
		TP_STORE_ADDR_PORTS(__entry, inet, sk);
		__entry->event = r->event;
		__entry->hop = r->hop;
		__entry->n_hops = r->n_hops;
		__entry->inc_stage = r->inc_stage;
		__entry->u_ppm = r->u_ppm;
		__entry->sample_u_ppm = r->sample_u_ppm;
		__entry->qlen = r->qlen;
		__entry->window = r->window;
		__entry->wc = r->wc;
		__entry->cwnd = r->cwnd;
		__entry->inflight = r->inflight;
		__entry->srtt_us = r->srtt_us;
		__entry->base_rtt_us = r->base_rtt_us;
		__entry->pacing_rate = r->pacing_rate;
		__entry->path_rate = r->path_rate;
	),
	TP_printk("src=%pISpc dst=%pISpc ev=%u hop=%u/%u U=%u u=%u qlen=%u W=%u Wc=%u stage=%u cwnd=%u inflight=%u srtt=%u T=%u rate=%llu link=%llu",
		  __entry->saddr, __entry->daddr,
		  __entry->event, __entry->hop, __entry->n_hops, __entry->u_ppm,
		  __entry->sample_u_ppm, __entry->qlen, __entry->window, __entry->wc,
		  __entry->inc_stage, __entry->cwnd, __entry->inflight,
		  __entry->srtt_us, __entry->base_rtt_us, __entry->pacing_rate,
		  __entry->path_rate)
);

TRACE_EVENT(hpcc_ctl,
	TP_PROTO(const struct sock *sk, const struct hpcc_ctl_rec *r),
	TP_ARGS(sk, r),
	TP_STRUCT__entry(
		__field(const void *, skaddr)
		__array(__u8, saddr, sizeof(struct sockaddr_in6))
		__array(__u8, daddr, sizeof(struct sockaddr_in6))
		__field_struct(struct hpcc_ctl_rec, r)
	),
	TP_fast_assign(
		const struct inet_sock *inet = inet_sk(sk);

		__entry->skaddr = sk;
		memset(__entry->saddr, 0, sizeof(struct sockaddr_in6));
		memset(__entry->daddr, 0, sizeof(struct sockaddr_in6));
		TP_STORE_ADDR_PORTS(__entry, inet, sk);
		__entry->r = *r;
		if (__entry->r.int_len > sizeof(__entry->r.int_stack))
			__entry->r.int_len = sizeof(__entry->r.int_stack);
	),
	/* One key=value per field, for hpcc-replay --ctl, which reads the
	 * tracefs text (the record is one struct field: perf and trace-cmd
	 * print the raw event, not these names). */
	TP_printk("sk=%p src=%pISpc dst=%pISpc hook=%u flags=%#x now=%llu mss=%u cwnd=%u ssthresh=%u srtt=%u min_rtt=%u packets_out=%u in_flight=%u snd_nxt=%u rs_delivered=%u rs_interval=%llu rs_prior_in_flight=%u rs_acked_sacked=%u resp_rx=%llu resp_snd_nxt=%u int=%s sfc_gen=%u sfc_qlen=%u sfc_speed=%u sfc_gap=%llu out_cwnd=%u out_ssthresh=%u out_pacing=%llu out_pacing_shift=%u out_tso_segs=%u max_pacing=%llu",
		  __entry->skaddr, __entry->saddr, __entry->daddr,
		  __entry->r.hook, __entry->r.flags, __entry->r.now_ns,
		  __entry->r.mss, __entry->r.cwnd, __entry->r.ssthresh,
		  __entry->r.srtt_us, __entry->r.min_rtt_us,
		  __entry->r.packets_out, __entry->r.in_flight,
		  __entry->r.snd_nxt, __entry->r.rs_delivered,
		  __entry->r.rs_interval_us, __entry->r.rs_prior_in_flight,
		  __entry->r.rs_acked_sacked, __entry->r.resp_rx_ns,
		  __entry->r.resp_snd_nxt,
		  __print_hex_str(__entry->r.int_stack, __entry->r.int_len),
		  __entry->r.sfc_gen, __entry->r.sfc_qlen, __entry->r.sfc_speed,
		  __entry->r.sfc_gap_ns,
		  __entry->r.out_cwnd, __entry->r.out_ssthresh,
		  __entry->r.out_pacing, __entry->r.out_pacing_shift,
		  __entry->r.out_tso_segs, __entry->r.max_pacing_rate)
);

/* The outcome names, resolved for user-space decoders (perf, trace-cmd). */
TRACE_DEFINE_ENUM(HPCC_SFC_APPLIED);
TRACE_DEFINE_ENUM(HPCC_SFC_DEFERRED);
TRACE_DEFINE_ENUM(HPCC_SFC_DISABLED);
TRACE_DEFINE_ENUM(HPCC_SFC_BAD_TTL);
TRACE_DEFINE_ENUM(HPCC_SFC_NOT_IN_ACL);
TRACE_DEFINE_ENUM(HPCC_SFC_RATE_LIMITED);
TRACE_DEFINE_ENUM(HPCC_SFC_TRUNCATED);
TRACE_DEFINE_ENUM(HPCC_SFC_BAD_HEADER);
TRACE_DEFINE_ENUM(HPCC_SFC_NO_FLOW);
TRACE_DEFINE_ENUM(HPCC_SFC_SEQ_OUT_OF_WINDOW);
TRACE_DEFINE_ENUM(HPCC_SFC_APPLIED_EGRESS);
TRACE_DEFINE_ENUM(HPCC_SFC_PAUSE_TABLE_FULL);
TRACE_DEFINE_ENUM(HPCC_SFC_BAD_UDP);
TRACE_DEFINE_ENUM(HPCC_SFC_BAD_SOURCE);
TRACE_DEFINE_ENUM(HPCC_SFC_LOOPBACK);
TRACE_DEFINE_ENUM(HPCC_SFC_TUNNEL);
TRACE_DEFINE_ENUM(HPCC_SFC_IFACE);
TRACE_DEFINE_ENUM(HPCC_SFC_LOCAL_SOURCE);
TRACE_DEFINE_ENUM(HPCC_SFC_DUPLICATE);
TRACE_DEFINE_ENUM(HPCC_SFC_SOURCE_QUOTA);

TRACE_EVENT(hpcc_sfc,
	TP_PROTO(const struct hpcc_sfc_trace_rec *r),
	TP_ARGS(r),
	TP_STRUCT__entry(
		__array(__u8, src, 16)
		__array(__u8, laddr, 16)
		__array(__u8, raddr, 16)
		__field(__u16, lport)
		__field(__u16, rport)
		__field(__u32, switch_id)
		__field(__u16, port_id)
		__field(__u8, outcome)
		__field(__u32, qlen)
		__field(__u32, pause_ns)
		__field(__u64, applied_ns)
		__field(__u64, at_ns)
	),
	TP_fast_assign(
		memcpy(__entry->src, r->src, 16);
		memcpy(__entry->laddr, r->laddr, 16);
		memcpy(__entry->raddr, r->raddr, 16);
		__entry->lport = r->lport;
		__entry->rport = r->rport;
		__entry->switch_id = r->switch_id;
		__entry->port_id = r->port_id;
		__entry->outcome = r->outcome;
		__entry->qlen = r->qlen;
		__entry->pause_ns = r->pause_ns;
		__entry->applied_ns = r->applied_ns;
		__entry->at_ns = r->at_ns;
	),
	TP_printk("switch=%pI6c id=%#x port=%u flow=[%pI6c]:%u->[%pI6c]:%u qlen=%u pause=%u applied=%llu at=%llu %s",
		  __entry->src, __entry->switch_id, __entry->port_id,
		  __entry->laddr, __entry->lport, __entry->raddr, __entry->rport,
		  __entry->qlen, __entry->pause_ns, __entry->applied_ns, __entry->at_ns,
		  __print_symbolic(__entry->outcome,
				   { HPCC_SFC_APPLIED, "applied" },
				   { HPCC_SFC_DEFERRED, "deferred" },
				   { HPCC_SFC_DISABLED, "disabled" },
				   { HPCC_SFC_BAD_TTL, "bad_ttl" },
				   { HPCC_SFC_NOT_IN_ACL, "not_in_acl" },
				   { HPCC_SFC_RATE_LIMITED, "rate_limited" },
				   { HPCC_SFC_TRUNCATED, "truncated" },
				   { HPCC_SFC_BAD_HEADER, "bad_header" },
				   { HPCC_SFC_NO_FLOW, "no_flow" },
				   { HPCC_SFC_SEQ_OUT_OF_WINDOW, "seq_out_of_window" },
				   { HPCC_SFC_APPLIED_EGRESS, "applied_egress" },
				   { HPCC_SFC_PAUSE_TABLE_FULL, "pause_table_full" },
				   { HPCC_SFC_BAD_UDP, "bad_udp" },
				   { HPCC_SFC_BAD_SOURCE, "bad_source" },
				   { HPCC_SFC_LOOPBACK, "loopback" },
				   { HPCC_SFC_TUNNEL, "tunnel" },
				   { HPCC_SFC_IFACE, "iface" },
				   { HPCC_SFC_LOCAL_SOURCE, "local_source" },
				   { HPCC_SFC_DUPLICATE, "duplicate" },
				   { HPCC_SFC_SOURCE_QUOTA, "source_quota" }))
);

#endif /* _HPCC_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE hpcc_trace
#include <trace/define_trace.h>
