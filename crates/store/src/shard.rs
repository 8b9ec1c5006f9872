//! One shard of one database: a hash index over a slab of stable slots.
//!
//! Entries live in fixed-size chunks of slots and never move while they
//! exist; the hash index (`index.rs`) maps a key to its slot number in
//! 4-byte buckets at most 3/4 full.
//!
//! What a key costs: its entry's packed block (`entry.rs`: access word,
//! flags, deadline if any, key and inline string bytes in one allocation),
//! a 6-byte slot pointing to it (the block's address without its three
//! always-zero low bits, see `entry.rs`), and 5 to 8 bytes of index, plus
//! about 4 bytes of deadline index with a TTL (`deadlines.rs`). Free slots
//! are listed only while free, never reserved per key. A slot holding a
//! pointer rather than the entry's fields costs 6 bytes instead of 64, and
//! a GET reads the index, the slot and one block holding key and value
//! together, where separate key and value allocations cost a cache miss
//! each.
//!
//! Stable slots buy three things a plain hash map cannot give:
//!
//! - SCAN keeps Redis's guarantee (every key present for the whole
//!   iteration is returned) with a stateless numeric cursor: the cursor is a
//!   slot number, and a present key's slot never changes, even when the index
//!   grows. A freed slot is reused by a later insert, which SCAN may or may
//!   not see, as Redis allows for keys added during an iteration.
//! - RANDOMKEY and sampling-based eviction pick a random slot in O(1).
//! - Growth never copies entries: a new chunk is added, so a large shard
//!   does not stall on one big reallocation.
//!
//! Keys with a TTL are also indexed by deadline (slot numbers ordered by
//! `(deadline, slot)`, see `deadlines.rs`), so the keys due now are found
//! directly, without sampling or scanning keys that are not due: reclaiming
//! them costs time proportional to how many expire, never to how many
//! exist.
//!
//! Every change to what the shard holds goes through this file, so the byte
//! count ([`Shard::used_bytes`]), the TTL totals and the deadline index are
//! exact by construction — and so are WATCH notifications, which mark the
//! clients watching a key exactly when Redis's `signalModifiedKey` would:
//!
//! - Inserts and removals (including expiry and eviction) always mark: a
//!   key that appears or goes has changed.
//! - An [`EntryMut`] marks when it is dropped, if anything was borrowed
//!   mutably through it ([`EntryMut::value_mut`], a TTL change). A command
//!   whose write turned out to change nothing (SADD of a present member,
//!   HDEL of an absent field) says so with [`EntryMut::unchanged`]. The
//!   default is thus the safe side: a write that forgets to say it changed
//!   nothing costs a needless EXEC failure, never a missed one.
//!
//! When nobody watches, marking costs one emptiness check.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::access::{Access, Clock};
use crate::deadlines::Deadlines;
use crate::defrag::Relocate;
use crate::entry::{Contents, Entry, Slot};
use crate::expiry::Reclaimed;
use crate::index::{self, SlotIndex};
use crate::key::{AsKey, Key};
use crate::s3fifo::{S3Fifo, Slots};
use crate::snapshot::ShardSnapshot;

/// Slots in the first chunk. Chunks double up to [`MAX_CHUNK`], so a shard
/// holding a few keys costs a few hundred bytes, and a large one adds
/// chunks of a fixed size that are cheap to allocate.
const FIRST_CHUNK: usize = 16;
/// Slots in every chunk from the fifth on.
const MAX_CHUNK: usize = 256;
/// Slots in the doubling chunks before the first full-size one.
const DOUBLING_SLOTS: usize = MAX_CHUNK - FIRST_CHUNK;
/// How many chunks double before chunks reach [`MAX_CHUNK`].
const DOUBLING_CHUNKS: usize = (MAX_CHUNK / FIRST_CHUNK).trailing_zeros() as usize;

/// Random slots [`Shard::random`] tries before it walks.
const RANDOM_PROBES: usize = 32;
/// Steps of [`Shard::random`]'s walk at most: a slot each, or a chunk
/// holding no key. Four full chunks, so a key is found in any shard whose
/// chunks hold a live key near the start, while a pick on the inline
/// eviction path stays within a few microseconds however sparse the shard.
const RANDOM_WALK_STEPS: usize = 4 * MAX_CHUNK;

/// Number of slots in chunk `k`.
fn chunk_len(k: usize) -> usize {
    if k < DOUBLING_CHUNKS {
        FIRST_CHUNK << k
    } else {
        MAX_CHUNK
    }
}

/// First slot of chunk `k`.
fn chunk_start(k: usize) -> usize {
    if k < DOUBLING_CHUNKS {
        FIRST_CHUNK * ((1 << k) - 1)
    } else {
        DOUBLING_SLOTS + (k - DOUBLING_CHUNKS) * MAX_CHUNK
    }
}

/// The chunk and offset of a slot number.
fn locate(slot: usize) -> (usize, usize) {
    if slot < DOUBLING_SLOTS {
        let k = (slot / FIRST_CHUNK + 1).ilog2() as usize;
        (k, slot - chunk_start(k))
    } else {
        let rest = slot - DOUBLING_SLOTS;
        (DOUBLING_CHUNKS + rest / MAX_CHUNK, rest % MAX_CHUNK)
    }
}

/// What an entry takes in its shard's tables: its slot and its share of
/// the index.
const TABLE_BYTES_PER_ENTRY: usize = std::mem::size_of::<Slot>() + index::BYTES_PER_KEY;

/// The hash of the key in `slot`, for the index to rehash by.
fn slot_hash(chunks: &Chunks, hasher: &RandomState, slot: u32) -> u64 {
    let entry = chunks.entry_at(slot).expect("indexed slot is occupied");
    Key::new(entry.key(), hasher).hash()
}

/// The deadline of the key in `slot`, for the deadline index to compare by.
fn slot_deadline(chunks: &Chunks, slot: u32) -> u64 {
    chunks
        .entry_at(slot)
        .and_then(Entry::expire_at_ms)
        .expect("a slot in the deadline index holds a key with a TTL")
}

/// The slab: chunks of slots, each empty or holding one entry.
type Chunks = Vec<Box<[Slot]>>;

impl Slots for Chunks {
    fn entry_at(&self, slot: u32) -> Option<&Entry> {
        let (k, i) = locate(slot as usize);
        self.get(k)?[i].get()
    }

    fn slot_count(&self) -> usize {
        chunk_start(self.len())
    }
}

/// A client's WATCH state: set when any key it watches changes.
pub type WatchFlag = Arc<AtomicBool>;

/// One shard: its entries, their index and their accounting.
#[derive(Debug)]
pub struct Shard {
    hasher: RandomState,
    index: SlotIndex,
    chunks: Chunks,
    /// Live entries per chunk, so empty trailing chunks can be released.
    live_per_chunk: Vec<u32>,
    free: Vec<u32>,
    heap_bytes: usize,
    expires: usize,
    expire_sum_ms: u128,
    deadlines: Deadlines,
    /// Accounted bytes of keys with a TTL, by deadline second: what INFO's
    /// stale share reads, one entry per second instead of one per key.
    deadline_bytes: BTreeMap<u64, usize>,
    reclaimed_expired: u64,
    watchers: hashbrown::HashMap<Box<[u8]>, Vec<WatchFlag>>,
    /// Expired entries that writers met and removed inline, kept until the
    /// write guard reports them (keyspace notifications) and hands them on
    /// to be freed once the shard is released.
    expired_by_writers: Vec<Entry>,
    /// The S3-FIFO queues, while `allkeys-s3fifo` is the policy.
    s3fifo: Option<S3Fifo>,
    /// This shard's part of the snapshot being saved, if one is.
    snapshot: Option<Box<ShardSnapshot>>,
    /// Writes that changed a key here (set, changed in place, deleted
    /// while live): a write guard compares it before and after to tell
    /// whether its command changed anything. Reclaiming expired keys and
    /// evicting do not count; they are reported as key events.
    changes: u64,
    /// Keys inserted that were not here: the only writes that can raise
    /// [`Shard::table_growth_of_next_insert`] (a removal leaves the index's
    /// occupied buckets as they were, and gives the free list a slot).
    new_keys: u64,
    /// Keys per hash slot, when the store counts them (see [`SlotCounter`]).
    slot_keys: Option<SlotKeys>,
}

