use std::io::{self, Read};

use super::*;
use crate::crc64::crc64;
use crate::stream::{Entry, Group, Id, Node, Pending, Stream};
use crate::Thresholds;

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn strings(n: usize, prefix: &str) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// A stream with two entries, one deleted, and a group with a pending
/// entry.
fn a_stream() -> Stream {
    let id = |ms, seq| Id { ms, seq };
    Stream {
        nodes: vec![Node {
            master: id(1, 1),
            master_fields: vec![bytes("f")],
            entries: vec![
                Entry {
                    id: id(1, 1),
                    deleted: false,
                    fields: vec![bytes("f"), bytes("v")],
                },
                Entry {
                    id: id(1, 2),
                    deleted: true,
                    fields: vec![bytes("f"), bytes("w")],
                },
            ],
        }],
        length: 1,
        last_id: id(1, 2),
        first_id: id(1, 1),
        max_deleted_id: id(1, 2),
        entries_added: 2,
        groups: vec![Group {
            name: bytes("g"),
            last_id: id(1, 1),
            entries_read: Some(1),
            pending: vec![Pending {
                id: id(1, 1),
                consumer: bytes("alice"),
                delivery_time: 1000,
                delivery_count: 1,
            }],
            consumers: vec![(bytes("alice"), 1000)],
        }],
    }
}

/// Every item kind, every value type in its compact and plain forms.
fn items() -> Vec<Item> {
    let key = |name: &str, value: Value, meta: KeyMeta| Item::Key {
        key: bytes(name),
        value,
        meta,
    };
    let none = KeyMeta::default();
    vec![
        Item::Aux {
            key: bytes("redis-ver"),
            value: bytes("7.0.15"),
        },
        Item::Aux {
            key: bytes("ctime"),
            value: bytes("1700000000"),
        },
        Item::Functions(bytes(
            "#!lua name=l\nredis.register_function('f', function() return 1 end)",
        )),
        Item::SelectDb(0),
        Item::ResizeDb {
            keys: 12,
            expires: 1,
        },
        key("s", Value::String(bytes("hello")), none),
        key("i", Value::String(bytes("-12345")), none),
        key("z", Value::String(vec![b'z'; 300]), none),
        key(
            "ttl",
            Value::String(bytes("v")),
            KeyMeta {
                expire_at_ms: Some(4_102_444_800_123),
                idle_seconds: Some(70_000),
                lfu_freq: None,
            },
        ),
        key(
            "lfu",
            Value::List(strings(3, "")),
            KeyMeta {
                lfu_freq: Some(42),
                ..none
            },
        ),
        key("biglist", Value::List(strings(3000, "element-")), none),
        key("intset", Value::Set(strings(5, "")), none),
        key("set", Value::Set(strings(700, "m")), none),
        key("hash", Value::Hash(vec![(bytes("f"), bytes("v"))]), none),
        key(
            "bighash",
            Value::Hash(
                strings(600, "f")
                    .into_iter()
                    .zip(strings(600, "v"))
                    .collect(),
            ),
            none,
        ),
        key(
            "zset",
            Value::SortedSet(vec![(bytes("a"), 1.5), (bytes("b"), 2.0)]),
            none,
        ),
        key(
            "bigzset",
            Value::SortedSet(
                strings(200, "m")
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| (m, 200.0 - i as f64))
                    .collect(),
            ),
            none,
        ),
        key("stream", Value::Stream(Box::new(a_stream())), none),
        Item::SelectDb(3),
        Item::ResizeDb {
            keys: 1,
            expires: 0,
        },
        key("other", Value::String(bytes("three")), none),
        Item::End,
    ]
}

fn write(items: &[Item], options: WriteOptions) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), options).unwrap();
    for item in items {
        match item {
            Item::Aux { key, value } => w.aux(key, value),
            Item::Functions(code) => w.functions(code),
            Item::SelectDb(db) => Ok(()).and_then(|()| {
                let Some(Item::ResizeDb { keys, expires }) =
                    items.iter().skip_while(|i| *i != item).nth(1).cloned()
                else {
                    panic!("SelectDb without ResizeDb")
                };
                w.select_db(*db, keys, expires)
            }),
            Item::ResizeDb { .. } | Item::End => Ok(()),
            Item::Key { key, value, meta } => w.key(key, value, *meta),
        }
        .unwrap();
    }
    let written = w.bytes_written();
    let file = w.finish().unwrap();
    assert_eq!(written + 9, file.len() as u64);
    file
}

