//! Lists: sequences of byte strings with pushes and pops at both ends.
//!
//! Two encodings:
//!
//! - A [`Listpack`] while the list is small — within
//!   `list-max-listpack-size` (Redis's default -2: 8 KB of listpack; a
//!   positive value counts elements). One exactly-sized buffer: a byte or
//!   two per element beyond its bytes. Every change rebuilds the buffer,
//!   which the size bound keeps to a few kilobytes.
//! - [`Chunks`] past it: a [`VecDeque`] of chunks, each a buffer of
//!   elements stored one after another, holding at most the listpack's
//!   byte bound (8 KB by default, as Redis's quicklist nodes; 8 KB when
//!   the limit counts elements, since chunks count bytes).
//!
//! A chunk stores an element as its length (a LEB128 varint), its bytes,
//! and the length's varint again with its bytes mirrored, so the chunk
//! reads from either end as a listpack's back-length allows: without it a
//! pop at the tail would walk the whole chunk to find its last element.
//! The elements occupy a window `head..tail` of the buffer with free space
//! on both sides. A push at the list's head writes just before `head` of
//! the first chunk, one at the tail just after `tail` of the last; a pop
//! moves the window's edge past its element. No other element moves and
//! nothing is allocated per element, so pushes and pops at either end are
//! O(1), and a 10-byte element takes 12 bytes plus its share of a 40-byte
//! chunk header (a deque of boxed elements paid a 16-byte pointer and a
//! 16-byte allocation per element, and copied every pointer each time the
//! deque doubled).
//!
//! A push that finds no room at its end of the end chunk doubles the
//! chunk's buffer (64 bytes at first, up to the bound), moving the
//! elements to the far side so that the free space faces the pushes; a
//! chunk at the bound gets a new neighbour instead. Elements move only
//! when their buffer grows, a few times in a chunk's life, and are never
//! re-centred in the same buffer: pushes alternating between the ends of
//! a one-chunk list would then copy the chunk on every push. The price is
//! free space stranded on the far side of a chunk, at most a chunk at each
//! end of the list, since a chunk gets a neighbour only when its side
//! facing it is full. An element larger than the bound gets a chunk of its
//! own, exactly sized. A chunk emptied by pops is dropped, so a draining
//! queue gives its memory back chunk by chunk.
//!
//! Given up against a deque of elements is O(1) access by index: LINDEX
//! and LSET walk the chunks' counts from the nearer end of the list, then
//! the chunk from its nearer end, as Redis walks a quicklist's nodes (an
//! iterator told to skip, as LRANGE's, skips whole chunks by their
//! counts). LSET and LINSERT rebuild the chunk they change, a copy of at
//! most the bound, splitting it in even halves when it outgrows the bound
//! so that chunks stay about half full or more under inserts, as B-tree
//! nodes do. LREM and LTRIM rebuild only the chunks they remove from and
//! merge neighbours that fit in one chunk. Against Redis's quicklist, the
//! deque of chunk headers replaces a linked list of nodes (both ends in
//! O(1), an index found by counts without touching the chunks), and inner
//! chunks are not compressed (`list-compress-depth` is accepted and
//! ignored).
//!
//! Accounting is exact and O(1): the size classes of the chunks' buffers
//! as a running total, plus the deque's capacity in chunk headers.
//!
//! A large list that shrinks below half the limit returns to a listpack,
//! as Redis 7.2 does; the half keeps a list hovering at the limit from
//! converting back and forth. OBJECT ENCODING says `quicklist` for both,
//! because Redis 7.0 keeps every list in a quicklist (a small list is one
//! listpack node there, as it is here).

use std::collections::{vec_deque, VecDeque};

use super::listpack::{read_varint, varint_len};
use super::{Limits, Listpack};
use crate::size_class::allocated;

/// An end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (index 0): LPUSH, LPOP.
    Left,
    /// The tail: RPUSH, RPOP.
    Right,
}

/// A list value in one of its encodings.
#[derive(Debug, Clone)]
pub enum List {
    /// Few short elements in one buffer.
    Pack(Listpack),
    /// Elements in chunks.
    Chunked(Box<Chunks>),
}

