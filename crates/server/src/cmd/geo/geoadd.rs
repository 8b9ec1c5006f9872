//! GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude
//! member ...]: adds points to a sorted set, each member scored with the
//! 52-bit geohash of its position.
//!
//! Every pair is checked before anything is added, as in Redis, which
//! validates all of them and then runs ZADD; like ZADD it replies with the
//! number of members added, or with CH of members added or moved.

use keel_store::{geohash, ZSet};

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::geo::parse_point;
use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};

/// GEOADD's options.
#[derive(Default, Clone, Copy)]
struct Flags {
    nx: bool,
    xx: bool,
    ch: bool,
}

fn run(ctx: &mut Ctx, args: &[bytes::Bytes]) -> Result<(), Error> {
    let mut flags = Flags::default();
    let mut at = 2;
    while let Some(arg) = args.get(at) {
        if is(arg, "nx") {
            flags.nx = true;
        } else if is(arg, "xx") {
            flags.xx = true;
        } else if is(arg, "ch") {
            flags.ch = true;
        } else {
            break;
        }
        at += 1;
    }
    let triples = &args[at..];
    if triples.is_empty() || !triples.len().is_multiple_of(3) || (flags.nx && flags.xx) {
        return Err(errors::SYNTAX.into());
    }
    let points = triples
        .chunks(3)
        .map(|t| {
            let (longitude, latitude) = parse_point(t)?;
            let score = geohash::score_of(longitude, latitude).ok_or(errors::SYNTAX)?;
            Ok((score as f64, &t[2]))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let limits = limits(ctx);
    let missing = if flags.xx {
        Missing::Skip
    } else {
        Missing::Create
    };
    let (mut added, mut moved) = (0, 0);
    update(ctx, &args[1], missing, "zadd", |zset: &mut ZSet| {
        for &(score, member) in &points {
            match zset.score(member) {
                None if !flags.xx => {
                    zset.insert(member, score, &limits);
                    added += 1;
                }
                Some(current) if !flags.nx && current != score => {
                    zset.insert(member, score, &limits);
                    moved += 1;
                }
                _ => {}
            }
        }
        Ok(Edit::changed_if(added + moved > 0, ()))
    })?;
    ctx.w()
        .integer(if flags.ch { added + moved } else { added });
    Ok(())
}

/// GEOADD.
pub const GEOADD: Spec = Spec {
    name: "geoadd",
    arity: -5,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@geo", "@slow"],
    group: "geo",
    summary:
        "Add one or more geospatial items in the geospatial index represented using a sorted set",
    since: "3.2.0",
    complexity:
        "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    run,
    ..BASE
};
