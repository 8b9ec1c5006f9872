//! One RDB object: a type byte, then the value in that type's layout, as
//! Redis's `rdbSaveObjectType`/`rdbSaveObject` write it and
//! `rdbLoadObjectType`/`rdbLoadObject` read it.
//!
//! Lengths are Redis's variable-size integers: `00LLLLLL` (6 bits),
//! `01LLLLLL LLLLLLLL` (14 bits, big-endian), `0x80` + u32 BE, `0x81` +
//! u64 BE. A string is a length and its bytes, or `11EEEEEE` for a
//! special encoding: an 8, 16 or 32-bit little-endian integer (E = 0, 1,
//! 2) or LZF-compressed bytes (E = 3: compressed length, plain length,
//! data).
//!
//! Writing follows Redis 7.0 for a value of that size: lists as a
//! quicklist of listpack nodes split where Redis's quicklist splits them;
//! sets of integers as an intset up to `set-max-intset-entries`; hashes and
//! sorted sets as one listpack under their listpack thresholds; otherwise
//! the plain forms (sorted sets from the highest score down, with binary
//! scores). Strings are stored as integers when they are small canonical
//! ones, and LZF-compressed past 20 bytes when that saves 4 bytes or
//! more, as Redis does with `rdbcompression yes` (its default).
//!
//! Reading accepts every form Redis 7.0 loads, modules excepted (keel has
//! none), and Redis 7.2's two new ones (RDB 11): listpack sets and streams
//! with consumers' active times; streams are in [`crate::stream`].

use std::collections::HashSet;

use foldhash::fast::RandomState;

use crate::lzf::{self, Compressor};
use crate::packed::{self, ListpackWriter};
use crate::stream;
use crate::{parse_canonical_i64, Cursor, Malformed, Pairs, Thresholds, Value};

/// RDB object types (`RDB_TYPE_*`).
pub(crate) mod kind {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// The last type of RDB 10 (Redis 7.0).
    pub const LAST_OF_RDB_10: u8 = STREAM_LISTPACKS_2;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;

    /// Whether `t` is an object type byte of RDB 11 (what Redis 7.2's
    /// `rdbIsObjectType` accepts), modules included.
    pub fn is_object_type(t: u8) -> bool {
        t <= 7 || (9..=STREAM_LISTPACKS_3).contains(&t)
    }
}

/// Quicklist node containers in `LIST_QUICKLIST_2`.
const NODE_PLAIN: u64 = 1;
const NODE_PACKED: u64 = 2;

/// Elements this large get a plain quicklist node of their own (Redis's
/// `packed_threshold`, 1 GB by default).
const PACKED_THRESHOLD: usize = 1 << 30;

/// A quicklist node never grows past this many bytes when its limit is a
/// count (Redis's `SIZE_SAFETY_LIMIT`).
const NODE_SAFETY_LIMIT: usize = 8192;

/// What Redis's quicklist assumes an element adds to a node beyond its
/// bytes (`SIZE_ESTIMATE_OVERHEAD`).
const ENTRY_OVERHEAD: usize = 8;

/// The node sizes `list-max-listpack-size` -1 to -5 stand for (below -5,
/// the largest).
const NODE_SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

/// Strings this long or shorter may be stored as integers; longer than
/// [`COMPRESS_ABOVE`] they may be compressed.
const INT_ENCODE_MAX_LEN: usize = 11;
const COMPRESS_ABOVE: usize = 20;

/// String encodings after a `11` length prefix.
pub(crate) const ENC_INT8: u8 = 0;
pub(crate) const ENC_INT16: u8 = 1;
pub(crate) const ENC_INT32: u8 = 2;
pub(crate) const ENC_LZF: u8 = 3;

/// Reads one object (type byte and body) from the start of `bytes`;
/// returns it with the number of bytes it took.
pub fn read_object(bytes: &[u8]) -> Result<(Value, usize), Malformed> {
    read_object_within(bytes, usize::MAX).map_err(|_| Malformed)
}

/// Why [`read_object_within`] refused an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a well-formed object.
    Malformed,
    /// Decoding it would take more than the budget.
    OverBudget,
    /// The bytes end before the object does.
    Truncated,
    /// An empty collection: Redis never stores one, and skips one in an
    /// RDB file (older versions could write them) where RESTORE refuses it.
    Empty,
}

