//! The one list of families, `hotpath::FAMILIES` (src/lib.rs), against
//! the files every family needs. Adding a family to that list, and nothing
//! else, makes these tests fail until the family has them all (the order
//! to write them in is docs/adding-a-family.md):
//!
//! - its guide and reference page, linked from the reference's index, and
//!   its row in the README's command table;
//! - its integration tests, Lua parity tests, differential harness and
//!   error cases (tests/no_partial_writes/<family>.rs);
//! - a Lua twin per command whose first header line is the command's
//!   declared syntax;
//! - its entity in both clients, with a method per command (or a line in
//!   [`CLIENTS_LEAVE_OUT`] saying who sends the command instead);
//! - its benchmark, `bench/<family>.py` (`make bench` asks the module
//!   for its families, so there is no list to keep).
//!
//! The syntax line of each entry of docs/reference/ is written here from
//! the command's declaration: a page whose line differs is rewritten and
//! the test fails once, so that the rewritten page is committed.
//!
//! The checks read files only: no server is needed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hotpath::registry::{CommandSpec, Family};
use hotpath::{FAMILIES, WITHOUT_LUA_TWIN};

/// Commands the clients' entities have no method for, with who sends them.
const CLIENTS_LEAVE_OUT: &[(&str, &str)] = &[
    (
        "like.create",
        "the spread entities (SpreadLike) create a post's shards",
    ),
    (
        "like.migrate",
        "the form a promotion step replicates as, not an application call",
    ),
    (
        "rank.import",
        "a one-off migration step, run from redis-cli (docs/migration.md)",
    ),
    ("rank.position", "the per-shard read of SpreadRank"),
    ("luckybag.drawbegin", "step 1 of SpreadLuckyBag's draw"),
    ("luckybag.freeze", "step 2 of SpreadLuckyBag's draw"),
    ("luckybag.commit", "step 4 of SpreadLuckyBag's draw"),
    ("luckybag.publish", "step 5 of SpreadLuckyBag's draw"),
    (
        "stock.transfer",
        "step 1 of SpreadStock's refill and handback",
    ),
    ("stock.apply", "step 2 of SpreadStock's refill and handback"),
    (
        "stock.settle",
        "step 3 of SpreadStock's refill and handback",
    ),
    ("stock.pool", "SpreadStock's pool read and recovery"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let p = root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn exists(rel: &str) -> bool {
    root().join(rel).exists()
}

/// The part of a command's name after its family (`vote` of `poll.vote`).
fn sub(c: &CommandSpec) -> &'static str {
    c.name.split_once('.').map(|(_, s)| s).unwrap_or(c.name)
}

/// The names of the `.rs`/`.lua`/… files of a folder, without extension.
fn stems(rel: &str, ext: &str) -> BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir(root().join(rel)) else {
        return BTreeSet::new();
    };
    dir.map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn fail_on(missing: Vec<String>) {
    assert!(
        missing.is_empty(),
        "missing (docs/adding-a-family.md):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_family_has_its_docs_tests_and_bench() {
    let index = read("docs/reference/README.md");
    let readme = read("README.md");
    let mut missing = Vec::new();
    for f in FAMILIES {
        let n = f.name;
        for file in [
            format!("src/{n}/mod.rs"),
            format!("docs/{n}.md"),
            format!("docs/reference/{n}.md"),
            format!("tests/{n}.rs"),
            format!("tests/lua_parity_{n}.rs"),
            format!("bench/{n}.py"),
        ] {
            if !exists(&file) {
                missing.push(file);
            }
        }
        if !index.contains(&format!("({n}.md)")) {
            missing.push(format!("docs/reference/README.md: a link to {n}.md"));
        }
        let upper = n.to_ascii_uppercase();
        if !readme.contains(&format!("| {upper} |")) {
            missing.push(format!(
                "README.md: the row `| {upper} | …` of its commands"
            ));
        }
    }
    fail_on(missing);
}

#[test]
fn every_command_has_a_lua_twin_headed_by_its_declared_syntax() {
    let mut missing = Vec::new();
    for f in FAMILIES {
        let mut declared = BTreeSet::new();
        for c in f.commands {
            if WITHOUT_LUA_TWIN.contains(&c.name) {
                continue;
            }
            declared.insert(sub(c).to_string());
            let source = format!("lua-compat/src/{}/{}.lua", f.name, sub(c));
            if !exists(&source) {
                missing.push(source);
                continue;
            }
            let want = format!("-- {} {}", c.name.to_ascii_uppercase(), c.syntax);
            let text = read(&source);
            let first = text.lines().next().unwrap_or_default();
            if first != want {
                missing.push(format!("{source}: first line `{want}` (it is `{first}`)"));
            }
            let generated = format!("lua-compat/generated/{}/{}.lua", f.name, sub(c));
            if !exists(&generated) {
                missing.push(format!("{generated} (run python3 scripts/lua-gen.py)"));
            }
        }
        // A twin of no command would be a command the module lacks.
        let mut sources = stems(&format!("lua-compat/src/{}", f.name), "lua");
        sources.remove("family");
        for extra in sources.difference(&declared) {
            missing.push(format!(
                "a declared command {}.{extra} (lua-compat/src/{}/{extra}.lua has no command)",
                f.name, f.name
            ));
        }
    }
    // Every family folder of the twins is a family.
    let names: BTreeSet<&str> = FAMILIES.iter().map(|f| f.name).collect();
    for entry in std::fs::read_dir(root().join("lua-compat/src")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() && !names.contains(name.as_str()) {
            missing.push(format!(
                "a family `{name}` in FAMILIES (lua-compat/src/{name}/)"
            ));
        }
    }
    for name in WITHOUT_LUA_TWIN {
        assert!(
            FAMILIES
                .iter()
                .any(|f| f.commands.iter().any(|c| c.name == *name)),
            "WITHOUT_LUA_TWIN lists {name}, which is not a command"
        );
    }
    fail_on(missing);
}

/// The lists build.rs derives from the family files under tests/ (see
/// tests/differential.rs and tests/no_partial_writes.rs).
const DIFFERENTIAL: &str = include_str!(concat!(env!("OUT_DIR"), "/differential_families.rs"));
const NO_PARTIAL_WRITES: &str =
    include_str!(concat!(env!("OUT_DIR"), "/no_partial_writes_families.rs"));

#[test]
fn the_differential_harness_runs_every_family() {
    let mut missing = Vec::new();
    for f in FAMILIES {
        let n = f.name;
        let file = format!("tests/differential/{n}.rs");
        if !exists(&file) {
            missing.push(file);
            continue;
        }
        for needle in [
            format!("fn {n}_random_calls()"),
            format!("fn {n}_every_fault_and_pair()"),
        ] {
            if !DIFFERENTIAL.contains(&needle) {
                missing.push(format!(
                    "tests/differential/{n}.rs: `impl Family for <Type> {{` (build.rs writes `{needle}` from it)"
                ));
            }
        }
    }
    let names: BTreeSet<String> = FAMILIES.iter().map(|f| f.name.to_string()).collect();
    let mut files = stems("tests/differential", "rs");
    files.remove("harness");
    for extra in files.difference(&names) {
        missing.push(format!(
            "a family `{extra}` in FAMILIES (tests/differential/{extra}.rs)"
        ));
    }
    fail_on(missing);
}

/// Every family with a write command has its error cases, in a file of its
/// own that tests/no_partial_writes.rs runs (build.rs lists it).
#[test]
fn every_write_family_has_its_no_partial_writes_cases() {
    let mut missing = Vec::new();
    for f in FAMILIES {
        let n = f.name;
        if !f
            .commands
            .iter()
            .any(|c| c.flags.split(' ').any(|x| x == "write"))
        {
            continue;
        }
        let file = format!("tests/no_partial_writes/{n}.rs");
        if !exists(&file) {
            missing.push(format!(
                "{file} (`pub const FAMILY: Family`, its error cases)"
            ));
        } else if !NO_PARTIAL_WRITES.contains(&format!("&{n}::FAMILY")) {
            missing.push(format!("{file} in build.rs's list (rebuild)"));
        }
    }
    let names: BTreeSet<String> = FAMILIES.iter().map(|f| f.name.to_string()).collect();
    for extra in stems("tests/no_partial_writes", "rs").difference(&names) {
        missing.push(format!(
            "a family `{extra}` in FAMILIES (tests/no_partial_writes/{extra}.rs)"
        ));
    }
    fail_on(missing);
}

/// Returns the lines of the blocks that start with `head` (a line of its
/// own at column 0) and end at the next line matching `end`.
fn blocks(text: &str, head: &str, end: fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if inside && end(line) {
            inside = false;
        }
        if line.starts_with(head) {
            inside = true;
            continue;
        }
        if inside {
            out.push(line.to_string());
        }
    }
    out
}

/// The names of the `def`s (Python) or `pub fn`s (Rust) of some lines.
fn methods(lines: &[String], prefix: &str) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix(prefix))
        .map(|rest| rest.split(['(', '<']).next().unwrap().to_string())
        .collect()
}

