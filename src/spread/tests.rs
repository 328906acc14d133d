//! Unit tests of the routing spec: the slot function against Redis's own
//! reference values, the computed slot-tag table against its definition,
//! the spacing of shards for every shard count, the shard of an id, and
//! the shared test vectors of docs/spread-vectors.json.

use super::route::*;

#[test]
fn crc16_is_xmodem() {
    // The check value of CRC-16/XMODEM, and Redis Cluster's documented slots.
    assert_eq!(crc16(b"123456789"), 0x31c3);
    assert_eq!(key_slot(b"123456789"), 12739);
    assert_eq!(key_slot(b"foo"), 12182);
    assert_eq!(key_slot(b"bar"), 5061);
    assert_eq!(key_slot(b"hello"), 866);
    assert_eq!(key_slot(b""), 0);
}

#[test]
fn hash_tags_follow_redis_rules() {
    assert_eq!(hashed_part(b"{user1000}.following"), b"user1000");
    assert_eq!(
        key_slot(b"{user1000}.following"),
        key_slot(b"{user1000}.followers")
    );
    // An empty tag hashes the whole key; only the first `{` counts, and
    // the first `}` after it.
    assert_eq!(hashed_part(b"foo{}{bar}"), b"foo{}{bar}");
    assert_eq!(hashed_part(b"foo{{bar}}zap"), b"{bar");
    assert_eq!(hashed_part(b"foo{bar}{zap}"), b"bar");
    assert_eq!(hashed_part(b"{"), b"{");
    assert_eq!(hashed_part(b"}{"), b"}{");
    assert_eq!(hashed_part(b"a{b"), b"a{b");
    // The module's own hash-tag test agrees with the spec.
    for k in [&b"a{b}"[..], b"{}", b"{}{x}", b"x}{y}", b"{{}}", b"plain"] {
        assert_eq!(
            crate::util::has_hash_tag(k),
            hashed_part(k).len() != k.len(),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
}

#[test]
fn slot_tag_table_is_the_generator_output() {
    let generated = generate_slot_tags();
    assert_eq!(generated.len(), slot_tags().len());
    for (slot, (table, gen)) in slot_tags().iter().zip(&generated).enumerate() {
        assert_eq!(table, gen, "slot {slot}");
        assert_eq!(usize::from(key_slot(table.as_bytes())), slot);
        assert!(table.len() <= 3 && table.bytes().all(|c| c.is_ascii_alphanumeric()));
    }
}

#[test]
fn slot_tags_move_any_key_to_their_slot() {
    for slot in [0u16, 1, 777, 5460, 5461, 16383] {
        let mut key = format!("{{{}}}", slot_tag(slot)).into_bytes();
        key.extend_from_slice(b"post:{9}:set");
        assert_eq!(key_slot(&key), slot);
    }
}

/// Sorted distinct slots of all shards of `base`; panics on a duplicate.
fn ring(base: &[u8], n: u32) -> Vec<u16> {
    let mut slots: Vec<u16> = (0..n).map(|i| shard_slot(base, n, i)).collect();
    slots.sort_unstable();
    let before = slots.len();
    slots.dedup();
    assert_eq!(slots.len(), before, "{n} shards share a slot");
    slots
}

#[test]
fn every_shard_count_gets_distinct_evenly_spaced_slots() {
    let lo = SLOTS / 1024;
    for base in [&b"post:9"[..], b"post:{9}", b"", b"bag:live42"] {
        for n in 1..=MAX_SHARDS {
            let slots = ring(base, n);
            let (floor, ceil) = (SLOTS / n, SLOTS.div_ceil(n));
            for w in 0..slots.len() {
                let a = u32::from(slots[w]);
                let b = u32::from(slots[(w + 1) % slots.len()]);
                let gap = (b + SLOTS - a) % SLOTS;
                let gap = if gap == 0 { SLOTS } else { gap };
                assert!(gap == floor || gap == ceil, "n {n}: gap {gap}");
                assert!(gap >= lo);
            }
            // Shard 0 sits at the base key's own slot.
            assert_eq!(shard_slot(base, n, 0), key_slot(base));
        }
    }
}

/// Counts the shards of `base` on each of `masters` evenly sliced masters
/// (as `redis-cli --cluster create` slices: master `m` serves slots
/// `floor(m·16384/M) … floor((m+1)·16384/M) − 1`).
fn per_master(base: &[u8], n: u32, masters: u32) -> Vec<u32> {
    let mut counts = vec![0u32; masters as usize];
    for i in 0..n {
        let s = u32::from(shard_slot(base, n, i));
        let m = (0..masters)
            .rev()
            .find(|&m| s >= m * SLOTS / masters)
            .unwrap();
        counts[m as usize] += 1;
    }
    counts
}

#[test]
fn shards_never_pile_onto_one_master() {
    // 16 shards over 3 masters: 5, 5 and 6 (never more than 6/16 on one).
    for k in 0..2000u32 {
        let base = format!("post:{k}");
        let c = per_master(base.as_bytes(), 16, 3);
        assert_eq!(c.iter().sum::<u32>(), 16);
        assert!(c.iter().all(|&x| x == 5 || x == 6), "{base}: {c:?}");
    }
    // Any count over 2 to 10 masters: within one shard of an even share.
    for masters in 2..=10u32 {
        for n in 1..=MAX_SHARDS {
            for base in [&b"post:9"[..], b"bag:{7}"] {
                let c = per_master(base, n, masters);
                for (m, &x) in c.iter().enumerate() {
                    let first = m as u32 * SLOTS / masters;
                    let width = (m as u32 + 1) * SLOTS / masters - first;
                    let fair = f64::from(n) * f64::from(width) / f64::from(SLOTS);
                    assert!(
                        (f64::from(x) - fair).abs() < 1.0 + 1e-9,
                        "n {n} masters {masters}: {c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn shard_keys_carry_their_slot_tag_first() {
    let keys = shard_keys(b"post:{9}", 16);
    assert_eq!(keys.len(), 16);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(key_slot(k), shard_slot(b"post:{9}", 16, i as u32));
        // Derived keys of a shard stay in its slot.
        let mut set = k.clone();
        set.extend_from_slice(b":set");
        assert_eq!(key_slot(&set), key_slot(k));
        let (tag, base) = split_shard_key(k).unwrap();
        assert_eq!(base, b"post:{9}");
        assert_eq!(slot_tag(key_slot(k)), tag);
    }
    assert_eq!(split_shard_key(b"post:9"), None);
    assert_eq!(split_shard_key(b"{}post:9"), None);
    // A tag that is not the table's tag of its slot is not a shard key.
    assert_eq!(split_shard_key(b"{zzzz}post:9"), None);
}

#[test]
fn integer_ids_parse_like_redis() {
    let cases: &[&[u8]] = &[
        b"0",
        b"7",
        b"-7",
        b"-0",
        b"007",
        b"+5",
        b" 5",
        b"5 ",
        b"1e3",
        b"",
        b"-",
        b"9223372036854775807",
        b"9223372036854775808",
        b"-9223372036854775808",
        b"-9223372036854775809",
        b"99999999999999999999",
        b"alice",
        b"12a",
    ];
    for c in cases {
        assert_eq!(
            parse_int_id(c),
            crate::args::parse_i64_plain(c),
            "{}",
            String::from_utf8_lossy(c)
        );
    }
    // Random short byte strings over digits and '-' agree too.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 21) as usize;
        let s: Vec<u8> = (0..len)
            .map(|k| b"-0123456789"[((x >> (k * 3)) % 11) as usize])
            .collect();
        assert_eq!(parse_int_id(&s), crate::args::parse_i64_plain(&s));
    }
}

#[test]
fn shard_of_is_mod_n_for_integers_and_fnv_otherwise() {
    assert_eq!(shard_of(b"17", 16), 1);
    assert_eq!(shard_of(b"-1", 16), 15);
    assert_eq!(shard_of(b"-1", 3), 2);
    assert_eq!(shard_of(b"9223372036854775807", 10), 7);
    assert_eq!(shard_of(b"-9223372036854775808", 1024), 0);
    assert_eq!(shard_of(b"alice", 16), fnv1a32(b"alice") % 16);
    assert_eq!(shard_of(b"007", 10), fnv1a32(b"007") % 10);
    assert_eq!(fnv1a32(b""), 0x811c_9dc5);
    assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    // For power-of-two counts it is LUCKYBAG's internal shard rule.
    let ids: &[&[u8]] = &[
        b"0",
        b"5",
        b"-1",
        b"-12345",
        b"i64",
        b"007",
        b"",
        b"9223372036854775807",
    ];
    for n in (0..=10).map(|p| 1u32 << p) {
        for id in ids {
            assert_eq!(
                u64::from(shard_of(id, n)),
                crate::luckybag::model::shard_of(id, u64::from(n))
            );
        }
    }
}

#[test]
fn like_ids_are_stored_dense() {
    for n in [1u32, 3, 16, 1000, 1024] {
        for id in [0u64, 1, 15, 16, 1001, 4_294_967_295, u64::MAX] {
            let (s, stored) = like_slot_of(id, n);
            assert!(s < n);
            assert_eq!(like_id_of(s, stored, n), Some(id));
        }
    }
    // Ids 0 … 16k over 16 shards: each shard stores 0 … 1k.
    for id in 0..16_384u64 {
        assert!(like_slot_of(id, 16).1 < 1024);
    }
    assert_eq!(like_id_of(0, u64::MAX, 2), None);
}

#[test]
fn shared_test_vectors_hold() {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/spread-vectors.json")).unwrap();
    let s = |x: &serde_json::Value| x.as_str().unwrap().as_bytes().to_vec();
    let u = |x: &serde_json::Value| x.as_u64().unwrap();
    let mut checked = 0;
    for c in v["key_slot"].as_array().unwrap() {
        assert_eq!(u64::from(key_slot(&s(&c["key"]))), u(&c["slot"]), "{c}");
        checked += 1;
    }
    for c in v["slot_tag"].as_array().unwrap() {
        assert_eq!(slot_tag(u(&c["slot"]) as u16), c["tag"].as_str().unwrap());
        checked += 1;
    }
    for c in v["shard_keys"].as_array().unwrap() {
        let base = s(&c["base"]);
        let n = u(&c["shards"]) as u32;
        if let Some(keys) = c["keys"].as_array() {
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(shard_key(&base, n, i as u32), s(k), "{c}");
                assert_eq!(u64::from(shard_slot(&base, n, i as u32)), u(&c["slots"][i]));
                checked += 1;
            }
        } else {
            for (i, slot) in c["first_slots"].as_array().unwrap().iter().enumerate() {
                assert_eq!(u64::from(shard_slot(&base, n, i as u32)), u(slot));
            }
            assert_eq!(shard_key(&base, n, n - 1), s(&c["last_key"]));
            checked += 1;
        }
    }
    for c in v["shard_of"].as_array().unwrap() {
        let n = u(&c["shards"]) as u32;
        assert_eq!(u64::from(shard_of(&s(&c["id"]), n)), u(&c["shard"]), "{c}");
        checked += 1;
    }
    for c in v["like"].as_array().unwrap() {
        let (shard, stored) = like_slot_of(u(&c["id"]), u(&c["shards"]) as u32);
        assert_eq!(
            (u64::from(shard), stored),
            (u(&c["shard"]), u(&c["stored"]))
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn shard_index_inverts_shard_key() {
    for base in [&b"post:9"[..], b"post:{9}", b"{06S}x", b"bag:live42"] {
        for n in [1u32, 2, 3, 7, 16, 100, 1000, 1024] {
            for i in 0..n {
                let key = shard_key(base, n, i);
                assert_eq!(shard_index(&key, n), Some(i), "{n} {i}");
                assert_eq!(shard_base(&key), Some(base));
                // Under another count the key is a shard key only where the
                // two rings share that slot, and then it is that shard.
                for m in [1u32, 4, 8, 16, 1024] {
                    if let Some(j) = shard_index(&key, m) {
                        assert_eq!(shard_key(base, m, j), key);
                    }
                }
            }
            assert_eq!(shard_index(&shard_key(base, n, 0), 0), None);
            assert_eq!(shard_index(&shard_key(base, n, 0), 1025), None);
        }
    }
    // Keys that are not shard keys at all.
    for key in [&b"post:9"[..], b"{}post", b"{zzzz}post", b"{x", b"", b"{"] {
        assert_eq!(shard_index(key, 16), None);
    }
    // A tag that is not the table's tag of its slot.
    let key = b"{post}x";
    assert_eq!(shard_index(key, 1), None);
}

// ---- the one spread scope (scope.rs) and the shard decision (shard.rs) ----

fn text(e: redis_module::RedisError) -> String {
    match e {
        redis_module::RedisError::Str(s) => s.to_string(),
        redis_module::RedisError::String(s) => s,
        other => format!("{other:?}"),
    }
}

#[test]
fn the_spread_keyword_ignores_case_only() {
    use super::scope::is_keyword;
    for yes in [&b"SPREAD"[..], b"spread", b"SpReAd"] {
        assert!(is_keyword(yes));
    }
    for no in [&b""[..], b"SPREADS", b"SPREA", b" SPREAD", b"NOW"] {
        assert!(!is_keyword(no));
    }
}

#[test]
fn a_trailing_spread_is_read_once_for_every_cursor() {
    use super::scope::trailing;
    let args: Vec<&[u8]> = vec![b"LIKE.CHECK", b"k", b"1", b"2", b"spread", b"4"];
    assert_eq!(trailing("like", &args, 3).map_err(text), Ok((4, Some(4))));
    // Too few arguments before it: the last two are no option.
    let args: Vec<&[u8]> = vec![b"LIKE.CHECK", b"k", b"SPREAD", b"4"];
    assert_eq!(trailing("like", &args, 3).map_err(text), Ok((4, None)));
    let args: Vec<&[u8]> = vec![b"LIKE.CHECK", b"k", b"1", b"2"];
    assert_eq!(trailing("like", &args, 3).map_err(text), Ok((4, None)));
    let args: Vec<&[u8]> = vec![b"RANK.GET", b"k", b"m", b"SPREAD", b"0"];
    assert_eq!(
        trailing("rank", &args, 3).map_err(text),
        Err("ERR rank: SPREAD must be from 1 to 1024".to_string())
    );
    let args: Vec<&[u8]> = vec![b"RANK.GET", b"k", b"m", b"SPREAD", b"x"];
    assert_eq!(
        trailing("rank", &args, 3).map_err(text),
        Err("ERR value is not an integer or out of range".to_string())
    );
}

#[test]
fn only_spread_takes_nothing_else() {
    use super::scope::only;
    let arity = Err("ERR wrong number of arguments for 'like.count' command".to_string());
    let call = |rest: &[&'static [u8]]| {
        let mut args: Vec<&[u8]> = vec![b"LIKE.COUNT", b"k"];
        args.extend_from_slice(rest);
        only("like", &args, 2).map_err(text)
    };
    assert_eq!(call(&[]), Ok(None));
    assert_eq!(call(&[b"SPREAD", b"3"]), Ok(Some(3)));
    assert_eq!(call(&[b"spread", b"1024"]), Ok(Some(1024)));
    assert_eq!(call(&[b"SPREAD"]), arity);
    assert_eq!(call(&[b"x"]), arity);
    assert_eq!(call(&[b"NOW", b"3"]), arity);
    assert_eq!(call(&[b"SPREAD", b"3", b"x"]), arity);
    assert_eq!(
        call(&[b"SPREAD", b"1025"]),
        Err("ERR like: SPREAD must be from 1 to 1024".to_string())
    );
}

#[test]
fn shard_zero_is_known_by_its_name_alone() {
    use super::shard::is_first_shard_key;
    for base in [&b"post:9"[..], b"post:{9}", b"week:{7}", b"{a}b"] {
        for n in [1, 2, 3, 7, 64, 1024] {
            assert!(is_first_shard_key(&shard_key(base, n, 0)), "{n}");
            if n > 1 {
                assert!(!is_first_shard_key(&shard_key(base, n, n - 1)), "{n}");
            }
        }
    }
    for key in [&b"post:9"[..], b"{a}b", b"{9}post:{8}", b"{}x", b"", b"{"] {
        assert!(!is_first_shard_key(key), "{}", String::from_utf8_lossy(key));
    }
    assert!(is_first_shard_key(b"{9}post:{9}"));
}

/// A bare hash tag is never a shard key (a base key is never empty), so a
/// call on `{bm}` or `{42}` opens no `:meta` to look for a shard record.
/// Most 1- and 2-character tags are their own slot's tag (`bm`, `42`, `7`):
/// before, `{bm}` parsed as shard i of n of the empty base.
#[test]
fn a_bare_hash_tag_is_never_a_shard_key() {
    use super::shard::{is_first_shard_key, looks_like_shard};
    let tags = slot_tags();
    // Every key `{T}` of a tag of the table, and the key of shard 0 of the
    // empty base: none is a shard key, for any count.
    let mut bare: Vec<Vec<u8>> = tags
        .iter()
        .step_by(97)
        .map(|t| format!("{{{t}}}").into_bytes())
        .collect();
    bare.extend([b"{bm}".to_vec(), b"{42}".to_vec(), b"{7}".to_vec()]);
    bare.push(shard_key(b"", 1, 0));
    bare.push(shard_key(b"", 16, 5));
    for k in &bare {
        let text = String::from_utf8_lossy(k);
        assert_eq!(
            slot_tag(key_slot(&k[1..k.len() - 1])).len(),
            k.len() - 2,
            "{text}"
        );
        assert_eq!(split_shard_key(k), None, "{text}");
        assert_eq!(shard_base(k), None, "{text}");
        assert!(!looks_like_shard(k), "{text}");
        assert!(!is_first_shard_key(k), "{text}");
        for n in [1, 2, 3, 16, 1024] {
            assert_eq!(shard_index(k, n), None, "{text} of {n}");
        }
    }
    // `bm` is its own slot's tag, and with any base after it the key is
    // still recognised as a shard key (the cost `{42}x` keeps: one lookup).
    assert_eq!(slot_tag(key_slot(b"bm")), "bm");
    assert_eq!(split_shard_key(b"{bm}x"), Some(("bm", &b"x"[..])));
    assert!(looks_like_shard(b"{42}x"));
}

#[test]
fn resolve_decides_from_the_count_and_the_record() {
    use super::shard::{counts_disagree, resolve, Shard};
    let k1 = shard_key(b"post:9", 4, 1);
    let k1s = String::from_utf8(k1.clone()).unwrap();
    let r = Shard { n: 4, i: 1 };
    let no_probe = || -> bool { panic!("no data probe here") };
    assert_eq!(
        resolve("like", &k1, None, None, no_probe).map_err(text),
        Ok(None)
    );
    assert_eq!(
        resolve("like", &k1, None, Some(r), no_probe).map_err(text),
        Ok(Some(r))
    );
    assert_eq!(
        resolve("like", &k1, Some(4), Some(r), no_probe).map_err(text),
        Ok(Some(r))
    );
    let want = format!("ERR like: shard counts disagree: '{k1s}' is shard 1 of 4, the call says 8");
    assert_eq!(
        resolve("like", &k1, Some(8), Some(r), no_probe).map_err(text),
        Err(want.clone())
    );
    assert_eq!(text(counts_disagree("like", &k1, 8, r)), want);
    assert_eq!(
        resolve("like", b"post:9", Some(4), None, no_probe).map_err(text),
        Err("ERR like: 'post:9' is not a shard key of 4 shards (see docs/spread.md)".into())
    );
    assert_eq!(
        resolve("like", &k1, Some(4), None, || false).map_err(text),
        Err(format!("ERR like: shard '{k1s}' (1 of 4) does not exist"))
    );
    assert_eq!(
        resolve("like", &k1, Some(4), None, || true).map_err(text),
        Err(format!(
            "ERR like: corrupt data in '{k1s}:meta' field 'spread'"
        ))
    );
    // Shard 0 is known by its key alone: with data and no record, a call
    // that declares no count is refused too (issue 24 item 7); another
    // shard cannot be told from a single-slot key without the count.
    let k0 = shard_key(b"post:9", 4, 0);
    let k0s = String::from_utf8(k0.clone()).unwrap();
    assert_eq!(
        resolve("like", &k0, None, None, || false).map_err(text),
        Ok(None)
    );
    assert_eq!(
        resolve("like", &k0, None, None, || true).map_err(text),
        Err(format!(
            "ERR like: corrupt data in '{k0s}:meta' field 'spread'"
        ))
    );
    let r0 = Shard { n: 4, i: 0 };
    assert_eq!(
        resolve("like", &k0, None, Some(r0), no_probe).map_err(text),
        Ok(Some(r0))
    );
    assert_eq!(
        resolve("like", b"{a}b", None, None, no_probe).map_err(text),
        Ok(None)
    );
}
