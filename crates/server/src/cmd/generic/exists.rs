//! EXISTS key [key ...] and TOUCH key [key ...]: how many of the keys
//! exist (a key named twice counts twice). TOUCH also records an access to
//! each key; EXISTS, as in Redis, does not.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// EXISTS.
pub const EXISTS: Spec = Spec {
    name: "exists",
    arity: -2,
    flags: &["readonly", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@read", "@fast"],
    summary: "Determine if a key exists",
    complexity: "O(N) where N is the number of keys to check.",
    run: |ctx, args| count_existing(ctx, args, false),
    ..BASE
};

/// TOUCH.
pub const TOUCH: Spec = Spec {
    name: "touch",
    arity: -2,
    flags: &["readonly", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@read", "@fast"],
    summary:
        "Alters the last access time of a key(s). Returns the number of existing keys specified.",
    since: "3.2.1",
    complexity: "O(N) where N is the number of keys that will be touched.",
    run: |ctx, args| count_existing(ctx, args, true),
    ..BASE
};

fn count_existing(ctx: &mut Ctx, args: &[Bytes], record_access: bool) -> Result<(), Error> {
    let db = match record_access {
        true => ctx.db_touching(),
        false => ctx.db(),
    };
    let mut count = 0;
    for key in &args[1..] {
        let shard = db.read(key);
        let found = match record_access {
            true => shard.get(key).is_some(),
            false => shard.peek(key).is_some(),
        };
        ctx.count_lookup(key, found);
        count += found as i64;
    }
    ctx.w().integer(count);
    Ok(())
}
