//! Compatibility with Redis 7.0.15: the fixtures it saved load, keel's
//! Writer reproduces them, and what the Writer makes Redis's own tools and
//! server load (those tests skip when redis-server is not installed).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use keel_rdb::{Item, KeyMeta, Reader, Value, WriteOptions, Writer};

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(path).unwrap()
}

fn read_all(file: &[u8]) -> Vec<Item> {
    let mut r = Reader::new(file, 1 << 30).unwrap();
    let mut items = Vec::new();
    loop {
        let item = r.next().unwrap();
        if item == Item::End {
            assert_eq!(r.offset(), file.len() as u64);
            return items;
        }
        items.push(item);
    }
}

/// The items written back with keel's Writer.
fn rewrite(items: &[Item], options: WriteOptions) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), options).unwrap();
    let mut pending_db = None;
    for item in items {
        match item {
            Item::Aux { key, value } => w.aux(key, value).unwrap(),
            Item::Functions(code) => w.functions(code).unwrap(),
            Item::SelectDb(db) => pending_db = Some(*db),
            Item::ResizeDb { keys, expires } => {
                w.select_db(pending_db.take().unwrap(), *keys, *expires)
                    .unwrap();
            }
            Item::Key { key, value, meta } => w.key(key, value, *meta).unwrap(),
            Item::End => unreachable!(),
        }
    }
    w.finish().unwrap()
}