/// How a store counts keys per hash slot (cluster mode, where a node must
/// tell how many keys a slot holds and list them without a full scan): the
/// server gives the function that maps a key to its slot.
#[derive(Debug, Clone, Copy)]
pub struct SlotCounter {
    pub slot_of: fn(&[u8]) -> u16,
    pub slots: usize,
}

/// A shard's keys per slot: 4 bytes a slot, whatever the key count.
#[derive(Debug)]
struct SlotKeys {
    counter: SlotCounter,
    counts: Box<[u32]>,
}

impl Shard {
    #[cfg(test)]
    pub(crate) fn new(hasher: RandomState) -> Shard {
        Shard::counting_slots(hasher, None)
    }

    /// An empty shard that counts its keys per slot if `counter` is given.
    pub(crate) fn counting_slots(hasher: RandomState, counter: Option<SlotCounter>) -> Shard {
        Shard {
            hasher,
            index: SlotIndex::default(),
            chunks: Vec::new(),
            live_per_chunk: Vec::new(),
            free: Vec::new(),
            heap_bytes: 0,
            expires: 0,
            expire_sum_ms: 0,
            deadlines: Deadlines::default(),
            deadline_bytes: BTreeMap::new(),
            reclaimed_expired: 0,
            watchers: hashbrown::HashMap::new(),
            expired_by_writers: Vec::new(),
            s3fifo: None,
            snapshot: None,
            changes: 0,
            new_keys: 0,
            slot_keys: counter.map(|counter| SlotKeys {
                counter,
                counts: vec![0; counter.slots].into_boxed_slice(),
            }),
        }
    }

    /// Keys held in hash slot `slot`, expired ones not yet reclaimed
    /// included (0 when the shard does not count slots).
    pub fn keys_in_slot(&self, slot: u16) -> usize {
        self.slot_keys
            .as_ref()
            .and_then(|keys| keys.counts.get(slot as usize))
            .map_or(0, |&n| n as usize)
    }

    /// Adds this shard's keys per hash slot to `totals` (one entry per
    /// slot); nothing when the shard does not count slots.
    pub fn add_slot_counts(&self, totals: &mut [u64]) {
        if let Some(keys) = &self.slot_keys {
            for (total, &count) in totals.iter_mut().zip(keys.counts.iter()) {
                *total += u64::from(count);
            }
        }
    }

    /// Up to `max` live keys of hash slot `slot`, skipping the walk when
    /// the shard holds none.
    pub fn keys_of_slot(&self, slot: u16, max: usize, now_ms: u64) -> Vec<&[u8]> {
        let Some(keys) = &self.slot_keys else {
            return Vec::new();
        };
        if self.keys_in_slot(slot) == 0 {
            return Vec::new();
        }
        let slot_of = keys.counter.slot_of;
        self.iter(now_ms)
            .map(Entry::key)
            .filter(|key| slot_of(key) == slot)
            .take(max)
            .collect()
    }

    /// The hash slot of `key`, when the shard counts slots.
    fn hash_slot_of(&self, key: &[u8]) -> Option<u16> {
        self.slot_keys
            .as_ref()
            .map(|keys| (keys.counter.slot_of)(key))
    }

    /// Counts a key in or out of hash slot `hash_slot`.
    fn count_in_slot(&mut self, hash_slot: u16, added: bool) {
        if let Some(keys) = &mut self.slot_keys {
            let count = &mut keys.counts[hash_slot as usize];
            if added {
                *count += 1;
            } else {
                *count -= 1;
            }
        }
    }

    /// How many writes changed a key here (see the field).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// How many keys were inserted here that were not here (see the field).
    pub fn new_keys(&self) -> u64 {
        self.new_keys
    }

    /// Continues the change count of `old`, the shard this one replaces
    /// (FLUSHDB), counting the flush as a change.
    pub(crate) fn continue_changes_of(&mut self, old: &Shard) {
        self.changes = old.changes + 1;
    }

    /// Brings the shard's S3-FIFO queues in line with the policy:
    /// `epoch` is [`crate::AccessConfig::s3fifo_epoch`]. Queues built under
    /// an earlier selection of the policy restart with every key in the
    /// main queue as of `clock`, and go when another policy is chosen.
    pub fn follow_policy(&mut self, epoch: Option<u32>, clock: Clock) {
        if self.s3fifo.as_ref().map(S3Fifo::epoch) == epoch {
            return;
        }
        self.s3fifo = epoch.map(|epoch| {
            for entry in self
                .chunks
                .iter()
                .flat_map(|c| c.iter().filter_map(Slot::get))
            {
                entry.access().restart_s3fifo(clock);
            }
            S3Fifo::new(epoch)
        });
    }

    /// Under `allkeys-s3fifo`, removes and returns the key S3-FIFO picks.
    /// `None` when the shard is empty, another policy is in force, or this
    /// call's bounded search found no key yet (call again).
    pub fn evict_s3fifo(&mut self) -> Option<Entry> {
        let live = self.len();
        let Shard {
            s3fifo,
            chunks,
            hasher,
            ..
        } = self;
        let slot = s3fifo.as_mut()?.choose_victim(chunks, hasher, live)?;
        Some(self.take_slot(slot))
    }

    /// Registers `flag` to be set when `key` changes.
    pub fn watch(&mut self, key: &[u8], flag: &WatchFlag) {
        let flags = self.watchers.entry(key.into()).or_default();
        if !flags.iter().any(|f| Arc::ptr_eq(f, flag)) {
            flags.push(flag.clone());
        }
    }

    /// Removes `flag` from `key`'s watchers.
    pub fn unwatch(&mut self, key: &[u8], flag: &WatchFlag) {
        if let Some(flags) = self.watchers.get_mut(key) {
            flags.retain(|f| !Arc::ptr_eq(f, flag));
            if flags.is_empty() {
                self.watchers.remove(key);
            }
        }
    }