/// [`read_object`], allocating at most about `budget` bytes while
/// decoding: a compressed string or a packed encoding can claim far more
/// than its payload's size, so what each claims is counted against the
/// budget before it is allocated.
///
/// Only the types of RDB 10 are read, as Redis 7.0's RESTORE reads them
/// (an RDB file of version 11 may hold more: [`crate::file`]).
pub fn read_object_within(bytes: &[u8], budget: usize) -> Result<(Value, usize), Refused> {
    let mut c = Cursor::new(bytes);
    let mut b = Budget::new(budget);
    let value = c
        .byte()
        .and_then(|rdb_type| match rdb_type {
            0..=kind::LAST_OF_RDB_10 => read_value(rdb_type, &mut c, &mut b),
            _ => Err(Malformed),
        })
        .map_err(|Malformed| b.refusal(&c))?;
    check(&value)?;
    Ok((value, c.pos()))
}

/// Bytes decoding may still allocate.
pub(crate) struct Budget {
    left: usize,
    exceeded: bool,
}

/// What an element costs beside its bytes once decoded.
const ELEMENT_COST: usize = 32;

/// What a packed encoding (listpack, ziplist, intset, zipmap) may cost per
/// byte once split into elements: its smallest entry, 2 bytes, becomes an
/// element of [`ELEMENT_COST`].
const PACKED_EXPANSION: usize = ELEMENT_COST / 2;

impl Budget {
    pub(crate) fn new(left: usize) -> Self {
        Budget {
            left,
            exceeded: false,
        }
    }

    /// Why decoding with this budget from `c` failed: the budget first (more
    /// input would not help), then input that ended too soon.
    pub(crate) fn refusal(&self, c: &Cursor) -> Refused {
        if self.exceeded {
            Refused::OverBudget
        } else if c.wanted() > c.pos() + c.remaining() {
            Refused::Truncated
        } else {
            Refused::Malformed
        }
    }

    fn spend(&mut self, bytes: usize) -> Result<(), Malformed> {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.exceeded = true;
                Err(Malformed)
            }
        }
    }
}

/// A string holding a packed encoding, charged for the elements it may
/// split into.
fn read_packed(c: &mut Cursor, b: &mut Budget) -> Result<Vec<u8>, Malformed> {
    let packed = read_string(c, b)?;
    b.spend(packed.len().saturating_mul(PACKED_EXPANSION))?;
    Ok(packed)
}

