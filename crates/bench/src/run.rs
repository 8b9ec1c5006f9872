//! One run of a scenario against one server: check it is reachable,
//! prefill, optionally calibrate, drive the measured phase with a progress
//! line each second, then the after-steps (full SCAN). Everything it learns
//! ends up in a [`RunOutput`], which the CSV, summary and report read.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use keel_resp::Frame;
use tokio::sync::{watch, Semaphore};

use crate::client::{error_kind, frame_text, Client, Target};
use crate::driver::{self, LoadParams, Shared, Window};
use crate::sampler::{self, Sampler};
use crate::scenario::{Prefill, Scenario};
use crate::timeline::{process_cpu_seconds, Interval, Recorder, Row};
use crate::workload::{set_command, KeyBuf, Rng};

/// Set by Ctrl-C: the measured phase ends early and results are written.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Options that are not part of the scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOpts {
    /// Skip the `[prefill]` step (the server is already filled).
    pub no_prefill: bool,
    /// Measure capacity first and run at `calibrate.fraction` of it.
    pub calibrate: bool,
    /// No progress line.
    pub quiet: bool,
}

/// Expired-key overhead measured by a full SCAN after the run (Twitter's
/// method: memory before minus after forcing every expired key out).
#[derive(Clone, Debug, Default)]
pub struct ScanResult {
    /// `used_memory_dataset` before the SCAN, bytes.
    pub dataset_before: Option<f64>,
    /// … and after.
    pub dataset_after: Option<f64>,
    /// `used_memory` before and after.
    pub used_before: Option<f64>,
    /// … and after.
    pub used_after: Option<f64>,
    /// Keys (all databases) before and after.
    pub keys_before: Option<f64>,
    /// … and after.
    pub keys_after: Option<f64>,
    /// Keys SCAN returned (live keys).
    pub scanned: u64,
    /// How long the SCAN took.
    pub seconds: f64,
}

impl ScanResult {
    /// (dataset before − after) / before, the headline overhead figure.
    pub fn overhead(&self) -> Option<f64> {
        match (self.dataset_before, self.dataset_after) {
            (Some(b), Some(a)) if b > 0.0 => Some((b - a) / b),
            _ => None,
        }
    }
}

/// Everything one run produced.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// Label (server name).
    pub name: String,
    /// Address.
    pub addr: String,
    /// Scenario name.
    pub scenario: String,
    /// One row per second of the measured phase.
    pub rows: Vec<Row>,
    /// First message of each error kind.
    pub error_examples: BTreeMap<String, String>,
    /// Rate the open loop ran at (after calibration), if open loop.
    pub rate: Option<f64>,
    /// Closed-loop capacity measured by `--calibrate`.
    pub calibrated_capacity: Option<f64>,
    /// Full-SCAN result, if the scenario asks for it.
    pub scan: Option<ScanResult>,
    /// Failed INFO polls and the last reason.
    pub sampler_failures: (u64, Option<String>),
    /// Connections and pipeline depth used.
    pub load: LoadParams,
    /// Problems worth repeating in the summary (unreachable server, …).
    pub notes: Vec<String>,
}

impl RunOutput {
    /// All rows merged.
    pub fn total(&self) -> Interval {
        let mut t = Interval::default();
        for r in &self.rows {
            t.merge(&r.client);
        }
        t
    }
}

fn say(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("{msg}");
    }
}

