//! Redis-worded errors shared by every family.
//!
//! Generic errors keep Redis's own wording (SPEC §1); family errors read
//! `ERR <family>: <what is wrong>` and are built with [`family`].

use redis_module::RedisError;

/// Occurs when an argument that must be an integer is not one, or is out of
/// the range a command accepts.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Occurs when an option keyword is unknown, repeated badly, or misplaced.
pub const SYNTAX: &str = "ERR syntax error";
/// Occurs when a key holds a different Redis type than the family needs.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// Occurs when a handler panicked: the panic is caught and the server lives.
pub const INTERNAL: &str = "ERR hotpath: internal error";

/// Returns `ERR value is not an integer or out of range`.
pub fn not_integer() -> RedisError {
    RedisError::Str(NOT_INTEGER)
}

/// Returns `ERR syntax error`.
pub fn syntax() -> RedisError {
    RedisError::Str(SYNTAX)
}

/// Returns the standard `WRONGTYPE …` error.
pub fn wrongtype() -> RedisError {
    RedisError::Str(WRONGTYPE)
}

/// Returns `ERR <family>: <msg>`, the shape of every family error.
pub fn family(family: &str, msg: &str) -> RedisError {
    RedisError::String(format!("ERR {family}: {msg}"))
}

/// Returns `ERR wrong number of arguments for '<cmd>' command`.
pub fn arity(cmd: &str) -> RedisError {
    RedisError::String(format!(
        "ERR wrong number of arguments for '{}' command",
        cmd.to_ascii_lowercase()
    ))
}

/// Returns `ERR <family>: user must not be empty`: every family refuses an
/// empty user id (or member) the same way, before it opens a key.
pub fn empty_user(family: &str) -> RedisError {
    RedisError::String(format!("ERR {family}: user must not be empty"))
}

/// Renders a key name for an error line: lossy UTF-8, with control
/// characters (which would break the RESP error line) replaced by `?`.
pub fn key_text(key: &[u8]) -> String {
    String::from_utf8_lossy(key)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Returns `ERR <family>: corrupt data in '<key>'` or, for a hash field,
/// `ERR <family>: corrupt data in '<key>' field '<field>'`.
///
/// Occurs when a key holds a value the family never writes (a hand-edited
/// `total`, a negative share, malformed JSON): the command refuses and
/// writes nothing, instead of reading the value as a default.
pub fn corrupt(family: &str, key: &[u8], field: Option<&str>) -> RedisError {
    let key = key_text(key);
    RedisError::String(match field {
        Some(f) => format!("ERR {family}: corrupt data in '{key}' field '{f}'"),
        None => format!("ERR {family}: corrupt data in '{key}'"),
    })
}

/// Returns `ERR <family>: integer overflow in '<key>'` (with `field '<f>'`
/// for a hash field).
///
/// Occurs when applying a command would take a stored integer past the
/// i64 range: arithmetic never wraps around.
pub fn overflow(family: &str, key: &[u8], field: Option<&str>) -> RedisError {
    let key = key_text(key);
    RedisError::String(match field {
        Some(f) => format!("ERR {family}: integer overflow in '{key}' field '{f}'"),
        None => format!("ERR {family}: integer overflow in '{key}'"),
    })
}

/// Replies `reply` to the client, with an error's text sent as the UTF-8
/// it is (line breaks and NULs turned into spaces, as Redis would).
///
/// The redis-module crate's `Context::reply(Err(…))` narrows every
/// character of an error to one byte (`c as u8`): an error naming a key
/// `é` carried the byte 0xE9 instead of its UTF-8, unlike the same error
/// from Redis or from the Lua twins (the differential test found it).
/// Every other reply goes through the crate as before.
pub fn reply(
    context: &redis_module::Context,
    reply: redis_module::RedisResult,
) -> std::os::raw::c_int {
    let text = match &reply {
        Err(RedisError::Str(s)) => *s,
        Err(RedisError::String(s)) => s.as_str(),
        _ => return context.reply(reply) as std::os::raw::c_int,
    };
    let bytes: Vec<u8> = text
        .bytes()
        .map(|b| {
            if matches!(b, b'\r' | b'\n' | 0) {
                b' '
            } else {
                b
            }
        })
        .collect();
    let msg = std::ffi::CString::new(bytes).expect("NULs were replaced");
    // SAFETY: a valid context and a NUL-terminated string that outlives
    // the call (Redis copies it).
    unsafe { redis_module::raw::RedisModule_ReplyWithError.unwrap()(context.ctx, msg.as_ptr()) }
}
