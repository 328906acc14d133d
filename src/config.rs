//! Module configuration (`--loadmodule libhotpath.so <name> <value> …`,
//! `CONFIG SET hotpath.<name> <value>`), one static per setting and one
//! table, [`SETTINGS`], with each setting's default and range.
//!
//! Load arguments are checked like `CONFIG SET` checks its arguments: an
//! unknown name, a missing value, a value that is not an integer or is out
//! of range, or a name given twice makes the load fail, and the server log
//! gets a line naming the argument and its range ([`parse_load_args`]).
//! A valid load argument becomes the setting's default, so that a
//! `hotpath.<name>` line in the config file (written by `CONFIG REWRITE`,
//! say) still wins over it, as with every module config.

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_longlong};
use std::sync::atomic::{AtomicI64, Ordering};

use redis_module::{raw, Context, RedisString};

/// `like-max-id`: the largest user id LIKE accepts.
pub static LIKE_MAX_ID: AtomicI64 = AtomicI64::new(4_294_967_295);
/// `like-promote-at`: set size above which LIKE considers a bitmap.
pub static LIKE_PROMOTE_AT: AtomicI64 = AtomicI64::new(LIKE_PROMOTE_AT_DEFAULT);
/// The default of `like-promote-at`, chosen from the measured crossover.
pub const LIKE_PROMOTE_AT_DEFAULT: i64 = 512;
/// `like-recent`: how many recent likers LIKE keeps (0, the default: LIKE
/// keeps none, and a like pays nothing for the feature).
pub static LIKE_RECENT: AtomicI64 = AtomicI64::new(0);
/// `like-common-max`: the most likers (of the smaller post) one
/// LIKE.COMMON reads, which bounds the time it blocks the server.
pub static LIKE_COMMON_MAX: AtomicI64 = AtomicI64::new(LIKE_COMMON_MAX_DEFAULT);
/// The default of `like-common-max`: about 12M instructions (a few ms) at
/// ~2,500 per liker read (docs/like.md).
pub const LIKE_COMMON_MAX_DEFAULT: i64 = 5_000;
/// `redpacket-max-count`: the most shares one packet may have.
pub static REDPACKET_MAX_COUNT: AtomicI64 = AtomicI64::new(10_000);

/// Reads a setting.
pub fn get(v: &AtomicI64) -> i64 {
    v.load(Ordering::Relaxed)
}
/// `poll-range-max`: the largest count one POLL.TOP may ask for, so that
/// no single read walks or sends a whole board (page with OFFSET).
pub static POLL_RANGE_MAX: AtomicI64 = AtomicI64::new(RANGE_MAX_DEFAULT);
/// `rank-range-max`: the largest count of RANK.TOP and the largest n of
/// RANK.AROUND.
pub static RANK_RANGE_MAX: AtomicI64 = AtomicI64::new(RANGE_MAX_DEFAULT);
/// The default of `poll-range-max` and `rank-range-max`.
pub const RANGE_MAX_DEFAULT: i64 = 1000;
/// `idem-ttl`: how long IDEM keeps a record, in seconds, when BEGIN gives
/// no `TTL` (24 h, as Stripe keeps its idempotency keys).
pub static IDEM_TTL: AtomicI64 = AtomicI64::new(IDEM_TTL_DEFAULT);
/// The default of `idem-ttl`.
pub const IDEM_TTL_DEFAULT: i64 = 86_400;
/// `idem-token-ttl`: how long a write's `IDEM token` is kept, in seconds
/// (24 h by default; see src/idem_token/).
pub static IDEM_TOKEN_TTL: AtomicI64 = AtomicI64::new(IDEM_TTL_DEFAULT);
/// `idem-token-cap`: the most tokens one entity keeps; a new token over
/// the cap evicts the earliest to expire.
pub static IDEM_TOKEN_CAP: AtomicI64 = AtomicI64::new(IDEM_TOKEN_CAP_DEFAULT);
/// The default of `idem-token-cap`.
pub const IDEM_TOKEN_CAP_DEFAULT: i64 = 1000;
/// `idem-token-max`: the longest token accepted, in bytes.
pub static IDEM_TOKEN_MAX: AtomicI64 = AtomicI64::new(IDEM_TOKEN_MAX_DEFAULT);
/// The default of `idem-token-max`.
pub const IDEM_TOKEN_MAX_DEFAULT: i64 = 40;

/// One integer setting: its name (`hotpath.<name>` in CONFIG), where its
/// value lives, its default and its inclusive range.
pub struct Setting {
    pub name: &'static str,
    pub value: &'static AtomicI64,
    pub default: i64,
    pub min: i64,
    pub max: i64,
}

