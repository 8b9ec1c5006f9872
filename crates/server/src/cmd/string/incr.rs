//! INCR, DECR, INCRBY, DECRBY: add to the integer stored at a key (0 when
//! missing), keeping its TTL, with Redis's overflow errors.

use keel_store::{Lookup, Str, Value, ValueRef};

use crate::cmd::context::{errors, parse_i64, Ctx, Error, Events, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["write", "denyoom", "fast"],
        keys: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string",
        summary,
        run,
        ..BASE
    }
}

/// INCR.
pub const INCR: Spec = spec(
    "incr",
    2,
    "Increment the integer value of a key by one",
    |ctx, args| add(ctx, &args[1], 1),
);
/// DECR.
pub const DECR: Spec = spec(
    "decr",
    2,
    "Decrement the integer value of a key by one",
    |ctx, args| add(ctx, &args[1], -1),
);
/// INCRBY.
pub const INCRBY: Spec = spec(
    "incrby",
    3,
    "Increment the integer value of a key by the given amount",
    |ctx, args| add(ctx, &args[1], parse_i64(&args[2])?),
);
/// DECRBY.
pub const DECRBY: Spec = spec(
    "decrby",
    3,
    "Decrement the integer value of a key by the given number",
    |ctx, args| {
        let by = parse_i64(&args[2])?;
        let negated = by
            .checked_neg()
            .ok_or(Error::from("ERR decrement would overflow"))?;
        add(ctx, &args[1], negated)
    },
);

fn add(ctx: &mut Ctx, key: &[u8], by: i64) -> Result<(), Error> {
    let db = ctx.db();
    let hashed = db.key(key);
    let mut shard = db.write(hashed);
    let result = match shard.entry(hashed) {
        Lookup::Found(mut entry) => {
            let current = match entry.entry().value() {
                ValueRef::Str(s) => s.as_i64().ok_or(Error::from(errors::NOT_INTEGER))?,
                _ => return Err(errors::WRONGTYPE.into()),
            };
            let next = current
                .checked_add(by)
                .ok_or(Error::from(errors::OVERFLOW))?;
            entry.set_int(next);
            next
        }
        Lookup::Missing(vacant) => {
            vacant.insert(Value::Str(Str::Int(by)), None);
            by
        }
    };
    ctx.notify(Events::STRING, "incrby", key);
    ctx.w().integer(result);
    Ok(())
}
