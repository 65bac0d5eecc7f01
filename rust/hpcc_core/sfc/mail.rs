// SPDX-License-Identifier: GPL-2.0

//! A flow's SFC cell: what the signal path writes and the next ACK reads
//! ([`SfcState`]), lock-free, as the module shares it between its
//! netfilter hook (any CPU, no socket lock) and the congestion-control
//! hooks, and as ns-3's host hands it to the same controller.

use super::super::control::SfcState;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::{Acquire, Relaxed, Release}};

/// The newest accepted SFC signal of a flow, for the next ACK: the window
/// cut's inputs and a pause the signal path could not apply (the module:
/// the socket was owned by user). Racing writers may mix two signals'
/// fields, which only changes which of two valid cuts applies.
#[derive(Debug, Default)]
pub struct Mail {
    /// Bumped after each signal's fields are stored.
    gen: AtomicU32,
    /// The bottleneck's queue, bytes.
    qlen: AtomicU32,
    /// The bottleneck's speed code.
    speed: AtomicU32,
    /// A pause not applied yet: the departure clock's target, ns (0: none).
    pause_until_ns: AtomicU64,
    /// When the last signal was accepted, ns (0: none yet).
    last_rx_ns: AtomicU64,
    /// The longest silence before a signal since the ACK path last took
    /// it ([`Mail::state`]), ns (0: no signal since).
    max_gap_ns: AtomicU64,
}

impl Mail {
    /// An empty cell.
    pub const fn new() -> Self {
        Self {
            gen: AtomicU32::new(0),
            qlen: AtomicU32::new(0),
            speed: AtomicU32::new(0),
            pause_until_ns: AtomicU64::new(0),
            last_rx_ns: AtomicU64::new(0),
            max_gap_ns: AtomicU64::new(0),
        }
    }

    /// Records a signal accepted at `now_ns` (and a pause to apply at the
    /// next ACK, if the signal path could not apply it).
    pub fn put(&self, now_ns: u64, qlen: u32, speed: u8, deferred_until_ns: Option<u64>) {
        // The silence before it: the controller ends an episode of cuts
        // only after one as long as the signalled queue's drain plus T,
        // which the ACKs, far apart while a storm paces the flow down,
        // cannot show. The first signal comes after an endless one; never
        // 0, which means none.
        let last = self.last_rx_ns.swap(now_ns, Relaxed);
        let gap = if last == 0 { u64::MAX } else { now_ns.saturating_sub(last).max(1) };
        self.max_gap_ns.fetch_max(gap, Relaxed);
        self.qlen.store(qlen, Relaxed);
        self.speed.store(u32::from(speed), Relaxed);
        if let Some(t) = deferred_until_ns {
            self.pause_until_ns.fetch_max(t, Relaxed);
        }
        self.gen.fetch_add(1, Release);
    }

    /// The cell as an ACK reads it: the newest signal's fields and the
    /// longest silence since the last call (one load without a new signal).
    pub fn state(&self) -> SfcState {
        let gen = self.gen.load(Acquire);
        let gap_ns = if self.max_gap_ns.load(Relaxed) == 0 { 0 } else { self.max_gap_ns.swap(0, Relaxed) };
        SfcState {
            gen,
            qlen: self.qlen.load(Relaxed),
            speed: u8::try_from(self.speed.load(Relaxed)).unwrap_or(0),
            gap_ns,
        }
    }

    /// Takes the deferred pause, when the decision says so: its target,
    /// ns (0: none).
    pub fn take_pause(&self) -> u64 {
        self.pause_until_ns.swap(0, Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_reaches_the_next_ack_once() {
        let m = Mail::new();
        assert_eq!(m.state(), SfcState::default());
        m.put(1_000, 50_000, 3, None);
        let s = m.state();
        assert_eq!((s.gen, s.qlen, s.speed, s.gap_ns), (1, 50_000, 3, u64::MAX));
        // The gap is taken once; the fields stay.
        assert_eq!(m.state(), SfcState { gap_ns: 0, ..s });
        m.put(1_500, 20_000, 3, Some(9_000));
        m.put(1_600, 10_000, 3, Some(8_000));
        let s = m.state();
        assert_eq!((s.gen, s.qlen, s.gap_ns), (3, 10_000, 500));
        assert_eq!((m.take_pause(), m.take_pause()), (9_000, 0));
    }
}