/// Runs `scenario` against `target`.
pub async fn run(scenario: &Scenario, target: &Target, opts: &RunOpts) -> RunOutput {
    let mut notes = Vec::new();
    let q = opts.quiet;
    say(
        q,
        &format!(
            "== {} against {} ({})",
            scenario.name, target.name, target.addr
        ),
    );
    let reachable = match Client::open(target, Duration::from_secs(3)).await {
        Ok(_) => true,
        Err(e) => {
            let msg = format!(
                "error: cannot reach {} at {}: {e}. The run goes on for its full duration, counting every failed attempt, and writes what it has.",
                target.name, target.addr
            );
            eprintln!("{msg}");
            notes.push(msg);
            false
        }
    };
    if reachable && !opts.no_prefill {
        if let Some(p) = &scenario.prefill {
            if let Err(e) = prefill(target, p, q).await {
                let msg = format!("error: prefill stopped early: {e}");
                eprintln!("{msg}");
                notes.push(msg);
            }
        }
    }
    let sampler = Sampler::start(target.clone());
    let mut load = scenario.load.clone();
    let mut calibrated_capacity = None;
    if opts.calibrate && reachable {
        // Closed loop with one request in flight per connection: the open
        // loop's arrivals are mostly one at a time per connection too, so a
        // pipelined closed loop (which batches) would overstate capacity.
        let mut cal = load.clone();
        cal.rate = None;
        cal.pipeline = 1;
        say(
            q,
            &format!(
                "-- calibrating: closed loop (pipeline 1) for {} s with the scenario's connections and mix",
                scenario.calibrate_seconds
            ),
        );
        let (rows, _, _) = phase(
            scenario,
            target,
            &cal,
            Duration::from_secs(scenario.calibrate_seconds),
            &sampler,
            q,
        )
        .await;
        let mut per_sec: Vec<u64> = rows.iter().skip(2).map(|r| r.client.ops).collect();
        per_sec.sort_unstable();
        let capacity = per_sec.get(per_sec.len() / 2).copied().unwrap_or(0) as f64;
        let rate = (capacity * scenario.calibrate_fraction).round();
        say(q, &format!(
            "-- calibration: capacity ≈ {capacity:.0} ops/s (median second); running at {:.0}% = {rate:.0} ops/s. Put `rate = {rate:.0}` in [load] to skip calibration next time.",
            scenario.calibrate_fraction * 100.0
        ));
        notes.push(format!(
            "calibrated: capacity {capacity:.0} ops/s, rate {rate:.0} ops/s"
        ));
        calibrated_capacity = Some(capacity);
        if rate > 0.0 {
            load.rate = Some(rate);
        }
        if let Some(p) = scenario
            .prefill
            .as_ref()
            .filter(|p| p.flush && !opts.no_prefill)
        {
            say(
                q,
                "-- re-filling after calibration so the measured run starts from the same state",
            );
            if let Err(e) = prefill(target, p, q).await {
                notes.push(format!(
                    "error: prefill after calibration stopped early: {e}"
                ));
            }
        }
    }
    let (mut rows, examples, t0) =
        phase(scenario, target, &load, scenario.duration, &sampler, q).await;
    let scan = if scenario.scan_after && reachable {
        match full_scan(target, q).await {
            Ok(s) => Some(s),
            Err(e) => {
                notes.push(format!("error: full SCAN failed: {e}"));
                None
            }
        }
    } else {
        None
    };
    let failures = sampler.failures();
    let samples = sampler.stop().await;
    for (i, row) in rows.iter_mut().enumerate() {
        let from = t0 + Duration::from_secs(i as u64);
        row.server = sampler::second(&samples, from, from + Duration::from_secs(1));
    }
    RunOutput {
        name: target.name.clone(),
        addr: target.addr.clone(),
        scenario: scenario.name.clone(),
        rows,
        error_examples: examples,
        rate: load.rate,
        calibrated_capacity,
        scan,
        sampler_failures: failures,
        load,
        notes,
    }
}

