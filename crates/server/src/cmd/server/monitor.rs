//! MONITOR — stream every command the server runs to this connection
//! (see `crate::monitor` for the lines and `crate::pubsub` for their
//! delivery, bounded by the output limits and the client budget).

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// MONITOR.
pub const SPEC: Spec = Spec {
    name: "monitor",
    complexity: "",
    arity: 1,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Listen for all requests received by the server in real time",
    run,
    ..BASE
};

/// Makes the connection a monitor and answers OK; a monitor asking again
/// gets no reply, and inside EXEC it is refused, as in Redis.
fn run(ctx: &mut Ctx, _: &[bytes::Bytes]) -> Result<(), Error> {
    if ctx.client.tx.executing {
        return Err("ERR MONITOR isn't allowed for DENY BLOCKING client".into());
    }
    if ctx.client.subscriptions.monitor {
        return Ok(());
    }
    let subs = &mut ctx.client.subscriptions;
    if subs.subscriber.is_none() {
        let (subscriber, inbox) = ctx.server.pubsub.inbox(ctx.client.handle.clone());
        subs.subscriber = Some(subscriber);
        subs.inbox = Some(inbox);
    }
    let subscriber = subs.subscriber.as_ref().expect("created above");
    ctx.server
        .pubsub
        .add_monitor(ctx.client.handle.id, subscriber);
    subs.monitor = true;
    ctx.client.note_subscriptions();
    ctx.w().ok();
    Ok(())
}
