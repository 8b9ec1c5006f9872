//! Latency histograms and the per-second timeline.
//!
//! Connections record into a few mutex-guarded shards (one lock per batch of
//! replies, so the lock is cheap and rarely contended); once a second the
//! run loop swaps every shard out and folds it into one [`Interval`], which
//! becomes one CSV row. HDR histograms keep p99.9 and max exact to 3
//! significant digits instead of averaging them away.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;

/// Highest latency a histogram tracks exactly, in microseconds (100 s);
/// longer ones are clamped to it, and still counted.
pub const MAX_TRACKABLE_US: u64 = 100_000_000;

/// A fresh microsecond histogram with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3).expect("valid histogram bounds")
}

/// Everything observed during one interval (a second, or the whole run).
#[derive(Clone, Debug)]
pub struct Interval {
    /// Latency from the intended send time (the number users feel).
    pub latency: Histogram<u64>,
    /// Latency from the actual send time (what a closed-loop tool reports).
    pub service: Histogram<u64>,
    /// Successful replies.
    pub ops: u64,
    /// Requests written to a socket.
    pub sent: u64,
    /// Read replies that found their key(s).
    pub hits: u64,
    /// Read replies that found nothing.
    pub misses: u64,
    /// Replies slower than 10 ms, 100 ms, 1 s (from intended send time).
    pub slow: [u64; 3],
    /// Errors by kind: server error prefixes (`OOM`, `ERR`, …), `timeout`,
    /// `connect refused`, `connection lost`, `unfinished at end`, …
    pub errors: BTreeMap<String, u64>,
}

impl Default for Interval {
    fn default() -> Self {
        Interval {
            latency: new_histogram(),
            service: new_histogram(),
            ops: 0,
            sent: 0,
            hits: 0,
            misses: 0,
            slow: [0; 3],
            errors: BTreeMap::new(),
        }
    }
}

impl Interval {
    /// Records one successful reply.
    #[inline]
    pub fn record(&mut self, latency: Duration, service: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_TRACKABLE_US);
        let svc = (service.as_micros() as u64).clamp(1, MAX_TRACKABLE_US);
        self.latency.saturating_record(us);
        self.service.saturating_record(svc);
        self.ops += 1;
        if us >= 10_000 {
            self.slow[0] += 1;
            if us >= 100_000 {
                self.slow[1] += 1;
                if us >= 1_000_000 {
                    self.slow[2] += 1;
                }
            }
        }
    }

    /// Counts `n` errors of `kind`.
    pub fn error(&mut self, kind: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.errors.get_mut(kind) {
            Some(c) => *c += n,
            None => {
                self.errors.insert(kind.to_string(), n);
            }
        }
    }

    /// Total errors of all kinds.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds another interval into this one.
    pub fn merge(&mut self, other: &Interval) {
        self.latency.add(&other.latency).expect("same bounds");
        self.service.add(&other.service).expect("same bounds");
        self.ops += other.ops;
        self.sent += other.sent;
        self.hits += other.hits;
        self.misses += other.misses;
        for i in 0..3 {
            self.slow[i] += other.slow[i];
        }
        for (k, v) in &other.errors {
            self.error(k, *v);
        }
    }

    /// Latency at `q` (0..=1) in milliseconds; 0 when nothing was recorded.
    pub fn latency_ms(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            0.0
        } else {
            self.latency.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// Largest latency in milliseconds.
    pub fn max_ms(&self) -> f64 {
        self.latency.max() as f64 / 1000.0
    }

    /// Service time at `q` in milliseconds.
    pub fn service_ms(&self, q: f64) -> f64 {
        if self.service.is_empty() {
            0.0
        } else {
            self.service.value_at_quantile(q) as f64 / 1000.0
        }
    }

    /// Hit ratio of read commands, if any read happened.
    pub fn hit_ratio(&self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }
}

