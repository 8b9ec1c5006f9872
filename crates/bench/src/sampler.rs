//! The server sampler: `INFO` every 250 ms on its own connection, so the
//! timeline shows memory, evictions and expirations beside client latency.
//!
//! It never shares a connection with the load (a stalled load connection
//! must not stall the sampler), tolerates servers that lack any field
//! (the cell stays empty), and survives reconnects. Counters are turned
//! into per-second rates from consecutive samples.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::{frame_text, Client, Target};
use crate::timeline::ServerSecond;

/// How often INFO is polled.
pub const PERIOD: Duration = Duration::from_millis(250);

/// Instantaneous fields: reported as the last value in each second.
pub const GAUGES: &[&str] = &[
    "used_memory",
    "used_memory_rss",
    "used_memory_dataset",
    "used_memory_overhead",
    "maxmemory",
    "mem_clients_normal",
    "connected_clients",
    "blocked_clients",
    "clients_in_timeout_table",
    "instantaneous_ops_per_sec",
    "mem_fragmentation_ratio",
    "expired_stale_perc",
    "db_keys",
    "db_expires",
];

/// Monotonic counters: reported as a per-second rate.
pub const COUNTERS: &[&str] = &[
    "evicted_keys",
    "expired_keys",
    "keyspace_hits",
    "keyspace_misses",
    "evicted_clients",
    "total_commands_processed",
    "used_cpu",
    "used_cpu_main_thread",
];

/// One INFO reading.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When the reply arrived.
    pub at: Instant,
    /// Field → value for every field the server reported.
    pub values: BTreeMap<&'static str, f64>,
}

/// Parses INFO text into the fields keel-bench knows, summing every `dbN`
/// keyspace line and the user/system CPU pairs. Unknown fields are ignored.
pub fn parse_info(text: &str) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    let mut raw: BTreeMap<&str, f64> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k.starts_with("db") && k[2..].chars().all(|c| c.is_ascii_digit()) && k.len() > 2 {
            for part in v.split(',') {
                if let Some((name, n)) = part.split_once('=') {
                    let n: f64 = n.parse().unwrap_or(0.0);
                    match name {
                        "keys" => *out.entry("db_keys").or_insert(0.0) += n,
                        "expires" => *out.entry("db_expires").or_insert(0.0) += n,
                        _ => {}
                    }
                }
            }
            continue;
        }
        if let Ok(n) = v.trim().trim_end_matches('%').parse::<f64>() {
            raw.insert(k, n);
        }
    }
    for &f in GAUGES.iter().chain(COUNTERS) {
        if let Some(v) = raw.get(f) {
            out.insert(f, *v);
        }
    }
    if let (Some(s), Some(u)) = (raw.get("used_cpu_sys"), raw.get("used_cpu_user")) {
        out.insert("used_cpu", s + u);
    }
    if let (Some(s), Some(u)) = (
        raw.get("used_cpu_sys_main_thread"),
        raw.get("used_cpu_user_main_thread"),
    ) {
        out.insert("used_cpu_main_thread", s + u);
    }
    out
}

