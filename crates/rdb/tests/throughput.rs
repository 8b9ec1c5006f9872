//! How fast a file of a million small string keys is written and read
//! (run with `cargo test --release -p keel-rdb --test throughput -- --ignored --nocapture`).

use std::time::Instant;

use keel_rdb::{Item, KeyMeta, Reader, Value, WriteOptions, Writer};

#[test]
#[ignore = "a measurement: run it in release"]
fn million_small_keys() {
    const KEYS: u64 = 1_000_000;
    let started = Instant::now();
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    w.select_db(0, KEYS, 0).unwrap();
    for i in 0..KEYS {
        let key = format!("key:{i:08}");
        let value = Value::String(format!("value-{i}").into_bytes());
        w.key(key.as_bytes(), &value, KeyMeta::default()).unwrap();
    }
    let file = w.finish().unwrap();
    let write = started.elapsed();

    let started = Instant::now();
    let mut r = Reader::new(&file[..], 1 << 20).unwrap();
    let mut keys = 0;
    loop {
        match r.next().unwrap() {
            Item::Key { .. } => keys += 1,
            Item::End => break,
            _ => {}
        }
    }
    let read = started.elapsed();
    assert_eq!(keys, KEYS);
    let mb = file.len() as f64 / 1e6;
    println!(
        "{KEYS} keys, {mb:.1} MB: write {:.0} ms ({:.0} MB/s), read {:.0} ms ({:.0} MB/s)",
        write.as_secs_f64() * 1e3,
        mb / write.as_secs_f64(),
        read.as_secs_f64() * 1e3,
        mb / read.as_secs_f64()
    );
}
