//! PUBLISH channel message, SPUBLISH shardchannel message, and PUBSUB
//! CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB. A PUBLISH is
//! also sent to replicas, whose subscribers get it; SPUBLISH is not (Redis
//! sends it only within a cluster shard).

use bytes::Bytes;

use crate::pubsub::Kind;

use crate::cmd::context::{keys, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP};

/// PUBLISH.
pub const PUBLISH: Spec = Spec {
    name: "publish",
    arity: 3,
    flags: &["pubsub", "loading", "stale", "fast"],
    acl: &["@pubsub", "@fast"],
    group: "pubsub",
    summary: "Post a message to a channel",
    since: "2.0.0",
    complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
    run: |ctx, args| {
        let receivers = ctx.server.pubsub.publish(&args[1], &args[2]);
        // Replicas' subscribers get it too, as in Redis.
        ctx.replicate(args);
        ctx.w().integer(receivers as i64);
        Ok(())
    },
    ..BASE
};

/// SPUBLISH: its channel has a key position, as COMMAND INFO reports, but
/// is not a key.
pub const SPUBLISH: Spec = Spec {
    name: "spublish",
    keys: (1, 1, 1),
    getkeys: Some(keys::none),
    summary: "Post a message to a shard channel",
    since: "7.0.0",
    complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
    run: |ctx, args| {
        let receivers = ctx.server.pubsub.publish_shard(&args[1], &args[2]);
        ctx.w().integer(receivers as i64);
        Ok(())
    },
    ..PUBLISH
};

/// PUBSUB (container).
pub const PUBSUB: Spec = Spec {
    name: "pubsub",
    arity: -2,
    acl: &["@slow"],
    group: "pubsub",
    summary: "A container for Pub/Sub commands",
    since: "2.8.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CHANNELS,
        &NUMSUB,
        &NUMPAT,
        &SHARDCHANNELS,
        &SHARDNUMSUB,
        &PUBSUB_HELP,
    ],
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
    summary: "List active channels",
    complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
    run: |ctx, args| channels(ctx, Kind::Channel, args),
    ..SUB
};

const SHARDCHANNELS: Spec = Spec {
    name: "pubsub|shardchannels",
    arity: -2,
    summary: "List active shard channels",
    since: "7.0.0",
    complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
    run: |ctx, args| channels(ctx, Kind::Shard, args),
    ..SUB
};

const NUMSUB: Spec = Spec {
    name: "pubsub|numsub",
    arity: -2,
    summary: "Get the count of subscribers for channels",
    complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
    run: |ctx, args| numsub(ctx, Kind::Channel, args),
    ..SUB
};

const SHARDNUMSUB: Spec = Spec {
    name: "pubsub|shardnumsub",
    arity: -2,
    summary: "Get the count of subscribers for shard channels",
    since: "7.0.0",
    complexity:
        "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
    run: |ctx, args| numsub(ctx, Kind::Shard, args),
    ..SUB
};

const NUMPAT: Spec = Spec {
    name: "pubsub|numpat",
    arity: 2,
    summary: "Get the count of unique patterns pattern subscriptions",
    run: |ctx, _| {
        let n = ctx.server.pubsub.pattern_count();
        ctx.w().integer(n as i64);
        Ok(())
    },
    ..SUB
};

const PUBSUB_HELP: Spec = Spec {
    name: "pubsub|help",
    group: "pubsub",
    since: "6.2.0",
    ..HELP
};

fn channels(ctx: &mut Ctx, kind: Kind, args: &[Bytes]) -> Result<(), Error> {
    if args.len() > 3 {
        return Err(subcommand_syntax_error(args));
    }
    let pattern = args.get(2).map(|p| &p[..]);
    let found = ctx.server.pubsub.active_channels(kind, pattern);
    let mut w = ctx.w();
    w.array(found.len());
    found.iter().for_each(|c| w.bulk(c));
    Ok(())
}

fn numsub(ctx: &mut Ctx, kind: Kind, args: &[Bytes]) -> Result<(), Error> {
    let counts: Vec<usize> = args[2..]
        .iter()
        .map(|c| ctx.server.pubsub.subscriber_count(kind, c))
        .collect();
    let mut w = ctx.w();
    w.map(counts.len());
    for (channel, count) in args[2..].iter().zip(counts) {
        w.bulk(channel);
        w.integer(count as i64);
    }
    Ok(())
}
