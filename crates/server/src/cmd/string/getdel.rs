//! GETDEL key — GET, then delete the key.

use bytes::Bytes;

use crate::cmd::context::{errors, write_str, Ctx, Error, Events, Spec, BASE};

/// GETDEL.
pub const SPEC: Spec = Spec {
    name: "getdel",
    arity: 2,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Get the value of a key and delete the key",
    since: "6.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let key = &args[1];
    let db = ctx.db();
    let mut shard = db.write(key);
    let Some(entry) = shard.get_mut(key) else {
        ctx.count_lookup(key, false);
        ctx.w().null();
        return Ok(());
    };
    ctx.count_lookup(key, true);
    let Some(s) = entry.entry().value().as_str() else {
        return Err(errors::WRONGTYPE.into());
    };
    write_str(&mut ctx.w(), s);
    entry.remove();
    ctx.notify(Events::GENERIC, "del", key);
    Ok(())
}
