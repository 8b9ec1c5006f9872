//! LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count] and BLMPOP timeout
//! numkeys key [key ...] LEFT|RIGHT [COUNT count]: up to `count` elements
//! from one end of the first list that has any, replied with its key;
//! BLMPOP blocks until one has (see `context::pop` and `crate::blocking`).

use bytes::Bytes;

use crate::blocking::Wait;
use crate::cmd::context::pop::{block, deadline, end, mpop_args, pop_at_once};
use crate::cmd::context::{keys, Ctx, Error, Spec, BASE};

/// LMPOP.
pub const LMPOP: Spec = Spec {
    name: "lmpop",
    arity: -4,
    flags: &["write", "movablekeys"],
    getkeys: Some(keys::counted::<1>),
    acl: &["@write", "@list", "@slow"],
    group: "list",
    summary: "Pop elements from a list",
    since: "7.0.0",
    complexity:
        "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
    run: |ctx, args| lmpop(ctx, &args[1..], None),
    ..BASE
};

/// BLMPOP.
pub const BLMPOP: Spec = Spec {
    name: "blmpop",
    arity: -5,
    flags: &["write", "blocking", "movablekeys"],
    getkeys: Some(keys::counted::<2>),
    acl: &["@write", "@list", "@slow", "@blocking"],
    summary: "Pop elements from a list, or block until one is available",
    run: |ctx, args| lmpop(ctx, &args[2..], Some(&args[1])),
    ..LMPOP
};

/// Both forms: `args` from numkeys on; `timeout` for BLMPOP, read after the
/// other arguments, as Redis reads it.
fn lmpop(ctx: &mut Ctx, args: &[Bytes], timeout: Option<&Bytes>) -> Result<(), Error> {
    let mpop = mpop_args(args, end)?;
    let wait = Wait::ListMany {
        from: mpop.end,
        count: mpop.count,
    };
    match timeout {
        Some(timeout) => block(ctx, mpop.keys, wait, deadline(timeout)?),
        None => pop_at_once(ctx, mpop.keys, wait),
    }
}
