//! Command registration: one table entry per command, a panic guard around
//! every handler, latency events for long calls, key-specs, arity and
//! `COMMAND DOCS`, ACL categories where the server has them.
//!
//! Each family declares its commands with the [`command!`](crate::command)
//! macro in a `pub const COMMANDS: &[CommandSpec]`, one entry per command
//! and everything about the command in it; `lib.rs` registers the tables of
//! the families of [`FAMILIES`](crate::FAMILIES) at load time.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::error;

/// Whether the server has the `hotpath` ACL category: the module adds it
/// at load where the server can (Redis 7.4+, Valkey 8+). Redis 7.2 can put
/// module commands in the server's own categories (`read`, `write`, `fast`)
/// but cannot add one, and refuses the whole category list of a command if
/// one name in it is unknown: there the commands get their categories
/// without `hotpath`, so that `-@write` still covers the writes.
static HOTPATH_CATEGORY: AtomicBool = AtomicBool::new(false);

/// Adds the `hotpath` ACL category where the server has the API for it;
/// called once at load, before [`register`].
pub fn add_acl_category(ctx: &Context) {
    let added = match unsafe { raw::RedisModule_AddACLCategory } {
        Some(add) => {
            let cat = CString::new("hotpath").unwrap();
            let rc = unsafe { add(ctx.ctx, cat.as_ptr()) };
            // EBUSY: the category is there already, from an earlier load
            // of the module (MODULE UNLOAD does not remove it).
            rc == raw::REDISMODULE_OK as c_int
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY)
        }
        None => false,
    };
    HOTPATH_CATEGORY.store(added, Ordering::Relaxed);
}

/// The ACL categories of a command, given its own (`"write fast"`) and
/// whether the server has the `hotpath` category.
fn acl_categories(own: &str, hotpath: bool) -> String {
    if hotpath {
        format!("{own} hotpath").trim().to_string()
    } else {
        own.trim().to_string()
    }
}

/// A command handler: parse, validate, open keys, apply, reply, replicate.
pub type Handler = fn(&Context, Vec<RedisString>) -> RedisResult;

/// The C entry point Redis calls; generated per command by `command!`.
pub type Callback =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Where a command's keys are.
#[derive(Clone, Copy, Debug)]
pub enum Keys {
    /// No keys.
    None,
    /// Arguments `first..=last` (`last` negative counts from the end).
    Range { first: i32, last: i32 },
    /// A key count at `numkeys`, keys right after it; `before` extra keys
    /// at positions `1..numkeys` (e.g. `RANK.MERGE dest numkeys …`).
    Numkeys { numkeys: i32 },
}

/// A command's entry in the table.
pub struct CommandSpec {
    pub name: &'static str,
    pub callback: Callback,
    /// Redis command flags, e.g. `"write deny-oom fast"`.
    pub flags: &'static str,
    /// Arity as in `COMMAND INFO` (negative: at least).
    pub arity: i32,
    pub keys: Keys,
    /// True when the command only reads its keys.
    pub readonly: bool,
    /// ACL categories besides `hotpath`, e.g. `"write fast"`.
    pub acl: &'static str,
    pub summary: &'static str,
    pub complexity: &'static str,
    /// The arguments after the command name, in the reference's notation
    /// (see [`crate::syntax`]): `COMMAND DOCS`, redis-cli's `help` and the
    /// entry's syntax line in docs/reference/ all show this line.
    pub syntax: &'static str,
    /// The shape of the RESP2 reply, as the reference's Reply section
    /// begins (`integer`, `OK`, `array [liked, count]`).
    pub reply: &'static str,
    /// The module version that introduced the command
    /// ([`FIRST_RELEASE`](crate::syntax::FIRST_RELEASE) unless declared).
    pub since: &'static str,
    /// True when the command takes a trailing `IDEM token`
    /// (src/idem_token/): declared `idem: true`, and its syntax line ends
    /// with `[IDEM token]` (a unit test checks both go together).
    pub idem: bool,
}

