//! The latency monitor (LATENCY LATEST, HISTORY, RESET, GRAPH, DOCTOR):
//! Redis's `latency.c`, the record of latency spikes by event.
//!
//! An event that lasts at least `latency-monitor-threshold` milliseconds
//! (0 turns the monitor off) is a spike, and goes to its event's time
//! series: the latest [`SAMPLES`] seconds that had one, each holding the
//! worst spike of its second, plus the worst spike ever. A new spike in the
//! second of the latest sample only raises that sample, so a burst costs
//! one slot, and the series is a ring, so it never grows: the memory is
//! 160 samples per event name, and names are a fixed set.
//!
//! Events, as Redis names them where Redis has them:
//! - `command`: a command without the `fast` flag; `fast-command`: one with
//!   it (timed as the slow log times it, a blocked command once served);
//! - `expire-cycle`: one bounded pass of active expiry (Redis times a
//!   whole cycle; keel's cycle is a series of passes, each timed alone);
//! - `eviction-cycle`: one slice of background eviction.
//!
//! And keel's own, with the `keel-` prefix its latency histograms use:
//! - `keel-lazyfree`: dropping one large value on the lazyfree thread;
//! - `keel-backpressure-pause`: one connection waiting for the client
//!   budget (`maxmemory-clients`) before its next read.
//!
//! Time is passed in by the callers (Unix seconds), so tests need no
//! clock. Samples are taken under one mutex, only for spikes, which are
//! rare by definition: the common path is one relaxed load of the
//! threshold.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// Samples a time series keeps (Redis's `LATENCY_TS_LEN`).
pub const SAMPLES: usize = 160;

/// Columns of a LATENCY GRAPH (Redis's `LATENCY_GRAPH_COLS`).
const GRAPH_COLUMNS: usize = 80;

/// Rows of a LATENCY GRAPH's bars.
const GRAPH_ROWS: usize = 4;

/// One second's worst spike.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Unix seconds; 0 for a slot never used.
    pub time: u64,
    /// Milliseconds.
    pub latency: u64,
}

/// An event's time series.
#[derive(Clone, Debug)]
pub struct Series {
    samples: [Sample; SAMPLES],
    /// Where the next sample goes.
    next: usize,
    /// The worst spike ever, in milliseconds.
    pub max: u64,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            samples: [Sample::default(); SAMPLES],
            next: 0,
            max: 0,
        }
    }
}

impl Series {
    fn add(&mut self, latency: u64, now_secs: u64) {
        self.max = self.max.max(latency);
        let latest = &mut self.samples[(self.next + SAMPLES - 1) % SAMPLES];
        if latest.time == now_secs {
            latest.latency = latest.latency.max(latency);
            return;
        }
        self.samples[self.next] = Sample {
            time: now_secs,
            latency,
        };
        self.next = (self.next + 1) % SAMPLES;
    }

    /// The latest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.next + SAMPLES - 1) % SAMPLES]
    }

    /// The samples taken, oldest first.
    pub fn history(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..SAMPLES)
            .map(|j| self.samples[(self.next + j) % SAMPLES])
            .filter(|s| s.time != 0)
    }
}

/// Every event's time series and the threshold.
#[derive(Default)]
pub struct LatencyMonitor {
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Series>>,
}

