//! Freeing removed values off the request path, as Redis's lazyfree does,
//! and never under a shard lock.
//!
//! Dropping a value costs time proportional to its allocations: one `free`
//! for a string, one per element for a big collection. Every value a
//! command, eviction or expiry removes comes here with its [`Cause`], and
//! the directive for that cause decides, as in Redis 7:
//!
//! | cause | directive | default |
//! |---|---|---|
//! | the eviction policy chose it | `lazyfree-lazy-eviction` | no |
//! | its TTL ran out | `lazyfree-lazy-expire` | no |
//! | a command replaced or emptied it (SET, RENAME, *STORE over a key) | `lazyfree-lazy-server-del` | no |
//! | DEL | `lazyfree-lazy-user-del` | no |
//! | FLUSHDB / FLUSHALL without ASYNC or SYNC | `lazyfree-lazy-user-flush` | no |
//! | UNLINK, FLUSHDB / FLUSHALL ASYNC | always | |
//!
//! A lazy free sends the value to the `keel-lazyfree` thread when dropping
//! it would take long: an entry owning more than 64 KB of heap (or a
//! stream of more than 64 allocations, as Redis counts its nodes), a
//! flushed shard holding keys. Smaller ones are dropped in place, where sending
//! them would cost more than freeing them. Whatever the choice, a value is
//! never dropped under a shard lock: in-place drops go through
//! [`keel_store::drop_unlocked`], which waits for the thread's last lock
//! to be released. Each background free is timed into the `keel-lazyfree`
//! latency histogram.
//!
//! The queue is bounded. Evicted and expired values leave the dataset's
//! count when they are unlinked, while their memory stays allocated until
//! they are dropped, so a lazyfree thread that falls behind would let RSS
//! grow past `maxmemory` without limit. Queued values' bytes are counted
//! (INFO `lazyfree_pending_bytes`, beside Redis's
//! `lazyfree_pending_objects`), and once they reach
//! [`PENDING_BYTES_BOUND`] further values are dropped in place instead
//! (still after the lock): that thread pays for the free, and memory
//! waiting to be freed stays under the bound plus the one value that
//! crossed it (a value larger than the bound is still freed in the
//! background when the queue is idle). 64 MB is about 50 ms of the
//! thread's work on small collection elements and, like
//! `maxmemory-clients`' default, a fixed share of the overhead beyond
//! `maxmemory`; a FLUSHALL ASYNC of a larger dataset queues shards until
//! the bound and frees the rest in place.
//!
//! Trade-offs: with every directive at Redis's default `no`, big evicted or
//! expired values are freed by the thread that removed them: the
//! maintenance thread for background eviction and active expiry (off the
//! request path already), a worker for inline eviction and for expired keys
//! a command meets. `yes` moves those frees to the lazyfree thread at the
//! cost of memory held a little longer.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use keel_store::{drop_unlocked, Entry, Shard};

use crate::server::Server;
use crate::stats::Work;

/// Entries owning more heap than this are worth freeing in the background.
const LAZY_FREE_THRESHOLD_BYTES: usize = 64 * 1024;

/// So are values whose free walks more allocations than this, where their
/// bytes understate it (streams, see `ValueRef::free_effort`): Redis's
/// `LAZYFREE_THRESHOLD`.
const LAZY_FREE_THRESHOLD_EFFORT: usize = 64;

/// The most bytes waiting in the queue; past it, values are freed in place.
pub const PENDING_BYTES_BOUND: usize = 64 << 20;

/// The lazyfree directives (`lazyfree-lazy-*`, `replica-lazy-flush`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// `lazyfree-lazy-eviction`.
    pub eviction: bool,
    /// `lazyfree-lazy-expire`.
    pub expire: bool,
    /// `lazyfree-lazy-server-del`.
    pub server_del: bool,
    /// `lazyfree-lazy-user-del`.
    pub user_del: bool,
    /// `lazyfree-lazy-user-flush`.
    pub user_flush: bool,
    /// `replica-lazy-flush`: kept for CONFIG and keel.conf; keel has no
    /// replication, so nothing reads it.
    pub replica_flush: bool,
}

/// Why a value is being freed: which directive decides where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Evicted by the maxmemory policy.
    Eviction,
    /// Its TTL ran out.
    Expire,
    /// Replaced or removed by a command as a side effect.
    ServerDel,
    /// DEL.
    UserDel,
    /// FLUSHDB or FLUSHALL without a mode.
    UserFlush,
    /// UNLINK or an ASYNC flush: always in the background.
    Unlink,
}

/// The directives' current values, by [`Cause`] (all but `Unlink`).
static LAZY: [AtomicBool; 5] = [const { AtomicBool::new(false) }; 5];

static PENDING_BYTES: AtomicUsize = AtomicUsize::new(0);
static PENDING_OBJECTS: AtomicU64 = AtomicU64::new(0);
static FREED_OBJECTS: AtomicU64 = AtomicU64::new(0);

/// One value on its way to the lazyfree thread, with what it counts for.
struct Job {
    value: Box<dyn Send>,
    bytes: usize,
    objects: u64,
}

static QUEUE: OnceLock<mpsc::Sender<Job>> = OnceLock::new();

impl Cause {
    fn is_lazy(self) -> bool {
        let index = match self {
            Cause::Unlink => return true,
            Cause::Eviction => 0,
            Cause::Expire => 1,
            Cause::ServerDel => 2,
            Cause::UserDel => 3,
            Cause::UserFlush => 4,
        };
        LAZY[index].load(Ordering::Relaxed)
    }
}

