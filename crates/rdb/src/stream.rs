//! Streams in RDB: `RDB_TYPE_STREAM_LISTPACKS_2` as Redis 7.0 writes it,
//! and `RDB_TYPE_STREAM_LISTPACKS` (Redis 5 and 6) read as Redis 7.0
//! upgrades it.
//!
//! Layout (`rdbSaveObject`): the number of nodes, then per node its master
//! ID (16 bytes: ms and seq, big-endian) and its listpack as strings; the
//! length, the last ID, the first ID, the largest deleted ID (each ms then
//! seq, as lengths), the entries ever added; the number of groups, and per
//! group its name, last delivered ID, read counter (`-1` as a 64-bit
//! length for "unknown"), its PEL (count, then per entry the raw 16-byte
//! ID, the delivery time as 8 little-endian bytes and the delivery count)
//! and its consumers (count, then per consumer its name, seen time and its
//! PEL as raw IDs only). The older type lacks the first and deleted IDs,
//! the entries added and the groups' read counters.
//!
//! A node's listpack starts with its master entry: live count, deleted
//! count, the number of master fields, the fields, a 0. Each entry follows
//! as flags (1 deleted, 2 same fields as the master), the ms and seq
//! differences from the master ID, then either the field count and the
//! fields and values, or (same fields) the values only, and last the
//! number of elements the entry took beside the flags and IDs' three
//! (`lp-count`). Deleted entries stay in their node until it is freed.
//!
//! Reading checks what Redis's deep sanitization would: counts that agree,
//! master IDs that grow, live entries' IDs that grow across the whole
//! stream (a deleted entry may sit anywhere), the stream's length, and PEL
//! entries owned by exactly one consumer.

use crate::packed::{self, ListpackWriter};
use crate::{decimal, Malformed};

/// A stream entry ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Id {
    /// Milliseconds.
    pub ms: u64,
    /// Sequence.
    pub seq: u64,
}

impl Id {
    fn raw(self) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.ms.to_be_bytes());
        key[8..].copy_from_slice(&self.seq.to_be_bytes());
        key
    }

    fn from_raw(raw: &[u8]) -> Result<Id, Malformed> {
        let raw: [u8; 16] = raw.try_into().map_err(|_| Malformed)?;
        let (ms, seq) = raw.split_at(8);
        Ok(Id {
            ms: u64::from_be_bytes(ms.try_into().map_err(|_| Malformed)?),
            seq: u64::from_be_bytes(seq.try_into().map_err(|_| Malformed)?),
        })
    }
}

/// A stream as RDB carries it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    /// The nodes, in ID order.
    pub nodes: Vec<Node>,
    /// Live entries.
    pub length: u64,
    /// The last ID added or set.
    pub last_id: Id,
    /// The first live entry's ID (0-0 when empty).
    pub first_id: Id,
    /// The largest deleted ID.
    pub max_deleted_id: Id,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups, in name order.
    pub groups: Vec<Group>,
}

/// One node: its master ID and fields, and its entries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    /// The node's key: the ID of its first entry when it was made.
    pub master: Id,
    /// The field names entries may share with the master entry.
    pub master_fields: Vec<Vec<u8>>,
    /// The entries, deleted ones included, in ID order.
    pub entries: Vec<Entry>,
}

/// One entry of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its ID.
    pub id: Id,
    /// Flagged deleted.
    pub deleted: bool,
    /// Field names and values, alternating.
    pub fields: Vec<Vec<u8>>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Its name.
    pub name: Vec<u8>,
    /// The last delivered ID.
    pub last_id: Id,
    /// The logical read counter; -1 when unknown; `None` when the payload
    /// (Redis 5 and 6) does not have it, for the loader to estimate.
    pub entries_read: Option<i64>,
    /// Its pending entries: ID, owner, delivery time, delivery count.
    pub pending: Vec<Pending>,
    /// Its consumers, in name order: name and seen time.
    pub consumers: Vec<(Vec<u8>, i64)>,
}

/// A pending entry of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The entry's ID.
    pub id: Id,
    /// The consumer it was delivered to.
    pub consumer: Vec<u8>,
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    /// Deliveries so far.
    pub delivery_count: u64,
}

