//! Fixed-point formats and the one wide division the law needs.
//!
//! Everything is integer. The formats, and why they cannot overflow for link
//! rates up to [`MAX_RATE_BPS`], base RTTs up to 1 s and windows up to 2^31
//! bytes, are:
//!
//! | quantity | type | format | range |
//! |---|---|---|---|
//! | normalized inflight `U`, per-hop `u'` | `u64` | Q23.40 (`U_ONE` = 2^40) | `[0, 2^23]`, saturating at [`U_MAX`] |
//! | windows `W`, `Wc`, `W_ai` | `u64` | Q47.16 bytes (`WIN_ONE` = 2^16) | `[0, 2^31]` bytes |
//! | `eta` | `u32` | parts per million ([`ETA_SCALE`]), exact | `(0, 10^6]` |
//!
//! Products are formed as exact `u64 × u64 → u128` widening multiplies
//! ([`mul_wide`]); the only division wider than 64 bits is [`div_wide`], a
//! 128-by-64-bit division written with 64-bit operations (Hacker's Delight
//! `divlu`), because the kernel has no `__udivti3`. No `u128` division or
//! modulo appears anywhere.
//!
//! Worst-case error (all divisions round down):
//!
//! * `u'` of each hop is kept as the top 64 bits of its exact 128-bit
//!   numerator and denominator plus a binary exponent (≤ 2^-62 relative);
//!   hops are compared exactly on that form (cross products, no division),
//!   and only the chosen hop's `u'` is divided out, to one unit in the last
//!   place (2^-40). `Δts` above 2^40 ns (18 minutes) is shifted down with
//!   `Δtx`, adding at most 2^-39 relative to the rate term.
//! * EWMA step `U = ((T−τ)·U + τ·u)/T`: computed exactly, then floored:
//!   ≤ 2^-40 absolute per step. Because the EWMA contracts, the accumulated
//!   absolute error stays below `2^-40 · T/τ_min` (≤ 2^-30 while samples
//!   are at least `T/1024` apart).
//! * `W = Wc·eta/U + W_ai`: formed as `Wc_q16·eta_ppm·2^48 / (U_q40·10^6)`,
//!   exact up to the final floor (2^-16 bytes) while `U < 16`; above that
//!   both sides are shifted down (≤ 2^-63 relative). The threshold test
//!   `U ≥ eta` is exact (against `ceil(eta·2^40)`). The relative error of
//!   `W` is therefore about `ε_U/U + 2^-16/W` with `ε_U ≤ 2^-30`: below
//!   10^-6 for `U ≥ 2^-10`, below 10^-3 for `U ≥ 2^-20`. Because
//!   `W ≤ max_window`, an unclamped `W` implies `U ≥ eta·Wc/max_window`,
//!   so the error can only grow large when `Wc` is below 2^-20 of
//!   `max_window`. (The worst case measured against the `f64` model is in
//!   docs/design.md, "The HPCC++ core".)
//! * Committed `Wc` keeps its 16 fractional bits, so rounding does not
//!   accumulate as whole bytes across commits (≤ 2^-16 bytes per commit).
//! * Pacing `R = W/T` uses a reciprocal `floor(10^9·2^32/T)` precomputed
//!   per parameter set: below 2 bytes/s absolute error.
//!
//! The tests (rust/hpcc_core/tests/prop.rs) compare against an `f64` model at
//! every event of random traces and report the worst relative error seen.

/// Fractional bits of `U` and `u'`.
pub const U_SHIFT: u32 = 40;

/// `U = 1.0` in Q23.40.
pub const U_ONE: u64 = 1 << U_SHIFT;

/// Saturation value of `U` and `u'` (2^23 = 8388608 in real terms). A hop
/// whose `u'` is larger (a queue of millions of bandwidth-delay products) is
/// treated as this value.
pub const U_MAX: u64 = 1 << 63;

/// Fractional bits of windows (bytes).
pub const WIN_SHIFT: u32 = 16;

/// One byte in the window format.
pub const WIN_ONE: u64 = 1 << WIN_SHIFT;

