//! Whether a host takes a signal: the refusals ([`Reject`]) and every
//! end of a signal ([`Outcome`]), the source's token buckets, the replay
//! filter, and [`Rules`], which decides in one place and in order.

use super::*;

/// Why a host refused a signal (one counter each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// SFC is disabled (the default).
    Disabled,
    /// The UDP length disagrees with the datagram's, or the UDP checksum
    /// is missing (0) or wrong.
    BadUdp,
    /// The source is not a unicast address of the outer IP version
    /// (IPv4-mapped, IPv4-compatible, unspecified, multicast, loopback or
    /// broadcast).
    BadSource,
    /// It came in on the loopback device: sent by this host.
    Loopback,
    /// It came out of a tunnel (its TTL is whatever the tunnel's remote
    /// end chose).
    Tunnel,
    /// The device it came in on is not in `sfc_ifaces`.
    Iface,
    /// TTL / hop limit below [`TTL`] less [`Rules::max_hops`]: from
    /// further than the switches the operator trusts to signal.
    Ttl,
    /// Source address not in the access list.
    Acl,
    /// The source is one of this host's own addresses (a local process).
    LocalSource,
    /// The source's token bucket is empty.
    RateLimited,
    /// Shorter than [`LEN`].
    Truncated,
    /// Version, length, family, protocol, speed or padding wrong.
    BadHeader,
    /// No flow with the signal's tuple (or not one SFC may pause).
    NoFlow,
    /// The sequence number is not in the flow's `[snd_una, snd_nxt)`.
    SeqOutOfWindow,
    /// The flow has taken this signal (switch, port, sequence number)
    /// already: a replay.
    Duplicate,
    /// `sfc_scope` 1: no free slot for the flow in the netns's pause table.
    TableFull,
    /// `sfc_scope` 1: the source holds its share of the pause table already.
    SourceQuota,
}

/// What became of an accepted signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// An hpcc flow's departure clock moved.
    Applied,
    /// An hpcc flow's socket was owned by a process: at its next ACK.
    Deferred,
    /// Another flow, held at egress (`sfc_scope` 1).
    Egress,
}

/// Declares [`Outcome`] from its table: variant, the C enumerator
/// (`enum hpcc_sfc_outcome`, include/hpcc_shim.h, in the same order: a
/// variant's discriminant is its code in the tracepoint), the
/// tracepoint's name for it (include/hpcc_trace.h) and its counter in
/// `/proc/net/hpcc_stat`. `tests/outcomes.rs` checks both headers
/// against this table.
macro_rules! outcome_table {
    ($($variant:ident = $c:ident, $trace:literal, $counter:literal;)*) => {
        /// Every end of a received SFC signal: taken, or refused for one
        /// [`Reject`]. Each has a counter and a tracepoint code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Outcome {
            $(#[doc = concat!("`", stringify!($c), "`, counted as `", $counter, "`.")] $variant,)*
        }

        impl Outcome {
            /// Every outcome, in code order.
            pub const ALL: [Self; [$(stringify!($variant),)*].len()] = [$(Self::$variant,)*];
            /// How many there are.
            pub const COUNT: usize = Self::ALL.len();

            /// Its C enumerator's name.
            pub const fn c_name(self) -> &'static str {
                match self { $(Self::$variant => stringify!($c),)* }
            }

            /// Its name in the tracepoint's output.
            pub const fn trace_name(self) -> &'static str {
                match self { $(Self::$variant => $trace,)* }
            }

            /// Its counter's name in `/proc/net/hpcc_stat`.
            pub const fn counter_name(self) -> &'static core::ffi::CStr {
                let s: &'static str = match self { $(Self::$variant => concat!($counter, "\0"),)* };
                match core::ffi::CStr::from_bytes_with_nul(s.as_bytes()) {
                    Ok(c) => c,
                    // Unreachable: one NUL, at the end (a literal above).
                    Err(_) => c"sfc_unnamed",
                }
            }
        }
    };
}

