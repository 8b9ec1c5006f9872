//! TOUCH key [key ...] — record an access to each key; reply with how many
//! exist.

use bytes::Bytes;

use super::{Ctx, Error, Spec, BASE};

/// TOUCH.
pub const SPEC: Spec = Spec {
    name: "touch",
    arity: -2,
    flags: &["readonly", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@read", "@fast"],
    summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
    since: "3.2.1",
    complexity: "O(N) where N is the number of keys that will be touched.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let db = ctx.db();
    // `get` records the access; that is the whole point of TOUCH.
    let count = args[1..]
        .iter()
        .filter(|k| db.read(k).get(k).is_some())
        .count();
    ctx.w().integer(count as i64);
    Ok(())
}
