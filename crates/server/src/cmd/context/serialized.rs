//! Values between the keyspace and [`keel_rdb`]'s plain values: the DUMP
//! payload of a stored value, and the value a RESTORE payload rebuilds in
//! the encodings this server's thresholds choose. DUMP, RESTORE and
//! MIGRATE share it.

use keel_rdb::{PayloadError, Thresholds, Value as Plain};
use keel_store::{End, Hash, Limits, List, Set, Str, Value, ValueRef, ZSet};

use super::{Ctx, Error};

/// The DUMP payload of `value`, laid out as Redis 7.0 would with the
/// server's thresholds. Streams have no payload yet: an error says so.
pub fn dump_payload(ctx: &Ctx, value: ValueRef<'_>) -> Result<Vec<u8>, Error> {
    let plain = plain(value).ok_or("ERR DUMP of stream values is not supported yet")?;
    Ok(keel_rdb::dump(
        &plain,
        &thresholds(&super::collection::limits(ctx)),
    ))
}

/// The value a DUMP payload holds, with Redis's errors for a payload it
/// refuses. Decoding may allocate no more than `maxmemory` leaves: a
/// payload of a few hundred KB can claim gigabytes (compressed strings,
/// packed encodings of tiny entries), and that is refused with OOM before
/// it is allocated.
pub fn restore_payload(ctx: &Ctx, payload: &[u8]) -> Result<Value, Error> {
    let budget = ctx.server.room_left().map_or(usize::MAX, |left| {
        usize::try_from(left).unwrap_or(usize::MAX)
    });
    match keel_rdb::restore_within(payload, budget) {
        Ok(plain) => Ok(stored(plain, &super::collection::limits(ctx))),
        Err(PayloadError::VersionOrChecksum) => {
            Err("ERR DUMP payload version or checksum are wrong".into())
        }
        Err(PayloadError::BadData) => Err("ERR Bad data format".into()),
        Err(PayloadError::OverBudget) => Err(super::errors::OOM.into()),
    }
}

fn thresholds(limits: &Limits) -> Thresholds {
    Thresholds {
        list_max_listpack_size: limits.list_max_listpack_size,
        set_max_intset_entries: limits.set_max_intset_entries,
        hash_max_listpack_entries: limits.hash_max_listpack_entries,
        hash_max_listpack_value: limits.hash_max_listpack_value,
        zset_max_listpack_entries: limits.zset_max_listpack_entries,
        zset_max_listpack_value: limits.zset_max_listpack_value,
    }
}

/// A stored value as a plain one (sorted sets in rank order); `None` for
/// a stream, which the RDB crate does not encode yet.
fn plain(value: ValueRef<'_>) -> Option<Plain> {
    Some(match value {
        ValueRef::Str(s) => Plain::String(s.to_bytes().into_owned()),
        ValueRef::List(list) => Plain::List(list.iter().map(<[u8]>::to_vec).collect()),
        ValueRef::Set(set) => Plain::Set(set.iter().map(|m| m.into_owned()).collect()),
        ValueRef::Hash(hash) => {
            Plain::Hash(hash.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
        }
        ValueRef::ZSet(zset) => Plain::SortedSet(
            zset.range(0, zset.len())
                .map(|(m, s)| (m.into_owned(), s))
                .collect(),
        ),
        ValueRef::Stream(_) => return None,
    })
}

/// A plain value as stored, built as the commands that write each type
/// build it, so it takes the encoding `limits` choose.
fn stored(plain: Plain, limits: &Limits) -> Value {
    match plain {
        Plain::String(s) => Value::Str(Str::from_bytes(&s)),
        Plain::List(elements) => {
            let mut list = List::default();
            elements
                .iter()
                .for_each(|e| list.push(End::Right, e, limits));
            Value::List(list)
        }
        Plain::Set(members) => {
            let mut set = Set::default();
            members.iter().for_each(|m| {
                set.insert(m, limits);
            });
            Value::Set(Box::new(set))
        }
        Plain::Hash(pairs) => {
            let mut hash = Hash::default();
            pairs.iter().for_each(|(f, v)| {
                hash.set(f, v, limits);
            });
            Value::Hash(hash)
        }
        Plain::SortedSet(pairs) => {
            let mut zset = ZSet::default();
            pairs.iter().for_each(|(m, s)| {
                zset.insert(m, *s, limits);
            });
            Value::ZSet(Box::new(zset))
        }
    }
}
