//! The keyspace: databases split into shards, each behind its own lock.
//!
//! A key's shard is chosen from bits of its hash that the shard's own index
//! does not use, so every shard's table stays evenly spread. A command locks
//! only the shards of the keys it touches: GET and SET on different keys
//! run in parallel on different cores and never meet a global lock.
//!
//! This module holds the [`Store`] itself (its databases, byte accounting
//! and key events); the rest is one concern per file:
//!
//! - `db`: [`Db`], one database at one instant, the API commands call.
//! - `guards`: the shard guards `Db` hands out ([`ReadShard`],
//!   [`WriteShard`], [`MultiWrite`]) and what they do on release.
//! - `locking`: how shard locks are taken and the order that keeps them
//!   free of deadlock, transactions included; values are never dropped
//!   while a lock is held.
//! - `counts`: each shard's counts as of its last write, which aggregate
//!   readers use without locking.
//! - `evict`: choosing the key to evict under the maxmemory policy.
//! - `expire`: the active expiry pass and its lag.
//! - `snapshot`: a snapshot's instant and the saver's steps.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use foldhash::fast::RandomState;
use parking_lot::{Mutex, RwLock};

use crate::access::{AccessConfig, Clock};
use crate::defrag::{DefragCursor, DefragStep, Relocate};
use crate::expiry::LagWindow;
use crate::key::{AsKey, Key};
use crate::shard::{Shard, SlotCounter};

mod counts;
mod db;
mod evict;
mod expire;
mod guards;
mod locking;
mod snapshot;

use counts::ShardCounts;
pub use db::{Db, DbMemory, DbStats};
pub use guards::{Lookup, MultiWrite, ReadShard, Vacant, WriteAcross, WriteShard};
pub use locking::{drop_unlocked, holds_a_lock, Held, ShardSet, ShardsLocked};
pub use snapshot::DbSize;

/// Shards per database. A power of two well above the core count, so two
/// busy keys rarely share a lock; at most 64, one bit each in a reader's
/// record of shards holding expired keys and in a transaction's record of
/// shards held.
pub const SHARDS_PER_DB: usize = 64;

/// A key leaving the store by itself, or created, for keyspace
/// notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyEvent {
    /// Its TTL ran out.
    Expired,
    /// The maxmemory policy chose it.
    Evicted,
    /// A write created it (reported only while
    /// [`Store::set_report_new_keys`] asks for it).
    New,
}

/// What the store calls for each [`KeyEvent`]: event, database, key.
pub type KeyEventHook = Box<dyn Fn(KeyEvent, usize, &[u8]) + Send + Sync>;

/// What the store hands an expired entry that a reader or writer met and
/// removed, once the entry's shard is released (the server frees it in the
/// background or in place, as `lazyfree-lazy-expire` says).
pub type FreeHook = Box<dyn Fn(crate::entry::Entry) + Send + Sync>;

/// What the store calls when a write changed the keyspace (see
/// [`Store::set_write_hook`]).
pub type WriteHook = Box<dyn Fn() + Send + Sync>;

/// Holds the hooks; its own type so the store stays `Debug`.
#[derive(Default)]
struct KeyEvents {
    notify: std::sync::OnceLock<KeyEventHook>,
    free_expired: std::sync::OnceLock<FreeHook>,
    wrote: std::sync::OnceLock<WriteHook>,
}

impl std::fmt::Debug for KeyEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEvents")
            .field("notify", &self.notify.get().is_some())
            .field("free_expired", &self.free_expired.get().is_some())
            .finish()
    }
}

