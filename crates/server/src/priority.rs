//! The maintenance thread's scheduling priority.
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
//! noise next to the stretch itself.

/// How much lower than the workers' the maintenance thread's priority is
/// between its stretches of work (a nice value).
const MAINTENANCE_NICENESS: i32 = 10;

/// Puts the calling thread at the maintenance priority.
pub fn lower_this_thread() {
    set_this_threads_niceness(MAINTENANCE_NICENESS);
}

/// The calling thread at the workers' priority until this is dropped.
pub struct WorkersPriority(());

impl WorkersPriority {
    /// Raises the calling thread (the maintenance thread) to the workers'
    /// priority for a stretch of work that takes shard locks.
    pub fn begin() -> WorkersPriority {
        set_this_threads_niceness(0);
        WorkersPriority(())
    }
}

impl Drop for WorkersPriority {
    fn drop(&mut self) {
        lower_this_thread();
    }
}

/// Sets the calling thread's nice value (Linux applies `setpriority` to a
/// single thread when given its thread id). Raising a priority back to 0
/// is allowed for a thread that lowered its own; if the system refuses,
/// the thread keeps working at the priority it has, so errors are ignored.
fn set_this_threads_niceness(niceness: i32) {
    // SAFETY: gettid and setpriority take plain integers and touch no
    // memory of ours.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, niceness);
    }
}
