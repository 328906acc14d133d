//! The pure part of `IDEM token` (no Redis types): where the option is in
//! a command's arguments, the digest of the other arguments, the stored
//! record, the protocol-neutral encoding of a reply tree, and the sweep
//! plan of a token store. Unit-tested below.
//!
//! **The record** (the one place its layout is written down; the Lua twins
//! and any other reader follow it): the value of the token's field in
//! `<key>:idem` is
//!
//! ```text
//! <expiry: 6 bytes> <digest: 5 bytes> <reply tree: the rest>
//! ```
//!
//! - expiry: the instant the token expires, unix ms, unsigned 48-bit
//!   little-endian (good until the year 10889);
//! - digest: the first 5 bytes of the SHA-1 of the command name in lower
//!   case and every argument after the key, each preceded by its length as
//!   a u64 little-endian (a Lua twin computes it with `redis.sha1hex`), see
//!   [`digest`];
//! - reply: the reply tree, see "replies" below.
//!
//! The field `` (empty name) of the store holds 16 bytes: the instant the
//! next sweep is due and the expiry the kit last gave the store (its
//! PEXPIRETIME), two i64 little-endian. A writer that moves the store's
//! expiry updates both; a reader that finds another length treats the
//! field as missing (the next write sweeps and rewrites it).
//!
//! A 40-bit digest: a token reused with other arguments is refused unless
//! the two digests collide, which happens with odds of 2^-40 (about 1 in
//! 1.1 × 10^12) per reuse; the token is the client's own, so a collision
//! can only hand a client its own earlier reply. With 11 header bytes a
//! record of a reply up to 3 bytes is 16 bytes in a hashtable store (one
//! allocation of jemalloc's smallest class but one), so a 12-byte token
//! costs 64 bytes (see docs/idem.md, "Memory per token").

/// Bytes before the reply in a stored token: the expiry (6 bytes) and the
/// digest of the arguments (5 bytes).
pub const HEADER: usize = 11;
/// Bytes of the expiry in a record.
const EXPIRY: usize = 6;
/// Bytes of the digest in a record.
pub const DIGEST: usize = 5;
/// The largest expiry a record holds (2^48 - 1 ms).
pub const MAX_EXPIRY: i64 = (1 << 48) - 1;

/// The digest of a call's arguments, as stored.
pub type Digest = [u8; DIGEST];

/// Returns true when `arg` is the keyword `kw` (ASCII, any case).
#[inline]
fn is(arg: &[u8], kw: &[u8]) -> bool {
    arg.len() == kw.len() && arg.eq_ignore_ascii_case(kw)
}

/// Returns the position of the `IDEM` keyword among `n` arguments (the
/// command name at 0, the key at 1), read through `arg`: the option is
/// taken when it is the last pair, or the pair before a trailing
/// `NOW unix-ms` / `NOWUS unix-us`, and when the arguments without it are
/// still at least `min` (the command's arity): `POLL.VOTE poll IDEM x` is a
/// vote for the option `IDEM`, not a vote with no option.
#[inline]
pub fn position<'a>(n: usize, min: usize, arg: impl Fn(usize) -> &'a [u8]) -> Option<usize> {
    if n < min + 2 || n < 4 {
        return None;
    }
    if is(arg(n - 2), b"IDEM") {
        return Some(n - 2);
    }
    if n >= min + 4 && n >= 6 {
        let kw = arg(n - 2);
        if (is(kw, b"NOW") || is(kw, b"NOWUS")) && is(arg(n - 4), b"IDEM") {
            return Some(n - 4);
        }
    }
    None
}

