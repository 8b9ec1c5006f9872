//! A shard's hash index: from a key's hash to its slot, 4 bytes a bucket.
//!
//! Open addressing with linear probing over an array of `u32` buckets. A
//! bucket is empty (0), a tombstone, or a key's slot number plus one in its
//! low 24 bits under 8 bits of the key's hash (its tag) in the high 8. A
//! probe compares keys only on a tag match, so looking a key up reads a run
//! of adjacent buckets (16 per cache line) and, for a different key,
//! dereferences its entry once in 256 tag checks.
//!
//! Compared with a SwissTable of `u32` (hashbrown), which spends a control
//! byte beside every 4-byte bucket and a 16-byte tail that pushes large
//! tables into the next allocator size class, this costs 4 bytes a bucket
//! and a table is exactly one of the allocator's size classes. The price:
//! probing is scalar rather than SIMD, the load factor stays at most 3/4
//! (linear probing degrades past it), and a slot number must fit 24 bits
//! ([`MAX_SLOTS`] per shard, 1G keys per database).
//!
//! Removal leaves a tombstone unless the next bucket is empty (then no
//! probe sequence runs through the bucket and it simply empties). Growth
//! counts tombstones as load, so the index never fills up: past 3/4 load
//! the table is rebuilt without its tombstones, at the same size if that
//! leaves it at most half full, else at the next size. Sizes are not only
//! powers of two: they alternate between 2^k and 3·2^(k-1) buckets (8, 12,
//! 16, 24, 32, ...), growing by 3/2 or 4/3, and a key's home bucket is its
//! hash scaled to the size by a multiply and a shift rather than masked.
//! With doubling, the load after a growth is 3/8 and a table averages about
//! half full; growing by at most 3/2 keeps it between 1/2 and 3/4 (a shard
//! of 15,625 keys: 24,576 buckets, 6.3 bytes a key, against 32,768 and
//! 8.4). Either way at least 3/16 of the table is free after a rebuild, so
//! the next one is that many inserts and removals away and its cost is
//! amortised; rebuilds come about half again as often as with doubling,
//! each as large. (Rebuilding at the same size whenever the keys alone fit
//! under 3/4 would, with the keys just under it, rebuild every few hundred
//! writes under eviction churn: a full cache's median per-second p99 rose
//! from 2.6 to 8 ms.)
//!
//! The dataset is charged for a table's next growth before it happens,
//! little by little: from 9/16 load on, in proportion to the load, all of
//! it by the 3/4 limit, so the rebuild itself changes nothing. In a full
//! cache every shard's index reaches its limit within the same seconds;
//! charged all at once, their growth (64 indexes of 256 KB doubling) took
//! the dataset to `maxmemory` for seven seconds while eviction caught up,
//! and those were the eviction storm's slowest seconds (p99 up to 29 ms).

/// Slots an index can refer to: slot numbers 0 to `MAX_SLOTS - 1`, whose
/// encoding (slot + 1) is never 0 (empty) or all ones (a tombstone's).
pub(crate) const MAX_SLOTS: usize = (1 << 24) - 2;

/// Bytes per key at the highest load: MEMORY USAGE's share of the index.
pub(crate) const BYTES_PER_KEY: usize = BUCKET_BYTES * 4 / 3;

const BUCKET_BYTES: usize = std::mem::size_of::<u32>();
const EMPTY: u32 = 0;
const TOMBSTONE: u32 = u32::MAX;
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
/// The smallest table: 32 bytes.
const MIN_BUCKETS: usize = 8;

/// The bucket of the key with `hash` in `slot`.
fn bucket(hash: u64, slot: u32) -> u32 {
    (((hash >> 56) as u32) << SLOT_BITS) | (slot + 1)
}

/// The smallest table size (2^k or 3·2^(k-1) buckets) of at least `n`.
fn size_at_least(n: usize) -> usize {
    let power = n.max(MIN_BUCKETS).next_power_of_two();
    if power / 4 * 3 >= n && power > MIN_BUCKETS {
        power / 4 * 3
    } else {
        power
    }
}