/// Input that hands out at most `chunk` bytes per read, like a socket.
struct Trickle<'a> {
    bytes: &'a [u8],
    chunk: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

fn read_all(input: impl Read, budget: usize) -> Result<Vec<Item>, LoadError> {
    let mut r = Reader::new(input, budget)?;
    let mut items = Vec::new();
    loop {
        let item = r.next()?;
        let end = item == Item::End;
        items.push(item);
        if end {
            return Ok(items);
        }
    }
}

/// Sets in one order: the writer may reorder an intset.
fn normalised(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .map(|item| match item {
            Item::Key {
                key,
                value: Value::Set(mut members),
                meta,
            } => {
                members.sort();
                Item::Key {
                    key,
                    value: Value::Set(members),
                    meta,
                }
            }
            other => other,
        })
        .collect()
}

#[test]
fn files_round_trip_under_every_option() {
    let items = items();
    for checksum in [true, false] {
        for compression in [true, false] {
            let options = WriteOptions {
                checksum,
                compression,
                thresholds: Thresholds::default(),
            };
            let file = write(&items, options);
            assert_eq!(&file[..9], b"REDIS0010");
            let stored = u64::from_le_bytes(file[file.len() - 8..].try_into().unwrap());
            let crc = crc64(0, &file[..file.len() - 8]);
            assert_eq!(stored, if checksum { crc } else { 0 });
            let plain = file.windows(300).any(|w| w.iter().all(|&b| b == b'z'));
            assert_eq!(plain, !compression, "the 300 z's are compressed");
            for chunk in [1, 7, 4096, usize::MAX] {
                let back = read_all(
                    Trickle {
                        bytes: &file,
                        chunk,
                    },
                    1 << 20,
                )
                .unwrap();
                assert_eq!(normalised(back), normalised(items.clone()), "{chunk}");
            }
        }
    }
}

/// Items without the big collections: a file small enough to cut
/// everywhere.
fn small_items() -> Vec<Item> {
    items()
        .into_iter()
        .filter(|item| !matches!(item, Item::Key { key, .. } if key.starts_with(b"big") || key == b"set"))
        .collect()
}

#[test]
fn truncation_anywhere_is_reported_as_truncation() {
    let small = write(&small_items(), WriteOptions::default());
    let big = write(&items(), WriteOptions::default());
    // Reads of 3 bytes retry an item after each one (they are short
    // reads): on the small file only, or it takes minutes.
    let cuts = (0..small.len())
        .map(|len| (&small, len, 3))
        .chain((0..big.len()).step_by(127).map(|len| (&big, len, 4096)));
    for (file, len, small_chunk) in cuts {
        for chunk in [small_chunk, usize::MAX] {
            let cut = Trickle {
                bytes: &file[..len],
                chunk,
            };
            match read_all(cut, 1 << 20) {
                Err(LoadError {
                    offset,
                    problem: Problem::Truncated,
                }) => assert_eq!(offset, len as u64),
                other => panic!("cut at {len}: {other:?}"),
            }
        }
    }
}

#[test]
fn flipped_bytes_are_errors_never_panics() {
    let small = write(&small_items(), WriteOptions::default());
    let big = write(&items(), WriteOptions::default());
    let flips = (0..small.len())
        .map(|at| (&small, at, 5))
        .chain((0..big.len()).step_by(127).map(|at| (&big, at, 4096)));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for (file, at, chunk) in flips {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut bad = file.clone();
        bad[at] ^= (seed as u8) | 1;
        assert!(read_all(&bad[..], 1 << 20).is_err(), "flip at {at}");
        // Without the checksum, what decodes must still decode safely.
        let mut unchecked = bad.clone();
        let n = unchecked.len();
        unchecked[n - 8..].fill(0);
        let whole = read_all(&unchecked[..], 1 << 20);
        let trickled = read_all(
            Trickle {
                bytes: &unchecked,
                chunk,
            },
            1 << 20,
        );
        assert_eq!(
            whole.map_err(|e| e.offset).ok(),
            trickled.map_err(|e| e.offset).ok()
        );
    }
}

