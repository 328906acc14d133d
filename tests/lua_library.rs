//! The Lua twins as shipped: the generated files match their sources
//! (lua-compat/src/, scripts/lua-gen.py), the Functions library loads on a
//! server without the module and registers one function per command with
//! the flags the module's command has, the loader loads it from a URL, a
//! wrong `numkeys` gets the module's arity error, and the README's SHA
//! recipe gives the SHA that SCRIPT LOAD returns.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The families generated from lua-compat/src/ and their commands
/// (`RATE.CHECK`, …), with the `--@` lines of each source.
fn sources() -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for fam in std::fs::read_dir(root().join("lua-compat/src")).unwrap() {
        let fam = fam.unwrap().path();
        if !fam.join("family.lua").exists() {
            continue;
        }
        let name = fam.file_name().unwrap().to_string_lossy().into_owned();
        let mut cmds = Vec::new();
        for f in std::fs::read_dir(&fam).unwrap() {
            let f = f.unwrap().path();
            let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
            if stem == "family" || f.extension().map(|e| e != "lua").unwrap_or(true) {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            let meta: String = text
                .lines()
                .filter(|l| l.starts_with("--@"))
                .collect::<Vec<_>>()
                .join("\n");
            cmds.push((format!("{}.{}", name, stem).to_uppercase(), meta));
        }
        cmds.sort();
        out.insert(name, cmds);
    }
    out
}

fn python(args: &[&str]) -> std::process::Output {
    Command::new(python_bin())
        .args(args)
        .current_dir(root())
        .output()
        .expect("python")
}

/// Module commands without a function: the module's own list
/// (`hotpath::WITHOUT_LUA_TWIN`, none today). A new command either gets
/// its twin or is listed there, and lua-compat/README.md says so.
const MODULE_ONLY: &[&str] = hotpath::WITHOUT_LUA_TWIN;

