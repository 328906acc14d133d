//! `IDEM token` on hotpath writes (issue 23, first half): a write declared
//! `idem: true` in its `command!` entry takes a trailing `IDEM token`; the
//! first call with a token runs the command and stores, in the same
//! command, `token → expiry | digest of the arguments | the reply` in the
//! entity's token store; a retry with the same token and arguments gets
//! the stored reply byte for byte (errors too) and changes nothing; the
//! same token with other arguments is refused.
//!
//! The store is the derived key `B:idem`, a Hash in the entity's slot
//! (`B` the command's first key): one field per token, and the field ``
//! (empty name) holding the instant the next sweep is due and the store's
//! expiry. It expires with its latest token. The byte layout of both is
//! documented once, in [`wire`]. A call opens the store once: looked up
//! before the command runs, written after it.
//!
//! Replication: the family replicates its effect as it always does; the
//! kit then replicates the store's change as `HDEL` (swept tokens), `HSET`
//! (the token, with its absolute expiry inside, and the field `` when it
//! changed) and
//! `PEXPIREAT`, all in the command's `MULTI`/`EXEC`. A command that reaches
//! a replica or the AOF verbatim still carries `IDEM token`: run from the
//! replication link or while loading, the kit strips it and runs the
//! command alone, since the master's store write follows in the stream.
//! Replicas and AOF replay thus hold the same tokens with the same
//! expiries as the master (tests/idem_token.rs checks both).
//!
//! Replies are captured as a protocol-neutral tree ([`wire`]) by the reply
//! functions of `reply.rs` and `util.rs` while a token is active, and from
//! the value a handler returns; a replay sends the tree through the same
//! reply functions, so a RESP2 client gets the same bytes and a RESP3
//! client its maps.

pub mod wire;

use std::cell::{Cell, RefCell};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::redisvalue::RedisValueKey;
use redis_module::{
    raw, Context, ContextFlags, KeyType, RedisError, RedisResult, RedisString, RedisValue,
};

use crate::config;
use crate::error;
use crate::keys::{call::Arg, Field, Key};
use crate::registry::Keys;
use crate::stats::Counter;

use wire::{Dec, Digest, Enc, Item, HEADER};

/// Writes that stored their token with their reply.
pub static STORED: Counter = Counter::new("idem_tokens_stored");
/// Retries answered with a stored reply.
pub static REPLAYED: Counter = Counter::new("idem_tokens_replayed");
/// Calls refused: the token was used with other arguments.
pub static MISMATCHED: Counter = Counter::new("idem_tokens_mismatched");
/// Expired tokens removed by sweeps.
pub static SWEPT: Counter = Counter::new("idem_tokens_swept");
/// Live tokens removed because their entity's store was full.
pub static EVICTED: Counter = Counter::new("idem_tokens_evicted");

/// The token store's suffix: `B:idem`.
const SUFFIX: &str = "idem";
/// The field holding the instant the next sweep is due and the expiry the
/// kit last gave the store (two i64 LE, see [`Meta`]).
const META: &[u8] = b"";
/// The same field as a Redis string made once.
static META_FIELD: Field = Field::new(c"");

/// A command's handler, as its `command!` or `borrowed_command!` entry
/// declares it.
#[derive(Clone, Copy)]
pub enum Run {
    Owned(crate::registry::Handler),
    Borrowed(crate::argv::Handler),
}

// ------------------------------------------------------------ capture --

thread_local! {
    /// True while a command with a token runs: the reply functions then
    /// also write what they send into [`BUF`]. Commands run on the main
    /// thread only.
    static ON: Cell<bool> = const { Cell::new(false) };
    /// The record being built: the header's bytes, then the reply tree.
    static BUF: RefCell<Enc> = const { RefCell::new(Enc::new()) };
}

/// Returns true while a reply is being captured (one thread-local load on
/// every reply function's path).
#[inline(always)]
pub fn capturing() -> bool {
    ON.with(|c| c.get())
}

/// Writes into the reply being captured (call only when [`capturing`]).
#[cold]
pub fn capture(f: impl FnOnce(&mut Enc)) {
    BUF.with(|b| f(&mut b.borrow_mut()));
}

/// Captures a reply value as `Context::reply` sends it.
#[cold]
pub fn capture_value(v: &RedisValue) {
    capture(|e| encode(e, v));
}

