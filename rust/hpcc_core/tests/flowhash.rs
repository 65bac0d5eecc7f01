//! The flow table's hash (rust/hpcc_core/flowhash.rs): SipHash-2-4 against
//! the reference vectors, and placement: tuples that differ in one field
//! only (local port, remote port, either address, netns) spread over the
//! buckets as uniformly as random keys would. The hash the table used
//! before (`old_hash`, a fixed 4096-slot array with 16-slot probing) is
//! kept as a negative control: it fails the same test.

use hpcc_core::flowhash::{flow_hash, key_bytes, siphash24, KEY_LEN};

/// The SipHash paper's vectors (key 00..0f, message 00..n-1), as in the
/// kernel's lib/siphash_kunit.c.
#[test]
fn siphash24_reference_vectors() {
    let key = [u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]), u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15])];
    let msg: Vec<u8> = (0u8..64).collect();
    for (n, want) in [
        (0, 0x726fdb47dd0e0e31u64),
        (1, 0x74f839c593dc67fd),
        (7, 0xab0200f58b01d137),
        (8, 0x93f5f5799a932462),
        (15, 0xa129ca6149be45e5),
        (16, 0x3f2acc7f57c29bdb),
        (36, 0x314dffbe0815a3b4),
        (47, 0xd06c98cd5c0975eb),
        (48, 0xe612a3cb9ecba951),
    ] {
        assert_eq!(siphash24(key, &msg[..n]), want, "length {n}");
    }
}

const SECRET: [u64; 2] = [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(&a);
    m
}

struct Tup {
    net: u64,
    saddr: [u8; 16],
    daddr: [u8; 16],
    sport: u16,
    dport: u16,
}

fn base() -> Tup {
    Tup { net: 0xffff_8880_0412_3000, saddr: v4([10, 0, 0, 1]), daddr: v4([10, 0, 0, 2]), sport: 40000, dport: 5201 }
}

fn key(t: &Tup) -> [u8; KEY_LEN] {
    key_bytes(t.net, &t.saddr, &t.daddr, t.sport.to_be(), t.dport.to_be())
}

/// Bucket loads of `n` keys in a table of `buckets` (power of two).
fn loads(keys: &[[u8; KEY_LEN]], buckets: usize, h: impl Fn(&[u8; KEY_LEN]) -> usize) -> Vec<usize> {
    let mut l = vec![0usize; buckets];
    for k in keys {
        l[h(k) & (buckets - 1)] += 1;
    }
    l
}

/// Uniform enough: no bucket over 8 (rhashtable rehashes at a chain of
/// 16), and the number of empty buckets within 5% of a uniform hash's
/// expectation `b·e^(-n/b)`.
fn check_uniform(what: &str, l: &[usize], n: usize) -> Result<(), String> {
    let b = l.len() as f64;
    let max = *l.iter().max().unwrap();
    let empty = l.iter().filter(|&&x| x == 0).count() as f64;
    let expect = b * (-(n as f64) / b).exp();
    if max > 8 {
        return Err(format!("{what}: a bucket holds {max} of {n} flows"));
    }
    if (empty - expect).abs() > 0.05 * expect {
        return Err(format!("{what}: {empty} empty buckets, uniform gives {expect:.0}"));
    }
    Ok(())
}

/// 3,000 tuples that differ only in one field, in the 4,096-bucket table
/// rhashtable grows to for them (load <= 75%).
fn families() -> Vec<(&'static str, Vec<[u8; KEY_LEN]>)> {
    let n = 3000u16;
    let mut out = Vec::new();
    out.push(("local port", (0..n).map(|i| key(&Tup { sport: 32768 + i, ..base() })).collect()));
    out.push(("remote port", (0..n).map(|i| key(&Tup { dport: 1024 + i, ..base() })).collect()));
    out.push((
        "remote IPv4 address",
        (0..n).map(|i| key(&Tup { daddr: v4([10, 1, (i >> 8) as u8, i as u8]), ..base() })).collect(),
    ));
    out.push((
        "local IPv6 address",
        (0..n)
            .map(|i| {
                let mut a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
                a[14..].copy_from_slice(&i.to_be_bytes());
                key(&Tup { saddr: a, ..base() })
            })
            .collect(),
    ));
    // struct net objects come from one slab: same low bits, 4 KiB apart.
    out.push(("netns", (0..u64::from(n)).map(|i| key(&Tup { net: 0xffff_8880_0400_0000 + (i << 12), ..base() })).collect()));
    out
}

#[test]
fn tuples_differing_in_one_field_spread_uniformly() {
    for seed in [0u32, 1, 0xdead_beef] {
        for (what, keys) in families() {
            let l = loads(&keys, 4096, |k| flow_hash(SECRET, seed, k) as usize);
            check_uniform(what, &l, keys.len()).unwrap();
        }
    }
}

#[test]
fn the_secret_changes_every_placement() {
    let keys = &families()[0].1;
    let other = [SECRET[0] ^ 1, SECRET[1]];
    let moved = keys.iter().filter(|k| flow_hash(SECRET, 7, &k[..]) & 4095 != flow_hash(other, 7, &k[..]) & 4095).count();
    // A random re-placement keeps 1/4096 of the keys where they were.
    assert!(moved > keys.len() * 99 / 100, "{moved} of {} moved", keys.len());
}

/// The registry's hash before this table (multiply-rotate over 64-bit
/// words, no secret).
fn old_hash(k: &[u8; KEY_LEN]) -> usize {
    let w = |i: usize| u64::from_ne_bytes(k[i..i + 8].try_into().unwrap());
    let sport = u16::from_be(u16::from_ne_bytes([k[40], k[41]]));
    let dport = u16::from_be(u16::from_ne_bytes([k[42], k[43]]));
    let mut h = w(0) ^ 0x9e37_79b9_7f4a_7c15;
    for x in [w(8), w(16), w(24), w(32), (u64::from(sport) << 16) | u64::from(dport)] {
        h = (h ^ x).wrapping_mul(0x100_0000_01b3).rotate_left(23);
    }
    (h as usize) % 4096
}

#[test]
fn the_old_hash_fails_the_spread_test() {
    let (what, keys) = &families()[0];
    let l = loads(keys, 4096, old_hash);
    let err = check_uniform(what, &l, keys.len()).unwrap_err();
    assert!(err.contains("local port"), "{err}");
}
