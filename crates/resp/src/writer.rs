use bytes::{BufMut, BytesMut};

use crate::double::format_double;

/// The protocol version a connection speaks; chosen with `HELLO 2|3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default for a new connection.
    #[default]
    Resp2,
    /// RESP3, with maps, sets, doubles, booleans, verbatim strings and pushes.
    Resp3,
}

/// How long an output buffer may grow while one reply is written, and
/// whether a write was refused for it.
///
/// A reply that would pass its client's output limit is never built whole
/// first: once a write would take the buffer past `hard_len`, that write
/// and every one after it is dropped and `exceeded` is set, so the caller
/// can stop producing elements and discard the partial reply. Below that,
/// the buffer may reach `granted_len` freely; past it, the writer asks its
/// [`ReplyRoom`] for more, a step at a time, so a growing reply is paid for
/// as it grows rather than once it is whole.
#[derive(Debug, Clone, Copy)]
pub struct ReplyLimit {
    /// The buffer length no write may pass.
    pub hard_len: usize,
    /// The buffer length writes may reach without asking for room.
    pub granted_len: usize,
    /// Room granted by the [`ReplyRoom`] so far, in bytes.
    pub granted: usize,
    /// Set once a write was dropped.
    pub exceeded: bool,
}

/// Where a limited writer gets room for a reply past what it may write
/// freely (a server's client memory budget).
pub trait ReplyRoom {
    /// Grants `bytes` more to a reply already granted `granted`, or refuses
    /// them.
    fn grant(&self, bytes: usize, granted: usize) -> bool;
}

/// The least room a writer asks for at once, so a reply of many small
/// elements asks rarely.
const ROOM_STEP: usize = 1 << 20;

