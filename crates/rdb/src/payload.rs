//! The DUMP payload: one RDB object followed by a 10-byte footer, the RDB
//! version (2 bytes, little-endian) and the CRC-64 of everything before
//! it (8 bytes, little-endian), as Redis's `createDumpPayload` and
//! `verifyDumpPayload` make and check it.

use crate::crc64::crc64;
use crate::object::{read_object_within, write_object, Refused};
use crate::{Thresholds, Value};

/// The RDB version Redis 7.0 writes; payloads of later versions are
/// refused, as Redis refuses them.
pub const RDB_VERSION: u16 = 10;

const FOOTER_LEN: usize = 10;

/// Why a payload cannot be restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short for its footer, a later RDB version, or a checksum that
    /// does not match.
    VersionOrChecksum,
    /// The object itself is malformed.
    BadData,
    /// Decoding the object would take more than the budget given.
    OverBudget,
}

/// The DUMP payload of `value`.
pub fn dump(value: &Value, thresholds: &Thresholds) -> Vec<u8> {
    let mut payload = Vec::new();
    write_object(value, thresholds, &mut payload);
    seal(payload)
}

/// Appends the footer to `body`: the RDB version and the checksum.
pub(crate) fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The body of `payload`, once its footer is checked.
pub(crate) fn checked_body(payload: &[u8]) -> Result<&[u8], PayloadError> {
    let body_len = payload
        .len()
        .checked_sub(FOOTER_LEN)
        .ok_or(PayloadError::VersionOrChecksum)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || u64::from_le_bytes(crc) != crc64(0, &payload[..body_len + 2]) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(body)
}

/// The value of a DUMP payload, its footer checked first.
pub fn restore(payload: &[u8]) -> Result<Value, PayloadError> {
    restore_within(payload, usize::MAX)
}

