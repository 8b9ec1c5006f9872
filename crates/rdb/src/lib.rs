//! keel-rdb: Redis's RDB serialization, bytes in, values out.
//!
//! One job: turn a value into the bytes Redis 7.0 writes for it in RDB,
//! and any such bytes (from Redis 7.0, the older encodings it still loads,
//! or Redis 7.2's) back into a value; the same for whole RDB files. The
//! value is this crate's own plain [`Value`], not the keyspace's: the
//! server converts between the two, so this crate knows nothing of how
//! keel stores things.
//!
//! - [`file`](mod@file): a whole RDB file, streamed: its header, AUX fields,
//!   function libraries, databases, keys with their expiry and LRU/LFU
//!   metadata, and checksum ([`Writer`], [`Reader`]);
//! - [`object`]: an RDB object, its type byte and body ([`read_object`],
//!   [`write_object`]), the layer an RDB file repeats per key;
//! - [`payload`]: the DUMP/RESTORE envelope around one object (RDB
//!   version and CRC-64 footer): [`dump`], [`restore`];
//! - [`packed`]: listpacks, ziplists, zipmaps and intsets, the blobs
//!   inside objects;
//! - [`stream`]: streams, their nodes' listpacks and consumer groups;
//! - [`functions`]: the FUNCTION DUMP/RESTORE payload of function
//!   libraries;
//! - [`lzf`]: the compression of long strings;
//! - [`crc64`]: the checksum.
//!
//! Input is never trusted: every length is checked against the bytes left
//! before anything is allocated for it, and no input panics.

pub mod crc64;
pub mod file;
pub mod functions;
pub mod lzf;
pub mod object;
pub mod packed;
pub mod payload;
pub mod stream;

pub use file::{Item, KeyMeta, LoadError, Problem, Reader, WriteOptions, Writer};
pub use functions::{dump_functions, restore_functions, FunctionsError};
pub use object::{read_object, read_object_within, write_object, Refused};
pub use payload::{dump, restore, restore_within, PayloadError, RDB_VERSION};

/// A value as RDB carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (binary-safe).
    String(Vec<u8>),
    /// A list, head first.
    List(Vec<Vec<u8>>),
    /// A set of distinct members.
    Set(Vec<Vec<u8>>),
    /// A sorted set: distinct members with their scores (never NaN).
    SortedSet(Vec<(Vec<u8>, f64)>),
    /// A hash: distinct fields with their values.
    Hash(Pairs),
    /// A stream, its nodes and consumer groups.
    Stream(Box<stream::Stream>),
}

/// Fields and their values, in order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The thresholds under which Redis keeps a value in its compact
/// encoding, and so writes it in the compact RDB form (Redis's config
/// names, and defaults in [`Default`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// `list-max-listpack-size`: the size of each quicklist node, in bytes
    /// (-1 to -5 for 4 to 64 KB) or elements (positive).
    pub list_max_listpack_size: i64,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: usize,
    /// `hash-max-listpack-entries`.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_max_listpack_value: usize,
    /// `zset-max-listpack-entries`.
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            list_max_listpack_size: -2,
            set_max_intset_entries: 512,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
        }
    }
}

/// Bytes that are not a well-formed RDB object: truncated, with lengths
/// that disagree, an unknown type or encoding, an empty collection, a
/// repeated member or a NaN score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// A bounds-checked cursor over input bytes.
///
/// A read past the end also records how far the input would have had to
/// reach ([`Cursor::wanted`]): a file reader holding only part of its
/// input tells "truncated, read more" from "malformed" by it.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    wanted: std::cell::Cell<usize>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor {
            bytes,
            pos: 0,
            wanted: std::cell::Cell::new(0),
        }
    }

    /// The input length the furthest failed read needed (0 if none did):
    /// beyond the end means the input was cut short.
    pub(crate) fn wanted(&self) -> usize {
        self.wanted.get()
    }

    /// Records that `n` more bytes from here were needed but missing.
    pub(crate) fn ran_out(&self, n: usize) -> Malformed {
        let end = self.pos.saturating_add(n);
        if end > self.bytes.len() && end > self.wanted.get() {
            self.wanted.set(end);
        }
        Malformed
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(crate) fn byte(&mut self) -> Result<u8, Malformed> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn peek(&self) -> Result<u8, Malformed> {
        self.bytes
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.ran_out(1))
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(n).ok_or(Malformed)?;
        let bytes = self
            .bytes
            .get(self.pos..end)
            .ok_or_else(|| self.ran_out(n))?;
        self.pos = end;
        Ok(bytes)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        self.take(N)?.try_into().map_err(|_| Malformed)
    }

    /// A little-endian signed integer of `width` bytes (1 to 8).
    pub(crate) fn int_le(&mut self, width: usize) -> Result<i64, Malformed> {
        let bytes = self.take(width)?;
        let mut buf = [0u8; 8];
        buf[..width].copy_from_slice(bytes);
        let shift = 64 - 8 * width as u32;
        Ok((i64::from_le_bytes(buf) << shift) >> shift)
    }

    pub(crate) fn u32_le(&mut self) -> Result<usize, Malformed> {
        Ok(u32::from_le_bytes(self.array()?) as usize)
    }

    pub(crate) fn u16_le(&mut self) -> Result<usize, Malformed> {
        Ok(u16::from_le_bytes(self.array()?) as usize)
    }
}

/// The decimal form of `n`, as Redis turns an integer-encoded element
/// back into a string.
pub(crate) fn decimal(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// `bytes` as an `i64` if they are one in canonical decimal form (no sign
/// but a leading `-`, no leading zero, no `-0`), as Redis's `string2ll`:
/// only such strings are stored as integers, so they read back the same.
pub(crate) fn parse_canonical_i64(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let canonical = match digits {
        [] => false,
        [b'0'] => bytes.len() == 1,
        [first, ..] => (b'1'..=b'9').contains(first) && digits.iter().all(u8::is_ascii_digit),
    };
    if !canonical || bytes.len() > 20 {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_canonical_i64;

    #[test]
    fn canonical_integers_only() {
        assert_eq!(parse_canonical_i64(b"0"), Some(0));
        assert_eq!(parse_canonical_i64(b"-12"), Some(-12));
        assert_eq!(parse_canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        for s in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1a",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_canonical_i64(s), None, "{s:?}");
        }
    }
}
