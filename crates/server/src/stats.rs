//! Server statistics for INFO stats, INFO commandstats and the latency
//! histograms (INFO latencystats, LATENCY HISTOGRAM).
//!
//! Counters and histograms are kept per thread and summed when read: each
//! thread writes only its own cache lines, so counting a command costs a
//! few uncontended stores instead of atomic increments that bounce one
//! cache line between cores on every command. The total of processed
//! commands is the sum of per-command calls rather than a counter of its
//! own, and the time spent in expiry and eviction is the sum of their
//! histograms.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;

use crate::cmd::Table;
use crate::latency::{Histogram, Snapshot};

/// Counters of one command (INFO commandstats).
#[derive(Default)]
pub struct CommandStats {
    /// Times it ran.
    pub calls: u64,
    /// Microseconds spent in it.
    pub usec: u64,
    /// Times it was refused before running (arity, auth, OOM).
    pub rejected_calls: u64,
    /// Times it ran and replied with an error.
    pub failed_calls: u64,
}

/// Server-wide counters (INFO stats).
#[derive(Default, Clone, Copy)]
pub struct Totals {
    /// Connections accepted.
    pub connections_received: u64,
    /// Lookups that found their key.
    pub keyspace_hits: u64,
    /// Lookups that did not.
    pub keyspace_misses: u64,
    /// Replies that were errors.
    pub error_replies: u64,
    /// Bytes read from clients.
    pub net_input_bytes: u64,
    /// Bytes written to clients.
    pub net_output_bytes: u64,
    /// Batches of heavy connections that waited for their worker's heavy
    /// lane (see `crate::connection`): how often lighter connections were
    /// served first.
    pub heavy_lane_waits: u64,
    /// Clients closed for passing an output buffer limit.
    pub output_limit_disconnections: u64,
    /// Connections refused at `maxclients`.
    pub rejected_connections: u64,
    /// Commands run.
    pub commands: u64,
    /// Microseconds spent in active expiry passes.
    pub expire_cycle_usec: u64,
    /// Microseconds spent evicting in the background.
    pub eviction_usec: u64,
}

/// Background work whose durations are kept in latency histograms beside
/// the commands'.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Work {
    /// One slice of background eviction (`crate::eviction`).
    EvictionBatch,
    /// One bounded pass of active expiry; a tick runs passes until no
    /// expired key is left.
    ExpirePass,
    /// Dropping one large value on the lazyfree thread.
    LazyFree,
    /// How long one connection waited for the client budget.
    BackpressurePause,
    /// One step of active defragmentation (`crate::defrag`): the longest
    /// a command on one shard waits for it.
    DefragStep,
}

impl Work {
    /// Every kind, in the order reports list them.
    pub const ALL: [Work; 5] = [
        Work::EvictionBatch,
        Work::ExpirePass,
        Work::LazyFree,
        Work::BackpressurePause,
        Work::DefragStep,
    ];

    /// The name LATENCY HISTOGRAM and INFO latencystats give it: `keel-`
    /// and a dash, which no command name has.
    pub fn name(self) -> &'static str {
        match self {
            Work::EvictionBatch => "keel-eviction-batch",
            Work::ExpirePass => "keel-expire-pass",
            Work::LazyFree => "keel-lazyfree",
            Work::BackpressurePause => "keel-backpressure-pause",
            Work::DefragStep => "keel-defrag-step",
        }
    }

    /// The event the latency monitor records its spikes as: Redis's name
    /// where Redis has the event, else its histogram's name.
    pub fn monitor_event(self) -> &'static str {
        match self {
            Work::EvictionBatch => "eviction-cycle",
            Work::ExpirePass => "expire-cycle",
            other => other.name(),
        }
    }
}

/// Whose durations a latency histogram holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Series {
    /// The command with this id.
    Command(usize),
    /// A kind of background work.
    Work(Work),
}

