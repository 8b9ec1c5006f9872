//! Streams: an append-only log of entries keyed by ever-growing IDs, with
//! consumer groups that track delivery and acknowledgement.
//!
//! Representation. Entries are kept in nodes as Redis keeps them: a
//! `BTreeMap` from each node's master ID (the ID of the first entry it was
//! given) to the node, and in each node one byte buffer holding its
//! entries' fields and values one after the other (each element as a
//! LEB128 length and its bytes; only the values when an entry's field
//! names are the node's master fields, as Redis's SAMEFIELDS entries) and
//! an index of 24-byte slots (ID, offset, deleted flag). A node takes
//! entries until `stream-node-max-entries` or `stream-node-max-bytes`
//! (measured as Redis's listpack would lay the node out,
//! [`lp_element_bytes`]) says to start a new one. XDEL flags an entry
//! deleted and frees the node when its last live entry goes; trimming
//! drops whole nodes, and an exact trim flags entries of the first node.
//!
//! So the node shapes are Redis's, which is observable: approximate
//! trimming (`MAXLEN ~`, `MINID ~`) removes exactly what Redis removes,
//! XINFO STREAM reports the same `radix-tree-keys` and `radix-tree-nodes`
//! (counted on the master IDs as Redis's rax lays them out), and DUMP
//! writes each node's listpack byte for byte as Redis does. Lookups find
//! the node by master ID and scan its index, as Redis scans a listpack
//! (O(node size), 100 entries by default); ranges walk nodes in order.
//!
//! Trade-off: Redis's listpacks also delta-encode IDs and integers, so a
//! small entry costs it about 26 bytes where keel's slot alone is 24
//! (measured with 1M entries of two short fields: 26 bytes per entry in
//! Redis, 46 in keel; `bench/streams-memory.sh`). In exchange reads need no
//! decoding beyond the element lengths, and a deleted entry's flag is a
//! byte in the index rather than a listpack rewrite. A map of one
//! allocation per entry, the simple alternative, measured 115 bytes.
//!
//! Consumer groups are kept as Redis keeps them: a map by name (XINFO
//! GROUPS lists them in name order), each with its last delivered ID, its
//! logical read counter (`entries_read`, for the lag), its pending entries
//! list (PEL: ID → owner, delivery time, delivery count) and its consumers
//! (name → last seen time and their own PEL, a set of IDs).
//!
//! Memory is accounted as for the other types: a running count of heap
//! bytes (`heap`), updated by every change with the same cost functions
//! that added an item (a node's buffers by their capacity), so
//! [`Stream::heap_bytes`] is O(1) and exact with respect to its own
//! estimate of map slots.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::Listpack;
use crate::size_class::allocated;
use crate::value::parse_canonical_i64;

/// A stream entry ID: milliseconds and a sequence number, ordered as
/// Redis orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The smallest ID, 0-0.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID right after this one, `None` past the largest.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// The ID right before this one, `None` before the smallest.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_sub(1)?,
                seq: u64::MAX,
            }),
        }
    }

    /// True for 0-0.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's "invalid" logical read counter of a group.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// One node, as Redis would have it (see the module comment): its entries'
/// fields and values packed in one buffer, and an index of their IDs.
#[derive(Debug, Clone, PartialEq, Default)]
struct Node {
    /// Live entries.
    live: u64,
    /// Entries flagged deleted, still taking room.
    deleted: u64,
    /// The master entry's field names: entries with the same fields do not
    /// repeat them.
    master_fields: Listpack,
    /// Bytes of the entries after the master entry in Redis's listpack.
    entry_bytes: usize,
    /// Each entry's fields and values, one after the other, each element
    /// as its length (LEB128) and its bytes.
    data: Vec<u8>,
    /// The entries in ID order, deleted ones included.
    slots: Vec<Slot>,
}

/// Where one entry of a node is.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Slot {
    id: StreamId,
    /// Offset of its elements in the node's data; they end where the next
    /// slot's start.
    start: u32,
    /// Flagged deleted.
    deleted: bool,
    /// Its field names are the node's master fields, so only its values
    /// are stored, as Redis's SAMEFIELDS entries.
    same_fields: bool,
}

impl Node {
    /// The node's listpack size, as Redis's `lpBytes`: header, master
    /// entry (count, deleted, field count, fields, terminator), entries,
    /// end byte.
    fn bytes(&self) -> usize {
        const HEADER_AND_END: usize = 7;
        HEADER_AND_END
            + lp_int_bytes(self.live as i64)
            + lp_int_bytes(self.deleted as i64)
            + lp_int_bytes(self.master_fields.len() as i64)
            + self
                .master_fields
                .iter()
                .map(lp_element_bytes)
                .sum::<usize>()
            + lp_int_bytes(0)
            + self.entry_bytes
    }

