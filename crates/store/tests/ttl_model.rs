//! Randomized model test of TTLs: the store against a reference map of
//! `key -> deadline` under random SET / EXPIRE / PERSIST / DEL / RENAME,
//! reads, active expiry passes and a simulated clock. Every answer must
//! match the model, and the store's key and TTL counts must match it once
//! expired keys are reclaimed. The seed is printed on failure; set
//! KEEL_TTL_MODEL_SEED to replay one.

use std::collections::HashMap;

use keel_store::{Store, Str, StrRef, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEYS: u32 = 200;
const DATABASES: usize = 2;

fn key(n: u32) -> Vec<u8> {
    format!("key:{n}").into_bytes()
}

fn value(n: i64) -> Value {
    Value::Str(Str::from_bytes(n.to_string().as_bytes()))
}

/// What the model knows of a key: its value and its deadline.
type Stored = (i64, Option<u64>);

/// The model: per database, key -> (value, deadline). A key whose deadline
/// is at or before "now" does not exist.
struct Model {
    dbs: Vec<HashMap<Vec<u8>, Stored>>,
}

impl Model {
    fn live(&self, db: usize, key: &[u8], now: u64) -> Option<Stored> {
        self.dbs[db]
            .get(key)
            .copied()
            .filter(|(_, d)| d.is_none_or(|d| d > now))
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let store = Store::new(DATABASES);
    let mut model = Model {
        dbs: vec![HashMap::new(); DATABASES],
    };
    let mut now = 1_000u64;
    for step in 0..steps {
        let d = rng.gen_range(0..DATABASES);
        let db = store.db(d, now);
        let k = key(rng.gen_range(0..KEYS));
        let deadline = |rng: &mut StdRng| now + rng.gen_range(1..2_000);
        let context = format!("seed {seed} step {step}");
        match rng.gen_range(0..100) {
            // SET, with a TTL half the time; a plain SET clears the TTL.
            0..=29 => {
                let v = rng.gen();
                let ttl = rng.gen_bool(0.5).then(|| deadline(&mut rng));
                db.write(&k).insert(&k, value(v), ttl);
                model.dbs[d].insert(k, (v, ttl));
            }
            // EXPIRE to a future or (one time in five) past deadline.
            30..=44 => {
                let at = if rng.gen_bool(0.2) {
                    now - rng.gen_range(0..500)
                } else {
                    deadline(&mut rng)
                };
                let mut shard = db.write(&k);
                let found = shard.get_mut(&k).map(|mut e| {
                    if at <= now {
                        e.remove();
                    } else {
                        e.set_expire_at_ms(Some(at));
                    }
                });
                assert_eq!(
                    found.is_some(),
                    model.live(d, &k, now).is_some(),
                    "{context}: EXPIRE"
                );
                if found.is_some() {
                    if at <= now {
                        model.dbs[d].remove(&k);
                    } else {
                        model.dbs[d].get_mut(&k).expect("live").1 = Some(at);
                    }
                }
            }
            45..=52 => {
                let had_ttl = db.write(&k).get_mut(&k).map(|mut e| {
                    let had = e.entry().expire_at_ms().is_some();
                    e.set_expire_at_ms(None);
                    had
                });
                let want = model.live(d, &k, now).map(|(_, ttl)| ttl.is_some());
                assert_eq!(had_ttl, want, "{context}: PERSIST");
                if let Some(e) = model.dbs[d]
                    .get_mut(&k)
                    .filter(|(_, ttl)| ttl.is_none_or(|t| t > now))
                {
                    e.1 = None;
                }
            }
            53..=59 => {
                let removed = db.write(&k).remove(&k).is_some();
                assert_eq!(removed, model.live(d, &k, now).is_some(), "{context}: DEL");
                model.dbs[d].remove(&k);
            }
            // RENAME keeps the value and the TTL and replaces the target.
            60..=66 => {
                let to = key(rng.gen_range(0..KEYS));
                let mut locked = db.write_many(&[&k, &to]);
                let moved = locked.shard(&k).remove(&k);
                assert_eq!(
                    moved.is_some(),
                    model.live(d, &k, now).is_some(),
                    "{context}: RENAME source"
                );
                if let Some(entry) = moved {
                    locked.shard(&to).insert_renamed(&to, entry);
                    let carried = model.dbs[d].remove(&k).expect("live");
                    model.dbs[d].insert(to, carried);
                }
            }
            // Reads, which also delete the expired keys they meet.
            67..=84 => {
                let shard = db.read(&k);
                let got = shard.get(&k).map(|e| {
                    (
                        e.value().as_str().and_then(StrRef::as_i64),
                        e.expire_at_ms(),
                    )
                });
                let want = model.live(d, &k, now).map(|(v, ttl)| (Some(v), ttl));
                assert_eq!(got, want, "{context}: GET/TTL");
            }
            85..=94 => now += rng.gen_range(0..300),
            _ => {
                store.reclaim_expired(now, rng.gen_range(1..50), || (), drop);
            }
        }
    }
    while store.reclaim_expired(now, 1024, || (), drop).1 {}
    for (d, keys) in model.dbs.iter().enumerate() {
        let live: Vec<_> = keys
            .values()
            .filter(|(_, ttl)| ttl.is_none_or(|t| t > now))
            .collect();
        let stats = store.db(d, now).stats();
        assert_eq!(stats.keys, live.len(), "seed {seed}: keys in db {d}");
        assert_eq!(
            stats.expires,
            live.iter().filter(|(_, t)| t.is_some()).count(),
            "seed {seed}: expires"
        );
        assert_eq!(
            store.stale_bytes(),
            0,
            "seed {seed}: nothing due is left behind"
        );
    }
}

#[test]
fn store_matches_the_ttl_model() {
    let seeds: Vec<u64> = match std::env::var("KEEL_TTL_MODEL_SEED") {
        Ok(seed) => vec![seed.parse().expect("KEEL_TTL_MODEL_SEED is a number")],
        Err(_) => (0..4).map(|_| rand::random()).collect(),
    };
    for seed in seeds {
        println!("KEEL_TTL_MODEL_SEED={seed}");
        run(seed, 50_000);
    }
}
