//! The deadline index: one shard's keys with a TTL, as slot numbers in
//! order of `(deadline, slot)`, 4 bytes a key.
//!
//! Expiry needs an ordered set: the earliest deadline is its first element,
//! the keys due are a walk from the front, and a key whose TTL changes or
//! who leaves is found by its deadline and slot. A key's deadline is in its
//! entry already, so the set keeps only slot numbers and reads a deadline
//! from the entry when it has to compare one (`deadline_of` below).
//!
//! Slots live in runs of up to [`RUN_MAX`], each a sorted ring buffer,
//! found through a B-tree keyed by a lower bound of each run's keys:
//!
//! - an element past the end of a full run starts a new run, so in-order
//!   inserts (`SET ... EX 100` at a steady rate) fill runs completely;
//! - an element inside a full run splits it in halves, as a B-tree would;
//! - removing the first element (what expiry does) is O(1) on the ring
//!   buffer and leaves the run's key alone: a key only has to be a lower
//!   bound, so it never needs rewriting when a run's front goes;
//! - a run shrinks when it is three-quarters empty and disappears when it
//!   is empty.
//!
//! Reading a deadline costs two dependent cache misses (the slot, then the
//! entry), and a binary search over a run compares eight times. So each
//! element also carries, in the 8 bits above its 24-bit slot, a hint: where
//! its deadline falls in its run's span, `(deadline - base) >> shift`
//! clamped to 0..=255, where the run chose `base` and `shift` so that its
//! deadlines spread over the 256 values. Hints never decrease along a run,
//! so two elements with different hints are ordered by their hints, and
//! only equal hints need a deadline read, and not even those where a hint
//! step is 1 ms and the hint is not clamped (the hint is then the deadline
//! less the base). A run picks its `base` and
//! `shift` again, rewriting every hint, when its length reaches a power of
//! two while the hints at either end are crowded (four elements sharing
//! the lowest hint in steps over 1 ms, or the highest): a run started by one element and
//! growing by appends past its span, as in-order deadlines do; and the
//! halves of a run that splits, each over its own span. Deadlines in order
//! cost 1.5 reads an insert and next to none a removal (four keys a
//! millisecond: next to none either way), at random 3.2 and 0.5
//! (`hints_spare_most_deadline_reads`); most of an insert's are a
//! rescale's, which do not wait on one another as a search's do. Keys
//! sharing one deadline (`EXPIREAT` of a batch) share a hint and fall back
//! to reading, which is correct, only slower; expiry still takes them from
//! the front without a search.
//!
//! Packing the deadline with the slot in a `u64` per key would need no
//! hints and no reads, at twice the elements' bytes (8.6 bytes a key with
//! the B-tree, against about 4.7) and with deadlines and slot numbers
//! limited to what the 64 bits share between them.
//!
//! What it costs is counted for the dataset ([`Deadlines::bytes`]): the
//! runs' ring buffers exactly — each run's capacity in the allocator's size
//! class, a running total updated around every change to a run — and the
//! B-tree over them by a stated bound, as std does not expose its nodes
//! (`size_class::btree_bound`: a whole node for the root and a fifth of a
//! node per run). A run's capacity is kept a power of two, so one run
//! never takes more than [`RUN_MAX`] elements' room.

use std::cmp::Ordering;
use std::collections::{BTreeMap, VecDeque};

use crate::index::MAX_SLOTS;
use crate::size_class::{allocated, btree_bound};

/// Elements per run at most: 1 KB per full run.
const RUN_MAX: usize = 256;
/// Bits of an element that hold its slot; the rest hold its hint.
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
/// Bits of an element's hint.
const HINT_BITS: u32 = u32::BITS - SLOT_BITS;
const HINT_MAX: u64 = (1 << HINT_BITS) - 1;

/// A key's place in the order: its deadline, then its slot.
type Key = (u64, u32);

/// Where `deadline` falls in a span starting at `base`, in steps of
/// `2^shift` ms, clamped to the hints there are.
fn hint(base: u64, shift: u32, deadline: u64) -> u32 {
    (deadline.saturating_sub(base) >> shift).min(HINT_MAX) as u32
}

