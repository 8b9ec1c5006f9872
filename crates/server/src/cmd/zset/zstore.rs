//! The sorted-set algebra: ZUNION, ZINTER and ZDIFF, their STORE forms
//! (destination numkeys key [key ...]) and ZINTERCARD numkeys key [key ...]
//! [LIMIT limit]. Union and intersection take [WEIGHTS weight ...] and
//! [AGGREGATE SUM|MIN|MAX]; the forms that reply take [WITHSCORES].
//!
//! One parser and one combiner serve every form, as in Redis's
//! zunionInterDiffGenericCommand: inputs may be sets (whose members all
//! score 1) as well as sorted sets, every input is type-checked before the
//! options are read, and all shards involved are locked at once so the
//! result reflects one instant. A stored result is built by inserting into
//! a new sorted set, so it ends in the encoding Redis would convert it to.

use std::borrow::Cow;
use std::collections::HashMap;

use bytes::Bytes;
use keel_store::{Entry, Set, Value, ValueRef, ZSet};

use crate::cmd::context::collection::{limits, store_in};
use crate::cmd::context::zset::parse_score;
use crate::cmd::context::zset::write_elements;
use crate::cmd::context::{errors, is, keys, parse_i64, Ctx, Error, Events, Lookups, Spec, BASE};

/// How the inputs combine.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    /// The first input's members found in no other input.
    Diff,
}

impl Op {
    /// The keyspace event of the *STORE command.
    fn store_event(self) -> &'static str {
        match self {
            Op::Union => "zunionstore",
            Op::Inter => "zinterstore",
            Op::Diff => "zdiffstore",
        }
    }
}

/// What becomes of the result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Replied, with WITHSCORES allowed (ZUNION, ZINTER, ZDIFF).
    Reply,
    /// Stored at the destination, its size replied (the STORE forms).
    Store,
    /// Only its size replied, up to LIMIT (ZINTERCARD).
    Cardinality,
}

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

/// The options after the keys.
struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
    /// ZINTERCARD's LIMIT; 0 means none.
    limit: usize,
}

/// Parses the options after the keys: each only where Redis accepts it
/// (WEIGHTS and AGGREGATE not for ZDIFF, WITHSCORES only when replying,
/// LIMIT only for ZINTERCARD), a syntax error elsewhere.
fn options(rest: &[Bytes], numkeys: usize, op: Op, output: Output) -> Result<Options, Error> {
    let mut options = Options {
        weights: vec![1.0; numkeys],
        aggregate: Aggregate::Sum,
        withscores: false,
        limit: 0,
    };
    let combines_scores = op != Op::Diff && output != Output::Cardinality;
    let mut j = 0;
    while j < rest.len() {
        let remaining = rest.len() - j;
        if combines_scores && remaining > numkeys && is(&rest[j], "weights") {
            for (weight, arg) in options.weights.iter_mut().zip(&rest[j + 1..]) {
                *weight =
                    parse_score(arg).map_err(|_| Error::from("ERR weight value is not a float"))?;
            }
            j += 1 + numkeys;
        } else if combines_scores && remaining >= 2 && is(&rest[j], "aggregate") {
            options.aggregate = match &rest[j + 1] {
                a if is(a, "sum") => Aggregate::Sum,
                a if is(a, "min") => Aggregate::Min,
                a if is(a, "max") => Aggregate::Max,
                _ => return Err(errors::SYNTAX.into()),
            };
            j += 2;
        } else if output == Output::Reply && is(&rest[j], "withscores") {
            options.withscores = true;
            j += 1;
        } else if output == Output::Cardinality && remaining >= 2 && is(&rest[j], "limit") {
            options.limit = parse_i64(&rest[j + 1])
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("ERR LIMIT can't be negative")?;
            j += 2;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    Ok(options)
}

/// Combines the inputs: the union; the intersection, walking the smallest
/// input and looking each member up in the others; or the difference,
/// walking the first input. Unordered.
fn combine(sources: &[Source], options: &Options, op: Op) -> Vec<(Vec<u8>, f64)> {
    let (weights, aggregate) = (&options.weights, options.aggregate);
    match op {
        Op::Union => {
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
        Op::Inter => {
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
        }
        Op::Diff => sources[0]
            .iter()
            .filter(|(member, _)| sources[1..].iter().all(|s| s.score(member).is_none()))
            .map(|(member, score)| (member.into_owned(), score))
            .collect(),
    }
}

/// The inputs at `keys`, as `lookup` finds them; WRONGTYPE for a key that
/// holds neither a set nor a sorted set.
fn sources<'e>(
    keys: &[Bytes],
    lookups: Lookups,
    lookup: impl Fn(&[u8]) -> Option<&'e Entry>,
) -> Result<Vec<Source<'e>>, Error> {
    keys.iter()
        .map(|k| {
            let entry = lookup(k);
            lookups.count(k, entry.is_some());
            match entry.map(|e| e.value()) {
                None => Ok(Source::Missing),
                Some(ValueRef::Set(s)) => Ok(Source::Set(s)),
                Some(ValueRef::ZSet(z)) => Ok(Source::ZSet(z)),
                Some(_) => Err(Error::from(errors::WRONGTYPE)),
            }
        })
        .collect()
}

/// Runs every form. The STORE forms name their destination first, so
/// their numkeys comes one argument later.
fn run(ctx: &mut Ctx, args: &[Bytes], op: Op, output: Output) -> Result<(), Error> {
    let numkeys_at = if output == Output::Store { 2 } else { 1 };
    let numkeys = parse_i64(&args[numkeys_at])?;
    if numkeys < 1 {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        return Err(format!("ERR at least 1 input key is needed for '{name}' command").into());
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - numkeys_at - 1 {
        return Err(errors::SYNTAX.into());
    }
    let keys = &args[numkeys_at + 1..numkeys_at + 1 + numkeys];
    let rest = &args[numkeys_at + 1 + numkeys..];
    let db = ctx.db();
    if output == Output::Store {
        let destination = &args[1];
        let limits = limits(ctx);
        let mut locked_keys = vec![destination.clone()];
        locked_keys.extend_from_slice(keys);
        let mut locked = db.write_many(&locked_keys);
        let mut result = ZSet::default();
        {
            let sources = sources(keys, ctx.lookups(), |k| locked.peek(k))?;
            let options = options(rest, numkeys, op, output)?;
            for (member, score) in combine(&sources, &options, op) {
                result.insert(&member, score, &limits);
            }
        }
        let len = result.len();
        store_in(
            ctx,
            locked.shard(destination),
            destination,
            Value::ZSet(Box::new(result)),
            (Events::ZSET, op.store_event()),
        )?;
        ctx.w().integer(len as i64);
        return Ok(());
    }
    let shards = db.read_many(keys);
    let sources = sources(keys, ctx.lookups(), |k| shards.get(k))?;
    let options = options(rest, numkeys, op, output)?;
    let mut result = combine(&sources, &options, op);
    if output == Output::Cardinality {
        let limit = if options.limit == 0 {
            usize::MAX
        } else {
            options.limit
        };
        ctx.w().integer(result.len().min(limit) as i64);
        return Ok(());
    }
    // A sorted set's order: by score (-0 equal to 0), then by member.
    // Scores are never NaN: weights and aggregates turn it into 0.
    result.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    write_elements(&mut ctx.w(), &result, options.withscores);
    Ok(())
}

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["readonly", "movablekeys"],
        getkeys: Some(keys::counted::<1>),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set",
        summary,
        since: "6.2.0",
        run,
        ..BASE
    }
}

