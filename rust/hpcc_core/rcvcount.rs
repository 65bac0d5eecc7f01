//! The receiver's count of hpcc flows (draft-miao-rtgwg-hpccplus,
//! section 6.3.2): how many flows sent this host probes recently, the N
//! of a W_ai that adapts to the flows sharing the receiver's last hop.
//! Each response carries it (`wire::RCV_FLOWS_OFF`); a sender with
//! `wai_path` 1 sizes W_ai by it (`control::path_wai_bytes`).
//!
//! One per network namespace: two bitmaps of [`BITS`] bits, one per
//! window of `rcv_count_us` (epoch `now / window`); a probe's flow sets
//! bit `hash % BITS` in its epoch's map, and the count is the population
//! of the current and the previous epoch's maps together, so a flow that
//! probes at least once per window is counted, and one that stopped is
//! forgotten after one to two windows. The window must cover the senders'
//! probe interval (their smoothed RTT): a flow that probes less often is
//! missed in some windows. Collisions are corrected as linear counting
//! does (`-m·ln(1 - bits/m)`, to third order: within 2% of it up to 2,000
//! flows); the standard error is below 1% up to 200 flows.
//!
//! Lock-free and allocation-free: a probe costs one atomic OR and a
//! population count of 128 words. The CPU that moves the epoch empties the
//! map it reuses and then tags it with the new epoch; until then readers
//! skip it. A bit another CPU sets into that map just before it is emptied
//! is lost until the flow's next probe (a count low by one for a window at
//! worst).

use core::sync::atomic::{AtomicU64, Ordering::*};

/// Bits per map.
pub const BITS: usize = 4096;
const WORDS: usize = BITS / 64;

/// The count's state (all-zero is a valid empty one).
pub struct FlowCount {
    /// The newest epoch (`now / window`) a probe was recorded in.
    epoch: AtomicU64,
    /// The epoch each map holds: map `e & 1` holds epoch `e`.
    tags: [AtomicU64; 2],
    maps: [[AtomicU64; WORDS]; 2],
}

impl Default for FlowCount {
    fn default() -> Self {
        Self::new()
    }
}