/// Equal elements make equal lists, whatever their encodings and chunks.
impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// The first buffer of a chunk: a few short elements.
const MIN_CHUNK: usize = 64;

/// Bytes an element of `len` bytes takes in a chunk.
fn encoded_len(len: usize) -> usize {
    len + 2 * varint_len(len)
}

/// Writes `element` as a chunk stores it into `out`, which is exactly
/// `encoded_len(element.len())` long: the length's varint, the bytes, the
/// varint mirrored.
fn encode(out: &mut [u8], element: &[u8]) {
    let (width, end) = (varint_len(element.len()), out.len());
    let mut n = element.len();
    for i in 0..width {
        let more = if i + 1 < width { 0x80 } else { 0 };
        out[i] = (n & 0x7f) as u8 | more;
        out[end - 1 - i] = out[i];
        n >>= 7;
    }
    out[width..end - width].copy_from_slice(element);
}

/// Reads the mirrored varint that ends at `end`; returns the value and the
/// offset where it starts, the end of its element's bytes.
fn read_varint_back(buf: &[u8], mut end: usize) -> (usize, usize) {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        end -= 1;
        let b = buf[end];
        n |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            return (n, end);
        }
        shift += 7;
    }
}

/// A run of a list's elements in one buffer, with free space on both
/// sides of them.
#[derive(Debug, Clone, Default)]
struct Chunk {
    buf: Box<[u8]>,
    /// The elements are `buf[head..tail]`.
    head: usize,
    tail: usize,
    count: usize,
}

impl Chunk {
    /// A chunk of `elements`, exactly sized.
    fn of(elements: &[&[u8]]) -> Chunk {
        let size = elements.iter().map(|e| encoded_len(e.len())).sum();
        let mut buf = vec![0; size].into_boxed_slice();
        let mut at = 0;
        for element in elements {
            let next = at + encoded_len(element.len());
            encode(&mut buf[at..next], element);
            at = next;
        }
        Chunk {
            buf,
            head: 0,
            tail: size,
            count: elements.len(),
        }
    }

    /// Bytes of the elements.
    fn used(&self) -> usize {
        self.tail - self.head
    }

    /// Bytes allocated for the buffer.
    fn heap_bytes(&self) -> usize {
        allocated(self.buf.len())
    }

    fn elements(&self) -> Elements<'_> {
        Elements {
            bytes: &self.buf[self.head..self.tail],
            count: self.count,
        }
    }

    /// Makes room for `need` bytes at `end`, in a larger buffer if the
    /// chunk has none there; false if it would outgrow `bound` (unless
    /// empty) or its buffer is at the bound already.
    fn reserve(&mut self, end: End, need: usize, bound: usize) -> bool {
        let room = match end {
            End::Left => self.head,
            End::Right => self.buf.len() - self.tail,
        };
        if room >= need {
            return true;
        }
        let used = self.used();
        let capacity = if used + need <= bound {
            // Doubling, and a whole size class: the allocator's rounding
            // is free room.
            allocated(
                (2 * self.buf.len())
                    .max(MIN_CHUNK)
                    .max(used + need)
                    .min(bound),
            )
        } else if used == 0 {
            need
        } else {
            return false;
        };
        // Never move the elements within the same buffer: alternating
        // pushes at both ends would copy the chunk each time.
        if capacity <= self.buf.len() {
            return false;
        }
        let mut buf = vec![0; capacity].into_boxed_slice();
        let head = match end {
            End::Left => capacity - used,
            End::Right => 0,
        };
        buf[head..head + used].copy_from_slice(&self.buf[self.head..self.tail]);
        *self = Chunk {
            buf,
            head,
            tail: head + used,
            count: self.count,
        };
        true
    }

    /// Adds `element` at `end`; false if the chunk has no room for it
    /// within `bound`.
    fn push(&mut self, end: End, element: &[u8], bound: usize) -> bool {
        let need = encoded_len(element.len());
        if !self.reserve(end, need, bound) {
            return false;
        }
        let at = match end {
            End::Left => {
                self.head -= need;
                self.head
            }
            End::Right => {
                self.tail += need;
                self.tail - need
            }
        };
        encode(&mut self.buf[at..at + need], element);
        self.count += 1;
        true
    }

    /// Removes and returns the element at `end`.
    fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let mut rest = self.elements();
        let element = match end {
            End::Left => rest.next(),
            End::Right => rest.next_back(),
        }?
        .to_vec();
        match end {
            End::Left => self.head = self.tail - rest.bytes.len(),
            End::Right => self.tail = self.head + rest.bytes.len(),
        }
        self.count -= 1;
        Some(element)
    }

    /// Appends `other`'s elements; false if they do not fit within
    /// `bound`.
    fn append(&mut self, other: &Chunk, bound: usize) -> bool {
        if !self.reserve(End::Right, other.used(), bound) {
            return false;
        }
        self.buf[self.tail..self.tail + other.used()]
            .copy_from_slice(&other.buf[other.head..other.tail]);
        self.tail += other.used();
        self.count += other.count;
        true
    }
}

