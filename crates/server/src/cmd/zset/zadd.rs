//! ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...],
//! ZINCRBY key increment member, and ZREM key member [member ...].
//!
//! ZINCRBY is ZADD INCR with one pair, as in Redis, so both share [`add`].

use bytes::Bytes;
use keel_store::{Limits, ZSet};

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::zset::parse_score;
use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};

/// ZADD's options.
#[derive(Default, Clone, Copy)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What adding one pair did, as Redis's zsetAdd reports it.
enum Outcome {
    Added(f64),
    Updated(f64),
    /// The member kept its score (unchanged, or refused by NX/XX/GT/LT):
    /// `Some` when the member exists and only the flags refused nothing.
    Kept(Option<f64>),
}

/// Applies one `score member` pair under `flags` (zsetAdd).
fn add_one(
    zset: &mut ZSet,
    member: &[u8],
    score: f64,
    flags: Flags,
    limits: &Limits,
) -> Result<Outcome, Error> {
    let Some(current) = zset.score(member) else {
        if flags.xx {
            return Ok(Outcome::Kept(None));
        }
        zset.insert(member, score, limits);
        return Ok(Outcome::Added(score));
    };
    if flags.nx {
        return Ok(Outcome::Kept(None));
    }
    let new = if flags.incr { current + score } else { score };
    if new.is_nan() {
        return Err("ERR resulting score is not a number (NaN)".into());
    }
    if (flags.gt && new <= current) || (flags.lt && new >= current) {
        return Ok(Outcome::Kept(None));
    }
    if new == current {
        return Ok(Outcome::Kept(Some(current)));
    }
    zset.insert(member, new, limits);
    Ok(Outcome::Updated(new))
}

/// The shared body of ZADD and ZINCRBY: `pairs` are `score member`
/// arguments, already checked for count.
fn add(ctx: &mut Ctx, key: &[u8], pairs: &[Bytes], flags: Flags) -> Result<(), Error> {
    // Every score is read before anything changes, as Redis does; a few
    // of them (the usual ZADD has one) on the stack, not in an allocation.
    const ON_STACK: usize = 8;
    let (mut few, mut many) = ([0.0; ON_STACK], Vec::new());
    let count = pairs.len() / 2;
    let scores = match count <= ON_STACK {
        true => &mut few[..count],
        false => {
            many.resize(count, 0.0);
            &mut many[..]
        }
    };
    for (score, arg) in scores.iter_mut().zip(pairs.iter().step_by(2)) {
        *score = parse_score(arg)?;
    }
    let limits = limits(ctx);
    let missing = if flags.xx {
        Missing::Skip
    } else {
        Missing::Create
    };
    let (mut changed, mut added, mut last) = (0, 0, None);
    update(
        ctx,
        key,
        missing,
        if flags.incr { "zincr" } else { "zadd" },
        |zset: &mut ZSet| {
            for (score, member) in scores.iter().zip(pairs.iter().skip(1).step_by(2)) {
                last = match add_one(zset, member, *score, flags, &limits)? {
                    Outcome::Added(s) => {
                        added += 1;
                        changed += 1;
                        Some(s)
                    }
                    Outcome::Updated(s) => {
                        changed += 1;
                        Some(s)
                    }
                    Outcome::Kept(s) => s,
                };
            }
            Ok(Edit::changed_if(changed > 0, ()))
        },
    )?;
    let mut w = ctx.w();
    match (flags.incr, last) {
        (true, Some(score)) => w.double(score),
        (true, None) => w.null(),
        (false, _) => w.integer(if flags.ch { changed } else { added }),
    }
    Ok(())
}

/// ZADD.
pub const ZADD: Spec = Spec {
    name: "zadd",
    arity: -4,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    member: 3,
    acl: &["@write", "@sortedset", "@fast"],
    group: "sorted-set",
    summary: "Add one or more members to a sorted set, or update its score if it already exists",
    since: "1.2.0",
    complexity:
        "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    run: |ctx, args| {
        let mut flags = Flags::default();
        let mut at = 2;
        while let Some(arg) = args.get(at) {
            let flag = if is(arg, "nx") {
                &mut flags.nx
            } else if is(arg, "xx") {
                &mut flags.xx
            } else if is(arg, "gt") {
                &mut flags.gt
            } else if is(arg, "lt") {
                &mut flags.lt
            } else if is(arg, "ch") {
                &mut flags.ch
            } else if is(arg, "incr") {
                &mut flags.incr
            } else {
                break;
            };
            *flag = true;
            at += 1;
        }
        let pairs = &args[at..];
        if pairs.is_empty() || pairs.len() % 2 != 0 {
            return Err(errors::SYNTAX.into());
        }
        if flags.nx && flags.xx {
            return Err("ERR XX and NX options at the same time are not compatible".into());
        }
        if (flags.gt || flags.lt) && (flags.nx || flags.gt == flags.lt) {
            return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
        }
        if flags.incr && pairs.len() > 2 {
            return Err("ERR INCR option supports a single increment-element pair".into());
        }
        add(ctx, &args[1], pairs, flags)
    },
    ..BASE
};

/// ZINCRBY.
pub const ZINCRBY: Spec = Spec {
    name: "zincrby",
    arity: 4,
    summary: "Increment the score of a member in a sorted set",
    complexity: "O(log(N)) where N is the number of elements in the sorted set.",
    run: |ctx, args| {
        let flags = Flags {
            incr: true,
            ..Flags::default()
        };
        add(ctx, &args[1], &args[2..], flags)
    },
    ..ZADD
};

/// ZREM.
pub const ZREM: Spec = Spec {
    name: "zrem",
    arity: -3,
    flags: &["write", "fast"],
    summary: "Remove one or more members from a sorted set",
    member: 2,
    complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
    run: |ctx, args| {
        let removed = update(ctx, &args[1], Missing::Skip, "zrem", |zset: &mut ZSet| {
            Ok(Edit::count(
                args[2..].iter().filter(|m| zset.remove(m)).count(),
            ))
        })?;
        ctx.w().integer(removed.unwrap_or(0) as i64);
        Ok(())
    },
    ..ZADD
};
