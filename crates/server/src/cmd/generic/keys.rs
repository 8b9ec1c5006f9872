//! KEYS pattern — every key matching a glob pattern.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// KEYS.
pub const SPEC: Spec = Spec {
    name: "keys",
    arity: 2,
    flags: &["readonly"],
    acl: &["@keyspace", "@read", "@slow", "@dangerous"],
    summary: "Find all keys matching the given pattern",
    complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let keys = ctx.db().keys(&args[1]);
    let mut w = ctx.w();
    w.array(keys.len());
    keys.iter().for_each(|k| w.bulk(k));
    Ok(())
}
