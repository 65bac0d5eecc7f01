// SPDX-License-Identifier: GPL-2.0
/*
 * probe_tx's packet I/O, the part Rust cannot call (route lookups, output
 * and socket lookups are static inlines and macros): probe_tx sends
 * probes on a connection's own route (hpcc_sk_send) and answers probes it
 * receives with responses on the receiving socket's route (hpcc_reply).
 * The bytes are built and parsed in Rust (hpcc_core::probe); the netfilter
 * hook that receives them is probe_tx/mod.rs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/tcp.h>

#include "hpcc_shim.h"

struct sk_buff *hpcc_skb_alloc_ip(unsigned int len)
{
	struct sk_buff *skb = alloc_skb(LL_MAX_HEADER + len, GFP_ATOMIC | __GFP_NOWARN);

	if (skb)
		skb_reserve(skb, LL_MAX_HEADER);
	return skb;
}

/* An IPv4 flow: an AF_INET socket, or a dual-stack one with an IPv4 peer. */
static bool hpcc_sk_is_v4(const struct sock *sk)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6)
		return ipv6_addr_v4mapped(&sk->sk_v6_daddr);
#endif
	return true;
}

/*
 * The socket's cached route, referenced, if it is still valid: what its
 * data leaves on. (sk_dst_check() without resetting the socket's cache,
 * which only its owner may do; sk_dst_get() is safe under RCU from any
 * context.) IPv6 TCP chooses its route in connect() before the source port
 * is picked, so with an L4-hashed multipath route only this cached route is
 * the data's path; a fresh lookup with the real ports may hash elsewhere.
 */
static struct dst_entry *hpcc_sk_dst(struct sock *sk, u32 cookie)
{
	struct dst_entry *dst = sk_dst_get(sk);

	if (dst && READ_ONCE(dst->obsolete) && !dst->ops->check(dst, cookie)) {
		dst_release(dst);
		return NULL;
	}
	return dst;
}

/*
 * Routes @skb as @sk routes its own data and sends it: on the socket's
 * cached route while it is valid, else on a fresh lookup with the socket's
 * addresses, ports, TOS, mark, bound device and uid
 * (ip_route_output_ports() as __ip_queue_xmit() calls it; for IPv6 the
 * flow inet6_csk_route_socket() builds), so policy routing and multipath
 * hashing choose the data's path. An IPv6 packet gets the flow label the
 * data carries (ip6_make_flowlabel() on the socket's txhash, as ip6_xmit()
 * does). Cached routes and both lookups include the xfrm policy: a route
 * that is an IPsec bundle, or a blocked one, is never used for a packet
 * in clear.
 */
static int hpcc_sk_xmit(struct sock *sk, struct sk_buff *skb, u8 tos)
{
	const struct inet_sock *inet = inet_sk(sk);
	struct net *net = sock_net(sk);
	struct dst_entry *dst;
	int err;

	skb_reset_network_header(skb);
	skb->ip_summed = CHECKSUM_NONE;
	skb->mark = READ_ONCE(sk->sk_mark);
	skb->priority = READ_ONCE(sk->sk_priority);
#if IS_ENABLED(CONFIG_NF_CONNTRACK)
	/* Never part of the connection conntrack tracks (a notrack rule). */
	skb_set_nfct(skb, IP_CT_UNTRACKED);
#endif
	if (hpcc_sk_is_v4(sk)) {
		struct flowi4 fl4;
		struct rtable *rt;

		skb->protocol = htons(ETH_P_IP);
		dst = hpcc_sk_dst(sk, 0);
		if (dst)
			goto route;
		rt = ip_route_output_ports(net, &fl4, sk, inet->inet_daddr,
					   inet->inet_saddr, inet->inet_dport,
					   inet->inet_sport, IPPROTO_TCP,
					   READ_ONCE(inet->tos) & INET_DSCP_MASK,
					   sk->sk_bound_dev_if);
		if (IS_ERR(rt)) {
			kfree_skb(skb);
			return PTR_ERR(rt);
		}
		dst = &rt->dst;
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		const struct ipv6_pinfo *np = inet6_sk(sk);
		struct flowi6 fl6 = {};
		bool autolabel;

		skb->protocol = htons(ETH_P_IPV6);
		fl6.flowi6_proto = IPPROTO_TCP;
		fl6.daddr = sk->sk_v6_daddr;
		fl6.saddr = np->saddr;
		fl6.flowlabel = np->flow_label;
		fl6.flowi6_oif = sk->sk_bound_dev_if;
		fl6.flowi6_mark = READ_ONCE(sk->sk_mark);
		fl6.fl6_sport = inet->inet_sport;
		fl6.fl6_dport = inet->inet_dport;
		fl6.flowi6_uid = sk->sk_uid;
		security_sk_classify_flow(sk, flowi6_to_flowi_common(&fl6));
		dst = hpcc_sk_dst(sk, READ_ONCE(np->dst_cookie));
		if (!dst)
			dst = ip6_dst_lookup_flow(net, sk, &fl6, NULL);
		if (IS_ERR(dst)) {
			kfree_skb(skb);
			return PTR_ERR(dst);
		}
		/* ip6_autoflowlabel(), which is not exported. */
		autolabel = inet6_test_bit(AUTOFLOWLABEL_SET, sk) ?
			    inet6_test_bit(AUTOFLOWLABEL, sk) :
			    ip6_default_np_autolabel(net);
		skb_set_hash_from_sk(skb, sk);
		ip6_flow_hdr(ipv6_hdr(skb), tos,
			     ip6_make_flowlabel(net, skb, fl6.flowlabel, autolabel, &fl6));
#else
		kfree_skb(skb);
		return -EAFNOSUPPORT;
#endif
	}
route:
	if (dst_xfrm(dst)) {
		dst_release(dst);
		kfree_skb(skb);
		return HPCC_TX_PROTECTED;
	}
	skb_dst_set(skb, dst);
	if (skb->protocol == htons(ETH_P_IP))
		err = ip_local_out(net, NULL, skb);
#if IS_ENABLED(CONFIG_IPV6)
	else
		err = ip6_local_out(net, NULL, skb);
#endif
	/* A negative errno, or a positive NET_XMIT_* code. */
	return err > 0 ? net_xmit_errno(err) : err;
}

int hpcc_sk_send(struct sock *sk, struct sk_buff *skb, u8 tos)
{
	return hpcc_sk_xmit(sk, skb, tos);
}

int hpcc_reply(struct net *net, const struct sk_buff *rx, const u8 laddr[16],
	       __be16 lport, const u8 raddr[16], __be16 rport,
	       struct sk_buff *skb, u8 tos)
{
	struct sock *sk = hpcc_lookup(net, rx, laddr, lport, raddr, rport);
	int err;

	if (!sk) {
		kfree_skb(skb);
		return HPCC_TX_NO_SOCKET;
	}
	if (sk_fullsock(sk) && sk->sk_state == TCP_ESTABLISHED) {
		err = hpcc_sk_xmit(sk, skb, tos);
	} else {
		kfree_skb(skb);
		err = HPCC_TX_NO_SOCKET;
	}
	sock_gen_put(sk);
	return err;
}