fn encode_key(e: &mut Enc, k: &RedisValueKey) {
    match k {
        RedisValueKey::Integer(i) => e.int(*i),
        RedisValueKey::String(s) => e.bulk(s.as_bytes()),
        RedisValueKey::BulkString(b) => e.bulk(b),
        RedisValueKey::BulkRedisString(s) => e.bulk(s.as_slice()),
        RedisValueKey::Bool(b) => e.boolean(*b),
    }
}

/// Encodes what `Context::reply(Ok(v))` sends.
fn encode(e: &mut Enc, v: &RedisValue) {
    match v {
        RedisValue::Bool(b) => e.boolean(*b),
        RedisValue::Integer(i) => e.int(*i),
        RedisValue::Float(f) => e.double(*f),
        RedisValue::SimpleStringStatic(s) => e.simple(s.as_bytes()),
        RedisValue::SimpleString(s) => e.simple(s.as_bytes()),
        RedisValue::BulkString(s) => e.bulk(s.as_bytes()),
        RedisValue::BigNumber(s) => e.big(s.as_bytes()),
        RedisValue::VerbatimString((_, data)) => e.bulk(data),
        RedisValue::BulkRedisString(s) => e.bulk(s.as_slice()),
        RedisValue::StringBuffer(b) => e.bulk(b),
        RedisValue::Array(items) => {
            e.array(items.len());
            items.iter().for_each(|i| encode(e, i));
        }
        RedisValue::Map(m) => {
            e.map(m.len());
            for (k, v) in m {
                encode_key(e, k);
                encode(e, v);
            }
        }
        RedisValue::OrderedMap(m) => {
            e.map(m.len());
            for (k, v) in m {
                encode_key(e, k);
                encode(e, v);
            }
        }
        RedisValue::Set(s) => {
            e.set(s.len());
            s.iter().for_each(|k| encode_key(e, k));
        }
        RedisValue::OrderedSet(s) => {
            e.set(s.len());
            s.iter().for_each(|k| encode_key(e, k));
        }
        RedisValue::Null => e.null(),
        RedisValue::NoReply => {}
        RedisValue::StaticError(s) => e.error(s.as_bytes()),
    }
}

/// Encodes a handler's result (a `NoReply` was captured as it was sent).
fn encode_result(e: &mut Enc, r: &RedisResult) {
    match r {
        Ok(v) => encode(e, v),
        Err(RedisError::WrongArity) => e.arity(),
        Err(RedisError::WrongType) => e.error(RedisError::WrongType.to_string().as_bytes()),
        Err(RedisError::Str(s)) => e.error(s.as_bytes()),
        Err(RedisError::String(s)) => e.error(s.as_bytes()),
    }
}

// ------------------------------------------------------------- replay --

/// Sends one stored node and its children (the tree was checked whole).
fn emit(ctx: &Context, d: &mut Dec, resp3: bool) {
    let Some(item) = d.next_item() else { return };
    let c = ctx.ctx;
    match item {
        Item::Int(v) => crate::reply::int(ctx, v),
        Item::Bulk(b) => crate::reply::bytes(ctx, b),
        Item::Simple(s) => {
            let s = std::ffi::CString::new(s).unwrap_or_default();
            raw::reply_with_simple_string(c, s.as_ptr());
        }
        Item::Error(s) => {
            let text = String::from_utf8_lossy(s).into_owned();
            error::reply(ctx, Err(RedisError::String(text)));
        }
        Item::Big(b) => {
            raw::reply_with_big_number(c, b.as_ptr().cast(), b.len());
        }
        Item::Null => {
            raw::reply_with_null(c);
        }
        Item::Arity => unsafe {
            raw::RedisModule_WrongArity.unwrap()(c);
        },
        Item::Bool(b) => {
            raw::reply_with_bool(c, b.into());
        }
        Item::Double(v) => {
            raw::reply_with_double(c, v);
        }
        Item::Array(n) => {
            crate::reply::array(ctx, n);
            (0..n).for_each(|_| emit(ctx, d, resp3));
        }
        Item::Map(n) => {
            crate::reply::map(ctx, n);
            (0..2 * n).for_each(|_| emit(ctx, d, resp3));
        }
        Item::Set(n) => {
            raw::reply_with_set(c, n as std::os::raw::c_long);
            (0..n).for_each(|_| emit(ctx, d, resp3));
        }
        Item::Record(n) => {
            if resp3 {
                crate::reply::map(ctx, n);
                (0..2 * n).for_each(|_| emit(ctx, d, resp3));
            } else {
                // RESP2: the values alone, as util::record answers.
                crate::reply::array(ctx, n);
                for _ in 0..n {
                    let _name = d.next_item();
                    emit(ctx, d, resp3);
                }
            }
        }
    }
}

