//! Server statistics for INFO stats and INFO commandstats.
//!
//! Counters are kept per worker thread and summed when INFO asks: each
//! thread writes only its own cache lines, so counting a command costs a
//! few uncontended stores instead of atomic increments that bounce one
//! cache line between cores on every command. The total of processed
//! commands is the sum of per-command calls rather than a counter of its
//! own.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

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
    /// Commands run.
    pub commands: u64,
    /// Microseconds spent in active expiry passes.
    pub expire_cycle_usec: u64,
    /// Microseconds spent evicting in the background.
    pub eviction_usec: u64,
}

/// One thread's counters. Written only by its thread (relaxed atomics so
/// INFO on another thread may read them), so there is no contention.
struct Local {
    commands: Box<[[AtomicU64; 4]]>,
    totals: [AtomicU64; 8],
}

const CONNECTIONS: usize = 0;
const HITS: usize = 1;
const MISSES: usize = 2;
const ERRORS: usize = 3;
const NET_IN: usize = 4;
const NET_OUT: usize = 5;
const EXPIRE_CYCLE_USEC: usize = 6;
const EVICTION_USEC: usize = 7;

impl Local {
    fn new(commands: usize) -> Local {
        Local {
            commands: (0..commands).map(|_| Default::default()).collect(),
            totals: Default::default(),
        }
    }
}

fn bump(counter: &AtomicU64, by: u64) {
    // Only the owning thread writes, so load+store cannot lose updates and
    // avoids a locked read-modify-write.
    counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
}

/// Counters since start (or CONFIG RESETSTAT), kept per thread.
pub struct Stats {
    commands: usize,
    threads: Mutex<Vec<Arc<Local>>>,
    ops: Mutex<OpsSampler>,
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

    /// Records one run of command `id`.
    pub fn record_call(&self, id: usize, elapsed: Duration, failed: bool) {
        self.local(|l| {
            let c = &l.commands[id];
            bump(&c[0], 1);
            bump(&c[1], elapsed.as_micros() as u64);
            if failed {
                bump(&c[3], 1);
                bump(&l.totals[ERRORS], 1);
            }
        });
    }

    /// Records a command refused before running.
    pub fn record_rejection(&self, id: Option<usize>) {
        self.local(|l| {
            if let Some(id) = id {
                bump(&l.commands[id][2], 1);
            }
            bump(&l.totals[ERRORS], 1);
        });
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

    /// Records time spent in an active expiry pass.
    pub fn count_expire_cycle(&self, elapsed: Duration) {
        self.local(|l| bump(&l.totals[EXPIRE_CYCLE_USEC], elapsed.as_micros() as u64));
    }

    /// Records time spent in a background eviction slice.
    pub fn count_eviction(&self, elapsed: Duration) {
        self.local(|l| bump(&l.totals[EVICTION_USEC], elapsed.as_micros() as u64));
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
            t.expire_cycle_usec += v(EXPIRE_CYCLE_USEC);
            t.eviction_usec += v(EVICTION_USEC);
            t.commands += local
                .commands
                .iter()
                .map(|c| c[0].load(Ordering::Relaxed))
                .sum::<u64>();
        }
        t
    }

    /// Takes one throughput sample; called every 100 ms.
    pub fn sample_ops(&self, now_ms: u64) {
        let total = self.totals().commands;
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

    /// CONFIG RESETSTAT. Counters are zeroed from the calling thread; an
    /// increment racing with the reset on another thread may survive it,
    /// which only makes that one count start at 1 instead of 0.
    pub fn reset(&self) {
        for local in self.threads.lock().iter() {
            for c in local.commands.iter() {
                c.iter().for_each(|a| a.store(0, Ordering::Relaxed));
            }
            local
                .totals
                .iter()
                .for_each(|a| a.store(0, Ordering::Relaxed));
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
                        stats.record_call(1, Duration::from_micros(2), false);
                        stats.count_lookup(true);
                    }
                    stats.record_call(2, Duration::ZERO, true);
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
        let commands = stats.commands();
        assert_eq!(commands[1].calls, 4000);
        assert_eq!(commands[1].usec, 8000);
        assert_eq!(commands[2].failed_calls, 4);
        let totals = stats.totals();
        assert_eq!(
            (totals.commands, totals.keyspace_hits, totals.error_replies),
            (4004, 4000, 4)
        );
        stats.reset();
        assert_eq!(stats.totals().commands, 0);
    }
}
