//! The blocking pops: BLPOP and BRPOP key [key ...] timeout, BLMOVE
//! source destination LEFT|RIGHT LEFT|RIGHT timeout, and BRPOPLPUSH source
//! destination timeout (BLMOVE source destination RIGHT LEFT); the way they try and
//! block, which the sorted-set ones (`bzpop`) share, is `context::pop`.
//!
//! Each first tries at once, keys in order, exactly as LPOP/RPOP/LMOVE
//! would. If every key is missing the client blocks (see
//! `crate::blocking`); inside a transaction it does not block and answers
//! nil at once, as Redis does.

use bytes::Bytes;
use keel_store::End;

use crate::blocking::Wait;
use crate::cmd::context::pop::{block, deadline, end, pop_first, Pop};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["write", "noscript", "blocking"],
        keys: (1, -2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list",
        summary,
        since: "2.0.0",
        complexity: "O(N) where N is the number of provided keys.",
        run,
        ..BASE
    }
}

/// BLPOP.
pub const BLPOP: Spec = spec(
    "blpop",
    "Remove and get the first element in a list, or block until one is available",
    |ctx, args| pop_any(ctx, args, End::Left),
);

/// BRPOP.
pub const BRPOP: Spec = spec(
    "brpop",
    "Remove and get the last element in a list, or block until one is available",
    |ctx, args| pop_any(ctx, args, End::Right),
);

/// BLMOVE.
pub const BLMOVE: Spec = Spec {
    arity: 6,
    flags: &["write", "denyoom", "noscript", "blocking"],
    keys: (1, 2, 1),
    since: "6.2.0",
    complexity: "O(1)",
    ..spec(
        "blmove",
        "Pop an element from a list, push it to another list and return it; or block until one is available",
        |ctx, args| {
            let pop = Pop {
                from: end(&args[3])?,
                to: Some((args[2].clone(), end(&args[4])?)),
            };
            let deadline = deadline(&args[5])?;
            block(ctx, &args[1..2], Wait::List(pop), deadline)
        },
    )
};

/// BRPOPLPUSH.
pub const BRPOPLPUSH: Spec = Spec {
    name: "brpoplpush",
    arity: 4,
    summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
    since: "2.2.0",
    run: |ctx, args| {
        let pop = Pop {
            from: End::Right,
            to: Some((args[2].clone(), End::Left)),
        };
        let deadline = deadline(&args[3])?;
        block(ctx, &args[1..2], Wait::List(pop), deadline)
    },
    ..BLMOVE
};

fn pop_any(ctx: &mut Ctx, args: &[Bytes], from: End) -> Result<(), Error> {
    pop_first(ctx, args, Wait::List(Pop { from, to: None }))
}
