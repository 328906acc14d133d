//! The notation of a command's syntax line, as the command reference
//! (docs/reference/) prints it, and its conversion into the argument specs
//! of `RedisModule_SetCommandInfo`, which `COMMAND DOCS` and redis-cli's
//! `help` show.
//!
//! Each command declares its line once, in the `syntax:` field of its
//! [`command!`](crate::command) entry in its family's `mod.rs`, in Redis's
//! own notation:
//!
//! - a lower-case word is an argument (`user`, `unix-ms`); its type comes
//!   from [`leaf_kind`], so a new argument name must be classified there;
//! - an upper-case word is a token (`NOW`, `PEEK`); a token right before an
//!   argument names it (`NOW unix-ms`);
//! - `[ … ]` is optional; `x [x ...]` repeats `x` (one word or several);
//! - `A|B` (no spaces) chooses between single words, ` | ` (spaced)
//!   between sequences: `[NOW unix-ms | NOWUS unix-us]`.
//!
//! [`parse`] turns a line into a tree of [`Arg`]s and [`render`] turns the
//! tree back into the same line (unit-tested for every command), so the
//! line is canonical: tests/reference.rs checks that each entry of the
//! reference shows exactly this line and that `COMMAND DOCS` answers this
//! tree on every supported server.

use std::ffi::CString;
use std::os::raw::c_int;
use std::ptr;

use redis_module::raw;

use crate::registry::CommandSpec;

/// The version in which the commands of the first release appeared.
pub const FIRST_RELEASE: &str = "1.0.0";

/// Every declared command, family by family, in declaration order.
pub fn commands() -> impl Iterator<Item = &'static CommandSpec> {
    crate::FAMILIES.iter().flat_map(|f| f.commands.iter())
}

/// Returns the declaration of a command (`name` in any case).
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    commands().find(|c| c.name.eq_ignore_ascii_case(name))
}

/// What an argument is, as `COMMAND DOCS` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Key,
    String,
    Integer,
    Double,
    UnixTime,
    /// A keyword on its own (`PEEK`); its token is the word.
    PureToken,
    /// Exactly one of the alternatives.
    OneOf(Vec<Arg>),
    /// The arguments in sequence.
    Block(Vec<Arg>),
}

/// One argument of a command, possibly with sub-arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub kind: Kind,
    /// The keyword that introduces the argument (`NOW` of `NOW unix-ms`).
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
}

/// Returns the type of an argument name, or None for a name no command
/// uses yet (classify it here when adding one).
pub fn leaf_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "key" | "key1" | "key2" | "destination" => Kind::Key,
        "unix-ms" | "unix-us" => Kind::UnixTime,
        "score" => Kind::Double,
        "user" | "candidate" | "member" | "owner" | "id" | "payload" | "draw-token"
        | "fingerprint" | "result" | "seed" => Kind::String,
        "burst" | "cost" | "count" | "delta" | "digits" | "epoch" | "limit" | "max-burst"
        | "maxvotes" | "minutes" | "n" | "numkeys" | "offset" | "period-ms" | "period-s"
        | "points" | "poolcap" | "quantity" | "seconds" | "shards" | "total-cents" | "winners" => {
            Kind::Integer
        }
        // LOCK and DELAYQ: durations in ms, fencing tokens, receipts.
        "ttl-ms" | "ms" | "timeout-ms" | "lease-ms" | "base-ms" | "max-ms" | "token"
        | "receipt" | "fence" => Kind::Integer,
        // STOCK: units, limits and HSCAN's cursor; orders are ids.
        "total" | "per-user" | "cursor" => Kind::Integer,
        "order" | "transfer" => Kind::String,
        "shard" => Kind::Integer,
        _ => return None,
    })
}

fn is_token(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && word.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
}

fn is_name(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && word.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Open,
    Close,
    /// ` | ` between sequences.
    Bar,
    Ellipsis,
    Word(String),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' => i += 1,
            b'[' => {
                out.push(Tok::Open);
                i += 1;
            }
            b']' => {
                out.push(Tok::Close);
                i += 1;
            }
            b'|' => {
                // Only a spaced bar stands alone; `A|B` is one word.
                if i == 0 || b[i - 1] != b' ' || b.get(i + 1) != Some(&b' ') {
                    return Err(format!("a lone '|' must have a space on each side: {s}"));
                }
                out.push(Tok::Bar);
                i += 1;
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b' ' | b'[' | b']') {
                    i += 1;
                }
                let w = &s[start..i];
                out.push(if w == "..." {
                    Tok::Ellipsis
                } else {
                    Tok::Word(w.to_string())
                });
            }
        }
    }
    Ok(out)
}

