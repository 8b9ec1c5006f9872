//! Shard locking: how guards are taken, and the order that keeps them free
//! of deadlock.
//!
//! Every shard is a `parking_lot` reader-writer lock, and all shards of the
//! store are in one global order: by database, then by shard index. The
//! rule: a thread holds at most one shard guard at a time, except through
//! [`Db::write_many`](super::Db::write_many),
//! [`Db::read_many`](super::Db::read_many), [`Db::read_all`](super::Db::read_all),
//! [`Db::write_all`](super::Db::write_all),
//! [`Db::write_across`](super::Db::write_across),
//! [`Store::swap_dbs`] and [`ShardSet::lock`], which take every lock they
//! need at once in that ascending order. Multi-key commands that must be
//! atomic (MSET, MSETNX, RENAME) use `write_many`; so do FLUSHDB and
//! FLUSHALL. SORT with BY or GET patterns reads keys only its source names,
//! so it holds all shards of its database (`read_all`, `write_all`).
//!
//! Two databases: a command that holds shards of two databases at once
//! takes the lower-numbered database's first, as the global order says.
//! MOVE holds the key's shard in both (`write_across`: the lower database's
//! shard, then the higher's); SWAPDB holds every shard of both (`swap_dbs`:
//! all of the lower database, then all of the higher). COPY to another
//! database never holds both: it clones under the source's lock and writes
//! under the destination's. With one global order no two threads can wait
//! on each other in a cycle.
//!
//! Transactions (EXEC) run their queued commands atomically through a
//! [`ShardSet`]: the caller names the shards the transaction reaches (the
//! shards of its keys, or all of them), `lock` takes each one's write lock
//! in the global order, and records in a thread-local which shards this
//! thread holds. While that record exists, a guard asked for on one of
//! those shards is lent from the lock already held instead of taken (see
//! [`Held`]), so command handlers run unchanged inside EXEC. Other threads
//! wait only on the shards the transaction holds; the rest of the keyspace
//! stays open to them.
//!
//! A lent guard is made with `make_*_guard_unchecked`, which is sound only
//! while at most one guard per shard is alive on the thread: handlers never
//! hold two guards on one shard (outside EXEC that would deadlock), and
//! debug builds check it, panicking on a second guard.
//!
//! A guard asked for, inside a transaction, on a shard the set did not name
//! is a bug in the caller's key computation: debug builds panic. Release
//! builds add the shard to what the transaction holds, taking its lock in a
//! way that cannot deadlock silently: waiting is safe when the shard comes
//! after every held shard, as in an ordered acquisition; before a held
//! shard, another thread may hold it while it waits for one of ours, so the
//! wait is bounded and then panics, which releases every held shard.
//!
//! Nothing is freed while a shard is locked: whoever would drop a removed
//! value under a lock (a handler still holding its guard, a transaction
//! holding its shards) hands it to [`drop_unlocked`], which drops it at
//! once when this thread holds no shard lock, and otherwise keeps it in a
//! thread-local list emptied as the thread's last lock is released. The
//! thread's count of locks it took ([`Held`] guards taken, not lent) and
//! its transaction record say whether it holds any.
//!
//! Trade-offs: the normal command path pays one thread-local read per lock
//! and two thread-local updates to count it, and never meets a global lock.
//! A value dropped under a lock costs one small allocation to be kept until
//! the lock goes. EXEC pays once per transaction: one lock
//! per shard it reaches. A transaction whose keys cannot be told from its
//! commands (FLUSHALL, KEYS, SCAN, ...) names every shard, and then holds
//! up every other client that touches a key while it runs.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use parking_lot::lock_api::{RawRwLock as _, RawRwLockTimed as _};
use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

use super::{Store, SHARDS_PER_DB};
use crate::shard::Shard;

const _: () = assert!(SHARDS_PER_DB <= u64::BITS as usize, "one word per database");

/// How long a transaction waits for a shard it did not lock and that comes
/// before one it holds, before it takes the wait for a deadlock.
const DEADLOCK_SUSPECTED_AFTER: Duration = Duration::from_secs(2);

/// A set of the store's shards: bit `shard` of word `db`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ShardBits(Box<[u64]>);

impl ShardBits {
    fn empty(databases: usize) -> ShardBits {
        ShardBits(vec![0; databases].into_boxed_slice())
    }

    fn contains(&self, db: usize, shard: usize) -> bool {
        self.0[db] & 1 << shard != 0
    }

    /// Adds the shard; false if it was there already.
    fn insert(&mut self, db: usize, shard: usize) -> bool {
        let had = self.contains(db, shard);
        self.0[db] |= 1 << shard;
        !had
    }

