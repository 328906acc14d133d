//! A randomized client: every module command with random argument vectors
//! (wrong counts, empty strings, huge numbers, NaN/inf, binary bytes,
//! keyword soup, derived keys of the wrong type) against a real server.
//! The server must stay up, every reply must be a value or an error, and no
//! handler may panic (a caught panic replies `ERR hotpath: internal error`).
//!
//! `make test` runs a short pass; `make fuzz` runs `FUZZ_COMMANDS=1000000`.
//! `FUZZ_SEED=<n>` repeats a run; `make fuzz` uses a new seed each time.

use crate::common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEYWORDS: &[&str] = &[
    "MODE",
    "ONCE",
    "DAILY",
    "MULTI",
    "MAXVOTES",
    "CANDIDATES",
    "START",
    "END",
    "TZ",
    "TTL",
    "NOW",
    "TIEBREAK",
    "EARLIER",
    "LATER",
    "NONE",
    "UNIT",
    "MS",
    "S",
    "DIGITS",
    "EPOCH",
    "GT",
    "LT",
    "OFFSET",
    "AGGREGATE",
    "SUM",
    "MAX",
    "WINNERS",
    "SHARDS",
    "POOLCAP",
    "HIGHSCORE",
    "RESTORE",
    "YES",
    "NO",
    "TASK",
    "DONE",
    "PENDING",
    "ALGO",
    "GCRA",
    "FIXED",
    "SLIDING",
    "LOG",
    "BUCKET",
    "BURST",
    "COST",
    "PEEK",
    "LIMITS",
    "RANDOM",
    "EQUAL",
    // LOCK and DELAYQ. BLOCK is left out: a command that waits would stall
    // this single connection (tests/lock.rs and tests/delayq.rs cover it).
    "LIMIT",
    "MAXHOLD",
    "DELAY",
    "AT",
    "ATTEMPTS",
    "REPLACE",
    "BACKOFF",
    "ID",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "16",
    "100",
    "1000",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9007199254740991",
    "9007199254740992",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "1.5",
    "-0",
    "01",
    " 1",
    "1 ",
    "+1",
    "1e10",
    "0x10",
    "",
    "1735689600000",
    "253402300799999",
    "253402300800000",
    "-1735689600000",
    "0.99",
    "1024",
    "1025",
];

const SUFFIXES: &[&str] = &[
    "meta",
    "voted",
    "board",
    "uservotes",
    "synced",
    "syncing",
    "set",
    "bits",
    "count",
    "recent",
    "pool",
    "grabbed",
    "joined:0",
    "joined:1",
    "cand:0",
    "cand:1",
    "stored",
    "winners",
    "jobs",
    "due",
    "dead",
    "seq",
];

fn random_arg(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..100) {
        0..=24 => KEYWORDS[rng.gen_range(0..KEYWORDS.len())]
            .as_bytes()
            .to_vec(),
        25..=49 => NUMBERS[rng.gen_range(0..NUMBERS.len())].as_bytes().to_vec(),
        50..=69 => rng.gen_range(0..40).to_string().into_bytes(),
        70..=79 => format!("u{}", rng.gen_range(0..20)).into_bytes(),
        80..=89 => base_key(rng),
        90..=97 => (0..rng.gen_range(0..12)).map(|_| rng.gen::<u8>()).collect(),
        _ => vec![b'x'; rng.gen_range(1000..200_000)],
    }
}

fn base_key(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..4) {
        0 => format!("{{f}}k{}", rng.gen_range(0..4)).into_bytes(),
        1 => format!("k{}", rng.gen_range(0..4)).into_bytes(),
        2 => format!("wt{}", rng.gen_range(0..SUFFIXES.len())).into_bytes(),
        _ => b"".to_vec(),
    }
}

fn module_commands(c: &mut Connection) -> Vec<(String, i64)> {
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(c)
        .unwrap();
    names
        .into_iter()
        .map(|n| {
            let info: Vec<Vec<redis::Value>> =
                redis::cmd("COMMAND").arg("INFO").arg(&n).query(c).unwrap();
            let arity = match &info[0][1] {
                redis::Value::Int(a) => *a,
                _ => -2,
            };
            (n, arity)
        })
        .collect()
}

/// Plants derived keys of a type no family uses for them (a Stream would
/// be wrong everywhere), so that every WRONGTYPE path is reachable.
fn plant_wrong_types(c: &mut Connection) {
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let k = format!("wt{i}:{suffix}");
        let _: redis::RedisResult<String> = redis::cmd("XADD")
            .arg(&k)
            .arg("*")
            .arg("f")
            .arg("v")
            .query(c);
        let _: redis::RedisResult<String> = redis::cmd("XADD")
            .arg(format!("wt{i}"))
            .arg("*")
            .arg("f")
            .arg("v")
            .query(c);
    }
}

fn fuzz(commands: usize, seed: u64) {
    let mut srv = Server::start();
    let mut c = srv.conn();
    plant_wrong_types(&mut c);
    let cmds = module_commands(&mut c);
    assert!(!cmds.is_empty());
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut ok, mut errors) = (0u64, 0u64);
    for i in 0..commands {
        let (name, arity) = &cmds[rng.gen_range(0..cmds.len())];
        let base = arity.unsigned_abs() as usize;
        let n = match rng.gen_range(0..10) {
            0 => rng.gen_range(0..base + 1),
            1..=6 => base.saturating_sub(1) + rng.gen_range(0..4),
            _ => base.saturating_sub(1) + rng.gen_range(0..12),
        };
        let mut argv: Vec<Vec<u8>> = Vec::with_capacity(n);
        if n > 0 {
            argv.push(base_key(&mut rng));
        }
        for _ in 1..n {
            argv.push(random_arg(&mut rng));
        }
        let mut q = redis::cmd(name);
        for a in &argv {
            q.arg(a.as_slice());
        }
        match q.query::<redis::Value>(&mut c) {
            Ok(_) => ok += 1,
            Err(e) if e.kind() == redis::ErrorKind::IoError || e.is_connection_dropped() => {
                panic!(
                    "seed {seed}: server died at command {i} ({name}): {e}\n{}",
                    srv.log()
                )
            }
            Err(e) => {
                let text = error_text(&e);
                assert!(
                    !text.contains("internal error"),
                    "seed {seed}: handler panicked on {name} {:?}: {text}",
                    argv.iter()
                        .map(|a| String::from_utf8_lossy(&a[..a.len().min(40)]).into_owned())
                        .collect::<Vec<_>>()
                );
                errors += 1;
            }
        }
        if i % 20_000 == 0 {
            // Keep the dataset small so that the run stays fast.
            let _: redis::RedisResult<()> = redis::cmd("FLUSHALL").query(&mut c);
            plant_wrong_types(&mut c);
        }
    }
    assert!(srv.alive(), "server exited");
    assert_eq!(run(&mut c, &["PING"]), "PONG");
    println!("fuzz seed {seed}: {commands} commands, {ok} values, {errors} errors");
    assert!(ok > 0 && errors > 0, "the fuzzer must reach both outcomes");
}

#[test]
fn random_commands_never_crash_the_server() {
    let n = std::env::var("FUZZ_COMMANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    // `make test` is deterministic (seed 1); `make fuzz` draws a new seed
    // per run (FUZZ_SEED=time) and prints it, so a failure can be replayed.
    let seed = match std::env::var("FUZZ_SEED").ok().as_deref() {
        Some("time") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        Some(v) => v.parse().expect("FUZZ_SEED must be a number or 'time'"),
        None => 1,
    };
    fuzz(n, seed);
}
