//! The probe budget: what bounds the probes and responses of a host.
//!
//! At one probe per smoothed RTT, a flow at a 10 µs RTT sends 100,000
//! probes a second and its receiver answers each one; 1,000 such flows on
//! a host would ask for 10^8 of each. So each network namespace holds one
//! [`Budget`] (`probe_budget` probes a second, `response_budget` responses), and
//! every flow's probe clock also has a floor (`probe_min_interval_us`,
//! [`super::probe::interval_ns`]).
//!
//! **Which flows probe when it binds.** A flow *wants* a probe when one is
//! due, at most once per probe interval (a held probe stays due; asking
//! again at every ACK is not a new want). The namespace measures the rate
//! of wants ([`Demand`], over epochs of 8.4 ms). While the wants exceed the
//! budget, each want earns the flow `budget / demand` of a probe, and a
//! flow sends a probe for each whole one it has earned: every flow gets
//! the same fraction of what it asks for, an ACK-clocked flow a probe every
//! `demand / budget` intervals, an application that writes now and then
//! a probe every `demand / budget` writes. A token bucket (GCRA, [`Gcra`])
//! caps the total over any interval at the budget plus a burst of
//! [`BURST`], whatever the estimate says; a probe it turned away for
//! [`OWED_INTERVALS`] probe intervals comes before the others (it may use
//! three quarters of the burst, they half).
//!
//! **Pairs.** Telemetry needs two samples less than [`wire::MAX_GAP_NS`]
//! apart to measure a rate. A probe sent more than
//! [`super::probe::MAX_INTERVAL_NS`] after the flow's last one opens a
//! pair: its partner, the flow's next want, is sent on credit (the flow's
//! earnings may go below zero) and ahead of other probes (it may use the
//! whole burst of the token bucket, the others half), so that the two
//! measure a rate. The
//! controller keeps telemetry fresh for [`super::control::FRESH_INTERVALS`]
//! of the gaps the budget imposed, and otherwise runs the fallback law, as
//! it does when responses are lost.
//!
//! Lock-free, allocation-free: an admission costs a few loads, at most a
//! few compare-and-swaps of one word each (bounded; a lost race is a
//! refusal), and a division.

use core::sync::atomic::{AtomicU64, Ordering::*};

use super::probe::MAX_INTERVAL_NS;
use super::wire;

/// Probes (or responses) a [`Gcra`] lets through at once above its rate.
pub const BURST: u32 = 32;

/// An epoch of the demand meter is `2^EPOCH_SHIFT` ns (8.4 ms): hundreds
/// of wants at any budget that binds, so the rate is measured to a few
/// percent.
pub const EPOCH_SHIFT: u32 = 23;

/// One whole probe of a flow's earnings ([`FlowState`]), in millionths.
pub const UNIT: i64 = 1_000_000;

/// The most a flow may have earned and not spent: one probe (a new flow
/// starts with it, so its first telemetry is not delayed), and the most it
/// may owe: one (a pair's partner).
const MAX_CREDIT: i64 = UNIT;

/// Probe intervals after which a probe the token bucket turned away comes
/// first ([`FlowState::admit`]).
pub const OWED_INTERVALS: u64 = 8;

/// Compare-and-swap attempts before an admission gives up (counted as a
/// refusal): no CPU spins on another.
const CAS_TRIES: u32 = 4;

/// A rate limit as a generic cell rate algorithm (RFC 2697's token bucket
/// as one timestamp): `tat` is when the bucket would be full again.
/// All-zero is a full bucket.
#[derive(Debug, Default)]
pub struct Gcra {
    tat: AtomicU64,
}

impl Gcra {
    /// A full bucket.
    pub const fn new() -> Self {
        Self { tat: AtomicU64::new(0) }
    }

    /// Takes one unit at `now_ns` at `per_s` a second with `burst` units of
    /// slack; `false` if that would exceed the rate (or a race was lost
    /// [`CAS_TRIES`] times). `per_s` 0: no limit.
    pub fn take(&self, now_ns: u64, per_s: u32, burst: u32) -> bool {
        self.take_n(now_ns, per_s, burst, 1)
    }

