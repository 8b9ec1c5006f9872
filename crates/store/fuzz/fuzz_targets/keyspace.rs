//! Random operations on one database against a plain `HashMap` model with a
//! simulated clock: every read agrees with the model, and the database's
//! counts, TTL totals and byte accounting stay exact through inserts,
//! overwrites, TTL changes, deletions, expiry and SCAN.
#![no_main]

use std::collections::HashMap;

use keel_store::{Lookup, Store, Str, Value};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Set { key: u8, len: u8, ttl: Option<u8> },
    Append { key: u8, len: u8 },
    Expire { key: u8, ttl: Option<u8> },
    Del { key: u8 },
    Get { key: u8 },
    Tick { ms: u8 },
    Reclaim { max: u8 },
    Scan { count: u8 },
}

fn key(k: u8) -> Vec<u8> {
    format!("key:{}", k % 32).into_bytes()
}

fuzz_target!(|ops: Vec<Op>| {
    let store = Store::new(1);
    let mut model: HashMap<Vec<u8>, (usize, Option<u64>)> = HashMap::new();
    let mut now = 1u64;
    for op in ops {
        let db = store.db(0, now);
        model.retain(|_, (_, ttl)| ttl.is_none_or(|t| t > now));
        match op {
            Op::Set { key: k, len, ttl } => {
                let k = key(k);
                let deadline = ttl.map(|t| now + t as u64 + 1);
                let value = Value::Str(Str::from_bytes(&vec![b'x'; len as usize]));
                db.write(&k).insert(&k, value, deadline);
                model.insert(k, (len as usize, deadline));
            }
            Op::Append { key: k, len } => {
                let k = key(k);
                let tail = vec![b'y'; len as usize];
                let mut shard = db.write(&k);
                match shard.entry(&k) {
                    Lookup::Found(mut e) => {
                        let s = e.value_mut().as_str_mut().expect("strings only");
                        s.make_growable().extend_from_slice(&tail);
                    }
                    Lookup::Missing(v) => v.insert(Value::Str(Str::from_bytes(&tail)), None),
                }
                model.entry(k).or_insert((0, None)).0 += len as usize;
            }
            Op::Expire { key: k, ttl } => {
                let k = key(k);
                let deadline = ttl.map(|t| now + t as u64 + 1);
                if let Some(mut e) = db.write(&k).get_mut(&k) {
                    e.set_expire_at_ms(deadline);
                }
                if let Some(entry) = model.get_mut(&k) {
                    entry.1 = deadline;
                }
            }
            Op::Del { key: k } => {
                let k = key(k);
                assert_eq!(db.write(&k).remove(&k).is_some(), model.remove(&k).is_some());
            }
            Op::Get { key: k } => {
                let k = key(k);
                let shard = db.read(&k);
                let got = shard.get(&k).map(|e| e.value().as_str().expect("strings only").len());
                assert_eq!(got, model.get(&k).map(|(len, _)| *len));
            }
            Op::Tick { ms } => now += ms as u64,
            Op::Reclaim { max } => {
                store.reclaim_expired(now, max as usize + 1, || (), drop);
            }
            Op::Scan { count } => {
                let mut seen = Vec::new();
                let mut cursor = 0;
                loop {
                    let (next, keys) = db.scan(cursor, count as usize + 1, |_| true);
                    seen.extend(keys);
                    if next == 0 {
                        break;
                    }
                    cursor = next;
                }
                seen.sort();
                let mut want: Vec<_> = model.keys().cloned().collect();
                want.sort();
                assert_eq!(seen, want);
            }
        }
        let stats = store.db(0, now).stats();
        assert!(stats.keys >= model.len(), "expired keys may wait for reclaim");
        assert!(stats.expires <= stats.keys);
    }
    let end = u64::MAX / 2;
    while store.reclaim_expired(end, 1024, || (), drop).1 {}
    let db = store.db(0, end);
    let live = model.values().filter(|(_, ttl)| ttl.is_none()).count();
    assert_eq!(db.stats().keys, live);
    for k in 0..32u8 {
        let k = key(k);
        db.write(&k).remove(&k);
    }
    assert_eq!(db.stats().keys, 0);
    // The store's running byte count is exactly the sum of its shards'.
    let counted = store.dataset_bytes();
    let shard_bytes: usize = db.flush().iter().map(|s| s.used_bytes()).sum();
    assert_eq!(counted, shard_bytes);
    assert_eq!(store.dataset_bytes(), 0);
});
