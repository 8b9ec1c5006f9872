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
//! The fences are asymmetric where Linux allows (see [`asymmetric`]): a
//! command's is a compiler fence, and a claim makes every running thread
//! of the process pass a full one.
//! A command that was inside holds no script shard and waits for none
//! (it saw the earlier claims), so the wait ends: no deadlock, and the
//! script may take its shards in any order.
//!
//! The cost on the command path: one store to the thread's own slot on the
//! way in and out, one compiler fence (a full fence without `membarrier`),
//! and one load of the running script's start; the claims are read only
//! while a script runs.

use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// What one thread counts: commands it entered, odd while inside one.
/// Only its thread writes it. It lives as long as the process (one per
/// thread that ever runs a command, a handful), so the command path holds
/// a plain reference to it.
type Slot = &'static AtomicU64;

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

impl Kind {
    /// The BUSY error others get while such a script runs past the
    /// threshold, naming the command that can stop it.
    pub fn busy_reply(self) -> &'static str {
        use crate::cmd::context::errors;
        match self {
            Kind::Eval => errors::BUSY_EVAL,
            Kind::Function => errors::BUSY_FUNCTION,
        }
    }
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
        let count = self.slot.load(Ordering::Relaxed);
        self.slot.store(count + 1, Ordering::Release);
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
        asymmetric::register();
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
        let slot: Slot = SLOT.with(|slot| {
            *slot.get_or_init(|| {
                let new: Slot = Box::leak(Box::default());
                self.slots.lock().push(new);
                new
            })
        });
        slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        asymmetric::light_fence();
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
    pub fn start(
        &self,
        kind: Kind,
        name: &str,
        command: &[bytes::Bytes],
        now_ms: u64,
        threshold_ms: u64,
    ) {
        *self.called.lock() = (name.to_string(), command.to_vec());
        self.function
            .store(kind == Kind::Function, Ordering::Relaxed);
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
        asymmetric::heavy_fence();
        let since = Instant::now();
        let mut warned = false;
        // A thread that registers meanwhile starts its first command after
        // the fence, so it sees the claim: the lock may be held throughout.
        for slot in self.slots.lock().iter() {
            let count = slot.load(Ordering::Acquire);
            if count % 2 == 0 {
                continue;
            }
            while slot.load(Ordering::Acquire) == count {
                std::thread::yield_now();
                if !warned && since.elapsed() > Duration::from_secs(1) {
                    warned = true;
                    crate::warning!(
                        "A script has waited 1 s for a command to leave the shards it claimed"
                    );
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

    /// Waits until the running script ends or passes its threshold (when
    /// a command held up by it gets BUSY instead); once past it, until it
    /// ends (a command BUSY does not refuse waits that long).
    pub async fn wait(&self, now_ms: impl Fn() -> u64) {
        let past_already = self.running(now_ms()).is_some_and(|r| r.past_threshold);
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let Some(running) = self.running(now_ms()) else {
                return;
            };
            if past_already {
                ended.await;
                continue;
            }
            if running.past_threshold {
                return;
            }
            let left = self
                .threshold_ms
                .load(Ordering::Relaxed)
                .saturating_sub(running.elapsed_ms);
            let _ = tokio::time::timeout(Duration::from_millis(left.max(1)), ended).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        assert!(
            !claimed.load(Ordering::SeqCst),
            "the claim waits for the command"
        );
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

/// The gate's two fences. Commands enter millions of times a second and
/// scripts claim seldom, so the cost goes to the claim where Linux offers
/// `membarrier`'s private expedited command: it runs a full fence on every
/// thread of this process that is running at that moment, and a thread
/// that is not passes through one when it is next scheduled. Then the
/// command side needs only to keep the compiler from reordering, and the
/// pair orders as two full fences would. A full fence (mfence) cost each
/// command some tens of cycles. Without `membarrier` both sides fence.
mod asymmetric {
    use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};

    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// Set once registration succeeded, before any command runs, and never
    /// cleared.
    static EXPEDITED: AtomicBool = AtomicBool::new(false);

    /// Registers the process for expedited barriers, once, before the
    /// first command (the gate is made with the server).
    pub fn register() {
        if EXPEDITED.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: membarrier takes a command and flags (and a CPU, unused
        // here) and touches no memory of ours.
        let registered = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0,
                0,
            )
        } == 0;
        EXPEDITED.store(registered, Ordering::SeqCst);
    }

    /// The command's side.
    pub fn light_fence() {
        match EXPEDITED.load(Ordering::Relaxed) {
            true => compiler_fence(Ordering::SeqCst),
            false => fence(Ordering::SeqCst),
        }
    }

    /// The script's side.
    pub fn heavy_fence() {
        fence(Ordering::SeqCst);
        if EXPEDITED.load(Ordering::Relaxed) {
            // SAFETY: as in `register`; the process is registered.
            let barrier = unsafe {
                libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)
            };
            if barrier != 0 {
                let error = std::io::Error::last_os_error();
                crate::warning!("membarrier failed after registering: {error}");
            }
        }
    }
}
