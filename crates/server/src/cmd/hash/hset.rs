//! HSET key field value [field value ...], HMSET (the same, replying OK) and
//! HSETNX key field value.

use bytes::Bytes;
use keel_store::Hash;

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

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
        acl: &["@write", "@hash", "@fast"],
        group: "hash",
        summary,
        since: "2.0.0",
        complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        run,
        member: 2,
        ..BASE
    }
}

/// HSET.
pub const HSET: Spec = spec(
    "hset",
    -4,
    "Set the string value of a hash field",
    |ctx, args| {
        let added = set_pairs(ctx, args, "hset")?;
        ctx.w().integer(added as i64);
        Ok(())
    },
);

/// HMSET.
pub const HMSET: Spec = Spec {
    complexity: "O(N) where N is the number of fields being set.",
    ..spec(
        "hmset",
        -4,
        "Set multiple hash fields to multiple values",
        |ctx, args| {
            set_pairs(ctx, args, "hmset")?;
            ctx.w().ok();
            Ok(())
        },
    )
};

/// HSETNX.
pub const HSETNX: Spec = Spec {
    complexity: "O(1)",
    ..spec(
        "hsetnx",
        4,
        "Set the value of a hash field, only if the field does not exist",
        |ctx, args| {
            let limits = limits(ctx);
            let added = update(ctx, &args[1], Missing::Create, "hset", |hash: &mut Hash| {
                let added = hash.get(&args[2]).is_none() && hash.set(&args[2], &args[3], &limits);
                Ok(Edit::changed_if(added, added))
            })?;
            ctx.w().integer(i64::from(added == Some(true)));
            Ok(())
        },
    )
};

/// Sets every field/value pair of `args[2..]`; returns how many were new.
fn set_pairs(ctx: &mut Ctx, args: &[Bytes], name: &str) -> Result<usize, Error> {
    if !args.len().is_multiple_of(2) {
        return Err(format!("ERR wrong number of arguments for '{name}' command").into());
    }
    let limits = limits(ctx);
    let added = update(ctx, &args[1], Missing::Create, "hset", |hash: &mut Hash| {
        Ok(Edit::changed(
            args[2..]
                .chunks(2)
                .filter(|pair| hash.set(&pair[0], &pair[1], &limits))
                .count(),
        ))
    })?;
    Ok(added.unwrap_or(0))
}
