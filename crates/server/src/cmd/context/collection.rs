//! What every collection command shares: reaching a value of the expected
//! type (WRONGTYPE otherwise), creating it on first write, deleting the key
//! when its last element goes (Redis never keeps an empty collection), and
//! the reply shapes of the SCAN family.
//!
//! Handlers describe only their own work as a closure over the typed value;
//! the lookup, the type check, the hit/miss statistics, the empty-key rule
//! and the keyspace events a change publishes (the command's own, then
//! `del` for a key emptied) live here once.

use keel_store::{
    AsKey, End, Hash, Limits, List, Lookup, Set, Stream, Value, ValueRef, WriteShard, ZSet,
};

use super::edit::edit;
pub use super::edit::Edit;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Events, Notifier};

/// A collection type as stored in a [`Value`].
pub trait Kind: Default {
    /// The keyspace event class of its commands' events.
    const CLASS: u64;
    /// The value as this type, or `None` for another type.
    fn of(value: ValueRef<'_>) -> Option<&Self>;
    /// Mutable access, or `None` for another type.
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    /// Wraps a new collection into a value.
    fn into_value(self) -> Value;
    /// The collection as a borrowed value (the inverse of `of`).
    fn view(&self) -> ValueRef<'_>;
}

impl Kind for Hash {
    const CLASS: u64 = Events::HASH;
    fn of(value: ValueRef<'_>) -> Option<&Self> {
        value.as_hash()
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_hash_mut()
    }
    fn into_value(self) -> Value {
        Value::Hash(self)
    }
    fn view(&self) -> ValueRef<'_> {
        ValueRef::Hash(self)
    }
}

impl Kind for Set {
    const CLASS: u64 = Events::SET;
    fn of(value: ValueRef<'_>) -> Option<&Self> {
        value.as_set()
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_set_mut()
    }
    fn into_value(self) -> Value {
        Value::Set(Box::new(self))
    }
    fn view(&self) -> ValueRef<'_> {
        ValueRef::Set(self)
    }
}

impl Kind for List {
    const CLASS: u64 = Events::LIST;
    fn of(value: ValueRef<'_>) -> Option<&Self> {
        value.as_list()
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_list_mut()
    }
    fn into_value(self) -> Value {
        Value::List(self)
    }
    fn view(&self) -> ValueRef<'_> {
        ValueRef::List(self)
    }
}

impl Kind for ZSet {
    const CLASS: u64 = Events::ZSET;
    fn of(value: ValueRef<'_>) -> Option<&Self> {
        value.as_zset()
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_zset_mut()
    }
    fn into_value(self) -> Value {
        Value::ZSet(Box::new(self))
    }
    fn view(&self) -> ValueRef<'_> {
        ValueRef::ZSet(self)
    }
}

impl Kind for Stream {
    const CLASS: u64 = Events::STREAM;
    fn of(value: ValueRef<'_>) -> Option<&Self> {
        value.as_stream()
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_stream_mut()
    }
    fn into_value(self) -> Value {
        Value::Stream(Box::new(self))
    }
    fn view(&self) -> ValueRef<'_> {
        ValueRef::Stream(self)
    }
}

fn wrongtype() -> Error {
    errors::WRONGTYPE.into()
}

/// Runs `f` on the collection at `key` (`None` when the key is missing),
/// under the key's shard read lock. Another type is WRONGTYPE.
pub fn read<T: Kind, R>(
    ctx: &mut Ctx,
    key: &[u8],
    f: impl FnOnce(&mut Ctx, Option<&T>) -> Result<R, Error>,
) -> Result<R, Error> {
    let db = ctx.db();
    let hashed = db.key(key);
    let shard = db.read(hashed);
    let entry = shard.get(hashed);
    ctx.count_lookup(key, entry.is_some());
    match entry {
        None => f(ctx, None),
        Some(e) => f(ctx, Some(T::of(e.value()).ok_or_else(wrongtype)?)),
    }
}

