//! SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] — iterate the
//! keyspace a few keys at a time. Every key present for the whole iteration
//! is returned (see `keel_store::shard` for why the cursor guarantees it).

use bytes::Bytes;

use crate::cmd::context::collection::parse_cursor;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// SCAN.
pub const SPEC: Spec = Spec {
    name: "scan",
    arity: -2,
    flags: &["readonly"],
    acl: &["@keyspace", "@read", "@slow"],
    summary: "Incrementally iterate the keys space",
    since: "2.8.0",
    complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cursor = parse_cursor(&args[1])?;
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut type_name: Option<&[u8]> = None;
    let mut j = 2;
    while j < args.len() {
        let has_value = j + 1 < args.len();
        if is(&args[j], "count") && has_value {
            let n = parse_i64(&args[j + 1])?;
            if n < 1 {
                return Err(errors::SYNTAX.into());
            }
            count = n as usize;
        } else if is(&args[j], "match") && has_value {
            pattern = Some(&args[j + 1])
                .filter(|p| &p[..] != b"*")
                .map(|p| &p[..]);
        } else if is(&args[j], "type") && has_value {
            type_name = Some(&args[j + 1]);
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 2;
    }
    let (next, keys) = ctx.db().scan(cursor, count, |entry| {
        pattern.is_none_or(|p| keel_store::glob_match(p, entry.key(), false))
            && type_name
                .is_none_or(|t| t.eq_ignore_ascii_case(entry.value().type_name().as_bytes()))
    });
    let mut w = ctx.w();
    w.array(2);
    w.bulk(next.to_string().as_bytes());
    w.array(keys.len());
    keys.iter().for_each(|k| w.bulk(k));
    Ok(())
}
