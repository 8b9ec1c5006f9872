//! Sorted-set point reads: ZCARD, ZSCORE, ZMSCORE, ZRANK and ZREVRANK.

use keel_store::ZSet;

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
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set",
        summary,
        since: "1.2.0",
        run,
        member: 2,
        ..BASE
    }
}

/// ZCARD.
pub const ZCARD: Spec = Spec {
    member: 0,
    ..spec(
        "zcard",
        2,
        "Get the number of members in a sorted set",
        |ctx, args| {
            read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
                ctx.w().integer(zset.map_or(0, ZSet::len) as i64);
                Ok(())
            })
        },
    )
};

/// ZSCORE.
pub const ZSCORE: Spec = spec(
    "zscore",
    3,
    "Get the score associated with the given member in a sorted set",
    |ctx, args| {
        read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
            match zset.and_then(|z| z.score(&args[2])) {
                Some(score) => ctx.w().double(score),
                None => ctx.w().null(),
            }
            Ok(())
        })
    },
);

/// ZMSCORE.
pub const ZMSCORE: Spec = Spec {
    since: "6.2.0",
    complexity: "O(N) where N is the number of members being requested.",
    ..spec(
        "zmscore",
        -3,
        "Get the score associated with the given members in a sorted set",
        |ctx, args| {
            read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
                let mut w = ctx.w();
                w.array(args.len() - 2);
                for member in &args[2..] {
                    match zset.and_then(|z| z.score(member)) {
                        Some(score) => w.double(score),
                        None => w.null(),
                    }
                }
                Ok(())
            })
        },
    )
};

/// ZRANK and ZREVRANK: the rank counted from the lowest or highest score.
const fn rank(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        since: "2.0.0",
        complexity: "O(log(N))",
        ..spec(name, 3, summary, run)
    }
}

/// ZRANK.
pub const ZRANK: Spec = rank(
    "zrank",
    "Determine the index of a member in a sorted set",
    |ctx, args| write_rank(ctx, &args[1], &args[2], false),
);

/// ZREVRANK.
pub const ZREVRANK: Spec = rank(
    "zrevrank",
    "Determine the index of a member in a sorted set, with scores ordered from high to low",
    |ctx, args| write_rank(ctx, &args[1], &args[2], true),
);

fn write_rank(
    ctx: &mut crate::cmd::context::Ctx,
    key: &[u8],
    member: &[u8],
    reverse: bool,
) -> Result<(), crate::cmd::context::Error> {
    read(ctx, key, |ctx, zset: Option<&ZSet>| {
        let rank = zset.and_then(|z| {
            let rank = z.rank(member)?;
            Some(if reverse { z.len() - 1 - rank } else { rank })
        });
        match rank {
            Some(rank) => ctx.w().integer(rank as i64),
            None => ctx.w().null(),
        }
        Ok(())
    })
}
