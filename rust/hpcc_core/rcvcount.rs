//! The receiver's count of hpcc flows (draft-miao-rtgwg-hpccplus,
//! section 6.3.2): how many flows sent this host probes recently, the N
//! of a W_ai that adapts to the flows sharing the receiver's last hop.
//! Each response carries it (`wire::RCV_FLOWS_OFF`); a sender with
//! `wai_path` 1 sizes W_ai by it (`control::path_wai_bytes`).
//!
//! One per network namespace, at [`SCALES`] time scales: the windows are
//! `rcv_count_us` and its eighths, sixty-fourths, ... (at least
//! [`MIN_WINDOW_NS`]). At each scale, two bitmaps of [`BITS`] bits, one per
//! window (epoch `now / window`); a probe's flow sets bit `hash % BITS` in
//! its epoch's map at every scale, and a count is the population of the
//! current and the previous epoch's maps of one scale together, so a flow
//! that probes at least once per window is counted, and one that stopped
//! is forgotten after one to two windows. The window must cover the
//! senders' probe interval (their smoothed RTT): a flow that probes less
//! often is missed in some windows. Collisions are corrected as linear
//! counting does (`-m·ln(1 - bits/m)`, to third order: within 2% of it up
//! to 2,000 flows); the standard error is below 1% up to 200 flows.
//!
//! Which scale answers a probe: a probe may carry its sender's probe
//! spacing (`wire::PROBE_SPACING_OFF`, `rcv_count_scaled`); the count is
//! then over the shortest window that spans two spacings of the probe's
//! own and of every probe answered in the last one to two `rcv_count_us`
//! windows ([`scale_for`]; a probe that said none counts as the longest
//! spacing), so that a receiver whose flows probe at different paces
//! counts each flow over a window that holds the slowest one's probes. A
//! probe that says no spacing is counted over `rcv_count_us`. Why: one
//! window for every sender, sized for the slowest, counts every flow of
//! the last 100-200 ms, and where short flows come and go that is several
//! times the flows present: in the VM's flow completion mix (one bulk flow
//! and one short flow at a time, a 2 ms RTT) the responses said 4.1 on
//! average (1 to 9) where one or two flows ran. A spacing from the wire
//! chooses the scale of its own answer and, for one to two base windows,
//! the shortest scale of every answer at this receiver: a long one (a lie
//! included) brings them back to `rcv_count_us`, a short one cannot pull
//! any below the longest spacing heard.
//!
//! Lock-free and allocation-free: a probe costs one atomic OR per scale,
//! a load (and rarely a `fetch_max`) of the base scale's longest spacing
//! and a population count of 128 words. The CPU that moves a scale's
//! epoch empties the map it reuses and then tags it with the new epoch;
//! until then readers skip it. A bit another CPU sets into that map just
//! before it is emptied is lost until the flow's next probe (a count low
//! by one for a window at worst); a spacing lost so leaves a faster flow
//! on its shorter scale until the slower flow's next probe.

use core::sync::atomic::{AtomicU64, Ordering::*};

/// Bits per map.
pub const BITS: usize = 4096;
const WORDS: usize = BITS / 64;

/// Time scales: windows of `rcv_count_us` divided by 1, 8, 64 and 512.
pub const SCALES: usize = 4;
/// Each scale's window is the one before divided by 2^this.
pub const SCALE_SHIFT: u32 = 3;
/// The shortest window of any scale, ns.
pub const MIN_WINDOW_NS: u64 = 10_000;
/// A scale answers a probe if its window spans this many of the probe's
/// spacings: a flow's next probe then lands in the current or the
/// previous window even when its spacing varies by half.
pub const SPACINGS_PER_WINDOW: u64 = 2;

/// The window of scale `s` for the base window `window_ns`.
pub fn scale_window_ns(window_ns: u64, s: usize) -> u64 {
    let shift = SCALE_SHIFT.saturating_mul(s as u32);
    window_ns.checked_shr(shift).unwrap_or(0).max(MIN_WINDOW_NS).min(window_ns.max(1))
}

