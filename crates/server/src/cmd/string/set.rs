//! SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ts|KEEPTTL], and the
//! older forms that are SET with fixed options: SETNX, SETEX, PSETEX.
//!
//! The option parser and the store step are GETEX's and GETSET's too, as
//! in Redis (see `context::strings`).

use bytes::Bytes;

use crate::cmd::context::strings::{
    apply, option_deadline, parse_options, Applied, Kind, Options, Ttl,
};
use crate::cmd::context::{Ctx, Error, Spec, Unit, BASE};

/// SET.
pub const SET: Spec = Spec {
    name: "set",
    arity: -3,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Set the string value of a key",
    run: set,
    ..BASE
};

/// SETNX.
pub const SETNX: Spec = Spec {
    name: "setnx",
    arity: 3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Set the value of a key, only if the key does not exist",
    run: setnx,
    ..BASE
};

/// SETEX.
pub const SETEX: Spec = Spec {
    name: "setex",
    arity: 4,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Set the value and expiration of a key",
    since: "2.0.0",
    run: setex,
    ..BASE
};

/// PSETEX.
pub const PSETEX: Spec = Spec {
    name: "psetex",
    arity: 4,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Set the value and expiration in milliseconds of a key",
    since: "2.6.0",
    run: psetex,
    ..BASE
};

fn set(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = parse_options(args, 3, Kind::Set)?;
    let deadline = option_deadline(ctx, args, options.ttl, "set")?;
    match apply(ctx, &args[1], &args[2], options, deadline)? {
        Applied::Set if !options.get => ctx.w().ok(),
        Applied::Skipped if !options.get => ctx.w().null(),
        _ => {}
    }
    Ok(())
}

const PLAIN: Options = Options {
    nx: false,
    xx: false,
    get: false,
    ttl: Ttl::Default,
};

fn setnx(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = Options { nx: true, ..PLAIN };
    let stored = matches!(apply(ctx, &args[1], &args[2], options, None)?, Applied::Set);
    ctx.w().integer(stored as i64);
    Ok(())
}

fn set_with_ttl(ctx: &mut Ctx, args: &[Bytes], unit: Unit, command: &str) -> Result<(), Error> {
    let ttl = Ttl::Expire {
        arg: 2,
        unit,
        relative: true,
    };
    let deadline = option_deadline(ctx, args, ttl, command)?;
    apply(ctx, &args[1], &args[3], PLAIN, deadline)?;
    ctx.w().ok();
    Ok(())
}

fn setex(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    set_with_ttl(ctx, args, Unit::Seconds, "setex")
}

fn psetex(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    set_with_ttl(ctx, args, Unit::Milliseconds, "psetex")
}