/// The shards connections record into. Cloning shares them.
#[derive(Clone)]
pub struct Recorder {
    shards: Arc<Vec<Mutex<Interval>>>,
    examples: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Recorder {
    /// `n` shards; about four per runtime thread keeps contention negligible.
    pub fn new(n: usize) -> Self {
        Recorder {
            shards: Arc::new(
                (0..n.max(1))
                    .map(|_| Mutex::new(Interval::default()))
                    .collect(),
            ),
            examples: Arc::default(),
        }
    }

    /// Keeps the first full message seen for an error kind, so the operator
    /// reads "OOM command not allowed when used memory > 'maxmemory'", not
    /// just a counter named OOM.
    pub fn note_example(&self, kind: &str, message: &str) {
        let mut ex = self.examples.lock().unwrap_or_else(|e| e.into_inner());
        if !ex.contains_key(kind) {
            ex.insert(kind.to_string(), message.to_string());
        }
    }

    /// First message of every error kind seen so far.
    pub fn examples(&self) -> BTreeMap<String, String> {
        self.examples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The shard connection `id` records into.
    pub fn shard(&self, id: usize) -> &Mutex<Interval> {
        &self.shards[id % self.shards.len()]
    }

    /// Runs `f` on connection `id`'s shard under its lock.
    #[inline]
    pub fn with<R>(&self, id: usize, f: impl FnOnce(&mut Interval) -> R) -> R {
        let mut guard = self.shard(id).lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// Takes everything recorded since the last call, leaving the shards
    /// empty (histograms are reset in place, not reallocated).
    pub fn take(&self) -> Interval {
        let mut out = Interval::default();
        for shard in self.shards.iter() {
            let mut guard = shard.lock().unwrap_or_else(|e| e.into_inner());
            out.merge(&guard);
            guard.latency.reset();
            guard.service.reset();
            guard.ops = 0;
            guard.sent = 0;
            guard.hits = 0;
            guard.misses = 0;
            guard.slow = [0; 3];
            guard.errors.clear();
        }
        out
    }
}

/// Server-side figures for one second, from the INFO sampler. Every field
/// is optional: a server that lacks a field leaves an empty CSV cell.
#[derive(Clone, Debug, Default)]
pub struct ServerSecond {
    /// Values by field name (see [`crate::sampler::FIELDS`]), already turned
    /// into per-second rates for counters.
    pub values: BTreeMap<&'static str, f64>,
}

/// One second of the run: client interval plus server sample.
#[derive(Clone, Debug)]
pub struct Row {
    /// Seconds since the start of the measured phase (the row covers
    /// `[t-1, t)`).
    pub t: u64,
    /// What the clients saw.
    pub client: Interval,
    /// What the server said.
    pub server: ServerSecond,
    /// keel-bench's own CPU use in this second, percent of one core.
    pub bench_cpu: Option<f64>,
    /// Requests due by the open-loop schedule but not yet sent (0 in the
    /// closed loop): a client-side queue the server never sees.
    pub backlog: u64,
}

/// Reads this process's CPU time (user + system) from /proc, so every run
/// records what the generator itself cost.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields overall.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / clock_ticks_per_second())
}

fn clock_ticks_per_second() -> f64 {
    // USER_HZ is 100 on every Linux architecture keel targets.
    100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_count_slow_requests() {
        let rec = Recorder::new(3);
        for id in 0..30u64 {
            rec.with(id as usize, |i| {
                i.record(Duration::from_millis(id * 50), Duration::from_micros(100));
                i.sent += 1;
            });
        }
        rec.with(1, |i| i.error("OOM", 2));
        rec.with(2, |i| i.error("OOM", 1));
        let got = rec.take();
        assert_eq!(got.ops, 30);
        assert_eq!(got.sent, 30);
        assert_eq!(got.slow, [29, 28, 10]);
        assert_eq!(got.errors["OOM"], 3);
        assert!((got.max_ms() - 1450.0).abs() < 2.0);
        assert!(got.service_ms(0.99) < 0.2);
        let empty = rec.take();
        assert_eq!((empty.ops, empty.error_total()), (0, 0));
        assert!(empty.latency.is_empty());
    }

    #[test]
    fn own_cpu_is_readable() {
        assert!(process_cpu_seconds().is_some());
    }
}
