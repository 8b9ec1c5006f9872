//! Any bytes: the frame decoder returns a frame, "need more" or an error —
//! never panics — and a decoded frame re-encodes to bytes that decode to
//! the same frame.
#![no_main]

use bytes::BytesMut;
use keel_resp::{decode, Frame, Protocol};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((frame, used))) = decode(data) {
        assert!(used <= data.len());
        let mut out = BytesMut::new();
        frame.encode(&mut out, Protocol::Resp3);
        let (again, _) = decode(&out)
            .expect("own encoding decodes")
            .expect("whole frame");
        let nan = |f: &Frame| matches!(f, Frame::Double(d) if d.is_nan());
        if !nan(&frame) {
            assert_eq!(normalise(again), normalise(frame));
        }
    }
});

/// RESP2-only distinctions RESP3 folds together: a null array and a blob
/// error come back as null and simple error.
fn normalise(frame: Frame) -> Frame {
    match frame {
        Frame::NullArray => Frame::Null,
        Frame::Array(v) => Frame::Array(v.into_iter().map(normalise).collect()),
        Frame::Set(v) => Frame::Set(v.into_iter().map(normalise).collect()),
        Frame::Push(v) => Frame::Push(v.into_iter().map(normalise).collect()),
        Frame::Map(v) => Frame::Map(
            v.into_iter()
                .map(|(k, v)| (normalise(k), normalise(v)))
                .collect(),
        ),
        Frame::Error(e) => Frame::Error(e.replace(['\r', '\n'], " ")),
        other => other,
    }
}