    /// The fields of the entry in slot `at`.
    fn fields(&self, at: usize) -> Fields<'_> {
        let start = self.slots[at].start as usize;
        let end = self
            .slots
            .get(at + 1)
            .map_or(self.data.len(), |next| next.start as usize);
        Fields {
            names: self.slots[at].same_fields.then_some(&self.master_fields),
            bytes: &self.data[start..end],
        }
    }

    /// The slot of live entry `id`. Slots are in the order entries were
    /// added: live ones by ID, but a deleted one may precede a smaller or
    /// equal ID (XSETID may move the last ID back past deleted entries), so
    /// this scans the node, as Redis scans its listpack.
    fn find_live(&self, id: StreamId) -> Option<usize> {
        self.slots
            .iter()
            .position(|slot| slot.id == id && !slot.deleted)
    }

    /// Its live entries in order.
    fn live(&self) -> impl Iterator<Item = (StreamId, Fields<'_>)> {
        let slots = self.slots.iter().enumerate();
        slots
            .filter(|(_, slot)| !slot.deleted)
            .map(|(at, slot)| (slot.id, self.fields(at)))
    }

    /// Its live entries, newest first.
    fn live_rev(&self) -> impl Iterator<Item = (StreamId, Fields<'_>)> {
        let slots = self.slots.iter().enumerate().rev();
        slots
            .filter(|(_, slot)| !slot.deleted)
            .map(|(at, slot)| (slot.id, self.fields(at)))
    }

    /// Its first live entry's ID.
    fn first_live(&self) -> Option<StreamId> {
        self.slots
            .iter()
            .find(|slot| !slot.deleted)
            .map(|slot| slot.id)
    }

    /// The last ID in the node, deleted or not.
    fn last(&self) -> Option<StreamId> {
        self.slots.last().map(|slot| slot.id)
    }

    /// Heap bytes the node's buffers hold.
    fn heap(&self) -> usize {
        allocated(self.data.capacity())
            + allocated(self.slots.capacity() * std::mem::size_of::<Slot>())
    }
}

/// An entry's fields and values, alternating, as its node stores them:
/// all of them, or only the values when the names are the master's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fields<'a> {
    names: Option<&'a Listpack>,
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Number of elements (fields and values).
    pub fn len(self) -> usize {
        match self.names {
            Some(names) => 2 * names.len(),
            None => self.stored().count(),
        }
    }

    /// True for an entry without elements (never stored).
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The elements in order.
    pub fn iter(self) -> impl Iterator<Item = &'a [u8]> {
        let names = self
            .names
            .into_iter()
            .flat_map(|names| names.iter().map(Some));
        let paired = names
            .zip(self.stored())
            .flat_map(|(name, value)| [name, Some(value)]);
        let whole = self
            .names
            .is_none()
            .then(|| self.stored())
            .into_iter()
            .flatten();
        paired.flatten().chain(whole)
    }

    /// The elements stored in the node's buffer.
    fn stored(self) -> impl Iterator<Item = &'a [u8]> {
        let mut rest = self.bytes;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let (len, after) = read_len(rest);
            let (element, tail) = after.split_at(len.min(after.len()));
            rest = tail;
            Some(element)
        })
    }

    /// An owned copy.
    pub fn to_listpack(self) -> Listpack {
        let mut pack = Listpack::new();
        pack.push(&self.iter().collect::<Vec<_>>());
        pack
    }
}

/// Appends `element` to `data` as its length (LEB128) and its bytes.
fn write_element(data: &mut Vec<u8>, element: &[u8]) {
    let mut n = element.len();
    while n >= 0x80 {
        data.push((n as u8) | 0x80);
        n >>= 7;
    }
    data.push(n as u8);
    data.extend_from_slice(element);
}

/// Reads a length written by [`write_element`]; returns it and the rest.
fn read_len(bytes: &[u8]) -> (usize, &[u8]) {
    let (mut n, mut shift) = (0usize, 0);
    for (i, b) in bytes.iter().enumerate() {
        n |= ((b & 0x7f) as usize) << shift;
        if *b < 0x80 {
            return (n, &bytes[i + 1..]);
        }
        shift += 7;
    }
    (0, &[])
}

