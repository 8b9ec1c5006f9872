//! The guards [`Db`](super::Db) hands out on locked shards, and what they
//! do when released.
//!
//! [`ReadShard`] sees keys past their deadline as absent and deletes them
//! under the write lock once its read guards are gone. [`WriteShard`]
//! publishes the shard's counts and updates the store's byte total by what
//! the shard gained or lost. [`MultiWrite`] is several write guards taken
//! together; [`Lookup`] and [`Vacant`] serve commands that update a value
//! or create it.

use std::sync::atomic::Ordering;

use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

use super::counts::ShardCounts;
use super::db::ShardMask;
use super::locking::Held;
use super::{Db, KeyEvent, Store};
use crate::access::{Access, Clock};
use crate::entry::Entry;
use crate::key::{AsKey, Key};
use crate::shard::{EntryMut, Shard};
use crate::value::Value;

/// Read guards of one shard, or of several taken together.
pub(super) enum Guards<'a> {
    One(usize, Held<RwLockReadGuard<'a, Shard>>),
    Many(ShardMask, Vec<Held<RwLockReadGuard<'a, Shard>>>),
}

/// Shards locked for reading, seen at one instant.
///
/// A reader that meets an expired key sees it as absent; when the guards
/// are released, the key is deleted under the write lock, as Redis deletes
/// an expired key on access, so reads never keep dead keys in memory. All
/// read guards are released before any write lock is taken, which keeps the
/// locking discipline.
pub struct ReadShard<'a> {
    pub(super) guards: Option<Guards<'a>>,
    pub(super) db: Db<'a>,
    /// Bit `i` set: shard `i` holds an expired key a reader met.
    pub(super) expired_in: std::cell::Cell<u64>,
}

impl ReadShard<'_> {
    /// The locked shard holding `key` and its index. Panics if `key` was not
    /// among the keys the guards were taken for.
    fn shard_of(&self, key: Key) -> (usize, &Shard) {
        match self.guards.as_ref().expect("held until drop") {
            Guards::One(index, guard) => (*index, guard),
            Guards::Many(shards, guards) => {
                let index = self.db.shard_index(key);
                (index, &guards[shards.position(index)])
            }
        }
    }

    fn live<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        let key = key.hashed(&self.db.store.hasher);
        let (index, shard) = self.shard_of(key);
        let entry = shard.get_even_expired(key)?;
        if entry.is_expired(self.db.now_ms) {
            self.expired_in.set(self.expired_in.get() | 1 << index);
            return None;
        }
        Some(entry)
    }

    /// The live entry for `key`, recording the access (LRU/LFU) with a
    /// relaxed atomic store: no write lock is needed to keep recency.
    pub fn get<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        let entry = self.live(key)?;
        let store = self.db.store;
        if self.db.touch {
            entry.access().touch(&store.access, self.db.clock);
        }
        Some(entry)
    }

    /// The live entry for `key`, without recording an access (OBJECT,
    /// TYPE-like introspection that Redis does not count as use).
    pub fn peek<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        self.live(key)
    }
}

impl Drop for ReadShard<'_> {
    fn drop(&mut self) {
        drop(self.guards.take());
        if self.db.store.expiry_paused(self.db.now_ms) {
            return;
        }
        let mut expired_in = self.expired_in.get();
        while expired_in != 0 {
            let index = expired_in.trailing_zeros() as usize;
            expired_in &= expired_in - 1;
            // Earliest deadlines first, so the key just met goes unless a
            // large batch is due ahead of it, which active expiry handles.
            const MAX_RECLAIMED_ON_READ: usize = 64;
            let mut unlinked = Vec::new();
            let mut shard = self.db.guard(index);
            let done =
                shard
                    .guard
                    .reclaim_expired(self.db.now_ms, MAX_RECLAIMED_ON_READ, &mut unlinked);
            // Reported under the lock, so the deletion is recorded before
            // any later write to the key (replication).
            for entry in &unlinked {
                self.db
                    .store
                    .emit(KeyEvent::Expired, self.db.index, entry.key());
            }
            drop(shard);
            for entry in unlinked {
                self.db.store.free_expired(entry);
            }
            self.db.store.record_lag(self.db.now_ms, done);
        }
    }
}