/// Appends replies to an output buffer in one protocol version.
///
/// Every reply a server sends goes through here, so the RESP2 downgrade rules
/// (map → flat array, set → array, double → bulk string, boolean → integer,
/// null → `$-1` or `*-1`) live in exactly one place, and so does the check
/// against a [`ReplyLimit`].
pub struct Writer<'a> {
    buf: &'a mut BytesMut,
    protocol: Protocol,
    limit: Option<(&'a mut ReplyLimit, &'a dyn ReplyRoom)>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `buf` in `protocol`, without a limit.
    pub fn new(buf: &'a mut BytesMut, protocol: Protocol) -> Self {
        Writer {
            buf,
            protocol,
            limit: None,
        }
    }

    /// A writer appending to `buf` in `protocol` within `limit`, asking
    /// `room` for room past what the limit grants.
    pub fn limited(
        buf: &'a mut BytesMut,
        protocol: Protocol,
        limit: &'a mut ReplyLimit,
        room: &'a dyn ReplyRoom,
    ) -> Self {
        Writer {
            buf,
            protocol,
            limit: Some((limit, room)),
        }
    }

    /// True once a write was dropped for the limit: the reply is incomplete
    /// and producing more of it is wasted work.
    pub fn is_full(&self) -> bool {
        self.limit.as_ref().is_some_and(|(l, _)| l.exceeded)
    }

    /// Whether `n` more bytes may be written, asking for room if needed;
    /// marks the limit exceeded if not.
    fn fits(&mut self, n: usize) -> bool {
        let Some((limit, room)) = self.limit.as_mut() else {
            return true;
        };
        let after = self.buf.len().saturating_add(n);
        if limit.exceeded || after > limit.hard_len {
            limit.exceeded = true;
            return false;
        }
        if after > limit.granted_len {
            let step = (after - limit.granted_len).max(ROOM_STEP);
            if !room.grant(step, limit.granted) {
                limit.exceeded = true;
                return false;
            }
            limit.granted += step;
            limit.granted_len += step;
        }
        true
    }

    fn put_u8(&mut self, b: u8) {
        if self.fits(1) {
            self.buf.put_u8(b);
        }
    }

    fn put_slice(&mut self, s: &[u8]) {
        if self.fits(s.len()) {
            self.buf.put_slice(s);
        }
    }

    /// The protocol this writer encodes, for commands whose reply shape
    /// differs between versions beyond the automatic downgrades.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Bytes written so far to the underlying buffer.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing has been written to the buffer.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn header(&mut self, tag: u8, n: i64) {
        let mut line = [0; HEADER_LINE_MAX];
        self.put_slice(header_line(tag, n, &mut line));
    }

    /// `+OK`-style status reply. `s` must not contain CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.put_u8(b'+');
        self.put_slice(s.as_bytes());
        self.put_slice(b"\r\n");
    }

    /// `+OK`, the most common reply.
    pub fn ok(&mut self) {
        self.put_slice(b"+OK\r\n");
    }

    /// An error reply. `msg` starts with the error code (`ERR`, `WRONGTYPE`,
    /// ...); line breaks in it are replaced by spaces as Redis does, so a
    /// message can never break the framing.
    pub fn error(&mut self, msg: &str) {
        self.put_u8(b'-');
        for &b in msg.as_bytes() {
            self.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.put_slice(b"\r\n");
    }

    /// An integer reply.
    pub fn integer(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// A bulk string reply.
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.put_slice(data);
        self.put_slice(b"\r\n");
    }

    /// A null bulk string: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.put_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.put_slice(b"_\r\n"),
        }
    }

    /// A null array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.put_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.put_slice(b"_\r\n"),
        }
    }

    /// The header of an array of `n` elements; the elements follow.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// The header of a map of `n` pairs; `2n` elements follow, key then
    /// value. RESP2 clients see a flat array.
    pub fn map(&mut self, n: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', 2 * n as i64),
            Protocol::Resp3 => self.header(b'%', n as i64),
        }
    }

    /// The header of a set of `n` elements. RESP2 clients see an array.
    pub fn set(&mut self, n: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', n as i64),
            Protocol::Resp3 => self.header(b'~', n as i64),
        }
    }

    /// The header of an out-of-band push of `n` elements. RESP2 clients see
    /// an array.
    pub fn push(&mut self, n: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', n as i64),
            Protocol::Resp3 => self.header(b'>', n as i64),
        }
    }

    /// A double, formatted like Redis 7.0 (`%.17g`, `inf`, `-inf`). RESP2
    /// clients see a bulk string.
    pub fn double(&mut self, d: f64) {
        let text = format_double(d);
        match self.protocol {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.put_u8(b',');
                self.put_slice(text.as_bytes());
                self.put_slice(b"\r\n");
            }
        }
    }

    /// A boolean. RESP2 clients see the integer 1 or 0.
    pub fn boolean(&mut self, b: bool) {
        match self.protocol {
            Protocol::Resp2 => self.integer(b as i64),
            Protocol::Resp3 => self.put_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    /// A big number given as its decimal digits. RESP2 clients see a bulk
    /// string.
    pub fn big_number(&mut self, digits: &str) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(digits.as_bytes()),
            Protocol::Resp3 => {
                self.put_u8(b'(');
                self.put_slice(digits.as_bytes());
                self.put_slice(b"\r\n");
            }
        }
    }

    /// A verbatim string with a three-letter format (`txt`, `mkd`). RESP2
    /// clients see a plain bulk string, as `INFO` and `CLIENT LIST` do.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.header(b'=', text.len() as i64 + 4);
                self.put_slice(format);
                self.put_u8(b':');
                self.put_slice(text);
                self.put_slice(b"\r\n");
            }
        }
    }

    /// Raw bytes already in RESP form, for replies cached pre-encoded.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.put_slice(bytes);
    }
}

/// The longest header line: a type byte, an i64 (19 digits and a sign)
/// and CRLF.
const HEADER_LINE_MAX: usize = 23;