/// Sends a stored reply (checked by [`wire::read`]).
fn replay(ctx: &Context, reply: &[u8]) {
    emit(ctx, &mut Dec::new(reply), crate::util::resp3(ctx));
}

// ----------------------------------------------------------- dispatch --

/// Returns true when a call carries `IDEM token` (see [`wire::position`]):
/// one look at the next-to-last argument (three when it is `NOW`), the
/// whole cost of the option for a call without it.
#[inline]
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn present(argv: *mut *mut raw::RedisModuleString, argc: c_int, arity: i32) -> bool {
    if argv.is_null() || argc < 4 {
        return false;
    }
    let arg = |i: usize| -> &[u8] {
        // SAFETY: `argv` holds `argc` strings Redis passed to the command,
        // alive for the call; `i < argc` (wire::position checks).
        unsafe {
            let mut len = 0usize;
            let p = raw::RedisModule_StringPtrLen.unwrap()(*argv.add(i), &mut len);
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    };
    wire::position(argc as usize, arity.unsigned_abs() as usize, arg).is_some()
}

/// The position of the entity's key: the store lives beside it.
fn key_pos(keys: Keys) -> usize {
    match keys {
        Keys::None => 1,
        Keys::Range { first, .. } => first.max(1) as usize,
        Keys::Numkeys { numkeys } => numkeys as usize + 1,
    }
}

/// Runs a handler under the panic guard, on views of the client's
/// arguments (without `IDEM token`): an owned handler gets them retained,
/// a borrowed one reads them in place (nothing retained or copied).
fn call(ctx: &Context, run: Run, args: &[RedisString]) -> RedisResult {
    let r = catch_unwind(AssertUnwindSafe(|| match run {
        Run::Owned(f) => {
            let owned = args
                .iter()
                .map(|a| RedisString::new(std::ptr::NonNull::new(ctx.ctx), a.inner))
                .collect();
            f(ctx, owned)
        }
        Run::Borrowed(f) => {
            let mut a = crate::argv::Args::new(args, 0)?;
            f(ctx, &mut a)
        }
    }));
    r.unwrap_or(Err(RedisError::Str(error::INTERNAL)))
}

/// Runs a call that carries `IDEM token` (the command's entry point calls
/// this when [`present`] is true).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    run: Run,
    keys: Keys,
    name: &'static str,
    arity: i32,
) -> c_int {
    let context = Context::new(ctx);
    if context.is_keys_position_request() {
        return match run {
            Run::Owned(f) => crate::registry::dispatch(ctx, argv, argc, f, keys),
            // SAFETY: the arguments are the ones Redis passed.
            Run::Borrowed(f) => unsafe { crate::argv::dispatch(ctx, argv, argc, f, name) },
        };
    }
    let started = crate::latency::on().then(crate::latency::start);
    let rc = with_token(&context, ctx, argv, argc, run, keys, name, arity);
    if let Some(s) = started {
        crate::latency::finish(s, name);
    }
    rc
}

