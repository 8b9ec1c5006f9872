//! SMOVE source destination member — moves a member between sets
//! atomically: both keys' shards are locked together.

use keel_store::Set;

use crate::cmd::context::collection::{limits, notify, update_tracked, Edit, Missing};
use crate::cmd::context::{errors, Spec, BASE};

/// SMOVE.
pub const SPEC: Spec = Spec {
    name: "smove",
    arity: 4,
    flags: &["write", "fast"],
    keys: (1, 2, 1),
    acl: &["@write", "@set", "@fast"],
    group: "set",
    summary: "Move a member from one set to another",
    run: |ctx, args| {
        let (source, destination, member) = (&args[1], &args[2], &args[3]);
        let limits = limits(ctx);
        let db = ctx.db();
        let mut locked = db.write_many(&[source, destination]);
        let Some(from) = locked.peek(source) else {
            ctx.w().integer(0);
            return Ok(());
        };
        let to = locked.peek(destination);
        if from.value().as_set().is_none() || to.is_some_and(|e| e.value().as_set().is_none()) {
            return Err(errors::WRONGTYPE.into());
        }
        let member_there = from.value().as_set().is_some_and(|s| s.contains(member));
        if source == destination {
            ctx.w().integer(member_there as i64);
            return Ok(());
        }
        if member_there {
            ctx.reserve(crate::cmd::context::bytes_a_write_may_add(
                ctx.server,
                &args[2..],
            ))?;
        }
        let (removed, source_outcome) = update_tracked(
            locked.shard(source),
            source,
            Missing::Skip,
            |set: &mut Set| {
                let removed = set.remove(member);
                Ok(Edit::changed_if(removed, removed))
            },
        )?;
        notify::<Set>(ctx.notifier(), "srem", source, source_outcome);
        if removed == Some(true) {
            let (_, added) = update_tracked(
                locked.shard(destination),
                destination,
                Missing::Create,
                |set: &mut Set| {
                    let added = set.insert(member, &limits);
                    Ok(Edit::changed_if(added, ()))
                },
            )?;
            notify::<Set>(ctx.notifier(), "sadd", destination, added);
        }
        ctx.w().integer(i64::from(removed == Some(true)));
        Ok(())
    },
    ..BASE
};
