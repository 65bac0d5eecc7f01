//! The flow table's keyed hash.
//!
//! The kernel keeps flows in an `rhashtable` keyed by (netns, 4-tuple);
//! its bucket is `hash & (buckets - 1)`. The hash is SipHash-2-4 (Aumasson
//! and Bernstein, the kernel's `siphash()`) of the 48-byte key under a
//! 128-bit secret drawn once per module load, with the table's own seed
//! folded into the key, so a remote peer that picks its ports and
//! addresses cannot aim at one bucket, and every byte of the key (both
//! ports included) moves every bit of the hash.

/// Bytes of a flow key: netns cookie (8), source and destination address
/// (16 each), source and destination port (2 each), 4 bytes of zero
/// padding. Mirrored by `struct hpcc_flow_key` in `include/hpcc_shim.h`.
pub const KEY_LEN: usize = 48;

/// A flow key as the table stores it (layout of `struct hpcc_flow_key`,
/// native byte order for `net`, ports as on the wire).
pub fn key_bytes(net: u64, saddr: &[u8; 16], daddr: &[u8; 16], sport_be: u16, dport_be: u16) -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    let parts: [&[u8]; 5] = [&net.to_ne_bytes(), saddr, daddr, &sport_be.to_ne_bytes(), &dport_be.to_ne_bytes()];
    let mut at = 0;
    for p in parts {
        if let Some(d) = k.get_mut(at..at + p.len()) {
            d.copy_from_slice(p);
        }
        at += p.len();
    }
    k
}

#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// SipHash-2-4 of `data` under `key` (little-endian words, as specified).
pub fn siphash24(key: [u64; 2], data: &[u8]) -> u64 {
    let mut v = [
        key[0] ^ 0x736f_6d65_7073_6575,
        key[1] ^ 0x646f_7261_6e64_6f6d,
        key[0] ^ 0x6c79_6765_6e65_7261,
        key[1] ^ 0x7465_6462_7974_6573,
    ];
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let m = u64::from_le_bytes(w);
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    if let Some(d) = last.get_mut(..rest.len()) {
        d.copy_from_slice(rest);
    }
    last[7] = data.len() as u8;
    let b = u64::from_le_bytes(last);
    v[3] ^= b;
    round(&mut v);
    round(&mut v);
    v[0] ^= b;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// The table hash of a key: SipHash-2-4 under `secret` with the table's
/// `seed` (rhashtable's per-table random) folded in, reduced to 32 bits.
pub fn flow_hash(secret: [u64; 2], seed: u32, key: &[u8]) -> u32 {
    let h = siphash24([secret[0] ^ u64::from(seed), secret[1]], key);
    (h ^ (h >> 32)) as u32
}
