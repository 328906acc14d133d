//! A bag's pool scores as a keyed function of (the bag's seed, the user):
//! `HMAC-SHA1(key = seed, message = user)`, the first 52 bits of the MAC
//! as an integer `k`, and the score `k / 2^52` (exact in a double, in
//! `[0, 1)`). The Lua twins compute the same with `redis.sha1hex`.
//!
//! SHA-1 is written here (about 60 lines, checked against the FIPS 180 and
//! RFC 2202 vectors) rather than taken from a crate: the HMAC keeps the
//! state after the key's inner and outer pad blocks, so a score costs two
//! SHA-1 compressions for a user id of up to 55 bytes, not four.

/// Number of bits of a score: `k < 2^52`.
pub const SCORE_BITS: u32 = 52;
/// `2^52` as a double: a score is `k / SCORE_DENOM`.
pub const SCORE_DENOM: f64 = (1u64 << SCORE_BITS) as f64;

const IV: [u32; 5] = [
    0x6745_2301,
    0xEFCD_AB89,
    0x98BA_DCFE,
    0x1032_5476,
    0xC3D2_E1F0,
];

/// Runs the SHA-1 compression function over one 64-byte block. The
/// message schedule lives in a 16-word ring, and each of the four
/// 20-round stages is a loop of its own (its function and constant fixed),
/// which the compiler unrolls: about half the instructions of one loop
/// over 80 rounds with a `match` inside.
fn compress(h: &mut [u32; 5], block: &[u8]) {
    debug_assert_eq!(block.len(), 64);
    let mut w = [0u32; 16];
    for (i, c) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *h;
    macro_rules! stage {
        ($range:expr, $k:expr, $f:expr) => {
            for i in $range {
                let wi = if i < 16 {
                    w[i]
                } else {
                    let x = (w[(i + 13) & 15] ^ w[(i + 8) & 15] ^ w[(i + 2) & 15] ^ w[i & 15])
                        .rotate_left(1);
                    w[i & 15] = x;
                    x
                };
                let t = a
                    .rotate_left(5)
                    .wrapping_add($f(b, c, d))
                    .wrapping_add(e)
                    .wrapping_add($k)
                    .wrapping_add(wi);
                e = d;
                d = c;
                c = b.rotate_left(30);
                b = a;
                a = t;
            }
        };
    }
    stage!(0..20, 0x5A82_7999u32, |b: u32, c: u32, d: u32| (b & c)
        | (!b & d));
    stage!(20..40, 0x6ED9_EBA1u32, |b: u32, c: u32, d: u32| b ^ c ^ d);
    stage!(40..60, 0x8F1B_BCDCu32, |b: u32, c: u32, d: u32| (b & c)
        | (b & d)
        | (c & d));
    stage!(60..80, 0xCA62_C1D6u32, |b: u32, c: u32, d: u32| b ^ c ^ d);
    for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
        *x = x.wrapping_add(y);
    }
}

/// Finishes a SHA-1 whose state `h` has absorbed `done` bytes (a multiple
/// of 64) and continues with `rest`; returns the digest.
fn finish(mut h: [u32; 5], done: u64, rest: &[u8]) -> [u8; 20] {
    let mut blocks = rest.chunks_exact(64);
    for b in &mut blocks {
        compress(&mut h, b);
    }
    let tail = blocks.remainder();
    let bits = (done + rest.len() as u64) * 8;
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let len = if tail.len() < 56 { 64 } else { 128 };
    last[len - 8..len].copy_from_slice(&bits.to_be_bytes());
    for b in last[..len].chunks_exact(64) {
        compress(&mut h, b);
    }
    let mut out = [0u8; 20];
    for (o, x) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// Returns SHA-1 of `data`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    finish(IV, 0, data)
}

/// HMAC-SHA1 with a fixed key: the states after the inner and outer pad
/// blocks, computed once per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hmac {
    inner: [u32; 5],
    outer: [u32; 5],
}

