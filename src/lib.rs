//! hotpath: native, atomic Redis commands for the hot paths people write as
//! Lua scripts. This file is only the registration table: the module's
//! name, configs, and the one list of families ([`FAMILIES`]).

pub mod args;
pub mod argv;
pub mod blocking;
pub mod cluster_guard;
pub mod config;
pub mod delayq;
pub mod error;
pub mod idem;
pub mod idem_token;
pub mod keys;
pub mod latency;
pub mod like;
pub mod lock;
pub mod luckybag;
pub mod poll;
pub mod rank;
pub mod rate;
pub mod redpacket;
pub mod registry;
pub mod replicate;
pub mod reply;
pub mod slices;
pub mod spread;
pub mod stats;
pub mod stock;
pub mod syntax;
pub mod util;
pub mod version;

#[cfg(test)]
mod family_lint;
#[cfg(test)]
mod parser_fuzz;

use redis_module::{Context, InfoContext, RedisResult, RedisString, Status};

use crate::registry::Family;

/// Every family, in registration order: the one list of families. Adding a
/// family here, and nothing else, makes tests/families.rs fail until the
/// family has all its files (docs/adding-a-family.md).
pub const FAMILIES: &[Family] = &[
    Family {
        name: "poll",
        commands: poll::COMMANDS,
        counters: poll::COUNTERS,
        entity: Some("Poll"),
    },
    Family {
        name: "rank",
        commands: rank::COMMANDS,
        counters: rank::COUNTERS,
        entity: Some("Rank"),
    },
    Family {
        name: "redpacket",
        commands: redpacket::COMMANDS,
        counters: redpacket::COUNTERS,
        entity: Some("RedPacket"),
    },
    Family {
        name: "like",
        commands: like::COMMANDS,
        counters: like::COUNTERS,
        entity: Some("Like"),
    },
    Family {
        name: "luckybag",
        commands: luckybag::COMMANDS,
        counters: luckybag::COUNTERS,
        entity: Some("LuckyBag"),
    },
    Family {
        name: "rate",
        commands: rate::COMMANDS,
        counters: rate::COUNTERS,
        entity: Some("Rate"),
    },
    Family {
        name: "lock",
        commands: lock::COMMANDS,
        counters: lock::COUNTERS,
        entity: Some("Lock"),
    },
    Family {
        name: "delayq",
        commands: delayq::COMMANDS,
        counters: delayq::COUNTERS,
        entity: Some("DelayQueue"),
    },
    Family {
        name: "idem",
        commands: idem::COMMANDS,
        counters: idem::COUNTERS,
        entity: Some("Idem"),
    },
    Family {
        name: "stock",
        commands: stock::COMMANDS,
        counters: stock::COUNTERS,
        entity: Some("Stock"),
    },
];

/// Commands with no Lua twin in lua-compat/ (none so far): tests/families.rs
/// and tests/lua_library.rs expect a twin for every other command.
pub const WITHOUT_LUA_TWIN: &[&str] = &[];

#[cfg_attr(test, allow(dead_code))]
fn init(ctx: &Context, args: &[RedisString]) -> Status {
    // Load arguments are checked before anything else, so that a bad one
    // fails the load with a log line naming it (see config.rs).
    if let Err(e) = config::register(ctx, args) {
        ctx.log_warning(&e);
        return Status::Err;
    }
    // Keys signal "modified" only when a command changed them (see keys/mod.rs),
    // not merely because they were opened for writing.
    if let Some(set) = unsafe { redis_module::raw::RedisModule_SetModuleOptions } {
        let opt = redis_module::raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as i32;
        unsafe { set(ctx.ctx, opt) };
    }
    registry::add_acl_category(ctx);
    cluster_guard::register(ctx);
    // Jobs that run in slices stop when the dataset is swapped under them.
    slices::subscribe(ctx);
    // Lock waiters look again when their lock is deleted by hand.
    lock::commands::watch_keys(ctx);
    for family in FAMILIES {
        if let Err(e) = registry::register(ctx, family.commands) {
            ctx.log_warning(&e);
            return Status::Err;
        }
    }
    latency::init(ctx);
    // The slot-tag table of the spread routing is computed once (under a
    // millisecond), here rather than in the first spread command.
    spread::route::slot_tags();
    ctx.log_notice(&format!(
        "release {}, module version {}; configs: {}",
        version::RELEASE,
        version::MODULE_VERSION,
        config::effective()
    ));
    Status::Ok
}

/// Adds the `hotpath_stats` section to `INFO hotpath` / `INFO modules`.
#[cfg_attr(test, allow(dead_code))]
fn info(ctx: &InfoContext, _for_crash_report: bool) {
    let _ = info_section(ctx);
}

#[cfg_attr(test, allow(dead_code))]
fn info_section(ctx: &InfoContext) -> RedisResult<()> {
    // `# hotpath_module`: which build this is, as MODULE LIST shows it.
    let mut section = ctx
        .builder()
        .add_section("module")
        .field("version", version::MODULE_VERSION as i64)?
        .field("release", version::RELEASE.to_string())?
        .build_section()?
        .add_section("stats");
    for family in FAMILIES {
        for c in family.counters.iter() {
            section = section.field(c.name, c.get())?;
        }
    }
    section.build_section()?.build_info()?;
    Ok(())
}

#[cfg(not(test))]
redis_module::redis_module! {
    name: "hotpath",
    version: version::MODULE_VERSION,
    // The module's own short-lived buffers (argument copies, replies being
    // built) go straight to the process's malloc. Through Redis's allocator
    // each allocation also pays zmalloc's size accounting
    // (malloc_usable_size plus an atomic add and sub): about 900 of 5,700
    // instructions of a LIKE.COUNT, measured with callgrind. The data itself
    // lives in Redis's own types and is accounted as always; only transient
    // Rust buffers stay out of `used_memory`.
    allocator: (std::alloc::System, std::alloc::System),
    data_types: [],
    init: init,
    info: info,
    commands: [],
}
