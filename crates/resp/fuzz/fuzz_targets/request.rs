//! Any bytes, split into reads at fuzzer-chosen points: the request decoder
//! never panics, never returns an empty request, and gives the same
//! requests however the bytes are split, and whether or not it takes
//! requests ahead of their turn.
#![no_main]

use bytes::{Bytes, BytesMut};
use keel_resp::{Limits, RequestDecoder};
use libfuzzer_sys::fuzz_target;

fn decode_in_chunks(data: &[u8], chunk: usize, ahead: bool) -> (Vec<Vec<Bytes>>, bool) {
    let mut decoder = RequestDecoder::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in data.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.next(&mut buf, &Limits::default()) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty());
                    out.push(args);
                    if ahead {
                        decoder.take_ahead(&mut buf, &Limits::default());
                    }
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|input: (u8, &[u8])| {
    let (chunk, data) = input;
    let whole = decode_in_chunks(data, data.len(), false);
    assert_eq!(whole, decode_in_chunks(data, chunk as usize, false));
    assert_eq!(whole, decode_in_chunks(data, chunk as usize, true));
});
