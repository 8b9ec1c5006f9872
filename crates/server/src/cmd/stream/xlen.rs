//! XLEN key — the number of entries in a stream.

use keel_store::Stream;

use crate::cmd::context::collection::read;
use crate::cmd::context::{Spec, BASE};

/// XLEN.
pub const SPEC: Spec = Spec {
    name: "xlen",
    arity: 2,
    flags: &["readonly", "fast"],
    keys: (1, 1, 1),
    acl: &["@read", "@stream", "@fast"],
    group: "stream",
    summary: "Return the number of entries in a stream",
    since: "5.0.0",
    run: |ctx, args| {
        let len = read(ctx, &args[1], |_, s: Option<&Stream>| {
            Ok(s.map_or(0, Stream::len))
        })?;
        ctx.w().integer(len as i64);
        Ok(())
    },
    ..BASE
};
