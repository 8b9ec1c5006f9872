//! The store's side of a snapshot: taking its instant across every shard,
//! and the per-shard steps the saver drives (the algorithm is in
//! `crate::snapshot`).
//!
//! These take the shard locks directly rather than through `Db`'s guards:
//! the saver touches no key on behalf of a client, holds one shard at a
//! time (all of them only at the instant, in the global order), and drops
//! what it is handed after releasing the lock.

use super::{Store, SHARDS_PER_DB};
use crate::entry::Entry;

/// A database's size at a snapshot's instant, for the file's header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbSize {
    /// Keys, expired ones not yet reclaimed included.
    pub keys: u64,
    /// Keys with a TTL.
    pub expires: u64,
}

impl Store {
    /// Takes a snapshot's instant, `now_ms`: with every shard of every
    /// database write-locked in the global order, each starts its part.
    /// Returns each database's size then, and what `at_instant` returns,
    /// called with every lock held: what must be read at that same instant
    /// (where the replication stream is). Any running snapshot is replaced.
    pub fn begin_snapshot<T>(
        &self,
        now_ms: u64,
        at_instant: impl FnOnce() -> T,
    ) -> (Vec<DbSize>, T) {
        let mut guards: Vec<_> = self
            .dbs
            .iter()
            .flat_map(|db| db.iter().map(|s| s.write()))
            .collect();
        let sizes = guards
            .chunks_mut(SHARDS_PER_DB)
            .map(|db| {
                let mut size = DbSize::default();
                for shard in db {
                    shard.begin_snapshot(now_ms);
                    size.keys += shard.len() as u64;
                    size.expires += shard.expires() as u64;
                }
                size
            })
            .collect();
        let seen = at_instant();
        drop(guards);
        (sizes, seen)
    }

    /// Walks up to `max_slots` more slots of shard `shard` of database `db`
    /// for the running snapshot, visiting each entry of its instant found
    /// there; then hands the copies writers kept since the last step to
    /// `visit` too, once the lock is released. True once the shard's walk
    /// is over.
    pub fn snapshot_step(
        &self,
        db: usize,
        shard: usize,
        max_slots: usize,
        mut visit: impl FnMut(&Entry),
    ) -> bool {
        let (done, preserved) = {
            let guard = self.dbs[db][shard].read();
            let done = guard.snapshot_walk(max_slots, &mut visit);
            (done, guard.snapshot_take_preserved())
        };
        preserved.iter().for_each(&mut visit);
        done
    }

    /// Ends shard `shard` of database `db`'s part of the snapshot, handing
    /// `visit` the last copies writers kept.
    pub fn end_snapshot(&self, db: usize, shard: usize, visit: impl FnMut(&Entry)) {
        let preserved = self.dbs[db][shard].write().end_snapshot();
        preserved.iter().for_each(visit);
    }

    /// Ends the running snapshot everywhere, discarding what it kept (a
    /// save that failed or was cancelled).
    pub fn abort_snapshot(&self) {
        for db in 0..self.dbs.len() {
            for shard in 0..SHARDS_PER_DB {
                self.end_snapshot(db, shard, |_| ());
            }
        }
    }

    /// What running snapshots hold beside the dataset: bitmaps and copies
    /// waiting to be saved.
    pub fn snapshot_bytes(&self) -> usize {
        self.dbs
            .iter()
            .flat_map(|db| db.iter())
            .map(|shard| shard.read().snapshot_bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::keyspace::s;
    use crate::value::Value;

    type Keyspace = BTreeMap<(usize, Vec<u8>), (Value, Option<u64>)>;

    fn record(into: &mut Keyspace, db: usize, entry: &Entry) {
        let old = into.insert(
            (db, entry.key().to_vec()),
            (entry.value().to_value(), entry.expire_at_ms()),
        );
        assert!(old.is_none(), "key {:?} saved twice", entry.key());
    }

    fn everything(store: &Store, now_ms: u64) -> Keyspace {
        let mut all = Keyspace::new();
        for db in 0..store.databases() {
            for shard in &store.dbs[db][..] {
                for entry in shard.read().iter(now_ms) {
                    record(&mut all, db, entry);
                }
            }
        }
        all
    }

    /// Random writes, deletes, TTL changes, in-place edits, flushes and
    /// SWAPDB interleaved with the saver's steps: what the saver sees is
    /// exactly the keyspace of the instant, each key once.
    #[test]
    fn the_saver_sees_the_instant_whatever_writers_do_meanwhile() {
        for seed in 0..6 {
            let mut rng = StdRng::seed_from_u64(seed);
            let store = Store::new(3);
            let key = |rng: &mut StdRng| format!("k{}", rng.gen_range(0..2_000)).into_bytes();
            for _ in 0..3_000 {
                let (db, k) = (rng.gen_range(0..3), key(&mut rng));
                let ttl = rng.gen_bool(0.2).then(|| rng.gen_range(500..1_500));
                store.db(db, 0).write(&k).insert(&k, s("v0"), ttl);
            }
            let at_ms = 1_000;
            let expected = everything(&store, at_ms);
            let (sizes, ()) = store.begin_snapshot(at_ms, || ());
            assert_eq!(sizes.len(), 3);

            let mut saved = Keyspace::new();
            let mut walking: Vec<(usize, usize)> = (0..3)
                .flat_map(|db| (0..SHARDS_PER_DB).map(move |shard| (db, shard)))
                .collect();
            let mut now = at_ms;
            while !walking.is_empty() {
                for _ in 0..rng.gen_range(0..40) {
                    now += 1;
                    let (db, k) = (rng.gen_range(0..3), key(&mut rng));
                    let shard = store.db(db, now);
                    match rng.gen_range(0..100) {
                        0..=19 => {
                            shard.write(&k).insert(&k, s("new"), None);
                        }
                        // As long as "v0": written over its block in place.
                        20..=39 => {
                            shard.write(&k).insert_str(&k, b"v1", None);
                        }
                        40..=59 => {
                            shard.write(&k).remove(&k);
                        }
                        60..=79 => {
                            if let Some(mut e) = shard.write(&k).get_mut(&k) {
                                e.set_expire_at_ms(Some(now + 10_000));
                            }
                        }
                        80..=97 => {
                            if let Some(mut e) = shard.write(&k).get_mut(&k) {
                                *e.value_mut() = s("edited");
                            }
                        }
                        98 => drop(shard.flush()),
                        _ => store.swap_dbs(db, (db + 1) % 3, now),
                    }
                }
                let i = rng.gen_range(0..walking.len());
                let (db, shard) = walking[i];
                let max_slots = rng.gen_range(1..64);
                if store.snapshot_step(db, shard, max_slots, |e| record(&mut saved, db, e)) {
                    store.end_snapshot(db, shard, |e| record(&mut saved, db, e));
                    walking.swap_remove(i);
                }
            }
            assert_eq!(saved, expected, "seed {seed}");
            assert_eq!(store.snapshot_bytes(), 0);
        }
    }
}