fn leaf(word: &str) -> Result<Arg, String> {
    if is_token(word) {
        return Ok(Arg {
            name: word.to_ascii_lowercase(),
            kind: Kind::PureToken,
            token: Some(word.to_string()),
            optional: false,
            multiple: false,
        });
    }
    if !is_name(word) {
        return Err(format!("'{word}' is neither a TOKEN nor an argument name"));
    }
    let kind = leaf_kind(word).ok_or_else(|| format!("argument '{word}' has no type"))?;
    Ok(Arg {
        name: word.to_string(),
        kind,
        token: None,
        optional: false,
        multiple: false,
    })
}

/// The name `COMMAND DOCS` shows for a group: its token, else its parts.
fn group_name(parts: &[Arg]) -> String {
    parts
        .iter()
        .map(|a| a.token.as_deref().unwrap_or(&a.name).to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("-")
}

fn is_bare_token(a: &Arg) -> bool {
    a.kind == Kind::PureToken && !a.optional && !a.multiple
}

/// Gives a bare token the argument right after it: `NOW unix-ms` is one
/// argument named `unix-ms` with the token `NOW`.
fn fold(items: Vec<Arg>) -> Vec<Arg> {
    let mut out: Vec<Arg> = Vec::with_capacity(items.len());
    for a in items {
        match out.last_mut() {
            Some(prev) if is_bare_token(prev) && a.token.is_none() && a.kind != Kind::PureToken => {
                let token = prev.token.take();
                // A group is named by its token (`AGGREGATE SUM|MAX` is
                // "aggregate"); a single argument keeps its own name.
                let name = match a.kind {
                    Kind::OneOf(_) | Kind::Block(_) => prev.name.clone(),
                    _ => a.name.clone(),
                };
                *prev = Arg { token, name, ..a };
            }
            _ => out.push(a),
        }
    }
    out
}

/// Makes one argument of a sequence: itself when alone, a block (with
/// the leading token, if any) otherwise.
fn single(items: Vec<Arg>) -> Result<Arg, String> {
    if items.is_empty() {
        return Err("empty group".into());
    }
    if items.len() > 2 && is_bare_token(&items[0]) {
        let mut items = items;
        let token = items.remove(0).token;
        let inner = fold(items);
        return Ok(Arg {
            name: token.as_deref().unwrap_or_default().to_ascii_lowercase(),
            kind: Kind::Block(inner),
            token,
            optional: false,
            multiple: false,
        });
    }
    let mut items = fold(items);
    if items.len() == 1 {
        return Ok(items.pop().unwrap());
    }
    Ok(Arg {
        name: group_name(&items),
        kind: Kind::Block(items),
        token: None,
        optional: false,
        multiple: false,
    })
}

/// A parsed sequence: its alternatives (more than one when ` | `
/// separates them), whether it ended with `...`, and whether a `]` ended
/// it (rather than the end of the line).
struct Seq {
    alts: Vec<Vec<Arg>>,
    ellipsis: bool,
    closed: bool,
}

/// Parses a sequence until `]` or the end of the line.
fn parse_seq(toks: &[Tok], pos: &mut usize) -> Result<Seq, String> {
    let mut alts: Vec<Vec<Arg>> = vec![Vec::new()];
    let mut ellipsis = false;
    while *pos < toks.len() {
        let t = toks[*pos].clone();
        *pos += 1;
        let cur = alts.last_mut().unwrap();
        if ellipsis && t != Tok::Close {
            return Err("'...' must end its brackets".into());
        }
        match t {
            Tok::Close => {
                return Ok(Seq {
                    alts,
                    ellipsis,
                    closed: true,
                })
            }
            Tok::Bar => alts.push(Vec::new()),
            Tok::Ellipsis => ellipsis = true,
            Tok::Word(w) if w.contains('|') => {
                let parts = w.split('|').map(leaf).collect::<Result<Vec<_>, _>>()?;
                cur.push(Arg {
                    name: group_name(&parts),
                    kind: Kind::OneOf(parts),
                    token: None,
                    optional: false,
                    multiple: false,
                });
            }
            Tok::Word(w) => cur.push(leaf(&w)?),
            Tok::Open => {
                let Seq {
                    alts: inner,
                    ellipsis: repeat,
                    closed,
                } = parse_seq(toks, pos)?;
                if !closed {
                    return Err("unclosed '['".into());
                }
                if repeat {
                    // `x [x ...]`: the bracket repeats the items before it.
                    if inner.len() != 1 {
                        return Err("'...' inside alternatives".into());
                    }
                    let unit = &inner[0];
                    let n = unit.len();
                    if n == 0 || cur.len() < n || cur[cur.len() - n..] != unit[..] {
                        return Err("'[x ...]' must follow the same x".into());
                    }
                    cur.truncate(cur.len() - n);
                    let mut a = single(unit.clone())?;
                    // A token of its own stays with the whole repetition.
                    a.multiple = true;
                    cur.push(a);
                } else {
                    let mut a = if inner.len() > 1 {
                        let parts = inner
                            .into_iter()
                            .map(single)
                            .collect::<Result<Vec<_>, _>>()?;
                        Arg {
                            name: group_name(&parts),
                            kind: Kind::OneOf(parts),
                            token: None,
                            optional: false,
                            multiple: false,
                        }
                    } else {
                        single(inner.into_iter().next().unwrap())?
                    };
                    a.optional = true;
                    cur.push(a);
                }
            }
        }
    }
    Ok(Seq {
        alts,
        ellipsis,
        closed: false,
    })
}

/// Parses a syntax line (the arguments after the command name).
pub fn parse(s: &str) -> Result<Vec<Arg>, String> {
    let toks = lex(s)?;
    let mut pos = 0;
    let Seq {
        alts,
        ellipsis,
        closed,
    } = parse_seq(&toks, &mut pos)?;
    if closed {
        return Err(format!("unbalanced ']': {s}"));
    }
    if alts.len() != 1 || ellipsis {
        return Err(format!("top-level '|' or '...': {s}"));
    }
    Ok(fold(alts.into_iter().next().unwrap()))
}

/// The text of an argument without its optional brackets.
fn body(a: &Arg) -> String {
    let inner = match &a.kind {
        Kind::PureToken => return a.token.clone().unwrap_or_default(),
        Kind::OneOf(parts) => {
            let texts: Vec<String> = parts.iter().map(render_one).collect();
            let words = texts.iter().all(|t| !t.contains(' '));
            texts.join(if words { "|" } else { " | " })
        }
        Kind::Block(parts) => render(parts),
        _ => a.name.clone(),
    };
    let inner = if a.multiple {
        format!("{inner} [{inner} ...]")
    } else {
        inner
    };
    match &a.token {
        Some(t) => format!("{t} {inner}"),
        None => inner,
    }
}

fn render_one(a: &Arg) -> String {
    if a.optional {
        format!("[{}]", body(a))
    } else {
        body(a)
    }
}

/// Renders arguments in the notation [`parse`] reads.
pub fn render(args: &[Arg]) -> String {
    args.iter().map(render_one).collect::<Vec<_>>().join(" ")
}

/// The C argument specs of one command, kept alive until
/// `RedisModule_SetCommandInfo` has copied them.
pub struct CArgs {
    _strings: Vec<CString>,
    /// Sub-argument arrays; each is referenced by a parent's `subargs`.
    _nested: Vec<Vec<raw::RedisModuleCommandArg>>,
    top: Vec<raw::RedisModuleCommandArg>,
}

impl CArgs {
    /// Returns the null-terminated top-level array.
    pub fn as_mut_ptr(&mut self) -> *mut raw::RedisModuleCommandArg {
        self.top.as_mut_ptr()
    }
}

fn zero_arg() -> raw::RedisModuleCommandArg {
    // SAFETY: every field is a pointer, an integer or a C enum with a zero
    // member; an all-zero entry is the array's terminator.
    unsafe { std::mem::zeroed() }
}

/// Builds the C argument specs of `args`; key arguments point at key-spec
/// `min(i, key_specs - 1)` for the i-th key argument (one range spec for
/// `key1 key2`; a destination spec then a source spec for RANK.MERGE).
pub fn to_c(args: &[Arg], key_specs: usize) -> CArgs {
    let mut strings = Vec::new();
    let mut nested = Vec::new();
    let mut keys = 0usize;
    let top = c_array(args, key_specs, &mut keys, &mut strings, &mut nested);
    CArgs {
        _strings: strings,
        _nested: nested,
        top,
    }
}

fn c_array(
    args: &[Arg],
    key_specs: usize,
    keys: &mut usize,
    strings: &mut Vec<CString>,
    nested: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> Vec<raw::RedisModuleCommandArg> {
    let cstr = |s: &str, strings: &mut Vec<CString>| -> *const std::os::raw::c_char {
        let c = CString::new(s).unwrap_or_default();
        let p = c.as_ptr();
        strings.push(c);
        p
    };
    let mut out = Vec::with_capacity(args.len() + 1);
    for a in args {
        let mut c = zero_arg();
        c.name = cstr(&a.name, strings);
        c.key_spec_index = -1;
        c.token = a.token.as_deref().map_or(ptr::null(), |t| cstr(t, strings));
        let mut flags = 0;
        if a.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if a.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        c.flags = flags as c_int;
        c.type_ = match &a.kind {
            Kind::Key => {
                c.key_spec_index = (*keys).min(key_specs.saturating_sub(1)) as c_int;
                *keys += 1;
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
            }
            Kind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            Kind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            Kind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            Kind::UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
            Kind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            Kind::OneOf(parts) | Kind::Block(parts) => {
                let mut sub = c_array(parts, key_specs, keys, strings, nested);
                c.subargs = sub.as_mut_ptr();
                // Moving the Vec into `nested` keeps its heap buffer where
                // it is, so the pointer stays valid.
                nested.push(sub);
                if matches!(a.kind, Kind::OneOf(_)) {
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
                } else {
                    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
                }
            }
        };
        out.push(c);
    }
    out.push(zero_arg());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_line_parses_and_renders_back_unchanged() {
        // `registry::register` registers no arguments for a line that does
        // not parse, so `COMMAND DOCS` and redis-cli's help would show no
        // syntax for it.
        for c in commands() {
            let args = parse(c.syntax).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(render(&args), c.syntax, "{}", c.name);
        }
    }

    #[test]
    fn names_are_unique_lower_case_and_prefixed_by_their_family() {
        let all: Vec<&CommandSpec> = commands().collect();
        assert!(all.len() >= 40, "{}", all.len());
        for (i, c) in all.iter().enumerate() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(
                all[i + 1..].iter().all(|o| o.name != c.name),
                "{} twice",
                c.name
            );
            assert_eq!(lookup(&c.name.to_ascii_uppercase()).unwrap().name, c.name);
        }
        for f in crate::FAMILIES {
            assert_eq!(f.name, f.name.to_ascii_lowercase());
            for c in f.commands {
                let prefix = format!("{}.", f.name);
                assert!(c.name.starts_with(&prefix), "{} in {}", c.name, f.name);
            }
            for c in f.counters {
                let prefix = format!("{}_", f.name);
                assert!(c.name.starts_with(&prefix), "{} in {}", c.name, f.name);
            }
        }
    }

    fn noop(
        _: &redis_module::Context,
        _: Vec<redis_module::RedisString>,
    ) -> redis_module::RedisResult {
        Ok(redis_module::RedisValue::Null)
    }

    #[test]
    fn since_defaults_to_the_first_release_and_reply_is_declared() {
        // The commands 2.0.0 added declare it; every other one is 1.0.0's.
        const ADDED_IN_2: &[&str] = &[
            "delayq.cancel",
            "delayq.peek",
            "delayq.purge",
            "idem.abort",
            "idem.begin",
            "idem.complete",
            "idem.get",
            "rank.decr",
            "stock.audit",
            "stock.confirm",
            "stock.create",
            "stock.info",
            "stock.release",
            "stock.reserve",
            "stock.restock",
        ];
        // The commands 2.1.0 adds.
        const ADDED_IN_2_1: &[&str] = &[
            "stock.apply",
            "stock.pool",
            "stock.settle",
            "stock.transfer",
        ];
        for c in commands() {
            let want = if ADDED_IN_2_1.contains(&c.name) {
                "2.1.0"
            } else if ADDED_IN_2.contains(&c.name) {
                "2.0.0"
            } else {
                FIRST_RELEASE
            };
            assert_eq!(c.since, want, "{}", c.name);
            assert!(!c.reply.is_empty(), "{}", c.name);
        }
        // A command added later declares the version that introduced it.
        const LATER: CommandSpec = crate::command! {
            name: "x.later", handler: noop, flags: "readonly", arity: 2,
            keys: crate::registry::Keys::Range { first: 1, last: 1 }, acl: "read",
            summary: "s", complexity: "O(1)", syntax: "key", reply: "integer",
            since: "1.1.0",
        };
        assert_eq!(LATER.since, "1.1.0");
        assert_eq!(LATER.syntax, "key");
    }

    #[test]
    fn tokens_name_the_argument_after_them() {
        let a = parse("key user candidate [NOW unix-ms]").unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].kind, Kind::Key);
        assert_eq!(a[1].kind, Kind::String);
        assert_eq!(a[3].name, "unix-ms");
        assert_eq!(a[3].token.as_deref(), Some("NOW"));
        assert_eq!(a[3].kind, Kind::UnixTime);
        assert!(a[3].optional);
    }

    #[test]
    fn choices_repetitions_and_blocks() {
        let a = parse("key [MODE ONCE|DAILY|MULTI] [GT|LT] [PEEK]").unwrap();
        assert_eq!(a[1].token.as_deref(), Some("MODE"));
        match &a[1].kind {
            Kind::OneOf(p) => {
                assert_eq!(p.len(), 3);
                assert!(p.iter().all(|x| x.kind == Kind::PureToken));
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(a[1].name, "mode");
        assert_eq!(a[2].name, "gt-lt");
        assert!(a[2].optional && a[2].token.is_none());
        assert_eq!(a[3].kind, Kind::PureToken);
        assert!(a[3].optional);

        let m =
            parse("numkeys key [key ...] LIMITS limit period-ms [limit period-ms ...]").unwrap();
        assert_eq!(m.len(), 3);
        assert!(m[1].multiple && m[1].kind == Kind::Key);
        assert_eq!(m[2].token.as_deref(), Some("LIMITS"));
        assert_eq!(m[2].name, "limits");
        assert!(m[2].multiple && !m[2].optional);
        match &m[2].kind {
            Kind::Block(p) => assert_eq!(p.len(), 2),
            k => panic!("{k:?}"),
        }

        let c = parse("key [CANDIDATES count candidate [candidate ...]]").unwrap();
        assert_eq!(c[1].token.as_deref(), Some("CANDIDATES"));
        assert!(c[1].optional);
        match &c[1].kind {
            Kind::Block(p) => {
                assert_eq!(p[0].kind, Kind::Integer);
                assert!(p[1].multiple);
            }
            k => panic!("{k:?}"),
        }

        let t = parse("key [NOW unix-ms | NOWUS unix-us]").unwrap();
        match &t[1].kind {
            Kind::OneOf(p) => {
                assert_eq!(p[1].token.as_deref(), Some("NOWUS"));
                assert_eq!(p[1].name, "unix-us");
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(t[1].name, "now-nowus");

        // DELAYQ.NACK: a choice between a token with one value and a token
        // with two (a block).
        let n = parse("key [DELAY ms | BACKOFF base-ms max-ms]").unwrap();
        assert_eq!(n[1].name, "delay-backoff");
        match &n[1].kind {
            Kind::OneOf(p) => {
                assert_eq!(p[0].token.as_deref(), Some("DELAY"));
                assert_eq!(p[0].kind, Kind::Integer);
                assert_eq!(p[1].token.as_deref(), Some("BACKOFF"));
                match &p[1].kind {
                    Kind::Block(b) => assert_eq!(b.len(), 2),
                    k => panic!("{k:?}"),
                }
            }
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn malformed_lines_are_refused() {
        for bad in [
            "key [NOW unix-ms",
            "key NOW unix-ms]",
            "key unknown-name",
            "key user [member ...]",
            "key [x|y",
            "key a|",
            "key [NOW unix-ms |NOWUS unix-us]",
            "Key",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn c_specs_terminate_and_point_keys_at_their_spec() {
        let args = parse("destination numkeys key [key ...] [AGGREGATE SUM|MAX]").unwrap();
        let mut c = to_c(&args, 2);
        let p = c.as_mut_ptr();
        unsafe {
            assert_eq!((*p).key_spec_index, 0);
            assert_eq!((*p.add(1)).key_spec_index, -1);
            assert_eq!((*p.add(2)).key_spec_index, 1);
            assert_eq!(
                (*p.add(2)).flags,
                raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int
            );
            let oneof = &*p.add(3);
            assert!(!oneof.subargs.is_null());
            assert!((*oneof.subargs.add(2)).name.is_null());
            assert!((*p.add(4)).name.is_null());
        }
        let one = parse("key1 key2").unwrap();
        let mut c = to_c(&one, 1);
        let p = c.as_mut_ptr();
        unsafe {
            assert_eq!((*p).key_spec_index, 0);
            assert_eq!((*p.add(1)).key_spec_index, 0);
        }
    }
}
