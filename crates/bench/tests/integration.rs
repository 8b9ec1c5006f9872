//! End to end: a 5-second scenario against a real server, checking that the
//! CSV and HTML are written and agree with the summary.
//!
//! The server is keel-server from `<workspace>/target/release/keel-server`
//! (the project's test script builds it first). Set
//! `KEEL_BENCH_TEST_SERVER=/usr/bin/redis-server` to run the same test
//! against Redis.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn server_binary() -> PathBuf {
    if let Ok(p) = std::env::var("KEEL_BENCH_TEST_SERVER") {
        return PathBuf::from(p);
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/keel-server");
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --release` first (the project's test script does)",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Stops the server by PID when the test ends, even on panic.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(port: u16) -> Server {
    let bin = server_binary();
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--maxmemory",
        "64mb",
    ]);
    cmd.args(["--maxmemory-policy", "allkeys-lru"]);
    if bin.file_name().is_some_and(|n| n == "redis-server") {
        // keel-server has no persistence to turn off; Redis does.
        cmd.args(["--save", "", "--appendonly", "no"]);
    }
    // Log to a file, not a pipe: a pipe nobody reads would stall a chatty
    // server once it fills.
    let log = std::env::temp_dir().join(format!("keel-bench-it-server-{port}.log"));
    let file = std::fs::File::create(&log).unwrap();
    let child = cmd
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let mut server = Server(child);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            let out = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "{} exited before accepting connections: {status}\n{out}",
                bin.display()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{} did not accept connections on port {port}",
            bin.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

#[test]
fn five_second_scenario_writes_consistent_csv_and_html() {
    let port = free_port();
    let _server = start_server(port);
    let dir = std::env::temp_dir().join(format!("keel-bench-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, html, summary) = (
        dir.join("run.csv"),
        dir.join("run.html"),
        dir.join("summary.txt"),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .args([
            "-p",
            &port.to_string(),
            "--duration",
            "5",
            "-c",
            "8",
            "-P",
            "4",
        ])
        .args(["--mix", "get=8,set=2", "--keyspace", "10000", "--quiet"])
        .arg("--csv")
        .arg(&csv)
        .arg("--report")
        .arg(&html)
        .arg("--summary")
        .arg(&summary)
        .output()
        .expect("keel-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "keel-bench failed:\n{stdout}\n{stderr}"
    );

    let text = std::fs::read_to_string(&csv).expect("CSV written");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("CSV header").split(',').collect();
    let ops_col = header.iter().position(|h| *h == "ops").expect("ops column");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        (4..=6).contains(&rows.len()),
        "{} rows for a 5 s run",
        rows.len()
    );
    assert!(rows.iter().all(|r| r.len() == header.len()), "ragged CSV");
    let csv_ops: u64 = rows
        .iter()
        .map(|r| r[ops_col].parse::<u64>().unwrap())
        .sum();

    let summary_text = std::fs::read_to_string(&summary).expect("summary written");
    let total: u64 = summary_text
        .lines()
        .find(|l| l.trim_start().starts_with("successful requests"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .expect("summary has the request total");
    assert_eq!(csv_ops, total, "CSV ops must sum to the summary's total");
    assert!(total > 0);

    let page = std::fs::read_to_string(&html).expect("HTML written");
    assert!(page.contains("<svg") && page.contains("Memory vs maxmemory"));
    assert!(
        page.contains("RSS (used_memory_rss)"),
        "the memory chart shows RSS"
    );
    assert!(
        page.contains(&total.to_string()),
        "report shows the same total"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "report must be self-contained"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreachable_server_is_reported_and_run_still_writes() {
    let port = free_port(); // nothing listens there
    let dir = std::env::temp_dir().join(format!("keel-bench-it-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("down.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .args([
            "-p",
            &port.to_string(),
            "--duration",
            "2",
            "-c",
            "2",
            "--quiet",
        ])
        .arg("--csv")
        .arg(&csv)
        .output()
        .expect("keel-bench runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot reach"), "{stderr}");
    assert!(
        stdout.contains("connect refused"),
        "errors by kind: {stdout}"
    );
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .contains("err_connect_refused"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_scenario_names_file_and_field() {
    let dir = std::env::temp_dir().join(format!("keel-bench-it-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[load]\nrate = \"fast\"\n[workload]\n[[workload.mix]]\ncmd = \"GET\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_keel-bench"))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("bad.toml") && stderr.contains("load.rate"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
