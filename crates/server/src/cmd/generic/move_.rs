//! MOVE key db — moves a key, with its TTL, to another database, unless
//! the key exists there already.
//!
//! The key's shard is locked in both databases at once (the lower
//! database's first, see `keel_store::keyspace::locking`), so the key is
//! never seen in both or in neither. A client blocked on the key in the
//! target database is served, as Redis's dbAdd signals the key ready.

use bytes::Bytes;

use crate::cmd::context::{parse_i64, Ctx, Error, Events, Spec, BASE};

/// MOVE.
pub const SPEC: Spec = Spec {
    name: "move",
    arity: 3,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@keyspace", "@write", "@fast"],
    summary: "Move a key to another database",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if ctx.server.cluster.is_some() {
        return Err("ERR MOVE is not allowed in cluster mode".into());
    }
    let key = &args[1];
    let index = parse_i64(&args[2])?;
    if i32::try_from(index).is_err() {
        return Err(
            "ERR value is out of range, value must between -2147483648 and 2147483647".into(),
        );
    }
    if index < 0 || index as usize >= ctx.server.store.databases() {
        return Err("ERR DB index is out of range".into());
    }
    let target = index as usize;
    if target == ctx.client.db {
        return Err("ERR source and destination objects are the same".into());
    }
    let moved = {
        let mut both = ctx.db().write_across(target, key);
        match both.here.peek(key).is_some() && both.there.peek(key).is_none() {
            true => {
                let entry = both
                    .here
                    .remove(key)
                    .expect("found just above under the same lock");
                both.there.insert_renamed(key, entry);
                true
            }
            false => false,
        }
    };
    if moved {
        ctx.notify(Events::GENERIC, "move_from", key);
        ctx.notify_in(target, Events::GENERIC, "move_to", key);
    }
    if moved && ctx.server.blocking.blocked() > 0 {
        ctx.client.ready.push((target, key.clone()));
    }
    ctx.w().integer(moved as i64);
    Ok(())
}
