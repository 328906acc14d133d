//! Randomized tests of every pure parser and of the decoders of stored
//! state, in the spirit of `cargo fuzz` (which needs a nightly toolchain
//! this project does not have): hundreds of thousands of inputs built from
//! a dictionary of tokens that hit the edges (signs, leading zeros, 19- and
//! 20-digit numbers, separators, prefixes of stored forms, non-UTF-8 bytes),
//! checking that nothing panics and that each parser agrees with a simple
//! reference or round-trips through its formatter.
//!
//! `HOTPATH_PARSER_FUZZ=<n>` runs `n` inputs per parser (default 100,000).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::args::parse_i64_plain;
use crate::like::model as like;
use crate::luckybag::model as luckybag;
use crate::poll::model as poll;
use crate::rank::model as rank;
use crate::rate::model as rate;

const TOKENS: &[&[u8]] = &[
    b"0",
    b"1",
    b"7",
    b"9",
    b"00",
    b"-",
    b"+",
    b".",
    b":",
    b" ",
    b"e",
    b"E",
    b"inf",
    b"nan",
    b"gcra:",
    b"fixed:",
    b"EARLIER",
    b"later",
    b"MS",
    b"s",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551615",
    b"4294967295",
    b"999999999999999999",
    b"\xff",
    b"\x00",
    b"\"",
    b"[",
    b"]",
    b",",
    b"\\u0000",
];

fn runs() -> usize {
    std::env::var("HOTPATH_PARSER_FUZZ")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Returns an input of up to 6 tokens and random bytes.
fn input(rng: &mut StdRng) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..rng.gen_range(0..=6) {
        if rng.gen_bool(0.8) {
            v.extend_from_slice(TOKENS[rng.gen_range(0..TOKENS.len())]);
        } else {
            v.push(rng.gen());
        }
    }
    v
}

/// Returns `valid` after 0–2 random edits (insert a token, delete or
/// replace a byte): inputs near the accepted language, where parsers break.
fn mutate(rng: &mut StdRng, valid: &[u8]) -> Vec<u8> {
    let mut v = valid.to_vec();
    for _ in 0..rng.gen_range(0..=2) {
        let at = rng.gen_range(0..=v.len());
        match rng.gen_range(0..3) {
            0 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            1 if at < v.len() => {
                v.remove(at);
            }
            _ if at < v.len() => v[at] = rng.gen(),
            _ => {}
        }
    }
    v
}

/// Counts accepted and refused inputs, so that a test whose generator
/// never reaches one side fails instead of passing vacuously.
#[derive(Default)]
struct Tally(usize, usize);

impl Tally {
    fn add(&mut self, accepted: bool) {
        if accepted {
            self.0 += 1;
        } else {
            self.1 += 1;
        }
    }

    fn check(&self, what: &str) {
        let n = self.0 + self.1;
        assert!(
            self.0 * 50 >= n && self.1 * 50 >= n,
            "{what}: {} accepted, {} refused: the inputs miss a side",
            self.0,
            self.1
        );
    }
}

/// The reference for Redis's `string2ll`: the value exactly when the bytes
/// are its canonical decimal form.
fn reference_i64(b: &[u8]) -> Option<i64> {
    let v: i64 = std::str::from_utf8(b).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == b).then_some(v)
}

#[test]
fn integers_parse_exactly_like_redis() {
    let mut rng = StdRng::seed_from_u64(11);
    let (mut ints, mut users) = (Tally::default(), Tally::default());
    for _ in 0..runs() {
        let b = if rng.gen_bool(0.5) {
            input(&mut rng)
        } else {
            let n: i64 = rng.gen::<i64>() >> rng.gen_range(0..64);
            mutate(&mut rng, n.to_string().as_bytes())
        };
        assert_eq!(parse_i64_plain(&b), reference_i64(&b), "{b:?}");
        ints.add(parse_i64_plain(&b).is_some());
        let max: u64 = rng.gen_range(0..=u64::MAX);
        let want = std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|v| v.to_string().as_bytes() == b && *v <= max);
        assert_eq!(like::parse_user(&b, max), want, "{b:?} max {max}");
        users.add(want.is_some());
    }
    ints.check("integers");
    users.check("user ids");
}

