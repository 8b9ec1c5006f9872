//! QUIT — reply OK and close the connection.

use bytes::Bytes;

use crate::client::AfterReply;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// QUIT.
pub const SPEC: Spec = Spec {
    name: "quit",
    arity: -1,
    flags: &[
        "noscript",
        "loading",
        "stale",
        "fast",
        "no_auth",
        "allow_busy",
    ],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Close the connection",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    ctx.w().ok();
    ctx.client.after_reply = Some(AfterReply::Close);
    Ok(())
}
