//! Server statistics for INFO stats and INFO commandstats.
//!
//! Plain relaxed atomics: each is written by whichever connection thread
//! runs a command and read only by INFO, so no lock is needed and none is
//! taken on the command path. The total of processed commands is the sum
//! of per-command calls rather than a counter of its own, which saves one
//! shared write per command.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// Counters of one command (INFO commandstats).
#[derive(Default)]
pub struct CommandStats {
    /// Times it ran.
    pub calls: AtomicU64,
    /// Microseconds spent in it.
    pub usec: AtomicU64,
    /// Times it was refused before running (arity, auth, OOM).
    pub rejected_calls: AtomicU64,
    /// Times it ran and replied with an error.
    pub failed_calls: AtomicU64,
}

/// Counters since start (or CONFIG RESETSTAT).
pub struct Stats {
    /// Per command, indexed by command id.
    pub commands: Box<[CommandStats]>,
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Lookups that found their key.
    pub keyspace_hits: AtomicU64,
    /// Lookups that did not.
    pub keyspace_misses: AtomicU64,
    /// Replies that were errors.
    pub error_replies: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    ops: Mutex<OpsSampler>,
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
            commands: (0..commands).map(|_| CommandStats::default()).collect(),
            connections_received: AtomicU64::new(0),
            keyspace_hits: AtomicU64::new(0),
            keyspace_misses: AtomicU64::new(0),
            error_replies: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            net_output_bytes: AtomicU64::new(0),
            ops: Mutex::new(OpsSampler::default()),
        }
    }

    /// Records one run of command `id`.
    pub fn record_call(&self, id: usize, elapsed: Duration, failed: bool) {
        let stats = &self.commands[id];
        stats.calls.fetch_add(1, Ordering::Relaxed);
        stats
            .usec
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        if failed {
            stats.failed_calls.fetch_add(1, Ordering::Relaxed);
            self.error_replies.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records a command refused before running.
    pub fn record_rejection(&self, id: Option<usize>) {
        if let Some(id) = id {
            self.commands[id]
                .rejected_calls
                .fetch_add(1, Ordering::Relaxed);
        }
        self.error_replies.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a keyspace lookup.
    pub fn count_lookup(&self, found: bool) {
        let counter = if found {
            &self.keyspace_hits
        } else {
            &self.keyspace_misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Commands processed since start.
    pub fn total_commands(&self) -> u64 {
        self.commands
            .iter()
            .map(|c| c.calls.load(Ordering::Relaxed))
            .sum()
    }

    /// Takes one throughput sample; called every 100 ms.
    pub fn sample_ops(&self, now_ms: u64) {
        let total = self.total_commands();
        let mut ops = self.ops.lock();
        let elapsed = now_ms.saturating_sub(ops.last_ms).max(1);
        let rate = total.saturating_sub(ops.last_total) * 1000 / elapsed;
        let at = ops.next;
        ops.samples[at] = rate;
        ops.next = (at + 1) % ops.samples.len();
        ops.last_total = total;
        ops.last_ms = now_ms;
    }

    /// Mean of the recent throughput samples.
    pub fn instantaneous_ops(&self) -> u64 {
        let ops = self.ops.lock();
        ops.samples.iter().sum::<u64>() / ops.samples.len() as u64
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for c in self.commands.iter() {
            for counter in [&c.calls, &c.usec, &c.rejected_calls, &c.failed_calls] {
                counter.store(0, Ordering::Relaxed);
            }
        }
        for counter in [
            &self.connections_received,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.error_replies,
            &self.net_input_bytes,
            &self.net_output_bytes,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        let mut ops = self.ops.lock();
        ops.samples = [0; 16];
        ops.last_total = 0;
    }
}
