/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HPCC++ probe and response packets for TCP (draft-miao-rtgwg-hpccplus-00,
 * section 7.2). Shared by the module (rust/, probe_tx/) and the eBPF INT
 * switch emulator (selftests/lib/bpf/int_switch.bpf.c).
 *
 * A probe is its own small IP packet with the data flow's 5-tuple (same
 * addresses, same TCP ports, protocol TCP) so that switches hash it onto the
 * flow's path, the probe DSCP (IPv4 TOS or IPv6 traffic class), a 20-byte
 * TCP header and then:
 *
 *   struct hpcc_probe_hdr   magic, version, type, nonce, snd_nxt
 *   struct hpcc_int_hdr     nHop | pathID (include/hpcc_int.h)
 *   struct hpcc_int_hop     HPCC_INT_MAX_HOPS records, zero until stamped
 *
 * The full INT space is reserved by the sender, so switches stamp in place
 * and never grow the packet. A response has the reverse 5-tuple, the
 * response DSCP and the same layout: the receiver copies the probe's nonce,
 * snd_nxt and INT stack verbatim; switches do not stamp responses.
 *
 * The IP header is IPv4 without options (an IPv4 flow, also one of a
 * dual-stack socket with IPv4-mapped addresses) or IPv6 without extension
 * headers (an IPv6 flow).
 *
 * Probes and responses carry a TCP checksum that is the valid one plus one
 * (ones' complement; never valid, for any addresses, ports or payload) and
 * ip_summed CHECKSUM_NONE: they are never valid TCP segments. A switch that
 * stamps a probe updates the checksum incrementally (RFC 1624) so that it
 * stays the valid one plus one. The module consumes them in a netfilter
 * hook before TCP; a host without the module drops them as checksum
 * errors, so they can never enter TCP's sequence space, reach a socket as
 * data, or trigger an RST.
 *
 * A packet is a probe or response only if all of it matches: the DSCP,
 * TCP, the magic, version, type (agreeing with the
 * DSCP) and length. Anything else, whatever its DSCP, is not ours and
 * passes untouched.
 */
#ifndef _HPCC_PROBE_H
#define _HPCC_PROBE_H

#include <linux/types.h>
#include "hpcc_int.h"

#define HPCC_PROBE_MAGIC	0x48504343	/* "HPCC" */
#define HPCC_PROBE_VERSION	1
#define HPCC_PROBE_TYPE_PROBE	1
#define HPCC_PROBE_TYPE_RESPONSE 2

/*
 * Default DSCPs, both from RFC 2474 pool 2 (xxxx11, experimental or local
 * use). Module parameters probe_dscp and response_dscp override them.
 */
#define HPCC_PROBE_DSCP_DEFAULT		0x0b	/* 001011 */
#define HPCC_RESPONSE_DSCP_DEFAULT	0x0f	/* 001111 */

struct hpcc_probe_hdr {
	__be32 magic;		/* HPCC_PROBE_MAGIC */
	__u8 version;		/* HPCC_PROBE_VERSION */
	__u8 type;		/* HPCC_PROBE_TYPE_* */
	__be16 len;		/* bytes from this header to the end: HPCC_PROBE_PAYLOAD_LEN */
	__be32 nonce;		/* per-probe random nonce, echoed by the response */
	__be32 snd_nxt;		/* the sender's snd_nxt when it sent the probe */
} __attribute__((packed));

#define HPCC_PROBE_HDR_LEN	16
/* Offset of the INT stack from the start of the TCP payload. */
#define HPCC_PROBE_INT_OFF	HPCC_PROBE_HDR_LEN
/* TCP payload of every probe and response. */
#define HPCC_PROBE_PAYLOAD_LEN	(HPCC_PROBE_HDR_LEN + HPCC_INT_MAX_LEN)
/* The TCP header of probes and responses: 20 bytes, no options. */
#define HPCC_PROBE_TCP_HDR_LEN	20

#endif /* _HPCC_PROBE_H */
