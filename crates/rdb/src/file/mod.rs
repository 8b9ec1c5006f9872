//! A whole RDB file, as Redis's `rdbSaveRio` writes it and
//! `rdbLoadRioWithLoadingCtx` reads it: a snapshot of every database, also
//! what a master sends a replica for a full resynchronization.
//!
//! ```text
//! "REDIS" "0010"                      magic and 4-digit version
//! 0xFA <string key> <string value>    AUX: a field about the file
//!                                     (redis-ver, ctime, used-mem, repl-id...)
//! 0xF5 <string code>                  FUNCTION2: one function library
//! 0xFE <length db>                    SELECTDB: keys below go to that db
//! 0xFB <length keys> <length expires> RESIZEDB: a hint to size its tables
//! [0xFC <u64 LE ms>]                  EXPIRETIME_MS: the next key's expiry
//! [0xF8 <length seconds>]             IDLE: its LRU idle time
//! [0xF9 <u8 counter>]                 FREQ: its LFU counter
//! <type> <string key> <object body>   a key and its value (crate::object)
//! ...                                 more keys, more databases
//! 0xFF                                EOF
//! <u64 LE CRC-64>                     of every byte before it (version 5 on)
//! ```
//!
//! Opcodes a reader may also meet: EXPIRETIME 0xFD (a u32 LE of seconds,
//! from old files) is read as milliseconds; FUNCTION_PRE_GA 0xF6 (the
//! libraries of Redis 7.0's release candidates) is refused, as Redis
//! refuses it; MODULE_AUX 0xF7 and the module object types (6, 7) are
//! refused too: keel has no modules, and Redis without the module refuses
//! them as well. A stored CRC of 0 means the file was written with
//! `rdbchecksum no`, and is not checked, as Redis does not.
//!
//! Design choices:
//!
//! - Writing produces version 10, what Redis 7.0 writes, with 7.0's
//!   encodings ([`crate::object`]), so a Redis 7.0 (and any later one) loads
//!   it. Reading accepts versions 1 to 11 (Redis 7.2 writes 11, whose new
//!   forms are listpack sets and streams with their consumers' active
//!   time, which keel drops); later versions are refused, as Redis refuses
//!   a file newer than itself.
//! - Streaming both ways: files run to gigabytes. The writer fills a small
//!   buffer and hands it to the output in large writes, folding it into the
//!   CRC as it goes (a single value is encoded whole in memory first). The
//!   reader keeps a window of the input and decodes the next item from the
//!   bytes it holds; when the object decoder reports it ran out of bytes (a
//!   truncated object, told apart from a malformed one by the cursor), the
//!   reader reads more and decodes again. Decoding a big key again after
//!   every read would be quadratic, so for a key the reader first finds its
//!   end with a scanner that walks lengths only and resumes where it
//!   stopped (`scan.rs`), then decodes it once: linear time whatever the
//!   size of reads (a socket gives a few kilobytes at a time). The reader
//!   reads only when the next item needs more bytes than it holds, so it
//!   never waits for bytes past the end of the RDB that may not come (a
//!   replication stream); what a read returned past the end is handed back
//!   by [`Reader::into_inner`].
//! - Memory is bounded: each key's decoding may allocate at most the budget
//!   the caller gives, and one item may not need a window larger than twice
//!   that budget (plus a megabyte), or it is refused as over budget.
//! - Per-key metadata (expiry, idle time, frequency) comes before the key,
//!   in Redis's order; the reader hands it over with the key
//!   ([`KeyMeta`]), and, as Redis, keeps it for the next key if other
//!   opcodes come between. An empty collection (older Redis versions could
//!   write one) is skipped, as Redis 7.0 skips it.

mod read;
mod scan;
mod write;

pub use read::Reader;
pub use write::{WriteOptions, Writer};

use std::fmt;
use std::io;

use crate::Value;