    /// Marks every client watching `key`: it was written.
    fn touch(&self, key: &[u8]) {
        if self.watchers.is_empty() {
            return;
        }
        for flag in self.watchers.get(key).into_iter().flatten() {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Takes over the watchers of `old`, the shard this one replaces
    /// (FLUSHDB), marking those whose key existed there, as Redis does.
    pub fn adopt_watchers(&mut self, old: &Shard) {
        for (key, flags) in &old.watchers {
            if old.get_even_expired(key).is_some() {
                flags.iter().for_each(|f| f.store(true, Ordering::Relaxed));
            }
        }
        self.watchers = old.watchers.clone();
    }

    /// Swaps what two shards hold (SWAPDB swaps databases shard by shard),
    /// each keeping its own watchers, since clients watch a key in a
    /// database, not a value. Watchers whose key exists in either shard
    /// are marked first, as Redis's touchAllWatchedKeysInDb marks them for
    /// both databases.
    pub fn swap_contents(&mut self, other: &mut Shard) {
        for (watched, present) in [(&*self, &*other), (&*other, &*self)] {
            for (key, flags) in &watched.watchers {
                let exists = |shard: &Shard| shard.get_even_expired(key).is_some();
                if exists(watched) || exists(present) {
                    flags.iter().for_each(|f| f.store(true, Ordering::Relaxed));
                }
            }
        }
        self.preserve_rest_for_snapshot();
        other.preserve_rest_for_snapshot();
        std::mem::swap(self, other);
        std::mem::swap(&mut self.watchers, &mut other.watchers);
        std::mem::swap(&mut self.snapshot, &mut other.snapshot);
        std::mem::swap(&mut self.changes, &mut other.changes);
        self.changes += 1;
        other.changes += 1;
    }

    /// Takes over the snapshot of `old`, the shard this one replaces
    /// (FLUSHDB), once what the snapshot still needs of `old` is copied.
    pub fn adopt_snapshot(&mut self, old: &mut Shard) {
        old.preserve_rest_for_snapshot();
        self.snapshot = old.snapshot.take();
    }

    /// Starts this shard's part of a snapshot of the instant `at_ms`.
    pub(crate) fn begin_snapshot(&mut self, at_ms: u64) {
        self.snapshot = Some(Box::new(ShardSnapshot::new(at_ms, self.slot_count())));
    }

    /// Walks up to `max_slots` more slots of the running snapshot (see
    /// `snapshot.rs`), visiting the entries of its instant found there.
    /// True once the walk is over (or no snapshot runs).
    pub fn snapshot_walk(&self, max_slots: usize, visit: impl FnMut(&Entry)) -> bool {
        match &self.snapshot {
            Some(snapshot) => snapshot.walk(max_slots, |at| self.slot(at), visit),
            None => true,
        }
    }

    /// Entries as they were at the snapshot's instant, copied by writers
    /// since the last call.
    pub fn snapshot_take_preserved(&self) -> Vec<Entry> {
        self.snapshot
            .as_ref()
            .map_or_else(Vec::new, |s| s.take_preserved())
    }

    /// Ends this shard's part of the snapshot, returning the copies not
    /// yet taken (none once the walk is over and they were taken).
    pub(crate) fn end_snapshot(&mut self) -> Vec<Entry> {
        self.snapshot
            .take()
            .map_or_else(Vec::new, |s| s.take_preserved())
    }

    /// Whether a snapshot runs and its walk here is over.
    pub fn snapshot_walked(&self) -> bool {
        self.snapshot.as_ref().is_some_and(|s| s.walked())
    }

    /// What the running snapshot holds for this shard: its bitmap and the
    /// copies waiting for the saver.
    pub fn snapshot_bytes(&self) -> usize {
        self.snapshot.as_ref().map_or(0, |s| s.bytes())
    }

    /// Before `slot`'s entry changes or leaves: a running snapshot keeps it
    /// as it was, if it still needs it.
    fn preserve_for_snapshot(&mut self, slot: u32) {
        if let Some(snapshot) = self.snapshot.as_deref_mut() {
            if let Some(entry) = self.chunks.entry_at(slot) {
                snapshot.preserve(slot as usize, entry);
            }
        }
    }

    /// Before a change to the whole shard: a running snapshot copies what
    /// its walk has not reached.
    fn preserve_rest_for_snapshot(&mut self) {
        if let Some(snapshot) = self.snapshot.as_deref_mut() {
            let chunks = &self.chunks;
            let slots =
                (0..chunks.slot_count()).filter_map(|at| Some((at, chunks.entry_at(at as u32)?)));
            snapshot.preserve_rest(slots);
        }
    }

    /// Sizes the hash index for `more` keys beyond those here, so a bulk
    /// load (an RDB file that says how many keys follow) does not rebuild it
    /// as it grows.
    pub fn reserve(&mut self, more: usize) {
        let Shard {
            index,
            chunks,
            hasher,
            ..
        } = self;
        index.reserve(more, |slot| slot_hash(chunks, hasher, slot));
    }

    /// Keys stored, including expired ones not yet reclaimed (as Redis's
    /// DBSIZE counts them).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when the shard holds no key.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Keys with a TTL.
    pub fn expires(&self) -> usize {
        self.expires
    }

    /// Sum of the deadlines of keys with a TTL, for an exact average TTL.
    pub fn expire_sum_ms(&self) -> u128 {
        self.expire_sum_ms
    }

    /// Expired keys this shard has removed since it was created.
    pub fn reclaimed_expired(&self) -> u64 {
        self.reclaimed_expired
    }

    /// Bytes attributable to stored data: keys, values, slots and index.
    pub fn used_bytes(&self) -> usize {
        self.heap_bytes + self.table_bytes() + self.expiry_index_bytes()
    }

    /// Bytes of keys and values (and their collections) themselves.
    pub fn data_bytes(&self) -> usize {
        self.heap_bytes
    }

    /// Bytes of the structures that hold the keys: slots, hash index,
    /// free list and S3-FIFO queues.
    pub fn table_bytes(&self) -> usize {
        self.index.bytes()
            + self.slot_count() * std::mem::size_of::<Slot>()
            + self.free.capacity() * std::mem::size_of::<u32>()
            + self.s3fifo.as_ref().map_or(0, S3Fifo::bytes)
    }

    /// The most one more key can add to [`Shard::table_bytes`]: a new
    /// chunk of slots (and free-list room for it) when no slot is free,
    /// the index doubling when it is full, and the S3-FIFO small queue
    /// doubling when it is full. Writers reserve this much
    /// besides their own bytes, so a key landing on a growing shard cannot
    /// take the dataset past `maxmemory`.
    pub fn table_growth_of_next_insert(&self) -> usize {
        let mut growth = self.index.growth_of_next_insert()
            + self
                .s3fifo
                .as_ref()
                .map_or(0, S3Fifo::growth_of_next_insert);
        if self.free.is_empty() {
            // A new chunk, whose free slots the list takes; the list grows
            // as a Vec does, to what is needed or double its capacity.
            let len = chunk_len(self.chunks.len());
            let free_capacity = len.max(2 * self.free.capacity()).max(4);
            growth += len * std::mem::size_of::<Slot>()
                + (free_capacity - self.free.capacity()) * std::mem::size_of::<u32>();
        }
        growth
    }

    /// Bytes of the deadline index of keys with a TTL.
    pub fn expiry_index_bytes(&self) -> usize {
        self.deadlines.bytes()
    }

    /// The earliest deadline of any key here.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|(at, _)| at)
    }

    /// Unlinks up to `max` keys whose deadline is at or before `now_ms`,
    /// earliest first, into `out`. The caller drops them after releasing
    /// the shard, so freeing their memory never lengthens the lock hold.
    pub fn reclaim_expired(&mut self, now_ms: u64, max: usize, out: &mut Vec<Entry>) -> Reclaimed {
        let mut done = Reclaimed::default();
        while done.keys < max {
            match self.deadlines.first() {
                Some((at, slot)) if at <= now_ms => {
                    out.push(self.take_slot(slot));
                    self.reclaimed_expired += 1;
                    done.keys += 1;
                    done.max_lag_ms = done.max_lag_ms.max(now_ms - at);
                }
                _ => break,
            }
        }
        done
    }

    /// Bytes held by keys whose deadline second is over and that are still
    /// here. Read from per-second totals, so it costs one step per second
    /// of stale deadlines however many keys expired in it.
    pub fn stale_bytes(&self, now_ms: u64) -> usize {
        self.deadline_bytes
            .range(..now_ms / 1000)
            .map(|(_, bytes)| bytes)
            .sum()
    }

    /// Offers the entries of the slots from `from` on, `budget` slots at
    /// most, to `mover` (see `crate::defrag`). Returns the blocks moved and
    /// kept, and the slot to go on from, `None` past the last.
    pub(crate) fn relocate_entries(
        &mut self,
        from: u32,
        budget: usize,
        mover: &mut dyn Relocate,
    ) -> (u64, u64, Option<u32>) {
        let end = self.slot_count();
        let (mut moved, mut kept) = (0, 0);
        let mut slot = from as usize;
        while slot < end && slot - (from as usize) < budget {
            let (k, i) = locate(slot);
            if let Some(entry) = self.chunks[k][i].get_mut() {
                match entry.relocate(mover) {
                    true => moved += 1,
                    false => kept += 1,
                }
            }
            slot += 1;
        }
        (moved, kept, (slot < end).then_some(slot as u32))
    }

    /// How many slots exist (live or free): the upper bound of a slot cursor.
    pub fn slot_count(&self) -> usize {
        chunk_start(self.chunks.len())
    }

    /// The bytes one entry accounts for, as MEMORY USAGE reports it: its key
    /// and value, its slot, and its share of the index.
    pub fn entry_bytes(entry: &Entry) -> usize {
        entry.heap_bytes() + TABLE_BYTES_PER_ENTRY
    }

    /// What giving `entry` a deadline adds at most: the deadline in its
    /// block and what one insert can add to the deadline index (a full run
    /// splitting); 0 for an entry that has one.
    pub fn deadline_growth(entry: &Entry) -> usize {
        match entry.expire_at_ms() {
            Some(_) => 0,
            None => entry.block_growth_for_deadline() + Deadlines::max_insert_growth(),
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        Key::new(key, &self.hasher).hash()
    }

    /// Loads ahead what looking up each key of `lookups` (a key and the
    /// shard holding it) will read: every key's index bucket, then every
    /// key's slot, then every key's entry. Each step reads what the step
    /// before loaded, so the cache misses of a multi-key command overlap
    /// instead of following one another: MSET and MGET of 10 random keys
    /// spent a quarter of their time waiting on those three misses a key.
    pub(crate) fn prefetch_lookups<'a>(mut lookups: impl Iterator<Item = (&'a Shard, Key<'a>)>) {
        const AT_ONCE: usize = 16;
        loop {
            let mut batch: [Option<(&Shard, u64)>; AT_ONCE] = [None; AT_ONCE];
            for (at, (shard, key)) in batch.iter_mut().zip(lookups.by_ref()) {
                let hash = key.hash();
                shard.index.prefetch_home(hash);
                *at = Some((shard, hash));
            }
            if batch[0].is_none() {
                return;
            }
            let mut slots = [None; AT_ONCE];
            for (slot, &(shard, hash)) in slots.iter_mut().zip(batch.iter().flatten()) {
                let Some((k, i)) = shard.index.likely_slot(hash).map(|s| locate(s as usize)) else {
                    continue;
                };
                if let Some(entry) = shard.chunks.get(k).and_then(|chunk| chunk.get(i)) {
                    crate::prefetch::read(entry);
                    *slot = Some((shard, k, i));
                }
            }
            for (shard, k, i) in slots.into_iter().flatten() {
                if let Some(entry) = shard.chunks[k][i].get() {
                    entry.prefetch();
                }
            }
        }
    }

    /// The entry in `slot`, if the slot is occupied.
    pub fn slot(&self, slot: usize) -> Option<&Entry> {
        self.chunks.entry_at(u32::try_from(slot).ok()?)
    }

    fn slot_mut(&mut self, slot: u32) -> &mut Entry {
        let (k, i) = locate(slot as usize);
        self.chunks[k][i]
            .get_mut()
            .expect("indexed slot is occupied")
    }

    fn find<'k>(&self, key: impl AsKey<'k>) -> Option<u32> {
        let key = key.hashed(&self.hasher);
        self.index.find(key.hash(), |slot| {
            self.slot(slot as usize)
                .is_some_and(|e| e.key() == key.bytes())
        })
    }

