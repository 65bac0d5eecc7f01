//! The INT wire format of draft-miao-rtgwg-hpccplus-00 Figure 4, and its
//! units. `include/hpcc_int.h` defines the same layout for C and eBPF; a
//! host test parses that header and checks every constant against this file.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-------+-----------------------+-------------------------------+
//! |  nHop |        pathID         |  Padding (receiver's N, 6.3.2) |
//! +-------+-----------------------+-----------------------+-------+
//! | Speed |                 Timestamp                     |txBytes|
//! +-------+-----------------------+-----------------------+-------+
//! |      txBytes (lower 16)       |         Queue Length          |
//! +-------------------------------+-------------------------------+
//! |                  ... one 8-byte record per hop ...            |
//! ```
//!
//! All fields are big-endian. Hop `i` (0-based, in path order) is at byte
//! `HDR_LEN + 8·i`; as one big-endian `u64` it is
//! `rate:4 | ts:24 | txBytes:20 | qlen:16` from the most significant bit.
//!
//! # Units
//!
//! * **ts**: 2 ns units ([`TS_UNIT_SHIFT`] = 1), 24 bits, so it wraps every
//!   [`TS_SPAN_NS`] = 2^25 ns ≈ 33.6 ms. Two samples of a flow may be at
//!   most [`MAX_GAP_NS`] ≈ 16.8 ms apart (by the host's clock) to be
//!   unwrapped unambiguously while tolerating up to 16.8 ms of delay
//!   variation; that covers a probe per RTT for every `T` up to 10 ms. A
//!   longer gap re-records (see `HpccFlow::on_int`). 2 ns is 0.2% of the
//!   smallest supported `T` (1 µs).
//! * **txBytes and qlen**: one byte unit per link speed, `2^unit_shift`
//!   bytes, chosen as the smallest power of two for which the 20-bit
//!   txBytes counter at line rate wraps no faster than ts (≥ 33.6 ms). The
//!   unit is therefore 32–64 ns of line rate (4 B at 1 Gb/s, 512 B at
//!   100 Gb/s, 4 KiB at 800 Gb/s), so one wrap at most can occur between
//!   two samples that ts can tell apart, at every speed up to 800 Gb/s. (A
//!   fixed 128 B unit would wrap every 1.3 ms at 800 Gb/s.) qlen uses the
//!   same unit and saturates at `0xffff` units, i.e. 2.1–4.2 ms of line
//!   rate, which is at least one BDP for `T` ≤ 2.1 ms; a saturated queue
//!   still drives `U` far above `eta`.
//! * **rate**: a 4-bit code from [`RATES`] (1–11: 1G–800G; 12–15: 100M,
//!   200M, 400M and 800M for emulated links); 0 is reserved and rejected.
//!   The table is full: an emulated port between 800 Mb/s and 1 Gb/s
//!   reports 1G, and one at another rate above 1 Gb/s (1.6 Gb/s) has no
//!   code of its own.
//!
//! A switch must report a rate no lower than its port's real egress rate,
//! or txBytes can wrap more than once per ts span.

/// Bytes before the first hop record (nHop, pathID, padding).
pub const HDR_LEN: usize = 4;
/// Bytes per hop record.
pub const HOP_LEN: usize = 8;
/// Most hop records a stack may carry (the 4-bit nHop could count 15; the
/// drafts expect ≤ 5 in a data center).
pub const MAX_HOPS: usize = 8;
/// Bit position of nHop in the first big-endian 16-bit word.
pub const NHOP_POS: u32 = 12;
/// Width of nHop.
pub const NHOP_BITS: u32 = 4;
/// Width of pathID (low bits of the first 16-bit word).
pub const PATHID_BITS: u32 = 12;
/// Bit position of the rate code in the big-endian 64-bit hop word.
pub const HOP_RATE_POS: u32 = 60;
/// Width of the rate code.
pub const HOP_RATE_BITS: u32 = 4;
/// Bit position of ts in the hop word.
pub const HOP_TS_POS: u32 = 36;
/// Width of ts.
pub const HOP_TS_BITS: u32 = 24;
/// Bit position of txBytes in the hop word.
pub const HOP_TXB_POS: u32 = 16;
/// Width of txBytes.
pub const HOP_TXB_BITS: u32 = 20;
/// Bit position of qlen in the hop word.
pub const HOP_QLEN_POS: u32 = 0;
/// Width of qlen.
pub const HOP_QLEN_BITS: u32 = 16;
/// ts unit is `2^TS_UNIT_SHIFT` ns.
pub const TS_UNIT_SHIFT: u32 = 1;
/// Period of the ts field in ns (2^25).
pub const TS_SPAN_NS: u64 = 1 << (HOP_TS_BITS + TS_UNIT_SHIFT);
/// Largest host-clock gap between two samples that can still be unwrapped.
pub const MAX_GAP_NS: u64 = TS_SPAN_NS / 2;

