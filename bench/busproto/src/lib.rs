//! A prototype, not part of hotpath: the smallest module-side fan-out over
//! the Redis Cluster bus, built to measure it against a client-side
//! fan-out (docs/spread.md, "Fan-out: client or cluster bus").
//!
//! - `BUSPROTO.LOCAL` replies this node's key count (`RM_DbSize`): the
//!   per-shard work, the same in both designs.
//! - `BUSPROTO.FANOUT timeout-ms [pad-bytes]` blocks the client, sends a
//!   request (message type 1, an 8-byte request id plus `pad-bytes`) to
//!   every other master that is not failing, adds each answer (type 2:
//!   the id and the node's key count) to its own count, and replies the
//!   total once every master answered; after `timeout-ms` it replies an
//!   error naming how many answered. A partial total is never returned.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use redis_module::{raw, Context, RedisResult, RedisString, RedisValue, Status};

const MSG_REQUEST: u8 = 1;
const MSG_ANSWER: u8 = 2;

struct Pending {
    bc: *mut raw::RedisModuleBlockedClient,
    waiting: usize,
    asked: usize,
    total: i64,
}

// The handles are only touched on the main thread (commands, bus
// receivers and blocked-client callbacks all run there).
unsafe impl Send for Pending {}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static PENDING: Mutex<Option<HashMap<u64, Pending>>> = Mutex::new(None);

