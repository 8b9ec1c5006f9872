//! The active expiry pass, as Redis's expire.c drives it, and what INFO
//! reports about it.
//!
//! Each shard keeps its keys with a TTL in deadline order (`crate::expiry`);
//! readers and writers delete the expired keys they meet. The server calls
//! [`Store::reclaim_expired`] every tick for the keys nobody meets: it
//! walks every shard, skips without a lock those whose published earliest
//! deadline is still ahead, and takes at most a bounded batch from each of
//! the others, so no lock is held for long. Each removal's delay past its
//! deadline feeds the lag window (`expire_lag_ms_max`); stale bytes are
//! what expired keys not yet reclaimed still hold, as each shard's last
//! write published it.

use std::sync::atomic::Ordering;

use super::{KeyEvent, Store};
use crate::entry::Entry;
use crate::expiry::Reclaimed;

impl Store {
    /// One pass of active expiry over every shard: removes keys whose
    /// deadline has passed, at most `max_per_shard` per shard so no shard
    /// lock is held for long, handing each to `free` once its shard is
    /// released. Shards with nothing due are skipped without a lock, by the
    /// earliest deadline their last write published. `hold` is called
    /// before the work on each shard with keys due, and what it returns is
    /// dropped when that work (lock, unlink, `free`) is done: the server
    /// runs just those stretches at its workers' priority. Returns what was
    /// removed and whether any shard still has keys due (call again).
    pub fn reclaim_expired<H>(
        &self,
        now_ms: u64,
        max_per_shard: usize,
        mut hold: impl FnMut() -> H,
        mut free: impl FnMut(Entry),
    ) -> (Reclaimed, bool) {
        let (mut done, mut more) = (Reclaimed::default(), false);
        let mut unlinked = Vec::with_capacity(max_per_shard.min(1024));
        for db_no in 0..self.dbs.len() {
            for (shard_no, counts) in self.counts[db_no].iter().enumerate() {
                if counts.next_deadline.load(Ordering::Relaxed) > now_ms {
                    continue;
                }
                let held = hold();
                let mut guard = self.db(db_no, now_ms).guard(shard_no);
                let reclaimed = guard
                    .guard
                    .reclaim_expired(now_ms, max_per_shard, &mut unlinked);
                done.add(reclaimed);
                more |= guard.guard.next_deadline().is_some_and(|at| at <= now_ms);
                // Reported under the lock, so each deletion is recorded
                // before any later write to its key (replication).
                for entry in &unlinked {
                    self.emit(KeyEvent::Expired, db_no, entry.key());
                }
                drop(guard);
                unlinked.drain(..).for_each(&mut free);
                self.record_lag(now_ms, reclaimed);
                drop(held);
            }
        }
        (done, more)
    }

    pub(super) fn record_lag(&self, now_ms: u64, done: Reclaimed) {
        if done.keys > 0 {
            self.lag.lock().record(now_ms, done.max_lag_ms);
        }
    }

    /// The worst delay, in ms, between a key's deadline and its removal
    /// over the last minute (INFO's `expire_lag_ms_max`).
    pub fn expire_lag_ms_max(&self, now_ms: u64) -> u64 {
        self.lag.lock().max(now_ms)
    }

    /// Bytes held by keys already past their deadline and not yet
    /// reclaimed (INFO's `expired_stale_perc`), summed from what each
    /// shard's last write published, so INFO takes no shard lock. A shard
    /// with keys due is written by the expiry pass every tick, so the sum
    /// is what the pass has left behind as of its latest visit: keys that
    /// fell due since are counted at its next one.
    pub fn stale_bytes(&self) -> usize {
        self.counts
            .iter()
            .flat_map(|db| db.iter())
            .map(|counts| counts.stale_bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Expired keys reclaimed so far (the `expired_keys` statistic).
    pub fn expired_keys(&self) -> u64 {
        self.counts
            .iter()
            .flat_map(|db| db.iter())
            .map(|counts| counts.reclaimed_expired.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use crate::keyspace::{s, DbStats, Store};

    #[test]
    fn active_expiry_reclaims_keys_nobody_reads() {
        let store = Store::new(2);
        for i in 0..1000u64 {
            let k = format!("k{i}");
            store.db((i % 2) as usize, 0).write(k.as_bytes()).insert(
                k.as_bytes(),
                s("v"),
                Some(10 + i % 3),
            );
        }
        store.db(0, 0).write(b"keep").insert(b"keep", s("v"), None);
        let mut freed = 0;
        let (done, more) = store.reclaim_expired(11, 1, || (), |_| freed += 1);
        assert!(more, "one key per shard per pass leaves work");
        assert_eq!(done.keys, freed);
        assert_eq!(store.expire_lag_ms_max(11), 1);
        while store.reclaim_expired(12, 1, || (), |_| freed += 1).1 {}
        assert_eq!(freed, 1000);
        assert_eq!(store.expired_keys(), 1000);
        assert_eq!(
            store.db(0, 12).stats(),
            DbStats {
                keys: 1,
                expires: 0,
                avg_ttl_ms: 0
            }
        );
    }

    #[test]
    fn stale_bytes_are_read_without_waiting_for_a_writer() {
        let store = std::sync::Arc::new(Store::new(1));
        for i in 0..200 {
            let k = format!("k{i}");
            store
                .db(0, 0)
                .write(k.as_bytes())
                .insert(k.as_bytes(), s("v"), Some(500));
        }
        assert_eq!(store.stale_bytes(), 0, "nothing was due at any write");
        // One key per shard per pass: the pass leaves most keys behind, and
        // every shard it wrote published what it left.
        store.reclaim_expired(2_000, 1, || (), drop);
        let left = store.stale_bytes();
        let db = store.db(0, 2_000);
        assert!(left > 0 && db.stats().keys > 0);
        let held = db.write(b"k0");
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || tx.send(store.stale_bytes()).unwrap())
        };
        let read = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("stale bytes answered while a shard is write-locked");
        drop(held);
        reader.join().unwrap();
        assert_eq!(read, left);
        while store.reclaim_expired(2_000, 64, || (), drop).1 {}
        assert_eq!(store.stale_bytes(), 0);
    }

    #[test]
    fn active_expiry_passes_a_locked_shard_with_nothing_due() {
        let store = std::sync::Arc::new(Store::new(1));
        let db = store.db(0, 0);
        db.write(b"later").insert(b"later", s("v"), Some(1_000_000));
        // A key due now, in another shard than "later".
        let due = (0..)
            .map(|i| format!("due{i}"))
            .find(|k| db.shard_index(k.as_bytes()) != db.shard_index(b"later"))
            .unwrap();
        db.write(due.as_bytes())
            .insert(due.as_bytes(), s("v"), Some(10));
        let held = db.write(b"later");
        let (tx, rx) = std::sync::mpsc::channel();
        let reclaimer = {
            let store = store.clone();
            std::thread::spawn(move || tx.send(store.reclaim_expired(20, 64, || (), drop)).unwrap())
        };
        let (done, more) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("expiry skips a shard with nothing due without locking it");
        drop(held);
        reclaimer.join().unwrap();
        assert_eq!((done.keys, more), (1, false));
    }
}
