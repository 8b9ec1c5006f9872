//! The packed blobs inside RDB objects: listpacks, ziplists, zipmaps and
//! intsets. Each is stored as one RDB string whose bytes are the in-memory
//! structure as Redis kept it, so reading one means parsing Redis's memory
//! layout, and writing one means laying it out the same way.
//!
//! Listpack (Redis 7 `listpack.c`; hashes, sorted sets, quicklist nodes):
//!
//! ```text
//! <total-bytes u32 LE> <count u16 LE, 65535 = unknown> <entry>* <0xFF>
//! entry = <encoding+data> <backlen>
//!   0xxxxxxx                       7-bit unsigned integer
//!   10LLLLLL <data>                string of up to 63 bytes
//!   110xxxxx xxxxxxxx              13-bit signed integer (big-endian bits)
//!   1110LLLL LLLLLLLL <data>       string of up to 4095 bytes
//!   11110000 <len u32 LE> <data>   longer string
//!   11110001..11110100 <int LE>    16, 24, 32, 64-bit signed integer
//! backlen = the size of <encoding+data>, 1 to 5 bytes of 7 bits each, the
//!   first byte holding the highest bits, every byte but the first with its
//!   top bit set, so it can also be read backwards.
//! ```
//!
//! Ziplist (before Redis 7; lists in quicklists, small hashes and sorted
//! sets):
//!
//! ```text
//! <total-bytes u32 LE> <tail-offset u32 LE> <count u16 LE> <entry>* <0xFF>
//! entry = <prevlen> <encoding> <data>
//!   prevlen: 1 byte if < 254, else 0xFE and a u32 LE
//!   00LLLLLL | 01LLLLLL LLLLLLLL (BE) | 10______ <len u32 BE>: a string
//!   0xC0 i16, 0xD0 i32, 0xE0 i64, 0xF0 i24, 0xFE i8 (all LE)
//!   0xF1..0xFD: the integer 0 to 12 in the encoding byte itself
//! ```
//!
//! Zipmap (before Redis 2.6; small hashes): `<count u8> (<len> <field>
//! <len> <free u8> <value> <free bytes>)* <0xFF>`, each `<len>` one byte
//! below 254, or 0xFE and a u32 LE.
//!
//! Intset (sets of integers): `<width u32 LE: 2, 4 or 8> <count u32 LE>
//! <integers LE, ascending, distinct>`.
//!
//! Every parser here checks each length against the bytes left before it
//! reads or allocates, and refuses a blob whose declared total size,
//! count, terminator or order disagree with its contents: Redis only checks
//! the header unless deep sanitization is on, and crashes later on what it
//! missed; keel refuses it at once.

use crate::{decimal, parse_canonical_i64, Cursor, Malformed, Pairs};

/// A count read from a header, as a capacity no larger than the blob
/// could hold (each element takes a byte at least).
fn capacity(count: usize, blob: &[u8]) -> usize {
    count.min(blob.len())
}

/// The elements of a listpack, integers as their decimal strings.
pub fn listpack_entries(blob: &[u8]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut c = Cursor::new(blob);
    if c.u32_le()? != blob.len() || blob.last() != Some(&0xff) {
        return Err(Malformed);
    }
    let count = c.u16_le()?;
    let mut entries = Vec::with_capacity(capacity(count, blob));
    while c.peek()? != 0xff {
        let start = c.pos;
        entries.push(listpack_entry(&mut c)?);
        let size = c.pos - start;
        let backlen = c.take(backlen_width(size))?;
        if decode_backlen(backlen) != size {
            return Err(Malformed);
        }
    }
    c.byte()?;
    if !c.at_end() || (count != u16::MAX as usize && count != entries.len()) {
        return Err(Malformed);
    }
    Ok(entries)
}

