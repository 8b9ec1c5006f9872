//! LMOVE source destination LEFT|RIGHT LEFT|RIGHT and RPOPLPUSH source
//! destination; the pop-and-maybe-push step they share with BLPOP, BRPOP
//! and BLMOVE is `context::pop`.

use bytes::Bytes;
use keel_store::End;

use crate::cmd::context::collection::limits;
use crate::cmd::context::pop::{end, Pop};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// LMOVE.
pub const LMOVE: Spec = Spec {
    name: "lmove",
    arity: 5,
    flags: &["write", "denyoom"],
    keys: (1, 2, 1),
    acl: &["@write", "@list", "@slow"],
    group: "list",
    summary: "Pop an element from a list, push it to another list and return it",
    since: "6.2.0",
    run: |ctx, args| {
        let pop = Pop {
            from: end(&args[3])?,
            to: Some((args[2].clone(), end(&args[4])?)),
        };
        reply_moved(ctx, &args[1], &pop)
    },
    ..BASE
};

/// RPOPLPUSH.
pub const RPOPLPUSH: Spec = Spec {
    name: "rpoplpush",
    arity: 3,
    summary: "Remove the last element in a list, prepend it to another list and return it",
    since: "1.2.0",
    run: |ctx, args| {
        let pop = Pop {
            from: End::Right,
            to: Some((args[2].clone(), End::Left)),
        };
        reply_moved(ctx, &args[1], &pop)
    },
    ..LMOVE
};

/// Runs a move at once and replies with the element or nil.
fn reply_moved(ctx: &mut Ctx, source: &Bytes, pop: &Pop) -> Result<(), Error> {
    let limits = limits(ctx);
    let db = ctx.db();
    let mut locked = db.write_many(&pop.keys(source));
    let moved = pop.apply(&mut locked, source, &limits, ctx.notifier())?;
    match moved {
        Some(element) => ctx.w().bulk(&element),
        None => ctx.w().null(),
    }
    Ok(())
}
