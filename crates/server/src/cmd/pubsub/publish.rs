//! PUBLISH channel message, and PUBSUB CHANNELS | NUMSUB | NUMPAT.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE, HELP};

/// PUBLISH.
pub const PUBLISH: Spec = Spec {
    name: "publish",
    arity: 3,
    flags: &["pubsub", "loading", "stale", "fast"],
    acl: &["@pubsub", "@fast"],
    group: "pubsub",
    summary: "Posts a message to a channel.",
    since: "2.0.0",
    complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
    run: |ctx, args| {
        let receivers = ctx.server.pubsub.publish(&args[1], &args[2]);
        ctx.w().integer(receivers as i64);
        Ok(())
    },
    ..BASE
};

/// PUBSUB (container).
pub const PUBSUB: Spec = Spec {
    name: "pubsub",
    arity: -2,
    acl: &["@slow"],
    group: "pubsub",
    summary: "A container for Pub/Sub commands.",
    since: "2.8.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&CHANNELS, &NUMSUB, &NUMPAT, &PUBSUB_HELP],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["pubsub", "loading", "stale"],
    acl: &["@pubsub", "@slow"],
    group: "pubsub",
    since: "2.8.0",
    ..BASE
};

const CHANNELS: Spec = Spec {
    name: "pubsub|channels",
    arity: -2,
    summary: "Returns the active channels.",
    complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
    run: channels,
    ..SUB
};

const NUMSUB: Spec = Spec {
    name: "pubsub|numsub",
    arity: -2,
    summary: "Returns a count of subscribers to channels.",
    complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
    run: numsub,
    ..SUB
};

const NUMPAT: Spec = Spec {
    name: "pubsub|numpat",
    arity: 2,
    summary: "Returns a count of unique pattern subscriptions.",
    run: |ctx, _| {
        let n = ctx.server.pubsub.pattern_count();
        ctx.w().integer(n as i64);
        Ok(())
    },
    ..SUB
};

const PUBSUB_HELP: Spec = Spec {
    name: "pubsub|help",
    since: "6.2.0",
    ..HELP
};

fn channels(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() > 3 {
        return Err("ERR wrong number of arguments for 'pubsub|channels' command".into());
    }
    let found = ctx
        .server
        .pubsub
        .active_channels(args.get(2).map(|p| &p[..]));
    let mut w = ctx.w();
    w.array(found.len());
    found.iter().for_each(|c| w.bulk(c));
    Ok(())
}

fn numsub(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let counts: Vec<usize> = args[2..]
        .iter()
        .map(|c| ctx.server.pubsub.subscriber_count(c))
        .collect();
    let mut w = ctx.w();
    w.map(counts.len());
    for (channel, count) in args[2..].iter().zip(counts) {
        w.bulk(channel);
        w.integer(count as i64);
    }
    Ok(())
}
