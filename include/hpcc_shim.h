/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations of the thin C shim (rust/tcp_hpcc/helpers.c): only what Rust cannot
 * call directly, i.e. macros and static inline functions of the kernel.
 */
#ifndef _HPCC_SHIM_H
#define _HPCC_SHIM_H

#include <linux/types.h>
#include <linux/rhashtable-types.h>

#include "hpcc_int.h"

struct module;
struct seq_file;
struct net;
struct sock;
struct sk_buff;
struct kernel_param_ops;

/* tcp_is_cwnd_limited(), a static inline in <net/tcp.h>. */
bool hpcc_tcp_is_cwnd_limited(const struct sock *sk);

/* tcp_packets_in_flight(), a static inline in <net/tcp.h>. */
__u32 hpcc_tcp_packets_in_flight(const struct sock *sk);

/* sk_can_gso(), a static inline in <net/sock.h>. */
bool hpcc_sk_can_gso(const struct sock *sk);

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

/* The established or time-wait socket of the local/remote 4-tuple in
 * @net, with a reference (sock_gen_put() it), looked up on the device @rx
 * came in on as TCP's receive path does; NULL if none. */
struct sock *hpcc_lookup(struct net *net, const struct sk_buff *rx,
			 const __u8 laddr[16], __be16 lport,
			 const __u8 raddr[16], __be16 rport);

/* Packet I/O of probe_tx (probe_tx/io.c). */

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

/*
 * Source Flow Control (rust/tcp_hpcc/sfc_rx.rs).
 *
 * hpcc_sfc_lock_init()/lock()/unlock(): a netns's SFC lock (spin_lock_bh:
 * the signal path may run with BH on, reinjected by NFQUEUE), around its
 * per-source token buckets and the writers of its pause table.
 *
 * hpcc_sfc_arrival(): what the kernel knows of where @skb came in: the
 * device (skb_iif's, else skb->dev), whether it is the loopback device,
 * whether it is a tunnel's (or the packet an IPsec tunnel's inner one),
 * and its name. Caller holds rcu_read_lock().
 *
 * hpcc_addr_is_local(): whether @addr (16 bytes, IPv4-mapped for IPv4)
 * is one of @net's own addresses (RTN_LOCAL in the table of @skb's
 * device; ipv6_chk_addr()). Caller holds rcu_read_lock().
 *
 * hpcc_udp_sock_exists(): whether a UDP socket of @net would receive a
 * datagram from @raddr:@rport to @laddr:@lport (ports in network order)
 * coming in as @rx. Caller holds rcu_read_lock(); no reference is taken.
 *
 * hpcc_skb_is_local_out(): whether an outgoing @skb was sent by a socket
 * of @net (not forwarded, not from another netns).
 *
 * hpcc_sfc_sock(): the TCP socket in @net with local @laddr:@lport and
 * remote @raddr:@rport (ports in network order) that can have data in
 * flight (ESTABLISHED, CLOSE_WAIT, FIN_WAIT1, CLOSING, LAST_ACK), found
 * as TCP's receive path finds it for a packet that came in as @rx, with a
 * reference, bottom halves off and bh_lock_sock() held; NULL if none.
 * Release it with hpcc_sfc_sock_done().
 *
 * hpcc_tcp_pause(): moves the socket's departure clock
 * (tp->tcp_wstamp_ns) to @until_ns if that is later: TCP stamps its next
 * packets no earlier, so fq (or TCP's own pacing timer) holds them, and
 * its retransmission timers add the delay. The caller holds the socket
 * (bh_lock_sock and not owned by user, or a congestion-control hook).
 */
struct hpcc_sfc_arrival {
	__u8 loopback;
	__u8 tunneled;
	char ifname[16];	/* IFNAMSIZ, NUL-terminated */
};

void hpcc_sfc_lock_init(spinlock_t *lock);
void hpcc_sfc_lock(spinlock_t *lock);
void hpcc_sfc_unlock(spinlock_t *lock);
void hpcc_sfc_arrival(struct net *net, const struct sk_buff *skb,
		      struct hpcc_sfc_arrival *out);
bool hpcc_addr_is_local(struct net *net, const struct sk_buff *skb, const __u8 addr[16]);
bool hpcc_udp_sock_exists(struct net *net, const struct sk_buff *rx,
			  const __u8 laddr[16], __be16 lport,
			  const __u8 raddr[16], __be16 rport);
bool hpcc_skb_is_local_out(const struct sk_buff *skb, const struct net *net);
struct sock *hpcc_sfc_sock(struct net *net, const struct sk_buff *rx,
			   const __u8 laddr[16], __be16 lport,
			   const __u8 raddr[16], __be16 rport);
