//! The full structure behind large hashes and sets: a hash index over a
//! slab of stable slots, the same design as a keyspace shard.
//!
//! Members live in a vector of slots and never move while they exist; the
//! index maps a member's bytes to its slot (4 bytes plus a control byte).
//! Stable slots give what a plain hash map cannot:
//!
//! - HSCAN/SSCAN keep Redis's guarantee (a member present for the whole
//!   iteration is returned) with the slot number as the cursor.
//! - HRANDFIELD, SRANDMEMBER and SPOP pick a random slot in O(1).
//!
//! The table keeps a running total of its members' heap bytes, so its size
//! is known in O(1) for exact memory accounting.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use rand::Rng;

use super::InlineBytes;
use crate::size_class::allocated;

/// What a table stores: something keyed by bytes that knows its heap size.
pub trait Member {
    /// The bytes the member is found by (a hash field, a set member).
    fn key(&self) -> &[u8];
    /// Heap bytes the member owns.
    fn heap_bytes(&self) -> usize;
}

/// A set member: its bytes.
impl Member for InlineBytes {
    fn key(&self) -> &[u8] {
        self
    }

    fn heap_bytes(&self) -> usize {
        InlineBytes::heap_bytes(self)
    }
}

/// A hash field and its value.
impl Member for (InlineBytes, InlineBytes) {
    fn key(&self) -> &[u8] {
        &self.0
    }

    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes() + self.1.heap_bytes()
    }
}

/// A sorted-set member and its score.
impl Member for (InlineBytes, f64) {
    fn key(&self) -> &[u8] {
        &self.0
    }

    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes()
    }
}

/// Members indexed by their bytes, in stable slots.
#[derive(Debug, Clone)]
pub struct Table<T> {
    hasher: RandomState,
    index: HashTable<u32>,
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    member_bytes: usize,
}

impl<T: Member> Default for Table<T> {
    fn default() -> Self {
        Table {
            hasher: RandomState::default(),
            index: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            member_bytes: 0,
        }
    }
}

impl<T: Member> PartialEq for Table<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|m| other.get(m.key()).is_some())
    }
}

impl<T: Member> Table<T> {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Heap bytes owned: slots, free list, index and the members' own
    /// bytes, all tracked as they change.
    pub fn heap_bytes(&self) -> usize {
        self.member_bytes
            + allocated(self.slots.capacity() * std::mem::size_of::<Option<T>>())
            + allocated(self.free.capacity() * std::mem::size_of::<u32>())
            + allocated(self.index.allocation_size())
    }

    fn find(&self, key: &[u8]) -> Option<u32> {
        self.find_hashed(self.hasher.hash_one(key), key)
    }

    fn find_hashed(&self, hash: u64, key: &[u8]) -> Option<u32> {
        self.index
            .find(hash, |&slot| self.slot(slot).key() == key)
            .copied()
    }

    /// Loads ahead what finding `key` will read: its index group, and the
    /// slot its first candidate names (where the member is, unless two
    /// hashes share a tag). The index's loads are real ones, but a caller
    /// that does this for several keys in a row has their misses overlap,
    /// where finding them one command after another waits for each.
    pub fn prefetch(&self, key: &[u8]) {
        let hash = self.hasher.hash_one(key);
        if let Some(&slot) = self.index.iter_hash(hash).next() {
            if let Some(member) = self.slots.get(slot as usize) {
                crate::prefetch::read(member);
            }
        }
    }

    fn slot(&self, slot: u32) -> &T {
        self.slots[slot as usize]
            .as_ref()
            .expect("indexed slot is occupied")
    }