fn listpack_entry(c: &mut Cursor) -> Result<Vec<u8>, Malformed> {
    let b = c.byte()?;
    let len = match b {
        0x00..=0x7f => return Ok(decimal(b as i64)),
        0x80..=0xbf => (b & 0x3f) as usize,
        0xc0..=0xdf => {
            let raw = (((b & 0x1f) as i64) << 8) | c.byte()? as i64;
            return Ok(decimal((raw << 51) >> 51));
        }
        0xe0..=0xef => (((b & 0x0f) as usize) << 8) | c.byte()? as usize,
        0xf0 => c.u32_le()?,
        0xf1..=0xf4 => {
            let width = [2, 3, 4, 8][(b - 0xf1) as usize];
            return Ok(decimal(c.int_le(width)?));
        }
        _ => return Err(Malformed),
    };
    Ok(c.take(len)?.to_vec())
}

fn backlen_width(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

fn decode_backlen(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .fold(0usize, |acc, &b| (acc << 7) | (b & 0x7f) as usize)
}

/// Builds a listpack as Redis lays one out when elements are appended.
#[derive(Default)]
pub struct ListpackWriter {
    entries: Vec<u8>,
    count: usize,
}

/// A listpack's header, its total size and count, and its terminator.
const LISTPACK_OVERHEAD: usize = 7;

impl ListpackWriter {
    /// Appends `element`: as an integer when it is one in canonical form,
    /// as Redis's `lpAppend` does.
    pub fn push(&mut self, element: &[u8]) {
        let start = self.entries.len();
        let e = &mut self.entries;
        match parse_canonical_i64(element) {
            Some(v @ 0..=127) => e.push(v as u8),
            Some(v @ -4096..=4095) => {
                let v = (v as u64) & 0x1fff;
                e.extend_from_slice(&[0xc0 | (v >> 8) as u8, v as u8]);
            }
            Some(v) => {
                let width = match v {
                    -32768..=32767 => 2,
                    -8388608..=8388607 => 3,
                    -2147483648..=2147483647 => 4,
                    _ => 8,
                };
                e.push(0xf1 + [0, 0, 0, 1, 2, 0, 0, 0, 3][width]);
                e.extend_from_slice(&v.to_le_bytes()[..width]);
            }
            None => {
                let len = element.len();
                match len {
                    0..=63 => e.push(0x80 | len as u8),
                    64..=4095 => e.extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]),
                    _ => {
                        e.push(0xf0);
                        e.extend_from_slice(&(len as u32).to_le_bytes());
                    }
                }
                e.extend_from_slice(element);
            }
        }
        let size = self.entries.len() - start;
        let width = backlen_width(size);
        for i in (0..width).rev() {
            let seven = ((size >> (7 * i)) & 0x7f) as u8;
            let continued = if i == width - 1 { 0 } else { 0x80 };
            self.entries.push(seven | continued);
        }
        self.count += 1;
    }

    /// The listpack's size in bytes as it stands.
    pub fn size(&self) -> usize {
        self.entries.len() + LISTPACK_OVERHEAD
    }

    /// Elements pushed so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The finished listpack.
    pub fn finish(self) -> Vec<u8> {
        let total = self.size();
        let mut blob = Vec::with_capacity(total);
        blob.extend_from_slice(&(total as u32).to_le_bytes());
        blob.extend_from_slice(&(self.count.min(u16::MAX as usize) as u16).to_le_bytes());
        blob.extend_from_slice(&self.entries);
        blob.push(0xff);
        blob
    }
}

/// The elements of a ziplist, integers as their decimal strings.
pub fn ziplist_entries(blob: &[u8]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut c = Cursor::new(blob);
    if c.u32_le()? != blob.len() || blob.last() != Some(&0xff) {
        return Err(Malformed);
    }
    if c.u32_le()? >= blob.len() {
        return Err(Malformed);
    }
    let count = c.u16_le()?;
    let mut entries = Vec::with_capacity(capacity(count, blob));
    let mut previous = 0;
    while c.peek()? != 0xff {
        let start = c.pos;
        let prevlen = match c.byte()? {
            0xfe => c.u32_le()?,
            0xff => return Err(Malformed),
            b => b as usize,
        };
        if prevlen != previous {
            return Err(Malformed);
        }
        entries.push(ziplist_entry(&mut c)?);
        previous = c.pos - start;
    }
    c.byte()?;
    if !c.at_end() || (count != u16::MAX as usize && count != entries.len()) {
        return Err(Malformed);
    }
    Ok(entries)
}

