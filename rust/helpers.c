// SPDX-License-Identifier: GPL-2.0
/*
 * Thin C shim of tcp_hpcc: only what Rust cannot express or call.
 *
 *  - THIS_MODULE and module_param_cb()/MODULE_PARM_DESC() are macros.
 *  - tcp_is_cwnd_limited() is a static inline.
 *
 * The parameters' storage, their validation (the set callback) and all
 * logic live in Rust (rust/params.rs); this file only registers them.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <net/inet_dscp.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/tcp.h>

#include "hpcc_shim.h"

struct module *hpcc_this_module(void)
{
	return THIS_MODULE;
}

bool hpcc_tcp_is_cwnd_limited(const struct sock *sk)
{
	return tcp_is_cwnd_limited(sk);
}

/* Defined in Rust (rust/params.rs). */
extern const struct kernel_param_ops hpcc_param_ops;

#define HPCC_PARAM(name, desc)                                              \
	extern unsigned int hpcc_param_##name;                              \
	module_param_cb(name, &hpcc_param_ops, &hpcc_param_##name, 0644);   \
	MODULE_PARM_DESC(name, desc)

HPCC_PARAM(init_window_bytes,
	   "Initial window in bytes, about one BDP at line rate (1..2^31, default 65536)");
HPCC_PARAM(fallback_ai_segs,
	   "No-telemetry fallback: additive increase in segments per RTT (1..64, default 1)");
HPCC_PARAM(fallback_beta,
	   "No-telemetry fallback: multiplicative decrease factor in 1/1024 (512..1023, default 717)");
HPCC_PARAM(min_cwnd_segs,
	   "Lower bound of the congestion window in segments (2..max_cwnd_segs, default 2)");
HPCC_PARAM(max_cwnd_segs,
	   "Upper bound of the congestion window in segments (min_cwnd_segs..65535, default 65535)");
HPCC_PARAM(eta_ppm,
	   "HPCC++ target utilization eta in parts per million (1..1000000, default 950000)");
HPCC_PARAM(max_stage,
	   "HPCC++ additive-increase stages before a multiplicative step (default 1: one probe sample per RTT)");
HPCC_PARAM(wai_bytes,
	   "HPCC++ additive increase W_ai in bytes; 0 = W_init*(1-eta)/expected_flows (default 0)");
HPCC_PARAM(expected_flows,
	   "HPCC++ N in the W_ai rule of thumb (default 16)");
HPCC_PARAM(base_rtt_us,
	   "HPCC++ base RTT T in us; 0 = the flow's minimum RTT (0..1000000, default 0)");
HPCC_PARAM(probe_interval_us,
	   "Probe interval in us; 0 = one per smoothed RTT (0..1000000, default 0)");
HPCC_PARAM(probe_dscp,
	   "DSCP of probes (0..63, default 11, RFC 2474 pool 2)");
HPCC_PARAM(response_dscp,
	   "DSCP of responses (0..63, != probe_dscp, default 15, RFC 2474 pool 2)");
HPCC_PARAM(max_hops,
	   "Largest INT hop count accepted in a response (1..8, default 8)");
HPCC_PARAM(telemetry,
	   "1: send probes and use telemetry; 0: fallback law only (default 1)");
HPCC_PARAM(pace_at_link_rate,
	   "1: pace at most at the path's slowest INT link rate; 0: pace at W/T (default 1)");
HPCC_PARAM(pace_srtt_cap_pct,
	   "Pacing at most this percent of W per smoothed RTT (bursts near the rate W really delivers when the RTT is inflated); 0 = W/T only, the drafts (0 or 100..1000, default 150)");
HPCC_PARAM(path_cap_pct,
	   "HPCC++ bound of W in percent of the path's BDP min(B_j)*T; 0 = none, the drafts' law (0..1000, default 0)");
HPCC_PARAM(window_validation,
	   "1: W does not grow above twice the most bytes in flight since the last sample (decreases unaffected); 0: the drafts' law (default 1)");
HPCC_PARAM(probe_commit,
	   "1: commit Wc only on a probe interval sent entirely after the last commit; 0: the drafts' NewAck rule on the probe's snd_nxt (default 1)");
HPCC_PARAM(u_weight_pct,
	   "HPCC++ weight of one sample in the EWMA of U, percent of the drafts' tau/T (1..100, default 100)");
HPCC_PARAM(max_increase_pct,
	   "HPCC++ largest growth of W over Wc in one update, percent; 0 = none, the drafts' law (0 or 101..1000, default 110)");
HPCC_PARAM(qlen_min_filter,
	   "1: queue term min(qlen, previous qlen), the drafts' filter (with one probe per RTT it reacts an RTT late); 0: the current qlen (default 0)");
HPCC_PARAM(pacing_shift,
	   "Burst size as 2^-shift s of the pacing rate (sk_pacing_shift); 0 = kernel default 10 (8..16, default 11)");

/* Read-only event counters; storage and formatting in Rust (rust/stats.rs). */
extern const struct kernel_param_ops hpcc_stats_ops;
module_param_cb(stats, &hpcc_stats_ops, NULL, 0444);
MODULE_PARM_DESC(stats, "Event counters of probes, responses and samples (read-only)");
extern const struct kernel_param_ops hpcc_trace_ops;
module_param_cb(trace, &hpcc_trace_ops, NULL, 0444);
MODULE_PARM_DESC(trace, "The last 64 telemetry samples applied: U, W, cwnd, incStage, RTTs (read-only)");

bool hpcc_tcp_in_cwnd_reduction(const struct sock *sk)
{
	return tcp_in_cwnd_reduction(sk);
}

/*
 * Addresses cross the shim as 16 bytes, IPv4 ones IPv4-mapped
 * (::ffff:a.b.c.d), as dual-stack sockets keep them. Rust's byte arrays
 * have no alignment, so they are copied in and out of struct in6_addr
 * (which has 4-byte alignment) with memcpy, never cast.
 */
static struct in6_addr hpcc_in6(const u8 a[16])
{
	struct in6_addr in6;

	memcpy(&in6, a, sizeof(in6));
	return in6;
}

static bool hpcc_v4(const u8 a[16], __be32 *v4)
{
	struct in6_addr in6 = hpcc_in6(a);

	if (!ipv6_addr_v4mapped(&in6))
		return false;
	*v4 = in6.s6_addr32[3];
	return true;
}

bool hpcc_sk_tuple(const struct sock *sk, struct net **net, u8 saddr[16],
		   u8 daddr[16], __be16 *sport, __be16 *dport)
{
	const struct inet_sock *inet = inet_sk(sk);
	struct in6_addr s6, d6;

	switch (sk->sk_family) {
	case AF_INET:
		ipv6_addr_set_v4mapped(inet->inet_saddr, &s6);
		ipv6_addr_set_v4mapped(inet->inet_daddr, &d6);
		memcpy(saddr, &s6, 16);
		memcpy(daddr, &d6, 16);
		break;
#if IS_ENABLED(CONFIG_IPV6)
	case AF_INET6:
		/* Mapped for an IPv4 peer of a dual-stack socket. */
		memcpy(saddr, &sk->sk_v6_rcv_saddr, 16);
		memcpy(daddr, &sk->sk_v6_daddr, 16);
		break;
#endif
	default:
		return false;
	}
	*net = sock_net(sk);
	*sport = inet->inet_sport;
	*dport = inet->inet_dport;
	return true;
}

bool hpcc_tcp_established(struct net *net, const struct sk_buff *skb,
			  const u8 laddr[16], __be16 lport,
			  const u8 raddr[16], __be16 rport)
{
	__be32 l4, r4;
	struct sock *sk;
	bool ok;

	/* The incoming device (and L3 master device) as TCP's own receive
	 * path takes them, so connections bound to a device (SO_BINDTODEVICE,
	 * a link-local IPv6 scope, a VRF) are found too. */
	if (hpcc_v4(laddr, &l4) && hpcc_v4(raddr, &r4))
		sk = __inet_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
					       r4, rport, l4, ntohs(lport),
					       inet_iif(skb), inet_sdif(skb));
#if IS_ENABLED(CONFIG_IPV6)
	else {
		struct in6_addr l6 = hpcc_in6(laddr), r6 = hpcc_in6(raddr);

		sk = __inet6_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
						&r6, rport, &l6, ntohs(lport),
						inet6_iif(skb), inet6_sdif(skb));
	}
