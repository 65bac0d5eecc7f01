//! `sfc_scope` 1: other flows held at egress, keyed by [`FlowKey`] in a
//! lock-free [`PauseTable`].

use super::*;

/// A flow as the egress hook sees an outgoing packet: L4 protocol,
/// addresses (IPv4 as IPv4-mapped) and ports, local end first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowKey {
    /// [`IPPROTO_TCP`] or [`IPPROTO_UDP`].
    pub proto: u8,
    /// Local address.
    pub saddr: [u8; 16],
    /// Peer address.
    pub daddr: [u8; 16],
    /// Local port.
    pub sport: u16,
    /// Peer port.
    pub dport: u16,
}

pub(super) fn mapped16(a: IpAddr) -> [u8; 16] {
    mapped(a).to_be_bytes()
}

impl FlowKey {
    /// The flow a signal names (its data packet's 5-tuple).
    pub fn of_signal(s: &Signal) -> Self {
        Self { proto: s.l4proto, saddr: mapped16(s.saddr), daddr: mapped16(s.daddr), sport: s.sport, dport: s.dport }
    }
}

/// Bytes of an outgoing packet [`egress_key`] reads: the IPv6 header (or
/// an IPv4 one with the longest options) and the L4 ports.
pub const EGRESS_KEY_LEN: usize = 64;

/// The flow of an outgoing packet `pkt` (from its IP header): TCP or UDP
/// over IPv4 (the first fragment, or none) or IPv6 without extension
/// headers; `None` for anything else.
pub fn egress_key(pkt: &[u8]) -> Option<FlowKey> {
    let (proto, saddr, daddr, l4) = match pkt.first()? >> 4 {
        4 => {
            let ihl = usize::from(pkt.first()? & 0xf) * 4;
            // A later fragment has no ports.
            if ihl < IPV4_LEN || be16(pkt, 6)? & 0x1fff != 0 {
                return None;
            }
            let s: [u8; 4] = pkt.get(12..16)?.try_into().ok()?;
            let d: [u8; 4] = pkt.get(16..20)?.try_into().ok()?;
            (*pkt.get(9)?, mapped16(IpAddr::V4(s.into())), mapped16(IpAddr::V4(d.into())), ihl)
        }
        6 => (*pkt.get(6)?, addr16(pkt, 8)?, addr16(pkt, 24)?, IPV6_LEN),
        _ => return None,
    };
    if proto != IPPROTO_TCP && proto != IPPROTO_UDP {
        return None;
    }
    Some(FlowKey { proto, saddr, daddr, sport: be16(pkt, l4)?, dport: be16(pkt, l4 + 2)? })
}

impl FlowKey {
    /// The key as bytes, for a keyed hash ([`PauseTable`]).
    pub fn bytes(&self) -> [u8; 37] {
        let mut b = [0u8; 37];
        b[0] = self.proto;
        b[1..17].copy_from_slice(&self.saddr);
        b[17..33].copy_from_slice(&self.daddr);
        b[33..35].copy_from_slice(&self.sport.to_be_bytes());
        b[35..37].copy_from_slice(&self.dport.to_be_bytes());
        b
    }

    fn words(&self) -> [u64; KEY_WORDS] {
        let w = |a: &[u8; 16], hi: bool| {
            let x = u128::from_be_bytes(*a);
            if hi {
                (x >> 64) as u64
            } else {
                x as u64
            }
        };
        let ports = (u64::from(self.proto) << 32) | (u64::from(self.sport) << 16) | u64::from(self.dport);
        // Bit 63 marks a used slot: an all-zero key never matches one.
        [ports | 1 << 63, w(&self.saddr, true), w(&self.saddr, false), w(&self.daddr, true), w(&self.daddr, false)]
    }
}

/// Flows a netns holds paused at egress at once ([`PauseTable`]).
pub const PAUSE_SLOTS: usize = 64;
/// Slots a flow's key may occupy, from its hash on.
pub const PAUSE_PROBE: usize = 8;
/// Live pauses one source may hold in a netns's table.
pub const PAUSES_PER_SOURCE: usize = PAUSE_SLOTS / 4;
pub(super) const KEY_WORDS: usize = 5;

/// One slot of a [`PauseTable`]: a sequence count (odd while a writer
/// changes the slot), the key, the deadline, and what only writers read.
#[derive(Debug, Default)]
pub(super) struct PauseSlot {
    seq: AtomicU32,
    key: [AtomicU64; KEY_WORDS],
    until: AtomicU64,
    /// The hash of the source that set the pause (the per-source quota).
    source: AtomicU64,
    /// The last TCP signal taken: switch << 16 | port, and its sequence
    /// number + 1 (0: none) ([`Reject::Duplicate`]).
    last_switch_port: AtomicU64,
    last_seq: AtomicU64,
}

/// Pauses of flows the module does not control (`sfc_scope` 1: other
/// congestion controls, UDP), held at egress: the hook stamps a departure
/// time no earlier than the deadline on each of their packets, and sch_fq
/// holds them until then. [`PAUSE_SLOTS`] slots; a flow's key lives in one
/// of [`PAUSE_PROBE`] slots from its keyed hash (which no sender can
/// choose), until its deadline.
///
/// # Concurrency
///
/// Readers ([`PauseTable::until`], the egress hook, any context) take no
/// lock and never wait: each slot has a sequence count, odd while a writer
/// changes it, and a reader that sees a slot change under it tries once
/// more and then treats the slot as not paused (the packet leaves
/// unheld). Writers ([`PauseTable::insert`]) must be serialised by the
/// caller, with bottom halves off (a reader in softirq on the writer's
/// CPU then never interrupts a write in progress). All fields are
/// atomics, so a broken caller can confuse the table but never cause
/// undefined behaviour.
#[derive(Debug)]
pub struct PauseTable {
    e: [PauseSlot; PAUSE_SLOTS],
    latest: AtomicU64,
}