/// Every setting of the module. A new setting is one static above and
/// one line here; registration, load arguments, the load log line and the
/// range checks all come from this table.
pub static SETTINGS: [Setting; 11] = [
    Setting {
        name: "like-max-id",
        value: &LIKE_MAX_ID,
        default: 4_294_967_295,
        min: 0,
        max: 4_294_967_295,
    },
    Setting {
        name: "like-promote-at",
        value: &LIKE_PROMOTE_AT,
        default: LIKE_PROMOTE_AT_DEFAULT,
        min: 1,
        max: 100_000_000,
    },
    Setting {
        name: "like-recent",
        value: &LIKE_RECENT,
        default: 0,
        min: 0,
        max: 1000,
    },
    Setting {
        name: "redpacket-max-count",
        value: &REDPACKET_MAX_COUNT,
        default: 10_000,
        min: 1,
        // SPLIT pushes every share in one call: this bounds its work.
        max: 100_000,
    },
    Setting {
        name: "like-common-max",
        value: &LIKE_COMMON_MAX,
        default: LIKE_COMMON_MAX_DEFAULT,
        min: 1,
        max: 100_000_000,
    },
    Setting {
        name: "poll-range-max",
        value: &POLL_RANGE_MAX,
        default: RANGE_MAX_DEFAULT,
        min: 1,
        max: 1_000_000,
    },
    Setting {
        name: "rank-range-max",
        value: &RANK_RANGE_MAX,
        default: RANGE_MAX_DEFAULT,
        min: 1,
        max: 1_000_000,
    },
    Setting {
        name: "idem-ttl",
        value: &IDEM_TTL,
        default: IDEM_TTL_DEFAULT,
        min: 1,
        max: crate::idem::model::MAX_TTL_S,
    },
    Setting {
        name: "idem-token-ttl",
        value: &IDEM_TOKEN_TTL,
        default: IDEM_TTL_DEFAULT,
        min: 1,
        max: crate::idem::model::MAX_TTL_S,
    },
    Setting {
        name: "idem-token-cap",
        value: &IDEM_TOKEN_CAP,
        default: IDEM_TOKEN_CAP_DEFAULT,
        // A full store is walked in one step: 10,000 tokens is the most
        // that stays well under a millisecond (docs/idem.md, "Cost").
        min: 1,
        max: 10_000,
    },
    Setting {
        name: "idem-token-max",
        value: &IDEM_TOKEN_MAX,
        default: IDEM_TOKEN_MAX_DEFAULT,
        min: 1,
        max: 512,
    },
];

impl Setting {
    /// `like-recent (an integer from 0 to 1000)`: the name and its range,
    /// as the load error lines show them.
    fn described(&self) -> String {
        format!(
            "{} (an integer from {} to {})",
            self.name, self.min, self.max
        )
    }
}

/// Returns every setting with its range, for error lines.
fn known() -> String {
    SETTINGS
        .iter()
        .map(Setting::described)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks the module's load arguments, `name value` pairs, against
/// [`SETTINGS`] and returns (setting index, value) for each pair; or the
/// log line explaining the first bad argument. Names match without regard
/// to case, as CONFIG SET's do.
pub fn parse_load_args(args: &[&[u8]]) -> Result<Vec<(usize, i64)>, String> {
    let mut out: Vec<(usize, i64)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let name = String::from_utf8_lossy(args[i]);
        let Some(idx) = SETTINGS
            .iter()
            .position(|s| s.name.as_bytes().eq_ignore_ascii_case(args[i]))
        else {
            return Err(format!(
                "unknown load argument '{name}'; the settings are {}",
                known()
            ));
        };
        let s = &SETTINGS[idx];
        let Some(raw) = args.get(i + 1) else {
            return Err(format!(
                "load argument '{}' has no value; expected {}",
                s.name,
                s.described()
            ));
        };
        let text = String::from_utf8_lossy(raw);
        let v = crate::args::parse_i64_plain(raw).ok_or_else(|| {
            format!(
                "load argument '{} {text}' is not an integer; expected {}",
                s.name,
                s.described()
            )
        })?;
        if v < s.min || v > s.max {
            return Err(format!(
                "load argument '{} {text}' is out of range; expected {}",
                s.name,
                s.described()
            ));
        }
        if out.iter().any(|&(j, _)| j == idx) {
            return Err(format!(
                "load argument '{}' is given more than once",
                s.name
            ));
        }
        out.push((idx, v));
        i += 2;
    }
    Ok(out)
}

extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    // SAFETY: privdata is a `&'static Setting` from `SETTINGS` (register).
    let s = unsafe { &*(privdata as *const Setting) };
    get(s.value)
}