impl LatencyMonitor {
    /// Sets `latency-monitor-threshold`.
    pub fn set_threshold_ms(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// The threshold in milliseconds; 0 when the monitor is off.
    pub fn threshold_ms(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Records `event` taking `elapsed` at `now_secs`, if that is a spike.
    /// Every command passes here: with the monitor off (its default) that
    /// costs one load and one comparison.
    pub fn observe(&self, event: &'static str, elapsed: Duration, now_secs: u64) {
        let threshold = self.threshold_ms();
        if threshold > 0 && elapsed >= Duration::from_millis(threshold) {
            self.record_spike(event, elapsed, now_secs);
        }
    }

    #[cold]
    fn record_spike(&self, event: &'static str, elapsed: Duration, now_secs: u64) {
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.events
            .lock()
            .entry(event)
            .or_default()
            .add(ms, now_secs);
    }

    /// Every event's series, by name.
    pub fn events(&self) -> Vec<(&'static str, Series)> {
        let events = self.events.lock();
        events.iter().map(|(name, s)| (*name, s.clone())).collect()
    }

    /// The series of `event`, if it had a spike.
    pub fn series(&self, event: &[u8]) -> Option<Series> {
        let events = self.events.lock();
        let name = std::str::from_utf8(event).ok()?;
        events.get(name).cloned()
    }

    /// LATENCY RESET: forgets the named events (every event without
    /// names); returns how many were forgotten.
    pub fn reset(&self, events: &[&[u8]]) -> usize {
        let mut all = self.events.lock();
        if events.is_empty() {
            let count = all.len();
            all.clear();
            return count;
        }
        events
            .iter()
            .filter_map(|e| std::str::from_utf8(e).ok())
            .filter(|e| all.remove::<str>(e).is_some())
            .count()
    }
}

/// LATENCY GRAPH: the series as Redis draws it, a header, a rule, then
/// bars of `_`, `o`, `#` and `|` over labels saying how long ago each
/// sample was (`12s`, `3m`, `1h`, `2d`), read downwards.
pub fn graph(event: &str, series: &Series, now_secs: u64) -> String {
    let samples: Vec<(u64, String)> = series
        .history()
        .map(|s| (s.latency, age_label(now_secs.saturating_sub(s.time))))
        .collect();
    let low = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let high = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let mut out = format!(
        "{event} - high {high} ms, low {low} ms (all time high {} ms)\n",
        series.max
    );
    out.push_str(&"-".repeat(GRAPH_COLUMNS));
    out.push('\n');
    for (n, chunk) in samples.chunks(GRAPH_COLUMNS).enumerate() {
        if n > 0 {
            out.push('\n');
        }
        draw(&mut out, chunk, low, high);
    }
    out
}

/// How long ago, as Redis labels a graph's samples.
fn age_label(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// Draws one stretch of samples as Redis's sparkline with filled bars:
/// each sample's height in steps of a third of a row, `_`, `o` and `#`
/// topping its bar and `|` below, then one blank row and its label read
/// top to bottom.
fn draw(out: &mut String, samples: &[(u64, String)], low: u64, high: u64) {
    const TOPS: [char; 3] = ['_', 'o', '#'];
    let steps = (TOPS.len() * GRAPH_ROWS) as i64;
    let range = match high - low {
        0 => 1.0,
        range => range as f64,
    };
    let heights: Vec<i64> = samples
        .iter()
        .map(|(value, _)| {
            let step = ((value - low) as f64 * steps as f64 / range) as i64;
            step.clamp(0, steps - 1)
        })
        .collect();
    for row in 0..GRAPH_ROWS as i64 {
        for &step in &heights {
            let top = step - (GRAPH_ROWS as i64 - row - 1) * TOPS.len() as i64;
            out.push(match top {
                t if t < 0 => ' ',
                t if t < TOPS.len() as i64 => TOPS[t as usize],
                _ => '|',
            });
        }
        out.push('\n');
    }
    let label_rows = samples.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    if label_rows > 0 {
        out.push_str(&" ".repeat(samples.len()));
        out.push('\n');
    }
    for row in 0..label_rows {
        for (_, label) in samples {
            out.push(label.as_bytes().get(row).map_or(' ', |&b| b as char));
        }
        out.push('\n');
    }
}

/// One event's statistics for the DOCTOR report (Redis's
/// `analyzeLatencyForEvent`).
struct Analysis {
    samples: u64,
    average: u64,
    mean_deviation: u64,
    /// Seconds from the oldest sample to now, at least 1.
    period: u64,
}

fn analyze(series: &Series, now_secs: u64) -> Analysis {
    let samples: Vec<Sample> = series.history().collect();
    let count = samples.len() as u64;
    let sum: u64 = samples.iter().map(|s| s.latency).sum();
    let average = sum.checked_div(count).unwrap_or(0);
    let oldest = samples.iter().map(|s| s.time).min().unwrap_or(now_secs);
    let deviation: u64 = samples.iter().map(|s| s.latency.abs_diff(average)).sum();
    Analysis {
        samples: count,
        average,
        mean_deviation: deviation.checked_div(count).unwrap_or(0),
        period: now_secs.saturating_sub(oldest).max(1),
    }
}

/// What DOCTOR knows of the server beside the events.
pub struct DoctorContext {
    /// `latency-monitor-threshold`.
    pub threshold_ms: u64,
    /// `slowlog-log-slower-than`, in microseconds.
    pub slowlog_slower_than_usec: i64,
    /// `slowlog-max-len`.
    pub slowlog_max_len: u64,
}

/// LATENCY DOCTOR: Redis's report, in its words, for the events keel has;
/// the advice Redis gives about forks, AOF, disks, transparent huge pages
/// and `hz` is left out, as keel has none of them.
pub fn doctor(events: &[(&str, Series)], server: &DoctorContext, now_secs: u64) -> String {
    if events.is_empty() && server.threshold_ms == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".into();
    }
    if events.is_empty() {
        return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n".into();
    }
    let mut report = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n",
    );
    let mut advice = Advice::default();
    for (n, (event, series)) in events.iter().enumerate() {
        let a = analyze(series, now_secs);
        let _ = writeln!(
            report,
            "{}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            n + 1,
            a.samples,
            a.average,
            a.mean_deviation,
            a.period as f64 / a.samples.max(1) as f64,
            series.max,
        );
        advice.note(event, server);
    }
    match advice.any() {
        false => report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n"),
        true => {
            report.push_str("\nI have a few advices for you:\n\n");
            advice.write(&mut report, server);
        }
    }
    report
}

/// The advice DOCTOR gives, gathered from the events.
#[derive(Default)]
struct Advice {
    enable_slowlog: bool,
    tune_slowlog: bool,
    inspect_slowlog: bool,
    scheduler: bool,
    large_objects: bool,
    mass_eviction: bool,
    backpressure: bool,
}

impl Advice {
    fn note(&mut self, event: &str, server: &DoctorContext) {
        match event {
            "command" => {
                if server.slowlog_slower_than_usec < 0 || server.slowlog_max_len == 0 {
                    self.enable_slowlog = true;
                } else if server.slowlog_slower_than_usec / 1000 > server.threshold_ms as i64 {
                    self.tune_slowlog = true;
                }
                self.inspect_slowlog = true;
                self.large_objects = true;
            }
            "fast-command" => self.scheduler = true,
            "expire-cycle" | "keel-lazyfree" => self.large_objects = true,
            "eviction-cycle" => self.mass_eviction = true,
            "keel-backpressure-pause" => self.backpressure = true,
            _ => {}
        }
    }

