//! The final summary: whole-run figures plus the eviction-storm analysis
//! the acceptance asks for (baseline vs burst p99, seconds over 100 ms,
//! throughput before vs during bursts, sawtooth amplitude and period), so
//! the numbers are computed the same way for every run and every server.

use std::collections::BTreeMap;

use crate::run::RunOutput;
use crate::timeline::Row;

/// One summary line.
#[derive(Clone, Debug)]
pub struct Item {
    /// Stable key (also used by `--compare`).
    pub key: &'static str,
    /// Human label.
    pub label: &'static str,
    /// Value, if it could be computed.
    pub value: Option<f64>,
    /// Unit for display.
    pub unit: &'static str,
}

/// All summary lines of one run.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Lines in display order.
    pub items: Vec<Item>,
    /// Errors by kind over the whole run.
    pub errors: BTreeMap<String, u64>,
}

impl Summary {
    /// Value by key.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.items
            .iter()
            .find(|i| i.key == key)
            .and_then(|i| i.value)
    }
}

fn server(row: &Row, f: &str) -> Option<f64> {
    row.server.values.get(f).copied()
}

/// The highest value of a server byte field over the run, in MB; `None`
/// when the server never reported it.
fn peak_mb(rows: &[Row], f: &str) -> Option<f64> {
    rows.iter()
        .filter_map(|r| server(r, f))
        .reduce(f64::max)
        .map(|b| b / 1048576.0)
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    Some(v[v.len() / 2])
}

/// The seconds (indexes) of eviction bursts: at least 3× the median
/// eviction rate over every second since the first eviction, and at least
/// 1,000 keys/s. Quiet seconds count in the median, so a run that evicts
/// only in bursts (median near 0) still shows its bursts, and steady
/// eviction is not mistaken for one.
pub fn burst_seconds(evictions_per_second: &[f64]) -> Vec<usize> {
    let Some(first) = evictions_per_second.iter().position(|&e| e > 0.0) else {
        return Vec::new();
    };
    let baseline = median(&evictions_per_second[first..]).unwrap_or(0.0);
    let level = (3.0 * baseline).max(1000.0);
    (first..evictions_per_second.len())
        .filter(|&i| evictions_per_second[i] >= level)
        .collect()
}

/// Memory sawtooth: drops of used memory larger than `threshold` bytes
/// from the running peak. Returns (number of drops, mean amplitude, mean
/// period in seconds between drops).
pub fn sawtooth(rows: &[Row], threshold: f64) -> (usize, Option<f64>, Option<f64>) {
    // A drop is this second's minimum falling more than `threshold` below
    // the peak of the seconds before it (within one second the order of min
    // and max is unknown, so a rising second is never mistaken for a drop).
    let mut peak: Option<f64> = None;
    let mut drops: Vec<(usize, f64)> = Vec::new();
    let mut current: Option<f64> = None; // peak the ongoing drop started from
    for (i, r) in rows.iter().enumerate() {
        let (Some(hi), Some(lo)) = (server(r, "used_memory_max"), server(r, "used_memory_min"))
        else {
            continue;
        };
        let Some(p) = peak else {
            peak = Some(hi);
            continue;
        };
        if p - lo > threshold {
            match current {
                Some(start) => {
                    if let Some(last) = drops.last_mut() {
                        last.1 = last.1.max(start - lo);
                    }
                }
                None => {
                    current = Some(p);
                    drops.push((i, p - lo));
                }
            }
            peak = Some(lo);
        } else {
            current = None;
            peak = Some(p.max(hi));
        }
    }
    let amp = mean(&drops.iter().map(|d| d.1).collect::<Vec<_>>());
    let periods: Vec<f64> = drops.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    (drops.len(), amp, mean(&periods))
}

