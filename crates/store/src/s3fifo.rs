//! keel's own eviction policy, `allkeys-s3fifo` (the default): S3-FIFO
//! (Yang et al., "FIFO queues are all you need for cache eviction", SOSP
//! 2023), kept per shard.
//!
//! In a skewed cache workload most keys are requested once in a long
//! while, and a scan touches many keys exactly once. LRU gives every such
//! key a full trip through its queue, pushing out keys that are requested
//! again; a scan larger than the cache flushes it. S3-FIFO filters them:
//!
//! - New keys enter a small FIFO queue that aims at a tenth of the keys.
//! - The key leaving the small queue moves to the main queue if it was
//!   requested while it waited; otherwise it is evicted ("quick demotion")
//!   and its hash is kept in a ghost table.
//! - The main queue is a clock: the hand passes over a key that was
//!   requested since the last pass, taking one off its count (at most 3),
//!   and evicts the first key that was not.
//! - A new key found in the ghost table was evicted early and is back, so
//!   it goes straight to the main queue.
//!
//! A request only counts: two bits in the key's access word, set with a
//! relaxed atomic store under the shard's read lock (`access.rs`). No queue
//! is reordered on a hit, so reads never need the write lock, where an
//! exact LRU list would (Redis avoids the list only by sampling).
//!
//! Why S3-FIFO rather than SIEVE, which is as simple: SIEVE's quick
//! demotion comes from inserting each new key at the head of one ordered
//! queue. keel's slots are reused as keys come and go, so slot order is not
//! insertion order, and an ordered queue of every key would cost a linked
//! list of 8 bytes per key, a fifth of keel's per-key overhead. S3-FIFO
//! needs insertion order only for the small queue: a ring of 4-byte slot
//! numbers for a tenth of the keys. The main queue's clock simply walks the
//! slots.
//!
//! Trade-offs of fitting it to the slab:
//!
//! - The main queue's clock visits keys in slot order, not in the order
//!   they joined it, so a key just promoted may be examined soon after. It
//!   keeps its count (at least 1) to survive that first pass, and a key
//!   readmitted from the ghost table starts with 1 for the same reason.
//! - The ghost table is direct-mapped: one 32-bit hash fingerprint per
//!   position, as many positions as the next power of two above the
//!   shard's key count, allocated at the first eviction from the small
//!   queue. A collision forgets an older ghost early; a false match (one
//!   in tens of millions) admits a key to the main queue.
//! - Before the cache is full nothing is evicted and the small queue would
//!   hold every key; once it holds a fifth of them, its oldest key moves
//!   to the main queue with its count, so the ring stays small.
//! - One eviction examines at most [`MAX_EXAMINED`] keys that were
//!   requested, then takes the best it has seen, so no lock is held long
//!   when every key is hot.
//!
//! The small queue's ring refers to keys by slot and an 8-bit tag stored in
//! the key's access word; a ring item whose slot now holds a different key
//! (or none, or one in the main queue) is stale and skipped.

use std::collections::VecDeque;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;

use crate::access::Access;
use crate::entry::Entry;

/// The small queue aims at one key in this many, as in the paper.
const SMALL_SHARE: usize = 10;
/// Past one key in this many, the small queue's oldest key moves to the
/// main queue as keys are inserted (when nothing is being evicted).
const SMALL_CAP: usize = 5;
/// Requested keys one eviction may pass over before it takes the one it
/// has seen with the lowest count.
const MAX_EXAMINED: usize = 256;
/// Slots or ring items one eviction may visit, empty or stale ones
/// included, before it gives up for this call.
const MAX_VISITED: usize = 4096;
/// Fewest ghost positions a table starts with.
const MIN_GHOSTS: usize = 64;

/// The shard's slots as S3-FIFO reads them.
pub(crate) trait Slots {
    /// The key in `slot`, if there is one.
    fn entry_at(&self, slot: u32) -> Option<&Entry>;
    /// How many slots exist, occupied or not.
    fn slot_count(&self) -> usize;
}