impl Hmac {
    /// Prepares HMAC-SHA1 with `key` (RFC 2104: a key longer than 64 bytes
    /// is replaced by its SHA-1).
    pub fn new(key: &[u8]) -> Hmac {
        let mut k = [0u8; 64];
        if key.len() > 64 {
            k[..20].copy_from_slice(&sha1(key));
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let pad = |x: u8| {
            let mut h = IV;
            let block: Vec<u8> = k.iter().map(|b| b ^ x).collect();
            compress(&mut h, &block);
            h
        };
        Hmac {
            inner: pad(0x36),
            outer: pad(0x5c),
        }
    }

    /// Returns HMAC-SHA1(key, `msg`).
    pub fn mac(&self, msg: &[u8]) -> [u8; 20] {
        let inner = finish(self.inner, 64, msg);
        finish(self.outer, 64, &inner)
    }

    /// Returns the pool score of `user`: the MAC's first 52 bits over
    /// 2^52.
    pub fn score(&self, user: &[u8]) -> f64 {
        score_of_mac(&self.mac(user))
    }
}

/// Returns `k / 2^52` for `k` the first 52 bits of `mac`.
pub fn score_of_mac(mac: &[u8; 20]) -> f64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&mac[..8]);
    let k = u64::from_be_bytes(b) >> (64 - SCORE_BITS);
    k as f64 / SCORE_DENOM
}

/// Returns the pool score of `user` in a bag with `seed`.
pub fn keyed_score(seed: &[u8], user: &[u8]) -> f64 {
    Hmac::new(seed).score(user)
}

/// Returns lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_matches_the_fips_vectors() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(&sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(
            hex(&sha1(&vec![b'a'; 1_000_000])),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
        // Every tail length around the padding boundary (55, 56, 63, 64).
        for n in 50..70 {
            let d = sha1(&vec![b'x'; n]);
            assert_eq!(d.len(), 20);
        }
    }

    #[test]
    fn hmac_matches_rfc_2202() {
        let cases: [(&[u8], &[u8], &str); 4] = [
            (
                &[0x0b; 20],
                b"Hi There",
                "b617318655057264e28bc0b6fb378c8ef146be00",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "aa4ae5e15272d00e95705637ce8a3b55ed402112",
            ),
            (
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data",
                "e8e99d0f45237d786d6bbaa7965c7808bbff1a91",
            ),
        ];
        for (key, msg, want) in cases {
            assert_eq!(hex(&Hmac::new(key).mac(msg)), want);
        }
        let long = vec![0xcd; 50];
        let key: Vec<u8> = (1..=25).collect();
        assert_eq!(
            hex(&Hmac::new(&key).mac(&long)),
            "4c9007f4026250c6bc8414f9bf50c86c2d7235da"
        );
    }

    #[test]
    fn scores_are_the_first_52_bits_over_2_pow_52() {
        let mac = Hmac::new(b"0123456789abcdef").mac(b"alice");
        let k = u64::from_str_radix(&hex(&mac)[..13], 16).unwrap();
        let s = keyed_score(b"0123456789abcdef", b"alice");
        assert_eq!(s, k as f64 / 4_503_599_627_370_496.0);
        assert_eq!((s * SCORE_DENOM) as u64, k);
        assert!((0.0..1.0).contains(&s));
        assert_eq!(score_of_mac(&[0xff; 20]), 1.0 - 1.0 / SCORE_DENOM);
        assert_eq!(score_of_mac(&[0; 20]), 0.0);
    }

    #[test]
    fn a_million_users_get_a_million_different_scores() {
        let h = Hmac::new(b"a seed of sixteen or more bytes");
        let mut ks: Vec<u64> = (0..1_000_000u32)
            .map(|u| {
                let s = h.score(itoa::Buffer::new().format(u).as_bytes());
                (s * SCORE_DENOM) as u64
            })
            .collect();
        ks.sort_unstable();
        let before = ks.len();
        ks.dedup();
        assert_eq!(ks.len(), before, "two users share a score");
    }
}
