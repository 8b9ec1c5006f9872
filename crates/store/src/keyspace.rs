//! The keyspace: databases split into shards, each behind its own lock.
//!
//! A key's shard is chosen from bits of its hash that the shard's own index
//! does not use, so every shard's table stays evenly spread. A command locks
//! only the shards of the keys it touches: GET and SET on different keys
//! run in parallel on different cores and never meet a global lock.
//!
//! Locking discipline (the one rule that keeps this deadlock-free): a thread
//! holds at most one shard guard at a time, except through
//! [`Db::write_many`], which takes every guard it needs at once in ascending
//! shard order. Multi-key commands that must be atomic (MSET, MSETNX,
//! RENAME) use `write_many`; so do FLUSHDB and FLUSHALL.
//!
//! Transactions (EXEC) run their queued commands atomically across shards
//! and databases through [`Store::lock_all`]: it takes every shard's write
//! lock in ascending order (the same order as `write_many`, so it cannot
//! deadlock with it) and marks the calling thread as holding them. While
//! that mark is set, every guard this module hands out on that thread is
//! lent from the locks already held instead of taken (see [`Held`]), so
//! command handlers run unchanged inside EXEC. Other threads simply wait
//! on the shard locks. The normal command path pays one thread-local read
//! per lock and takes no global lock.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use foldhash::fast::RandomState;
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use parking_lot::lock_api::RawRwLock as _;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use rand::Rng as _;

use crate::access::{Access, AccessConfig, Clock, Policy};
use crate::entry::Entry;
use crate::expiry::{LagWindow, Reclaimed};
use crate::shard::{EntryMut, Shard};
use crate::value::Value;

/// Shards per database. A power of two well above the core count, so two
/// busy keys rarely share a lock; at most 64, one bit each in a reader's
/// record of shards holding expired keys.
pub const SHARDS_PER_DB: usize = 64;

thread_local! {
    /// True while this thread holds every shard lock through [`Store::lock_all`].
    static HOLDS_ALL: Cell<bool> = const { Cell::new(false) };
}

/// A shard guard: taken from the lock and released on drop, or, on a
/// thread inside [`Store::lock_all`], lent from the lock already held and
/// left locked on drop.
pub struct Held<G> {
    guard: ManuallyDrop<G>,
    owned: bool,
}

impl<G> Deref for Held<G> {
    type Target = G;
    fn deref(&self) -> &G {
        &self.guard
    }
}

impl<G> DerefMut for Held<G> {
    fn deref_mut(&mut self) -> &mut G {
        &mut self.guard
    }
}

impl<G> Drop for Held<G> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: dropped exactly once, here.
            unsafe { ManuallyDrop::drop(&mut self.guard) }
        }
    }
}

fn read_lock(lock: &RwLock<Shard>) -> Held<RwLockReadGuard<'_, Shard>> {
    if HOLDS_ALL.get() {
        // SAFETY: this thread holds the lock exclusively (lock_all) and the
        // lent guard never unlocks it; handlers never hold a shard's read
        // and write guards together (that would deadlock outside EXEC).
        let guard = unsafe { lock.make_read_guard_unchecked() };
        return Held {
            guard: ManuallyDrop::new(guard),
            owned: false,
        };
    }
    Held {
        guard: ManuallyDrop::new(lock.read()),
        owned: true,
    }
}

fn write_lock(lock: &RwLock<Shard>) -> Held<RwLockWriteGuard<'_, Shard>> {
    if HOLDS_ALL.get() {
        // SAFETY: as in read_lock; at most one guard per shard is alive at
        // a time under the locking discipline.
        let guard = unsafe { lock.make_write_guard_unchecked() };
        return Held {
            guard: ManuallyDrop::new(guard),
            owned: false,
        };
    }
    Held {
        guard: ManuallyDrop::new(lock.write()),
        owned: true,
    }
}

/// Every shard of every database locked by one thread (see
/// [`Store::lock_all`]); unlocked on drop.
pub struct AllLocked<'a> {
    store: &'a Store,
}

impl Drop for AllLocked<'_> {
    fn drop(&mut self) {
        HOLDS_ALL.set(false);
        for lock in self.store.all_shards() {
            // SAFETY: lock_all took every one of these exclusively on this
            // thread and no lent guard unlocks them.
            unsafe { lock.force_unlock_write() };
        }
    }
}

/// A key leaving the store by itself, for keyspace notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyEvent {
    /// Its TTL ran out.
    Expired,
    /// The maxmemory policy chose it.
    Evicted,
}

