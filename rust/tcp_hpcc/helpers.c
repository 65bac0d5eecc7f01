// SPDX-License-Identifier: GPL-2.0
/*
 * Thin C shim of tcp_hpcc: only what Rust cannot express or call
 * (macros such as bh_lock_sock(), static inlines such as
 * tcp_is_cwnd_limited(), and struct fields behind them); hpcc_shim.h
 * declares each function with its contract.
 *
 * The module parameters, their registration and all logic live in Rust
 * (rust/tcp_hpcc/modparam.rs).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <net/inet_dscp.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/route.h>
#include <net/sch_generic.h>
#include <net/tcp.h>
#include <net/udp.h>
#include <net/xfrm.h>
#include <linux/if_arp.h>
#include <net/addrconf.h>
#include <net/rtnetlink.h>

#include "hpcc_shim.h"

bool hpcc_tcp_is_cwnd_limited(const struct sock *sk)
{
	return tcp_is_cwnd_limited(sk);
}

u32 hpcc_tcp_packets_in_flight(const struct sock *sk)
{
	return tcp_packets_in_flight(tcp_sk(sk));
}

bool hpcc_sk_can_gso(const struct sock *sk)
{
	return sk_can_gso(sk);
}

void hpcc_rcu_read_lock(void)
{
	rcu_read_lock();
}

void hpcc_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

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

/* The established or time-wait socket of a 4-tuple with a reference, on
 * the incoming device (and L3 master device) of @rx as TCP's own receive
 * path takes them, so connections bound to a device (SO_BINDTODEVICE, a
 * link-local IPv6 scope, a VRF) are found too. */
struct sock *hpcc_lookup(struct net *net, const struct sk_buff *rx,
			 const u8 laddr[16], __be16 lport,
			 const u8 raddr[16], __be16 rport)
{
	__be32 l4, r4;
	struct sock *sk;

	if (hpcc_v4(laddr, &l4) && hpcc_v4(raddr, &r4))
		sk = __inet_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
					       r4, rport, l4, ntohs(lport),
					       inet_iif(rx), inet_sdif(rx));
#if IS_ENABLED(CONFIG_IPV6)
	else {
		struct in6_addr l6 = hpcc_in6(laddr), r6 = hpcc_in6(raddr);

		sk = __inet6_lookup_established(net, net->ipv4.tcp_death_row.hashinfo,
						&r6, rport, &l6, ntohs(lport),
						inet6_iif(rx), inet6_sdif(rx));
	}
#else
	else
		sk = NULL;
#endif
	return sk;
}

/* ---- Source Flow Control (see hpcc_shim.h and rust/tcp_hpcc/sfc_rx.rs) ---- */

void hpcc_sfc_lock_init(spinlock_t *lock)
{
	spin_lock_init(lock);
}

void hpcc_sfc_lock(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void hpcc_sfc_unlock(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

/* Devices whose packets come out of a tunnel: IP-in-IP and GRE without a
 * MAC header (and collect_md/WireGuard-style ARPHRD_NONE devices), and
 * the Ethernet-over-IP kinds, which look like Ethernet. */
static bool hpcc_dev_is_tunnel(const struct net_device *dev)
{
	static const char *const kinds[] = {
		"gretap", "ip6gretap", "erspan", "ip6erspan", "vxlan", "geneve", "bareudp",
	};
	const struct rtnl_link_ops *ops = dev->rtnl_link_ops;
	unsigned int i;

	switch (dev->type) {
	case ARPHRD_TUNNEL:
	case ARPHRD_TUNNEL6:
	case ARPHRD_IPGRE:
	case ARPHRD_IP6GRE:
	case ARPHRD_SIT:
	case ARPHRD_NONE:
		return true;
	}
	if (!ops || !ops->kind)
		return false;
	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strcmp(ops->kind, kinds[i]))
			return true;
	return false;
}

void hpcc_sfc_arrival(struct net *net, const struct sk_buff *skb,
		      struct hpcc_sfc_arrival *out)
{
	/* The device the packet came in on: skb_iif (set by the receive core
	 * on the last device it passed, the tunnel device for a decapsulated
	 * packet; skb->dev may be an L3 master (VRF) by LOCAL_IN). */
	struct net_device *dev = dev_get_by_index_rcu(net, skb->skb_iif);

	if (!dev)
		dev = skb->dev;
	memset(out, 0, sizeof(*out));
	if (!dev) {
		out->tunneled = 1; /* unknown: refused */
		return;
	}
	out->loopback = !!(dev->flags & IFF_LOOPBACK);
	out->tunneled = hpcc_dev_is_tunnel(dev) || secpath_exists(skb);
	memcpy(out->ifname, dev->name, sizeof(out->ifname));
	out->ifname[sizeof(out->ifname) - 1] = 0;
}

bool hpcc_addr_is_local(struct net *net, const struct sk_buff *skb, const u8 addr[16])
{
	__be32 v4;

	if (hpcc_v4(addr, &v4))
		return inet_addr_type_dev_table(net, skb->dev, v4) == RTN_LOCAL;
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct in6_addr a6 = hpcc_in6(addr);

		return ipv6_chk_addr(net, &a6, NULL, 0);
	}
#else
	return false;
#endif
}

