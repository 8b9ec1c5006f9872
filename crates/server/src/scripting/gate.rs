//! The gate between a running script and every other command.
//!
//! A script holds the shards it claimed for as long as it runs, and a
//! script may run forever. A command that waited on such a shard's lock
//! would hold up its whole worker (every connection on it) with no way to
//! answer BUSY. So commands never meet a script's shard at its lock: a
//! command first looks at the gate, and one whose shards the running
//! script claimed goes back to its connection, which waits there, without
//! holding up the worker, until the script ends or runs past
//! `busy-reply-threshold` (then it gets BUSY, as in Redis).
//!
//! The race — a command that looked before the script claimed a shard,
//! and takes the shard's lock after — is closed as epoch-based schemes
//! close theirs. Each thread that runs commands counts them in a slot of
//! its own, odd while it is inside one ([`Gate::enter`]); it then looks at
//! the claims. A script publishes its claim, then waits until every thread
//! that was inside a command has left it ([`Gate::claim`]), and only then
//! takes the shards' locks. Both sides fence (SeqCst), so either the
//! command sees the claim or the script sees the command and waits for it.
//! A command that was inside holds no script shard and waits for none
//! (it saw the earlier claims), so the wait ends: no deadlock, and the
//! script may take its shards in any order.
//!
//! The cost on the command path: one store to the thread's own slot on the
//! way in and out, one fence, and one load of the running script's start;
//! the claims are read only while a script runs.

use std::cell::OnceCell;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What one thread counts: commands it entered, odd while inside one.
type Slot = Arc<AtomicU64>;

thread_local! {
    static SLOT: OnceCell<Slot> = const { OnceCell::new() };
}

/// Which kind of script runs: EVAL's and FCALL's BUSY replies and KILL
/// commands differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Eval,
    Function,
}

/// The running script, as others see it.
pub struct Gate {
    /// Unix ms when the running script started; 0 when none runs.
    started_ms: AtomicU64,
    function: AtomicBool,
    /// Set once the running script ran a write: SCRIPT KILL refuses then.
    wrote: AtomicBool,
    /// `busy-reply-threshold` in ms, as the running script started.
    threshold_ms: AtomicU64,
    /// Shards the running script claimed: bit `shard` of word `db`.
    claims: Box<[AtomicU64]>,
    /// Every thread's slot, for [`Gate::claim`] to wait on.
    slots: Mutex<Vec<Slot>>,
    /// Woken when a script ends.
    ended: tokio::sync::Notify,
    /// The running script's name (a SHA1 or a function's name) and the
    /// command that runs it, for FUNCTION STATS.
    called: Mutex<(String, Vec<bytes::Bytes>)>,
    /// Keys whose blocked clients a command could not serve because
    /// serving them reaches the running script's shards: the script thread
    /// serves them once the script ends.
    deferred: Mutex<Vec<(usize, bytes::Bytes)>>,
}

/// Inside a command, from [`Gate::enter`] until dropped.
pub struct Inside {
    slot: Slot,
}

impl Drop for Inside {
    fn drop(&mut self) {
        self.slot.fetch_add(1, Ordering::Release);
    }
}

/// A running script: what it is, how long it ran, and whether it wrote.
#[derive(Debug, Clone, Copy)]
pub struct Running {
    pub kind: Kind,
    pub elapsed_ms: u64,
    pub past_threshold: bool,
    pub wrote: bool,
}

impl Gate {
    pub fn new(databases: usize) -> Gate {
        Gate {
            started_ms: AtomicU64::new(0),
            function: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            threshold_ms: AtomicU64::new(0),
            claims: (0..databases).map(|_| AtomicU64::new(0)).collect(),
            slots: Mutex::new(Vec::new()),
            ended: tokio::sync::Notify::new(),
            deferred: Mutex::new(Vec::new()),
            called: Mutex::new((String::new(), Vec::new())),
        }
    }

    /// Leaves `key`'s blocked clients for the script thread to serve.
    pub fn defer(&self, db: usize, key: bytes::Bytes) {
        self.deferred.lock().push((db, key));
    }

    /// What [`Gate::defer`] left.
    pub fn take_deferred(&self) -> Vec<(usize, bytes::Bytes)> {
        std::mem::take(&mut *self.deferred.lock())
    }

    /// Marks this thread inside a command until the result is dropped.
    /// Call it before looking at [`Gate::running`] and [`Gate::conflicts`].
    pub fn enter(&self) -> Inside {
        let slot = SLOT.with(|slot| {
            slot.get_or_init(|| {
                let new = Slot::default();
                self.slots.lock().push(new.clone());
                new
            })
            .clone()
        });
        slot.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        Inside { slot }
    }