/// [`restore`], allocating at most about `budget` bytes while decoding
/// (see [`read_object_within`]).
pub fn restore_within(payload: &[u8], budget: usize) -> Result<Value, PayloadError> {
    match read_object_within(checked_body(payload)?, budget) {
        Ok((value, _)) => Ok(value),
        Err(Refused::OverBudget) => Err(PayloadError::OverBudget),
        Err(Refused::Malformed | Refused::Truncated | Refused::Empty) => Err(PayloadError::BadData),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    /// DUMP replies of Redis 7.0.15 and the values they hold.
    fn redis_dumps() -> Vec<(&'static [u8], Value)> {
        vec![
            (
                b"\x12\x01\x02\x1c\x1c\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xc1,\x02\xdf\xfb\x02\xf2p\x11\x01\x04\xff\n\x00\xde\x0e\xe6n\t\xffo\xca",
                Value::List(strings(&["a", "b", "1", "2", "300", "-5", "70000"])),
            ),
            (
                b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b",
                Value::Set(strings(&["1", "2", "3"])),
            ),
            (
                b"\x11\xc3#,\r,\x00\x00\x00\x06\x00\x81c\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x831.5\x04\x81b\x02\x02\x01\xff\n\x00\x85\x99\xb8]\xdaq\x83I",
                Value::SortedSet(vec![
                    (b"c".to_vec(), 0.1),
                    (b"a".to_vec(), 1.5),
                    (b"b".to_vec(), 2.0),
                ]),
            ),
            (
                b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x0c\x01\xff\n\x00\x016\x94\x81\xd3[\x89t",
                Value::Hash(vec![
                    (b"f".to_vec(), b"v".to_vec()),
                    (b"n".to_vec(), b"12".to_vec()),
                ]),
            ),
            (
                b"\x00\x05hello\n\x00cr\xdfve4 \n",
                Value::String(b"hello".to_vec()),
            ),
            (
                b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9",
                Value::String(b"12345".to_vec()),
            ),
            (
                b"\x00\n5000000000\n\x00i\xa9\x0f\xd5~\x0f\xf4%",
                Value::String(b"5000000000".to_vec()),
            ),
            (
                b"\x00\xc3\t\x19\x01aa\xe0\x0c\x00\x01aa\n\x00\xd0\x8dg\x00\x9b\x1b\x83\xb3",
                Value::String(vec![b'a'; 25]),
            ),
        ]
    }

    #[test]
    fn reads_and_writes_what_redis_does() {
        for (payload, value) in redis_dumps() {
            assert_eq!(restore(payload), Ok(value.clone()), "{payload:?}");
            assert_eq!(dump(&value, &Thresholds::default()), payload, "{value:?}");
        }
    }

    #[test]
    fn plain_forms_round_trip() {
        let thresholds = Thresholds {
            list_max_listpack_size: 2,
            set_max_intset_entries: 1,
            hash_max_listpack_entries: 1,
            hash_max_listpack_value: 1,
            zset_max_listpack_entries: 1,
            zset_max_listpack_value: 1,
        };
        let values = [
            Value::List(strings(&["a", "b", "c", "12", "x"])),
            Value::Set(strings(&["1", "2", "x"])),
            Value::Hash(vec![
                (b"f".to_vec(), vec![b'v'; 100]),
                (b"g".to_vec(), b"-7".to_vec()),
            ]),
            Value::SortedSet(vec![
                (b"a".to_vec(), f64::NEG_INFINITY),
                (b"b".to_vec(), -0.5),
                (b"c".to_vec(), 1e300),
            ]),
        ];
        for value in values {
            let payload = dump(&value, &thresholds);
            let mut back = restore(&payload).unwrap();
            if let Value::SortedSet(pairs) = &mut back {
                pairs.reverse();
            }
            assert_eq!(back, value);
        }
    }

    #[test]
    fn refuses_bad_footers_and_bodies() {
        let good = dump(&Value::String(b"hello".to_vec()), &Thresholds::default());
        let mut bad_crc = good.clone();
        *bad_crc.last_mut().unwrap() ^= 1;
        assert_eq!(restore(&bad_crc), Err(PayloadError::VersionOrChecksum));
        assert_eq!(restore(&good[..5]), Err(PayloadError::VersionOrChecksum));
        let reseal = |body: &[u8], version: u16| {
            let mut p = body.to_vec();
            p.extend_from_slice(&version.to_le_bytes());
            let crc = crc64(0, &p);
            p.extend_from_slice(&crc.to_le_bytes());
            p
        };
        assert_eq!(
            restore(&reseal(b"\x00\x05hello", 11)),
            Err(PayloadError::VersionOrChecksum)
        );
        assert_eq!(
            restore(&reseal(b"\x00\x05hello", 9)),
            Ok(Value::String(b"hello".to_vec()))
        );
        for body in [
            &b"\x00\x06hello"[..],
            b"\x01\x00",
            b"\x02\x02\x01a\x01a",
            b"\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x7f",
            b"\x00\xc3\x02\xff\x00\x10",
            b"\x07",
            b"\x14\x0d\x0d\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff",
            b"",
        ] {
            assert_eq!(
                restore(&reseal(body, 10)),
                Err(PayloadError::BadData),
                "{body:?}"
            );
        }
    }

    /// Mutated and cut bodies of real payloads, sealed with a valid
    /// footer: decoding never panics, and what decodes dumps and decodes
    /// back to itself (what the fuzz target checks, on a fixed sample).
    #[test]
    fn mutated_payloads_never_panic() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let big = Thresholds {
            list_max_listpack_size: 3,
            ..Thresholds::default()
        };
        let mut bodies: Vec<Vec<u8>> = redis_dumps()
            .into_iter()
            .map(|(p, _)| p[..p.len() - FOOTER_LEN].to_vec())
            .collect();
        let long: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("member-{i}").into_bytes())
            .collect();
        for value in [
            Value::List(long.clone()),
            Value::Set(long.clone()),
            Value::Hash(long.iter().map(|m| (m.clone(), m.repeat(3))).collect()),
            Value::SortedSet(
                long.iter()
                    .map(|m| (m.clone(), m.len() as f64 / 3.0))
                    .collect(),
            ),
        ] {
            for thresholds in [Thresholds::default(), big] {
                let p = dump(&value, &thresholds);
                bodies.push(p[..p.len() - FOOTER_LEN].to_vec());
            }
        }
        for body in &bodies {
            for _ in 0..2000 {
                let mut mutated = body.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % mutated.len();
                    mutated[at] = next() as u8;
                }
                mutated.truncate(1 + (next() as usize) % mutated.len());
                let mut sealed = mutated.clone();
                sealed.extend_from_slice(&RDB_VERSION.to_le_bytes());
                let crc = crc64(0, &sealed);
                sealed.extend_from_slice(&crc.to_le_bytes());
                if let Ok(value) = restore(&sealed) {
                    let again = restore(&dump(&value, &Thresholds::default()));
                    let sorted = |v: Value| match v {
                        Value::Set(mut m) => {
                            m.sort();
                            Value::Set(m)
                        }
                        Value::SortedSet(mut m) => {
                            m.sort_by(|a, b| a.0.cmp(&b.0));
                            Value::SortedSet(m)
                        }
                        other => other,
                    };
                    assert_eq!(again.map(sorted), Ok(sorted(value)));
                }
            }
        }
    }
}
