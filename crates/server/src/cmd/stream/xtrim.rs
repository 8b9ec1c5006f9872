//! XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count] — removes the
//! oldest entries, exactly or (with `~`) only as whole nodes, as Redis.

use keel_store::Stream;

use crate::cmd::context::collection::{limits, update, Edit, Missing};
use crate::cmd::context::stream::parse_add_or_trim;
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// XTRIM.
pub const SPEC: Spec = Spec {
    name: "xtrim",
    arity: -4,
    flags: &["write"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@slow"],
    group: "stream",
    summary: "Trims the stream to (approximately if '~' is passed) a certain size",
    since: "5.0.0",
    complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[bytes::Bytes]) -> Result<(), Error> {
    let limits = limits(ctx);
    let options = parse_add_or_trim(args, false, limits.stream_node_max_entries)?;
    let Some(trim) = options.trim else {
        return Err(crate::cmd::context::errors::SYNTAX.into());
    };
    let removed = update(ctx, &args[1], Missing::Skip, "xtrim", |s: &mut Stream| {
        let removed = s.trim(trim);
        Ok(Edit::changed_if(removed > 0, removed))
    })?;
    ctx.w().integer(removed.unwrap_or(0) as i64);
    Ok(())
}