/// A shard locked for writing, seen at one instant. When dropped, the
/// store's dataset byte count is updated by what the shard gained or lost.
pub struct WriteShard<'a> {
    pub(super) guard: Held<RwLockWriteGuard<'a, Shard>>,
    pub(super) counts: &'a ShardCounts,
    pub(super) store: &'a Store,
    pub(super) db: usize,
    pub(super) now_ms: u64,
    /// The access clock at `now_ms`.
    pub(super) clock: Clock,
    pub(super) bytes_before: usize,
    /// The shard's change count when locked (see [`Shard::changes`]).
    pub(super) changes_before: u64,
    /// Its count of new keys when locked (see [`Shard::new_keys`]).
    pub(super) new_keys_before: u64,
    /// See `Db::touch`.
    pub(super) touch: bool,
}

impl<'a> WriteShard<'a> {
    /// The live entry for `key`, without recording an access.
    pub fn peek<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        self.guard.get(key, self.now_ms)
    }

    /// The live entry for `key`, for modification; records the access.
    pub fn get_mut<'k>(&mut self, key: impl AsKey<'k>) -> Option<EntryMut<'_>> {
        let slot = self.guard.live_slot(key, self.now_ms)?;
        Some(self.entry_mut_at(slot))
    }

    /// The entry in `slot` for modification; records the access.
    fn entry_mut_at(&mut self, slot: u32) -> EntryMut<'_> {
        let clock = self.clock;
        let entry = self.guard.entry_mut_at(slot);
        if self.touch {
            entry.entry().access().touch(&self.store.access, clock);
        }
        entry
    }

    /// Sets `key` to `value` with an optional deadline, replacing what was
    /// there. Returns the previous live entry.
    pub fn insert<'k>(
        &mut self,
        key: impl AsKey<'k>,
        value: Value,
        expire_at_ms: Option<u64>,
    ) -> Option<Entry> {
        let key = key.hashed(&self.store.hasher);
        let access = Access::new(&self.store.access, self.clock);
        let entry = Entry::new(key.bytes(), value, expire_at_ms, access);
        self.insert_hashed(entry, key.hash())
    }

    /// [`WriteShard::insert`] of the string `bytes` (SET, MSET), stored
    /// as `Str::from_bytes` would store it but written straight into the
    /// entry: boxing it first cost every SET an allocation and a copy of
    /// the value that the entry then copied again and freed. A live string
    /// of the same block size is written over in place
    /// (`Shard::insert_str`), and then no previous entry is returned.
    pub fn insert_str<'k>(
        &mut self,
        key: impl AsKey<'k>,
        bytes: &[u8],
        expire_at_ms: Option<u64>,
    ) -> Option<Entry> {
        let key = key.hashed(&self.store.hasher);
        let access = Access::new(&self.store.access, self.clock);
        self.report_if_new(key);
        self.guard
            .insert_str(key, bytes, expire_at_ms, access, self.now_ms)
    }

    /// [`WriteShard::insert`] of a key with the history RESTORE or an RDB
    /// file gives it: its idle time or LFU counter (see
    /// [`Access::restore`]).
    pub fn insert_restored(
        &mut self,
        key: &[u8],
        value: Value,
        expire_at_ms: Option<u64>,
        idle_seconds: Option<u64>,
        lfu_counter: Option<u8>,
    ) -> Option<Entry> {
        let clock = self.clock;
        let access = Access::new(&self.store.access, clock);
        access.restore(&self.store.access, clock, idle_seconds, lfu_counter);
        self.insert_entry(Entry::new(key, value, expire_at_ms, access))
    }

    /// Inserts `entry`, reporting a key that did not exist as new (under
    /// this lock, so nobody sees the report before the key).
    fn insert_entry(&mut self, entry: Entry) -> Option<Entry> {
        let hash = Key::new(entry.key(), &self.store.hasher).hash();
        self.insert_hashed(entry, hash)
    }

    /// [`WriteShard::insert_entry`] of an entry whose key's hash is `hash`.
    fn insert_hashed(&mut self, entry: Entry, hash: u64) -> Option<Entry> {
        self.report_if_new(Key::with_hash(entry.key(), hash));
        self.guard.insert_hashed(entry, hash, self.now_ms)
    }

    /// Reports `key` as new if it does not exist and new keys are
    /// reported; called before inserting it, under this lock, so nobody
    /// sees the report before the key.
    fn report_if_new(&self, key: Key) {
        if self.store.report_new_keys.load(Ordering::Relaxed)
            && self.guard.get(key, self.now_ms).is_none()
        {
            self.store.emit(KeyEvent::New, self.db, key.bytes());
        }
    }

    /// Puts back an entry taken from elsewhere (RENAME), keeping its TTL
    /// and access history but giving it a new key.
    pub fn insert_renamed(&mut self, key: &[u8], old: Entry) -> Option<Entry> {
        let expire = old.expire_at_ms();
        let access = old.access().duplicate();
        let value = old.into_value();
        self.insert_entry(Entry::new(key, value, expire, access))
    }

    /// Marks `flag` when `key` is next written, expired or evicted (WATCH).
    /// A key already expired is reclaimed first: Redis counts the later
    /// deletion of a key that was expired when watched as no change.
    /// Returns whether the key is live.
    pub fn watch(&mut self, key: &[u8], flag: &crate::shard::WatchFlag) -> bool {
        let now_ms = self.now_ms;
        if self
            .guard
            .get_even_expired(key)
            .is_some_and(|e| e.is_expired(now_ms))
        {
            self.guard.remove(key, now_ms);
        }
        self.guard.watch(key, flag);
        self.peek(key).is_some()
    }

    /// Stops marking `flag` for `key` (UNWATCH, EXEC, disconnect).
    pub fn unwatch(&mut self, key: &[u8], flag: &crate::shard::WatchFlag) {
        self.guard.unwatch(key, flag);
    }

    /// Deletes `key`; returns its entry if it was live.
    pub fn remove<'k>(&mut self, key: impl AsKey<'k>) -> Option<Entry> {
        self.guard.remove(key, self.now_ms)
    }

    /// The live entry for `key` to modify, or a place to create it: for
    /// commands that update a value or create it (APPEND, INCR, ...).
    pub fn entry<'s, 'k: 's>(&'s mut self, key: impl AsKey<'k>) -> Lookup<'s, 'a> {
        let key = key.hashed(&self.store.hasher);
        match self.guard.live_slot(key, self.now_ms) {
            Some(slot) => Lookup::Found(self.entry_mut_at(slot)),
            None => Lookup::Missing(Vacant { shard: self, key }),
        }
    }
}