extern "C" fn set_numeric(
    _name: *const c_char,
    val: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: as in get_numeric. The server has checked the range.
    let s = unsafe { &*(privdata as *const Setting) };
    s.value.store(val, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}

/// Checks the load arguments, registers every setting with them as
/// defaults, then applies the config file's `hotpath.*` lines
/// (`RM_LoadConfigs`). Must run inside `RedisModule_OnLoad`; an `Err`
/// is the log line of why the load must fail.
pub fn register(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let given = parse_load_args(&bytes)?;
    for (idx, s) in SETTINGS.iter().enumerate() {
        let v = given
            .iter()
            .find(|&&(j, _)| j == idx)
            .map_or(s.default, |&(_, v)| v);
        // Applied here too, for servers without module configs (before
        // Redis 7.0): there the load arguments are the only way to set it.
        s.value.store(v, Ordering::Relaxed);
        let Some(reg) = (unsafe { raw::RedisModule_RegisterNumericConfig }) else {
            continue;
        };
        let name = CString::new(s.name).unwrap();
        let rc = unsafe {
            reg(
                ctx.ctx,
                name.as_ptr(),
                v,
                raw::REDISMODULE_CONFIG_DEFAULT,
                s.min,
                s.max,
                Some(get_numeric),
                Some(set_numeric),
                None,
                s as *const Setting as *mut c_void,
            )
        };
        if rc != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not register the config '{}'", s.name));
        }
    }
    if let Some(load) = unsafe { raw::RedisModule_LoadConfigs } {
        if unsafe { load(ctx.ctx) } != raw::REDISMODULE_OK as c_int {
            return Err(
                "the config file's hotpath.* settings could not be applied (see the line above)"
                    .into(),
            );
        }
    }
    Ok(())
}

/// `like-max-id=4294967295 like-promote-at=512 …`: every setting's
/// current value, for the load log line.
pub fn effective() -> String {
    SETTINGS
        .iter()
        .map(|s| format!("{}={}", s.name, get(s.value)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Vec<(usize, i64)>, String> {
        let b: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        parse_load_args(&b)
    }

    #[test]
    fn good_arguments_give_their_settings() {
        assert_eq!(parse(&[]), Ok(vec![]));
        assert_eq!(
            parse(&["like-recent", "1000", "REDPACKET-MAX-COUNT", "1"]),
            Ok(vec![(2, 1000), (3, 1)])
        );
        assert_eq!(parse(&["like-max-id", "0"]), Ok(vec![(0, 0)]));
    }

    #[test]
    fn bad_arguments_name_the_argument_and_its_range() {
        let e = parse(&["like-recent", "2000"]).unwrap_err();
        assert_eq!(
            e,
            "load argument 'like-recent 2000' is out of range; expected like-recent (an integer from 0 to 1000)"
        );
        let e = parse(&["like-recent", "-1"]).unwrap_err();
        assert!(e.contains("'like-recent -1' is out of range"), "{e}");
        let e = parse(&["like-promote-at", "0"]).unwrap_err();
        assert!(e.contains("from 1 to 100000000"), "{e}");
        let e = parse(&["like-recent", "ten"]).unwrap_err();
        assert_eq!(
            e,
            "load argument 'like-recent ten' is not an integer; expected like-recent (an integer from 0 to 1000)"
        );
        for bad in ["1.5", "+5", "05", "", "99999999999999999999"] {
            let e = parse(&["like-recent", bad]).unwrap_err();
            assert!(e.contains("is not an integer"), "{bad}: {e}");
        }
        let e = parse(&["like-recent"]).unwrap_err();
        assert_eq!(
            e,
            "load argument 'like-recent' has no value; expected like-recent (an integer from 0 to 1000)"
        );
        let e = parse(&["like-recnet", "5"]).unwrap_err();
        assert!(e.starts_with("unknown load argument 'like-recnet'; the settings are like-max-id (an integer from 0 to 4294967295), "), "{e}");
        for s in SETTINGS.iter() {
            assert!(e.contains(&s.described()), "{e}");
        }
        let e = parse(&["like-recent", "5", "like-recent", "6"]).unwrap_err();
        assert_eq!(e, "load argument 'like-recent' is given more than once");
        // The first bad argument is the one reported.
        let e = parse(&["like-recent", "5", "nope", "1", "like-recent", "x"]).unwrap_err();
        assert!(e.contains("'nope'"), "{e}");
    }

    #[test]
    fn defaults_are_within_their_ranges_and_match_the_statics() {
        for s in SETTINGS.iter() {
            assert!(s.min <= s.default && s.default <= s.max, "{}", s.name);
        }
        assert_eq!(SETTINGS[1].default, LIKE_PROMOTE_AT_DEFAULT);
    }
}
