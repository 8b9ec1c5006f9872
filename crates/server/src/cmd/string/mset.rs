//! MSET key value [key value ...] and MSETNX: set many keys atomically.
//!
//! Both lock every shard involved at once (in ascending order), so no
//! reader sees some of the keys set and others not, and MSETNX's "none
//! exists" check and its writes are one step. Replaced values are freed
//! once the shards are released.

use bytes::Bytes;
use keel_store::{Entry, Key};

use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};

/// MSET.
pub const MSET: Spec = Spec {
    name: "mset",
    arity: -3,
    flags: &["write", "denyoom"],
    keys: (1, -1, 2),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Set multiple keys to multiple values",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    run: mset,
    ..BASE
};

/// MSETNX.
pub const MSETNX: Spec = Spec {
    name: "msetnx",
    arity: -3,
    flags: &["write", "denyoom"],
    keys: (1, -1, 2),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Set multiple keys to multiple values, only if none of the keys exist",
    since: "1.0.1",
    complexity: "O(N) where N is the number of keys to set.",
    run: msetnx,
    ..BASE
};

fn mset(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    set_all(ctx, args, false)?;
    ctx.w().ok();
    Ok(())
}

fn msetnx(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let stored = set_all(ctx, args, true)?;
    ctx.w().integer(stored as i64);
    Ok(())
}

/// Sets every pair; with `only_if_none_exist`, sets nothing if any key
/// exists. Returns whether the keys were set.
fn set_all(ctx: &mut Ctx, args: &[Bytes], only_if_none_exist: bool) -> Result<bool, Error> {
    if args.len().is_multiple_of(2) {
        return Err(format!(
            "ERR wrong number of arguments for '{}' command",
            args_name(only_if_none_exist)
        )
        .into());
    }
    // Each key is hashed once: for its shard's lock, then to find it there.
    let db = ctx.db();
    let keys: Vec<Key> = args[1..].iter().step_by(2).map(|key| db.key(key)).collect();
    let values = args[2..].iter().step_by(2);
    let mut locked = db.write_many_keys(&keys);
    if only_if_none_exist && keys.iter().any(|&k| locked.peek(k).is_some()) {
        return Ok(false);
    }
    let mut replaced: Vec<Entry> = Vec::new();
    for (&key, value) in keys.iter().zip(values) {
        if let Some(old) = locked.shard(key).insert_str(key, value, None) {
            // Sized at the first: a value written over in place replaces
            // no entry, so an MSET of same-size values allocates none.
            if replaced.capacity() == 0 {
                replaced.reserve_exact(keys.len());
            }
            replaced.push(old);
        }
        ctx.notify(Events::STRING, "set", key.bytes());
    }
    drop(locked);
    replaced.into_iter().for_each(crate::lazyfree::free);
    Ok(true)
}

fn args_name(nx: bool) -> &'static str {
    if nx {
        "msetnx"
    } else {
        "mset"
    }
}
