//! Property tests: the codec round-trips what it encodes and never panics on
//! bytes it did not produce.

use bytes::{Bytes, BytesMut};
use keel_resp::{decode, Frame, Limits, Protocol, RequestDecoder};
use proptest::prelude::*;

fn line_text() -> impl Strategy<Value = String> {
    "[^\r\n]{0,20}"
}

/// Frames that survive a RESP3 round trip unchanged: every type, with
/// doubles that are not NaN (NaN != NaN) and errors without line breaks.
fn resp3_frame() -> impl Strategy<Value = Frame> {
    let leaf = prop_oneof![
        line_text().prop_map(Frame::Simple),
        line_text().prop_map(|s| Frame::Error(format!("ERR {s}"))),
        any::<i64>().prop_map(Frame::Integer),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|v| Frame::Bulk(Bytes::from(v))),
        Just(Frame::Null),
        any::<f64>()
            .prop_filter("NaN never equals itself", |d| !d.is_nan())
            .prop_map(Frame::Double),
        any::<bool>().prop_map(Frame::Boolean),
        any::<i128>().prop_map(|n| Frame::BigNumber(n.to_string())),
        proptest::collection::vec(any::<u8>(), 0..32)
            .prop_map(|v| Frame::Verbatim(*b"txt", Bytes::from(v))),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Frame::Array),
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Frame::Set),
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Frame::Push),
            proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
        ]
    })
}

/// Doubles go through `%.17g`, which is exact for every finite double, so
/// the round trip compares equal as numbers.
fn same(a: &Frame, b: &Frame) -> bool {
    match (a, b) {
        (Frame::Double(x), Frame::Double(y)) => x == y,
        _ => a == b,
    }
}

proptest! {
    #[test]
    fn resp3_encode_decode_round_trips(frame in resp3_frame()) {
        let mut buf = BytesMut::new();
        frame.encode(&mut buf, Protocol::Resp3);
        let (decoded, used) = decode(&buf).unwrap().expect("a whole frame");
        prop_assert_eq!(used, buf.len());
        prop_assert!(same(&decoded, &frame), "{:?} != {:?}", decoded, frame);
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn request_decoder_never_panics(
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        authenticated in any::<bool>(),
    ) {
        let limits = Limits { authenticated, ..Limits::default() };
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::new();
        for chunk in chunks {
            buf.extend_from_slice(&chunk);
            while let Ok(Some(args)) = decoder.next(&mut buf, &limits) {
                prop_assert!(!args.is_empty());
            }
        }
    }

    #[test]
    fn commands_round_trip_through_the_request_decoder(
        args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..12),
        split in any::<prop::sample::Index>(),
    ) {
        let mut wire = BytesMut::new();
        Frame::command(&args).encode(&mut wire, Protocol::Resp2);
        let cut = split.index(wire.len() + 1);
        let mut decoder = RequestDecoder::new();
        let mut buf = BytesMut::from(&wire[..cut]);
        let first = decoder.next(&mut buf, &Limits::default()).unwrap();
        let got = match first {
            Some(got) => got,
            None => {
                buf.extend_from_slice(&wire[cut..]);
                decoder.next(&mut buf, &Limits::default()).unwrap().expect("whole request")
            }
        };
        let got: Vec<Vec<u8>> = got.iter().map(|b| b.to_vec()).collect();
        prop_assert_eq!(got, args);
    }

    #[test]
    fn taking_requests_ahead_decodes_the_same_requests(
        requests in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..12), 1..40),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut wire = BytesMut::new();
        for args in &requests {
            Frame::command(args).encode(&mut wire, Protocol::Resp2);
        }
        let wire = &wire[..cut.index(wire.len() + 1)];
        let decode = |ahead: bool| {
            let (mut decoder, limits) = (RequestDecoder::new(), Limits::default());
            let mut buf = BytesMut::from(wire);
            let mut decoded = Vec::new();
            while let Some(args) = decoder.next(&mut buf, &limits).unwrap() {
                if ahead {
                    decoder.take_ahead(&mut buf, &limits);
                    let shown: Vec<Vec<Bytes>> = decoder.ahead().map(<[Bytes]>::to_vec).collect();
                    decoded.push((args, shown));
                } else {
                    decoded.push((args, Vec::new()));
                }
            }
            decoded
        };
        let (plain, ahead) = (decode(false), decode(true));
        prop_assert_eq!(plain.len(), ahead.len());
        for (at, ((plain, _), (args, shown))) in plain.iter().zip(&ahead).enumerate() {
            prop_assert_eq!(plain, args);
            for (offset, request) in shown.iter().enumerate() {
                prop_assert_eq!(request, &ahead[at + 1 + offset].0);
            }
        }
    }
}