/// The body of an object of type `rdb_type`, not yet [`check`]ed.
pub(crate) fn read_value(rdb_type: u8, c: &mut Cursor, b: &mut Budget) -> Result<Value, Malformed> {
    let value = match rdb_type {
        kind::STRING => Value::String(read_string(c, b)?),
        kind::LIST => {
            let n = read_count(c, 1)?;
            Value::List(
                (0..n)
                    .map(|_| read_string(c, b))
                    .collect::<Result<_, _>>()?,
            )
        }
        kind::SET => {
            let n = read_count(c, 1)?;
            Value::Set(
                (0..n)
                    .map(|_| read_string(c, b))
                    .collect::<Result<_, _>>()?,
            )
        }
        kind::ZSET | kind::ZSET_2 => {
            let binary = rdb_type == kind::ZSET_2;
            let n = read_count(c, 2)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let member = read_string(c, b)?;
                let score = if binary {
                    f64::from_le_bytes(c.array()?)
                } else {
                    read_text_score(c)?
                };
                pairs.push((member, score));
            }
            Value::SortedSet(pairs)
        }
        kind::HASH => {
            let n = read_count(c, 2)?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                pairs.push((read_string(c, b)?, read_string(c, b)?));
            }
            Value::Hash(pairs)
        }
        kind::HASH_ZIPMAP => Value::Hash(packed::zipmap_pairs(&read_packed(c, b)?)?),
        kind::LIST_ZIPLIST => Value::List(packed::ziplist_entries(&read_packed(c, b)?)?),
        kind::SET_INTSET => {
            let members = packed::intset_members(&read_packed(c, b)?)?;
            Value::Set(members.iter().map(|n| crate::decimal(*n)).collect())
        }
        kind::ZSET_ZIPLIST => {
            Value::SortedSet(scored(packed::ziplist_entries(&read_packed(c, b)?)?)?)
        }
        kind::ZSET_LISTPACK => {
            Value::SortedSet(scored(packed::listpack_entries(&read_packed(c, b)?)?)?)
        }
        kind::HASH_ZIPLIST => Value::Hash(paired(packed::ziplist_entries(&read_packed(c, b)?)?)?),
        kind::SET_LISTPACK => Value::Set(packed::listpack_entries(&read_packed(c, b)?)?),
        kind::HASH_LISTPACK => Value::Hash(paired(packed::listpack_entries(&read_packed(c, b)?)?)?),
        kind::LIST_QUICKLIST => {
            let nodes = read_count(c, 1)?;
            let mut elements = Vec::new();
            for _ in 0..nodes {
                elements.extend(packed::ziplist_entries(&read_packed(c, b)?)?);
            }
            Value::List(elements)
        }
        kind::LIST_QUICKLIST_2 => {
            let nodes = read_count(c, 2)?;
            let mut elements = Vec::new();
            for _ in 0..nodes {
                let container = read_length(c)?;
                let node = read_string(c, b)?;
                match container {
                    NODE_PLAIN => elements.push(node),
                    NODE_PACKED => {
                        b.spend(node.len().saturating_mul(PACKED_EXPANSION))?;
                        elements.extend(packed::listpack_entries(&node)?)
                    }
                    _ => return Err(Malformed),
                }
            }
            Value::List(elements)
        }
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 | kind::STREAM_LISTPACKS_3 => {
            let layout = match rdb_type {
                kind::STREAM_LISTPACKS => stream::Layout::V1,
                kind::STREAM_LISTPACKS_2 => stream::Layout::V2,
                _ => stream::Layout::V3,
            };
            Value::Stream(Box::new(stream::read(&mut Reader { c, b }, layout)?))
        }
        _ => return Err(Malformed),
    };
    Ok(value)
}

/// Refuses what Redis refuses to load: an empty collection (Redis never
/// stores one), a repeated set member, hash field or sorted-set member,
/// and a NaN score.
pub(crate) fn check(value: &Value) -> Result<(), Refused> {
    fn distinct<'a>(mut items: impl ExactSizeIterator<Item = &'a [u8]>) -> bool {
        let mut seen = HashSet::with_capacity_and_hasher(items.len(), RandomState::default());
        items.all(|item| seen.insert(item))
    }
    let empty = match value {
        Value::String(_) | Value::Stream(_) => false,
        Value::List(elements) => elements.is_empty(),
        Value::Set(members) => members.is_empty(),
        Value::Hash(pairs) => pairs.is_empty(),
        Value::SortedSet(pairs) => pairs.is_empty(),
    };
    if empty {
        return Err(Refused::Empty);
    }
    let fine = match value {
        Value::String(_) | Value::Stream(_) | Value::List(_) => true,
        Value::Set(members) => distinct(members.iter().map(|m| &m[..])),
        Value::Hash(pairs) => distinct(pairs.iter().map(|(f, _)| &f[..])),
        Value::SortedSet(pairs) => {
            pairs.iter().all(|(_, score)| !score.is_nan())
                && distinct(pairs.iter().map(|(m, _)| &m[..]))
        }
    };
    fine.then_some(()).ok_or(Refused::Malformed)
}

/// Alternating field, value elements as pairs.
fn paired(elements: Vec<Vec<u8>>) -> Result<Pairs, Malformed> {
    if !elements.len().is_multiple_of(2) {
        return Err(Malformed);
    }
    let mut pairs = Vec::with_capacity(elements.len() / 2);
    let mut it = elements.into_iter();
    while let (Some(field), Some(value)) = (it.next(), it.next()) {
        pairs.push((field, value));
    }
    Ok(pairs)
}

/// Alternating member, score elements as scored members.
fn scored(elements: Vec<Vec<u8>>) -> Result<Vec<(Vec<u8>, f64)>, Malformed> {
    paired(elements)?
        .into_iter()
        .map(|(member, score)| Ok((member, parse_score(&score)?)))
        .collect()
}