fn client_methods(
    f: &Family,
    entity: &str,
    py: &str,
    rs: &str,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let class = blocks(py, &format!("class {entity}(_Entity):"), |l| {
        l.starts_with("class ")
    });
    let mut python = methods(&class, "def ");
    // Calls on several keys are HotPath's methods: `rank_merge`.
    let hotpath = blocks(py, "class HotPathMethods(", |l| l.starts_with("class "));
    let prefix = format!("{}_", f.name);
    python.extend(
        methods(&hotpath, "def ")
            .into_iter()
            .filter_map(|m| m.strip_prefix(&prefix).map(str::to_string)),
    );
    let imp = blocks(rs, &format!("impl {entity} {{"), |l| l == "}");
    let mut rust = methods(&imp, "pub fn ");
    // Most commands are declared in the entity's `methods!` block, which
    // makes each `fn` the blocking, the `cmd()` and the `aio()` method.
    let declared = blocks(rs, &format!("methods!({entity} {{"), |l| l == "});");
    rust.extend(methods(&declared, "fn "));
    (python, rust)
}

/// Each family's entity is a file of its own in each client (issue 26):
/// `clients/python/src/hotpath/entities/<family>.py` (the class and
/// `HotPathMethods`, `HotPath`'s methods; the package's `__all__` and
/// `HotPath`'s base come from the generated `entities/__init__.py`) and
/// `clients/rust/src/entities/<family>.rs` (build.rs lists the files).
#[test]
fn the_clients_have_an_entity_per_family_and_a_method_per_command() {
    let gathered = read("clients/python/src/hotpath/entities/__init__.py");
    let mut missing = Vec::new();
    for (name, _) in CLIENTS_LEAVE_OUT {
        assert!(
            FAMILIES
                .iter()
                .any(|f| f.commands.iter().any(|c| c.name == *name)),
            "CLIENTS_LEAVE_OUT lists {name}, which is not a command"
        );
    }
    for f in FAMILIES {
        let Some(entity) = f.entity else {
            continue;
        };
        let upper = f.name.to_ascii_uppercase();
        let py_file = format!("clients/python/src/hotpath/entities/{}.py", f.name);
        let rs_file = format!("clients/rust/src/entities/{}.rs", f.name);
        let py = if exists(&py_file) {
            read(&py_file)
        } else {
            missing.push(format!(
                "{py_file} (the entity `class {entity}(_Entity)` and `class HotPathMethods(_HotPathBase)`)"
            ));
            String::new()
        };
        let rs = if exists(&rs_file) {
            read(&rs_file)
        } else {
            missing.push(format!(
                "{rs_file} (`use super::*;`, `entity!({entity})`, its `methods!` block)"
            ));
            String::new()
        };
        if !py.is_empty() {
            let class = format!("class {entity}(_Entity):");
            if !py.contains(&class) {
                missing.push(format!("{py_file}: `{class}`"));
            }
            if !py.contains(&format!("    family = \"{upper}\"")) {
                missing.push(format!("{py_file}: `family = \"{upper}\"` in {entity}"));
            }
            if !py.contains("class HotPathMethods(_HotPathBase):")
                || !py.contains(&format!("    def {}(self, key", f.name))
            {
                missing.push(format!(
                    "{py_file}: HotPathMethods.{}(key) returning {entity} (HotPath's method)",
                    f.name
                ));
            }
            if !gathered.contains(&format!("\"{entity}\"")) {
                missing.push(format!(
                    "clients/python/src/hotpath/entities/__init__.py: {entity} \
                     (run python3 clients/python/tools/gen_aio.py)"
                ));
            }
        }
        if !rs.is_empty() && !rs.contains(&format!("    {entity}\n);")) {
            missing.push(format!("{rs_file}: `entity!({entity})`"));
        }
        if py.is_empty() || rs.is_empty() {
            continue;
        }
        let (python, rust) = client_methods(f, entity, &py, &rs);
        for c in f.commands {
            let s = sub(c);
            let left_out = CLIENTS_LEAVE_OUT.iter().any(|(n, _)| *n == c.name);
            // Rust may name a call on several keys for what it does with
            // the entity: `Rank::merge_from`.
            let in_rust = rust.contains(s) || rust.iter().any(|m| m.starts_with(&format!("{s}_")));
            let in_python = python.contains(s);
            if left_out {
                assert!(
                    !(in_rust && in_python),
                    "{}: both clients have it now; take it off CLIENTS_LEAVE_OUT",
                    c.name
                );
                continue;
            }
            if !in_python {
                missing.push(format!("{py_file}: {entity}.{s}() for {}", c.name));
            }
            if !in_rust {
                missing.push(format!("{rs_file}: {entity}::{s}() for {}", c.name));
            }
        }
    }
    fail_on(missing);
}

