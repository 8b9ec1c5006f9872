//! ECHO message — the message back.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// ECHO.
pub const SPEC: Spec = Spec {
    name: "echo",
    arity: 2,
    flags: &["loading", "stale", "fast"],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Echo the given string",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    ctx.w().bulk(&args[1]);
    Ok(())
}