/// What the store calls for each [`KeyEvent`]: event, database, key.
pub type KeyEventHook = Box<dyn Fn(KeyEvent, usize, &[u8]) + Send + Sync>;

/// Holds the hook; its own type so the store stays `Debug`.
struct KeyEvents(std::sync::OnceLock<KeyEventHook>);

impl std::fmt::Debug for KeyEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "KeyEvents(hooked)"
        } else {
            "KeyEvents"
        })
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
    evicted_keys: AtomicU64,
    lag: Mutex<LagWindow>,
    key_events: KeyEvents,
    started: std::time::Instant,
    /// Policy and LFU settings that per-key access tracking follows.
    pub access: AccessConfig,
    /// Thresholds at which collections leave their compact encoding.
    pub encodings: crate::types::EncodingConfig,
}

/// Greatest common divisor, to find a stride that visits every shard.
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// What one eviction attempt did.
enum Attempt {
    /// This key, from this database, went.
    Evicted(usize, Entry),
    /// Nothing went this time, but a key may next time.
    Retry,
    /// No key qualifies under the policy.
    NothingEligible,
}

impl Store {
    /// A store with `databases` empty databases.
    pub fn new(databases: usize) -> Store {
        let hasher = RandomState::default();
        let dbs = (0..databases)
            .map(|_| {
                (0..SHARDS_PER_DB)
                    .map(|_| RwLock::new(Shard::new(hasher)))
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
            evicted_keys: AtomicU64::new(0),
            lag: Mutex::new(LagWindow::default()),
            key_events: KeyEvents(std::sync::OnceLock::new()),
            started: std::time::Instant::now(),
            access: AccessConfig::default(),
            encodings: crate::types::EncodingConfig::default(),
        }
    }

    /// How many databases there are (the `databases` setting).
    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// Database `index` as seen at `now_ms`. Panics on an index the caller
    /// did not check against [`Store::databases`].
    pub fn db(&self, index: usize, now_ms: u64) -> Db<'_> {
        Db {
            store: self,
            index,
            shards: &self.dbs[index],
            counts: &self.counts[index],
            now_ms,
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
        let _ = self.key_events.0.set(hook);
    }

    fn emit(&self, event: KeyEvent, db: usize, key: &[u8]) {
        if let Some(hook) = self.key_events.0.get() {
            hook(event, db, key);
        }
    }

    /// The dataset budget in bytes; 0 means unlimited.
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// Sets the dataset budget.
    pub fn set_maxmemory(&self, bytes: u64) {
        self.maxmemory.store(bytes, Ordering::Relaxed);
    }

    /// True when stored data exceeds the budget.
    pub fn over_maxmemory(&self) -> bool {
        let max = self.maxmemory();
        max != 0 && self.dataset_bytes() as u64 > max
    }

    /// Keys evicted so far (the `evicted_keys` statistic).
    pub fn evicted_keys(&self) -> u64 {
        self.evicted_keys.load(Ordering::Relaxed)
    }

    /// Evicts one key chosen by the maxmemory policy: S3-FIFO's pick under
    /// `allkeys-s3fifo`, otherwise the best of 5 sampled candidates, as
    /// Redis's `performEvictions` does. The evicted entry goes to `free`,
    /// so the caller decides where a big value is dropped. Returns false
    /// when no key qualifies (noeviction, or a volatile policy with no TTL
    /// left); true when a key went or the next call may find one (another
    /// writer took the chosen key first; S3-FIFO's bounded search moved on).
    pub fn evict_one(&self, now_ms: u64, free: impl FnOnce(Entry)) -> bool {
        let attempt = match self.access.policy() {
            Policy::NoEviction => return false,
            Policy::AllKeysS3Fifo => self.evict_s3fifo(now_ms),
            policy => self.evict_sampled(policy, now_ms),
        };
        match attempt {
            Attempt::Evicted(db_no, entry) => {
                self.evicted_keys.fetch_add(1, Ordering::Relaxed);
                self.emit(KeyEvent::Evicted, db_no, entry.key());
                free(entry);
                true
            }
            Attempt::Retry => true,
            Attempt::NothingEligible => false,
        }
    }

    /// Every non-empty shard (holding keys with a TTL, if `volatile`), as
    /// their last writes published them, in a random order: a walk from a
    /// random shard with a random stride coprime to the shard count, which
    /// visits each shard once. Picks thus come from across the keyspace (as
    /// Redis's dictGetSomeKeys), also when only a few databases hold keys:
    /// a walk in shard order would favour the first shards of a database.
    fn shards_at_random(&self, volatile: bool) -> impl Iterator<Item = (usize, usize)> + '_ {
        let total = self.dbs.len() * SHARDS_PER_DB;
        let mut rng = rand::thread_rng();
        let start = rng.gen_range(0..total);
        let stride = std::iter::repeat_with(|| rng.gen_range(1..=total))
            .find(|&stride| gcd(stride, total) == 1)
            .expect("1 is coprime to every count");
        (0..total)
            .map(move |i| (start + i * stride) % total)
            .map(|n| (n / SHARDS_PER_DB, n % SHARDS_PER_DB))
            .filter(move |&(db_no, shard_no)| {
                let counts = &self.counts[db_no][shard_no];
                counts.keys.load(Ordering::Relaxed) > 0
                    && (!volatile || counts.expires.load(Ordering::Relaxed) > 0)
            })
    }