/// Rewrites the syntax line (the first code block after `## NAME`) of
/// each declared command's entry in a reference page; returns the names
/// whose line changed.
fn rewrite_syntax_lines(text: &str, changed: &mut Vec<String>) -> String {
    let declared: Vec<&CommandSpec> = FAMILIES.iter().flat_map(|f| f.commands.iter()).collect();
    let mut out = Vec::new();
    let mut current: Option<&CommandSpec> = None;
    let mut fence = 0;
    for line in text.lines() {
        let mut line = line.to_string();
        if let Some(name) = line.strip_prefix("## ") {
            current = declared
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name.trim()))
                .copied();
            fence = 0;
        } else if line.starts_with("```") {
            fence += 1;
        } else if fence == 1 {
            // The line inside the entry's first code block.
            if let Some(c) = current.take() {
                let want = format!("{} {}", c.name.to_ascii_uppercase(), c.syntax);
                if line != want {
                    changed.push(c.name.to_ascii_uppercase());
                    line = want;
                }
            }
        }
        out.push(line);
    }
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    joined
}

#[test]
fn reference_syntax_lines_are_written_from_the_declarations() {
    let mut changed = Vec::new();
    let dir = root().join("docs/reference");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let before = changed.len();
        let new = rewrite_syntax_lines(&text, &mut changed);
        if changed.len() > before {
            std::fs::write(&p, new).unwrap();
        }
    }
    assert!(
        changed.is_empty(),
        "syntax lines rewritten from the declarations in docs/reference/ (commit them): {changed:?}"
    );
}
