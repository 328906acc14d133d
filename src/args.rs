//! An argument cursor: integers in range, keyword options, `NOW`, and
//! "no more arguments".
//!
//! Every handler parses all of its arguments with a [`Cursor`] before it
//! opens a key, so that bad input is refused before anything is written.

use redis_module::{RedisError, RedisString};

use crate::error;

/// Walks a command's arguments, skipping the command name. Arguments are
/// read in place: a `RedisString` clone would allocate a new string per
/// argument (measured: about 600 instructions each).
pub struct Cursor {
    args: Vec<RedisString>,
    pos: usize,
}

impl Cursor {
    /// Returns a cursor positioned after the command name.
    ///
    /// Occurs as an arity error when fewer than `min` arguments (command
    /// name included) were given.
    pub fn new(args: Vec<RedisString>, min: usize) -> Result<Self, RedisError> {
        if args.len() < min {
            let name = args.first().map(|a| a.to_string_lossy());
            return Err(error::arity(&name.unwrap_or_default()));
        }
        Ok(Cursor { args, pos: 1 })
    }

    fn arity(&self) -> RedisError {
        error::arity(&self.command())
    }

    /// Returns every argument, the command name first (for replication).
    pub fn args(&self) -> &[RedisString] {
        &self.args
    }

    /// Returns the command name as the client sent it.
    pub fn command(&self) -> String {
        String::from_utf8_lossy(self.arg(0)).into_owned()
    }

    /// Returns how many arguments are left.
    pub fn remaining(&self) -> usize {
        self.args.len() - self.pos
    }

    /// Returns true when every argument was consumed.
    pub fn done(&self) -> bool {
        self.pos >= self.args.len()
    }

    /// Returns the next argument, or an arity error when none is left.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<RedisString, RedisError> {
        let a = self
            .args
            .get(self.pos)
            .cloned()
            .ok_or_else(|| self.arity())?;
        self.pos += 1;
        Ok(a)
    }

    /// Returns the next argument's bytes in place, or an arity error.
    pub fn next_slice(&mut self) -> Result<&[u8], RedisError> {
        if self.done() {
            return Err(self.arity());
        }
        self.pos += 1;
        Ok(self.args[self.pos - 1].as_slice())
    }

    /// Skips `n` arguments the caller reads in place with [`Cursor::arg`];
    /// an arity error when fewer are left.
    pub fn skip(&mut self, n: usize) -> Result<(), RedisError> {
        if self.remaining() < n {
            return Err(self.arity());
        }
        self.pos += n;
        Ok(())
    }

    /// Returns argument `i` (0 is the command name) without copying.
    pub fn arg(&self, i: usize) -> &[u8] {
        self.args.get(i).map(|a| a.as_slice()).unwrap_or(&[])
    }

    /// Returns the next argument's bytes, or an arity error.
    pub fn next_bytes(&mut self) -> Result<Vec<u8>, RedisError> {
        Ok(self.next_slice()?.to_vec())
    }

    /// Returns the next argument as UTF-8 text (lossy), or an arity error.
    pub fn next_str(&mut self) -> Result<String, RedisError> {
        Ok(String::from_utf8_lossy(self.next_slice()?).into_owned())
    }

    /// Returns the next argument as an `i64` within `[min, max]`.
    ///
    /// Occurs as `ERR value is not an integer or out of range` otherwise.
    pub fn next_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        parse_i64(self.next_slice()?, min, max)
    }

    /// Returns the next argument for an option that needs a value, as an
    /// `i64` within `[min, max]`; a missing value is a syntax error (as in
    /// Redis, where `ZADD k NX` without more is a syntax problem).
    pub fn option_i64(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        if self.done() {
            return Err(error::syntax());
        }
        self.next_i64(min, max)
    }

    /// Returns the value of an option in place; missing is a syntax error.
    pub fn option_bytes(&mut self) -> Result<&[u8], RedisError> {
        if self.done() {
            return Err(error::syntax());
        }
        self.next_slice()
    }

    /// Returns the next argument upper-cased, for keyword matching.
    pub fn next_keyword(&mut self) -> Result<String, RedisError> {
        let mut k = self.next_str()?;
        k.make_ascii_uppercase();
        Ok(k)
    }

    /// Returns the value of the next option as one of `choices` (matched
    /// without regard to case); anything else is a syntax error.
    pub fn option_choice(&mut self, choices: &[&'static str]) -> Result<&'static str, RedisError> {
        let v = String::from_utf8_lossy(self.option_bytes()?);
        choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(&v))
            .copied()
            .ok_or_else(error::syntax)
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

/// Parses a strict base-10 `i64` (no spaces, no `+`, no leading zeros
/// beyond `0` itself is not required) within `[min, max]`.
///
/// Occurs as `ERR value is not an integer or out of range` otherwise.
pub fn parse_i64(bytes: &[u8], min: i64, max: i64) -> Result<i64, RedisError> {
    let v = parse_i64_plain(bytes).ok_or_else(error::not_integer)?;
    if v < min || v > max {
        return Err(error::not_integer());
    }
    Ok(v)
}

/// Parses a base-10 integer the way Redis's `string2ll` does: an optional
/// `-`, then digits, no spaces, no `+`, no leading zeros.
pub fn parse_i64_plain(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    let (neg, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    if neg && digits == b"0" {
        return None;
    }
    let s = std::str::from_utf8(bytes).ok()?;
    s.parse::<i64>().ok()
}

/// Parses exactly what [`parse_i64_plain`] accepts, without going through
/// `str` (no UTF-8 check, no generic `FromStr`): about a tenth of the cost,
/// for values read on every call of a hot command.
pub fn parse_i64_fast(bytes: &[u8]) -> Option<i64> {
    let (neg, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    match digits {
        [] => return None,
        [b'0'] if !neg => return Some(0),
        [b'0', ..] => return None,
        _ if digits.len() > 19 => return None,
        _ => {}
    }
    // Accumulate as a negative number: i64::MIN has no positive twin.
    let mut v: i64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_redis() {
        assert_eq!(parse_i64_plain(b"0"), Some(0));
        assert_eq!(parse_i64_plain(b"-12"), Some(-12));
        assert_eq!(parse_i64_plain(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64_plain(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"1.5",
            b"abc",
            b"9223372036854775808",
            b"-",
            b"1e3",
        ] {
            assert_eq!(
                parse_i64_plain(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn fast_parse_agrees_with_plain_parse() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let fixed: Vec<Vec<u8>> = [
            "0",
            "-0",
            "00",
            "01",
            "-",
            "",
            "7",
            "-7",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "+1",
            " 1",
            "1 ",
            "1a",
            "1.0",
            "12345678901234567890",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let alphabet = b"0123456789-+ .a";
        let random: Vec<Vec<u8>> = (0..200_000)
            .map(|_| {
                let len = rng.gen_range(0..22);
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect::<Vec<u8>>()
            })
            .collect();
        let numbers: Vec<Vec<u8>> = (0..200_000)
            .map(|_| rng.gen::<i64>().to_string().into_bytes())
            .collect();
        for b in fixed.into_iter().chain(random).chain(numbers) {
            assert_eq!(
                parse_i64_fast(&b),
                parse_i64_plain(&b),
                "{:?}",
                String::from_utf8_lossy(&b)
            );
        }
    }
}