/// The opcodes between keys (`RDB_OPCODE_*`).
mod opcode {
    pub const FUNCTION2: u8 = 0xF5;
    pub const FUNCTION_PRE_GA: u8 = 0xF6;
    pub const MODULE_AUX: u8 = 0xF7;
    pub const IDLE: u8 = 0xF8;
    pub const FREQ: u8 = 0xF9;
    pub const AUX: u8 = 0xFA;
    pub const RESIZEDB: u8 = 0xFB;
    pub const EXPIRETIME_MS: u8 = 0xFC;
    pub const EXPIRETIME: u8 = 0xFD;
    pub const SELECTDB: u8 = 0xFE;
    pub const EOF: u8 = 0xFF;
}

/// The file's first bytes, before its 4-digit version.
const MAGIC: &[u8; 5] = b"REDIS";

/// The newest version the reader accepts (Redis 7.2's).
pub const MAX_READ_VERSION: u16 = 11;

/// The first version with a CRC-64 after the EOF opcode.
const FIRST_VERSION_WITH_CHECKSUM: u16 = 5;

/// What a key carries beside its value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyMeta {
    /// When it expires, in Unix milliseconds.
    pub expire_at_ms: Option<u64>,
    /// Seconds since it was last used (saved under an LRU eviction policy).
    pub idle_seconds: Option<u64>,
    /// Its LFU counter (saved under an LFU eviction policy).
    pub lfu_freq: Option<u8>,
}

/// One thing an RDB file holds, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An AUX field.
    Aux { key: Vec<u8>, value: Vec<u8> },
    /// The code of one function library.
    Functions(Vec<u8>),
    /// The database the following keys belong to.
    SelectDb(u64),
    /// How many keys, and keys with an expiry, the current database holds.
    ResizeDb { keys: u64, expires: u64 },
    /// A key, its value and metadata.
    Key {
        key: Vec<u8>,
        value: Value,
        meta: KeyMeta,
    },
    /// The end of the file, its checksum verified.
    End,
}

/// Why a file cannot be loaded, and where.
#[derive(Debug)]
pub struct LoadError {
    /// Bytes of the file before the item at fault (for truncation, the
    /// bytes there were).
    pub offset: u64,
    pub problem: Problem,
}

/// What is wrong with a file.
#[derive(Debug)]
pub enum Problem {
    /// Reading the input failed.
    Io(io::Error),
    /// The input ends before the file does.
    Truncated,
    /// It does not start with "REDIS" and a 4-digit version.
    NotRdb,
    /// A version this reader cannot read (0 or later than
    /// [`MAX_READ_VERSION`]).
    Version(u16),
    /// A byte that is neither an opcode nor an object type.
    UnknownOpcodeOrType(u8),
    /// A malformed object, key, length or opcode argument.
    BadObject,
    /// Decoding an item would take more memory than the budget.
    OverBudget,
    /// Module data (an object of a module type, or module AUX data).
    Module,
    /// Function libraries in the format of Redis 7.0's release candidates.
    FunctionPreGa,
    /// The CRC-64 after the EOF opcode does not match the file's.
    Checksum { stored: u64, computed: u64 },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Io(e) => write!(f, "read error: {e}"),
            Problem::Truncated => write!(f, "unexpected end of file"),
            Problem::NotRdb => write!(f, "wrong signature: not an RDB file"),
            Problem::Version(v) => write!(f, "can't handle RDB format version {v}"),
            Problem::UnknownOpcodeOrType(t) => write!(f, "unknown RDB opcode or type {t}"),
            Problem::BadObject => write!(f, "malformed data"),
            Problem::OverBudget => write!(f, "an item needs more memory than allowed"),
            Problem::Module => write!(f, "module data, and keel has no modules"),
            Problem::FunctionPreGa => write!(f, "pre-release function format not supported"),
            Problem::Checksum { stored, computed } => write!(
                f,
                "wrong RDB checksum: stored {stored:#018x}, computed {computed:#018x}"
            ),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.problem)
    }
}

impl std::error::Error for LoadError {}

#[cfg(test)]
mod tests;