/// Buckets for `keys` keys at no more than 3/4 load.
fn buckets_for(keys: usize) -> usize {
    size_at_least((keys * 4).div_ceil(3))
}

/// The size of a table of `buckets` buckets rebuilt to make room for
/// `keys` keys: the same if they fill at most half of it, else the next
/// larger that they fill at most 3/4 of (see the module comment).
fn rebuild_size(buckets: usize, keys: usize) -> usize {
    if keys * 2 <= buckets {
        buckets
    } else {
        buckets_for(keys).max(size_at_least(buckets + 1))
    }
}

/// What a table of `buckets` buckets holding `live` keys and `tombstones`
/// tombstones is charged: its size, and of the growth its next rebuild
/// will need a share rising from nothing at 9/16 load to all of it at the
/// 3/4 limit.
fn charged_bytes(buckets: usize, live: usize, tombstones: usize) -> usize {
    let size = buckets * BUCKET_BYTES;
    if buckets == 0 {
        return size;
    }
    let (ramp_start, ramp_len) = (buckets * 9 / 16, buckets * 3 / 16);
    let into_ramp = (live + tombstones).saturating_sub(ramp_start).min(ramp_len);
    // Below the ramp (most of the time) the size is all: no growth to
    // work out, no division. Every write asks, three times.
    if into_ramp == 0 {
        return size;
    }
    let growth = (rebuild_size(buckets, live + 1) - buckets) * BUCKET_BYTES;
    size + growth * into_ramp / ramp_len
}

/// The index itself.
#[derive(Debug, Default)]
pub(crate) struct SlotIndex {
    buckets: Box<[u32]>,
    live: usize,
    tombstones: usize,
}

impl SlotIndex {
    /// Keys indexed.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// True when no key is indexed.
    pub(crate) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Keys the index holds before it grows.
    pub(crate) fn capacity(&self) -> usize {
        self.buckets.len() * 3 / 4
    }

    /// Bytes the dataset is charged for the index: its bucket array and
    /// the part of its next growth charged ahead (see the module comment).
    pub(crate) fn bytes(&self) -> usize {
        charged_bytes(self.buckets.len(), self.live, self.tombstones)
    }

    /// Bytes the next insert may add to [`SlotIndex::bytes`].
    pub(crate) fn growth_of_next_insert(&self) -> usize {
        let after = match self.is_full() {
            true => charged_bytes(
                rebuild_size(self.buckets.len(), self.live + 1),
                self.live + 1,
                0,
            ),
            false => charged_bytes(self.buckets.len(), self.live + 1, self.tombstones),
        };
        after.saturating_sub(self.bytes())
    }

    /// True when one more key would take the table past 3/4 load.
    fn is_full(&self) -> bool {
        (self.live + self.tombstones + 1) * 4 > self.buckets.len() * 3
    }

    /// The bucket a probe for `hash` starts at: the low 32 bits of the
    /// hash (the tag is its high 8) as a fraction of the table.
    fn home(&self, hash: u64) -> usize {
        (((hash & u64::from(u32::MAX)) * self.buckets.len() as u64) >> 32) as usize
    }

    /// Bucket positions from `hash`'s home on, wrapping around.
    fn probe(&self, hash: u64) -> impl Iterator<Item = usize> {
        let home = self.home(hash);
        (home..self.buckets.len()).chain(0..home)
    }

    /// Asks the CPU to load the bucket a lookup of `hash` starts at.
    pub(crate) fn prefetch_home(&self, hash: u64) {
        if let Some(home) = self.buckets.get(self.home(hash)) {
            crate::prefetch::read(home);
        }
    }

    /// The slot of the first key whose tag matches `hash`'s, the one a
    /// lookup most likely finds, if any.
    pub(crate) fn likely_slot(&self, hash: u64) -> Option<u32> {
        self.find(hash, |_| true)
    }