bool hpcc_udp_sock_exists(struct net *net, const struct sk_buff *rx,
			  const u8 laddr[16], __be16 lport,
			  const u8 raddr[16], __be16 rport)
{
	__be32 l4, r4;

	/* As the receive path would look up a datagram from the peer
	 * (rcu_read_lock held by the hook; no reference taken). The caller
	 * checked that the signal's family is the packet's, so the control
	 * block read by inet_iif() / inet6_iif() is the right one. */
	if (hpcc_v4(laddr, &l4) && hpcc_v4(raddr, &r4))
		return __udp4_lib_lookup(net, r4, rport, l4, lport, inet_iif(rx),
					 inet_sdif(rx), net->ipv4.udp_table, NULL) != NULL;
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct in6_addr l6 = hpcc_in6(laddr), r6 = hpcc_in6(raddr);

		return __udp6_lib_lookup(net, &r6, rport, &l6, lport, inet6_iif(rx),
					 inet6_sdif(rx), net->ipv4.udp_table, NULL) != NULL;
	}
#else
	return false;
#endif
}

bool hpcc_skb_is_local_out(const struct sk_buff *skb, const struct net *net)
{
	/* Sent by a socket of this netns; forwarded packets have no socket,
	 * and a packet that crossed a veth from another netns was orphaned. */
	return skb->sk && net_eq(sock_net(skb->sk), net);
}

struct sock *hpcc_sfc_sock(struct net *net, const struct sk_buff *rx,
			   const u8 laddr[16], __be16 lport,
			   const u8 raddr[16], __be16 rport)
{
	struct sock *sk = hpcc_lookup(net, rx, laddr, lport, raddr, rport);

	if (!sk)
		return NULL;
	if (!sk_fullsock(sk) ||
	    !((1 << sk->sk_state) & (TCPF_ESTABLISHED | TCPF_CLOSE_WAIT | TCPF_FIN_WAIT1 |
				     TCPF_CLOSING | TCPF_LAST_ACK))) {
		sock_gen_put(sk);
		return NULL;
	}
	/* The hook may run in process context with bottom halves on (a
	 * packet reinjected by an NFQUEUE verdict): a softirq on this CPU
	 * that takes the same socket's spin lock would then spin forever.
	 * bh_lock_sock() is for BH-off context only, so turn BH off first. */
	local_bh_disable();
	bh_lock_sock(sk);
	return sk;
}

void hpcc_sfc_sock_done(struct sock *sk)
{
	bh_unlock_sock(sk);
	local_bh_enable();
	sock_gen_put(sk);
}

bool hpcc_sock_owned_by_user(const struct sock *sk)
{
	return sock_owned_by_user(sk);
}

void hpcc_tcp_pause(struct sock *sk, u64 until_ns)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (until_ns > tp->tcp_wstamp_ns)
		tp->tcp_wstamp_ns = until_ns;
}

/* Only sch_fq holds a packet until its departure time whatever its
 * clock; etf accepts only CLOCK_TAI with SO_TXTIME and drops the rest. */
static bool hpcc_qdisc_is_edt(const struct Qdisc *q)
{
	return q && !strcmp(q->ops->id, "fq");
}

/* The root qdisc, or for a multiqueue root (mq, mqprio) the one of the
 * first transmit queue: at POST_ROUTING the queue is not chosen yet. */
static bool hpcc_dev_honours_edt(struct net_device *dev)
{
	struct Qdisc *q = rcu_dereference(dev->qdisc);

	if (hpcc_qdisc_is_edt(q))
		return true;
	if (q && (!strcmp(q->ops->id, "mq") || !strcmp(q->ops->id, "mqprio")) &&
	    dev->num_tx_queues > 0)
		return hpcc_qdisc_is_edt(rcu_dereference(netdev_get_tx_queue(dev, 0)->qdisc_sleeping));
	return false;
}

