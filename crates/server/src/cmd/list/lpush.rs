//! LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...].

use bytes::Bytes;
use keel_store::{End, List};

use crate::cmd::context::collection::{limits, push_event, update, Edit, Missing};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["write", "denyoom", "fast"],
        keys: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list",
        summary,
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        run,
        ..BASE
    }
}

/// LPUSH.
pub const LPUSH: Spec = spec(
    "lpush",
    "Prepend one or multiple elements to a list",
    |ctx, args| push(ctx, args, End::Left, Missing::Create),
);

/// RPUSH.
pub const RPUSH: Spec = spec(
    "rpush",
    "Append one or multiple elements to a list",
    |ctx, args| push(ctx, args, End::Right, Missing::Create),
);

/// LPUSHX.
pub const LPUSHX: Spec = Spec {
    since: "2.2.0",
    ..spec(
        "lpushx",
        "Prepend an element to a list, only if the list exists",
        |ctx, args| push(ctx, args, End::Left, Missing::Skip),
    )
};

/// RPUSHX.
pub const RPUSHX: Spec = Spec {
    since: "2.2.0",
    ..spec(
        "rpushx",
        "Append an element to a list, only if the list exists",
        |ctx, args| push(ctx, args, End::Right, Missing::Skip),
    )
};

/// Pushes `args[2..]` one by one at `end`; replies with the new length (0
/// for an X form on a missing key).
fn push(ctx: &mut Ctx, args: &[Bytes], end: End, missing: Missing) -> Result<(), Error> {
    let limits = limits(ctx);
    let len = update(
        ctx,
        &args[1],
        missing,
        push_event(end),
        |list: &mut List| {
            args[2..].iter().for_each(|e| list.push(end, e, &limits));
            Ok(Edit::changed(list.len()))
        },
    )?;
    ctx.w().integer(len.unwrap_or(0) as i64);
    Ok(())
}