#[test]
fn rate_states_parse_only_what_they_format() {
    let mut rng = StdRng::seed_from_u64(12);
    let mut tally = Tally::default();
    let ms = |rng: &mut StdRng| rng.gen_range(0..=rate::MAX_STORED_MS);
    for _ in 0..runs() {
        let near = match rng.gen_range(0..5) {
            0 => format!(
                "gcra:{}:{}:{}",
                ms(&mut rng),
                rng.gen_range(0..9),
                rng.gen_range(1..1 << 20)
            ),
            1 => format!("fixed:{}:{}", ms(&mut rng), rng.gen_range(0..1 << 30)),
            2 => format!(
                "sliding:{}:{}:{}",
                ms(&mut rng),
                rng.gen_range(0..1 << 30),
                rng.gen_range(0..1 << 30)
            ),
            3 => format!(
                "bucket:{}:{}:{}",
                rng.gen_range(0..1 << 30),
                rng.gen_range(0..1i64 << 40),
                ms(&mut rng) * 1000
            ),
            _ => String::new(),
        };
        let b = if near.is_empty() {
            input(&mut rng)
        } else {
            mutate(&mut rng, near.as_bytes())
        };
        // Every value parses as at most one state, and only in the form
        // the module writes it.
        let text = rate::parse_text(&b);
        let formatted = match text {
            rate::Text::Gcra(t) => {
                assert!(t.den > 0 && t.num < t.den);
                Some(t.format())
            }
            rate::Text::Fixed(w) => Some(w.format()),
            rate::Text::Sliding(s) => Some(s.format()),
            rate::Text::Bucket(k) => Some(k.format()),
            rate::Text::Corrupt | rate::Text::Foreign => None,
        };
        if let Some(f) = &formatted {
            assert_eq!(f.as_bytes(), &b[..], "canonical only");
        }
        tally.add(formatted.is_some());
        let t = rate::Tat {
            ms: ms(&mut rng),
            den: rng.gen_range(1..=rate::MAX_COUNT * 1000),
            num: 0,
        };
        let t = rate::Tat {
            num: rng.gen_range(0..t.den),
            ..t
        };
        assert_eq!(rate::Tat::parse(t.format().as_bytes()), Some(t));
        let w = rate::Window {
            start: ms(&mut rng),
            count: rng.gen_range(0..=rate::MAX_COUNT),
        };
        assert_eq!(rate::Window::parse(w.format().as_bytes()), Some(w));
        let s = rate::Sliding {
            window: ms(&mut rng),
            count: rng.gen_range(0..=rate::MAX_COUNT),
            prev: rng.gen_range(0..=rate::MAX_COUNT),
        };
        assert_eq!(rate::Sliding::parse(s.format().as_bytes()), Some(s));
        let k = rate::Bucket {
            tokens: rng.gen_range(0..=rate::MAX_COUNT),
            carry: rng.gen_range(0..=rate::MAX_STORED_US),
            ts: rng.gen_range(0..=rate::MAX_STORED_US),
        };
        assert_eq!(rate::Bucket::parse(k.format().as_bytes()), Some(k));
    }
    tally.check("rate states");
}

#[test]
fn rank_layouts_and_scores_never_panic_and_round_trip() {
    let mut rng = StdRng::seed_from_u64(13);
    let mut tally = Tally::default();
    for _ in 0..runs() {
        let words: Vec<Vec<u8>> = if rng.gen_bool(0.3) {
            (0..4).map(|_| input(&mut rng)).collect()
        } else {
            let near = [
                ["EARLIER", "LATER", "NONE"][rng.gen_range(0..3)].to_string(),
                ["MS", "S"][rng.gen_range(0..2)].to_string(),
                rng.gen_range(0..12).to_string(),
                rng.gen_range(0..1i64 << 53).to_string(),
            ];
            near.iter()
                .map(|w| {
                    if rng.gen_bool(0.1) {
                        mutate(&mut rng, w.as_bytes())
                    } else {
                        w.as_bytes().to_vec()
                    }
                })
                .collect()
        };
        let field = words.join(&b' ');
        let layout = rank::Layout::from_field(Some(&field));
        tally.add(layout.is_ok());
        if let Ok(l) = layout {
            assert_eq!(l.to_field().as_bytes(), &field[..], "canonical only");
            let score = f64::from_bits(rng.gen());
            let _ = l.unpack(score);
            let _ = l.unpack(rng.gen_range(-1e300..1e300));
        }
        let _ = rank::Tiebreak::parse(&words[0]);
        let _ = rank::Unit::parse(&words[1]);
        let _ = poll::Mode::parse(&words[2]);
    }
    tally.check("rank layouts");
}

