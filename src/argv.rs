//! Commands that read their arguments where Redis keeps them.
//!
//! The registry's [`dispatch`](crate::registry::dispatch) hands a handler a
//! `Vec<RedisString>`: every argument is retained into an owned string, the
//! vector is allocated, and all of it is released afterwards — about 850
//! instructions per call, a fifth of a lock release. Handlers registered
//! with [`borrowed_command!`](crate::borrowed_command) get [`Args`] instead:
//! views of the arguments Redis already holds for the duration of the call,
//! nothing retained, nothing allocated up to 8 arguments. The same panic
//! guard applies, and the command table entry is an ordinary
//! [`CommandSpec`](crate::registry::CommandSpec).

use std::mem::ManuallyDrop;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::{raw, Context, RedisError, RedisResult, RedisString};
use smallvec::SmallVec;

use crate::args::parse_i64;
use crate::error;

/// A handler that reads its arguments in place.
pub type Handler = fn(&Context, &mut Args) -> RedisResult;

/// A command's arguments (the command name first), borrowed for the call,
/// with a cursor: integers in range, keyword options, "no more arguments".
pub struct Args<'a> {
    items: &'a [RedisString],
    pos: usize,
}

impl<'a> Args<'a> {
    /// Returns a cursor positioned after the command name.
    ///
    /// Occurs as an arity error when fewer than `min` arguments (command
    /// name included) were given.
    pub fn new(items: &'a [RedisString], min: usize) -> Result<Args<'a>, RedisError> {
        let a = Args { items, pos: 1 };
        if items.len() < min {
            return Err(a.arity());
        }
        Ok(a)
    }

    fn arity(&self) -> RedisError {
        let name = self.items.first().map(|s| s.as_slice()).unwrap_or(b"");
        error::arity(&String::from_utf8_lossy(name))
    }

    /// Fails with the arity error unless at least `min` arguments (command
    /// name included) were given.
    pub fn require(&self, min: usize) -> Result<(), RedisError> {
        if self.items.len() < min {
            return Err(self.arity());
        }
        Ok(())
    }

    /// Returns every argument, the command name first.
    pub fn all(&self) -> &'a [RedisString] {
        self.items
    }

    /// Returns argument `i` (0 is the command name) as a Redis string.
    pub fn string(&self, i: usize) -> &'a RedisString {
        &self.items[i]
    }

    /// Returns argument `i`'s bytes (empty when missing).
    pub fn arg(&self, i: usize) -> &'a [u8] {
        self.items.get(i).map(|a| a.as_slice()).unwrap_or(&[])
    }

    /// Returns true when every argument was consumed.
    pub fn done(&self) -> bool {
        self.pos >= self.items.len()
    }

    /// Returns the index of the next argument.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips `n` arguments read in place with [`Args::arg`]; an arity
    /// error when fewer are left.
    pub fn skip(&mut self, n: usize) -> Result<(), RedisError> {
        if self.items.len() - self.pos < n {
            return Err(self.arity());
        }
        self.pos += n;
        Ok(())
    }

    /// Returns the next argument's bytes, or an arity error.
    pub fn next_slice(&mut self) -> Result<&'a [u8], RedisError> {
        if self.done() {
            return Err(self.arity());
        }
        self.pos += 1;
        Ok(self.items[self.pos - 1].as_slice())
    }

    /// Returns the next argument as an `i64` within `[min, max]`.
    ///
    /// Occurs as `ERR value is not an integer or out of range` otherwise.
    pub fn next_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        let b = self.next_slice()?;
        match quick_int(b) {
            Some(v) if v >= min && v <= max => Ok(v),
            Some(_) => Err(error::not_integer()),
            None => parse_i64(b, min, max),
        }
    }

    /// Returns the next argument as an option keyword (compare it with
    /// [`is`]); no copy, no allocation.
    pub fn keyword(&mut self) -> Result<&'a [u8], RedisError> {
        self.next_slice()
    }

    /// Reads the rest of the arguments as a trailing `[NOW unix-ms]`, given
    /// at most once (0 … `max`): the option of every command whose only
    /// option is the clock. Anything else is a syntax error.
    pub fn trailing_now(&mut self, max: i64) -> Result<Option<i64>, RedisError> {
        let mut now = None;
        while !self.done() {
            if !is(self.keyword()?, "NOW") || now.is_some() {
                return Err(error::syntax());
            }
            now = Some(self.option_i64(0, max)?);
        }
        Ok(now)
    }

    /// Returns the value of an option as an `i64` within `[min, max]`; a
    /// missing value is a syntax error.
    pub fn option_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        if self.done() {
            return Err(error::syntax());
        }
        self.next_i64(min, max)
    }

    /// Returns the value of an option in place; missing is a syntax error.
    pub fn option_bytes(&mut self) -> Result<&'a [u8], RedisError> {
        if self.done() {
            return Err(error::syntax());
        }
        self.next_slice()
    }

    /// Fails with a syntax error if arguments are left over.
    pub fn expect_done(&self) -> Result<(), RedisError> {
        if self.done() {
            Ok(())
        } else {
            Err(error::syntax())
        }
    }
}

