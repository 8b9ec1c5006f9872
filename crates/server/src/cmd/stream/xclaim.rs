//! XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
//! unix-ms] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id] and XAUTOCLAIM
//! key group consumer min-idle-time start [COUNT count] [JUSTID] — take
//! over pending entries idle long enough; entries deleted from the stream
//! meanwhile leave the PEL.

use bytes::Bytes;
use keel_store::types::stream::Fields;
use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::{update_tracked, Edit, Missing};
use crate::cmd::context::stream::{
    c_str, no_key_or_group, parse_range_end, parse_strict_id, write_entry_or_deleted, CLASS,
};
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// XCLAIM.
pub const XCLAIM: Spec = Spec {
    name: "xclaim",
    arity: -6,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@stream", "@fast"],
    group: "stream",
    summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
    since: "5.0.0",
    complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
    run: xclaim,
    ..BASE
};

/// XAUTOCLAIM.
pub const XAUTOCLAIM: Spec = Spec {
    name: "xautoclaim",
    summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
    since: "6.2.0",
    complexity: "O(1) if COUNT is small.",
    run: xautoclaim,
    ..XCLAIM
};

/// What a claim replies per entry: its ID, or the entry itself.
enum Claimed {
    Id(StreamId),
    Entry(StreamId, Option<keel_store::types::Listpack>),
}

/// Runs `f` on the stream at `args[1]` with its group `args[2]`, which
/// must both exist (NOGROUP otherwise); publishes the creation of the
/// claiming consumer if `f` created it.
fn with_group<R>(
    ctx: &mut Ctx,
    args: &[Bytes],
    f: impl FnOnce(&mut Stream) -> Result<(R, bool), Error>,
) -> Result<R, Error> {
    let key = &args[1];
    let (result, _) = {
        let db = ctx.db();
        let mut shard = db.write(key);
        update_tracked(&mut shard, key, Missing::Skip, |s: &mut Stream| {
            if s.group(&args[2]).is_none() {
                return Err(no_key_or_group(key, &args[2]));
            }
            Ok(Edit::changed(f(s)?))
        })?
    };
    let (result, created) = result.ok_or_else(|| no_key_or_group(key, &args[2]))?;
    if created {
        ctx.notify(CLASS, "xgroup-createconsumer", key);
    }
    Ok(result)
}

/// Moves pending entry `id` to `consumer` (created if new: then `created`
/// is set), delivered at `time` with `count` deliveries.
fn claim(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    id: StreamId,
    (time, count): (i64, u64),
    now_ms: i64,
    created: &mut bool,
) {
    *created |= s.touch_consumer(group, consumer, now_ms);
    s.deliver(group, consumer, id, time, false);
    s.set_delivery(group, id, time, count);
}

fn write_claimed(ctx: &mut Ctx, claimed: &[Claimed]) {
    let mut w = ctx.w();
    w.array(claimed.len());
    for c in claimed {
        match c {
            Claimed::Id(id) => w.bulk(id.to_string().as_bytes()),
            Claimed::Entry(id, Some(fields)) => write_entry_or_deleted(&mut w, *id, Some(fields)),
            Claimed::Entry(_, None) => w.null(),
        }
    }
}

