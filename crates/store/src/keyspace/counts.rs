//! Each shard's counts and byte totals as of its last write.
//!
//! A shard guard publishes them when it is released (see
//! `guards::WriteShard`), with relaxed atomic stores. Whoever needs a
//! total over many shards — DBSIZE, INFO, MEMORY STATS, the eviction and
//! expiry passes choosing where to go — reads these instead of locking
//! every shard, so it never waits behind a writer.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::shard::Shard;

/// A shard's counts and byte totals as of its last write, published when
/// the write lock is released. Aggregate readers (DBSIZE, INFO keyspace
/// and memory, MEMORY STATS, the metrics endpoint) read these instead of
/// locking every shard, so they never wait behind a writer or a background
/// pass — which would stall every other connection of the worker thread
/// serving them.
#[derive(Debug)]
pub(super) struct ShardCounts {
    pub(super) keys: AtomicUsize,
    pub(super) expires: AtomicUsize,
    /// Sum of the deadlines in ms, saturated at `u64::MAX` (ten million
    /// keys with a TTL in one shard).
    pub(super) expire_sum_ms: AtomicU64,
    pub(super) reclaimed_expired: AtomicU64,
    pub(super) data_bytes: AtomicUsize,
    pub(super) table_bytes: AtomicUsize,
    pub(super) expiry_index_bytes: AtomicUsize,
    /// Bytes of keys past their deadline second and still here, as of the
    /// write that published them (see [`Store::stale_bytes`]).
    ///
    /// [`Store::stale_bytes`]: super::Store::stale_bytes
    pub(super) stale_bytes: AtomicUsize,
    /// The earliest deadline of any key, `u64::MAX` for none: active
    /// expiry skips the shard until then without locking it.
    pub(super) next_deadline: AtomicU64,
}

impl Default for ShardCounts {
    fn default() -> Self {
        ShardCounts {
            keys: AtomicUsize::new(0),
            expires: AtomicUsize::new(0),
            expire_sum_ms: AtomicU64::new(0),
            reclaimed_expired: AtomicU64::new(0),
            data_bytes: AtomicUsize::new(0),
            table_bytes: AtomicUsize::new(0),
            expiry_index_bytes: AtomicUsize::new(0),
            stale_bytes: AtomicUsize::new(0),
            next_deadline: AtomicU64::new(u64::MAX),
        }
    }
}

impl ShardCounts {
    /// What the shard used as of its last write (see [`Shard::used_bytes`]).
    pub(super) fn used_bytes(&self) -> usize {
        self.data_bytes.load(Ordering::Relaxed)
            + self.table_bytes.load(Ordering::Relaxed)
            + self.expiry_index_bytes.load(Ordering::Relaxed)
    }

    /// Publishes `shard`'s counts as they are at `now_ms`; returns the
    /// bytes it uses (see [`Shard::used_bytes`]), which the write guard
    /// would otherwise work out again.
    pub(super) fn publish(&self, shard: &Shard, now_ms: u64) -> usize {
        self.keys.store(shard.len(), Ordering::Relaxed);
        self.expires.store(shard.expires(), Ordering::Relaxed);
        let sum = u64::try_from(shard.expire_sum_ms()).unwrap_or(u64::MAX);
        self.expire_sum_ms.store(sum, Ordering::Relaxed);
        self.reclaimed_expired
            .store(shard.reclaimed_expired(), Ordering::Relaxed);
        let (data, table, expiry_index) = (
            shard.data_bytes(),
            shard.table_bytes(),
            shard.expiry_index_bytes(),
        );
        self.data_bytes.store(data, Ordering::Relaxed);
        self.table_bytes.store(table, Ordering::Relaxed);
        self.expiry_index_bytes
            .store(expiry_index, Ordering::Relaxed);
        self.stale_bytes
            .store(shard.stale_bytes(now_ms), Ordering::Relaxed);
        self.next_deadline
            .store(shard.next_deadline().unwrap_or(u64::MAX), Ordering::Relaxed);
        data + table + expiry_index
    }
}
