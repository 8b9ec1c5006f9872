//! An ordered set of `u64` stored as sorted runs, for the deadline index.
//!
//! A B-tree set of `u64` spends about 19 bytes per element when elements
//! arrive in order, as deadlines mostly do (`SET ... EX 100` at a steady
//! rate): each full leaf splits in two and the left half is never filled
//! again, so leaves stay a little over half full, and every leaf carries
//! its own header. Here elements live in runs of up to [`RUN_MAX`], each a
//! sorted ring buffer, found through a B-tree keyed by a lower bound of
//! each run's elements:
//!
//! - an element past the end of a full run starts a new run, so in-order
//!   inserts fill runs completely (8 bytes per element plus one index entry
//!   per 256);
//! - an element inside a full run splits it in halves, as a B-tree would;
//! - removing the smallest element (what expiry does) is O(1) on the ring
//!   buffer and leaves the run's key alone: a key only has to be a lower
//!   bound, so it never needs rewriting when a run's front goes;
//! - a run shrinks when it is three-quarters empty and disappears when it
//!   is empty.
//!
//! Lookups cost a B-tree search plus a binary search within a run, and an
//! insert in the middle moves up to half a run (1 KB) — the price of the
//! dense layout.
//!
//! What it costs is counted for the dataset ([`SortedRuns::bytes`]): the
//! runs' ring buffers exactly — each run's capacity in the allocator's size
//! class, a running total updated around every change to a run — and the
//! B-tree over them by a stated bound, as std does not expose its nodes:
//! one whole node for the root and a fifth of a node per run, as every
//! other node holds at least 5 of its 11 entries (`size_class::btree_bound`:
//! 640 + 128 bytes per run). A run's capacity is kept a power of two, so
//! one run never takes more than [`RUN_MAX`] elements' room.

use std::collections::{BTreeMap, VecDeque};

use crate::size_class::{allocated, btree_bound};

/// Elements per run at most: 2 KB per full run.
const RUN_MAX: usize = 256;

type Run = VecDeque<u64>;

/// Bytes a run's ring buffer allocates.
fn run_bytes(run: &Run) -> usize {
    allocated(run.capacity() * std::mem::size_of::<u64>())
}

/// An ordered set of `u64` in sorted runs.
#[derive(Debug, Default)]
pub(crate) struct SortedRuns {
    /// Runs by a lower bound of their elements. Every run is sorted and
    /// non-empty, and its elements are below the next run's key.
    runs: BTreeMap<u64, Run>,
    /// The sum of [`run_bytes`] over `runs`.
    run_bytes: usize,
}

impl SortedRuns {
    /// Adds `value`; false if it was there already.
    pub(crate) fn insert(&mut self, value: u64) -> bool {
        let key = match self.runs.range(..=value).next_back() {
            Some((&key, _)) => key,
            None => match self.runs.pop_first() {
                // Below every key: the first run takes `value` as its bound.
                Some((_, run)) => {
                    self.runs.insert(value, run);
                    value
                }
                None => {
                    self.add_run(VecDeque::from([value]));
                    return true;
                }
            },
        };
        let run = self.runs.get_mut(&key).expect("found above");
        let Err(at) = run.binary_search(&value) else {
            return false;
        };
        let before = run_bytes(run);
        if run.len() < RUN_MAX {
            // A full buffer doubles: capacities stay powers of two, at
            // most RUN_MAX.
            run.insert(at, value);
            self.run_bytes = self.run_bytes + run_bytes(run) - before;
        } else if at == RUN_MAX {
            self.add_run(VecDeque::from([value]));
        } else {
            // The lower half keeps the run's buffer; the upper half gets
            // one of its own, which doubles if `value` lands in it.
            let mut upper = run.split_off(RUN_MAX / 2);
            match at.checked_sub(RUN_MAX / 2) {
                Some(upper_at) if upper_at > 0 => upper.insert(upper_at, value),
                _ => run.insert(at, value),
            }
            self.run_bytes = self.run_bytes + run_bytes(run) - before;
            self.add_run(upper);
        }
        true
    }

    /// Adds a new run, keyed by its first element.
    fn add_run(&mut self, run: Run) {
        self.run_bytes += run_bytes(&run);
        self.runs.insert(run[0], run);
    }