/// What [`WriteShard::entry`] found.
pub enum Lookup<'s, 'a> {
    /// The key exists.
    Found(EntryMut<'s>),
    /// The key does not exist (or has expired).
    Missing(Vacant<'s, 'a>),
}

/// A missing key, ready to be created.
pub struct Vacant<'s, 'a> {
    shard: &'s mut WriteShard<'a>,
    key: Key<'s>,
}

impl Vacant<'_, '_> {
    /// Creates the key with `value` and an optional deadline.
    pub fn insert(self, value: Value, expire_at_ms: Option<u64>) {
        self.shard.insert(self.key, value, expire_at_ms);
    }

    /// Creates the key with the string `bytes` (see
    /// [`WriteShard::insert_str`]).
    pub fn insert_str(self, bytes: &[u8], expire_at_ms: Option<u64>) {
        self.shard.insert_str(self.key, bytes, expire_at_ms);
    }
}

impl WriteShard<'_> {
    /// Reports the expired keys this write removed on its way, under the
    /// lock: the free hook queues them or leaves them to `drop_unlocked`,
    /// which drops them once the guard is released.
    fn report_expired(&mut self) {
        for entry in self.guard.take_expired_by_writers() {
            self.store.emit(KeyEvent::Expired, self.db, entry.key());
            self.store.free_expired(entry);
        }
    }

