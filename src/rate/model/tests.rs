//! The unit tests of RATE's model (src/rate/model.rs).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

/// A multiple of a day, in ms.
const T0: i64 = 1_764_700_000_000;

/// Returns the instant `T0 + ms` in microseconds.
fn at(ms: i64) -> i64 {
    (T0 + ms) * US
}

fn rule(limit: i64, period_ms: i64, burst: i64) -> Rule {
    Rule {
        limit,
        period_ms,
        burst,
    }
}

/// Runs GCRA requests of cost 1 at `times` (µs), returning the replies.
fn run_gcra(r: Rule, times: &[i64]) -> Vec<[i64; 5]> {
    let mut tat = None;
    times
        .iter()
        .map(|&t| {
            let s = gcra(r, tat, t, 1);
            if s.new.is_some() {
                tat = s.new;
            }
            s.reply.fields()
        })
        .collect()
}

#[test]
fn gcra_lets_a_burst_through_then_spaces_requests() {
    let r = rule(10, 1000, 10);
    let out = run_gcra(r, &[at(0); 11]);
    for (i, f) in out.iter().take(10).enumerate() {
        assert_eq!(f, &[1, 10, 9 - i as i64, -1, 100 * (i as i64 + 1)]);
    }
    assert_eq!(out[10], [0, 10, 0, 100, 1000], "the 11th waits one spacing");
    let mut tat = None;
    for _ in 0..10 {
        tat = gcra(r, tat, at(0), 1).new;
    }
    assert!(!gcra(r, tat, at(100) - 1, 1).reply.allowed, "1 µs early");
    assert_eq!(
        gcra(r, tat, at(100), 1).reply.fields(),
        [1, 10, 0, -1, 1000]
    );
}

#[test]
fn gcra_burst_of_one_spaces_from_each_request() {
    // 3 per second, one at a time: spacing 333,333⅓ µs, kept exact.
    // With no tolerance a late request restarts the schedule from
    // itself.
    let r = rule(3, 1000, 1);
    let out = run_gcra(r, &[at(0), at(333), at(334), at(667), at(668)]);
    assert_eq!(out[0], [1, 3, 0, -1, 334]);
    assert_eq!(
        out[1],
        [0, 3, 0, 1, 1],
        "333 ms is ⅓ ms early: retry rounds up to 1"
    );
    assert_eq!(out[2][0], 1);
    assert_eq!(out[3], [0, 3, 0, 1, 1], "the next slot is 334 + 333⅓");
    assert_eq!(out[4][0], 1);
    // The exact slot: 333,333⅓ µs after the first request.
    let first = gcra(r, None, at(0), 1).new;
    assert!(!gcra(r, first, at(0) + 333_333, 1).reply.allowed);
    assert!(gcra(r, first, at(0) + 333_334, 1).reply.allowed);
}

#[test]
fn gcra_is_exact_below_the_millisecond() {
    // 100,000 per second with no tolerance: one request every 10 µs.
    // Requests every 2.5 µs for 50 ms pass once every 10 µs exactly,
    // where a millisecond clock let one through per millisecond.
    let r = rule(100_000, 1000, 1);
    let mut tat = None;
    let mut n = 0;
    for i in 0..20_000 {
        let t = at(0) + i * 5 / 2;
        let s = gcra(r, tat, t, 1);
        if s.reply.allowed {
            n += 1;
            tat = s.new;
        }
    }
    assert_eq!(n, 5000);
    // A fresh state starts at the exact instant, not the millisecond.
    let s = gcra(r, None, at(0) + 999, 1);
    // 999 + 10 µs = 1 ms + 9 µs = 1 ms + 900,000 / 100,000,000 ms.
    let t = s.new.unwrap();
    assert_eq!(
        t.format().as_bytes(),
        format!("gcra:{}:900000:100000000", T0 + 1).as_bytes()
    );
    assert!(!gcra(r, s.new, at(1) + 8, 1).reply.allowed);
    assert!(gcra(r, s.new, at(1) + 9, 1).reply.allowed);
}

