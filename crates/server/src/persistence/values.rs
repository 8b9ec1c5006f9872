//! Values between the keyspace and [`keel_rdb`]'s plain values, both
//! ways: what DUMP, RESTORE, MIGRATE, snapshots and loading share.

use keel_rdb::stream as rdb;
use keel_rdb::{Thresholds, Value as Plain};
use keel_store::{End, Hash, Limits, List, Set, Str, Stream, StreamId, Value, ValueRef, ZSet};

/// The encoding thresholds RDB writing follows, from the server's.
pub fn thresholds(limits: &Limits) -> Thresholds {
    Thresholds {
        list_max_listpack_size: limits.list_max_listpack_size,
        set_max_intset_entries: limits.set_max_intset_entries,
        hash_max_listpack_entries: limits.hash_max_listpack_entries,
        hash_max_listpack_value: limits.hash_max_listpack_value,
        zset_max_listpack_entries: limits.zset_max_listpack_entries,
        zset_max_listpack_value: limits.zset_max_listpack_value,
    }
}

/// A stored value as a plain one (sorted sets in rank order).
pub fn plain(value: ValueRef<'_>) -> Plain {
    match value {
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
        ValueRef::Stream(stream) => Plain::Stream(Box::new(plain_stream(stream))),
    }
}

fn rdb_id(id: StreamId) -> rdb::Id {
    rdb::Id {
        ms: id.ms,
        seq: id.seq,
    }
}

fn store_id(id: rdb::Id) -> StreamId {
    StreamId {
        ms: id.ms,
        seq: id.seq,
    }
}

fn owned<'f>(elements: impl Iterator<Item = &'f [u8]>) -> Vec<Vec<u8>> {
    elements.map(<[u8]>::to_vec).collect()
}

/// A stream as RDB carries it: its nodes as Redis would have them, its
/// counters and its groups.
fn plain_stream(s: &Stream) -> rdb::Stream {
    let nodes = s
        .nodes()
        .into_iter()
        .map(|node| rdb::Node {
            master: rdb_id(node.master),
            master_fields: owned(node.master_fields.iter()),
            entries: node
                .entries
                .iter()
                .map(|(id, deleted, fields)| rdb::Entry {
                    id: rdb_id(*id),
                    deleted: *deleted,
                    fields: owned(fields.iter()),
                })
                .collect(),
        })
        .collect();
    let groups = s
        .groups()
        .iter()
        .map(|(name, g)| rdb::Group {
            name: name.to_vec(),
            last_id: rdb_id(g.last_id),
            entries_read: Some(g.entries_read),
            pending: g
                .pending
                .iter()
                .map(|(id, p)| rdb::Pending {
                    id: rdb_id(*id),
                    consumer: p.consumer.to_vec(),
                    delivery_time: p.delivery_time,
                    delivery_count: p.delivery_count,
                })
                .collect(),
            consumers: g
                .consumers
                .iter()
                .map(|(name, c)| (name.to_vec(), c.seen_time))
                .collect(),
        })
        .collect();
    rdb::Stream {
        nodes,
        length: s.len() as u64,
        last_id: rdb_id(s.last_id()),
        first_id: rdb_id(s.first_id()),
        max_deleted_id: rdb_id(s.max_deleted_id()),
        entries_added: s.entries_added(),
        groups,
    }
}

/// A stream rebuilt from its RDB form, its nodes as they were.
fn stored_stream(plain: &rdb::Stream) -> Stream {
    let mut s = Stream::default();
    for node in &plain.nodes {
        let master_fields: Vec<&[u8]> = node.master_fields.iter().map(|f| &f[..]).collect();
        let entries = node.entries.iter().map(|e| {
            let fields = e.fields.iter().map(|f| &f[..]).collect();
            (store_id(e.id), e.deleted, fields)
        });
        s.restore_node(store_id(node.master), &master_fields, entries);
    }
    s.set_meta(
        store_id(plain.last_id),
        Some(plain.entries_added),
        Some(store_id(plain.max_deleted_id)),
    );
    for g in &plain.groups {
        let last_id = store_id(g.last_id);
        let entries_read = g
            .entries_read
            .unwrap_or_else(|| s.distance_from_first_ever(last_id));
        s.create_group(&g.name, last_id, entries_read);
        for (name, seen_time) in &g.consumers {
            s.create_consumer(&g.name, name, *seen_time);
        }
        for p in &g.pending {
            let id = store_id(p.id);
            s.deliver(&g.name, &p.consumer, id, p.delivery_time, false);
            s.set_delivery(&g.name, id, p.delivery_time, p.delivery_count);
        }
    }
    s
}

/// A plain value as stored, built as the commands that write each type
/// build it, so it takes the encoding `limits` choose.
pub fn stored(plain: Plain, limits: &Limits) -> Value {
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
        Plain::Stream(stream) => Value::Stream(Box::new(stored_stream(&stream))),
        Plain::SortedSet(pairs) => {
            let mut zset = ZSet::default();
            pairs.iter().for_each(|(m, s)| {
                zset.insert(m, *s, limits);
            });
            Value::ZSet(Box::new(zset))
        }
    }
}