/// Every latency series with its name: the commands in table order, then
/// the background work.
pub fn every_series(table: &Table) -> impl Iterator<Item = (&'static str, Series)> + '_ {
    let commands =
        (table.specs().iter().enumerate()).map(|(id, spec)| (spec.name, Series::Command(id)));
    commands.chain(Work::ALL.into_iter().map(|w| (w.name(), Series::Work(w))))
}

/// One thread's counters. Written only by its thread (relaxed atomics so
/// INFO on another thread may read them), so there is no contention.
struct Local {
    commands: Box<[[AtomicU64; 4]]>,
    totals: [AtomicU64; 9],
    /// Error replies by error code (INFO errorstats); a thread's own, so
    /// counting takes no lock another thread holds.
    errors: Mutex<BTreeMap<String, u64>>,
    /// Latency histograms, by series index (see [`Stats::series_index`]),
    /// each allocated on its first sample: a thread pays only for the
    /// commands and work it runs.
    latency: Box<[OnceLock<Box<Histogram>>]>,
}

const CONNECTIONS: usize = 0;
const HITS: usize = 1;
const MISSES: usize = 2;
const ERRORS: usize = 3;
const NET_IN: usize = 4;
const NET_OUT: usize = 5;
const HEAVY_LANE_WAITS: usize = 6;
const OUTPUT_LIMIT_DISCONNECTIONS: usize = 7;
const REJECTED_CONNECTIONS: usize = 8;

/// Distinct error codes counted at most, per thread, as Redis bounds its
/// table: a client inventing codes cannot grow it.
const MAX_ERROR_CODES: usize = 128;

/// How a command ended, for its statistics.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    Succeeded,
    /// It replied this error (the reply, without its `-`).
    Failed(&'a str),
    /// It replied an error a command it ran counted already (a script's
    /// `redis.call` failing): its own failure counts, not the error again.
    FailedCountedElsewhere,
}

/// The code of an error reply: its first word, as Redis reads it from the
/// first 32 bytes, or `ERR` when there is none.
pub fn error_code(reply: &str) -> &str {
    let head = &reply.as_bytes()[..reply.len().min(32)];
    match head.iter().position(|&b| b == b' ') {
        Some(end) if end > 0 => &reply[..end],
        _ => "ERR",
    }
}

impl Local {
    fn count_error(&self, reply: &str) {
        bump(&self.totals[ERRORS], 1);
        let code = error_code(reply);
        let mut errors = self.errors.lock();
        if let Some(count) = errors.get_mut(code) {
            *count += 1;
        } else if errors.len() < MAX_ERROR_CODES {
            errors.insert(code.to_string(), 1);
        }
    }

    fn new(commands: usize) -> Local {
        Local {
            commands: (0..commands).map(|_| Default::default()).collect(),
            totals: Default::default(),
            errors: Mutex::new(BTreeMap::new()),
            latency: (0..commands + Work::ALL.len())
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    fn histogram(&self, index: usize) -> &Histogram {
        self.latency[index].get_or_init(Histogram::boxed)
    }
}

/// Adds `by` to a counter that only the calling thread writes: a load and
/// a store cannot lose an update then, and avoid a locked
/// read-modify-write.
pub fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

/// Counters since start (or CONFIG RESETSTAT), kept per thread.
pub struct Stats {
    commands: usize,
    threads: Mutex<Vec<Arc<Local>>>,
    ops: Mutex<OpsSampler>,
    /// `latency-tracking`: whether commands' durations go to their
    /// histograms (background work's always do).
    latency_tracking: AtomicBool,
    /// The latency monitor's spikes (LATENCY LATEST and friends).
    pub latency_monitor: crate::latency_monitor::LatencyMonitor,
}

thread_local! {
    static LOCAL: OnceCell<Arc<Local>> = const { OnceCell::new() };
}

/// Redis's instantaneous_ops_per_sec: the mean rate over the last 16
/// samples taken every 100 ms.
#[derive(Default)]
struct OpsSampler {
    last_total: u64,
    last_ms: u64,
    samples: [u64; 16],
    next: usize,
}

impl Stats {
    /// Zeroed statistics for `commands` commands.
    pub fn new(commands: usize) -> Stats {
        Stats {
            commands,
            threads: Mutex::new(Vec::new()),
            ops: Mutex::new(OpsSampler::default()),
            latency_tracking: AtomicBool::new(true),
            latency_monitor: Default::default(),
        }
    }

    /// Runs `f` on this thread's counters, registering them on first use.
    /// One server runs per process, so a thread's counters belong to it.
    fn local<R>(&self, f: impl FnOnce(&Local) -> R) -> R {
        LOCAL.with(|cell| {
            let local = cell.get_or_init(|| {
                let local = Arc::new(Local::new(self.commands));
                self.threads.lock().push(local.clone());
                local
            });
            f(local)
        })
    }

    /// Records one run of command `id`, and the error it replied if it
    /// failed.
    pub fn record_call(&self, id: usize, elapsed: Duration, outcome: Outcome) {
        self.local(|l| {
            let c = &l.commands[id];
            bump(&c[0], 1);
            bump(&c[1], elapsed.as_micros() as u64);
            match outcome {
                Outcome::Succeeded => {}
                Outcome::Failed(reply) => {
                    bump(&c[3], 1);
                    l.count_error(reply);
                }
                Outcome::FailedCountedElsewhere => bump(&c[3], 1),
            }
        });
    }

    /// Records a command (when there is one) refused before running, with
    /// the error it was replied.
    pub fn record_rejection(&self, id: Option<usize>, reply: &str) {
        self.local(|l| {
            if let Some(id) = id {
                bump(&l.commands[id][2], 1);
            }
            l.count_error(reply);
        });
    }

    /// INFO errorstats: error replies by error code.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        let mut sum = BTreeMap::new();
        for local in self.threads.lock().iter() {
            for (code, count) in local.errors.lock().iter() {
                *sum.entry(code.clone()).or_insert(0) += count;
            }
        }
        sum
    }

    /// Records a keyspace lookup.
    pub fn count_lookup(&self, found: bool) {
        self.local(|l| bump(&l.totals[if found { HITS } else { MISSES }], 1));
    }

    /// Records an accepted connection.
    pub fn count_connection(&self) {
        self.local(|l| bump(&l.totals[CONNECTIONS], 1));
    }

    /// Records bytes read from a client.
    pub fn count_input(&self, bytes: usize) {
        self.local(|l| bump(&l.totals[NET_IN], bytes as u64));
    }

    /// Records bytes written to a client.
    pub fn count_output(&self, bytes: usize) {
        self.local(|l| bump(&l.totals[NET_OUT], bytes as u64));
    }

    /// Records a heavy connection's batch waiting for its worker's heavy
    /// lane.
    pub fn count_heavy_lane_wait(&self) {
        self.local(|l| bump(&l.totals[HEAVY_LANE_WAITS], 1));
    }

    /// Records a client closed for passing an output buffer limit.
    pub fn count_output_limit_disconnection(&self) {
        self.local(|l| bump(&l.totals[OUTPUT_LIMIT_DISCONNECTIONS], 1));
    }

    /// Records a connection refused at `maxclients`.
    pub fn count_rejected_connection(&self) {
        self.local(|l| bump(&l.totals[REJECTED_CONNECTIONS], 1));
    }

    /// Turns command latency tracking on or off (`latency-tracking`).
    pub fn set_latency_tracking(&self, on: bool) {
        self.latency_tracking.store(on, Ordering::Relaxed);
    }

    /// Whether command latency tracking is on.
    pub fn latency_tracking(&self) -> bool {
        self.latency_tracking.load(Ordering::Relaxed)
    }

    /// Records how long a run of command `id` took in its histogram, if
    /// latency tracking is on.
    pub fn record_latency(&self, id: usize, elapsed: Duration) {
        if self.latency_tracking() {
            let index = self.series_index(Series::Command(id));
            self.local(|l| l.histogram(index).record(elapsed));
        }
    }

    /// Records how long one piece of background work took.
    pub fn record_work(&self, work: Work, elapsed: Duration) {
        let index = self.series_index(Series::Work(work));
        self.local(|l| l.histogram(index).record(elapsed));
        let now_secs = crate::server::unix_ms() / 1000;
        (self.latency_monitor).observe(work.monitor_event(), elapsed, now_secs);
    }

    /// Where `series` is in each thread's histograms.
    fn series_index(&self, series: Series) -> usize {
        match series {
            Series::Command(id) => id,
            Series::Work(work) => self.commands + work as usize,
        }
    }

    /// The histogram of `series`, summed over threads.
    pub fn latency(&self, series: Series) -> Snapshot {
        let index = self.series_index(series);
        let mut snapshot = Snapshot::default();
        for local in self.threads.lock().iter() {
            if let Some(histogram) = local.latency[index].get() {
                snapshot.add(histogram);
            }
        }
        snapshot
    }

    /// Per-command counters summed over threads, by command id.
    pub fn commands(&self) -> Vec<CommandStats> {
        let mut out: Vec<CommandStats> = (0..self.commands)
            .map(|_| CommandStats::default())
            .collect();
        for local in self.threads.lock().iter() {
            for (sum, c) in out.iter_mut().zip(local.commands.iter()) {
                let v = |i: usize| c[i].load(Ordering::Relaxed);
                sum.calls += v(0);
                sum.usec += v(1);
                sum.rejected_calls += v(2);
                sum.failed_calls += v(3);
            }
        }
        out
    }

    /// Server-wide counters summed over threads.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for local in self.threads.lock().iter() {
            let v = |i: usize| local.totals[i].load(Ordering::Relaxed);
            t.connections_received += v(CONNECTIONS);
            t.keyspace_hits += v(HITS);
            t.keyspace_misses += v(MISSES);
            t.error_replies += v(ERRORS);
            t.net_input_bytes += v(NET_IN);
            t.net_output_bytes += v(NET_OUT);
            t.heavy_lane_waits += v(HEAVY_LANE_WAITS);
            t.output_limit_disconnections += v(OUTPUT_LIMIT_DISCONNECTIONS);
            t.rejected_connections += v(REJECTED_CONNECTIONS);
        }
        t.commands = self.commands_run();
        t.expire_cycle_usec = self.latency(Series::Work(Work::ExpirePass)).sum_usec();
        t.eviction_usec = self.latency(Series::Work(Work::EvictionBatch)).sum_usec();
        t
    }

    /// Commands run, on every thread.
    fn commands_run(&self) -> u64 {
        let threads = self.threads.lock();
        let counts = threads.iter().flat_map(|local| local.commands.iter());
        counts.map(|c| c[0].load(Ordering::Relaxed)).sum()
    }

    /// Takes one throughput sample; called every 100 ms.
    pub fn sample_ops(&self, now_ms: u64) -> u64 {
        let total = self.commands_run();
        let mut ops = self.ops.lock();
        let elapsed = now_ms.saturating_sub(ops.last_ms).max(1);
        let rate = total.saturating_sub(ops.last_total) * 1000 / elapsed;
        let at = ops.next;
        ops.samples[at] = rate;
        ops.next = (at + 1) % ops.samples.len();
        ops.last_total = total;
        ops.last_ms = now_ms;
        total
    }

    /// Mean of the recent throughput samples.
    pub fn instantaneous_ops(&self) -> u64 {
        let ops = self.ops.lock();
        ops.samples.iter().sum::<u64>() / ops.samples.len() as u64
    }

    /// CONFIG RESETSTAT. Counters and histograms are zeroed from the
    /// calling thread; an increment racing with the reset on another thread
    /// may survive it, which only leaves that one count as it was.
    pub fn reset(&self) {
        for local in self.threads.lock().iter() {
            for c in local.commands.iter() {
                c.iter().for_each(|a| a.store(0, Ordering::Relaxed));
            }
            local
                .totals
                .iter()
                .for_each(|a| a.store(0, Ordering::Relaxed));
            local.errors.lock().clear();
            local
                .latency
                .iter()
                .filter_map(OnceLock::get)
                .for_each(|h| h.clear());
        }
        let mut ops = self.ops.lock();
        ops.samples = [0; 16];
        ops.last_total = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let stats = Arc::new(Stats::new(3));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        stats.record_call(1, Duration::from_micros(2), Outcome::Succeeded);
                        stats.count_lookup(true);
                    }
                    stats.record_call(2, Duration::ZERO, Outcome::Failed("WRONGTYPE Operation"));
                    stats.record_rejection(None, "ERR unknown command");
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        let commands = stats.commands();
        assert_eq!(commands[1].calls, 4000);
        assert_eq!(commands[1].usec, 8000);
        assert_eq!(commands[2].failed_calls, 4);
        let totals = stats.totals();
        let errors: Vec<(String, u64)> = stats.errors().into_iter().collect();
        assert_eq!(
            errors,
            [("ERR".to_string(), 4), ("WRONGTYPE".to_string(), 4)]
        );
        assert_eq!(
            (totals.commands, totals.keyspace_hits, totals.error_replies),
            (4004, 4000, 8)
        );
        stats.reset();
        assert_eq!(stats.totals().commands, 0);
    }

    #[test]
    fn latency_histograms_merge_threads_and_follow_the_switch() {
        let stats = Arc::new(Stats::new(2));
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    (0..100).for_each(|_| stats.record_latency(1, Duration::from_micros(5)));
                    stats.record_work(Work::LazyFree, Duration::from_millis(2));
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        let command = stats.latency(Series::Command(1));
        assert_eq!((command.count(), command.sum_usec()), (300, 1500));
        assert_eq!(stats.latency(Series::Command(0)).count(), 0);
        assert_eq!(stats.latency(Series::Work(Work::LazyFree)).count(), 3);
        stats.set_latency_tracking(false);
        stats.record_latency(1, Duration::from_micros(5));
        stats.record_work(Work::ExpirePass, Duration::from_micros(40));
        assert_eq!(stats.latency(Series::Command(1)).count(), 300);
        assert_eq!(stats.totals().expire_cycle_usec, 40);
        stats.reset();
        assert_eq!(stats.latency(Series::Command(1)).count(), 0);
    }
}