/// A running sampler; samples accumulate until the run collects them.
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    failures: Arc<AtomicU64>,
    last_error: Arc<Mutex<Option<String>>>,
    handle: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts polling `target`. `maxmemory` from `CONFIG GET` fills in for
    /// servers whose INFO lacks it.
    pub fn start(target: Target) -> Sampler {
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(AtomicU64::new(0));
        let last_error: Arc<Mutex<Option<String>>> = Arc::default();
        let (s2, stop2, f2, e2) = (
            samples.clone(),
            stop.clone(),
            failures.clone(),
            last_error.clone(),
        );
        let handle = tokio::spawn(async move {
            let mut client: Option<Client> = None;
            let mut config_maxmemory: Option<f64> = None;
            let mut tick = tokio::time::interval(PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !stop2.load(Ordering::Relaxed) {
                tick.tick().await;
                if client.is_none() {
                    match Client::open(&target, Duration::from_secs(2)).await {
                        Ok(mut c) => {
                            if let Ok(keel_resp::Frame::Array(items)) =
                                c.call(&["CONFIG", "GET", "maxmemory"]).await
                            {
                                config_maxmemory = items
                                    .get(1)
                                    .and_then(frame_text)
                                    .and_then(|t| t.parse().ok());
                            }
                            client = Some(c);
                        }
                        Err(e) => {
                            f2.fetch_add(1, Ordering::Relaxed);
                            *e2.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                            continue;
                        }
                    }
                }
                let c = client.as_mut().expect("connected above");
                match c.call(&["INFO"]).await {
                    Ok(frame) => {
                        let Some(text) = frame_text(&frame) else {
                            f2.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        let mut values = parse_info(&text);
                        if !values.contains_key("maxmemory") {
                            if let Some(m) = config_maxmemory {
                                values.insert("maxmemory", m);
                            }
                        }
                        s2.lock().unwrap_or_else(|p| p.into_inner()).push(Sample {
                            at: Instant::now(),
                            values,
                        });
                    }
                    Err(e) => {
                        f2.fetch_add(1, Ordering::Relaxed);
                        *e2.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                        client = None;
                    }
                }
            }
        });
        Sampler {
            samples,
            stop,
            failures,
            last_error,
            handle,
        }
    }

    /// A copy of all samples so far.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The most recent sample, for the progress line.
    pub fn latest(&self) -> Option<Sample> {
        self.samples
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// Failed polls, and the last failure's message.
    pub fn failures(&self) -> (u64, Option<String>) {
        (
            self.failures.load(Ordering::Relaxed),
            self.last_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }

    /// Stops polling and waits (briefly) for the task to end.
    pub async fn stop(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.samples.clone();
        let _ = tokio::time::timeout(Duration::from_secs(3), self.handle).await;
        let out = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
        out
    }
}

/// Summarises the samples that fall in `(from, to]` into one row: gauges
/// as the last value (and `used_memory` also as min/max), counters as a
/// rate between the last sample before `from` and the last before `to`.
pub fn second(samples: &[Sample], from: Instant, to: Instant) -> ServerSecond {
    let mut out = ServerSecond::default();
    let inside: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.at > from && s.at <= to)
        .collect();
    let Some(last) = inside.last() else {
        return out;
    };
    for &g in GAUGES {
        if let Some(v) = last.values.get(g) {
            out.values.insert(g, *v);
        }
    }
    let mem: Vec<f64> = inside
        .iter()
        .filter_map(|s| s.values.get("used_memory").copied())
        .collect();
    if !mem.is_empty() {
        out.values.insert(
            "used_memory_min",
            mem.iter().cloned().fold(f64::MAX, f64::min),
        );
        out.values
            .insert("used_memory_max", mem.iter().cloned().fold(0.0, f64::max));
    }
    let before = samples.iter().rev().find(|s| s.at <= from);
    let base = before.unwrap_or(inside[0]);
    let dt = last.at.duration_since(base.at).as_secs_f64();
    if dt > 0.0 {
        for &c in COUNTERS {
            if let (Some(a), Some(b)) = (base.values.get(c), last.values.get(c)) {
                if b >= a {
                    let rate = (b - a) / dt;
                    let name: &'static str = match c {
                        "used_cpu" => "server_cpu_pct",
                        "used_cpu_main_thread" => "server_main_cpu_pct",
                        other => other,
                    };
                    let rate = if name.ends_with("_pct") {
                        rate * 100.0
                    } else {
                        rate
                    };
                    out.values.insert(name, rate);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_parsing_tolerates_missing_and_odd_fields() {
        let text = "# Memory\r\nused_memory:1000\r\nused_memory_human:1K\r\nmaxmemory:5000\r\n\
                    expired_stale_perc:12.5\r\nused_cpu_sys:1.5\r\nused_cpu_user:2.0\r\n\
                    # Keyspace\r\ndb0:keys=10,expires=4,avg_ttl=0\r\ndb2:keys=5,expires=1\r\n";
        let v = parse_info(text);
        assert_eq!(v["used_memory"], 1000.0);
        assert_eq!(v["maxmemory"], 5000.0);
        assert_eq!(v["expired_stale_perc"], 12.5);
        assert_eq!(v["used_cpu"], 3.5);
        assert_eq!(v["db_keys"], 15.0);
        assert_eq!(v["db_expires"], 5.0);
        assert!(!v.contains_key("evicted_keys"));
        assert!(parse_info("").is_empty());
    }

    #[test]
    fn counters_become_rates() {
        let t0 = Instant::now();
        let mk = |ms: u64, ev: f64, mem: f64| Sample {
            at: t0 + Duration::from_millis(ms),
            values: [("evicted_keys", ev), ("used_memory", mem)]
                .into_iter()
                .collect(),
        };
        let samples = vec![
            mk(0, 100.0, 10.0),
            mk(250, 150.0, 30.0),
            mk(500, 200.0, 5.0),
            mk(1000, 300.0, 20.0),
        ];
        let s = second(&samples, t0, t0 + Duration::from_secs(1));
        assert_eq!(s.values["evicted_keys"], 200.0);
        assert_eq!(s.values["used_memory"], 20.0);
        assert_eq!(s.values["used_memory_min"], 5.0);
        assert_eq!(s.values["used_memory_max"], 30.0);
        let empty = second(
            &samples,
            t0 + Duration::from_secs(5),
            t0 + Duration::from_secs(6),
        );
        assert!(empty.values.is_empty());
    }
}
