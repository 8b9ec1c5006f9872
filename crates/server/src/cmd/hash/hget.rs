//! Reads of single fields: HGET, HMGET, HEXISTS, HSTRLEN, and HLEN.

use keel_store::Hash;

use crate::cmd::context::collection::read;
use crate::cmd::context::{Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["readonly", "fast"],
        keys: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash",
        summary,
        since: "2.0.0",
        run,
        member: 2,
        ..BASE
    }
}

/// HGET.
pub const HGET: Spec = spec("hget", 3, "Get the value of a hash field", |ctx, args| {
    read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
        match hash.and_then(|h| h.get(&args[2])) {
            Some(v) => ctx.w().bulk(v),
            None => ctx.w().null(),
        }
        Ok(())
    })
});

/// HMGET.
pub const HMGET: Spec = Spec {
    complexity: "O(N) where N is the number of fields being requested.",
    ..spec(
        "hmget",
        -3,
        "Get the values of all the given hash fields",
        |ctx, args| {
            read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
                let mut w = ctx.w();
                w.array(args.len() - 2);
                for field in &args[2..] {
                    match hash.and_then(|h| h.get(field)) {
                        Some(v) => w.bulk(v),
                        None => w.null(),
                    }
                }
                Ok(())
            })
        },
    )
};

/// HEXISTS.
pub const HEXISTS: Spec = spec(
    "hexists",
    3,
    "Determine if a hash field exists",
    |ctx, args| {
        read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
            let found = hash.is_some_and(|h| h.get(&args[2]).is_some());
            ctx.w().integer(found as i64);
            Ok(())
        })
    },
);

/// HSTRLEN.
pub const HSTRLEN: Spec = Spec {
    since: "3.2.0",
    ..spec(
        "hstrlen",
        3,
        "Get the length of the value of a hash field",
        |ctx, args| {
            read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
                let len = hash.and_then(|h| h.get(&args[2])).map_or(0, <[u8]>::len);
                ctx.w().integer(len as i64);
                Ok(())
            })
        },
    )
};

/// HLEN.
pub const HLEN: Spec = Spec {
    member: 0,
    ..spec(
        "hlen",
        2,
        "Get the number of fields in a hash",
        |ctx, args| {
            read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
                ctx.w().integer(hash.map_or(0, Hash::len) as i64);
                Ok(())
            })
        },
    )
};
