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

use std::collections::{BTreeMap, VecDeque};

/// Elements per run at most: 2 KB per full run.
const RUN_MAX: usize = 256;

/// An ordered set of `u64` in sorted runs.
#[derive(Debug, Default)]
pub(crate) struct SortedRuns {
    /// Runs by a lower bound of their elements. Every run is sorted and
    /// non-empty, and its elements are below the next run's key.
    runs: BTreeMap<u64, VecDeque<u64>>,
    len: usize,
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
                    self.runs.insert(value, VecDeque::from([value]));
                    self.len += 1;
                    return true;
                }
            },
        };
        let run = self.runs.get_mut(&key).expect("found above");
        let Err(at) = run.binary_search(&value) else {
            return false;
        };
        self.len += 1;
        if run.len() < RUN_MAX {
            run.insert(at, value);
        } else if at == RUN_MAX {
            self.runs.insert(value, VecDeque::from([value]));
        } else {
            let mut upper = run.split_off(RUN_MAX / 2);
            match at.checked_sub(RUN_MAX / 2) {
                Some(upper_at) if upper_at > 0 => upper.insert(upper_at, value),
                _ => run.insert(at, value),
            }
            self.runs.insert(upper[0], upper);
        }
        true
    }

    /// Removes `value`; false if it was not there.
    pub(crate) fn remove(&mut self, value: u64) -> bool {
        let Some((&key, run)) = self.runs.range_mut(..=value).next_back() else {
            return false;
        };
        let Ok(at) = run.binary_search(&value) else {
            return false;
        };
        run.remove(at);
        self.len -= 1;
        if run.is_empty() {
            self.runs.remove(&key);
        } else if run.len() < run.capacity() / 4 {
            run.shrink_to(run.len() * 2);
        }
        true
    }

    /// The smallest element.
    pub(crate) fn first(&self) -> Option<u64> {
        self.runs.first_key_value().map(|(_, run)| run[0])
    }

    /// How many elements there are.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Random inserts and removals over a small range (so runs fill, split
    /// and empty), checked against a B-tree set after every step.
    #[test]
    fn behaves_like_an_ordered_set() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut runs = SortedRuns::default();
        let mut model = BTreeSet::new();
        for step in 0..200_000 {
            let value = rng.gen_range(0..3_000u64);
            let (got, want) = if rng.gen_bool(0.55) {
                (runs.insert(value), model.insert(value))
            } else {
                (runs.remove(value), model.remove(&value))
            };
            assert_eq!(got, want, "step {step}, value {value}");
            assert_eq!(runs.first(), model.first().copied(), "step {step}");
            assert_eq!(runs.len(), model.len());
        }
        let all: Vec<u64> = runs.runs.values().flatten().copied().collect();
        assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn in_order_inserts_fill_runs() {
        let mut runs = SortedRuns::default();
        for value in 0..RUN_MAX as u64 * 10 {
            runs.insert(value);
        }
        assert_eq!(runs.runs.len(), 10);
        assert!(runs.runs.values().all(|run| run.capacity() == RUN_MAX));
        for value in 0..RUN_MAX as u64 * 10 {
            assert_eq!(runs.first(), Some(value));
            assert!(runs.remove(value));
        }
        assert!(runs.runs.is_empty());
    }
}