#[test]
fn generated_twins_and_library_match_their_sources() {
    let out = python(&["scripts/lua-gen.py", "--check"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The check sees a change: a generated file edited by hand fails it.
    let dir = Server::new_dir();
    let copy = dir.join("repo");
    std::fs::create_dir_all(&copy).unwrap();
    for sub in ["scripts", "lua-compat"] {
        let st = Command::new("cp")
            .arg("-r")
            .arg(root().join(sub))
            .arg(copy.join(sub))
            .status()
            .unwrap();
        assert!(st.success());
    }
    // The routing spec that computes the slot-tag table the generator puts
    // into the spread helpers.
    let spec = "clients/python/src/hotpath/routing.py";
    std::fs::create_dir_all(copy.join(spec).parent().unwrap()).unwrap();
    std::fs::copy(root().join(spec), copy.join(spec)).unwrap();
    let twin = copy.join("lua-compat/generated/lock/info.lua");
    let text = std::fs::read_to_string(&twin).unwrap();
    std::fs::write(&twin, text.replace("return {}", "return {'edited'}")).unwrap();
    let out = Command::new(python_bin())
        .arg(copy.join("scripts/lua-gen.py"))
        .arg("--check")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "an edited twin passed the check");
    assert!(
        err.contains("lua-compat/generated/lock/info.lua differs"),
        "{err}"
    );
    // The generated folder holds only what the generator writes: a file it
    // did not write fails the check, and a run removes it.
    let stray = copy.join("lua-compat/generated/lock/old.lua");
    std::fs::write(&stray, "return 1\n").unwrap();
    let check = |copy: &Path| {
        Command::new(python_bin())
            .arg(copy.join("scripts/lua-gen.py"))
            .arg("--check")
            .output()
            .unwrap()
    };
    let out = check(&copy);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("lua-compat/generated/lock/old.lua is not generated"),
        "{err}"
    );
    let out = Command::new(python_bin())
        .arg(copy.join("scripts/lua-gen.py"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stray.exists(), "the stray file is still there");
    let out = check(&copy);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The slot-tag table is one definition (docs/spread.md), computed where
/// it is used: by the crate hotpath-route for the module and the Rust
/// client, by the Python client's routing.py for that client and for the
/// generator, which puts it into the Lua as one string of 3-character
/// cells. All three give the same table.
#[test]
fn the_slot_tag_table_is_the_same_in_rust_python_and_lua() {
    let rust = hotpath_client::routing::slot_tags();
    assert_eq!(rust.len(), 16384);
    // Python: the client's routing spec, loaded as a file, as lua-gen does.
    let out = python(&[
        "-c",
        "import importlib.util as u, sys\n\
         s = u.spec_from_file_location('r', 'clients/python/src/hotpath/routing.py')\n\
         m = u.module_from_spec(s); s.loader.exec_module(m)\n\
         sys.stdout.write(' '.join(m.slot_tags()))",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let py = String::from_utf8(out.stdout).unwrap();
    assert_eq!(py.split(' ').collect::<Vec<_>>(), rust);
    // Lua: the library's string, and that of every standalone script that
    // carries one, is the Rust table padded to three characters a slot.
    let cells: String = rust.iter().map(|t| format!("{t:<3}")).collect();
    let literal = format!("'{cells}'");
    let lib = std::fs::read_to_string(root().join("lua-compat/generated/hotpath.lua")).unwrap();
    assert_eq!(
        lib.matches(&literal).count(),
        1,
        "the library holds the table once"
    );
    let mut carriers = 0;
    for fam in std::fs::read_dir(root().join("lua-compat/generated")).unwrap() {
        let fam = fam.unwrap().path();
        if !fam.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&fam).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            if text.contains("SLOT_TAGS") {
                assert_eq!(text.matches(&literal).count(), 1, "{}", fam.display());
                carriers += 1;
            }
        }
    }
    assert!(carriers > 0);
}

/// Returns FUNCTION LIST's functions of the library: name -> flags.
fn listed_functions(c: &mut Connection) -> BTreeMap<String, Vec<String>> {
    let v = cmd(c, &["FUNCTION", "LIST", "LIBRARYNAME", "hotpath"]).unwrap();
    let mut out = BTreeMap::new();
    let libs = match v {
        Value::Array(a) => a,
        other => panic!("{other:?}"),
    };
    assert_eq!(libs.len(), 1, "one library named hotpath");
    let fields = match &libs[0] {
        Value::Array(a) => a,
        other => panic!("{other:?}"),
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        other => panic!("{other:?}"),
    };
    for pair in fields.chunks(2) {
        if text(&pair[0]) != "functions" {
            continue;
        }
        let Value::Array(fs) = &pair[1] else { panic!() };
        for f in fs {
            let Value::Array(kv) = f else { panic!() };
            let mut name = String::new();
            let mut flags = Vec::new();
            for p in kv.chunks(2) {
                match text(&p[0]).as_str() {
                    "name" => name = text(&p[1]),
                    "flags" => {
                        if let Value::Array(fl) = &p[1] {
                            flags = fl.iter().map(text).collect();
                        }
                    }
                    _ => {}
                }
            }
            out.insert(name, flags);
        }
    }
    out
}

#[test]
fn library_has_one_function_per_command_with_the_module_flags() {
    let plain = Server::start_bare(&[]);
    let mut c = plain.conn();
    load_library(&mut c);
    let listed = listed_functions(&mut c);
    let module = Server::start();
    let mut m = module.conn();
    let commands: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(&mut m)
        .unwrap();
    let mut expected = 0;
    for (family, cmds) in sources() {
        // Every command of a generated family has its function, and each
        // function is a command of the module.
        let of_module: Vec<&String> = commands
            .iter()
            .filter(|n| n.starts_with(&format!("{family}.")))
            .filter(|n| !MODULE_ONLY.contains(&n.as_str()))
            .collect();
        assert_eq!(
            of_module.len(),
            cmds.len(),
            "{family}: module {of_module:?}, sources {cmds:?}"
        );
        for (command, meta) in cmds {
            expected += 1;
            let f = function_name(&command);
            let flags = listed
                .get(&f)
                .unwrap_or_else(|| panic!("{f} missing: {listed:?}"));
            let info = run(&mut m, &["COMMAND", "INFO", &command]);
            assert!(
                !info.starts_with("[nil"),
                "{command} is not a module command"
            );
            // A reader is `no-writes` (so FCALL_RO and replicas run it); a
            // writer is refused under OOM as the module's denyoom command.
            assert_eq!(
                info.contains("readonly"),
                flags.iter().any(|x| x == "no-writes"),
                "{command}: {info} vs {flags:?} ({meta})"
            );
            if info.contains("write") {
                assert_eq!(
                    info.contains("denyoom"),
                    !flags.iter().any(|x| x == "allow-oom"),
                    "{command}: {info} vs {flags:?}"
                );
            }
        }
    }
    assert_eq!(listed.len(), expected, "{listed:?}");
}

#[test]
fn fcall_ro_runs_readers_and_refuses_writers() {
    let plain = Server::start_bare(&[]);
    let mut c = plain.conn();
    load_library(&mut c);
    assert_eq!(
        run(
            &mut c,
            &[
                "FCALL",
                "hotpath_lock_acquire",
                "1",
                "l",
                "a",
                "5000",
                "NOW",
                "1000"
            ]
        ),
        "1"
    );
    assert_eq!(
        run(
            &mut c,
            &["FCALL_RO", "hotpath_lock_info", "1", "l", "NOW", "2000"]
        ),
        "[a, 1, 1, 4000]"
    );
    assert_eq!(
        run(
            &mut c,
            &[
                "FCALL_RO",
                "hotpath_lock_check",
                "1",
                "l",
                "1",
                "NOW",
                "2000"
            ]
        ),
        "1"
    );
    run(
        &mut c,
        &[
            "FCALL",
            "hotpath_delayq_add",
            "1",
            "q",
            "j",
            "p",
            "NOW",
            "1",
        ],
    );
    assert_eq!(
        run(
            &mut c,
            &["FCALL_RO", "hotpath_delayq_info", "1", "q", "NOW", "5"]
        ),
        "[jobs, 1, ready, 1, scheduled, 0, dead, 0]"
    );
    assert_eq!(
        run(&mut c, &["FCALL_RO", "hotpath_delayq_dead", "1", "q"]),
        "[]"
    );
    let e = run(&mut c, &["FCALL_RO", "hotpath_lock_release", "1", "l", "a"]);
    assert!(e.contains("write flag"), "{e}");
}

/// Runs scripts/lua-load.sh with one argument; returns (success, output).
fn loader(url: &str) -> (bool, String) {
    let out = Command::new("bash")
        .arg(root().join("scripts/lua-load.sh"))
        .arg(url)
        .output()
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn loader_loads_the_library_from_a_url_and_replaces_it() {
    let plain = Server::start_bare(&[]);
    // A password, set once the harness has seen the server ready.
    let mut admin = plain.conn();
    run(&mut admin, &["CONFIG", "SET", "requirepass", "s3cret"]);
    // redis-cli 7.0 reads `redis://:pw@…` as user "" (refused): the user
    // is named, as the README shows.
    let url = format!("redis://default:s3cret@127.0.0.1:{}/0", plain.port);
    let (ok, out) = loader(&url);
    assert!(ok, "{out}");
    assert!(out.contains("library hotpath loaded"), "{out}");
    assert!(!out.contains("s3cret"), "the password is printed: {out}");
    // Again: REPLACE, so that a newer library loads over an older one.
    let (ok, out) = loader(&url);
    assert!(ok, "{out}");
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let n = listed_functions(&mut c).len();
    let want = sources().values().map(Vec::len).sum::<usize>();
    assert_eq!(n, want);
    assert_eq!(
        run(
            &mut c,
            &[
                "FCALL",
                "hotpath_rate_check",
                "1",
                "r",
                "5",
                "1000",
                "NOW",
                "7"
            ]
        ),
        "[1, 5, 4, -1, 200]"
    );
    // A wrong password and a dead port fail, with a message.
    let (ok, out) = loader(&format!("redis://default:wrong@127.0.0.1:{}", plain.port));
    assert!(!ok, "{out}");
    let (ok, out) = loader(&format!("redis://127.0.0.1:{}", free_port()));
    assert!(!ok, "{out}");
    assert!(out.contains("cannot reach"), "{out}");
}

#[test]
fn numkeys_other_than_one_is_the_module_arity_error() {
    let module = Server::start();
    let mut m = module.conn();
    let plain = Server::start_bare(&[]);
    let mut c = plain.conn();
    load_library(&mut c);
    for (family, cmds) in sources() {
        for (command, meta) in cmds {
            if !meta.contains("--@ keys 1") {
                continue;
            }
            // The module's reply to the command with no base key at all.
            let want = run(&mut m, &[command.as_str()]);
            assert!(want.contains("wrong number of arguments"), "{want}");
            let name = command.split('.').nth(1).unwrap().to_lowercase();
            let sha = load_script(&mut c, &format!("{family}/{name}.lua"));
            let f = function_name(&command);
            for keys in [&[][..], &["a", "b"][..]] {
                let n = keys.len();
                let mut args: Vec<&str> = keys.to_vec();
                args.extend(["x", "1000", "5"]);
                assert_eq!(
                    show(&evalsha(&mut c, &sha, n, &args)),
                    want,
                    "{command} {n}"
                );
                assert_eq!(show(&fcall(&mut c, &f, n, &args)), want, "{command} {n}");
            }
        }
    }
}

/// Returns the shell lines of lua-compat/README.md's SHA recipe: the
/// ```sh block that loads a script.
fn sha_recipe(readme: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(readme).unwrap();
    let mut blocks: Vec<Vec<String>> = Vec::new();
    let mut cur: Option<Vec<String>> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match cur.take() {
                Some(b) => blocks.push(b),
                None if line == "```sh" => cur = Some(Vec::new()),
                None => {}
            }
            continue;
        }
        if let Some(b) = cur.as_mut() {
            b.push(line.to_string());
        }
    }
    blocks
        .into_iter()
        .find(|b| b.iter().any(|l| l.contains("SCRIPT LOAD")))
        .expect("a ```sh block with SCRIPT LOAD")
}

#[test]
fn readme_sha_recipe_gives_the_sha_script_load_returns() {
    let srv = Server::start_bare(&[]);
    let mut c = srv.conn();
    load_library(&mut c);
    let recipe = sha_recipe(&root().join("lua-compat/README.md"));
    // The recipe runs as written, its redis-cli pointed at the test's
    // server; it must set SHA and call the script with EVALSHA.
    let script = format!(
        "set -euo pipefail\nredis-cli() {{ command redis-cli -p {} \"$@\"; }}\n{}\necho \"SHA=$SHA\"\n",
        srv.port,
        recipe.join("\n")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script}\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SHA="))
        .unwrap()
        .to_string();
    // The file the recipe loads, byte for byte through SCRIPT LOAD.
    let file = recipe
        .iter()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("lua-compat/") && w.ends_with(".lua"))
        })
        .expect("the recipe names a script")
        .to_string();
    let bytes = std::fs::read(root().join(&file)).unwrap();
    let want: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(&bytes)
        .query(&mut c)
        .unwrap();
    assert_eq!(got, want, "{file}");
    // Every line of output that is a SHA is that SHA (the offline one too).
    for l in stdout.lines() {
        let w = l.split_whitespace().next().unwrap_or("");
        if w.len() == 40 && w.bytes().all(|b| b.is_ascii_hexdigit()) {
            assert_eq!(w, want, "{stdout}");
        }
    }
    assert!(
        stdout.lines().filter(|l| l.starts_with(&want)).count() >= 1,
        "the recipe computes no SHA offline: {stdout}"
    );
    // What the old recipe did, `$(cat …)`, drops the final newline: another
    // SHA, which EVALSHA of the file's SHA would not find.
    let trimmed = String::from_utf8(bytes).unwrap();
    let old: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(trimmed.trim_end_matches('\n'))
        .query(&mut c)
        .unwrap();
    assert_ne!(old, want);
    // No README of a generated family still shows `$(cat …)`.
    for family in sources().keys() {
        for readme in [
            root().join("lua-compat/README.md"),
            root().join(format!("lua-compat/docs/{family}.md")),
        ] {
            let text = std::fs::read_to_string(&readme).unwrap_or_default();
            assert!(
                !text.contains("SCRIPT LOAD \"$(cat"),
                "{}: the $(cat …) recipe gives a wrong SHA",
                readme.display()
            );
        }
    }
}