/// A score written as text (`%.17g`, `inf`, `-inf`, or an integer).
fn parse_score(text: &[u8]) -> Result<f64, Malformed> {
    let text = std::str::from_utf8(text).map_err(|_| Malformed)?;
    let score: f64 = text.parse().map_err(|_| Malformed)?;
    (!score.is_nan()).then_some(score).ok_or(Malformed)
}

/// An old-style score: a length byte (253 NaN, 254 +inf, 255 -inf) and
/// that many bytes of text.
fn read_text_score(c: &mut Cursor) -> Result<f64, Malformed> {
    match c.byte()? {
        253 => Err(Malformed),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        len => parse_score(c.take(len as usize)?),
    }
}

/// A length, or the special encoding of a string (`Err(encoding)`).
pub(crate) fn read_length_or_encoding(c: &mut Cursor) -> Result<Result<u64, u8>, Malformed> {
    let first = c.byte()?;
    Ok(match first >> 6 {
        0 => Ok((first & 0x3f) as u64),
        1 => Ok((((first & 0x3f) as u64) << 8) | c.byte()? as u64),
        2 => match first {
            0x80 => Ok(u32::from_be_bytes(c.array()?) as u64),
            0x81 => Ok(u64::from_be_bytes(c.array()?)),
            _ => return Err(Malformed),
        },
        _ => Err(first & 0x3f),
    })
}

pub(crate) fn read_length(c: &mut Cursor) -> Result<u64, Malformed> {
    read_length_or_encoding(c)?.map_err(|_| Malformed)
}

/// A count of elements each taking at least `min_bytes`, refused if the
/// bytes left cannot hold them (so it can size an allocation).
fn read_count(c: &mut Cursor, min_bytes: usize) -> Result<usize, Malformed> {
    let n = usize::try_from(read_length(c)?).map_err(|_| Malformed)?;
    match n.checked_mul(min_bytes) {
        Some(need) if need > c.remaining() => Err(c.ran_out(need)),
        Some(_) => Ok(n),
        None => Err(Malformed),
    }
}

/// One RDB string (plain, integer-encoded or LZF-compressed) at the front
/// of `bytes`, and the bytes it took, allocating at most about `budget`.
pub fn read_string_within(bytes: &[u8], budget: usize) -> Result<(Vec<u8>, usize), Refused> {
    let mut c = Cursor::new(bytes);
    let mut b = Budget::new(budget);
    match read_string(&mut c, &mut b) {
        Ok(s) => Ok((s, c.pos())),
        Err(Malformed) => Err(b.refusal(&c)),
    }
}

/// Appends `s` as Redis's `rdbSaveRawString` writes it.
pub fn write_string(s: &[u8], out: &mut Vec<u8>) {
    Writer::new(out, Some(&mut None)).string(s);
}

/// Where a writer's LZF compressor lives: made on the first string long
/// enough to compress and kept for the next ones; `None` inside means
/// "not made yet", and a writer given no slot never compresses.
pub(crate) type CompressorSlot = Option<Compressor>;

pub(crate) fn read_string(c: &mut Cursor, b: &mut Budget) -> Result<Vec<u8>, Malformed> {
    match read_length_or_encoding(c)? {
        Ok(len) => {
            let len = usize::try_from(len).map_err(|_| Malformed)?;
            b.spend(len.saturating_add(ELEMENT_COST))?;
            Ok(c.take(len)?.to_vec())
        }
        Err(ENC_INT8) => b.spend(ELEMENT_COST).and(Ok(crate::decimal(c.int_le(1)?))),
        Err(ENC_INT16) => b.spend(ELEMENT_COST).and(Ok(crate::decimal(c.int_le(2)?))),
        Err(ENC_INT32) => b.spend(ELEMENT_COST).and(Ok(crate::decimal(c.int_le(4)?))),
        Err(ENC_LZF) => {
            let compressed_len = usize::try_from(read_length(c)?).map_err(|_| Malformed)?;
            let len = usize::try_from(read_length(c)?).map_err(|_| Malformed)?;
            b.spend(len.saturating_add(ELEMENT_COST))?;
            lzf::decompress(c.take(compressed_len)?, len).ok_or(Malformed)
        }
        Err(_) => Err(Malformed),
    }
}

/// Writes `value` as one object (type byte and body) at the end of `out`.
pub fn write_object(value: &Value, thresholds: &Thresholds, out: &mut Vec<u8>) {
    write_object_with(value, thresholds, Some(&mut None), out);
}