fn ziplist_entry(c: &mut Cursor) -> Result<Vec<u8>, Malformed> {
    let b = c.byte()?;
    let len = match b >> 6 {
        0 => (b & 0x3f) as usize,
        1 => (((b & 0x3f) as usize) << 8) | c.byte()? as usize,
        2 => u32::from_be_bytes(c.array()?) as usize,
        _ => {
            let value = match b {
                0xc0 => c.int_le(2)?,
                0xd0 => c.int_le(4)?,
                0xe0 => c.int_le(8)?,
                0xf0 => c.int_le(3)?,
                0xfe => c.int_le(1)?,
                0xf1..=0xfd => (b & 0x0f) as i64 - 1,
                _ => return Err(Malformed),
            };
            return Ok(decimal(value));
        }
    };
    Ok(c.take(len)?.to_vec())
}

/// The field-value pairs of a zipmap.
pub fn zipmap_pairs(blob: &[u8]) -> Result<Pairs, Malformed> {
    let mut c = Cursor::new(blob);
    let count = c.byte()? as usize;
    let mut pairs = Vec::with_capacity(capacity(count, blob));
    let length = |c: &mut Cursor| -> Result<usize, Malformed> {
        match c.byte()? {
            0xfe => c.u32_le(),
            0xff => Err(Malformed),
            b => Ok(b as usize),
        }
    };
    while c.peek()? != 0xff {
        let field_len = length(&mut c)?;
        let field = c.take(field_len)?.to_vec();
        let value_len = length(&mut c)?;
        let free = c.byte()? as usize;
        let value = c.take(value_len)?.to_vec();
        c.take(free)?;
        pairs.push((field, value));
    }
    c.byte()?;
    if !c.at_end() || (count < 254 && count != pairs.len()) {
        return Err(Malformed);
    }
    Ok(pairs)
}

/// The integers of an intset, ascending.
pub fn intset_members(blob: &[u8]) -> Result<Vec<i64>, Malformed> {
    let mut c = Cursor::new(blob);
    let width = c.u32_le()?;
    let count = c.u32_le()?;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(blob.len() - 8) {
        return Err(Malformed);
    }
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let n = c.int_le(width)?;
        if members.last().is_some_and(|&last| last >= n) {
            return Err(Malformed);
        }
        members.push(n);
    }
    Ok(members)
}

