//! Shard locking: how guards are taken, and the order that keeps them free
//! of deadlock.
//!
//! Every shard is a `parking_lot` reader-writer lock. The one rule: a
//! thread holds at most one shard guard at a time, except through
//! [`Db::write_many`](super::Db::write_many) and
//! [`Db::read_many`](super::Db::read_many), which take every guard they
//! need at once in ascending shard order. Multi-key commands that must be
//! atomic (MSET, MSETNX, RENAME) use `write_many`; so do FLUSHDB and
//! FLUSHALL. With one global order no two threads can wait on each other
//! in a cycle.
//!
//! Transactions (EXEC) run their queued commands atomically across shards
//! and databases through [`Store::lock_all`]: it takes every shard's write
//! lock in ascending order, database by database (the same order as
//! `write_many`, so it cannot deadlock with it), and marks the calling
//! thread as holding them. While that mark is set, every guard handed out
//! on that thread is lent from the locks already held instead of taken
//! (see [`Held`]), so command handlers run unchanged inside EXEC. Other
//! threads simply wait on the shard locks.
//!
//! Trade-offs: the normal command path pays one thread-local read per lock
//! and never meets a global lock; EXEC pays instead, and while it runs,
//! every other client that touches any key waits for it.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use parking_lot::lock_api::RawRwLock as _;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Store;
use crate::shard::Shard;

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

pub(super) fn read_lock(lock: &RwLock<Shard>) -> Held<RwLockReadGuard<'_, Shard>> {
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

pub(super) fn write_lock(lock: &RwLock<Shard>) -> Held<RwLockWriteGuard<'_, Shard>> {
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

impl Store {
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

    pub(super) fn all_shards(&self) -> impl Iterator<Item = &RwLock<Shard>> {
        self.dbs.iter().flat_map(|db| db.iter())
    }
}
