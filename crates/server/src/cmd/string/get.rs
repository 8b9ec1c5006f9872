//! GET key — the string at key, or nil.

use bytes::Bytes;

use crate::cmd::context::{errors, write_str, Ctx, Error, Spec, BASE};

/// GET.
pub const SPEC: Spec = Spec {
    name: "get",
    arity: 2,
    flags: &["readonly", "fast"],
    keys: (1, 1, 1),
    acl: &["@read", "@string", "@fast"],
    group: "string",
    summary: "Get the value of a key",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let key = &args[1];
    let db = ctx.db();
    let hashed = db.key(key);
    let shard = db.read(hashed);
    let entry = shard.get(hashed);
    ctx.count_lookup(key, entry.is_some());
    match entry.map(|e| e.value().as_str()) {
        None => ctx.w().null(),
        Some(Some(s)) => write_str(&mut ctx.w(), s),
        Some(None) => return Err(errors::WRONGTYPE.into()),
    }
    Ok(())
}
