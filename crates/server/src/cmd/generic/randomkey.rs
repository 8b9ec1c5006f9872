//! RANDOMKEY — a random key, or nil when the database is empty.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// RANDOMKEY.
pub const SPEC: Spec = Spec {
    name: "randomkey",
    arity: 1,
    flags: &["readonly"],
    acl: &["@keyspace", "@read", "@slow"],
    summary: "Return a random key from the keyspace",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    match ctx.db().random_key() {
        Some(key) => ctx.w().bulk(&key),
        None => ctx.w().null(),
    }
    Ok(())
}