    /// The live entry for `key`; an expired entry reads as absent.
    pub fn get<'k>(&self, key: impl AsKey<'k>, now_ms: u64) -> Option<&Entry> {
        let entry = self.slot(self.find(key)? as usize)?;
        (!entry.is_expired(now_ms)).then_some(entry)
    }

    /// The entry for `key` whether or not it has expired, for callers that
    /// act on expired entries themselves.
    pub fn get_even_expired<'k>(&self, key: impl AsKey<'k>) -> Option<&Entry> {
        self.slot(self.find(key)? as usize)
    }

    /// Mutable access to the live entry for `key`. An expired entry found
    /// on the way is reclaimed.
    pub fn get_mut<'k>(&mut self, key: impl AsKey<'k>, now_ms: u64) -> Option<EntryMut<'_>> {
        let slot = self.live_slot(key, now_ms)?;
        Some(self.entry_mut_at(slot))
    }

    /// The slot of the live entry for `key`, for [`Shard::entry_mut_at`]:
    /// a caller that goes on to create the key when it is missing looks it
    /// up once. An expired entry found on the way is reclaimed.
    pub(crate) fn live_slot<'k>(&mut self, key: impl AsKey<'k>, now_ms: u64) -> Option<u32> {
        let slot = self.find(key)?;
        if self.slot_mut(slot).is_expired(now_ms) {
            let expired = self.take_slot(slot);
            self.note_expired_by_writer(expired);
            return None;
        }
        Some(slot)
    }

    /// Mutable access to the entry in `slot`, as [`Shard::live_slot`]
    /// found it.
    pub(crate) fn entry_mut_at(&mut self, slot: u32) -> EntryMut<'_> {
        EntryMut {
            shard: self,
            slot,
            heap_before: None,
            modified: false,
        }
    }

    /// Stores `entry` under its key, replacing any previous entry in place
    /// (same slot). Returns the previous value if it was live.
    pub fn insert(&mut self, entry: Entry, now_ms: u64) -> Option<Entry> {
        let hash = self.hash(entry.key());
        self.insert_hashed(entry, hash, now_ms)
    }

    /// [`Shard::insert`] of an entry whose key's hash is `hash`.
    pub(crate) fn insert_hashed(&mut self, entry: Entry, hash: u64, now_ms: u64) -> Option<Entry> {
        let found = self.find(Key::with_hash(entry.key(), hash));
        self.insert_found(found, entry, hash, now_ms)
    }

    /// [`Shard::insert_hashed`] of the string `bytes`. When `key` holds a
    /// live string whose block has the size the new one needs, the new
    /// entry is written over it ([`Entry::overwrite`]), and there is no
    /// previous entry to return.
    pub(crate) fn insert_str(
        &mut self,
        key: Key,
        bytes: &[u8],
        expire_at_ms: Option<u64>,
        access: Access,
        now_ms: u64,
    ) -> Option<Entry> {
        let contents = Contents::of_str(key.bytes(), bytes, expire_at_ms);
        let found = self.find(key);
        let reusable = found.filter(|&slot| {
            self.slot(slot as usize)
                .is_some_and(|old| !old.is_expired(now_ms) && old.fits_in_place(&contents))
        });
        let Some(slot) = reusable else {
            let entry = Entry::with_contents(contents, access);
            return self.insert_found(found, entry, key.hash(), now_ms);
        };
        self.touch(key.bytes());
        self.changes += 1;
        self.preserve_for_snapshot(slot);
        // The block keeps its size, so only a deadline changes the totals;
        // the old one leaves the index while the block still holds it.
        let old = self.slot(slot as usize).expect("indexed slot is occupied");
        let old_deadline = old.expire_at_ms();
        let bytes = if old_deadline.is_some() || expire_at_ms.is_some() {
            Shard::entry_bytes(old)
        } else {
            0
        };
        self.track_expire(slot, old_deadline, None, bytes);
        let follows_s3fifo = self.s3fifo.is_some();
        let entry = self.slot_mut(slot);
        let old_access = entry.access().duplicate();
        entry.overwrite(contents, access);
        if follows_s3fifo {
            entry.access().inherit_s3fifo(&old_access);
        }
        self.track_expire(slot, None, expire_at_ms, bytes);
        None
    }

    /// Stores `entry`, whose key is indexed at `found` if anywhere.
    fn insert_found(
        &mut self,
        found: Option<u32>,
        entry: Entry,
        hash: u64,
        now_ms: u64,
    ) -> Option<Entry> {
        self.touch(entry.key());
        self.changes += 1;
        if let Some(slot) = found {
            self.preserve_for_snapshot(slot);
            self.unaccount(slot);
            let old = std::mem::replace(self.slot_mut(slot), entry);
            if self.s3fifo.is_some() {
                self.slot_mut(slot).access().inherit_s3fifo(old.access());
            }
            self.account(slot);
            if old.is_expired(now_ms) {
                self.note_expired_by_writer(old);
                return None;
            }
            return Some(old);
        }
        self.new_keys += 1;
        let hash_slot = self.hash_slot_of(entry.key());
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.grow(),
        };
        if let Some(snapshot) = self.snapshot.as_deref_mut() {
            snapshot.claim(slot as usize);
        }
        let (k, i) = locate(slot as usize);
        self.chunks[k][i].put(entry);
        self.live_per_chunk[k] += 1;
        let Shard {
            index,
            chunks,
            hasher,
            s3fifo,
            ..
        } = self;
        index.insert(hash, slot, |other| slot_hash(chunks, hasher, other));
        if let Some(s3fifo) = s3fifo {
            s3fifo.admit(chunks, slot, hash, index.len());
        }
        self.account(slot);
        if let Some(hash_slot) = hash_slot {
            self.count_in_slot(hash_slot, true);
        }
        None
    }

    /// Removes `key`. Returns its entry if it was live; an expired entry is
    /// reclaimed and reported as absent.
    pub fn remove<'k>(&mut self, key: impl AsKey<'k>, now_ms: u64) -> Option<Entry> {
        let removed = self.take_live(key, now_ms);
        self.changes += u64::from(removed.is_some());
        removed
    }

    /// [`Shard::remove`] that is no write's change: an eviction, which is
    /// reported as a key event instead.
    pub(crate) fn take_live<'k>(&mut self, key: impl AsKey<'k>, now_ms: u64) -> Option<Entry> {
        let slot = self.find(key)?;
        let entry = self.take_slot(slot);
        if entry.is_expired(now_ms) {
            self.note_expired_by_writer(entry);
            return None;
        }
        Some(entry)
    }

    fn note_expired_by_writer(&mut self, entry: Entry) {
        self.reclaimed_expired += 1;
        self.expired_by_writers.push(entry);
    }

    /// Expired entries removed inline by writers since the last call.
    pub fn take_expired_by_writers(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.expired_by_writers)
    }

    /// Adds a chunk of free slots and returns one of them.
    fn grow(&mut self) -> u32 {
        let k = self.chunks.len();
        let (first, len) = (chunk_start(k), chunk_len(k));
        assert!(
            first + len <= index::MAX_SLOTS,
            "shard slot space exhausted"
        );
        self.chunks.push((0..len).map(|_| Slot::VACANT).collect());
        self.live_per_chunk.push(0);
        self.free
            .extend((first as u32 + 1..(first + len) as u32).rev());
        first as u32
    }

    fn take_slot(&mut self, slot: u32) -> Entry {
        self.preserve_for_snapshot(slot);
        let hash = self.hash(
            self.slot(slot as usize)
                .expect("indexed slot is occupied")
                .key(),
        );
        self.index.remove(hash, slot);
        self.unaccount(slot);
        let (k, i) = locate(slot as usize);
        let entry = self.chunks[k][i].take().expect("indexed slot is occupied");
        self.live_per_chunk[k] -= 1;
        if let Some(hash_slot) = self.hash_slot_of(entry.key()) {
            self.count_in_slot(hash_slot, false);
        }
        if let Some(s3fifo) = &mut self.s3fifo {
            s3fifo.forget(&entry);
        }
        self.touch(entry.key());
        self.free.push(slot);
        self.release_unused();
        entry
    }

    /// Gives memory back as the shard empties, as Redis shrinks its dicts:
    /// everything when the last key goes, trailing chunks that hold no key,
    /// and index buckets when the index is three-quarters empty. Live keys
    /// never move, so SCAN's guarantee holds.
    fn release_unused(&mut self) {
        if self.index.is_empty() {
            self.index = SlotIndex::default();
            self.chunks = Vec::new();
            self.live_per_chunk = Vec::new();
            self.free = Vec::new();
            if let Some(s3fifo) = &mut self.s3fifo {
                *s3fifo = S3Fifo::new(s3fifo.epoch());
            }
            return;
        }
        if self.live_per_chunk.last() == Some(&0) {
            while self.live_per_chunk.last() == Some(&0) {
                self.chunks.pop();
                self.live_per_chunk.pop();
            }
            let end = self.slot_count();
            self.free.retain(|&s| (s as usize) < end);
            self.free.shrink_to(end);
        }
        if self.index.len() < self.index.capacity() / 4 {
            let Shard {
                index,
                chunks,
                hasher,
                ..
            } = self;
            index.shrink(|slot| slot_hash(chunks, hasher, slot));
        }
    }

    /// Adds the bytes and TTL of the entry in `slot` to the totals and the
    /// deadline index.
    fn account(&mut self, slot: u32) {
        let (heap, bytes, deadline) = self.accounted(slot);
        self.heap_bytes += heap;
        self.track_expire(slot, None, deadline, bytes);
    }

    /// Removes the bytes and TTL of the entry in `slot` from the totals and
    /// the deadline index, before it leaves or changes size.
    fn unaccount(&mut self, slot: u32) {
        let (heap, bytes, deadline) = self.accounted(slot);
        self.heap_bytes -= heap;
        self.track_expire(slot, deadline, None, bytes);
    }

    /// What the entry in `slot` counts for: its heap bytes, its bytes as
    /// MEMORY USAGE reports them, and its deadline.
    fn accounted(&self, slot: u32) -> (usize, usize, Option<u64>) {
        let entry = self
            .slot(slot as usize)
            .expect("accounted slot is occupied");
        let heap = entry.heap_bytes();
        (heap, heap + TABLE_BYTES_PER_ENTRY, entry.expire_at_ms())
    }

    /// The one place TTL bookkeeping changes: count, sum and index.
    /// `bytes` is what the entry in `slot` accounts for.
    fn track_expire(&mut self, slot: u32, old: Option<u64>, new: Option<u64>, bytes: usize) {
        if let Some(at) = old {
            self.expires -= 1;
            self.expire_sum_ms -= at as u128;
            self.deadlines
                .remove(at, slot, |other| slot_deadline(&self.chunks, other));
            self.add_deadline_bytes(at, -(bytes as isize));
        }
        if let Some(at) = new {
            self.expires += 1;
            self.expire_sum_ms += at as u128;
            self.deadlines
                .insert(at, slot, |other| slot_deadline(&self.chunks, other));
            self.add_deadline_bytes(at, bytes as isize);
        }
    }

    fn add_deadline_bytes(&mut self, at: u64, bytes: isize) {
        let second = at / 1000;
        let total = self.deadline_bytes.entry(second).or_insert(0);
        *total = total.wrapping_add_signed(bytes);
        if *total == 0 {
            self.deadline_bytes.remove(&second);
        }
    }

    /// Live entries from slot `from` on, visiting at most `max_slots` slots
    /// and stopping after `max_live` live entries. Returns the slot to
    /// continue from (`None` past the last slot) and the live entries seen.
    pub fn scan(
        &self,
        from: usize,
        max_slots: usize,
        max_live: usize,
        now_ms: u64,
        mut visit: impl FnMut(&Entry),
    ) -> (Option<usize>, usize) {
        let end = self.slot_count();
        let stop = from.saturating_add(max_slots).min(end);
        let mut live = 0;
        let mut slot = from;
        while slot < stop && live < max_live {
            if let Some(entry) = self.slot(slot).filter(|e| !e.is_expired(now_ms)) {
                visit(entry);
                live += 1;
            }
            slot += 1;
        }
        ((slot < end).then_some(slot), live)
    }

    /// Every live entry.
    pub fn iter(&self, now_ms: u64) -> impl Iterator<Item = &Entry> {
        self.chunks
            .iter()
            .flat_map(|c| c.iter().filter_map(Slot::get))
            .filter(move |e| !e.is_expired(now_ms))
    }

    /// A random live entry, in bounded work: [`RANDOM_PROBES`] random
    /// slots (each a live key with the probability the slab is full, so
    /// almost always one in a dense shard), then a walk of at most
    /// [`RANDOM_WALK_STEPS`] steps from a random slot, a chunk holding no
    /// key passed in one step. `None` when both miss: the shard is sparse
    /// and the keys near the walk's start have expired; callers try another
    /// shard, or another time. Probes pick uniformly; a walk favours a key
    /// after a run of empty or expired slots, as Redis's bucket sampling
    /// favours keys in sparse buckets.
    pub fn random(&self, now_ms: u64, rng: &mut impl rand::Rng) -> Option<&Entry> {
        let slots = self.slot_count();
        if self.is_empty() {
            return None;
        }
        for _ in 0..RANDOM_PROBES {
            let hit = self.slot(rng.gen_range(0..slots));
            if let Some(entry) = hit.filter(|e| !e.is_expired(now_ms)) {
                return Some(entry);
            }
        }
        let mut slot = rng.gen_range(0..slots);
        for _ in 0..RANDOM_WALK_STEPS {
            let (k, i) = locate(slot);
            if self.live_per_chunk[k] == 0 {
                slot = chunk_start(k + 1) % slots;
                continue;
            }
            if let Some(entry) = self.chunks[k][i].get().filter(|e| !e.is_expired(now_ms)) {
                return Some(entry);
            }
            slot = (slot + 1) % slots;
        }
        None
    }
}

