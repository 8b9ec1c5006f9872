//! TIME — the server's clock as [seconds, microseconds].

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// TIME.
pub const SPEC: Spec = Spec {
    name: "time",
    arity: 1,
    flags: &["loading", "stale", "fast"],
    acl: &["@fast"],
    group: "server",
    summary: "Return the current server time",
    since: "2.6.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut w = ctx.w();
    w.array(2);
    w.bulk(now.as_secs().to_string().as_bytes());
    w.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}