/// ZUNION.
pub const ZUNION: Spec = Spec {
    complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    ..spec(
        "zunion",
        "Add multiple sorted sets",
        |ctx, args| run(ctx, args, Op::Union, Output::Reply),
    )
};

/// ZINTER.
pub const ZINTER: Spec = Spec {
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    ..spec(
        "zinter",
        "Intersect multiple sorted sets",
        |ctx, args| run(ctx, args, Op::Inter, Output::Reply),
    )
};

/// ZDIFF.
pub const ZDIFF: Spec = Spec {
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    ..spec(
        "zdiff",
        "Subtract multiple sorted sets",
        |ctx, args| run(ctx, args, Op::Diff, Output::Reply),
    )
};

/// ZINTERCARD.
pub const ZINTERCARD: Spec = Spec {
    since: "7.0.0",
    complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
    ..spec(
        "zintercard",
        "Intersect multiple sorted sets and return the cardinality of the result",
        |ctx, args| run(ctx, args, Op::Inter, Output::Cardinality),
    )
};

/// ZUNIONSTORE.
pub const ZUNIONSTORE: Spec = Spec {
    name: "zunionstore",
    arity: -4,
    flags: &["write", "denyoom", "movablekeys"],
    keys: (1, 1, 1),
    getkeys: Some(keys::counted::<2>),
    acl: &["@write", "@sortedset", "@slow"],
    group: "sorted-set",
    summary: "Add multiple sorted sets and store the resulting sorted set in a new key",
    since: "2.0.0",
    complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
    run: |ctx, args| run(ctx, args, Op::Union, Output::Store),
    ..BASE
};

/// ZINTERSTORE.
pub const ZINTERSTORE: Spec = Spec {
    name: "zinterstore",
    summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key",
    complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
    run: |ctx, args| run(ctx, args, Op::Inter, Output::Store),
    ..ZUNIONSTORE
};

/// ZDIFFSTORE.
pub const ZDIFFSTORE: Spec = Spec {
    name: "zdiffstore",
    summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key",
    since: "6.2.0",
    complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
    run: |ctx, args| run(ctx, args, Op::Diff, Output::Store),
    ..ZUNIONSTORE
};