/// Follows the directives (from `apply_config`).
pub fn configure(settings: &Settings) {
    let flags = [
        settings.eviction,
        settings.expire,
        settings.server_del,
        settings.user_del,
        settings.user_flush,
    ];
    for (lazy, on) in LAZY.iter().zip(flags) {
        lazy.store(on, Ordering::Relaxed);
    }
}

/// Starts the lazyfree thread, which records into `server`'s statistics.
pub fn start(server: Arc<Server>) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("keel-lazyfree".into())
        .spawn(move || {
            for job in rx {
                let started = Instant::now();
                drop(job.value);
                release(job.bytes, job.objects);
                FREED_OBJECTS.fetch_add(job.objects, Ordering::Relaxed);
                server.stats.record_work(Work::LazyFree, started.elapsed());
            }
        })?;
    // One server runs per process, so it is started once.
    let _ = QUEUE.set(tx);
    Ok(())
}

/// Frees `entry`, replaced or removed by a command as a side effect
/// (`lazyfree-lazy-server-del`).
pub fn free(entry: Entry) {
    free_as(Cause::ServerDel, entry);
}

/// Frees `entry`, whose TTL ran out (`lazyfree-lazy-expire`).
pub fn free_expired(entry: Entry) {
    free_as(Cause::Expire, entry);
}

/// Frees `entry`, evicted (`lazyfree-lazy-eviction`).
pub fn free_evicted(entry: Entry) {
    free_as(Cause::Eviction, entry);
}

/// Frees `entry`, removed for `cause`.
pub fn free_as(cause: Cause, entry: Entry) {
    if !cause.is_lazy() {
        return drop_unlocked(entry);
    }
    let bytes = entry.heap_bytes();
    let costly = bytes > LAZY_FREE_THRESHOLD_BYTES
        || entry.value().free_effort() > LAZY_FREE_THRESHOLD_EFFORT;
    dispose(entry, bytes, 1, costly);
}

/// Frees a flushed database's old shards: in the background when `asked`
/// says ASYNC, in place when it says SYNC, and as
/// `lazyfree-lazy-user-flush` says without a mode.
pub fn free_flushed(shards: Vec<Shard>, asked: Option<bool>) {
    let lazy = asked.unwrap_or_else(|| Cause::UserFlush.is_lazy());
    for shard in shards {
        let (bytes, objects) = (shard.used_bytes(), shard.len() as u64);
        dispose(shard, bytes, objects, lazy && objects > 0);
    }
}

/// Queues `value` if `lazy` and the bound leaves room, otherwise drops it
/// once this thread holds no shard lock.
fn dispose<T: Send + 'static>(value: T, bytes: usize, objects: u64, lazy: bool) {
    let queue = QUEUE.get().filter(|_| lazy);
    match queue {
        Some(queue) if reserve(bytes, objects) => {
            let job = Job {
                value: Box::new(value),
                bytes,
                objects,
            };
            if let Err(mpsc::SendError(job)) = queue.send(job) {
                // The thread is gone (the process is exiting).
                release(job.bytes, job.objects);
                drop_unlocked(job.value);
            }
        }
        _ => drop_unlocked(value),
    }
}

/// Counts `bytes` and `objects` as queued, unless the queue already holds
/// [`PENDING_BYTES_BOUND`] bytes or more; false then. The value that
/// crosses the bound is still queued, so a value larger than the bound
/// itself is freed in the background too, when the queue is idle.
fn reserve(bytes: usize, objects: u64) -> bool {
    let reserved = PENDING_BYTES.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |pending| {
        (pending < PENDING_BYTES_BOUND).then(|| pending + bytes)
    });
    if reserved.is_ok() {
        PENDING_OBJECTS.fetch_add(objects, Ordering::Relaxed);
    }
    reserved.is_ok()
}

/// Ends what [`reserve`] counted: freed, or not queued after all.
fn release(bytes: usize, objects: u64) {
    PENDING_BYTES.fetch_sub(bytes, Ordering::Relaxed);
    PENDING_OBJECTS.fetch_sub(objects, Ordering::Relaxed);
}

/// INFO memory's lazyfree figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// Objects queued and not freed yet (`lazyfree_pending_objects`).
    pub objects: u64,
    /// Their bytes (`lazyfree_pending_bytes`), at most
    /// [`PENDING_BYTES_BOUND`].
    pub bytes: usize,
    /// Objects the thread has freed (`lazyfreed_objects`).
    pub freed: u64,
}

/// What the queue holds and has freed.
pub fn pending() -> Pending {
    Pending {
        objects: PENDING_OBJECTS.load(Ordering::Relaxed),
        bytes: PENDING_BYTES.load(Ordering::Relaxed),
        freed: FREED_OBJECTS.load(Ordering::Relaxed),
    }
}

/// CONFIG RESETSTAT: `lazyfreed_objects` starts again from 0, as in Redis.
pub fn reset_stats() {
    FREED_OBJECTS.store(0, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The only test that touches the queue's counters.
    #[test]
    fn the_queue_takes_nothing_once_it_holds_its_bound() {
        let before = pending();
        let below = PENDING_BYTES_BOUND - before.bytes - 1;
        assert!(reserve(below, 3));
        assert!(reserve(PENDING_BYTES_BOUND, 1), "one byte below: taken");
        assert!(!reserve(1, 1), "past the bound: freed in place");
        assert_eq!(pending().bytes, 2 * PENDING_BYTES_BOUND - 1);
        assert_eq!(pending().objects, before.objects + 4);
        release(below, 3);
        release(PENDING_BYTES_BOUND, 1);
        assert_eq!(pending(), before);
        assert!(
            reserve(2 * PENDING_BYTES_BOUND, 1),
            "a value larger than the bound goes when the queue is idle"
        );
        release(2 * PENDING_BYTES_BOUND, 1);
    }
}
