//! ZUNIONSTORE and ZINTERSTORE destination numkeys key [key ...]
//! [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX].
//!
//! As in Redis, inputs may be sets (every member scoring 1) as well as
//! sorted sets, every input is type-checked before the options are read,
//! and all shards involved are locked at once so the result reflects one
//! instant. The result is built by inserting into a new sorted set, so it
//! ends in the encoding Redis would convert it to.

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use keel_store::{Set, Value, ValueRef, ZSet};

use super::collection::{limits, store_in};
use super::zadd::parse_score;
use super::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// One input: a sorted set, a set, or nothing (a missing key).
#[derive(Clone, Copy)]
enum Source<'a> {
    Missing,
    Set(&'a Set),
    ZSet(&'a ZSet),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::Missing => 0,
            Source::Set(s) => s.len(),
            Source::ZSet(z) => z.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::Missing => None,
            Source::Set(s) => s.contains(member).then_some(1.0),
            Source::ZSet(z) => z.score(member),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (Cow<'_, [u8]>, f64)> + '_> {
        match self {
            Source::Missing => Box::new(std::iter::empty()),
            Source::Set(s) => Box::new(s.iter().map(|m| (m, 1.0))),
            Source::ZSet(z) => z.range(0, z.len()),
        }
    }
}

/// How scores of the same member combine.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's zunionInterAggregate: a sum of opposite infinities is 0.
    fn apply(self, acc: f64, value: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let sum = acc + value;
                if sum.is_nan() {
                    0.0
                } else {
                    sum
                }
            }
            Aggregate::Min => acc.min(value),
            Aggregate::Max => acc.max(value),
        }
    }
}

/// A score times its input's weight; 0 for inf * 0, as Redis.
fn weighted(score: f64, weight: f64) -> f64 {
    let w = score * weight;
    if w.is_nan() {
        0.0
    } else {
        w
    }
}

/// Parses the options after the keys.
fn options(rest: &[Bytes], numkeys: usize) -> Result<(Vec<f64>, Aggregate), Error> {
    let (mut weights, mut aggregate) = (vec![1.0; numkeys], Aggregate::Sum);
    let mut j = 0;
    while j < rest.len() {
        let remaining = rest.len() - j;
        if remaining > numkeys && is(&rest[j], "weights") {
            for (weight, arg) in weights.iter_mut().zip(&rest[j + 1..]) {
                *weight =
                    parse_score(arg).map_err(|_| Error::from("ERR weight value is not a float"))?;
            }
            j += 1 + numkeys;
        } else if remaining >= 2 && is(&rest[j], "aggregate") {
            aggregate = match &rest[j + 1] {
                a if is(a, "sum") => Aggregate::Sum,
                a if is(a, "min") => Aggregate::Min,
                a if is(a, "max") => Aggregate::Max,
                _ => return Err(errors::SYNTAX.into()),
            };
            j += 2;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    Ok((weights, aggregate))
}

/// Combines the inputs: the union, or the intersection walking the
/// smallest input and looking each member up in the others.
fn combine(
    sources: &[Source],
    weights: &[f64],
    aggregate: Aggregate,
    inter: bool,
) -> Vec<(Vec<u8>, f64)> {
    if inter {
        let Some(smallest) = sources.iter().min_by_key(|s| s.len()) else {
            return Vec::new();
        };
        smallest
            .iter()
            .filter_map(|(member, _)| {
                let mut scores = sources
                    .iter()
                    .zip(weights)
                    .map(|(s, w)| Some(weighted(s.score(&member)?, *w)));
                let first = scores.next()??;
                let score = scores.try_fold(first, |acc, v| Some(aggregate.apply(acc, v?)))?;
                Some((member.into_owned(), score))
            })
            .collect()
    } else {
        let mut union: HashMap<Vec<u8>, f64> = HashMap::new();
        for (source, weight) in sources.iter().zip(weights) {
            for (member, score) in source.iter() {
                let value = weighted(score, *weight);
                union
                    .entry(member.into_owned())
                    .and_modify(|acc| *acc = aggregate.apply(*acc, value))
                    .or_insert(value);
            }
        }
        union.into_iter().collect()
    }
}

fn store(ctx: &mut Ctx, args: &[Bytes], inter: bool) -> Result<(), Error> {
    let numkeys = parse_i64(&args[2])?;
    if numkeys < 1 {
        let name = if inter { "zinterstore" } else { "zunionstore" };
        return Err(format!("ERR at least 1 input key is needed for '{name}' command").into());
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - 3 {
        return Err(errors::SYNTAX.into());
    }
    let (destination, keys) = (&args[1], &args[3..3 + numkeys]);
    let limits = limits(ctx);
    let db = ctx.db();
    let mut locked_keys = vec![destination.clone()];
    locked_keys.extend_from_slice(keys);
    let mut locked = db.write_many(&locked_keys);
    let mut result = ZSet::default();
    {
        let sources = keys
            .iter()
            .map(|k| match locked.peek(k).map(|e| e.value()) {
                None => Ok(Source::Missing),
                Some(ValueRef::Set(s)) => Ok(Source::Set(s)),
                Some(ValueRef::ZSet(z)) => Ok(Source::ZSet(z)),
                Some(_) => Err(Error::from(errors::WRONGTYPE)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (weights, aggregate) = options(&args[3 + numkeys..], numkeys)?;
        for (member, score) in combine(&sources, &weights, aggregate, inter) {
            result.insert(&member, score, &limits);
        }
    }
    let len = result.len();
    store_in(
        locked.shard(destination),
        destination,
        Value::ZSet(Box::new(result)),
    );
    ctx.w().integer(len as i64);
    Ok(())
}

/// ZUNIONSTORE.
pub const ZUNIONSTORE: Spec = Spec {
    name: "zunionstore",
    arity: -4,
    flags: &["write", "denyoom", "movablekeys"],
    keys: (1, 1, 1),
    acl: &["@write", "@sortedset", "@slow"],
    group: "sorted-set",
    summary: "Stores the union of multiple sorted sets in a key.",
    since: "2.0.0",
    complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    run: |ctx, args| store(ctx, args, false),
    ..BASE
};

/// ZINTERSTORE.
pub const ZINTERSTORE: Spec = Spec {
    name: "zinterstore",
    summary: "Stores the intersect of multiple sorted sets in a key.",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    run: |ctx, args| store(ctx, args, true),
    ..ZUNIONSTORE
};
