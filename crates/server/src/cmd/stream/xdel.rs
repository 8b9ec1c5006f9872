//! XDEL key id [id ...] — removes entries by ID; replies how many existed.

use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::{update, Edit, Missing};
use crate::cmd::context::stream::parse_strict_id;
use crate::cmd::context::{Error, Spec, BASE};

/// XDEL.
pub const SPEC: Spec = Spec {
    name: "xdel",
    arity: -3,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@fast"],
    group: "stream",
    summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
    since: "5.0.0",
    complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
    run: |ctx, args| {
        let deleted = update(ctx, &args[1], Missing::Skip, "xdel", |s: &mut Stream| {
            // Every ID is checked before any is deleted, as in Redis.
            let ids = args[2..]
                .iter()
                .map(|a| parse_strict_id(a))
                .collect::<Result<Vec<StreamId>, Error>>()?;
            Ok(Edit::count(ids.into_iter().filter(|id| s.delete(*id)).count()))
        })?;
        ctx.w().integer(deleted.unwrap_or(0) as i64);
        Ok(())
    },
    ..BASE
};
