//! The collection types and their encodings.
//!
//! Each type has a compact encoding for small values ([`Listpack`], and an
//! integer array for sets of integers) and a full structure for large ones
//! ([`Table`]), converting one way past thresholds named and defaulted as
//! Redis's (`hash-max-listpack-entries` and friends). Every type keeps its
//! heap size as a running count, so [`crate::Value::heap_bytes`] is O(1)
//! and the shard's byte count stays exact after every change.

pub mod hash;
pub mod intset;
pub mod listpack;
pub mod set;
pub mod table;

use std::sync::atomic::{AtomicUsize, Ordering};

pub use hash::Hash;
pub use intset::IntSet;
pub use listpack::Listpack;
pub use set::Set;
pub use table::Table;

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
        }
    }
}

/// The thresholds as the server's configuration sets them, read without a
/// lock by every command that may convert a value.
#[derive(Debug)]
pub struct EncodingConfig {
    values: [AtomicUsize; 5],
}

impl Default for EncodingConfig {
    fn default() -> Self {
        let d = Limits::default();
        EncodingConfig {
            values: [
                d.hash_max_listpack_entries,
                d.hash_max_listpack_value,
                d.set_max_intset_entries,
                d.set_max_listpack_entries,
                d.set_max_listpack_value,
            ]
            .map(AtomicUsize::new),
        }
    }
}

impl EncodingConfig {
    /// The current thresholds.
    pub fn limits(&self) -> Limits {
        let v = |i: usize| self.values[i].load(Ordering::Relaxed);
        Limits {
            hash_max_listpack_entries: v(0),
            hash_max_listpack_value: v(1),
            set_max_intset_entries: v(2),
            set_max_listpack_entries: v(3),
            set_max_listpack_value: v(4),
        }
    }

    /// Replaces the thresholds (CONFIG SET); values converted already stay
    /// as they are, as in Redis.
    pub fn set_limits(&self, limits: Limits) {
        let all = [
            limits.hash_max_listpack_entries,
            limits.hash_max_listpack_value,
            limits.set_max_intset_entries,
            limits.set_max_listpack_entries,
            limits.set_max_listpack_value,
        ];
        for (slot, value) in self.values.iter().zip(all) {
            slot.store(value, Ordering::Relaxed);
        }
    }
}
