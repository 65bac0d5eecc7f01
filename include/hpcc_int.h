/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HPCC++ in-band telemetry (INT) stack: draft-miao-rtgwg-hpccplus-00,
 * Figure 4. Shared by kernel C, eBPF programs (clang --target=bpf) and,
 * through a host test that parses every #define below, the Rust core
 * (rust/hpcc_core/wire.rs). Change both together.
 *
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-------+-----------------------+-------------------------------+
 * |  nHop |        pathID         |            Padding            |
 * +-------+-----------------------+-----------------------+-------+
 * | Speed |                 Timestamp                     |txBytes|
 * +-------+-----------------------+-----------------------+-------+
 * |      txBytes (lower 16)       |         Queue Length          |
 * +-------------------------------+-------------------------------+
 * |                  ... one 8-byte record per hop ...            |
 *
 * All fields are big-endian. The sender sets nHop = 0 and pathID = 0. Each
 * switch, if nHop < HPCC_INT_MAX_HOPS, writes its record at byte
 * HPCC_INT_HDR_LEN + 8 * nHop, increments nHop and XORs its 12-bit switch
 * ID into pathID; at HPCC_INT_MAX_HOPS it leaves the stack alone.
 *
 * Units
 *   ts:      2 ns (HPCC_INT_TS_UNIT_SHIFT), 24 bits: wraps every
 *            HPCC_INT_TS_SPAN_NS = 2^25 ns (33.6 ms). The receiver of the
 *            telemetry unwraps ts to the value nearest its own clock's
 *            elapsed time, so samples of a flow may be up to
 *            HPCC_INT_MAX_GAP_NS (16.8 ms) apart: a probe per RTT works
 *            for every base RTT up to 10 ms. A longer gap re-records.
 *   txBytes: 20 bits, qlen: 16 bits, both in units of
 *            2^HPCC_INT_RATE_<speed>_UNIT_SHIFT bytes: the smallest power
 *            of two for which txBytes at line rate wraps no faster than ts
 *            (about 32-64 ns of line rate: 4 B at 1G, 512 B at 100G,
 *            4 KiB at 800G). A fixed 128-byte unit would wrap every 1.3 ms
 *            at 800G, faster than a 10 ms probe interval. txBytes wraps;
 *            qlen saturates at 0xffff units (2.1-4.2 ms of line rate).
 *   Speed:   a code from the HPCC_INT_RATE_* table (1-11: 1G-800G; 12-15:
 *            100M, 200M, 400M and 800M for emulated links); 0 is reserved
 *            and makes the receiver reject the stack. A port must
 *            report a speed no lower than its real egress rate, or txBytes
 *            may wrap more than once per ts span.
 */
#ifndef _HPCC_INT_H
#define _HPCC_INT_H

#include <linux/types.h>

/* Layout */
#define HPCC_INT_HDR_LEN	4	/* nHop, pathID, padding */
#define HPCC_INT_HOP_LEN	8	/* one record per hop */
#define HPCC_INT_MAX_HOPS	8	/* records a stack may carry */
#define HPCC_INT_MAX_LEN	68	/* HDR_LEN + MAX_HOPS * HOP_LEN */
/* The header's padding, a big-endian u16: in a probe, HPCC_INT_SPACING_TAG
 * plus the microseconds between its flow's probes (0: not said); in a
 * response, the number of hpcc flows whose probes the receiver answered
 * recently, below the tag (0: not counted). Switches leave it alone. */
#define HPCC_INT_RCV_FLOWS_OFF	2
#define HPCC_INT_SPACING_TAG	0x8000	/* set in a probe's spacing, never in a count */

/* First 16-bit word (host order after ntohs) */
#define HPCC_INT_NHOP_POS	12
#define HPCC_INT_NHOP_BITS	4
#define HPCC_INT_PATHID_BITS	12
#define HPCC_INT_PATHID_MASK	0xfff