#[test]
fn gcra_is_exact_at_100k_per_second() {
    let r = rule(100_000, 1000, 100_000);
    let mut tat = None;
    for _ in 0..100_000 {
        let s = gcra(r, tat, at(0), 1);
        assert!(s.reply.allowed);
        tat = s.new;
    }
    let denied = gcra(r, tat, at(0), 1).reply;
    assert_eq!(
        denied.fields(),
        [0, 100_000, 0, 1, 1000],
        "a 10 µs wait rounds up to 1 ms"
    );
    // One millisecond later exactly 100 more pass.
    let mut n = 0;
    loop {
        let s = gcra(r, tat, at(1), 1);
        if !s.reply.allowed {
            break;
        }
        tat = s.new;
        n += 1;
    }
    assert_eq!(n, 100);
}

#[test]
fn gcra_is_exact_over_a_day() {
    // 7 per day: spacing 12,342,857.142857… ms.
    let day = 86_400_000;
    let r = rule(7, day, 1);
    let first = gcra(r, None, at(0), 1);
    let second = gcra(r, first.new, at(0), 1).reply;
    assert_eq!(second.retry_ms, 12_342_858, "ceil(86400000/7)");
    // Hammered every second for a week with a burst of 2: 2 + 7×7 pass,
    // no more, no less (the fractions of a microsecond add up exactly).
    let r = rule(7, day, 2);
    let mut tat = None;
    let mut n = 0;
    let mut t = 0;
    while t <= 7 * day {
        let s = gcra(r, tat, at(t), 1);
        if s.reply.allowed {
            n += 1;
            tat = s.new;
        }
        t += 1000;
    }
    assert_eq!(n, 2 + 49);
}

#[test]
fn gcra_admits_exactly_burst_plus_rate_under_constant_demand() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..200 {
        // At most one slot per microsecond (limit ≤ period-µs), so
        // that demand on every microsecond can use every slot. A burst
        // of 1 has no tolerance: a request arriving later than its slot
        // restarts the schedule, so the exact count holds from 2.
        let limit = rng.gen_range(1..5000);
        let period = rng.gen_range(limit / 1000 + 1..40);
        let burst = rng.gen_range(2..20);
        let r = rule(limit, period, burst);
        let m = rng.gen_range(0..20_000i64);
        let mut tat = None;
        let mut n = 0i64;
        for t in 0..=m {
            loop {
                let s = gcra(r, tat, at(0) + t, 1);
                if !s.reply.allowed {
                    break;
                }
                tat = s.new;
                n += 1;
            }
        }
        assert_eq!(n, burst + m * limit / (period * US), "{r:?} over {m} µs");
    }
}

#[test]
fn cost_and_refusal_consume_nothing() {
    let r = rule(5, 1000, 5);
    let s = gcra(r, None, at(0), 3);
    assert_eq!(s.reply.fields(), [1, 5, 2, -1, 600]);
    let refused = gcra(r, s.new, at(0), 3);
    assert_eq!(refused.reply.fields(), [0, 5, 2, 200, 600]);
    assert_eq!(refused.new, None);
    let never = gcra(r, s.new, at(0), 6);
    assert_eq!(
        never.reply.fields(),
        [0, 5, 2, -1, 600],
        "more than the burst never passes"
    );
    let peek = gcra(r, s.new, at(0), 0);
    assert_eq!(peek.reply.fields(), [1, 5, 2, -1, 600]);
    assert_eq!(peek.new, None);
}

#[test]
fn tat_round_trips_and_rejects_garbage() {
    let t = Tat {
        ms: T0,
        num: 2,
        den: 3000,
    };
    assert_eq!(Tat::parse(t.format().as_bytes()), Some(t));
    for bad in [
        &b"gcra:1:3:3"[..],
        b"gcra:1:0:0",
        b"gcra:1:2",
        b"gcra:-1:0:1",
        b"123",
        b"fixed:1:2",
        b"gcra:01:0:1",
        b"gcra:9000000000001:0:1",
        b"gcra:1:0:1000000000000001",
        b"gcra:1:0:1:",
    ] {
        assert_eq!(Tat::parse(bad), None, "{}", String::from_utf8_lossy(bad));
    }
    assert_eq!(parse_text(b"gcra:x"), Text::Corrupt);
    assert_eq!(parse_text(b"fixed:1"), Text::Corrupt);
    assert_eq!(parse_text(b"hello"), Text::Foreign);
    assert_eq!(parse_text(b"12345"), Text::Foreign);
    // 2/3000 ms (⅔ µs) with another limit (5) is rounded up to the
    // next 1/5 µs: 0.8 µs = 4 units.
    assert_eq!(t.debt(at(0), 5), 4);
}

