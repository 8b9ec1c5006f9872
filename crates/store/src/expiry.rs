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
//! set of `(deadline, slot)` (`deadlines.rs`, 4 bytes a key), updated
//! wherever a TTL is set, changed, cleared or its key removed, so every key
//! with a TTL is in exactly one place. Reclaiming is then a walk from the
//! front of that set up to "now": the cost is proportional to the keys
//! that actually expire, never to the keys that exist, and nothing that is
//! due is left behind. Two paths use it:
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
}
