//! HDEL key field [field ...] — removes fields; the key goes with the last.

use keel_store::Hash;

use crate::cmd::context::collection::{update, Edit, Missing};
use crate::cmd::context::{Spec, BASE};

/// HDEL.
pub const SPEC: Spec = Spec {
    name: "hdel",
    arity: -3,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@hash", "@fast"],
    group: "hash",
    summary: "Delete one or more hash fields",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields to be removed.",
    run: |ctx, args| {
        let removed = update(ctx, &args[1], Missing::Skip, "hdel", |hash: &mut Hash| {
            Ok(Edit::count(
                args[2..].iter().filter(|f| hash.remove(f)).count(),
            ))
        })?;
        ctx.w().integer(removed.unwrap_or(0) as i64);
        Ok(())
    },
    ..BASE
};
