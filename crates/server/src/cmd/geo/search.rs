//! Area searches: GEOSEARCH key FROMMEMBER member|FROMLONLAT longitude
//! latitude BYRADIUS radius unit|BYBOX width height unit [ASC|DESC]
//! [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]; GEOSEARCHSTORE
//! destination source ... [STOREDIST], which stores the points found
//! instead; and the older GEORADIUS key longitude latitude radius unit
//! ... and GEORADIUSBYMEMBER key member radius unit ... with [STORE key]
//! or [STOREDIST key], and their read-only forms GEORADIUS_RO and
//! GEORADIUSBYMEMBER_RO.
//!
//! One parser serves every form, as Redis's georadiusGeneric: the source
//! is type-checked first, arguments are read in order with their errors,
//! then the search runs (see `keel_store::geohash`). Points are unordered
//! unless ASC or DESC is given, or COUNT without ANY (which implies ASC);
//! ANY stops the search at COUNT points. A stored result holds each
//! member with its geohash score (STORE) or its distance in the unit
//! given (STOREDIST); an empty one deletes the destination.

use bytes::Bytes;
use keel_store::geohash::{self, Extent, Found, Shape, Sort};
use keel_store::{Value, ZSet};

use crate::cmd::context::collection::{limits, read, store_in};
use crate::cmd::context::geo::{
    parse_length, parse_point, parse_unit, write_coordinate, write_distance,
};
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Events, Handler, Spec, BASE};

/// Which command is running.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS: around `longitude latitude`.
    Radius,
    /// GEORADIUSBYMEMBER: around a member.
    RadiusByMember,
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

impl Form {
    /// Where the source key is.
    fn source_at(self) -> usize {
        if self == Form::SearchStore {
            2
        } else {
            1
        }
    }

    /// Where the options start.
    fn options_at(self) -> usize {
        match self {
            Form::Radius => 6,
            Form::RadiusByMember => 5,
            Form::Search => 2,
            Form::SearchStore => 3,
        }
    }

    fn is_search(self) -> bool {
        matches!(self, Form::Search | Form::SearchStore)
    }
}

/// Where the result goes.
struct Store {
    key: Bytes,
    /// STOREDIST: scored by distance rather than by geohash.
    distances: bool,
}

/// A parsed search over an existing source.
struct Request {
    shape: Shape,
    sort: Option<Sort>,
    /// COUNT; 0 means all.
    count: usize,
    any: bool,
    with_distance: bool,
    with_hash: bool,
    with_coordinates: bool,
}

/// The point of `member`, or Redis's error for a member that is missing.
fn member_point(zset: &ZSet, member: &[u8]) -> Result<(f64, f64), Error> {
    let score = zset
        .score(member)
        .ok_or("ERR could not decode requested zset member")?;
    Ok(geohash::decode_score(score))
}