#[test]
fn millisecond_states_read_exactly() {
    // The format of the previous version: `ms + num/limit` ms. Its
    // debt is the same in microseconds, so an upgrade changes nothing.
    let old = Tat {
        ms: T0 + 72_000,
        num: 2,
        den: 3,
    };
    let r = rule(3, 60_000, 5);
    let s = gcra(r, Some(old), at(0), 1);
    // 72,000⅔ ms of debt at 20,000 ms per request: 3.6 requests, so
    // 1 more passes (4.6 ≤ 5) and none after it.
    assert!(s.reply.allowed);
    assert_eq!(s.reply.remaining, 0);
    let t = s.new.unwrap();
    assert_eq!((t.ms, t.num, t.den), (T0 + 92_000, 2000, 3000));
    assert_eq!(
        t.debt(at(0), 3),
        old.debt(at(0), 3) + 20_000 * US as i128 * 3
    );
}

#[test]
fn throttle_matches_redis_cell_documented_reply() {
    // CL.THROTTLE user123 15 30 60 on a fresh key → 0 16 15 -1 2
    let r = rule(30, 60_000, 16);
    let s = gcra(r, None, at(0), 1);
    assert_eq!(throttle_reply(r, &s), [0, 16, 15, -1, 2]);
}

#[test]
fn throttle_replays_redis_cell_test_table() {
    // redis-cell's own table: max_burst 4, 1 per second.
    let r = rule(1, 1000, 5);
    let cases: [(i64, i64, [i64; 5]); 15] = [
        (0, 6, [1, 5, 5, -1, 0]),
        (0, 1, [0, 5, 4, -1, 1]),
        (0, 1, [0, 5, 3, -1, 2]),
        (0, 1, [0, 5, 2, -1, 3]),
        (0, 1, [0, 5, 1, -1, 4]),
        (0, 1, [0, 5, 0, -1, 5]),
        (0, 1, [1, 5, 0, 1, 5]),
        (3000, 1, [0, 5, 2, -1, 3]),
        (3100, 1, [0, 5, 1, -1, 4]),
        (4000, 1, [0, 5, 1, -1, 4]),
        (8000, 1, [0, 5, 4, -1, 1]),
        (9500, 1, [0, 5, 4, -1, 1]),
        (9500, 0, [0, 5, 4, -1, 1]),
        (9500, 2, [0, 5, 2, -1, 3]),
        (9500, 5, [1, 5, 2, 3, 3]),
    ];
    let mut tat = None;
    for (i, (t, qty, want)) in cases.iter().enumerate() {
        let s = gcra(r, tat, at(*t), *qty);
        if s.new.is_some() {
            tat = s.new;
        }
        assert_eq!(throttle_reply(r, &s), *want, "case {i}");
    }
}

#[test]
fn throttle_cuts_to_milliseconds_before_rounding_to_seconds() {
    // 1 per second, no burst: a wait of 999,999 µs is 999 ms, so 1 s;
    // a wait of 1,000,500 µs is 1,000 ms, so still 1 s (redis-cell
    // looks at the millisecond part only).
    let r = rule(1, 1000, 1);
    let first = gcra(r, None, at(0), 1);
    let s = gcra(r, first.new, at(0) + 1, 1);
    assert_eq!(throttle_reply(r, &s)[3], 1);
    let s = gcra(r, first.new, at(0), 2);
    assert_eq!(throttle_reply(r, &s)[3], -1, "more than the burst");
}