outcome_table! {
    Applied = HPCC_SFC_APPLIED, "applied", "sfc_applied";
    Deferred = HPCC_SFC_DEFERRED, "deferred", "sfc_deferred";
    Disabled = HPCC_SFC_DISABLED, "disabled", "sfc_disabled";
    Ttl = HPCC_SFC_BAD_TTL, "bad_ttl", "sfc_bad_ttl";
    Acl = HPCC_SFC_NOT_IN_ACL, "not_in_acl", "sfc_not_in_acl";
    RateLimited = HPCC_SFC_RATE_LIMITED, "rate_limited", "sfc_rate_limited";
    Truncated = HPCC_SFC_TRUNCATED, "truncated", "sfc_truncated";
    BadHeader = HPCC_SFC_BAD_HEADER, "bad_header", "sfc_bad_header";
    NoFlow = HPCC_SFC_NO_FLOW, "no_flow", "sfc_no_flow";
    SeqOutOfWindow = HPCC_SFC_SEQ_OUT_OF_WINDOW, "seq_out_of_window", "sfc_seq_out_of_window";
    AppliedEgress = HPCC_SFC_APPLIED_EGRESS, "applied_egress", "sfc_applied_egress";
    TableFull = HPCC_SFC_PAUSE_TABLE_FULL, "pause_table_full", "sfc_pause_table_full";
    BadUdp = HPCC_SFC_BAD_UDP, "bad_udp", "sfc_bad_udp";
    BadSource = HPCC_SFC_BAD_SOURCE, "bad_source", "sfc_bad_source";
    Loopback = HPCC_SFC_LOOPBACK, "loopback", "sfc_loopback";
    Tunnel = HPCC_SFC_TUNNEL, "tunnel", "sfc_tunnel";
    Iface = HPCC_SFC_IFACE, "iface", "sfc_not_on_iface";
    LocalSource = HPCC_SFC_LOCAL_SOURCE, "local_source", "sfc_local_source";
    Duplicate = HPCC_SFC_DUPLICATE, "duplicate", "sfc_duplicate";
    SourceQuota = HPCC_SFC_SOURCE_QUOTA, "source_quota", "sfc_source_quota";
}

impl From<Reject> for Outcome {
    fn from(r: Reject) -> Self {
        match r {
            Reject::Disabled => Self::Disabled,
            Reject::BadUdp => Self::BadUdp,
            Reject::BadSource => Self::BadSource,
            Reject::Loopback => Self::Loopback,
            Reject::Tunnel => Self::Tunnel,
            Reject::Iface => Self::Iface,
            Reject::Ttl => Self::Ttl,
            Reject::Acl => Self::Acl,
            Reject::LocalSource => Self::LocalSource,
            Reject::RateLimited => Self::RateLimited,
            Reject::Truncated => Self::Truncated,
            Reject::BadHeader => Self::BadHeader,
            Reject::NoFlow => Self::NoFlow,
            Reject::SeqOutOfWindow => Self::SeqOutOfWindow,
            Reject::Duplicate => Self::Duplicate,
            Reject::TableFull => Self::TableFull,
            Reject::SourceQuota => Self::SourceQuota,
        }
    }
}

impl From<Taken> for Outcome {
    fn from(t: Taken) -> Self {
        match t {
            Taken::Applied => Self::Applied,
            Taken::Deferred => Self::Deferred,
            Taken::Egress => Self::AppliedEgress,
        }
    }
}

impl From<Result<Taken, Reject>> for Outcome {
    fn from(r: Result<Taken, Reject>) -> Self {
        match r {
            Ok(t) => t.into(),
            Err(r) => r.into(),
        }
    }
}

/// What the kernel knows of a signal's arrival that its bytes do not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    /// The device it came in on is the loopback device: this host sent it.
    pub loopback: bool,
    /// It came out of a tunnel: decapsulated (IPIP, GRE, VXLAN, ...) or
    /// the inner packet of an IPsec tunnel.
    pub tunneled: bool,
    /// The name of the device it came in on (NUL-padded).
    pub ifname: [u8; IFNAME_MAX + 1],
}

/// A token bucket: `rate` tokens per second, at most `burst` saved.
/// Integer arithmetic in token-nanoseconds (1 token = 10^9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenBucket {
    tokens: u64,
    last_ns: u64,
}

/// Largest accepted bucket rate, tokens per second.
pub const MAX_RATE: u32 = 10_000_000;
/// Largest accepted burst, tokens.
pub const MAX_BURST: u32 = 1_000_000;
pub(super) const TOKEN: u64 = 1_000_000_000;

impl TokenBucket {
    /// A full bucket at `now_ns`.
    pub fn new(now_ns: u64, burst: u32) -> Self {
        TokenBucket { tokens: u64::from(burst.min(MAX_BURST)) * TOKEN, last_ns: now_ns }
    }

