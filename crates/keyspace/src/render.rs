//! The report as a text table (for people), JSON (for scripts and tests)
//! and CSV (for spreadsheets). All three show the same figures; only the
//! table abbreviates and cuts to `--top` rows.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::estimate::{Draw, Estimate};
use crate::report::{Report, Row};
use crate::stats::Spread;

/// Bytes in binary units with one decimal: `812 B`, `1.2 GiB`.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024.0 {
        return format!("{:.0} B", b);
    }
    let mut v = b / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Seconds as a short duration: `45s`, `12m`, `8.0h`, `3.2d`.
pub fn duration(secs: f64) -> String {
    if secs < 60.0 {
        format!("{secs:.0}s")
    } else if secs < 3600.0 {
        format!("{:.0}m", secs / 60.0)
    } else if secs < 86_400.0 {
        format!("{:.1}h", secs / 3600.0)
    } else {
        format!("{:.1}d", secs / 86_400.0)
    }
}

/// A cap as said in advice: `1 h`, `8 h`, `7 d`, `90 min`.
pub fn cap(secs: u64) -> String {
    if secs.is_multiple_of(86_400) {
        format!("{} d", secs / 86_400)
    } else if secs.is_multiple_of(3600) {
        format!("{} h", secs / 3600)
    } else {
        format!("{} min", secs / 60)
    }
}

