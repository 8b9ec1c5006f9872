//! Any bytes, split into reads at fuzzer-chosen points: the request decoder
//! never panics, never returns an empty request, and gives the same
//! requests however the bytes are split; peeking at the bytes never panics
//! and sees a prefix of those requests.
#![no_main]

use bytes::{Bytes, BytesMut};
use keel_resp::{peek_requests, Limits, RequestDecoder};
use libfuzzer_sys::fuzz_target;

fn decode_in_chunks(data: &[u8], chunk: usize) -> (Vec<Vec<Bytes>>, bool) {
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
    let whole = decode_in_chunks(data, data.len());
    let split = decode_in_chunks(data, chunk as usize);
    assert_eq!(whole, split);
    let peeked: Vec<_> = peek_requests(data).collect();
    assert!(peeked.len() <= whole.0.len());
    for (peeked, args) in peeked.into_iter().zip(&whole.0) {
        for at in 0..keel_resp::PEEKED_ARGS {
            assert_eq!(peeked.arg(at), args.get(at).map(|a| &a[..]));
        }
    }
});