/// A live entry borrowed for modification; the shard's totals are brought
/// up to date when it is dropped, whatever was changed, and its watchers
/// are marked if it was modified (see the module notes).
pub struct EntryMut<'a> {
    shard: &'a mut Shard,
    slot: u32,
    /// The entry's heap bytes before the edit that may resize it, taken
    /// by that edit: the shard's totals are synced only after one, and an
    /// INCR of an integer, which never resizes, works out no size at all.
    heap_before: Option<usize>,
    modified: bool,
}

impl EntryMut<'_> {
    /// The entry as it is now.
    pub fn entry(&self) -> &Entry {
        let slot = self.slot as usize;
        self.shard.slot(slot).expect("borrowed slot is occupied")
    }

    /// The value, for in-place changes (APPEND, INCR, SETRANGE). Counts
    /// as a modification unless [`EntryMut::unchanged`] follows.
    pub fn value_mut(&mut self) -> &mut crate::Value {
        self.modified = true;
        self.shard.preserve_for_snapshot(self.slot);
        let entry = self.shard.slot_mut(self.slot);
        may_resize(&mut self.heap_before, entry);
        entry.value_mut()
    }

    /// Makes the value the integer-encoded string `n`, in place when it
    /// is one already.
    pub fn set_int(&mut self, n: i64) {
        self.modified = true;
        self.shard.preserve_for_snapshot(self.slot);
        let entry = self.shard.slot_mut(self.slot);
        if !entry.holds_int() {
            may_resize(&mut self.heap_before, entry);
        }
        entry.set_int(n);
    }

    /// Declares that nothing was changed through this guard after all, so
    /// watchers are not marked: Redis does not signal a write that changed
    /// nothing (SADD of a present member, ZADD of an equal score).
    pub fn unchanged(&mut self) {
        self.modified = false;
    }

    /// Sets or clears the TTL, keeping the shard's TTL totals exact. The
    /// entry's size changes with it (a deadline takes room only when set).
    pub fn set_expire_at_ms(&mut self, at: Option<u64>) {
        self.modified = true;
        self.shard.preserve_for_snapshot(self.slot);
        self.sync_bytes();
        self.shard.unaccount(self.slot);
        self.shard.slot_mut(self.slot).set_expire_at_ms(at);
        self.shard.account(self.slot);
    }

    /// Deletes the entry and returns it.
    pub fn remove(mut self) -> Entry {
        self.sync_bytes();
        self.shard.changes += 1;
        let entry = self.shard.take_slot(self.slot);
        self.slot = u32::MAX;
        entry
    }

    /// Brings the shard's totals up to date with the entry's size after an
    /// edit that may have resized it, moving an edited string back inline
    /// first.
    fn sync_bytes(&mut self) {
        let Some(before) = self.heap_before.take() else {
            return;
        };
        let entry = self.shard.slot_mut(self.slot);
        entry.compact();
        let now = entry.heap_bytes();
        if now == before {
            return;
        }
        let deadline = entry.expire_at_ms();
        self.shard.heap_bytes = self.shard.heap_bytes + now - before;
        if let Some(at) = deadline {
            self.shard
                .add_deadline_bytes(at, now as isize - before as isize);
        }
    }
}