const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

/// A node's listpack, laid out as Redis's `streamAppendItem` and XDEL
/// leave it.
pub fn node_listpack(node: &Node) -> Vec<u8> {
    let mut lp = ListpackWriter::default();
    let int = |lp: &mut ListpackWriter, n: i64| lp.push(&decimal(n));
    let live = node.entries.iter().filter(|e| !e.deleted).count();
    int(&mut lp, live as i64);
    int(&mut lp, (node.entries.len() - live) as i64);
    int(&mut lp, node.master_fields.len() as i64);
    node.master_fields.iter().for_each(|f| lp.push(f));
    int(&mut lp, 0);
    for entry in &node.entries {
        let names = entry.fields.iter().step_by(2);
        let same = entry.fields.len() == 2 * node.master_fields.len()
            && names.eq(node.master_fields.iter());
        let flags = i64::from(entry.deleted) * FLAG_DELETED + i64::from(same) * FLAG_SAME_FIELDS;
        int(&mut lp, flags);
        int(&mut lp, entry.id.ms.wrapping_sub(node.master.ms) as i64);
        int(&mut lp, entry.id.seq.wrapping_sub(node.master.seq) as i64);
        let pairs = entry.fields.len() / 2;
        if same {
            entry
                .fields
                .iter()
                .skip(1)
                .step_by(2)
                .for_each(|v| lp.push(v));
            int(&mut lp, pairs as i64 + 3);
        } else {
            int(&mut lp, pairs as i64);
            entry.fields.iter().for_each(|f| lp.push(f));
            int(&mut lp, 2 * pairs as i64 + 4);
        }
    }
    lp.finish()
}

fn int(element: &[u8]) -> Result<i64, Malformed> {
    crate::parse_canonical_i64(element).ok_or(Malformed)
}

fn count(element: &[u8]) -> Result<usize, Malformed> {
    usize::try_from(int(element)?).map_err(|_| Malformed)
}

/// A node read back from its master ID and listpack.
pub fn read_node(master: Id, blob: &[u8]) -> Result<Node, Malformed> {
    let elements = packed::listpack_entries(blob)?;
    let mut it = elements.into_iter();
    let mut next = || it.next().ok_or(Malformed);
    let live = count(&next()?)?;
    let deleted = count(&next()?)?;
    let master_count = count(&next()?)?;
    let mut master_fields = Vec::new();
    for _ in 0..master_count {
        master_fields.push(next()?);
    }
    if int(&next()?)? != 0 {
        return Err(Malformed);
    }
    let mut entries: Vec<Entry> = Vec::new();
    while let Ok(flags) = next() {
        let flags = int(&flags)?;
        if flags & !(FLAG_DELETED | FLAG_SAME_FIELDS) != 0 {
            return Err(Malformed);
        }
        let id = Id {
            ms: master.ms.wrapping_add(int(&next()?)? as u64),
            seq: master.seq.wrapping_add(int(&next()?)? as u64),
        };
        let mut fields = Vec::new();
        let lp_count = if flags & FLAG_SAME_FIELDS != 0 {
            for name in &master_fields {
                fields.push(name.clone());
                fields.push(next()?);
            }
            master_count + 3
        } else {
            let pairs = count(&next()?)?;
            for _ in 0..pairs {
                fields.push(next()?);
                fields.push(next()?);
            }
            2 * pairs + 4
        };
        if count(&next()?)? != lp_count || fields.is_empty() {
            return Err(Malformed);
        }
        entries.push(Entry {
            id,
            deleted: flags & FLAG_DELETED != 0,
            fields,
        });
    }
    let live_found = entries.iter().filter(|e| !e.deleted).count();
    if entries.is_empty() || live_found != live || entries.len() - live_found != deleted {
        return Err(Malformed);
    }
    Ok(Node {
        master,
        master_fields,
        entries,
    })
}