/// A family of commands: the one list of families, [`crate::FAMILIES`],
/// holds one of these per family, and everything that goes family by
/// family reads it: the registration at load time, `INFO hotpath`, the
/// unit tests, and tests/families.rs, which checks that each family has
/// every file a family needs (docs/adding-a-family.md lists them).
pub struct Family {
    /// The family's name in lower case: the prefix of its commands
    /// (`poll` of `poll.vote`) and of its `INFO hotpath` counters
    /// (`poll_votes`), and the name of its files: `src/<name>/`,
    /// `docs/<name>.md`, `docs/reference/<name>.md`,
    /// `lua-compat/src/<name>/`, `tests/<name>.rs`, `bench/<name>.py`.
    pub name: &'static str,
    /// The family's commands, each declared once with
    /// [`command!`](crate::command) or
    /// [`borrowed_command!`](crate::borrowed_command).
    pub commands: &'static [CommandSpec],
    /// The family's `INFO hotpath` counters.
    pub counters: &'static [&'static crate::stats::Counter],
    /// The name of the family's entity in the clients (the Python class
    /// in clients/python/src/hotpath/entities/<family>.py and the Rust
    /// struct in clients/rust/src/entities/<family>.rs); None for a family whose commands
    /// the clients only send by name.
    pub entity: Option<&'static str>,
}

/// Builds a [`CommandSpec`] with its own C entry point that runs `handler`
/// under the panic guard. This entry is the command's one declaration:
/// name, flags, arity, keys, ACL categories, summary, complexity, syntax,
/// reply shape and (optionally) `since` are written here and nowhere else;
/// the registry, `COMMAND DOCS` and the tests read them from it.
#[macro_export]
macro_rules! command {
    (name: $name:expr, handler: $handler:path, flags: $flags:expr, arity: $arity:expr,
     keys: $keys:expr, acl: $acl:expr, summary: $summary:expr, complexity: $cx:expr,
     syntax: $syntax:expr, reply: $reply:expr $(, since: $since:expr)? $(, idem: $idem:literal)? $(,)?) => {
        $crate::registry::CommandSpec {
            name: $name,
            callback: {
                extern "C" fn cb(
                    ctx: *mut redis_module::raw::RedisModuleCtx,
                    argv: *mut *mut redis_module::raw::RedisModuleString,
                    argc: std::os::raw::c_int,
                ) -> std::os::raw::c_int {
                    const IDEM: bool = { const F: &[bool] = &[false $(, $idem)?]; F[F.len() - 1] };
                    // A call without `IDEM token` pays one look at its
                    // next-to-last argument (none for other commands).
                    if IDEM && $crate::idem_token::present(argv, argc, $arity) {
                        return $crate::idem_token::dispatch(
                            ctx, argv, argc, $crate::idem_token::Run::Owned($handler),
                            $keys, $name, $arity,
                        );
                    }
                    // Measured only while the latency monitor is on (see
                    // latency.rs); otherwise this costs one load and one
                    // branch before the tail call.
                    if $crate::latency::on() {
                        return $crate::registry::dispatch_measured(
                            ctx, argv, argc, $handler, $keys, $name,
                        );
                    }
                    $crate::registry::dispatch_guarded(ctx, argv, argc, $handler, $keys, $name)
                }
                cb
            },
            flags: $flags,
            arity: $arity,
            keys: $keys,
            readonly: !$crate::registry::is_write($flags),
            acl: $acl,
            summary: $summary,
            complexity: $cx,
            syntax: $syntax,
            reply: $reply,
            since: {
                const SINCE: &[&str] = &[$crate::syntax::FIRST_RELEASE $(, $since)?];
                SINCE[SINCE.len() - 1]
            },
            idem: { const F: &[bool] = &[false $(, $idem)?]; F[F.len() - 1] },
        }
    };
}

/// Returns true when the flags string marks a write command.
pub const fn is_write(flags: &str) -> bool {
    let b = flags.as_bytes();
    let mut i = 0;
    while i + 5 <= b.len() {
        if b[i] == b'w'
            && b[i + 1] == b'r'
            && b[i + 2] == b'i'
            && b[i + 3] == b't'
            && b[i + 4] == b'e'
        {
            return true;
        }
        i += 1;
    }
    false
}

/// Runs a handler with its arguments and replies; a panic becomes an `ERR`
/// reply instead of aborting the server.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    keys: Keys,
) -> c_int {
    let context = Context::new(ctx);
    let args = redis_module::decode_args(ctx, argv, argc);
    if let Keys::Numkeys { numkeys } = keys {
        // `getkeys-api` commands are asked for their key positions (cluster
        // routing, ACL key checks, COMMAND GETKEYS) before they run.
        if context.is_keys_position_request() {
            for pos in numkeys_positions(&args, numkeys as usize) {
                context.key_at_pos(pos as i32);
            }
            return raw::REDISMODULE_OK as c_int;
        }
    }
    let result = catch_unwind(AssertUnwindSafe(|| handler(&context, args)));
    let reply = match result {
        Ok(r) => r,
        Err(_) => Err(RedisError::Str(error::INTERNAL)),
    };
    reply_to(&context, reply)
}