/// The digest of a call: the command name (any case) and every argument
/// after the key, each after its length (u64 little-endian); the first
/// [`DIGEST`] bytes of the SHA-1 of that buffer. Stable across builds and
/// platforms (the digest is stored, replicated and compared after a
/// restart or an upgrade), and one a Lua twin computes too
/// (`redis.sha1hex`, lua-compat/src/idem_token.lua), so that a token
/// stored by the module replays through the twin and the reverse.
pub fn digest<'a>(name: &[u8], rest: impl Iterator<Item = &'a [u8]>) -> Digest {
    use sha1::Digest as _;
    let mut buf: smallvec::SmallVec<[u8; 256]> = smallvec::SmallVec::new();
    buf.extend_from_slice(&(name.len() as u64).to_le_bytes());
    buf.extend(name.iter().map(u8::to_ascii_lowercase));
    for a in rest {
        buf.extend_from_slice(&(a.len() as u64).to_le_bytes());
        buf.extend_from_slice(a);
    }
    let full = sha1::Sha1::digest(&buf);
    let mut out = [0u8; DIGEST];
    out.copy_from_slice(&full[..DIGEST]);
    out
}

/// A stored token, read back.
#[derive(Debug, PartialEq, Eq)]
pub struct Stored<'a> {
    pub expiry: i64,
    pub digest: Digest,
    pub reply: &'a [u8],
}

/// Reads the 6-byte expiry at the start of `v` (at least [`HEADER`] long).
#[inline]
fn expiry_at(v: &[u8]) -> i64 {
    let mut b = [0u8; 8];
    b[..EXPIRY].copy_from_slice(&v[..EXPIRY]);
    i64::from_le_bytes(b)
}

/// Reads a stored token; None when it is not one (corrupt data).
pub fn read(v: &[u8]) -> Option<Stored<'_>> {
    if v.len() < HEADER {
        return None;
    }
    let digest: Digest = v[EXPIRY..HEADER].try_into().ok()?;
    let reply = &v[HEADER..];
    valid(reply).then_some(Stored {
        expiry: expiry_at(v),
        digest,
        reply,
    })
}

/// Writes the header of a record (the expiry, clamped to
/// 0..=[`MAX_EXPIRY`], and the digest) into `head`, the first [`HEADER`]
/// bytes of the record: the reply is captured after them, in place.
pub fn seal(head: &mut [u8], expiry: i64, digest: &Digest) {
    let e = expiry.clamp(0, MAX_EXPIRY).to_le_bytes();
    head[..EXPIRY].copy_from_slice(&e[..EXPIRY]);
    head[EXPIRY..HEADER].copy_from_slice(digest);
}

/// Returns the stored form of a token.
pub fn record(expiry: i64, digest: &Digest, reply: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; HEADER];
    seal(&mut v, expiry, digest);
    v.extend_from_slice(reply);
    v
}

/// Returns the expiry of a stored token (None when corrupt), without
/// checking its reply: the sweep reads only this.
pub fn expiry_of(v: &[u8]) -> Option<i64> {
    (v.len() >= HEADER).then(|| expiry_at(v))
}

// ------------------------------------------------------------ replies --
//
// A reply tree, one tag byte per node, lengths and integers as LEB128
// varints (integers zigzag): `i` integer, `b` bulk, `s` simple string,
// `e` error (its text), `n` null, `d` double (8 bytes), `t`/`f` booleans,
// `N` big number, `a` array, `m` map (2n items follow), `S` set, `r` record
// (n name/value pairs: a RESP3 map, in RESP2 the values alone, as
// `util::record` answers), `A` the arity error.

/// Appends a varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A reply tree being written, after `base` bytes that are not part of it
/// (the record's header). It counts the nodes still owed, so that
/// [`Enc::complete`] tells in O(1) whether it holds exactly one
/// well-formed tree (what [`valid`] checks by reading it back).
pub struct Enc {
    pub buf: Vec<u8>,
    /// Nodes still owed to complete the tree.
    need: usize,
    /// Set when a node came after the tree was complete, or a simple
    /// string or error holds a NUL or a line break.
    bad: bool,
}

impl Default for Enc {
    fn default() -> Enc {
        Enc::new()
    }
}

