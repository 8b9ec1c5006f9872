//! SELECT index — switch the connection's database.

use bytes::Bytes;

use crate::cmd::context::{parse_i64, Ctx, Error, Spec, BASE};

/// SELECT.
pub const SPEC: Spec = Spec {
    name: "select",
    arity: 2,
    flags: &["loading", "stale", "fast"],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Change the selected database for the current connection",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let index = parse_i64(&args[1])?;
    if ctx.server.cluster.is_some() && index != 0 {
        return Err("ERR SELECT is not allowed in cluster mode".into());
    }
    if index < 0 || index as usize >= ctx.server.store.databases() {
        return Err("ERR DB index is out of range".into());
    }
    ctx.client.db = index as usize;
    ctx.w().ok();
    Ok(())
}