/// `elements` (at least one) in chunks of at most `bound` bytes or one
/// element, evenly filled: a chunk that outgrows the bound becomes two
/// halves, not a full chunk beside a nearly empty one that every further
/// insert at the same place would split again. A chunk takes elements
/// until it reaches its share of the bytes, rather than stopping short of
/// it, so that the rounding leaves no third chunk of one element.
fn pack(elements: &[&[u8]], bound: usize) -> Vec<Chunk> {
    let total: usize = elements.iter().map(|e| encoded_len(e.len())).sum();
    let target = total.div_ceil(total.div_ceil(bound));
    let (mut chunks, mut start, mut size) = (Vec::new(), 0, 0);
    for (i, element) in elements.iter().enumerate() {
        let need = encoded_len(element.len());
        if i > start && (size >= target || size + need > bound) {
            chunks.push(Chunk::of(&elements[start..i]));
            (start, size) = (i, 0);
        }
        size += need;
    }
    chunks.push(Chunk::of(&elements[start..]));
    chunks
}

/// A chunk's elements, walked from either end.
#[derive(Default)]
struct Elements<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.count == 0 {
            return None;
        }
        let (n, data) = read_varint(self.bytes, 0);
        let element = &self.bytes[data..data + n];
        self.bytes = &self.bytes[data + n + varint_len(n)..];
        self.count -= 1;
        Some(element)
    }
}

impl<'a> DoubleEndedIterator for Elements<'a> {
    fn next_back(&mut self) -> Option<&'a [u8]> {
        if self.count == 0 {
            return None;
        }
        let (n, data_end) = read_varint_back(self.bytes, self.bytes.len());
        let element = &self.bytes[data_end - n..data_end];
        self.bytes = &self.bytes[..data_end - n - varint_len(n)];
        self.count -= 1;
        Some(element)
    }
}

/// A chunked list's elements from one end.
struct Iter<'a> {
    chunks: vec_deque::Iter<'a, Chunk>,
    /// What is left of the chunk being walked.
    current: Elements<'a>,
    rev: bool,
}

impl Iter<'_> {
    /// Moves to the next chunk; false past the last.
    fn advance(&mut self) -> bool {
        let chunk = match self.rev {
            false => self.chunks.next(),
            true => self.chunks.next_back(),
        };
        self.current = chunk.map(Chunk::elements).unwrap_or_default();
        chunk.is_some()
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let element = match self.rev {
                false => self.current.next(),
                true => self.current.next_back(),
            };
            if element.is_some() || !self.advance() {
                return element;
            }
        }
    }

    /// Skips whole chunks by their counts (LRANGE from an offset).
    fn nth(&mut self, mut n: usize) -> Option<&'a [u8]> {
        while n >= self.current.count {
            n -= self.current.count;
            if !self.advance() {
                return None;
            }
        }
        for _ in 0..n {
            self.next();
        }
        self.next()
    }
}

