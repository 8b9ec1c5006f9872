use bytes::Bytes;

use crate::frame::Frame;

/// How deeply aggregates may nest before the input is rejected; it bounds
/// the decoder's recursion so hostile input cannot overflow the stack.
pub const MAX_NESTING: usize = 128;

/// Why a byte sequence is not valid RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The first byte of a value is not a RESP type marker.
    UnknownType(u8),
    /// A length, integer, double or boolean line does not parse.
    BadLine(&'static str),
    /// A bulk payload is not followed by CRLF.
    MissingTerminator,
    /// Aggregates nest deeper than [`MAX_NESTING`].
    TooDeep,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownType(b) => write!(f, "unknown RESP type byte {:?}", *b as char),
            DecodeError::BadLine(what) => write!(f, "malformed RESP {what}"),
            DecodeError::MissingTerminator => write!(f, "bulk payload not followed by CRLF"),
            DecodeError::TooDeep => write!(f, "RESP aggregates nested too deeply"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one complete frame from the front of `buf`.
///
/// Returns `Ok(None)` when `buf` holds only part of a frame (read more and
/// call again), or the frame and how many bytes it used. Never panics, on
/// any input.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, DecodeError> {
    let mut pos = 0;
    match decode_at(buf, &mut pos, 0)? {
        Some(frame) => Ok(Some((frame, pos))),
        None => Ok(None),
    }
}

/// Moves complete replies from the front of `buf` into `out` until `out`
/// holds `want` of them, skipping out-of-band pushes (RESP3 `>` frames are
/// not replies to anything). Returns true once `out` is full; false means
/// read more into `buf` and call again. This is the decode half of every
/// pipelining client; the socket half stays with the client.
pub fn take_replies(
    buf: &mut bytes::BytesMut,
    want: usize,
    out: &mut Vec<Frame>,
) -> Result<bool, DecodeError> {
    while out.len() < want {
        let Some((frame, used)) = decode(buf)? else {
            return Ok(false);
        };
        bytes::Buf::advance(buf, used);
        if !matches!(frame, Frame::Push(_)) {
            out.push(frame);
        }
    }
    Ok(true)
}

type Step<T> = Result<Option<T>, DecodeError>;

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = &buf[*pos..];
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *pos += end + 2;
    Some(&rest[..end])
}

fn parse_int(text: &[u8], what: &'static str) -> Result<i64, DecodeError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(DecodeError::BadLine(what))
}

fn text(bytes: &[u8], what: &'static str) -> Result<String, DecodeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::BadLine(what))
}

/// Reads a `len`-byte payload and its CRLF.
fn payload(buf: &[u8], pos: &mut usize, len: i64) -> Step<Bytes> {
    let len = usize::try_from(len).map_err(|_| DecodeError::BadLine("length"))?;
    let start = *pos;
    let Some(end) = start.checked_add(len) else {
        return Err(DecodeError::BadLine("length"));
    };
    if buf.len() < end.saturating_add(2) {
        return Ok(None);
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(DecodeError::MissingTerminator);
    }
    *pos = end + 2;
    Ok(Some(Bytes::copy_from_slice(&buf[start..end])))
}

fn elements(buf: &[u8], pos: &mut usize, count: i64, depth: usize) -> Step<Vec<Frame>> {
    let count = usize::try_from(count).map_err(|_| DecodeError::BadLine("length"))?;
    // Each element takes at least 3 bytes, so a count larger than that bound
    // cannot be satisfied by what is buffered: don't reserve for it.
    let mut items = Vec::with_capacity(count.min(buf.len() / 3 + 1));
    for _ in 0..count {
        match decode_at(buf, pos, depth + 1)? {
            Some(f) => items.push(f),
            None => return Ok(None),
        }
    }
    Ok(Some(items))
}