/// The measured phase: connects everything, starts the clock, one row per
/// second. Returns the rows (server columns filled later), the error
/// examples, and time zero.
async fn phase(
    scenario: &Scenario,
    target: &Target,
    load: &LoadParams,
    duration: Duration,
    sampler: &Sampler,
    quiet: bool,
) -> (Vec<Row>, BTreeMap<String, String>, Instant) {
    let threads = scenario.threads;
    let recorder = Recorder::new(threads * 4);
    let shared = Arc::new(Shared {
        target: target.clone(),
        workload: Arc::new(scenario.build_workload()),
        params: load.clone(),
        recorder: recorder.clone(),
        attempted: AtomicUsize::new(0),
        open: AtomicUsize::new(0),
        connect_gate: Semaphore::new(256),
    });
    let (tx, rx) = watch::channel(None);
    let mut handles = Vec::with_capacity(load.connections);
    for id in 0..load.connections {
        handles.push(tokio::spawn(driver::run_connection(
            id,
            shared.clone(),
            rx.clone(),
        )));
    }
    drop(rx);
    // Let every connection make its first attempt (bounded: 30 s).
    let connect_start = Instant::now();
    while shared.attempted.load(Ordering::Relaxed) < load.connections
        && connect_start.elapsed() < Duration::from_secs(30)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let open = shared.open.load(Ordering::Relaxed);
    say(
        quiet,
        &format!(
            "-- {} connections ({} attempted in {:.1} s), pipeline {}, {}; {} s",
            load.connections,
            shared.attempted.load(Ordering::Relaxed),
            connect_start.elapsed().as_secs_f64(),
            load.pipeline,
            match load.rate {
                Some(r) => format!("open loop at {r:.0} req/s ({:?} arrivals)", load.arrival),
                None => "closed loop".to_string(),
            },
            duration.as_secs()
        ),
    );
    let _ = open;
    let start = Instant::now();
    let end = start + duration;
    let _ = tx.send(Some(Window { start, end }));

    let secs = duration.as_secs().max(1);
    let mut rows: Vec<Row> = Vec::with_capacity(secs as usize);
    let mut cpu_prev = process_cpu_seconds();
    let mut sent_total = 0u64;
    let mut printed_examples = 0usize;
    for k in 1..=secs {
        let tick = start + Duration::from_secs(k);
        while Instant::now() < tick && !INTERRUPTED.load(Ordering::Relaxed) {
            let left = tick
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            tokio::time::sleep(left).await;
        }
        let client = recorder.take();
        let cpu_now = process_cpu_seconds();
        let bench_cpu = match (cpu_prev, cpu_now) {
            (Some(a), Some(b)) => Some((b - a) * 100.0),
            _ => None,
        };
        cpu_prev = cpu_now;
        sent_total += client.sent;
        let backlog = load
            .rate
            .map(|r| ((r * k as f64) as u64).saturating_sub(sent_total))
            .unwrap_or(0);
        if !quiet {
            progress(k, secs, &client, sampler, bench_cpu);
            let ex = recorder.examples();
            if ex.len() > printed_examples {
                for (kind, msg) in ex.iter().skip(printed_examples) {
                    eprintln!("   first {kind} error: {msg}");
                }
                printed_examples = ex.len();
            }
        }
        rows.push(Row {
            t: k,
            client,
            server: Default::default(),
            bench_cpu,
            backlog,
        });
        if INTERRUPTED.load(Ordering::Relaxed) {
            eprintln!("-- interrupted: stopping early and writing what there is");
            break;
        }
    }
    // Stop early if interrupted: move the end forward by dropping handles
    // after their drain; tasks end on their own at `end` otherwise.
    let wait =
        (end + load.drain + Duration::from_secs(3)).saturating_duration_since(Instant::now());
    let all = Joined(handles);
    if INTERRUPTED.load(Ordering::Relaxed) {
        all.abort();
    } else if tokio::time::timeout(wait, all.wait()).await.is_err() {
        eprintln!(
            "-- some connections did not finish draining; their requests are counted as unfinished"
        );
    }
    // Replies that arrived while draining belong to the last second.
    let rest = recorder.take();
    if let Some(last) = rows.last_mut() {
        last.client.merge(&rest);
    }
    (rows, recorder.examples(), start)
}

struct Joined(Vec<tokio::task::JoinHandle<()>>);