    /// The running script, if any, at `now_ms`.
    pub fn running(&self, now_ms: u64) -> Option<Running> {
        let started = self.started_ms.load(Ordering::Acquire);
        if started == 0 {
            return None;
        }
        let elapsed_ms = now_ms.saturating_sub(started);
        Some(Running {
            kind: match self.function.load(Ordering::Relaxed) {
                true => Kind::Function,
                false => Kind::Eval,
            },
            elapsed_ms,
            past_threshold: elapsed_ms >= self.threshold_ms.load(Ordering::Relaxed),
            wrote: self.wrote.load(Ordering::Relaxed),
        })
    }

    /// Whether the running script claimed a shard of `shards` (one word
    /// per database, as [`keel_store::ShardSet::words`]).
    pub fn conflicts(&self, shards: &[u64]) -> bool {
        shards
            .iter()
            .zip(self.claims.iter())
            .any(|(&wanted, claimed)| wanted & claimed.load(Ordering::Relaxed) != 0)
    }

    /// The running script's name and command (see [`Gate::start`]).
    pub fn called(&self) -> (String, Vec<bytes::Bytes>) {
        self.called.lock().clone()
    }

    /// Script `name`, run by `command`, starts at `now_ms`; other commands
    /// see it until [`Gate::end`].
    pub fn start(&self, kind: Kind, name: &str, command: &[bytes::Bytes], now_ms: u64, threshold_ms: u64) {
        *self.called.lock() = (name.to_string(), command.to_vec());
        self.function.store(kind == Kind::Function, Ordering::Relaxed);
        self.wrote.store(false, Ordering::Relaxed);
        self.threshold_ms.store(threshold_ms, Ordering::Relaxed);
        self.started_ms.store(now_ms.max(1), Ordering::Release);
    }

    /// The running script ran a write.
    pub fn note_write(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// Claims `shards` for the running script and returns once no command
    /// that may not have seen the claim is still running; the script may
    /// then lock them. The calling thread must not be inside a command.
    pub fn claim(&self, shards: &[u64]) {
        for (claim, &wanted) in self.claims.iter().zip(shards) {
            claim.fetch_or(wanted, Ordering::Relaxed);
        }
        fence(Ordering::SeqCst);
        let inside: Vec<(Slot, u64)> = self
            .slots
            .lock()
            .iter()
            .map(|slot| (slot.clone(), slot.load(Ordering::Acquire)))
            .filter(|(_, count)| count % 2 == 1)
            .collect();
        let since = Instant::now();
        let mut warned = false;
        for (slot, count) in inside {
            while slot.load(Ordering::Acquire) == count {
                std::thread::yield_now();
                if !warned && since.elapsed() > Duration::from_secs(1) {
                    warned = true;
                    crate::warning!("A script has waited 1 s for a command to leave the shards it claimed");
                }
            }
        }
    }

    /// The running script ended: its claims go and waiting commands run.
    pub fn end(&self) {
        for claim in self.claims.iter() {
            claim.store(0, Ordering::Relaxed);
        }
        self.started_ms.store(0, Ordering::Release);
        self.ended.notify_waiters();
    }

    /// Waits until the running script ends or passes its threshold.
    pub async fn wait(&self, now_ms: impl Fn() -> u64) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let Some(running) = self.running(now_ms()) else {
                return;
            };
            if running.past_threshold {
                return;
            }
            let left = self.threshold_ms.load(Ordering::Relaxed).saturating_sub(running.elapsed_ms);
            let _ = tokio::time::timeout(Duration::from_millis(left.max(1)), ended).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_waits_for_commands_that_may_have_missed_it() {
        let gate = Arc::new(Gate::new(1));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (leave_tx, leave_rx) = std::sync::mpsc::channel::<()>();
        let command = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let inside = gate.enter();
                entered_tx.send(()).unwrap();
                leave_rx.recv().unwrap();
                drop(inside);
            })
        };
        entered_rx.recv().unwrap();
        let claimed = Arc::new(AtomicBool::new(false));
        let claimer = {
            let (gate, claimed) = (gate.clone(), claimed.clone());
            std::thread::spawn(move || {
                gate.start(Kind::Eval, "sha", &[], 1, 5000);
                gate.claim(&[0b100]);
                claimed.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!claimed.load(Ordering::SeqCst), "the claim waits for the command");
        assert!(gate.conflicts(&[0b110]) && !gate.conflicts(&[0b011]));
        leave_tx.send(()).unwrap();
        command.join().unwrap();
        claimer.join().unwrap();
        assert!(claimed.load(Ordering::SeqCst));
        gate.end();
        assert!(!gate.conflicts(&[0b100]) && gate.running(2).is_none());
    }

    #[test]
    fn running_scripts_pass_their_threshold() {
        let gate = Gate::new(1);
        gate.start(Kind::Function, "f", &[], 1_000, 200);
        let running = gate.running(1_100).unwrap();
        assert!(!running.past_threshold && running.kind == Kind::Function && !running.wrote);
        gate.note_write();
        let running = gate.running(1_200).unwrap();
        assert!(running.past_threshold && running.wrote);
    }
}