    #[cfg(debug_assertions)]
    fn remove(&mut self, db: usize, shard: usize) {
        self.0[db] &= !(1 << shard);
    }

    /// The shards in the global lock order.
    fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.0.iter().enumerate().flat_map(|(db, &word)| {
            (0..SHARDS_PER_DB)
                .filter(move |&shard| word & 1 << shard != 0)
                .map(move |shard| (db, shard))
        })
    }

    /// The last shard in the global lock order.
    fn last(&self) -> Option<(usize, usize)> {
        let (db, word) = self
            .0
            .iter()
            .enumerate()
            .rev()
            .find(|&(_, &word)| word != 0)?;
        Some((db, (u64::BITS - 1 - word.leading_zeros()) as usize))
    }
}

/// What this thread holds through a [`ShardsLocked`].
struct Holding {
    /// Whose shards: guards on another store's shards are never lent.
    store: *const Store,
    held: ShardBits,
    /// Shards with a lent guard alive.
    #[cfg(debug_assertions)]
    lent: ShardBits,
}

thread_local! {
    static HOLDING: RefCell<Option<Holding>> = const { RefCell::new(None) };
    /// Shard locks this thread took through [`Held`] guards and still holds.
    static TAKEN: Cell<usize> = const { Cell::new(0) };
    /// Values to drop once this thread holds no shard lock.
    static DEFERRED: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread holds a shard lock: a guard it took, or a
/// transaction's shards. What must take every lock (a snapshot's instant)
/// checks it first: those locks are not reentrant.
pub fn holds_a_lock() -> bool {
    TAKEN.get() > 0 || HOLDING.with_borrow(Option::is_some)
}

/// Drops `value` now if this thread holds no shard lock, otherwise as soon
/// as its last one is released: freeing a large value never lengthens a
/// lock hold, whichever path removed it.
pub fn drop_unlocked<T: 'static>(value: T) {
    if holds_a_lock() {
        DEFERRED.with_borrow_mut(|deferred| deferred.push(Box::new(value)));
    }
}

/// Drops what [`drop_unlocked`] kept, once this thread's last lock is gone.
fn release_deferred() {
    // Looked at before it is taken: taking an empty list and dropping it
    // cost a GET more than the check does.
    if !holds_a_lock() && DEFERRED.with_borrow(|deferred| !deferred.is_empty()) {
        let deferred = DEFERRED.take();
        drop(deferred);
    }
}

/// A shard guard: taken from the lock and released on drop, or, on a
/// thread inside a transaction (see [`ShardSet::lock`]), lent from the
/// lock already held and left locked on drop.
pub struct Held<G> {
    guard: ManuallyDrop<G>,
    /// `(database, shard)` of a lent guard; `None` for one taken.
    lent_from: Option<(usize, usize)>,
}

impl<G> Held<G> {
    fn taken(guard: G) -> Held<G> {
        TAKEN.set(TAKEN.get() + 1);
        Held {
            guard: ManuallyDrop::new(guard),
            lent_from: None,
        }
    }

    fn lent(guard: G, db: usize, shard: usize) -> Held<G> {
        Held {
            guard: ManuallyDrop::new(guard),
            lent_from: Some((db, shard)),
        }
    }
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
        match self.lent_from {
            None => {
                // SAFETY: dropped exactly once, here.
                unsafe { ManuallyDrop::drop(&mut self.guard) };
                TAKEN.set(TAKEN.get() - 1);
                release_deferred();
            }
            #[cfg(debug_assertions)]
            Some((db, shard)) => HOLDING.with_borrow_mut(|holding| {
                let holding = holding.as_mut().expect("lent inside the transaction");
                holding.lent.remove(db, shard);
            }),
            #[cfg(not(debug_assertions))]
            Some(_) => {}
        }
    }
}

/// Read access to shard `shard` of database `db`.
pub(super) fn read_lock(
    store: &Store,
    db: usize,
    shard: usize,
) -> Held<RwLockReadGuard<'_, Shard>> {
    let lock = &store.dbs[db][shard];
    if lends(store, db, shard) {
        // SAFETY: this thread holds the lock exclusively (ShardSet::lock),
        // the lent guard never unlocks it, and it is the shard's only
        // guard alive on the thread (see `lends`).
        return Held::lent(unsafe { lock.make_read_guard_unchecked() }, db, shard);
    }
    Held::taken(lock.read())
}