    /// S3-FIFO's pick from one of two shards drawn at random, the one
    /// holding more bytes: evictions go where the data is and keep shards
    /// even, without a queue shared by all shards.
    fn evict_s3fifo(&self, now_ms: u64) -> Attempt {
        let bytes = |(db_no, shard_no): (usize, usize)| {
            let counts = &self.counts[db_no][shard_no];
            counts.data_bytes.load(Ordering::Relaxed) + counts.table_bytes.load(Ordering::Relaxed)
        };
        let mut shards = self.shards_at_random(false);
        let Some(first) = shards.next() else {
            return Attempt::NothingEligible;
        };
        let (db_no, shard_no) = match shards.next() {
            Some(second) if bytes(second) > bytes(first) => second,
            _ => first,
        };
        let mut shard = self.db(db_no, now_ms).guard(shard_no);
        match shard.guard.evict_s3fifo() {
            Some(entry) => Attempt::Evicted(db_no, entry),
            None => Attempt::Retry,
        }
    }

    /// The best victim under `policy` among 5 candidates, one per shard.
    fn evict_sampled(&self, policy: Policy, now_ms: u64) -> Attempt {
        const SAMPLES: usize = 5;
        let volatile = matches!(
            policy,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        );
        let clock = self.clock();
        // Lower score = better victim.
        let score = |e: &Entry| -> u64 {
            match policy {
                Policy::AllKeysLru | Policy::VolatileLru => {
                    u64::MAX - e.access().idle_micros(clock)
                }
                Policy::AllKeysLfu | Policy::VolatileLfu => {
                    e.access().lfu_rank(&self.access, clock)
                }
                Policy::VolatileTtl => e.expire_at_ms().unwrap_or(u64::MAX),
                _ => 0,
            }
        };
        let mut rng = rand::thread_rng();
        let mut best: Option<(u64, usize, Vec<u8>)> = None;
        // One candidate per shard, so a key alone in its shard is one
        // candidate among several, not five copies of itself.
        let mut candidates = 0;
        for (db_no, shard_no) in self.shards_at_random(volatile) {
            let shard = read_lock(&self.dbs[db_no][shard_no]);
            // A volatile policy needs a key with a TTL: a few tries in a
            // shard that has some.
            let candidate = (0..SAMPLES)
                .filter_map(|_| shard.random(now_ms, &mut rng))
                .find(|e| !volatile || e.expire_at_ms().is_some());
            let Some(e) = candidate else {
                continue;
            };
            let s = score(e);
            if best.as_ref().is_none_or(|b| s < b.0) {
                best = Some((s, db_no, e.key().to_vec()));
            }
            candidates += 1;
            if candidates == SAMPLES {
                break;
            }
        }
        let Some((_, db_no, key)) = best else {
            return Attempt::NothingEligible;
        };
        match self.db(db_no, now_ms).write(&key).remove(&key) {
            Some(entry) => Attempt::Evicted(db_no, entry),
            None => Attempt::Retry,
        }
    }

