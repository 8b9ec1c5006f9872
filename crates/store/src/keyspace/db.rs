//! One database at one instant: the API command handlers call.
//!
//! [`Db`] maps a key to its shard and hands out guards on the shards
//! (single, or several in ascending order for atomic multi-key commands);
//! whole-database operations (FLUSHDB, KEYS, SCAN, RANDOMKEY) visit the
//! shards one at a time, and DBSIZE-style statistics read the shards'
//! published counts without any lock.

use std::sync::atomic::Ordering;

use super::counts::ShardCounts;
use super::guards::{Guards, MultiWrite, ReadShard, WriteAcross, WriteShard};
use super::locking::{read_lock, write_lock};
use super::{Store, SHARDS_PER_DB};
use crate::access::Clock;
use crate::entry::Entry;
use crate::key::{AsKey, Key};
use crate::shard::Shard;

/// One database at one instant: every call made through it sees the same
/// "now", as one Redis command does.
#[derive(Clone, Copy)]
pub struct Db<'a> {
    pub(super) store: &'a Store,
    pub(super) index: usize,
    pub(super) counts: &'a [ShardCounts],
    pub(super) now_ms: u64,
    /// The access clock at that instant (LRU/LFU/S3-FIFO).
    pub(super) clock: Clock,
    /// False for a client with CLIENT NO-TOUCH on: accesses through this
    /// view leave keys' LRU/LFU data as it was.
    pub(super) touch: bool,
}

/// Statistics of one database, for INFO keyspace.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DbStats {
    /// Keys, including expired ones not reclaimed yet.
    pub keys: usize,
    /// Keys with a TTL.
    pub expires: usize,
    /// Average remaining TTL of keys with one, in milliseconds.
    pub avg_ttl_ms: u64,
}

/// Where one database's bytes go, for MEMORY STATS.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DbMemory {
    /// Keys and values themselves.
    pub data: usize,
    /// Slots, hash index and free lists holding the keys.
    pub tables: usize,
    /// The deadline index of keys with a TTL.
    pub expiry_index: usize,
}

/// Shards of one database as bits. A multi-key command's shards come out
/// in ascending order, the lock order, without a sort; a key's guard is
/// found among them by counting bits, without a search.
#[derive(Clone, Copy, Debug)]
pub(super) struct ShardMask(u64);

const _: () = assert!(
    SHARDS_PER_DB <= u64::BITS as usize,
    "a database's shards fit a mask"
);

impl ShardMask {
    /// Every shard of a database.
    const ALL: ShardMask = ShardMask(u64::MAX >> (u64::BITS as usize - SHARDS_PER_DB));

    /// The shards holding `keys`.
    fn of(db: &Db, keys: &[Key]) -> ShardMask {
        ShardMask(
            keys.iter()
                .fold(0, |bits, &k| bits | 1 << db.shard_index(k)),
        )
    }

    /// The shards, in ascending order; their number known up front, so
    /// that collecting their guards allocates once.
    fn iter(self) -> impl ExactSizeIterator<Item = usize> {
        let mut bits = self.0;
        (0..self.0.count_ones()).map(move |_| {
            let shard = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            shard
        })
    }

    /// Where `shard` is in [`ShardMask::iter`]'s order. Panics if it is
    /// not among them: a key whose shard was not locked.
    pub(super) fn position(self, shard: usize) -> usize {
        assert!(
            self.0 & 1 << shard != 0,
            "key's shard was not locked with the others"
        );
        (self.0 & ((1 << shard) - 1)).count_ones() as usize
    }
}