fn key<'a>(items: &'a [Item], name: &str) -> (&'a Value, KeyMeta) {
    items
        .iter()
        .find_map(|item| match item {
            Item::Key { key, value, meta } if key == name.as_bytes() => Some((value, *meta)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no key {name}"))
}

fn strings(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn redis_fixture_loads() {
    let items = read_all(&fixture("redis-7.0.15.rdb"));
    assert_eq!(
        items[0],
        Item::Aux {
            key: b"redis-ver".to_vec(),
            value: b"7.0.15".to_vec()
        }
    );
    assert!(items
        .iter()
        .any(|i| matches!(i, Item::Functions(code) if code.starts_with(b"#!lua name=mylib"))));
    assert!(items.contains(&Item::SelectDb(3)));
    let keys = items
        .iter()
        .filter(|i| matches!(i, Item::Key { .. }))
        .count();
    assert_eq!(keys, 18);

    let string = |name| match key(&items, name).0 {
        Value::String(s) => s.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(string("str:raw"), b"hello world");
    assert_eq!(string("str:int"), b"12345");
    assert_eq!(string("str:neg"), b"-7");
    assert_eq!(string("str:big"), b"5000000000");
    assert_eq!(string("str:lzf"), b"abc".repeat(100));
    assert_eq!(string("db3:key"), b"three");
    assert_eq!(
        key(&items, "list:small").0,
        &Value::List(strings(&["a", "b", "1", "2", "300", "-5", "70000"]))
    );
    match key(&items, "list:big").0 {
        Value::List(elements) => {
            assert_eq!(elements.len(), 2000);
            assert_eq!(elements[1999], b"element-2000");
        }
        other => panic!("{other:?}"),
    }
    let mut set = match key(&items, "set:int").0 {
        Value::Set(members) => members.clone(),
        other => panic!("{other:?}"),
    };
    set.sort();
    assert_eq!(set, strings(&["-40", "1", "100000", "2", "3"]));
    assert_eq!(
        key(&items, "hash:small").0,
        &Value::Hash(vec![
            (b"f".to_vec(), b"v".to_vec()),
            (b"n".to_vec(), b"12".to_vec())
        ])
    );
    match key(&items, "hash:big").0 {
        Value::Hash(pairs) => assert_eq!(pairs.len(), 600),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        key(&items, "zset:small").0,
        &Value::SortedSet(vec![
            (b"d".to_vec(), f64::NEG_INFINITY),
            (b"c".to_vec(), 0.1),
            (b"a".to_vec(), 1.5),
            (b"b".to_vec(), 2.0)
        ])
    );
    match key(&items, "zset:big").0 {
        Value::SortedSet(pairs) => assert_eq!(pairs.len(), 200),
        other => panic!("{other:?}"),
    }
    match key(&items, "stream").0 {
        Value::Stream(s) => {
            assert_eq!(s.length, 2);
            assert_eq!(s.groups.len(), 1);
            assert_eq!(s.groups[0].name, b"group");
            assert_eq!(s.groups[0].pending.len(), 1);
            assert_eq!(s.groups[0].consumers.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    let (_, meta) = key(&items, "ttl:str");
    assert_eq!(meta.expire_at_ms, Some(4_102_444_800_123));
    assert!(meta.idle_seconds.is_some(), "saved under allkeys-lru");
    assert_eq!(
        key(&items, "ttl:list").1.expire_at_ms,
        Some(4_102_444_800_000)
    );
    assert_eq!(key(&items, "str:raw").1.expire_at_ms, None);
}

#[test]
fn redis_lfu_fixture_loads() {
    let items = read_all(&fixture("redis-7.0.15-lfu.rdb"));
    let a = key(&items, "lfu:a").1.lfu_freq.unwrap();
    let b = key(&items, "lfu:b").1.lfu_freq.unwrap();
    assert!(b > a, "lfu:b was read 50 times: {a} {b}");
    assert_eq!(key(&items, "lfu:a").1.idle_seconds, None);
}

#[test]
fn writer_reproduces_redis_files() {
    for name in ["redis-7.0.15.rdb", "redis-7.0.15-lfu.rdb"] {
        let original = fixture(name);
        let items = read_all(&original);
        let written = rewrite(&items, WriteOptions::default());
        assert_eq!(read_all(&written), items, "{name}");
        assert_eq!(written, original, "{name}: byte for byte");
    }
}

/// A port of ours (23000-23099) nobody listens on.
fn free_port() -> u16 {
    (23050..23100)
        .find(|&port| TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port in 23050-23099")
}

fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// A fresh directory for a test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keel-rdb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every type, the fixture's items, as keel writes them (without
/// compression, so the plain string forms are there too).
fn keel_file(options: WriteOptions) -> Vec<u8> {
    rewrite(&read_all(&fixture("redis-7.0.15.rdb")), options)
}

#[test]
fn redis_check_rdb_accepts_keel_files() {
    if !installed("redis-check-rdb") {
        eprintln!("redis-check-rdb not installed: skipped");
        return;
    }
    let dir = scratch("check");
    for (i, options) in [
        WriteOptions::default(),
        WriteOptions {
            checksum: false,
            compression: false,
            ..WriteOptions::default()
        },
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("keel-{i}.rdb"));
        std::fs::write(&path, keel_file(options)).unwrap();
        let out = Command::new("redis-check-rdb").arg(&path).output().unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && log.contains("RDB looks OK"),
            "{log}"
        );
        assert!(log.contains("18 keys read"), "{log}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// One RESP2 command over `conn`, its reply as text lines.
fn command(conn: &mut BufReader<TcpStream>, args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request += &format!("${}\r\n{arg}\r\n", arg.len());
    }
    conn.get_mut().write_all(request.as_bytes()).unwrap();
    read_reply(conn)
}

fn read_reply(conn: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let line = line.trim_end().to_string();
    match line.as_bytes().first() {
        Some(b'$') if line != "$-1" => {
            let mut body = String::new();
            conn.read_line(&mut body).unwrap();
            body.trim_end().to_string()
        }
        Some(b'*') => {
            let n: usize = line[1..].parse().unwrap();
            (0..n)
                .map(|_| read_reply(conn))
                .collect::<Vec<_>>()
                .join(",")
        }
        _ => line,
    }
}

#[test]
fn redis_server_loads_keel_files() {
    if !installed("redis-server") {
        eprintln!("redis-server not installed: skipped");
        return;
    }
    let dir = scratch("server");
    std::fs::write(
        dir.join("keel.rdb"),
        keel_file(WriteOptions {
            compression: false,
            ..WriteOptions::default()
        }),
    )
    .unwrap();
    let port = free_port();
    let mut server = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .args(["--dbfilename", "keel.rdb", "--logfile", "redis.log"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => break stream,
            Err(_) if started.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("redis-server did not start: {e}"),
        }
    };
    let mut conn = BufReader::new(stream);
    let mut ask = |args: &[&str]| command(&mut conn, args);
    let replies = [
        ask(&["DBSIZE"]),
        ask(&["GET", "str:lzf"]).len().to_string(),
        ask(&["LLEN", "list:big"]),
        ask(&["LINDEX", "list:big", "-1"]),
        ask(&["OBJECT", "ENCODING", "hash:big"]),
        ask(&["ZSCORE", "zset:small", "a"]),
        ask(&["SMISMEMBER", "set:int", "-40", "7"]),
        ask(&["PEXPIRETIME", "ttl:str"]),
        ask(&["XLEN", "stream"]),
        ask(&["XINFO", "GROUPS", "stream"])
            .split(',')
            .nth(1)
            .unwrap_or("")
            .to_string(),
        ask(&["FCALL", "myfunc", "0"]),
        ask(&["SELECT", "3"]),
        ask(&["DBSIZE"]),
        ask(&["GET", "db3:key"]),
    ];
    let _ = ask(&["SHUTDOWN", "NOSAVE"]);
    let _ = server.wait();
    let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
    assert_eq!(
        replies,
        [
            ":16",
            "300",
            ":2000",
            "element-2000",
            "hashtable",
            "1.5",
            ":1,:0",
            ":4102444800123",
            ":2",
            "group",
            ":1",
            "+OK",
            ":2",
            "three"
        ],
        "{log}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Redis's own file cut is reported as truncated, where it was cut; with
/// a byte changed it is refused (the CRC at least catches it); neither
/// ever panics.
#[test]
fn damaged_redis_files_are_refused() {
    let load = |file: &[u8]| -> Result<(), keel_rdb::LoadError> {
        let mut r = Reader::new(file, 1 << 20)?;
        while r.next()? != Item::End {}
        Ok(())
    };
    for name in ["redis-7.0.15.rdb", "redis-7.0.15-lfu.rdb"] {
        let file = fixture(name);
        // Every offset of the header, functions and first keys, then a
        // sample (a debug build decodes all before each cut).
        let cuts = (0..file.len()).filter(|&len| len < 2048 || len % 17 == 0);
        for len in cuts {
            match load(&file[..len]) {
                Err(keel_rdb::LoadError {
                    offset,
                    problem: keel_rdb::Problem::Truncated,
                }) => assert_eq!(offset, len as u64, "{name}"),
                other => panic!("{name} cut at {len}: {other:?}"),
            }
        }
        for at in (0..file.len()).step_by(29) {
            let mut bad = file.clone();
            bad[at] ^= 0x5a;
            assert!(load(&bad).is_err(), "{name}: byte {at} changed");
        }
    }
}
