//! What the stream commands share: parsing stream IDs as Redis's
//! `streamGenericParseIDOrReply` does, the trimming options of XADD and
//! XTRIM, the reply shapes of entries, the lookup of a stream and its
//! consumer group, and the read of new or pending entries through a group
//! (XREADGROUP, also for a blocked reader served later).

use bytes::Bytes;
use keel_resp::Writer;
use keel_store::types::stream::{Fields, Trim, TrimTo, NODE_MAX_SIZE};
use keel_store::types::Listpack;
use keel_store::{Stream, StreamId};

use super::{errors, is, parse_i64, Error, Events, Notifier};

/// Redis's reply to an ID that does not parse.
pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The keyspace event class of the stream commands.
pub const CLASS: u64 = Events::STREAM;

/// Parses an unsigned number as Redis's `string2ull`: a canonical
/// non-negative `i64`, or else what C's `strtoull` takes whole (leading
/// spaces, a sign, digits; a minus wraps around).
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(n) = keel_store::parse_canonical_i64(s) {
        return u64::try_from(n).ok();
    }
    let spaces = s
        .iter()
        .take_while(|c| b" \t\n\x0b\x0c\r".contains(c))
        .count();
    let mut rest = &s[spaces..];
    let negative = rest.first() == Some(&b'-');
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = std::str::from_utf8(rest).ok()?.parse::<u64>().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// A parsed ID and whether its sequence was given (`ms-*` leaves it to
/// XADD).
#[derive(Debug, Clone, Copy)]
pub struct ParsedId {
    /// The ID; `seq` is 0 when not given.
    pub id: StreamId,
    /// False for `ms-*`.
    pub seq_given: bool,
}

