//! STRLEN key — length of the string at key, 0 if missing.

use bytes::Bytes;

use crate::cmd::context::{errors, Ctx, Error, Spec, BASE};

/// STRLEN.
pub const SPEC: Spec = Spec {
    name: "strlen",
    arity: 2,
    flags: &["readonly", "fast"],
    keys: (1, 1, 1),
    acl: &["@read", "@string", "@fast"],
    group: "string",
    summary: "Get the length of the value stored in a key",
    since: "2.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let db = ctx.db();
    let shard = db.read(&args[1]);
    let entry = shard.get(&args[1]);
    ctx.count_lookup(&args[1], entry.is_some());
    let len = match entry.map(|e| e.value().as_str()) {
        None => 0,
        Some(Some(s)) => s.len(),
        Some(None) => return Err(errors::WRONGTYPE.into()),
    };
    ctx.w().integer(len as i64);
    Ok(())
}