impl Enc {
    /// An empty tree (one node owed).
    pub const fn new() -> Enc {
        Enc {
            buf: Vec::new(),
            need: 1,
            bad: false,
        }
    }

    /// Starts again with `base` zero bytes before the tree (the buffer
    /// keeps its capacity).
    pub fn reset(&mut self, base: usize) {
        self.buf.clear();
        self.buf.resize(base, 0);
        self.need = 1;
        self.bad = false;
    }

    /// Returns true when the tree is exactly one well-formed reply.
    pub fn complete(&self) -> bool {
        self.need == 0 && !self.bad
    }

    /// Counts a node with `children` nodes under it.
    #[inline]
    fn node(&mut self, children: usize) {
        match self.need.checked_sub(1) {
            Some(n) => match n.checked_add(children) {
                Some(n) => self.need = n,
                None => self.bad = true,
            },
            None => self.bad = true,
        }
    }

    pub fn int(&mut self, v: i64) {
        self.node(0);
        self.buf.push(b'i');
        varint(&mut self.buf, ((v << 1) ^ (v >> 63)) as u64);
    }
    fn text(&mut self, tag: u8, b: &[u8]) {
        self.node(0);
        self.buf.push(tag);
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    pub fn bulk(&mut self, b: &[u8]) {
        self.text(b'b', b);
    }
    /// A line of text (replied as a C string: no NUL, no line break).
    fn line(&mut self, tag: u8, b: &[u8]) {
        if b.iter().any(|&c| matches!(c, 0 | b'\r' | b'\n')) {
            self.bad = true;
        }
        self.text(tag, b);
    }
    pub fn simple(&mut self, b: &[u8]) {
        self.line(b's', b);
    }
    pub fn error(&mut self, b: &[u8]) {
        self.line(b'e', b);
    }
    pub fn big(&mut self, b: &[u8]) {
        self.text(b'N', b);
    }
    pub fn null(&mut self) {
        self.node(0);
        self.buf.push(b'n');
    }
    pub fn arity(&mut self) {
        self.node(0);
        self.buf.push(b'A');
    }
    pub fn boolean(&mut self, v: bool) {
        self.node(0);
        self.buf.push(if v { b't' } else { b'f' });
    }
    pub fn double(&mut self, v: f64) {
        self.node(0);
        self.buf.push(b'd');
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn head(&mut self, tag: u8, n: usize, children: Option<usize>) {
        match children {
            Some(c) => self.node(c),
            None => self.bad = true,
        }
        self.buf.push(tag);
        varint(&mut self.buf, n as u64);
    }
    pub fn array(&mut self, n: usize) {
        self.head(b'a', n, Some(n));
    }
    pub fn map(&mut self, n: usize) {
        self.head(b'm', n, n.checked_mul(2));
    }
    pub fn set(&mut self, n: usize) {
        self.head(b'S', n, Some(n));
    }
    pub fn record(&mut self, n: usize) {
        self.head(b'r', n, n.checked_mul(2));
    }
}

/// One node of a stored reply tree.
#[derive(Debug, PartialEq)]
pub enum Item<'a> {
    Int(i64),
    Bulk(&'a [u8]),
    Simple(&'a [u8]),
    Error(&'a [u8]),
    Big(&'a [u8]),
    Null,
    Arity,
    Bool(bool),
    Double(f64),
    Array(usize),
    Map(usize),
    Set(usize),
    Record(usize),
}

/// Reads a reply tree node by node.
pub struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub fn new(b: &'a [u8]) -> Dec<'a> {
        Dec { b, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.varint()?).ok()?;
        // Every node is at least one byte: a count larger than what is
        // left is corrupt (and would make a reply the client never ends).
        (n <= self.b.len() - self.pos).then_some(n)
    }

    /// Returns the next node (None at the end or on corrupt data).
    pub fn next_item(&mut self) -> Option<Item<'a>> {
        Some(match self.byte()? {
            b'i' => {
                let z = self.varint()?;
                Item::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            b'b' => Item::Bulk(self.bytes()?),
            b's' => Item::Simple(self.bytes()?),
            b'e' => Item::Error(self.bytes()?),
            b'N' => Item::Big(self.bytes()?),
            b'n' => Item::Null,
            b'A' => Item::Arity,
            b't' => Item::Bool(true),
            b'f' => Item::Bool(false),
            b'd' => {
                let end = self.pos.checked_add(8)?;
                let v = f64::from_le_bytes(self.b.get(self.pos..end)?.try_into().ok()?);
                self.pos = end;
                Item::Double(v)
            }
            b'a' => Item::Array(self.count()?),
            b'm' => Item::Map(self.count()?),
            b'S' => Item::Set(self.count()?),
            b'r' => Item::Record(self.count()?),
            _ => return None,
        })
    }
}

/// Checks one whole node (and its children) from `d`.
fn valid_node(d: &mut Dec, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let children = match d.next_item() {
        None => return false,
        Some(Item::Array(n) | Item::Set(n)) => n,
        Some(Item::Map(n) | Item::Record(n)) => match n.checked_mul(2) {
            Some(c) => c,
            None => return false,
        },
        Some(Item::Simple(s) | Item::Error(s)) => {
            // Replied as C strings: no NUL, no line break inside.
            return !s.iter().any(|&c| matches!(c, 0 | b'\r' | b'\n'));
        }
        Some(_) => return true,
    };
    (0..children).all(|_| valid_node(d, depth + 1))
}

/// Returns true when `b` is exactly one well-formed reply tree.
pub fn valid(b: &[u8]) -> bool {
    let mut d = Dec::new(b);
    valid_node(&mut d, 0) && d.at_end()
}

// -------------------------------------------------------------- sweep --

/// What one write with a new token does to its entity's store, decided
/// from the store's tokens (`(field, expiry)`), the clock and the cap:
/// which tokens to delete (expired ones, then the earliest to expire while
/// the store would go over the cap) and the next instant a sweep is due.
#[derive(Debug, PartialEq, Eq)]
pub struct Sweep {
    pub delete: Vec<usize>,
    pub evicted: usize,
    pub next: i64,
}

/// Plans a sweep over `tokens` (their expiries, in the order read) before
/// a token expiring at `expiry` is added at `now`, with at most `cap`
/// tokens kept. An expired token goes; when the live ones would be over
/// the cap, the earliest to expire go, `cap / 16` more than needed, so that
/// a full store walks once per `cap / 16` new tokens, not at every one. The
/// next sweep is due when the earliest kept token expires, but not before
/// `now + ttl / 16`: a store walks at most 16 times per TTL, and an expired
/// token is never replayed (the lookup checks its expiry) while it waits.
pub fn plan(tokens: &[i64], now: i64, expiry: i64, ttl: i64, cap: usize) -> Sweep {
    let mut delete: Vec<usize> = Vec::new();
    let mut live: Vec<(i64, usize)> = Vec::with_capacity(tokens.len());
    for (i, &e) in tokens.iter().enumerate() {
        if e <= now {
            delete.push(i);
        } else {
            live.push((e, i));
        }
    }
    let mut evicted = 0;
    if live.len() + 1 > cap {
        let go = (live.len() + 1 - cap + cap / 16).min(live.len());
        live.select_nth_unstable(go.saturating_sub(1));
        live[..go].sort_unstable();
        delete.extend(live[..go].iter().map(|&(_, i)| i));
        live.drain(..go);
        evicted = go;
    }
    let earliest = live.iter().map(|&(e, _)| e).min().unwrap_or(i64::MAX);
    let next = earliest.max(now.saturating_add(ttl / 16)).min(expiry);
    delete.sort_unstable();
    Sweep {
        delete,
        evicted,
        next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `digest(b"RANK.INCR", ["m", "1"])`, checked against Python's
    /// hashlib.sha1 of the same length-prefixed buffer.
    const DIGEST_OF_RANK_INCR_M_1: Digest = [90, 63, 91, 138, 46];

    fn pos(args: &[&str], min: usize) -> Option<usize> {
        position(args.len(), min, |i| args[i].as_bytes())
    }

    #[test]
    fn finds_the_option_last_or_before_now() {
        assert_eq!(
            pos(&["rate.check", "k", "1", "1000", "IDEM", "t"], 4),
            Some(4)
        );
        assert_eq!(
            pos(&["rate.check", "k", "1", "1000", "idem", "t"], 4),
            Some(4)
        );
        assert_eq!(
            pos(
                &["rate.check", "k", "1", "1000", "IDEM", "t", "NOW", "5"],
                4
            ),
            Some(4)
        );
        assert_eq!(
            pos(
                &["rate.check", "k", "1", "1000", "NOW", "5", "IDEM", "t"],
                4
            ),
            Some(6)
        );
        assert_eq!(pos(&["rate.check", "k", "1", "1000"], 4), None);
        assert_eq!(pos(&["rate.check", "k", "1", "1000", "NOW", "5"], 4), None);
    }

    #[test]
    fn a_positional_argument_named_idem_is_not_the_option() {
        // POLL.VOTE key option user: the option is named IDEM.
        assert_eq!(pos(&["poll.vote", "p", "IDEM", "u"], 4), None);
        assert_eq!(
            pos(&["poll.vote", "p", "IDEM", "u", "IDEM", "t"], 4),
            Some(4)
        );
        assert_eq!(pos(&["x", "IDEM", "t", "NOW", "1"], 3), None);
    }

    #[test]
    fn digest_depends_on_name_and_arguments_not_case_of_name() {
        let a = digest(b"RATE.CHECK", [&b"1"[..], b"1000"].into_iter());
        let b = digest(b"rate.check", [&b"1"[..], b"1000"].into_iter());
        let c = digest(b"rate.check", [&b"11"[..], b"000"].into_iter());
        let d = digest(b"rate.multi", [&b"1"[..], b"1000"].into_iter());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        // Stable across builds: the digest is stored and replicated, and a
        // Lua twin computes the same (SHA-1 of the length-prefixed parts).
        assert_eq!(
            digest(b"RATE.CHECK", [&b"1"[..], b"1000"].into_iter()),
            [0x76, 0xea, 0xd7, 0xc7, 0xb8]
        );
        assert_eq!(
            digest(b"x", std::iter::empty()),
            digest(b"X", std::iter::empty())
        );
        // Stable across builds: the digest is stored and replicated (the
        // Lua twins compute the same bytes).
        assert_eq!(
            digest(b"RANK.INCR", [&b"m"[..], b"1"].into_iter()),
            DIGEST_OF_RANK_INCR_M_1
        );
    }

    #[test]
    fn replies_round_trip() {
        let mut e = Enc::default();
        e.record(2);
        e.bulk(b"allowed");
        e.int(1);
        e.bulk(b"remaining");
        e.int(-7);
        let mut f = Enc::default();
        f.array(6);
        f.int(i64::MIN);
        f.int(i64::MAX);
        f.null();
        f.double(1.5);
        f.map(1);
        f.simple(b"k");
        f.error(b"ERR x");
        f.boolean(true);
        for x in [&e, &f] {
            assert!(valid(&x.buf), "{:?}", x.buf);
            assert!(x.complete(), "{:?}", x.buf);
        }
        let mut d = Dec::new(&f.buf);
        assert_eq!(d.next_item(), Some(Item::Array(6)));
        assert_eq!(d.next_item(), Some(Item::Int(i64::MIN)));
        assert_eq!(d.next_item(), Some(Item::Int(i64::MAX)));
        assert_eq!(d.next_item(), Some(Item::Null));
        assert_eq!(d.next_item(), Some(Item::Double(1.5)));
        assert_eq!(d.next_item(), Some(Item::Map(1)));
        assert_eq!(d.next_item(), Some(Item::Simple(b"k")));
        assert_eq!(d.next_item(), Some(Item::Error(b"ERR x")));
        assert_eq!(d.next_item(), Some(Item::Bool(true)));
        assert!(d.at_end());
    }

    #[test]
    fn corrupt_replies_are_refused() {
        for b in [
            &b""[..],
            b"a\x02i\x00",
            b"i",
            b"b\x05ab",
            b"x",
            b"i\x00i\x00",
            b"a\xff\xff\xff\xff\x0f",
            b"s\x02a\n",
        ] {
            assert!(!valid(b), "{b:?}");
        }
        assert_eq!(read(b"short"), None);
        let r = record(5, &[1; 5], b"i\x02");
        assert_eq!(r, b"\x05\0\0\0\0\0\x01\x01\x01\x01\x01i\x02");
        assert_eq!(
            read(&r),
            Some(Stored {
                expiry: 5,
                digest: [1; 5],
                reply: b"i\x02"
            })
        );
        assert_eq!(expiry_of(&r), Some(5));
        // The expiry: 48 bits, little-endian.
        let at = 1_764_806_400_123;
        let r = record(at, &[2; 5], b"n");
        assert_eq!(r.len(), HEADER + 1);
        assert_eq!(expiry_of(&r), Some(at));
        assert_eq!(&r[..6], &at.to_le_bytes()[..6]);
        assert_eq!(
            expiry_of(&record(i64::MAX, &[0; 5], b"n")),
            Some(MAX_EXPIRY)
        );
        assert_eq!(expiry_of(&record(-1, &[0; 5], b"n")), Some(0));
    }

    #[test]
    fn the_encoder_knows_when_its_tree_is_complete() {
        let mut e = Enc::new();
        assert!(!e.complete());
        e.array(2);
        e.int(1);
        assert!(!e.complete());
        e.bulk(b"x");
        assert!(e.complete());
        // A node after the tree: not one reply.
        e.int(2);
        assert!(!e.complete());
        assert!(!valid(&e.buf));
        // A simple string with a line break.
        e.reset(0);
        e.simple(b"a\r\nb");
        assert!(!e.complete());
        // Reset keeps `base` bytes before the tree.
        e.reset(HEADER);
        e.map(1);
        e.bulk(b"k");
        e.null();
        assert!(e.complete());
        assert!(valid(&e.buf[HEADER..]));
        assert_eq!(&e.buf[..HEADER], &[0; HEADER]);
        // Huge counts do not overflow.
        e.reset(0);
        e.map(usize::MAX);
        assert!(!e.complete());
    }

    #[test]
    fn sweep_deletes_expired_and_evicts_the_earliest_over_the_cap() {
        // Nothing expired, under the cap: nothing deleted.
        let s = plan(&[200, 300], 100, 1100, 1000, 10);
        assert_eq!(s.delete, Vec::<usize>::new());
        assert_eq!(s.next, 200);
        // Expired ones go; the next sweep waits at least ttl/16.
        let s = plan(&[50, 300, 100], 100, 1100, 1000, 10);
        assert_eq!(s.delete, vec![0, 2]);
        assert_eq!(s.next, 300);
        let s = plan(&[120], 100, 1100, 1600, 10);
        assert_eq!(s.next, 200);
        // Full: the earliest to expire go, cap/16 more than needed.
        let tokens: Vec<i64> = (0..32).map(|i| 1000 - i).collect();
        let s = plan(&tokens, 100, 2000, 1000, 32);
        assert_eq!(s.evicted, 3);
        assert_eq!(s.delete, vec![29, 30, 31]);
        // An empty store: due when the new token expires.
        assert_eq!(plan(&[], 100, 1100, 1000, 10).next, 1100);
        // A cap of one keeps only the new token.
        let s = plan(&[500, 600], 100, 1100, 1000, 1);
        assert_eq!(s.delete, vec![0, 1]);
    }
}