/// Parses a stream ID as Redis does: `-` and `+` (unless `strict`),
/// `ms-seq`, `ms` (the sequence then is `missing_seq`), and `ms-*` when
/// `allow_auto_seq` (XADD).
pub fn parse_id_with(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_auto_seq: bool,
) -> Result<ParsedId, Error> {
    if arg.len() > 127 {
        return Err(INVALID_ID.into());
    }
    // Redis copies the argument into a C string: a NUL ends it.
    let arg = arg.split(|b| *b == 0).next().unwrap_or_default();
    let given = |id| ParsedId {
        id,
        seq_given: true,
    };
    match arg {
        b"-" | b"+" if strict => return Err(INVALID_ID.into()),
        b"-" => return Ok(given(StreamId::MIN)),
        b"+" => return Ok(given(StreamId::MAX)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|b| *b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = string2ull(ms).ok_or(INVALID_ID)?;
    match seq {
        Some(b"*") if allow_auto_seq => Ok(ParsedId {
            id: StreamId { ms, seq: 0 },
            seq_given: false,
        }),
        Some(seq) => Ok(given(StreamId {
            ms,
            seq: string2ull(seq).ok_or(INVALID_ID)?,
        })),
        None => Ok(given(StreamId {
            ms,
            seq: missing_seq,
        })),
    }
}

/// A strict ID (no `-` or `+`), the sequence 0 when missing.
pub fn parse_strict_id(arg: &[u8]) -> Result<StreamId, Error> {
    Ok(parse_id_with(arg, 0, true, false)?.id)
}

/// One end of an XRANGE interval: `-`, `+`, an ID, or `(ID` for an
/// exclusive end (moved one step inwards, with Redis's errors past the
/// ends). `start` tells which end it is.
pub fn parse_range_end(arg: &[u8], start: bool) -> Result<StreamId, Error> {
    let missing_seq = if start { 0 } else { u64::MAX };
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id_with(&arg[1..], missing_seq, true, false)?.id;
        let stepped = if start { id.next() } else { id.prev() };
        return stepped.ok_or_else(|| {
            let which = if start { "start" } else { "end" };
            format!("ERR invalid {which} ID for the interval").into()
        });
    }
    Ok(parse_id_with(arg, missing_seq, false, false)?.id)
}

/// Parses a COUNT argument as XRANGE and XREAD do: negatives count as 0.
pub fn parse_count(arg: &[u8]) -> Result<i64, Error> {
    Ok(parse_i64(arg)?.max(0))
}

/// XADD's and XTRIM's options, as Redis's `streamParseAddOrTrimArgsOrReply`.
pub struct AddOrTrim {
    /// The trim asked for, if any.
    pub trim: Option<Trim>,
    /// NOMKSTREAM (XADD).
    pub no_mkstream: bool,
    /// The index of the ID argument (XADD), or of the end of the options.
    pub id_at: usize,
    /// The ID given, `None` for `*` (XADD).
    pub id: Option<ParsedId>,
}

/// Parses `args[2..]` as XADD's (`xadd`) or XTRIM's options; `node_max_entries`
/// sets the default LIMIT of an approximate trim.
pub fn parse_add_or_trim(
    args: &[Bytes],
    xadd: bool,
    node_max_entries: usize,
) -> Result<AddOrTrim, Error> {
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut to: Option<TrimTo> = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut no_mkstream = false;
    let mut id = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if to.is_some() {
                return Err(BOTH.into());
            }
            approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let value = &args[i + 1];
            to = Some(if is(opt, "maxlen") {
                let max = parse_i64(value)?;
                if max < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                TrimTo::MaxLen(max as u64)
            } else {
                TrimTo::MinId(parse_strict_id(value)?)
            });
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = parse_i64(&args[i + 1])?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            no_mkstream = true;
        } else if xadd {
            id = Some(parse_id_with(opt, 0, true, true)?);
            break;
        } else {
            return Err(errors::SYNTAX.into());
        }
        i += 1;
    }
    if limit.is_some_and(|n| n > 0) && to.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && to.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if limit.is_some() && !approx {
        return Err("ERR syntax error, LIMIT cannot be used without the special ~ option".into());
    }
    let limit = match limit {
        Some(n) => n as u64,
        None if approx => {
            let n = 100u64.saturating_mul(node_max_entries as u64);
            if n == 0 || n > NODE_MAX_SIZE as u64 {
                10_000
            } else {
                n
            }
        }
        None => 0,
    };
    Ok(AddOrTrim {
        trim: to.map(|to| Trim { to, approx, limit }),
        no_mkstream,
        id_at: i,
        id,
    })
}

/// Writes one entry: its ID and its `len` fields and values.
fn write_elements<'f>(
    w: &mut Writer,
    id: StreamId,
    len: usize,
    elements: impl Iterator<Item = &'f [u8]>,
) {
    w.array(2);
    w.bulk(id.to_string().as_bytes());
    w.array(len);
    elements.for_each(|e| w.bulk(e));
}

/// Writes one stored entry: its ID and its fields and values.
pub fn write_entry(w: &mut Writer, id: StreamId, fields: Fields) {
    write_elements(w, id, fields.len(), fields.iter());
}

/// Writes stored entries as an array, stopping early once the reply is full.
pub fn write_entries(w: &mut Writer, entries: &[(StreamId, Fields)]) {
    w.array(entries.len());
    super::write_each(w, entries.iter(), |w, (id, fields)| {
        write_entry(w, *id, *fields)
    });
}

/// Writes an entry read earlier, which may have been deleted meanwhile (a
/// null in place of its fields, as XCLAIM and XREADGROUP reply for such
/// entries).
pub fn write_entry_or_deleted(w: &mut Writer, id: StreamId, fields: Option<&Listpack>) {
    match fields {
        Some(fields) => write_elements(w, id, fields.len(), fields.iter()),
        None => {
            w.array(2);
            w.bulk(id.to_string().as_bytes());
            w.null_array();
        }
    }
}