    /// Takes `n` units at once, or none.
    pub fn take_n(&self, now_ns: u64, per_s: u32, burst: u32, n: u32) -> bool {
        if per_s == 0 {
            return true;
        }
        let t = 1_000_000_000 / u64::from(per_s);
        let cost = t.max(1).saturating_mul(u64::from(n.max(1)));
        let tolerance = t.saturating_mul(u64::from(burst));
        let mut tat = self.tat.load(Relaxed);
        for _ in 0..CAS_TRIES {
            let next = tat.max(now_ns).saturating_add(cost);
            if next.saturating_sub(now_ns) > tolerance.saturating_add(cost) {
                return false;
            }
            match self.tat.compare_exchange_weak(tat, next, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(seen) => tat = seen,
            }
        }
        false
    }
}

/// The namespace's wants per epoch (`now >> EPOCH_SHIFT`): two slots, each
/// one word (epoch in the high 32 bits, the count in the low 32), so a slot
/// and its epoch change together. All-zero is empty.
#[derive(Debug, Default)]
pub struct Demand {
    slots: [AtomicU64; 2],
}

fn epoch_of(now_ns: u64) -> u32 {
    // The low 32 bits of the epoch number (it wraps after 1.1 years).
    (now_ns >> EPOCH_SHIFT) as u32
}

impl Demand {
    /// No wants yet.
    pub const fn new() -> Self {
        Self { slots: [AtomicU64::new(0), AtomicU64::new(0)] }
    }

    /// Counts one want at `now_ns`.
    pub fn want(&self, now_ns: u64) {
        let e = epoch_of(now_ns);
        let Some(slot) = self.slots.get((e & 1) as usize) else { return };
        let mut v = slot.load(Relaxed);
        for _ in 0..CAS_TRIES {
            let next = if (v >> 32) as u32 == e {
                (v & !0xffff_ffff) | u64::from((v as u32).saturating_add(1))
            } else {
                (u64::from(e) << 32) | 1
            };
            match slot.compare_exchange_weak(v, next, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(seen) => v = seen,
            }
        }
    }

    /// Wants a second: the last whole epoch's, or this one's so far if
    /// that is more.
    pub fn per_s(&self, now_ns: u64) -> u64 {
        let e = epoch_of(now_ns);
        let most = self
            .slots
            .iter()
            .map(|s| s.load(Relaxed))
            .filter(|v| {
                let t = (v >> 32) as u32;
                t == e || t == e.wrapping_sub(1)
            })
            .map(|v| u64::from(v as u32))
            .max()
            .unwrap_or(0);
        // At most 2^32 · 10^9 < 2^64.
        most.saturating_mul(1_000_000_000) >> EPOCH_SHIFT
    }
}

/// A network namespace's budget: its probes, its responses and the demand
/// that shares them. All-zero is a new one.
#[derive(Debug, Default)]
pub struct Budget {
    /// Probes this namespace sends.
    pub probes: Gcra,
    /// Responses this namespace sends.
    pub responses: Gcra,
    /// The flows' wants.
    pub demand: Demand,
}

impl Budget {
    /// A new budget.
    pub const fn new() -> Self {
        Self { probes: Gcra::new(), responses: Gcra::new(), demand: Demand::new() }
    }

    /// Whether the namespace may answer a probe at `now_ns`, at
    /// `response_budget` (`per_s`) a second.
    pub fn take_response(&self, now_ns: u64, per_s: u32) -> bool {
        self.responses.take(now_ns, per_s, BURST)
    }
}

/// What one want earns, in millionths of a probe, when the namespace's
/// wants run at `demand` a second against a budget of `per_s`: all of
/// one while they fit.
pub fn earning(demand: u64, per_s: u32) -> i64 {
    if demand <= u64::from(per_s) {
        return UNIT;
    }
    i64::try_from(u64::from(per_s).saturating_mul(UNIT as u64) / demand.max(1)).unwrap_or(UNIT)
}

/// What the budget says to a probe that is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send it.
    Send,
    /// Not yet: the flow has not earned it.
    Wait,
    /// The namespace's budget is spent.
    OverBudget,
}

/// A flow's side of the budget (all-zero: a new flow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowState {
    /// When the flow last wanted a probe, ns (0: never).
    last_want_ns: u64,
    /// What it has earned and not spent, millionths of a probe.
    credit: i64,
    /// The last probe opened a pair ([`opens_pair`]).
    pair_open: bool,
    /// Since when the flow has earned a probe it could not send, ns (0:
    /// none).
    owed_since_ns: u64,
}