/// Thousands separators: `1,000,000`.
pub fn count(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

fn exact(r: &Report) -> bool {
    r.sample.draw == Draw::Exhaustive
}

fn spread_cells(s: Option<Spread>, f: impl Fn(u64) -> String) -> [String; 3] {
    match s {
        Some(s) => [f(s.p50), f(s.p90), f(s.max)],
        None => ["-".into(), "-".into(), "-".into()],
    }
}

fn est_cell(e: &Estimate, exact: bool, f: impl Fn(f64) -> String) -> String {
    if exact {
        f(e.value)
    } else {
        format!("{} ±{}", f(e.value), f(e.margin()))
    }
}

fn lfu(r: &Report) -> bool {
    r.rows.iter().any(|row| row.freq.is_some()) && !r.rows.iter().any(|row| row.idle.is_some())
}

/// The header lines shared by the table and advice: server, coverage.
fn header(r: &Report, out: &mut String) {
    let s = &r.server;
    let mut who = String::new();
    if let Some(k) = &s.keel_version {
        let _ = write!(who, "keel {k}, ");
    }
    if let Some(v) = &s.redis_version {
        let _ = write!(who, "redis_version {v}, ");
    }
    let _ = writeln!(
        out,
        "{} ({who}db {}, maxmemory-policy {})",
        s.addr,
        r.db,
        s.policy.as_deref().unwrap_or("unknown")
    );
    let total = est_cell(&r.total_bytes, exact(r), bytes);
    match r.sample.draw {
        Draw::Exhaustive => {
            let _ = writeln!(
                out,
                "{} keys inspected in {:.1} s; {} in total (sum of MEMORY USAGE), {} patterns",
                count(r.sample.n as f64),
                r.elapsed.as_secs_f64(),
                total,
                r.rows.len()
            );
        }
        draw => {
            let how = if draw == Draw::WithReplacement {
                "RANDOMKEY draws, with replacement"
            } else {
                "uniform, without replacement"
            };
            let _ = writeln!(
                out,
                "sample of {} of {} keys ({how}) in {:.1} s; about {} in total; \
                 ± are 95% intervals",
                count(r.sample.n as f64),
                count(r.sample.population as f64),
                r.elapsed.as_secs_f64(),
                total
            );
        }
    }
}

/// The text table, the gaps, and TTL advice when asked for.
pub fn table(r: &Report, top: usize) -> String {
    let mut out = String::new();
    header(r, &mut out);
    out.push('\n');
    let exact = exact(r);
    let access = if lfu(r) { "freq" } else { "idle" };
    let mut grid: Vec<Vec<String>> = vec![vec![
        "pattern".into(),
        "keys".into(),
        "total".into(),
        "avg".into(),
        "share".into(),
        format!("{access} p50"),
        "p90".into(),
        "max".into(),
        "ttl p50".into(),
        "p90".into(),
        "max".into(),
        "no ttl".into(),
    ]];
    for row in r.rows.iter().take(top) {
        let mut cells = vec![
            row.pattern.clone(),
            if exact {
                count(row.keys.value)
            } else {
                format!("~{} ±{}", count(row.keys.value), count(row.keys.margin()))
            },
            row.bytes.map_or("-".into(), |e| est_cell(&e, exact, bytes)),
            row.avg_bytes.map_or("-".into(), bytes),
            row.share.map_or("-".into(), |e| est_cell(&e, exact, pct)),
        ];
        if access == "freq" {
            cells.extend(spread_cells(row.freq, |v| v.to_string()));
        } else {
            cells.extend(spread_cells(row.idle, |v| duration(v as f64)));
        }
        cells.extend(spread_cells(row.ttl_ms, |v| duration(v as f64 / 1000.0)));
        cells.push(format!("{:.0}%", row.no_ttl_share * 100.0));
        grid.push(cells);
    }
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|c| grid.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for cells in &grid {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            if i == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if r.rows.len() > top {
        let rest = &r.rows[top..];
        let share: f64 = rest.iter().filter_map(|r| r.share.map(|s| s.value)).sum();
        let _ = writeln!(
            out,
            "… {} more patterns holding {} of memory (--top, --json or --csv for all)",
            rest.len(),
            pct(share)
        );
    }
    if !exact {
        out.push_str(
            "~ estimated from the sample; idle and ttl percentiles are those of the sampled keys\n",
        );
    }
    gaps(r, &mut out);
    if r.ttl_advice {
        out.push('\n');
        advice(r, &mut out);
    }
    out
}

fn gaps(r: &Report, out: &mut String) {
    for (command, keys, message) in &r.gaps.missing {
        let _ = writeln!(
            out,
            "note: {command} gave no figure for {} keys ({message})",
            count(*keys as f64)
        );
    }
    if r.gaps.vanished > 0 {
        let _ = writeln!(
            out,
            "note: {} keys disappeared between SCAN and inspection (expired, evicted or deleted)",
            count(r.gaps.vanished as f64)
        );
    }
    for n in &r.gaps.notes {
        let _ = writeln!(out, "note: {n}");
    }
}

/// The `--ttl-advice` section as sentences.
pub fn advice(r: &Report, out: &mut String) {
    let _ = writeln!(
        out,
        "TTL advice (patterns holding at least {} of memory). A key idle longer than a cap was \
         neither read nor written within it, so with its TTL capped there (TTL set on write) it \
         would have expired:",
        pct(r.advice_min_share)
    );
    let mut any = false;
    for row in &r.rows {
        if row.share.map_or(0.0, |s| s.value) < r.advice_min_share {
            continue;
        }
        any = true;
        let size = row.bytes.map_or("-".into(), |e| bytes(e.value));
        if row.advice.is_empty() {
            let why = if row.idle.is_none() {
                "no idle times (LFU policy or OBJECT IDLETIME unavailable)"
            } else {
                "no key is idle longer than 1 h"
            };
            let _ = writeln!(out, "  `{}` ({size}): nothing to free: {why}", row.pattern);
            continue;
        }
        for e in &row.advice {
            let _ = writeln!(
                out,
                "  capping `{}` at {} frees {} ({:.0}% of its {size}, {} keys); {:.0}% of its keys \
                 were read in the last {}",
                row.pattern,
                cap(e.cap_secs),
                bytes(e.bytes_freed),
                e.share_of_pattern * 100.0,
                count(e.keys_freed),
                e.read_within * 100.0,
                cap(e.cap_secs)
            );
        }
    }
    if !any {
        let _ = writeln!(out, "  no pattern is that large");
    }
}

fn est_json(e: &Estimate) -> Value {
    json!({ "value": e.value, "low": e.low, "high": e.high })
}

fn spread_json(s: Option<Spread>) -> Value {
    match s {
        Some(s) => json!({ "p50": s.p50, "p90": s.p90, "p99": s.p99, "max": s.max }),
        None => Value::Null,
    }
}

fn row_json(row: &Row) -> Value {
    let types: serde_json::Map<String, Value> = row
        .types
        .iter()
        .map(|(t, n)| (t.name().to_string(), json!(n)))
        .collect();
    json!({
        "pattern": row.pattern,
        "types": types,
        "sampled_keys": row.sampled,
        "keys": est_json(&row.keys),
        "bytes": row.bytes.as_ref().map(est_json),
        "avg_bytes": row.avg_bytes,
        "share": row.share.as_ref().map(est_json),
        "idle_seconds": spread_json(row.idle),
        "freq": spread_json(row.freq),
        "ttl_ms": spread_json(row.ttl_ms),
        "no_ttl_share": row.no_ttl_share,
        "ttl_advice": row.advice.iter().map(|e| json!({
            "cap_seconds": e.cap_secs,
            "keys_freed": e.keys_freed,
            "bytes_freed": e.bytes_freed,
            "share_of_pattern": e.share_of_pattern,
            "read_within": e.read_within,
        })).collect::<Vec<_>>(),
    })
}

/// The report as one JSON document (every pattern, no `--top` cut).
pub fn json(r: &Report) -> String {
    let mode = match r.sample.draw {
        Draw::Exhaustive => "exhaustive",
        Draw::WithoutReplacement => "sample-scan",
        Draw::WithReplacement => "sample-randomkey",
    };
    let doc = json!({
        "server": {
            "addr": r.server.addr,
            "redis_version": r.server.redis_version,
            "keel_version": r.server.keel_version,
            "maxmemory_policy": r.server.policy,
            "dbsize": r.server.dbsize,
        },
        "db": r.db,
        "mode": mode,
        "population": r.sample.population,
        "inspected": r.sample.n,
        "elapsed_seconds": r.elapsed.as_secs_f64(),
        "total_bytes": est_json(&r.total_bytes),
        "patterns": r.rows.iter().map(row_json).collect::<Vec<_>>(),
        "gaps": {
            "missing": r.gaps.missing.iter().map(|(c, n, m)| json!({
                "command": c, "keys": n, "first_error": m
            })).collect::<Vec<_>>(),
            "vanished": r.gaps.vanished,
            "notes": r.gaps.notes,
        },
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The report as CSV, one row per pattern (every pattern).
pub fn csv(r: &Report) -> String {
    let mut out = String::from(
        "pattern,keys,keys_low,keys_high,bytes,bytes_low,bytes_high,avg_bytes,share,share_low,\
         share_high,idle_p50_s,idle_p90_s,idle_max_s,freq_p50,freq_p90,freq_max,ttl_p50_ms,\
         ttl_p90_ms,ttl_max_ms,no_ttl_share,types\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    let int = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for row in &r.rows {
        let types: Vec<String> = row
            .types
            .iter()
            .map(|(t, n)| format!("{}={n}", t.name()))
            .collect();
        let fields = [
            csv_field(&row.pattern),
            format!("{:.0}", row.keys.value),
            format!("{:.0}", row.keys.low),
            format!("{:.0}", row.keys.high),
            num(row.bytes.map(|e| e.value)),
            num(row.bytes.map(|e| e.low)),
            num(row.bytes.map(|e| e.high)),
            num(row.avg_bytes),
            num(row.share.map(|e| e.value)),
            num(row.share.map(|e| e.low)),
            num(row.share.map(|e| e.high)),
            int(row.idle.map(|s| s.p50)),
            int(row.idle.map(|s| s.p90)),
            int(row.idle.map(|s| s.max)),
            int(row.freq.map(|s| s.p50)),
            int(row.freq.map(|s| s.p90)),
            int(row.freq.map(|s| s.max)),
            int(row.ttl_ms.map(|s| s.p50)),
            int(row.ttl_ms.map(|s| s.p90)),
            int(row.ttl_ms.map(|s| s.max)),
            format!("{:.6}", row.no_ttl_share),
            csv_field(&types.join(" ")),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(bytes(812.0), "812 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(bytes(1.2 * 1024.0 * 1024.0 * 1024.0), "1.2 GiB");
        assert_eq!(duration(45.0), "45s");
        assert_eq!(duration(720.0), "12m");
        assert_eq!(duration(8.0 * 3600.0), "8.0h");
        assert_eq!(cap(8 * 3600), "8 h");
        assert_eq!(cap(7 * 86_400), "7 d");
        assert_eq!(cap(5400), "90 min");
        assert_eq!(count(1_000_000.0), "1,000,000");
        assert_eq!(count(999.0), "999");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
