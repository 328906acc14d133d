//! The command reference (docs/reference/) is the public contract; these
//! tests keep it true against a real server:
//!
//! - every command the module registers has an entry, and every entry is a
//!   registered command;
//! - each entry's syntax, summary, complexity, `since` and flags are what
//!   `COMMAND DOCS` and `COMMAND INFO` answer (the syntax rebuilt from the
//!   argument specs the server returns), and redis-cli's `help` prints the
//!   syntax;
//! - each entry's Reply section begins with the reply shape its command
//!   declares in its `command!` entry;
//! - every error text an entry names is one the module's source produces;
//! - every entry has its arguments, both replies, errors and an example,
//!   and the examples, run with the real `redis-cli`, print what they show;
//! - map-like replies are RESP3 maps after `HELLO 3` and flat arrays in
//!   RESP2 (the redis crate, and redis-py with `protocol=3`);
//! - each write raises the keyspace events observability.md lists, and
//!   `INFO hotpath` has exactly the documented fields.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reference_dir() -> PathBuf {
    root().join("docs/reference")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The family pages: every page but the index and observability.md.
pub fn family_pages() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(reference_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n != "README.md" && n != "observability.md"
        })
        .collect();
    out.sort();
    out
}

/// The command lines of the examples of `docs/reference/<stem>.md`, in
/// page order, each split at its spaces as the smoke test sends it
/// (`redis> ` and `resp3> ` lines alike).
pub fn example_commands(stem: &str) -> Vec<Vec<String>> {
    let page = reference_dir().join(format!("{stem}.md"));
    parse_page(&page)
        .iter()
        .flat_map(|e| e.examples.iter().flatten())
        .filter_map(|l| {
            l.strip_prefix("redis> ")
                .or_else(|| l.strip_prefix("resp3> "))
        })
        .map(|c| c.split(' ').map(String::from).collect())
        .collect()
}

// ------------------------------------------------------------ entries ---

/// One command's entry, as parsed from its page.
#[derive(Debug, Default)]
struct Entry {
    page: String,
    name: String,
    syntax: String,
    summary: Option<String>,
    complexity: Option<String>,
    since: Option<String>,
    flags: Option<Vec<String>>,
    arguments: Option<String>,
    reply: Option<String>,
    errors: Option<Vec<String>>,
    examples: Vec<Vec<String>>,
}

/// Returns the text of each `…` span of a line.
fn backticked(line: &str) -> Vec<String> {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// Parses the `## NAME` entries of a family page.
fn parse_page(path: &Path) -> Vec<Entry> {
    let page = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = read(path);
    let mut entries: Vec<Entry> = Vec::new();
    let mut section = "";
    let mut in_code = false;
    let mut code: Vec<String> = Vec::new();
    let mut buf = String::new();
    let flush = |e: &mut Entry, section: &str, buf: &mut String| {
        let t = std::mem::take(buf);
        match section {
            "Arguments" => e.arguments = Some(t),
            "Reply" => e.reply = Some(t),
            _ => {}
        }
    };
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            if let Some(e) = entries.last_mut() {
                flush(e, section, &mut buf);
            }
            entries.push(Entry {
                page: page.clone(),
                name: name.trim().to_string(),
                ..Default::default()
            });
            section = "head";
            continue;
        }
        let Some(e) = entries.last_mut() else {
            continue;
        };
        if line.starts_with("```") {
            if in_code {
                in_code = false;
                let block = std::mem::take(&mut code);
                if section == "head" && e.syntax.is_empty() {
                    assert_eq!(block.len(), 1, "{page} {}: one syntax line", e.name);
                    let prefix = format!("{} ", e.name);
                    e.syntax = block[0]
                        .strip_prefix(&prefix)
                        .unwrap_or_else(|| panic!("{page}: syntax must start with {prefix}"))
                        .to_string();
                } else if section == "Example" {
                    e.examples.push(block);
                }
            } else {
                in_code = true;
            }
            continue;
        }
        if in_code {
            code.push(line.to_string());
            continue;
        }
        let label = line
            .strip_prefix("**")
            .and_then(|l| l.strip_suffix("**"))
            .filter(|l| ["Arguments", "Reply", "Errors", "Example"].contains(l));
        if let Some(l) = label {
            flush(e, section, &mut buf);
            section = match l {
                "Arguments" => "Arguments",
                "Reply" => "Reply",
                "Errors" => "Errors",
                _ => "Example",
            };
            if section == "Errors" {
                e.errors = Some(Vec::new());
            }
            continue;
        }
        if section == "head" {
            for (key, slot) in [
                ("- **Summary:** ", &mut e.summary),
                ("- **Complexity:** ", &mut e.complexity),
                ("- **Since:** ", &mut e.since),
            ] {
                if let Some(v) = line.strip_prefix(key) {
                    *slot = Some(v.to_string());
                }
            }
            if let Some(v) = line.strip_prefix("- **Flags:** ") {
                e.flags = Some(v.split(", ").map(str::to_string).collect());
            }
        }
        if section == "Errors" && line.starts_with("- `") {
            e.errors
                .as_mut()
                .unwrap()
                .push(backticked(line).into_iter().next().unwrap());
        }
        if section == "Arguments" || section == "Reply" {
            buf.push_str(line);
            buf.push('\n');
        }
    }
    if let Some(e) = entries.last_mut() {
        flush(e, section, &mut buf);
    }
    entries
}

fn entries() -> Vec<Entry> {
    let all: Vec<Entry> = family_pages().iter().flat_map(|p| parse_page(p)).collect();
    assert!(all.len() >= 40, "the reference lost its entries");
    all
}

// --------------------------------------------------- reply decoding -----

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        Value::VerbatimString { text, .. } => text.clone(),
        other => panic!("expected a string, got {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

/// A RESP2 map (`[k, v, …]`) as pairs.
fn kv(v: &Value) -> Vec<(String, Value)> {
    items(v)
        .chunks(2)
        .map(|c| (text(&c[0]), c[1].clone()))
        .collect()
}

fn get<'a>(m: &'a [(String, Value)], k: &str) -> Option<&'a Value> {
    m.iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// Renders the `arguments` of `COMMAND DOCS` in the reference's notation
/// (independently of src/syntax.rs, which produced them).
fn render_args(args: &[Value]) -> String {
    args.iter().map(render_arg).collect::<Vec<_>>().join(" ")
}

fn render_arg(a: &Value) -> String {
    let m = kv(a);
    let s = |k: &str| get(&m, k).map(text);
    let flags: Vec<String> = get(&m, "flags")
        .map(|f| items(f).iter().map(text).collect())
        .unwrap_or_default();
    let ty = s("type").unwrap();
    let subs: Vec<String> = get(&m, "arguments")
        .map(|v| items(v).iter().map(render_arg).collect())
        .unwrap_or_default();
    let mut body = match ty.as_str() {
        "pure-token" => s("token").unwrap(),
        "oneof" => {
            let words = subs.iter().all(|x| !x.contains(' '));
            subs.join(if words { "|" } else { " | " })
        }
        "block" => subs.join(" "),
        _ => s("name").unwrap(),
    };
    if flags.iter().any(|f| f == "multiple") {
        body = format!("{body} [{body} ...]");
    }
    if ty != "pure-token" {
        if let Some(t) = s("token") {
            body = format!("{t} {body}");
        }
    }
    if flags.iter().any(|f| f == "optional") {
        body = format!("[{body}]");
    }
    body
}

fn registered(c: &mut Connection) -> BTreeSet<String> {
    let v = cmd(c, &["COMMAND", "LIST", "FILTERBY", "MODULE", "hotpath"]).unwrap();
    items(&v).iter().map(text).collect()
}

// -------------------------------------------------------------- tests ---

#[test]
fn every_registered_command_has_an_entry_and_every_entry_is_registered() {
    let srv = Server::start();
    let mut c = srv.conn();
    let commands = registered(&mut c);
    let documented: BTreeSet<String> = entries().iter().map(|e| e.name.to_lowercase()).collect();
    let missing: Vec<_> = commands.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&commands).collect();
    assert!(missing.is_empty(), "commands without an entry: {missing:?}");
    assert!(unknown.is_empty(), "entries of no command: {unknown:?}");
    // COMMAND INFO knows each one too.
    for name in &commands {
        let info = cmd(&mut c, &["COMMAND", "INFO", name]).unwrap();
        assert_ne!(items(&info)[0], Value::Nil, "{name}");
    }
    // The index lists every family page.
    let index = read(&reference_dir().join("README.md"));
    for p in family_pages() {
        let f = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            index.contains(&format!("({f})")),
            "README.md does not link {f}"
        );
    }
}

