// SPDX-License-Identifier: GPL-2.0

//! Which responses a sender accepts: the probes a flow has outstanding
//! ([`NonceRing`]) and the rule a response's nonce and age must pass
//! ([`NonceRing::accept`]). A response is answered by the switches and
//! the receiver, so anything on the path can forge one: only a response to
//! a probe this flow sent, not yet answered, within
//! [`MAX_RESPONSE_AGE_NS`], reaches the controller.
//!
//! The ring is lock-free: the flow's owner records probes, and the receive
//! path (any CPU) consumes slots with a compare-and-exchange.

use core::sync::atomic::{AtomicU64, Ordering::*};

/// Outstanding probes a flow remembers (an older nonce is unknown). With
/// probes at most `probe::MAX_INTERVAL_NS` (8.4 ms) apart, a response is
/// matched for RTTs up to 16 of those: 134 ms.
pub const RING: usize = 16;

/// A response older than this (since its probe left) is counted late and
/// ignored. Any RTT below it works: samples are unwrapped against each
/// other (at most `probe::MAX_INTERVAL_NS` apart), not against the probe.
pub const MAX_RESPONSE_AGE_NS: u64 = 1_000_000_000;

/// The outstanding probes: `(nonce << 32 | snd_nxt)` and send time. A slot
/// is consumed (zeroed) by the first response that matches it, so a
/// replayed response is rejected.
pub struct NonceRing {
    key: [AtomicU64; RING],
    sent_ns: [AtomicU64; RING],
}

/// What a response's nonce and age say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It answers an outstanding probe, sent recently enough: apply it.
    Accepted,
    /// It matches no outstanding probe (forged, replayed or too old for
    /// the ring).
    BadNonce,
    /// It answers a probe sent more than [`MAX_RESPONSE_AGE_NS`] ago.
    Late,
}

impl Default for NonceRing {
    fn default() -> Self {
        Self::new()
    }
}

impl NonceRing {
    /// No probe outstanding.
    // Array repeats of a `const` item: each element is a fresh atomic
    // (see `rcvcount::FlowCount::new`).
    #[allow(clippy::declare_interior_mutable_const)]
    pub const fn new() -> Self {
        const Z: AtomicU64 = AtomicU64::new(0);
        Self { key: [Z; RING], sent_ns: [Z; RING] }
    }

    fn key(nonce: u32, snd_nxt: u32) -> u64 {
        (u64::from(nonce) << 32) | u64::from(snd_nxt)
    }

    /// Records a probe in slot `slot % RING` (the flow's owner only).
    pub fn record(&self, slot: usize, nonce: u32, snd_nxt: u32, now_ns: u64) {
        let i = slot % RING;
        if let (Some(k), Some(t)) = (self.key.get(i), self.sent_ns.get(i)) {
            // Invalidate, then publish the time, then the key.
            k.store(0, Release);
            t.store(now_ns, Release);
            k.store(Self::key(nonce, snd_nxt), Release);
        }
    }

    /// Whether a response with `nonce` and `snd_nxt` arriving at `now_ns`
    /// is accepted; consumes the slot it matches, if any (any context).
    pub fn accept(&self, nonce: u32, snd_nxt: u32, now_ns: u64) -> Verdict {
        let want = Self::key(nonce, snd_nxt);
        if want == 0 {
            return Verdict::BadNonce;
        }
        for (k, t) in self.key.iter().zip(self.sent_ns.iter()) {
            if k.load(Acquire) == want && k.compare_exchange(want, 0, AcqRel, Relaxed).is_ok() {
                let age_ns = now_ns.saturating_sub(t.load(Acquire));
                return if age_ns > MAX_RESPONSE_AGE_NS { Verdict::Late } else { Verdict::Accepted };
            }
        }
        Verdict::BadNonce
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_accepted_once() {
        let r = NonceRing::new();
        r.record(0, 7, 100, 1_000);
        assert_eq!(r.accept(7, 101, 2_000), Verdict::BadNonce, "another snd_nxt");
        assert_eq!(r.accept(8, 100, 2_000), Verdict::BadNonce, "another nonce");
        assert_eq!(r.accept(7, 100, 2_000), Verdict::Accepted);
        assert_eq!(r.accept(7, 100, 3_000), Verdict::BadNonce, "replayed");
    }

    #[test]
    fn an_old_response_is_late_and_a_zero_key_never_matches() {
        let r = NonceRing::new();
        r.record(3, 1, 1, 0);
        assert_eq!(r.accept(1, 1, MAX_RESPONSE_AGE_NS + 1), Verdict::Late);
        assert_eq!(r.accept(0, 0, 1), Verdict::BadNonce, "an empty slot");
    }

    #[test]
    fn the_ring_forgets_the_oldest_probe() {
        let r = NonceRing::new();
        for s in 0..=RING as u32 {
            r.record(s as usize, 100 + s, s, u64::from(s));
        }
        assert_eq!(r.accept(100, 0, 50), Verdict::BadNonce, "overwritten by probe RING");
        assert_eq!(r.accept(101, 1, 50), Verdict::Accepted);
        assert_eq!(r.accept(100 + RING as u32, RING as u32, 50), Verdict::Accepted);
    }
}