#[test]
fn bytes_past_the_end_are_handed_back() {
    let mut file = write(&items(), WriteOptions::default());
    file.extend_from_slice(b"+PING\r\n");
    for chunk in [5, usize::MAX] {
        let mut r = Reader::new(
            Trickle {
                bytes: &file,
                chunk,
            },
            1 << 20,
        )
        .unwrap();
        while r.next().unwrap() != Item::End {}
        assert_eq!(r.next().unwrap(), Item::End);
        assert_eq!(r.offset(), file.len() as u64 - 7);
        let (mut input, mut rest) = r.into_inner();
        input.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"+PING\r\n");
    }
}

/// A file of `version` holding `body`, sealed with its checksum.
fn sealed(version: u16, body: &[u8]) -> Vec<u8> {
    let mut file = format!("REDIS{version:04}").into_bytes();
    file.extend_from_slice(body);
    file.push(opcode::EOF);
    let crc = crc64(0, &file);
    file.extend_from_slice(&crc.to_le_bytes());
    file
}

fn problem(file: &[u8]) -> Problem {
    read_all(file, 1 << 20).unwrap_err().problem
}

#[test]
fn headers_and_versions() {
    assert!(matches!(problem(b"RDBIS0010\xff"), Problem::NotRdb));
    assert!(matches!(problem(b"REDIS00a0\xff"), Problem::NotRdb));
    assert!(matches!(problem(b"REDIS"), Problem::Truncated));
    assert!(matches!(problem(&sealed(12, b"")), Problem::Version(12)));
    assert!(matches!(problem(&sealed(0, b"")), Problem::Version(0)));
    for version in [5, 9, 10, 11] {
        let file = sealed(version, b"");
        let r = Reader::new(&file[..], 1 << 20).unwrap();
        assert_eq!(r.version(), version);
    }
    // Before version 5 there is no checksum.
    let old = b"REDIS0004\xfe\x00\x00\x01a\x01b\xff";
    let items = read_all(&old[..], 1 << 20).unwrap();
    assert_eq!(items.len(), 3);
}

#[test]
fn checksums() {
    let mut file = sealed(10, b"\x00\x01a\x01b");
    assert_eq!(read_all(&file[..], 1 << 20).unwrap().len(), 2);
    let n = file.len();
    file[n - 1] ^= 1;
    assert!(matches!(
        read_all(&file[..], 1 << 20).unwrap_err(),
        LoadError {
            offset,
            problem: Problem::Checksum { .. },
        } if offset == n as u64 - 8
    ));
    file[n - 8..].fill(0);
    assert_eq!(read_all(&file[..], 1 << 20).unwrap().len(), 2);
}

#[test]
fn opcodes_keel_refuses_or_skips() {
    type Expected = fn(&Problem) -> bool;
    let cases: [(&[u8], Expected); 6] = [
        (b"\xf6\x01a", |p| matches!(p, Problem::FunctionPreGa)),
        (b"\xf7\x01", |p| matches!(p, Problem::Module)),
        (b"\x07\x01k\x00", |p| matches!(p, Problem::Module)),
        (b"\x06\x01k\x00", |p| matches!(p, Problem::Module)),
        (b"\x08\x01k", |p| {
            matches!(p, Problem::UnknownOpcodeOrType(8))
        }),
        (b"\x02\x01k\x02\x01a\x01a", |p| {
            matches!(p, Problem::BadObject)
        }),
    ];
    for (body, expected) in cases {
        let p = problem(&sealed(10, body));
        assert!(expected(&p), "{body:?}: {p}");
    }
    // An empty set is skipped with its metadata; a key after it keeps its
    // own; seconds-precision expiry becomes milliseconds.
    let file = sealed(
        10,
        b"\xfc\x01\x00\x00\x00\x00\x00\x00\x00\x02\x01e\x00\xfd\x02\x00\x00\x00\x00\x01k\x01v",
    );
    assert_eq!(
        read_all(&file[..], 1 << 20).unwrap(),
        vec![
            Item::Key {
                key: bytes("k"),
                value: Value::String(bytes("v")),
                meta: KeyMeta {
                    expire_at_ms: Some(2000),
                    ..KeyMeta::default()
                },
            },
            Item::End
        ]
    );
}