enum hpcc_hold hpcc_skb_hold_until(struct sk_buff *skb, __u64 until_ns)
{
	if (skb->tstamp && skb->tstamp_type != SKB_CLOCK_MONOTONIC)
		return HPCC_HOLD_OTHER_CLOCK;
	if (skb->tstamp < until_ns)
		skb_set_delivery_time(skb, until_ns, SKB_CLOCK_MONOTONIC);
	if (skb->dev && hpcc_dev_honours_edt(skb->dev))
		return HPCC_HOLD_EDT;
	pr_warn_once("sfc_scope: no EDT qdisc (sch_fq) on %s: paused flows are not held there (counted in sfc_egress_no_edt_qdisc)\n",
		     skb->dev ? skb->dev->name : "?");
	return HPCC_HOLD_NO_EDT;
}

/* ---- The flow table (see hpcc_shim.h and rust/tcp_hpcc/flow.rs) ---- */

#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/rhashtable.h>
#include <linux/sched/mm.h>
#include <linux/seq_file_net.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

static struct kmem_cache *hpcc_flow_cache;
static struct rhashtable hpcc_flows;

static const struct rhashtable_params hpcc_flow_params = {
	.head_offset = offsetof(struct hpcc_flow_hdr, node),
	.key_offset = offsetof(struct hpcc_flow_hdr, key),
	.key_len = sizeof(struct hpcc_flow_key),
	.hashfn = hpcc_flow_hashfn,
	.min_size = 64,
	.automatic_shrinking = true,
};

int hpcc_flows_init(unsigned int size, unsigned int align)
{
	int err;

	/* SLAB_NO_MERGE: failslab and /proc/slabinfo see exactly our objects. */
	hpcc_flow_cache = kmem_cache_create("hpcc_flow", size, align,
					    SLAB_ACCOUNT | SLAB_NO_MERGE, NULL);
	if (!hpcc_flow_cache)
		return -ENOMEM;
	err = rhashtable_init(&hpcc_flows, &hpcc_flow_params);
	if (err) {
		kmem_cache_destroy(hpcc_flow_cache);
		hpcc_flow_cache = NULL;
	}
	return err;
}

void hpcc_flows_exit(void)
{
	rhashtable_destroy(&hpcc_flows);
	kmem_cache_destroy(hpcc_flow_cache);
}

void *hpcc_flow_alloc(const struct sock *sk)
{
	struct mem_cgroup *old = set_active_memcg(sk->sk_memcg);
	void *obj = kmem_cache_alloc(hpcc_flow_cache, GFP_NOWAIT | __GFP_NOWARN);

	set_active_memcg(old);
	return obj;
}

void hpcc_flow_free(void *obj)
{
	kmem_cache_free(hpcc_flow_cache, obj);
}

int hpcc_flow_insert(struct hpcc_flow_hdr *h)
{
	struct hpcc_flow_hdr *old;
	int tries, ret = -EBUSY;

	rcu_read_lock();
	for (tries = 0; tries < 4; tries++) {
		old = rhashtable_lookup_get_insert_fast(&hpcc_flows, &h->node,
							hpcc_flow_params);
		if (!old) {
			ret = 0;
			break;
		}
		if (IS_ERR(old)) {
			ret = PTR_ERR(old);
			break;
		}
		/* A socket of the same 4-tuple that is no longer established
		 * (reset, not yet closed): take its place. If its owner
		 * removes it first, insert again. */
		if (!rhashtable_replace_fast(&hpcc_flows, &old->node, &h->node,
					     hpcc_flow_params)) {
			ret = 1;
			break;
		}
	}
	rcu_read_unlock();
	return ret;
}

void hpcc_flow_remove(struct hpcc_flow_hdr *h)
{
	/* -ENOENT when a newer connection replaced it: nothing to do. */
	rhashtable_remove_fast(&hpcc_flows, &h->node, hpcc_flow_params);
}

struct hpcc_flow_hdr *hpcc_flow_lookup(const struct hpcc_flow_key *key)
{
	return rhashtable_lookup(&hpcc_flows, key, hpcc_flow_params);
}

void hpcc_flow_list_init(struct hpcc_flow_list *l)
{
	spin_lock_init(&l->lock);
	INIT_HLIST_HEAD(&l->head);
}