pub(crate) const TS_MASK: u64 = (1 << HOP_TS_BITS) - 1;
pub(crate) const TXB_MASK: u64 = (1 << HOP_TXB_BITS) - 1;
const QLEN_MASK: u64 = (1 << HOP_QLEN_BITS) - 1;
const RATE_MASK: u64 = (1 << HOP_RATE_BITS) - 1;
const PATHID_MASK: u16 = (1 << PATHID_BITS) - 1;

/// One entry of the rate-code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInfo {
    /// The 4-bit code on the wire.
    pub code: u8,
    /// Link rate in Mb/s.
    pub mbps: u64,
    /// txBytes and qlen count units of `2^unit_shift` bytes.
    pub unit_shift: u32,
    /// Name used in `include/hpcc_int.h` (`HPCC_INT_RATE_<name>`).
    pub name: &'static str,
}

/// The rate codes, `RATES[i].code == i + 1`.
pub const RATES: [RateInfo; 15] = [
    RateInfo { code: 1, mbps: 1_000, unit_shift: 2, name: "1G" },
    RateInfo { code: 2, mbps: 2_500, unit_shift: 4, name: "2G5" },
    RateInfo { code: 3, mbps: 5_000, unit_shift: 5, name: "5G" },
    RateInfo { code: 4, mbps: 10_000, unit_shift: 6, name: "10G" },
    RateInfo { code: 5, mbps: 25_000, unit_shift: 7, name: "25G" },
    RateInfo { code: 6, mbps: 40_000, unit_shift: 8, name: "40G" },
    RateInfo { code: 7, mbps: 50_000, unit_shift: 8, name: "50G" },
    RateInfo { code: 8, mbps: 100_000, unit_shift: 9, name: "100G" },
    RateInfo { code: 9, mbps: 200_000, unit_shift: 10, name: "200G" },
    RateInfo { code: 10, mbps: 400_000, unit_shift: 11, name: "400G" },
    RateInfo { code: 11, mbps: 800_000, unit_shift: 12, name: "800G" },
    // Emulated links (the eBPF switch in selftests/, 100-800 Mb/s): units
    // of 1-4 B; qlen saturates at 64-256 KiB, 2.6-5.2 ms of line rate.
    RateInfo { code: 12, mbps: 100, unit_shift: 0, name: "100M" },
    RateInfo { code: 13, mbps: 200, unit_shift: 0, name: "200M" },
    RateInfo { code: 14, mbps: 400, unit_shift: 1, name: "400M" },
    RateInfo { code: 15, mbps: 800, unit_shift: 2, name: "800M" },
];

/// The table entry of a rate code, or `None` for a reserved code.
#[inline]
pub fn rate_info(code: u8) -> Option<&'static RateInfo> {
    RATES.get(usize::from(code.checked_sub(1)?))
}

impl RateInfo {
    /// Link rate in bits per second.
    pub const fn bps(&self) -> u64 {
        self.mbps.saturating_mul(1_000_000)
    }
}

/// One hop record as carried on the wire (narrow fields, wire units).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawHop {
    /// Rate code (see [`RATES`]).
    pub rate: u8,
    /// Egress timestamp, 24 bits, 2 ns units, wrapping.
    pub ts: u32,
    /// Transmitted bytes, 20 bits, rate-dependent units, wrapping.
    pub tx: u32,
    /// Queue length, 16 bits, rate-dependent units, saturating.
    pub qlen: u16,
}