#[test]
fn multi_consumes_only_when_every_rule_allows() {
    let per_sec = MultiRule {
        rule: rule(2, 1000, 2),
        key: 0,
    };
    let per_min = MultiRule {
        rule: rule(3, 60_000, 3),
        key: 1,
    };
    let rules = [per_sec, per_min];
    let mut st: Vec<Option<Tat>> = vec![None, None];
    let merge = |st: &[Option<Tat>], o: &MultiOutcome| -> Vec<Option<Tat>> {
        o.new
            .iter()
            .zip(st)
            .map(|(n, old)| n.map(|(t, _)| t).or(*old))
            .collect()
    };
    for _ in 0..2 {
        let o = multi(&rules, &st, at(0), 1);
        assert!(o.reply.allowed);
        st = merge(&st, &o);
    }
    let o = multi(&rules, &st, at(0), 1);
    assert_eq!(
        o.reply.fields(),
        [0, 2, 0, 500, 1000],
        "the per-second rule is the tightest"
    );
    assert_eq!(
        o.new,
        vec![None, None],
        "the per-minute rule consumed nothing"
    );
    let o = multi(&rules, &st, at(500), 1);
    assert!(o.reply.allowed);
    assert_eq!(
        (o.reply.limit, o.reply.remaining),
        (2, 0),
        "both have none left: the first wins the tie"
    );
    assert_eq!(
        o.new[0].unwrap().1,
        1000 * US,
        "time to live of the first key"
    );
    st = merge(&st, &o);
    let o = multi(&rules, &st, at(1000), 1);
    assert_eq!(
        o.reply.fields(),
        [0, 3, 0, 19_000, 59_000],
        "the per-minute rule now waits longest"
    );
}

#[test]
fn multi_sees_earlier_rules_on_the_same_key() {
    let rules = [
        MultiRule {
            rule: rule(1, 1000, 1),
            key: 0,
        },
        MultiRule {
            rule: rule(1, 1000, 1),
            key: 0,
        },
    ];
    let o = multi(&rules, &[None], at(0), 1);
    assert!(!o.reply.allowed);
    assert_eq!(o.new, vec![None]);
}

#[test]
fn fixed_counts_per_aligned_window() {
    let mut st = None;
    let mut call = |t: i64, c: i64| {
        let (r, n) = fixed(3, 1000, st, t, c);
        if let Some((w, _)) = n {
            st = Some(w);
        }
        r.fields()
    };
    let t = 5_000_900 * US;
    assert_eq!(call(t, 1), [1, 3, 2, -1, 100]);
    assert_eq!(call(t + 50 * US, 2), [1, 3, 0, -1, 50]);
    assert_eq!(
        call(t + 99 * US + 1, 1),
        [0, 3, 0, 1, 1],
        "the window ends at the next multiple; 999 µs round up"
    );
    assert_eq!(
        call(t + 100 * US, 3),
        [1, 3, 0, -1, 1000],
        "a new window starts full"
    );
    assert_eq!(
        call(t + 100 * US, 4),
        [0, 3, 0, -1, 1000],
        "more than the limit never passes"
    );
    assert_eq!(
        Window::parse(b"fixed:5001000:3"),
        Some(Window {
            start: 5_001_000,
            count: 3
        })
    );
    assert_eq!(Window::parse(b"fixed:1"), None);
    assert_eq!(Window::parse(b"fixed:1:1000000000001"), None);
    let (_, n) = fixed(3, 1000, None, t + 1, 1);
    assert_eq!(
        n.unwrap().1,
        100 * US - 1,
        "time to live: the end of the window"
    );
}

#[test]
fn sliding_weighs_the_previous_window() {
    // 10 per second; the previous window was full; 25% into this one
    // the estimate is 10 × 0.75 + count.
    let st = Some(Sliding {
        window: 4_000_000,
        count: 10,
        prev: 0,
    });
    let ms = |t: i64| t * US;
    let (r1, st1) = sliding(10, 1000, st, ms(4_001_250), 1);
    assert_eq!(r1.fields(), [1, 10, 1, -1, 1750]);
    let (r2, st2) = sliding(10, 1000, st1, ms(4_001_250), 1);
    assert_eq!(r2.fields(), [1, 10, 0, -1, 1750]);
    let (r3, none) = sliding(10, 1000, st2, ms(4_001_250), 1);
    assert_eq!(
        r3.fields(),
        [0, 10, 0, 50, 1750],
        "at 300 ms 10×0.7 + 3 = 10"
    );
    assert_eq!(none, None);
    assert!(!sliding(10, 1000, st2, ms(4_001_300) - 1, 1).0.allowed);
    assert!(sliding(10, 1000, st2, ms(4_001_300), 1).0.allowed);
    // Over the limit in this window alone: wait for the next one.
    let full = Some(Sliding {
        window: 4_001_000,
        count: 10,
        prev: 0,
    });
    let (r5, _) = sliding(10, 1000, full, ms(4_001_400), 1);
    assert_eq!(
        r5.fields(),
        [0, 10, 0, 700, 1600],
        "at 100 ms into the next: 10×0.9 + 1"
    );
}

