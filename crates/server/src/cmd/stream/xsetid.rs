//! XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID
//! max-deleted-id] — sets a stream's last ID and counters (how replicas and
//! AOF rebuild a stream's state).

use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::{update, Edit, Missing};
use crate::cmd::context::stream::parse_strict_id;
use crate::cmd::context::{errors, is, parse_i64, Error, Spec, BASE};

/// XSETID.
pub const SPEC: Spec = Spec {
    name: "xsetid",
    arity: -3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@fast"],
    group: "stream",
    summary: "An internal command for replicating stream values",
    since: "5.0.0",
    run: |ctx, args| {
        let id = parse_strict_id(&args[2])?;
        let mut entries_added = None;
        let mut max_deleted = None;
        let mut options = args[3..].iter();
        while let Some(option) = options.next() {
            let value = options.next();
            match value {
                Some(n) if is(option, "entriesadded") => {
                    let n = parse_i64(n)?;
                    if n < 0 {
                        return Err("ERR entries_added must be positive".into());
                    }
                    entries_added = Some(n as u64);
                }
                Some(deleted) if is(option, "maxdeletedid") => {
                    let deleted = parse_strict_id(deleted)?;
                    if id < deleted {
                        return Err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id".into());
                    }
                    max_deleted = Some(deleted).filter(|d| !d.is_zero());
                }
                _ => return Err(errors::SYNTAX.into()),
            }
        }
        let set = update(ctx, &args[1], Missing::Skip, "xsetid", |s: &mut Stream| {
            set_id(s, id, entries_added, max_deleted)?;
            Ok(Edit::changed(()))
        })?;
        if set.is_none() {
            return Err(errors::NO_SUCH_KEY.into());
        }
        ctx.w().ok();
        Ok(())
    },
    ..BASE
};

fn set_id(
    s: &mut Stream,
    id: StreamId,
    entries_added: Option<u64>,
    max_deleted: Option<StreamId>,
) -> Result<(), Error> {
    if !s.is_empty() {
        if s.top_id().is_some_and(|top| id < top) {
            return Err(
                "ERR The ID specified in XSETID is smaller than the target stream top item".into(),
            );
        }
        if entries_added.is_some_and(|added| (s.len() as u64) > added) {
            return Err("ERR The entries_added specified in XSETID is smaller than the target stream length".into());
        }
    }
    s.set_meta(id, entries_added, max_deleted);
    Ok(())
}