    /// One pass of active expiry over every shard: removes keys whose
    /// deadline has passed, at most `max_per_shard` per shard so no shard
    /// lock is held for long, handing each to `free` once its shard is
    /// released. Shards with nothing due are skipped without a lock, by the
    /// earliest deadline their last write published. `hold` is called
    /// before the work on each shard with keys due, and what it returns is
    /// dropped when that work (lock, unlink, `free`) is done: the server
    /// runs just those stretches at its workers' priority. Returns what was
    /// removed and whether any shard still has keys due (call again).
    pub fn reclaim_expired<H>(
        &self,
        now_ms: u64,
        max_per_shard: usize,
        mut hold: impl FnMut() -> H,
        mut free: impl FnMut(Entry),
    ) -> (Reclaimed, bool) {
        let (mut done, mut more) = (Reclaimed::default(), false);
        let mut unlinked = Vec::with_capacity(max_per_shard.min(1024));
        for db_no in 0..self.dbs.len() {
            let db = self.db(db_no, now_ms);
            for (shard_no, counts) in self.counts[db_no].iter().enumerate() {
                if counts.next_deadline.load(Ordering::Relaxed) > now_ms {
                    continue;
                }
                let held = hold();
                let mut guard = db.guard(shard_no);
                let reclaimed = guard
                    .guard
                    .reclaim_expired(now_ms, max_per_shard, &mut unlinked);
                done.add(reclaimed);
                more |= guard.guard.next_deadline().is_some_and(|at| at <= now_ms);
                drop(guard);
                for entry in unlinked.drain(..) {
                    self.emit(KeyEvent::Expired, db_no, entry.key());
                    free(entry);
                }
                self.record_lag(now_ms, reclaimed);
                drop(held);
            }
        }
        (done, more)
    }

    fn record_lag(&self, now_ms: u64, done: Reclaimed) {
        if done.keys > 0 {
            self.lag.lock().record(now_ms, done.max_lag_ms);
        }
    }

    /// The worst delay, in ms, between a key's deadline and its removal
    /// over the last minute (INFO's `expire_lag_ms_max`).
    pub fn expire_lag_ms_max(&self, now_ms: u64) -> u64 {
        self.lag.lock().max(now_ms)
    }

    /// Bytes held by keys already past their deadline and not yet
    /// reclaimed, measured over every shard (INFO's `expired_stale_perc`).
    pub fn stale_bytes(&self, now_ms: u64) -> usize {
        self.all_shards()
            .map(|s| read_lock(s).stale_bytes(now_ms))
            .sum()
    }

    /// Expired keys reclaimed so far (the `expired_keys` statistic).
    pub fn expired_keys(&self) -> u64 {
        self.counts
            .iter()
            .flat_map(|db| db.iter())
            .map(|counts| counts.reclaimed_expired.load(Ordering::Relaxed))
            .sum()
    }

    /// Locks every shard of every database, in ascending order, for an
    /// atomic transaction; until the returned guard is dropped, keyspace
    /// calls on this thread use these locks instead of taking their own.
    pub fn lock_all(&self) -> AllLocked<'_> {
        assert!(!HOLDS_ALL.get(), "lock_all is not reentrant");
        for lock in self.all_shards() {
            // SAFETY: released by AllLocked's drop.
            unsafe { lock.raw().lock_exclusive() };
        }
        HOLDS_ALL.set(true);
        AllLocked { store: self }
    }

    fn all_shards(&self) -> impl Iterator<Item = &RwLock<Shard>> {
        self.dbs.iter().flat_map(|db| db.iter())
    }

    /// The access clock now: microseconds since the store started, from
    /// the monotonic clock.
    pub fn clock(&self) -> Clock {
        Clock {
            micros: self.started.elapsed().as_micros() as u64,
        }
    }
}

/// One database at one instant: every call made through it sees the same
/// "now", as one Redis command does.
#[derive(Clone, Copy)]
pub struct Db<'a> {
    store: &'a Store,
    index: usize,
    shards: &'a [RwLock<Shard>],
    counts: &'a [ShardCounts],
    now_ms: u64,
}

/// A shard's counts and byte totals as of its last write, published when
/// the write lock is released. Aggregate readers (DBSIZE, INFO keyspace
/// and memory, MEMORY STATS, the metrics endpoint) read these instead of
/// locking every shard, so they never wait behind a writer or a background
/// pass — which would stall every other connection of the worker thread
/// serving them.
#[derive(Debug)]
struct ShardCounts {
    keys: AtomicUsize,
    expires: AtomicUsize,
    /// Sum of the deadlines in ms, saturated at `u64::MAX` (ten million
    /// keys with a TTL in one shard).
    expire_sum_ms: AtomicU64,
    reclaimed_expired: AtomicU64,
    data_bytes: AtomicUsize,
    table_bytes: AtomicUsize,
    expiry_index_bytes: AtomicUsize,
    /// The earliest deadline of any key, `u64::MAX` for none: active
    /// expiry skips the shard until then without locking it.
    next_deadline: AtomicU64,
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
            next_deadline: AtomicU64::new(u64::MAX),
        }
    }
}