/// Every database of the server.
#[derive(Debug)]
pub struct Store {
    dbs: Box<[Box<[RwLock<Shard>]>]>,
    /// Each shard's key and TTL counts as of its last write, beside `dbs`.
    counts: Box<[Box<[ShardCounts]>]>,
    hasher: RandomState,
    dataset_bytes: AtomicUsize,
    /// The largest [`Shard::table_growth_of_next_insert`] seen after any
    /// write: what one insert may add to the tables, wherever it lands.
    largest_table_growth: AtomicUsize,
    maxmemory: AtomicU64,
    /// Until when (Unix ms) readers leave the expired keys they meet in
    /// place (CLIENT PAUSE): they read as missing but are not reclaimed.
    expiry_paused_until_ms: AtomicU64,
    /// Set while expired keys stay in place regardless of time (see
    /// [`Store::hold_expiry`]).
    expiry_held: AtomicBool,
    evicted_keys: AtomicU64,
    lag: Mutex<LagWindow>,
    key_events: KeyEvents,
    /// Whether inserting a missing key emits [`KeyEvent::New`]: off unless
    /// someone listens, so an insert pays one relaxed load.
    report_new_keys: AtomicBool,
    started: std::time::Instant,
    /// How database 0 counts keys per hash slot, if it does.
    slot_counter: Option<SlotCounter>,
    /// Policy and LFU settings that per-key access tracking follows.
    pub access: AccessConfig,
    /// Thresholds at which collections leave their compact encoding.
    pub encodings: crate::types::EncodingConfig,
}

impl Store {
    /// A store with `databases` empty databases.
    pub fn new(databases: usize) -> Store {
        Store::counting_slots(databases, None)
    }

    /// A store whose database 0 counts its keys per hash slot with
    /// `slot_counter` (cluster mode, which serves database 0 only).
    pub fn counting_slots(databases: usize, slot_counter: Option<SlotCounter>) -> Store {
        let hasher = RandomState::default();
        let dbs = (0..databases)
            .map(|db| {
                (0..SHARDS_PER_DB)
                    .map(|_| {
                        RwLock::new(Shard::counting_slots(
                            hasher,
                            slot_counter.filter(|_| db == 0),
                        ))
                    })
                    .collect()
            })
            .collect();
        let counts = (0..databases)
            .map(|_| (0..SHARDS_PER_DB).map(|_| ShardCounts::default()).collect())
            .collect();
        Store {
            dbs,
            counts,
            hasher,
            dataset_bytes: AtomicUsize::new(0),
            largest_table_growth: AtomicUsize::new(0),
            maxmemory: AtomicU64::new(0),
            expiry_paused_until_ms: AtomicU64::new(0),
            expiry_held: AtomicBool::new(false),
            evicted_keys: AtomicU64::new(0),
            lag: Mutex::new(LagWindow::default()),
            key_events: KeyEvents::default(),
            report_new_keys: AtomicBool::new(false),
            started: std::time::Instant::now(),
            slot_counter,
            access: AccessConfig::default(),
            encodings: crate::types::EncodingConfig::default(),
        }
    }

    /// Leaves expired keys that readers meet in place until `until_ms`
    /// (0: from now on reclaims them again), as Redis does while clients
    /// are paused.
    pub fn pause_expiry_until(&self, until_ms: u64) {
        self.expiry_paused_until_ms
            .store(until_ms, Ordering::Relaxed);
    }

    /// Leaves expired keys in place for as long as `held` (a replica,
    /// whose keys go only when its primary's DEL arrives, as in Redis).
    pub fn hold_expiry(&self, held: bool) {
        self.expiry_held.store(held, Ordering::Relaxed);
    }

    /// True if expired keys are left in place at `now_ms`.
    pub fn expiry_paused(&self, now_ms: u64) -> bool {
        self.expiry_held.load(Ordering::Relaxed)
            || now_ms < self.expiry_paused_until_ms.load(Ordering::Relaxed)
    }