/// The twins' integer parser (lua-compat/src/shared.lua) accepts exactly
/// what Redis's own string2ll accepts: checked against INCRBY on tricky
/// and random strings (through LOCK.CHECK's token, which takes any i64).
#[test]
fn shared_integer_parser_agrees_with_redis() {
    use rand::{Rng, SeedableRng};
    let srv = Server::start_bare(&[]);
    let mut c = srv.conn();
    load_library(&mut c);
    let mut cases: Vec<String> = [
        "0",
        "-0",
        "00",
        "01",
        "-01",
        "+1",
        " 1",
        "1 ",
        "1a",
        "",
        "-",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "9999999999999999999",
        "-9999999999999999999",
        "10000000000000000000",
        "-10000000000000000000",
        "1000000000000000000",
        "-1000000000000000000",
        "9007199254740993",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    for _ in 0..400 {
        let len = rng.gen_range(0..22);
        let mut s = String::new();
        if rng.gen_bool(0.4) {
            s.push('-');
        }
        for i in 0..len {
            let d = if i == 0 && rng.gen_bool(0.8) {
                rng.gen_range(1..10)
            } else {
                rng.gen_range(0..10)
            };
            s.push(char::from(b'0' + d));
        }
        cases.push(s);
    }
    for s in cases {
        run(&mut c, &["SET", "n", "0"]);
        let redis_ok = !run(&mut c, &["INCRBY", "n", &s]).starts_with("ERR");
        let twin = run(
            &mut c,
            &["FCALL", "hotpath_lock_check", "1", "k", &s, "NOW", "5"],
        );
        assert_eq!(twin == "0", redis_ok, "{s:?}: twin {twin}");
    }
}
