//! RESET — return the connection to its initial state: database 0, RESP2,
//! no name, and unauthenticated if a password is required.

use bytes::Bytes;
use keel_resp::Protocol;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// RESET.
pub const SPEC: Spec = Spec {
    name: "reset",
    arity: 1,
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
    summary: "Reset the connection",
    since: "6.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    crate::cmd::context::transaction::discard(ctx.server, ctx.client, ctx.now_ms);
    let id = ctx.client.handle.id;
    ctx.client.subscriptions.leave_all(&ctx.server.pubsub, id);
    let client = &mut *ctx.client;
    client.db = 0;
    client.protocol = Protocol::Resp2;
    client.handle.set_protocol(Protocol::Resp2);
    client.handle.set_name(String::new());
    client.handle.set_no_evict(false);
    client.handle.set_no_touch(false);
    client.reply_mode = crate::client::ReplyMode::On;
    client.note_subscriptions();
    client.acl.reset(&ctx.server.acl);
    client.handle.set_user(b"default");
    ctx.w().simple("RESET");
    Ok(())
}