/// The cursor operations that option parsers share over owned
/// ([`Cursor`](crate::args::Cursor)) and in-place ([`Args`]) arguments, so
/// that one parser serves a hot command and its colder siblings.
pub trait Options {
    /// Returns true when every argument was consumed.
    fn done(&self) -> bool;
    /// Returns the next argument's bytes, or an arity error.
    fn next_slice(&mut self) -> Result<&[u8], RedisError>;
    /// Returns an option's value as an `i64` within `[min, max]`.
    fn option_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError>;
    /// Returns an option's value in place.
    fn option_bytes(&mut self) -> Result<&[u8], RedisError>;
}

impl Options for Args<'_> {
    fn done(&self) -> bool {
        Args::done(self)
    }
    fn next_slice(&mut self) -> Result<&[u8], RedisError> {
        Args::next_slice(self)
    }
    fn option_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        Args::option_i64(self, min, max)
    }
    fn option_bytes(&mut self) -> Result<&[u8], RedisError> {
        Args::option_bytes(self)
    }
}

impl Options for crate::args::Cursor {
    fn done(&self) -> bool {
        crate::args::Cursor::done(self)
    }
    fn next_slice(&mut self) -> Result<&[u8], RedisError> {
        crate::args::Cursor::next_slice(self)
    }
    fn option_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        crate::args::Cursor::option_i64(self, min, max)
    }
    fn option_bytes(&mut self) -> Result<&[u8], RedisError> {
        crate::args::Cursor::option_bytes(self)
    }
}

/// Reads a canonical non-negative decimal of up to 18 digits (no sign, no
/// leading zero) without the general parser's string conversion; None
/// sends anything else to [`parse_i64`], which gives Redis's answer.
pub(crate) fn quick_int(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 18 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut n: i64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(c - b'0');
    }
    Some(n)
}

/// Returns true when `arg` is the keyword `kw` (ASCII case ignored).
pub fn is(arg: &[u8], kw: &str) -> bool {
    arg.eq_ignore_ascii_case(kw.as_bytes())
}

/// Runs a handler on the arguments Redis holds, under the panic guard, and
/// replies. Integer replies go straight to the reply API.
///
/// # Safety
///
/// `ctx`, `argv` and `argc` must be what Redis passed to the command's
/// entry point (the macro's `cb`): `argv` holds `argc` valid strings that
/// outlive the call.
pub unsafe fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    name: &str,
) -> c_int {
    let context = Context::new(ctx);
    let raw_args: &[*mut raw::RedisModuleString] = if argv.is_null() || argc <= 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    };
    // Views of Redis's own strings: never released by us. Room for 16 on
    // the stack: a spread RESERVE with NOW is 9 arguments, 11 with IDEM
    // (8 spilled to the heap, ~230 instructions a call).
    let views: SmallVec<[ManuallyDrop<RedisString>; 16]> = raw_args
        .iter()
        .map(|&p| ManuallyDrop::new(RedisString::from_redis_module_string(ctx, p)))
        .collect();
    // SAFETY: ManuallyDrop<T> has the same layout as T.
    let items: &[RedisString] =
        unsafe { std::slice::from_raw_parts(views.as_ptr() as *const RedisString, views.len()) };
    // The slot-migration guard (see cluster_guard): the families derive
    // keys from their base key, which ASK routing cannot follow. RATE's
    // keys are all declared: Redis's own routing serves them.
    if crate::cluster_guard::active() && items.len() >= 2 && !name.starts_with("rate.") {
        if let Err(e) = crate::cluster_guard::check(&context, items[1].as_slice()) {
            return error::reply(&context, Err(e));
        }
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut args = Args { items, pos: 1 };
        handler(&context, &mut args)
    }));
    match result {
        // Integers and arrays of integers straight to the reply API.
        Ok(reply) => crate::registry::reply_to(&context, reply),
        Err(_) => context.reply(Err(RedisError::Str(error::INTERNAL))) as c_int,
    }
}

/// Builds a [`CommandSpec`](crate::registry::CommandSpec) whose handler
/// reads its arguments in place ([`Args`]); otherwise the same as
/// [`command!`](crate::command).
#[macro_export]
macro_rules! borrowed_command {
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
                    if IDEM && $crate::idem_token::present(argv, argc, $arity) {
                        return $crate::idem_token::dispatch(
                            ctx, argv, argc, $crate::idem_token::Run::Borrowed($handler),
                            $keys, $name, $arity,
                        );
                    }
                    // Measured only while the latency monitor is on (see
                    // latency.rs).
                    if $crate::latency::on() {
                        let started = $crate::latency::start();
                        // SAFETY: the arguments are the ones Redis passed.
                        let rc = unsafe { $crate::argv::dispatch(ctx, argv, argc, $handler, $name) };
                        $crate::latency::finish(started, $name);
                        return rc;
                    }
                    // SAFETY: the arguments are the ones Redis passed.
                    unsafe { $crate::argv::dispatch(ctx, argv, argc, $handler, $name) }
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