impl RawHop {
    /// Splits a hop word (the 8 bytes read as a big-endian `u64`).
    pub const fn from_word(w: u64) -> Self {
        Self {
            rate: ((w >> HOP_RATE_POS) & RATE_MASK) as u8,
            ts: ((w >> HOP_TS_POS) & TS_MASK) as u32,
            tx: ((w >> HOP_TXB_POS) & TXB_MASK) as u32,
            qlen: ((w >> HOP_QLEN_POS) & QLEN_MASK) as u16,
        }
    }

    /// Packs into a hop word; out-of-range fields are truncated to their width.
    pub const fn to_word(&self) -> u64 {
        ((self.rate as u64 & RATE_MASK) << HOP_RATE_POS)
            | ((self.ts as u64 & TS_MASK) << HOP_TS_POS)
            | ((self.tx as u64 & TXB_MASK) << HOP_TXB_POS)
            | ((self.qlen as u64 & QLEN_MASK) << HOP_QLEN_POS)
    }

    /// What a switch writes for a port of rate code `rate` whose clock reads
    /// `ts_ns`, which has sent `tx_bytes` in total and holds `qlen_bytes`:
    /// ts and txBytes truncated to their units and widths, qlen saturated.
    /// `None` for a reserved rate code.
    pub fn quantize(rate: u8, ts_ns: u64, tx_bytes: u64, qlen_bytes: u64) -> Option<Self> {
        let info = rate_info(rate)?;
        let q = qlen_bytes >> info.unit_shift;
        Some(Self {
            rate,
            ts: ((ts_ns >> TS_UNIT_SHIFT) & TS_MASK) as u32,
            tx: ((tx_bytes >> info.unit_shift) & TXB_MASK) as u32,
            qlen: if q > QLEN_MASK { QLEN_MASK as u16 } else { q as u16 },
        })
    }
}

/// A parsed INT stack: header fields and up to [`MAX_HOPS`] raw records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntStack {
    /// Number of valid records in `hops`.
    pub n_hops: u8,
    /// XOR of the 12-bit switch IDs along the path.
    pub path_id: u16,
    /// The records; entries at and beyond `n_hops` are zero.
    pub hops: [RawHop; MAX_HOPS],
}

impl IntStack {
    /// The valid records.
    pub fn hops(&self) -> &[RawHop] {
        self.hops.get(..usize::from(self.n_hops)).unwrap_or(&[])
    }
}

/// Offset of the receiver's flow count in the header (the drafts'
/// padding, a big-endian `u16`): a response carries the number of hpcc
/// flows whose probes its receiver answered recently, the N of the
/// drafts' receiver-based W_ai (section 6.3.2), below [`SPACING_TAG`];
/// 0 = not counted. A probe carries its sender's probe spacing there,
/// tagged ([`PROBE_SPACING_OFF`]). Switches leave it alone.
pub const RCV_FLOWS_OFF: usize = 2;

/// Offset of the sender's probe spacing in a probe's header, the same
/// field as a response's flow count: [`SPACING_TAG`] plus the
/// microseconds between the flow's probes, at most
/// [`MAX_PROBE_SPACING_US`]; 0 = not said. The receiver counts the flows
/// for that probe over windows fit to it (`rcvcount::scale_for`), and
/// overwrites it with the count. The tag keeps a spacing from being read
/// as a count where a receiver echoes the probe's stack as it came.
pub const PROBE_SPACING_OFF: usize = RCV_FLOWS_OFF;

/// The top bit of the field: set in a probe's spacing, never in a count.
pub const SPACING_TAG: u16 = 0x8000;

/// The longest spacing the field says, us.
pub const MAX_PROBE_SPACING_US: u16 = SPACING_TAG - 1;

fn field(buf: &[u8]) -> u16 {
    buf.get(RCV_FLOWS_OFF..RCV_FLOWS_OFF + 2)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u16::from_be_bytes)
}