impl Default for PauseTable {
    fn default() -> Self {
        Self { e: core::array::from_fn(|_| PauseSlot::default()), latest: AtomicU64::new(0) }
    }
}

impl PauseTable {
    fn slots(&self, hash: u64) -> impl Iterator<Item = &PauseSlot> {
        let start = (hash % PAUSE_SLOTS as u64) as usize;
        (0..PAUSE_PROBE).filter_map(move |j| self.e.get(start.wrapping_add(j) % PAUSE_SLOTS))
    }

    /// Holds flow `k` (keyed hash `hash`) until `until` (ns; a later
    /// deadline of the same flow extends it), for the signal `s` from the
    /// source whose hash is `source`. Refused: a TCP signal the flow took
    /// already ([`Reject::Duplicate`]), a source that holds
    /// [`PAUSES_PER_SOURCE`] live pauses already ([`Reject::SourceQuota`]),
    /// no free slot among the key's ([`Reject::TableFull`]); no pause is
    /// ever shortened. Writers must be serialised (see the type).
    pub fn insert(&self, k: &FlowKey, hash: u64, until: u64, now: u64, source: u64, s: &Signal) -> Result<(), Reject> {
        let words = k.words();
        let live_same = self.slots(hash).find(|e| e.until.load(Relaxed) > now && Self::key_of(e) == words);
        let slot = match live_same {
            Some(e) => {
                let sp = (u64::from(s.switch_id) << 16) | u64::from(s.port_id);
                let dup = s.l4proto == IPPROTO_TCP
                    && e.last_switch_port.load(Relaxed) == sp
                    && e.last_seq.load(Relaxed) == u64::from(s.seq).wrapping_add(1);
                if dup {
                    return Err(Reject::Duplicate);
                }
                e
            }
            None => {
                let held = self
                    .e
                    .iter()
                    .filter(|e| e.until.load(Relaxed) > now && e.source.load(Relaxed) == source)
                    .fold(0usize, |n, _| n.saturating_add(1));
                if held >= PAUSES_PER_SOURCE {
                    return Err(Reject::SourceQuota);
                }
                self.slots(hash).find(|e| e.until.load(Relaxed) <= now).ok_or(Reject::TableFull)?
            }
        };
        let fresh = live_same.is_none();
        let seq = slot.seq.load(Relaxed);
        slot.seq.store(seq.wrapping_add(1), Relaxed);
        fence(Release);
        if fresh {
            for (d, w) in slot.key.iter().zip(words) {
                d.store(w, Relaxed);
            }
            slot.until.store(until, Relaxed);
            slot.source.store(source, Relaxed);
        } else {
            slot.until.fetch_max(until, Relaxed);
        }
        if s.l4proto == IPPROTO_TCP {
            slot.last_switch_port.store((u64::from(s.switch_id) << 16) | u64::from(s.port_id), Relaxed);
            slot.last_seq.store(u64::from(s.seq).wrapping_add(1), Relaxed);
        } else {
            slot.last_seq.store(0, Relaxed);
        }
        slot.seq.store(seq.wrapping_add(2), Release);
        self.latest.fetch_max(until, Release);
        Ok(())
    }

    fn key_of(e: &PauseSlot) -> [u64; KEY_WORDS] {
        core::array::from_fn(|i| e.key.get(i).map_or(0, |w| w.load(Relaxed)))
    }

    /// The deadline of `k` (keyed hash `hash`) if it is paused at `now`.
    /// Lock-free and bounded: see the type.
    pub fn until(&self, k: &FlowKey, hash: u64, now: u64) -> Option<u64> {
        let latest = self.latest.load(Acquire);
        if latest <= now {
            // All over: back to the fast path, unless a new pause came in
            // meanwhile (it stored a later deadline).
            if latest != 0 {
                let _ = self.latest.compare_exchange(latest, 0, Relaxed, Relaxed);
            }
            return None;
        }
        let words = k.words();
        for e in self.slots(hash) {
            for _ in 0..2 {
                let s1 = e.seq.load(Acquire);
                if s1 & 1 == 1 {
                    core::hint::spin_loop();
                    continue;
                }
                let key = Self::key_of(e);
                let until = e.until.load(Relaxed);
                fence(Acquire);
                if e.seq.load(Relaxed) != s1 {
                    continue;
                }
                if key == words && until > now {
                    return Some(until);
                }
                break;
            }
        }
        None
    }

    /// The latest deadline held: nothing is paused at or after it (the
    /// hook's check before it reads the table; 0: never anything).
    pub fn latest(&self) -> u64 {
        self.latest.load(Acquire)
    }

    /// Whether anything may be paused: one atomic load (the egress hook's
    /// fast path, before it reads the clock or the packet); false again
    /// once [`PauseTable::until`] has seen the last pause end.
    pub fn marked(&self) -> bool {
        self.latest.load(Acquire) != 0
    }
}
