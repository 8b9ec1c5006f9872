//! The pops several commands share: LMOVE's pop-and-maybe-push step, which
//! BLPOP, BRPOP, BLMOVE and BRPOPLPUSH take too (also when a waiter is
//! served later, see `crate::blocking`); popping several elements of a list
//! (LMPOP, BLMPOP) or members of a sorted set (ZPOPMIN, ZMPOP, the
//! blocking ones); the `numkeys key [key ...] <end> [COUNT count]` form of
//! the *MPOP commands; and the way the pops of several keys try at once,
//! keys in order, and block if every key is missing.

use bytes::Bytes;
use keel_store::{End, Limits, List, MultiWrite, WriteShard, ZSet};

use super::collection::{limits, notify, pop_event, push_event, update_tracked, Edit, Missing};
use super::{errors, is, parse_f64, parse_i64, Ctx, Error, Notifier};
use crate::blocking::{write_outcome, Outcome, Wait};
use crate::client::AfterReply;

/// Parses LEFT or RIGHT.
pub fn end(arg: &[u8]) -> Result<End, Error> {
    match arg {
        a if is(a, "left") => Ok(End::Left),
        a if is(a, "right") => Ok(End::Right),
        _ => Err(errors::SYNTAX.into()),
    }
}

/// What a pop does: which end it takes from and, for the move commands,
/// where the element goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pop {
    /// The end of the source the element is taken from.
    pub from: End,
    /// The destination key and end, for LMOVE and its relatives.
    pub to: Option<(Bytes, End)>,
}

impl Pop {
    /// Every key the pop from `source` touches, for locking.
    pub fn keys(&self, source: &Bytes) -> Vec<Bytes> {
        let mut keys = vec![source.clone()];
        keys.extend(self.to.iter().map(|(dest, _)| dest.clone()));
        keys
    }

    /// Pops one element from `source` (and pushes it to the destination),
    /// with every key's shard locked in `locked`. `None` when the source
    /// is missing. The destination's type is checked only when the source
    /// has an element to give, as in Redis. Publishes the push's event on
    /// the destination, then the pop's on the source, as Redis's LMOVE.
    pub fn apply(
        &self,
        locked: &mut MultiWrite,
        source: &[u8],
        limits: &Limits,
        events: Notifier,
    ) -> Result<Option<Vec<u8>>, Error> {
        if let Some((dest, _)) = &self.to {
            match locked.peek(source) {
                None => return Ok(None),
                Some(e) if e.value().as_list().is_none() => return Err(errors::WRONGTYPE.into()),
                Some(_) => {}
            }
            if locked
                .peek(dest)
                .is_some_and(|e| e.value().as_list().is_none())
            {
                return Err(errors::WRONGTYPE.into());
            }
        }
        if let Some((_, to)) = self.to.as_ref().filter(|(dest, _)| dest == source) {
            return self.rotate(locked, source, *to, limits, events);
        }
        let (popped, popped_outcome) = update_tracked(
            locked.shard(source),
            source,
            Missing::Skip,
            |list: &mut List| {
                let popped = list.pop(self.from, limits);
                Ok(Edit::changed_if(popped.is_some(), popped))
            },
        )?;
        let Some(element) = popped.flatten() else {
            return Ok(None);
        };
        if let Some((dest, to)) = &self.to {
            let (_, pushed) = update_tracked(
                locked.shard(dest),
                dest,
                Missing::Create,
                |list: &mut List| {
                    list.push(*to, &element, limits);
                    Ok(Edit::changed(()))
                },
            )?;
            notify::<List>(events, push_event(*to), dest, pushed);
        }
        notify::<List>(events, pop_event(self.from), source, popped_outcome);
        Ok(Some(element))
    }

