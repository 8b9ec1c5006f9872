//! SADD key member [member ...] and SREM key member [member ...].

use keel_store::Set;

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::{Spec, BASE};

/// SADD.
pub const SADD: Spec = Spec {
    name: "sadd",
    arity: -3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    member: 2,
    acl: &["@write", "@set", "@fast"],
    group: "set",
    summary: "Add one or more members to a set",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    run: |ctx, args| {
        let limits = limits(ctx);
        let added = update(ctx, &args[1], Missing::Create, "sadd", |set: &mut Set| {
            Ok(Edit::count(
                args[2..].iter().filter(|m| set.insert(m, &limits)).count(),
            ))
        })?;
        ctx.w().integer(added.unwrap_or(0) as i64);
        Ok(())
    },
    ..BASE
};

/// SREM.
pub const SREM: Spec = Spec {
    name: "srem",
    flags: &["write", "fast"],
    summary: "Remove one or more members from a set",
    complexity: "O(N) where N is the number of members to be removed.",
    run: |ctx, args| {
        let removed = update(ctx, &args[1], Missing::Skip, "srem", |set: &mut Set| {
            Ok(Edit::count(
                args[2..].iter().filter(|m| set.remove(m)).count(),
            ))
        })?;
        ctx.w().integer(removed.unwrap_or(0) as i64);
        Ok(())
    },
    ..SADD
};
