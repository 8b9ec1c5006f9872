//! COPY source destination [DB db] [REPLACE] — a deep copy of a value of
//! any type, with its TTL.
//!
//! Within one database both keys' shards are locked together, so the copy
//! is atomic. Across databases the source is cloned under its read lock
//! and the destination written under its own: two databases' shards are
//! never held at once, which keeps the lock order (ascending shard within
//! a database) free of cycles. Inside EXEC every shard is held anyway.

use bytes::Bytes;
use keel_store::{Entry, Shard, Value, WriteShard};

use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Events, Spec, BASE};

/// COPY.
pub const SPEC: Spec = Spec {
    name: "copy",
    arity: -3,
    flags: &["write", "denyoom"],
    keys: (1, 2, 1),
    acl: &["@keyspace", "@write", "@slow"],
    summary: "Copy a key",
    since: "6.2.0",
    complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
    run,
    ..BASE
};

/// A source's value and deadline, cloned.
type Copied = (Value, Option<u64>);

/// Reserves the room the copy takes, as MEMORY USAGE counts the source,
/// then clones it.
fn clone_of(ctx: &mut Ctx, entry: &Entry) -> Result<Copied, Error> {
    ctx.reserve(Shard::entry_bytes(entry))?;
    Ok((entry.value().to_value(), entry.expire_at_ms()))
}

/// Writes the copy at `destination` unless it exists and `replace` is
/// off; true if written. As Redis, a replaced destination is deleted and
/// then created (a `new` key event).
fn place(shard: &mut WriteShard, destination: &[u8], copied: Copied, replace: bool) -> bool {
    if !replace && shard.peek(destination).is_some() {
        return false;
    }
    if let Some(old) = shard.remove(destination) {
        crate::lazyfree::free(old);
    }
    shard.insert(destination, copied.0, copied.1);
    true
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (source, destination) = (&args[1], &args[2]);
    let (mut target_db, mut replace) = (ctx.client.db, false);
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "db") && j + 1 < args.len() {
            let index = parse_i64(&args[j + 1])?;
            i32::try_from(index).map_err(|_| Error::from(errors::NOT_INTEGER))?;
            if index < 0 || index as usize >= ctx.server.store.databases() {
                return Err("ERR DB index is out of range".into());
            }
            target_db = index as usize;
            j += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    if ctx.server.cluster.is_some() && (target_db != 0 || ctx.client.db != 0) {
        return Err("ERR Copying to another database is not allowed in cluster mode".into());
    }
    if target_db == ctx.client.db && source == destination {
        return Err("ERR source and destination objects are the same".into());
    }
    let db = ctx.db();
    let copied = if target_db == ctx.client.db {
        let mut locked = db.write_many(&[source, destination]);
        let entry = locked.peek(source);
        ctx.count_lookup(source, entry.is_some());
        match entry.map(|e| clone_of(ctx, e)).transpose()? {
            Some(copied) => place(locked.shard(destination), destination, copied, replace),
            None => false,
        }
    } else {
        let shard = db.read(source);
        let entry = shard.peek(source);
        ctx.count_lookup(source, entry.is_some());
        let copied = entry.map(|e| clone_of(ctx, e)).transpose()?;
        drop(shard);
        let target = ctx.server.store.db(target_db, ctx.now_ms);
        copied.is_some_and(|c| place(&mut target.write(destination), destination, c, replace))
    };
    if copied {
        ctx.notify_in(target_db, Events::GENERIC, "copy_to", destination);
    }
    ctx.w().integer(copied as i64);
    Ok(())
}
