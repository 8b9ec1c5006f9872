//! PERSIST key — remove a key's TTL; 1 if it had one.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};

/// PERSIST.
pub const SPEC: Spec = Spec {
    name: "persist",
    arity: 2,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@keyspace", "@write", "@fast"],
    summary: "Remove the expiration from a key",
    since: "2.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let db = ctx.db();
    let mut shard = db.write(&args[1]);
    let had_ttl = match shard.get_mut(&args[1]) {
        Some(mut entry) if entry.entry().expire_at_ms().is_some() => {
            entry.set_expire_at_ms(None);
            true
        }
        _ => false,
    };
    if had_ttl {
        ctx.notify(Events::GENERIC, "persist", &args[1]);
    }
    ctx.w().integer(had_ttl as i64);
    Ok(())
}
