//! The keyspace of keel: databases of sharded key tables, values and their
//! encodings, TTLs, per-key access tracking and exact memory accounting.
//!
//! No networking and no threads of its own: the server calls in from its
//! connection threads, and everything here is testable alone. The crate is
//! organised by concern:
//!
//! - [`keyspace`]: databases, shards and the locking discipline.
//! - [`shard`]: one shard's stable-slot table and its accounting; its hash
//!   index is in `index.rs`.
//! - [`value`]: the value enum and strings.
//! - [`types`]: hashes, sets, lists, sorted sets and streams, their compact and full encodings.
//! - [`expiry`]: how keys with a TTL are reclaimed on time, without sampling;
//!   its deadline index, slot numbers in sorted runs, is in `deadlines.rs`.
//! - [`access`]: recency/frequency per key and the maxmemory policies;
//!   keel's own policy, S3-FIFO, keeps its queues per shard (`s3fifo.rs`).
//! - [`geohash`]: geohash cells and the GEO commands' area search.
//! - [`pattern`]: Redis glob matching.
//! - [`bits`]: bit arithmetic on strings for the bitmap commands.
//! - [`hll`]: HyperLogLog, in Redis's byte representation.
//! - [`lcs`]: the longest common subsequence of two strings (LCS).
//! - `snapshot`: point-in-time snapshots taken while writes go on, key
//!   by key instead of by fork.
//! - [`strtod`]: C's `strtod`, as SORT reads scores.
//! - [`size_class`]: what an allocation really takes, which the accounting
//!   counts.
//! - [`defrag`]: active defragmentation, moving entry blocks out of sparse
//!   allocator pages.

pub mod access;
pub mod bits;
mod deadlines;
pub mod defrag;
mod entry;
pub mod expiry;
pub mod geohash;
pub mod hll;
mod index;
pub mod key;
pub mod keyspace;
pub mod lcs;
pub mod pattern;
mod prefetch;
mod s3fifo;
pub mod shard;
pub mod size_class;
mod snapshot;
pub mod strtod;
pub mod types;
pub mod value;

pub use access::{AccessConfig, Clock, Policy};
pub use entry::Entry;
pub use expiry::Reclaimed;
pub use key::{AsKey, Key};
pub use keyspace::{
    drop_unlocked, holds_a_lock, Db, DbMemory, DbSize, DbStats, FreeHook, Held, KeyEvent,
    KeyEventHook, Lookup, MultiWrite, ReadShard, ShardSet, ShardsLocked, Store, Vacant,
    WriteAcross, WriteHook, WriteShard, SHARDS_PER_DB,
};
pub use pattern::glob_match;
pub use shard::{EntryMut, Shard, SlotCounter, WatchFlag};
pub use types::{EncodingConfig, End, Hash, Limits, List, NodeLimits, Set, Stream, StreamId, ZSet};
pub use value::{parse_canonical_i64, Str, StrRef, Value, ValueRef, SHARED_INTEGERS};