/// Whether [`update_tracked`] creates a missing key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Start from an empty collection (HSET, SADD, ...); it is stored only
    /// if `f` leaves something in it.
    Create,
    /// Leave the key absent and return `None` (HDEL, SREM, ...).
    Skip,
}

/// What [`update_tracked`] did to the key.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// The write changed the collection (or created it).
    pub changed: bool,
    /// The write emptied the collection, so the key was deleted.
    pub removed: bool,
}

/// Runs `f` on the collection at `key` in an already locked shard, creating
/// it or not as `missing` says; deletes the key if `f` empties it. Watchers
/// of the key are marked as `f`'s [`Edit`] says (see [`edit`]). Tells also
/// what it did to the key, for the keyspace events the caller publishes
/// (see [`notify`]).
pub fn update_tracked<'k, T: Kind, R>(
    shard: &mut WriteShard,
    key: impl AsKey<'k>,
    missing: Missing,
    f: impl FnOnce(&mut T) -> Result<Edit<R>, Error>,
) -> Result<(Option<R>, Outcome), Error> {
    match shard.entry(key) {
        Lookup::Found(mut entry) => {
            let (mut changed, mut removed) = (false, false);
            // Emptiness is read while the value is at hand; a write that
            // fails changed nothing, so it left the collection as it was,
            // which a stored one never is: empty.
            let result = edit(&mut entry, T::of_mut, |value| {
                let edit = f(value)?;
                changed = edit.is_changed();
                removed = value.view().is_empty_collection();
                Ok(edit)
            });
            if removed {
                crate::lazyfree::free(entry.remove());
            }
            result.map(|r| (Some(r), Outcome { changed, removed }))
        }
        Lookup::Missing(_) if missing == Missing::Skip => Ok((None, Outcome::default())),
        Lookup::Missing(vacant) => {
            let mut collection = T::default();
            let result = f(&mut collection)?.into_result();
            let value = collection.into_value();
            let created = !value.is_empty_collection();
            if created {
                vacant.insert(value, None);
            }
            let outcome = Outcome {
                changed: created,
                removed: false,
            };
            Ok((Some(result), outcome))
        }
    }
}

/// Publishes what a write to the collection `key` did: `event` (of `T`'s
/// class) if it changed it, then `del` if it emptied it, as Redis's
/// collection commands do.
pub fn notify<T: Kind>(events: Notifier, event: &str, key: &[u8], outcome: Outcome) {
    if outcome.changed {
        events.notify(T::CLASS, event, key);
    }
    if outcome.removed {
        events.notify(Events::GENERIC, "del", key);
    }
}

/// The keyspace event of a list pop at `end`.
pub fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// The keyspace event of a list push at `end`.
pub fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// [`update_tracked`] on the key's own shard, publishing `event` if `f` changed
/// the collection (see [`notify`]).
pub fn update<T: Kind, R>(
    ctx: &mut Ctx,
    key: &[u8],
    missing: Missing,
    event: &str,
    f: impl FnOnce(&mut T) -> Result<Edit<R>, Error>,
) -> Result<Option<R>, Error> {
    let (result, outcome) = {
        let db = ctx.db();
        let hashed = db.key(key);
        let mut shard = db.write(hashed);
        update_tracked(&mut shard, hashed, missing, f)?
    };
    notify::<T>(ctx.notifier(), event, key, outcome);
    Ok(result)
}

/// Replaces `key` with `value` in a locked shard (the *STORE commands),
/// having reserved the room it takes, or deletes it when `value` is an
/// empty collection, as Redis does; publishes `event` (class `class`) for
/// a stored result, `del` for a key deleted.
pub fn store_in(
    ctx: &mut Ctx,
    shard: &mut WriteShard,
    key: &[u8],
    value: Value,
    (class, event): (u64, &str),
) -> Result<(), Error> {
    let stored = !value.is_empty_collection();
    let old = if stored {
        ctx.reserve(value.heap_bytes())?;
        shard.insert(key, value, None)
    } else {
        shard.remove(key)
    };
    let deleted = old.is_some();
    if let Some(old) = old {
        crate::lazyfree::free(old);
    }
    if stored {
        ctx.notify(class, event, key);
    } else if deleted {
        ctx.notify(Events::GENERIC, "del", key);
    }
    Ok(())
}