/// An intset of `members` (ascending, distinct) in the narrowest width
/// that holds them all.
pub fn intset(members: &[i64]) -> Vec<u8> {
    let width = members
        .iter()
        .map(|&n| {
            if i16::try_from(n).is_ok() {
                2
            } else if i32::try_from(n).is_ok() {
                4
            } else {
                8
            }
        })
        .max()
        .unwrap_or(2);
    let mut blob = Vec::with_capacity(8 + members.len() * width);
    blob.extend_from_slice(&(width as u32).to_le_bytes());
    blob.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for n in members {
        blob.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    blob
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn listpack_matches_redis_layout() {
        // The listpack of RPUSH l a b 1 2 300 -5 70000 in Redis 7.0.15.
        let redis = b"\x1c\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xc1,\x02\xdf\xfb\x02\xf2p\x11\x01\x04\xff";
        let items = strings(&["a", "b", "1", "2", "300", "-5", "70000"]);
        assert_eq!(listpack_entries(redis).unwrap(), items);
        let mut w = ListpackWriter::default();
        items.iter().for_each(|i| w.push(i));
        assert_eq!(w.finish(), redis);
    }

    #[test]
    fn listpack_round_trips_every_encoding() {
        let long = "x".repeat(5000);
        let mid = "y".repeat(200);
        let items = strings(&[
            "",
            "0",
            "127",
            "128",
            "-4096",
            "4095",
            "-32768",
            "32767",
            "8388607",
            "-8388608",
            "2147483647",
            "-2147483648",
            "9223372036854775807",
            "-9223372036854775808",
            "01",
            "+1",
            "-0",
            &mid,
            &long,
        ]);
        let mut w = ListpackWriter::default();
        items.iter().for_each(|i| w.push(i));
        assert_eq!(listpack_entries(&w.finish()).unwrap(), items);
    }

    #[test]
    fn listpack_refuses_inconsistent_blobs() {
        let mut w = ListpackWriter::default();
        w.push(b"hello");
        let good = w.finish();
        let mut bad_total = good.clone();
        bad_total[0] += 1;
        let mut bad_count = good.clone();
        bad_count[4] = 2;
        let mut bad_backlen = good.clone();
        bad_backlen[12] = 9;
        let truncated = &good[..good.len() - 1];
        for blob in [
            &bad_total[..],
            &bad_count,
            &bad_backlen,
            truncated,
            &[],
            &[0xff],
        ] {
            assert_eq!(listpack_entries(blob), Err(Malformed), "{blob:?}");
        }
    }

    #[test]
    fn ziplist_reads_every_encoding() {
        // A ziplist of "a", 5, -2, 300, 100000, 2^40, "b"*70, 70000 built
        // by hand as Redis 6 lays it out.
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut add = |entry: &[u8], body: &mut Vec<u8>| {
            let start = body.len();
            body.push(prev as u8);
            body.extend_from_slice(entry);
            prev = body.len() - start;
        };
        add(b"\x01a", &mut body);
        add(b"\xf6", &mut body);
        add(b"\xfe\xfe", &mut body);
        add(b"\xc0\x2c\x01", &mut body);
        add(b"\xf0\xa0\x86\x01", &mut body);
        add(b"\xe0\x00\x00\x00\x00\x00\x01\x00\x00", &mut body);
        let mut long = vec![0x40, 70];
        long.extend_from_slice(&[b'b'; 70]);
        add(&long, &mut body);
        add(b"\xd0\x70\x11\x01\x00", &mut body);
        let total = 10 + body.len() + 1;
        let mut blob = Vec::new();
        blob.extend_from_slice(&(total as u32).to_le_bytes());
        blob.extend_from_slice(&(10u32).to_le_bytes());
        blob.extend_from_slice(&8u16.to_le_bytes());
        blob.extend_from_slice(&body);
        blob.push(0xff);
        let b70 = "b".repeat(70);
        assert_eq!(
            ziplist_entries(&blob).unwrap(),
            strings(&[
                "a",
                "5",
                "-2",
                "300",
                "100000",
                "1099511627776",
                &b70,
                "70000"
            ])
        );
        blob[8] = 9;
        assert_eq!(ziplist_entries(&blob), Err(Malformed));
    }

    #[test]
    fn zipmap_reads_pairs() {
        let blob = b"\x02\x01a\x02\x01xy\x00\x02bc\x01\x00z\xff";
        assert_eq!(
            zipmap_pairs(blob).unwrap(),
            vec![
                (b"a".to_vec(), b"xy".to_vec()),
                (b"bc".to_vec(), b"z".to_vec())
            ]
        );
        assert_eq!(zipmap_pairs(&blob[..blob.len() - 1]), Err(Malformed));
    }

    #[test]
    fn intset_round_trips_and_refuses_disorder() {
        // SADD si 3 1 2 in Redis 7.0.15.
        let redis = b"\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00";
        assert_eq!(intset_members(redis).unwrap(), [1, 2, 3]);
        assert_eq!(intset(&[1, 2, 3]), redis);
        let wide = [-(1i64 << 40), 0, 1 << 40];
        assert_eq!(intset_members(&intset(&wide)).unwrap(), wide);
        let unordered = intset(&[2, 1]);
        assert_eq!(intset_members(&unordered), Err(Malformed));
        assert_eq!(intset_members(&redis[..13]), Err(Malformed));
    }
}