impl ShardCounts {
    fn publish(&self, shard: &Shard) {
        self.keys.store(shard.len(), Ordering::Relaxed);
        self.expires.store(shard.expires(), Ordering::Relaxed);
        let sum = u64::try_from(shard.expire_sum_ms()).unwrap_or(u64::MAX);
        self.expire_sum_ms.store(sum, Ordering::Relaxed);
        self.reclaimed_expired
            .store(shard.reclaimed_expired(), Ordering::Relaxed);
        self.data_bytes.store(shard.data_bytes(), Ordering::Relaxed);
        self.table_bytes
            .store(shard.table_bytes(), Ordering::Relaxed);
        self.expiry_index_bytes
            .store(shard.expiry_index_bytes(), Ordering::Relaxed);
        self.next_deadline
            .store(shard.next_deadline().unwrap_or(u64::MAX), Ordering::Relaxed);
    }
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

impl<'a> Db<'a> {
    /// The instant this view answers for.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    fn shard_index(&self, key: &[u8]) -> usize {
        // Bits 32.. of the hash: the shard's index uses the low bits for
        // bucket positions and the top 7 for its tags.
        ((self.store.hasher.hash_one(key) >> 32) as usize) % self.shards.len()
    }

    fn guard(&self, index: usize) -> WriteShard<'a> {
        let mut guard = write_lock(&self.shards[index]);
        let bytes_before = guard.used_bytes();
        let access = &self.store.access;
        guard.follow_policy(access.s3fifo_epoch(), self.store.clock());
        WriteShard {
            bytes_before,
            guard,
            counts: &self.counts[index],
            store: self.store,
            db: self.index,
            now_ms: self.now_ms,
        }
    }

    /// Read access to the shard holding `key`.
    pub fn read(&self, key: &[u8]) -> ReadShard<'a> {
        let index = self.shard_index(key);
        ReadShard {
            guards: Some(Guards::One(index, read_lock(&self.shards[index]))),
            db: *self,
            expired_in: std::cell::Cell::new(0),
        }
    }

    /// Read access to the shards of all `keys` at once, so a multi-key read
    /// (MGET) sees one instant: never half of a concurrent MSET. Guards are
    /// taken in ascending shard order, like [`Db::write_many`].
    pub fn read_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> ReadShard<'a> {
        let mut indexes: Vec<usize> = keys.iter().map(|k| self.shard_index(k.as_ref())).collect();
        indexes.sort_unstable();
        indexes.dedup();
        let guards = indexes
            .into_iter()
            .map(|i| (i, read_lock(&self.shards[i])))
            .collect();
        ReadShard {
            guards: Some(Guards::Many(guards)),
            db: *self,
            expired_in: std::cell::Cell::new(0),
        }
    }

    /// Write access to the shard holding `key`.
    pub fn write(&self, key: &[u8]) -> WriteShard<'a> {
        self.guard(self.shard_index(key))
    }

    /// Write access to the shards of all `keys` at once, for commands that
    /// must be atomic across keys. Guards are taken in ascending shard
    /// order, which is what keeps concurrent multi-key commands from
    /// deadlocking.
    pub fn write_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> MultiWrite<'a> {
        let mut indexes: Vec<usize> = keys.iter().map(|k| self.shard_index(k.as_ref())).collect();
        indexes.sort_unstable();
        indexes.dedup();
        MultiWrite {
            db: *self,
            guards: indexes.into_iter().map(|i| (i, self.guard(i))).collect(),
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

    /// Removes every key. The old contents are returned so that the caller
    /// decides where to pay for freeing them (FLUSHDB ASYNC frees them on
    /// another thread).
    pub fn flush(&self) -> Vec<Shard> {
        let all: Vec<usize> = (0..self.shards.len()).collect();
        let mut guards: Vec<WriteShard> = all.into_iter().map(|i| self.guard(i)).collect();
        guards
            .iter_mut()
            .map(|g| {
                let old = std::mem::replace(&mut **g.guard, Shard::new(self.store.hasher));
                g.guard.adopt_watchers(&old);
                old
            })
            .collect()
    }

    /// Every live key matching `pattern` (KEYS).
    pub fn keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let match_all = pattern == b"*";
        let mut out = Vec::new();
        for shard in self.shards {
            let shard = read_lock(shard);
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
        while shard_no < self.shards.len() && budget > 0 && live_seen < count {
            let shard = read_lock(&self.shards[shard_no]);
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
        let next = if shard_no >= self.shards.len() {
            0
        } else {
            ((shard_no as u64) << 32) | slot as u64
        };
        (next, keys)
    }

    /// A random live key (RANDOMKEY), shards weighted by their size.
    pub fn random_key(&self) -> Option<Vec<u8>> {
        let sizes: Vec<usize> = self.shards.iter().map(|s| read_lock(s).len()).collect();
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
            let shard = read_lock(&self.shards[shard_no]);
            if let Some(entry) = shard.random(self.now_ms, &mut rng) {
                return Some(entry.key().to_vec());
            }
        }
        None
    }
}