impl<'a> Db<'a> {
    /// This view, with accesses that do not count as use (CLIENT
    /// NO-TOUCH): the keys' recency and frequency are left as they were.
    pub fn without_touch(self) -> Db<'a> {
        Db {
            touch: false,
            ..self
        }
    }

    /// The instant this view answers for.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    pub(super) fn shard_index<'k>(&self, key: impl AsKey<'k>) -> usize {
        self.store.shard_index(key)
    }

    /// `bytes` as a key, hashed once for every step that needs the hash
    /// (see [`Key`]).
    pub fn key<'k>(&self, bytes: &'k [u8]) -> Key<'k> {
        Key::new(bytes, &self.store.hasher)
    }

    pub(super) fn guard(&self, index: usize) -> WriteShard<'a> {
        let mut guard = write_lock(self.store, self.index, index);
        // Every change to a shard is made under a guard like this one, whose
        // release publishes what the shard then uses: reading that back is
        // three loads, where working it out again is a walk of its tables.
        let counts = &self.counts[index];
        let bytes_before = counts.used_bytes();
        debug_assert_eq!(bytes_before, guard.used_bytes());
        let access = &self.store.access;
        guard.follow_policy(access.s3fifo_epoch(), self.clock);
        WriteShard {
            bytes_before,
            changes_before: guard.changes(),
            new_keys_before: guard.new_keys(),
            guard,
            counts,
            store: self.store,
            db: self.index,
            now_ms: self.now_ms,
            clock: self.clock,
            touch: self.touch,
        }
    }

    /// Read access to the shard holding `key`.
    pub fn read<'k>(&self, key: impl AsKey<'k>) -> ReadShard<'a> {
        let index = self.shard_index(key);
        ReadShard {
            guards: Some(Guards::One(index, read_lock(self.store, self.index, index))),
            db: *self,
            expired_in: std::cell::Cell::new(0),
        }
    }

    /// Read access to the shards of all `keys` at once, so a multi-key read
    /// (MGET) sees one instant: never half of a concurrent MSET. Guards are
    /// taken in ascending shard order, like [`Db::write_many`].
    pub fn read_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> ReadShard<'a> {
        let keys: Vec<Key> = keys.iter().map(|k| self.key(k.as_ref())).collect();
        let shards = ShardMask::of(self, &keys);
        let guards: Vec<_> = shards
            .iter()
            .map(|i| read_lock(self.store, self.index, i))
            .collect();
        self.prefetch_locked(&keys, shards, &guards, |guard| -> &Shard { guard });
        ReadShard {
            guards: Some(Guards::Many(shards, guards)),
            db: *self,
            expired_in: std::cell::Cell::new(0),
        }
    }

    /// Write access to the shard holding `key`.
    pub fn write<'k>(&self, key: impl AsKey<'k>) -> WriteShard<'a> {
        self.guard(self.shard_index(key))
    }

    /// Write access to the shards of all `keys` at once, for commands that
    /// must be atomic across keys. Guards are taken in ascending shard
    /// order, which is what keeps concurrent multi-key commands from
    /// deadlocking.
    pub fn write_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> MultiWrite<'a> {
        let keys: Vec<Key> = keys.iter().map(|k| self.key(k.as_ref())).collect();
        self.write_many_keys(&keys)
    }

    /// [`Db::write_many`] of keys hashed already ([`Db::key`]): a caller
    /// that goes on to find each key in the guards (MSET) hashes it once.
    pub fn write_many_keys(&self, keys: &[Key]) -> MultiWrite<'a> {
        let shards = ShardMask::of(self, keys);
        let locked = MultiWrite {
            db: *self,
            shards,
            guards: shards.iter().map(|i| self.guard(i)).collect(),
        };
        self.prefetch_locked(keys, shards, &locked.guards, |write| -> &Shard {
            &write.guard
        });
        locked
    }

    /// Loads ahead the lookups of `keys` (see `Shard::prefetch_lookups`)
    /// in the guards taken for them, `locked`, one for each of `shards`
    /// in order; `shard` is a guard's shard.
    fn prefetch_locked<'g, G>(
        &self,
        keys: &'g [Key<'g>],
        shards: ShardMask,
        locked: &'g [G],
        shard: impl Fn(&'g G) -> &'g Shard,
    ) {
        let shard_of = |key: Key| shard(&locked[shards.position(self.shard_index(key))]);
        Shard::prefetch_lookups(keys.iter().map(|&k| (shard_of(k), k)));
    }

    /// Write access to the shard holding `key` in this database and in
    /// database `other` (MOVE), which must be another one. Both locks are
    /// taken in the global order: the lower database's first (see
    /// `locking`).
    pub fn write_across(&self, other: usize, key: &[u8]) -> WriteAcross<'a> {
        assert_ne!(self.index, other, "one lock taken twice");
        let there = self.store.db(other, self.now_ms);
        let index = self.shard_index(key);
        if self.index < other {
            let here = self.guard(index);
            WriteAcross {
                here,
                there: there.guard(index),
            }
        } else {
            let there = there.guard(index);
            WriteAcross {
                here: self.guard(index),
                there,
            }
        }
    }

    /// Read access to every shard of the database at once, for a command
    /// that reads keys it cannot name before it reads (SORT with BY or
    /// GET patterns): one instant for all of them. Guards are taken in
    /// ascending shard order.
    pub fn read_all(&self) -> ReadShard<'a> {
        let guards = ShardMask::ALL
            .iter()
            .map(|i| read_lock(self.store, self.index, i))
            .collect();
        ReadShard {
            guards: Some(Guards::Many(ShardMask::ALL, guards)),
            db: *self,
            expired_in: std::cell::Cell::new(0),
        }
    }

    /// Write access to every shard of the database at once (SORT ... STORE
    /// with BY or GET patterns), in ascending shard order.
    pub fn write_all(&self) -> MultiWrite<'a> {
        MultiWrite {
            db: *self,
            shards: ShardMask::ALL,
            guards: ShardMask::ALL.iter().map(|i| self.guard(i)).collect(),
        }
    }

    /// Keys, TTL count and average TTL of this database.
    pub fn stats(&self) -> DbStats {
        let (mut keys, mut expires, mut sum) = (0usize, 0usize, 0u128);
        for counts in self.counts {
            keys += counts.keys.load(Ordering::Relaxed);
            expires += counts.expires.load(Ordering::Relaxed);
            sum += counts.expire_sum_ms.load(Ordering::Relaxed) as u128;
        }
        let avg_ttl_ms = match expires {
            0 => 0,
            n => (sum / n as u128).saturating_sub(self.now_ms as u128) as u64,
        };
        DbStats {
            keys,
            expires,
            avg_ttl_ms,
        }
    }

    /// Where this database's bytes go.
    pub fn memory(&self) -> DbMemory {
        let mut m = DbMemory::default();
        for counts in self.counts {
            m.data += counts.data_bytes.load(Ordering::Relaxed);
            m.tables += counts.table_bytes.load(Ordering::Relaxed);
            m.expiry_index += counts.expiry_index_bytes.load(Ordering::Relaxed);
        }
        m
    }

    /// Sizes every shard's index for about `keys` more keys in all, spread
    /// as keys spread over shards, with an eighth more for the spread.
    pub fn reserve(&self, keys: usize) {
        let per_shard = keys.div_ceil(SHARDS_PER_DB);
        for index in 0..SHARDS_PER_DB {
            self.guard(index).guard.reserve(per_shard + per_shard / 8);
        }
    }

    /// Removes every key. The old contents are returned so that the caller
    /// decides where to pay for freeing them (FLUSHDB ASYNC frees them on
    /// another thread).
    pub fn flush(&self) -> Vec<Shard> {
        let all: Vec<usize> = (0..SHARDS_PER_DB).collect();
        let mut guards: Vec<WriteShard> = all.into_iter().map(|i| self.guard(i)).collect();
        guards
            .iter_mut()
            .map(|g| {
                let mut old = std::mem::replace(&mut **g.guard, self.store.empty_shard(self.index));
                g.guard.adopt_watchers(&old);
                g.guard.adopt_snapshot(&mut old);
                g.guard.continue_changes_of(&old);
                old
            })
            .collect()
    }

    /// Keys held in hash slot `slot` (CLUSTER COUNTKEYSINSLOT), expired ones
    /// not yet reclaimed included, as Redis counts them; 0 unless the store
    /// counts slots.
    pub fn keys_in_slot(&self, slot: u16) -> usize {
        (0..SHARDS_PER_DB)
            .map(|shard_no| read_lock(self.store, self.index, shard_no).keys_in_slot(slot))
            .sum()
    }

    /// Keys held in each of `slots` hash slots (INFO and the metrics of a
    /// cluster node), expired ones not yet reclaimed included.
    pub fn keys_per_slot(&self, slots: usize) -> Vec<u64> {
        let mut totals = vec![0; slots];
        for shard_no in 0..SHARDS_PER_DB {
            read_lock(self.store, self.index, shard_no).add_slot_counts(&mut totals);
        }
        totals
    }

    /// Up to `max` live keys of hash slot `slot` (CLUSTER GETKEYSINSLOT):
    /// only shards holding some are walked.
    pub fn keys_of_slot(&self, slot: u16, max: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for shard_no in 0..SHARDS_PER_DB {
            if out.len() >= max {
                break;
            }
            let shard = read_lock(self.store, self.index, shard_no);
            let keys = shard.keys_of_slot(slot, max - out.len(), self.now_ms);
            out.extend(keys.into_iter().map(<[u8]>::to_vec));
        }
        out
    }

    /// Every live key matching `pattern` (KEYS).
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let match_all = pattern == b"*";
        let mut out = Vec::new();
        for shard_no in 0..SHARDS_PER_DB {
            let shard = read_lock(self.store, self.index, shard_no);
            out.extend(
                shard
                    .iter(self.now_ms)
                    .filter(|e| match_all || crate::glob_match(pattern, e.key(), false))
                    .map(|e| e.key().to_vec()),
            );
        }
        out
    }

    /// One SCAN step from `cursor`: visits about `count` live keys (and at
    /// most ten times as many slots) and returns the next cursor (0 when
    /// done) and the keys among them that `keep` accepts.
    ///
    /// The cursor is `shard << 32 | slot`. Keys never change slot while
    /// they exist, so a key present for the whole iteration is returned
    /// exactly once.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        mut keep: impl FnMut(&Entry) -> bool,
    ) -> (u64, Vec<Vec<u8>>) {
        let mut shard_no = (cursor >> 32) as usize;
        let mut slot = (cursor & 0xffff_ffff) as usize;
        let mut keys = Vec::new();
        // Work bound per call, in slots visited, so a sparse keyspace still
        // makes progress and a dense one does not return far more than
        // asked. Like Redis's dict scan, a small database comes back whole.
        let mut budget = count.max(1).saturating_mul(10);
        let mut live_seen = 0;
        while shard_no < SHARDS_PER_DB && budget > 0 && live_seen < count {
            let shard = read_lock(self.store, self.index, shard_no);
            let (next, live) = shard.scan(slot, budget, count - live_seen, self.now_ms, |e| {
                if keep(e) {
                    keys.push(e.key().to_vec());
                }
            });
            live_seen += live;
            let visited = next.unwrap_or(shard.slot_count()).saturating_sub(slot);
            budget = budget.saturating_sub(visited);
            match next {
                Some(s) => slot = s,
                None => {
                    shard_no += 1;
                    slot = 0;
                }
            }
        }
        let next = if shard_no >= SHARDS_PER_DB {
            0
        } else {
            ((shard_no as u64) << 32) | slot as u64
        };
        (next, keys)
    }

    /// A random live key (RANDOMKEY), shards weighted by their size.
    pub fn random_key(&self) -> Option<Vec<u8>> {
        let sizes: Vec<usize> = (0..SHARDS_PER_DB)
            .map(|shard_no| read_lock(self.store, self.index, shard_no).len())
            .collect();
        let total: usize = sizes.iter().sum();
        if total == 0 {
            return None;
        }
        let mut rng = rand::thread_rng();
        // A shard can turn out to hold only expired keys; try others.
        for _ in 0..sizes.len() {
            let mut pick = rand::Rng::gen_range(&mut rng, 0..total);
            let shard_no = sizes
                .iter()
                .position(|&n| {
                    if pick < n {
                        return true;
                    }
                    pick -= n;
                    false
                })
                .expect("pick is below the total");
            let shard = read_lock(self.store, self.index, shard_no);
            if let Some(entry) = shard.random(self.now_ms, &mut rng) {
                return Some(entry.key().to_vec());
            }
        }
        None
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::s;

    #[test]
    fn scan_returns_every_key_present_throughout() {
        let store = Store::new(1);
        let db = store.db(0, 0);
        for i in 0..2000 {
            let k = format!("stable{i}");
            db.write(k.as_bytes()).insert(k.as_bytes(), s("v"), None);
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            let (next, keys) = db.scan(cursor, 10, |_| true);
            seen.extend(keys);
            // Churn between calls: add and delete other keys.
            for j in 0..20 {
                let k = format!("churn{round}-{j}");
                db.write(k.as_bytes()).insert(k.as_bytes(), s("v"), None);
                let old = format!("churn{}-{j}", round / 2);
                db.write(old.as_bytes()).remove(old.as_bytes());
            }
            round += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..2000 {
            assert!(
                seen.contains(format!("stable{i}").as_bytes()),
                "stable{i} missed"
            );
        }
    }

    #[test]
    fn a_view_without_touch_leaves_access_data_alone() {
        let store = Store::new(1);
        store.access.set_policy(crate::access::Policy::AllKeysLfu);
        let db = store.db(0, 0);
        db.write(b"k").insert(b"k", s("v"), None);
        let counter = |db: &Db| {
            let shard = db.read(b"k");
            let entry = shard.peek(b"k").expect("present");
            entry.access().decayed_counter(&store.access, store.clock())
        };
        let before = counter(&db);
        let untouched = store.db(0, 0).without_touch();
        assert!(untouched.read(b"k").get(b"k").is_some());
        assert!(untouched.write(b"k").get_mut(b"k").is_some());
        assert_eq!(counter(&db), before, "reads and writes without touch");
        assert!(db.read(b"k").get(b"k").is_some());
        assert!(counter(&db) > before, "an ordinary read counts");
    }

    #[test]
    fn paused_expiry_leaves_expired_keys_in_place() {
        let store = Store::new(1);
        store.db(0, 0).write(b"k").insert(b"k", s("v"), Some(50));
        store.pause_expiry_until(200);
        let paused = store.db(0, 100);
        assert!(paused.read(b"k").get(b"k").is_none(), "logically expired");
        assert_eq!(paused.stats().keys, 1, "but not reclaimed");
        let resumed = store.db(0, 200);
        assert!(resumed.read(b"k").get(b"k").is_none());
        assert_eq!(resumed.stats().keys, 0, "reclaimed once the pause ended");
    }

    #[test]
    fn read_many_sees_every_key_and_reclaims_expired_ones() {
        let store = Store::new(1);
        let db = store.db(0, 0);
        let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
        for (i, k) in keys.iter().enumerate() {
            let ttl = (i % 3 == 0).then_some(50);
            db.write(k.as_bytes()).insert(k.as_bytes(), s("v"), ttl);
        }
        let later = store.db(0, 100);
        let reader = later.read_many(&keys);
        let found = keys
            .iter()
            .filter(|k| reader.get(k.as_bytes()).is_some())
            .count();
        assert_eq!(found, 200);
        drop(reader);
        assert_eq!(later.stats().keys, 200);
    }

    #[test]
    fn stats_count_ttls_and_average() {
        let store = Store::new(1);
        let db = store.db(0, 1_000);
        db.write(b"a").insert(b"a", s("1"), Some(11_000));
        db.write(b"b").insert(b"b", s("1"), Some(21_000));
        db.write(b"c").insert(b"c", s("1"), None);
        assert_eq!(
            db.stats(),
            DbStats {
                keys: 3,
                expires: 2,
                avg_ttl_ms: 15_000
            }
        );
    }

    #[test]
    fn db_stats_do_not_wait_for_a_writer() {
        let store = std::sync::Arc::new(Store::new(1));
        for i in 0..100 {
            let k = format!("k{i}");
            store
                .db(0, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s("v"), Some(10_000));
        }
        let held = store.db(0, 0).write(b"k0");
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || tx.send(store.db(0, 0).stats()).unwrap())
        };
        let stats = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("DBSIZE-style stats answered while a shard is write-locked");
        drop(held);
        reader.join().unwrap();
        assert_eq!((stats.keys, stats.expires), (100, 100));
    }

    #[test]
    fn write_many_locks_each_shard_once() {
        let store = Store::new(1);
        let db = store.db(0, 0);
        let keys: Vec<String> = (0..500).map(|i| format!("k{i}")).collect();
        let mut locked = db.write_many(&keys);
        for k in &keys {
            locked
                .shard(k.as_bytes())
                .insert(k.as_bytes(), s("v"), None);
        }
        drop(locked);
        assert_eq!(db.stats().keys, 500);
        assert_eq!(db.keys(b"k1*").len(), 111);
    }

    #[test]
    fn a_shard_mask_lists_its_shards_in_lock_order_and_places_each() {
        let mask = ShardMask(1 << 3 | 1 << 17 | 1 << 63);
        assert_eq!(mask.iter().collect::<Vec<_>>(), [3, 17, 63]);
        assert_eq!([3, 17, 63].map(|i| mask.position(i)), [0, 1, 2]);
        assert_eq!(ShardMask(0).iter().count(), 0);
        let all: Vec<usize> = ShardMask::ALL.iter().collect();
        assert_eq!(all, (0..SHARDS_PER_DB).collect::<Vec<_>>());
        assert_eq!(
            ShardMask::ALL.position(SHARDS_PER_DB - 1),
            SHARDS_PER_DB - 1
        );
    }

    #[test]
    #[should_panic(expected = "key's shard was not locked")]
    fn a_shard_outside_the_mask_has_no_place() {
        ShardMask(1 << 3).position(4);
    }
}