/// The scale that counts for a probe whose sender probes every
/// `spacing_us` (0: not said): the shortest window of at least
/// [`SPACINGS_PER_WINDOW`] spacings; the base window (scale 0) if none is
/// that short, or the spacing is not said.
pub fn scale_for(window_ns: u64, spacing_us: u16) -> usize {
    if spacing_us == 0 {
        return 0;
    }
    let need = u64::from(spacing_us).saturating_mul(1000).saturating_mul(SPACINGS_PER_WINDOW);
    (0..SCALES).rev().find(|&s| scale_window_ns(window_ns, s) >= need).unwrap_or(0)
}

/// The count's state at every scale (all-zero is a valid empty one).
pub struct FlowCount {
    scales: [Scale; SCALES],
}

/// A spacing as the receiver records it: one not said as the longest.
fn recorded(spacing_us: u16) -> u64 {
    match spacing_us {
        0 => u64::from(u16::MAX),
        s => u64::from(s),
    }
}

impl Default for FlowCount {
    fn default() -> Self {
        Self::new()
    }
}

impl FlowCount {
    /// An empty count.
    pub const fn new() -> Self {
        Self { scales: [Scale::new(), Scale::new(), Scale::new(), Scale::new()] }
    }

    /// The flows counted at `now_ns` with the flow of `hash` among them,
    /// for a probe whose sender probes every `spacing_us` (0: not said),
    /// over the scale of the longer of it and the longest spacing answered
    /// in the last one to two base windows ([`scale_for`]); `window_ns`
    /// (> 0) is `rcv_count_us`. Read-only: see [`FlowCount::insert`].
    pub fn count_with(&self, now_ns: u64, window_ns: u64, spacing_us: u16, hash: u32) -> u16 {
        let s = match spacing_us {
            0 => 0,
            own => {
                let seen = self.scales.first().map_or(0, |c| c.longest_spacing(now_ns, window_ns));
                scale_for(window_ns, u16::try_from(seen).unwrap_or(u16::MAX).max(own))
            }
        };
        self.scales.get(s).map_or(0, |c| c.count_with(now_ns, scale_window_ns(window_ns, s), hash))
    }

    /// Records an answered probe of the flow of `hash`, which said
    /// `spacing_us` (0: none), at `now_ns` at every scale, and its spacing
    /// at the base scale, the only one whose spacings are read.
    pub fn insert(&self, now_ns: u64, window_ns: u64, spacing_us: u16, hash: u32) {
        for (s, c) in self.scales.iter().enumerate() {
            let spacing = if s == 0 { recorded(spacing_us) } else { 0 };
            c.insert(now_ns, scale_window_ns(window_ns, s), spacing, hash);
        }
    }
}

/// One scale's state (all-zero is a valid empty one).
struct Scale {
    /// The newest epoch (`now / window`) a probe was recorded in.
    epoch: AtomicU64,
    /// The epoch each map holds: map `e & 1` holds epoch `e`.
    tags: [AtomicU64; 2],
    maps: [[AtomicU64; WORDS]; 2],
    /// The longest spacing recorded into each map, us (the base scale's
    /// only; 0 at the others).
    spacings: [AtomicU64; 2],
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

impl Scale {
    /// An empty scale.
    // Array repeats of a `const` item: each element is a fresh atomic (the
    // idiom before inline `const` blocks, which the kernel's minimum Rust
    // predates).
    #[allow(clippy::declare_interior_mutable_const)]
    const fn new() -> Self {
        const Z: AtomicU64 = AtomicU64::new(0);
        const M: [AtomicU64; WORDS] = [Z; WORDS];
        Self { epoch: AtomicU64::new(0), tags: [Z; 2], maps: [M; 2], spacings: [Z; 2] }
    }

    /// Empties the map of epoch `e` and tags it with `e`.
    fn reuse(&self, e: u64) {
        let i = (e & 1) as usize;
        if let (Some(m), Some(t), Some(sp)) = (self.maps.get(i), self.tags.get(i), self.spacings.get(i)) {
            m.iter().for_each(|w| w.store(0, Relaxed));
            sp.store(0, Relaxed);
            t.store(e, Release);
        }
    }

    /// Which maps hold this epoch or the one before at `now_ns`; a map
    /// still tagged with an older epoch is stale, or being emptied for
    /// reuse.
    fn live(&self, now_ns: u64, window_ns: u64) -> [bool; 2] {
        let e = now_ns / window_ns.max(1);
        self.tags.each_ref().map(|t| t.load(Acquire).saturating_add(1) >= e)
    }

