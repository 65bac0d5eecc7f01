/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations of the thin C shim (rust/helpers.c): only what Rust cannot
 * call directly, i.e. macros and static inline functions of the kernel.
 */
#ifndef _HPCC_SHIM_H
#define _HPCC_SHIM_H

#include <linux/types.h>

struct module;
struct net;
struct sock;
struct sk_buff;
struct kernel_param_ops;

/* THIS_MODULE, which is a macro. */
struct module *hpcc_this_module(void);

/* tcp_is_cwnd_limited(), a static inline in <net/tcp.h>. */
bool hpcc_tcp_is_cwnd_limited(const struct sock *sk);

/* rcu_read_lock() and rcu_read_unlock(), static inlines. */
void hpcc_rcu_read_lock(void);
void hpcc_rcu_read_unlock(void);

/* tcp_in_cwnd_reduction() (CWR or Recovery), a static inline. */
bool hpcc_tcp_in_cwnd_reduction(const struct sock *sk);

/*
 * Addresses cross the shim as 16 bytes in network order; IPv4 addresses
 * are IPv4-mapped (::ffff:a.b.c.d), as dual-stack sockets keep them.
 */

/* The socket's 4-tuple (local to remote; ports in network order) and
 * netns, through the inet_sk()/sock_net() inlines and the skc_* macros.
 * Returns false for anything but an AF_INET or AF_INET6 socket. */
bool hpcc_sk_tuple(const struct sock *sk, struct net **net, __u8 saddr[16],
		   __u8 daddr[16], __be16 *sport, __be16 *dport);

/* What hpcc_sk_send() and hpcc_reply() did with the packet, besides a
 * negative errno. */
enum {
	HPCC_TX_SENT = 0,
	/* The connection's route is an IPsec bundle (or blocked by policy):
	 * nothing is sent in clear. */
	HPCC_TX_PROTECTED = 1,
	/* hpcc_reply(): no established connection for the tuple. */
	HPCC_TX_NO_SOCKET = 2,
};

/* alloc_skb(GFP_ATOMIC | __GFP_NOWARN) + skb_reserve() for a locally built
 * IP packet of @len bytes; skb_put() then gives the data area. */
struct sk_buff *hpcc_skb_alloc_ip(unsigned int len);

/* Sends @skb, an IPv4 or IPv6 packet of @sk's flow built at skb->data
 * with TOS/traffic class @tos, routed exactly as @sk routes its data
 * (addresses, ports, TOS, mark, bound device, uid, xfrm policy; for IPv6
 * the data's flow label is written into the header). Consumes @skb. */
int hpcc_sk_send(struct sock *sk, struct sk_buff *skb, __u8 tos);

/* Receiver: finds the established (full) TCP socket in @net for the
 * local/remote 4-tuple, on the device @rx (a received packet, in a
 * netfilter hook) came in on, and sends @skb as hpcc_sk_send() would for
 * that socket. Consumes @skb. */
int hpcc_reply(struct net *net, const struct sk_buff *rx, const __u8 laddr[16],
	       __be16 lport, const __u8 raddr[16], __be16 rport,
	       struct sk_buff *skb, __u8 tos);

/* One applied telemetry sample, for the tcp_hpcc:hpcc_sample tracepoint
 * (rust/trace_events.c). Filled in Rust (rust/cong_ops.rs). */
struct hpcc_trace_rec {
	__u8 event;		/* 0 recorded, 1 path changed, 2 updated, 3 committed, 4 stale */
	__u8 hop;		/* index of the most loaded hop */
	__u8 n_hops;
	__u8 inc_stage;
	__u32 u_ppm;		/* U after the sample, 10^-6 */
	__u32 sample_u_ppm;	/* the chosen hop's u' */
	__u32 qlen;		/* the chosen hop's queue, bytes */
	__u32 window;		/* W, bytes */
	__u32 wc;		/* Wc, bytes */
	__u32 cwnd;		/* the cwnd set before this sample, segments */
	__u32 inflight;		/* tcp_packets_in_flight(), segments */
	__u32 srtt_us;
	__u32 base_rtt_us;	/* T */
	__u64 pacing_rate;	/* bytes/s, as applied */
	__u64 path_rate;	/* slowest INT link on the path, bytes/s */
};

/* Fires the tcp_hpcc:hpcc_sample tracepoint (a no-op unless enabled). */
void hpcc_trace_sample(const struct sock *sk, const struct hpcc_trace_rec *r);

#endif /* _HPCC_SHIM_H */