/// [`write_object`] with a compressor kept across objects, or none to
/// never compress (`rdbcompression no`).
pub(crate) fn write_object_with(
    value: &Value,
    thresholds: &Thresholds,
    compressor: Option<&mut CompressorSlot>,
    out: &mut Vec<u8>,
) {
    let mut w = Writer { out, compressor };
    match value {
        Value::String(s) => {
            w.out.push(kind::STRING);
            w.string(s);
        }
        Value::List(elements) => w.list(elements, thresholds.list_max_listpack_size),
        Value::Set(members) => {
            let integers: Option<Vec<i64>> = (members.len() <= thresholds.set_max_intset_entries)
                .then(|| members.iter().map(|m| parse_canonical_i64(m)).collect())
                .flatten();
            match integers {
                Some(mut integers) => {
                    integers.sort_unstable();
                    w.out.push(kind::SET_INTSET);
                    w.string(&packed::intset(&integers));
                }
                None => {
                    w.out.push(kind::SET);
                    w.length(members.len() as u64);
                    members.iter().for_each(|m| w.string(m));
                }
            }
        }
        Value::Hash(pairs) => {
            let limit = thresholds.hash_max_listpack_value;
            if pairs.len() <= thresholds.hash_max_listpack_entries
                && pairs
                    .iter()
                    .all(|(f, v)| f.len() <= limit && v.len() <= limit)
            {
                let mut lp = ListpackWriter::default();
                for (field, value) in pairs {
                    lp.push(field);
                    lp.push(value);
                }
                w.out.push(kind::HASH_LISTPACK);
                w.string(&lp.finish());
            } else {
                w.out.push(kind::HASH);
                w.length(pairs.len() as u64);
                for (field, value) in pairs {
                    w.string(field);
                    w.string(value);
                }
            }
        }
        Value::SortedSet(pairs) => w.sorted_set(pairs, thresholds),
        Value::Stream(s) => {
            w.out.push(kind::STREAM_LISTPACKS_2);
            stream::write(s, &mut w);
        }
    }
}

/// The object reader's codecs, as the stream reader uses them.
struct Reader<'c, 'a> {
    c: &'c mut Cursor<'a>,
    b: &'c mut Budget,
}

impl stream::Source for Reader<'_, '_> {
    fn length(&mut self) -> Result<u64, Malformed> {
        read_length(self.c)
    }
    fn string(&mut self) -> Result<Vec<u8>, Malformed> {
        read_string(self.c, self.b)
    }
    fn packed(&mut self) -> Result<Vec<u8>, Malformed> {
        read_packed(self.c, self.b)
    }
    fn raw(&mut self, n: usize) -> Result<Vec<u8>, Malformed> {
        self.b.spend(n)?;
        Ok(self.c.take(n)?.to_vec())
    }
    fn count(&mut self, min_bytes: usize) -> Result<usize, Malformed> {
        read_count(self.c, min_bytes)
    }
}

impl stream::Sink for Writer<'_> {
    fn length(&mut self, n: u64) {
        Writer::length(self, n);
    }
    fn string(&mut self, s: &[u8]) {
        Writer::string(self, s);
    }
    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
}

