//! XACK key group id [id ...] — acknowledges pending entries of a group;
//! replies how many were pending.

use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::{update_tracked, Edit, Missing};
use crate::cmd::context::stream::parse_strict_id;
use crate::cmd::context::{Error, Spec, BASE};

/// XACK.
pub const SPEC: Spec = Spec {
    name: "xack",
    arity: -4,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@fast"],
    group: "stream",
    summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
    since: "5.0.0",
    complexity: "O(1) for each message ID processed.",
    run: |ctx, args| {
        let acked = {
            let db = ctx.db();
            let mut shard = db.write(&args[1]);
            update_tracked(&mut shard, &args[1], Missing::Skip, |s: &mut Stream| {
                // Without the group there is nothing to acknowledge, whatever
                // the IDs; with it, every ID is checked before any is acked.
                if s.group(&args[2]).is_none() {
                    return Ok(Edit::count(0));
                }
                let ids = args[3..]
                    .iter()
                    .map(|a| parse_strict_id(a))
                    .collect::<Result<Vec<StreamId>, Error>>()?;
                let acked = ids.iter().filter(|id| s.ack(&args[2], **id)).count();
                Ok(Edit::count(acked))
            })?
            .0
        };
        ctx.w().integer(acked.unwrap_or(0) as i64);
        Ok(())
    },
    ..BASE
};