/// Bytes of a listpack element's back-length for an element of `len` bytes.
fn lp_backlen_bytes(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Bytes of an integer element in a listpack.
fn lp_int_bytes(n: i64) -> usize {
    let encoded = match n {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    encoded + lp_backlen_bytes(encoded)
}

/// Bytes of an element in a listpack, which stores canonical integers as
/// integers, as Redis's `lpAppend` does.
pub fn lp_element_bytes(s: &[u8]) -> usize {
    if let Some(n) = parse_canonical_i64(s) {
        return lp_int_bytes(n);
    }
    let encoded = match s.len() {
        0..=63 => 1 + s.len(),
        64..=4095 => 2 + s.len(),
        _ => 5 + s.len(),
    };
    encoded + lp_backlen_bytes(encoded)
}

/// The node-size thresholds (`stream-node-max-bytes`, `-entries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    /// Most bytes of a node; 0 is Redis's 1 GB cap.
    pub max_bytes: usize,
    /// Most entries (live and deleted) of a node; 0 for no limit.
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Redis's `STREAM_LISTPACK_MAX_SIZE`: the most bytes of a node whatever
/// the configuration, and of one entry's fields and values.
pub const NODE_MAX_SIZE: usize = 1 << 30;

/// The most entries a node's index is sized for up front, whatever
/// `stream-node-max-entries` says.
const NODE_MAX_ENTRIES_RESERVED: usize = 1024;

/// An entry waiting for acknowledgement in a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The consumer it was delivered to.
    pub consumer: Box<[u8]>,
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consumer {
    /// Unix ms the consumer was last active.
    pub seen_time: i64,
    /// The IDs pending for it.
    pub pending: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The last ID delivered to its consumers.
    pub last_id: StreamId,
    /// Logical read counter, or [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    /// Pending entries list.
    pub pending: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

/// What a trim removes: entries beyond a count, or below an ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimTo {
    /// Keep at most this many entries (MAXLEN).
    MaxLen(u64),
    /// Remove entries with a smaller ID (MINID).
    MinId(StreamId),
}

/// A trim request, as XADD and XTRIM parse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trim {
    /// What to remove.
    pub to: TrimTo,
    /// `~`: only whole nodes, as Redis does.
    pub approx: bool,
    /// Most entries removed (approximate trims only); 0 for no limit.
    pub limit: u64,
}

/// Estimated bytes a map slot costs beyond its key and value (amortised
/// B-tree node space).
const SLOT_OVERHEAD: usize = 16;

/// Entries a node's index is sized for at first when nodes have no
/// entry limit.
const FIRST_SLOTS: usize = 16;

fn node_cost(node: &Node) -> usize {
    SLOT_OVERHEAD
        + std::mem::size_of::<(StreamId, Node)>()
        + allocated(node.master_fields.heap_bytes())
        + node.heap()
}

fn name_cost(name: &[u8]) -> usize {
    allocated(name.len())
}

fn pending_cost(pending: &Pending) -> usize {
    // The group's PEL slot and the consumer's set slot.
    2 * SLOT_OVERHEAD
        + std::mem::size_of::<(StreamId, Pending)>()
        + std::mem::size_of::<StreamId>()
        + name_cost(&pending.consumer)
}

fn consumer_cost(name: &[u8]) -> usize {
    SLOT_OVERHEAD + std::mem::size_of::<(Box<[u8]>, Consumer)>() + name_cost(name)
}

fn group_cost(name: &[u8]) -> usize {
    SLOT_OVERHEAD + std::mem::size_of::<(Box<[u8]>, Group)>() + name_cost(name)
}

/// Nodes of a rax holding `keys` (sorted, distinct, all of length 16)
/// below depth `depth`: a chain all keys share is one compressed node, a
/// byte where they part is one branching node, each key ends in a leaf.
fn rax_nodes(keys: &[[u8; 16]], depth: usize) -> usize {
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return 1;
    };
    if depth == 16 {
        return 1;
    }
    let shared = (depth..16).take_while(|&i| first[i] == last[i]).count();
    if shared > 0 {
        return 1 + rax_nodes(keys, depth + shared);
    }
    let mut nodes = 1;
    let mut rest = keys;
    while let Some(head) = rest.first() {
        let group = rest.iter().take_while(|k| k[depth] == head[depth]).count();
        nodes += rax_nodes(&rest[..group], depth + 1);
        rest = &rest[group..];
    }
    nodes
}

/// A node as [`Stream::nodes`] shows it.
pub struct NodeView<'a> {
    /// The node's key.
    pub master: StreamId,
    /// The field names its entries may share.
    pub master_fields: &'a Listpack,
    /// Its entries: ID, deleted, fields and values alternating.
    pub entries: Vec<(StreamId, bool, Fields<'a>)>,
}

/// A stream value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    len: usize,
    last_id: StreamId,
    max_deleted_id: StreamId,
    entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    heap: usize,
}

