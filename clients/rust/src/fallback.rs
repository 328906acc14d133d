//! Servers without the module: the Lua twins as the Redis Functions
//! library `hotpath` (lua-compat/generated/hotpath.lua, loaded once with `FUNCTION
//! LOAD`; lua-compat/README.md).
//!
//! [`Backend::Functions`] always calls the library (`FCALL
//! hotpath_<family>_<command> numkeys key… arg…`). [`Backend::Fallback`],
//! the default of every entity, sends the module's command and, when the
//! server answers that it does not know it, the library's function: no
//! extra round trip with the module, one more without it (a backend is a
//! plain value with no memory; [`detect`] asks the server once and gives
//! the backend to use from then on).
//!
//! The twins give the same replies (RESP2 arrays where the module gives
//! RESP3 maps: the reply parsers take both), the same errors and the same
//! data.

use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Value};

use crate::entities::Backend;

/// The LIKE configs the twins take first (a script cannot read the
/// module's): pass the deployment's values. The default is the module's
/// defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LikeConfigs {
    /// `like-max-id`.
    pub max_id: u64,
    /// `like-promote-at`.
    pub promote_at: u64,
    /// `like-recent`.
    pub recent: u64,
}

impl Default for LikeConfigs {
    fn default() -> Self {
        LikeConfigs {
            max_id: 4_294_967_295,
            promote_at: 512,
            recent: 0,
        }
    }
}

impl Default for Backend {
    /// The module, falling back to the Functions library.
    fn default() -> Self {
        Backend::Fallback(LikeConfigs::default())
    }
}

/// `POLL.VOTE` → `hotpath_poll_vote`.
pub fn function_name(command: &str) -> String {
    format!("hotpath_{}", command.to_ascii_lowercase().replace('.', "_"))
}

/// The ARGV of a command's twin: the module's arguments without its keys
/// (`keys` are their positions in `argv`). RATE.MULTI drops its numkeys
/// too (the twin counts KEYS); RANK.MERGE keeps it; LIKE's twins take
/// their configs first.
pub fn twin_args(
    command: &str,
    argv: &[Vec<u8>],
    keys: &[usize],
    like: &LikeConfigs,
) -> Vec<Vec<u8>> {
    let upper = command.to_ascii_uppercase();
    let mut out: Vec<Vec<u8>> = Vec::new();
    if upper.starts_with("LIKE.") {
        for n in [like.max_id, like.promote_at, like.recent] {
            out.push(n.to_string().into_bytes());
        }
    }
    for (i, a) in argv.iter().enumerate() {
        if keys.contains(&i) || (upper == "RATE.MULTI" && i == 0) {
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// `FCALL <function> numkeys key… arg…` for a module command.
pub(crate) fn functions_command(
    name: &str,
    argv: &[Vec<u8>],
    keys: &[usize],
    like: &LikeConfigs,
) -> Cmd {
    let mut c = redis::cmd("FCALL");
    c.arg(function_name(name)).arg(keys.len());
    for &k in keys {
        c.arg(argv[k].as_slice());
    }
    for a in twin_args(name, argv, keys, like) {
        c.arg(a);
    }
    c
}

/// True for the error of a server that does not know a command.
pub fn is_unknown_command(e: &RedisError) -> bool {
    let text = format!("{} {}", e.code().unwrap_or(""), e.detail().unwrap_or(""));
    text.to_ascii_lowercase().contains("unknown command")
}

/// Runs a command on `backend`: [`Backend::Fallback`] retries on the
/// Functions library when the server does not know the module's command.
pub(crate) fn run<C: ConnectionLike>(
    backend: Backend,
    name: &str,
    argv: &[Vec<u8>],
    keys: &[usize],
    con: &mut C,
) -> RedisResult<Value> {
    let reply = backend.command(name, argv, keys).query::<Value>(con);
    match (backend, reply) {
        (Backend::Fallback(like), Err(e)) if is_unknown_command(&e) => {
            functions_command(name, argv, keys, &like).query::<Value>(con)
        }
        (_, reply) => reply,
    }
}

/// [`run`] over an async connection (crate feature `aio`).
#[cfg(feature = "aio")]
pub(crate) async fn run_async<C: redis::aio::ConnectionLike + Send>(
    backend: Backend,
    name: &str,
    argv: &[Vec<u8>],
    keys: &[usize],
    con: &mut C,
) -> RedisResult<Value> {
    let reply = backend
        .command(name, argv, keys)
        .query_async::<Value>(con)
        .await;
    match (backend, reply) {
        (Backend::Fallback(like), Err(e)) if is_unknown_command(&e) => {
            functions_command(name, argv, keys, &like)
                .query_async::<Value>(con)
                .await
        }
        (_, reply) => reply,
    }
}

/// Asks the server once whether it has the module (`COMMAND INFO
/// POLL.VOTE`): [`Backend::Module`] when it has, else
/// [`Backend::Functions`] with `like` (the library must be loaded).
pub fn detect<C: ConnectionLike>(con: &mut C, like: LikeConfigs) -> RedisResult<Backend> {
    let info: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("POLL.VOTE")
        .query(con)?;
    let known = match &info {
        Value::Array(items) => items.iter().any(|v| !matches!(v, Value::Nil)),
        Value::Map(items) => !items.is_empty(),
        _ => false,
    };
    Ok(if known {
        Backend::Module
    } else {
        Backend::Functions(like)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn twins_take_the_arguments_without_the_keys() {
        let like = LikeConfigs::default();
        assert_eq!(
            twin_args("POLL.VOTE", &v(&["p", "u", "c"]), &[0], &like),
            v(&["u", "c"])
        );
        assert_eq!(
            twin_args(
                "RATE.MULTI",
                &v(&["2", "a", "b", "LIMITS", "5", "9"]),
                &[1, 2],
                &like
            ),
            v(&["LIMITS", "5", "9"])
        );
        assert_eq!(
            twin_args(
                "RANK.MERGE",
                &v(&["d", "2", "a", "b", "AGGREGATE", "MAX"]),
                &[0, 2, 3],
                &like
            ),
            v(&["2", "AGGREGATE", "MAX"])
        );
        assert_eq!(
            twin_args("LIKE.COMMON", &v(&["p", "q"]), &[0, 1], &like),
            v(&["4294967295", "512", "0"])
        );
        assert_eq!(function_name("DELAYQ.POLL"), "hotpath_delayq_poll");
    }
}