#[allow(clippy::too_many_arguments)]
fn with_token(
    context: &Context,
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    run: Run,
    keys: Keys,
    name: &'static str,
    arity: i32,
) -> c_int {
    let raw_args: &[*mut raw::RedisModuleString] = if argv.is_null() || argc <= 0 {
        &[]
    } else {
        // SAFETY: `argv` holds `argc` strings Redis passed to the command,
        // alive for the whole call.
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    };
    // Views of Redis's own strings: never released by us.
    let views: smallvec::SmallVec<[std::mem::ManuallyDrop<RedisString>; 12]> = raw_args
        .iter()
        .map(|&p| std::mem::ManuallyDrop::new(RedisString::from_redis_module_string(ctx, p)))
        .collect();
    // SAFETY: ManuallyDrop<T> has the same layout as T.
    let all: &[RedisString] =
        unsafe { std::slice::from_raw_parts(views.as_ptr() as *const RedisString, views.len()) };
    let min = arity.unsigned_abs() as usize;
    let Some(p) = wire::position(all.len(), min, |i| all[i].as_slice()) else {
        let r = call(context, run, all);
        return crate::registry::reply_to(context, r);
    };
    let token = &all[p + 1];
    // The arguments without `IDEM token`, views again.
    let rest: smallvec::SmallVec<[std::mem::ManuallyDrop<RedisString>; 12]> = raw_args
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != p && i != p + 1)
        .map(|(_, &a)| std::mem::ManuallyDrop::new(RedisString::from_redis_module_string(ctx, a)))
        .collect();
    // SAFETY: as above.
    let args: &[RedisString] =
        unsafe { std::slice::from_raw_parts(rest.as_ptr() as *const RedisString, rest.len()) };
    let flags = context.get_flags();
    if flags.contains(ContextFlags::REPLICATED) || flags.contains(ContextFlags::LOADING) {
        // The master ran the token's logic; its store write follows this
        // command in the stream.
        let r = call(context, run, args);
        return crate::registry::reply_to(context, r);
    }
    let family = name.split('.').next().unwrap_or(name);
    let kp = key_pos(keys).min(args.len() - 1);
    let now = crate::util::now_ms();
    let open = match check(context, family, args, kp, token, now, name) {
        Ok(Found::Run(open)) => open,
        Ok(Found::Replay) => return raw::REDISMODULE_OK as c_int,
        Err(e) => return error::reply(context, Err(e)),
    };
    // The record is built in place: header bytes first, filled in by
    // `store`, then the reply as the reply functions send it. The buffer
    // keeps its capacity from call to call (no reallocation on the write
    // path).
    BUF.with(|b| b.borrow_mut().reset(HEADER));
    ON.with(|c| c.set(true));
    // A command that blocks its client takes this (see [`take_pending`]).
    // Pointers only (no copy on the write path): copied if it blocks.
    ACTIVE.with(|a| {
        a.set(Some(Active {
            token: token.as_slice(),
            base: args[kp].as_slice(),
            digest: open.digest,
        }))
    });
    LATE.with(|l| l.set(false));
    let r = call(context, run, args);
    ON.with(|c| c.set(false));
    ACTIVE.with(|a| a.set(None));
    // A waiter's token stored while the command ran (it served waiters)
    // may have written this very store through another handle: look at
    // it again before writing.
    let open = if LATE.with(|l| l.replace(false)) {
        let digest = open.digest;
        drop(open);
        match reopen(context, args[kp].as_slice(), token, digest) {
            Some(o) => o,
            None => return crate::registry::reply_to(context, r),
        }
    } else {
        open
    };
    if !matches!(r, Ok(RedisValue::NoReply)) {
        BUF.with(|b| encode_result(&mut b.borrow_mut(), &r));
    }
    let rc = crate::registry::reply_to(context, r);
    // Nothing captured: the command blocked its client (its reply comes
    // later), so there is nothing to store.
    BUF.with(|b| {
        let mut enc = b.borrow_mut();
        if enc.complete() {
            store(context, open, token, now, &mut enc.buf);
        }
    });
    rc
}

thread_local! {
    /// The token of the call running now, for a command that blocks.
    static ACTIVE: Cell<Option<Active>> = const { Cell::new(None) };
    /// Set when a waiter's token was stored ([`store_late`]).
    static LATE: Cell<bool> = const { Cell::new(false) };
}

/// The token of a call that blocked its client: stored with the reply the
/// client finally gets ([`store_late`]), when it is served or times out.
pub struct Pending {
    token: Vec<u8>,
    base: Vec<u8>,
    digest: Digest,
}

/// The token of the call running now: views of the client's arguments,
/// alive while the call runs (cleared when it returns).
#[derive(Clone, Copy)]
struct Active {
    token: *const [u8],
    base: *const [u8],
    digest: Digest,
}

/// Takes the token of the call running now, if it has one: a command
/// that blocks its client calls this and keeps the token with its waiter.
pub fn take_pending() -> Option<Pending> {
    let a = ACTIVE.with(|a| a.take())?;
    // SAFETY: set by `with_token` from the call's own arguments, which
    // live until the call returns, and cleared before it returns.
    let (token, base) = unsafe { ((*a.token).to_vec(), (*a.base).to_vec()) };
    Some(Pending {
        token,
        base,
        digest: a.digest,
    })
}

/// Opens `<base>:idem` again (after [`store_late`] wrote it during the
/// call) and reads its field ``.
fn reopen(ctx: &Context, base: &[u8], token: &RedisString, digest: Digest) -> Option<Open> {
    let store = Key::derived_hot(ctx, base, SUFFIX, true);
    let meta = if store.check(KeyType::Hash).ok()? {
        let (_, m) = store.hget_arg_and_field(token, &META_FIELD);
        m.and_then(|m| Meta::read(m.as_slice()))
    } else {
        None
    };
    Some(Open {
        digest,
        store,
        meta,
    })
}

