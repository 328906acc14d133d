//! A small safe wrapper over the raw key API: the [`Key`] handle (open,
//! close, type, expiry), derived and kept key names here; one file per
//! Redis type (string, hash, zset, list), scans, and `RedisModule_Call`. `redis-module` 2.0.8 has no safe sorted-set API and hides
//! the raw pointer of its writable keys, so every family opens keys here.
//!
//! A [`Key`] closes itself on drop. Reads on a missing key answer "empty"
//! instead of touching a null handle.
//!
//! Modified-key signals: the module sets `NO_IMPLICIT_SIGNAL_MODIFIED`, so
//! opening a key for writing no longer tells `WATCH` and client-side
//! caching that it changed; every method here that changes a key marks it,
//! and the drop signals only marked keys. A refused vote, a denied rate
//! check or a repeated like thus leaves a client's `WATCH` intact.

pub mod call;
mod hash;
mod list;
mod scan;
mod string;
mod zset;

pub use hash::{Field, HashField};
pub use scan::ZScan;
pub use zset::zadd;

use std::cell::Cell;
use std::ptr;

use redis_module::{raw, Context, RedisError, RedisString};

use crate::error;

/// The Redis type a key holds, as the families care about it.
pub use redis_module::KeyType;

/// An open key; closed on drop.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    ptr: *mut raw::RedisModuleKey,
    /// Released on drop when `owns_name` (see [`Key::open_kept`]).
    name: std::mem::ManuallyDrop<RedisString>,
    owns_name: bool,
    modified: Cell<bool>,
}

/// A key name built on the stack when short (no allocation on hot paths).
pub type Name = smallvec::SmallVec<[u8; 96]>;

/// Returns `B:<suffix>`, the name of a family's derived key.
pub fn derived(base: &[u8], suffix: &str) -> Vec<u8> {
    derived_name(base, suffix).to_vec()
}

/// Returns `B:<suffix>` on the stack when short.
pub fn derived_name(base: &[u8], suffix: &str) -> Name {
    let mut v = Name::with_capacity(base.len() + 1 + suffix.len());
    v.extend_from_slice(base);
    v.push(b':');
    v.extend_from_slice(suffix.as_bytes());
    v
}

/// The mode to open a key in.
#[inline]
fn mode(write: bool) -> raw::KeyMode {
    if write {
        raw::KeyMode::READ | raw::KeyMode::WRITE
    } else {
        raw::KeyMode::READ
    }
}

