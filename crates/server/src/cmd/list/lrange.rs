//! List reads: LLEN, LRANGE and LINDEX.

use keel_store::List;

use crate::cmd::context::collection::{position, range, read};
use crate::cmd::context::{parse_i64, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["readonly"],
        keys: (1, 1, 1),
        acl: &["@read", "@list", "@slow"],
        group: "list",
        summary,
        run,
        ..BASE
    }
}

/// LLEN.
pub const LLEN: Spec = Spec {
    flags: &["readonly", "fast"],
    acl: &["@read", "@list", "@fast"],
    ..spec("llen", 2, "Get the length of a list", |ctx, args| {
        read(ctx, &args[1], |ctx, list: Option<&List>| {
            ctx.w().integer(list.map_or(0, List::len) as i64);
            Ok(())
        })
    })
};

/// LRANGE.
pub const LRANGE: Spec = Spec {
    complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
    ..spec(
        "lrange",
        4,
        "Get a range of elements from a list",
        |ctx, args| {
            let (start, stop) = (parse_i64(&args[2])?, parse_i64(&args[3])?);
            read(ctx, &args[1], |ctx, list: Option<&List>| {
                let range = list.map_or(0..0, |l| range(l.len(), start, stop));
                let mut w = ctx.w();
                w.array(range.len());
                if let Some(list) = list {
                    list.iter()
                        .skip(range.start)
                        .take(range.len())
                        .for_each(|e| w.bulk(e));
                }
                Ok(())
            })
        },
    )
};

/// LINDEX.
pub const LINDEX: Spec = Spec {
    complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
    ..spec(
        "lindex",
        3,
        "Get an element from a list by its index",
        |ctx, args| {
            // Redis looks the key up before it parses the index: a missing
            // key is nil and another type WRONGTYPE whatever the index.
            read(ctx, &args[1], |ctx, list: Option<&List>| {
                let Some(list) = list else {
                    ctx.w().null();
                    return Ok(());
                };
                let index = parse_i64(&args[2])?;
                let element = position(list.len(), index).and_then(|at| list.get(at));
                match element {
                    Some(e) => ctx.w().bulk(e),
                    None => ctx.w().null(),
                }
                Ok(())
            })
        },
    )
};