/// Runs a handler as [`dispatch`] does, after the slot-migration guard
/// (`cluster_guard`) for commands of families that derive keys from their
/// base key: every family but RATE, whose keys are all declared.
// `argv` is the argument vector Redis hands the command, with `argc`
// entries; it is read only after checking `argc >= 2`.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn dispatch_guarded(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    keys: Keys,
    name: &str,
) -> c_int {
    if crate::cluster_guard::active()
        && argc >= 2
        && !matches!(keys, Keys::None)
        && !name.starts_with("rate.")
    {
        let context = Context::new(ctx);
        if !context.is_keys_position_request() {
            let key = unsafe {
                let mut len = 0usize;
                let p = raw::RedisModule_StringPtrLen.unwrap()(*argv.add(1), &mut len);
                std::slice::from_raw_parts(p.cast::<u8>(), len)
            };
            if let Err(e) = crate::cluster_guard::check(&context, key) {
                return reply_to(&context, Err(e));
            }
        }
    }
    dispatch(ctx, argv, argc, handler, keys)
}

/// Runs [`dispatch`] inside a latency measurement: a call that takes at
/// least `latency-monitor-threshold` ms is reported under `name` in lower
/// case (see latency.rs). Kept out of line, off the monitor-off path.
#[cold]
#[inline(never)]
pub fn dispatch_measured(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    keys: Keys,
    name: &'static str,
) -> c_int {
    let started = crate::latency::start();
    let rc = dispatch_guarded(ctx, argv, argc, handler, keys, name);
    crate::latency::finish(started, name);
    rc
}

/// Sends a handler's reply. Integers and arrays of integers (the replies
/// of most hot commands) go straight to the reply API; the crate's general
/// `Context::reply` costs about 250 instructions more per element.
pub(crate) fn reply_to(context: &Context, reply: RedisResult) -> c_int {
    let ints = |items: &[RedisValue]| items.iter().all(|v| matches!(v, RedisValue::Integer(_)));
    match &reply {
        // The handler replied itself (reply.rs).
        Ok(RedisValue::NoReply) => {}
        Ok(RedisValue::Integer(v)) => unsafe {
            raw::RedisModule_ReplyWithLongLong.unwrap()(context.ctx, *v);
        },
        Ok(RedisValue::Array(items)) if ints(items) => unsafe {
            raw::RedisModule_ReplyWithArray.unwrap()(
                context.ctx,
                items.len() as std::os::raw::c_long,
            );
            for v in items {
                if let RedisValue::Integer(i) = v {
                    raw::RedisModule_ReplyWithLongLong.unwrap()(context.ctx, *i);
                }
            }
        },
        _ => return error::reply(context, reply),
    }
    raw::REDISMODULE_OK as c_int
}

/// Returns the key positions of `… k1 … k(numkeys-1) count key1 … keyN …`:
/// the keys before the count, then `count` keys after it (as many as
/// there are).
pub fn numkeys_positions(args: &[RedisString], numkeys: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (1..numkeys.min(args.len())).collect();
    let count = args
        .get(numkeys)
        .and_then(|a| crate::args::parse_i64_plain(a.as_slice()))
        .unwrap_or(0)
        .max(0) as usize;
    let first = numkeys + 1;
    out.extend(first..(first.saturating_add(count)).min(args.len()));
    out
}

const INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

fn key_specs(spec: &CommandSpec) -> Vec<raw::RedisModuleCommandKeySpec> {
    let access = if spec.readonly {
        raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
    } else {
        raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE
    } as u64;
    let zero = || -> raw::RedisModuleCommandKeySpec { unsafe { std::mem::zeroed() } };
    let mut out = Vec::new();
    match spec.keys {
        Keys::None => {}
        Keys::Range { first, last } => {
            let mut k = zero();
            k.flags = access;
            k.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
            k.bs.index.pos = first;
            k.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            k.fk.range.lastkey = if last < 0 { last } else { last - first };
            k.fk.range.keystep = 1;
            k.fk.range.limit = 0;
            out.push(k);
        }
        Keys::Numkeys { numkeys } => {
            if numkeys > 1 {
                // Keys before the count (e.g. a destination) are written.
                let mut k = zero();
                k.flags = (raw::REDISMODULE_CMD_KEY_OW | raw::REDISMODULE_CMD_KEY_UPDATE) as u64;
                k.begin_search_type =
                    raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
                k.bs.index.pos = 1;
                k.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
                k.fk.range.lastkey = numkeys - 2;
                k.fk.range.keystep = 1;
                out.push(k);
            }
            let mut k = zero();
            k.flags = if numkeys > 1 {
                (raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS) as u64
            } else {
                access
            };
            k.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
            k.bs.index.pos = numkeys;
            k.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            k.fk.keynum.keynumidx = 0;
            k.fk.keynum.firstkey = 1;
            k.fk.keynum.keystep = 1;
            out.push(k);
        }
    }
    out.push(zero());
    out
}

