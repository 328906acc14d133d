//! Entity handles: a base key plus the optional pinned clock (`NOW`), with
//! one method per command. Every method takes any `redis::ConnectionLike`.
//!
//! Each command is declared once, in a `methods!` block: the arguments, the
//! command they build and the parser of its reply. The macro makes of it
//! the blocking method on the handle (`poll.vote(&mut con, …)`), the
//! command alone for pipelines (`poll.cmd().vote(…)`, a `redis::Cmd`) and,
//! with the crate feature `aio`, the async method (`poll.aio().vote(&mut
//! con, …).await`) on any `redis::aio::ConnectionLike`. A new command is
//! one more entry in its handle's block.
//!
//! Each family's handle is a file of its own, `entities/<family>.rs`
//! (its `entity!`, its option types and its `methods!` block, with `use
//! super::*;`); the build script (build.rs) lists the files of this folder
//! into the module list included at the end of this file, so a new family
//! adds its file and edits nothing else. Every public item of a family file
//! is re-exported here, and by the crate (`hotpath_client::Poll`).

use std::ops::Deref;

use redis::{Cmd, ConnectionLike, FromRedisValue, RedisResult, ToRedisArgs, Value};

use crate::replies::{self as r, *};

/// Builds the Redis command for a hotpath command. `Module` sends the
/// module's own commands; `Functions` calls the Lua twins' Functions
/// library, for servers without the module; `Fallback` (the default)
/// sends the module's and falls back to the library's (fallback.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    Module,
    /// `FCALL hotpath_<family>_<command>`; LIKE's twins take the configs.
    Functions(crate::fallback::LikeConfigs),
    /// The module, and the library when the server does not know it.
    Fallback(crate::fallback::LikeConfigs),
}

impl Backend {
    /// Returns the command `name argv…`; `keys` are the positions of the
    /// Redis keys in `argv` (what a Functions backend passes as keys).
    pub fn command(&self, name: &str, argv: &[Vec<u8>], keys: &[usize]) -> Cmd {
        match self {
            Backend::Functions(like) => crate::fallback::functions_command(name, argv, keys, like),
            Backend::Module | Backend::Fallback(_) => {
                let mut c = redis::cmd(name);
                for a in argv {
                    c.arg(a.as_slice());
                }
                c
            }
        }
    }
}

/// A command being built.
struct Call {
    name: &'static str,
    argv: Vec<Vec<u8>>,
    keys: Vec<usize>,
}

impl Call {
    fn new(name: &'static str, key: &str) -> Call {
        Call {
            name,
            argv: vec![key.as_bytes().to_vec()],
            keys: vec![0],
        }
    }

    fn arg<T: ToRedisArgs>(mut self, a: T) -> Call {
        self.argv.extend(a.to_redis_args());
        self
    }

    fn key(mut self, k: &str) -> Call {
        self.keys.push(self.argv.len());
        self.argv.push(k.as_bytes().to_vec());
        self
    }

    fn opt<T: ToRedisArgs>(self, name: &str, v: Option<T>) -> Call {
        match v {
            Some(v) => self.arg(name).arg(v),
            None => self,
        }
    }

    fn flag(self, name: &str, on: bool) -> Call {
        if on {
            self.arg(name)
        } else {
            self
        }
    }

    fn run<C: ConnectionLike>(self, backend: Backend, con: &mut C) -> RedisResult<Value> {
        crate::fallback::run(backend, self.name, &self.argv, &self.keys, con)
    }

    #[cfg(feature = "aio")]
    async fn run_async<C: redis::aio::ConnectionLike + Send>(
        self,
        backend: Backend,
        con: &mut C,
    ) -> RedisResult<Value> {
        crate::fallback::run_async(backend, self.name, &self.argv, &self.keys, con).await
    }

    /// The command on `backend` (the module's for [`Backend::Fallback`]).
    fn cmd(self, backend: Backend) -> Cmd {
        backend.command(self.name, &self.argv, &self.keys)
    }
}

/// A handle's commands as `redis::Cmd`s, to send in a `redis::pipe()` (or
/// a transaction, `pipe().atomic()`) and read with `query::<(…)>` into the
/// reply types: `poll.cmd().vote("user:1", "alice")`. The command is the
/// handle's backend's ([`Backend::Fallback`] sends the module's).
#[derive(Clone, Copy, Debug)]
pub struct CmdBuilder<'a, H>(&'a H);

