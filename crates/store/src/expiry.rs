//! Expiry: how keys with a TTL leave memory on time.
//!
//! Redis finds expired keys by sampling: every cycle it draws a few random
//! keys with a TTL and deletes the expired ones, repeating while more than
//! a quarter of a sample was expired. With many keys, the expired ones that
//! sampling has not reached yet stay in memory — operators have measured a
//! quarter of a large cache held by keys already past their deadline — and
//! sampling harder costs latency.
//!
//! keel does not sample. Each shard keeps its keys with a TTL in an ordered
//! set of `(deadline, slot)` (`Deadlines` below, one packed `u64` per key),
//! updated wherever a TTL is set, changed, cleared or its key removed, so
//! every key with a TTL is in exactly one place. Reclaiming is then a walk from the front of that set
//! up to "now": the cost is proportional to the keys that actually expire,
//! never to the keys that exist, and nothing that is due is left behind.
//! Two paths use it:
//!
//! - active expiry: the server calls [`crate::Store::reclaim_expired`] every
//!   tick; each shard gives up a bounded batch per pass, so a million keys
//!   sharing one deadline are reclaimed in short lock holds with requests
//!   served in between;
//! - on access: a reader that meets an expired key sees it as absent and
//!   deletes it when it releases the shard, as Redis does.
//!
//! [`LagWindow`] measures the result: the worst delay between a key's
//! deadline and its removal over the last minute.

use std::collections::BTreeSet;

use crate::runs::SortedRuns;
use crate::size_class::btree_bound;

/// What one reclaim did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reclaimed {
    /// Keys removed.
    pub keys: usize,
    /// Longest delay, in ms, between a removed key's deadline and its
    /// removal.
    pub max_lag_ms: u64,
}

impl Reclaimed {
    /// Adds another reclaim's figures to these.
    pub fn add(&mut self, other: Reclaimed) {
        self.keys += other.keys;
        self.max_lag_ms = self.max_lag_ms.max(other.max_lag_ms);
    }
}

/// The worst reclaim lag per second over the last minute.
#[derive(Debug)]
pub struct LagWindow {
    /// `(unix second, worst lag in ms)`, indexed by second modulo 60.
    seconds: [(u64, u64); 60],
}

impl Default for LagWindow {
    fn default() -> Self {
        LagWindow {
            seconds: [(0, 0); 60],
        }
    }
}

impl LagWindow {
    /// Records a reclaim that happened at `now_ms`.
    pub fn record(&mut self, now_ms: u64, lag_ms: u64) {
        let second = now_ms / 1000;
        let bucket = &mut self.seconds[(second % 60) as usize];
        if bucket.0 != second {
            *bucket = (second, 0);
        }
        bucket.1 = bucket.1.max(lag_ms);
    }

    /// The worst lag recorded in the 60 seconds up to `now_ms`.
    pub fn max(&self, now_ms: u64) -> u64 {
        let second = now_ms / 1000;
        self.seconds
            .iter()
            .filter(|(s, _)| *s + 60 > second && *s <= second)
            .map(|(_, lag)| *lag)
            .max()
            .unwrap_or(0)
    }
}

/// Bits of a packed deadline key that hold the slot: 4M slots per shard,
/// 256M keys per database.
const SLOT_BITS: u32 = 22;
/// The latest deadline a packed key holds: 2^42 ms after the epoch, in the
/// year 2109.
const MAX_PACKED_DEADLINE: u64 = (1 << (64 - SLOT_BITS)) - 1;

/// A deadline that does not fit a packed key: `(deadline, slot)`.
type Wide = (u64, u32);

/// One shard's keys with a TTL, ordered by `(deadline, slot)`.
///
/// Nearly every key is one `u64` — the deadline in the high 42 bits, the
/// slot in the low 22 — in an ordered set of sorted runs (see `runs.rs`),
/// a third of what a B-tree of `(u64, u32)` pairs padded to 16 bytes costs,
/// keeping everything the pairs gave:
/// the earliest deadline is the first element, the keys due are a walk
/// from the front, and a key is found and removed by its deadline and slot.
/// A deadline past 2109 or a slot past 4M does not fit and goes to a
/// second, wide set; the earliest key is the lesser of the two fronts.
///
/// Its bytes ([`Deadlines::bytes`]) count the runs' buffers exactly and
/// the two B-trees (over the runs, and the wide set) by an upper bound:
/// a whole node for a root, a fifth of a node per entry, as std's nodes
/// other than the root are at least 5/11 full — for the wide set, 320
/// bytes plus 64 per key, several times its average, but such keys are
/// rare and the bound never undercounts.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    packed: SortedRuns,
    wide: BTreeSet<Wide>,
}

