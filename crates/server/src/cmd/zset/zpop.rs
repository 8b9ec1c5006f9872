//! Sorted-set removals by position: ZPOPMIN, ZPOPMAX, ZREMRANGEBYRANK,
//! ZREMRANGEBYSCORE and ZREMRANGEBYLEX.

use bytes::Bytes;
use keel_resp::Protocol;
use keel_store::ZSet;

use crate::cmd::context::collection::{update, Edit, Missing};
use crate::cmd::context::pop::take_members;
use crate::cmd::context::zset::{End, Window};
use crate::cmd::context::{errors, parse_i64, Ctx, Error, Spec, BASE};

/// ZPOPMIN and ZPOPMAX: `max` pops from the high end.
fn pop(ctx: &mut Ctx, args: &[Bytes], max: bool) -> Result<(), Error> {
    if args.len() > 3 {
        return Err(errors::SYNTAX.into());
    }
    let count = match args.get(2) {
        None => None,
        Some(arg) => Some(
            parse_i64(arg)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("ERR value is out of range, must be positive")?,
        ),
    };
    let popped = update(
        ctx,
        &args[1],
        Missing::Skip,
        if max { "zpopmax" } else { "zpopmin" },
        |zset: &mut ZSet| Ok(take_members(zset, count.unwrap_or(1), max)),
    )?
    .unwrap_or_default();
    let mut w = ctx.w();
    // With a count, RESP3 gets [member, score] pairs; without, one flat pair.
    let pairs = count.is_some() && w.protocol() == Protocol::Resp3;
    w.array(if pairs {
        popped.len()
    } else {
        popped.len() * 2
    });
    for (member, score) in &popped {
        if pairs {
            w.array(2);
        }
        w.bulk(member);
        w.double(*score);
    }
    Ok(())
}

/// ZPOPMIN.
pub const ZPOPMIN: Spec = Spec {
    name: "zpopmin",
    arity: -2,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@sortedset", "@fast"],
    group: "sorted-set",
    summary: "Remove and return members with the lowest scores in a sorted set",
    since: "5.0.0",
    complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
    run: |ctx, args| pop(ctx, args, false),
    ..BASE
};

/// ZPOPMAX.
pub const ZPOPMAX: Spec = Spec {
    name: "zpopmax",
    summary: "Remove and return members with the highest scores in a sorted set",
    run: |ctx, args| pop(ctx, args, true),
    ..ZPOPMIN
};

/// The ZREMRANGEBY* commands: remove what `window` selects.
fn remove(ctx: &mut Ctx, key: &[u8], event: &str, window: Window) -> Result<(), Error> {
    let removed = update(ctx, key, Missing::Skip, event, |zset: &mut ZSet| {
        let ranks = window.ranks(zset, false, None);
        Ok(Edit::count(zset.remove_ranks(ranks).len()))
    })?;
    ctx.w().integer(removed.unwrap_or(0) as i64);
    Ok(())
}

/// ZREMRANGEBYRANK.
pub const ZREMRANGEBYRANK: Spec = Spec {
    name: "zremrangebyrank",
    arity: 4,
    flags: &["write"],
    acl: &["@write", "@sortedset", "@slow"],
    summary: "Remove all members in a sorted set within the given indexes",
    since: "2.0.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
    run: |ctx, args| {
        let window = Window::Index(parse_i64(&args[2])?, parse_i64(&args[3])?);
        remove(ctx, &args[1], "zremrangebyrank", window)
    },
    ..ZPOPMIN
};

/// ZREMRANGEBYSCORE.
pub const ZREMRANGEBYSCORE: Spec = Spec {
    name: "zremrangebyscore",
    summary: "Remove all members in a sorted set within the given scores",
    since: "1.2.0",
    run: |ctx, args| {
        let window = Window::Between(End::score(&args[2])?, End::score(&args[3])?);
        remove(ctx, &args[1], "zremrangebyscore", window)
    },
    ..ZREMRANGEBYRANK
};

/// ZREMRANGEBYLEX.
pub const ZREMRANGEBYLEX: Spec = Spec {
    name: "zremrangebylex",
    summary: "Remove all members in a sorted set between the given lexicographical range",
    since: "2.8.9",
    run: |ctx, args| {
        let window = Window::Between(End::lex(&args[2])?, End::lex(&args[3])?);
        remove(ctx, &args[1], "zremrangebylex", window)
    },
    ..ZREMRANGEBYRANK
};
