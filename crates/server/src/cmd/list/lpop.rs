//! LPOP and RPOP key [count].

use bytes::Bytes;
use keel_store::{End, List};

use crate::cmd::context::collection::{limits, pop_event, update, Edit, Missing};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -2,
        flags: &["write", "fast"],
        keys: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list",
        summary,
        complexity: "O(N) where N is the number of elements returned",
        run,
        ..BASE
    }
}

/// LPOP.
pub const LPOP: Spec = spec(
    "lpop",
    "Remove and get the first elements in a list",
    |ctx, args| pop(ctx, args, End::Left, "lpop"),
);

/// RPOP.
pub const RPOP: Spec = spec(
    "rpop",
    "Remove and get the last elements in a list",
    |ctx, args| pop(ctx, args, End::Right, "rpop"),
);

/// Without a count: the element or nil. With one: an array of up to
/// `count` elements, a null array for a missing key, and (once the type is
/// checked) an empty array for a count of 0, as Redis answers.
fn pop(ctx: &mut Ctx, args: &[Bytes], end: End, name: &str) -> Result<(), Error> {
    let count = match args.len() {
        2 => None,
        3 => match keel_store::parse_canonical_i64(&args[2]) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => return Err("ERR value is out of range, must be positive".into()),
        },
        _ => return Err(crate::cmd::context::wrong_arity(name)),
    };
    let limits = limits(ctx);
    let popped = update(
        ctx,
        &args[1],
        Missing::Skip,
        pop_event(end),
        |list: &mut List| {
            let n = count.unwrap_or(1).min(list.len());
            let popped: Vec<_> = (0..n).filter_map(|_| list.pop(end, &limits)).collect();
            Ok(Edit::changed_if(!popped.is_empty(), popped))
        },
    )?;
    let mut w = ctx.w();
    match (count, popped) {
        (None, Some(elements)) => w.bulk(&elements[0]),
        (None, None) => w.null(),
        (Some(_), None) => w.null_array(),
        (Some(_), Some(elements)) => {
            w.array(elements.len());
            elements.iter().for_each(|e| w.bulk(e));
        }
    }
    Ok(())
}