/// `radius unit` from `args`.
fn parse_radius(args: &[Bytes]) -> Result<(Extent, f64), Error> {
    let radius = parse_length(&args[0], "radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((Extent::Radius(radius), parse_unit(&args[1])?))
}

/// `width height unit` from `args`.
fn parse_box(args: &[Bytes]) -> Result<(Extent, f64), Error> {
    let width = parse_length(&args[0], "width")?;
    let height = parse_length(&args[1], "height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((Extent::Box { width, height }, parse_unit(&args[2])?))
}

/// Parses every form's arguments in Redis's order, looking members up in
/// `zset` (`None` for a missing source, whose members are not looked up).
/// Returns the request (`None` when a missing source leaves its centre
/// unknown) and where to store the result, if anywhere.
fn parse(
    args: &[Bytes],
    form: Form,
    read_only: bool,
    zset: Option<&ZSet>,
) -> Result<(Option<Request>, Option<Store>), Error> {
    // The centre, and the extent with meters per unit, once given.
    let (mut centre, mut extent) = (None, None);
    match form {
        Form::Radius => {
            centre = Some(parse_point(&args[2..4])?);
            extent = Some(parse_radius(&args[4..6])?);
        }
        Form::RadiusByMember => {
            if let Some(zset) = zset {
                centre = Some(member_point(zset, &args[2])?);
                extent = Some(parse_radius(&args[3..5])?);
            }
        }
        Form::Search | Form::SearchStore => {}
    }
    let mut store = (form == Form::SearchStore).then(|| Store {
        key: args[1].clone(),
        distances: false,
    });
    let (mut from_member, mut from_point) = (false, false);
    let (mut by_radius, mut by_box) = (false, false);
    let (mut sort, mut count, mut any) = (None, 0, false);
    let (mut with_distance, mut with_hash, mut with_coordinates) = (false, false, false);
    let options = &args[form.options_at()..];
    let remaining = |i: usize| options.len() - i - 1;
    let may_store = !read_only && !form.is_search();
    let mut i = 0;
    while i < options.len() {
        let arg = &options[i];
        if is(arg, "withdist") {
            with_distance = true;
        } else if is(arg, "withhash") {
            with_hash = true;
        } else if is(arg, "withcoord") {
            with_coordinates = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            sort = Some(Sort::Nearest);
        } else if is(arg, "desc") {
            sort = Some(Sort::Farthest);
        } else if is(arg, "count") && remaining(i) >= 1 {
            let n = parse_i64(&options[i + 1])?;
            count = usize::try_from(n)
                .ok()
                .filter(|&n| n > 0)
                .ok_or("ERR COUNT must be > 0")?;
            i += 1;
        } else if may_store && (is(arg, "store") || is(arg, "storedist")) && remaining(i) >= 1 {
            store = Some(Store {
                key: options[i + 1].clone(),
                distances: is(arg, "storedist"),
            });
            i += 1;
        } else if form == Form::SearchStore && is(arg, "storedist") {
            if let Some(store) = &mut store {
                store.distances = true;
            }
        } else if form.is_search() && is(arg, "frommember") && remaining(i) >= 1 && !from_point {
            if let Some(zset) = zset {
                centre = Some(member_point(zset, &options[i + 1])?);
            }
            from_member = true;
            i += 1;
        } else if form.is_search() && is(arg, "fromlonlat") && remaining(i) >= 2 && !from_member {
            centre = Some(parse_point(&options[i + 1..i + 3])?);
            from_point = true;
            i += 2;
        } else if form.is_search() && is(arg, "byradius") && remaining(i) >= 2 && !by_box {
            extent = Some(parse_radius(&options[i + 1..i + 3])?);
            by_radius = true;
            i += 2;
        } else if form.is_search() && is(arg, "bybox") && remaining(i) >= 3 && !by_radius {
            extent = Some(parse_box(&options[i + 1..i + 4])?);
            by_box = true;
            i += 3;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    if store.is_some() && (with_distance || with_hash || with_coordinates) {
        let what = if form == Form::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )
        .into());
    }
    let name = || String::from_utf8_lossy(&args[0]).into_owned();
    if form.is_search() && !(from_member || from_point) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            name()
        )
        .into());
    }
    if form.is_search() && !(by_radius || by_box) {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            name()
        )
        .into());
    }
    if any && count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    let (Some((longitude, latitude)), Some((extent, meters_per_unit))) = (centre, extent) else {
        return Ok((None, store));
    };
    // COUNT means the nearest ones, unless ANY asked for any.
    if count != 0 && sort.is_none() && !any {
        sort = Some(Sort::Nearest);
    }
    let request = Request {
        shape: Shape {
            longitude,
            latitude,
            extent,
            meters_per_unit,
        },
        sort,
        count,
        any,
        with_distance,
        with_hash,
        with_coordinates,
    };
    Ok((Some(request), store))
}

/// Runs the search of `request` over `zset`: the points returned, in order.
fn find<'z>(zset: &'z ZSet, request: &Request) -> Vec<Found<'z>> {
    let limit = request.any.then_some(request.count);
    let mut found = geohash::search(zset, &request.shape, limit);
    let keep = match request.count {
        0 => found.len(),
        n => n.min(found.len()),
    };
    if let Some(sort) = request.sort {
        geohash::sort_by_distance(&mut found, sort, keep);
    }
    found.truncate(keep);
    found
}