/* Hop record as one 64-bit word (host order after be64_to_cpu) */
#define HPCC_INT_HOP_RATE_POS	60
#define HPCC_INT_HOP_RATE_BITS	4
#define HPCC_INT_HOP_TS_POS	36
#define HPCC_INT_HOP_TS_BITS	24
#define HPCC_INT_HOP_TXB_POS	16
#define HPCC_INT_HOP_TXB_BITS	20
#define HPCC_INT_HOP_QLEN_POS	0
#define HPCC_INT_HOP_QLEN_BITS	16
#define HPCC_INT_TS_MASK	0xffffff
#define HPCC_INT_TXB_MASK	0xfffff
#define HPCC_INT_QLEN_MASK	0xffff

/* Units */
#define HPCC_INT_TS_UNIT_SHIFT	1		/* ts unit = 2 ns */
#define HPCC_INT_TS_SPAN_NS	33554432	/* 2^25 ns: ts period */
#define HPCC_INT_MAX_GAP_NS	16777216	/* 2^24 ns: largest sample gap */

/* Speed codes: code, rate in Mb/s, byte unit shift of txBytes and qlen */
#define HPCC_INT_RATE_1G		1
#define HPCC_INT_RATE_1G_MBPS		1000
#define HPCC_INT_RATE_1G_UNIT_SHIFT	2
#define HPCC_INT_RATE_2G5		2
#define HPCC_INT_RATE_2G5_MBPS		2500
#define HPCC_INT_RATE_2G5_UNIT_SHIFT	4
#define HPCC_INT_RATE_5G		3
#define HPCC_INT_RATE_5G_MBPS		5000
#define HPCC_INT_RATE_5G_UNIT_SHIFT	5
#define HPCC_INT_RATE_10G		4
#define HPCC_INT_RATE_10G_MBPS		10000
#define HPCC_INT_RATE_10G_UNIT_SHIFT	6
#define HPCC_INT_RATE_25G		5
#define HPCC_INT_RATE_25G_MBPS		25000
#define HPCC_INT_RATE_25G_UNIT_SHIFT	7
#define HPCC_INT_RATE_40G		6
#define HPCC_INT_RATE_40G_MBPS		40000
#define HPCC_INT_RATE_40G_UNIT_SHIFT	8
#define HPCC_INT_RATE_50G		7
#define HPCC_INT_RATE_50G_MBPS		50000
#define HPCC_INT_RATE_50G_UNIT_SHIFT	8
#define HPCC_INT_RATE_100G		8
#define HPCC_INT_RATE_100G_MBPS		100000
#define HPCC_INT_RATE_100G_UNIT_SHIFT	9
#define HPCC_INT_RATE_200G		9
#define HPCC_INT_RATE_200G_MBPS		200000
#define HPCC_INT_RATE_200G_UNIT_SHIFT	10
#define HPCC_INT_RATE_400G		10
#define HPCC_INT_RATE_400G_MBPS		400000
#define HPCC_INT_RATE_400G_UNIT_SHIFT	11
#define HPCC_INT_RATE_800G		11
#define HPCC_INT_RATE_800G_MBPS		800000
#define HPCC_INT_RATE_800G_UNIT_SHIFT	12
/* Emulated links (selftests' eBPF switch): 1-4 B units, qlen saturates at 64-256 KiB */
#define HPCC_INT_RATE_100M		12
#define HPCC_INT_RATE_100M_MBPS		100
#define HPCC_INT_RATE_100M_UNIT_SHIFT	0
#define HPCC_INT_RATE_200M		13
#define HPCC_INT_RATE_200M_MBPS		200
#define HPCC_INT_RATE_200M_UNIT_SHIFT	0
#define HPCC_INT_RATE_400M		14
#define HPCC_INT_RATE_400M_MBPS		400
#define HPCC_INT_RATE_400M_UNIT_SHIFT	1
#define HPCC_INT_RATE_800M		15
#define HPCC_INT_RATE_800M_MBPS		800
#define HPCC_INT_RATE_800M_UNIT_SHIFT	2
#define HPCC_INT_RATE_MAX		15	/* highest valid code */

struct hpcc_int_hdr {
	__be16 nhop_pathid;	/* nHop:4 (most significant) | pathID:12 */
	__be16 pad;
} __attribute__((packed));

