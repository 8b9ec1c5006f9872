//! XPENDING key group [[IDLE min-idle-time] start end count [consumer]] —
//! a group's pending entries: a summary (count, smallest and largest ID,
//! entries per consumer), or the entries themselves with their owner, idle
//! time and delivery count.

use bytes::Bytes;
use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::read;
use crate::cmd::context::stream::{no_key_or_group, parse_count, parse_range_end};
use crate::cmd::context::{errors, is, parse_i64, write_each, Ctx, Error, Spec, BASE};

/// XPENDING.
pub const SPEC: Spec = Spec {
    name: "xpending",
    arity: -3,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@stream", "@slow"],
    group: "stream",
    summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
    since: "5.0.0",
    complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
    run,
    ..BASE
};

struct Extended<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: i64,
    consumer: Option<&'a Bytes>,
}

fn parse(args: &[Bytes]) -> Result<Option<Extended<'_>>, Error> {
    if args.len() == 3 {
        return Ok(None);
    }
    if args.len() < 6 || args.len() > 9 {
        return Err(errors::SYNTAX.into());
    }
    let mut at = 3;
    let mut min_idle = 0;
    if is(&args[3], "idle") {
        min_idle = parse_i64(&args[4])?;
        if args.len() < 8 {
            return Err(errors::SYNTAX.into());
        }
        at += 2;
    }
    let count = parse_count(&args[at + 2])?;
    let start = parse_range_end(&args[at], true)?;
    let end = parse_range_end(&args[at + 1], false)?;
    Ok(Some(Extended {
        min_idle,
        start,
        end,
        count,
        consumer: args.get(at + 3),
    }))
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let extended = parse(args)?;
    let now_ms = ctx.now_ms as i64;
    read(ctx, &args[1], |ctx, stream: Option<&Stream>| {
        let group = stream
            .and_then(|s| s.group(&args[2]))
            .ok_or_else(|| no_key_or_group(&args[1], &args[2]))?;
        let mut w = ctx.w();
        let Some(x) = extended else {
            w.array(4);
            w.integer(group.pending.len() as i64);
            let (Some(first), Some(last)) = (
                group.pending.keys().next(),
                group.pending.keys().next_back(),
            ) else {
                w.null();
                w.null();
                w.null_array();
                return Ok(());
            };
            w.bulk(first.to_string().as_bytes());
            w.bulk(last.to_string().as_bytes());
            let owners: Vec<_> = group
                .consumers
                .iter()
                .filter(|(_, c)| !c.pending.is_empty())
                .collect();
            w.array(owners.len());
            for (name, consumer) in owners {
                w.array(2);
                w.bulk(name);
                w.bulk(consumer.pending.len().to_string().as_bytes());
            }
            return Ok(());
        };
        let ids: Box<dyn Iterator<Item = StreamId>> = match x.consumer {
            Some(name) => match group.consumers.get(&name[..]) {
                Some(c) => Box::new(c.pending.range(x.start..).copied()),
                None => Box::new(std::iter::empty()),
            },
            None => Box::new(group.pending.range(x.start..).map(|(id, _)| *id)),
        };
        let entries: Vec<_> = ids
            .take_while(|id| *id <= x.end)
            .filter_map(|id| group.pending.get(&id).map(|p| (id, p)))
            .filter(|(_, p)| x.min_idle == 0 || now_ms.wrapping_sub(p.delivery_time) >= x.min_idle)
            .take(usize::try_from(x.count).unwrap_or(usize::MAX))
            .collect();
        w.array(entries.len());
        write_each(&mut w, entries.iter(), |w, (id, p)| {
            w.array(4);
            w.bulk(id.to_string().as_bytes());
            w.bulk(&p.consumer);
            w.integer(now_ms.wrapping_sub(p.delivery_time).max(0));
            w.integer(p.delivery_count as i64);
        });
        Ok(())
    })
}