/// Writes the points found, each with what WITHDIST, WITHHASH and
/// WITHCOORD asked for.
fn reply(ctx: &mut Ctx, found: &[Found], request: &Request) {
    let extras = [
        request.with_distance,
        request.with_hash,
        request.with_coordinates,
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    let mut w = ctx.w();
    w.array(found.len());
    for point in found {
        if w.is_full() {
            return;
        }
        if extras > 0 {
            w.array(extras + 1);
        }
        w.bulk(&point.member);
        if request.with_distance {
            write_distance(&mut w, point.distance / request.shape.meters_per_unit);
        }
        if request.with_hash {
            w.integer(point.score as i64);
        }
        if request.with_coordinates {
            w.array(2);
            write_coordinate(&mut w, point.longitude);
            write_coordinate(&mut w, point.latitude);
        }
    }
}

/// The keys a store may write: every argument after a STORE or STOREDIST
/// option (the parser later picks the one it uses), or GEOSEARCHSTORE's
/// destination.
fn destinations(args: &[Bytes], form: Form, read_only: bool) -> Vec<Bytes> {
    match form {
        Form::SearchStore => vec![args[1].clone()],
        Form::Search => Vec::new(),
        _ if read_only => Vec::new(),
        _ => {
            let options = &args[form.options_at()..];
            options
                .windows(2)
                .filter(|pair| is(&pair[0], "store") || is(&pair[0], "storedist"))
                .map(|pair| pair[1].clone())
                .collect()
        }
    }
}

/// Replies with the points of `zset` that `request` finds; none when the
/// source is missing.
fn search_reply(ctx: &mut Ctx, zset: Option<&ZSet>, request: Option<&Request>) {
    match (zset, request) {
        (Some(zset), Some(request)) => reply(ctx, &find(zset, request), request),
        _ => ctx.w().array(0),
    }
}

fn run(ctx: &mut Ctx, args: &[Bytes], form: Form, read_only: bool) -> Result<(), Error> {
    let source = &args[form.source_at()];
    let mut keys = destinations(args, form, read_only);
    if keys.is_empty() {
        return read(ctx, source, |ctx, zset: Option<&ZSet>| {
            let (request, _) = parse(args, form, read_only, zset)?;
            search_reply(ctx, zset, request.as_ref());
            Ok(())
        });
    }
    let limits = limits(ctx);
    let db = ctx.db();
    keys.push(source.clone());
    let mut locked = db.write_many(&keys);
    let entry = locked.peek(source);
    ctx.count_lookup(source, entry.is_some());
    let zset = match entry {
        None => None,
        Some(entry) => Some(entry.value().as_zset().ok_or(errors::WRONGTYPE)?),
    };
    let (request, store) = parse(args, form, read_only, zset)?;
    let Some(store) = store else {
        // No STORE option after all (STORE was an argument of another).
        search_reply(ctx, zset, request.as_ref());
        return Ok(());
    };
    let mut result = ZSet::default();
    if let (Some(zset), Some(request)) = (zset, &request) {
        for point in find(zset, request) {
            let score = if store.distances {
                point.distance / request.shape.meters_per_unit
            } else {
                point.score
            };
            result.insert(&point.member, score, &limits);
        }
    }
    let len = result.len();
    let value = Value::ZSet(Box::new(result));
    let event = match form {
        Form::SearchStore => "geosearchstore",
        _ => "georadiusstore",
    };
    store_in(
        ctx,
        locked.shard(&store.key),
        &store.key,
        value,
        (Events::ZSET, event),
    )?;
    ctx.w().integer(len as i64);
    Ok(())
}

const fn spec(name: &'static str, arity: i32, run: Handler) -> Spec {
    Spec {
        name,
        arity,
        flags: &["write", "denyoom", "movablekeys"],
        keys: (1, 1, 1),
        acl: &["@write", "@geo", "@slow"],
        group: "geo",
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        since: "3.2.0",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        run,
        ..BASE
    }
}

/// GEORADIUS.
pub const GEORADIUS: Spec = Spec {
    getkeys: Some(|spec, args| radius_keys(spec, args, 6)),
    ..spec("georadius", -6, |ctx, args| {
        run(ctx, args, Form::Radius, false)
    })
};

/// GEORADIUSBYMEMBER.
pub const GEORADIUSBYMEMBER: Spec = Spec {
    summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
    getkeys: Some(|spec, args| radius_keys(spec, args, 5)),
    ..spec("georadiusbymember", -5, |ctx, args| {
        run(ctx, args, Form::RadiusByMember, false)
    })
};

/// The keys of GEORADIUS and GEORADIUSBYMEMBER, whose options start at
/// `options_at`: the source, then the destinations of STORE and STOREDIST.
fn radius_keys<'a>(spec: &Spec, args: &'a [Bytes], options_at: usize) -> Option<Vec<&'a Bytes>> {
    let mut keys: Vec<&Bytes> = spec.key_args(args).collect();
    keys.extend(store_keys(args, options_at));
    Some(keys)
}

/// The keys after the first STORE and the first STOREDIST from `from` on,
/// as Redis's key specs find them (a keyword last in `args` names none).
fn store_keys(args: &[Bytes], from: usize) -> Vec<&Bytes> {
    let tail = args.get(from..args.len().saturating_sub(1)).unwrap_or(&[]);
    ["store", "storedist"]
        .iter()
        .filter_map(|keyword| {
            let at = tail.iter().position(|a| is(a, keyword))?;
            Some(&args[from + at + 1])
        })
        .collect()
}

/// GEORADIUS_RO.
pub const GEORADIUS_RO: Spec = Spec {
    flags: &["readonly"],
    acl: &["@read", "@geo", "@slow"],
    summary: "A read-only variant for GEORADIUS",
    since: "3.2.10",
    ..spec("georadius_ro", -6, |ctx, args| {
        run(ctx, args, Form::Radius, true)
    })
};

/// GEORADIUSBYMEMBER_RO.
pub const GEORADIUSBYMEMBER_RO: Spec = Spec {
    flags: &["readonly"],
    acl: &["@read", "@geo", "@slow"],
    summary: "A read-only variant for GEORADIUSBYMEMBER",
    since: "3.2.10",
    ..spec("georadiusbymember_ro", -5, |ctx, args| {
        run(ctx, args, Form::RadiusByMember, true)
    })
};

/// GEOSEARCH.
pub const GEOSEARCH: Spec = Spec {
    flags: &["readonly"],
    acl: &["@read", "@geo", "@slow"],
    summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
    since: "6.2.0",
    complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
    ..spec("geosearch", -7, |ctx, args| {
        run(ctx, args, Form::Search, true)
    })
};

/// GEOSEARCHSTORE.
pub const GEOSEARCHSTORE: Spec = Spec {
    name: "geosearchstore",
    arity: -8,
    flags: &["write", "denyoom"],
    keys: (1, 2, 1),
    acl: &["@write", "@geo", "@slow"],
    summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
    run: |ctx, args| run(ctx, args, Form::SearchStore, false),
    ..GEOSEARCH
};
