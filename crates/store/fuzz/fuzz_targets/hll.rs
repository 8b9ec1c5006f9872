//! Arbitrary bytes taken as an HLL string (behind a valid header half the
//! time, so the body parsers are reached): counting, adding, merging,
//! converting and decoding never panic, and whatever an add leaves behind
//! still passes the header checks and counts without panicking.
#![no_main]

use keel_store::hll;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    with_header: Option<bool>,
    body: Vec<u8>,
    elements: Vec<Vec<u8>>,
    sparse_max_bytes: u16,
}

fuzz_target!(|input: Input| {
    let mut bytes = match input.with_header {
        Some(dense) => {
            let mut header = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
            if dense {
                header[4] = 0;
            }
            header
        }
        None => Vec::new(),
    };
    bytes.extend_from_slice(&input.body);
    if hll::encoding_of(&bytes).is_err() {
        return;
    }
    let _ = hll::count(&bytes);
    let _ = hll::decode_sparse(&bytes);
    let mut max = [0u8; hll::REGISTERS];
    let _ = hll::merge_into(&mut max, &bytes);
    hll::count_registers(&max);
    let mut dense = bytes.clone();
    if hll::to_dense(&mut dense).is_ok() {
        assert!(hll::encoding_of(&dense).is_ok());
        let _ = hll::count(&dense);
    }
    for element in &input.elements {
        if hll::add(&mut bytes, element, input.sparse_max_bytes as usize).is_err() {
            return;
        }
        assert!(hll::encoding_of(&bytes).is_ok());
        let _ = hll::count(&bytes);
    }
});