/// Computes the summary of a run.
pub fn summarize(run: &RunOutput) -> Summary {
    let rows = &run.rows;
    let total = run.total();
    let secs = rows.len().max(1) as f64;
    let mut items = Vec::new();
    let mut push = |key, label, value: Option<f64>, unit| {
        items.push(Item {
            key,
            label,
            value,
            unit,
        })
    };

    push("duration", "measured seconds", Some(rows.len() as f64), "s");
    push("ops", "successful requests", Some(total.ops as f64), "");
    push(
        "ops_per_sec",
        "throughput (mean)",
        Some(total.ops as f64 / secs),
        "ops/s",
    );
    push("rate", "open-loop target rate", run.rate, "ops/s");
    push(
        "errors",
        "errors (all kinds)",
        Some(total.error_total() as f64),
        "",
    );
    push("p50", "latency p50", Some(total.latency_ms(0.5)), "ms");
    push("p99", "latency p99", Some(total.latency_ms(0.99)), "ms");
    push("p999", "latency p99.9", Some(total.latency_ms(0.999)), "ms");
    push("max", "latency max", Some(total.max_ms()), "ms");
    push(
        "svc_p99",
        "service time p99 (from actual send)",
        Some(total.service_ms(0.99)),
        "ms",
    );
    push(
        "slow_100ms",
        "requests slower than 100 ms",
        Some(total.slow[1] as f64),
        "",
    );
    push(
        "slow_1s",
        "requests slower than 1 s",
        Some(total.slow[2] as f64),
        "",
    );
    let secs_over_100 = rows.iter().filter(|r| r.client.slow[1] > 0).count();
    push(
        "secs_over_100ms",
        "seconds with a request > 100 ms",
        Some(secs_over_100 as f64),
        "s",
    );
    push(
        "hit_ratio",
        "hit ratio (client-observed)",
        total.hit_ratio().map(|h| h * 100.0),
        "%",
    );

    let p99s: Vec<f64> = rows
        .iter()
        .filter(|r| r.client.ops > 0)
        .map(|r| r.client.latency_ms(0.99))
        .collect();
    push(
        "p99_sec_median",
        "per-second p99, median second",
        median(&p99s),
        "ms",
    );
    push(
        "p99_sec_worst",
        "per-second p99, worst second",
        p99s.iter()
            .cloned()
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x)))),
        "ms",
    );

    // Eviction phases: before the first eviction, bursts, steady eviction.
    let ev: Vec<f64> = rows
        .iter()
        .map(|r| server(r, "evicted_keys").unwrap_or(0.0))
        .collect();
    let first_ev = ev.iter().position(|&e| e > 0.0);
    let bursts = burst_seconds(&ev);
    let is_burst = |i: usize| bursts.binary_search(&i).is_ok();
    let before: Vec<usize> = (0..rows.len())
        .filter(|&i| first_ev.is_none_or(|f| i < f))
        .collect();
    let steady: Vec<usize> = (0..rows.len())
        .filter(|&i| first_ev.is_some_and(|f| i >= f) && !is_burst(i))
        .collect();
    let ops_of = |ix: &[usize]| {
        mean(
            &ix.iter()
                .map(|&i| rows[i].client.ops as f64)
                .collect::<Vec<_>>(),
        )
    };
    let p99_of = |ix: &[usize]| {
        median(
            &ix.iter()
                .filter(|&&i| rows[i].client.ops > 0)
                .map(|&i| rows[i].client.latency_ms(0.99))
                .collect::<Vec<_>>(),
        )
    };
    let worst_of = |ix: &[usize], f: &dyn Fn(&Row) -> f64| {
        ix.iter()
            .map(|&i| f(&rows[i]))
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
    };

    push("evicted", "keys evicted", Some(ev.iter().sum()), "");
    push(
        "evicted_peak",
        "peak evictions per second",
        ev.iter()
            .cloned()
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x)))),
        "keys/s",
    );
    push(
        "first_eviction_s",
        "second of first eviction",
        first_ev.map(|f| f as f64 + 1.0),
        "s",
    );
    push(
        "burst_secs",
        "eviction-burst seconds (≥3× median rate since the first)",
        Some(bursts.len() as f64),
        "s",
    );
    push(
        "ops_before_evict",
        "throughput before evictions",
        ops_of(&before),
        "ops/s",
    );
    push(
        "ops_in_bursts",
        "throughput in burst seconds",
        ops_of(&bursts),
        "ops/s",
    );
    push(
        "ops_steady_evict",
        "throughput, other evicting seconds",
        ops_of(&steady),
        "ops/s",
    );
    push(
        "p99_before_evict",
        "p99 before evictions (median second)",
        p99_of(&before),
        "ms",
    );
    push(
        "p99_in_bursts_worst",
        "worst p99 in a burst second",
        worst_of(&bursts, &|r| r.client.latency_ms(0.99)),
        "ms",
    );
    push(
        "max_in_bursts",
        "max latency in burst seconds",
        worst_of(&bursts, &|r| r.client.max_ms()),
        "ms",
    );

    let maxmem = rows
        .iter()
        .filter_map(|r| server(r, "maxmemory"))
        .fold(0.0, f64::max);
    let threshold = if maxmem > 0.0 {
        maxmem * 0.02
    } else {
        4.0 * 1048576.0
    };
    let (drops, amp, period) = sawtooth(rows, threshold);
    push(
        "used_memory_peak",
        "peak used_memory",
        peak_mb(rows, "used_memory_max"),
        "MB",
    );
    push(
        "rss_peak",
        "peak used_memory_rss (last sample of each second)",
        peak_mb(rows, "used_memory_rss"),
        "MB",
    );
    push(
        "maxmemory",
        "maxmemory",
        (maxmem > 0.0).then_some(maxmem / 1048576.0),
        "MB",
    );
    push(
        "clients_mem_peak",
        "peak mem_clients_normal",
        peak_mb(rows, "mem_clients_normal"),
        "MB",
    );
    push(
        "sawtooth_drops",
        "memory drops > 2% of maxmemory",
        Some(drops as f64),
        "",
    );
    push(
        "sawtooth_amplitude",
        "mean drop amplitude",
        amp.map(|a| a / 1048576.0),
        "MB",
    );
    push("sawtooth_period", "mean period between drops", period, "s");

    let bench_cpu: Vec<f64> = rows.iter().filter_map(|r| r.bench_cpu).collect();
    push(
        "bench_cpu",
        "keel-bench CPU (mean, % of one core)",
        mean(&bench_cpu),
        "%",
    );
    let scpu: Vec<f64> = rows
        .iter()
        .filter_map(|r| server(r, "server_cpu_pct"))
        .collect();
    push(
        "server_cpu",
        "server CPU (mean, all threads)",
        mean(&scpu),
        "%",
    );
    let mcpu: Vec<f64> = rows
        .iter()
        .filter_map(|r| server(r, "server_main_cpu_pct"))
        .collect();
    push(
        "server_main_cpu_max",
        "server main thread CPU (worst second)",
        mcpu.iter()
            .cloned()
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x)))),
        "%",
    );
    let (kh, km): (f64, f64) = rows.iter().fold((0.0, 0.0), |(h, m), r| {
        (
            h + server(r, "keyspace_hits").unwrap_or(0.0),
            m + server(r, "keyspace_misses").unwrap_or(0.0),
        )
    });
    push(
        "server_hit_ratio",
        "hit ratio (server keyspace_hits)",
        (kh + km > 0.0).then(|| kh / (kh + km) * 100.0),
        "%",
    );
    if let Some(s) = &run.scan {
        push(
            "expired_overhead",
            "expired-key overhead (dataset, full SCAN)",
            s.overhead().map(|o| o * 100.0),
            "%",
        );
        push(
            "dataset_before_scan",
            "used_memory_dataset before SCAN",
            s.dataset_before.map(|b| b / 1048576.0),
            "MB",
        );
        push(
            "dataset_after_scan",
            "used_memory_dataset after SCAN",
            s.dataset_after.map(|b| b / 1048576.0),
            "MB",
        );
        push("keys_before_scan", "keys before SCAN", s.keys_before, "");
        push("keys_after_scan", "keys after SCAN", s.keys_after, "");
        push("scan_seconds", "SCAN duration", Some(s.seconds), "s");
    }
    let stale = rows
        .iter()
        .rev()
        .find_map(|r| server(r, "expired_stale_perc"));
    push(
        "expired_stale_perc",
        "server's expired_stale_perc (last)",
        stale,
        "%",
    );
    Summary {
        items,
        errors: total.errors.clone(),
    }
}

