//! The integration suite, as one test binary: every file of tests/ is a
//! module of it, so that one test runner schedules all the tests over the
//! threads it is given (a binary per file ran them file after file, a slow
//! file's last test holding every other file back) and the suite links
//! once instead of once per file.
//!
//! `cargo test --release --test integration poll::` runs one file's tests;
//! a new test file is added to the list below
//! ([`every_test_file_is_in_the_suite`] fails until it is).

mod common;

mod aof_replay;
mod clients;
mod clients_fallback;
mod clients_rust;
mod cluster;
mod cluster_ha;
mod cluster_spread;
mod delayq;
mod differential;
mod docker;
mod families;
mod fuzz;
mod idem;
mod idem_token;
mod idem_token_more;
mod kept_names;
mod like;
mod load;
mod lock;
mod lua_library;
mod lua_parity_delayq;
mod lua_parity_idem;
mod lua_parity_idem_token;
mod lua_parity_like;
mod lua_parity_lock;
mod lua_parity_luckybag;
mod lua_parity_poll;
mod lua_parity_rank;
mod lua_parity_rate;
mod lua_parity_redpacket;
mod lua_parity_stock;
mod luckybag;
mod migration;
mod module;
mod no_partial_writes;
mod oom;
mod poll;
mod pollrank_stall;
mod prometheus;
mod rank;
mod rate;
mod readme;
mod redpacket;
mod reference;
mod replication;
mod sliced_retry;
mod smoke;
mod spread;
mod stock;
mod stock_spread;

/// Every `tests/*.rs` file is a module of this binary: with `autotests =
/// false` in Cargo.toml, a file left out of the list above would never run.
#[test]
fn every_test_file_is_in_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let me = std::fs::read_to_string(dir.join("integration.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().and_then(|e| e.to_str()) != Some("rs") || stem == "integration" {
            continue;
        }
        if !me.lines().any(|l| l.trim() == format!("mod {stem};")) {
            missing.push(stem.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/integration.rs lacks `mod …;` for {missing:?}"
    );
}