/// One shard's S3-FIFO queues.
#[derive(Debug)]
pub(crate) struct S3Fifo {
    /// The policy change these queues were built under
    /// ([`crate::AccessConfig::s3fifo_epoch`]).
    epoch: u32,
    /// The small queue, oldest first: `slot << 8 | tag`.
    small: VecDeque<u32>,
    /// Keys in the small queue; `small` may also hold stale items.
    small_len: usize,
    next_tag: u8,
    /// The main queue's clock hand: the next slot it examines.
    hand: usize,
    /// Fingerprints of keys evicted from the small queue.
    ghost: Vec<u32>,
}

impl S3Fifo {
    /// Empty queues for policy epoch `epoch`.
    pub fn new(epoch: u32) -> S3Fifo {
        S3Fifo {
            epoch,
            small: VecDeque::new(),
            small_len: 0,
            next_tag: 0,
            hand: 0,
            ghost: Vec::new(),
        }
    }

    /// The policy epoch these queues belong to.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Heap bytes of the queues, counted with the shard's tables.
    pub fn bytes(&self) -> usize {
        (self.small.capacity() + self.ghost.capacity()) * std::mem::size_of::<u32>()
    }

    /// What queueing one more key may add to [`S3Fifo::bytes`]: the ring
    /// doubling when it is full.
    pub fn growth_of_next_insert(&self) -> usize {
        if self.small.len() == self.small.capacity() {
            self.small.capacity().max(4) * std::mem::size_of::<u32>()
        } else {
            0
        }
    }

    /// Queues the key just inserted in `slot` (whose hash is `hash`) in a
    /// shard now holding `live` keys.
    pub fn admit(&mut self, slots: &impl Slots, slot: u32, hash: u64, live: usize) {
        let access = slots
            .entry_at(slot)
            .expect("admitted slot is occupied")
            .access();
        if self.take_ghost(hash) {
            access.set_s3fifo_state(true, 0, access.s3fifo_freq().max(1));
            return;
        }
        let tag = self.next_tag;
        self.next_tag = tag.wrapping_add(1);
        access.set_s3fifo_state(false, tag, access.s3fifo_freq());
        self.small.push_back(slot << 8 | tag as u32);
        self.small_len += 1;
        if self.small_len * SMALL_CAP > live {
            while let Some(item) = self.small.pop_front() {
                if let Some(entry) = queued(slots, item) {
                    self.move_to_main(entry.access());
                    break;
                }
            }
        }
        if self.small.len() > 2 * self.small_len + MIN_GHOSTS {
            self.small.retain(|&item| queued(slots, item).is_some());
        }
    }

    /// Notes that a key is leaving the shard (deleted, expired, evicted).
    pub fn forget(&mut self, entry: &Entry) {
        if !entry.access().s3fifo_in_main() {
            self.small_len -= 1;
        }
    }

    /// The slot of the key to evict from a shard holding `live` keys: from
    /// the small queue while it holds at least its share, else from the
    /// main queue. `None` when this call found none within its bounds (the
    /// queues have moved on; call again) or there is no key. The caller
    /// removes the key, which [`S3Fifo::forget`]s it.
    pub fn choose_victim(
        &mut self,
        slots: &impl Slots,
        hasher: &RandomState,
        live: usize,
    ) -> Option<u32> {
        if self.small_len > 0 && self.small_len * SMALL_SHARE >= live {
            self.victim_from_small(slots, hasher, live)
                .or_else(|| self.victim_from_main(slots))
        } else {
            self.victim_from_main(slots)
                .or_else(|| self.victim_from_small(slots, hasher, live))
        }
    }

    /// The oldest key of the small queue that nobody requested while it
    /// waited; the requested ones met on the way move to the main queue.
    fn victim_from_small(
        &mut self,
        slots: &impl Slots,
        hasher: &RandomState,
        live: usize,
    ) -> Option<u32> {
        for _ in 0..MAX_VISITED {
            let item = self.small.pop_front()?;
            let Some(entry) = queued(slots, item) else {
                continue;
            };
            let access = entry.access();
            if access.s3fifo_freq() > 0 {
                self.move_to_main(access);
                continue;
            }
            self.remember_ghost(hasher.hash_one(entry.key()), live);
            return Some(item >> 8);
        }
        None
    }

