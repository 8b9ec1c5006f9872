//! Set reads: SISMEMBER, SMISMEMBER, SCARD and SMEMBERS (a set in RESP3).

use keel_store::Set;

use crate::cmd::context::collection::read;
use crate::cmd::context::{Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["readonly", "fast"],
        keys: (1, 1, 1),
        acl: &["@read", "@set", "@fast"],
        group: "set",
        summary,
        run,
        member: 2,
        ..BASE
    }
}

/// SISMEMBER.
pub const SISMEMBER: Spec = spec(
    "sismember",
    3,
    "Determine if a given value is a member of a set",
    |ctx, args| {
        read(ctx, &args[1], |ctx, set: Option<&Set>| {
            ctx.w()
                .integer(set.is_some_and(|s| s.contains(&args[2])) as i64);
            Ok(())
        })
    },
);

/// SMISMEMBER.
pub const SMISMEMBER: Spec = Spec {
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements being checked for membership",
    ..spec(
        "smismember",
        -3,
        "Returns the membership associated with the given elements for a set",
        |ctx, args| {
            read(ctx, &args[1], |ctx, set: Option<&Set>| {
                let mut w = ctx.w();
                w.array(args.len() - 2);
                for member in &args[2..] {
                    w.integer(set.is_some_and(|s| s.contains(member)) as i64);
                }
                Ok(())
            })
        },
    )
};

/// SCARD.
pub const SCARD: Spec = Spec {
    member: 0,
    ..spec(
        "scard",
        2,
        "Get the number of members in a set",
        |ctx, args| {
            read(ctx, &args[1], |ctx, set: Option<&Set>| {
                ctx.w().integer(set.map_or(0, Set::len) as i64);
                Ok(())
            })
        },
    )
};

/// SMEMBERS.
pub const SMEMBERS: Spec = Spec {
    member: 0,
    flags: &["readonly"],
    acl: &["@read", "@set", "@slow"],
    complexity: "O(N) where N is the set cardinality.",
    ..spec(
        "smembers",
        2,
        "Get all the members in a set",
        |ctx, args| {
            read(ctx, &args[1], |ctx, set: Option<&Set>| {
                let mut w = ctx.w();
                w.set(set.map_or(0, Set::len));
                set.into_iter().flat_map(Set::iter).for_each(|m| w.bulk(&m));
                Ok(())
            })
        },
    )
};