#[test]
fn highscores_and_vote_lists_never_panic() {
    let mut rng = StdRng::seed_from_u64(14);
    let (mut scores, mut lists) = (Tally::default(), Tally::default());
    for _ in 0..runs() {
        let b = match rng.gen_range(0..3) {
            0 => input(&mut rng),
            1 => {
                let v = format!("{:.3}", rng.gen_range(0.0..1.5));
                mutate(&mut rng, v.as_bytes())
            }
            _ => mutate(&mut rng, br#"["a","b\u0000",""]"#),
        };
        let hs = luckybag::parse_highscore(&b);
        scores.add(hs.is_some());
        match hs {
            Some(Ok(v)) => assert!((0.0..=1.0).contains(&v), "{b:?} -> {v}"),
            Some(Err(())) => {
                let v: f64 = std::str::from_utf8(&b).unwrap().parse().unwrap();
                assert!(v > 1.0, "{b:?}");
            }
            None => {}
        }
        // Malformed lists are refused (None), never read as empty; a
        // parsed list round-trips.
        let votes = poll::parse_user_votes(&b);
        lists.add(votes.as_ref().is_some_and(|v| !v.is_empty()));
        if let Some(votes) = votes {
            assert_eq!(
                poll::parse_user_votes(poll::format_user_votes(&votes).as_bytes()),
                Some(votes)
            );
        }
    }
    scores.check("highscores");
    lists.check("vote lists");
}

#[test]
fn lock_and_delayq_states_parse_only_what_they_format() {
    use crate::delayq::model::Header;
    use crate::lock::model::{Hold, Mutex};
    let mut rng = StdRng::seed_from_u64(13);
    let (mut mutexes, mut holds, mut headers) =
        (Tally::default(), Tally::default(), Tally::default());
    for _ in 0..runs() {
        let owner = ["", "a", "w:1", "\u{e9}"][rng.gen_range(0..4)];
        let n = |rng: &mut StdRng| rng.gen_range(0..1i64 << 50);
        let near = match rng.gen_range(0..4) {
            0 => format!("{}:0:0:0:", n(&mut rng)),
            1 => format!(
                "{}:{}:{}:{}:{owner}",
                n(&mut rng),
                rng.gen_range(0..3),
                n(&mut rng),
                n(&mut rng)
            ),
            _ => String::new(),
        };
        let b = if near.is_empty() {
            input(&mut rng)
        } else {
            mutate(&mut rng, near.as_bytes())
        };
        let m = Mutex::parse(&b);
        if let Some(m) = &m {
            assert_eq!(m.format().as_slice(), &b[..], "canonical only");
        }
        mutexes.add(m.is_some());

        let near = format!(
            "{}:{}:{}:{}",
            n(&mut rng),
            rng.gen_range(0..3),
            n(&mut rng),
            n(&mut rng)
        );
        let b = if rng.gen_bool(0.3) {
            input(&mut rng)
        } else {
            mutate(&mut rng, near.as_bytes())
        };
        let h = Hold::parse(&b);
        if let Some(h) = h {
            assert_eq!(h.format().as_slice(), &b[..], "canonical only");
        }
        holds.add(h.is_some());

        let lost = if rng.gen_bool(0.5) {
            format!("/{}/{}", rng.gen_range(0..4), rng.gen_range(0..4))
        } else {
            String::new()
        };
        let near = format!(
            "{}:{}:{}:{}{lost}:{owner}",
            rng.gen_range(0..1i64 << 34),
            rng.gen_range(0..4),
            rng.gen_range(0..5),
            rng.gen_range(0..2)
        );
        let b = if rng.gen_bool(0.3) {
            input(&mut rng)
        } else {
            mutate(&mut rng, near.as_bytes())
        };
        let parsed = Header::parse(&b);
        if let Some((head, at)) = parsed {
            assert_eq!(head.format(&b[at..]), b, "canonical only");
        }
        headers.add(parsed.is_some());

        // The argument fast path agrees with Redis's integers.
        let v = n(&mut rng).to_string();
        let b = if rng.gen_bool(0.5) {
            input(&mut rng)
        } else {
            mutate(&mut rng, v.as_bytes())
        };
        if let Some(v) = crate::argv::quick_int(&b) {
            assert_eq!(reference_i64(&b), Some(v), "{b:?}");
        }
    }
    mutexes.check("lock mutex states");
    holds.check("lock semaphore holds");
    headers.check("delayq records");
}

/// C's `snprintf("%.17g")`: what the Lua twins' `string.format('%.17g')`
/// prints, the reference of LUCKYBAG's score text.
fn c_g17(x: f64) -> String {
    let mut buf = [0u8; 64];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), x) };
    String::from_utf8(buf[..n as usize].to_vec()).unwrap()
}

#[test]
fn luckybag_score_text_is_c_printf_17g() {
    let mut rng = StdRng::seed_from_u64(8);
    let check = |s: f64| assert_eq!(luckybag::format_score(s), c_g17(s), "{s:e}");
    let k = |k: u64| k as f64 / 4_503_599_627_370_496.0;
    for s in [
        -3.0,
        -2.0,
        -1.5,
        -1.0,
        0.0,
        -0.0,
        1.0,
        0.5,
        0.1,
        1e-4,
        9.999_999_999_999_999e-5,
        1e-5,
        1e16,
        1e17,
        123.456_789_1,
        1e300,
        -0.000_000_4,
        f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
    ] {
        check(s);
    }
    for i in 0..5000u64 {
        check(k(i));
        check(k((1 << 52) - 1 - i));
    }
    for _ in 0..200_000 {
        check(k(rng.gen_range(0..1u64 << 52)));
        check(rng.gen_range(-10.0..10.0));
        check(f64::from_bits(rng.gen()).abs() % 1e20);
    }
    // And every text parses back to its score.
    for _ in 0..100_000 {
        let s = k(rng.gen_range(0..1u64 << 52));
        assert_eq!(
            luckybag::parse_score(luckybag::format_score(s).as_bytes()),
            Some(s)
        );
    }
}