    /// A move within one list (RPOPLPUSH k k): the element changes ends
    /// and the key, never empty, keeps its TTL.
    fn rotate(
        &self,
        locked: &mut MultiWrite,
        key: &[u8],
        to: End,
        limits: &Limits,
        events: Notifier,
    ) -> Result<Option<Vec<u8>>, Error> {
        let (moved, outcome) =
            update_tracked(locked.shard(key), key, Missing::Skip, |list: &mut List| {
                let popped = list.pop(self.from, limits);
                if let Some(element) = &popped {
                    list.push(to, element, limits);
                }
                Ok(Edit::changed_if(popped.is_some(), popped))
            })?;
        notify::<List>(events, push_event(to), key, outcome);
        notify::<List>(events, pop_event(self.from), key, outcome);
        Ok(moved.flatten())
    }
}

/// Pops up to `count` elements from the `from` end of the list at `key`
/// in a locked shard; `None` when the key is missing.
pub fn list_pop_many(
    shard: &mut WriteShard,
    key: &[u8],
    from: End,
    count: usize,
    limits: &Limits,
    events: Notifier,
) -> Result<Option<Vec<Vec<u8>>>, Error> {
    let (popped, outcome) = update_tracked(shard, key, Missing::Skip, |list: &mut List| {
        let n = count.min(list.len());
        let popped: Vec<_> = (0..n).filter_map(|_| list.pop(from, limits)).collect();
        Ok(Edit::changed_if(!popped.is_empty(), popped))
    })?;
    notify::<List>(events, pop_event(from), key, outcome);
    Ok(popped)
}

/// Sorted-set members and their scores, in the order popped.
pub type Members = Vec<(Vec<u8>, f64)>;

/// Removes up to `count` members from the low end of `zset`, or from the
/// high end when `max`, in the order they are popped.
pub fn take_members(zset: &mut ZSet, count: usize, max: bool) -> Edit<Members> {
    let n = count.min(zset.len());
    let ranks = if max {
        zset.len() - n..zset.len()
    } else {
        0..n
    };
    let mut popped = zset.remove_ranks(ranks);
    if max {
        popped.reverse();
    }
    Edit::changed_if(!popped.is_empty(), popped)
}

/// Pops up to `count` members of the sorted set at `key` in a locked shard,
/// as ZPOPMIN or ZPOPMAX would; `None` when the key is missing.
pub fn zset_pop_many(
    shard: &mut WriteShard,
    key: &[u8],
    count: usize,
    max: bool,
    events: Notifier,
) -> Result<Option<Members>, Error> {
    let (popped, outcome) = update_tracked(shard, key, Missing::Skip, |zset: &mut ZSet| {
        Ok(take_members(zset, count, max))
    })?;
    let event = if max { "zpopmax" } else { "zpopmin" };
    notify::<ZSet>(events, event, key, outcome);
    Ok(popped)
}

/// The blocking pops of the form `key [key ...] timeout`: `wait` on the
/// first key that has an element.
pub fn pop_first(ctx: &mut Ctx, args: &[Bytes], wait: Wait) -> Result<(), Error> {
    let deadline = deadline(&args[args.len() - 1])?;
    block(ctx, &args[1..args.len() - 1], wait, deadline)
}

/// The arguments of the *MPOP commands from `numkeys` on: `numkeys key
/// [key ...] <end> [COUNT count]`, parsed as Redis's lmpopGenericCommand
/// and zmpopGenericCommand do, in their order and with their errors.
pub struct Mpop<'a, E> {
    /// The keys, tried in order.
    pub keys: &'a [Bytes],
    /// The end to pop from, as `end` parsed it.
    pub end: E,
    /// How many elements at most (1 without COUNT).
    pub count: usize,
}