fn pack(at: u64, slot: u32) -> Option<u64> {
    (at <= MAX_PACKED_DEADLINE && slot < 1 << SLOT_BITS).then_some((at << SLOT_BITS) | slot as u64)
}

impl Deadlines {
    /// Adds the key in `slot`, due at `at`.
    pub(crate) fn insert(&mut self, at: u64, slot: u32) {
        match pack(at, slot) {
            Some(key) => self.packed.insert(key),
            None => self.wide.insert((at, slot)),
        };
    }

    /// Removes the key in `slot`, which was due at `at`.
    pub(crate) fn remove(&mut self, at: u64, slot: u32) {
        match pack(at, slot) {
            Some(key) => self.packed.remove(key),
            None => {
                let removed = self.wide.remove(&(at, slot));
                if self.wide.is_empty() {
                    // std keeps an emptied set's root leaf.
                    self.wide = BTreeSet::new();
                }
                removed
            }
        };
    }

    /// The earliest `(deadline, slot)`.
    pub(crate) fn first(&self) -> Option<(u64, u32)> {
        let packed = self
            .packed
            .first()
            .map(|key| (key >> SLOT_BITS, (key & ((1 << SLOT_BITS) - 1)) as u32));
        let wide = self.wide.first().copied();
        match (packed, wide) {
            (Some(packed), Some(wide)) => Some(packed.min(wide)),
            (packed, wide) => packed.or(wide),
        }
    }

    /// Keys with a deadline, for tests that check the index against the
    /// shard's count.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.packed.len() + self.wide.len()
    }

    /// Bytes the index takes, for memory accounting: exact for the runs,
    /// an upper bound for the B-trees (see the type's comment).
    pub(crate) fn bytes(&self) -> usize {
        self.packed.bytes() + btree_bound::<Wide, ()>(self.wide.len())
    }

    /// The most one insert adds to [`Deadlines::bytes`]: a packed key
    /// splitting a full run, which outweighs a wide key starting the wide
    /// set (its root and one entry).
    pub(crate) fn max_insert_growth() -> usize {
        SortedRuns::max_insert_growth().max(btree_bound::<Wide, ()>(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_forgets_after_a_minute() {
        let mut w = LagWindow::default();
        w.record(1_000, 40);
        w.record(1_500, 10);
        w.record(30_000, 5);
        assert_eq!(w.max(30_000), 40);
        assert_eq!(w.max(60_999), 40);
        assert_eq!(w.max(61_000), 5);
        assert_eq!(w.max(91_000), 0);
    }

    #[test]
    fn deadlines_order_packed_and_wide_keys_together() {
        let mut d = Deadlines::default();
        let far = MAX_PACKED_DEADLINE + 1;
        let big_slot = 1 << SLOT_BITS;
        d.insert(far, 1);
        d.insert(500, big_slot);
        d.insert(500, 3);
        d.insert(MAX_PACKED_DEADLINE, (1 << SLOT_BITS) - 1);
        assert_eq!(d.len(), 4);
        assert_eq!(d.first(), Some((500, 3)));
        d.remove(500, 3);
        assert_eq!(
            d.first(),
            Some((500, big_slot)),
            "a wide key can come first"
        );
        d.remove(500, big_slot);
        assert_eq!(d.first(), Some((MAX_PACKED_DEADLINE, (1 << SLOT_BITS) - 1)));
        d.remove(MAX_PACKED_DEADLINE, (1 << SLOT_BITS) - 1);
        assert_eq!(d.first(), Some((far, 1)));
        assert_eq!(d.bytes(), btree_bound::<Wide, ()>(1));
        d.remove(far, 1);
        assert_eq!((d.first(), d.len(), d.bytes()), (None, 0, 0));
    }
}