    /// The clock over the main queue: the first key not requested since
    /// the hand last passed it, or after [`MAX_EXAMINED`] requested keys,
    /// the first of them whose count the hand brought to 0.
    fn victim_from_main(&mut self, slots: &impl Slots) -> Option<u32> {
        let count = slots.slot_count();
        let mut examined = 0;
        let mut fallback = None;
        for _ in 0..MAX_VISITED.min(count) {
            if self.hand >= count {
                self.hand = 0;
            }
            let slot = self.hand as u32;
            self.hand += 1;
            let Some(access) = slots.entry_at(slot).map(Entry::access) else {
                continue;
            };
            if !access.s3fifo_in_main() {
                continue;
            }
            let freq = access.s3fifo_freq();
            if freq == 0 {
                return Some(slot);
            }
            access.set_s3fifo_state(true, 0, freq - 1);
            if freq == 1 {
                fallback.get_or_insert(slot);
            }
            examined += 1;
            if examined == MAX_EXAMINED {
                return Some(fallback.unwrap_or(slot));
            }
        }
        fallback
    }

    /// Moves a key out of the small queue into the main queue, keeping its
    /// count: the clock hand will find it there.
    fn move_to_main(&mut self, access: &Access) {
        access.set_s3fifo_state(true, 0, access.s3fifo_freq());
        self.small_len -= 1;
    }

    fn remember_ghost(&mut self, hash: u64, live: usize) {
        let wanted = live.next_power_of_two().max(MIN_GHOSTS);
        if self.ghost.len() < wanted / 2 || self.ghost.len() > wanted * 4 {
            self.ghost = vec![0; wanted];
        }
        let at = ghost_position(hash, self.ghost.len());
        self.ghost[at] = fingerprint(hash);
    }

    fn take_ghost(&mut self, hash: u64) -> bool {
        if self.ghost.is_empty() {
            return false;
        }
        let at = ghost_position(hash, self.ghost.len());
        let found = self.ghost[at] == fingerprint(hash);
        if found {
            self.ghost[at] = 0;
        }
        found
    }
}