/// What the object reader and writer need from their string and length
/// codecs, so this module stays about streams.
pub(crate) trait Source {
    fn length(&mut self) -> Result<u64, Malformed>;
    fn string(&mut self) -> Result<Vec<u8>, Malformed>;
    /// A node's listpack, charged as packed data.
    fn packed(&mut self) -> Result<Vec<u8>, Malformed>;
    fn raw(&mut self, n: usize) -> Result<Vec<u8>, Malformed>;
    /// A count of items each taking at least `min_bytes`.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Malformed>;
}

pub(crate) trait Sink {
    fn length(&mut self, n: u64);
    fn string(&mut self, s: &[u8]);
    fn raw(&mut self, bytes: &[u8]);
}

fn read_id(src: &mut impl Source) -> Result<Id, Malformed> {
    Ok(Id {
        ms: src.length()?,
        seq: src.length()?,
    })
}

fn read_time(src: &mut impl Source) -> Result<i64, Malformed> {
    let raw: [u8; 8] = src.raw(8)?.try_into().map_err(|_| Malformed)?;
    Ok(i64::from_le_bytes(raw))
}

/// The layout of a stream body: `RDB_TYPE_STREAM_LISTPACKS` (1), `_2`
/// (Redis 7.0: first and max deleted IDs, entries added and read) or `_3`
/// (Redis 7.2: consumers' active time too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Layout {
    V1,
    V2,
    V3,
}

/// Reads a stream body of `layout`.
pub(crate) fn read(src: &mut impl Source, layout: Layout) -> Result<Stream, Malformed> {
    let v2 = layout >= Layout::V2;
    let mut s = Stream::default();
    let node_count = src.count(2)?;
    for _ in 0..node_count {
        let master = Id::from_raw(&src.string()?)?;
        if s.nodes.last().is_some_and(|n| n.master >= master) {
            return Err(Malformed);
        }
        s.nodes.push(read_node(master, &src.packed()?)?);
    }
    s.length = src.length()?;
    s.last_id = read_id(src)?;
    // Live entries grow through the stream and none is past the last ID;
    // a deleted one may be anywhere (XSETID can move the last ID back past
    // deleted entries, and later ones follow them).
    let mut live = s
        .nodes
        .iter()
        .flat_map(|n| &n.entries)
        .filter(|e| !e.deleted)
        .map(|e| e.id);
    let first = live.next();
    let mut live_count = u64::from(first.is_some());
    let mut top = first;
    for id in live {
        if top.is_some_and(|top| top >= id) {
            return Err(Malformed);
        }
        top = Some(id);
        live_count += 1;
    }
    if live_count != s.length || top.is_some_and(|top| top > s.last_id) {
        return Err(Malformed);
    }
    // And every node's live entries come before the next node's master,
    // where lookups by ID start.
    for pair in s.nodes.windows(2) {
        let next_master = pair[1].master;
        if pair[0]
            .entries
            .iter()
            .any(|e| !e.deleted && e.id >= next_master)
        {
            return Err(Malformed);
        }
    }
    if v2 {
        s.first_id = read_id(src)?;
        s.max_deleted_id = read_id(src)?;
        s.entries_added = src.length()?;
    } else {
        s.first_id = first.unwrap_or_default();
        s.entries_added = s.length;
    }
    let group_count = src.count(4)?;
    for _ in 0..group_count {
        let name = src.string()?;
        let last_id = read_id(src)?;
        let entries_read = if v2 { Some(src.length()? as i64) } else { None };
        let pending_count = src.count(17)?;
        let mut pending: Vec<Pending> = Vec::new();
        for _ in 0..pending_count {
            let id = Id::from_raw(&src.raw(16)?)?;
            let delivery_time = read_time(src)?;
            let delivery_count = src.length()?;
            if pending.last().is_some_and(|p| p.id >= id) {
                return Err(Malformed);
            }
            pending.push(Pending {
                id,
                consumer: Vec::new(),
                delivery_time,
                delivery_count,
            });
        }
        let consumer_count = src.count(10)?;
        let mut consumers: Vec<(Vec<u8>, i64)> = Vec::new();
        for _ in 0..consumer_count {
            let consumer = src.string()?;
            let seen_time = read_time(src)?;
            if layout == Layout::V3 {
                // Redis 7.2's active time: keel's consumers (7.0's) have none.
                read_time(src)?;
            }
            if consumers.iter().any(|(c, _)| *c == consumer) {
                return Err(Malformed);
            }
            let owned = src.count(16)?;
            for _ in 0..owned {
                let id = Id::from_raw(&src.raw(16)?)?;
                let at = pending
                    .binary_search_by(|p| p.id.cmp(&id))
                    .map_err(|_| Malformed)?;
                if !pending[at].consumer.is_empty() {
                    return Err(Malformed);
                }
                pending[at].consumer = consumer.clone();
            }
            consumers.push((consumer, seen_time));
        }
        if pending.iter().any(|p| p.consumer.is_empty()) {
            return Err(Malformed);
        }
        if s.groups.iter().any(|g| g.name == name) {
            return Err(Malformed);
        }
        s.groups.push(Group {
            name,
            last_id,
            entries_read,
            pending,
            consumers,
        });
    }
    Ok(s)
}

