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
//! A nice value ranks the acceptor above the workers only among keel's own
//! threads: the scheduler first shares a core between groups of tasks (a
//! session's autogroup, a service's cgroup), and a load generator, a
//! kernel thread handling packets or another service may hold the core
//! the acceptor is woken on. Linux then lets what runs finish its time
//! slice, and a new client's PING waited up to 12 ms for that under the
//! adversarial load. So the acceptor also asks for the shortest slice
//! Linux grants (0.1 ms; the default is a few ms): since Linux 6.12 a
//! woken task with a shorter slice than the running one's preempts it.
//! Short slices buy latency, not CPU: the acceptor's share is unchanged.
//! The server's part of a fresh PING under that load fell from a p99 of
//! 1.4–3.1 ms (worst 12.3 ms) to 0.2–0.6 ms (worst 4.0 ms)
//! (`bench/results/2026-11-25-adversarial-clients-acceptor-slice.md`).
//! Asking needs no privilege; older kernels ignore it.
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

/// The time slice the acceptor asks for: the shortest Linux grants.
const ACCEPTOR_SLICE_NS: u64 = 100_000;

/// Asks for the scheduler's default time slice.
const DEFAULT_SLICE: u64 = 0;

/// Puts the calling thread (the acceptor) ahead of the workers, with a
/// short time slice; an error if the system refuses the priority, and then
/// the thread keeps the workers' priority and still gets the short slice.
/// Threads started afterwards inherit both, so call it once the workers
/// have started.
pub fn raise_this_thread_for_accepting() -> std::io::Result<()> {
    set_this_threads_scheduling(ACCEPTOR_NICENESS, ACCEPTOR_SLICE_NS).inspect_err(|_| {
        // Allowed without privilege: the workers' priority is the thread's own.
        let _ = set_this_threads_scheduling(0, ACCEPTOR_SLICE_NS);
    })
}

thread_local! {
    /// Whether this thread (the maintenance thread) works below the
    /// workers' priority between its stretches of work.
    static BELOW_WORKERS: Cell<bool> = const { Cell::new(false) };
}

/// Puts the calling thread (the maintenance thread, started by the
/// acceptor) at the maintenance priority if `may_raise_priority`, and back
/// to the default time slice. Without that privilege it could never come
/// back up to the workers' priority for a stretch of work, and holding
/// shard locks below them is the inversion described above, so it stays
/// at theirs.
pub fn lower_this_thread(may_raise_priority: bool) {
    let niceness = match may_raise_priority {
        true => MAINTENANCE_NICENESS,
        false => 0,
    };
    // Refused only for raising a priority, which this is not: the thread
    // inherited the acceptor's, which is at least the workers'.
    let _ = set_this_threads_scheduling(niceness, DEFAULT_SLICE);
    BELOW_WORKERS.set(may_raise_priority);
}

/// The calling thread at the workers' priority until this is dropped.
pub struct WorkersPriority(());

impl WorkersPriority {
    /// Raises the calling thread (the maintenance thread) to the workers'
    /// priority for a stretch of work that takes shard locks.
    pub fn begin() -> WorkersPriority {
        if BELOW_WORKERS.get() {
            // Allowed: the thread lowered itself only with the privilege.
            let _ = set_this_threads_scheduling(0, DEFAULT_SLICE);
        }
        WorkersPriority(())
    }
}

impl Drop for WorkersPriority {
    fn drop(&mut self) {
        if BELOW_WORKERS.get() {
            let _ = set_this_threads_scheduling(MAINTENANCE_NICENESS, DEFAULT_SLICE);
        }
    }
}

/// Sets the calling thread's nice value and the time slice it asks for
/// (`DEFAULT_SLICE` for the default). Raising a priority needs the
/// privilege described at the top; the slice needs none.
fn set_this_threads_scheduling(niceness: i32, slice_ns: u64) -> std::io::Result<()> {
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: niceness,
        sched_priority: 0,
        // For SCHED_OTHER, the slice asked for (Linux 6.12 and later).
        sched_runtime: slice_ns,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: the kernel only reads `attr`, which outlives the call; pid 0
    // is the calling thread.
    let refused = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) != 0 };
    match refused {
        true => Err(std::io::Error::last_os_error()),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The time slice the calling thread runs with, as Linux reports it.
    fn this_threads_slice_ns() -> u64 {
        let sched = std::fs::read_to_string("/proc/thread-self/sched").unwrap();
        let line = sched.lines().find(|l| l.starts_with("se.slice")).unwrap();
        line.rsplit(':').next().unwrap().trim().parse().unwrap()
    }

    /// Whether the running kernel grants the slice a thread asks for.
    fn kernel_grants_slices() -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut numbers = release.split(|c: char| !c.is_ascii_digit());
        let major: u32 = numbers.next().unwrap().parse().unwrap();
        let minor: u32 = numbers.next().unwrap().parse().unwrap();
        (major, minor) >= (6, 12)
    }

    #[test]
    fn the_acceptor_asks_for_a_short_slice_and_maintenance_gives_it_back() {
        // A thread of its own: the priorities set here die with it.
        std::thread::spawn(|| {
            let default = this_threads_slice_ns();
            let _ = raise_this_thread_for_accepting();
            if kernel_grants_slices() {
                assert_eq!(this_threads_slice_ns(), ACCEPTOR_SLICE_NS);
            }
            lower_this_thread(false);
            assert_eq!(this_threads_slice_ns(), default);
        })
        .join()
        .unwrap();
    }
}