/// A key's ghost fingerprint: the hash's high half (the index places keys
/// by the low one), never 0, which marks an empty position.
fn fingerprint(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

/// Where a key's fingerprint goes in a table of `len` (a power of two)
/// positions: bits 38 and up, since bits 32 to 37 choose the shard and so
/// are the same for every key here.
fn ghost_position(hash: u64, len: usize) -> usize {
    (hash >> 38) as usize & (len - 1)
}

/// The key a small-queue ring item refers to, if it is still that key and
/// still in the small queue.
fn queued(slots: &impl Slots, item: u32) -> Option<&Entry> {
    slots
        .entry_at(item >> 8)
        .filter(|e| !e.access().s3fifo_in_main() && e.access().s3fifo_tag() == item as u8)
}

#[cfg(test)]
impl S3Fifo {
    /// Checks the bookkeeping: `small_len` counts exactly the keys marked
    /// as in the small queue, each of them has a ring item, and stale items
    /// stay bounded.
    pub(crate) fn assert_consistent(&self, slots: &impl Slots) {
        let marked: Vec<u32> = (0..slots.slot_count() as u32)
            .filter(|&s| {
                slots
                    .entry_at(s)
                    .is_some_and(|e| !e.access().s3fifo_in_main())
            })
            .collect();
        assert_eq!(self.small_len, marked.len(), "small queue count");
        for slot in marked {
            assert!(
                self.small
                    .iter()
                    .any(|&item| item >> 8 == slot && queued(slots, item).is_some()),
                "slot {slot} is marked small but not queued"
            );
        }
        assert!(self.small.len() <= 2 * self.small_len + MIN_GHOSTS + 1);
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use crate::access::{Access, AccessConfig, Clock, Policy};
    use crate::shard::Shard;
    use crate::value::{Str, Value};
    use crate::Entry;

    const NOW: Clock = Clock { micros: 1 };

    fn config() -> AccessConfig {
        let config = AccessConfig::default();
        config.set_policy(Policy::AllKeysS3Fifo);
        config
    }

    fn shard(config: &AccessConfig) -> Shard {
        let mut shard = Shard::new(Default::default());
        shard.follow_policy(config.s3fifo_epoch(), NOW);
        shard
    }

    fn insert(shard: &mut Shard, config: &AccessConfig, key: &str) {
        let value = Value::Str(Str::from_bytes(b"v"));
        let entry = Entry::new(key.as_bytes(), value, None, Access::new(config, NOW));
        shard.insert(entry, 0);
    }

    fn request(shard: &Shard, config: &AccessConfig, key: &str) -> bool {
        let entry = shard.get(key.as_bytes(), 0);
        if let Some(entry) = entry {
            entry.access().touch(config, NOW);
        }
        entry.is_some()
    }

    fn evict_down_to(shard: &mut Shard, capacity: usize) {
        while shard.len() > capacity {
            shard.evict_s3fifo();
        }
    }

    #[test]
    fn a_scan_does_not_push_out_the_requested_keys() {
        // A hot set filling the cache, requested round-robin, and a scan of
        // five times as many keys, each requested once. LRU or random
        // eviction would keep almost none of the hot set (each hot key sees
        // 2,000 other keys between its requests, twice the capacity).
        let config = config();
        let mut shard = shard(&config);
        let capacity = 1000;
        let hot: Vec<String> = (0..capacity).map(|i| format!("hot:{i}")).collect();
        for key in &hot {
            insert(&mut shard, &config, key);
        }
        for key in &hot {
            request(&shard, &config, key);
        }
        for i in 0..5 * capacity {
            insert(&mut shard, &config, &format!("scan:{i}"));
            evict_down_to(&mut shard, capacity);
            let key = &hot[i % capacity];
            if !request(&shard, &config, key) {
                insert(&mut shard, &config, key);
                evict_down_to(&mut shard, capacity);
            }
        }
        let kept = hot
            .iter()
            .filter(|k| shard.get(k.as_bytes(), 0).is_some())
            .count();
        assert!(
            kept >= capacity * 8 / 10,
            "kept {kept} of {capacity} hot keys"
        );
        shard.assert_s3fifo_consistent();
    }

    #[test]
    fn a_key_evicted_early_and_requested_again_joins_the_main_queue() {
        let config = config();
        let mut shard = shard(&config);
        for i in 0..100 {
            insert(&mut shard, &config, &format!("k{i}"));
        }
        // Nobody requested k0..: the first evictions come from the small
        // queue, oldest first, and leave ghosts.
        let victim = shard.evict_s3fifo().expect("a key to evict");
        let key = String::from_utf8(victim.key().to_vec()).unwrap();
        insert(&mut shard, &config, &key);
        let entry = shard.get(key.as_bytes(), 0).unwrap();
        assert!(
            entry.access().s3fifo_in_main(),
            "{key} came back from the ghost"
        );
        assert_eq!(entry.access().s3fifo_freq(), 1);
        shard.assert_s3fifo_consistent();
    }

    #[test]
    fn bookkeeping_holds_under_random_operations() {
        let config = config();
        let mut shard = shard(&config);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for step in 0..200_000 {
            let key = format!("k{}", rng.gen_range(0..3000));
            match rng.gen_range(0..10) {
                0..=3 => insert(&mut shard, &config, &key),
                4..=6 => {
                    request(&shard, &config, &key);
                }
                7 => {
                    shard.remove(key.as_bytes(), 0);
                }
                _ => evict_down_to(&mut shard, 1500),
            }
            if step % 10_000 == 0 {
                shard.assert_s3fifo_consistent();
            }
        }
        shard.assert_s3fifo_consistent();
        // Every key can still be evicted: none is stranded outside both
        // queues.
        while !shard.is_empty() {
            shard.evict_s3fifo();
        }
        assert_eq!(shard.s3fifo_bytes(), Some(0));
    }

    #[test]
    fn switching_policy_restarts_the_queues() {
        let config = config();
        let mut shard = shard(&config);
        for i in 0..100 {
            insert(&mut shard, &config, &format!("k{i}"));
        }
        config.set_policy(Policy::AllKeysLru);
        shard.follow_policy(config.s3fifo_epoch(), NOW);
        assert_eq!(shard.s3fifo_bytes(), None);
        assert!(shard.evict_s3fifo().is_none(), "not under another policy");
        config.set_policy(Policy::AllKeysS3Fifo);
        shard.follow_policy(config.s3fifo_epoch(), NOW);
        shard.assert_s3fifo_consistent();
        evict_down_to(&mut shard, 0);
    }
}