    /// Loads ahead what looking up each of `keys` in database `db` will
    /// read (see `Shard::prefetch_lookups`): for the requests a connection
    /// runs next, whose cache misses then overlap. A hint must never wait,
    /// so a shard whose read lock is not free at once is passed over (this
    /// thread's transaction holding it, another thread writing to it); the
    /// locks are held only while the loads are asked for.
    pub fn prefetch<'k>(&self, db: usize, keys: impl IntoIterator<Item = &'k [u8]>) {
        const AT_ONCE: usize = 16;
        let Some(shards) = self.dbs.get(db) else {
            return;
        };
        let mut locked: [Option<_>; AT_ONCE] = std::array::from_fn(|_| None);
        let mut taken = 0;
        for key in keys.into_iter().take(AT_ONCE) {
            let key = Key::new(key, &self.hasher);
            if let Some(shard) = shards[self.shard_index(key)].try_read() {
                locked[taken] = Some((shard, key));
                taken += 1;
            }
        }
        let lookups = locked[..taken].iter().flatten();
        Shard::prefetch_lookups(lookups.map(|(shard, key)| (&**shard, *key)));
    }

    /// Loads ahead what finding each of `members` in the hash, set or
    /// sorted set at `key` will read: for a pipeline of commands on one
    /// large collection (HSET, SADD, ZADD of a key with 100,000 members),
    /// whose key is already in cache but whose members are each a few
    /// cache misses away. A hint, as [`Store::prefetch`]: a shard whose
    /// read lock is not free at once is passed over.
    pub fn prefetch_members<'m>(
        &self,
        db: usize,
        key: &[u8],
        members: impl IntoIterator<Item = &'m [u8]>,
    ) {
        let Some(shard) = self
            .dbs
            .get(db)
            .and_then(|s| s[self.shard_index(key)].try_read())
        else {
            return;
        };
        if let Some(entry) = shard.get_even_expired(key) {
            let value = entry.value();
            for member in members {
                value.prefetch_member(member);
            }
        }
    }

    /// One step of active defragmentation (see `crate::defrag`): offers the
    /// entries of up to `budget` slots from `cursor` on to `mover`, under
    /// one shard's write lock at a time, and moves `cursor` past them. A
    /// step ends at the end of a shard, so a lock is held for `budget`
    /// slots at most.
    pub fn defrag_step(
        &self,
        cursor: &mut DefragCursor,
        budget: usize,
        mover: &mut dyn Relocate,
    ) -> DefragStep {
        if cursor.db >= self.dbs.len() || cursor.shard >= SHARDS_PER_DB {
            *cursor = DefragCursor::default();
        }
        let mut shard = self.dbs[cursor.db][cursor.shard].write();
        let (moved, kept, next) = shard.relocate_entries(cursor.slot, budget, mover);
        drop(shard);
        let mut pass_done = false;
        match next {
            Some(slot) => cursor.slot = slot,
            None => {
                cursor.slot = 0;
                cursor.shard += 1;
                if cursor.shard == SHARDS_PER_DB {
                    cursor.shard = 0;
                    cursor.db += 1;
                    if cursor.db == self.dbs.len() {
                        cursor.db = 0;
                        pass_done = true;
                    }
                }
            }
        }
        DefragStep {
            moved,
            kept,
            pass_done,
        }
    }

    /// How many databases there are (the `databases` setting).
    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Database `index` as seen at `now_ms`. Panics on an index the caller
    /// did not check against [`Store::databases`].
    pub fn db(&self, index: usize, now_ms: u64) -> Db<'_> {
        self.db_at(index, now_ms, self.clock())
    }

    /// [`Store::db`] with the access clock already read (see
    /// [`Store::clock_at`]): a caller that has read the monotonic clock
    /// for its own purposes need not have the store read it again.
    pub fn db_at(&self, index: usize, now_ms: u64, clock: Clock) -> Db<'_> {
        Db {
            store: self,
            index,
            counts: &self.counts[index],
            now_ms,
            clock,
            touch: true,
        }
    }

    /// Swaps the contents of databases `a` and `b` (SWAPDB), atomically:
    /// every shard of both is write-locked, the lower database's first (the
    /// global order, see `locking`), and each pair of shards swaps what it
    /// holds. A key stays in the same shard index in every database, so
    /// the pairs line up. Watchers stay with their database and are marked
    /// when their key exists in either (see [`Shard::swap_contents`]); the
    /// guards publish each shard's new counts when released.
    pub fn swap_dbs(&self, a: usize, b: usize, now_ms: u64) {
        if a == b {
            return;
        }
        let (low, high) = (self.db(a.min(b), now_ms), self.db(a.max(b), now_ms));
        let mut lows: Vec<WriteShard> = (0..SHARDS_PER_DB).map(|i| low.guard(i)).collect();
        let mut highs: Vec<WriteShard> = (0..SHARDS_PER_DB).map(|i| high.guard(i)).collect();
        for (low, high) in lows.iter_mut().zip(highs.iter_mut()) {
            low.guard.swap_contents(&mut high.guard);
        }
    }

    /// Bytes attributable to stored data in all databases. Maintained on
    /// every change, so reading it is one atomic load.
    pub fn dataset_bytes(&self) -> usize {
        self.dataset_bytes.load(Ordering::Relaxed)
    }

    /// The most one insert may add to the shards' tables (a new chunk of
    /// slots, an index doubling), over and above its key and value: a
    /// high-water mark, so an upper bound.
    pub fn largest_table_growth(&self) -> usize {
        self.largest_table_growth.load(Ordering::Relaxed)
    }

    /// Sets what is called for every expired or evicted key, whichever path
    /// removes it (the server publishes keyspace notifications from it).
    /// Only the first hook set is kept.
    pub fn set_key_event_hook(&self, hook: KeyEventHook) {
        let _ = self.key_events.notify.set(hook);
    }

    /// Whether creating a key emits [`KeyEvent::New`] through the key
    /// event hook (Redis's `new` keyspace notification).
    pub fn set_report_new_keys(&self, report: bool) {
        self.report_new_keys.store(report, Ordering::Relaxed);
    }

    /// Sets where expired entries that readers and writers remove go, once
    /// their shard is released; without it they are dropped there. Only the
    /// first hook set is kept.
    pub fn set_free_expired_hook(&self, hook: FreeHook) {
        let _ = self.key_events.free_expired.set(hook);
    }

    /// Frees an expired entry a reader or writer removed, through the hook.
    fn free_expired(&self, entry: crate::entry::Entry) {
        match self.key_events.free_expired.get() {
            Some(hook) => hook(entry),
            None => locking::drop_unlocked(entry),
        }
    }

    /// An empty shard for database `db`, counting slots as its others do.
    fn empty_shard(&self, db: usize) -> Shard {
        Shard::counting_slots(self.hasher, self.slot_counter.filter(|_| db == 0))
    }

    /// The shard of every database that holds `key`.
    fn shard_index<'k>(&self, key: impl AsKey<'k>) -> usize {
        // Bits 32.. of the hash: the shard's index uses the low bits for
        // bucket positions and the top 7 for its tags.
        ((key.hashed(&self.hasher).hash() >> 32) as usize) % SHARDS_PER_DB
    }

    /// Sets the hook called when a write guard that changed a key is
    /// released, while its shard locks (all of them, for several taken
    /// together or a transaction's) are still held, and after the key
    /// events of that write. Two writes to one key thus reach the hook in
    /// the order they ran: the server records its replication stream there.
    /// Key events are also emitted under the lock of their key's shard.
    /// Guards released together call it once each, all after every key
    /// event: the hook records a write once.
    pub fn set_write_hook(&self, hook: WriteHook) {
        let _ = self.key_events.wrote.set(hook);
    }

    fn wrote(&self) {
        if let Some(hook) = self.key_events.wrote.get() {
            hook();
        }
    }

    fn emit(&self, event: KeyEvent, db: usize, key: &[u8]) {
        if let Some(hook) = self.key_events.notify.get() {
            hook(event, db, key);
        }
    }

    /// The access clock now: microseconds since the store started, from
    /// the monotonic clock.
    pub fn clock(&self) -> Clock {
        self.clock_at(std::time::Instant::now())
    }

    /// The access clock at `at`, a reading of the monotonic clock.
    pub fn clock_at(&self, at: std::time::Instant) -> Clock {
        Clock {
            micros: at.saturating_duration_since(self.started).as_micros() as u64,
        }
    }
}

