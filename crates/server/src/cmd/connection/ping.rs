//! PING [message] — PONG, or the message back.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// PING.
pub const SPEC: Spec = Spec {
    name: "ping",
    arity: -1,
    flags: &["fast"],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Ping the server",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() > 2 {
        return Err("ERR wrong number of arguments for 'ping' command".into());
    }
    let message = args.get(1);
    // A RESP2 connection in subscribed mode can only receive arrays, so
    // Redis answers ["pong", message].
    if ctx.client.subscriptions.any() && ctx.client.protocol == keel_resp::Protocol::Resp2 {
        let mut w = ctx.w();
        w.array(2);
        w.bulk(b"pong");
        w.bulk(message.map_or(&b""[..], |m| &m[..]));
        return Ok(());
    }
    match message {
        None => ctx.w().simple("PONG"),
        Some(message) => ctx.w().bulk(message),
    }
    Ok(())
}