/// Write access to shard `shard` of database `db`.
pub(super) fn write_lock(
    store: &Store,
    db: usize,
    shard: usize,
) -> Held<RwLockWriteGuard<'_, Shard>> {
    let lock = &store.dbs[db][shard];
    if lends(store, db, shard) {
        // SAFETY: as in read_lock.
        return Held::lent(unsafe { lock.make_write_guard_unchecked() }, db, shard);
    }
    Held::taken(lock.write())
}

/// Whether a guard on the shard is to be lent: true when this thread is
/// inside a transaction on `store`, which then holds the shard.
fn lends(store: &Store, db: usize, shard: usize) -> bool {
    HOLDING.with_borrow_mut(|holding| {
        let Some(holding) = holding.as_mut().filter(|h| std::ptr::eq(h.store, store)) else {
            return false;
        };
        debug_assert!(
            holding.held.contains(db, shard),
            "a transaction reached shard {shard} of database {db}, which it did not lock: \
             the shards computed from its commands miss a key"
        );
        if !holding.held.contains(db, shard) {
            take_missed(store, &mut holding.held, db, shard);
        }
        #[cfg(debug_assertions)]
        assert!(
            holding.lent.insert(db, shard),
            "two guards on shard {shard} of database {db} at once on one thread"
        );
        true
    })
}

/// Release builds: takes a shard a transaction reached without locking it,
/// and holds it with the others until the transaction ends (see the module
/// comment for why this cannot deadlock silently).
fn take_missed(store: &Store, held: &mut ShardBits, db: usize, shard: usize) {
    // SAFETY: released with the transaction's other shards by
    // ShardsLocked's drop.
    let lock = unsafe { store.dbs[db][shard].raw() };
    if held.last().is_none_or(|last| (db, shard) > last) {
        lock.lock_exclusive();
    } else if !lock.try_lock_exclusive_for(DEADLOCK_SUSPECTED_AFTER) {
        panic!(
            "a transaction waited {DEADLOCK_SUSPECTED_AFTER:?} for shard {shard} of database \
             {db}, which it did not lock and which comes before shards it holds: deadlock"
        );
    }
    held.insert(db, shard);
}

/// Shards to lock together for a transaction, in the global order.
pub struct ShardSet<'a> {
    store: &'a Store,
    shards: ShardBits,
}

impl Store {
    /// An empty set of this store's shards.
    pub fn shard_set(&self) -> ShardSet<'_> {
        ShardSet {
            store: self,
            shards: ShardBits::empty(self.dbs.len()),
        }
    }
}

impl<'a> ShardSet<'a> {
    /// Adds the shard holding `key` in database `db`.
    pub fn insert_key(&mut self, db: usize, key: &[u8]) {
        self.shards.insert(db, self.store.shard_index(key));
    }

    /// The set as one word per database, bit `shard` of word `db`.
    pub fn words(&self) -> &[u64] {
        &self.shards.0
    }

    /// Whether every shard of the set is in `other`.
    pub fn is_within(&self, other: &[u64]) -> bool {
        self.shards
            .0
            .iter()
            .zip(other)
            .all(|(&mine, &theirs)| mine & !theirs == 0)
    }

    /// Adds every shard of every database.
    pub fn insert_all(&mut self) {
        self.shards
            .0
            .fill(u64::MAX >> (u64::BITS as usize - SHARDS_PER_DB));
    }

    /// Takes the write lock of every shard in the set, in the global order;
    /// until the returned guard is dropped, guards asked for on this thread
    /// are lent from these locks. Panics if this thread already holds a set.
    pub fn lock(self) -> ShardsLocked<'a> {
        assert!(
            HOLDING.with_borrow(Option::is_none),
            "a thread locks one shard set at a time"
        );
        for (db, shard) in self.shards.iter() {
            // SAFETY: released by ShardsLocked's drop.
            unsafe { self.store.dbs[db][shard].raw().lock_exclusive() };
        }
        HOLDING.set(Some(Holding {
            store: self.store,
            #[cfg(debug_assertions)]
            lent: ShardBits::empty(self.shards.0.len()),
            held: self.shards,
        }));
        ShardsLocked {
            store: self.store,
            on_this_thread: PhantomData,
        }
    }
}

/// The shards of a [`ShardSet`], locked by this thread; unlocked on drop.
pub struct ShardsLocked<'a> {
    store: &'a Store,
    /// Not `Send`: the record of what is held is this thread's.
    on_this_thread: PhantomData<*const ()>,
}