fn legacy_range(keys: Keys) -> (c_int, c_int, c_int) {
    match keys {
        Keys::None => (0, 0, 0),
        Keys::Range { first, last } => (first, last, 1),
        // Variable key lists are found through the key-specs.
        Keys::Numkeys { numkeys } => (
            if numkeys > 1 { 1 } else { 0 },
            if numkeys > 1 { 1 } else { 0 },
            if numkeys > 1 { 1 } else { 0 },
        ),
    }
}

/// Registers one family's commands. Must run inside `RedisModule_OnLoad`.
pub fn register(ctx: &Context, table: &[CommandSpec]) -> Result<(), String> {
    for spec in table {
        let name = CString::new(spec.name).unwrap();
        // The flags are the table's: a write that can grow memory says
        // `deny-oom` there, and one that only frees or overwrites in place
        // (LOCK.RELEASE, DELAYQ.ACK, …) runs under maxmemory, as DEL does.
        let mut flags = spec.flags.to_string();
        if matches!(spec.keys, Keys::Numkeys { .. }) {
            flags.push_str(" getkeys-api");
        }
        let flags = CString::new(flags).unwrap();
        let (first, last, step) = legacy_range(spec.keys);
        let rc = unsafe {
            raw::RedisModule_CreateCommand.unwrap()(
                ctx.ctx,
                name.as_ptr(),
                Some(spec.callback),
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if rc != raw::REDISMODULE_OK as c_int {
            return Err(format!("failed to create command {}", spec.name));
        }
        let cmd = unsafe {
            match raw::RedisModule_GetCommand {
                Some(get) => get(ctx.ctx, name.as_ptr()),
                None => ptr::null_mut(),
            }
        };
        if cmd.is_null() {
            continue;
        }
        if let Some(set_info) = unsafe { raw::RedisModule_SetCommandInfo } {
            let summary = CString::new(spec.summary).unwrap();
            let complexity = CString::new(spec.complexity).unwrap();
            // The declared syntax becomes the argument specs, so that
            // `COMMAND DOCS` and redis-cli's `help` show the documented
            // syntax (a unit test parses every declared line).
            let since = CString::new(spec.since).unwrap();
            let mut specs = key_specs(spec);
            let mut args = crate::syntax::parse(spec.syntax)
                .ok()
                .map(|a| crate::syntax::to_c(&a, specs.len() - 1));
            let info = raw::RedisModuleCommandInfo {
                version: &INFO_VERSION,
                summary: summary.as_ptr(),
                complexity: complexity.as_ptr(),
                since: since.as_ptr(),
                history: ptr::null_mut(),
                tips: ptr::null(),
                arity: spec.arity,
                key_specs: specs.as_mut_ptr(),
                args: args.as_mut().map_or(ptr::null_mut(), |a| a.as_mut_ptr()),
            };
            if unsafe { set_info(cmd, &info) } != raw::REDISMODULE_OK as c_int {
                ctx.log_warning(&format!(
                    "hotpath: could not set command info of {}",
                    spec.name
                ));
            }
        }
        if let Some(set_acl) = unsafe { raw::RedisModule_SetCommandACLCategories } {
            let hotpath = HOTPATH_CATEGORY.load(Ordering::Relaxed);
            let cats = CString::new(acl_categories(spec.acl, hotpath)).unwrap();
            if unsafe { set_acl(cmd, cats.as_ptr()) } != raw::REDISMODULE_OK as c_int {
                ctx.log_warning(&format!(
                    "hotpath: could not set ACL categories of {}",
                    spec.name
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::acl_categories;

    #[test]
    fn acl_categories_name_hotpath_only_where_the_server_has_it() {
        assert_eq!(acl_categories("write fast", true), "write fast hotpath");
        assert_eq!(acl_categories("write fast", false), "write fast");
        assert_eq!(acl_categories("read", false), "read");
        assert_eq!(acl_categories("", true), "hotpath");
    }
}
