//! DEL key [key ...] and UNLINK key [key ...] — remove keys, reply with how
//! many existed. UNLINK frees large values on another thread so the caller
//! does not pay for it; DEL frees in place unless `lazyfree-lazy-user-del`
//! is on, as in Redis. Either way a value is freed after its shard's lock
//! is released (see `lazyfree.rs`).

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};
use crate::lazyfree::Cause;

/// DEL.
pub const DEL: Spec = Spec {
    name: "del",
    arity: -2,
    flags: &["write"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@write", "@slow"],
    summary: "Delete a key",
    complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
    run: |ctx, args| remove_keys(ctx, args, Cause::UserDel),
    ..BASE
};

/// UNLINK.
pub const UNLINK: Spec = Spec {
    name: "unlink",
    arity: -2,
    flags: &["write", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@write", "@fast"],
    summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
    since: "4.0.0",
    complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
    run: |ctx, args| remove_keys(ctx, args, Cause::Unlink),
    ..BASE
};

fn remove_keys(ctx: &mut Ctx, args: &[Bytes], cause: Cause) -> Result<(), Error> {
    let db = ctx.db();
    let mut removed = 0;
    for key in &args[1..] {
        let entry = db.write(key).remove(key);
        if let Some(entry) = entry {
            removed += 1;
            crate::lazyfree::free_as(cause, entry);
            ctx.notify(Events::GENERIC, "del", key);
        }
    }
    ctx.w().integer(removed);
    Ok(())
}
