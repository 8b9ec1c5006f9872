//! Set algebra: SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
//! SDIFF and SDIFFSTORE.
//!
//! Every input key's shard is locked at once (read locks for the plain
//! forms, write locks with the destination for the *STORE forms), so the
//! result reflects one instant. Every input is type-checked before any
//! work, as Redis does: a WRONGTYPE key fails the command even when an
//! earlier key is missing. Missing keys are empty sets.

use bytes::Bytes;
use keel_store::{Entry, Limits, Set, Value};

use crate::cmd::context::collection::{limits, store_in};
use crate::cmd::context::{errors, is, keys, parse_i64, Ctx, Error, Events, Lookups, Spec, BASE};

/// Which combination.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    /// The keyspace event of the *STORE command.
    fn store_event(self) -> &'static str {
        match self {
            Op::Inter => "sinterstore",
            Op::Union => "sunionstore",
            Op::Diff => "sdiffstore",
        }
    }
}

const fn read_spec(
    name: &'static str,
    op_summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -2,
        flags: &["readonly"],
        keys: (1, -1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set",
        summary: op_summary,
        complexity: "O(N) where N is the total number of elements in all given sets.",
        run,
        ..BASE
    }
}

const fn store_spec(
    name: &'static str,
    op_summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        arity: -3,
        flags: &["write", "denyoom"],
        acl: &["@write", "@set", "@slow"],
        ..read_spec(name, op_summary, run)
    }
}

const INTER_COMPLEXITY: &str =
    "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.";

/// SINTER.
pub const SINTER: Spec = Spec {
    complexity: INTER_COMPLEXITY,
    ..read_spec("sinter", "Intersect multiple sets", |ctx, args| {
        reply_members(ctx, &args[1..], Op::Inter)
    })
};
/// SUNION.
pub const SUNION: Spec = read_spec("sunion", "Add multiple sets", |ctx, args| {
    reply_members(ctx, &args[1..], Op::Union)
});
/// SDIFF.
pub const SDIFF: Spec = read_spec("sdiff", "Subtract multiple sets", |ctx, args| {
    reply_members(ctx, &args[1..], Op::Diff)
});
/// SINTERSTORE.
pub const SINTERSTORE: Spec = Spec {
    complexity: INTER_COMPLEXITY,
    ..store_spec(
        "sinterstore",
        "Intersect multiple sets and store the resulting set in a key",
        |ctx, args| store(ctx, args, Op::Inter),
    )
};
/// SUNIONSTORE.
pub const SUNIONSTORE: Spec = store_spec(
    "sunionstore",
    "Add multiple sets and store the resulting set in a key",
    |ctx, args| store(ctx, args, Op::Union),
);
/// SDIFFSTORE.
pub const SDIFFSTORE: Spec = store_spec(
    "sdiffstore",
    "Subtract multiple sets and store the resulting set in a key",
    |ctx, args| store(ctx, args, Op::Diff),
);

/// SINTERCARD.
pub const SINTERCARD: Spec = Spec {
    arity: -3,
    keys: (0, 0, 0),
    getkeys: Some(keys::counted::<1>),
    flags: &["readonly", "movablekeys"],
    since: "7.0.0",
    complexity: INTER_COMPLEXITY,
    ..read_spec(
        "sintercard",
        "Intersect multiple sets and return the cardinality of the result",
        intercard,
    )
};

/// The sets at `keys` (`None` for a missing key), or WRONGTYPE.
fn sets_at<'e>(
    keys: &[Bytes],
    lookups: Lookups,
    lookup: impl Fn(&[u8]) -> Option<&'e Entry>,
) -> Result<Vec<Option<&'e Set>>, Error> {
    keys.iter()
        .map(|k| {
            let entry = lookup(k);
            lookups.count(k, entry.is_some());
            match entry {
                None => Ok(None),
                Some(e) => e.value().as_set().map(Some).ok_or(errors::WRONGTYPE.into()),
            }
        })
        .collect()
}

/// Computes `op` over `sets` as a new set (encoded as Redis would store it).
fn combine(op: Op, sets: &[Option<&Set>], limits: &Limits, limit: usize) -> Set {
    let mut result = Set::default();
    match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return result;
            }
            let mut sets: Vec<&Set> = sets.iter().flatten().copied().collect();
            sets.sort_by_key(|s| s.len());
            for member in sets[0].iter() {
                if sets[1..].iter().all(|s| s.contains(&member)) {
                    result.insert(&member, limits);
                    if result.len() == limit {
                        break;
                    }
                }
            }
        }
        Op::Union => {
            for member in sets.iter().flatten().flat_map(|s| s.iter()) {
                result.insert(&member, limits);
            }
        }
        Op::Diff => {
            let Some(Some(first)) = sets.first() else {
                return result;
            };
            for member in first.iter() {
                if !sets[1..].iter().flatten().any(|s| s.contains(&member)) {
                    result.insert(&member, limits);
                }
            }
        }
    }
    result
}

fn reply_members(ctx: &mut Ctx, keys: &[Bytes], op: Op) -> Result<(), Error> {
    let limits = limits(ctx);
    let db = ctx.db();
    let shards = db.read_many(keys);
    let sets = sets_at(keys, ctx.lookups(), |k| shards.get(k))?;
    let result = combine(op, &sets, &limits, usize::MAX);
    let mut w = ctx.w();
    w.set(result.len());
    result.iter().for_each(|m| w.bulk(&m));
    Ok(())
}

fn store(ctx: &mut Ctx, args: &[Bytes], op: Op) -> Result<(), Error> {
    let (destination, keys) = (&args[1], &args[2..]);
    let limits = limits(ctx);
    let db = ctx.db();
    let mut locked = db.write_many(&args[1..]);
    let result = {
        let sets = sets_at(keys, ctx.lookups(), |k| locked.peek(k))?;
        combine(op, &sets, &limits, usize::MAX)
    };
    let len = result.len();
    store_in(
        ctx,
        locked.shard(destination),
        destination,
        Value::Set(Box::new(result)),
        (Events::SET, op.store_event()),
    )?;
    ctx.w().integer(len as i64);
    Ok(())
}

fn intercard(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let numkeys_error = || Error::from("ERR numkeys should be greater than 0");
    let numkeys = parse_i64(&args[1]).map_err(|_| numkeys_error())?;
    if numkeys <= 0 {
        return Err(numkeys_error());
    }
    if numkeys as usize > args.len() - 2 {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    let keys = &args[2..2 + numkeys as usize];
    let mut limit = 0;
    let mut j = 2 + numkeys as usize;
    while j < args.len() {
        if is(&args[j], "limit") && j + 1 < args.len() {
            limit = match parse_i64(&args[j + 1]) {
                Ok(n) if n >= 0 => n as usize,
                _ => return Err("ERR LIMIT can't be negative".into()),
            };
            j += 2;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    let limits = limits(ctx);
    let db = ctx.db();
    let shards = db.read_many(keys);
    let sets = sets_at(keys, ctx.lookups(), |k| shards.get(k))?;
    let limit = if limit == 0 { usize::MAX } else { limit };
    let result = combine(Op::Inter, &sets, &limits, limit);
    ctx.w().integer(result.len() as i64);
    Ok(())
}
