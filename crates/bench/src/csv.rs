//! The per-second CSV timeline: one row per second, client columns first,
//! then the sampled server fields, then one column per error kind seen in
//! the run (so a spreadsheet never has to parse a nested field). Empty cells
//! mean the server did not report that field.

use std::fmt::Write as _;
use std::path::Path;

use crate::run::RunOutput;
use crate::sampler::{COUNTERS, GAUGES};

/// Client-side columns, in order.
pub const CLIENT_COLUMNS: &[&str] = &[
    "t",
    "ops",
    "sent",
    "errors",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "mean_ms",
    "svc_p99_ms",
    "slow_10ms",
    "slow_100ms",
    "slow_1s",
    "hits",
    "misses",
    "client_backlog",
    "bench_cpu_pct",
];

/// Server columns: gauges, memory min/max within the second, counter rates.
pub fn server_columns() -> Vec<&'static str> {
    let mut cols: Vec<&'static str> = GAUGES.to_vec();
    cols.extend(["used_memory_min", "used_memory_max"]);
    for &c in COUNTERS {
        cols.push(match c {
            "used_cpu" => "server_cpu_pct",
            "used_cpu_main_thread" => "server_main_cpu_pct",
            other => other,
        });
    }
    cols
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// The CSV text of a run.
pub fn render(run: &RunOutput) -> String {
    let kinds: Vec<String> = {
        let mut k: Vec<String> = run
            .rows
            .iter()
            .flat_map(|r| r.client.errors.keys().cloned())
            .collect();
        k.sort();
        k.dedup();
        k
    };
    let server = server_columns();
    let mut out = String::new();
    let mut header: Vec<String> = CLIENT_COLUMNS.iter().map(|s| s.to_string()).collect();
    // Counter columns are per-second rates; say so in the header.
    header.extend(server.iter().map(|c| {
        if COUNTERS.contains(c) {
            format!("{c}_per_s")
        } else {
            c.to_string()
        }
    }));
    header.extend(
        kinds
            .iter()
            .map(|k| format!("err_{}", k.replace([' ', ','], "_"))),
    );
    out.push_str(&header.join(","));
    out.push('\n');
    for r in &run.rows {
        let c = &r.client;
        let mut cells = vec![
            r.t.to_string(),
            c.ops.to_string(),
            c.sent.to_string(),
            c.error_total().to_string(),
            num(c.latency_ms(0.5)),
            num(c.latency_ms(0.9)),
            num(c.latency_ms(0.99)),
            num(c.latency_ms(0.999)),
            num(c.max_ms()),
            num(if c.latency.is_empty() {
                0.0
            } else {
                c.latency.mean() / 1000.0
            }),
            num(c.service_ms(0.99)),
            c.slow[0].to_string(),
            c.slow[1].to_string(),
            c.slow[2].to_string(),
            c.hits.to_string(),
            c.misses.to_string(),
            r.backlog.to_string(),
            r.bench_cpu.map(num).unwrap_or_default(),
        ];
        for col in &server {
            cells.push(
                r.server
                    .values
                    .get(col)
                    .map(|v| num(*v))
                    .unwrap_or_default(),
            );
        }
        for k in &kinds {
            cells.push(c.errors.get(k).copied().unwrap_or(0).to_string());
        }
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

/// Writes the CSV, creating parent directories.
pub fn write(run: &RunOutput, path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render(run))
}