/// Writes a stream body as `RDB_TYPE_STREAM_LISTPACKS_2`.
pub(crate) fn write(s: &Stream, out: &mut impl Sink) {
    out.length(s.nodes.len() as u64);
    for node in &s.nodes {
        out.string(&node.master.raw());
        out.string(&node_listpack(node));
    }
    out.length(s.length);
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        out.length(id.ms);
        out.length(id.seq);
    }
    out.length(s.entries_added);
    out.length(s.groups.len() as u64);
    for g in &s.groups {
        out.string(&g.name);
        out.length(g.last_id.ms);
        out.length(g.last_id.seq);
        out.length(g.entries_read.unwrap_or(-1) as u64);
        out.length(g.pending.len() as u64);
        for p in &g.pending {
            out.raw(&p.id.raw());
            out.raw(&p.delivery_time.to_le_bytes());
            out.length(p.delivery_count);
        }
        out.length(g.consumers.len() as u64);
        for (name, seen_time) in &g.consumers {
            out.string(name);
            out.raw(&seen_time.to_le_bytes());
            let owned: Vec<&Pending> = g.pending.iter().filter(|p| p.consumer == *name).collect();
            out.length(owned.len() as u64);
            owned.iter().for_each(|p| out.raw(&p.id.raw()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_listpacks_round_trip() {
        let id = |ms, seq| Id { ms, seq };
        let field = |s: &str| s.as_bytes().to_vec();
        let node = Node {
            master: id(5, 0),
            master_fields: vec![field("a")],
            entries: vec![
                Entry {
                    id: id(5, 0),
                    deleted: true,
                    fields: vec![field("a"), field("1")],
                },
                Entry {
                    id: id(7, 3),
                    deleted: false,
                    fields: vec![field("b"), field("xyz"), field("c"), field("")],
                },
                Entry {
                    id: id(9, 0),
                    deleted: false,
                    fields: vec![field("a"), field("-12")],
                },
            ],
        };
        assert_eq!(
            read_node(node.master, &node_listpack(&node)),
            Ok(node.clone())
        );
        assert_eq!(
            read_node(id(6, 0), &node_listpack(&Node::default())),
            Err(Malformed)
        );

        let pending = |ms, consumer: &str| Pending {
            id: id(ms, 0),
            consumer: field(consumer),
            delivery_time: 1_700_000_000_000,
            delivery_count: 2,
        };
        let stream = Stream {
            nodes: vec![node],
            length: 2,
            last_id: id(9, 0),
            first_id: id(7, 3),
            max_deleted_id: id(5, 0),
            entries_added: 3,
            groups: vec![Group {
                name: field("g"),
                last_id: id(9, 0),
                entries_read: Some(-1),
                pending: vec![pending(5, "bob"), pending(9, "alice")],
                consumers: vec![(field("alice"), 1), (field("bob"), 2)],
            }],
        };
        let value = crate::Value::Stream(Box::new(stream));
        let mut bytes = Vec::new();
        crate::write_object(&value, &crate::Thresholds::default(), &mut bytes);
        assert_eq!(crate::read_object(&bytes), Ok((value, bytes.len())));
        for cut in 0..bytes.len() {
            assert!(crate::read_object(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
