//! RENAME key newkey and RENAMENX key newkey — move a value (with its TTL)
//! to another name, atomically: both keys' shards are locked together.

use bytes::Bytes;

use crate::cmd::context::{errors, Ctx, Error, Events, Spec, BASE};

/// RENAME.
pub const RENAME: Spec = Spec {
    name: "rename",
    arity: 3,
    flags: &["write"],
    keys: (1, 2, 1),
    acl: &["@keyspace", "@write", "@slow"],
    summary: "Rename a key",
    run: |ctx, args| rename(ctx, args, false),
    ..BASE
};

/// RENAMENX.
pub const RENAMENX: Spec = Spec {
    name: "renamenx",
    arity: 3,
    flags: &["write", "fast"],
    keys: (1, 2, 1),
    acl: &["@keyspace", "@write", "@fast"],
    summary: "Rename a key, only if the new key does not exist",
    run: |ctx, args| rename(ctx, args, true),
    ..BASE
};

fn rename(ctx: &mut Ctx, args: &[Bytes], only_if_new: bool) -> Result<(), Error> {
    let (from, to) = (&args[1], &args[2]);
    let db = ctx.db();
    let mut locked = db.write_many(&[from, to]);
    if locked.shard(from).peek(from).is_none() {
        return Err(errors::NO_SUCH_KEY.into());
    }
    if from == to {
        match only_if_new {
            true => ctx.w().integer(0),
            false => ctx.w().ok(),
        }
        return Ok(());
    }
    if only_if_new && locked.shard(to).peek(to).is_some() {
        ctx.w().integer(0);
        return Ok(());
    }
    let entry = locked
        .shard(from)
        .remove(from)
        .expect("checked above under the same lock");
    // As Redis, the destination is deleted and then created, which is a
    // `new` key event.
    if let Some(old) = locked.shard(to).remove(to) {
        crate::lazyfree::free(old);
    }
    locked.shard(to).insert_renamed(to, entry);
    drop(locked);
    ctx.notify(Events::GENERIC, "rename_from", from);
    ctx.notify(Events::GENERIC, "rename_to", to);
    match only_if_new {
        true => ctx.w().integer(1),
        false => ctx.w().ok(),
    }
    Ok(())
}
