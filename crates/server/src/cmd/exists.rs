//! EXISTS key [key ...] — how many of the keys exist (a key named twice
//! counts twice).

use bytes::Bytes;

use super::{Ctx, Error, Spec, BASE};

/// EXISTS.
pub const SPEC: Spec = Spec {
    name: "exists",
    arity: -2,
    flags: &["readonly", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@read", "@fast"],
    summary: "Determines whether one or more keys exist.",
    complexity: "O(N) where N is the number of keys to check.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let db = ctx.db();
    let count = args[1..]
        .iter()
        .filter(|k| db.read(k).get(k).is_some())
        .count();
    ctx.w().integer(count as i64);
    Ok(())
}