    /// The slot of the key with `hash` for which `is_key` says yes.
    pub(crate) fn find(&self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.buckets.is_empty() {
            return None;
        }
        let tag = bucket(hash, 0) & !SLOT_MASK;
        let (wrapped, from_home) = self.buckets.split_at(self.home(hash));
        for &b in from_home.iter().chain(wrapped) {
            match b {
                EMPTY => return None,
                TOMBSTONE => {}
                b if b & !SLOT_MASK == tag && is_key((b & SLOT_MASK) - 1) => {
                    return Some((b & SLOT_MASK) - 1);
                }
                _ => {}
            }
        }
        None
    }

    /// Adds `slot` for a key with `hash` that is not indexed yet. `rehash`
    /// gives the hash of the key in a slot, for when the table is rebuilt.
    pub(crate) fn insert(&mut self, hash: u64, slot: u32, rehash: impl Fn(u32) -> u64) {
        debug_assert!((slot as usize) < MAX_SLOTS);
        if self.is_full() {
            self.rebuild(rebuild_size(self.buckets.len(), self.live + 1), rehash);
        }
        self.place(bucket(hash, slot), hash);
        self.live += 1;
    }

    /// Writes `entry` in the first free bucket of `hash`'s probe sequence.
    fn place(&mut self, entry: u32, hash: u64) {
        let at = self
            .probe(hash)
            .find(|&at| matches!(self.buckets[at], EMPTY | TOMBSTONE))
            .expect("the load factor leaves a free bucket");
        if self.buckets[at] == TOMBSTONE {
            self.tombstones -= 1;
        }
        self.buckets[at] = entry;
    }

    /// Makes room for `more` keys beyond those indexed, so inserting them
    /// rebuilds nothing (a bulk load that knows its size).
    pub(crate) fn reserve(&mut self, more: usize, rehash: impl Fn(u32) -> u64) {
        let wanted = buckets_for(self.live + self.tombstones + more);
        if wanted > self.buckets.len() {
            self.rebuild(wanted, rehash);
        }
    }

    /// Removes `slot`, indexed under `hash`.
    pub(crate) fn remove(&mut self, hash: u64, slot: u32) {
        let entry = bucket(hash, slot);
        let at = self
            .probe(hash)
            .find(|&at| self.buckets[at] == entry)
            .expect("removed slot is indexed");
        let next = if at + 1 == self.buckets.len() {
            0
        } else {
            at + 1
        };
        if self.buckets[next] == EMPTY {
            self.buckets[at] = EMPTY;
        } else {
            self.buckets[at] = TOMBSTONE;
            self.tombstones += 1;
        }
        self.live -= 1;
    }

    /// Rebuilds the table for twice its keys, giving memory back after
    /// many removals.
    pub(crate) fn shrink(&mut self, rehash: impl Fn(u32) -> u64) {
        self.rebuild(buckets_for(self.live * 2), rehash);
    }