/// Scale of the configured `eta`: parts per million, so decimal values such
/// as 0.95 are represented exactly.
pub const ETA_SCALE: u32 = 1_000_000;

/// Largest link rate accepted in a sample, in bits per second (2^48 ≈ 281
/// Tb/s). Keeps `B·T·Δts` below 2^118.
pub const MAX_RATE_BPS: u64 = 1 << 48;

/// Exact widening multiply.
#[inline]
pub fn mul_wide(a: u64, b: u64) -> u128 {
    // Cannot overflow: (2^64-1)^2 < 2^128.
    u128::from(a).wrapping_mul(u128::from(b))
}

const B32: u64 = 1 << 32;
const MASK32: u64 = B32 - 1;

/// One 32-bit quotient digit of [`div_wide`]: `(u_hi·2^32 + u_next) / v`
/// for a normalized `v = vn1·2^32 + vn0` (top bit set), given that the
/// true digit is below 2^32.
#[inline]
fn quotient_digit(u_hi: u64, u_next: u64, vn1: u64, vn0: u64) -> u64 {
    // vn1 >= 2^31, so neither operation divides by zero.
    let mut q = u_hi.checked_div(vn1).unwrap_or(0);
    let mut rhat = u_hi.checked_rem(vn1).unwrap_or(0);
    // Knuth's correction runs at most twice.
    let mut rounds = 0;
    while rounds < 2 {
        rounds += 1;
        // Short-circuit: q * vn0 is only formed when q < 2^32, so it fits;
        // rhat < 2^32 there, so rhat << 32 | u_next fits.
        if q >= B32 || q.wrapping_mul(vn0) > ((rhat << 32) | u_next) {
            q = q.saturating_sub(1);
            rhat = rhat.saturating_add(vn1);
            if rhat < B32 {
                continue;
            }
        }
        break;
    }
    q
}

/// `floor(n / d)` when `d != 0` and the quotient fits in 64 bits; `None`
/// otherwise (callers saturate).
///
/// Uses only 64-bit divisions (two hardware divides in the worst case, one
/// when `n < 2^64`), so it is safe in the kernel, where `u128` division
/// is unavailable.
#[inline]
pub fn div_wide(n: u128, d: u64) -> Option<u64> {
    let hi = (n >> 64) as u64;
    let lo = n as u64;
    if d == 0 || hi >= d {
        return None;
    }
    if hi == 0 {
        return lo.checked_div(d);
    }
    // Normalize so the divisor's top bit is set (s < 64 because d != 0).
    let s = d.leading_zeros();
    let v = d << s;
    let vn1 = v >> 32;
    let vn0 = v & MASK32;
    // hi < d, so hi << s < v: no bits are lost.
    let un32 = (hi << s) | lo.checked_shr(64 - s).unwrap_or(0);
    let un10 = lo << s;
    let un1 = un10 >> 32;
    let un0 = un10 & MASK32;
    let q1 = quotient_digit(un32, un1, vn1, vn0);
    // Remainder of the first step; the true value is below v, the
    // intermediate terms are taken modulo 2^64 as in the reference.
    let un21 = (un32 << 32)
        .wrapping_add(un1)
        .wrapping_sub(q1.wrapping_mul(v));
    let q0 = quotient_digit(un21, un0, vn1, vn0);
    Some((q1 << 32) | (q0 & MASK32))
}

/// `floor(n · 2^shift / d)` saturating at `max` (`max ≤ 2^63`); `d = 0`
/// gives `max`.
#[inline]
pub(crate) fn ratio_shl(n: u128, d: u64, shift: u32, max: u64) -> u64 {
    if d == 0 {
        return max;
    }
    // n ≥ 2^(127 − shift) means a quotient ≥ 2^127 / d > 2^63 ≥ max.
    let limit_shift = 127u32.saturating_sub(shift);
    if n >> limit_shift.min(127) != 0 {
        return max;
    }
    // n < 2^(127 - shift): the shift cannot lose bits.
    let x = n << shift.min(127);
    match div_wide(x, d) {
        Some(q) => q.min(max),
        None => max,
    }
}
