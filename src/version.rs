//! The module's version, in one place: Cargo.toml's `version` is the
//! release (`1.0.0`), and the number Redis shows in `MODULE LIST`, `INFO
//! hotpath` and the load log line is derived from it as
//! `major * 10000 + minor * 100 + patch` (10000 for 1.0.0), the way
//! RedisBloom and RedisJSON number their releases.

/// The release, e.g. `1.0.0`.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The module version Redis shows, e.g. `10000` for 1.0.0.
pub const MODULE_VERSION: i32 = number(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// Returns `major * 10000 + minor * 100 + patch`; minor and patch must be
/// below 100 (a compile error otherwise, since they would collide).
const fn number(major: &str, minor: &str, patch: &str) -> i32 {
    let (minor, patch) = (digits(minor), digits(patch));
    assert!(
        minor < 100 && patch < 100,
        "minor and patch must be below 100"
    );
    digits(major) * 10000 + minor * 100 + patch
}

/// Parses a plain decimal number at compile time.
const fn digits(s: &str) -> i32 {
    let b = s.as_bytes();
    assert!(!b.is_empty(), "empty version part");
    let mut i = 0;
    let mut n: i32 = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "version parts must be digits");
        n = n * 10 + (b[i] - b'0') as i32;
        i += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_version_follows_the_release() {
        assert_eq!(number("1", "0", "0"), 10000);
        assert_eq!(number("2", "4", "13"), 20413);
        assert_eq!(number("0", "1", "0"), 100);
        let parts: Vec<i32> = RELEASE.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(MODULE_VERSION, parts[0] * 10000 + parts[1] * 100 + parts[2]);
    }
}
