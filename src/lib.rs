//! hotpath: native, atomic Redis commands for the hot paths people write as
//! Lua scripts. This file is only the registration table: the module's
//! name, configs, and each family's commands and counters.

pub mod args;
pub mod config;
pub mod error;
pub mod keys;
pub mod like;
pub mod luckybag;
pub mod poll;
pub mod rank;
pub mod rate;
pub mod redpacket;
pub mod registry;
pub mod slices;
pub mod stats;
pub mod util;

#[cfg(test)]
mod parser_fuzz;

use redis_module::{Context, InfoContext, RedisResult, RedisString, Status};

use crate::registry::CommandSpec;
use crate::stats::Counter;

/// Every family: its command table and its `INFO hotpath` counters.
pub const FAMILIES: &[(&[CommandSpec], &[&Counter])] = &[
    (poll::COMMANDS, poll::COUNTERS),
    (rank::COMMANDS, rank::COUNTERS),
    (redpacket::COMMANDS, redpacket::COUNTERS),
    (like::COMMANDS, like::COUNTERS),
    (luckybag::COMMANDS, luckybag::COUNTERS),
    (rate::COMMANDS, rate::COUNTERS),
];

#[cfg_attr(test, allow(dead_code))]
fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    // Keys signal "modified" only when a command changed them (see keys.rs),
    // not merely because they were opened for writing.
    if let Some(set) = unsafe { redis_module::raw::RedisModule_SetModuleOptions } {
        let opt = redis_module::raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as i32;
        unsafe { set(ctx.ctx, opt) };
    }
    if let Some(add) = unsafe { redis_module::raw::RedisModule_AddACLCategory } {
        let cat = std::ffi::CString::new("hotpath").unwrap();
        unsafe { add(ctx.ctx, cat.as_ptr()) };
    }
    // Jobs that run in slices stop when the dataset is swapped under them.
    slices::subscribe(ctx);
    for (table, _) in FAMILIES {
        if let Err(e) = registry::register(ctx, table) {
            ctx.log_warning(&e);
            return Status::Err;
        }
    }
    Status::Ok
}

/// Adds the `hotpath_stats` section to `INFO hotpath` / `INFO modules`.
#[cfg_attr(test, allow(dead_code))]
fn info(ctx: &InfoContext, _for_crash_report: bool) {
    let _ = info_section(ctx);
}

#[cfg_attr(test, allow(dead_code))]
fn info_section(ctx: &InfoContext) -> RedisResult<()> {
    let mut section = ctx.builder().add_section("stats");
    for (_, counters) in FAMILIES {
        for c in counters.iter() {
            section = section.field(c.name, c.get())?;
        }
    }
    section.build_section()?.build_info()?;
    Ok(())
}

#[cfg(not(test))]
redis_module::redis_module! {
    name: "hotpath",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    info: info,
    commands: [],
    configurations: [
        i64: [
            ["like-max-id", &config::LIKE_MAX_ID, 4_294_967_295, 0, 4_294_967_295, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
            ["like-promote-at", &config::LIKE_PROMOTE_AT, config::LIKE_PROMOTE_AT_DEFAULT, 1, 100_000_000, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
            ["like-recent", &config::LIKE_RECENT, 10, 0, 1000, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
            ["redpacket-max-count", &config::REDPACKET_MAX_COUNT, 10_000, 1, 1_000_000, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
            ["poll-range-max", &config::POLL_RANGE_MAX, config::RANGE_MAX_DEFAULT, 1, 1_000_000, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
            ["rank-range-max", &config::RANK_RANGE_MAX, config::RANGE_MAX_DEFAULT, 1, 1_000_000, redis_module::configuration::ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