fn with_pending<R>(f: impl FnOnce(&mut HashMap<u64, Pending>) -> R) -> R {
    let mut guard = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

fn dbsize(ctx: *mut raw::RedisModuleCtx) -> i64 {
    unsafe { raw::RedisModule_DbSize.unwrap()(ctx) as i64 }
}

fn local(ctx: &Context, _args: Vec<RedisString>) -> RedisResult {
    Ok(RedisValue::Integer(dbsize(ctx.ctx)))
}

/// Returns the ids (NUL-terminated) of the other masters not flagged
/// failing.
fn other_masters(ctx: *mut raw::RedisModuleCtx) -> Vec<CString> {
    let mut out = Vec::new();
    unsafe {
        let mut n: usize = 0;
        let list = raw::RedisModule_GetClusterNodesList.unwrap()(ctx, &mut n);
        if list.is_null() {
            return out;
        }
        for i in 0..n {
            let p = *list.add(i);
            let bytes =
                std::slice::from_raw_parts(p.cast::<u8>(), raw::REDISMODULE_NODE_ID_LEN as usize);
            let id = CString::new(bytes.to_vec()).unwrap();
            let mut flags: c_int = 0;
            let ok = raw::RedisModule_GetClusterNodeInfo.unwrap()(
                ctx,
                id.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut flags,
            );
            let f = flags as u32;
            if ok == raw::REDISMODULE_OK as c_int
                && f & raw::REDISMODULE_NODE_MASTER != 0
                && f & raw::REDISMODULE_NODE_MYSELF == 0
                && f & (raw::REDISMODULE_NODE_PFAIL | raw::REDISMODULE_NODE_FAIL) == 0
            {
                out.push(id);
            }
        }
        raw::RedisModule_FreeClusterNodesList.unwrap()(list);
    }
    out
}

fn fanout(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let timeout: i64 = args
        .get(1)
        .map(|a| a.parse_integer())
        .transpose()?
        .unwrap_or(1000);
    let pad: usize = args
        .get(2)
        .map(|a| a.parse_integer())
        .transpose()?
        .unwrap_or(0)
        .clamp(0, 1 << 20) as usize;
    let targets = other_masters(ctx.ctx);
    let own = dbsize(ctx.ctx);
    if targets.is_empty() {
        return Ok(RedisValue::Integer(own));
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let bc = unsafe {
        raw::RedisModule_BlockClient.unwrap()(
            ctx.ctx,
            Some(reply_total),
            Some(reply_timeout),
            Some(free_total),
            timeout,
        )
    };
    with_pending(|p| {
        p.insert(
            id,
            Pending {
                bc,
                waiting: targets.len(),
                asked: targets.len(),
                total: own,
            },
        )
    });
    let mut msg = id.to_le_bytes().to_vec();
    msg.resize(8 + pad, 0);
    for t in &targets {
        unsafe {
            raw::RedisModule_SendClusterMessage.unwrap()(
                ctx.ctx,
                t.as_ptr(),
                MSG_REQUEST,
                msg.as_ptr().cast::<c_char>(),
                msg.len() as u32,
            );
        }
    }
    Ok(RedisValue::NoReply)
}

fn sender(sender_id: *const c_char) -> CString {
    let bytes = unsafe {
        std::slice::from_raw_parts(
            sender_id.cast::<u8>(),
            raw::REDISMODULE_NODE_ID_LEN as usize,
        )
    };
    CString::new(bytes.to_vec()).unwrap()
}

extern "C" fn on_request(
    ctx: *mut raw::RedisModuleCtx,
    sender_id: *const c_char,
    _type: u8,
    payload: *const u8,
    len: u32,
) {
    if len < 8 {
        return;
    }
    let mut answer = unsafe { std::slice::from_raw_parts(payload, 8) }.to_vec();
    answer.extend_from_slice(&dbsize(ctx).to_le_bytes());
    let to = sender(sender_id);
    unsafe {
        raw::RedisModule_SendClusterMessage.unwrap()(
            ctx,
            to.as_ptr(),
            MSG_ANSWER,
            answer.as_ptr().cast::<c_char>(),
            answer.len() as u32,
        );
    }
}

extern "C" fn on_answer(
    _ctx: *mut raw::RedisModuleCtx,
    _sender_id: *const c_char,
    _type: u8,
    payload: *const u8,
    len: u32,
) {
    if len < 16 {
        return;
    }
    let bytes = unsafe { std::slice::from_raw_parts(payload, 16) };
    let id = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let value = i64::from_le_bytes(bytes[8..].try_into().unwrap());
    let done = with_pending(|p| {
        let entry = p.get_mut(&id)?;
        entry.total += value;
        entry.waiting -= 1;
        if entry.waiting == 0 {
            p.remove(&id)
        } else {
            None
        }
    });
    if let Some(done) = done {
        let total = Box::into_raw(Box::new(done.total)).cast::<c_void>();
        unsafe { raw::RedisModule_UnblockClient.unwrap()(done.bc, total) };
    }
}

extern "C" fn reply_total(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    unsafe {
        let total = raw::RedisModule_GetBlockedClientPrivateData.unwrap()(ctx).cast::<i64>();
        raw::RedisModule_ReplyWithLongLong.unwrap()(ctx, *total);
    }
    raw::REDISMODULE_OK as c_int
}

extern "C" fn reply_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let bc = unsafe { raw::RedisModule_GetBlockedClientHandle.unwrap()(ctx) };
    let gone = with_pending(|p| {
        let id = p.iter().find(|(_, e)| e.bc == bc).map(|(id, _)| *id)?;
        p.remove(&id)
    });
    let msg = match &gone {
        Some(e) => format!(
            "ERR busproto: timeout, {} of {} masters answered",
            e.asked - e.waiting,
            e.asked
        ),
        None => "ERR busproto: timeout".to_string(),
    };
    let c = CString::new(msg).unwrap();
    unsafe {
        raw::RedisModule_ReplyWithError.unwrap()(ctx, c.as_ptr());
        // The handle must still be released; late answers find no entry.
        if gone.is_some() {
            raw::RedisModule_UnblockClient.unwrap()(bc, std::ptr::null_mut());
        }
    }
    raw::REDISMODULE_OK as c_int
}

extern "C" fn free_total(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        drop(unsafe { Box::from_raw(data.cast::<i64>()) });
    }
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    unsafe {
        let reg = raw::RedisModule_RegisterClusterMessageReceiver.unwrap();
        reg(ctx.ctx, MSG_REQUEST, Some(on_request));
        reg(ctx.ctx, MSG_ANSWER, Some(on_answer));
    }
    Status::Ok
}

redis_module::redis_module! {
    name: "busproto",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    commands: [
        ["busproto.local", local, "readonly", 0, 0, 0, ""],
        ["busproto.fanout", fanout, "readonly", 0, 0, 0, ""],
    ],
}