/// A sorted run of elements, `hint << SLOT_BITS | slot`.
#[derive(Debug)]
struct Run {
    /// The deadline hint 0 starts at.
    base: u64,
    /// Hints step by `2^shift` ms.
    shift: u32,
    elements: VecDeque<u32>,
}

impl Run {
    /// A run of `elements` (in order), its hints given anew.
    fn new(elements: VecDeque<u32>, deadline_of: impl Fn(u32) -> u64) -> Run {
        let mut run = Run {
            base: 0,
            shift: 0,
            elements,
        };
        run.rescale(deadline_of);
        run
    }

    /// The element for `key` under this run's scale.
    fn element(&self, (deadline, slot): Key) -> u32 {
        hint(self.base, self.shift, deadline) << SLOT_BITS | slot
    }

    /// Rescales a run that has just grown to a power of two, if its
    /// hints are crowded at either end (see the module comment). Keys due
    /// in the same millisecond crowd the lowest hint at 1 ms a step, where
    /// no scale would part them.
    fn grown(&mut self, deadline_of: impl Fn(u32) -> u64) {
        let len = self.elements.len();
        let hint_at = |at: usize| u64::from(self.elements[at] >> SLOT_BITS);
        let crowded = |at: usize, hint: u64| len >= 4 && hint_at(at) == hint;
        if len.is_power_of_two()
            && ((self.shift > 0 && crowded(3, 0)) || crowded(len.saturating_sub(4), HINT_MAX))
        {
            self.rescale(deadline_of);
        }
    }

    /// Spreads the run's deadlines over the hints again: `base` at the
    /// first, `shift` the least that fits the last.
    fn rescale(&mut self, deadline_of: impl Fn(u32) -> u64) {
        let (Some(&first), Some(&last)) = (self.elements.front(), self.elements.back()) else {
            return;
        };
        let base = deadline_of(first & SLOT_MASK);
        let span = deadline_of(last & SLOT_MASK) - base;
        let shift = (u64::BITS - span.leading_zeros()).saturating_sub(HINT_BITS);
        for element in &mut self.elements {
            let slot = *element & SLOT_MASK;
            *element = hint(base, shift, deadline_of(slot)) << SLOT_BITS | slot;
        }
        (self.base, self.shift) = (base, shift);
    }

    /// Where `key` is (`Ok`) or would go (`Err`).
    fn search(&self, key: Key, deadline_of: impl Fn(u32) -> u64) -> Result<usize, usize> {
        let target = self.element(key);
        let target_hint = target >> SLOT_BITS;
        // In steps of 1 ms, a hint that is not clamped is the deadline
        // itself: equal hints are equal deadlines, ordered by slot.
        let exact = self.shift == 0 && target_hint > 0 && u64::from(target_hint) < HINT_MAX;
        let order = |&element: &u32| {
            let slot = element & SLOT_MASK;
            if slot == key.1 {
                // A slot is in the index once: this is `key` itself, whose
                // entry may already be changing.
                return Ordering::Equal;
            }
            match (element >> SLOT_BITS).cmp(&target_hint) {
                Ordering::Equal if exact => slot.cmp(&key.1),
                Ordering::Equal => (deadline_of(slot), slot).cmp(&key),
                unequal => unequal,
            }
        };
        // Expiry removes the first element: no comparison, which matters
        // when a batch of keys shares one deadline and so one hint.
        if self
            .elements
            .front()
            .is_some_and(|&first| first & SLOT_MASK == key.1)
        {
            return Ok(0);
        }
        // In-order inserts go after the last element: one comparison.
        if self.elements.back().map(order) == Some(Ordering::Less) {
            return Err(self.elements.len());
        }
        self.elements.binary_search_by(order)
    }

    /// Bytes the run's ring buffer allocates.
    fn bytes(&self) -> usize {
        allocated(self.elements.capacity() * std::mem::size_of::<u32>())
    }
}