struct hpcc_int_hop {
	__be32 hi;	/* rate:4 | ts:24 | txBytes[19:16]:4 */
	__be32 lo;	/* txBytes[15:0]:16 | qlen:16 */
} __attribute__((packed));

/*
 * Byte unit shift of a speed code, or -1 for a reserved code. A switch
 * (emulator) writes txBytes = (total_bytes >> shift) & HPCC_INT_TXB_MASK and
 * qlen = min(queue_bytes >> shift, HPCC_INT_QLEN_MASK).
 */
static inline int hpcc_int_unit_shift(__u32 rate)
{
	switch (rate) {
	case HPCC_INT_RATE_1G:		return HPCC_INT_RATE_1G_UNIT_SHIFT;
	case HPCC_INT_RATE_2G5:		return HPCC_INT_RATE_2G5_UNIT_SHIFT;
	case HPCC_INT_RATE_5G:		return HPCC_INT_RATE_5G_UNIT_SHIFT;
	case HPCC_INT_RATE_10G:		return HPCC_INT_RATE_10G_UNIT_SHIFT;
	case HPCC_INT_RATE_25G:		return HPCC_INT_RATE_25G_UNIT_SHIFT;
	case HPCC_INT_RATE_40G:		return HPCC_INT_RATE_40G_UNIT_SHIFT;
	case HPCC_INT_RATE_50G:		return HPCC_INT_RATE_50G_UNIT_SHIFT;
	case HPCC_INT_RATE_100G:	return HPCC_INT_RATE_100G_UNIT_SHIFT;
	case HPCC_INT_RATE_200G:	return HPCC_INT_RATE_200G_UNIT_SHIFT;
	case HPCC_INT_RATE_400G:	return HPCC_INT_RATE_400G_UNIT_SHIFT;
	case HPCC_INT_RATE_800G:	return HPCC_INT_RATE_800G_UNIT_SHIFT;
	case HPCC_INT_RATE_100M:	return HPCC_INT_RATE_100M_UNIT_SHIFT;
	case HPCC_INT_RATE_200M:	return HPCC_INT_RATE_200M_UNIT_SHIFT;
	case HPCC_INT_RATE_400M:	return HPCC_INT_RATE_400M_UNIT_SHIFT;
	case HPCC_INT_RATE_800M:	return HPCC_INT_RATE_800M_UNIT_SHIFT;
	default:			return -1;
	}
}

/*
 * Fills a hop record (network order, written byte by byte, so it is
 * independent of the host's endianness) from values already in wire units:
 * ts in 2 ns units, txBytes and qlen in the speed's byte unit. Each value
 * is truncated to its field width.
 */
static inline void hpcc_int_hop_pack(struct hpcc_int_hop *h, __u32 rate,
				     __u32 ts_units, __u32 txb_units,
				     __u32 qlen_units)
{
	__u8 *p = (__u8 *)h;

	ts_units &= HPCC_INT_TS_MASK;
	txb_units &= HPCC_INT_TXB_MASK;
	qlen_units &= HPCC_INT_QLEN_MASK;
	p[0] = (__u8)(((rate & 0xf) << 4) | (ts_units >> 20));
	p[1] = (__u8)(ts_units >> 12);
	p[2] = (__u8)(ts_units >> 4);
	p[3] = (__u8)(((ts_units & 0xf) << 4) | (txb_units >> 16));
	p[4] = (__u8)(txb_units >> 8);
	p[5] = (__u8)txb_units;
	p[6] = (__u8)(qlen_units >> 8);
	p[7] = (__u8)qlen_units;
}

/* Fills the stack header (network order): nHop and pathID, zero padding.
 * A switch stamping a probe stores only the first two bytes: the padding
 * carries the probe's spacing (HPCC_INT_RCV_FLOWS_OFF). */
static inline void hpcc_int_hdr_pack(struct hpcc_int_hdr *hdr, __u32 nhop,
				     __u32 path_id)
{
	__u8 *p = (__u8 *)hdr;

	p[0] = (__u8)(((nhop & 0xf) << 4) | ((path_id >> 8) & 0xf));
	p[1] = (__u8)path_id;
	p[2] = 0;
	p[3] = 0;
}

#endif /* _HPCC_INT_H */