#[test]
fn redis_7_2_listpack_sets_load() {
    // DUMP of a set {a, b} by Redis 7.2 (RDB_TYPE_SET_LISTPACK), as a key.
    let file = sealed(
        11,
        b"\x14\x01s\x0d\x0d\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff",
    );
    assert_eq!(
        read_all(&file[..], 1 << 20).unwrap()[0],
        Item::Key {
            key: bytes("s"),
            value: Value::Set(vec![bytes("a"), bytes("b")]),
            meta: KeyMeta::default(),
        }
    );
}

#[test]
fn budgets_bound_items_and_the_window() {
    let items = [
        Item::SelectDb(0),
        Item::ResizeDb {
            keys: 1,
            expires: 0,
        },
        Item::Key {
            key: bytes("big"),
            value: Value::List(strings(20_000, "element-")),
            meta: KeyMeta::default(),
        },
        Item::End,
    ];
    let file = write(&items, WriteOptions::default());
    assert_eq!(read_all(&file[..], 10 << 20).unwrap(), items);
    assert!(matches!(problem_within(&file, 1000), Problem::OverBudget));
    // A length claiming more than the budget allows is refused before
    // anything is read or allocated for it.
    let huge = sealed(10, b"\x00\x01k\x81\x00\x00\x00\xff\xff\xff\xff\xff");
    assert!(matches!(
        problem_within(&huge, 1 << 20),
        Problem::OverBudget
    ));
}

fn problem_within(file: &[u8], budget: usize) -> Problem {
    read_all(file, budget).unwrap_err().problem
}

/// A replication stream has nothing past the RDB for a while: the reader
/// must reach the end without asking for a byte more than the file, even
/// with big keys cut by every read.
#[test]
fn never_reads_past_the_end_of_the_file() {
    struct Stalls<'a>(Trickle<'a>);
    impl Read for Stalls<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(io::ErrorKind::WouldBlock.into()),
                n => Ok(n),
            }
        }
    }
    let file = write(&items(), WriteOptions::default());
    for chunk in [1, 7, 1000, 4096, usize::MAX] {
        let input = Stalls(Trickle {
            bytes: &file,
            chunk,
        });
        let back = read_all(input, 1 << 20).unwrap();
        assert_eq!(normalised(back), normalised(items()), "{chunk}");
    }
}

#[test]
fn redis_7_2_streams_load() {
    // Redis 7.2's stream layout (type 21) adds each consumer's active time
    // after its seen time: make one from keel's (type 19).
    let v2 = write(
        &[Item::Key {
            key: bytes("stream"),
            value: Value::Stream(Box::new(a_stream())),
            meta: KeyMeta::default(),
        }],
        WriteOptions::default(),
    );
    let find = |needle: &[u8]| v2.windows(needle.len()).position(|w| w == needle).unwrap();
    let type_at = find(b"\x06stream") - 1;
    assert_eq!(v2[type_at], 19);
    let mut consumer = b"\x05alice".to_vec();
    consumer.extend_from_slice(&1000i64.to_le_bytes());
    let active_at = find(&consumer) + consumer.len();
    let mut body = v2[9..type_at].to_vec();
    body.push(21);
    body.extend_from_slice(&v2[type_at + 1..active_at]);
    body.extend_from_slice(&2000i64.to_le_bytes());
    body.extend_from_slice(&v2[active_at..v2.len() - 9]);
    let file = sealed(11, &body);
    for chunk in [1, usize::MAX] {
        let items = read_all(
            Trickle {
                bytes: &file,
                chunk,
            },
            1 << 20,
        )
        .unwrap();
        assert_eq!(
            items[0],
            Item::Key {
                key: bytes("stream"),
                value: Value::Stream(Box::new(a_stream())),
                meta: KeyMeta::default(),
            }
        );
    }
}

#[test]
fn errors_say_where_and_what() {
    let err = read_all(&sealed(12, b"")[..], 1 << 20).unwrap_err();
    assert_eq!(
        err.to_string(),
        "at offset 0: can't handle RDB format version 12"
    );
    let mut file = sealed(10, b"");
    file.truncate(11);
    assert_eq!(
        read_all(&file[..], 1 << 20).unwrap_err().to_string(),
        "at offset 11: unexpected end of file"
    );
    let err = read_all(&sealed(10, b"\x09\x01k\x00")[..], 1 << 20).unwrap_err();
    assert_eq!(err.to_string(), "at offset 9: malformed data");
}
