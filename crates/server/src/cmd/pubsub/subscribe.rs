//! SUBSCRIBE / UNSUBSCRIBE channel ..., PSUBSCRIBE / PUNSUBSCRIBE
//! pattern ... and SSUBSCRIBE / SUNSUBSCRIBE shardchannel ...: join or
//! leave pub/sub channels, patterns and shard channels. Each name gets its
//! own confirmation — `[kind, name, subscription count]`, a push in RESP3 —
//! as in Redis; the count is of channels and patterns for the first two
//! families and of shard channels for the third.

use bytes::Bytes;

use crate::pubsub::Kind;

use crate::cmd::context::{keys, Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    complexity: &'static str,
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
        complexity,
        run,
        ..BASE
    }
}

/// SUBSCRIBE.
pub const SUBSCRIBE: Spec = spec(
    "subscribe",
    -2,
    "Listen for messages published to the given channels",
    "O(N) where N is the number of channels to subscribe to.",
    |ctx, args| join(ctx, Kind::Channel, &args[1..]),
);
/// UNSUBSCRIBE.
pub const UNSUBSCRIBE: Spec = spec(
    "unsubscribe",
    -1,
    "Stop listening for messages posted to the given channels",
    "O(N) where N is the number of clients already subscribed to a channel.",
    |ctx, args| leave(ctx, Kind::Channel, &args[1..]),
);
/// PSUBSCRIBE.
pub const PSUBSCRIBE: Spec = spec(
    "psubscribe",
    -2,
    "Listen for messages published to channels matching the given patterns",
    "O(N) where N is the number of patterns the client is already subscribed to.",
    |ctx, args| join(ctx, Kind::Pattern, &args[1..]),
);
/// PUNSUBSCRIBE.
pub const PUNSUBSCRIBE: Spec = spec(
    "punsubscribe",
    -1,
    "Stop listening for messages posted to channels matching the given patterns",
    "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
    |ctx, args| leave(ctx, Kind::Pattern, &args[1..]),
);
/// SSUBSCRIBE: its channels have key positions, as COMMAND INFO reports,
/// but are not keys.
pub const SSUBSCRIBE: Spec = Spec {
    keys: (1, -1, 1),
    getkeys: Some(keys::none),
    since: "7.0.0",
    ..spec(
        "ssubscribe",
        -2,
        "Listen for messages published to the given shard channels",
        "O(N) where N is the number of shard channels to subscribe to.",
        |ctx, args| join(ctx, Kind::Shard, &args[1..]),
    )
};
/// SUNSUBSCRIBE.
pub const SUNSUBSCRIBE: Spec = Spec {
    keys: (1, -1, 1),
    getkeys: Some(keys::none),
    since: "7.0.0",
    ..spec(
        "sunsubscribe",
        -1,
        "Stop listening for messages posted to the given shard channels",
        "O(N) where N is the number of clients already subscribed to a shard channel.",
        |ctx, args| leave(ctx, Kind::Shard, &args[1..]),
    )
};

/// The confirmation's first element for joining (or leaving) `kind`.
fn confirmation(kind: Kind, joining: bool) -> &'static [u8] {
    match (kind, joining) {
        (Kind::Channel, true) => b"subscribe",
        (Kind::Pattern, true) => b"psubscribe",
        (Kind::Shard, true) => b"ssubscribe",
        (Kind::Channel, false) => b"unsubscribe",
        (Kind::Pattern, false) => b"punsubscribe",
        (Kind::Shard, false) => b"sunsubscribe",
    }
}

fn confirm(ctx: &mut Ctx, kind: Kind, joining: bool, name: Option<&[u8]>) {
    let subs = &ctx.client.subscriptions;
    let count = match kind {
        Kind::Shard => subs.shard_channels.len(),
        _ => subs.count(),
    };
    let mut w = ctx.w();
    w.push(3);
    w.bulk(confirmation(kind, joining));
    match name {
        Some(name) => w.bulk(name),
        None => w.null(),
    }
    w.integer(count as i64);
    ctx.pushes();
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
        if subs.of_kind(kind).insert(name.clone()) {
            let subscriber = subs.subscriber.as_ref().expect("created above");
            ctx.server.pubsub.subscribe(kind, name, id, subscriber);
        }
        confirm(ctx, kind, true, Some(name));
    }
    ctx.client.note_subscriptions();
    Ok(())
}

fn leave(ctx: &mut Ctx, kind: Kind, names: &[Bytes]) -> Result<(), Error> {
    let id = ctx.client.handle.id;
    // Without names: every current one; none at all still gets one reply.
    let names: Vec<Bytes> = match names {
        [] => ctx
            .client
            .subscriptions
            .of_kind(kind)
            .iter()
            .cloned()
            .collect(),
        names => names.to_vec(),
    };
    if names.is_empty() {
        confirm(ctx, kind, false, None);
        return Ok(());
    }
    for name in names {
        if ctx.client.subscriptions.of_kind(kind).remove(&name) {
            ctx.server.pubsub.unsubscribe(kind, &name, id);
        }
        confirm(ctx, kind, false, Some(&name));
    }
    ctx.client.note_subscriptions();
    Ok(())
}
