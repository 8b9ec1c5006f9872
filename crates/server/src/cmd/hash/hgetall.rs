//! Whole-hash reads: HGETALL (a map in RESP3), HKEYS and HVALS.

use keel_store::Hash;

use crate::cmd::context::collection::read;
use crate::cmd::context::{Spec, BASE};

/// What part of each pair a whole-hash read returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: 2,
        flags: &["readonly"],
        keys: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash",
        summary,
        since: "2.0.0",
        complexity: "O(N) where N is the size of the hash.",
        run,
        ..BASE
    }
}

/// HGETALL.
pub const HGETALL: Spec = spec(
    "hgetall",
    "Get all the fields and values in a hash",
    |ctx, args| reply(ctx, &args[1], Part::Both),
);
/// HKEYS.
pub const HKEYS: Spec = spec("hkeys", "Get all the fields in a hash", |ctx, args| {
    reply(ctx, &args[1], Part::Fields)
});
/// HVALS.
pub const HVALS: Spec = spec("hvals", "Get all the values in a hash", |ctx, args| {
    reply(ctx, &args[1], Part::Values)
});

fn reply(
    ctx: &mut crate::cmd::context::Ctx,
    key: &[u8],
    part: Part,
) -> Result<(), crate::cmd::context::Error> {
    read(ctx, key, |ctx, hash: Option<&Hash>| {
        let len = hash.map_or(0, Hash::len);
        let mut w = ctx.w();
        match part {
            Part::Both => w.map(len),
            _ => w.array(len),
        }
        for (field, value) in hash.into_iter().flat_map(Hash::iter) {
            if part != Part::Values {
                w.bulk(field);
            }
            if part != Part::Fields {
                w.bulk(value);
            }
        }
        Ok(())
    })
}
