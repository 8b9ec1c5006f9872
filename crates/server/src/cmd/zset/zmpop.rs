//! ZMPOP numkeys key [key ...] MIN|MAX [COUNT count] and BZMPOP timeout
//! numkeys key [key ...] MIN|MAX [COUNT count]: up to `count` of the
//! lowest (or highest) scoring members of the first sorted set that has
//! any, replied with its key as [member, score] pairs; BZMPOP blocks until
//! one has (see `context::pop` and `crate::blocking`).

use bytes::Bytes;

use crate::blocking::Wait;
use crate::cmd::context::pop::{block, deadline, mpop_args, pop_at_once};
use crate::cmd::context::{errors, is, keys, Ctx, Error, Spec, BASE};

/// ZMPOP.
pub const ZMPOP: Spec = Spec {
    name: "zmpop",
    arity: -4,
    flags: &["write", "movablekeys"],
    getkeys: Some(keys::counted::<1>),
    acl: &["@write", "@sortedset", "@slow"],
    group: "sorted-set",
    summary: "Remove and return members with scores in a sorted set",
    since: "7.0.0",
    complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
    run: |ctx, args| zmpop(ctx, &args[1..], None),
    ..BASE
};

/// BZMPOP.
pub const BZMPOP: Spec = Spec {
    name: "bzmpop",
    arity: -5,
    flags: &["write", "blocking", "movablekeys"],
    getkeys: Some(keys::counted::<2>),
    acl: &["@write", "@sortedset", "@slow", "@blocking"],
    summary:
        "Remove and return members with scores in a sorted set or block until one is available",
    run: |ctx, args| zmpop(ctx, &args[2..], Some(&args[1])),
    ..ZMPOP
};

/// MIN or MAX: true for MAX.
fn max(arg: &[u8]) -> Result<bool, Error> {
    match arg {
        a if is(a, "min") => Ok(false),
        a if is(a, "max") => Ok(true),
        _ => Err(errors::SYNTAX.into()),
    }
}

/// Both forms: `args` from numkeys on; `timeout` for BZMPOP, read after the
/// other arguments, as Redis reads it.
fn zmpop(ctx: &mut Ctx, args: &[Bytes], timeout: Option<&Bytes>) -> Result<(), Error> {
    let mpop = mpop_args(args, max)?;
    let wait = Wait::ZSet {
        max: mpop.end,
        count: Some(mpop.count),
    };
    match timeout {
        Some(timeout) => block(ctx, mpop.keys, wait, deadline(timeout)?),
        None => pop_at_once(ctx, mpop.keys, wait),
    }
}