fn xclaim(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let now_ms = ctx.now_ms as i64;
    let (group, consumer) = (&args[2], &args[3]);
    let claimed = with_group(ctx, args, |s| {
        let min_idle = parse_i64(&args[4])
            .map_err(|_| "ERR Invalid min-idle-time argument for XCLAIM")?
            .max(0);
        let ids: Vec<StreamId> = args[5..]
            .iter()
            .map_while(|a| parse_strict_id(a).ok())
            .collect();
        let mut options = args[5 + ids.len()..].iter();
        let (mut force, mut justid) = (false, false);
        let mut delivery_time = None;
        let mut retry_count = None;
        let mut last_id = StreamId::MIN;
        while let Some(opt) = options.next() {
            let more = !options.as_slice().is_empty();
            let mut number = |message: &'static str| {
                let arg = options.next().expect("checked there is one");
                parse_i64(arg).map_err(|_| Error::from(message))
            };
            if is(opt, "force") {
                force = true;
            } else if is(opt, "justid") {
                justid = true;
            } else if is(opt, "idle") && more {
                delivery_time = Some(
                    now_ms.wrapping_sub(number("ERR Invalid IDLE option argument for XCLAIM")?),
                );
            } else if is(opt, "time") && more {
                delivery_time = Some(number("ERR Invalid TIME option argument for XCLAIM")?);
            } else if is(opt, "retrycount") && more {
                retry_count = Some(number("ERR Invalid RETRYCOUNT option argument for XCLAIM")?);
            } else if is(opt, "lastid") && more {
                let arg = options.next().expect("checked there is one");
                last_id = parse_strict_id(arg)?;
            } else {
                return Err(format!("ERR Unrecognized XCLAIM option '{}'", c_str(opt)).into());
            }
        }
        if s.group(group).is_some_and(|g| last_id > g.last_id) {
            let entries_read = s.group(group).map_or(-1, |g| g.entries_read);
            s.set_group_id(group, last_id, entries_read);
        }
        let time = delivery_time
            .filter(|t| (0..=now_ms).contains(t))
            .unwrap_or(now_ms);
        let mut claimed = Vec::new();
        let mut created = false;
        for id in ids {
            let pending = s.group(group).and_then(|g| g.pending.get(&id)).cloned();
            if s.get(id).is_none() {
                if pending.is_some() {
                    s.ack(group, id);
                }
                continue;
            }
            let count = match &pending {
                Some(p) => {
                    if min_idle > 0 && now_ms.wrapping_sub(p.delivery_time) < min_idle {
                        continue;
                    }
                    p.delivery_count
                }
                // A new PEL entry, as Redis's streamCreateNACK makes it.
                None if force => 1,
                None => continue,
            };
            // A negative RETRYCOUNT counts as none, as in Redis.
            let count = match retry_count.filter(|n| *n >= 0) {
                Some(n) => n as u64,
                None => count.wrapping_add(u64::from(!justid)),
            };
            claim(s, group, consumer, id, (time, count), now_ms, &mut created);
            claimed.push(match justid {
                true => Claimed::Id(id),
                false => Claimed::Entry(id, s.get(id).map(Fields::to_listpack)),
            });
        }
        Ok((claimed, created))
    })?;
    write_claimed(ctx, &claimed);
    Ok(())
}

fn xautoclaim(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    /// Redis's cap on COUNT: LONG_MAX over the size of an ID.
    const MAX_COUNT: i64 = i64::MAX / 16;
    /// PEL entries looked at per entry claimed at most.
    const ATTEMPTS_FACTOR: usize = 10;
    let now_ms = ctx.now_ms as i64;
    let min_idle = parse_i64(&args[4])
        .map_err(|_| "ERR Invalid min-idle-time argument for XAUTOCLAIM")?
        .max(0);
    let start = parse_range_end(&args[5], true)?;
    let mut count = 100usize;
    let mut justid = false;
    let mut options = args[6..].iter();
    while let Some(opt) = options.next() {
        if is(opt, "count") && !options.as_slice().is_empty() {
            count = options
                .next()
                .and_then(|a| parse_i64(a).ok())
                .filter(|n| (1..=MAX_COUNT).contains(n))
                .ok_or("ERR COUNT must be > 0")? as usize;
        } else if is(opt, "justid") {
            justid = true;
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    let (group, consumer) = (&args[2], &args[3]);
    let (claimed, next, deleted) = with_group(ctx, args, |s| {
        let mut attempts = count.saturating_mul(ATTEMPTS_FACTOR);
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let mut created = false;
        let mut cursor = Some(start);
        while let Some(from) = cursor {
            let Some((id, p)) = s
                .group(group)
                .and_then(|g| g.pending.range(from..).next())
                .map(|(id, p)| (*id, p.clone()))
            else {
                cursor = None;
                break;
            };
            if attempts == 0 || claimed.len() + deleted.len() == count {
                break;
            }
            attempts -= 1;
            cursor = id.next();
            if s.get(id).is_none() {
                // A deleted entry leaves the PEL, and counts towards COUNT
                // as the reply lists it.
                s.ack(group, id);
                deleted.push(id);
                continue;
            }
            if min_idle > 0 && now_ms.wrapping_sub(p.delivery_time) < min_idle {
                continue;
            }
            let count = p.delivery_count.wrapping_add(u64::from(!justid));
            claim(
                s,
                group,
                consumer,
                id,
                (now_ms, count),
                now_ms,
                &mut created,
            );
            claimed.push(match justid {
                true => Claimed::Id(id),
                false => Claimed::Entry(id, s.get(id).map(Fields::to_listpack)),
            });
        }
        let next = cursor
            .and_then(|from| {
                s.group(group)
                    .and_then(|g| g.pending.range(from..).next().map(|(id, _)| *id))
            })
            .unwrap_or(StreamId::MIN);
        Ok(((claimed, next, deleted), created))
    })?;
    {
        let mut w = ctx.w();
        w.array(3);
        w.bulk(next.to_string().as_bytes());
    }
    write_claimed(ctx, &claimed);
    let mut w = ctx.w();
    w.array(deleted.len());
    deleted
        .iter()
        .for_each(|id| w.bulk(id.to_string().as_bytes()));
    Ok(())
}
