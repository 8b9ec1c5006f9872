//! RESP2/RESP3 codec: bytes in, frames out.
//!
//! This crate knows the wire format of the Redis serialization protocol and
//! nothing else: no sockets, no commands. It offers three pieces, each for a
//! different reader:
//!
//! - [`RequestDecoder`] turns the bytes a *client* sends (multibulk arrays of
//!   bulk strings, or inline lines as typed into `nc`) into argument vectors,
//!   enforcing Redis's protocol limits with Redis's error strings. It keeps its
//!   place across calls so a huge request arriving in small reads is parsed
//!   once, not re-scanned on every read.
//! - [`Writer`] appends replies to an output buffer in the protocol version the
//!   connection negotiated (`HELLO 2|3`), downgrading RESP3-only types (maps,
//!   sets, doubles, booleans) the way Redis does for RESP2 clients. Servers
//!   write replies straight into the socket buffer through it, with no
//!   intermediate frame tree.
//! - [`Frame`] and [`decode`] are the general, owned form of any RESP2/RESP3
//!   value, for clients (keel-bench) and tests; [`Frame::encode`] goes through
//!   the same [`Writer`] so there is one encoder.

mod decode;
mod double;
mod frame;
mod request;
mod writer;

pub use decode::{decode, take_replies, DecodeError, MAX_NESTING};
pub use double::format_double;
pub use frame::Frame;
pub use request::{
    complete_requests, split_words, walk_complete_requests, Limits, ProtocolError, RequestDecoder,
    Walked, DEFAULT_MAX_BULK_LEN, MAX_AHEAD, MAX_INLINE_LEN, MAX_MULTIBULK_LEN,
};
pub use writer::{Protocol, ReplyLimit, ReplyRoom, Writer};