#[test]
fn log_is_exact() {
    let mut entries: Vec<i64> = Vec::new();
    for t in [0, 100, 200] {
        let (r, add) = log(3, 1000, &entries, at(t), 1);
        assert!(r.allowed && add);
        entries.push(at(t));
    }
    let (r, add) = log(3, 1000, &entries, at(999), 1);
    assert_eq!((r.fields(), add), ([0, 3, 0, 1, 201], false));
    let (r, _) = log(3, 1000, &entries, at(999), 2);
    assert_eq!(r.retry_ms, 101, "two must leave: the second oldest at 100");
    assert!(
        !log(3, 1000, &entries, at(1000) - 1, 1).0.allowed,
        "1 µs early"
    );
    let (r, _) = log(3, 1000, &entries, at(1000), 1);
    assert_eq!(r.fields(), [1, 3, 0, -1, 1000]);
}

#[test]
fn log_scales_name_and_score_entries() {
    let t = at(0) + 123;
    let mut m = Vec::new();
    LogScale::Micros.member(t, 7, &mut m);
    assert_eq!(m, format!("{t}-7").as_bytes());
    assert_eq!(LogScale::of_member(&m), LogScale::Micros);
    LogScale::Micros.member(5, 0, &mut m);
    assert_eq!(m, b"0000000000000005-0", "zero-padded: names sort by time");
    assert_eq!(LogScale::of_member(&m), LogScale::Micros);
    LogScale::Millis.member(at(0), 3, &mut m);
    assert_eq!(m, format!("{T0}-3").as_bytes());
    assert_eq!(LogScale::of_member(&m), LogScale::Millis);
    assert_eq!(LogScale::Micros.score(t), t as f64);
    assert_eq!(LogScale::Micros.time(t as f64), Some(t));
    assert_eq!(LogScale::Millis.truncate(t), at(0));
    assert_eq!(LogScale::Millis.score(at(0)), T0 as f64);
    assert_eq!(LogScale::Millis.time(T0 as f64), Some(at(0)));
    assert_eq!(LogScale::Micros.time(1.5), None);
    assert_eq!(LogScale::Micros.time(f64::INFINITY), None);
    assert_eq!(LogScale::Micros.time(1e17), None);
}