fn rstr(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> RedisString {
    RedisString::create_from_slice(ctx, bytes)
}

/// Returns `v` as a Redis string, made by Redis directly from the integer
/// (no text formatting on our side), for a value to store or replicate.
#[inline]
pub fn int_string(ctx: &Context, v: i64) -> RedisString {
    // SAFETY: the function is part of the module API on every supported
    // server; the string it returns is owned by the RedisString, which
    // frees it on drop.
    let p = unsafe {
        raw::RedisModule_CreateStringFromLongLong.unwrap()(ctx.ctx, v as std::os::raw::c_longlong)
    };
    RedisString::from_redis_module_string(ctx.ctx, p)
}

impl Key {
    /// Opens `name` for reading, or for reading and writing.
    pub fn open(ctx: &Context, name: &[u8], write: bool) -> Key {
        let s = rstr(ctx.ctx, name);
        let ptr = raw::open_key(ctx.ctx, s.inner, mode(write));
        Key {
            ctx: ctx.ctx,
            ptr,
            name: std::mem::ManuallyDrop::new(s),
            owns_name: true,
            modified: Cell::new(false),
        }
    }

    /// Records that the key changed, for the modified-key signal on drop.
    fn touch(&self) {
        self.modified.set(true);
    }

    /// Returns `changed` after recording it.
    fn touch_if(&self, changed: bool) -> bool {
        if changed {
            self.touch();
        }
        changed
    }

    /// Opens the derived key `base:suffix`.
    pub fn derived(ctx: &Context, base: &[u8], suffix: &str, write: bool) -> Key {
        Key::open(ctx, &derived_name(base, suffix), write)
    }

    /// Returns the Redis type held by the key (`Empty` when missing).
    pub fn kind(&self) -> KeyType {
        if self.ptr.is_null() {
            return KeyType::Empty;
        }
        unsafe { raw::RedisModule_KeyType.unwrap()(self.ptr) }.into()
    }

    /// Returns true if the key exists.
    pub fn exists(&self) -> bool {
        self.kind() != KeyType::Empty
    }

    /// Returns whether the key exists, or `WRONGTYPE` when it holds another
    /// type than `want`.
    pub fn check(&self, want: KeyType) -> Result<bool, RedisError> {
        match self.kind() {
            KeyType::Empty => Ok(false),
            k if k == want => Ok(true),
            _ => Err(error::wrongtype()),
        }
    }

    /// Returns the length of the value (members, fields, bytes, elements).
    pub fn len(&self) -> usize {
        if self.ptr.is_null() {
            return 0;
        }
        unsafe { raw::RedisModule_ValueLength.unwrap()(self.ptr) }
    }

    /// Returns true when the key is missing or empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deletes the key.
    pub fn delete(&self) {
        if !self.ptr.is_null() && self.exists() {
            unsafe { raw::RedisModule_DeleteKey.unwrap()(self.ptr) };
            self.touch();
        }
    }

    /// Removes the key's expiry (no-op when missing or persistent).
    pub fn persist(&self) {
        if self.exists() && self.expire_ms() >= 0 {
            unsafe {
                raw::RedisModule_SetExpire.unwrap()(self.ptr, raw::REDISMODULE_NO_EXPIRE.into())
            };
            self.touch();
        }
    }

    /// Sets the key to expire in `ms` milliseconds (no-op when missing).
    pub fn set_expire_ms(&self, ms: i64) {
        if self.exists() && ms > 0 {
            unsafe { raw::RedisModule_SetExpire.unwrap()(self.ptr, ms) };
            self.touch();
        }
    }

    /// Returns the remaining time to live in ms, or -1 when none.
    pub fn expire_ms(&self) -> i64 {
        if !self.exists() {
            return -1;
        }
        unsafe { raw::RedisModule_GetExpire.unwrap()(self.ptr) }
    }

    /// Returns the key's expiry as a unix-ms instant, or None when the key
    /// is missing or has no expiry.
    pub fn abs_expire_ms(&self) -> Option<i64> {
        if !self.exists() {
            return None;
        }
        let at = match unsafe { raw::RedisModule_GetAbsExpire } {
            Some(get) => unsafe { get(self.ptr) },
            None => {
                let rel = self.expire_ms();
                if rel < 0 {
                    return None;
                }
                crate::util::now_ms() + rel
            }
        };
        (at >= 0).then_some(at)
    }

    /// Sets the key to expire at the unix-ms instant `at` (no-op when the
    /// key is missing).
    pub fn set_abs_expire_ms(&self, at: i64) {
        if !self.exists() {
            return;
        }
        match unsafe { raw::RedisModule_SetAbsExpire } {
            Some(set) => unsafe {
                set(self.ptr, at);
                self.touch();
            },
            None => self.set_expire_ms((at - crate::util::now_ms()).max(1)),
        }
    }

    /// Opens the key the client named; the name is shared, not copied (a
    /// copy costs an allocation and a string object per call).
    pub fn open_arg(ctx: &Context, name: &RedisString, write: bool) -> Key {
        let ptr = raw::open_key(ctx.ctx, name.inner, mode(write));
        Self::retaining(ctx, name, ptr)
    }

    /// A handle on `ptr` that retains `name` (a reference count, no copy)
    /// for as long as it lives.
    fn retaining(ctx: &Context, name: &RedisString, ptr: *mut raw::RedisModuleKey) -> Key {
        Key {
            ctx: ctx.ctx,
            ptr,
            name: std::mem::ManuallyDrop::new(RedisString::new(
                std::ptr::NonNull::new(ctx.ctx),
                name.inner,
            )),
            owns_name: true,
            modified: Cell::new(false),
        }
    }

    /// Opens a key by a name the module keeps between commands (a hot
    /// entity's kept names), without retaining the name for the handle:
    /// `RM_OpenKey` holds its own reference to the name for as long as the
    /// key is open (Redis 7+, Valkey), which covers the modified-key signal
    /// on drop. Saves a retain and a release (about 100 instructions) per
    /// key. A read of a missing key gets a null handle, which holds no
    /// reference: then the handle retains the name itself, as
    /// [`Key::open_arg`] does, so that `name()` stays valid for as long as
    /// the handle, whatever happens to `name`.
    pub fn open_kept(ctx: &Context, name: &RedisString, write: bool) -> Key {
        let ptr = raw::open_key(ctx.ctx, name.inner, mode(write));
        if ptr.is_null() {
            return Self::retaining(ctx, name, ptr);
        }
        Key {
            ctx: ctx.ctx,
            ptr,
            name: std::mem::ManuallyDrop::new(RedisString::from_redis_module_string(
                ctx.ctx, name.inner,
            )),
            owns_name: false,
            modified: Cell::new(false),
        }
    }

    /// Records a change, so that the key is signalled as modified when it
    /// is closed (the methods that change a key record it themselves).
    pub fn mark_modified(&self) {
        self.touch();
    }

    /// Returns the key's name as the Redis string it was opened with.
    pub fn name(&self) -> &RedisString {
        &self.name
    }

    /// Deletes the key, freeing a large value in the background as
    /// `UNLINK` does.
    pub fn unlink(&self) {
        if !self.ptr.is_null() && self.exists() {
            match unsafe { raw::RedisModule_UnlinkKey } {
                Some(unlink) => unsafe { unlink(self.ptr) },
                None => unsafe { raw::RedisModule_DeleteKey.unwrap()(self.ptr) },
            };
            self.touch();
        }
    }

    /// Opens the derived key `base:suffix` with a name kept from a recent
    /// command when one built the same name (a hot command on one entity:
    /// votes on a poll, grabs of a packet, scores on a board), instead of
    /// creating and freeing a Redis string per key per call.
    pub fn derived_hot(ctx: &Context, base: &[u8], suffix: &'static str, write: bool) -> Key {
        Key::derived_hot_at(ctx, base, suffix, None, write)
    }

    /// [`Key::derived_hot`] for `base:<suffix><index>` when `index` is
    /// given (a shard or chunk: `B:cand:3`, `B:bits:12`).
    pub fn derived_hot_at(
        ctx: &Context,
        base: &[u8],
        suffix: &'static str,
        index: Option<u64>,
        write: bool,
    ) -> Key {
        // Opened without retaining the name (see `open_kept`): the open
        // key holds its own reference, so a kept name the table drops
        // while the key is open, or a name built for this call alone, lives
        // until the key is closed.
        with_kept_name(base, suffix, index, |name| Key::open_kept(ctx, name, write))
    }
}

/// Sets an absolute expiry (unix ms) on a key that has none, through the
/// open key itself: a `PEXPIREAT` through `ctx.call` while the key is open
/// can reallocate its value under the handle (Valkey 8+ embeds the expiry
/// in the object) and crash the server when the key is closed. An instant
/// already past deletes the key at once, as `PEXPIREAT` does. The command
/// that calls this replicates itself with the same instant, so replicas and
/// the AOF reach the same state.
pub fn expire_at_if_unset(key: &Key, at_ms: i64) {
    if at_ms > 0 && key.exists() && key.expire_ms() < 0 {
        if at_ms <= crate::util::now_ms() {
            key.delete();
        } else {
            key.set_abs_expire_ms(at_ms);
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if self.modified.get() {
            // No unwrap in a drop: a panic here could abort the server.
            if let Some(signal) = unsafe { raw::RedisModule_SignalModifiedKey } {
                unsafe { signal(self.ctx, self.name.inner) };
            }
        }
        if !self.ptr.is_null() {
            raw::close_key(self.ptr);
        }
        if self.owns_name {
            // SAFETY: dropped once, here; never used after.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.name) };
        }
    }
}

// ---- derived key names kept between commands: a hot command on the same
// entity (votes on one poll, scores on one board) reuses the names it built
// last time instead of creating and freeing a Redis string per key per call
// (about 500 instructions each) ----

/// A name kept between commands: the base key and the suffix it was built
/// from (the suffix by address and length: callers pass literals), and the
/// immutable Redis string `B:<suffix>`, created without a context so that
/// it outlives the command. Redis only reads it: `RM_OpenKey` takes its own
/// reference for as long as the key is open.
struct KeptName {
    /// The full hash of the name, compared before anything else.
    hash: u64,
    base: Box<[u8]>,
    suffix: &'static str,
    index: Option<u64>,
    name: RedisString,
}

thread_local! {
    /// Recently built names, in pairs of slots chosen by [`name_hash`];
    /// main thread only, like every command.
    static NAMES: std::cell::RefCell<Vec<Option<KeptName>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// How many recent names are kept (a power of two), in pairs: a name may
/// sit in either slot of its pair, so two names of one command that hash
/// alike do not evict each other on every call.
const NAMES_KEPT: usize = 256;

/// The hash of `B:<suffix>[<index>]` (its top bits choose a pair of
/// slots): a multiplicative hash of
/// the base's length and last eight bytes (entities differ there:
/// `post:1234`, `bag{7}`), the suffix's address and the index; a few
/// instructions, where hashing every byte cost as much as building the
/// name.
fn name_hash(base: &[u8], suffix: &'static str, index: Option<u64>) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let tail = match base.len() {
        n if n >= 8 => u64::from_le_bytes(base[n - 8..].try_into().unwrap_or_default()),
        _ => base.iter().fold(0u64, |h, &b| (h << 8) | b as u64),
    };
    let mut x = (tail ^ ((base.len() as u64) << 56)).wrapping_mul(K);
    x ^= (suffix.as_ptr() as u64).rotate_left(29)
        ^ index.map_or(0, |i| i.wrapping_add(1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    (x ^ (x >> 32)).wrapping_mul(K)
}

/// Runs `f` on the kept name `base:<suffix>[<index>]`, building it first
/// when it is not kept.
fn with_kept_name<R>(
    base: &[u8],
    suffix: &'static str,
    index: Option<u64>,
    f: impl FnOnce(&RedisString) -> R,
) -> R {
    let hash = name_hash(base, suffix, index);
    let first = 2 * ((hash >> 57) as usize & (NAMES_KEPT / 2 - 1));
    let build = || {
        let mut name = derived_name(base, suffix);
        if let Some(i) = index {
            name.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        }
        RedisString::create_from_slice(ptr::null_mut(), &name)
    };
    NAMES.with(|n| {
        // `f` runs with the table borrowed; should it ever come back here
        // (a server event opening a key), that call builds its own name.
        let Ok(mut n) = n.try_borrow_mut() else {
            return f(&build());
        };
        if n.is_empty() {
            n.resize_with(NAMES_KEPT, || None);
        }
        let is = |e: &Option<KeptName>| {
            matches!(e, Some(k) if k.hash == hash
                && ptr::eq(k.suffix, suffix)
                && k.index == index
                && *k.base == *base)
        };
        // The pair keeps its most recent name first: a hit in the second
        // slot moves forward, a new name goes first and the older one of
        // the pair is dropped.
        if !is(&n[first]) {
            n.swap(first, first + 1);
            if !is(&n[first]) {
                n[first] = None;
            }
        }
        let k = n[first].get_or_insert_with(|| KeptName {
            hash,
            base: base.into(),
            suffix,
            index,
            name: build(),
        });
        f(&k.name)
    })
}