fn set_field(buf: &mut [u8], v: u16) {
    if let Some(b) = buf.get_mut(RCV_FLOWS_OFF..RCV_FLOWS_OFF + 2) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// The probe spacing a probe's INT stack carries, us (0: not said).
pub fn probe_spacing_us(buf: &[u8]) -> u16 {
    match field(buf) {
        v if v & SPACING_TAG != 0 => v & MAX_PROBE_SPACING_US,
        _ => 0,
    }
}

/// Writes the sender's probe spacing into a probe's INT stack (0: not
/// said; longer than [`MAX_PROBE_SPACING_US`] says that).
pub fn set_probe_spacing_us(buf: &mut [u8], us: u16) {
    set_field(buf, if us == 0 { 0 } else { SPACING_TAG | us.min(MAX_PROBE_SPACING_US) })
}

/// The receiver's flow count a response's INT stack carries (0: none, or
/// a probe's spacing echoed).
pub fn rcv_flows(buf: &[u8]) -> u16 {
    match field(buf) {
        v if v & SPACING_TAG != 0 => 0,
        v => v,
    }
}

/// Writes the receiver's flow count into an INT stack (a no-op on a
/// buffer shorter than the header), at most [`MAX_PROBE_SPACING_US`]
/// (far above what `rcvcount` counts).
pub fn set_rcv_flows(buf: &mut [u8], n: u16) {
    set_field(buf, n.min(MAX_PROBE_SPACING_US))
}

/// Why a buffer is not a valid INT stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The buffer is shorter than the header plus `nHop` records.
    Truncated,
    /// `nHop` exceeds [`MAX_HOPS`].
    TooManyHops,
    /// A record carries a reserved rate code.
    BadRate {
        /// Index of the offending record.
        hop: u8,
    },
}

/// Bytes an INT stack of `n_hops` records occupies.
pub const fn encoded_len(n_hops: usize) -> usize {
    HDR_LEN + HOP_LEN * n_hops
}

/// Parses an INT stack. Bytes after the last record (options, padding) are
/// ignored.
pub fn parse(buf: &[u8]) -> Result<IntStack, WireError> {
    let first: [u8; 2] = buf
        .get(..2)
        .and_then(|s| s.try_into().ok())
        .ok_or(WireError::Truncated)?;
    if buf.len() < HDR_LEN {
        return Err(WireError::Truncated);
    }
    let word = u16::from_be_bytes(first);
    let n = usize::from(word >> NHOP_POS);
    if n > MAX_HOPS {
        return Err(WireError::TooManyHops);
    }
    let body = buf
        .get(HDR_LEN..encoded_len(n))
        .ok_or(WireError::Truncated)?;
    let mut stack = IntStack {
        n_hops: n as u8,
        path_id: word & PATHID_MASK,
        hops: [RawHop::default(); MAX_HOPS],
    };
    for ((i, chunk), slot) in body.chunks_exact(HOP_LEN).enumerate().zip(stack.hops.iter_mut()) {
        let bytes: [u8; 8] = chunk.try_into().map_err(|_| WireError::Truncated)?;
        let hop = RawHop::from_word(u64::from_be_bytes(bytes));
        if rate_info(hop.rate).is_none() {
            return Err(WireError::BadRate { hop: i as u8 });
        }
        *slot = hop;
    }
    Ok(stack)
}

/// Writes an INT stack into `out` and returns the bytes written. Fails with
/// `TooManyHops` if `n_hops > MAX_HOPS` and `Truncated` if `out` is short.
pub fn encode(stack: &IntStack, out: &mut [u8]) -> Result<usize, WireError> {
    let n = usize::from(stack.n_hops);
    if n > MAX_HOPS {
        return Err(WireError::TooManyHops);
    }
    let len = encoded_len(n);
    let dst = out.get_mut(..len).ok_or(WireError::Truncated)?;
    let word = ((stack.n_hops as u16) << NHOP_POS) | (stack.path_id & PATHID_MASK);
    for (d, s) in dst.iter_mut().zip(word.to_be_bytes().iter().chain([0u8, 0].iter())) {
        *d = *s;
    }
    let body = dst.get_mut(HDR_LEN..).ok_or(WireError::Truncated)?;
    for (chunk, hop) in body.chunks_exact_mut(HOP_LEN).zip(stack.hops.iter()) {
        for (d, s) in chunk.iter_mut().zip(hop.to_word().to_be_bytes().iter()) {
            *d = *s;
        }
    }
    Ok(len)
}
