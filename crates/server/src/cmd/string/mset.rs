//! MSET key value [key value ...] and MSETNX: set many keys atomically.
//!
//! Both lock every shard involved at once (in ascending order), so no
//! reader sees some of the keys set and others not, and MSETNX's "none
//! exists" check and its writes are one step. Replaced values are freed
//! once the shards are released.

use bytes::Bytes;
use keel_store::Entry;

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
    let pairs: Vec<(&Bytes, &Bytes)> = args[1..].chunks(2).map(|p| (&p[0], &p[1])).collect();
    let keys: Vec<&Bytes> = pairs.iter().map(|(k, _)| *k).collect();
    let db = ctx.db();
    let mut locked = db.write_many(&keys);
    if only_if_none_exist && keys.iter().any(|k| locked.shard(k).peek(k).is_some()) {
        return Ok(false);
    }
    let replaced: Vec<Entry> = pairs
        .into_iter()
        .filter_map(|(key, value)| {
            let replaced = locked.shard(key).insert_str(key, value, None);
            ctx.notify(Events::STRING, "set", key);
            replaced
        })
        .collect();
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
