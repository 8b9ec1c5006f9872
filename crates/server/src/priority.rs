//! Scheduling priorities of keel's threads: the acceptor above the
//! workers, background maintenance below them.
//!
//! The acceptor (the main thread) takes in new connections and serves their
//! first quick requests (see `connection.rs`), a few tens of microseconds
//! each. When the workers keep every CPU busy, an acceptor at their
//! priority gets its fair share only: on 2 cores under 5,000 connections
//! pipelining large writes, about 40% of a CPU, and while those connections
//! arrived at once up to 765 of them waited unaccepted. Ahead of the
//! workers, at most 133–418 did, and a new client's first reply no longer
//! waited more than 10 ms once the burst was over
//! (`bench/results/2026-11-24-adversarial-clients-acceptor.md`). Its work
//! per connection is bounded, so it cannot starve the workers. Raising a
//! priority needs privilege (root, CAP_SYS_NICE, or an RLIMIT_NICE of at
//! least 30); without it the acceptor runs at the workers' priority and
//! keel says so at start-up.
//!
//! Background work (active expiry, eviction ahead of need) runs on one
//! thread whose nice value is above the workers', so that when the CPUs are
//! busy, requests get them first. But that work takes shard locks, and a
//! low-priority thread preempted while holding one is priority inversion:
//! every worker that needs the shard waits until the scheduler gets round
//! to the background thread again, which on a busy machine takes tens of
//! milliseconds (measured: 30–67 ms request stalls while a million keys
//! expired at once). So the thread works at the workers' priority for the
//! short stretches in which it takes locks — one shard's expiry work (tens
//! of microseconds), one eviction slice (a millisecond) — and drops back
//! between them, when it holds nothing. Two system calls per stretch is
//! noise next to the stretch itself. Coming back up is raising a priority,
//! so without the privilege the thread never drops down at all.

use std::cell::Cell;

/// How much lower than the workers' the maintenance thread's priority is
/// between its stretches of work (a nice value).
const MAINTENANCE_NICENESS: i32 = 10;

/// How much higher than the workers' the acceptor's priority is (a nice
/// value below theirs).
const ACCEPTOR_NICENESS: i32 = -10;

/// Puts the calling thread (the acceptor) ahead of the workers; an error if
/// the system refuses. Threads started afterwards inherit the priority, so
/// call it once every other thread has started.
pub fn raise_this_thread_for_accepting() -> std::io::Result<()> {
    set_this_threads_niceness(ACCEPTOR_NICENESS)
}

thread_local! {
    /// Whether this thread (the maintenance thread) works below the
    /// workers' priority between its stretches of work.
    static BELOW_WORKERS: Cell<bool> = const { Cell::new(false) };
}

/// Puts the calling thread (the maintenance thread) at the maintenance
/// priority if `may_raise_priority`. Without that privilege it could never
/// come back up to the workers' priority for a stretch of work, and
/// holding shard locks below them is the inversion described above, so it
/// stays at theirs.
pub fn lower_this_thread(may_raise_priority: bool) {
    if may_raise_priority {
        // Refused only for raising a priority, which this is not.
        let _ = set_this_threads_niceness(MAINTENANCE_NICENESS);
        BELOW_WORKERS.set(true);
    }
}

/// The calling thread at the workers' priority until this is dropped.
pub struct WorkersPriority(());

impl WorkersPriority {
    /// Raises the calling thread (the maintenance thread) to the workers'
    /// priority for a stretch of work that takes shard locks.
    pub fn begin() -> WorkersPriority {
        if BELOW_WORKERS.get() {
            // Allowed: the thread lowered itself only with the privilege.
            let _ = set_this_threads_niceness(0);
        }
        WorkersPriority(())
    }
}

impl Drop for WorkersPriority {
    fn drop(&mut self) {
        if BELOW_WORKERS.get() {
            let _ = set_this_threads_niceness(MAINTENANCE_NICENESS);
        }
    }
}

/// Sets the calling thread's nice value (Linux applies `setpriority` to a
/// single thread when given its thread id). Lowering a priority is always
/// allowed; raising one needs the privilege described at the top.
fn set_this_threads_niceness(niceness: i32) -> std::io::Result<()> {
    // SAFETY: gettid and setpriority take plain integers and touch no
    // memory of ours.
    let refused = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, niceness) != 0
    };
    match refused {
        true => Err(std::io::Error::last_os_error()),
        false => Ok(()),
    }
}