impl Stream {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the stream has no entry (it is kept all the same).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        self.heap
    }

    /// The last ID ever added (or set by XSETID).
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The last entry's ID, `None` when empty (the last ID may be past it:
    /// XDEL, XSETID).
    pub fn top_id(&self) -> Option<StreamId> {
        self.top_or_first(true)
    }

    /// The first entry's ID, 0-0 when empty.
    pub fn first_id(&self) -> StreamId {
        self.top_or_first(false).unwrap_or_default()
    }

    /// The last live entry's ID when `top`, else the first's.
    fn top_or_first(&self, top: bool) -> Option<StreamId> {
        let edge = match top {
            true => self.range_rev(StreamId::MIN, StreamId::MAX).next(),
            false => self.range(StreamId::MIN, StreamId::MAX).next(),
        };
        edge.map(|(id, _)| id)
    }

    /// The largest ID ever deleted (XDEL, XSETID).
    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted_id
    }

    /// How many entries were ever added.
    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// Allocations freeing the stream walks: three per node (index, data,
    /// master fields) and one per group, consumer and pending entry.
    pub fn allocations(&self) -> usize {
        let groups: usize = self
            .groups
            .values()
            .map(|g| 1 + g.consumers.len() + g.pending.len())
            .sum();
        3 * self.nodes.len() + groups
    }

    /// Number of nodes Redis would have (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes of the radix tree Redis would key these nodes in (XINFO's
    /// `radix-tree-nodes`): the nodes of a compressed trie over the nodes'
    /// 16-byte big-endian master IDs, as Redis's rax lays it out.
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self
            .nodes
            .keys()
            .map(|id| {
                let mut key = [0u8; 16];
                key[..8].copy_from_slice(&id.ms.to_be_bytes());
                key[8..].copy_from_slice(&id.seq.to_be_bytes());
                key
            })
            .collect();
        rax_nodes(&keys, 0)
    }

    /// Sets the stream's IDs and counter, as XSETID does (it validated them).
    pub fn set_meta(
        &mut self,
        last_id: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) {
        self.last_id = last_id;
        if let Some(added) = entries_added {
            self.entries_added = added;
        }
        if let Some(deleted) = max_deleted {
            self.max_deleted_id = deleted;
        }
    }

    /// The ID `*` stands for at `now_ms`, `None` once the last possible ID
    /// was used.
    pub fn next_auto_id(&self, now_ms: u64) -> Option<StreamId> {
        if now_ms > self.last_id.ms {
            Some(StreamId { ms: now_ms, seq: 0 })
        } else {
            self.last_id.next()
        }
    }

    /// Appends an entry; `id` must be greater than [`Stream::last_id`] and
    /// `fields` alternate names and values.
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: NodeLimits) {
        let names: Vec<&[u8]> = fields.iter().step_by(2).copied().collect();
        let raw_len: usize = fields.iter().map(|f| f.len()).sum();
        let max_bytes = match limits.max_bytes {
            0 => NODE_MAX_SIZE,
            n => n.min(NODE_MAX_SIZE),
        };
        let fits = self.nodes.values().next_back().is_some_and(|node| {
            node.bytes() + raw_len < max_bytes
                && (limits.max_entries == 0 || node.live + node.deleted < limits.max_entries as u64)
        });
        if !fits {
            let slots = match limits.max_entries {
                0 => FIRST_SLOTS,
                n => n.min(NODE_MAX_ENTRIES_RESERVED),
            };
            self.open_node(id, &names, slots);
        }
        self.push_entry(id, fields, false);
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Starts a node at `master` whose entries may share `names`, its
    /// index sized for `slots` entries. The node before it is complete:
    /// its buffers are trimmed to their contents.
    fn open_node(&mut self, master: StreamId, names: &[&[u8]], slots: usize) {
        if let Some(previous) = self.nodes.values_mut().next_back() {
            let before = previous.heap();
            previous.data.shrink_to_fit();
            previous.slots.shrink_to_fit();
            self.heap = self.heap - before + previous.heap();
        }
        let mut master_fields = Listpack::new();
        master_fields.push(names);
        let node = Node {
            master_fields,
            slots: Vec::with_capacity(slots),
            ..Node::default()
        };
        self.heap += node_cost(&node);
        self.nodes.insert(master, node);
    }

    /// Adds an entry (live, or a deleted one a restored node holds) to the
    /// last node, counting the bytes Redis's listpack would give it.
    fn push_entry(&mut self, id: StreamId, fields: &[&[u8]], deleted: bool) {
        let Some((&master, node)) = self.nodes.iter_mut().next_back() else {
            return;
        };
        let names = fields.iter().step_by(2).copied();
        let same_fields = node.master_fields.iter().eq(names);
        let pairs = fields.len() / 2;
        let mut bytes = lp_int_bytes(2)
            + lp_int_bytes(id.ms.wrapping_sub(master.ms) as i64)
            + lp_int_bytes(id.seq.wrapping_sub(master.seq) as i64);
        let lp_count = if same_fields {
            pairs + 3
        } else {
            bytes += lp_int_bytes(pairs as i64);
            2 * pairs + 4
        };
        bytes += fields
            .iter()
            .enumerate()
            .filter(|(i, _)| !same_fields || i % 2 == 1)
            .map(|(_, f)| lp_element_bytes(f))
            .sum::<usize>();
        bytes += lp_int_bytes(lp_count as i64);
        node.entry_bytes += bytes;
        let before = node.heap();
        let start = u32::try_from(node.data.len()).unwrap_or(u32::MAX);
        node.slots.push(Slot {
            id,
            start,
            deleted,
            same_fields,
        });
        let stored = fields
            .iter()
            .skip(usize::from(same_fields))
            .step_by(if same_fields { 2 } else { 1 });
        stored.for_each(|f| write_element(&mut node.data, f));
        self.heap = self.heap - before + node.heap();
        if deleted {
            node.deleted += 1;
        } else {
            node.live += 1;
            self.len += 1;
        }
    }

    /// Adds a node as a DUMP payload holds it: its master ID and fields,
    /// then its entries (ID, deleted, fields and values alternating) in
    /// order. The caller checked the IDs grow past the last node's.
    pub fn restore_node<'a>(
        &mut self,
        master: StreamId,
        master_fields: &[&[u8]],
        entries: impl ExactSizeIterator<Item = (StreamId, bool, Vec<&'a [u8]>)>,
    ) {
        self.open_node(master, master_fields, entries.len());
        for (id, deleted, fields) in entries {
            self.push_entry(id, &fields, deleted);
        }
    }

    /// Each node as a DUMP lays it out: its master ID, its master fields,
    /// and its entries (ID, deleted, fields and values) in order.
    pub fn nodes(&self) -> Vec<NodeView<'_>> {
        self.nodes
            .iter()
            .map(|(master, node)| NodeView {
                master: *master,
                master_fields: &node.master_fields,
                entries: (0..node.slots.len())
                    .map(|at| (node.slots[at].id, node.slots[at].deleted, node.fields(at)))
                    .collect(),
            })
            .collect()
    }

    /// Where a forward scan for entries from `id` on starts: the last node
    /// whose master ID is not past `id`. Live entries grow from node to
    /// node, and every node's live entries are below the next node's
    /// master ID, so no earlier node holds one at or past `id`.
    fn scan_from(&self, id: StreamId) -> StreamId {
        self.nodes
            .range(..=id)
            .next_back()
            .map_or(StreamId::MIN, |(master, _)| *master)
    }

    /// Where a backward scan for entries up to `id` starts. A node's live
    /// entries may lie below its own master ID (XSETID can move the last
    /// ID back past deleted entries, and a later entry then follows them),
    /// so the scan starts at the last node holding a live entry not past
    /// `id`, as Redis's iterator finds it.
    fn scan_back_from(&self, id: StreamId) -> StreamId {
        let mut at = self.scan_from(id);
        for (master, node) in self.nodes.range(at..).skip(1) {
            match node.first_live() {
                Some(first) if first > id => break,
                Some(_) => at = *master,
                None => {}
            }
        }
        at
    }

    /// The live entry `id`: its node's master ID and its slot.
    fn locate(&self, id: StreamId) -> Option<(StreamId, usize)> {
        for (master, node) in self.nodes.range(self.scan_from(id)..) {
            if let Some(at) = node.find_live(id) {
                return Some((*master, at));
            }
            if node.first_live().is_some_and(|first| first > id) {
                return None;
            }
        }
        None
    }

    /// The entry `id`'s fields and values, alternating.
    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (master, at) = self.locate(id)?;
        self.nodes.get(&master).map(|node| node.fields(at))
    }

    /// Live entries with IDs in `start..=end`, oldest first.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, Fields<'_>)> {
        self.nodes
            .range(self.scan_from(start)..)
            .flat_map(|(_, node)| node.live())
            .skip_while(move |(id, _)| *id < start)
            .take_while(move |(id, _)| *id <= end)
    }

    /// Live entries with IDs in `start..=end`, newest first (XREVRANGE).
    pub fn range_rev(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = (StreamId, Fields<'_>)> {
        self.nodes
            .range(..=self.scan_back_from(end))
            .rev()
            .flat_map(|(_, node)| node.live_rev())
            .skip_while(move |(id, _)| *id > end)
            .take_while(move |(id, _)| *id >= start)
    }

    /// Removes entry `id` as XDEL does; true if it was there. The largest
    /// deleted ID is remembered for the lag.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if !self.remove_entry(id, true) {
            return false;
        }
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Flags entry `id` deleted in its node, as Redis does, dropping the
    /// node once nothing live is left in it if `drop_emptied` (XDEL does,
    /// an exact trim leaves the node as Redis's does).
    fn remove_entry(&mut self, id: StreamId, drop_emptied: bool) -> bool {
        let Some((master, at)) = self.locate(id) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(&master) else {
            return false;
        };
        node.slots[at].deleted = true;
        node.live -= 1;
        node.deleted += 1;
        self.len -= 1;
        if node.live == 0 && drop_emptied {
            self.remove_node(master);
        }
        true
    }

    fn remove_node(&mut self, master: StreamId) {
        if let Some(node) = self.nodes.remove(&master) {
            self.heap -= node_cost(&node);
            self.len -= node.live as usize;
        }
    }

    /// Trims as XTRIM and XADD's trimming options do; returns the entries
    /// removed. Approximate trims remove only whole nodes, and at most
    /// `limit` entries; exact ones remove entries one by one from the
    /// first node left.
    pub fn trim(&mut self, trim: Trim) -> u64 {
        let mut removed = 0u64;
        while let Some((&master, node)) = self.nodes.iter().next() {
            let whole = match trim.to {
                TrimTo::MaxLen(max) => self.len as u64 - node.live >= max,
                TrimTo::MinId(min) => node.last().is_some_and(|last| last < min),
            };
            if !whole {
                if !trim.approx {
                    removed += self.trim_within_node(trim.to);
                }
                break;
            }
            if trim.limit != 0 && removed + node.live > trim.limit {
                break;
            }
            removed += node.live;
            self.remove_node(master);
        }
        removed
    }

    /// An exact trim's removal of single entries from the first node.
    fn trim_within_node(&mut self, to: TrimTo) -> u64 {
        let mut removed = 0;
        while let Some(first) = self.top_or_first(false) {
            let remove = match to {
                TrimTo::MaxLen(max) => self.len as u64 > max,
                TrimTo::MinId(min) => first < min,
            };
            if !remove {
                break;
            }
            self.remove_entry(first, false);
            removed += 1;
        }
        removed
    }

    /// Heap bytes delivering one entry to `consumer` adds to a group's
    /// pending entries, known before (XREADGROUP reserves them).
    pub fn delivery_bytes(consumer: &[u8]) -> usize {
        pending_cost(&Pending {
            consumer: consumer.into(),
            delivery_time: 0,
            delivery_count: 0,
        }) + consumer_cost(consumer)
    }

    /// The consumer groups, by name.
    pub fn groups(&self) -> &BTreeMap<Box<[u8]>, Group> {
        &self.groups
    }

    /// The group `name`.
    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    /// Creates group `name` at `last_id`; false if it exists.
    pub fn create_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.heap += group_cost(name);
        let group = Group {
            last_id,
            entries_read,
            pending: BTreeMap::new(),
            consumers: BTreeMap::new(),
        };
        self.groups.insert(name.into(), group);
        true
    }

    /// Destroys group `name`; false if it did not exist.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        let Some(group) = self.groups.remove(name) else {
            return false;
        };
        self.heap -= group_cost(name);
        for pending in group.pending.values() {
            self.heap -= pending_cost(pending);
        }
        for consumer in group.consumers.keys() {
            self.heap -= consumer_cost(consumer);
        }
        true
    }

    /// Sets group `name`'s last delivered ID and read counter (XGROUP
    /// SETID); false if there is no such group.
    pub fn set_group_id(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) -> bool {
        let Some(group) = self.groups.get_mut(name) else {
            return false;
        };
        group.last_id = last_id;
        group.entries_read = entries_read;
        true
    }

    /// Creates consumer `consumer` in `group` (which must exist) if it is
    /// new, seen at `now_ms`; true if it was created.
    pub fn create_consumer(&mut self, group: &[u8], consumer: &[u8], now_ms: i64) -> bool {
        let Some(g) = self.groups.get_mut(group) else {
            return false;
        };
        if g.consumers.contains_key(consumer) {
            return false;
        }
        g.consumers.insert(
            consumer.into(),
            Consumer {
                seen_time: now_ms,
                pending: BTreeSet::new(),
            },
        );
        self.heap += consumer_cost(consumer);
        true
    }

    /// Marks `consumer` of `group` seen at `now_ms`, creating it if new;
    /// true if it was created.
    pub fn touch_consumer(&mut self, group: &[u8], consumer: &[u8], now_ms: i64) -> bool {
        let created = self.create_consumer(group, consumer, now_ms);
        if let Some(c) = self
            .groups
            .get_mut(group)
            .and_then(|g| g.consumers.get_mut(consumer))
        {
            c.seen_time = now_ms;
        }
        created
    }

    /// Deletes `consumer` of `group` and its pending entries; the number
    /// of entries it had pending, `None` if there was no such consumer.
    pub fn delete_consumer(&mut self, group: &[u8], consumer: &[u8]) -> Option<usize> {
        let g = self.groups.get_mut(group)?;
        let c = g.consumers.remove(consumer)?;
        let mut freed = consumer_cost(consumer);
        for id in &c.pending {
            if let Some(p) = g.pending.remove(id) {
                freed += pending_cost(&p);
            }
        }
        self.heap -= freed;
        Some(c.pending.len())
    }

    /// Records `id` as delivered to `consumer` of `group` at `now_ms`: a
    /// new pending entry, or one moved to it with its count raised by
    /// `count_delivery`. The consumer must exist.
    pub fn deliver(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        id: StreamId,
        now_ms: i64,
        count_delivery: bool,
    ) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let previous = g.pending.remove(&id);
        let mut pending = Pending {
            consumer: consumer.into(),
            delivery_time: now_ms,
            delivery_count: 1,
        };
        if let Some(old) = previous {
            if let Some(c) = g.consumers.get_mut(&old.consumer) {
                c.pending.remove(&id);
            }
            self.heap -= pending_cost(&old);
            pending.delivery_count = old.delivery_count.wrapping_add(u64::from(count_delivery));
        }
        if let Some(c) = g.consumers.get_mut(consumer) {
            c.pending.insert(id);
        }
        self.heap += pending_cost(&pending);
        g.pending.insert(id, pending);
    }

    /// Changes a pending entry's delivery time and count in place
    /// (XCLAIM's IDLE, TIME and RETRYCOUNT).
    pub fn set_delivery(&mut self, group: &[u8], id: StreamId, time: i64, count: u64) {
        if let Some(p) = self
            .groups
            .get_mut(group)
            .and_then(|g| g.pending.get_mut(&id))
        {
            p.delivery_time = time;
            p.delivery_count = count;
        }
    }

    /// Acknowledges `id` in `group`; true if it was pending.
    pub fn ack(&mut self, group: &[u8], id: StreamId) -> bool {
        let Some(g) = self.groups.get_mut(group) else {
            return false;
        };
        let Some(p) = g.pending.remove(&id) else {
            return false;
        };
        if let Some(c) = g.consumers.get_mut(&p.consumer) {
            c.pending.remove(&id);
        }
        self.heap -= pending_cost(&p);
        true
    }

    /// Moves `group`'s last delivered ID to `id`, keeping its read counter
    /// as Redis's XREADGROUP does when it delivers `id`.
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let has_tombstones = self.range_has_tombstones(id, StreamId::MAX);
        let estimate = self.distance_from_first_ever(id);
        let entries_added = self.entries_added;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if id <= g.last_id {
            return;
        }
        if g.entries_read != INVALID_ENTRIES_READ && !has_tombstones {
            g.entries_read = g.entries_read.wrapping_add(1);
        } else if entries_added != 0 {
            g.entries_read = estimate;
        }
        g.last_id = id;
    }

    /// True if `start..=end` may hold a deleted entry, as Redis's
    /// `streamRangeHasTombstones`.
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.len == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// The logical read counter of `id` (entries from the first ever
    /// added up to it), or [`INVALID_ENTRIES_READ`] when it cannot be told,
    /// as Redis's `streamEstimateDistanceFromFirstEverEntry`.
    pub fn distance_from_first_ever(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.len == 0 && id <= self.last_id {
            return added;
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return added,
            std::cmp::Ordering::Greater => return INVALID_ENTRIES_READ,
            std::cmp::Ordering::Less => {}
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            match id.cmp(&first) {
                std::cmp::Ordering::Less => return added.wrapping_sub(self.len as i64),
                std::cmp::Ordering::Equal => {
                    return added.wrapping_sub(self.len as i64).wrapping_add(1)
                }
                std::cmp::Ordering::Greater => {}
            }
        }
        INVALID_ENTRIES_READ
    }

    /// The lag of `group`: entries not delivered yet, `None` when it cannot
    /// be told, as Redis's `streamReplyWithCGLag`.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        let added = self.entries_added as i64;
        if added == 0 {
            return Some(0);
        }
        if group.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(group.last_id, StreamId::MAX)
        {
            return Some(added.wrapping_sub(group.entries_read));
        }
        let read = self.distance_from_first_ever(group.last_id);
        (read != INVALID_ENTRIES_READ).then_some(added.wrapping_sub(read))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// Recomputes the heap count from scratch: it must match the running one.
    fn recount(s: &Stream) -> usize {
        let nodes: usize = s.nodes.values().map(node_cost).sum();
        let groups: usize = s
            .groups
            .iter()
            .map(|(name, g)| {
                group_cost(name)
                    + g.pending.values().map(pending_cost).sum::<usize>()
                    + g.consumers.keys().map(|c| consumer_cost(c)).sum::<usize>()
            })
            .sum();
        nodes + groups
    }

    #[test]
    fn ids_step_and_order() {
        assert_eq!(id(1, u64::MAX).next(), Some(id(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(id(2, 0).prev(), Some(id(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        assert!(id(1, 5) < id(2, 0));
        assert_eq!(id(3, 4).to_string(), "3-4");
    }

    #[test]
    fn approximate_trim_drops_whole_nodes_only() {
        let mut s = Stream::default();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 10,
        };
        for i in 1..=35 {
            s.append(id(i, 0), &[b"f", b"v"], limits);
        }
        assert_eq!(s.node_count(), 4);
        let trim = |to, approx| Trim {
            to,
            approx,
            limit: 0,
        };
        assert_eq!(s.trim(trim(TrimTo::MaxLen(18), true)), 10);
        assert_eq!(s.len(), 25);
        assert_eq!(s.trim(trim(TrimTo::MaxLen(18), false)), 7);
        assert_eq!(s.first_id(), id(18, 0));
        assert_eq!(s.trim(trim(TrimTo::MinId(id(31, 0)), true)), 13);
        assert_eq!(s.first_id(), id(31, 0));
        assert_eq!(s.heap_bytes(), recount(&s));
    }

    #[test]
    fn groups_account_their_memory() {
        let mut s = Stream::default();
        for i in 1..=5 {
            s.append(id(i, 0), &[b"f", b"v"], NodeLimits::default());
        }
        assert!(s.create_group(b"g", StreamId::MIN, 0));
        assert!(!s.create_group(b"g", StreamId::MIN, 0));
        s.touch_consumer(b"g", b"alice", 10);
        s.touch_consumer(b"g", b"bob", 10);
        for i in 1..=3 {
            s.deliver(b"g", b"alice", id(i, 0), 10, true);
            s.advance_group(b"g", id(i, 0));
        }
        s.deliver(b"g", b"bob", id(2, 0), 20, true);
        let g = s.group(b"g").expect("created");
        assert_eq!(g.pending[&id(2, 0)].delivery_count, 2);
        assert_eq!(g.consumers[&b"alice"[..]].pending.len(), 2);
        assert_eq!(g.entries_read, 3);
        assert_eq!(s.lag(g), Some(2));
        assert!(s.ack(b"g", id(1, 0)));
        assert_eq!(s.delete_consumer(b"g", b"bob"), Some(1));
        assert_eq!(s.heap_bytes(), recount(&s));
        assert!(s.delete(id(4, 0)));
        assert_eq!(s.lag(s.group(b"g").expect("kept")), None);
        assert!(s.destroy_group(b"g"));
        assert_eq!(s.heap_bytes(), recount(&s));
    }

    #[test]
    fn deleted_entries_stay_in_their_node_until_it_goes() {
        let mut s = Stream::default();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 3,
        };
        for i in 1..=5 {
            s.append(id(i, 0), &[b"f", b"v"], limits);
        }
        assert!(s.delete(id(2, 0)));
        let flags: Vec<(StreamId, bool)> = s.nodes()[0]
            .entries
            .iter()
            .map(|(id, deleted, _)| (*id, *deleted))
            .collect();
        assert_eq!(
            flags,
            [(id(1, 0), false), (id(2, 0), true), (id(3, 0), false)]
        );
        assert_eq!(s.heap_bytes(), recount(&s));
        let mut copy = Stream::default();
        for node in s.nodes() {
            let fields: Vec<&[u8]> = node.master_fields.iter().collect();
            let entries = node
                .entries
                .iter()
                .map(|(id, deleted, f)| (*id, *deleted, f.iter().collect()));
            copy.restore_node(node.master, &fields, entries);
        }
        copy.set_meta(s.last_id(), Some(5), Some(id(2, 0)));
        type Layout = Vec<Vec<(StreamId, bool, Vec<Vec<u8>>)>>;
        let layout = |s: &Stream| -> Layout {
            s.nodes()
                .iter()
                .map(|n| {
                    let entries = n.entries.iter();
                    entries
                        .map(|(id, deleted, f)| {
                            (*id, *deleted, f.iter().map(<[u8]>::to_vec).collect())
                        })
                        .collect()
                })
                .collect()
        };
        assert_eq!(layout(&copy), layout(&s));
        assert_eq!(
            (copy.len(), copy.max_deleted_id()),
            (s.len(), s.max_deleted_id())
        );
        assert_eq!(copy.heap_bytes(), recount(&copy));
        // Deleting a node's last live entry frees the node, tombstones too.
        assert!(s.delete(id(1, 0)) && s.delete(id(3, 0)));
        assert_eq!(s.node_count(), 1);
        assert_eq!(s.heap_bytes(), recount(&s));
    }

    #[test]
    fn radix_tree_nodes_as_redis_counts_them() {
        let mut s = Stream::default();
        assert_eq!(s.radix_tree_nodes(), 1);
        s.append(id(1, 1), &[b"f", b"v"], NodeLimits::default());
        assert_eq!(s.radix_tree_nodes(), 2);
        let one_per_node = NodeLimits {
            max_bytes: 4096,
            max_entries: 1,
        };
        s.append(id(2, 0), &[b"f", b"v"], one_per_node);
        s.append(id(3, 0), &[b"f", b"v"], one_per_node);
        // As redis-server counts them for nodes at 1-1, 2-0 and 3-0.
        assert_eq!(s.radix_tree_nodes(), 8);
    }

    #[test]
    fn listpack_sizes_follow_redis_encoding() {
        assert_eq!(lp_element_bytes(b"5"), 2);
        assert_eq!(lp_element_bytes(b"1000"), 3);
        assert_eq!(lp_element_bytes(b"abc"), 5);
        assert_eq!(lp_element_bytes(&[b'x'; 100]), 103);
    }
}
