//! TYPE key — the type name of the value at key, or "none".

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// TYPE.
pub const SPEC: Spec = Spec {
    name: "type",
    arity: 2,
    flags: &["readonly", "fast"],
    keys: (1, 1, 1),
    acl: &["@keyspace", "@read", "@fast"],
    summary: "Determine the type stored at key",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let db = ctx.db();
    let shard = db.read(&args[1]);
    let entry = shard.peek(&args[1]);
    ctx.count_lookup(&args[1], entry.is_some());
    let name = entry.map_or("none", |e| e.value().type_name());
    ctx.w().simple(name);
    Ok(())
}