    /// The member stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<&T> {
        self.find(key).map(|slot| self.slot(slot))
    }

    /// Mutable access to the member under `key`. The caller must not
    /// change its key; its size may change through `resize`.
    pub fn update<R>(&mut self, key: &[u8], change: impl FnOnce(&mut T) -> R) -> Option<R> {
        let slot = self.find(key)?;
        let member = self.slots[slot as usize].as_mut().expect("indexed");
        self.member_bytes -= member.heap_bytes();
        let result = change(member);
        self.member_bytes += member.heap_bytes();
        Some(result)
    }

    /// Adds `member`; returns the member it replaced, if any.
    pub fn insert(&mut self, member: T) -> Option<T> {
        self.member_bytes += member.heap_bytes();
        let hash = self.hasher.hash_one(member.key());
        if let Some(slot) = self.find_hashed(hash, member.key()) {
            let old = self.slots[slot as usize].replace(member).expect("indexed");
            self.member_bytes -= old.heap_bytes();
            return Some(old);
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(member);
                slot
            }
            None => {
                self.slots.push(Some(member));
                (self.slots.len() - 1) as u32
            }
        };
        let Table {
            index,
            slots,
            hasher,
            ..
        } = self;
        index.insert_unique(hash, slot, |&other| {
            hasher.hash_one(slots[other as usize].as_ref().expect("indexed").key())
        });
        None
    }

    /// Removes the member under `key`.
    pub fn remove(&mut self, key: &[u8]) -> Option<T> {
        let slot = self.find(key)?;
        Some(self.take_slot(slot))
    }

    fn take_slot(&mut self, slot: u32) -> T {
        let hash = self.hasher.hash_one(self.slot(slot).key());
        self.index
            .find_entry(hash, |&s| s == slot)
            .expect("slot is indexed")
            .remove();
        let member = self.slots[slot as usize].take().expect("indexed");
        self.member_bytes -= member.heap_bytes();
        if self.index.is_empty() {
            // Nothing left: drop the slab rather than keep a free list.
            self.slots = Vec::new();
            self.free = Vec::new();
        } else {
            self.free.push(slot);
        }
        member
    }

    /// Every member, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// A uniformly chosen member: random slots first, then a walk from a
    /// random point when the slab is sparse.
    pub fn random(&self, rng: &mut impl Rng) -> Option<&T> {
        Some(self.slot(self.random_slot(rng)?))
    }

    fn random_slot(&self, rng: &mut impl Rng) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let n = self.slots.len();
        for _ in 0..32 {
            let at = rng.gen_range(0..n);
            if self.slots[at].is_some() {
                return Some(at as u32);
            }
        }
        let start = rng.gen_range(0..n);
        (start..n)
            .chain(0..start)
            .find(|&at| self.slots[at].is_some())
            .map(|at| at as u32)
    }

    /// Removes and returns a random member (SPOP).
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<T> {
        let slot = self.random_slot(rng)?;
        Some(self.take_slot(slot))
    }

    /// One SCAN step: visits slots from `cursor` until about `count`
    /// members were seen (at most ten times as many slots), and returns
    /// the cursor to continue from, 0 when done.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&T)) -> u64 {
        let mut at = cursor as usize;
        let (mut seen, mut budget) = (0, count.max(1).saturating_mul(10));
        while at < self.slots.len() && seen < count && budget > 0 {
            if let Some(member) = &self.slots[at] {
                visit(member);
                seen += 1;
            }
            at += 1;
            budget -= 1;
        }
        if at >= self.slots.len() {
            0
        } else {
            at as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn matches_a_set_model_and_counts_member_bytes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut table: Table<InlineBytes> = Table::default();
        let mut model = std::collections::HashSet::new();
        for _ in 0..20_000 {
            // Long members too, which are boxed.
            let tail = "x".repeat(rng.gen_range(0..2) * 30);
            let member: InlineBytes = format!("m{}{tail}", rng.gen_range(0..500))
                .into_bytes()
                .into();
            if rng.gen_bool(0.6) {
                assert_eq!(table.insert(member.clone()).is_none(), model.insert(member));
            } else {
                assert_eq!(table.remove(&member).is_some(), model.remove(&member));
            }
            assert_eq!(table.len(), model.len());
        }
        let recount: usize = table.iter().map(InlineBytes::heap_bytes).sum();
        assert_eq!(table.member_bytes, recount);
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = table.scan(cursor, 7, |m| {
                seen.insert(m.clone());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen, model);
        while let Some(m) = table.pop_random(&mut rng) {
            assert!(model.remove(&m));
        }
        assert!(model.is_empty());
        assert_eq!(table.heap_bytes(), allocated(table.index.allocation_size()));
    }
}