/// The flows behind a population of `bits` set bits: linear counting's
/// `-m·ln(1 - bits/m)` to third order, `b + b²/2m + b³/3m²` (within 2%
/// of it up to 2,000 flows).
fn corrected(bits: u32) -> u16 {
    let (b, m) = (u64::from(bits.min(BITS as u32)), BITS as u64);
    let n = b + b * b / (2 * m) + b * b * b / (3 * m * m);
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The word and bit of a flow's hash.
fn bit_of(hash: u32) -> (usize, u64) {
    ((hash as usize / 64) % WORDS, 1u64 << (hash % 64))
}

impl FlowCount {
    /// An empty count.
    // Array repeats of a `const` item: each element is a fresh atomic (the
    // idiom before inline `const` blocks, which the kernel's minimum Rust
    // predates).
    #[allow(clippy::declare_interior_mutable_const)]
    pub const fn new() -> Self {
        const Z: AtomicU64 = AtomicU64::new(0);
        const M: [AtomicU64; WORDS] = [Z; WORDS];
        Self { epoch: AtomicU64::new(0), tags: [Z; 2], maps: [M; 2] }
    }

    /// Empties the map of epoch `e` and tags it with `e`.
    fn reuse(&self, e: u64) {
        let i = (e & 1) as usize;
        if let (Some(m), Some(t)) = (self.maps.get(i), self.tags.get(i)) {
            m.iter().for_each(|w| w.store(0, Relaxed));
            t.store(e, Release);
        }
    }

    /// The flows counted at `now_ns` with the flow of `hash` among them
    /// (`window_ns` > 0): the maps of this epoch and the one before.
    /// Read-only: see [`FlowCount::insert`].
    pub fn count_with(&self, now_ns: u64, window_ns: u64, hash: u32) -> u16 {
        let e = now_ns / window_ns.max(1);
        // A map still tagged with an older epoch is stale, or being
        // emptied for reuse: not counted.
        let live = self.tags.each_ref().map(|t| t.load(Acquire).saturating_add(1) >= e);
        let (bit_word, bit) = bit_of(hash);
        let mut bits: u32 = 0;
        for w in 0..WORDS {
            let mut v = if w == bit_word { bit } else { 0 };
            for (m, on) in self.maps.iter().zip(live) {
                if on {
                    v |= m.get(w).map_or(0, |x| x.load(Relaxed));
                }
            }
            bits = bits.saturating_add(v.count_ones());
        }
        corrected(bits)
    }

    /// Records a probe of the flow of `hash` at `now_ns`.
    pub fn insert(&self, now_ns: u64, window_ns: u64, hash: u32) {
        let e = now_ns / window_ns.max(1);
        let seen = self.epoch.load(Acquire);
        if e > seen && self.epoch.compare_exchange(seen, e, AcqRel, Acquire).is_ok() {
            // The map of epoch `e` last held epoch `e - 2` or older. With
            // no probe in epoch `e - 1`, the other one is stale too.
            self.reuse(e);
            if e > seen.saturating_add(1) {
                self.reuse(e - 1);
            }
        }
        // A CPU whose clock reads an earlier epoch (or that lost the race
        // to a later one) counts the probe in the newest.
        let e = e.max(self.epoch.load(Acquire));
        let (w, bit) = bit_of(hash);
        if let Some(x) = self.maps.get((e & 1) as usize).and_then(|m| m.get(w)) {
            x.fetch_or(bit, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 10_000_000;

    /// A flow's hash as the module draws it (SipHash under a secret).
    fn hash(i: u32) -> u32 {
        crate::flowhash::siphash24([0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908], &i.to_le_bytes()) as u32
    }

    #[test]
    fn counts_flows_of_the_last_one_or_two_windows() {
        let c = FlowCount::new();
        let t0 = 5 * W;
        for i in 0..4 {
            c.insert(t0 + u64::from(i), W, hash(i));
        }
        // A flow already counted is not counted twice; a new one adds one.
        assert_eq!(c.count_with(t0 + 10, W, hash(0)), 4);
        assert_eq!(c.count_with(t0 + 10, W, hash(99)), 5);
        // Next window: the previous one still counts.
        c.insert(t0 + W, W, hash(0));
        assert_eq!(c.count_with(t0 + W + 1, W, hash(0)), 4);
        // Two windows on, only flows that probed in the last window count.
        c.insert(t0 + 2 * W, W, hash(0));
        assert_eq!(c.count_with(t0 + 2 * W + 1, W, hash(0)), 1);
        // After a silence of more than a window, nothing is left.
        assert_eq!(c.count_with(t0 + 5 * W, W, hash(7)), 1);
        c.insert(t0 + 5 * W, W, hash(7));
        assert_eq!(c.count_with(t0 + 5 * W, W, hash(7)), 1);
    }

    #[test]
    fn many_flows_are_counted_within_two_standard_errors() {
        for n in [1u32, 4, 16, 64, 300, 1000, 2000] {
            let c = FlowCount::new();
            for i in 0..n {
                c.insert(W + u64::from(i), W, hash(i + 1000 * n));
            }
            let got = c.count_with(W + 100_000, W, hash(1000 * n));
            let err = (f64::from(got) - f64::from(n)).abs() / f64::from(n);
            // Linear counting's standard error at 2,000 of 4,096 bits is
            // 1.3%, the third-order truncation 1.7% more.
            assert!(err <= 0.05, "{n} flows: counted {got}");
        }
    }

    #[test]
    fn a_map_being_reused_is_not_counted() {
        let c = FlowCount::new();
        c.insert(4 * W, W, hash(1));
        c.insert(5 * W, W, hash(2));
        // Epoch 6 began on another CPU, which has not emptied map 0 (still
        // epoch 4's) yet: a reader skips it.
        c.epoch.store(6, Release);
        assert_eq!(c.count_with(6 * W, W, hash(3)), 2, "epoch 5's flow and this one");
        c.reuse(6);
        assert_eq!(c.count_with(6 * W, W, hash(3)), 2);
    }

    #[test]
    fn a_late_clock_counts_in_the_newest_window() {
        let c = FlowCount::new();
        c.insert(3 * W, W, hash(1));
        // A CPU whose clock reads an earlier window.
        c.insert(2 * W + 5, W, hash(2));
        assert_eq!(c.count_with(3 * W + 6, W, hash(1)), 2);
    }
}
