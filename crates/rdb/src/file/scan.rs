//! Finding where a key's bytes end without decoding them, resumably: what
//! keeps reading a big key from a socket linear.
//!
//! When a key is cut by the end of the reader's window, decoding it again
//! after every read would cost its size each time, quadratic in all. The
//! scanner instead walks only lengths, remembering where it stopped: the
//! element loop of a collection (the bulk of any big key) resumes at the
//! last whole element, so each byte is scanned about once, and the reader
//! asks the input for exactly the bytes the scan needs next, never more
//! (a replication stream may have nothing past the RDB for a while). The
//! key is decoded once the scan has found its end. A stream's consumer
//! groups are scanned from the start each time (streams this large are
//! rare).

use crate::object::{self, kind, ENC_INT16, ENC_INT32, ENC_INT8, ENC_LZF};
use crate::{Cursor, Malformed};

/// The elements of a collection's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// This many strings (1 for a list or set, 2 for a hash's pairs).
    Strings(u8),
    /// A member and a text score.
    TextScored,
    /// A member and an 8-byte score.
    BinaryScored,
    /// A quicklist node: container and string.
    Node,
}

/// Where a scan stopped: `left` elements from byte `pos` of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Resume {
    pos: usize,
    left: u64,
    element: Element,
}

/// Why a scan stopped.
pub(super) enum Stopped {
    /// It needs the key's bytes up to `wanted`; `resume` from there.
    Short {
        wanted: usize,
        resume: Option<Resume>,
    },
    /// Not a key, or not well-formed: the decoder will say which.
    NotScannable,
}

/// The length of the key (type byte, key, value) at the front of `bytes`,
/// continuing from `resume` if a previous scan stopped.
pub(super) fn key_length(bytes: &[u8], resume: Option<Resume>) -> Result<usize, Stopped> {
    let (start, mut left, element) = match resume {
        Some(r) => (r.pos, r.left, r.element),
        None => {
            let mut c = Cursor::new(bytes);
            match header(&mut c) {
                Ok(Header::Done) => return Ok(c.pos()),
                Ok(Header::Loop(element, left)) => (c.pos(), left, element),
                Err(Malformed) => return Err(stopped(&c, 0, None)),
            }
        }
    };
    let rest = bytes.get(start..).ok_or(Stopped::NotScannable)?;
    let mut c = Cursor::new(rest);
    let mut done = 0;
    while left > 0 {
        if one(&mut c, element).is_err() {
            let resume = Resume {
                pos: start + done,
                left,
                element,
            };
            return Err(stopped(&c, start, Some(resume)));
        }
        left -= 1;
        done = c.pos();
    }
    Ok(start + c.pos())
}

fn stopped(c: &Cursor, base: usize, resume: Option<Resume>) -> Stopped {
    if c.wanted() > c.pos() + c.remaining() {
        Stopped::Short {
            wanted: base.saturating_add(c.wanted()),
            resume,
        }
    } else {
        Stopped::NotScannable
    }
}

/// What follows a key's header.
enum Header {
    /// Nothing: the key ends there.
    Done,
    /// A loop of this many elements.
    Loop(Element, u64),
}

fn header(c: &mut Cursor) -> Result<Header, Malformed> {
    let rdb_type = c.byte()?;
    let modules = [kind::MODULE, kind::MODULE_2];
    if !kind::is_object_type(rdb_type) || modules.contains(&rdb_type) {
        return Err(Malformed);
    }
    skip_string(c)?;
    let count = |c: &mut Cursor, element| Ok(Header::Loop(element, object::read_length(c)?));
    match rdb_type {
        kind::LIST | kind::SET | kind::LIST_QUICKLIST => count(c, Element::Strings(1)),
        kind::HASH => count(c, Element::Strings(2)),
        kind::ZSET => count(c, Element::TextScored),
        kind::ZSET_2 => count(c, Element::BinaryScored),
        kind::LIST_QUICKLIST_2 => count(c, Element::Node),
        kind::STREAM_LISTPACKS | kind::STREAM_LISTPACKS_2 | kind::STREAM_LISTPACKS_3 => {
            skip_stream(c, rdb_type)?;
            Ok(Header::Done)
        }
        _ => {
            // A string, or a packed encoding in one.
            skip_string(c)?;
            Ok(Header::Done)
        }
    }
}

fn one(c: &mut Cursor, element: Element) -> Result<(), Malformed> {
    match element {
        Element::Strings(n) => (0..n).try_for_each(|_| skip_string(c)),
        Element::TextScored => {
            skip_string(c)?;
            match c.byte()? {
                253..=255 => Ok(()),
                len => c.take(len as usize).map(drop),
            }
        }
        Element::BinaryScored => {
            skip_string(c)?;
            c.take(8).map(drop)
        }
        Element::Node => {
            object::read_length(c)?;
            skip_string(c)
        }
    }
}

fn skip_string(c: &mut Cursor) -> Result<(), Malformed> {
    let len = match object::read_length_or_encoding(c)? {
        Ok(len) => len,
        Err(ENC_INT8) => 1,
        Err(ENC_INT16) => 2,
        Err(ENC_INT32) => 4,
        Err(ENC_LZF) => {
            let compressed = object::read_length(c)?;
            object::read_length(c)?;
            compressed
        }
        Err(_) => return Err(Malformed),
    };
    c.take(usize::try_from(len).map_err(|_| Malformed)?)
        .map(drop)
}

fn skip_lengths(c: &mut Cursor, n: usize) -> Result<(), Malformed> {
    (0..n).try_for_each(|_| object::read_length(c).map(drop))
}

/// A stream's body, as [`crate::stream`] reads it.
fn skip_stream(c: &mut Cursor, rdb_type: u8) -> Result<(), Malformed> {
    let v2 = rdb_type != kind::STREAM_LISTPACKS;
    let v3 = rdb_type == kind::STREAM_LISTPACKS_3;
    let nodes = object::read_length(c)?;
    for _ in 0..nodes {
        skip_string(c)?;
        skip_string(c)?;
    }
    // Length and last ID; then first ID, max deleted ID, entries added.
    skip_lengths(c, if v2 { 8 } else { 3 })?;
    let groups = object::read_length(c)?;
    for _ in 0..groups {
        skip_string(c)?;
        skip_lengths(c, if v2 { 3 } else { 2 })?;
        let pending = object::read_length(c)?;
        for _ in 0..pending {
            c.take(16 + 8)?;
            object::read_length(c)?;
        }
        let consumers = object::read_length(c)?;
        for _ in 0..consumers {
            skip_string(c)?;
            // Seen time, and in Redis 7.2's layout active time.
            c.take(if v3 { 16 } else { 8 })?;
            let owned = usize::try_from(object::read_length(c)?).map_err(|_| Malformed)?;
            c.take(owned.checked_mul(16).ok_or(Malformed)?)?;
        }
    }
    Ok(())
}