    /// Removes `value`; false if it was not there.
    pub(crate) fn remove(&mut self, value: u64) -> bool {
        let Some((&key, run)) = self.runs.range_mut(..=value).next_back() else {
            return false;
        };
        let Ok(at) = run.binary_search(&value) else {
            return false;
        };
        let before = run_bytes(run);
        run.remove(at);
        if run.is_empty() {
            self.run_bytes -= before;
            self.runs.remove(&key);
            if self.runs.is_empty() {
                // std keeps an emptied map's root leaf; an empty set holds
                // nothing.
                self.runs = BTreeMap::new();
            }
        } else {
            if run.len() < run.capacity() / 4 {
                run.shrink_to((run.len() * 2).next_power_of_two());
            }
            self.run_bytes = self.run_bytes + run_bytes(run) - before;
        }
        true
    }

    /// The smallest element.
    pub(crate) fn first(&self) -> Option<u64> {
        self.runs.first_key_value().map(|(_, run)| run[0])
    }

    /// How many elements there are, for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.runs.values().map(VecDeque::len).sum()
    }

    /// Bytes the set allocates: its runs exactly, its B-tree by the bound
    /// in the module comment.
    pub(crate) fn bytes(&self) -> usize {
        self.run_bytes + btree_bound::<u64, Run>(self.runs.len())
    }

    /// The most one insert adds to [`SortedRuns::bytes`]: splitting a
    /// full run, whose upper half gets a buffer that doubles to a full
    /// run's if the new element lands in it, plus a B-tree entry. A run
    /// growing in place at most doubles from half a full run's room, and
    /// the first run is one element and a B-tree root, both less.
    pub(crate) fn max_insert_growth() -> usize {
        let entry = btree_bound::<u64, Run>(2) - btree_bound::<u64, Run>(1);
        let split = allocated(RUN_MAX * std::mem::size_of::<u64>()) + entry;
        let first = btree_bound::<u64, Run>(1) + allocated(std::mem::size_of::<u64>());
        split.max(first)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// What `runs` allocates, recomputed over every run.
    fn recounted(runs: &SortedRuns) -> usize {
        runs.runs.values().map(run_bytes).sum::<usize>() + btree_bound::<u64, Run>(runs.runs.len())
    }

    /// Random inserts and removals over a small range (so runs fill, split
    /// and empty), checked against a B-tree set after every step, with the
    /// running byte count checked against the runs' capacities and each
    /// insert's growth against its bound.
    #[test]
    fn behaves_like_an_ordered_set() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut runs = SortedRuns::default();
        let mut model = BTreeSet::new();
        let mut largest_growth = 0;
        for step in 0..200_000 {
            let value = rng.gen_range(0..3_000u64);
            let before = runs.bytes();
            let (got, want) = if rng.gen_bool(0.55) {
                let got = runs.insert(value);
                let growth = runs.bytes().saturating_sub(before);
                assert!(
                    growth <= SortedRuns::max_insert_growth(),
                    "step {step}: an insert grew {growth}"
                );
                largest_growth = largest_growth.max(growth);
                (got, model.insert(value))
            } else {
                let got = runs.remove(value);
                assert!(runs.bytes() <= before, "step {step}: a removal grew");
                (got, model.remove(&value))
            };
            assert_eq!(got, want, "step {step}, value {value}");
            assert_eq!(runs.first(), model.first().copied(), "step {step}");
            assert_eq!(runs.len(), model.len());
            assert_eq!(runs.bytes(), recounted(&runs), "step {step}");
            if step % 1_000 == 0 {
                assert!(runs
                    .runs
                    .values()
                    .all(|run| run.capacity().is_power_of_two() && run.capacity() <= RUN_MAX));
            }
        }
        assert_eq!(
            largest_growth,
            SortedRuns::max_insert_growth(),
            "the bound is reached"
        );
        let all: Vec<u64> = runs.runs.values().flatten().copied().collect();
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        for value in all {
            runs.remove(value);
        }
        assert_eq!((runs.bytes(), runs.run_bytes), (0, 0));
    }

    #[test]
    fn in_order_inserts_fill_runs() {
        let mut runs = SortedRuns::default();
        for value in 0..RUN_MAX as u64 * 10 {
            runs.insert(value);
        }
        assert_eq!(runs.runs.len(), 10);
        assert!(runs.runs.values().all(|run| run.capacity() == RUN_MAX));
        assert_eq!(runs.bytes(), 10 * 2048 + 640 + 10 * 128);
        for value in 0..RUN_MAX as u64 * 10 {
            assert_eq!(runs.first(), Some(value));
            assert!(runs.remove(value));
            assert_eq!(runs.bytes(), recounted(&runs));
        }
        assert!(runs.runs.is_empty());
        assert_eq!(runs.bytes(), 0);
    }
}