/// The large encoding: chunks of elements, and running totals.
#[derive(Debug, Clone)]
pub struct Chunks {
    chunks: VecDeque<Chunk>,
    /// Elements in all chunks.
    len: usize,
    /// Bytes of the elements in all chunks.
    used: usize,
    /// Bytes allocated for the chunks' buffers.
    buffers: usize,
}

impl Chunks {
    /// `elements` (at least one) in chunks of at most `bound` bytes.
    fn new(elements: &[&[u8]], bound: usize) -> Chunks {
        let mut chunks = Chunks {
            chunks: pack(elements, bound).into(),
            len: 0,
            used: 0,
            buffers: 0,
        };
        chunks.recount();
        chunks
    }

    /// Sets the totals from the chunks, after a change to many of them.
    fn recount(&mut self) {
        self.len = self.chunks.iter().map(|c| c.count).sum();
        self.used = self.chunks.iter().map(Chunk::used).sum();
        self.buffers = self.chunks.iter().map(Chunk::heap_bytes).sum();
    }

    fn heap_bytes(&self) -> usize {
        allocated(std::mem::size_of::<Chunks>())
            + allocated(self.chunks.capacity() * std::mem::size_of::<Chunk>())
            + self.buffers
    }

    fn iter(&self, rev: bool) -> Iter<'_> {
        Iter {
            chunks: self.chunks.iter(),
            current: Elements::default(),
            rev,
        }
    }

    /// The chunk holding element `index` and the element's place in it
    /// (for `len`, the last chunk and its count), walking the chunks'
    /// counts from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        if index < self.len / 2 {
            let (mut i, mut rest) = (0, index);
            while rest >= self.chunks[i].count {
                rest -= self.chunks[i].count;
                i += 1;
            }
            (i, rest)
        } else {
            let (mut i, mut rest) = (self.chunks.len() - 1, self.len - index);
            while rest > self.chunks[i].count {
                rest -= self.chunks[i].count;
                i -= 1;
            }
            (i, self.chunks[i].count - rest)
        }
    }

    fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (i, at) = self.locate(index);
        let chunk = &self.chunks[i];
        if at < chunk.count / 2 {
            chunk.elements().nth(at)
        } else {
            chunk.elements().nth_back(chunk.count - 1 - at)
        }
    }

    fn push(&mut self, end: End, element: &[u8], bound: usize) {
        let end_chunk = match end {
            End::Left => self.chunks.front_mut(),
            End::Right => self.chunks.back_mut(),
        };
        let pushed = match end_chunk {
            Some(chunk) => {
                let before = chunk.heap_bytes();
                let pushed = chunk.push(end, element, bound);
                self.buffers = self.buffers - before + chunk.heap_bytes();
                pushed
            }
            None => false,
        };
        if !pushed {
            let mut chunk = Chunk::default();
            chunk.push(end, element, bound);
            self.buffers += chunk.heap_bytes();
            match end {
                End::Left => self.chunks.push_front(chunk),
                End::Right => self.chunks.push_back(chunk),
            }
        }
        self.len += 1;
        self.used += encoded_len(element.len());
    }

    fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let chunk = match end {
            End::Left => self.chunks.front_mut(),
            End::Right => self.chunks.back_mut(),
        }?;
        let element = chunk.pop(end)?;
        if chunk.count == 0 {
            self.buffers -= chunk.heap_bytes();
            match end {
                End::Left => self.chunks.pop_front(),
                End::Right => self.chunks.pop_back(),
            };
            // Give the headers' memory back as a queue drains, without
            // reallocating on every pop.
            if self.chunks.len() < self.chunks.capacity() / 4 {
                self.chunks.shrink_to(self.chunks.len() * 2);
            }
        }
        self.len -= 1;
        self.used -= encoded_len(element.len());
        Some(element)
    }

    /// Replaces `remove` (0 or 1) elements at `index` with `element` by
    /// rebuilding the chunk that holds them, in halves if it outgrows
    /// `bound`.
    fn splice(&mut self, index: usize, remove: usize, element: &[u8], bound: usize) {
        let (i, at) = self.locate(index);
        let old = &self.chunks[i];
        let mut elements: Vec<&[u8]> = old.elements().collect();
        elements.splice(at..at + remove, [element]);
        let rebuilt = pack(&elements, bound);
        self.len -= old.count;
        self.used -= old.used();
        self.buffers -= old.heap_bytes();
        self.chunks.remove(i);
        for (j, chunk) in rebuilt.into_iter().enumerate() {
            self.len += chunk.count;
            self.used += chunk.used();
            self.buffers += chunk.heap_bytes();
            self.chunks.insert(i + j, chunk);
        }
    }

    /// Keeps the elements for which `keep(index, element)` is true,
    /// rebuilding only the chunks that lose some and merging neighbours
    /// that fit in one chunk of `bound` bytes.
    fn retain(&mut self, bound: usize, mut keep: impl FnMut(usize, &[u8]) -> bool) {
        let mut index = 0;
        let mut kept_chunks: VecDeque<Chunk> = VecDeque::new();
        for chunk in std::mem::take(&mut self.chunks) {
            let kept: Vec<&[u8]> = chunk
                .elements()
                .filter(|e| {
                    index += 1;
                    keep(index - 1, e)
                })
                .collect();
            let chunk = if kept.len() == chunk.count {
                chunk
            } else if kept.is_empty() {
                continue;
            } else {
                Chunk::of(&kept)
            };
            let merged = kept_chunks
                .back_mut()
                .is_some_and(|last| last.append(&chunk, bound));
            if !merged {
                kept_chunks.push_back(chunk);
            }
        }
        self.chunks = kept_chunks;
        self.recount();
    }
}

