//! Point-in-time snapshots of the keyspace while it keeps serving writes.
//!
//! Redis snapshots by forking: the child sees the dataset frozen at the
//! fork, and the kernel copies every page a write touches afterwards, so
//! a busy server can double its memory while it saves. keel is one
//! multi-threaded process, where `fork()` is not safe in general, so it
//! freezes the dataset per key instead, in the manner of Dragonfly's
//! per-bucket versioning:
//!
//! 1. **The instant.** [`Store::begin_snapshot`](crate::Store::begin_snapshot)
//!    write-locks every shard of every database, in the global lock order,
//!    and gives each a [`ShardSnapshot`]: the instant `T`, how many slots
//!    the shard has (`end`), a cursor at slot 0 and an empty `handled`
//!    bitmap. No write can be half-way through: a write (or a whole
//!    transaction, or an MSET) holds every shard it changes, so it falls
//!    entirely before or entirely after `T`.
//! 2. **The walk.** The saver visits each shard's slots in order, a batch at
//!    a time under the shard's read lock (writers wait one batch at most,
//!    readers not at all), writes every entry it finds unless its slot is
//!    `handled` or it had expired at `T`, and moves the cursor past the
//!    batch.
//! 3. **Writes ahead of the walk.** Every change to a shard goes through
//!    `shard.rs`, which calls [`ShardSnapshot::preserve`] before it changes
//!    or removes the entry in a slot, and [`ShardSnapshot::claim`] when a
//!    new key takes a slot. For a slot the walk has not reached yet and not
//!    already handled, `preserve` keeps a copy of the entry as it was at
//!    `T` for the saver, and both mark the slot `handled`, so the walk skips
//!    it: the saver writes the copy instead of the changed entry, and never
//!    a key created after `T`. Slots past `end` did not exist at `T` and
//!    are never walked.
//! 4. **The end.** Once a shard's cursor reaches `end` nothing more is
//!    preserved for it; the saver takes the last copies and clears the
//!    state.
//!
//! Each key of `T` is thus written exactly once, as it was at `T`: by the
//! walk if nothing touched it first, from its copy otherwise.
//!
//! What it costs:
//!
//! - Memory: one bit per slot that existed at `T` (a 10M-key dataset: about
//!   1.3 MB), plus copies of keys written ahead of the walk, which the saver
//!   drains after every batch: at any moment, only what was written since
//!   the last batch of that shard. Redis's copy-on-write copies a 4 KB page
//!   for any write to it.
//! - Writers: one branch per change while no snapshot runs; during one, a
//!   bit test, and the first write to a not yet saved key copies it (a big
//!   collection costs its size, once).
//! - Whole-shard changes (FLUSHDB, SWAPDB) during a snapshot copy what the
//!   walk has not reached of the shard first ([`ShardSnapshot::preserve_rest`]):
//!   a flush of a large database while it is being saved briefly holds
//!   that part twice, as Redis's fork would.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::entry::Entry;

/// One shard's part of a running snapshot.
#[derive(Debug)]
pub(crate) struct ShardSnapshot {
    /// The snapshot's instant, Unix ms: keys expired then are not saved.
    at_ms: u64,
    /// Slots the shard had at the instant; later slots are never walked.
    end: usize,
    /// Slots below this have been walked. Only the saver moves it, holding
    /// the shard's read lock; writers read it holding the write lock.
    cursor: AtomicUsize,
    /// One bit per slot below `end`: set once the entry the slot held at
    /// the instant has been copied, or a key created after it took the slot.
    handled: Vec<u64>,
    /// Copies of entries as they were at the instant, for the saver.
    preserved: Mutex<Vec<Entry>>,
}

impl ShardSnapshot {
    pub(crate) fn new(at_ms: u64, end: usize) -> ShardSnapshot {
        ShardSnapshot {
            at_ms,
            end,
            cursor: AtomicUsize::new(0),
            handled: vec![0; end.div_ceil(64)],
            preserved: Mutex::new(Vec::new()),
        }
    }

    /// Whether the walk has yet to reach `slot` and nothing has handled it.
    fn pending(&self, slot: usize) -> bool {
        slot < self.end
            && slot >= self.cursor.load(Ordering::Relaxed)
            && self.handled[slot / 64] & (1 << (slot % 64)) == 0
    }

    fn mark(&mut self, slot: usize) {
        self.handled[slot / 64] |= 1 << (slot % 64);
    }

    /// Called before the entry in `slot` changes or leaves: keeps a copy
    /// of it as it was at the instant, if the walk still needs it.
    pub(crate) fn preserve(&mut self, slot: usize, entry: &Entry) {
        if self.pending(slot) {
            self.mark(slot);
            if !entry.is_expired(self.at_ms) {
                self.preserved.get_mut().push(entry.duplicate());
            }
        }
    }

    /// Called when a key created after the instant takes `slot`.
    pub(crate) fn claim(&mut self, slot: usize) {
        if self.pending(slot) {
            self.mark(slot);
        }
    }

    /// Copies every entry the walk has yet to reach and ends the walk,
    /// before a change to the whole shard.
    pub(crate) fn preserve_rest<'e>(&mut self, slots: impl Iterator<Item = (usize, &'e Entry)>) {
        for (slot, entry) in slots {
            self.preserve(slot, entry);
        }
        self.cursor.store(self.end, Ordering::Relaxed);
    }

    /// Walks up to `max_slots` slots from the cursor, visiting each entry
    /// of the instant found there, and moves the cursor past them. Returns
    /// true once the walk is over. `slot` reads the shard.
    pub(crate) fn walk<'e>(
        &self,
        max_slots: usize,
        slot: impl Fn(usize) -> Option<&'e Entry>,
        mut visit: impl FnMut(&Entry),
    ) -> bool {
        let from = self.cursor.load(Ordering::Relaxed);
        let to = from.saturating_add(max_slots).min(self.end);
        for at in from..to {
            if self.handled[at / 64] & (1 << (at % 64)) != 0 {
                continue;
            }
            if let Some(entry) = slot(at).filter(|e| !e.is_expired(self.at_ms)) {
                visit(entry);
            }
        }
        self.cursor.store(to, Ordering::Relaxed);
        to == self.end
    }

    /// The copies kept since the last call.
    pub(crate) fn take_preserved(&self) -> Vec<Entry> {
        std::mem::take(&mut *self.preserved.lock())
    }

    /// Whether the walk is over.
    pub(crate) fn walked(&self) -> bool {
        self.cursor.load(Ordering::Relaxed) == self.end
    }

    /// What the bitmap and the waiting copies take.
    pub(crate) fn bytes(&self) -> usize {
        self.handled.capacity() * 8
            + self
                .preserved
                .lock()
                .iter()
                .map(Entry::heap_bytes)
                .sum::<usize>()
    }
}
