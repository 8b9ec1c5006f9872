//! Scheduling priorities of keel's threads: the acceptor above the
//! workers (and, where allowed, above every ordinary thread), background
//! maintenance below them.
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
//! the acceptor is woken on. Linux lets that task finish its time slice
//! first: traced under the adversarial load, a new client's PING waited
//! 4–11 ms while another process's thread held the acceptor's core. With
//! `acceptor-realtime yes`, where it is allowed (root, CAP_SYS_NICE, or an
//! RLIMIT_RTPRIO of at least 1), the acceptor runs at the lowest real-time
//! priority, which preempts every ordinary thread on the machine the moment
//! it is woken; then no connection waited in the accept queue during a
//! burst of 5,000, and the server's part of a fresh PING stayed within 4 ms
//! under the adversarial load
//! (`bench/results/2026-11-25-adversarial-clients-acceptor-scheduling.md`).
//! It is opt-in: a real-time thread that spins can starve ordinary threads
//! on its core (Linux keeps only 5% of every second for them), and
//! parking_lot locks do not pass priority on to a lock holder. It is safe
//! only because the acceptor's work per connection is bounded: it runs
//! only keyless constant-time commands (`cmd::is_quick`) on one read chunk,
//! takes no shard lock, and serves nothing else (the metrics endpoint has a
//! thread of its own). Otherwise the acceptor asks for the shortest time
//! slice Linux grants (0.1 ms, no privilege needed): since Linux 6.12 a
//! woken task with a shorter slice than the running one's preempts it,
//! which buys latency, not CPU. Either way the setting is reset in threads
//! the acceptor starts.
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

/// The time slice the acceptor asks for where real time is refused: the
/// shortest Linux grants.
const ACCEPTOR_SLICE_NS: u64 = 100_000;

/// Asks for the scheduler's default time slice.
const DEFAULT_SLICE: u64 = 0;

/// The acceptor's real-time priority: the lowest, below any real-time
/// thread the machine's own services rely on.
const ACCEPTOR_REAL_TIME_PRIORITY: u32 = 1;

/// Whether the acceptor runs at real-time priority.
pub enum RealTime {
    /// `acceptor-realtime yes`, and the system allowed it.
    Granted,
    /// `acceptor-realtime no` (the default).
    NotAsked,
}

/// What the system allowed the acceptor, for the start-up log.
pub struct AcceptorPriority {
    /// Real-time scheduling, ahead of every ordinary thread, if asked for.
    pub real_time: std::io::Result<RealTime>,
    /// A nice value above the workers'. The same privilege lets the
    /// maintenance thread come back up to the workers' priority.
    pub above_workers: std::io::Result<()>,
}

/// Puts the calling thread (the acceptor) ahead of the workers with a
/// short time slice, and at real-time priority if `real_time` asks for it
/// and it is allowed. Threads it starts afterwards do not inherit any of
/// it.
pub fn raise_this_thread_for_accepting(real_time: bool) -> AcceptorPriority {
    let above_workers = set_this_threads_scheduling(Scheduling::Ordinary {
        niceness: ACCEPTOR_NICENESS,
        slice_ns: ACCEPTOR_SLICE_NS,
    })
    .inspect_err(|_| {
        // Allowed without privilege: the workers' priority is the thread's own.
        let _ = set_this_threads_scheduling(Scheduling::Ordinary {
            niceness: 0,
            slice_ns: ACCEPTOR_SLICE_NS,
        });
    });
    let real_time = match real_time {
        true => set_this_threads_scheduling(Scheduling::RealTime {
            priority: ACCEPTOR_REAL_TIME_PRIORITY,
        })
        .map(|()| RealTime::Granted),
        false => Ok(RealTime::NotAsked),
    };
    AcceptorPriority {
        real_time,
        above_workers,
    }
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

/// How a thread is scheduled.
#[derive(Clone, Copy)]
enum Scheduling {
    /// Linux's ordinary policy at a nice value, asking for a time slice
    /// (`DEFAULT_SLICE` for the default; honoured since Linux 6.12).
    Ordinary { niceness: i32, slice_ns: u64 },
    /// First-in first-out real-time scheduling at a priority.
    RealTime { priority: u32 },
}

/// Schedules the calling thread as `scheduling`; threads it starts later
/// are scheduled as ordinary threads at the default nice value and slice.
/// Raising a priority and real time need the privilege described at the
/// top; a time slice needs none.
fn set_this_threads_scheduling(scheduling: Scheduling) -> std::io::Result<()> {
    let (policy, niceness, priority, slice_ns) = match scheduling {
        Scheduling::Ordinary { niceness, slice_ns } => (libc::SCHED_OTHER, niceness, 0, slice_ns),
        Scheduling::RealTime { priority } => (libc::SCHED_FIFO, 0, priority, DEFAULT_SLICE),
    };
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: policy as u32,
        // Threads started later are scheduled as ordinary threads.
        sched_flags: libc::SCHED_FLAG_RESET_ON_FORK as u64,
        sched_nice: niceness,
        sched_priority: priority,
        // For the ordinary policy, the slice asked for.
        sched_runtime: slice_ns,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: the kernel only reads `attr`, which outlives the call; pid 0
    // is the calling thread.
    refused_if(unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) != 0 })
}

/// Sets the calling thread's nice value (Linux applies `setpriority` to a
/// single thread when given its thread id), leaving its policy and slice.
/// Lowering a priority is always allowed; raising one needs the privilege
/// described at the top.
fn set_this_threads_niceness(niceness: i32) -> std::io::Result<()> {
    // SAFETY: gettid and setpriority take plain integers and touch no
    // memory of ours.
    refused_if(unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, niceness) != 0
    })
}

/// The error of a system call that just failed, if `refused`.
fn refused_if(refused: bool) -> std::io::Result<()> {
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

    /// The calling thread's scheduling policy and nice value.
    fn this_threads_policy_and_niceness() -> (i32, i32) {
        // SAFETY: plain integers in and out.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            (
                libc::sched_getscheduler(0),
                libc::getpriority(libc::PRIO_PROCESS, tid),
            )
        }
    }

    #[test]
    fn the_acceptor_is_raised_and_threads_it_starts_are_not() {
        for asks_real_time in [false, true] {
            // Threads of their own: what is set here dies with them.
            std::thread::spawn(move || {
                let default_slice = this_threads_slice_ns();
                let priority = raise_this_thread_for_accepting(asks_real_time);
                match priority.real_time {
                    Ok(RealTime::Granted) => assert_eq!(
                        this_threads_policy_and_niceness().0,
                        libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK
                    ),
                    Ok(RealTime::NotAsked) | Err(_) => {
                        let policy = this_threads_policy_and_niceness().0;
                        assert_eq!(policy & !libc::SCHED_RESET_ON_FORK, libc::SCHED_OTHER);
                        if kernel_grants_slices() {
                            assert_eq!(this_threads_slice_ns(), ACCEPTOR_SLICE_NS)
                        }
                    }
                }
                std::thread::spawn(move || {
                    assert_eq!(this_threads_policy_and_niceness(), (libc::SCHED_OTHER, 0));
                    assert_eq!(this_threads_slice_ns(), default_slice);
                })
                .join()
                .unwrap();
            })
            .join()
            .unwrap();
        }
    }
}
