/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Source Flow Control (SFC) signal: a congested switch tells the sender of
 * a data packet to pause that flow for the time the switch needs to drain
 * its queue to a target (iccrg-ietf112 source flow control slides; the
 * security rules of draft-xiao-rtgwg-rocev2-fast-cnp-01). Shared by the
 * eBPF INT switch emulator (selftests/lib/bpf/int_switch.bpf.c) and, through a
 * host test that parses every #define below, the Rust core
 * (rust/hpcc_core/sfc/signal.rs). Change both together.
 *
 * The signal is a UDP datagram:
 *
 *   IP   source: the switch's own address; destination: the data packet's
 *        source; TTL / hop limit 255 (GTSM: the receiver accepts only 255,
 *        so a signal from beyond the adjacent domain is refused); the same
 *        IP version as the data packet, without options or extension
 *        headers.
 *   UDP  destination port: the module parameter sfc_port (default
 *        HPCC_SFC_PORT_DEFAULT); source port: the same.
 *   struct hpcc_sfc_hdr (HPCC_SFC_LEN bytes, all fields big-endian).
 *
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                      magic "HSFC"                             |
 * +---------------+---------------+---------------+---------------+
 * |    version    |    family     |   l4proto     |  speed code   |
 * +---------------+---------------+---------------+---------------+
 * |     reserved (never read)     |              len              |
 * +-------------------------------+-------------------------------+
 * |                        pause (ns)                             |
 * +---------------------------------------------------------------+
 * |                    queue length (bytes)                       |
 * +---------------------------------------------------------------+
 * |                        switch ID                              |
 * +-------------------------------+-------------------------------+
 * |           port ID             |        data source port       |
 * +-------------------------------+-------------------------------+
 * |     data destination port     |          reserved2 (0)        |
 * +-------------------------------+-------------------------------+
 * |            TCP sequence number of the data packet             |
 * +---------------------------------------------------------------+
 * |             data source address (16 bytes)                    |
 * |           data destination address (16 bytes)                 |
 * +---------------------------------------------------------------+
 *
 * Fields
 *   family:    4 or 6, the data packet's IP version. IPv4 addresses take
 *              the first 4 bytes of their 16, the other 12 are zero.
 *   l4proto:   the data packet's IP protocol, IPPROTO_TCP or IPPROTO_UDP.
 *   speed:     the congested port's rate as a speed code of hpcc_int.h
 *              (HPCC_INT_RATE_*); the host sizes the window cut with it.
 *   reserved:  a switch that builds the signal from a clone of a TCP data
 *              packet may leave the clone's checksum offload state, which
 *              then writes the old TCP checksum offset: byte 16 of the L4
 *              header, which is byte 8 of this header when the signal has
 *              the data packet's IP version. The receiver never reads it,
 *              nor the UDP checksum.
 *   len:       HPCC_SFC_LEN; a signal of another length is refused.
 *   pause:     ns the flow should not send: the time to drain the port's
 *              backlog down to the switch's drain target at the port rate.
 *              The host clamps it to its sfc_max_pause_us parameter.
 *   qlen:      bytes queued at the port when the data packet arrived.
 *   switch ID, port ID: the congestion locator.
 *   seq:       the data packet's TCP sequence number (0 for UDP); the host
 *              refuses a signal whose seq is not in [snd_una, snd_nxt).
 */
#ifndef _HPCC_SFC_H
#define _HPCC_SFC_H

#include <linux/types.h>

#define HPCC_SFC_MAGIC		0x48534643	/* "HSFC" */
#define HPCC_SFC_VERSION	1
/* No IANA assignment: a module parameter and a switch setting. */
#define HPCC_SFC_PORT_DEFAULT	6535
#define HPCC_SFC_TTL		255

struct hpcc_sfc_hdr {
	__be32 magic;		/* HPCC_SFC_MAGIC */
	__u8 version;		/* HPCC_SFC_VERSION */
	__u8 family;		/* 4 or 6 */
	__u8 l4proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	__u8 speed;		/* HPCC_INT_RATE_* of the congested port */
	__be16 reserved;	/* never read (see above) */
	__be16 len;		/* HPCC_SFC_LEN */
	__be32 pause_ns;	/* requested pause */
	__be32 qlen;		/* bytes queued at the port */
	__be32 switch_id;	/* congestion locator: switch */
	__be16 port_id;		/* congestion locator: port */
	__be16 sport;		/* the data packet's L4 source port */
	__be16 dport;		/* the data packet's L4 destination port */
	__be16 reserved2;	/* 0 */
	__be32 seq;		/* the data packet's TCP sequence number */
	__u8 saddr[16];		/* the data packet's source address */
	__u8 daddr[16];		/* the data packet's destination address */
} __attribute__((packed));

#define HPCC_SFC_LEN		68
/* Byte offsets in struct hpcc_sfc_hdr. */
#define HPCC_SFC_OFF_VERSION	4
#define HPCC_SFC_OFF_FAMILY	5
#define HPCC_SFC_OFF_L4PROTO	6
#define HPCC_SFC_OFF_SPEED	7
#define HPCC_SFC_OFF_RESERVED	8
#define HPCC_SFC_OFF_LEN	10
#define HPCC_SFC_OFF_PAUSE	12
#define HPCC_SFC_OFF_QLEN	16
#define HPCC_SFC_OFF_SWITCH	20
#define HPCC_SFC_OFF_PORT	24
#define HPCC_SFC_OFF_SPORT	26
#define HPCC_SFC_OFF_DPORT	28
#define HPCC_SFC_OFF_SEQ	32
#define HPCC_SFC_OFF_SADDR	36
#define HPCC_SFC_OFF_DADDR	52

#endif /* _HPCC_SFC_H */
