//! The parity tests' one harness: a family's Lua twins
//! (`lua-compat/generated/<family>/*.lua`) loaded one way, as EVALSHA
//! scripts or as the functions of the library (FCALL), and run beside the
//! module on mirrored keys: the module works on `m{k}`, the twin on `l{k}`,
//! on the same server, so that replies and data can be compared.
//!
//! A parity test loads [`Twins::of`] its family once per way
//! (`for via in [Via::Script, Via::Function]`), or [`Twins::here`] inside
//! a test wrapped by [`twins_via`](super::twins_via). [`Twins::both`] runs
//! one call both ways; [`mirrored_data`] / [`assert_same_data`] compare
//! what the two sides stored.

use std::path::PathBuf;

use redis::{Connection, RedisResult, ToRedisArgs, Value};

use super::{dump_keys, function_name, load_library, load_script, show, Via};

/// A family's twins as loaded one way: each command (upper case, e.g.
/// `LOCK.ACQUIRE`) with its script SHA (EVALSHA) or its function's name
/// in the library (FCALL).
pub struct Twins {
    via: Via,
    names: Vec<(String, String)>,
    /// Arguments every twin takes first, after its keys (LIKE's twins take
    /// the module's configs so: see [`Twins::set_argv`]).
    argv: Vec<String>,
}

impl Twins {
    /// Loads every twin of `family` (each file of
    /// `lua-compat/generated/<family>/`, named after its command) `via`
    /// EVALSHA or FCALL.
    pub fn of(c: &mut Connection, via: Via, family: &str) -> Twins {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("lua-compat/generated")
            .join(family);
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|f| f.strip_suffix(".lua").map(str::to_string))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no twins", dir.display());
        let scripts: Vec<(String, String)> = files
            .iter()
            .map(|f| {
                (
                    format!("{family}.{f}").to_ascii_uppercase(),
                    format!("{family}/{f}.lua"),
                )
            })
            .collect();
        Twins::from_files(c, via, &scripts)
    }

    /// [`Twins::of`] the way this test thread runs twins (set by
    /// [`twins_via`](super::twins_via); EVALSHA unless it says otherwise).
    pub fn here(c: &mut Connection, family: &str) -> Twins {
        Twins::of(c, super::current_via(), family)
    }

    /// Loads the twins listed as (command, path under
    /// `lua-compat/generated/`) `via` EVALSHA or FCALL: the older form
    /// (formerly `KeyedTwins::load`), kept for the parity files that still
    /// list their scripts.
    pub fn load(c: &mut Connection, via: Via, scripts: &[(&'static str, &'static str)]) -> Twins {
        let scripts: Vec<(String, String)> = scripts
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .collect();
        Twins::from_files(c, via, &scripts)
    }

    fn from_files(c: &mut Connection, via: Via, scripts: &[(String, String)]) -> Twins {
        if via == Via::Function {
            load_library(c);
        }
        let names = scripts
            .iter()
            .map(|(cmd, path)| {
                let name = match via {
                    Via::Script => load_script(c, path),
                    Via::Function => function_name(cmd),
                };
                (cmd.to_ascii_uppercase(), name)
            })
            .collect();
        Twins {
            via,
            names,
            argv: Vec::new(),
        }
    }

    /// Sets the arguments every twin takes first, after its keys: what
    /// the module reads from its configs (LIKE's `like-max-id`,
    /// `like-promote-at`, `like-recent`).
    pub fn set_argv(&mut self, argv: &[&str]) {
        self.argv = argv.iter().map(|a| a.to_string()).collect();
    }

    /// Returns how the twins are run.
    pub fn via(&self) -> Via {
        self.via
    }

    /// Returns the word that runs a twin: `EVALSHA` or `FCALL`.
    pub fn word(&self) -> &'static str {
        match self.via {
            Via::Script => "EVALSHA",
            Via::Function => "FCALL",
        }
    }

    /// Returns the SHA or the function name of `cmd`'s twin (any case).
    ///
    /// Panics when the family has no twin of that name.
    pub fn name(&self, cmd: &str) -> &str {
        self.names
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(cmd))
            .map(|(_, s)| s.as_str())
            .unwrap_or_else(|| panic!("no twin for {cmd}"))
    }

    /// Runs the twin of `cmd` with `numkeys` keys, then the arguments
    /// (`args` holds both, keys first), as EVALSHA or FCALL does; the
    /// arguments set by [`Twins::set_argv`] go between the two.
    pub fn call_keys<A: ToRedisArgs>(
        &self,
        c: &mut Connection,
        cmd: &str,
        numkeys: usize,
        args: &[A],
    ) -> RedisResult<Value> {
        let mut q = redis::cmd(self.word());
        q.arg(self.name(cmd)).arg(numkeys);
        for (i, a) in args.iter().enumerate() {
            if i == numkeys {
                q.arg(&self.argv);
            }
            q.arg(a);
        }
        if args.len() <= numkeys {
            q.arg(&self.argv);
        }
        q.query(c)
    }

    /// Runs the twin of `cmd` on one key (`args[0]`), like the module's
    /// command on its base key.
    pub fn call(&self, c: &mut Connection, cmd: &str, args: &[&str]) -> RedisResult<Value> {
        self.call_keys(c, cmd, 1, args)
    }

    /// Runs `cmd keys… rest…` through the module on `m{k}` for each key
    /// and through its twin on `l{k}`; returns both replies in readable
    /// form (see [`show`]), the module's with its key names read as the
    /// twin's (errors name the key).
    pub fn both(
        &self,
        c: &mut Connection,
        cmd: &str,
        keys: &[&str],
        rest: &[&str],
    ) -> (String, String) {
        let (mk, lk): (Vec<String>, Vec<String>) = keys.iter().map(|k| mirror(k)).unzip();
        let mut margs: Vec<&str> = vec![cmd];
        margs.extend(mk.iter().map(String::as_str));
        margs.extend(rest.iter().copied());
        let mut module = show(&super::cmd(c, &margs));
        for (m, l) in mk.iter().zip(&lk) {
            module = module.replace(m.as_str(), l);
        }
        let mut largs: Vec<&str> = lk.iter().map(String::as_str).collect();
        largs.extend(rest.iter().copied());
        let twin = show(&self.call_keys(c, cmd, lk.len(), &largs));
        (module, twin)
    }

    /// [`Twins::both`], asserting the two replies are the same (`what`
    /// names the step in the failure); returns the reply.
    pub fn assert_both(
        &self,
        c: &mut Connection,
        what: &str,
        cmd: &str,
        keys: &[&str],
        rest: &[&str],
    ) -> String {
        let (module, twin) = self.both(c, cmd, keys, rest);
        assert_eq!(module, twin, "{what}: {cmd} {keys:?} {rest:?}");
        module
    }
}

/// Returns the module's key and the twin's key for `k`: `m{k}`, `l{k}`.
pub fn mirror(k: &str) -> (String, String) {
    (format!("m{{{k}}}"), format!("l{{{k}}}"))
}

/// Returns the module's data (every key under `m{*`, named as the twin's)
/// and the twin's (every key under `l{*`), as [`dump_keys`] shows them.
pub fn mirrored_data(c: &mut Connection) -> (Vec<String>, Vec<String>) {
    let m: Vec<String> = dump_keys(c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    (m, dump_keys(c, "l{*"))
}

/// Asserts the module and the twins stored the same data
/// ([`mirrored_data`]); `what` names the step in the failure.
pub fn assert_same_data(c: &mut Connection, what: &str) {
    let (m, l) = mirrored_data(c);
    assert_eq!(m, l, "{what}");
}