/// Read guards of one shard, or of several taken together.
enum Guards<'a> {
    One(usize, Held<RwLockReadGuard<'a, Shard>>),
    Many(Vec<(usize, Held<RwLockReadGuard<'a, Shard>>)>),
}

/// Shards locked for reading, seen at one instant.
///
/// A reader that meets an expired key sees it as absent; when the guards
/// are released, the key is deleted under the write lock, as Redis deletes
/// an expired key on access, so reads never keep dead keys in memory. All
/// read guards are released before any write lock is taken, which keeps the
/// locking discipline.
pub struct ReadShard<'a> {
    guards: Option<Guards<'a>>,
    db: Db<'a>,
    /// Bit `i` set: shard `i` holds an expired key a reader met.
    expired_in: std::cell::Cell<u64>,
}

impl ReadShard<'_> {
    /// The locked shard holding `key` and its index. Panics if `key` was not
    /// among the keys the guards were taken for.
    fn shard_of(&self, key: &[u8]) -> (usize, &Shard) {
        match self.guards.as_ref().expect("held until drop") {
            Guards::One(index, guard) => (*index, guard),
            Guards::Many(guards) => {
                let index = self.db.shard_index(key);
                let at = guards
                    .binary_search_by_key(&index, |(i, _)| *i)
                    .expect("key's shard was locked by read_many");
                (index, &guards[at].1)
            }
        }
    }

    fn live(&self, key: &[u8]) -> Option<&Entry> {
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
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        let entry = self.live(key)?;
        let store = self.db.store;
        entry.access().touch(&store.access, store.clock());
        Some(entry)
    }

    /// The live entry for `key`, without recording an access (OBJECT,
    /// TYPE-like introspection that Redis does not count as use).
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.live(key)
    }
}

impl Drop for ReadShard<'_> {
    fn drop(&mut self) {
        drop(self.guards.take());
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
            drop(shard);
            for entry in unlinked {
                self.db
                    .store
                    .emit(KeyEvent::Expired, self.db.index, entry.key());
            }
            self.db.store.record_lag(self.db.now_ms, done);
        }
    }
}

/// A shard locked for writing, seen at one instant. When dropped, the
/// store's dataset byte count is updated by what the shard gained or lost.
pub struct WriteShard<'a> {
    guard: Held<RwLockWriteGuard<'a, Shard>>,
    counts: &'a ShardCounts,
    store: &'a Store,
    db: usize,
    now_ms: u64,
    bytes_before: usize,
}

impl<'a> WriteShard<'a> {
    /// The live entry for `key`, without recording an access.
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.guard.get(key, self.now_ms)
    }

    /// The live entry for `key`, for modification; records the access.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<EntryMut<'_>> {
        let clock = self.store.clock();
        let entry = self.guard.get_mut(key, self.now_ms)?;
        entry.entry().access().touch(&self.store.access, clock);
        Some(entry)
    }

    /// Sets `key` to `value` with an optional deadline, replacing what was
    /// there. Returns the previous live entry.
    pub fn insert(&mut self, key: &[u8], value: Value, expire_at_ms: Option<u64>) -> Option<Entry> {
        let access = Access::new(&self.store.access, self.store.clock());
        let entry = Entry::new(key, value, expire_at_ms, access);
        self.guard.insert(entry, self.now_ms)
    }

    /// Puts back an entry taken from elsewhere (RENAME), keeping its TTL
    /// and access history but giving it a new key.
    pub fn insert_renamed(&mut self, key: &[u8], old: Entry) -> Option<Entry> {
        let expire = old.expire_at_ms();
        let access = old.access().duplicate();
        let value = old.into_value();
        self.guard
            .insert(Entry::new(key, value, expire, access), self.now_ms)
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
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.guard.remove(key, self.now_ms)
    }

    /// The live entry for `key` to modify, or a place to create it: for
    /// commands that update a value or create it (APPEND, INCR, ...).
    pub fn entry<'s>(&'s mut self, key: &'s [u8]) -> Lookup<'s, 'a> {
        if self.guard.get(key, self.now_ms).is_some() {
            Lookup::Found(
                self.get_mut(key)
                    .expect("found just above under the same lock"),
            )
        } else {
            Lookup::Missing(Vacant { shard: self, key })
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
    key: &'s [u8],
}