    /// Takes one token at `now_ns` if there is one. `rate` and `burst` are
    /// read on each call (parameters may change); both are clamped to
    /// [`MAX_RATE`] and [`MAX_BURST`]. Time going backwards adds nothing.
    pub fn admit(&mut self, now_ns: u64, rate: u32, burst: u32) -> bool {
        let cap = u64::from(burst.min(MAX_BURST)) * TOKEN;
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let add = dt.saturating_mul(u64::from(rate.min(MAX_RATE)));
        self.tokens = self.tokens.saturating_add(add).min(cap);
        if self.tokens >= TOKEN {
            self.tokens -= TOKEN;
            true
        } else {
            false
        }
    }
}

/// Token buckets per signal source: a source's keyed hash (the glue's
/// SipHash under a secret drawn at load, so no sender can choose its
/// collisions) picks one of [`SOURCE_BUCKETS`], so one switch, or one
/// forger that passed every other check, drains its own bucket and not
/// the others'. Sources that collide share a bucket. All-zero is the
/// initial state (each bucket fills on first use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceBuckets {
    b: [TokenBucket; SOURCE_BUCKETS],
}

/// Buckets per netns ([`SourceBuckets`]).
pub const SOURCE_BUCKETS: usize = 64;

impl Default for SourceBuckets {
    fn default() -> Self {
        Self { b: [TokenBucket::default(); SOURCE_BUCKETS] }
    }
}

impl SourceBuckets {
    /// Takes one token of the bucket of the source whose hash is `key`
    /// ([`TokenBucket::admit`]).
    pub fn admit(&mut self, key: u64, now_ns: u64, rate: u32, burst: u32) -> bool {
        let i = (key % SOURCE_BUCKETS as u64) as usize;
        self.b.get_mut(i).is_some_and(|b| b.admit(now_ns, rate, burst))
    }
}

/// Signals a flow remembers to refuse replays ([`ReplayFilter`]).
pub const REPLAY_SLOTS: usize = 8;

/// The last [`REPLAY_SLOTS`] signals a TCP flow took, by (switch, port,
/// sequence number): a switch signals a data packet once, so the same
/// three again are a replay ([`Reject::Duplicate`]). UDP signals carry no
/// sequence number and are not filtered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayFilter {
    seen: [(u32, u16, u32); REPLAY_SLOTS],
    n: u8,
    next: u8,
}

impl ReplayFilter {
    /// Records `s`; false if the flow took it already.
    pub fn first_time(&mut self, s: &Signal) -> bool {
        if s.l4proto != IPPROTO_TCP {
            return true;
        }
        let id = (s.switch_id, s.port_id, s.seq);
        if self.seen.get(..usize::from(self.n)).unwrap_or(&[]).contains(&id) {
            return false;
        }
        if let Some(slot) = self.seen.get_mut(usize::from(self.next)) {
            *slot = id;
        }
        self.next = self.next.wrapping_add(1) % REPLAY_SLOTS as u8;
        self.n = self.n.saturating_add(1).min(REPLAY_SLOTS as u8);
        true
    }
}

/// Whether `seq` lies in `[snd_una, snd_nxt)`, modulo 2^32 (TCP's
/// `between(seq, snd_una, snd_nxt - 1)`): a segment the flow sent and that
/// is not yet acknowledged.
pub fn seq_in_window(seq: u32, snd_una: u32, snd_nxt: u32) -> bool {
    seq.wrapping_sub(snd_una) < snd_nxt.wrapping_sub(snd_una)
}

/// Largest accepted `max_pause_us`.
pub const MAX_PAUSE_US: u32 = 1_000_000;

/// Largest accepted `max_hops`: a 5-stage Clos has at most 4 routers
/// between a switch and a host.
pub const MAX_HOPS: u32 = 8;

/// A host's SFC settings (module parameters), as validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Off by default.
    pub enabled: bool,
    /// Sources accepted.
    pub acl: Acl,
    /// Devices signals are accepted on (`sfc_ifaces`).
    pub ifaces: IfaceList,
    /// Signals per second one source may send, and the burst.
    pub rate: u32,
    #[allow(missing_docs)]
    pub burst: u32,
    /// Longest pause applied, µs (`1..=MAX_PAUSE_US`).
    pub max_pause_us: u32,
    /// Signals for flows other than hpcc's (TCP flows of other congestion
    /// controls, UDP flows) are acted on too (`sfc_scope` 1), held at
    /// egress ([`PauseTable`]); else refused as [`Reject::NoFlow`].
    pub scope_all: bool,
    /// Routers a signal may have crossed on its way from the switch that
    /// sent it (`sfc_max_hops`, `0..=MAX_HOPS`): its TTL / hop limit must
    /// be at least [`TTL`] less this. 0, the default, accepts only the
    /// adjacent switch (GTSM, RFC 5082); a leaf-spine fabric whose
    /// receivers' ToRs signal senders under other ToRs needs 2, a 3-tier
    /// fat tree 4.
    pub max_hops: u8,
}