impl Default for List {
    fn default() -> Self {
        List::Pack(Listpack::new())
    }
}

impl Limits {
    /// Most bytes of a compact list and of a large list's chunk, by
    /// `list-max-listpack-size`: -1..-5 for 4, 8, 16, 32 or 64 KB (below
    /// -5 counts as -5), Redis's 8 KB safety limit when it counts elements.
    fn list_node_bytes(&self) -> usize {
        match self.list_max_listpack_size {
            n if n < 0 => 4096 << (n.unsigned_abs() - 1).min(4),
            _ => 8192,
        }
    }

    /// True if a listpack of `count` elements and `bytes` bytes is within
    /// `list-max-listpack-size`: its bytes, and its count when positive.
    fn list_fits(&self, count: usize, bytes: usize) -> bool {
        let n = self.list_max_listpack_size;
        bytes <= self.list_node_bytes() && (n < 0 || count <= n as usize)
    }
}

impl List {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Pack(p) => p.len(),
            List::Chunked(c) => c.len,
        }
    }

    /// True when the list has no element (it is then deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        match self {
            List::Pack(p) => allocated(p.heap_bytes()),
            List::Chunked(c) => c.heap_bytes(),
        }
    }

    /// Redis 7.0's OBJECT ENCODING name: every list is a quicklist there.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// True while in the compact encoding (for tests and introspection).
    pub fn is_compact(&self) -> bool {
        matches!(self, List::Pack(_))
    }

    /// The element at `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        match self {
            List::Pack(p) => p.get(index),
            List::Chunked(c) => c.get(index),
        }
    }

    /// Elements from the head.
    pub fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            List::Pack(p) => Box::new(p.iter()),
            List::Chunked(c) => Box::new(c.iter(false)),
        }
    }

    /// Elements from the tail. A listpack is walked forwards once and
    /// reversed; it is small by construction.
    pub fn iter_rev(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            List::Pack(p) => Box::new(p.iter().collect::<Vec<_>>().into_iter().rev()),
            List::Chunked(c) => Box::new(c.iter(true)),
        }
    }

    /// Adds `element` at `end`.
    pub fn push(&mut self, end: End, element: &[u8], limits: &Limits) {
        match self {
            List::Pack(p) => {
                let at = match end {
                    End::Left => 0,
                    End::Right => p.len(),
                };
                p.splice(at, 0, &[element]);
            }
            List::Chunked(c) => c.push(end, element, limits.list_node_bytes()),
        }
        self.settle(limits);
    }

    /// Removes and returns the element at `end`.
    pub fn pop(&mut self, end: End, limits: &Limits) -> Option<Vec<u8>> {
        let element = match self {
            List::Pack(p) if p.is_empty() => None,
            List::Pack(p) => {
                let at = match end {
                    End::Left => 0,
                    End::Right => p.len() - 1,
                };
                let element = p.get(at).map(<[u8]>::to_vec);
                p.splice(at, 1, &[]);
                element
            }
            List::Chunked(c) => c.pop(end),
        };
        self.settle(limits);
        element
    }

    /// Replaces the element at `index`; false if there is none.
    pub fn set(&mut self, index: usize, element: &[u8], limits: &Limits) -> bool {
        if index >= self.len() {
            return false;
        }
        match self {
            List::Pack(p) => p.splice(index, 1, &[element]),
            List::Chunked(c) => c.splice(index, 1, element, limits.list_node_bytes()),
        }
        self.settle(limits);
        true
    }

    /// Inserts `element` so that it ends up at `index` (0..=len).
    pub fn insert(&mut self, index: usize, element: &[u8], limits: &Limits) {
        match self {
            List::Pack(p) => p.splice(index, 0, &[element]),
            List::Chunked(c) => c.splice(index, 0, element, limits.list_node_bytes()),
        }
        self.settle(limits);
    }

    /// Keeps only the elements for which `keep(index, element)` is true,
    /// in one pass (LREM, LTRIM); returns how many were removed.
    pub fn retain(&mut self, limits: &Limits, mut keep: impl FnMut(usize, &[u8]) -> bool) -> usize {
        let before = self.len();
        match self {
            List::Pack(p) => {
                let kept: Vec<&[u8]> = p
                    .iter()
                    .enumerate()
                    .filter(|(i, e)| keep(*i, e))
                    .map(|(_, e)| e)
                    .collect();
                let mut pack = Listpack::new();
                pack.push(&kept);
                *p = pack;
            }
            List::Chunked(c) => c.retain(limits.list_node_bytes(), keep),
        }
        self.settle(limits);
        before - self.len()
    }

    /// Converts to the encoding the limits call for: a listpack past its
    /// limit becomes chunks; chunks well under it (half the limit, by an
    /// upper bound of their listpack's size) become a listpack again.
    fn settle(&mut self, limits: &Limits) {
        match self {
            List::Pack(p) if !limits.list_fits(p.len(), p.heap_bytes()) => {
                let elements: Vec<&[u8]> = p.iter().collect();
                let chunks = Chunks::new(&elements, limits.list_node_bytes());
                *self = List::Chunked(Box::new(chunks));
            }
            List::Chunked(c) => {
                // A listpack stores each length once where a chunk stores
                // it twice, and the count.
                let bound = c.used + varint_len(c.len);
                if limits.list_fits(2 * c.len, 2 * bound) {
                    let elements: Vec<&[u8]> = c.iter(false).collect();
                    let mut pack = Listpack::new();
                    pack.push(&elements);
                    *self = List::Pack(pack);
                }
            }
            List::Pack(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// An element for the model: mostly short, some empty, some of
    /// kilobytes, a few larger than a chunk.
    fn element(rng: &mut StdRng) -> Vec<u8> {
        let len = match rng.gen_range(0..100) {
            0..=9 => 0,
            10..=93 => rng.gen_range(1..120),
            94..=98 => rng.gen_range(120..3000),
            _ => rng.gen_range(8000..20_000),
        };
        vec![b'a' + rng.gen_range(0..3); len]
    }

    /// The chunks' invariants, and their running totals against a recount.
    fn check_chunks(list: &List, bound: usize) {
        let List::Chunked(c) = list else {
            return;
        };
        for chunk in &c.chunks {
            assert!(chunk.count > 0, "no empty chunk");
            assert!(chunk.used() <= bound || chunk.count == 1, "bounded chunk");
            assert_eq!(chunk.elements().count(), chunk.count);
            assert!(chunk.elements().rev().eq(chunk
                .elements()
                .collect::<Vec<_>>()
                .into_iter()
                .rev()));
        }
        let mut recount = (*c).clone();
        recount.recount();
        assert_eq!(
            (c.len, c.used, c.buffers),
            (recount.len, recount.used, recount.buffers)
        );
        let buffers: usize = c.chunks.iter().map(|c| allocated(c.buf.len())).sum();
        assert_eq!(
            list.heap_bytes(),
            allocated(std::mem::size_of::<Chunks>())
                + allocated(c.chunks.capacity() * std::mem::size_of::<Chunk>())
                + buffers
        );
    }

    /// Random operations on a list and a `VecDeque` model agree, through
    /// conversions both ways and across chunks, and the running byte count
    /// stays exact.
    #[test]
    fn matches_a_deque_model_through_conversions() {
        const STEPS: usize = 5_000;
        let chunks = |list: &List| match list {
            List::Pack(_) => 0,
            List::Chunked(c) => c.chunks.len(),
        };
        let mut rng = StdRng::seed_from_u64(17);
        for size in [-1, -2, 5, 0] {
            let limits = Limits {
                list_max_listpack_size: size,
                ..Limits::default()
            };
            let bound = limits.list_node_bytes();
            let (mut compact, mut most_chunks) = (false, 0);
            // Chunks emptied by pops, split by inserts or sets, dropped or
            // merged by LREM/LTRIM; a chunk past the bound.
            let (mut emptied, mut split, mut fewer, mut oversized) = (false, false, false, false);
            for _round in 0..6 {
                let mut list = List::default();
                let mut model: VecDeque<Vec<u8>> = VecDeque::new();
                for step in 0..STEPS {
                    let element = element(&mut rng);
                    let end = if rng.gen_bool(0.5) {
                        End::Left
                    } else {
                        End::Right
                    };
                    let before = chunks(&list);
                    // Grow in the first half of a round, shrink (emptying
                    // chunks, converting back) in the second.
                    let pushes = if step < STEPS / 2 { 5 } else { 1 };
                    match rng.gen_range(0..10) {
                        op if op < pushes => {
                            list.push(end, &element, &limits);
                            match end {
                                End::Left => model.push_front(element),
                                End::Right => model.push_back(element),
                            }
                        }
                        op if op < 7 => {
                            let want = match end {
                                End::Left => model.pop_front(),
                                End::Right => model.pop_back(),
                            };
                            assert_eq!(list.pop(end, &limits), want);
                            emptied |= (1..before).contains(&chunks(&list));
                        }
                        7 if !model.is_empty() => {
                            let at = rng.gen_range(0..model.len());
                            assert!(list.set(at, &element, &limits));
                            model[at] = element;
                            split |= before > 0 && chunks(&list) > before;
                        }
                        8 => {
                            let at = rng.gen_range(0..=model.len());
                            list.insert(at, &element, &limits);
                            model.insert(at, element);
                            split |= before > 0 && chunks(&list) > before;
                        }
                        _ => {
                            // LREM of short elements of one length, LTRIM
                            // of a few at each end, now and then LREM of a
                            // third of the elements.
                            let len = model.len();
                            let (drop_len, drop_byte) =
                                (rng.gen_range(0..120), b'a' + rng.gen_range(0..3));
                            let (from, to) =
                                (rng.gen_range(0..4), len.saturating_sub(rng.gen_range(0..4)));
                            let rule = rng.gen_range(0..50);
                            let keep = |i: usize, e: &[u8]| match rule {
                                0..=29 => e.len() != drop_len,
                                30..=48 => (from..to).contains(&i),
                                _ => e.first() != Some(&drop_byte),
                            };
                            let removed = list.retain(&limits, keep);
                            let mut i = 0;
                            model.retain(|e| {
                                i += 1;
                                keep(i - 1, e)
                            });
                            assert_eq!(removed, len - model.len());
                            fewer |= (1..before).contains(&chunks(&list));
                        }
                    }
                    assert_eq!(list.len(), model.len());
                    check_chunks(&list, bound);
                    assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
                    assert!(list.iter_rev().eq(model.iter().rev().map(Vec::as_slice)));
                    let at = rng.gen_range(0..=model.len());
                    assert_eq!(list.get(at), model.get(at).map(Vec::as_slice));
                    assert_eq!(list.iter().nth(at), model.get(at).map(Vec::as_slice));
                    assert_eq!(
                        list.iter_rev().nth(at),
                        model.iter().rev().nth(at).map(Vec::as_slice)
                    );
                    // LRANGE skips, then takes.
                    assert!(list.iter().skip(at).take(7).eq(model
                        .iter()
                        .skip(at)
                        .take(7)
                        .map(Vec::as_slice)));
                    compact |= list.is_compact() && list.len() > 1;
                    most_chunks = most_chunks.max(chunks(&list));
                    if let List::Chunked(c) = &list {
                        oversized |= c.chunks.iter().any(|c| c.used() > bound);
                    }
                }
                for (i, e) in model.iter().enumerate() {
                    assert_eq!(list.get(i), Some(&e[..]));
                }
            }
            assert!(most_chunks >= 15, "size {size}: {most_chunks} chunks");
            assert!(emptied && split && fewer && oversized, "size {size}");
            assert_eq!(compact, size != 0, "size {size}");
        }
    }

    /// A list grown by pushes costs its elements' bytes and two bytes of
    /// length each, no allocation per element; as it drains, its memory
    /// goes back.
    #[test]
    fn pushes_fill_chunks_and_pops_give_them_back() {
        let limits = Limits::default();
        let mut list = List::default();
        let element = |i: usize| format!("{i:010}").into_bytes();
        for i in 0..100_000 {
            list.push(End::Left, &element(i), &limits);
        }
        let per_element = list.heap_bytes() as f64 / list.len() as f64;
        assert!(per_element < 12.5, "{per_element} bytes an element");
        for i in 0..100_000 {
            assert_eq!(list.pop(End::Right, &limits), Some(element(i)));
            // The elements' bytes, a chunk at each end, a little for the
            // chunk headers.
            assert!(list.heap_bytes() <= 12 * list.len() + 2 * 8192 + 4096);
        }
        assert!(list.is_empty() && list.is_compact());
    }

    /// Inserts at one place split chunks in halves: the chunks stay about
    /// half full or more.
    #[test]
    fn inserts_split_chunks_in_halves() {
        let limits = Limits::default();
        let mut list = List::default();
        for i in 0..2_000 {
            list.push(End::Right, format!("{i:010}").as_bytes(), &limits);
        }
        for i in 0..20_000 {
            list.insert(1_000, format!("{i:010}").as_bytes(), &limits);
        }
        let List::Chunked(c) = &list else {
            panic!("chunked");
        };
        assert!(
            c.chunks.len() <= 2 * c.used / 8192 + 2,
            "{} chunks",
            c.chunks.len()
        );
        check_chunks(&list, 8192);
    }

    #[test]
    fn chunks_read_lengths_from_both_ends() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 70_000] {
            let element = vec![7; len];
            let mut out = vec![0; encoded_len(len)];
            encode(&mut out, &element);
            let (n, data) = read_varint(&out, 0);
            assert_eq!((n, data), (len, varint_len(len)));
            assert_eq!(read_varint_back(&out, out.len()), (len, data + len));
        }
    }

    #[test]
    fn limits_follow_redis_list_max_listpack_size() {
        let at = |size| Limits {
            list_max_listpack_size: size,
            ..Limits::default()
        };
        assert!(at(-2).list_fits(1000, 8192));
        assert!(!at(-2).list_fits(1, 8193));
        assert!(at(-5).list_fits(1, 65536));
        assert!(at(-9).list_fits(1, 65536), "below -5 counts as -5");
        assert!(at(128).list_fits(128, 100));
        assert!(!at(128).list_fits(129, 100));
        assert!(!at(128).list_fits(2, 9000));
        assert_eq!(at(-1).list_node_bytes(), 4096);
        assert_eq!(at(128).list_node_bytes(), 8192);
    }
}
