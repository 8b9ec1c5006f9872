//! How fast a file of a million small string keys is written and read
//! (run with `cargo test --release -p keel-rdb --test throughput -- --ignored --nocapture`).

use std::io::Read;
use std::time::Instant;

use keel_rdb::{Item, KeyMeta, Reader, Value, WriteOptions, Writer};

#[test]
#[ignore = "a measurement: run it in release"]
fn million_small_keys() {
    const KEYS: u64 = 1_000_000;
    let pairs: Vec<(Vec<u8>, Value)> = (0..KEYS)
        .map(|i| {
            let key = format!("key:{i:08}").into_bytes();
            (key, Value::String(format!("value-{i}").into_bytes()))
        })
        .collect();
    let started = Instant::now();
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    w.select_db(0, KEYS, 0).unwrap();
    for (key, value) in &pairs {
        w.key(key, value, KeyMeta::default()).unwrap();
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

/// Input handed out at most `chunk` bytes per read, like a socket.
struct Trickle<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
#[ignore = "a measurement: run it in release"]
fn one_big_key() {
    const ELEMENTS: usize = 1_000_000;
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).unwrap();
    w.select_db(0, 2, 0).unwrap();
    let list = Value::List(
        (0..ELEMENTS)
            .map(|i| format!("element-{i}").into_bytes())
            .collect(),
    );
    let set = Value::Set(
        (0..ELEMENTS)
            .map(|i| format!("member-{i}").into_bytes())
            .collect(),
    );
    w.key(b"list", &list, KeyMeta::default()).unwrap();
    w.key(b"set", &set, KeyMeta::default()).unwrap();
    let file = w.finish().unwrap();
    let mb = file.len() as f64 / 1e6;
    for chunk in [usize::MAX, 1 << 20, 64 << 10] {
        let started = Instant::now();
        let mut r = Reader::new(
            Trickle {
                bytes: &file,
                chunk,
            },
            1 << 30,
        )
        .unwrap();
        while r.next().unwrap() != Item::End {}
        let read = started.elapsed();
        println!(
            "a 1M-element list and set, {mb:.1} MB, reads of up to {chunk} bytes: read {:.0} ms ({:.0} MB/s)",
            read.as_secs_f64() * 1e3,
            mb / read.as_secs_f64()
        );
    }
}

#[test]
#[ignore = "a measurement: run it in release"]
fn crc64_speed() {
    let bytes: Vec<u8> = (0..256u32 << 20)
        .map(|i| (i.wrapping_mul(7919) >> 3) as u8)
        .collect();
    let started = Instant::now();
    let crc = keel_rdb::crc64::crc64(0, &bytes);
    let took = started.elapsed();
    println!(
        "crc64 of 256 MB: {:.0} ms ({:.0} MB/s), {crc:#x}",
        took.as_secs_f64() * 1e3,
        bytes.len() as f64 / 1e6 / took.as_secs_f64()
    );
}