/// Stores the token of a call that blocked its client with the reply it
/// is sent now (the lock handed to it, an error, or the timeout's nil),
/// in the execution unit that sends it, and replicates the store's change
/// there, with the effect when there is one. A token stored meanwhile (a
/// retry that ran while this call waited) is kept: the store keeps the
/// first reply stored.
pub fn store_late(ctx: &Context, p: &Pending, reply: &RedisResult) {
    let now = crate::util::now_ms();
    let k = Key::derived_hot(ctx, &p.base, SUFFIX, true);
    let token = RedisString::create_from_slice(ctx.ctx, &p.token);
    let meta = match k.check(KeyType::Hash) {
        Err(_) => return,
        Ok(false) => None,
        Ok(true) => {
            let (v, m) = k.hget_arg_and_field(&token, &META_FIELD);
            if v.and_then(|v| wire::expiry_of(v.as_slice())) > Some(now) {
                return;
            }
            m.and_then(|m| Meta::read(m.as_slice()))
        }
    };
    let mut enc = Enc::new();
    enc.reset(HEADER);
    encode_result(&mut enc, reply);
    store(
        ctx,
        Open {
            digest: p.digest,
            store: k,
            meta,
        },
        &token,
        now,
        &mut enc.buf,
    );
    LATE.with(|l| l.set(true));
}

/// The entity's token store, opened once for the whole call: looked up
/// before the command runs, written after it (the command itself never
/// touches `<key>:idem`).
struct Open {
    /// The digest of the call's arguments.
    digest: Digest,
    /// `<key>:idem`, open for writing.
    store: Key,
    /// The store's sweep instant and expiry, when it holds them.
    meta: Option<Meta>,
}

/// The store's field `` (16 bytes): the instant the next sweep is due and
/// the expiry the kit last set on the store, so that a write does not
/// read the key's expiry (the field is replicated with the token's
/// `HSET`, so a replica's copy is the same).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Meta {
    next: i64,
    at: i64,
}

impl Meta {
    fn read(b: &[u8]) -> Option<Meta> {
        let b: &[u8; 16] = b.try_into().ok()?;
        let (n, a) = b.split_at(8);
        Some(Meta {
            next: i64::from_le_bytes(n.try_into().ok()?),
            at: i64::from_le_bytes(a.try_into().ok()?),
        })
    }

    fn bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next.to_le_bytes());
        b[8..].copy_from_slice(&self.at.to_le_bytes());
        b
    }
}

enum Found {
    /// Not stored (or expired): run the command, then store.
    Run(Open),
    /// The stored reply was sent.
    Replay,
}

/// Validates the token, looks it up (with the store's sweep instant, in
/// the same `HashGet`), and replays a stored reply.
fn check(
    ctx: &Context,
    family: &str,
    args: &[RedisString],
    kp: usize,
    token: &RedisString,
    now: i64,
    name: &str,
) -> Result<Found, RedisError> {
    let t = token.as_slice();
    let max = config::get(&config::IDEM_TOKEN_MAX) as usize;
    if t.is_empty() || t.len() > max {
        return Err(error::family(
            family,
            &format!("IDEM token must be 1 to {max} bytes"),
        ));
    }
    let base = args[kp].as_slice();
    // The store is a derived key: in the entity's slot only with a tag.
    crate::util::require_hash_tag(ctx, family, base)?;
    if crate::cluster_guard::active() && !name.starts_with("rate.") {
        crate::cluster_guard::check(ctx, base)?;
    }
    let digest = wire::digest(
        args[0].as_slice(),
        args[1..]
            .iter()
            .enumerate()
            .filter(|&(i, _)| i + 1 != kp)
            .map(|(_, a)| a.as_slice()),
    );
    let store = Key::derived_hot(ctx, base, SUFFIX, true);
    if !store.check(KeyType::Hash)? {
        return Ok(Found::Run(Open {
            digest,
            store,
            meta: None,
        }));
    }
    let (v, m) = store.hget_arg_and_field(token, &META_FIELD);
    let meta = m.and_then(|m| Meta::read(m.as_slice()));
    let Some(v) = v else {
        return Ok(Found::Run(Open {
            digest,
            store,
            meta,
        }));
    };
    let s = wire::read(v.as_slice())
        .ok_or_else(|| error::corrupt(family, store.name().as_slice(), None))?;
    if s.expiry <= now {
        return Ok(Found::Run(Open {
            digest,
            store,
            meta,
        }));
    }
    if s.digest != digest {
        MISMATCHED.incr();
        return Err(error::family(
            family,
            "IDEM token reused with other arguments",
        ));
    }
    REPLAYED.incr();
    replay(ctx, s.reply);
    Ok(Found::Replay)
}