/// Formats a value for tables.
pub fn fmt_value(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".to_string(),
        Some(x) if unit == "ms" && x < 10.0 => format!("{x:.3}"),
        Some(x) if x.fract() == 0.0 || x.abs() >= 1000.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// The summary as plain text.
pub fn render(run: &RunOutput, s: &Summary) -> String {
    let mut out = format!(
        "== summary: {} against {} ({})\n",
        run.scenario, run.name, run.addr
    );
    for it in &s.items {
        if it.value.is_none() {
            continue;
        }
        out.push_str(&format!(
            "  {:<44} {:>14} {}\n",
            it.label,
            fmt_value(it.value, it.unit),
            it.unit
        ));
    }
    if s.errors.is_empty() {
        out.push_str("  errors by kind: none\n");
    } else {
        out.push_str("  errors by kind:\n");
        for (k, v) in &s.errors {
            let ex = run
                .error_examples
                .get(k)
                .map(|m| format!("  (e.g. \"{m}\")"))
                .unwrap_or_default();
            out.push_str(&format!("    {k:<28} {v:>10}{ex}\n"));
        }
    }
    if run.sampler_failures.0 > 0 {
        out.push_str(&format!(
            "  INFO sampler: {} failed polls (last: {})\n",
            run.sampler_failures.0,
            run.sampler_failures.1.clone().unwrap_or_default()
        ));
    }
    for n in &run.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Interval, ServerSecond};

    fn row(t: u64, lo: f64, hi: f64) -> Row {
        let mut s = ServerSecond::default();
        s.values.insert("used_memory_min", lo);
        s.values.insert("used_memory_max", hi);
        Row {
            t,
            client: Interval::default(),
            server: s,
            bench_cpu: None,
            backlog: 0,
        }
    }

    #[test]
    fn bursts_stand_out_whether_eviction_is_steady_or_only_in_bursts() {
        // Evictions only in bursts (the storm run that found none before).
        let bursty = [0., 0., 239_000., 12_000., 0., 0., 0., 0., 150_000., 0., 0.];
        assert_eq!(burst_seconds(&bursty), vec![2, 3, 8]);
        // Steady eviction with one spike: only the spike.
        let steady = [0., 16_000., 15_000., 17_000., 90_000., 16_000., 15_500.];
        assert_eq!(burst_seconds(&steady), vec![4]);
        assert!(burst_seconds(&[0., 0., 0.]).is_empty());
    }

    #[test]
    fn sawtooth_finds_drops_amplitude_and_period() {
        // Climb to 100, drop to 60 at t=3, climb, drop to 50 at t=8.
        let mem = [
            (80., 90.),
            (90., 100.),
            (100., 100.),
            (60., 100.),
            (60., 70.),
            (70., 80.),
            (80., 95.),
            (95., 100.),
            (50., 100.),
            (50., 60.),
        ];
        let rows: Vec<Row> = mem
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| row(i as u64, *lo, *hi))
            .collect();
        let (n, amp, period) = sawtooth(&rows, 10.0);
        assert_eq!(n, 2);
        assert_eq!(amp, Some(45.0));
        assert_eq!(period, Some(5.0));
        let flat: Vec<Row> = (0..10).map(|i| row(i, 99.0, 100.0)).collect();
        assert_eq!(sawtooth(&flat, 10.0).0, 0);
    }

    #[test]
    fn peaks_skip_seconds_the_server_did_not_report() {
        let mut rows: Vec<Row> = (0..4).map(|t| row(t, 0.0, 0.0)).collect();
        for (r, rss) in rows.iter_mut().zip([Some(3.0), None, Some(5.0), Some(4.0)]) {
            if let Some(mb) = rss {
                r.server.values.insert("used_memory_rss", mb * 1048576.0);
            }
        }
        assert_eq!(peak_mb(&rows, "used_memory_rss"), Some(5.0));
        assert_eq!(peak_mb(&rows, "mem_clients_normal"), None);
    }
}