/// Notes `entry`'s size before an edit that may change it, unless an
/// earlier edit through the same guard did.
fn may_resize(heap_before: &mut Option<usize>, entry: &Entry) {
    heap_before.get_or_insert_with(|| entry.heap_bytes());
}

impl Drop for EntryMut<'_> {
    fn drop(&mut self) {
        if self.slot != u32::MAX {
            self.sync_bytes();
            if self.modified {
                self.shard.changes += 1;
                // Most keys have no watcher: finding the key is skipped.
                if !self.shard.watchers.is_empty() {
                    self.shard.touch(self.entry().key());
                }
            }
        }
    }
}

#[cfg(test)]
impl Shard {
    /// Checks the S3-FIFO bookkeeping against the slots.
    pub(crate) fn assert_s3fifo_consistent(&self) {
        let s3fifo = self.s3fifo.as_ref().expect("s3fifo is the policy");
        s3fifo.assert_consistent(&self.chunks);
    }

    /// Bytes held by the S3-FIFO queues.
    pub(crate) fn s3fifo_bytes(&self) -> Option<usize> {
        self.s3fifo.as_ref().map(S3Fifo::bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Access, AccessConfig, Clock};
    use crate::value::{Str, Value};

    fn entry(key: &str, value: &str, ttl: Option<u64>) -> Entry {
        let clock = Clock { micros: 0 };
        Entry::new(
            key.as_bytes(),
            Value::Str(Str::from_bytes(value.as_bytes())),
            ttl,
            Access::new(&AccessConfig::default(), clock),
        )
    }

    #[test]
    fn slots_map_to_chunks_one_to_one() {
        let mut expected = Vec::new();
        for k in 0..8 {
            assert_eq!(chunk_start(k), expected.len());
            expected.extend((0..chunk_len(k)).map(|i| (k, i)));
        }
        for (slot, want) in expected.into_iter().enumerate() {
            assert_eq!(locate(slot), want, "slot {slot}");
        }
    }

    #[test]
    fn slot_counts_follow_inserts_and_removals() {
        let counter = SlotCounter {
            slot_of: |key| key[0] as u16 % 4,
            slots: 4,
        };
        let mut shard = Shard::counting_slots(RandomState::default(), Some(counter));
        for key in ["a1", "a2", "b1", "e1"] {
            shard.insert(entry(key, "v", None), 0);
        }
        // 'a' (97) and 'e' (101) are slot 1, 'b' (98) slot 2.
        shard.insert(entry("a1", "overwritten", None), 0);
        assert_eq!((shard.keys_in_slot(1), shard.keys_in_slot(2)), (3, 1));
        shard.remove(b"a1", 0);
        assert_eq!(shard.keys_in_slot(1), 2);
        let mut keys = shard.keys_of_slot(1, 10, 0);
        keys.sort();
        assert_eq!(keys, vec![&b"a2"[..], b"e1"]);
        assert_eq!(shard.keys_of_slot(1, 1, 0).len(), 1);
        assert!(shard.keys_of_slot(3, 10, 0).is_empty());
    }

    #[test]
    fn accounting_returns_to_baseline() {
        let mut shard = Shard::new(RandomState::default());
        for i in 0..1000 {
            shard.insert(
                entry(
                    &format!("key{i}"),
                    &"v".repeat(i % 50 + 1),
                    Some(5_000 + i as u64),
                ),
                0,
            );
        }
        assert_eq!(shard.len(), 1000);
        assert_eq!(shard.expires(), 1000);
        let full = shard.used_bytes();
        for i in 0..1000 {
            let mut e = shard.get_mut(format!("key{i}").as_bytes(), 0).unwrap();
            e.value_mut()
                .as_str_mut()
                .unwrap()
                .make_growable()
                .extend_from_slice(b"xyz");
            e.set_expire_at_ms(None);
        }
        assert_eq!(shard.expires(), 0);
        assert!(shard.used_bytes() > full);
        for i in 0..1000 {
            assert!(shard.remove(format!("key{i}").as_bytes(), 0).is_some());
        }
        assert_eq!(shard.len(), 0);
        assert_eq!(shard.heap_bytes, 0);
        assert_eq!(shard.expire_sum_ms, 0);
    }

    /// Checks the shard's totals against its entries: the heap bytes
    /// against what they hold, the stale share against what the keys with
    /// a TTL hold, and the deadline index against the TTL count.
    fn check_totals(shard: &Shard) {
        let held: usize = shard.iter(0).map(Entry::heap_bytes).sum();
        assert_eq!(shard.data_bytes(), held);
        let with_ttl: usize = shard
            .iter(0)
            .filter(|e| e.expire_at_ms().is_some())
            .map(Shard::entry_bytes)
            .sum();
        assert_eq!(shard.stale_bytes(u64::MAX), with_ttl);
        assert_eq!(shard.deadlines.len(), shard.expires());
    }

    /// Edits that rebuild an entry's block (a TTL set or cleared, an inline
    /// string edited in place) keep the totals equal to what the entries
    /// hold (`check_totals`).
    #[test]
    fn accounting_follows_block_rebuilds() {
        let mut shard = Shard::new(RandomState::default());
        for i in 0..300u64 {
            let ttl = (i % 2 == 0).then_some(10_000 + i);
            shard.insert(entry(&format!("k{i}"), &i.to_string(), ttl), 0);
        }
        check_totals(&shard);
        for i in 0..300u64 {
            let key = format!("k{i}");
            let mut e = shard.get_mut(key.as_bytes(), 0).unwrap();
            match i % 4 {
                0 => e.set_expire_at_ms(None),
                1 => e.set_expire_at_ms(Some(20_000)),
                2 => *e.value_mut().as_str_mut().unwrap() = Str::Int(-1),
                _ => e
                    .value_mut()
                    .as_str_mut()
                    .unwrap()
                    .make_growable()
                    .push(b'x'),
            }
            drop(e);
            check_totals(&shard);
        }
        assert_eq!(shard.expires(), 150);
    }

    /// SET of a string as long as the one it replaces is written over the
    /// key's block (`Shard::insert_str`): the totals, the deadline index
    /// and the watchers follow as for a new block, and an expired key is
    /// still reclaimed as one.
    #[test]
    fn strings_written_in_place_keep_totals_deadlines_and_watchers() {
        let mut shard = Shard::new(RandomState::default());
        let set_at = |shard: &mut Shard, key: &str, bytes: &[u8], ttl: Option<u64>, now_ms| {
            let key = Key::new(key.as_bytes(), &shard.hasher.clone());
            let access = Access::new(&AccessConfig::default(), Clock { micros: 0 });
            shard.insert_str(key, bytes, ttl, access, now_ms)
        };
        let set =
            |shard: &mut Shard, key: &str, bytes: &[u8], ttl| set_at(shard, key, bytes, ttl, 0);
        let block_of = |shard: &Shard, key: &str| {
            let entry = shard.get(key.as_bytes(), 0);
            entry.map(|e| e.access() as *const Access)
        };
        for i in 0..300u64 {
            shard.insert(entry(&format!("k{i}"), "abcdefghijklmno", None), 0);
        }
        let flag = WatchFlag::default();
        shard.watch(b"k7", &flag);
        let changes = shard.changes();
        // Twice over, so that each key gains, moves or loses a deadline.
        for pass in 0..2 {
            for i in 0..300u64 {
                // The block's 27 bytes: 15 of value, or a number or 7
                // bytes with a deadline.
                let (bytes, ttl): (&[u8], _) = match (i + pass) % 3 {
                    0 => (b"onmlkjihgfedcba", None),
                    1 => (b"1234", Some(20_000 + i)),
                    _ => (b"abcdefg", Some(30_000 + i)),
                };
                let key = format!("k{i}");
                let before = block_of(&shard, &key);
                assert!(set(&mut shard, &key, bytes, ttl).is_none());
                assert_eq!(block_of(&shard, &key), before, "{key} kept its block");
                let entry = shard.get(key.as_bytes(), 0).unwrap();
                assert_eq!(entry.value(), Value::Str(Str::from_bytes(bytes)).view());
                assert_eq!(entry.expire_at_ms(), ttl);
                check_totals(&shard);
            }
        }
        assert_eq!(shard.changes(), changes + 600);
        assert!(flag.load(Ordering::Relaxed), "the watched key was written");
        assert_eq!(shard.expires(), 200);
        assert_eq!(shard.next_deadline(), Some(20_000));

        let replaced = set(&mut shard, "k0", b"another size", None).unwrap();
        assert_eq!(
            replaced.value(),
            Value::Str(Str::from_bytes(b"1234")).view()
        );
        shard.insert(entry("dying", "abcdefghijklmno", Some(100)), 0);
        assert!(set_at(&mut shard, "dying", b"onmlkjihgfedcba", None, 200).is_none());
        let expired = shard.take_expired_by_writers();
        assert_eq!(
            expired.len(),
            1,
            "the expired key was reclaimed, not written over"
        );
        assert_eq!(expired[0].key(), b"dying");
        check_totals(&shard);
        assert_eq!(shard.len(), 301);
    }

    #[test]
    fn expired_entries_read_as_absent_and_are_reclaimed_by_writers() {
        let mut shard = Shard::new(RandomState::default());
        shard.insert(entry("k", "v", Some(100)), 0);
        assert!(shard.get(b"k", 99).is_some());
        assert!(shard.get(b"k", 100).is_none());
        assert!(shard.get_mut(b"k", 100).is_none());
        assert_eq!(shard.len(), 0);
        assert_eq!(shard.reclaimed_expired(), 1);
    }

    #[test]
    fn deadlines_index_follows_every_ttl_change() {
        let mut shard = Shard::new(RandomState::default());
        for i in 0..100u64 {
            shard.insert(entry(&format!("k{i}"), "v", Some(1_000 + i)), 0);
        }
        shard.insert(entry("k0", "v", None), 0);
        shard
            .get_mut(b"k1", 0)
            .unwrap()
            .set_expire_at_ms(Some(5_000));
        shard.get_mut(b"k2", 0).unwrap().set_expire_at_ms(None);
        shard.remove(b"k3", 0);
        assert_eq!(shard.deadlines.len(), shard.expires());
        assert_eq!(shard.next_deadline(), Some(1_004));
        let mut freed = Vec::new();
        assert_eq!(shard.reclaim_expired(1_050, 10, &mut freed).keys, 10);
        assert_eq!(freed[0].key(), b"k4");
        let each = Shard::entry_bytes(shard.get_even_expired(b"k14").unwrap());
        assert_eq!(
            shard.stale_bytes(1_050),
            0,
            "deadlines in the current second count once it is over"
        );
        assert_eq!(
            shard.stale_bytes(2_000),
            86 * each,
            "k14..k99 expired in second 1"
        );
        shard
            .get_mut(b"k99", 0)
            .unwrap()
            .value_mut()
            .as_str_mut()
            .unwrap()
            .make_growable()
            .extend_from_slice(b"more");
        let grown = Shard::entry_bytes(shard.get_even_expired(b"k99").unwrap());
        assert_eq!(
            shard.stale_bytes(2_000),
            85 * each + grown,
            "size changes follow"
        );
        let done = shard.reclaim_expired(1_050, usize::MAX, &mut Vec::new());
        assert_eq!(
            done,
            Reclaimed {
                keys: 37,
                max_lag_ms: 1_050 - 1_014
            }
        );
        assert_eq!(shard.stale_bytes(1_050), 0);
        assert_eq!(shard.len(), 100 - 1 - 10 - 37);
        assert_eq!(shard.next_deadline(), Some(1_051));
        assert_eq!(
            shard
                .reclaim_expired(u64::MAX, usize::MAX, &mut Vec::new())
                .keys,
            50,
            "k51..k99 and k1"
        );
        assert_eq!(shard.expires(), 0);
        assert_eq!(shard.len(), 2, "k0 and k2 have no TTL");
    }

    #[test]
    fn only_a_new_key_raises_the_table_growth_bound() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut shard = Shard::new(RandomState::default());
        let mut largest = shard.table_growth_of_next_insert();
        for _ in 0..20_000 {
            let key = format!("k{}", rng.gen_range(0..3_000));
            let new_keys = shard.new_keys();
            match rng.gen_bool(0.4) {
                true => drop(shard.remove(key.as_bytes(), 0)),
                false => drop(shard.insert(entry(&key, "v", None), 0)),
            }
            let bound = shard.table_growth_of_next_insert();
            if shard.new_keys() == new_keys {
                assert!(bound <= largest, "{bound} > {largest} after no new key");
            }
            largest = largest.max(bound);
        }
        assert!(largest > 0);
    }

