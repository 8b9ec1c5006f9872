//! PING [message] — PONG, or the message back.

use bytes::Bytes;

use super::{Ctx, Error, Spec, BASE};

/// PING.
pub const SPEC: Spec = Spec {
    name: "ping",
    arity: -1,
    flags: &["fast"],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Returns the server's liveliness response.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match args {
        [_] => ctx.w().simple("PONG"),
        [_, message] => ctx.w().bulk(message),
        _ => return Err("ERR wrong number of arguments for 'ping' command".into()),
    }
    Ok(())
}