/// A string value, for tests.
#[cfg(test)]
pub(crate) fn s(v: &str) -> crate::value::Value {
    crate::value::Value::Str(crate::value::Str::from_bytes(v.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Multi-key guards load their keys' lookups ahead (see
    /// `Shard::prefetch_lookups`), past one batch of them, over present
    /// keys, absent ones and empty shards alike; lookups then answer as
    /// without it.
    #[test]
    fn multi_key_guards_find_what_single_lookups_find() {
        let store = Store::new(1);
        let db = store.db(0, 0);
        let keys: Vec<String> = (0..40).map(|i| format!("key:{i}")).collect();
        for key in keys.iter().step_by(2) {
            db.write(key.as_bytes())
                .insert(key.as_bytes(), s(key), None);
        }
        let read = db.read_many(&keys);
        for (i, key) in keys.iter().enumerate() {
            let found = read.get(key.as_bytes()).map(|e| e.value().to_value());
            assert_eq!(found, (i % 2 == 0).then(|| s(key)), "{key}");
        }
        drop(read);
        let mut write = db.write_many(&keys);
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(write.peek(key.as_bytes()).is_some(), i % 2 == 0, "{key}");
            write
                .shard(key.as_bytes())
                .insert(key.as_bytes(), s("new"), None);
        }
        drop(write);
        assert!(keys
            .iter()
            .all(|k| db.read(k.as_bytes()).get(k.as_bytes()).is_some()));
    }

    /// Loading members ahead is a hint: over a large hash (a table), a
    /// small set (one buffer), a string, an absent key and a database that
    /// does not exist, it changes nothing lookups then see.
    #[test]
    fn loading_members_ahead_changes_nothing() {
        use crate::types::{Hash, Limits, Set};
        use crate::value::Value;
        let store = Store::new(1);
        let db = store.db(0, 0);
        let limits = Limits::default();
        let mut hash = Hash::default();
        for i in 0..1000 {
            hash.set(format!("f{i}").as_bytes(), b"v", &limits);
        }
        assert_eq!(hash.encoding(), "hashtable");
        let mut set = Set::default();
        set.insert(b"m", &limits);
        db.write(b"h").insert(b"h", Value::Hash(hash), None);
        db.write(b"s").insert(b"s", Value::Set(Box::new(set)), None);
        db.write(b"k").insert(b"k", s("v"), None);
        let members: [&[u8]; 3] = [b"f1", b"m", b"absent"];
        for key in [&b"h"[..], b"s", b"k", b"absent"] {
            store.prefetch_members(0, key, members);
            store.prefetch_members(7, key, members);
        }
        let read = db.read(b"h");
        let found = read.get(b"h").map(|e| e.value().to_value());
        let Some(Value::Hash(hash)) = found else {
            panic!("the hash is still there: {found:?}");
        };
        assert_eq!((hash.len(), hash.get(b"f1")), (1000, Some(&b"v"[..])));
    }

    /// Moves every block it is offered if `moving`, with the global
    /// allocator, and counts the blocks offered and freed.
    struct Mover {
        moving: bool,
        offered: usize,
        freed: usize,
    }

    // SAFETY: blocks come from and go back to the global allocator.
    unsafe impl Relocate for Mover {
        fn should_move(&mut self, _block: std::ptr::NonNull<u8>) -> bool {
            self.offered += 1;
            self.moving
        }

        fn allocate(&mut self, layout: std::alloc::Layout) -> Option<std::ptr::NonNull<u8>> {
            // SAFETY: `move_block` asks for no zero-sized block.
            std::ptr::NonNull::new(unsafe { std::alloc::alloc(layout) })
        }

        unsafe fn free(&mut self, block: std::ptr::NonNull<u8>, layout: std::alloc::Layout) {
            self.freed += 1;
            // SAFETY: the caller's contract.
            unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
        }
    }

    /// A defragmentation pass moves every block a key owns directly (its
    /// entry; a boxed value's box and buffer) without changing what any
    /// key holds or what the store counts, over every database and shard,
    /// small steps at a time; a pass that moves nothing offers the same.
    #[test]
    fn defragmentation_moves_blocks_and_changes_nothing_else() {
        use crate::types::{End, Hash, IntSet, Limits, List, Set, ZSet};
        use crate::value::{Str, Value};
        let store = Store::new(2);
        let limits = Limits::default();
        // Per key: its entry, then what a boxed value owns directly.
        let mut blocks_per_pass = 0;
        for db_index in 0..2 {
            let db = store.db(db_index, 0);
            for i in 0..600 {
                let key = format!("key:{i}");
                let (value, blocks) = match i % 6 {
                    0 => (s(&format!("value {i}")), 1),
                    1 => (s(&i.to_string()), 1),
                    2 => {
                        let mut hash = Hash::default();
                        hash.set(b"field", key.as_bytes(), &limits);
                        (Value::Hash(hash), 3)
                    }
                    3 => {
                        let mut set = Set::Ints(IntSet::default());
                        set.insert(i.to_string().as_bytes(), &limits);
                        (Value::Set(Box::new(set)), 4)
                    }
                    4 => {
                        let mut zset = ZSet::default();
                        zset.insert(key.as_bytes(), i as f64, &limits);
                        (Value::ZSet(Box::new(zset)), 4)
                    }
                    _ => {
                        let mut list = List::default();
                        list.push(End::Right, key.as_bytes(), &limits);
                        let grown = Str::Growable(format!("grown {i}").into_bytes());
                        match i % 12 {
                            5 => (Value::List(list), 3),
                            _ => (Value::Str(grown), 3),
                        }
                    }
                };
                blocks_per_pass += blocks;
                let deadline = (i % 5 == 0).then_some(1_000_000 + i);
                db.write(key.as_bytes())
                    .insert(key.as_bytes(), value, deadline);
            }
        }
        let read_all = |store: &Store| -> Vec<_> {
            (0..2)
                .flat_map(|d| (0..600).map(move |i| (d, format!("key:{i}"))))
                .map(|(d, key)| {
                    let db = store.db(d, 0);
                    let read = db.read(key.as_bytes());
                    let entry = read.get(key.as_bytes()).expect("present");
                    (entry.value().to_value(), entry.expire_at_ms())
                })
                .collect()
        };
        let (before, bytes_before) = (read_all(&store), store.dataset_bytes());
        for moving in [true, false] {
            let mut cursor = DefragCursor::default();
            let mut mover = Mover {
                moving,
                offered: 0,
                freed: 0,
            };
            let (mut moved, mut kept, mut steps) = (0, 0, 0);
            loop {
                let step = store.defrag_step(&mut cursor, 7, &mut mover);
                (moved, kept, steps) = (moved + step.moved, kept + step.kept, steps + 1);
                if step.pass_done {
                    break;
                }
            }
            let keys = if moving { (1200, 0) } else { (0, 1200) };
            assert_eq!((moved, kept), keys, "every key offered once");
            assert_eq!(mover.offered, blocks_per_pass, "every block offered");
            assert_eq!(mover.freed, if moving { blocks_per_pass } else { 0 });
            assert!(steps > 2 * SHARDS_PER_DB, "steps end at each shard's end");
            assert_eq!(cursor, DefragCursor::default(), "back at the start");
            assert_eq!(read_all(&store), before);
            assert_eq!(store.dataset_bytes(), bytes_before);
        }
    }

    #[test]
    fn dataset_bytes_follow_every_change() {
        let store = Store::new(2);
        let db = store.db(0, 0);
        db.write(b"a").insert(b"a", s("hello"), None);
        let one = store.dataset_bytes();
        assert!(one > 5);
        db.write(b"a").insert(b"a", s(&"x".repeat(1000)), None);
        assert!(store.dataset_bytes() > one + 900);
        db.write(b"a").remove(b"a");
        let shards_only = store.dataset_bytes();
        assert!(
            shards_only < one,
            "key and value bytes are gone: {shards_only} vs {one}"
        );
        db.flush();
        assert_eq!(store.dataset_bytes(), 0);
    }

    /// TTLs set and cleared in random order move the dataset figure by
    /// what the deadline index really holds, and leave no drift.
    #[test]
    fn dataset_bytes_return_to_start_after_ttls_come_and_go() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(3);
        let store = Store::new(2);
        let db = store.db(0, 0);
        let keys: Vec<String> = (0..3_000).map(|i| format!("k{i}")).collect();
        for key in &keys {
            db.write(key.as_bytes())
                .insert(key.as_bytes(), s("v"), None);
        }
        let start = store.dataset_bytes();
        let shards = || -> usize { store.dbs[0].iter().map(|s| s.read().used_bytes()).sum() };
        let ttl = |rng: &mut StdRng| Some(rng.gen_range(1_000..50_000_000));
        for _ in 0..40_000 {
            let key = keys[rng.gen_range(0..keys.len())].as_bytes();
            let at = if rng.gen_bool(0.5) {
                ttl(&mut rng)
            } else {
                None
            };
            db.write(key).get_mut(key).unwrap().set_expire_at_ms(at);
        }
        assert!(store.dataset_bytes() > start);
        assert_eq!(store.dataset_bytes(), shards());
        for key in &keys {
            let key = key.as_bytes();
            db.write(key).get_mut(key).unwrap().set_expire_at_ms(None);
        }
        assert_eq!(store.dataset_bytes(), start);
        assert_eq!(store.dataset_bytes(), shards());
    }

    #[test]
    fn accounting_returns_to_baseline_after_a_million_keys() {
        let store = Store::new(2);
        assert_eq!(store.dataset_bytes(), 0);
        let key = |i: usize| format!("key:{i}:{}", "k".repeat(i % 40));
        for i in 0..1_000_000 {
            let k = key(i);
            let value = "v".repeat(i % 300);
            let ttl = (i % 3 == 0).then_some(1_000_000);
            store
                .db(i % 2, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s(&value), ttl);
        }
        let full = store.dataset_bytes();
        assert!(full > 150_000_000, "a million keys of 0-300 bytes: {full}");
        for i in (0..1_000_000).rev() {
            let k = key(i);
            assert!(store
                .db(i % 2, 0)
                .write(k.as_bytes())
                .remove(k.as_bytes())
                .is_some());
            if i == 100_000 {
                // With a tenth left, tables have shrunk with the data.
                assert!(
                    store.dataset_bytes() < full / 5,
                    "{} of {full}",
                    store.dataset_bytes()
                );
            }
        }
        assert_eq!(store.dataset_bytes(), 0);
    }

    #[test]
    fn swapping_databases_moves_keys_counts_and_marks_watchers() {
        let store = Store::new(3);
        let (zero, one) = (store.db(0, 0), store.db(1, 0));
        zero.write(b"a").insert(b"a", s("in0"), Some(1_000));
        one.write(b"b").insert(b"b", s("in1"), None);
        let (watch_a, watch_b, watch_none) = (
            crate::WatchFlag::default(),
            crate::WatchFlag::default(),
            crate::WatchFlag::default(),
        );
        zero.write(b"a").watch(b"a", &watch_a);
        zero.write(b"b").watch(b"b", &watch_b);
        zero.write(b"c").watch(b"c", &watch_none);
        let bytes = store.dataset_bytes();
        store.swap_dbs(0, 1, 0);
        let value = |db: &Db, k: &[u8]| db.read(k).get(k).map(|e| e.value().to_value());
        assert_eq!(value(&zero, b"b"), Some(s("in1")));
        assert_eq!(value(&one, b"a"), Some(s("in0")));
        assert_eq!(value(&zero, b"a"), None);
        assert_eq!((zero.stats().keys, zero.stats().expires), (1, 0));
        assert_eq!((one.stats().keys, one.stats().expires), (1, 1));
        assert_eq!(store.dataset_bytes(), bytes);
        let marked = |f: &crate::WatchFlag| f.load(std::sync::atomic::Ordering::Relaxed);
        assert!(marked(&watch_a) && marked(&watch_b) && !marked(&watch_none));
        // Watchers stay with database 0: a write there still marks them.
        watch_none.store(false, std::sync::atomic::Ordering::Relaxed);
        zero.write(b"c").insert(b"c", s("v"), None);
        assert!(marked(&watch_none));
        store.swap_dbs(2, 2, 0);
        assert_eq!(store.db(2, 0).stats().keys, 0);
    }

    #[test]
    fn a_key_moves_across_databases_under_both_locks() {
        let store = Store::new(2);
        let (zero, one) = (store.db(0, 0), store.db(1, 0));
        zero.write(b"k").insert(b"k", s("v"), Some(5_000));
        for (from, to) in [(zero, 1), (one, 0), (zero, 1)] {
            let mut both = from.write_across(to, b"k");
            let entry = both.here.remove(b"k").unwrap();
            assert!(both.there.insert_renamed(b"k", entry).is_none());
        }
        assert!(zero.read(b"k").get(b"k").is_none());
        let moved = one.read(b"k");
        assert_eq!(moved.get(b"k").unwrap().expire_at_ms(), Some(5_000));
    }

    #[test]
    fn every_removal_path_reports_its_key_event() {
        let store = Store::new(1);
        let events = std::sync::Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        store.set_key_event_hook(Box::new(move |event, db, key| {
            seen.lock().push((event, db, key.to_vec()))
        }));
        for k in ["active", "read", "written"] {
            store
                .db(0, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s("v"), Some(10));
        }
        store.db(0, 0).write(b"kept").insert(b"kept", s("v"), None);
        let later = store.db(0, 20);
        assert!(later.read(b"read").get(b"read").is_none());
        assert!(later.write(b"written").get_mut(b"written").is_none());
        store.reclaim_expired(20, 100, || (), drop);
        store.access.set_policy(crate::Policy::AllKeysRandom);
        assert!(store.evict_one(20, drop));
        let mut got = events.lock().clone();
        got.sort();
        let expired = |k: &str| (KeyEvent::Expired, 0, k.as_bytes().to_vec());
        assert_eq!(
            &got[..3],
            &[expired("active"), expired("read"), expired("written")]
        );
        assert_eq!(got[3], (KeyEvent::Evicted, 0, b"kept".to_vec()));
    }

    #[test]
    fn creating_a_key_reports_it_new_only_when_asked() {
        let store = Store::new(2);
        let events = std::sync::Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        store.set_key_event_hook(Box::new(move |event, db, key| {
            seen.lock().push((event, db, key.to_vec()))
        }));
        let zero = store.db(0, 0);
        zero.write(b"quiet").insert(b"quiet", s("v"), None);
        store.set_report_new_keys(true);
        zero.write(b"k").insert(b"k", s("v"), Some(10));
        zero.write(b"k").insert(b"k", s("replaced"), None);
        let mut both = zero.write_across(1, b"k");
        let entry = both.here.remove(b"k").unwrap();
        both.there.insert_renamed(b"k", entry);
        drop(both);
        let new = |db, k: &str| (KeyEvent::New, db, k.as_bytes().to_vec());
        assert_eq!(*events.lock(), [new(0, "k"), new(1, "k")]);
    }
    #[test]
    fn a_write_is_reported_once_its_expired_keys_are_and_only_if_it_changed_something() {
        let store = Store::new(2);
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let events = seen.clone();
        store.set_key_event_hook(Box::new(move |event, db, key| {
            events
                .lock()
                .push(format!("{event:?} {db} {}", String::from_utf8_lossy(key)));
        }));
        let writes = seen.clone();
        store.set_write_hook(Box::new(move || writes.lock().push("wrote".to_string())));
        let (zero, one) = (store.db(0, 0), store.db(1, 0));
        let keys: Vec<String> = (0..200).map(|i| format!("k{i}")).collect();
        for key in &keys {
            zero.write(key.as_bytes())
                .insert(key.as_bytes(), s("old"), Some(10));
        }
        one.write(b"m").insert(b"m", s("old"), Some(10));
        zero.write(b"m").insert(b"m", s("v"), None);
        seen.lock().clear();
        let later = store.db(0, 100);
        {
            let mut all = later.write_many(&keys);
            for key in &keys {
                all.shard(key.as_bytes())
                    .insert(key.as_bytes(), s("new"), None);
            }
        }
        let log = std::mem::take(&mut *seen.lock());
        let first_write = log.iter().position(|e| e == "wrote");
        assert_eq!(first_write, Some(200), "every expired key first: {log:?}");
        let mut both = later.write_across(1, b"m");
        let entry = both.here.remove(b"m").unwrap();
        both.there.insert_renamed(b"m", entry);
        drop(both);
        assert_eq!(seen.lock()[..2], ["Expired 1 m", "wrote"]);
        seen.lock().clear();
        later.write(b"absent").remove(b"absent");
        assert!(
            seen.lock().is_empty(),
            "a write that changed nothing is not reported"
        );
    }
}
