//! Sorted-set ranges: ZRANGE (by index, BYSCORE or BYLEX, REV, LIMIT,
//! WITHSCORES), its older forms ZREVRANGE, ZRANGEBYSCORE,
//! ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, and ZRANGESTORE, which
//! stores the range instead of replying with it; ZCOUNT and ZLEXCOUNT.
//!
//! Every form turns its bounds into a window of ascending ranks (two
//! O(log n) rank queries for scores and lex bounds), applies REV and LIMIT
//! to the window, then walks it: O(log n + m) for m elements returned.

use std::borrow::Cow;

use bytes::Bytes;
use keel_store::ZSet;

use crate::cmd::context::collection::read;
use crate::cmd::context::zset::{write_elements, End, Window};
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// How a range is given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Index,
    Score,
    Lex,
}

/// A parsed range request.
struct Request {
    by: By,
    rev: bool,
    withscores: bool,
    /// LIMIT offset count; count < 0 means all.
    limit: Option<(i64, i64)>,
}

/// Parses the options after `key min max` (zrangeGenericCommand):
/// `by` and `rev` are fixed by the older command forms, and naming them
/// again is a syntax error; so is WITHSCORES when the range is stored.
fn parse_request(
    args: &[Bytes],
    by: Option<By>,
    rev: Option<bool>,
    store: bool,
) -> Result<Request, Error> {
    let (mut by, mut rev, mut withscores, mut limit) = (by, rev, false, None);
    let mut j = 4;
    while j < args.len() {
        let arg = &args[j];
        if !store && is(arg, "withscores") {
            withscores = true;
        } else if is(arg, "limit") && j + 2 < args.len() {
            limit = Some((parse_i64(&args[j + 1])?, parse_i64(&args[j + 2])?));
            j += 2;
        } else if rev.is_none() && is(arg, "rev") {
            rev = Some(true);
        } else if by.is_none() && is(arg, "bylex") {
            by = Some(By::Lex);
        } else if by.is_none() && is(arg, "byscore") {
            by = Some(By::Score);
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    let by = by.unwrap_or(By::Index);
    if limit.is_some() && by == By::Index {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    if withscores && by == By::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into());
    }
    Ok(Request {
        by,
        rev: rev.unwrap_or(false),
        withscores,
        limit,
    })
}

/// Runs a range command: `by`/`rev` preset by the older forms.
fn range(ctx: &mut Ctx, args: &[Bytes], by: Option<By>, rev: Option<bool>) -> Result<(), Error> {
    let (request, window) = parse_range(args, by, rev, false)?;
    read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
        let elements = zset.map_or(Vec::new(), |z| select(z, &request, &window));
        write_elements(&mut ctx.w(), &elements, request.withscores);
        Ok(())
    })
}

/// ZRANGESTORE destination source min max ...: the range of `source`
/// stored at `destination` (deleted when empty), both locked together.
fn range_store(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (destination, source) = (&args[1], &args[2]);
    // Past the destination, the arguments are laid out as ZRANGE's.
    let (request, window) = parse_range(&args[1..], None, None, true)?;
    let limits = crate::cmd::context::collection::limits(ctx);
    let db = ctx.db();
    let mut locked = db.write_many(&[destination, source]);
    let mut result = ZSet::default();
    let entry = locked.peek(source);
    ctx.count_lookup(source, entry.is_some());
    if let Some(entry) = entry {
        let zset = entry.value().as_zset().ok_or(errors::WRONGTYPE)?;
        for (member, score) in select(zset, &request, &window) {
            result.insert(&member, score, &limits);
        }
    }
    let len = result.len();
    let value = keel_store::Value::ZSet(Box::new(result));
    crate::cmd::context::collection::store_in(
        ctx,
        locked.shard(destination),
        destination,
        value,
        (crate::cmd::context::Events::ZSET, "zrangestore"),
    )?;
    ctx.w().integer(len as i64);
    Ok(())
}

/// Parses a range command laid out as ZRANGE's: the request and its
/// window, before the key is looked up.
fn parse_range(
    args: &[Bytes],
    by: Option<By>,
    rev: Option<bool>,
    store: bool,
) -> Result<(Request, Window), Error> {
    let request = parse_request(args, by, rev, store)?;
    // The reversed forms name the high end first.
    let (low, high) = match request.rev && request.by != By::Index {
        true => (&args[3], &args[2]),
        false => (&args[2], &args[3]),
    };
    let window = match request.by {
        By::Index => Window::Index(parse_i64(low)?, parse_i64(high)?),
        By::Score => Window::Between(End::score(low)?, End::score(high)?),
        By::Lex => Window::Between(End::lex(low)?, End::lex(high)?),
    };
    Ok((request, window))
}