void hpcc_flow_list_add(struct hpcc_flow_list *l, struct hpcc_flow_hdr *h)
{
	spin_lock_bh(&l->lock);
	hlist_add_head_rcu(&h->net_node, &l->head);
	spin_unlock_bh(&l->lock);
}

void hpcc_flow_list_del(struct hpcc_flow_list *l, struct hpcc_flow_hdr *h)
{
	spin_lock_bh(&l->lock);
	hlist_del_rcu(&h->net_node);
	spin_unlock_bh(&l->lock);
}

static struct hpcc_flow_hdr *hpcc_flows_at(struct hlist_head *head, loff_t n)
{
	struct hpcc_flow_hdr *h;

	hlist_for_each_entry_rcu(h, head, net_node)
		if (n-- == 0)
			return h;
	return NULL;
}

/* Position 0 is the header line, n > 0 the netns's n-th flow: a restart
 * (the next read, or a retry with a larger buffer) walks this netns's
 * list to its position, never another netns's flows. */
static void *hpcc_flows_seq_start(struct seq_file *seq, loff_t *pos)
	__acquires(RCU)
{
	rcu_read_lock();
	if (*pos == 0)
		return SEQ_START_TOKEN;
	return hpcc_flows_at(&hpcc_net_flow_list(seq_file_net(seq))->head, *pos - 1);
}

static void *hpcc_flows_seq_next(struct seq_file *seq, void *v, loff_t *pos)
{
	struct hlist_node *next;

	++*pos;
	if (v == SEQ_START_TOKEN)
		next = rcu_dereference(hlist_first_rcu(&hpcc_net_flow_list(seq_file_net(seq))->head));
	else
		next = rcu_dereference(hlist_next_rcu(&((struct hpcc_flow_hdr *)v)->net_node));
	return next ? hlist_entry(next, struct hpcc_flow_hdr, net_node) : NULL;
}

static void hpcc_flows_seq_stop(struct seq_file *seq, void *v)
	__releases(RCU)
{
	rcu_read_unlock();
}

static int hpcc_flows_seq_show(struct seq_file *seq, void *v)
{
	hpcc_flow_show(seq, v == SEQ_START_TOKEN ? NULL : v);
	return 0;
}

static const struct seq_operations hpcc_flows_seq_ops = {
	.start = hpcc_flows_seq_start,
	.next = hpcc_flows_seq_next,
	.stop = hpcc_flows_seq_stop,
	.show = hpcc_flows_seq_show,
};

int hpcc_proc_create_flows(struct net *net, const char *name)
{
	return proc_create_net(name, 0400, net->proc_net, &hpcc_flows_seq_ops,
			       sizeof(struct seq_net_private)) ? 0 : -ENOMEM;
}

void hpcc_flow_call_rcu(struct hpcc_flow_hdr *h)
{
	call_rcu(&h->rcu, hpcc_flow_free_rcu);
}

/* ---- Per-netns state and counters (rust/tcp_hpcc/netns.rs, rust/tcp_hpcc/stats.rs) ---- */

unsigned int hpcc_net_id;

void *hpcc_net_generic(const struct net *net)
{
	return net_generic(net, hpcc_net_id);
}

struct net *hpcc_sock_net(const struct sock *sk)
{
	return sock_net(sk);
}

u64 __percpu *hpcc_pcpu_alloc(unsigned int n)
{
	return __alloc_percpu(n * sizeof(u64), sizeof(u64));
}

void hpcc_pcpu_free(u64 __percpu *p)
{
	free_percpu(p);
}

void hpcc_pcpu_inc_rcu(u64 __percpu **slot, unsigned int i)
{
	u64 __percpu *p;

	rcu_read_lock();
	p = READ_ONCE(*slot);
	if (p)
		this_cpu_inc(p[i]);
	rcu_read_unlock();
}

u64 hpcc_pcpu_sum(u64 __percpu *p, unsigned int i)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(p, cpu)[i];
	return sum;
}

int hpcc_proc_create(struct net *net, const char *name,
		     int (*show)(struct seq_file *, void *))
{
	return proc_create_net_single(name, 0400, net->proc_net, show, NULL) ?
		0 : -ENOMEM;
}

void hpcc_proc_remove(struct net *net, const char *name)
{
	remove_proc_entry(name, net->proc_net);
}

struct net *hpcc_seq_net(struct seq_file *m)
{
	return seq_file_single_net(m);
}