    /// The longest spacing recorded in this epoch and the one before, us
    /// (0: none).
    fn longest_spacing(&self, now_ns: u64, window_ns: u64) -> u64 {
        let live = self.live(now_ns, window_ns);
        self.spacings.iter().zip(live).filter(|(_, on)| *on).map(|(s, _)| s.load(Relaxed)).max().unwrap_or(0)
    }

    /// The flows counted at `now_ns` with the flow of `hash` among them
    /// (`window_ns` > 0): the maps of this epoch and the one before.
    /// Read-only: see [`Scale::insert`].
    fn count_with(&self, now_ns: u64, window_ns: u64, hash: u32) -> u16 {
        let live = self.live(now_ns, window_ns);
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

    /// Records a probe of the flow of `hash` that said `spacing_us` at
    /// `now_ns`.
    fn insert(&self, now_ns: u64, window_ns: u64, spacing_us: u64, hash: u32) {
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
        // A read first: the spacing rarely grows, and a plain load keeps
        // the line shared where fetch_max would take it exclusive.
        if let Some(s) = self.spacings.get((e & 1) as usize) {
            if s.load(Relaxed) < spacing_us {
                s.fetch_max(spacing_us, Relaxed);
            }
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
        let c = Scale::new();
        let t0 = 5 * W;
        for i in 0..4 {
            c.insert(t0 + u64::from(i), W, 0, hash(i));
        }
        // A flow already counted is not counted twice; a new one adds one.
        assert_eq!(c.count_with(t0 + 10, W, hash(0)), 4);
        assert_eq!(c.count_with(t0 + 10, W, hash(99)), 5);
        // Next window: the previous one still counts.
        c.insert(t0 + W, W, 0, hash(0));
        assert_eq!(c.count_with(t0 + W + 1, W, hash(0)), 4);
        // Two windows on, only flows that probed in the last window count.
        c.insert(t0 + 2 * W, W, 0, hash(0));
        assert_eq!(c.count_with(t0 + 2 * W + 1, W, hash(0)), 1);
        // After a silence of more than a window, nothing is left.
        assert_eq!(c.count_with(t0 + 5 * W, W, hash(7)), 1);
        c.insert(t0 + 5 * W, W, 0, hash(7));
        assert_eq!(c.count_with(t0 + 5 * W, W, hash(7)), 1);
    }

    #[test]
    fn many_flows_are_counted_within_two_standard_errors() {
        for n in [1u32, 4, 16, 64, 300, 1000, 2000] {
            let c = Scale::new();
            for i in 0..n {
                c.insert(W + u64::from(i), W, 0, hash(i + 1000 * n));
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
        let c = Scale::new();
        c.insert(4 * W, W, 0, hash(1));
        c.insert(5 * W, W, 0, hash(2));
        // Epoch 6 began on another CPU, which has not emptied map 0 (still
        // epoch 4's) yet: a reader skips it.
        c.epoch.store(6, Release);
        assert_eq!(c.count_with(6 * W, W, hash(3)), 2, "epoch 5's flow and this one");
        c.reuse(6);
        assert_eq!(c.count_with(6 * W, W, hash(3)), 2);
    }

    #[test]
    fn scales_fit_the_probes_spacing() {
        const BASE: u64 = 100_000_000;
        assert_eq!(core::array::from_fn::<u64, SCALES, _>(|s| scale_window_ns(BASE, s)), [BASE, 12_500_000, 1_562_500, 195_312]);
        // Not said: the base window, as before probes carried a spacing.
        assert_eq!(scale_for(BASE, 0), 0);
        // The VM's 2 ms path (smoothed RTT 2.2 ms): 12.5 ms windows.
        assert_eq!(scale_for(BASE, 2_200), 1);
        // A 10 us datacenter path: 195 us, about 20 RTTs.
        assert_eq!(scale_for(BASE, 12), 3);
        // A spacing longer than half the base window: the base window.
        assert_eq!(scale_for(BASE, u16::MAX), 0);
        assert_eq!(scale_for(BASE, 50_000), 0);
        assert_eq!(scale_for(BASE, 6_250), 1);
        assert_eq!(scale_for(BASE, 6_251), 0);
        // The shortest window is MIN_WINDOW_NS, and none exceeds the base.
        assert_eq!(core::array::from_fn::<u64, SCALES, _>(|s| scale_window_ns(100_000, s)), [100_000, 12_500, 10_000, 10_000]);
        assert_eq!(scale_window_ns(5_000, 3), 5_000);
        assert_eq!(scale_window_ns(0, 0), 1);
    }

    /// The flow completion mix as the receiver sees it: a bulk flow that
    /// probes every 2.2 ms and short flows one after another, each 10 ms
    /// long with 10 ms between them. The base window counts the short
    /// flows of the last 100-200 ms; the bulk flow's own scale, those of
    /// the last 12.5-25 ms.
    #[test]
    fn flows_that_left_are_forgotten_at_the_probes_scale() {
        const BASE: u64 = 100_000_000;
        const SPACING_US: u16 = 2_200;
        let c = FlowCount::new();
        let bulk = hash(0);
        let (mut worst_base, mut worst_scaled) = (0, 0);
        let mut t = 0u64;
        while t < 1_000_000_000 {
            c.insert(t, BASE, SPACING_US, bulk);
            // The short flow of this 20 ms period, if one runs now.
            let (k, phase) = (t / 20_000_000, t % 20_000_000);
            if phase < 10_000_000 {
                c.insert(t + 1, BASE, SPACING_US, hash(1 + k as u32));
            }
            if t > 300_000_000 {
                worst_base = worst_base.max(c.count_with(t + 2, BASE, 0, bulk));
                worst_scaled = worst_scaled.max(c.count_with(t + 2, BASE, SPACING_US, bulk));
            }
            t += u64::from(SPACING_US) * 1000;
        }
        // Two flows at a time: at most the bulk flow, the current short
        // flow and the one before it at the probe's scale.
        assert!(worst_scaled <= 3, "scaled: {worst_scaled}");
        assert!(worst_base >= 6, "base: {worst_base}");
    }

    /// A receiver whose flows probe at different paces: the fast flow's
    /// count holds the slow one while it probes, and its own scale once
    /// the slow one has been gone one to two base windows. A probe that
    /// says no spacing counts as the slowest.
    #[test]
    fn the_slowest_spacing_answered_sets_the_scale() {
        const BASE: u64 = 100_000_000;
        let c = FlowCount::new();
        let (fast, slow) = (hash(1), hash(2));
        let mut t = BASE;
        c.insert(t - 1, BASE, 15_000, slow);
        while t < 2 * BASE {
            c.insert(t, BASE, 2_200, fast);
            if (t / 2_200_000) % 7 == 0 {
                c.insert(t + 1, BASE, 15_000, slow);
            }
            assert_eq!(c.count_with(t + 2, BASE, 2_200, fast), 2, "at {t}");
            t += 2_200_000;
        }
        // The slow flow left at 2 BASE: its spacing holds the base scale
        // (and the count 2) through the next base window, and from the
        // one after, the fast flow's own scale counts it alone.
        let mut t = 2 * BASE;
        while t < 4 * BASE {
            c.insert(t, BASE, 2_200, fast);
            let want = if t < 3 * BASE { 2 } else { 1 };
            assert_eq!(c.count_with(t + 2, BASE, 2_200, fast), want, "at {t}");
            t += 2_200_000;
        }
        // A probe that said none: the base window for everyone.
        let d = FlowCount::new();
        d.insert(BASE, BASE, 0, hash(3));
        d.insert(BASE + 50_000_000, BASE, 2_200, fast);
        assert_eq!(d.count_with(BASE + 60_000_000, BASE, 2_200, fast), 2);
        assert_eq!(scale_for(BASE, u16::MAX), 0);
    }

    #[test]
    fn every_scale_counts_a_probe() {
        let c = FlowCount::new();
        c.insert(1_000_000_000, W, 1, hash(5));
        for spacing in [0u16, 1, 100, 1_000, 5_000] {
            assert_eq!(c.count_with(1_000_000_001, W, spacing, hash(6)), 2, "spacing {spacing}");
        }
    }

    #[test]
    fn a_late_clock_counts_in_the_newest_window() {
        let c = Scale::new();
        c.insert(3 * W, W, 0, hash(1));
        // A CPU whose clock reads an earlier window.
        c.insert(2 * W + 5, W, 0, hash(2));
        assert_eq!(c.count_with(3 * W + 6, W, hash(1)), 2);
    }
}