/// One shard's keys with a TTL, ordered by `(deadline, slot)`.
///
/// Every method takes `deadline_of`, the deadline of the key in a slot.
/// It is asked only about slots in the index and, on insert, the slot
/// being inserted, whose entry must hold its deadline by then.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    /// Runs by a lower bound of their keys. Every run is sorted and
    /// non-empty, and its keys are below the next run's key.
    runs: BTreeMap<Key, Run>,
    /// The sum of [`Run::bytes`] over `runs`.
    run_bytes: usize,
    /// The first key, kept so that asking for it (every write does, to
    /// publish when the shard is next due) reads no entry.
    first: Option<Key>,
}

impl Deadlines {
    /// Adds the key in `slot`, due at `at`.
    pub(crate) fn insert(&mut self, at: u64, slot: u32, deadline_of: impl Fn(u32) -> u64) {
        debug_assert!((slot as usize) < MAX_SLOTS);
        let key = (at, slot);
        if self.first.is_none_or(|first| key < first) {
            self.first = Some(key);
        }
        let run_key = match self.runs.range(..=key).next_back() {
            Some((&run_key, _)) => run_key,
            None => match self.runs.pop_first() {
                // Below every key: the first run takes `key` as its bound.
                Some((_, run)) => {
                    self.runs.insert(key, run);
                    key
                }
                None => {
                    self.add_run(key, Run::new(VecDeque::from([slot]), deadline_of));
                    return;
                }
            },
        };
        let run = self.runs.get_mut(&run_key).expect("found above");
        let Err(at) = run.search(key, &deadline_of) else {
            debug_assert!(false, "slot {slot} is in the deadline index twice");
            return;
        };
        let before = run.bytes();
        let element = run.element(key);
        if run.elements.len() < RUN_MAX {
            // A full buffer doubles: capacities stay powers of two, at
            // most RUN_MAX.
            run.elements.insert(at, element);
            run.grown(deadline_of);
            self.run_bytes = self.run_bytes + run.bytes() - before;
        } else if at == RUN_MAX {
            self.add_run(key, Run::new(VecDeque::from([slot]), deadline_of));
        } else {
            // The lower half keeps the run's buffer; the upper half gets
            // one of its own, which doubles if the element lands in it.
            let mut upper = run.elements.split_off(RUN_MAX / 2);
            match at.checked_sub(RUN_MAX / 2) {
                Some(upper_at) if upper_at > 0 => upper.insert(upper_at, element),
                _ => run.elements.insert(at, element),
            }
            run.rescale(&deadline_of);
            self.run_bytes = self.run_bytes + run.bytes() - before;
            let first = upper[0] & SLOT_MASK;
            self.add_run((deadline_of(first), first), Run::new(upper, deadline_of));
        }
    }

    fn add_run(&mut self, key: Key, run: Run) {
        self.run_bytes += run.bytes();
        self.runs.insert(key, run);
    }

    /// Removes the key in `slot`, which was due at `at`.
    pub(crate) fn remove(&mut self, at: u64, slot: u32, deadline_of: impl Fn(u32) -> u64) {
        let key = (at, slot);
        self.remove_key(key, &deadline_of);
        if self.first == Some(key) {
            self.first = self.runs.first_key_value().map(|(_, run)| {
                let slot = run.elements[0] & SLOT_MASK;
                (deadline_of(slot), slot)
            });
        }
    }

    fn remove_key(&mut self, key: Key, deadline_of: impl Fn(u32) -> u64) {
        let slot = key.1;
        let Some((&run_key, run)) = self.runs.range_mut(..=key).next_back() else {
            debug_assert!(false, "slot {slot} is not in the deadline index");
            return;
        };
        let Ok(at) = run.search(key, deadline_of) else {
            debug_assert!(false, "slot {slot} is not in the deadline index");
            return;
        };
        let before = run.bytes();
        run.elements.remove(at);
        if run.elements.is_empty() {
            self.run_bytes -= before;
            self.runs.remove(&run_key);
            if self.runs.is_empty() {
                // std keeps an emptied map's root leaf; an empty index
                // holds nothing.
                self.runs = BTreeMap::new();
            }
        } else {
            if run.elements.len() < run.elements.capacity() / 4 {
                run.elements
                    .shrink_to((run.elements.len() * 2).next_power_of_two());
            }
            self.run_bytes = self.run_bytes + run.bytes() - before;
        }
    }

    /// The earliest `(deadline, slot)`.
    pub(crate) fn first(&self) -> Option<(u64, u32)> {
        self.first
    }