#else
	else
		sk = NULL;
#endif
	if (!sk)
		return false;
	ok = sk_fullsock(sk) && sk->sk_state == TCP_ESTABLISHED;
	sock_gen_put(sk);
	return ok;
}

struct sk_buff *hpcc_skb_alloc_ip(unsigned int len)
{
	struct sk_buff *skb = alloc_skb(LL_MAX_HEADER + len, GFP_ATOMIC);

	if (skb)
		skb_reserve(skb, LL_MAX_HEADER);
	return skb;
}

int hpcc_ip_send(struct net *net, struct sk_buff *skb, const u8 saddr[16],
		 const u8 daddr[16], u8 tos)
{
	__be32 s4, d4;

	skb_reset_network_header(skb);
	skb->ip_summed = CHECKSUM_NONE;
	if (hpcc_v4(saddr, &s4) && hpcc_v4(daddr, &d4)) {
		struct flowi4 fl4 = {
			.daddr = d4,
			.saddr = s4,
			.flowi4_tos = tos & INET_DSCP_MASK,
			.flowi4_proto = IPPROTO_TCP,
		};
		struct rtable *rt;

		rt = ip_route_output_key(net, &fl4);
		if (IS_ERR(rt)) {
			kfree_skb(skb);
			return PTR_ERR(rt);
		}
		skb->protocol = htons(ETH_P_IP);
		skb_dst_set(skb, &rt->dst);
		return ip_local_out(net, NULL, skb);
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct flowi6 fl6 = {
			.daddr = hpcc_in6(daddr),
			.saddr = hpcc_in6(saddr),
			.flowi6_proto = IPPROTO_TCP,
			.flowlabel = ip6_make_flowinfo(tos, 0),
		};
		struct dst_entry *dst;
		int err;

		dst = ip6_route_output(net, NULL, &fl6);
		err = dst->error;
		if (err) {
			dst_release(dst);
			kfree_skb(skb);
			return err;
		}
		skb->protocol = htons(ETH_P_IPV6);
		skb_dst_set(skb, dst);
		return ip6_local_out(net, NULL, skb);
	}
#else
	kfree_skb(skb);
	return -EAFNOSUPPORT;
#endif
}