void hpcc_sfc_sock_done(struct sock *sk);
bool hpcc_sock_owned_by_user(const struct sock *sk);
void hpcc_tcp_pause(struct sock *sk, __u64 until_ns);

/* What hpcc_skb_hold_until() did with an outgoing packet. */
enum hpcc_hold {
	HPCC_HOLD_EDT,		/* departure time set; the device's qdisc honours it */
	HPCC_HOLD_NO_EDT,	/* departure time set, but no sch_fq on the device */
	HPCC_HOLD_OTHER_CLOCK,	/* the packet's departure time is on another clock: untouched */
};

/* Gives an outgoing skb (at NF_INET_POST_ROUTING: skb->dev is the output
 * device) a departure time of at least until_ns (CLOCK_MONOTONIC), so that
 * an EDT qdisc holds it until then. The first time the device has no such
 * qdisc, says so (pr_warn_once). Caller holds rcu_read_lock(). */
enum hpcc_hold hpcc_skb_hold_until(struct sk_buff *skb, __u64 until_ns);

/* One applied telemetry sample, for the tcp_hpcc:hpcc_sample tracepoint
 * (rust/tcp_hpcc/trace_events.c). Filled in Rust (rust/tcp_hpcc/cong_ops.rs). */
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

/* The hook an hpcc_ctl_rec comes from. */
enum hpcc_ctl_hook {
	HPCC_CTL_INIT,		/* init: out_cwnd, out_ssthresh, out_pacing */
	HPCC_CTL_ACK,		/* cong_control: out_cwnd, out_pacing */
	HPCC_CTL_TX_START,	/* cwnd_event(CA_EVENT_TX_START): a probe or not */
	HPCC_CTL_SSTHRESH,	/* ssthresh: out_ssthresh */
};

/* hpcc_ctl_rec.flags: what the connection showed and what the hook did. */
#define HPCC_CTL_IN_REDUCTION	0x0001	/* tcp_in_cwnd_reduction() */
#define HPCC_CTL_CWND_LIMITED	0x0002	/* tcp_is_cwnd_limited() */
#define HPCC_CTL_HAS_RS		0x0004	/* the ACK had a rate sample */
#define HPCC_CTL_RS_APP_LIMITED	0x0008
#define HPCC_CTL_HAS_FLOW	0x0010	/* the flow had telemetry state */
#define HPCC_CTL_FLOW_CREATED	0x0020	/* ... created by this hook */
#define HPCC_CTL_FLOW_REFUSED	0x0040	/* creating it failed (limit, churn, memory) */
#define HPCC_CTL_HAS_RESPONSE	0x0080	/* a new response was taken from the mailbox */
#define HPCC_CTL_PROBED		0x0100	/* a probe was sent */
#define HPCC_CTL_TAKE_PAUSE	0x0200	/* a new SFC signal's pause was taken */
#define HPCC_CTL_HAS_SENT_DATA	0x0400	/* init: the socket sent data before */
#define HPCC_CTL_PROBE_HELD	0x0800	/* a due probe was held by the netns's probe budget */

/* The controller's inputs and decision at one hook of one connection, for
 * the tcp_hpcc:hpcc_ctl tracepoint: enough to replay every decision of a
 * connection on the host (hpcc-replay --ctl). Filled in Rust
 * (rust/tcp_hpcc/cong_ops.rs) only while the tracepoint is enabled. */
struct hpcc_ctl_rec {
	__u8 hook;		/* enum hpcc_ctl_hook */
	__u8 int_len;		/* bytes of int[] the response carried */
	__u8 sfc_speed;		/* SFC cell: the port's speed code */
	__u8 out_pacing_shift;	/* sk_pacing_shift set (0: left alone) */
	__u16 flags;		/* HPCC_CTL_* */
	__u16 out_tso_segs;	/* most segments per TSO skb asked (0: the route's) */
	__u64 now_ns;
	__u32 mss;		/* mss_cache */
	__u32 cwnd;		/* snd_cwnd before the hook */
	__u32 ssthresh;
	__u32 srtt_us;
	__u32 min_rtt_us;
	__u32 packets_out;
	__u32 in_flight;
	__u32 snd_nxt;
	__u32 rs_delivered;	/* the rate sample */
	__u32 rs_prior_in_flight;
	__u64 rs_interval_us;
	__u32 rs_acked_sacked;
	__u32 resp_snd_nxt;	/* the response: its probe's snd_nxt */
	__u64 resp_rx_ns;	/* when it arrived */
	__u8 int_stack[HPCC_INT_MAX_LEN];	/* the response's INT stack */
	__u32 sfc_gen;		/* SFC cell: generation, queue */
	__u32 sfc_qlen;
	__u64 sfc_gap_ns;	/* SFC cell: longest silence before a signal since the last take */
	__u32 out_cwnd;		/* the decision, segments (before snd_cwnd_clamp) */
	__u32 out_ssthresh;
	__u64 out_pacing;	/* bytes/s (before SO_MAX_PACING_RATE) */
	__u64 max_pacing_rate;	/* sk_max_pacing_rate, bytes/s (~0: none) */
};