    fn changed(&self) -> bool {
        self.guard.changes() != self.changes_before
    }
}

impl Drop for WriteShard<'_> {
    fn drop(&mut self) {
        // Expired keys first: their deletion comes before the write that
        // met them, wherever the write is recorded.
        self.report_expired();
        if self.changed() {
            self.store.wrote();
        }
        let after = self.counts.publish(&self.guard, self.now_ms);
        // Only a new key can have raised the tables' next growth: an
        // overwrite, an INCR or a push to a list skips working it out.
        if self.guard.new_keys() != self.new_keys_before {
            let growth = self.guard.table_growth_of_next_insert();
            let largest = &self.store.largest_table_growth;
            if growth > largest.load(Ordering::Relaxed) {
                largest.fetch_max(growth, Ordering::Relaxed);
            }
        }
        if after > self.bytes_before {
            self.store
                .dataset_bytes
                .fetch_add(after - self.bytes_before, Ordering::Relaxed);
        } else if after < self.bytes_before {
            self.store
                .dataset_bytes
                .fetch_sub(self.bytes_before - after, Ordering::Relaxed);
        }
    }
}

/// Several shards locked for writing at once (see [`Db::write_many`]).
pub struct MultiWrite<'a> {
    pub(super) db: Db<'a>,
    /// The shards locked, and their guards in the same order.
    pub(super) shards: ShardMask,
    pub(super) guards: Vec<WriteShard<'a>>,
}

impl<'a> MultiWrite<'a> {
    /// The live entry for `key`, without recording an access. Panics if
    /// `key` was not among the keys the guards were taken for.
    pub fn peek<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        let key = key.hashed(&self.db.store.hasher);
        self.guards[self.shards.position(self.db.shard_index(key))].peek(key)
    }

    /// The locked shard holding `key`. Panics if `key` was not among the
    /// keys the guards were taken for.
    pub fn shard<'k>(&mut self, key: impl AsKey<'k>) -> &mut WriteShard<'a> {
        &mut self.guards[self.shards.position(self.db.shard_index(key))]
    }
}
impl Drop for MultiWrite<'_> {
    fn drop(&mut self) {
        let store = self.db.store;
        report_together(store, self.guards.iter_mut());
    }
}

/// The shard of a key in two databases, locked for writing at once (see
/// [`Db::write_across`]).
pub struct WriteAcross<'a> {
    /// The shard in the database the guard was asked of.
    pub here: WriteShard<'a>,
    /// The shard in the other database.
    pub there: WriteShard<'a>,
}

impl Drop for WriteAcross<'_> {
    fn drop(&mut self) {
        let store = self.here.store;
        report_together(store, [&mut self.here, &mut self.there]);
    }
}

/// For guards released together: reports every shard's expired keys
/// before the write is reported (see [`Store::set_write_hook`]), while
/// every shard is still held; the guards' own drops then find nothing
/// more to report.
fn report_together<'g, 'a: 'g>(
    store: &Store,
    guards: impl IntoIterator<Item = &'g mut WriteShard<'a>>,
) {
    let mut changed = false;
    for guard in guards {
        guard.report_expired();
        changed |= guard.changed();
    }
    if changed {
        store.wrote();
    }
}

#[cfg(test)]
mod tests {
    use crate::keyspace::{s, Store};

    #[test]
    fn readers_delete_expired_keys_they_meet() {
        let store = Store::new(1);
        store.db(0, 0).write(b"k").insert(b"k", s("v"), Some(100));
        let later = store.db(0, 200);
        assert!(later.read(b"k").get(b"k").is_none());
        assert_eq!(store.expired_keys(), 1);
        assert_eq!(later.stats().keys, 0);
        assert_eq!(
            store.dataset_bytes(),
            store.dbs[0].iter().map(|s| s.read().used_bytes()).sum()
        );
    }
}
