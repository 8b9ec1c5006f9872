//! The collection types and their encodings.
//!
//! Each type has a compact encoding for small values ([`Listpack`], and an
//! integer array for sets of integers) and a full structure for large ones
//! ([`Table`] for hashes and sets, a deque of chunks for lists, a table
//! beside a [`ranktree::RankTree`] for sorted sets), converting past
//! thresholds named and defaulted as Redis's (`hash-max-listpack-entries`
//! and friends). Streams have one encoding, a map of entries beside the
//! shape of Redis's nodes ([`stream`]). Every type keeps its
//! heap size as a running count, so [`crate::Value::heap_bytes`] is O(1)
//! and the shard's byte count stays exact after every change.

pub mod hash;
pub mod inline_bytes;
pub mod intset;
pub mod list;
pub mod listpack;
pub mod ranktree;
pub mod set;
pub mod stream;
pub mod table;
pub mod zset;

use std::sync::atomic::{AtomicI64, Ordering};

pub use hash::Hash;
pub use inline_bytes::InlineBytes;
pub use intset::IntSet;
pub use list::{End, List};
pub use listpack::Listpack;
pub use set::Set;
pub use stream::{NodeLimits, Stream, StreamId};
pub use table::Table;
pub use zset::ZSet;

/// The conversion thresholds, as read for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `hash-max-listpack-entries`: fields a compact hash may hold.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value`: longest field or value in a compact hash.
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`: members an integer set may hold.
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries`: members a compact set may hold.
    pub set_max_listpack_entries: usize,
    /// `set-max-listpack-value`: longest member of a compact set.
    pub set_max_listpack_value: usize,
    /// `list-max-listpack-size`: bytes (-1..-5 for 4..64 KB) or elements
    /// (positive) a compact list may hold.
    pub list_max_listpack_size: i64,
    /// `zset-max-listpack-entries`: members a compact sorted set may hold.
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value`: longest member of a compact sorted set.
    pub zset_max_listpack_value: usize,
    /// `stream-node-max-bytes`: most bytes of a stream node.
    pub stream_node_max_bytes: usize,
    /// `stream-node-max-entries`: most entries of a stream node.
    pub stream_node_max_entries: usize,
}

impl Default for Limits {
    /// Redis's defaults.
    fn default() -> Self {
        Limits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            list_max_listpack_size: -2,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
        }
    }
}

impl Limits {
    /// The stream node thresholds.
    pub fn stream_nodes(&self) -> NodeLimits {
        NodeLimits {
            max_bytes: self.stream_node_max_bytes,
            max_entries: self.stream_node_max_entries,
        }
    }
}

/// The thresholds as the server's configuration sets them, read without a
/// lock by every command that may convert a value.
#[derive(Debug)]
pub struct EncodingConfig {
    values: [AtomicI64; FIELDS],
}

/// Number of thresholds in [`Limits`].
const FIELDS: usize = 10;

impl Limits {
    /// The thresholds as one array, in a fixed order, for [`EncodingConfig`].
    fn to_fields(self) -> [i64; FIELDS] {
        [
            self.hash_max_listpack_entries as i64,
            self.hash_max_listpack_value as i64,
            self.set_max_intset_entries as i64,
            self.set_max_listpack_entries as i64,
            self.set_max_listpack_value as i64,
            self.list_max_listpack_size,
            self.zset_max_listpack_entries as i64,
            self.zset_max_listpack_value as i64,
            self.stream_node_max_bytes as i64,
            self.stream_node_max_entries as i64,
        ]
    }

    fn from_fields(v: [i64; FIELDS]) -> Limits {
        Limits {
            hash_max_listpack_entries: v[0] as usize,
            hash_max_listpack_value: v[1] as usize,
            set_max_intset_entries: v[2] as usize,
            set_max_listpack_entries: v[3] as usize,
            set_max_listpack_value: v[4] as usize,
            list_max_listpack_size: v[5],
            zset_max_listpack_entries: v[6] as usize,
            zset_max_listpack_value: v[7] as usize,
            stream_node_max_bytes: v[8] as usize,
            stream_node_max_entries: v[9] as usize,
        }
    }
}

impl Default for EncodingConfig {
    fn default() -> Self {
        EncodingConfig {
            values: Limits::default().to_fields().map(AtomicI64::new),
        }
    }
}

impl EncodingConfig {
    /// The current thresholds.
    pub fn limits(&self) -> Limits {
        Limits::from_fields(std::array::from_fn(|i| {
            self.values[i].load(Ordering::Relaxed)
        }))
    }

    /// Replaces the thresholds (CONFIG SET); values converted already stay
    /// as they are, as in Redis.
    pub fn set_limits(&self, limits: Limits) {
        for (slot, value) in self.values.iter().zip(limits.to_fields()) {
            slot.store(value, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_config_round_trips_every_threshold() {
        let limits = Limits {
            hash_max_listpack_entries: 1,
            hash_max_listpack_value: 2,
            set_max_intset_entries: 3,
            set_max_listpack_entries: 4,
            set_max_listpack_value: 5,
            list_max_listpack_size: -5,
            zset_max_listpack_entries: 6,
            zset_max_listpack_value: 7,
            stream_node_max_bytes: 8,
            stream_node_max_entries: 9,
        };
        let config = EncodingConfig::default();
        assert_eq!(config.limits(), Limits::default());
        config.set_limits(limits);
        assert_eq!(config.limits(), limits);
    }
}