impl<H> Deref for CmdBuilder<'_, H> {
    type Target = H;
    fn deref(&self) -> &H {
        self.0
    }
}

/// A handle's commands over an async connection (crate feature `aio`):
/// any `redis::aio::ConnectionLike`, such as `MultiplexedConnection`,
/// `ConnectionManager` or the async `cluster_async::ClusterConnection`:
/// `poll.aio().vote(&mut con, "user:1", "alice").await`. The same
/// arguments, replies and backends as the blocking methods.
#[cfg(feature = "aio")]
#[derive(Clone, Copy, Debug)]
pub struct AsyncHandle<'a, H>(&'a H);

#[cfg(feature = "aio")]
impl<H> Deref for AsyncHandle<'_, H> {
    type Target = H;
    fn deref(&self) -> &H {
        self.0
    }
}

/// Declares a handle's commands once; makes the blocking method, the
/// [`CmdBuilder`] method and the [`AsyncHandle`] method. Each entry:
/// `fn name(&self, args…) -> Reply { builds a Call } => parser;` where the
/// parser reads the `Value` into `Reply`.
macro_rules! methods {
    ($handle:ident {
        $(
            $(#[$doc:meta])*
            fn $name:ident(&$s:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty
                $body:block => $parse:expr;
        )*
    }) => {
        impl $handle {
            $(
                $(#[$doc])*
                pub fn $name<C: ConnectionLike>(&$s, con: &mut C $(, $arg: $ty)*) -> RedisResult<$ret> {
                    let call: Call = $body;
                    let parse: fn(&Value) -> RedisResult<$ret> = $parse;
                    parse(&call.run($s.backend, con)?)
                }
            )*
        }

        impl CmdBuilder<'_, $handle> {
            $(
                $(#[$doc])*
                pub fn $name(&$s $(, $arg: $ty)*) -> Cmd {
                    let call: Call = $body;
                    call.cmd($s.backend)
                }
            )*
        }

        #[cfg(feature = "aio")]
        impl AsyncHandle<'_, $handle> {
            $(
                $(#[$doc])*
                pub async fn $name<C: redis::aio::ConnectionLike + Send>(
                    &$s,
                    con: &mut C
                    $(, $arg: $ty)*
                ) -> RedisResult<$ret> {
                    let call: Call = $body;
                    let parse: fn(&Value) -> RedisResult<$ret> = $parse;
                    parse(&call.run_async($s.backend, con).await?)
                }
            )*
        }
    };
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            key: String,
            now: Option<i64>,
            idem: Option<String>,
            backend: Backend,
        }

        impl $name {
            /// A handle on the entity with base key `key`.
            pub fn new(key: impl Into<String>) -> Self {
                $name { key: key.into(), now: None, idem: None, backend: Backend::default() }
            }

            /// The same handle with a retry-safe token: the writes that
            /// take `IDEM token` (docs/idem.md) send `IDEM token`, so that
            /// resending a write with the same handle replays its first
            /// reply instead of writing twice. Use one token per logical
            /// write. Both backends (the Lua twins take the option too).
            pub fn with_idem(&self, token: impl Into<String>) -> Self {
                $name { idem: Some(token.into()), ..self.clone() }
            }

            /// The same handle with the clock pinned: commands that take
            /// `NOW` send `NOW now_ms` (tests, replays).
            pub fn at(&self, now_ms: i64) -> Self {
                $name { now: Some(now_ms), ..self.clone() }
            }

            /// The same handle on another backend.
            pub fn with_backend(&self, backend: Backend) -> Self {
                $name { backend, ..self.clone() }
            }

            /// The base key.
            pub fn key(&self) -> &str {
                &self.key
            }

            /// The commands as `redis::Cmd`s, for pipelines.
            pub fn cmd(&self) -> CmdBuilder<'_, $name> {
                CmdBuilder(self)
            }

            /// The commands over an async connection.
            #[cfg(feature = "aio")]
            pub fn aio(&self) -> AsyncHandle<'_, $name> {
                AsyncHandle(self)
            }
        }
    };
}

/// A reply of 1 (yes) or 0 (no).
fn one(v: &Value) -> RedisResult<bool> {
    Ok(int(v)? == 1)
}

// `#[path = …] mod <family>; pub use <family>::*;` for every file of this
// folder but mod.rs (build.rs).
include!(concat!(env!("OUT_DIR"), "/entities.rs"));