/// Parses `numkeys key [key ...] <end> [COUNT count]` from `args`, the end
/// with `end`.
pub fn mpop_args<E>(
    args: &[Bytes],
    end: impl FnOnce(&[u8]) -> Result<E, Error>,
) -> Result<Mpop<'_, E>, Error> {
    let positive = |arg: &[u8], message: &'static str| {
        parse_i64(arg)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| n as usize)
            .ok_or(Error::from(message))
    };
    let numkeys = positive(&args[0], "ERR numkeys should be greater than 0")?;
    if numkeys >= args.len() - 1 {
        return Err(errors::SYNTAX.into());
    }
    let keys = &args[1..=numkeys];
    let end = end(&args[numkeys + 1])?;
    let mut count = None;
    let mut options = args[numkeys + 2..].iter();
    while let Some(option) = options.next() {
        match options.as_slice().first() {
            Some(n) if count.is_none() && is(option, "count") => {
                count = Some(positive(n, "ERR count should be greater than 0")?);
                options.next();
            }
            _ => return Err(errors::SYNTAX.into()),
        }
    }
    Ok(Mpop {
        keys,
        end,
        count: count.unwrap_or(1),
    })
}

/// Parses a timeout in seconds (a float; 0 waits forever) into a deadline,
/// with Redis's errors and its truncation to whole milliseconds.
pub fn deadline(arg: &[u8]) -> Result<Option<tokio::time::Instant>, Error> {
    let seconds = parse_f64(arg).ok_or("ERR timeout is not a float or out of range")?;
    // Redis converts with a C cast, which on x86-64 turns anything out of
    // range (infinity included) into i64::MIN: "negative".
    let ms = seconds * 1000.0;
    let ms = if ms.abs() < 9.2e18 {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - crate::server::unix_ms() as i64 {
        return Err("ERR timeout is out of range".into());
    }
    // 0 waits forever, and so does a deadline too far to represent.
    let wait = std::time::Duration::from_millis(ms as u64);
    Ok((ms > 0)
        .then(|| tokio::time::Instant::now().checked_add(wait))
        .flatten())
}

/// Pops from the first of `sources` that has an element, or blocks.
pub fn block(
    ctx: &mut Ctx,
    sources: &[Bytes],
    wait: Wait,
    deadline: Option<tokio::time::Instant>,
) -> Result<(), Error> {
    pop_or_wait(ctx, sources, wait, Some(deadline))
}

/// Pops from the first of `sources` that has an element, or replies that
/// there was none (LMPOP, ZMPOP).
pub fn pop_at_once(ctx: &mut Ctx, sources: &[Bytes], wait: Wait) -> Result<(), Error> {
    pop_or_wait(ctx, sources, wait, None)
}

/// Pops from the first of `sources` that has an element; otherwise blocks
/// until `deadline` when given one (`Some(None)` waits forever), and
/// replies that there was none when not, or inside a transaction.
fn pop_or_wait(
    ctx: &mut Ctx,
    sources: &[Bytes],
    wait: Wait,
    deadline: Option<Option<tokio::time::Instant>>,
) -> Result<(), Error> {
    let limits = limits(ctx);
    let db = ctx.db();
    let keys: Vec<Bytes> = sources.iter().flat_map(|s| wait.keys(s)).collect();
    let mut locked = db.write_many(&keys);
    for source in sources {
        if let Some(popped) = wait.apply(&mut locked, source, &limits, ctx.notifier())? {
            if let Some(pop) = wait.propagated(source) {
                super::journal::propagate_as(pop);
            }
            let key = source.clone();
            write_outcome(&mut ctx.w(), &wait, Some(Outcome::Popped { key, popped }));
            return Ok(());
        }
    }
    let Some(deadline) = deadline.filter(|_| !ctx.client.tx.executing) else {
        wait.write_nothing(&mut ctx.w());
        return Ok(());
    };
    ctx.client.handle.set_blocked(true);
    let blocking = &ctx.server.blocking;
    let blocked = blocking.register(ctx.client.db, sources.to_vec(), wait, deadline);
    drop(locked);
    ctx.client.after_reply = Some(AfterReply::Block(blocked));
    Ok(())
}
