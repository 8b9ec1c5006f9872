//! MGET key [key ...] — the string at each key; nil for missing keys and
//! for keys of other types. All keys are read at one instant, as in Redis.

use bytes::Bytes;

use crate::cmd::context::{write_str, Ctx, Error, Spec, BASE};

/// MGET.
pub const SPEC: Spec = Spec {
    name: "mget",
    arity: -2,
    flags: &["readonly", "fast"],
    keys: (1, -1, 1),
    acl: &["@read", "@string", "@fast"],
    group: "string",
    summary: "Get the values of all the given keys",
    complexity: "O(N) where N is the number of keys to retrieve.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let keys = &args[1..];
    ctx.w().array(keys.len());
    let db = ctx.db();
    let shards = db.read_many(keys);
    for key in keys {
        let entry = shards.get(key);
        ctx.count_lookup(key, entry.is_some());
        match entry.and_then(|e| e.value().as_str()) {
            Some(s) => write_str(&mut ctx.w(), s),
            None => ctx.w().null(),
        }
    }
    Ok(())
}