impl Joined {
    async fn wait(&self) {
        for h in &self.0 {
            while !h.is_finished() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    fn abort(&self) {
        for h in &self.0 {
            h.abort();
        }
    }
}

fn mb(v: Option<&f64>) -> String {
    v.map(|b| format!("{:.1}", b / 1048576.0))
        .unwrap_or_else(|| "?".into())
}

fn progress(k: u64, secs: u64, c: &Interval, sampler: &Sampler, cpu: Option<f64>) {
    let latest = sampler.latest();
    let v = latest.as_ref().map(|s| &s.values);
    let mem = mb(v.and_then(|v| v.get("used_memory")));
    let max = mb(v.and_then(|v| v.get("maxmemory")));
    let mut line = format!(
        "[{k:>4}/{secs}s] {:>8} ops/s  p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.1} ms | mem {mem}/{max} MB",
        c.ops,
        c.latency_ms(0.5),
        c.latency_ms(0.99),
        c.latency_ms(0.999),
        c.max_ms()
    );
    if let Some(ev) = v.and_then(|v| v.get("evicted_keys")) {
        line.push_str(&format!(" | evicted {ev:.0}"));
    }
    let errs = c.error_total();
    if errs > 0 {
        line.push_str(&format!(" | errors {errs}"));
    }
    if let Some(cpu) = cpu {
        line.push_str(&format!(" | bench cpu {cpu:.0}%"));
    }
    eprintln!("{line}");
    let _ = std::io::stderr().flush();
}

/// Writes `p.keys` keys with pipelined SETs over a few connections, bounded
/// to 10 minutes. Error replies (OOM when the prefill overshoots maxmemory
/// under noeviction) stop it with a message naming the reply.
async fn prefill(target: &Target, p: &Prefill, quiet: bool) -> Result<(), String> {
    let started = Instant::now();
    let limit = Duration::from_secs(600);
    if p.flush {
        let mut c = Client::open(target, Duration::from_secs(60))
            .await
            .map_err(|e| e.to_string())?;
        c.call(&["FLUSHALL"])
            .await
            .map_err(|e| format!("FLUSHALL failed: {e}"))?;
    }
    say(
        quiet,
        &format!(
            "-- prefill: {} keys of ~{:.0} B over {} connections",
            p.keys,
            p.value.mean(),
            p.connections
        ),
    );
    let per = p.keys.div_ceil(p.connections as u64);
    let value_bytes: Arc<Vec<u8>> =
        Arc::new((0..p.value.max()).map(|i| b'a' + (i % 26) as u8).collect());
    let mut tasks = Vec::new();
    for c in 0..p.connections as u64 {
        let (lo, hi) = (
            p.first + c * per,
            (p.first + (c + 1) * per).min(p.first + p.keys),
        );
        let (target, p, value_bytes) = (target.clone(), p.clone(), value_bytes.clone());
        tasks.push(tokio::spawn(async move {
            let mut client = Client::open(&target, Duration::from_secs(30))
                .await
                .map_err(|e| e.to_string())?;
            let mut rng = Rng::new(c + 12345);
            let mut i = lo;
            let mut buf = BytesMut::new();
            while i < hi {
                if started.elapsed() > limit {
                    return Err("prefill took more than 10 minutes".to_string());
                }
                buf.clear();
                let n = (p.pipeline as u64).min(hi - i);
                let mut kb = KeyBuf::new();
                for j in 0..n {
                    let len = p.value.sample(&mut rng);
                    set_command(
                        &mut buf,
                        kb.format(&p.prefix, i + j),
                        &value_bytes[..len],
                        p.ttl.sample(&mut rng),
                    );
                }
                let replies = client
                    .send_raw(&buf, n as usize)
                    .await
                    .map_err(|e| e.to_string())?;
                if let Some(Frame::Error(e)) = replies.iter().find(|f| f.is_error()) {
                    return Err(format!(
                        "server replied {} to a prefill SET: {e}",
                        error_kind(e)
                    ));
                }
                i += n;
            }
            Ok::<u64, String>(hi.saturating_sub(lo))
        }));
    }
    let mut done = 0;
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(n)) => done += n,
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(e.to_string());
            }
        }
    }
    let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
    say(
        quiet,
        &format!(
            "-- prefill: {done} keys in {:.1} s ({rate:.0} keys/s)",
            started.elapsed().as_secs_f64()
        ),
    );
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn info_values(c: &mut Client) -> Result<BTreeMap<&'static str, f64>, String> {
    let f = c.call(&["INFO"]).await.map_err(|e| e.to_string())?;
    Ok(frame_text(&f)
        .map(|t| sampler::parse_info(&t))
        .unwrap_or_default())
}

/// Full SCAN (which makes the server check, and delete, every expired key
/// it passes), with INFO before and after. Bounded to 10 minutes.
async fn full_scan(target: &Target, quiet: bool) -> Result<ScanResult, String> {
    let mut c = Client::open(target, Duration::from_secs(30))
        .await
        .map_err(|e| e.to_string())?;
    let before = info_values(&mut c).await?;
    say(quiet, "-- full SCAN to reclaim expired keys");
    let started = Instant::now();
    let mut cursor = "0".to_string();
    let mut scanned = 0u64;
    for _ in 0..50_000_000u64 {
        if started.elapsed() > Duration::from_secs(600) {
            return Err("SCAN did not finish in 10 minutes".into());
        }
        let reply = c
            .call(&["SCAN", cursor.as_str(), "COUNT", "1000"])
            .await
            .map_err(|e| e.to_string())?;
        let Frame::Array(parts) = reply else {
            return Err("SCAN reply is not an array".into());
        };
        let next = parts
            .first()
            .and_then(frame_text)
            .ok_or("SCAN reply has no cursor")?;
        if let Some(Frame::Array(keys)) = parts.get(1) {
            scanned += keys.len() as u64;
        }
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = info_values(&mut c).await?;
    let r = ScanResult {
        dataset_before: before.get("used_memory_dataset").copied(),
        dataset_after: after.get("used_memory_dataset").copied(),
        used_before: before.get("used_memory").copied(),
        used_after: after.get("used_memory").copied(),
        keys_before: before.get("db_keys").copied(),
        keys_after: after.get("db_keys").copied(),
        scanned,
        seconds,
    };
    say(quiet, &format!(
        "-- SCAN: {scanned} live keys in {seconds:.1} s; dataset {} → {} MB; expired-key overhead {}",
        mb(r.dataset_before.as_ref()),
        mb(r.dataset_after.as_ref()),
        r.overhead().map(|o| format!("{:.1}%", o * 100.0)).unwrap_or_else(|| "n/a".into())
    ));
    Ok(r)
}
