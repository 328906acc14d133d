//! A bag's pool scores as a keyed function of (the bag's seed, the user):
//! `HMAC-SHA1(key = seed, message = user)`, the first 52 bits of the MAC
//! as an integer `k`, and the score `k / 2^52` (exact in a double, in
//! `[0, 1)`). The Lua twins compute the same with `redis.sha1hex`.
//!
//! SHA-1 and HMAC are RustCrypto's `sha1` and `hmac` crates: a
//! well-kept, audited implementation (with the CPU's SHA extensions where
//! it has them, detected at run time) rather than one of our own.
//! [`Hmac`] keeps the state after the key's inner and outer pad blocks,
//! so a score costs two SHA-1 compressions for a user id of up to 55
//! bytes, not four.

use hmac::Mac;
use sha1::{Digest, Sha1};

/// Number of bits of a score: `k < 2^52`.
pub const SCORE_BITS: u32 = 52;
/// `2^52` as a double: a score is `k / SCORE_DENOM`.
pub const SCORE_DENOM: f64 = (1u64 << SCORE_BITS) as f64;

/// Returns SHA-1 of `data`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    Sha1::digest(data).into()
}

/// HMAC-SHA1 with a fixed key: the states after the inner and outer pad
/// blocks, computed once per key; each MAC starts from a copy of them.
#[derive(Clone, Debug)]
pub struct Hmac {
    keyed: hmac::Hmac<Sha1>,
}

impl Hmac {
    /// Prepares HMAC-SHA1 with `key` (RFC 2104: a key longer than 64 bytes
    /// is replaced by its SHA-1).
    pub fn new(key: &[u8]) -> Hmac {
        // HMAC takes a key of any length: `new_from_slice` cannot fail.
        let keyed = <hmac::Hmac<Sha1> as Mac>::new_from_slice(key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        Hmac { keyed }
    }

    /// Returns HMAC-SHA1(key, `msg`).
    pub fn mac(&self, msg: &[u8]) -> [u8; 20] {
        let mut m = self.keyed.clone();
        m.update(msg);
        m.finalize().into_bytes().into()
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

    /// HMAC as RFC 2104 defines it, from [`sha1`] alone.
    fn hmac_by_definition(key: &[u8], msg: &[u8]) -> [u8; 20] {
        let mut k = [0u8; 64];
        if key.len() > 64 {
            k[..20].copy_from_slice(&sha1(key));
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let mut inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        inner.extend_from_slice(msg);
        let mut outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        outer.extend_from_slice(&sha1(&inner));
        sha1(&outer)
    }

    #[test]
    fn the_kept_pad_state_gives_the_hmac_of_every_length() {
        // Every message length around the padding boundaries (55, 56, 63,
        // 64, 119, 120, 128), keys shorter and longer than a block, and one
        // `Hmac` used many times (each MAC starts from the kept state).
        for key_len in [16, 32, 64, 65, 100] {
            let key: Vec<u8> = (0..key_len).map(|i| i as u8).collect();
            let h = Hmac::new(&key);
            for n in 0..140 {
                let msg: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
                assert_eq!(
                    h.mac(&msg),
                    hmac_by_definition(&key, &msg),
                    "key {key_len}, msg {n}"
                );
            }
        }
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