    /// Re-inserts every key into a table of `buckets` buckets, dropping
    /// tombstones.
    fn rebuild(&mut self, buckets: usize, rehash: impl Fn(u32) -> u64) {
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; buckets].into_boxed_slice());
        self.tombstones = 0;
        for entry in old.iter().copied() {
            if entry != EMPTY && entry != TOMBSTONE {
                self.place(entry, rehash((entry & SLOT_MASK) - 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// A deliberately poor hash (many keys share a home and a tag), so
    /// probing, tombstones and rebuilds are all exercised.
    fn hash_of(key: u64) -> u64 {
        (key % 97).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[test]
    fn behaves_like_a_map_under_churn() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut index = SlotIndex::default();
        let mut slot_key: HashMap<u32, u64> = HashMap::new();
        let mut key_slot: HashMap<u64, u32> = HashMap::new();
        let mut next_slot = 0;
        for step in 0..50_000 {
            let key = rng.gen_range(0..2_000u64);
            let found = index.find(hash_of(key), |slot| slot_key[&slot] == key);
            assert_eq!(found, key_slot.get(&key).copied(), "step {step}");
            match found {
                Some(slot) => {
                    index.remove(hash_of(key), slot);
                    slot_key.remove(&slot);
                    key_slot.remove(&key);
                }
                None => {
                    let rehash = |slot: u32| hash_of(slot_key[&slot]);
                    index.insert(hash_of(key), next_slot, rehash);
                    slot_key.insert(next_slot, key);
                    key_slot.insert(key, next_slot);
                    next_slot += 1;
                }
            }
            assert_eq!(index.len(), key_slot.len());
            assert!((index.live + index.tombstones) * 4 <= index.buckets.len() * 3);
            if index.len() < index.capacity() / 4 {
                index.shrink(|slot| hash_of(slot_key[&slot]));
            }
        }
    }

    #[test]
    fn rebuilds_stay_amortised_under_churn_just_below_the_load_limit() {
        let hash = |key: u64| key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut index = SlotIndex::default();
        // 48,400 keys in 65,536 buckets, 752 short of the 3/4 limit: a
        // shard's index in a full eviction-storm run.
        let keys = 48_400u64;
        for key in 0..keys {
            index.insert(hash(key), key as u32, |slot| hash(u64::from(slot)));
        }
        assert_eq!(index.buckets.len(), 65_536);
        // Evict the oldest key, insert a new one, as a full cache does; a
        // key's slot is its number, so a rebuild's rehash needs no map.
        let rehashed = std::cell::Cell::new(0);
        let writes = 50_000;
        for key in keys..keys + writes {
            let oldest = key - keys;
            index.remove(hash(oldest), oldest as u32);
            index.insert(hash(key), key as u32, |slot| {
                rehashed.set(rehashed.get() + 1);
                hash(u64::from(slot))
            });
        }
        assert!(
            rehashed.get() <= 2 * writes,
            "{} keys rehashed for {writes} writes",
            rehashed.get()
        );
    }

    #[test]
    fn growth_is_charged_a_little_at_a_time() {
        let hash = |key: u64| key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let rehash = |slot: u32| hash(u64::from(slot));
        let mut index = SlotIndex::default();
        let mut most = 0;
        let mut charge = |index: &SlotIndex, before: usize| {
            most = most.max(index.bytes().saturating_sub(before));
        };
        // Filling up to 48,400 keys, through every doubling...
        for key in 0..48_400u64 {
            let before = index.bytes();
            index.insert(hash(key), key as u32, rehash);
            charge(&index, before);
        }
        // ...then churning, where tombstones bring the next rebuild on.
        for key in 48_400..98_400u64 {
            let before = index.bytes();
            index.remove(hash(key - 48_400), (key - 48_400) as u32);
            index.insert(hash(key), key as u32, rehash);
            charge(&index, before);
        }
        assert!(index.buckets.len() > 65_536, "the churn grew the table");
        assert!(most <= 64, "one write added {most} bytes to the charge");
    }

    #[test]
    fn sizes_alternate_between_powers_of_two_and_three_halves_of_one() {
        let sizes: Vec<usize> =
            std::iter::successors(Some(MIN_BUCKETS), |&n| Some(rebuild_size(n, n * 3 / 4 + 1)))
                .take(8)
                .collect();
        assert_eq!(sizes, [8, 12, 16, 24, 32, 48, 64, 96]);
        assert_eq!(buckets_for(0), 8);
        assert_eq!(buckets_for(6), 8);
        assert_eq!(buckets_for(7), 12);
        assert_eq!(buckets_for(18_432), 24_576);
        assert_eq!(buckets_for(18_433), 32_768);
    }

    #[test]
    fn a_shard_of_15625_keys_is_between_half_and_three_quarters_full() {
        let mut index = SlotIndex::default();
        for slot in 0..15_625u32 {
            index.insert(
                u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                slot,
                |s| u64::from(s).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
        }
        assert_eq!(index.buckets.len() * BUCKET_BYTES, 96 << 10);
        // 15,625 of 24,576 is past the 9/16 where growth starts being charged.
        let ramp = (15_625 - 24_576 * 9 / 16) * (32 << 10) / (24_576 * 3 / 16);
        assert_eq!(index.bytes(), (96 << 10) + ramp);
    }
}
