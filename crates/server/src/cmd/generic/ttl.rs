//! TTL, PTTL, EXPIRETIME, PEXPIRETIME key — a key's remaining time or
//! deadline; -2 if the key does not exist, -1 if it has no TTL.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    since: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: 2,
        flags: &["readonly", "fast"],
        keys: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        summary,
        since,
        run,
        ..BASE
    }
}

/// TTL.
pub const TTL: Spec = spec(
    "ttl",
    "Get the time to live for a key in seconds",
    "1.0.0",
    |ctx, args| {
        // Rounded to the nearest second, as Redis does.
        reply(ctx, args, |deadline, now| {
            (deadline.saturating_sub(now) + 500) / 1000
        })
    },
);
/// PTTL.
pub const PTTL: Spec = spec(
    "pttl",
    "Get the time to live for a key in milliseconds",
    "2.6.0",
    |ctx, args| reply(ctx, args, |deadline, now| deadline.saturating_sub(now)),
);
/// EXPIRETIME.
pub const EXPIRETIME: Spec = spec(
    "expiretime",
    "Get the expiration Unix timestamp for a key",
    "7.0.0",
    |ctx, args| reply(ctx, args, |deadline, _| (deadline + 500) / 1000),
);
/// PEXPIRETIME.
pub const PEXPIRETIME: Spec = spec(
    "pexpiretime",
    "Get the expiration Unix timestamp for a key in milliseconds",
    "7.0.0",
    |ctx, args| reply(ctx, args, |deadline, _| deadline),
);

fn reply(ctx: &mut Ctx, args: &[Bytes], show: fn(u64, u64) -> u64) -> Result<(), Error> {
    let db = ctx.db();
    let shard = db.read(&args[1]);
    let entry = shard.peek(&args[1]);
    ctx.count_lookup(&args[1], entry.is_some());
    let n = match entry {
        None => -2,
        Some(e) => e
            .expire_at_ms()
            .map_or(-1, |at| show(at, ctx.now_ms) as i64),
    };
    ctx.w().integer(n);
    Ok(())
}