/// The IP version of a signal's family.
pub(super) fn version_of(s: &Signal) -> u8 {
    if s.saddr.is_ipv4() {
        4
    } else {
        6
    }
}

impl Rules {
    /// Step 2, everything a signal must pass before the glue looks for its
    /// flow, in order: SFC enabled, where it came from
    /// ([`Rules::check_sender`]; first, so that a host's own datagram, whose
    /// checksum loopback may leave unfinished, counts as what it is), the
    /// datagram's UDP length and checksum, a source
    /// that is not one of the host's own addresses (`is_local`, asked
    /// only of a signal that passed the rest: the kernel's look-up costs
    /// more), a token of the source's bucket (`take_token`, so refused
    /// senders never spend one), the whole header, of the outer IP
    /// version's family.
    pub fn admit(
        &self,
        i: &Incoming<'_>,
        arrival: &Arrival,
        is_local: impl FnOnce(IpAddr) -> bool,
        take_token: impl FnOnce(IpAddr) -> bool,
    ) -> Result<Signal, Reject> {
        if !self.enabled {
            return Err(Reject::Disabled);
        }
        self.check_sender(i, arrival)?;
        if !i.udp_ok {
            return Err(Reject::BadUdp);
        }
        if is_local(i.src) {
            return Err(Reject::LocalSource);
        }
        if !take_token(i.src) {
            return Err(Reject::RateLimited);
        }
        let s = parse(i.payload)?;
        if version_of(&s) != i.version {
            return Err(Reject::BadHeader);
        }
        Ok(s)
    }

    /// Where a signal came from: a unicast source of its IP version, not
    /// the loopback device (this host), not out of a tunnel (the remote
    /// end chose the TTL), a device in `sfc_ifaces` (the fabric), TTL /
    /// hop limit [`TTL`] (the adjacent switch; [`Rules::max_hops`] lower
    /// when the operator allows signals from further), the source in the access
    /// list of its own family.
    pub fn check_sender(&self, i: &Incoming<'_>, a: &Arrival) -> Result<(), Reject> {
        if !unicast_source(i.src) || (i.src.is_ipv4() != (i.version == 4)) {
            Err(Reject::BadSource)
        } else if a.loopback {
            Err(Reject::Loopback)
        } else if a.tunneled {
            Err(Reject::Tunnel)
        } else if !self.ifaces.contains(&a.ifname) {
            Err(Reject::Iface)
        } else if !self.ttl_ok(i.ttl) {
            Err(Reject::Ttl)
        } else if !self.acl.contains(i.src) {
            Err(Reject::Acl)
        } else {
            Ok(())
        }
    }

    /// Whether a signal that arrived with `ttl` came from no further than
    /// [`Rules::max_hops`] routers away.
    pub fn ttl_ok(&self, ttl: u8) -> bool {
        ttl >= TTL.saturating_sub(self.max_hops.min(MAX_HOPS as u8))
    }

    /// Step 4, for the flow the signal names: a TCP signal's `seq` must lie
    /// in `[snd_una, snd_nxt)` (a UDP flow has no window: `tcp_window`
    /// `None`). Returns the pause to apply, ns, clamped to `max_pause_us`.
    pub fn check_flow(&self, s: &Signal, tcp_window: Option<(u32, u32)>) -> Result<u64, Reject> {
        match (s.l4proto, tcp_window) {
            (IPPROTO_TCP, Some((una, nxt))) if seq_in_window(s.seq, una, nxt) => {}
            (IPPROTO_TCP, _) => return Err(Reject::SeqOutOfWindow),
            _ => {}
        }
        Ok(u64::from(s.pause_ns).min(u64::from(self.max_pause_us.min(MAX_PAUSE_US)) * 1000))
    }

    /// Step 4 for a flow hpcc does not control (`tcp_window` the TCP
    /// socket's, `None` for UDP): refused unless [`Rules::scope_all`], else
    /// as [`Rules::check_flow`].
    pub fn check_other_flow(&self, s: &Signal, tcp_window: Option<(u32, u32)>) -> Result<u64, Reject> {
        if !self.scope_all {
            return Err(Reject::NoFlow);
        }
        self.check_flow(s, tcp_window)
    }
}
