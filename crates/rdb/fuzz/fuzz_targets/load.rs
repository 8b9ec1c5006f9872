//! Any bytes as an RDB file, as they are and after a valid header (so the
//! fuzzer gets past the magic), read whole and in 3-byte reads: the reader
//! returns items or an error, never panics, both ways give the same, and a
//! file that loads is written back and loads to the same items.
#![no_main]

use std::io::Read;

use keel_rdb::{Item, LoadError, Reader, WriteOptions, Writer};
use libfuzzer_sys::fuzz_target;

/// What decoding one key may allocate.
const BUDGET: usize = 1 << 20;

/// Input handed out a few bytes per read.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(3).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn load(input: impl Read) -> Result<Vec<Item>, LoadError> {
    let mut reader = Reader::new(input, BUDGET)?;
    let mut items = Vec::new();
    loop {
        match reader.next()? {
            Item::End => return Ok(items),
            item => items.push(item),
        }
    }
}

fn write(items: &[Item]) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), WriteOptions::default()).expect("to memory");
    let mut db = 0;
    for item in items {
        match item {
            Item::Aux { key, value } => w.aux(key, value),
            Item::Functions(code) => w.functions(code),
            Item::SelectDb(n) => {
                db = *n;
                Ok(())
            }
            Item::ResizeDb { keys, expires } => w.select_db(db, *keys, *expires),
            Item::Key { key, value, meta } => w.key(key, value, *meta),
            Item::End => Ok(()),
        }
        .expect("to memory");
    }
    w.finish().expect("to memory")
}

fuzz_target!(|data: &[u8]| {
    let mut headed = b"REDIS0011".to_vec();
    headed.extend_from_slice(data);
    for file in [data, &headed[..]] {
        let whole = load(file);
        let trickled = load(Trickle(file));
        assert_eq!(
            whole.as_ref().map_err(|e| e.offset).ok(),
            trickled.as_ref().map_err(|e| e.offset).ok()
        );
        if let Ok(items) = whole {
            // Sets written as intsets come back sorted: compare what the
            // writer makes of its own output instead.
            let again = load(&write(&items)[..]).expect("keel's own file loads");
            assert_eq!(write(&again), write(&items));
        }
    }
});
