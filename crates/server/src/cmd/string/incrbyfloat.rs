//! INCRBYFLOAT key increment — add a decimal number to the number stored at
//! a key, with Redis's x87 `long double` arithmetic, emulated exactly (see
//! `context::long_double`).

use bytes::Bytes;
use keel_store::{Lookup, Str, Value};

use crate::cmd::context::long_double::increment;
use crate::cmd::context::{errors, journal, Ctx, Error, Events, Spec, BASE};

/// INCRBYFLOAT.
pub const SPEC: Spec = Spec {
    name: "incrbyfloat",
    arity: 3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Increment the float value of a key by the given amount",
    since: "2.6.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let key = &args[1];
    let db = ctx.db();
    let mut shard = db.write(key);
    let mut lookup = shard.entry(key);
    let current = match &lookup {
        Lookup::Found(e) => e
            .entry()
            .value()
            .as_str()
            .ok_or(Error::from(errors::WRONGTYPE))?
            .to_bytes()
            .into_owned(),
        Lookup::Missing(_) => b"0".to_vec(),
    };
    let text = increment(&current, &args[2])?;
    // Redis stores the result as a string, never int-encoded.
    let value = Value::Str(Str::Fixed(text.as_bytes().into()));
    match lookup {
        Lookup::Found(ref mut e) => *e.value_mut() = value,
        Lookup::Missing(vacant) => vacant.insert(value, None),
    }
    // The result, not the increment: replicas' floats could round apart.
    journal::propagate_as(vec![
        Bytes::from_static(b"SET"),
        key.clone(),
        Bytes::from(text.clone()),
        Bytes::from_static(b"KEEPTTL"),
    ]);
    ctx.notify(Events::STRING, "incrbyfloat", key);
    ctx.w().bulk(text.as_bytes());
    Ok(())
}
