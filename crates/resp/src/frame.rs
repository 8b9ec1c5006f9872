use bytes::{Bytes, BytesMut};

use crate::writer::{Protocol, Writer};

/// One RESP value, owned. Clients and tests use it; the server writes its
/// replies through [`Writer`] directly instead of building frames.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `+text`: a status line.
    Simple(String),
    /// `-CODE message` or RESP3 `!` blob error.
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$n` bulk string.
    Bulk(Bytes),
    /// `$-1` in RESP2 or `_` in RESP3.
    Null,
    /// `*-1`: RESP2's null array (RESP3 has only `_`, decoded as [`Frame::Null`]).
    NullArray,
    /// `*n`.
    Array(Vec<Frame>),
    /// RESP3 `%n`.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 `~n`.
    Set(Vec<Frame>),
    /// RESP3 `>n`: out-of-band data such as invalidation messages.
    Push(Vec<Frame>),
    /// RESP3 `,d`.
    Double(f64),
    /// RESP3 `#t` / `#f`.
    Boolean(bool),
    /// RESP3 `(digits`.
    BigNumber(String),
    /// RESP3 `=n` with a three-letter format such as `txt`.
    Verbatim([u8; 3], Bytes),
}

impl Frame {
    /// Appends this frame to `out` in `protocol`, through the same
    /// [`Writer`] the server uses, so clients and server share one encoder.
    pub fn encode(&self, out: &mut BytesMut, protocol: Protocol) {
        self.write(&mut Writer::new(out, protocol));
    }

    /// Writes this frame through an existing writer.
    pub fn write(&self, w: &mut Writer) {
        match self {
            Frame::Simple(s) => w.simple(s),
            Frame::Error(s) => w.error(s),
            Frame::Integer(n) => w.integer(*n),
            Frame::Bulk(b) => w.bulk(b),
            Frame::Null => w.null(),
            Frame::NullArray => w.null_array(),
            Frame::Array(items) => {
                w.array(items.len());
                items.iter().for_each(|f| f.write(w));
            }
            Frame::Map(pairs) => {
                w.map(pairs.len());
                for (k, v) in pairs {
                    k.write(w);
                    v.write(w);
                }
            }
            Frame::Set(items) => {
                w.set(items.len());
                items.iter().for_each(|f| f.write(w));
            }
            Frame::Push(items) => {
                w.push(items.len());
                items.iter().for_each(|f| f.write(w));
            }
            Frame::Double(d) => w.double(*d),
            Frame::Boolean(b) => w.boolean(*b),
            Frame::BigNumber(digits) => w.big_number(digits),
            Frame::Verbatim(format, text) => w.verbatim(format, text),
        }
    }

    /// A command as clients send it: an array of bulk strings.
    pub fn command<I, A>(args: I) -> Frame
    where
        I: IntoIterator<Item = A>,
        A: AsRef<[u8]>,
    {
        Frame::Array(
            args.into_iter()
                .map(|a| Frame::Bulk(Bytes::copy_from_slice(a.as_ref())))
                .collect(),
        )
    }

    /// True for `-` and `!` replies.
    pub fn is_error(&self) -> bool {
        matches!(self, Frame::Error(_))
    }
}