pub(crate) struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// `None` when strings are never compressed.
    compressor: Option<&'a mut CompressorSlot>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>, compressor: Option<&'a mut CompressorSlot>) -> Self {
        Writer { out, compressor }
    }

    pub(crate) fn length(&mut self, len: u64) {
        match len {
            0..=0x3f => self.out.push(len as u8),
            0x40..=0x3fff => self
                .out
                .extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]),
            0x4000..=0xffff_ffff => {
                self.out.push(0x80);
                self.out.extend_from_slice(&(len as u32).to_be_bytes());
            }
            _ => {
                self.out.push(0x81);
                self.out.extend_from_slice(&len.to_be_bytes());
            }
        }
    }

    /// A string as Redis's `rdbSaveRawString` writes it.
    pub(crate) fn string(&mut self, s: &[u8]) {
        if s.len() <= INT_ENCODE_MAX_LEN {
            if let Some(n) = parse_canonical_i64(s) {
                let (encoding, width) = match n {
                    -128..=127 => (ENC_INT8, 1),
                    -32768..=32767 => (ENC_INT16, 2),
                    -2147483648..=2147483647 => (ENC_INT32, 4),
                    _ => (0, 0),
                };
                if width > 0 {
                    self.out.push(0xc0 | encoding);
                    self.out.extend_from_slice(&n.to_le_bytes()[..width]);
                    return;
                }
            }
        }
        if let Some(slot) = self
            .compressor
            .as_mut()
            .filter(|_| s.len() > COMPRESS_ABOVE)
        {
            let compressor = slot.get_or_insert_with(Compressor::default);
            if let Some(compressed) = compressor.compress(s, s.len() - 4) {
                self.out.push(0xc0 | ENC_LZF);
                self.length(compressed.len() as u64);
                self.length(s.len() as u64);
                self.out.extend_from_slice(&compressed);
                return;
            }
        }
        self.length(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// A list as a quicklist, its nodes filled as Redis's quicklist fills
    /// them on appends (`_quicklistNodeAllowInsert` of Redis 7.0).
    fn list(&mut self, elements: &[Vec<u8>], fill: i64) {
        enum Node {
            Plain(usize),
            Packed(ListpackWriter),
        }
        let mut nodes: Vec<Node> = Vec::new();
        for (i, element) in elements.iter().enumerate() {
            let size = element.len();
            if size >= PACKED_THRESHOLD {
                nodes.push(Node::Plain(i));
                continue;
            }
            match nodes.last_mut() {
                Some(Node::Packed(lp)) if node_allows(lp, fill, size) => lp.push(element),
                _ => {
                    let mut lp = ListpackWriter::default();
                    lp.push(element);
                    nodes.push(Node::Packed(lp));
                }
            }
        }
        self.out.push(kind::LIST_QUICKLIST_2);
        self.length(nodes.len() as u64);
        for node in nodes {
            match node {
                Node::Plain(i) => {
                    self.length(NODE_PLAIN);
                    self.string(&elements[i]);
                }
                Node::Packed(lp) => {
                    self.length(NODE_PACKED);
                    self.string(&lp.finish());
                }
            }
        }
    }

    fn sorted_set(&mut self, pairs: &[(Vec<u8>, f64)], thresholds: &Thresholds) {
        let by_rank = |a: &&(Vec<u8>, f64), b: &&(Vec<u8>, f64)| {
            a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0))
        };
        let mut ranked: Vec<&(Vec<u8>, f64)> = pairs.iter().collect();
        if !ranked.windows(2).all(|w| by_rank(&w[0], &w[1]).is_le()) {
            ranked.sort_by(by_rank);
        }
        let limit = thresholds.zset_max_listpack_value;
        if pairs.len() <= thresholds.zset_max_listpack_entries
            && pairs.iter().all(|(m, _)| m.len() <= limit)
        {
            let mut lp = ListpackWriter::default();
            for (member, score) in ranked {
                lp.push(member);
                lp.push(keel_resp::format_double(*score).as_bytes());
            }
            self.out.push(kind::ZSET_LISTPACK);
            self.string(&lp.finish());
        } else {
            self.out.push(kind::ZSET_2);
            self.length(pairs.len() as u64);
            for (member, score) in ranked.into_iter().rev() {
                self.string(member);
                self.out.extend_from_slice(&score.to_le_bytes());
            }
        }
    }
}

/// Whether a quicklist node may take one more element of `size` bytes,
/// as Redis 7.0.15's `_quicklistNodeAllowInsert` estimates it: the
/// element plus at most [`ENTRY_OVERHEAD`] bytes must fit the node's size
/// limit (a negative fill), or its count limit and [`NODE_SAFETY_LIMIT`]
/// (a positive one; 0 counts as 1).
fn node_allows(lp: &ListpackWriter, fill: i64, size: usize) -> bool {
    let new_size = lp.size() + size + ENTRY_OVERHEAD;
    if fill < 0 {
        let level = usize::try_from(-(fill + 1)).unwrap_or(usize::MAX);
        new_size <= NODE_SIZE_LEVELS[level.min(NODE_SIZE_LEVELS.len() - 1)]
    } else {
        new_size <= NODE_SAFETY_LIMIT && (lp.count() as i64) < fill.max(1)
    }
}