/// Formats `tag`, `n` in decimal and CRLF at the end of `buf`, without
/// allocating, and returns the line: headers start every reply, so this is
/// on the hottest path of the server, and one slice is one copy and one
/// room check where the type byte, number and CRLF apart were three.
fn header_line(tag: u8, n: i64, buf: &mut [u8; HEADER_LINE_MAX]) -> &[u8] {
    // Two digits a step, from a table, as Redis's ll2string does: a list
    // length in the millions took seven divisions.
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut i = HEADER_LINE_MAX - 2;
    buf[i..].copy_from_slice(b"\r\n");
    let mut v = n.unsigned_abs();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        let pair = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    i -= 1;
    buf[i] = tag;
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(protocol: Protocol, f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut buf = BytesMut::new();
        f(&mut Writer::new(&mut buf, protocol));
        buf.to_vec()
    }

    #[test]
    fn integers_format_like_redis() {
        let ends = [i64::MAX, i64::MIN, i64::MAX / 10, 1_234_567_890_123];
        for n in (-1_000..=20_000).chain(ends) {
            let out = write(Protocol::Resp2, |w| w.integer(n));
            assert_eq!(out, format!(":{n}\r\n").into_bytes());
        }
    }

    #[test]
    fn resp2_downgrades_resp3_types() {
        assert_eq!(write(Protocol::Resp2, |w| w.map(2)), b"*4\r\n");
        assert_eq!(write(Protocol::Resp3, |w| w.map(2)), b"%2\r\n");
        assert_eq!(write(Protocol::Resp2, |w| w.boolean(true)), b":1\r\n");
        assert_eq!(write(Protocol::Resp3, |w| w.boolean(false)), b"#f\r\n");
        assert_eq!(write(Protocol::Resp2, |w| w.double(1.5)), b"$3\r\n1.5\r\n");
        assert_eq!(write(Protocol::Resp3, |w| w.double(1.5)), b",1.5\r\n");
        assert_eq!(write(Protocol::Resp2, |w| w.null()), b"$-1\r\n");
        assert_eq!(write(Protocol::Resp2, |w| w.null_array()), b"*-1\r\n");
        assert_eq!(write(Protocol::Resp3, |w| w.null_array()), b"_\r\n");
        assert_eq!(
            write(Protocol::Resp3, |w| w.verbatim(b"txt", b"hi")),
            b"=6\r\ntxt:hi\r\n"
        );
    }

    /// Room of `left` bytes, granted while it lasts.
    struct Room {
        left: std::cell::Cell<usize>,
    }

    impl ReplyRoom for Room {
        fn grant(&self, bytes: usize, _granted: usize) -> bool {
            let fits = bytes <= self.left.get();
            if fits {
                self.left.set(self.left.get() - bytes);
            }
            fits
        }
    }

    fn limit(hard_len: usize, granted_len: usize) -> ReplyLimit {
        ReplyLimit {
            hard_len,
            granted_len,
            granted: 0,
            exceeded: false,
        }
    }

    #[test]
    fn a_limited_writer_drops_everything_from_the_write_that_would_pass_it() {
        let mut buf = BytesMut::new();
        let mut limit = limit(13, 13);
        let room = Room { left: 0.into() };
        let mut w = Writer::limited(&mut buf, Protocol::Resp2, &mut limit, &room);
        w.array(2);
        w.bulk(b"abc");
        assert!(!w.is_full());
        w.bulk(b"defgh");
        w.integer(1);
        assert!(w.is_full());
        assert_eq!(buf.as_ref(), b"*2\r\n$3\r\nabc\r\n");
        assert!(limit.exceeded);
    }

    #[test]
    fn a_limited_writer_asks_for_room_a_step_at_a_time_until_refused() {
        let mut buf = BytesMut::new();
        let mut limit = limit(usize::MAX, 10);
        let room = Room {
            left: (2 * ROOM_STEP).into(),
        };
        let mut w = Writer::limited(&mut buf, Protocol::Resp2, &mut limit, &room);
        let element = vec![b'x'; ROOM_STEP / 2];
        for _ in 0..3 {
            w.bulk(&element);
        }
        assert!(!w.is_full(), "three half steps fit in the two granted");
        w.bulk(&element);
        w.bulk(&element);
        assert!(w.is_full(), "a third step is refused");
        assert_eq!(limit.granted, 2 * ROOM_STEP);
    }

    #[test]
    fn error_messages_cannot_break_framing() {
        assert_eq!(
            write(Protocol::Resp2, |w| w.error("ERR bad\r\nthing")),
            b"-ERR bad  thing\r\n"
        );
    }
}
