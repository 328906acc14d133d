//! The families call the module API only through the shared modules:
//! keys/ (keys by Redis type, scans, `RedisModule_Call`), reply.rs,
//! replicate.rs, blocking.rs, util.rs. A test here reads every source file
//! under `src/<family>/` of every family in [`FAMILIES`](crate::FAMILIES)
//! and fails on `raw::`, `RedisModule_` or `unsafe` in code (comments and
//! string literals do not count), naming file and line: a raw call a
//! family needs becomes a method of [`Key`](crate::keys::Key) or a function
//! of a shared module, not a block in the family.

use std::path::{Path, PathBuf};

/// What a family's code may not contain.
const FORBIDDEN: [&str; 3] = ["raw::", "RedisModule_", "unsafe"];

/// Returns `text` with comments and the contents of string and character
/// literals blanked out (line breaks kept, so line numbers hold).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, c: u8| out.push(if c == b'\n' { '\n' } else { ' ' });
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        out.push_str("  ");
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        out.push_str("  ");
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                }
            }
            b'"' => {
                out.push('"');
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    out.push('"');
                    i += 1;
                }
            }
            // A character literal ('"', '\''), not a lifetime ('a).
            b'\'' if b.get(i + 2) == Some(&b'\'') && b.get(i + 1) != Some(&b'\\') => {
                out.push_str("' '");
                i += 3;
            }
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                out.push('\'');
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                    if i < b.len() {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                }
                if i < b.len() {
                    out.push('\'');
                    i += 1;
                }
            }
            c => {
                // Multi-byte characters are copied whole.
                let len = text[i..].chars().next().map_or(1, char::len_utf8);
                if len == 1 {
                    out.push(c as char);
                } else {
                    out.push_str(&text[i..i + len]);
                }
                i += len;
            }
        }
    }
    out
}

/// Returns `(line, forbidden text)` for each offence in a source file.
fn offences(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (n, line) in code_only(text).lines().enumerate() {
        for word in FORBIDDEN {
            let is_word = |at: usize| {
                let before = line[..at].chars().next_back();
                word != "unsafe"
                    || !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !line[at + word.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '_')
            };
            if line.match_indices(word).any(|(at, _)| is_word(at)) {
                found.push((n + 1, word));
            }
        }
    }
    found
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn families_make_no_raw_module_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bad = Vec::new();
    let mut read = 0;
    for family in crate::FAMILIES {
        let mut files = Vec::new();
        sources(&root.join("src").join(family.name), &mut files);
        assert!(!files.is_empty(), "src/{}/ has no source file", family.name);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            read += 1;
            for (line, word) in offences(&text) {
                let rel = file.strip_prefix(root).unwrap_or(&file);
                bad.push(format!("{}:{line}: `{word}`", rel.display()));
            }
        }
    }
    assert!(read >= crate::FAMILIES.len(), "no family file was read");
    assert!(
        bad.is_empty(),
        "families call the module API only through keys/, reply.rs, replicate.rs and the other \
         shared modules; move these into one of them:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_lint_sees_code_and_not_comments_or_strings() {
    let text = "// raw::x in a comment\n\
                /* RedisModule_Call\n in a block */ let a = 1;\n\
                let s = \"raw::RedisModule_ unsafe \\\" raw::\";\n\
                let c = '\"'; let t: &'static str = \"x\";\n\
                let p = unsafe { raw::RedisModule_Call.unwrap() };\n\
                fn not_unsafe_word() {}\n\
                let q = redis_module::raw::open_key;\n\
                let u = unsafe_thing; // raw::\n";
    assert_eq!(
        offences(text),
        vec![
            (6, "raw::"),
            (6, "RedisModule_"),
            (6, "unsafe"),
            (8, "raw::"),
        ]
    );
}