impl Vacant<'_, '_> {
    /// Creates the key with `value` and an optional deadline.
    pub fn insert(self, value: Value, expire_at_ms: Option<u64>) {
        self.shard.insert(self.key, value, expire_at_ms);
    }
}

impl Drop for WriteShard<'_> {
    fn drop(&mut self) {
        for key in self.guard.take_expired_by_writers() {
            self.store.emit(KeyEvent::Expired, self.db, &key);
        }
        self.counts.publish(&self.guard);
        let growth = self.guard.table_growth_of_next_insert();
        if growth > self.store.largest_table_growth.load(Ordering::Relaxed) {
            self.store
                .largest_table_growth
                .fetch_max(growth, Ordering::Relaxed);
        }
        let after = self.guard.used_bytes();
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
    db: Db<'a>,
    guards: Vec<(usize, WriteShard<'a>)>,
}

impl<'a> MultiWrite<'a> {
    /// The live entry for `key`, without recording an access. Panics if
    /// `key` was not among the keys the guards were taken for.
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        let index = self.db.shard_index(key);
        let at = self
            .guards
            .binary_search_by_key(&index, |(i, _)| *i)
            .expect("key's shard was locked by write_many");
        self.guards[at].1.peek(key)
    }

    /// The locked shard holding `key`. Panics if `key` was not among the
    /// keys the guards were taken for.
    pub fn shard(&mut self, key: &[u8]) -> &mut WriteShard<'a> {
        let index = self.db.shard_index(key);
        let at = self
            .guards
            .binary_search_by_key(&index, |(i, _)| *i)
            .expect("key's shard was locked by write_many");
        &mut self.guards[at].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Str;

    fn s(v: &str) -> Value {
        Value::Str(Str::from_bytes(v.as_bytes()))
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
    fn eviction_follows_the_policy() {
        let store = Store::new(2);
        for i in 0..200 {
            let k = format!("k{i}");
            let ttl = (i % 2 == 0).then_some(1_000_000);
            store
                .db(i % 2, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s("v"), ttl);
        }
        store.access.set_policy(crate::Policy::NoEviction);
        assert!(!store.evict_one(0, drop), "noeviction never evicts");
        store.access.set_policy(crate::Policy::VolatileRandom);
        for _ in 0..100 {
            assert!(store.evict_one(0, drop));
        }
        assert!(!store.evict_one(0, drop), "no volatile key is left");
        assert_eq!(store.evicted_keys(), 100);
        let left: usize = (0..2).map(|d| store.db(d, 0).stats().expires).sum();
        assert_eq!(left, 0);
        store.access.set_policy(crate::Policy::AllKeysLru);
        assert!(store.evict_one(0, drop));
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
    fn readers_delete_expired_keys_they_meet() {
        let store = Store::new(1);
        store.db(0, 0).write(b"k").insert(b"k", s("v"), Some(100));
        let later = store.db(0, 200);
        assert!(later.read(b"k").get(b"k").is_none());
        assert_eq!(store.expired_keys(), 1);
        assert_eq!(later.stats().keys, 0);
        assert_eq!(
            store.dataset_bytes(),
            store
                .db(0, 0)
                .shards
                .iter()
                .map(|s| s.read().used_bytes())
                .sum()
        );
    }

    #[test]
    fn active_expiry_reclaims_keys_nobody_reads() {
        let store = Store::new(2);
        for i in 0..1000u64 {
            let k = format!("k{i}");
            store.db((i % 2) as usize, 0).write(k.as_bytes()).insert(
                k.as_bytes(),
                s("v"),
                Some(10 + i % 3),
            );
        }
        store.db(0, 0).write(b"keep").insert(b"keep", s("v"), None);
        let mut freed = 0;
        let (done, more) = store.reclaim_expired(11, 1, || (), |_| freed += 1);
        assert!(more, "one key per shard per pass leaves work");
        assert_eq!(done.keys, freed);
        assert_eq!(store.expire_lag_ms_max(11), 1);
        while store.reclaim_expired(12, 1, || (), |_| freed += 1).1 {}
        assert_eq!(freed, 1000);
        assert_eq!(store.expired_keys(), 1000);
        assert_eq!(
            store.db(0, 12).stats(),
            DbStats {
                keys: 1,
                expires: 0,
                avg_ttl_ms: 0
            }
        );
    }

    /// 300 keys without TTL and 300 with TTLs 1..=300 s, over two
    /// databases.
    fn half_volatile_store() -> Store {
        let store = Store::new(2);
        for i in 0..600u64 {
            let k = format!("k{i}");
            let ttl = (i % 2 == 1).then_some(1_000 * (i / 2 + 1));
            store
                .db((i % 2) as usize, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s("v"), ttl);
        }
        store
    }

    #[test]
    fn every_policy_evicts_only_eligible_keys() {
        use crate::Policy::*;
        for policy in [
            NoEviction,
            AllKeysLru,
            AllKeysLfu,
            AllKeysRandom,
            VolatileLru,
            VolatileLfu,
            VolatileRandom,
            VolatileTtl,
            AllKeysS3Fifo,
        ] {
            let store = half_volatile_store();
            store.access.set_policy(policy);
            let mut evicted = Vec::new();
            while evicted.len() < 400 && store.evict_one(0, |e| evicted.push(e)) {}
            let volatile = evicted
                .iter()
                .filter(|e| e.expire_at_ms().is_some())
                .count();
            match policy {
                NoEviction => assert!(evicted.is_empty(), "noeviction loses nothing"),
                VolatileLru | VolatileLfu | VolatileRandom | VolatileTtl => {
                    assert_eq!(
                        (evicted.len(), volatile),
                        (300, 300),
                        "{policy:?}: only keys with a TTL, all of them"
                    );
                }
                AllKeysLru | AllKeysLfu | AllKeysRandom | AllKeysS3Fifo => {
                    assert_eq!(evicted.len(), 400, "{policy:?}")
                }
            }
            assert_eq!(store.evicted_keys(), evicted.len() as u64);
        }
    }

    #[test]
    fn volatile_ttl_prefers_the_nearest_deadlines() {
        let store = half_volatile_store();
        store.access.set_policy(crate::Policy::VolatileTtl);
        let mut deadlines = Vec::new();
        for _ in 0..100 {
            assert!(store.evict_one(0, |e| deadlines.extend(e.expire_at_ms())));
        }
        let mean = deadlines.iter().sum::<u64>() / deadlines.len() as u64;
        // Deadlines run from 1 s to 300 s: random picks would average
        // 150 s, exact nearest-first 50 s, ideal 5-key sampling about 71 s;
        // sampling by shard, as here and in Redis, lands between.
        assert!(mean < 100_000, "mean evicted deadline {mean} ms");
    }

    #[test]
    fn lru_keeps_recently_used_keys() {
        let store = half_volatile_store();
        store.access.set_policy(crate::Policy::AllKeysLru);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let recent: Vec<String> = (0..600).step_by(3).map(|i| format!("k{i}")).collect();
        for k in &recent {
            let db = store.db(k[1..].parse::<usize>().unwrap() % 2, 0);
            assert!(db.read(k.as_bytes()).get(k.as_bytes()).is_some());
        }
        for _ in 0..300 {
            assert!(store.evict_one(0, drop));
        }
        let kept = recent
            .iter()
            .filter(|k| {
                store
                    .db(k[1..].parse::<usize>().unwrap() % 2, 0)
                    .read(k.as_bytes())
                    .peek(k.as_bytes())
                    .is_some()
            })
            .count();
        // Half the keys are gone; sampling 5 candidates keeps most of the
        // recently used third.
        assert!(
            kept > recent.len() * 3 / 4,
            "kept {kept} of {} recently used keys",
            recent.len()
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
    fn active_expiry_passes_a_locked_shard_with_nothing_due() {
        let store = std::sync::Arc::new(Store::new(1));
        let db = store.db(0, 0);
        db.write(b"later").insert(b"later", s("v"), Some(1_000_000));
        // A key due now, in another shard than "later".
        let due = (0..)
            .map(|i| format!("due{i}"))
            .find(|k| db.shard_index(k.as_bytes()) != db.shard_index(b"later"))
            .unwrap();
        db.write(due.as_bytes())
            .insert(due.as_bytes(), s("v"), Some(10));
        let held = db.write(b"later");
        let (tx, rx) = std::sync::mpsc::channel();
        let reclaimer = {
            let store = store.clone();
            std::thread::spawn(move || tx.send(store.reclaim_expired(20, 64, || (), drop)).unwrap())
        };
        let (done, more) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("expiry skips a shard with nothing due without locking it");
        drop(held);
        reclaimer.join().unwrap();
        assert_eq!((done.keys, more), (1, false));
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
}