    /// Keys with a deadline, for tests that check the index against the
    /// shard's count.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.runs.values().map(|run| run.elements.len()).sum()
    }

    /// Bytes the index allocates: its runs exactly, its B-tree by the
    /// bound in the module comment.
    pub(crate) fn bytes(&self) -> usize {
        self.run_bytes + btree_bound::<Key, Run>(self.runs.len())
    }

    /// The most one insert adds to [`Deadlines::bytes`]: splitting a full
    /// run, whose upper half gets a buffer that doubles to a full run's if
    /// the new element lands in it, plus a B-tree entry. A run growing in
    /// place at most doubles from half a full run's room, and the first
    /// run is one element and a B-tree root, both less.
    pub(crate) fn max_insert_growth() -> usize {
        let entry = btree_bound::<Key, Run>(2) - btree_bound::<Key, Run>(1);
        let split = allocated(RUN_MAX * std::mem::size_of::<u32>()) + entry;
        let first = btree_bound::<Key, Run>(1) + allocated(std::mem::size_of::<u32>());
        split.max(first)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::{BTreeSet, HashMap};

    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// What `index` allocates, recomputed over every run.
    fn recounted(index: &Deadlines) -> usize {
        index.runs.values().map(Run::bytes).sum::<usize>()
            + btree_bound::<Key, Run>(index.runs.len())
    }

    /// Every run sorted by key, with hints that never decrease and that
    /// match the run's scale.
    fn check_runs(index: &Deadlines, deadlines: &HashMap<u32, u64>) {
        let mut previous: Option<Key> = None;
        for (run_key, run) in &index.runs {
            assert!(previous < Some(*run_key));
            for &element in &run.elements {
                let slot = element & SLOT_MASK;
                let key = (deadlines[&slot], slot);
                assert!(*run_key <= key, "a run's key is a lower bound");
                assert!(previous < Some(key), "keys ascend");
                assert_eq!(element, run.element(key), "hint of slot {slot}");
                previous = Some(key);
            }
        }
    }

    /// Random inserts and removals over few slots and a narrow range of
    /// deadlines (so runs fill, split and empty, and many keys share a
    /// deadline or a hint), with some far deadlines (so hints clamp),
    /// checked against a B-tree set after every step, with the running
    /// byte count checked against the runs' capacities and each insert's
    /// growth against its bound.
    #[test]
    fn behaves_like_an_ordered_set() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut index = Deadlines::default();
        let mut model = BTreeSet::new();
        let mut deadlines: HashMap<u32, u64> = HashMap::new();
        let mut largest_growth = 0;
        for step in 0..200_000 {
            let slot = rng.gen_range(0..3_000u32);
            let before = index.bytes();
            match deadlines.get(&slot).copied() {
                Some(at) => {
                    index.remove(at, slot, |s| deadlines[&s]);
                    assert!(index.bytes() <= before, "step {step}: a removal grew");
                    deadlines.remove(&slot);
                    model.remove(&(at, slot));
                }
                None => {
                    let at = match rng.gen_range(0..100) {
                        0 => rng.gen_range(0..u64::MAX / 2),
                        _ => rng.gen_range(1_000..1_500),
                    };
                    deadlines.insert(slot, at);
                    index.insert(at, slot, |s| deadlines[&s]);
                    let growth = index.bytes().saturating_sub(before);
                    assert!(
                        growth <= Deadlines::max_insert_growth(),
                        "step {step}: an insert grew {growth}"
                    );
                    largest_growth = largest_growth.max(growth);
                    model.insert((at, slot));
                }
            }
            assert_eq!(index.first(), model.first().copied(), "step {step}");
            assert_eq!(index.len(), model.len());
            assert_eq!(index.bytes(), recounted(&index), "step {step}");
            if step % 1_000 == 0 {
                check_runs(&index, &deadlines);
                assert!(index.runs.values().all(|run| {
                    run.elements.capacity().is_power_of_two() && run.elements.capacity() <= RUN_MAX
                }));
            }
        }
        assert_eq!(
            largest_growth,
            Deadlines::max_insert_growth(),
            "the bound is reached"
        );
        let all: Vec<Key> = index
            .runs
            .values()
            .flat_map(|run| &run.elements)
            .map(|&element| (deadlines[&(element & SLOT_MASK)], element & SLOT_MASK))
            .collect();
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        for (at, slot) in all {
            index.remove(at, slot, |s| deadlines[&s]);
        }
        assert_eq!((index.bytes(), index.run_bytes), (0, 0));
    }

    /// Keys given one deadline (`EXPIREAT` of a batch) share a
    /// hint: inserting them reads one entry each, and expiring them from
    /// the front reads only the entry of the key that becomes first, the
    /// next to expire.
    #[test]
    fn one_shared_deadline_expires_without_searching() {
        let reads = Cell::new(0u64);
        let deadline_of = |_: u32| {
            reads.set(reads.get() + 1);
            5_000
        };
        let mut index = Deadlines::default();
        let keys = 100_000u32;
        for slot in 0..keys {
            index.insert(5_000, slot, deadline_of);
        }
        assert!(reads.take() <= u64::from(keys) * 3);
        while let Some((at, slot)) = index.first() {
            index.remove(at, slot, deadline_of);
        }
        assert!(reads.take() <= u64::from(keys));
        assert_eq!(index.bytes(), 0);
    }

    #[test]
    fn in_order_inserts_fill_runs_of_four_bytes_a_key() {
        let mut index = Deadlines::default();
        let keys = RUN_MAX as u32 * 10;
        for slot in 0..keys {
            index.insert(u64::from(slot) * 3, slot, |s| u64::from(s) * 3);
        }
        assert_eq!(index.runs.len(), 10);
        assert!(index
            .runs
            .values()
            .all(|run| run.elements.capacity() == RUN_MAX));
        assert_eq!(
            index.bytes(),
            10 * 1024 + btree_bound::<Key, Run>(10),
            "4 bytes a key and the B-tree"
        );
        for slot in 0..keys {
            assert_eq!(index.first(), Some((u64::from(slot) * 3, slot)));
            index.remove(u64::from(slot) * 3, slot, |s| u64::from(s) * 3);
            assert_eq!(index.bytes(), recounted(&index));
        }
        assert!(index.runs.is_empty());
        assert_eq!(index.bytes(), 0);
    }

    /// The hints keep deadline reads (each a cache miss or two in a
    /// shard) to a few per insert and removal, for deadlines in order,
    /// in order with several keys a millisecond, and at random; removals
    /// in random order.
    #[test]
    fn hints_spare_most_deadline_reads() {
        let mut rng = StdRng::seed_from_u64(11);
        let keys = 100_000u32;
        // Most reads per insert and per removal: rescales read a whole
        // run, but those reads do not wait on one another, as a search's do.
        for (pattern, insert_reads, removal_reads) in [
            ("2 ms apart", 2.0, 0.1),
            ("4 a ms", 0.1, 0.1),
            ("at random", 4.0, 1.0),
        ] {
            let deadlines: Vec<u64> = (0..keys)
                .map(|slot| match pattern {
                    "2 ms apart" => u64::from(slot) * 2,
                    "4 a ms" => u64::from(slot) / 4,
                    _ => rng.gen_range(0..10_000_000),
                })
                .collect();
            let reads = Cell::new(0u64);
            let deadline_of = |slot: u32| {
                reads.set(reads.get() + 1);
                deadlines[slot as usize]
            };
            let mut index = Deadlines::default();
            for slot in 0..keys {
                index.insert(deadlines[slot as usize], slot, deadline_of);
            }
            let per_insert = reads.take() as f64 / f64::from(keys);
            assert!(
                per_insert < insert_reads,
                "{pattern}: {per_insert} reads an insert"
            );
            let mut slots: Vec<u32> = (0..keys).collect();
            slots.shuffle(&mut rng);
            for &slot in &slots {
                index.remove(deadlines[slot as usize], slot, deadline_of);
            }
            let per_removal = reads.take() as f64 / f64::from(keys);
            assert!(
                per_removal < removal_reads,
                "{pattern}: {per_removal} reads a removal"
            );
            assert_eq!(index.bytes(), 0);
        }
    }
}