impl ShardsLocked<'_> {
    /// Takes the shards of `more` this set does not hold yet, and holds
    /// them with the others. The caller must know that no thread holding
    /// one of them waits for a shard this set holds: a script does, having
    /// kept every other command away from what it claimed before taking it
    /// (see the server's `scripting` module), so it may take shards in any
    /// order.
    pub fn extend(&mut self, more: &ShardSet) {
        HOLDING.with_borrow_mut(|holding| {
            let holding = holding.as_mut().expect("set by ShardSet::lock");
            for (db, shard) in more.shards.iter() {
                if holding.held.insert(db, shard) {
                    // SAFETY: released with the set's other shards on drop.
                    unsafe { self.store.dbs[db][shard].raw().lock_exclusive() };
                }
            }
        });
    }
}

impl Drop for ShardsLocked<'_> {
    fn drop(&mut self) {
        let holding = HOLDING.take().expect("set by ShardSet::lock");
        #[cfg(debug_assertions)]
        assert_eq!(
            holding.lent.last(),
            None,
            "a lent guard outlives the transaction"
        );
        for (db, shard) in holding.held.iter() {
            // SAFETY: taken exclusively on this thread by ShardSet::lock (or
            // take_missed) and no lent guard unlocks it.
            unsafe { self.store.dbs[db][shard].force_unlock_write() };
        }
        release_deferred();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::sync::Arc;

    use super::*;
    use crate::keyspace::s;

    /// A key of database 0 in each shard, by shard.
    fn key_per_shard(store: &Store) -> Vec<String> {
        let db = store.db(0, 0);
        let mut keys: Vec<Option<String>> = vec![None; SHARDS_PER_DB];
        for i in 0.. {
            let key = format!("k{i}");
            keys[db.shard_index(key.as_bytes())].get_or_insert(key);
            if keys.iter().all(Option::is_some) {
                break;
            }
        }
        keys.into_iter().flatten().collect()
    }

    fn locked(store: &Store, db: usize, shard: usize) -> bool {
        store.dbs[db][shard].is_locked_exclusive()
    }

    #[test]
    fn a_set_locks_its_shards_and_only_them_until_dropped() {
        let store = Store::new(2);
        let keys = key_per_shard(&store);
        let mut set = store.shard_set();
        set.insert_key(0, keys[3].as_bytes());
        set.insert_key(1, keys[60].as_bytes());
        let held = set.lock();
        let locked_now: Vec<(usize, usize)> = (0..2)
            .flat_map(|db| (0..SHARDS_PER_DB).map(move |shard| (db, shard)))
            .filter(|&(db, shard)| locked(&store, db, shard))
            .collect();
        assert_eq!(locked_now, [(0, 3), (1, 60)]);
        store
            .db(0, 0)
            .write(keys[3].as_bytes())
            .insert(keys[3].as_bytes(), s("v"), None);
        assert!(locked(&store, 0, 3), "a lent guard leaves its lock held");
        drop(held);
        assert!(!locked(&store, 0, 3) && !locked(&store, 1, 60));
        assert!(store
            .db(0, 0)
            .read(keys[3].as_bytes())
            .get(keys[3].as_bytes())
            .is_some());
    }

    #[test]
    fn other_threads_wait_only_on_the_held_shards() {
        let store = Arc::new(Store::new(1));
        let keys = Arc::new(key_per_shard(&store));
        let mut set = store.shard_set();
        set.insert_key(0, keys[7].as_bytes());
        let held = set.lock();
        let (tx, rx) = mpsc::channel();
        let other = {
            let (store, keys) = (store.clone(), keys.clone());
            std::thread::spawn(move || {
                let db = store.db(0, 0);
                db.write(keys[8].as_bytes())
                    .insert(keys[8].as_bytes(), s("free"), None);
                tx.send("shard 8 written").unwrap();
                db.write(keys[7].as_bytes())
                    .insert(keys[7].as_bytes(), s("later"), None);
                tx.send("shard 7 written").unwrap();
            })
        };
        let timeout = std::time::Duration::from_secs(10);
        assert_eq!(rx.recv_timeout(timeout), Ok("shard 8 written"));
        let db = store.db(0, 0);
        db.write(keys[7].as_bytes())
            .insert(keys[7].as_bytes(), s("first"), None);
        drop(held);
        assert_eq!(rx.recv_timeout(timeout), Ok("shard 7 written"));
        other.join().unwrap();
        let value = db
            .read(keys[7].as_bytes())
            .get(keys[7].as_bytes())
            .map(|e| e.value().to_value());
        assert_eq!(
            value,
            Some(s("later")),
            "the other thread waited for the set"
        );
    }

    #[test]
    fn sets_and_multi_key_writes_on_many_threads_never_deadlock() {
        let store = Arc::new(Store::new(2));
        let keys = Arc::new(key_per_shard(&store));
        let (tx, rx) = mpsc::channel();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (store, keys, tx) = (store.clone(), keys.clone(), tx.clone());
                std::thread::spawn(move || {
                    for round in 0..500usize {
                        // Shards picked out of order, so only the set's own
                        // ordering keeps the threads apart.
                        let picks = [(round * 7 + t) % 64, (round * 13 + 40) % 64, t * 5];
                        if t % 2 == 0 {
                            let mut set = store.shard_set();
                            for (i, &shard) in picks.iter().enumerate() {
                                set.insert_key(i % 2, keys[shard].as_bytes());
                            }
                            let _held = set.lock();
                            let db = store.db(1, 0);
                            let key = keys[picks[1]].as_bytes();
                            db.write(key).insert(key, s("v"), None);
                        } else {
                            let many: Vec<&String> = picks.iter().map(|&i| &keys[i]).collect();
                            let mut locked = store.db(round % 2, 0).write_many(&many);
                            locked.shard(many[0].as_bytes()).remove(many[0].as_bytes());
                        }
                    }
                    tx.send(()).unwrap();
                })
            })
            .collect();
        for _ in 0..threads.len() {
            rx.recv_timeout(std::time::Duration::from_secs(60))
                .expect("every thread finishes: no deadlock");
        }
        threads.into_iter().for_each(|t| t.join().unwrap());
    }

    #[test]
    fn values_dropped_under_a_lock_wait_for_its_release() {
        struct Noted(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Noted {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let dropped = || Arc::new(std::sync::atomic::AtomicBool::new(false));
        let is_dropped =
            |d: &Arc<std::sync::atomic::AtomicBool>| d.load(std::sync::atomic::Ordering::Relaxed);
        let store = Store::new(1);
        let keys = key_per_shard(&store);
        let db = store.db(0, 0);

        let unlocked = dropped();
        drop_unlocked(Noted(unlocked.clone()));
        assert!(is_dropped(&unlocked), "no lock held: dropped at once");

        let (outer, inner) = (db.write(keys[1].as_bytes()), db.read(keys[2].as_bytes()));
        let deferred = dropped();
        drop_unlocked(Noted(deferred.clone()));
        drop(inner);
        assert!(!is_dropped(&deferred), "one guard is still held");
        drop(outer);
        assert!(is_dropped(&deferred), "dropped with the last guard");

        let mut set = store.shard_set();
        set.insert_key(0, keys[3].as_bytes());
        let held = set.lock();
        drop(db.write(keys[3].as_bytes()));
        let in_transaction = dropped();
        drop_unlocked(Noted(in_transaction.clone()));
        drop(db.write(keys[3].as_bytes()));
        assert!(!is_dropped(&in_transaction), "a lent guard unlocks nothing");
        drop(held);
        assert!(
            is_dropped(&in_transaction),
            "dropped when the transaction ends"
        );
    }

    #[test]
    fn guards_on_another_store_are_taken_not_lent() {
        let (store, other) = (Store::new(1), Store::new(1));
        let mut set = store.shard_set();
        set.insert_all();
        let _held = set.lock();
        let guard = other.db(0, 0).write(b"k");
        assert!(guard.guard.lent_from.is_none());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "which it did not lock")]
    fn reaching_a_shard_not_locked_is_a_bug_in_debug_builds() {
        let store = Store::new(1);
        let keys = key_per_shard(&store);
        let mut set = store.shard_set();
        set.insert_key(0, keys[1].as_bytes());
        let _held = set.lock();
        store.db(0, 0).read(keys[2].as_bytes());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "two guards on shard 5 of database 0")]
    fn two_guards_on_one_shard_panic_in_debug_builds() {
        let store = Store::new(1);
        let keys = key_per_shard(&store);
        let mut set = store.shard_set();
        set.insert_key(0, keys[5].as_bytes());
        let _held = set.lock();
        let db = store.db(0, 0);
        let _write = db.write(keys[5].as_bytes());
        db.read(keys[5].as_bytes());
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn release_builds_hold_a_missed_shard_until_the_transaction_ends() {
        let store = Store::new(1);
        let keys = key_per_shard(&store);
        let mut set = store.shard_set();
        set.insert_key(0, keys[10].as_bytes());
        let held = set.lock();
        // After the held shard: taken in order. Before it: free, so taken
        // at once.
        for shard in [20, 2] {
            let key = keys[shard].as_bytes();
            store.db(0, 0).write(key).insert(key, s("v"), None);
            assert!(locked(&store, 0, shard), "shard {shard} stays held");
        }
        drop(held);
        assert!((0..SHARDS_PER_DB).all(|shard| !locked(&store, 0, shard)));
    }
}