/// The elements `request` selects from `zset`, in the order it asks for.
fn select<'z>(zset: &'z ZSet, request: &Request, window: &Window) -> Vec<(Cow<'z, [u8]>, f64)> {
    let ranks = window.ranks(zset, request.rev, request.limit);
    let mut elements: Vec<_> = zset.range(ranks.start, ranks.end).collect();
    if request.rev {
        elements.reverse();
    }
    elements
}

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["readonly"],
        keys: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set",
        summary,
        since: "1.2.0",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        run,
        ..BASE
    }
}

/// ZRANGE.
pub const ZRANGE: Spec = spec(
    "zrange",
    -4,
    "Return a range of members in a sorted set",
    |ctx, args| range(ctx, args, None, None),
);

/// ZREVRANGE.
pub const ZREVRANGE: Spec = spec(
    "zrevrange",
    -4,
    "Return a range of members in a sorted set, by index, with scores ordered from high to low",
    |ctx, args| range(ctx, args, Some(By::Index), Some(true)),
);

/// The complexity of a range by score or lex, which LIMIT can bound.
const BOUNDED_RANGE_COMPLEXITY: &str = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).";

/// ZRANGEBYSCORE.
pub const ZRANGEBYSCORE: Spec = Spec {
    since: "1.0.5",
    complexity: BOUNDED_RANGE_COMPLEXITY,
    ..spec(
        "zrangebyscore",
        -4,
        "Return a range of members in a sorted set, by score",
        |ctx, args| range(ctx, args, Some(By::Score), Some(false)),
    )
};

/// ZREVRANGEBYSCORE.
pub const ZREVRANGEBYSCORE: Spec = Spec {
    since: "2.2.0",
    complexity: BOUNDED_RANGE_COMPLEXITY,
    ..spec(
        "zrevrangebyscore",
        -4,
        "Return a range of members in a sorted set, by score, with scores ordered from high to low",
        |ctx, args| range(ctx, args, Some(By::Score), Some(true)),
    )
};

/// ZRANGEBYLEX.
pub const ZRANGEBYLEX: Spec = Spec {
    since: "2.8.9",
    complexity: BOUNDED_RANGE_COMPLEXITY,
    ..spec(
        "zrangebylex",
        -4,
        "Return a range of members in a sorted set, by lexicographical range",
        |ctx, args| range(ctx, args, Some(By::Lex), Some(false)),
    )
};

/// ZREVRANGEBYLEX.
pub const ZREVRANGEBYLEX: Spec = Spec {
    since: "2.8.9",
    complexity: BOUNDED_RANGE_COMPLEXITY,
    ..spec(
        "zrevrangebylex",
        -4,
        "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
        |ctx, args| range(ctx, args, Some(By::Lex), Some(true)),
    )
};

/// ZRANGESTORE.
pub const ZRANGESTORE: Spec = Spec {
    flags: &["write", "denyoom"],
    keys: (1, 2, 1),
    acl: &["@write", "@sortedset", "@slow"],
    since: "6.2.0",
    complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
    ..spec(
        "zrangestore",
        -5,
        "Store a range of members from sorted set into another key",
        range_store,
    )
};

/// ZCOUNT and ZLEXCOUNT: the size of a score or lex range.
fn count(
    ctx: &mut Ctx,
    args: &[Bytes],
    parse: fn(&Bytes) -> Result<End, Error>,
) -> Result<(), Error> {
    let (low, high) = (parse(&args[2])?, parse(&args[3])?);
    read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
        ctx.w()
            .integer(zset.map_or(0, |z| low.ranks(&high, z).len()) as i64);
        Ok(())
    })
}

/// ZCOUNT.
pub const ZCOUNT: Spec = Spec {
    flags: &["readonly", "fast"],
    acl: &["@read", "@sortedset", "@fast"],
    since: "2.0.0",
    complexity: "O(log(N)) with N being the number of elements in the sorted set.",
    ..spec(
        "zcount",
        4,
        "Count the members in a sorted set with scores within the given values",
        |ctx, args| count(ctx, args, End::score),
    )
};

/// ZLEXCOUNT.
pub const ZLEXCOUNT: Spec = Spec {
    name: "zlexcount",
    summary: "Count the number of members in a sorted set between a given lexicographical range",
    since: "2.8.9",
    run: |ctx, args| count(ctx, args, End::lex),
    ..ZCOUNT
};
