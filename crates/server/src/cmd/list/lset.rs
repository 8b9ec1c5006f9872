//! List edits in place: LSET, LINSERT, LREM and LTRIM.

use keel_store::List;

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::collection::{position, range};
use crate::cmd::context::{errors, is, parse_i64, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["write"],
        keys: (1, 1, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list",
        summary,
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        run,
        ..BASE
    }
}

/// LSET.
pub const LSET: Spec = Spec {
    flags: &["write", "denyoom"],
    ..spec(
        "lset",
        4,
        "Set the value of an element in a list by its index",
        |ctx, args| {
            let limits = limits(ctx);
            // As in Redis, the key's type is checked before the index.
            let set = update(ctx, &args[1], Missing::Skip, "lset", |list: &mut List| {
                let index = parse_i64(&args[2])?;
                let at = position(list.len(), index).ok_or("ERR index out of range")?;
                list.set(at, &args[3], &limits);
                Ok(Edit::changed(()))
            })?;
            set.ok_or(errors::NO_SUCH_KEY)?;
            ctx.w().ok();
            Ok(())
        },
    )
};

/// LINSERT.
pub const LINSERT: Spec = Spec {
    flags: &["write", "denyoom"],
    since: "2.2.0",
    complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    ..spec(
        "linsert",
        5,
        "Insert an element before or after another element in a list",
        |ctx, args| {
            let after = match &args[2] {
                w if is(w, "before") => false,
                w if is(w, "after") => true,
                _ => return Err(errors::SYNTAX.into()),
            };
            let limits = limits(ctx);
            let len = update(ctx, &args[1], Missing::Skip, "linsert", |list: &mut List| {
                let Some(pivot) = list.iter().position(|e| e == &args[3][..]) else {
                    return Ok(Edit::unchanged(-1));
                };
                list.insert(pivot + usize::from(after), &args[4], &limits);
                Ok(Edit::changed(list.len() as i64))
            })?;
            ctx.w().integer(len.unwrap_or(0));
            Ok(())
        },
    )
};

/// LREM.
pub const LREM: Spec = Spec {
    complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
    ..spec("lrem", 4, "Remove elements from a list", |ctx, args| {
        let count = parse_i64(&args[2])?;
        let limits = limits(ctx);
        let removed = update(ctx, &args[1], Missing::Skip, "lrem", |list: &mut List| {
            // The indexes of the matches to remove: the first `count`
            // from the head, the last `-count` from the tail, or all.
            let element = &args[3][..];
            let matches: Vec<usize> = match count {
                0.. => {
                    let limit = if count == 0 {
                        usize::MAX
                    } else {
                        count as usize
                    };
                    let hits = list.iter().enumerate().filter(|(_, e)| *e == element);
                    hits.map(|(i, _)| i).take(limit).collect()
                }
                _ => {
                    let last = list.len() - 1;
                    let hits = list.iter_rev().enumerate().filter(|(_, e)| *e == element);
                    let mut from_head: Vec<usize> = hits
                        .map(|(i, _)| last - i)
                        .take(count.unsigned_abs() as usize)
                        .collect();
                    from_head.reverse();
                    from_head
                }
            };
            Ok(Edit::count(list.retain(&limits, |i, _| {
                matches.binary_search(&i).is_err()
            })))
        })?;
        ctx.w().integer(removed.unwrap_or(0) as i64);
        Ok(())
    })
};

/// LTRIM.
pub const LTRIM: Spec = Spec {
    complexity: "O(N) where N is the number of elements to be removed by the operation.",
    ..spec(
        "ltrim",
        4,
        "Trim a list to the specified range",
        |ctx, args| {
            let (start, stop) = (parse_i64(&args[2])?, parse_i64(&args[3])?);
            let limits = limits(ctx);
            update(ctx, &args[1], Missing::Skip, "ltrim", |list: &mut List| {
                let keep = range(list.len(), start, stop);
                // Redis signals LTRIM even when it keeps every element.
                Ok(Edit::changed(
                    list.retain(&limits, |i, _| keep.contains(&i)),
                ))
            })?;
            ctx.w().ok();
            Ok(())
        },
    )
};