#[test]
fn string_states_round_trip() {
    let s = Sliding {
        window: T0,
        count: 3,
        prev: 10,
    };
    assert_eq!(parse_text(s.format().as_bytes()), Text::Sliding(s));
    let b = Bucket {
        tokens: 4,
        carry: 999,
        ts: at(0) + 5,
    };
    assert_eq!(parse_text(b.format().as_bytes()), Text::Bucket(b));
    for bad in [
        &b"sliding:1:2"[..],
        b"sliding:1:2:x",
        b"bucket:",
        b"bucket:1:2:3:4",
        b"sliding:1:2:1000000000001",
    ] {
        assert_eq!(
            parse_text(bad),
            Text::Corrupt,
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(parse_text(b"slidingx"), Text::Foreign);
}

#[test]
fn log_matches_brute_force() {
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..50 {
        let limit = rng.gen_range(1..8);
        let period = rng.gen_range(1..200);
        let mut entries: Vec<i64> = Vec::new();
        let mut t = at(0);
        for _ in 0..300 {
            t += rng.gen_range(0..40_000);
            let cost = rng.gen_range(0..4);
            let inside = entries
                .iter()
                .filter(|&&e| e > t - period * US && e <= t)
                .count() as i64;
            let (r, add) = log(limit, period, &entries, t, cost);
            assert_eq!(r.allowed, cost <= limit && inside + cost <= limit);
            if add {
                entries.extend(std::iter::repeat_n(t, cost as usize));
            }
            if !r.allowed && r.retry_ms > 0 {
                let later = t + r.retry_ms * US;
                let (ok, _) = log(limit, period, &entries, later, cost);
                assert!(ok.allowed, "waiting retry-after passes");
                let (early, _) = log(limit, period, &entries, later - US, cost);
                assert!(!early.allowed, "retry-after is the earliest millisecond");
            }
        }
    }
}

#[test]
fn bucket_refills_continuously() {
    let r = rule(1, 1000, 5);
    let mut st = None;
    for i in 0..5 {
        let (rep, n) = bucket(r, st, at(0), 1);
        assert_eq!(rep.fields(), [1, 1, 4 - i, -1, 1000 * (i + 1)]);
        st = n.map(|(b, _)| b);
    }
    let (rep, n) = bucket(r, st, at(0), 1);
    assert_eq!((rep.fields(), n), ([0, 1, 0, 1000, 5000], None));
    assert_eq!(bucket(r, st, at(500), 1).0.retry_ms, 500);
    assert!(!bucket(r, st, at(1000) - 1, 1).0.allowed);
    assert!(bucket(r, st, at(1000), 1).0.allowed);
    assert_eq!(bucket(r, st, at(1000), 2).0.fields(), [0, 1, 1, 1000, 4000]);
}

#[test]
fn bucket_reads_millisecond_states_exactly() {
    // tokens 2, carry 400 of 1000 (0.4 token) at T0 in ms, 1 per
    // second, burst 5: the same bucket in µs.
    let r = rule(1, 1000, 5);
    let old = Bucket::from_ms(2, 400, T0, 1000);
    assert_eq!(
        old,
        Bucket {
            tokens: 2,
            carry: 400_000,
            ts: at(0)
        }
    );
    let (rep, _) = bucket(r, Some(old), at(600), 3);
    assert!(rep.allowed, "2.4 + 0.6 = 3 tokens");
    assert!(!bucket(r, Some(old), at(600) - 1, 3).0.allowed);
}

#[test]
fn bucket_and_gcra_agree_on_random_streams() {
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..200 {
        let r = rule(
            rng.gen_range(1..30),
            rng.gen_range(1..500),
            rng.gen_range(1..10),
        );
        let (mut tat, mut b) = (None, None);
        let mut t = at(0);
        for _ in 0..200 {
            t += rng.gen_range(0..60_000);
            let cost = rng.gen_range(0..4);
            let g = gcra(r, tat, t, cost);
            let (k, nb) = bucket(r, b, t, cost);
            assert_eq!(g.reply, k, "{r:?} at {t} cost {cost}");
            if g.new.is_some() {
                tat = g.new;
            }
            if let Some((nb, ttl)) = nb {
                assert_eq!(ttl, g.reset_us(), "both expire when full");
                b = Some(nb);
            }
        }
    }
}

#[test]
fn retry_after_is_never_early_and_never_late() {
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..300 {
        let r = rule(
            rng.gen_range(1..40),
            rng.gen_range(1..3000),
            rng.gen_range(1..8),
        );
        let mut tat = None;
        let mut sl = None;
        let mut t = at(0);
        for _ in 0..100 {
            t += rng.gen_range(0..50_000);
            let cost = rng.gen_range(1..4);
            let g = gcra(r, tat, t, cost);
            if let Some(n) = g.new {
                tat = Some(n);
            } else if g.reply.retry_ms > 0 {
                let later = t + g.reply.retry_ms * US;
                assert!(gcra(r, tat, later, cost).reply.allowed);
                assert!(!gcra(r, tat, later - US, cost).reply.allowed);
            }
            let (s, n) = sliding(r.limit, r.period_ms, sl, t, cost);
            if n.is_some() {
                sl = n;
            } else if s.retry_ms > 0 {
                let later = t + s.retry_ms * US;
                assert!(sliding(r.limit, r.period_ms, sl, later, cost).0.allowed);
                assert!(
                    !sliding(r.limit, r.period_ms, sl, later - US, cost)
                        .0
                        .allowed
                );
            }
        }
    }
}

#[test]
fn millisecond_instants_give_the_previous_replies() {
    // With NOW in whole milliseconds every algorithm answers as the
    // millisecond version did (checked on a few known replies).
    let r = rule(7, 86_400_000, 1);
    assert_eq!(
        gcra(r, None, at(0), 1).reply.fields(),
        [1, 7, 0, -1, 12_342_858]
    );
    // A multiple of a minute.
    assert_eq!(
        sliding(100, 60_000, None, 1_764_720_000_000 * US, 1)
            .0
            .fields(),
        [1, 100, 99, -1, 120_000]
    );
    assert_eq!(
        bucket(rule(5, 1000, 50), None, at(0), 20).0.fields(),
        [1, 5, 30, -1, 4000]
    );
}

#[test]
fn rule_bounds() {
    assert!(
        !rule(1, 86_400_000, 1_000_000).fits(Algo::Gcra),
        "one per day with a burst of a million: 2,700 years to refill"
    );
    assert!(rule(1_000_000, 86_400_000, 1_000_000).fits(Algo::Gcra));
    assert!(rule(100_000_000, 86_400_000, 50_000_000).fits(Algo::Gcra));
    assert!(rule(1000, 1000, 1_000_000_000_000).fits(Algo::Bucket));
    assert!(
        !rule(1, 1_000_000_000_000, 10).fits(Algo::Gcra),
        "317 years"
    );
    assert!(rule(1, 1_000_000_000_000, 4).fits(Algo::Gcra));
    assert!(rule(10_000, 1_000_000_000_000, 1).fits(Algo::Sliding));
    assert!(rule(10_000, 1_000_000_000_000, 1).fits(Algo::Fixed));
}

#[test]
fn extreme_rules_stay_exact() {
    // The largest values the handlers accept: no overflow, and the
    // replies stay consistent.
    let r = rule(MAX_COUNT, MAX_PERIOD_MS, MAX_COUNT);
    assert!(r.fits(Algo::Gcra));
    let now = MAX_NOW_MS * US;
    let s = gcra(r, None, now, MAX_COUNT);
    assert_eq!(s.reply.fields(), [1, MAX_COUNT, 0, -1, MAX_PERIOD_MS]);
    let t = s.new.unwrap();
    assert!(t.ms <= MAX_STORED_MS);
    assert_eq!(Tat::parse(t.format().as_bytes()), Some(t));
    let refused = gcra(r, Some(t), now, 1);
    assert_eq!(refused.reply.retry_ms, 1);
    let (rep, _) = sliding(MAX_COUNT, MAX_PERIOD_MS, None, now, MAX_COUNT);
    assert!(rep.allowed);
    let (rep, n) = bucket(r, None, now, MAX_COUNT);
    assert_eq!(rep.fields(), [1, MAX_COUNT, 0, -1, MAX_PERIOD_MS]);
    assert!(n.unwrap().0.ts <= MAX_STORED_US);
}

#[test]
fn a_log_write_drops_a_bounded_number_and_numbers_after_its_instant() {
    let never = || -> i64 { panic!("entries at now read") };
    let w = plan_log_write(
        LogScale::Micros,
        at(10),
        at(10),
        Some(at(5)),
        300,
        2,
        128,
        60_000,
        never,
    );
    assert_eq!(w.drop, 130);
    assert_eq!(w.score, at(10) as f64);
    assert_eq!(w.first, 0);
    assert_eq!(w.ttl_us, 60_000 * US);
    // The newest entry at the same instant: numbering goes on after the
    // entries there; the expiry counts from the command's own instant.
    let w = plan_log_write(
        LogScale::Millis,
        at(10),
        at(10) + 400,
        Some(at(10)),
        0,
        1,
        128,
        1000,
        || 3,
    );
    assert_eq!((w.drop, w.first), (0, 3));
    assert_eq!(w.score, (at(10) / US) as f64);
    assert_eq!(w.ttl_us, 1000 * US - 400);
    // A clock that went back: the window ends a period after the newest.
    let w = plan_log_write(
        LogScale::Micros,
        at(10),
        at(10),
        Some(at(20)),
        0,
        1,
        128,
        1000,
        never,
    );
    assert_eq!(w.ttl_us, 10 * US + 1000 * US);
    let w = plan_log_write(
        LogScale::Micros,
        at(10),
        at(10),
        None,
        0,
        1,
        128,
        1000,
        never,
    );
    assert_eq!((w.first, w.ttl_us), (0, 1000 * US));
}