    fn any(&self) -> bool {
        self.enable_slowlog
            || self.tune_slowlog
            || self.inspect_slowlog
            || self.scheduler
            || self.large_objects
            || self.mass_eviction
            || self.backpressure
    }

    fn write(&self, report: &mut String, server: &DoctorContext) {
        let threshold_usec = server.threshold_ms.saturating_mul(1000);
        if self.enable_slowlog {
            let _ = writeln!(report, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_usec}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.");
        }
        if self.tune_slowlog {
            let _ = writeln!(report, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_usec}'.");
        }
        if self.inspect_slowlog {
            report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if self.scheduler {
            report.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
        }
        if self.large_objects {
            report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if self.mass_eviction {
            report.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
        }
        if self.backpressure {
            report.push_str("- Connections waited for the client budget (maxmemory-clients) before reading more requests: clients together buffered more than it allows. Raise 'maxmemory-clients', or have clients pipeline less or read their replies sooner.\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn only_spikes_are_kept_one_sample_per_second() {
        let monitor = LatencyMonitor::default();
        monitor.observe("command", ms(500), 100);
        assert!(monitor.events().is_empty(), "the monitor is off at 0");
        monitor.set_threshold_ms(100);
        monitor.observe("command", ms(99), 100);
        assert!(monitor.events().is_empty(), "under the threshold");
        monitor.observe("command", ms(150), 100);
        monitor.observe("command", ms(300), 100);
        monitor.observe("command", ms(120), 100);
        monitor.observe("command", ms(200), 101);
        let series = monitor.series(b"command").unwrap();
        let history: Vec<(u64, u64)> = series.history().map(|s| (s.time, s.latency)).collect();
        assert_eq!(history, [(100, 300), (101, 200)]);
        assert_eq!((series.latest().latency, series.max), (200, 300));
    }

    #[test]
    fn a_series_keeps_its_latest_samples() {
        let monitor = LatencyMonitor::default();
        monitor.set_threshold_ms(1);
        for second in 1..=200 {
            monitor.observe("fast-command", ms(second), second);
        }
        let series = monitor.series(b"fast-command").unwrap();
        let times: Vec<u64> = series.history().map(|s| s.time).collect();
        assert_eq!(times, (41..=200).collect::<Vec<_>>());
        assert_eq!(series.max, 200);
    }

    #[test]
    fn reset_forgets_named_events_or_all() {
        let monitor = LatencyMonitor::default();
        monitor.set_threshold_ms(1);
        monitor.observe("command", ms(5), 1);
        monitor.observe("expire-cycle", ms(5), 1);
        assert_eq!(monitor.reset(&[b"nosuch", b"command"]), 1);
        assert_eq!(monitor.reset(&[]), 1);
        assert!(monitor.events().is_empty());
    }

    #[test]
    fn graph_draws_as_redis_does() {
        let monitor = LatencyMonitor::default();
        monitor.set_threshold_ms(1);
        for (second, latency) in [(10, 100), (11, 200), (12, 400), (13, 300)] {
            monitor.observe("command", ms(latency), second);
        }
        let series = monitor.series(b"command").unwrap();
        let expected = "command - high 400 ms, low 100 ms (all time high 400 ms)\n".to_string()
            + &"-".repeat(80)
            + "\n  # \n  |#\n o||\n_|||\n    \n6543\nssss\n";
        assert_eq!(graph("command", &series, 16), expected);
    }

    #[test]
    fn doctor_reports_events_and_advice() {
        let context = |threshold_ms| DoctorContext {
            threshold_ms,
            slowlog_slower_than_usec: 10_000,
            slowlog_max_len: 128,
        };
        assert!(doctor(&[], &context(0), 0).starts_with("I'm sorry, Dave"));
        assert!(doctor(&[], &context(5), 0).starts_with("Dave, no latency spike"));
        let monitor = LatencyMonitor::default();
        monitor.set_threshold_ms(1);
        monitor.observe("command", ms(300), 90);
        monitor.observe("command", ms(100), 95);
        let report = doctor(&monitor.events(), &context(1), 100);
        assert!(report.contains(
            "1. command: 2 latency spikes (average 200ms, mean deviation 100ms, period 5.00 sec). Worst all time event 300ms."
        ));
        assert!(report.contains("'CONFIG SET slowlog-log-slower-than 1000'"));
    }
}
