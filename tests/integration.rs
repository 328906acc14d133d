//! The integration suite, as one test binary: every file of tests/ is a
//! module of it, so that one test runner schedules all the tests over the
//! threads it is given (a binary per file ran them file after file, a slow
//! file's last test holding every other file back) and the suite links
//! once instead of once per file.
//!
//! `cargo test --release --test integration poll::` runs one file's tests.
//! The list of modules is derived: build.rs writes one `mod` per
//! `tests/*.rs` file, included below.

mod common;

// Every other tests/*.rs file is a module: build.rs lists them (a new
// test file needs no line here).
include!(concat!(env!("OUT_DIR"), "/test_modules.rs"));

/// Every `tests/*.rs` file is a module of this binary: with `autotests =
/// false` in Cargo.toml, a file build.rs left out of its list would never
/// run.
#[test]
fn every_test_file_is_in_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let me = include_str!(concat!(env!("OUT_DIR"), "/test_modules.rs"));
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
        "build.rs's module list lacks {missing:?}"
    );
}
