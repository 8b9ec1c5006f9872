//! XRANGE key start end [COUNT count] and XREVRANGE key end start [COUNT
//! count] — the entries between two IDs (`-` and `+` for the ends, `(` for
//! an exclusive one), oldest or newest first.

use bytes::Bytes;
use keel_store::Stream;

use crate::cmd::context::collection::read;
use crate::cmd::context::stream::{parse_count, parse_range_end, write_entries};
use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};

/// XRANGE.
pub const XRANGE: Spec = Spec {
    name: "xrange",
    arity: -4,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@stream", "@slow"],
    group: "stream",
    summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval",
    since: "5.0.0",
    complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
    run: |ctx, args| range(ctx, args, false),
    ..BASE
};

/// XREVRANGE.
pub const XREVRANGE: Spec = Spec {
    name: "xrevrange",
    summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
    complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
    run: |ctx, args| range(ctx, args, true),
    ..XRANGE
};

fn range(ctx: &mut Ctx, args: &[Bytes], rev: bool) -> Result<(), Error> {
    let (start, end) = match rev {
        true => (&args[3], &args[2]),
        false => (&args[2], &args[3]),
    };
    let start = parse_range_end(start, true)?;
    let end = parse_range_end(end, false)?;
    let mut count = None;
    let mut options = args[4..].iter();
    while let Some(option) = options.next() {
        match options.next() {
            Some(n) if is(option, "count") => count = Some(parse_count(n)?),
            _ => return Err(errors::SYNTAX.into()),
        }
    }
    read(ctx, &args[1], |ctx, stream: Option<&Stream>| {
        let mut w = ctx.w();
        let Some(stream) = stream else {
            w.array(0);
            return Ok(());
        };
        if count == Some(0) {
            w.null_array();
            return Ok(());
        }
        let limit = count.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let entries: Vec<_> = match rev {
            true => stream.range_rev(start, end).take(limit).collect(),
            false => stream.range(start, end).take(limit).collect(),
        };
        write_entries(&mut w, &entries);
        Ok(())
    })
}
