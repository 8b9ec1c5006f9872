//! The report against real servers: keel-server (required: build it with
//! `cargo build --release -p keel-server`) and redis-server (the Redis half
//! is skipped only when /usr/bin/redis-server is absent). Each is loaded
//! with the same synthetic keyspace; the report must find every pattern
//! with the exact key count and total bytes within 5% of the server's own
//! MEMORY USAGE sum (each server against itself: keel and Redis account
//! bytes differently).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use keel_resp::{decode, Frame, Protocol};
use serde_json::Value;

const REDIS: &str = "/usr/bin/redis-server";

/// A server process, killed when the test ends however it ends.
struct Server {
    child: Child,
    port: u16,
    name: &'static str,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn start(name: &'static str, program: &Path, extra: &[&str]) -> Server {
    // A free port may be taken by another test between being found and
    // being bound: a server that exits at once is started again on another.
    for _ in 0..5 {
        if let Some(server) = start_on(name, program, extra, free_port()) {
            return server;
        }
    }
    panic!("{name} did not start on any of five free ports");
}

/// The server listening on `port`, or `None` if it exited while starting.
fn start_on(name: &'static str, program: &Path, extra: &[&str], port: u16) -> Option<Server> {
    let log = std::env::temp_dir().join(format!("keel-keyspace-test-{name}-{port}.log"));
    let log = std::fs::File::create(&log).expect("server log file");
    let mut args = vec![
        "--port".to_string(),
        port.to_string(),
        "--bind".into(),
        "127.0.0.1".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let child = Command::new(program)
        .args(&args)
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let mut server = Server { child, port, name };
    // Wait for the listener (start-up, not a performance bound).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut c) = Conn::open(port) {
            if c.call(&["PING"]).is_ok() {
                return Some(server);
            }
        }
        if server.child.try_wait().ok().flatten().is_some() {
            return None;
        }
        assert!(
            Instant::now() < deadline,
            "{name} did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn keel() -> Server {
    let bin = workspace_root().join("target/release/keel-server");
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build --release -p keel-server`",
        bin.display()
    );
    start("keel", &bin, &[])
}

fn redis(extra: &[&str]) -> Option<Server> {
    if !Path::new(REDIS).exists() {
        eprintln!("{REDIS} not found: skipping the Redis half");
        return None;
    }
    let mut args = vec!["--save", "", "--appendonly", "no"];
    args.extend_from_slice(extra);
    Some(start("redis", Path::new(REDIS), &args))
}

/// Minimal blocking client for setting up the keyspace (keel_resp codec).
struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn open(port: u16) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            stream,
            buf: BytesMut::new(),
        })
    }

    fn pipeline(&mut self, cmds: &[Vec<String>]) -> std::io::Result<Vec<Frame>> {
        let mut out = BytesMut::new();
        for c in cmds {
            Frame::command(c).encode(&mut out, Protocol::Resp2);
        }
        self.stream.write_all(&out)?;
        let mut replies = Vec::new();
        let mut chunk = [0u8; 65536];
        while replies.len() < cmds.len() {
            match decode(&self.buf) {
                Ok(Some((f, used))) => {
                    let _ = self.buf.split_to(used);
                    replies.push(f);
                    continue;
                }
                Ok(None) => {}
                Err(e) => panic!("bad reply: {e}"),
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        Ok(replies)
    }

    fn call(&mut self, args: &[&str]) -> std::io::Result<Frame> {
        let cmd: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Ok(self.pipeline(&[cmd])?.remove(0))
    }
}

/// Expected pattern → key names, and the commands creating them.
struct Keyspace {
    patterns: BTreeMap<&'static str, Vec<String>>,
    commands: Vec<Vec<String>>,
}

fn hex(n: u64, width: usize) -> String {
    // Deterministic pseudo-random hex of `width` digits.
    let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef_cafe_f00d;
    let mut s = String::new();
    while s.len() < width {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("{x:016x}"));
    }
    s.truncate(width);
    s
}

fn synthetic() -> Keyspace {
    let mut patterns: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut commands = Vec::new();
    let mut add = |pattern: &'static str, key: String, value_len: usize, ttl: &[&str]| {
        let mut c = vec!["SET".to_string(), key.clone(), "v".repeat(value_len)];
        c.extend(ttl.iter().map(|s| s.to_string()));
        commands.push(c);
        patterns.entry(pattern).or_default().push(key);
    };
    for i in 0..300u64 {
        add(
            "user:*:profile",
            format!("user:{}:profile", 1000 + i * 7),
            100,
            &[],
        );
    }
    for i in 0..200u64 {
        let h = hex(i, 32);
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        );
        add("session:*", format!("session:{uuid}"), 50, &["EX", "3600"]);
    }
    for i in 0..150u64 {
        add(
            "cache:v2:*:html",
            format!("cache:v2:{}:html", hex(1000 + i, 24)),
            1000,
            &["EX", "86400"],
        );
    }
    for i in 0..100u64 {
        add(
            "img/*.png",
            format!("img/{}.png", hex(5000 + i, 40)),
            300,
            &["PX", "600000"],
        );
    }
    for i in 0..60u8 {
        // Names made of letters: only the cardinality step merges them.
        let name = format!(
            "t{}{}",
            char::from(b'a' + i / 26),
            char::from(b'a' + i % 26)
        );
        add(
            "tenant-*:settings",
            format!("tenant-{name}:settings"),
            20,
            &[],
        );
    }
    add("config:main", "config:main".into(), 10, &[]);
    Keyspace { patterns, commands }
}

fn load(port: u16, ks: &Keyspace) -> BTreeMap<&'static str, u64> {
    let mut c = Conn::open(port).expect("connect");
    for chunk in ks.commands.chunks(200) {
        for r in c.pipeline(chunk).expect("load") {
            assert!(!r.is_error(), "load failed: {r:?}");
        }
    }
    // Touch the user profiles: their idle time is 0 afterwards.
    let gets: Vec<Vec<String>> = ks.patterns["user:*:profile"]
        .iter()
        .map(|k| vec!["GET".to_string(), k.clone()])
        .collect();
    c.pipeline(&gets).expect("get");
    // The server's own account, key by key.
    let mut sums = BTreeMap::new();
    for (pattern, keys) in &ks.patterns {
        let cmds: Vec<Vec<String>> = keys
            .iter()
            .map(|k| vec!["MEMORY".to_string(), "USAGE".into(), k.clone()])
            .collect();
        let total: i64 = c
            .pipeline(&cmds)
            .expect("memory usage")
            .iter()
            .map(|f| match f {
                Frame::Integer(n) => *n,
                other => panic!("MEMORY USAGE reply {other:?}"),
            })
            .sum();
        sums.insert(*pattern, total as u64);
    }
    sums
}

fn report(port: u16, extra: &[&str]) -> Output {
    let mut args = vec!["-p".to_string(), port.to_string(), "-q".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    Command::new(env!("CARGO_BIN_EXE_keel-keyspace"))
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run keel-keyspace")
}

fn json_report(port: u16, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "--rate", "0"];
    args.extend_from_slice(extra);
    let out = report(port, &args);
    assert!(
        out.status.success(),
        "keel-keyspace failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

fn by_pattern(doc: &Value) -> BTreeMap<String, Value> {
    doc["patterns"]
        .as_array()
        .expect("patterns")
        .iter()
        .map(|p| (p["pattern"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

fn check_server(server: &Server) {
    let name = server.name;
    let ks = synthetic();
    let load_started = Instant::now();
    let sums = load(server.port, &ks);

    // Exhaustive walk.
    let doc = json_report(server.port, &["--ttl-advice"]);
    let elapsed = load_started.elapsed().as_secs() + 1;
    assert_eq!(doc["mode"], "exhaustive");
    let total_keys: usize = ks.patterns.values().map(Vec::len).sum();
    assert_eq!(doc["inspected"], total_keys as u64, "{name}");
    let found = by_pattern(&doc);
    let expected: Vec<&str> = ks.patterns.keys().copied().collect();
    let got: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(got, expected, "{name}: patterns");
    for (pattern, keys) in &ks.patterns {
        let p = &found[*pattern];
        assert_eq!(
            p["keys"]["value"],
            keys.len() as f64,
            "{name} {pattern} keys"
        );
        assert_eq!(p["types"]["string"], keys.len() as u64, "{name} {pattern}");
        let bytes = p["bytes"]["value"].as_f64().unwrap();
        let own = sums[pattern] as f64;
        assert!(
            (bytes - own).abs() <= 0.05 * own,
            "{name} {pattern}: report {bytes} bytes, server's MEMORY USAGE sum {own}"
        );
        // Everything was written moments ago: idle at most the test's age.
        let idle_max = p["idle_seconds"]["max"].as_u64().unwrap();
        assert!(idle_max <= elapsed, "{name} {pattern}: idle {idle_max}");
    }
    assert_eq!(found["user:*:profile"]["idle_seconds"]["max"], 0, "{name}");
    for (pattern, ttl_ms) in [
        ("session:*", 3_600_000u64),
        ("cache:v2:*:html", 86_400_000),
        ("img/*.png", 600_000),
    ] {
        let p = &found[pattern];
        assert_eq!(p["no_ttl_share"], 0.0, "{name} {pattern}");
        let max = p["ttl_ms"]["max"].as_u64().unwrap();
        let p50 = p["ttl_ms"]["p50"].as_u64().unwrap();
        assert!(max <= ttl_ms && p50 > 0 && p50 <= max, "{name} {pattern}");
    }
    for pattern in ["user:*:profile", "tenant-*:settings", "config:main"] {
        assert_eq!(found[pattern]["no_ttl_share"], 1.0, "{name} {pattern}");
        assert!(found[pattern]["ttl_ms"].is_null());
    }
    // Sorted by memory: the 1000-byte cache values lead.
    assert_eq!(doc["patterns"][0]["pattern"], "cache:v2:*:html", "{name}");
    let share_sum: f64 = found
        .values()
        .map(|p| p["share"]["value"].as_f64().unwrap())
        .sum();
    assert!((share_sum - 1.0).abs() < 1e-9);
    // Nothing is idle for an hour yet: advice frees nothing.
    assert!(found
        .values()
        .all(|p| p["ttl_advice"].as_array().unwrap().is_empty()));
    assert!(
        doc["gaps"]["missing"].as_array().unwrap().is_empty(),
        "{name}: {doc}"
    );

    // Sampled: population exact, every estimate near the truth (within 4
    // half-widths of its 95% interval: a failure is a bug, not bad luck).
    let doc = json_report(server.port, &["--sample", "400", "--seed", "7"]);
    assert_eq!(doc["mode"], "sample-scan");
    assert_eq!(doc["population"], total_keys as u64);
    assert_eq!(doc["inspected"], 400);
    let found = by_pattern(&doc);
    for (pattern, keys) in &ks.patterns {
        let Some(p) = found.get(*pattern) else {
            // Small patterns can be missed by a sample; the big ones cannot.
            assert!(keys.len() < 20, "{name}: sample missed {pattern}");
            continue;
        };
        let k = &p["keys"];
        let (v, lo, hi) = (
            k["value"].as_f64().unwrap(),
            k["low"].as_f64().unwrap(),
            k["high"].as_f64().unwrap(),
        );
        assert!(lo <= v && v <= hi, "{name} {pattern}: {k}");
        let margin = (hi - lo) / 2.0;
        assert!(
            (v - keys.len() as f64).abs() <= 4.0 * margin.max(1.0),
            "{name} {pattern}: estimated {k}, truth {}",
            keys.len()
        );
    }
    let doc = json_report(
        server.port,
        &["--sample", "300", "--sample-method", "randomkey"],
    );
    assert_eq!(doc["mode"], "sample-randomkey");
    assert_eq!(doc["population"], total_keys as u64);

    // Table and CSV render the same patterns.
    let out = report(server.port, &["--rate", "0", "--ttl-advice"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for pattern in ks.patterns.keys() {
        assert!(
            table.contains(pattern),
            "{name} table lacks {pattern}:\n{table}"
        );
    }
    assert!(table.contains("TTL advice"));
    let out = report(server.port, &["--rate", "0", "--csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(csv.lines().count(), 1 + ks.patterns.len(), "{csv}");

    // Extra rules and separators change the grouping.
    let doc = json_report(server.port, &["--rule", "^tenant-[a-z]+=tenant-{t}"]);
    assert_eq!(
        by_pattern(&doc)["tenant-{t}:settings"]["keys"]["value"],
        60.0
    );
    let doc = json_report(server.port, &["--max-literals", "0"]);
    assert_eq!(by_pattern(&doc).len(), ks.patterns.len() - 1 + 60);

    // LFU policy: OBJECT FREQ instead of IDLETIME, no gaps.
    let mut c = Conn::open(server.port).unwrap();
    let r = c
        .call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"])
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    let doc = json_report(server.port, &[]);
    let found = by_pattern(&doc);
    assert!(found["user:*:profile"]["idle_seconds"].is_null());
    assert!(found["user:*:profile"]["freq"]["max"].as_u64().is_some());
    assert!(
        doc["gaps"]["missing"].as_array().unwrap().is_empty(),
        "{doc}"
    );
    c.call(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .unwrap();

    // Password: missing and wrong are both clear errors, right one works.
    c.call(&["CONFIG", "SET", "requirepass", "s3cret"]).unwrap();
    let out = report(server.port, &["--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains("requires a password"), "{name}: {err}");
    let out = report(server.port, &["--json", "-a", "wrong"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains("authentication failed"), "{name}: {err}");
    let doc = json_report(server.port, &["-a", "s3cret"]);
    assert_eq!(doc["inspected"], total_keys as u64);
}

#[test]
fn report_matches_keel_and_redis() {
    let keel = keel();
    check_server(&keel);
    drop(keel);
    if let Some(redis) = redis(&[]) {
        check_server(&redis);
    }
}

#[test]
fn unreachable_server_is_a_clear_error() {
    let port = free_port();
    let out = report(port, &["--timeout", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    let out = report(port, &["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_commands_are_counted_not_fatal() {
    // A Redis with MEMORY and CONFIG renamed away, as some managed
    // services do.
    let Some(redis) = redis(&[
        "--rename-command",
        "MEMORY",
        "",
        "--rename-command",
        "CONFIG",
        "",
    ]) else {
        return;
    };
    let mut c = Conn::open(redis.port).unwrap();
    for i in 0..50 {
        c.call(&["SET", &format!("k:{i}"), "x"]).unwrap();
    }
    let doc = json_report(redis.port, &[]);
    let found = by_pattern(&doc);
    assert_eq!(found["k:*"]["keys"]["value"], 50.0);
    assert!(found["k:*"]["bytes"].is_null());
    let missing = doc["gaps"]["missing"].as_array().unwrap();
    let memory = missing
        .iter()
        .find(|m| m["command"] == "MEMORY USAGE")
        .expect("MEMORY USAGE gap");
    assert_eq!(memory["keys"], 50);
    assert!(doc["server"]["maxmemory_policy"].is_null());
    let out = report(redis.port, &["--rate", "0"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        table.contains("MEMORY USAGE gave no figure for 50 keys"),
        "{table}"
    );
}