/// The conversion thresholds for this command.
pub fn limits(ctx: &Ctx) -> Limits {
    ctx.server.store.encodings.limits()
}

/// Options of HSCAN/SSCAN/ZSCAN after the cursor.
pub struct ScanOptions<'a> {
    /// MATCH pattern; `None` matches everything.
    pub pattern: Option<&'a [u8]>,
    /// COUNT hint.
    pub count: usize,
}

impl ScanOptions<'_> {
    /// True if `element` passes the MATCH filter.
    pub fn matches(&self, element: &[u8]) -> bool {
        self.pattern
            .is_none_or(|p| keel_store::glob_match(p, element, false))
    }
}

/// Parses `cursor [MATCH pattern] [COUNT count]` from `args[2..]`, with
/// SCAN's errors.
pub fn scan_options(args: &[bytes::Bytes]) -> Result<(u64, ScanOptions<'_>), Error> {
    let cursor = parse_cursor(&args[2])?;
    let mut options = ScanOptions {
        pattern: None,
        count: 10,
    };
    let mut j = 3;
    while j < args.len() {
        if j + 1 >= args.len() {
            return Err(errors::SYNTAX.into());
        }
        if is(&args[j], "count") {
            let n = parse_i64(&args[j + 1])?;
            if n < 1 {
                return Err(errors::SYNTAX.into());
            }
            options.count = n as usize;
        } else if is(&args[j], "match") {
            options.pattern = Some(&args[j + 1])
                .filter(|p| &p[..] != b"*")
                .map(|p| &p[..]);
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 2;
    }
    Ok((cursor, options))
}

/// Writes a SCAN-family reply: the next cursor and the elements.
pub fn write_scan_reply(ctx: &mut Ctx, next: u64, elements: &[Vec<u8>]) {
    let mut w = ctx.w();
    w.array(2);
    w.bulk(next.to_string().as_bytes());
    w.array(elements.len());
    elements.iter().for_each(|e| w.bulk(e));
}

/// Parses a cursor as Redis does: an unsigned decimal, nothing else.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, Error> {
    std::str::from_utf8(arg)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| "ERR invalid cursor".into())
}

/// The element `index` designates (negative counts from the tail), if it
/// is within a list of `len` elements.
pub fn position(len: usize, index: i64) -> Option<usize> {
    let at = if index < 0 { len as i64 + index } else { index };
    (0..len as i64).contains(&at).then_some(at as usize)
}

/// The elements `start..=stop` designate in a list of `len` (negatives
/// count from the tail, out-of-range ends are clamped), as LRANGE and
/// LTRIM read them; empty when the range is.
pub fn range(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i64;
    let from_tail = |i: i64| if i < 0 { len.saturating_add(i) } else { i };
    let start = from_tail(start).max(0);
    let stop = from_tail(stop).min(len - 1);
    if start > stop {
        return 0..0;
    }
    start as usize..stop as usize + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_clamp_as_redis() {
        assert_eq!(range(5, 0, -1), 0..5);
        assert_eq!(range(5, -100, 100), 0..5);
        assert_eq!(range(5, 3, 1), 0..0);
        assert_eq!(range(5, 5, 10), 0..0);
        assert_eq!(range(5, -2, -1), 3..5);
        assert_eq!(range(0, 0, -1), 0..0);
        assert_eq!(range(5, i64::MIN, i64::MAX), 0..5);
        assert_eq!(position(3, -1), Some(2));
        assert_eq!(position(3, -4), None);
        assert_eq!(position(3, 3), None);
    }
}