/* Fires the tcp_hpcc:hpcc_ctl tracepoint; whether it is enabled. */
void hpcc_trace_ctl(const struct sock *sk, const struct hpcc_ctl_rec *r);
bool hpcc_trace_ctl_enabled(void);

/* What became of one Source Flow Control signal (the outcome field of
 * struct hpcc_sfc_trace_rec; one /proc/net/hpcc_stat counter each). */
enum hpcc_sfc_outcome {
	HPCC_SFC_APPLIED,	/* the flow's departure clock moved */
	HPCC_SFC_DEFERRED,	/* socket owned by a process: applied at the next ACK */
	HPCC_SFC_DISABLED,	/* sfc_enable 0: passed on untouched */
	HPCC_SFC_BAD_TTL,	/* TTL / hop limit below 255 - sfc_max_hops */
	HPCC_SFC_NOT_IN_ACL,	/* source not in sfc_acl */
	HPCC_SFC_RATE_LIMITED,	/* the source's token bucket was empty */
	HPCC_SFC_TRUNCATED,
	HPCC_SFC_BAD_HEADER,
	HPCC_SFC_NO_FLOW,	/* no flow SFC may pause with that tuple here (no local socket) */
	HPCC_SFC_SEQ_OUT_OF_WINDOW,
	HPCC_SFC_APPLIED_EGRESS,	/* sfc_scope 1: another flow, held at egress */
	HPCC_SFC_PAUSE_TABLE_FULL,	/* sfc_scope 1: no free slot in the netns's pause table */
	HPCC_SFC_BAD_UDP,	/* UDP length or checksum wrong, or no checksum */
	HPCC_SFC_BAD_SOURCE,	/* not a unicast source of the outer IP version */
	HPCC_SFC_LOOPBACK,	/* came in on the loopback device */
	HPCC_SFC_TUNNEL,	/* came out of a tunnel */
	HPCC_SFC_IFACE,		/* came in on a device not in sfc_ifaces */
	HPCC_SFC_LOCAL_SOURCE,	/* source is one of this host's addresses */
	HPCC_SFC_DUPLICATE,	/* the flow took this signal already */
	HPCC_SFC_SOURCE_QUOTA,	/* sfc_scope 1: the source holds its share of the pause table */
};

/* One SFC signal, for the tcp_hpcc:hpcc_sfc tracepoint. Addresses are
 * 16 bytes, IPv4 ones IPv4-mapped; the flow's fields are zero when the
 * signal was refused before its header was read. Filled in Rust
 * (rust/tcp_hpcc/sfc_rx.rs). */
struct hpcc_sfc_trace_rec {
	__u8 src[16];		/* the signal's source: the switch */
	__u8 laddr[16];		/* the flow it names: local address and port */
	__u8 raddr[16];		/* and the peer's */
	__u16 lport;
	__u16 rport;
	__u32 switch_id;	/* congestion locator: switch and port */
	__u16 port_id;
	__u8 outcome;		/* enum hpcc_sfc_outcome */
	__u8 _pad;
	__u32 qlen;		/* bytes queued at the port */
	__u32 pause_ns;		/* pause asked */
	__u64 applied_ns;	/* pause applied (clamped to sfc_max_pause_us); 0: none */
	__u64 at_ns;		/* when the pause began (CLOCK_MONOTONIC): it holds */
				/* the flow until at + applied; 0: none */
};

/* Fires the tcp_hpcc:hpcc_sfc tracepoint (a no-op unless enabled). */
void hpcc_trace_sfc(const struct hpcc_sfc_trace_rec *r);

/*
 * The flow table (rust/tcp_hpcc/flow.rs): an rhashtable of flow objects keyed by
 * (netns, 4-tuple), hashed by the Rust hpcc_flow_hashfn() (SipHash-2-4
 * under a per-load secret, rust/hpcc_core/flowhash.rs), objects from the
 * "hpcc_flow" slab cache (SLAB_ACCOUNT: charged to the socket's memory
 * cgroup), freed after an RCU grace period.
 */
struct hpcc_flow_key {
	__u64 net;		/* the netns, compared as a cookie */
	__u8 saddr[16];		/* local address (IPv4-mapped for IPv4) */
	__u8 daddr[16];		/* remote address */
	__be16 sport;		/* local port */
	__be16 dport;		/* remote port */
	__u32 pad;		/* always zero: the key is compared with memcmp */
};