    #[test]
    fn table_growth_bound_covers_every_insert() {
        let mut shard = Shard::new(RandomState::default());
        let mut grew = 0;
        for i in 0..5_000 {
            let bound = shard.table_growth_of_next_insert();
            let before = shard.table_bytes();
            shard.insert(entry(&format!("k{i}"), "v", None), 0);
            let growth = shard.table_bytes() - before;
            assert!(
                growth <= bound,
                "insert {i} grew tables by {growth} > {bound}"
            );
            grew += usize::from(growth > 0);
        }
        assert!(grew > 5, "the tables grew several times");
    }

    /// Every TTL set on a key without one, in random order (so runs of the
    /// deadline index split, grow and start), grows the shard by at most
    /// [`Shard::deadline_growth`]; every one cleared shrinks it; with all
    /// cleared the shard is back to its first figure.
    #[test]
    fn deadline_growth_bounds_every_ttl_set() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(11);
        let mut shard = Shard::new(RandomState::default());
        let keys: Vec<String> = (0..4_000).map(|i| format!("k{i}")).collect();
        for key in &keys {
            shard.insert(entry(key, "v", None), 0);
        }
        let start = shard.used_bytes();
        let mut largest = 0;
        for step in 0..60_000 {
            let key = keys[rng.gen_range(0..keys.len())].as_bytes();
            let before = shard.used_bytes();
            let mut e = shard.get_mut(key, 0).unwrap();
            if e.entry().expire_at_ms().is_some() {
                e.set_expire_at_ms(None);
                drop(e);
                assert!(shard.used_bytes() <= before, "step {step}: a clear grew");
            } else {
                let bound = Shard::deadline_growth(e.entry());
                // One in fifty near the end of time, where a run spans
                // nearly all of u64 and hints step by 2^56 ms.
                let at = if rng.gen_ratio(1, 50) {
                    u64::MAX - rng.gen_range(0..1_000)
                } else {
                    rng.gen_range(1_000..100_000_000)
                };
                e.set_expire_at_ms(Some(at));
                drop(e);
                let growth = shard.used_bytes() - before;
                assert!(growth <= bound, "step {step}: {growth} > {bound}");
                largest =
                    largest.max(growth.saturating_sub(bound - Deadlines::max_insert_growth()));
            }
        }
        assert!(
            largest > Deadlines::max_insert_growth() / 2,
            "runs split: {largest}"
        );
        assert!(shard.expiry_index_bytes() > 0);
        for key in &keys {
            shard
                .get_mut(key.as_bytes(), 0)
                .unwrap()
                .set_expire_at_ms(None);
        }
        assert_eq!(shard.expiry_index_bytes(), 0);
        assert_eq!(shard.used_bytes(), start);
    }

    #[test]
    fn watchers_are_marked_only_by_modifications() {
        let mut shard = Shard::new(RandomState::default());
        let flag = WatchFlag::default();
        let marked = || flag.swap(false, Ordering::Relaxed);
        shard.insert(entry("k", "v", None), 0);
        shard.watch(b"k", &flag);
        assert!(!marked());
        shard.get_mut(b"k", 0).unwrap();
        assert!(!marked(), "a write borrow alone changes nothing");
        let mut e = shard.get_mut(b"k", 0).unwrap();
        e.value_mut();
        e.unchanged();
        drop(e);
        assert!(!marked(), "the writer said nothing changed");
        shard.get_mut(b"k", 0).unwrap().value_mut();
        assert!(marked());
        shard.get_mut(b"k", 0).unwrap().set_expire_at_ms(Some(50));
        assert!(marked());
        shard.insert(entry("k", "v", None), 0);
        assert!(marked());
        shard.remove(b"k", 0);
        assert!(marked());
        shard.insert(entry("k", "v", Some(10)), 0);
        marked();
        shard.reclaim_expired(10, 10, &mut Vec::new());
        assert!(marked(), "expiry is a modification");
        shard.unwatch(b"k", &flag);
        shard.insert(entry("k", "v", None), 0);
        assert!(!marked());
    }

    #[test]
    fn random_picks_in_bounded_work_however_sparse_the_shard() {
        let mut rng = rand::thread_rng();
        let mut shard = Shard::new(RandomState::default());
        for i in 0..20_000 {
            shard.insert(entry(&format!("k{i}"), "v", Some(1_000)), 0);
        }
        shard.insert(entry("last", "v", None), 0);
        for i in 0..20_000 {
            shard.remove(format!("k{i}").as_bytes(), 0);
        }
        let slots = shard.slot_count();
        assert!(slots > 20_000, "the last chunk keeps the slab long");
        for _ in 0..100 {
            let picked = shard.random(0, &mut rng).map(|e| e.key().to_vec());
            assert_eq!(
                picked.as_deref(),
                Some(&b"last"[..]),
                "empty chunks are passed in one step each"
            );
        }

        let mut expired = Shard::new(RandomState::default());
        for i in 0..20_000 {
            expired.insert(entry(&format!("k{i}"), "v", Some(1_000)), 0);
        }
        for _ in 0..100 {
            assert!(
                expired.random(2_000, &mut rng).is_none(),
                "a shard of expired keys gives up after bounded work"
            );
        }
        let dense: usize = (0..1_000)
            .filter(|_| expired.random(0, &mut rng).is_some())
            .count();
        assert_eq!(dense, 1_000);
    }

    #[test]
    fn keys_keep_their_slot_while_others_come_and_go() {
        let mut shard = Shard::new(RandomState::default());
        for i in 0..100 {
            shard.insert(entry(&format!("stay{i}"), "v", None), 0);
        }
        let slots_of = |shard: &Shard| {
            let mut found = Vec::new();
            shard.scan(0, usize::MAX, usize::MAX, 0, |e| {
                found.push(e.key().to_vec())
            });
            found
        };
        let before = slots_of(&shard);
        for i in 0..5000 {
            shard.insert(entry(&format!("churn{i}"), "v", None), 0);
            if i % 3 == 0 {
                shard.remove(format!("churn{}", i / 2).as_bytes(), 0);
            }
        }
        let after: Vec<_> = slots_of(&shard)
            .into_iter()
            .filter(|k| k.starts_with(b"stay"))
            .collect();
        assert_eq!(before, after, "present keys keep their scan order");
    }

    /// A shard sized ahead for the keys a load will bring takes them all
    /// without rebuilding its index, and finds each of them.
    #[test]
    fn a_reserved_shard_takes_its_keys_without_rebuilding() {
        let mut shard = Shard::new(RandomState::default());
        shard.insert(entry("already", "here", None), 0);
        shard.reserve(5_000);
        let capacity = shard.index.capacity();
        for i in 0..5_000 {
            shard.insert(entry(&format!("k{i}"), "v", None), 0);
        }
        assert_eq!(shard.index.capacity(), capacity);
        assert_eq!(shard.len(), 5_001);
        assert!((0..5_000).all(|i| shard.get(format!("k{i}").as_bytes(), 0).is_some()));
        shard.insert(entry("one-more", "v", None), 0);
        assert!(shard.get(b"already", 0).is_some());
    }
}
