//! SUBSCRIBE / UNSUBSCRIBE channel ... and PSUBSCRIBE / PUNSUBSCRIBE
//! pattern ...: join or leave pub/sub channels. Each channel gets its own
//! confirmation — `[kind, name, subscription count]`, a push in RESP3 —
//! as in Redis.

use bytes::Bytes;

use crate::pubsub::Kind;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags: &["pubsub", "noscript", "loading", "stale"],
        acl: &["@pubsub", "@slow"],
        group: "pubsub",
        summary,
        since: "2.0.0",
        complexity: "O(N) where N is the number of channels or patterns.",
        run,
        ..BASE
    }
}

/// SUBSCRIBE.
pub const SUBSCRIBE: Spec = spec(
    "subscribe",
    -2,
    "Listens for messages published to channels.",
    |ctx, args| join(ctx, Kind::Channel, &args[1..]),
);
/// UNSUBSCRIBE.
pub const UNSUBSCRIBE: Spec = spec(
    "unsubscribe",
    -1,
    "Stops listening to messages posted to channels.",
    |ctx, args| leave(ctx, Kind::Channel, &args[1..]),
);
/// PSUBSCRIBE.
pub const PSUBSCRIBE: Spec = spec(
    "psubscribe",
    -2,
    "Listens for messages published to channels that match one or more patterns.",
    |ctx, args| join(ctx, Kind::Pattern, &args[1..]),
);
/// PUNSUBSCRIBE.
pub const PUNSUBSCRIBE: Spec = spec(
    "punsubscribe",
    -1,
    "Stops listening to messages published to channels that match one or more patterns.",
    |ctx, args| leave(ctx, Kind::Pattern, &args[1..]),
);

fn confirm(ctx: &mut Ctx, what: &[u8], name: Option<&[u8]>) {
    let count = ctx.client.subscriptions.count();
    let mut w = ctx.w();
    w.push(3);
    w.bulk(what);
    match name {
        Some(name) => w.bulk(name),
        None => w.null(),
    }
    w.integer(count as i64);
}

fn join(ctx: &mut Ctx, kind: Kind, names: &[Bytes]) -> Result<(), Error> {
    let id = ctx.client.handle.id;
    let subs = &mut ctx.client.subscriptions;
    if subs.subscriber.is_none() {
        let (subscriber, receiver) = ctx.server.pubsub.inbox(ctx.client.handle.clone());
        subs.subscriber = Some(subscriber);
        subs.inbox = Some(receiver);
    }
    for name in names {
        let subs = &mut ctx.client.subscriptions;
        let set = match kind {
            Kind::Channel => &mut subs.channels,
            Kind::Pattern => &mut subs.patterns,
        };
        if set.insert(name.clone()) {
            let subscriber = subs.subscriber.as_ref().expect("created above");
            ctx.server.pubsub.subscribe(kind, name, id, subscriber);
        }
        let what: &[u8] = match kind {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
        };
        confirm(ctx, what, Some(name));
    }
    Ok(())
}

fn leave(ctx: &mut Ctx, kind: Kind, names: &[Bytes]) -> Result<(), Error> {
    let id = ctx.client.handle.id;
    let what: &[u8] = match kind {
        Kind::Channel => b"unsubscribe",
        Kind::Pattern => b"punsubscribe",
    };
    let subs = &ctx.client.subscriptions;
    let current = match kind {
        Kind::Channel => &subs.channels,
        Kind::Pattern => &subs.patterns,
    };
    // Without names: every current one; none at all still gets one reply.
    let names: Vec<Bytes> = if names.is_empty() {
        current.iter().cloned().collect()
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        confirm(ctx, what, None);
        return Ok(());
    }
    for name in names {
        let subs = &mut ctx.client.subscriptions;
        let set = match kind {
            Kind::Channel => &mut subs.channels,
            Kind::Pattern => &mut subs.patterns,
        };
        if set.remove(&name) {
            ctx.server.pubsub.unsubscribe(kind, &name, id);
        }
        confirm(ctx, what, Some(&name));
    }
    Ok(())
}