/// An argument as Redis's `%s` formats it into a message: up to its
/// first NUL byte.
pub fn c_str(arg: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(arg.split(|b| *b == 0).next().unwrap_or_default())
}

/// Redis's NOGROUP reply for a group missing from an existing key.
pub fn no_group(key: &[u8], group: &[u8]) -> Error {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        c_str(group),
        c_str(key)
    )
    .into()
}

/// Redis's NOGROUP reply when the key or the group is missing.
pub fn no_key_or_group(key: &[u8], group: &[u8]) -> Error {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        c_str(key),
        c_str(group)
    )
    .into()
}

/// A read through a consumer group: the group and consumer, and NOACK.
#[derive(Debug, Clone)]
pub struct GroupRead {
    /// The group's name.
    pub group: Bytes,
    /// The consumer's name.
    pub consumer: Bytes,
    /// Deliver without adding to the PEL.
    pub noack: bool,
}

/// Entries read: their IDs and fields (a pending entry deleted since has
/// none).
pub type Read = Vec<(StreamId, Option<Listpack>)>;

/// XREAD's read of one stream: up to `limit` entries past `after`.
pub fn read_after(stream: &Stream, after: StreamId, limit: usize) -> Read {
    let Some(start) = after.next() else {
        return Vec::new();
    };
    stream
        .range(start, StreamId::MAX)
        .take(limit)
        .map(|(id, fields)| (id, Some(fields.to_listpack())))
        .collect()
}

/// XREADGROUP's read of one stream for `read` at `now_ms`: up to `limit`
/// new entries after the group's last delivered ID (`from` is `None`, the
/// `>` ID), delivered to the consumer and added to the PEL unless NOACK;
/// or the consumer's own pending entries after `from` (its history),
/// delivered again. The consumer is created if new (publishing
/// `xgroup-createconsumer`). The group must exist.
pub fn read_group(
    stream: &mut Stream,
    key: &[u8],
    read: &GroupRead,
    from: Option<StreamId>,
    limit: usize,
    now_ms: i64,
    events: Notifier,
) -> Read {
    let (group, consumer) = (&read.group[..], &read.consumer[..]);
    if stream.touch_consumer(group, consumer, now_ms) {
        events.notify(CLASS, "xgroup-createconsumer", key);
    }
    match from {
        None => {
            let Some(last) = stream.group(group).map(|g| g.last_id) else {
                return Vec::new();
            };
            let Some(start) = last.next() else {
                return Vec::new();
            };
            let entries: Read = stream
                .range(start, StreamId::MAX)
                .take(limit)
                .map(|(id, fields)| (id, Some(fields.to_listpack())))
                .collect();
            for (id, _) in &entries {
                stream.advance_group(group, *id);
                if !read.noack {
                    stream.deliver(group, consumer, *id, now_ms, true);
                }
            }
            entries
        }
        Some(from) => {
            let Some(start) = from.next() else {
                return Vec::new();
            };
            let ids: Vec<StreamId> = stream
                .group(group)
                .and_then(|g| g.consumers.get(consumer))
                .map(|c| c.pending.range(start..).take(limit).copied().collect())
                .unwrap_or_default();
            ids.into_iter()
                .map(|id| {
                    let fields = stream.get(id).map(Fields::to_listpack);
                    if fields.is_some() {
                        stream.deliver(group, consumer, id, now_ms, true);
                    }
                    (id, fields)
                })
                .collect()
        }
    }
}

/// Writes what one stream gave a reader: the key and its entries, as an
/// element of XREAD's reply (a pair in RESP2, a map entry in RESP3).
pub fn write_stream_read(w: &mut Writer, key: &[u8], entries: &Read) {
    if w.protocol() == keel_resp::Protocol::Resp2 {
        w.array(2);
    }
    w.bulk(key);
    w.array(entries.len());
    super::write_each(w, entries.iter(), |w, (id, fields)| {
        write_entry_or_deleted(w, *id, fields.as_ref())
    });
}
