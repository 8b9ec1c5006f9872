//! HINCRBY key field increment and HINCRBYFLOAT key field increment: add to
//! the number in a field (0 when missing), with Redis's errors.

use bytes::Bytes;
use keel_store::{parse_canonical_i64, Hash};

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::long_double::hash_increment;
use crate::cmd::context::{errors, journal, parse_i64, Error, Spec, BASE};

/// HINCRBY.
pub const HINCRBY: Spec = Spec {
    name: "hincrby",
    arity: 4,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    member: 2,
    acl: &["@write", "@hash", "@fast"],
    group: "hash",
    summary: "Increment the integer value of a hash field by the given number",
    since: "2.0.0",
    run: |ctx, args| {
        let by = parse_i64(&args[3])?;
        let limits = limits(ctx);
        let next = update(
            ctx,
            &args[1],
            Missing::Create,
            "hincrby",
            |hash: &mut Hash| {
                let current = match hash.get(&args[2]) {
                    None => 0,
                    Some(v) => parse_canonical_i64(v)
                        .ok_or(Error::from("ERR hash value is not an integer"))?,
                };
                let next = current
                    .checked_add(by)
                    .ok_or(Error::from(errors::OVERFLOW))?;
                hash.set(&args[2], next.to_string().as_bytes(), &limits);
                Ok(Edit::changed(next))
            },
        )?;
        ctx.w().integer(next.expect("created when missing"));
        Ok(())
    },
    ..BASE
};

/// HINCRBYFLOAT.
pub const HINCRBYFLOAT: Spec = Spec {
    name: "hincrbyfloat",
    summary: "Increment the float value of a hash field by the given amount",
    since: "2.6.0",
    run: |ctx, args| {
        crate::cmd::context::long_double::check_hash_increment(&args[3])?;
        let limits = limits(ctx);
        let text = update(
            ctx,
            &args[1],
            Missing::Create,
            "hincrbyfloat",
            |hash: &mut Hash| {
                let current = hash.get(&args[2]).unwrap_or(b"0");
                let text = hash_increment(current, &args[3])?;
                hash.set(&args[2], text.as_bytes(), &limits);
                // The result, not the increment (see INCRBYFLOAT).
                journal::propagate_as(vec![
                    Bytes::from_static(b"HSET"),
                    args[1].clone(),
                    args[2].clone(),
                    Bytes::from(text.clone()),
                ]);
                Ok(Edit::changed(text))
            },
        )?;
        ctx.w().bulk(text.expect("created when missing").as_bytes());
        Ok(())
    },
    ..HINCRBY
};
