//! CLIENT PAUSE and CLIENT UNPAUSE: holding clients' commands for a while.
//!
//! As in Redis, a pause has a mode and an end. `ALL` holds every command
//! of every client; `WRITE` holds only the commands that may change the
//! dataset or reach a replica: writes, the commands Redis flags
//! may-replicate (PUBLISH, SPUBLISH, PFCOUNT, EVAL, EVALSHA, FCALL), and an
//! EXEC whose queue holds one of those. A second pause only extends the
//! end and only makes the mode stricter; UNPAUSE ends it at once.
//!
//! A held command waits in its connection (see `connection.rs`) before it
//! runs, counted in INFO's `blocked_clients` and shown with CLIENT LIST's
//! `b` flag, as Redis's postponed clients are; commands refused before
//! they would run (unknown, wrong arity, NOAUTH) get their error at once.
//! While a pause lasts, keys whose time has passed read as missing but are
//! not reclaimed, neither by reads nor by active expiry, and background
//! eviction rests, so a paused server changes nothing, as Redis documents
//! for its failover use.
//!
//! The clock is passed in (`now_ms`), so the end can be tested without
//! waiting for it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// What a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Writes and may-replicate commands only.
    Write,
    /// Every command.
    All,
}

/// The server's pause state.
#[derive(Default)]
pub struct Pause {
    /// Mode and end (Unix ms) of the current pause; `None` when none was
    /// set since the last UNPAUSE (an ended pause may still be here).
    current: Mutex<Option<(Mode, u64)>>,
    /// The end of `current` (0: none), so that every command can see that
    /// no pause is in force without taking the lock.
    until_ms: AtomicU64,
    /// Wakes held commands when the pause is lifted or changed.
    changed: Notify,
    /// Connections holding a command now (INFO `blocked_clients`).
    held: AtomicUsize,
}

impl Pause {
    /// CLIENT PAUSE: pauses until `end_ms`, keeping a later end and a
    /// stricter mode already in force.
    pub fn pause(&self, mode: Mode, end_ms: u64, now_ms: u64) {
        let mut current = self.current.lock();
        *current = Some(match *current {
            Some((old_mode, old_end)) if old_end > now_ms => {
                (mode.max(old_mode), end_ms.max(old_end))
            }
            _ => (mode, end_ms),
        });
        self.until_ms
            .store(current.map_or(0, |(_, end)| end), Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        let mut current = self.current.lock();
        *current = None;
        self.until_ms.store(0, Ordering::Relaxed);
        drop(current);
        self.changed.notify_waiters();
    }

    /// The pause in force at `now_ms`, if any.
    pub fn in_force(&self, now_ms: u64) -> Option<(Mode, u64)> {
        if self.until_ms.load(Ordering::Relaxed) <= now_ms {
            return None;
        }
        self.current.lock().filter(|&(_, end)| end > now_ms)
    }

    /// True if a command that writes (`writes`) or not must wait at
    /// `now_ms`.
    pub fn holds(&self, writes: bool, now_ms: u64) -> bool {
        match self.in_force(now_ms) {
            Some((Mode::All, _)) => true,
            Some((Mode::Write, _)) => writes,
            None => false,
        }
    }

    /// Holds the caller until a command that writes (`writes`) or not may
    /// run, counting it as held meanwhile. `now` reads the clock.
    pub async fn wait(&self, writes: bool, now: impl Fn() -> u64) {
        self.held.fetch_add(1, Ordering::Relaxed);
        let _held = Held(&self.held);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now_ms = now();
            if !self.holds(writes, now_ms) {
                return;
            }
            let end_ms = self.in_force(now_ms).map_or(now_ms, |(_, end)| end);
            let left = std::time::Duration::from_millis(end_ms - now_ms);
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(left) => {}
            }
        }
    }

    /// Connections holding a command now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

/// Takes a held connection off the count, however its wait ends.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Commands Redis flags may-replicate: not writes, but held by a WRITE
/// pause as writes are.
pub const MAY_REPLICATE: &[&str] = &["publish", "spublish", "pfcount", "eval", "evalsha", "fcall"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_holds_by_mode_until_its_end() {
        let pause = Pause::default();
        assert!(!pause.holds(true, 0));
        pause.pause(Mode::Write, 1_000, 0);
        assert!(pause.holds(true, 999) && !pause.holds(false, 999));
        assert!(!pause.holds(true, 1_000), "ended");
        pause.pause(Mode::All, 500, 0);
        assert_eq!(
            pause.in_force(0),
            Some((Mode::All, 1_000)),
            "stricter, not shorter"
        );
        pause.pause(Mode::Write, 2_000, 0);
        assert_eq!(
            pause.in_force(0),
            Some((Mode::All, 2_000)),
            "longer, not looser"
        );
        pause.unpause();
        assert_eq!(pause.in_force(0), None);
        pause.pause(Mode::Write, 3_000, 2_500);
        assert_eq!(pause.in_force(2_500), Some((Mode::Write, 3_000)));
    }

    #[test]
    fn an_ended_pause_does_not_carry_into_the_next() {
        let pause = Pause::default();
        pause.pause(Mode::All, 100, 0);
        pause.pause(Mode::Write, 300, 200);
        assert_eq!(pause.in_force(200), Some((Mode::Write, 300)));
    }

    #[tokio::test]
    async fn a_held_command_runs_once_unpaused() {
        let pause = std::sync::Arc::new(Pause::default());
        pause.pause(Mode::All, u64::MAX, 0);
        let waiter = pause.clone();
        let held = tokio::spawn(async move { waiter.wait(false, || 0).await });
        while pause.held() == 0 {
            tokio::task::yield_now().await;
        }
        pause.unpause();
        held.await.unwrap();
        assert_eq!(pause.held(), 0);
    }
}
