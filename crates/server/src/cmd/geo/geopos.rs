//! Point reads: GEOPOS key [member ...] (each member's longitude and
//! latitude), GEOHASH key [member ...] (each as an 11-character standard
//! geohash) and GEODIST key member1 member2 [M|KM|FT|MI] (the distance
//! between two members). A missing member reads as nil, a missing key as
//! a set of missing members.

use bytes::Bytes;
use keel_store::{geohash, ZSet};

use crate::cmd::context::collection::read;
use crate::cmd::context::geo::{parse_unit, write_coordinate, write_distance};
use crate::cmd::context::{errors, Ctx, Error, Spec, BASE};

/// Writes, for each member in `members`, what `write` makes of its score,
/// or `missing` when it has none.
fn per_member(
    ctx: &mut Ctx,
    args: &[Bytes],
    write: fn(&mut keel_resp::Writer, f64),
    missing: fn(&mut keel_resp::Writer),
) -> Result<(), Error> {
    read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
        let mut w = ctx.w();
        let members = &args[2..];
        w.array(members.len());
        for member in members {
            match zset.and_then(|z| z.score(member)) {
                Some(score) => write(&mut w, score),
                None => missing(&mut w),
            }
        }
        Ok(())
    })
}

fn write_position(w: &mut keel_resp::Writer, score: f64) {
    let (longitude, latitude) = geohash::decode_score(score);
    w.array(2);
    write_coordinate(w, longitude);
    write_coordinate(w, latitude);
}

/// GEOPOS.
pub const GEOPOS: Spec = Spec {
    name: "geopos",
    arity: -2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@geo", "@slow"],
    group: "geo",
    summary: "Returns longitude and latitude of members of a geospatial index",
    since: "3.2.0",
    complexity: "O(N) where N is the number of members requested.",
    run: |ctx, args| per_member(ctx, args, write_position, |w| w.null_array()),
    ..BASE
};

/// GEOHASH.
pub const GEOHASH: Spec = Spec {
    name: "geohash",
    summary: "Returns members of a geospatial index as standard geohash strings",
    complexity:
        "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
    run: |ctx, args| {
        per_member(
            ctx,
            args,
            |w, score| w.bulk(&geohash::geohash_string(score)),
            |w| w.null(),
        )
    },
    ..GEOPOS
};

/// GEODIST.
pub const GEODIST: Spec = Spec {
    name: "geodist",
    arity: -4,
    summary: "Returns the distance between two members of a geospatial index",
    complexity: "O(log(N))",
    run: |ctx, args| {
        let meters_per_unit = match args.len() {
            4 => 1.0,
            5 => parse_unit(&args[4])?,
            _ => return Err(errors::SYNTAX.into()),
        };
        read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
            let scores = zset.and_then(|z| Some((z.score(&args[2])?, z.score(&args[3])?)));
            let mut w = ctx.w();
            match scores {
                None => w.null(),
                Some((a, b)) => {
                    let (lon1, lat1) = geohash::decode_score(a);
                    let (lon2, lat2) = geohash::decode_score(b);
                    let meters = geohash::distance(lon1, lat1, lon2, lat2);
                    write_distance(&mut w, meters / meters_per_unit);
                }
            }
            Ok(())
        })
    },
    ..GEOPOS
};