fn decode_at(buf: &[u8], pos: &mut usize, depth: usize) -> Step<Frame> {
    if depth > MAX_NESTING {
        return Err(DecodeError::TooDeep);
    }
    let Some(&tag) = buf.get(*pos) else {
        return Ok(None);
    };
    let mut cursor = *pos + 1;
    let Some(head) = line(buf, &mut cursor) else {
        return Ok(None);
    };
    let frame = match tag {
        b'+' => Frame::Simple(text(head, "simple string")?),
        b'-' => Frame::Error(text(head, "error")?),
        b':' => Frame::Integer(parse_int(head, "integer")?),
        b'_' if head.is_empty() => Frame::Null,
        b'#' => match head {
            b"t" => Frame::Boolean(true),
            b"f" => Frame::Boolean(false),
            _ => return Err(DecodeError::BadLine("boolean")),
        },
        b',' => Frame::Double(parse_double(head)?),
        b'(' => {
            let digits = text(head, "big number")?;
            let body = digits.strip_prefix('-').unwrap_or(&digits);
            if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
                return Err(DecodeError::BadLine("big number"));
            }
            Frame::BigNumber(digits)
        }
        b'$' | b'!' | b'=' => {
            let len = parse_int(head, "length")?;
            if tag == b'$' && len == -1 {
                Frame::Null
            } else {
                let Some(data) = payload(buf, &mut cursor, len)? else {
                    return Ok(None);
                };
                match tag {
                    b'$' => Frame::Bulk(data),
                    b'!' => Frame::Error(text(&data, "blob error")?),
                    _ => {
                        if data.len() < 4 || data[3] != b':' {
                            return Err(DecodeError::BadLine("verbatim string"));
                        }
                        let format = [data[0], data[1], data[2]];
                        Frame::Verbatim(format, data.slice(4..))
                    }
                }
            }
        }
        b'*' | b'~' | b'>' => {
            let count = parse_int(head, "length")?;
            if tag == b'*' && count == -1 {
                Frame::NullArray
            } else {
                let Some(items) = elements(buf, &mut cursor, count, depth)? else {
                    return Ok(None);
                };
                match tag {
                    b'*' => Frame::Array(items),
                    b'~' => Frame::Set(items),
                    _ => Frame::Push(items),
                }
            }
        }
        b'%' => {
            let count = parse_int(head, "length")?;
            let Some(count2) = count.checked_mul(2) else {
                return Err(DecodeError::BadLine("length"));
            };
            let Some(items) = elements(buf, &mut cursor, count2, depth)? else {
                return Ok(None);
            };
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Frame::Map(pairs)
        }
        other => return Err(DecodeError::UnknownType(other)),
    };
    *pos = cursor;
    Ok(Some(frame))
}

fn parse_double(head: &[u8]) -> Result<f64, DecodeError> {
    match head {
        b"inf" => Ok(f64::INFINITY),
        b"-inf" => Ok(f64::NEG_INFINITY),
        _ => std::str::from_utf8(head)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(DecodeError::BadLine("double")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_input_asks_for_more() {
        let full = b"*2\r\n$3\r\nfoo\r\n:12\r\n";
        for cut in 0..full.len() {
            assert_eq!(decode(&full[..cut]), Ok(None), "cut at {cut}");
        }
        let (frame, used) = decode(full).unwrap().unwrap();
        assert_eq!(used, full.len());
        assert_eq!(
            frame,
            Frame::Array(vec![Frame::Bulk("foo".into()), Frame::Integer(12)])
        );
    }

    #[test]
    fn take_replies_skips_pushes_and_waits_for_whole_frames() {
        let mut buf = bytes::BytesMut::from(&b">2\r\n+a\r\n+b\r\n:1\r\n+OK\r\n$3\r\nab"[..]);
        let mut out = Vec::new();
        assert_eq!(take_replies(&mut buf, 3, &mut out), Ok(false));
        assert_eq!(out, vec![Frame::Integer(1), Frame::Simple("OK".into())]);
        buf.extend_from_slice(b"c\r\n");
        assert_eq!(take_replies(&mut buf, 3, &mut out), Ok(true));
        assert_eq!(out[2], Frame::Bulk("abc".into()));
        assert!(buf.is_empty());
    }

    #[test]
    fn resp3_types() {
        let (frame, _) = decode(b"%1\r\n+a\r\n#t\r\n").unwrap().unwrap();
        assert_eq!(
            frame,
            Frame::Map(vec![(Frame::Simple("a".into()), Frame::Boolean(true))])
        );
        assert_eq!(
            decode(b",-inf\r\n").unwrap().unwrap().0,
            Frame::Double(f64::NEG_INFINITY)
        );
        assert_eq!(
            decode(b"=8\r\ntxt:abcd\r\n").unwrap().unwrap().0,
            Frame::Verbatim(*b"txt", "abcd".into())
        );
    }

    #[test]
    fn hostile_input_is_an_error_not_a_crash() {
        assert!(decode(b"$5\r\nabcdefg\r\n").is_err());
        assert!(decode(b"?\r\n").is_err());
        assert!(decode(b"*-5\r\n").is_err());
        assert!(decode(b"$9223372036854775807\r\n").unwrap().is_none());
        let deep = b"*1\r\n".repeat(MAX_NESTING + 2);
        assert_eq!(decode(&deep), Err(DecodeError::TooDeep));
    }
}
