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

/// Renders a key name (or a member, a field) for an error line: its bytes
/// as given, with the ASCII control characters (which would break the
/// RESP error line) replaced by `?`, as the Lua twins do
/// (`string.gsub(k, '%c', '?')`).
///
/// An error is a `String`, so a byte that is not UTF-8 is carried as a
/// private code point ([`RAW_BYTE`] + byte) that [`reply`] turns back into
/// the byte; a name's own code points of that range travel the same way,
/// byte by byte, so the mapping is exact for every name.
pub fn key_text(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len());
    for chunk in key.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c as u32 {
                0..=0x1f | 0x7f => out.push('?'),
                RAW_BYTE_FIRST..=RAW_BYTE_LAST => {
                    let mut b = [0u8; 4];
                    for &x in c.encode_utf8(&mut b).as_bytes() {
                        out.push(raw_byte(x));
                    }
                }
                _ => out.push(c),
            }
        }
        for &x in chunk.invalid() {
            out.push(raw_byte(x));
        }
    }
    out
}

/// The private code point that stands for the raw byte 0 in an error text
/// (Supplementary Private Use Area-B): byte `b` (always 0x80 or more here)
/// is `RAW_BYTE + b`.
const RAW_BYTE: u32 = 0x10_FF00;
const RAW_BYTE_FIRST: u32 = RAW_BYTE + 0x80;
const RAW_BYTE_LAST: u32 = RAW_BYTE + 0xff;

fn raw_byte(b: u8) -> char {
    char::from_u32(RAW_BYTE + u32::from(b)).expect("a code point of plane 16")
}

/// The bytes an error text stands for: [`key_text`]'s raw bytes restored.
fn wire_bytes(text: &str) -> Vec<u8> {
    // The private code points are 4-byte sequences starting 0xF4.
    if !text.as_bytes().contains(&0xf4) {
        return text.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match c as u32 {
            v @ RAW_BYTE_FIRST..=RAW_BYTE_LAST => out.push((v - RAW_BYTE) as u8),
            _ => out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes()),
        }
    }
    out
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
    let bytes: Vec<u8> = wire_bytes(text)
        .into_iter()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_text_keeps_every_byte_but_ascii_controls() {
        let cases: Vec<(&[u8], &[u8])> = vec![
            (b"post:{7}", b"post:{7}"),
            (b"a\r\nb\x00c\x7fd", b"a??b?c?d"),
            (b"\xff", b"\xff"),
            (b"caf\xc3\xa9 \xc3", b"caf\xc3\xa9 \xc3"),
            // C1 controls are not ASCII controls: kept, as the twins keep them.
            (b"\xc2\x85", b"\xc2\x85"),
            // A name's own code points of the private range round-trip.
            (
                "\u{10FF80}\u{10FFFF}x".as_bytes(),
                "\u{10FF80}\u{10FFFF}x".as_bytes(),
            ),
            (b"\xf4\x8f\xbe\x80", b"\xf4\x8f\xbe\x80"),
        ];
        for (name, want) in cases {
            assert_eq!(wire_bytes(&key_text(name)), want, "{name:?}");
        }
    }

    #[test]
    fn every_byte_string_round_trips_apart_from_controls() {
        // All 1- and 2-byte names, and 3-byte names over a spread of bytes.
        let mut names: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                names.push(vec![a, b]);
            }
        }
        for a in (0..=255u8).step_by(7) {
            for b in (0x80..=0xffu8).step_by(3) {
                names.push(vec![0xf4, a, b]);
            }
        }
        for n in names {
            let want: Vec<u8> = n
                .iter()
                .map(|&b| if b < 0x20 || b == 0x7f { b'?' } else { b })
                .collect();
            assert_eq!(wire_bytes(&key_text(&n)), want, "{n:?}");
        }
    }

    #[test]
    fn plain_texts_pass_unchanged() {
        let t = "ERR rank: corrupt data in 'b' field 'é'";
        assert_eq!(wire_bytes(t), t.as_bytes());
    }
}
