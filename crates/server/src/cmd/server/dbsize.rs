//! DBSIZE — number of keys in the selected database.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// DBSIZE.
pub const SPEC: Spec = Spec {
    name: "dbsize",
    arity: 1,
    flags: &["readonly", "fast"],
    acl: &["@keyspace", "@read", "@fast"],
    group: "server",
    summary: "Return the number of keys in the selected database",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let keys = ctx.db().stats().keys;
    ctx.w().integer(keys as i64);
    Ok(())
}