/* The first member of every flow object: the table's link, the RCU head
 * of its deferred free and its key. The table and RCU write node and rcu
 * while readers may hold the object, so Rust keeps this in an Opaque. */
struct hpcc_flow_hdr {
	struct rhash_head node;
	struct rcu_head rcu;
	struct hpcc_flow_key key;
	struct hlist_node net_node;	/* its netns's list (/proc/net/hpcc_flows) */
};

/* A netns's flows, for /proc/net/hpcc_flows: a list under its own lock,
 * walked under RCU. hpcc_flow_list_init() before first use; add after
 * hpcc_flow_insert() succeeded, del before hpcc_flow_call_rcu(). */
struct hpcc_flow_list {
	spinlock_t lock;
	struct hlist_head head;
};
void hpcc_flow_list_init(struct hpcc_flow_list *l);
void hpcc_flow_list_add(struct hpcc_flow_list *l, struct hpcc_flow_hdr *h);
void hpcc_flow_list_del(struct hpcc_flow_list *l, struct hpcc_flow_hdr *h);
/* Defined in Rust: @net's list; a line of /proc/net/hpcc_flows for @h
 * (NULL: the header line). */
struct hpcc_flow_list *hpcc_net_flow_list(const struct net *net);
void hpcc_flow_show(struct seq_file *m, const struct hpcc_flow_hdr *h);
/* Creates @net's /proc/net/hpcc_flows (0400): a seq_file that walks the
 * netns's list only, resuming by position. */
int hpcc_proc_create_flows(struct net *net, const char *name);

/* Defined in Rust: the table's hash of a key (@len = sizeof(key)). */
u32 hpcc_flow_hashfn(const void *data, u32 len, u32 seed);
/* Defined in Rust: frees a released object (RCU callback). */
void hpcc_flow_free_rcu(struct rcu_head *head);

/* Creates the slab cache (objects of @size bytes, @align) and the table. */
int hpcc_flows_init(unsigned int size, unsigned int align);
/* Destroys both; every object must be freed (after rcu_barrier()). */
void hpcc_flows_exit(void);
/* An uninitialised object, GFP_NOWAIT | __GFP_NOWARN, charged to @sk's
 * memory cgroup; NULL on failure. */
void *hpcc_flow_alloc(const struct sock *sk);
/* Returns an object to the cache (from the RCU callback). */
void hpcc_flow_free(void *obj);
/* Publishes @h: 0 if inserted, 1 if it replaced an object with the same
 * key (which stays allocated: its owner removes and frees it), or a
 * negative errno (the table could not grow: no memory). */
int hpcc_flow_insert(struct hpcc_flow_hdr *h);
/* Unpublishes @h if it is still in the table (not replaced). */
void hpcc_flow_remove(struct hpcc_flow_hdr *h);
/* The object with @key, or NULL. The caller holds rcu_read_lock(). */
struct hpcc_flow_hdr *hpcc_flow_lookup(const struct hpcc_flow_key *key);
/* call_rcu(&h->rcu, hpcc_flow_free_rcu). */
void hpcc_flow_call_rcu(struct hpcc_flow_hdr *h);

/* Per-netns state (rust/tcp_hpcc/netns.rs): the pernet id the netns core fills in,
 * and net_generic(), a static inline. */
extern unsigned int hpcc_net_id;
void *hpcc_net_generic(const struct net *net);
/* sock_net(), a static inline. */
struct net *hpcc_sock_net(const struct sock *sk);

/* Per-CPU counter arrays: alloc_percpu of @n u64 (GFP_KERNEL), free,
 * this_cpu_inc() of entry @i (a macro), and the sum over possible CPUs. */
u64 __percpu *hpcc_pcpu_alloc(unsigned int n);
void hpcc_pcpu_free(u64 __percpu *p);
/* Adds one to counter @i of the array *@slot points to, loaded under
 * rcu_read_lock() (null: nothing). */
void hpcc_pcpu_inc_rcu(u64 __percpu **slot, unsigned int i);
u64 hpcc_pcpu_sum(u64 __percpu *p, unsigned int i);

/* /proc/net/@name of @net, mode 0400 (root of the netns's user namespace
 * only), a single_open() seq_file shown by @show. */
int hpcc_proc_create(struct net *net, const char *name,
		     int (*show)(struct seq_file *, void *));
void hpcc_proc_remove(struct net *net, const char *name);
/* The netns of a proc_create_net_single() file (seq_file_single_net()). */
struct net *hpcc_seq_net(struct seq_file *m);

#endif /* _HPCC_SHIM_H */