impl FlowState {
    /// A probe left at `now_ns`, the previous one at `last_probe_ns` (0:
    /// none).
    pub fn sent(&mut self, last_probe_ns: u64, now_ns: u64) {
        self.pair_open = opens_pair(last_probe_ns, now_ns);
    }

    /// The admission of a due probe at `now_ns` for this flow, whose
    /// probe interval is `interval_ns` and whose last probe left at
    /// `last_probe_ns` (0: never), under a budget of `per_s` probes a
    /// second (0: none).
    pub fn admit(&mut self, b: &Budget, per_s: u32, interval_ns: u64, last_probe_ns: u64, now_ns: u64) -> Admit {
        if per_s == 0 {
            return Admit::Send;
        }
        if self.last_want_ns == 0 {
            self.credit = MAX_CREDIT;
        }
        let new_want = self.last_want_ns == 0 || now_ns.saturating_sub(self.last_want_ns) >= interval_ns;
        if new_want {
            self.last_want_ns = now_ns;
            b.demand.want(now_ns);
        }
        let earn = earning(b.demand.per_s(now_ns), per_s);
        if new_want {
            self.credit = self.credit.saturating_add(earn).min(MAX_CREDIT);
        }
        let since = if last_probe_ns == 0 { u64::MAX } else { now_ns.saturating_sub(last_probe_ns) };
        let partner = self.pair_open && since < MAX_INTERVAL_NS;
        // While the wants fit, every one is a probe (credit stays full).
        if earn < UNIT && !partner && self.credit < UNIT {
            return Admit::Wait;
        }
        if self.owed_since_ns == 0 {
            self.owed_since_ns = now_ns;
        }
        // Three levels of the bucket: a partner may use the whole burst, a
        // probe owed for [`OWED_INTERVALS`] probe intervals three quarters
        // of it, any other half: a pair is not split by the others'
        // probes, and a flow the bucket turned away comes before those
        // that just earned a probe.
        let owed = now_ns.saturating_sub(self.owed_since_ns) >= interval_ns.saturating_mul(OWED_INTERVALS);
        let tolerance = match (partner, owed) {
            (true, _) => BURST,
            (false, true) => BURST * 3 / 4,
            (false, false) => BURST / 2,
        };
        if !b.probes.take(now_ns, per_s, tolerance) {
            return Admit::OverBudget;
        }
        self.owed_since_ns = 0;
        if earn < UNIT {
            self.credit = self.credit.saturating_sub(UNIT).max(-MAX_CREDIT);
        }
        Admit::Send
    }
}

/// Whether a probe sent at `now_ns` after one at `last_probe_ns` (0:
/// none) opens a pair: its sample has no predecessor within
/// [`MAX_INTERVAL_NS`] to measure a rate against.
pub fn opens_pair(last_probe_ns: u64, now_ns: u64) -> bool {
    last_probe_ns == 0 || now_ns.saturating_sub(last_probe_ns) >= MAX_INTERVAL_NS
}

// The pair rule needs a partner within the INT timestamps' reach.
const _: () = assert!(MAX_INTERVAL_NS < wire::MAX_GAP_NS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_caps_a_window_at_rate_plus_burst() {
        let g = Gcra::new();
        let mut n = 0u64;
        // 1 s of attempts every microsecond at 5,000/s.
        for us in 0..1_000_000u64 {
            if g.take(1_000_000_000 + us * 1000, 5000, BURST) {
                n += 1;
            }
        }
        assert!(n <= 5000 + u64::from(BURST) + 1, "{n}");
        assert!(n >= 5000, "{n}");
    }

    #[test]
    fn demand_is_a_rate_of_wants() {
        let d = Demand::new();
        let t0 = 5u64 << EPOCH_SHIFT;
        // 1,000 wants in an epoch of 8.4 ms: about 119,000 a second.
        for i in 0..1000 {
            d.want(t0 + i * 8000);
        }
        let r = d.per_s(t0 + (1 << EPOCH_SHIFT) + 10);
        assert!((110_000..=120_000).contains(&r), "{r}");
        assert_eq!(d.per_s(t0 + (2 << EPOCH_SHIFT)), 0, "forgotten two epochs on");
    }

    #[test]
    fn each_want_earns_its_share() {
        assert_eq!(earning(0, 1000), UNIT);
        assert_eq!(earning(1000, 1000), UNIT, "fits");
        assert_eq!(earning(4000, 1000), UNIT / 4);
        assert!(earning(u64::MAX, 1) >= 0);
    }
}