#[test]
fn every_entry_is_complete() {
    for e in entries() {
        let at = format!("{} {}", e.page, e.name);
        assert!(!e.syntax.is_empty(), "{at}: syntax");
        for (what, v) in [
            ("Summary", &e.summary),
            ("Complexity", &e.complexity),
            ("Since", &e.since),
        ] {
            assert!(v.as_ref().is_some_and(|v| !v.is_empty()), "{at}: {what}");
        }
        assert!(e.flags.is_some(), "{at}: Flags");
        let args = e
            .arguments
            .as_deref()
            .unwrap_or_else(|| panic!("{at}: Arguments"));
        // Every value and token of the syntax is described.
        let described: BTreeSet<String> = args
            .lines()
            .flat_map(backticked)
            .flat_map(|s| {
                s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        for w in e
            .syntax
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty())
        {
            assert!(described.contains(w), "{at}: argument `{w}` not described");
        }
        let reply = e.reply.as_deref().unwrap_or_else(|| panic!("{at}: Reply"));
        assert!(reply.contains("- RESP2: "), "{at}: RESP2 reply");
        assert!(reply.contains("- RESP3: "), "{at}: RESP3 reply");
        let errors = e.errors.as_ref().unwrap_or_else(|| panic!("{at}: Errors"));
        assert!(!errors.is_empty(), "{at}: no errors listed");
        let arity = format!(
            "ERR wrong number of arguments for '{}' command",
            e.name.to_lowercase()
        );
        assert!(errors.contains(&arity), "{at}: the arity error");
        assert!(!e.examples.is_empty(), "{at}: Example");
        let shows_it = e.examples.iter().flatten().any(|l| {
            l.strip_prefix("redis> ")
                .or_else(|| l.strip_prefix("resp3> "))
                .is_some_and(|c| c.starts_with(&format!("{} ", e.name)))
        });
        assert!(shows_it, "{at}: the example never runs the command");
    }
}

#[test]
fn entries_are_what_command_docs_and_command_info_answer() {
    let srv = Server::start();
    let mut c = srv.conn();
    for e in entries() {
        let name = e.name.to_lowercase();
        let at = format!("{} {}", e.page, e.name);
        let docs = cmd(&mut c, &["COMMAND", "DOCS", &name]).unwrap();
        let docs = items(&docs);
        assert_eq!(docs.len(), 2, "{at}: COMMAND DOCS");
        let m = kv(&docs[1]);
        let field = |k: &str| get(&m, k).map(text);
        assert_eq!(field("summary"), e.summary, "{at}: summary");
        assert_eq!(field("complexity"), e.complexity, "{at}: complexity");
        assert_eq!(field("since"), e.since, "{at}: since");
        let args = get(&m, "arguments").unwrap_or_else(|| panic!("{at}: no arguments"));
        assert_eq!(render_args(items(args)), e.syntax, "{at}: syntax");

        let info = cmd(&mut c, &["COMMAND", "INFO", &name]).unwrap();
        let flags: BTreeSet<String> = items(&items(&items(&info)[0])[2])
            .iter()
            .map(text)
            .filter(|f| ["write", "readonly", "denyoom", "fast"].contains(&f.as_str()))
            .collect();
        let documented: BTreeSet<String> = e.flags.clone().unwrap().into_iter().collect();
        assert_eq!(flags, documented, "{at}: flags");
    }
}

/// Each entry's Reply section begins with the reply shape its command
/// declares (the `reply:` field of its `command!` entry), read from the
/// module's own table: the RESP2 line, backticks dropped and spaces
/// collapsed, starts with it.
#[test]
fn reply_sections_begin_with_the_declared_reply_shape() {
    let declared: BTreeMap<String, &str> = hotpath::FAMILIES
        .iter()
        .flat_map(|f| f.commands.iter())
        .map(|c| (c.name.to_string(), c.reply))
        .collect();
    for e in entries() {
        let at = format!("{} {}", e.page, e.name);
        let reply = e.reply.as_deref().unwrap_or_else(|| panic!("{at}: Reply"));
        let resp2 = reply
            .split("- RESP2: ")
            .nth(1)
            .and_then(|r| r.split("\n- ").next())
            .unwrap_or_else(|| panic!("{at}: RESP2 reply"));
        let resp2 = resp2
            .replace('`', "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let shape = declared
            .get(&e.name.to_lowercase())
            .unwrap_or_else(|| panic!("{at}: not declared"));
        assert!(
            resp2.starts_with(shape),
            "{at}: the reply is declared as `{shape}`, the reference says `{resp2}`"
        );
    }
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(ch) = it.next() {
        if ch == '\x1b' {
            for n in it.by_ref() {
                if n.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[test]
fn redis_cli_help_prints_the_syntax() {
    let srv = Server::start();
    for e in entries() {
        let out = Command::new("redis-cli")
            .args(["-p", &srv.port.to_string(), "help", &e.name])
            .output()
            .expect("redis-cli");
        let out = strip_ansi(&String::from_utf8_lossy(&out.stdout));
        // redis-cli writes the alternatives of a choice without spaces.
        let want = format!("{} {}", e.name, e.syntax.replace(" | ", "|"));
        assert!(
            out.lines().any(|l| l.trim() == want),
            "help {}: expected `{want}` in\n{out}",
            e.name
        );
        assert!(out.contains(e.summary.as_deref().unwrap()), "{out}");
    }
}

// ---------------------------------------------- errors in the source ---

/// Returns the string literals of Rust source, escapes resolved; comments,
/// char literals and lifetimes skipped.
fn string_literals(src: &str) -> Vec<String> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < b.len() {
        let c = b[i];
        let prev_ident = i > 0 && ident(b[i - 1]);
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        // Raw strings: r"…", r#"…"#, br"…", cr"…".
        if !prev_ident && (c == 'r' || ((c == 'b' || c == 'c') && b.get(i + 1) == Some(&'r'))) {
            let mut j = i + if c == 'r' { 1 } else { 2 };
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                j += 1;
                let start = j;
                while j < b.len()
                    && !(b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')))
                {
                    j += 1;
                }
                out.push(b[start..j.min(b.len())].iter().collect());
                i = j + 1 + hashes;
                continue;
            }
        }
        if c == '"' {
            let mut s = String::new();
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                if b[j] == '\\' && j + 1 < b.len() {
                    j += 1;
                    match b[j] {
                        'n' => s.push('\n'),
                        't' => s.push('\t'),
                        'r' => s.push('\r'),
                        '0' => s.push('\0'),
                        'x' => {
                            let h: String = b[j + 1..j + 3].iter().collect();
                            s.push(u8::from_str_radix(&h, 16).unwrap_or(b'?') as char);
                            j += 2;
                        }
                        'u' => {
                            let close = (j..b.len()).find(|&k| b[k] == '}').unwrap();
                            let h: String = b[j + 2..close].iter().collect();
                            s.push(char::from_u32(u32::from_str_radix(&h, 16).unwrap()).unwrap());
                            j = close;
                        }
                        '\n' => {
                            while j + 1 < b.len() && b[j + 1].is_whitespace() {
                                j += 1;
                            }
                        }
                        other => s.push(other),
                    }
                } else {
                    s.push(b[j]);
                }
                j += 1;
            }
            out.push(s);
            i = j + 1;
            continue;
        }
        if c == '\'' {
            if b.get(i + 1) == Some(&'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                continue;
            }
            if b.get(i + 2) == Some(&'\'') {
                i += 3;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The string literals of the module's source, test code left out.
fn source_literals() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy();
            if name == "parser_fuzz.rs" || name == "tests.rs" {
                continue;
            }
            let mut src = read(&p);
            if let Some(at) = src.find("#[cfg(test)]\nmod tests") {
                src.truncate(at);
            }
            out.extend(string_literals(&src));
        }
    }
    out
}

/// A pattern piece: literal text, or a `{…}` placeholder (one or more
/// characters of anything).
#[derive(Debug, PartialEq)]
enum Piece {
    Text(String),
    Any,
}

/// Reads a literal as a `format!` pattern: `{…}` is a placeholder, `{{` and
/// `}}` are braces.
fn pattern(lit: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut it = lit.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '{' if it.peek() == Some(&'{') => {
                it.next();
                cur.push('{');
            }
            '}' if it.peek() == Some(&'}') => {
                it.next();
                cur.push('}');
            }
            '{' => {
                let mut inner = String::new();
                for n in it.by_ref() {
                    if n == '}' {
                        break;
                    }
                    inner.push(n);
                }
                // `{}`, `{max}`, `{0:?}` are placeholders; `{hash tag}` in
                // a plain (non-format) literal is text.
                let spec = |c: char| c.is_ascii_alphanumeric() || "_.:?#<>^+-".contains(c);
                if inner.chars().all(spec) {
                    if !cur.is_empty() {
                        out.push(Piece::Text(std::mem::take(&mut cur)));
                    }
                    out.push(Piece::Any);
                } else {
                    cur.push('{');
                    cur.push_str(&inner);
                    cur.push('}');
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(Piece::Text(cur));
    }
    out
}

/// True when `p` matches all of `s`. A placeholder takes one or more
/// characters but no space: what varies in an error is one value (a
/// number, a key, a name), so a placeholder at the end of a literal does
/// not swallow words added after it.
fn matches(p: &[Piece], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(Piece::Text(t)) => {
            let t: Vec<char> = t.chars().collect();
            s.starts_with(&t) && matches(&p[1..], &s[t.len()..])
        }
        Some(Piece::Any) => {
            let word = s.iter().take_while(|&&c| c != ' ').count();
            (1..=word).any(|n| matches(&p[1..], &s[n..]))
        }
    }
}

/// The placeholder a documented error uses for a varying part.
const VARIES: char = '\u{1}';

/// A documented error text with each `<…>` replaced by [`VARIES`], which
/// only a source placeholder can match.
fn documented(text: &str) -> Vec<char> {
    let mut out = Vec::new();
    let mut inside = false;
    for c in text.chars() {
        match c {
            '<' if !inside => {
                inside = true;
                out.push(VARIES);
            }
            '>' if inside => inside = false,
            _ if inside => {}
            _ => out.push(c),
        }
    }
    out
}

/// True when some source literal produces `error`: the whole text, or what
/// follows `ERR <family>: ` (family errors are built from the family name
/// and a message).
fn produced(error: &str, patterns: &[Vec<Piece>]) -> bool {
    let d = documented(error);
    let mut candidates = vec![d.clone()];
    if let Some(rest) = error.strip_prefix("ERR ") {
        if let Some((fam, msg)) = rest.split_once(": ") {
            let family = fam == "<family>" || fam.chars().all(|c| c.is_ascii_lowercase());
            if family && !fam.is_empty() {
                candidates.push(documented(msg));
            }
        }
    }
    patterns
        .iter()
        .any(|p| candidates.iter().any(|c| matches(p, c)))
}

fn error_patterns() -> Vec<Vec<Piece>> {
    source_literals()
        .iter()
        .map(|l| pattern(l))
        .filter(|p| {
            // A literal with placeholders must say enough on its own:
            // `ERR {family}: {msg}` would match any family error.
            let fixed: usize = p
                .iter()
                .map(|x| match x {
                    Piece::Text(t) => t.chars().count(),
                    Piece::Any => 0,
                })
                .sum();
            !p.is_empty() && (!p.contains(&Piece::Any) || fixed >= 12)
        })
        .collect()
}

/// The errors of the index's "Errors of every command" section (the
/// server's own errors, after "From the server", are not the module's).
fn common_errors() -> Vec<String> {
    let index = read(&reference_dir().join("README.md"));
    let start = index.find("## Errors of every command").unwrap();
    let end = index[start..].find("### From the server").unwrap() + start;
    index[start..end]
        .lines()
        .filter(|l| l.starts_with("- `"))
        .map(|l| backticked(l).into_iter().next().unwrap())
        .collect()
}

#[test]
fn every_documented_error_is_produced_by_the_source() {
    let patterns = error_patterns();
    let mut checked = 0;
    let mut unknown = Vec::new();
    let mut all: Vec<(String, String)> = common_errors()
        .into_iter()
        .map(|e| ("README.md".to_string(), e))
        .collect();
    for e in entries() {
        for err in e.errors.clone().unwrap_or_default() {
            all.push((format!("{} {}", e.page, e.name), err));
        }
    }
    for (at, err) in all {
        checked += 1;
        if !produced(&err, &patterns) {
            unknown.push(format!("{at}: `{err}`"));
        }
    }
    assert!(checked > 200, "only {checked} errors documented");
    assert!(
        unknown.is_empty(),
        "errors the source never produces:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_error_check_tells_texts_apart() {
    let pats: Vec<Vec<Piece>> = [
        "ERR wrong number of arguments for '{}' command",
        "count must be from 1 to {max}",
        "not open",
        "ERR {family}: {msg}",
        "ERR {family}: corrupt data in '{key}' field '{f}'",
    ]
    .iter()
    .map(|l| pattern(l))
    .filter(|p| {
        let fixed: usize = p
            .iter()
            .map(|x| match x {
                Piece::Text(t) => t.len(),
                Piece::Any => 0,
            })
            .sum();
        !p.contains(&Piece::Any) || fixed >= 12
    })
    .collect();
    assert_eq!(pats.len(), 4, "the catch-all family format is left out");
    for ok in [
        "ERR wrong number of arguments for 'poll.vote' command",
        "ERR redpacket: count must be from 1 to <max>",
        "ERR poll: not open",
        "ERR rate: corrupt data in '<key>' field '<field>'",
    ] {
        assert!(produced(ok, &pats), "{ok}");
    }
    for bad in [
        "ERR poll: not opened",
        "ERR redpacket: count must be from 1 to 10000 shares",
        "ERR poll: count must be from <min> to <max>",
        "ERR poll: anything at all",
        "ERR wrong number of arguments",
    ] {
        assert!(!produced(bad, &pats), "{bad}");
    }
    let lits = string_literals(
        "// \"not a literal\"\nlet a = 'x'; let b = '\\''; fn f<'a>() {}\n\
         let s = \"ERR rank: (max \\u{b1}{limit})\"; let r = r#\"raw \"q\" \"#; let c = c\"cstr\";",
    );
    assert_eq!(lits, vec!["ERR rank: (max ±{limit})", "raw \"q\" ", "cstr"]);
}

// ----------------------------------------------------------- examples ---

/// Compares an output line with an expected one where `…` stands for any
/// text.
fn line_matches(want: &str, got: &str) -> bool {
    let parts: Vec<&str> = want.split('…').collect();
    if parts.len() == 1 {
        return want == got;
    }
    let mut rest = got;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(at) => rest = &rest[at + p.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Runs every example of one page of the reference (`poll` for
/// docs/reference/poll.md) through redis-cli on a fresh server, in order
/// (a page's examples tell one story), and checks that each prints what
/// the page shows.
pub fn run_page_examples(stem: &str) {
    let page = reference_dir().join(format!("{stem}.md"));
    let srv = Server::start();
    let name = page.file_name().unwrap().to_string_lossy().into_owned();
    for e in parse_page(&page) {
        for block in &e.examples {
            let mut i = 0;
            while i < block.len() {
                let line = &block[i];
                let (resp3, command) = if let Some(c) = line.strip_prefix("redis> ") {
                    (false, c)
                } else if let Some(c) = line.strip_prefix("resp3> ") {
                    (true, c)
                } else {
                    panic!("{name} {}: `{line}` is not a command line", e.name);
                };
                let mut want = Vec::new();
                i += 1;
                while i < block.len()
                    && !block[i].starts_with("redis> ")
                    && !block[i].starts_with("resp3> ")
                {
                    want.push(block[i].clone());
                    i += 1;
                }
                let mut cli = Command::new("redis-cli");
                cli.args(["--no-raw", "-p", &srv.port.to_string()]);
                if resp3 {
                    cli.arg("-3");
                }
                let out = cli.args(command.split(' ')).output().expect("redis-cli");
                let got = String::from_utf8_lossy(&out.stdout);
                let got: Vec<&str> = got.trim_end_matches('\n').lines().collect();
                let ok = got.len() == want.len()
                    && want.iter().zip(&got).all(|(w, g)| line_matches(w, g));
                assert!(
                    ok,
                    "{name} {}: `{command}` printed\n{}\nbut the reference shows\n{}",
                    e.name,
                    got.join("\n"),
                    want.join("\n")
                );
            }
        }
    }
}

// -------------------------------------------------------------- RESP3 ---

fn resp3_conn(srv: &Server) -> Connection {
    let url = format!("redis://127.0.0.1:{}/?protocol=resp3", srv.port);
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// A reply's fields in order: name and value.
type Fields = Vec<(&'static str, Value)>;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn map(pairs: &[(&str, Value)]) -> Value {
    Value::Map(pairs.iter().map(|(k, v)| (bulk(k), v.clone())).collect())
}

fn flat(pairs: &[(&str, Value)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .flat_map(|(k, v)| [bulk(k), v.clone()])
            .collect(),
    )
}

fn values(pairs: &[(&str, Value)]) -> Value {
    Value::Array(pairs.iter().map(|(_, v)| v.clone()).collect())
}

#[test]
fn map_like_replies_are_resp3_maps_and_resp2_arrays() {
    let srv = Server::start();
    let mut r2 = srv.conn();
    let mut r3 = resp3_conn(&srv);
    let now = "1767225600000";
    for args in [
        vec!["POLL.VOTE", "p", "u1", "a", "NOW", now],
        vec!["LIKE.ADD", "l", "7", "NOW", now],
        vec!["REDPACKET.SPLIT", "rp", "100", "2", "MODE", "EQUAL"],
        vec!["REDPACKET.GRAB", "rp", "alice"],
        vec!["LUCKYBAG.CREATE", "lb", "WINNERS", "2"],
        vec!["RANK.ADD", "b", "zed", "120", "NOW", now],
        vec!["RANK.CREATE", "n", "TIEBREAK", "NONE"],
        vec!["RANK.ADD", "n", "kim", "5"],
        vec![
            "LOCK.ACQUIRE",
            "lk",
            "o1",
            "10000",
            "LIMIT",
            "2",
            "NOW",
            now,
        ],
        vec!["LOCK.ACQUIRE", "lk", "o1", "10000", "NOW", now],
        vec!["LOCK.ACQUIRE", "lk", "o2", "20000", "NOW", now],
        vec!["DELAYQ.ADD", "dq", "j1", "p", "NOW", now],
        vec!["DELAYQ.ADD", "dq", "j2", "p", "DELAY", "1000", "NOW", now],
    ] {
        cmd(&mut r2, &args).unwrap();
    }
    let i = Value::Int;
    let rate = |allowed, limit, remaining, retry, reset| {
        vec![
            ("allowed", i(allowed)),
            ("limit", i(limit)),
            ("remaining", i(remaining)),
            ("retry_after_ms", i(retry)),
            ("reset_after_ms", i(reset)),
        ]
    };
    // (RESP2 command, RESP3 command, fields): RATE writes, so each
    // protocol gets keys of its own in the same state.
    let records: Vec<(Vec<&str>, Vec<&str>, Fields)> = vec![
        (
            vec!["RANK.GET", "b", "zed"],
            vec!["RANK.GET", "b", "zed"],
            vec![
                ("points", i(120)),
                ("rank", i(0)),
                ("achieved_ms", i(1767225600000)),
            ],
        ),
        (
            vec!["RANK.GET", "n", "kim"],
            vec!["RANK.GET", "n", "kim"],
            vec![
                ("points", i(5)),
                ("rank", i(0)),
                ("achieved_ms", Value::Nil),
            ],
        ),
        (
            vec!["RATE.CHECK", "k2", "10", "60000", "NOW", now],
            vec!["RATE.CHECK", "k3", "10", "60000", "NOW", now],
            rate(1, 10, 9, -1, 6000),
        ),
        (
            vec![
                "RATE.MULTI",
                "2",
                "a2",
                "b2",
                "LIMITS",
                "1",
                "1000",
                "5",
                "1000",
                "NOW",
                now,
            ],
            vec![
                "RATE.MULTI",
                "2",
                "a3",
                "b3",
                "LIMITS",
                "1",
                "1000",
                "5",
                "1000",
                "NOW",
                now,
            ],
            rate(1, 1, 0, -1, 1000),
        ),
        (
            vec![
                "RATE.MULTI",
                "2",
                "a2",
                "b2",
                "LIMITS",
                "1",
                "1000",
                "5",
                "1000",
                "NOW",
                now,
            ],
            vec![
                "RATE.MULTI",
                "2",
                "a3",
                "b3",
                "LIMITS",
                "1",
                "1000",
                "5",
                "1000",
                "NOW",
                now,
            ],
            rate(0, 1, 0, 1000, 1000),
        ),
    ];
    for (a2, a3, fields) in &records {
        assert_eq!(cmd(&mut r2, a2).unwrap(), values(fields), "{a2:?} RESP2");
        assert_eq!(cmd(&mut r3, a3).unwrap(), map(fields), "{a3:?} RESP3");
    }
    let absent = ["RANK.GET", "b", "nobody"];
    assert_eq!(cmd(&mut r2, &absent).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut r3, &absent).unwrap(), Value::Nil);
    let maps: Vec<(Vec<&str>, Fields)> = vec![
        (
            vec!["POLL.INFO", "p"],
            vec![
                ("mode", bulk("ONCE")),
                ("maxvotes", i(1)),
                ("start", i(0)),
                ("end", i(0)),
                ("ballots", i(1)),
                ("votes", i(1)),
            ],
        ),
        (
            vec!["LIKE.INFO", "l"],
            vec![
                ("encoding", bulk("set")),
                ("count", i(1)),
                ("bytes", i(74)),
                ("set", i(1)),
                ("chunks", i(0)),
                ("promotion", bulk("none")),
            ],
        ),
        (
            vec!["REDPACKET.INFO", "rp"],
            vec![
                ("total", i(100)),
                ("count", i(2)),
                ("left_cents", i(50)),
                ("left_count", i(1)),
                ("state", bulk("open")),
                ("expires", i(0)),
            ],
        ),
        (vec!["REDPACKET.INFO", "none"], vec![]),
        (vec!["REDPACKET.GRABBED", "rp"], vec![("alice", i(50))]),
        (vec!["REDPACKET.GRABBED", "none"], vec![]),
        (
            vec!["LUCKYBAG.INFO", "lb"],
            vec![
                ("state", bulk("open")),
                ("participants", i(0)),
                ("pooled", i(0)),
                ("winners", i(2)),
                ("shards", i(16)),
            ],
        ),
        (vec!["LUCKYBAG.INFO", "none"], vec![]),
        (
            vec!["DELAYQ.INFO", "dq", "NOW", now],
            vec![
                ("jobs", i(2)),
                ("ready", i(1)),
                ("scheduled", i(1)),
                ("dead", i(0)),
            ],
        ),
    ];
    for (args, fields) in &maps {
        assert_eq!(cmd(&mut r2, args).unwrap(), flat(fields), "{args:?} RESP2");
        assert_eq!(cmd(&mut r3, args).unwrap(), map(fields), "{args:?} RESP3");
    }
    // LOCK.INFO: owner → {token, count, ttl_ms} in RESP3, groups of four
    // in RESP2, both by token.
    let holders = [("o1", 1, 2, 10000), ("o2", 2, 1, 20000)];
    let a = ["LOCK.INFO", "lk", "NOW", now];
    let r2_want: Vec<Value> = holders
        .iter()
        .flat_map(|&(o, t, n, ttl)| [bulk(o), i(t), i(n), i(ttl)])
        .collect();
    assert_eq!(cmd(&mut r2, &a).unwrap(), Value::Array(r2_want));
    let r3_want = Value::Map(
        holders
            .iter()
            .map(|&(o, t, n, ttl)| {
                let fields = [("token", i(t)), ("count", i(n)), ("ttl_ms", i(ttl))];
                (bulk(o), map(&fields))
            })
            .collect(),
    );
    assert_eq!(cmd(&mut r3, &a).unwrap(), r3_want);
    let free = ["LOCK.INFO", "none"];
    assert_eq!(cmd(&mut r2, &free).unwrap(), Value::Array(vec![]));
    assert_eq!(cmd(&mut r3, &free).unwrap(), Value::Map(vec![]));
    // RATE.THROTTLE stays redis-cell's array in RESP3.
    let t = [0, 16, 15, -1, 2].map(Value::Int).to_vec();
    let a = ["RATE.THROTTLE", "t2", "15", "30", "60", "NOW", now];
    assert_eq!(cmd(&mut r2, &a).unwrap(), Value::Array(t.clone()));
    let a = ["RATE.THROTTLE", "t3", "15", "30", "60", "NOW", now];
    assert_eq!(cmd(&mut r3, &a).unwrap(), Value::Array(t));
    // Ordered lists stay arrays.
    assert!(matches!(
        cmd(&mut r3, &["RANK.TOP", "b"]).unwrap(),
        Value::Array(_)
    ));
    assert_eq!(
        cmd(&mut r3, &["DELAYQ.POLL", "dq", "1000", "NOW", now]).unwrap(),
        Value::Array(vec![bulk("j1"), bulk("p"), i(1), i(1000001)])
    );
}

#[test]
fn redis_py_gets_dicts_with_protocol_3_and_lists_with_protocol_2() {
    let srv = Server::start();
    let script = root().join("tests/resp3_redis_py.py");
    let out = Command::new(common::python_bin())
        .arg(&script)
        .arg(srv.port.to_string())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("resp3 ok"));
}

// ---------------------------------------------------- observability ---

/// The events table of observability.md: command → (module event, other
/// event names allowed). A write whose event cell has no `…` (`none`)
/// raises no module event.
fn documented_events() -> BTreeMap<String, (Option<String>, BTreeSet<String>)> {
    let text = read(&reference_dir().join("observability.md"));
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cols: Vec<&str> = line.split(" | ").collect();
        if cols.len() < 4 {
            continue;
        }
        let command = backticked(cols[0]).into_iter().next().unwrap();
        if !command.contains('.') {
            continue;
        }
        let event = backticked(cols[1]).into_iter().next();
        let others = backticked(cols[3])
            .into_iter()
            .filter(|s| !s.contains(':') && !s.contains('.'))
            .collect();
        out.insert(command, (event, others));
    }
    out
}

/// Subscribes to every keyevent of db 0 and returns, for each command,
/// the `(event, key)` pairs it raised, delimited by a marker `SET`.
struct Events {
    sub: Connection,
    con: Connection,
    n: usize,
}

impl Events {
    fn new(srv: &Server) -> Events {
        let mut con = srv.conn();
        run(
            &mut con,
            &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
        );
        let mut sub = srv.conn();
        sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _: Value = redis::cmd("PSUBSCRIBE")
            .arg("__keyevent@0__:*")
            .query(&mut sub)
            .unwrap();
        Events { sub, con, n: 0 }
    }

    /// Deletes the last marker, so that the data is what the commands
    /// left (for a digest).
    fn forget_marker(&mut self) {
        run(&mut self.con, &["DEL", &format!("__marker__{}", self.n)]);
    }

    fn raised(&mut self, args: &[&str]) -> (RedisResult<Value>, Vec<(String, String)>) {
        let reply = cmd(&mut self.con, args);
        self.n += 1;
        let marker = format!("__marker__{}", self.n);
        run(&mut self.con, &["SET", &marker, "1"]);
        let mut seen = Vec::new();
        loop {
            let msg = self.sub.recv_response().expect("keyspace event");
            let parts = match msg {
                Value::Push { data, .. } => data,
                Value::Array(a) => a,
                other => panic!("{other:?}"),
            };
            if parts.len() != 4 || text(&parts[0]) != "pmessage" {
                continue;
            }
            let event = text(&parts[2])
                .trim_start_matches("__keyevent@0__:")
                .to_string();
            let key = text(&parts[3]);
            if key == marker {
                break;
            }
            // An earlier marker deleted by `forget_marker`.
            if key.starts_with("__marker__") {
                continue;
            }
            seen.push((event, key));
        }
        (reply, seen)
    }
}

/// Runs one call and checks the events it raised ([`check_seen`]).
/// Returns true when the call changed data (`changes`).
fn check_events(
    ev: &mut Events,
    documented: &BTreeMap<String, (Option<String>, BTreeSet<String>)>,
    args: &[&str],
    changes: bool,
) -> bool {
    let (reply, seen) = ev.raised(args);
    check_seen(documented, args, &reply, &seen, changes);
    changes
}

/// Checks the events one call of a documented write raised: a call that
/// changed data (`changes`) raises exactly its documented event on its
/// base key(s) and only native events observability.md lists for it; one
/// that did not raises none.
fn check_seen(
    documented: &BTreeMap<String, (Option<String>, BTreeSet<String>)>,
    args: &[&str],
    reply: &RedisResult<Value>,
    seen: &[(String, String)],
    changes: bool,
) {
    let name = args[0].to_uppercase();
    let (event, others) = documented
        .get(&name)
        .unwrap_or_else(|| panic!("{name} has no row in observability.md"));
    let (module, native): (Vec<_>, Vec<_>) = seen
        .iter()
        .cloned()
        .partition(|(e, _)| e.starts_with("hotpath."));
    if !changes {
        assert!(seen.is_empty(), "{args:?} ({reply:?}) raised {seen:?}");
        return;
    }
    assert!(reply.is_ok(), "{args:?}: {reply:?}");
    let keys: Vec<&str> = match name.as_str() {
        "RATE.MULTI" => {
            let n: usize = args[1].parse().unwrap();
            args[2..2 + n].to_vec()
        }
        _ => vec![args[1]],
    };
    let want: Vec<(String, String)> = match event {
        Some(event) => keys
            .iter()
            .map(|k| (event.clone(), k.to_string()))
            .collect(),
        None => {
            // A write without a module event must still have changed
            // something Redis reports.
            assert!(!native.is_empty(), "{args:?} raised nothing");
            Vec::new()
        }
    };
    assert_eq!(module, want, "{args:?}: module events");
    for (e, k) in &native {
        assert!(
            others.contains(e),
            "{args:?} raised `{e}` on {k}, not documented in observability.md"
        );
    }
}

#[test]
fn every_write_raises_the_documented_events_and_reads_raise_none() {
    let srv = Server::start();
    let documented = documented_events();
    let mut ev = Events::new(&srv);
    let now = "1767225600000";
    let later = "1767225602000";
    // IDEM's records expire a TTL after NOW: a NOW in the future keeps them.
    let inow = "1893456000000";
    // Seed-style data for RANK.IMPORT, and a post whose range 0 has a
    // chunk while user 5 is still in its Set (a promotion half done), for
    // LIKE.MIGRATE. Their own events are not checked.
    let zeros = "\0".repeat(8000);
    for setup in [
        vec!["ZADD", "imp", "1", "a", "2", "b", "3", "c"],
        vec!["SET", "lm:bits:0", zeros.as_str()],
        vec!["SETBIT", "lm:chunks", "0", "1"],
        vec!["SADD", "lm:set", "5"],
        vec!["SET", "lm:count", "1"],
    ] {
        let (reply, _) = ev.raised(&setup);
        assert!(reply.is_ok(), "{setup:?}: {reply:?}");
    }
    // (command, changes data). A call that changes data raises exactly its
    // documented event on its base key(s); one that does not raises none.
    let steps: Vec<(Vec<&str>, bool)> = vec![
        (
            vec![
                "POLL.CREATE",
                "p",
                "MODE",
                "MULTI",
                "CANDIDATES",
                "2",
                "a",
                "b",
            ],
            true,
        ),
        (vec!["POLL.VOTE", "p", "u1", "a", "NOW", now], true),
        (vec!["POLL.VOTE", "p", "u1", "a", "NOW", now], false),
        (vec!["POLL.VOTE", "p", "u1", "zz", "NOW", now], false),
        (vec!["POLL.REVOKE", "p", "u1"], true),
        (vec!["POLL.REVOKE", "p", "u1"], false),
        (vec!["POLL.VOTE", "p", "u1", "b", "NOW", now], true),
        (vec!["POLL.SYNC", "p"], true),
        (vec!["POLL.SYNC", "p"], false),
        (vec!["POLL.SYNCACK", "p", "1"], true),
        (vec!["POLL.SYNCACK", "p", "1"], false),
        (vec!["RANK.CREATE", "b", "TTL", "100"], true),
        (vec!["RANK.ADD", "b", "m", "5", "NOW", now], true),
        (vec!["RANK.ADD", "b", "m", "5", "NOW", now], false),
        (vec!["RANK.ADD", "b", "m", "4", "GT", "NOW", now], false),
        (vec!["RANK.INCR", "b", "m", "1", "NOW", now], true),
        (vec!["RANK.DECR", "b", "m", "1", "NOW", now], true),
        (vec!["RANK.CREATE", "w", "LAYOUT", "WIDE"], true),
        (vec!["RANK.ADD", "w", "m", "5", "NOW", now], true),
        (vec!["RANK.ADD", "w", "m", "5", "GT", "NOW", later], false),
        (vec!["RANK.DECR", "w", "m", "1", "NOW", later], true),
        (vec!["RANK.REM", "w", "m"], true),
        (vec!["RANK.REM", "w", "m"], false),
        (vec!["RANK.REM", "b", "m"], true),
        (vec!["RANK.REM", "b", "m"], false),
        (vec!["RANK.ADD", "b", "m", "5", "NOW", now], true),
        (vec!["RANK.MERGE", "d", "1", "b"], true),
        (vec!["RANK.IMPORT", "imp", "COUNT", "2", "NOW", now], true),
        (vec!["RANK.IMPORT", "imp", "COUNT", "2"], true),
        (vec!["RANK.IMPORT", "imp"], false), // done: the board exists
        (vec!["RANK.IMPORT", "nothing"], false),
        (vec!["LIKE.ADD", "l", "0", "NOW", now], true),
        (vec!["LIKE.ADD", "l", "0", "NOW", now], false),
        (vec!["LIKE.TOGGLE", "l", "0"], true),
        (vec!["LIKE.TOGGLE", "l", "0", "NOW", now], true),
        (vec!["LIKE.REM", "l", "0"], true),
        (vec!["LIKE.REM", "l", "0"], false),
        (vec!["LIKE.ADD", "l", "1", "NOW", now], true),
        (vec!["LIKE.ADD", "l", "2", "NOW", now], true),
        (vec!["LIKE.ADD", "l", "3", "NOW", now], true),
        (vec!["LIKE.ADD", "l", "4", "NOW", now], true),
        (vec!["LIKE.ADD", "l", "5", "NOW", now], true),
        (vec!["LIKE.TOGGLE", "l", "5", "NOW", now], true),
        (vec!["LIKE.REM", "l", "4"], true),
        (vec!["LIKE.MIGRATE", "lm", "5"], true), // moved to its chunk
        (vec!["LIKE.MIGRATE", "lm", "5"], false),
        (vec!["LIKE.MIGRATE", "l", "1"], false), // no chunk
        (
            vec!["REDPACKET.SPLIT", "rp", "100", "2", "TTL", "100"],
            true,
        ),
        (vec!["REDPACKET.GRAB", "rp", "alice"], true),
        (vec!["REDPACKET.GRAB", "rp", "alice"], false),
        (vec!["REDPACKET.GRAB", "rp", "bob"], true),
        (vec!["REDPACKET.GRAB", "rp", "carol"], false),
        (vec!["REDPACKET.SPLIT", "rq", "100", "2"], true),
        (vec!["REDPACKET.REFUND", "rq"], true),
        (vec!["REDPACKET.REFUND", "rq"], false),
        (vec!["REDPACKET.GRAB", "rq", "dave"], false),
        (
            vec!["LUCKYBAG.CREATE", "lb", "WINNERS", "1", "TTL", "100"],
            true,
        ),
        (vec!["LUCKYBAG.JOIN", "lb", "u1"], true),
        (vec!["LUCKYBAG.JOIN", "lb", "u1"], false),
        (vec!["LUCKYBAG.JOIN", "lb", "u2", "TASK", "PENDING"], true),
        (vec!["LUCKYBAG.TASK", "lb", "u2"], true),
        (vec!["LUCKYBAG.TASK", "lb", "u2"], false),
        (vec!["LUCKYBAG.LEAVE", "lb", "u1"], true),
        (vec!["LUCKYBAG.LEAVE", "lb", "u1"], false),
        (vec!["LUCKYBAG.ENTER", "lb", "u1"], true),
        (vec!["LUCKYBAG.ENTER", "lb", "u1"], false),
        (vec!["LUCKYBAG.DRAW", "lb"], true),
        (vec!["LUCKYBAG.DRAW", "lb"], false),
        // Spread forms (docs/reference/spread.md): a post's shard, and a
        // bag of two shards drawn step by step.
        (vec!["LIKE.CREATE", "{0VD}post:9", "SPREAD", "2"], true),
        (vec!["LIKE.CREATE", "{0VD}post:9", "SPREAD", "2"], false),
        (vec!["RANK.CREATE", "{7}week:{7}", "SPREAD", "2"], true),
        (vec!["RANK.CREATE", "{7}week:{7}", "SPREAD", "2"], false),
        (
            vec!["RANK.INCR", "{7}week:{7}", "ann", "1", "SPREAD", "2"],
            true,
        ),
        (
            vec![
                "LUCKYBAG.CREATE",
                "{5R0}bag:{live10}",
                "WINNERS",
                "1",
                "SPREAD",
                "2",
            ],
            true,
        ),
        (
            vec![
                "LUCKYBAG.CREATE",
                "{5p4}bag:{live10}",
                "WINNERS",
                "1",
                "SPREAD",
                "2",
            ],
            true,
        ),
        (
            vec![
                "LUCKYBAG.DRAWBEGIN",
                "{5R0}bag:{live10}",
                "t1",
                "SPREAD",
                "2",
            ],
            true,
        ),
        (
            vec![
                "LUCKYBAG.DRAWBEGIN",
                "{5R0}bag:{live10}",
                "t2",
                "SPREAD",
                "2",
            ],
            false,
        ),
        (
            vec!["LUCKYBAG.FREEZE", "{5R0}bag:{live10}", "1", "SPREAD", "2"],
            true,
        ),
        (
            vec!["LUCKYBAG.FREEZE", "{5R0}bag:{live10}", "1", "SPREAD", "2"],
            false,
        ),
        (
            vec!["LUCKYBAG.FREEZE", "{5p4}bag:{live10}", "1", "SPREAD", "2"],
            true,
        ),
        (
            vec!["LUCKYBAG.COMMIT", "{5R0}bag:{live10}", "t1", "SPREAD", "2"],
            true,
        ),
        (
            vec!["LUCKYBAG.COMMIT", "{5R0}bag:{live10}", "t1", "SPREAD", "2"],
            false,
        ),
        (
            vec![
                "LUCKYBAG.DRAWBEGIN",
                "{5R0}bag:{live10}",
                "t1",
                "SPREAD",
                "2",
            ],
            false,
        ),
        (
            vec!["LUCKYBAG.PUBLISH", "{5p4}bag:{live10}", "SPREAD", "2"],
            true,
        ),
        (
            vec!["LUCKYBAG.PUBLISH", "{5p4}bag:{live10}", "SPREAD", "2"],
            false,
        ),
        (vec!["RATE.CHECK", "rk", "1", "60000", "NOW", now], true),
        (vec!["RATE.CHECK", "rk", "1", "60000", "NOW", now], false),
        (
            vec!["RATE.CHECK", "rf", "5", "60000", "ALGO", "FIXED", "PEEK"],
            false,
        ),
        (
            vec![
                "RATE.CHECK",
                "rf",
                "5",
                "60000",
                "ALGO",
                "FIXED",
                "COST",
                "0",
            ],
            false,
        ),
        (vec!["RATE.CHECK", "rl", "5", "60000", "ALGO", "LOG"], true),
        (
            vec![
                "RATE.MULTI",
                "2",
                "m1",
                "m2",
                "LIMITS",
                "1",
                "1000",
                "2",
                "1000",
            ],
            true,
        ),
        (vec!["RATE.THROTTLE", "t", "1", "1", "60"], true),
        (vec!["RATE.THROTTLE", "t", "1", "1", "60", "0"], false),
        (vec!["RATE.RESET", "t"], true),
        (vec!["RATE.RESET", "t"], false),
        (vec!["LOCK.ACQUIRE", "lk", "o1", "10000", "NOW", now], true),
        (vec!["LOCK.ACQUIRE", "lk", "o1", "10000", "NOW", now], true), // reentrant
        (vec!["LOCK.ACQUIRE", "lk", "o2", "10000", "NOW", now], false), // busy
        (
            vec![
                "LOCK.ACQUIRE",
                "lk",
                "o2",
                "10000",
                "LIMIT",
                "2",
                "NOW",
                now,
            ],
            false,
        ),
        (vec!["LOCK.RENEW", "lk", "o1", "10000", "NOW", now], true),
        (vec!["LOCK.RENEW", "lk", "o2", "10000", "NOW", now], false),
        (vec!["LOCK.RELEASE", "lk", "o2", "NOW", now], false),
        (vec!["LOCK.RELEASE", "lk", "o1", "NOW", now], true),
        (vec!["LOCK.RELEASE", "lk", "o1", "NOW", now], true),
        (vec!["LOCK.RELEASE", "lk", "o1", "NOW", now], false),
        (
            vec![
                "LOCK.ACQUIRE",
                "ls",
                "o1",
                "10000",
                "LIMIT",
                "2",
                "NOW",
                now,
            ],
            true,
        ),
        (vec!["LOCK.ACQUIRE", "ls", "o2", "10000", "NOW", now], true),
        (vec!["LOCK.ACQUIRE", "ls", "o3", "10000", "NOW", now], false), // full
        (vec!["LOCK.RELEASE", "ls", "o2", "NOW", now], true),
        (
            vec!["DELAYQ.ADD", "dq", "j1", "p", "ATTEMPTS", "2", "NOW", now],
            true,
        ),
        (vec!["DELAYQ.ADD", "dq", "j1", "p", "NOW", now], false),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", now], true),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", now], false),
        (
            vec!["DELAYQ.EXTEND", "dq", "j1", "1000001", "1000", "NOW", now],
            true,
        ),
        (
            vec!["DELAYQ.EXTEND", "dq", "j1", "9", "1000", "NOW", now],
            false,
        ),
        (vec!["DELAYQ.NACK", "dq", "j1", "1000001", "NOW", now], true),
        (
            vec!["DELAYQ.NACK", "dq", "j1", "1000001", "NOW", now],
            false,
        ),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", now], true), // attempt 2 of 2
        // The lease ran out after the last attempt: the poll only moves
        // the job to the dead letters, and raises its one event.
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", later], true),
        (vec!["DELAYQ.REDRIVE", "dq", "NOW", later], true),
        (vec!["DELAYQ.REDRIVE", "dq", "NOW", later], false),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", later], true),
        (
            vec!["DELAYQ.NACK", "dq", "j1", "2000001", "NOW", later],
            true,
        ), // back in line
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", later], true),
        (
            vec!["DELAYQ.NACK", "dq", "j1", "2000002", "NOW", later],
            true,
        ), // dead letter
        (vec!["DELAYQ.REDRIVE", "dq", "ID", "j1", "NOW", later], true),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", later], true),
        (vec!["DELAYQ.ACK", "dq", "j1", "3000001"], true),
        (vec!["DELAYQ.ACK", "dq", "j1", "3000001"], false),
        (vec!["IDEM.BEGIN", "ik", "fp", "10000", "NOW", inow], true),
        (vec!["IDEM.BEGIN", "ik", "fp", "10000", "NOW", inow], false), // running
        (vec!["IDEM.BEGIN", "ik", "fq", "10000", "NOW", inow], false), // mismatch
        (vec!["IDEM.ABORT", "ik", "1"], false),
        (vec!["IDEM.ABORT", "ik", inow], true),
        (vec!["IDEM.BEGIN", "ik", "fp", "10000", "NOW", inow], true),
        (vec!["IDEM.COMPLETE", "ik", inow, "r", "NOW", inow], false), // stale
        (
            vec!["IDEM.COMPLETE", "ik", "1893456000001", "r", "NOW", inow],
            true,
        ),
        (
            vec!["IDEM.COMPLETE", "ik", "1893456000001", "r", "NOW", inow],
            false,
        ),
        (vec!["IDEM.BEGIN", "ik", "fp", "10000", "NOW", inow], false), // done
        (
            vec!["STOCK.CREATE", "st", "3", "LIMIT", "2", "LEASE", "1000"],
            true,
        ),
        (vec!["STOCK.CREATE", "st", "3"], false),
        (
            vec!["STOCK.RESERVE", "st", "u1", "o1", "2", "NOW", now],
            true,
        ),
        (
            vec!["STOCK.RESERVE", "st", "u1", "o1", "2", "NOW", now],
            false,
        ), // the same reply
        (
            vec!["STOCK.RESERVE", "st", "u1", "o2", "1", "NOW", now],
            false,
        ), // LIMIT
        (
            vec!["STOCK.RESERVE", "st", "u2", "o3", "1", "NOW", now],
            true,
        ),
        (
            vec!["STOCK.RESERVE", "st", "u3", "o4", "1", "NOW", now],
            false,
        ), // SOLDOUT
        (vec!["STOCK.CONFIRM", "st", "o1", "NOW", now], true),
        (vec!["STOCK.CONFIRM", "st", "o1", "NOW", now], false),
        (vec!["STOCK.RELEASE", "st", "o3"], true),
        (vec!["STOCK.RELEASE", "st", "o3"], false),
        (vec!["STOCK.RESTOCK", "st", "2", "NOW", now], true),
        (vec!["STOCK.RESTOCK", "st", "0", "NOW", now], false),
        (
            vec!["STOCK.RESERVE", "st", "u2", "o5", "1", "NOW", now],
            true,
        ),
        // o5's lease lapsed: a RESTOCK 0 returns it, and raises its event.
        (vec!["STOCK.RESTOCK", "st", "0", "NOW", later], true),
        // A spread stock's transfer: each step raises its event once.
        (
            vec!["STOCK.CREATE", "{44Z}sku:7", "10", "SPREAD", "3"],
            true,
        ),
        (
            vec![
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t1",
                "0",
                "4",
                "SPREAD",
                "3",
            ],
            true,
        ),
        (
            vec![
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t1",
                "0",
                "4",
                "SPREAD",
                "3",
            ],
            false,
        ),
        (
            vec!["STOCK.APPLY", "{44Z}sku:7", "t1", "4", "SPREAD", "3"],
            true,
        ),
        (
            vec!["STOCK.APPLY", "{44Z}sku:7", "t1", "4", "SPREAD", "3"],
            false,
        ),
        (
            vec!["STOCK.SETTLE", "{44Z}sku:7", "t1", "4", "SPREAD", "3"],
            true,
        ),
        (
            vec!["STOCK.SETTLE", "{44Z}sku:7", "t1", "4", "SPREAD", "3"],
            false,
        ),
        (vec!["DELAYQ.ADD", "dq", "j2", "p", "NOW", later], true),
        (vec!["DELAYQ.CANCEL", "dq", "j2", "NOW", later], true),
        (vec!["DELAYQ.CANCEL", "dq", "j2", "NOW", later], false),
        (
            vec!["DELAYQ.ADD", "dq", "j3", "p", "ATTEMPTS", "1", "NOW", later],
            true,
        ),
        (vec!["DELAYQ.POLL", "dq", "1000", "NOW", later], true),
        (
            vec!["DELAYQ.NACK", "dq", "j3", "5000001", "NOW", later],
            true,
        ), // dead letter
        (
            vec!["DELAYQ.PURGE", "dq", "MAXAGE", "100000", "NOW", later],
            false,
        ),
        (
            vec!["DELAYQ.PURGE", "dq", "MAXLEN", "0", "NOW", later],
            true,
        ),
        (
            vec!["DELAYQ.PURGE", "dq", "MAXLEN", "0", "NOW", later],
            false,
        ),
    ];
    let mut covered = BTreeSet::new();
    for (args, changes) in &steps {
        if check_events(&mut ev, &documented, args, *changes) {
            covered.insert(args[0].to_string());
        }
    }
    // Every documented write was exercised, and every command is either a
    // documented write or a read that raises nothing.
    let writes: BTreeSet<String> = documented.keys().cloned().collect();
    let reads: Vec<Vec<&str>> = vec![
        vec!["POLL.TOP", "p"],
        vec!["POLL.RANK", "p", "a"],
        vec!["POLL.STATUS", "p", "u1"],
        vec!["POLL.INFO", "p"],
        vec!["RANK.GET", "d", "m"],
        vec!["RANK.TOP", "d"],
        vec!["RANK.AROUND", "d", "m", "1"],
        vec!["RANK.COUNT", "d"],
        vec!["RANK.POSITION", "d", "1", "MEMBER", "m"],
        vec!["LIKE.CHECK", "l", "1"],
        vec!["LIKE.COUNT", "l"],
        vec!["LIKE.RECENT", "l"],
        vec!["LIKE.COMMON", "l", "l"],
        vec!["LIKE.INFO", "l"],
        vec!["REDPACKET.INFO", "rp"],
        vec!["REDPACKET.GRABBED", "rp"],
        vec!["LUCKYBAG.RESULT", "lb", "u1"],
        vec!["LUCKYBAG.INFO", "lb"],
        vec!["LOCK.INFO", "ls", "NOW", now],
        vec!["LOCK.CHECK", "ls", "1", "NOW", now],
        vec!["DELAYQ.DEAD", "dq"],
        vec!["DELAYQ.INFO", "dq"],
        vec!["IDEM.GET", "ik", "NOW", inow],
        vec!["STOCK.INFO", "st"],
        vec!["STOCK.AUDIT", "st", "0"],
        vec!["STOCK.POOL", "{44Z}sku:7", "SPREAD", "3"],
        vec!["DELAYQ.PEEK", "dq"],
    ];
    for args in &reads {
        let (reply, seen) = ev.raised(args);
        assert!(reply.is_ok(), "{args:?}: {reply:?}");
        assert!(seen.is_empty(), "read {args:?} raised {seen:?}");
    }
    // The examples of every page of the reference, each page on emptied
    // data (as the smoke test runs it on a fresh server): a module command
    // that changed the data (`DEBUG DIGEST` moved) raises exactly its
    // documented events, one that did not raises none. So a new family's
    // page brings its steps and reads; the lists above add the calls the
    // examples do not make.
    let mut examples: BTreeSet<String> = BTreeSet::new();
    for page in family_pages() {
        let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
        let (flushed, _) = ev.raised(&["FLUSHALL"]);
        assert!(flushed.is_ok(), "{flushed:?}");
        ev.forget_marker();
        for line in example_commands(&stem) {
            let args: Vec<&str> = line.iter().map(String::as_str).collect();
            let name = args[0].to_uppercase();
            if !name.contains('.') {
                // Data set up by hand, or a config (its reply is the
                // smoke test's to check).
                let _ = ev.raised(&args);
                ev.forget_marker();
                continue;
            }
            let before = srv.digest();
            if documented.contains_key(&name) {
                let (reply, seen) = ev.raised(&args);
                // The digest after the call, without its marker.
                ev.forget_marker();
                let changed = srv.digest() != before;
                check_seen(&documented, &args, &reply, &seen, changed);
                if changed {
                    covered.insert(name.clone());
                }
            } else {
                let (reply, seen) = ev.raised(&args);
                ev.forget_marker();
                assert_eq!(
                    srv.digest(),
                    before,
                    "{stem}.md: read {args:?} changed data"
                );
                assert!(
                    seen.is_empty(),
                    "{stem}.md: read {args:?} ({reply:?}) raised {seen:?}"
                );
            }
            examples.insert(name);
        }
    }
    assert_eq!(covered, writes, "writes exercised vs documented");
    // Every command is a documented write, one of these reads or a
    // command of the examples.
    let mut c = srv.conn();
    let mut known = writes.clone();
    known.extend(reads.iter().map(|r| r[0].to_string()));
    known.extend(examples);
    let all: BTreeSet<String> = registered(&mut c)
        .iter()
        .map(|n| n.to_uppercase())
        .collect();
    assert_eq!(
        all, known,
        "registered commands vs writes and reads of this test"
    );
}

#[test]
fn info_hotpath_has_exactly_the_documented_fields() {
    let srv = Server::start();
    let mut c = srv.conn();
    let info = run(&mut c, &["INFO", "hotpath"]);
    let fields: BTreeSet<String> = info
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(':'))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    assert!(fields.len() > 10, "{info}");
    let text = read(&reference_dir().join("observability.md"));
    let documented: BTreeSet<String> = text
        .lines()
        .filter(|l| l.starts_with("| `hotpath_"))
        .map(|l| backticked(l).into_iter().next().unwrap())
        .collect();
    assert_eq!(
        fields, documented,
        "INFO hotpath fields vs observability.md"
    );
}

/// The index's Configuration table: every setting `CONFIG GET hotpath.*`
/// lists, with its default and range (both ends accepted, one past each
/// refused).
#[test]
fn the_configuration_table_is_every_setting_with_its_default_and_range() {
    let index = read(&reference_dir().join("README.md"));
    let section = index
        .split("## Configuration")
        .nth(1)
        .expect("a Configuration section");
    let rows: Vec<(String, i64, i64, i64)> = section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let num = |s: &str| -> i64 { s.parse().unwrap_or_else(|_| panic!("{l}")) };
            let (min, max) = cells[3].split_once(" … ").expect("a range");
            (
                cells[1].trim_matches('`').to_string(),
                num(cells[2]),
                num(min),
                num(max),
            )
        })
        .collect();
    let srv = Server::start();
    let mut c = srv.conn();
    let all = cmd(&mut c, &["CONFIG", "GET", "hotpath.*"]).unwrap();
    let server: BTreeSet<String> = match &all {
        Value::Map(m) => m.iter().map(|(k, _)| text(k)).collect(),
        other => items(other).chunks(2).map(|p| text(&p[0])).collect(),
    };
    let documented: BTreeSet<String> = rows.iter().map(|r| format!("hotpath.{}", r.0)).collect();
    assert_eq!(
        documented, server,
        "settings documented vs CONFIG GET hotpath.*"
    );
    for (name, default, min, max) in rows {
        let key = format!("hotpath.{name}");
        let got = cmd(&mut c, &["CONFIG", "GET", &key]).unwrap();
        let got = match &got {
            Value::Map(m) => text(&m[0].1),
            other => text(&items(other)[1]),
        };
        assert_eq!(got, default.to_string(), "{key} default");
        for ok in [min, max] {
            assert!(
                cmd(&mut c, &["CONFIG", "SET", &key, &ok.to_string()]).is_ok(),
                "{key} {ok}"
            );
        }
        for bad in [min - 1, max + 1] {
            assert!(
                cmd(&mut c, &["CONFIG", "SET", &key, &bad.to_string()]).is_err(),
                "{key} {bad}"
            );
        }
        run(&mut c, &["CONFIG", "SET", &key, &default.to_string()]);
    }
}

/// POLL.TOP, RANK.TOP and RANK.AROUND answer rows under RESP3 (pairs, as
/// `ZRANGE … WITHSCORES` does; AROUND's triples) and the flat array under
/// RESP2, with the same values in the same order.
#[test]
fn list_replies_are_resp3_rows_and_resp2_flat_arrays() {
    let srv = Server::start();
    let mut r2 = srv.conn();
    let mut r3 = resp3_conn(&srv);
    let now = "1767225600000";
    for args in [
        vec![
            "POLL.CREATE",
            "p",
            "CANDIDATES",
            "3",
            "a",
            "b",
            "c",
            "NOW",
            now,
        ],
        vec!["POLL.VOTE", "p", "u1", "b", "NOW", now],
        vec!["POLL.VOTE", "p", "u2", "b", "NOW", now],
        vec!["POLL.VOTE", "p", "u3", "c", "NOW", now],
        vec!["RANK.ADD", "b", "kim", "130", "NOW", now],
        vec!["RANK.ADD", "b", "zed", "120", "NOW", now],
        vec!["RANK.ADD", "b", "abe", "110", "NOW", now],
    ] {
        cmd(&mut r2, &args).unwrap();
    }
    let i = Value::Int;
    let cases: Vec<(Vec<&str>, usize, Vec<Value>)> = vec![
        (
            vec!["POLL.TOP", "p", "2"],
            2,
            vec![bulk("b"), i(2), bulk("c"), i(1)],
        ),
        (
            vec!["RANK.TOP", "b", "3"],
            2,
            vec![
                bulk("kim"),
                i(130),
                bulk("zed"),
                i(120),
                bulk("abe"),
                i(110),
            ],
        ),
        (
            vec!["RANK.AROUND", "b", "zed", "1"],
            3,
            vec![
                i(0),
                bulk("kim"),
                i(130),
                i(1),
                bulk("zed"),
                i(120),
                i(2),
                bulk("abe"),
                i(110),
            ],
        ),
    ];
    for (args, width, flat) in cases {
        let got2 = cmd(&mut r2, &args).unwrap();
        assert_eq!(got2, Value::Array(flat.clone()), "RESP2 {args:?}");
        let rows: Vec<Value> = flat
            .chunks(width)
            .map(|r| Value::Array(r.to_vec()))
            .collect();
        let got3 = cmd(&mut r3, &args).unwrap();
        assert_eq!(got3, Value::Array(rows), "RESP3 {args:?}");
    }
    // An empty list is an empty array in both.
    let empty = vec!["RANK.TOP", "b", "2", "OFFSET", "9"];
    assert_eq!(cmd(&mut r3, &empty).unwrap(), Value::Array(vec![]));
    assert_eq!(cmd(&mut r2, &empty).unwrap(), Value::Array(vec![]));
}

/// Sends one command as a RESP array on a fresh socket and returns the raw
/// reply line (the clients decode error texts lossily, so a test of the
/// bytes must read the socket).
fn raw_reply(port: u16, args: &[&[u8]]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        req.extend_from_slice(a);
        req.extend_from_slice(b"\r\n");
    }
    s.write_all(&req).unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while !out.ends_with(b"\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "connection closed");
        out.push(b[0]);
    }
    out
}

/// An error that names a member or a key echoes its bytes as given, a
/// byte that is not UTF-8 included (it became U+FFFD), the same bytes as
/// the Lua twin's error; ASCII control characters become `?` in both.
#[test]
fn error_texts_echo_names_byte_for_byte_like_the_twins() {
    let srv = Server::start();
    let mut c = srv.conn();
    let sha = load_script(&mut c, "rank/get.lua");
    for (key, member) in [
        (&b"rk:{0}"[..], &b"\xff"[..]),
        (b"rk:{0}", b"caf\xc3\xa9\xc3"),
        (b"rk\xfe:{1}", b"a\r\nb"),
        (b"rk:{2}", "\u{85}x".as_bytes()),
    ] {
        // A score RANK never writes: the board is corrupt at this member.
        redis::cmd("ZADD")
            .arg(key)
            .arg("0.5")
            .arg(member)
            .query::<i64>(&mut c)
            .unwrap();
        let module = raw_reply(srv.port, &[b"RANK.GET", key, member]);
        let twin = raw_reply(srv.port, &[b"EVALSHA", sha.as_bytes(), b"1", key, member]);
        let shown = String::from_utf8_lossy(&module).into_owned();
        assert!(
            module.starts_with(b"-ERR rank: corrupt data in '"),
            "{shown}"
        );
        assert_eq!(
            module,
            twin,
            "{shown} vs {}",
            String::from_utf8_lossy(&twin)
        );
        let mut want = b"' field '".to_vec();
        want.extend(member.iter().map(|&b| if b < 0x20 { b'?' } else { b }));
        want.extend_from_slice(b"'\r\n");
        assert!(module.ends_with(&want), "{shown}");
    }
}