/// Stores a token with its reply in the entity's store, after a sweep
/// when one is due, and replicates the store's change. `rec` is the
/// record: [`HEADER`] bytes to fill, then the captured reply.
fn store(ctx: &Context, open: Open, token: &RedisString, now: i64, rec: &mut [u8]) {
    let Open {
        digest,
        store: k,
        meta,
    } = open;
    let ttl = config::get(&config::IDEM_TOKEN_TTL).saturating_mul(1000);
    let cap = config::get(&config::IDEM_TOKEN_CAP).max(1) as usize;
    let expiry = now.saturating_add(ttl).min(wire::MAX_EXPIRY);
    wire::seal(&mut rec[..HEADER], expiry, &digest);
    if !matches!(k.kind(), KeyType::Hash | KeyType::Empty) {
        return;
    }
    let t = token.as_slice();
    let fields = k.len().saturating_sub(usize::from(meta.is_some()));
    let due = match meta {
        Some(m) => now >= m.next,
        None => fields > 0,
    } || fields >= cap;
    let mut deleted: Vec<Vec<u8>> = Vec::new();
    let next = if due {
        let mut names: Vec<Vec<u8>> = Vec::with_capacity(fields);
        let mut expiries: Vec<i64> = Vec::with_capacity(fields);
        k.scan_pairs(|f, v| {
            if f != META && f != t {
                names.push(f.to_vec());
                expiries.push(wire::expiry_of(v).unwrap_or(i64::MIN));
            }
            true
        });
        let plan = wire::plan(&expiries, now, expiry, ttl, cap);
        SWEPT.add((plan.delete.len() - plan.evicted) as u64);
        EVICTED.add(plan.evicted as u64);
        for i in plan.delete {
            let f = std::mem::take(&mut names[i]);
            k.hdel(&f);
            deleted.push(f);
        }
        plan.next
    } else {
        meta.map_or(expiry, |m| m.next).min(expiry)
    };
    let value = RedisString::create_from_slice(ctx.ctx, rec);
    k.hset_arg(token, &value);
    // The store outlives its latest token by up to TTL/16, so that its
    // expiry moves (and a PEXPIREAT is replicated) once per TTL/16, not
    // at every token. Its expiry is the one the field `` holds (the key's
    // own is read only when the field is missing).
    let at = match meta {
        Some(m) => Some(m.at),
        None => k.abs_expire_ms(),
    };
    let new_at = match at {
        Some(a) if a >= expiry => None,
        _ => Some(expiry.saturating_add(ttl / 16)),
    };
    if let Some(a) = new_at {
        k.set_abs_expire_ms(a);
    }
    let now_meta = Meta {
        next,
        at: new_at.or(at).unwrap_or(expiry),
    };
    let m = (meta != Some(now_meta)).then(|| {
        let m = RedisString::create_from_slice(ctx.ctx, &now_meta.bytes());
        k.hput_field(&META_FIELD, &m);
        m
    });
    STORED.incr();

    let store = k.name();
    if !deleted.is_empty() {
        let strings: Vec<RedisString> = deleted
            .iter()
            .map(|f| RedisString::create_from_slice(ctx.ctx, f))
            .collect();
        let mut argv: Vec<Arg> = vec![store.inner];
        argv.extend(strings.iter().map(|s| s.inner));
        crate::replicate::command(ctx, c"HDEL", &argv);
    }
    match &m {
        Some(m) => crate::replicate::command_fixed(
            ctx,
            c"HSET",
            &[
                store.inner,
                token.inner,
                value.inner,
                META_FIELD.string(),
                m.inner,
            ],
        ),
        None => {
            crate::replicate::command_fixed(ctx, c"HSET", &[store.inner, token.inner, value.inner])
        }
    }
    if let Some(a) = new_at {
        crate::replicate::pexpireat(ctx, store, a);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn idem_flag_and_syntax_line_go_together() {
        let mut flagged = 0;
        for family in crate::FAMILIES {
            for spec in family.commands {
                let says = spec.syntax.ends_with(" [IDEM token]");
                assert_eq!(spec.idem, says, "{}: idem flag vs syntax line", spec.name);
                if spec.idem {
                    assert!(!spec.readonly, "{}: a read takes no IDEM", spec.name);
                    flagged += 1;
                }
            }
        }
        assert!(flagged >= 16, "{flagged}");
    }
}
