//! Active defragmentation's driver: when the walk of `keel_store::defrag`
//! runs, how hard, and which blocks jemalloc says should move.
//!
//! It follows Redis's `activedefrag` and its settings:
//!
//! - **When.** Fragmentation is what the allocator's active pages hold
//!   beyond its allocations (INFO `allocator_frag_bytes`, active minus
//!   allocated). With `activedefrag yes`, a walk starts once it passes both
//!   `active-defrag-ignore-bytes` and `active-defrag-threshold-lower`
//!   percent of the allocations. It stops at the end of a pass once
//!   fragmentation is below the lower threshold again. After a pass that
//!   moves nothing, the next waits 10 s: what is left is not the entry
//!   blocks' to fix.
//! - **How hard.** Every tick (100 ms), the walk works for a share of the
//!   tick, from `active-defrag-cycle-min` percent at the lower threshold to
//!   `active-defrag-cycle-max` at `active-defrag-threshold-upper`
//!   (INFO `active_defrag_running` shows the share). It works in steps of
//!   [`SLOTS_PER_STEP`] slots under one shard's write lock, so a request on
//!   that shard waits for one step at most (LATENCY HISTOGRAM
//!   keel-defrag-step). It runs on the maintenance thread, raised to the
//!   workers' priority while it walks (see `crate::priority`).
//! - **Which blocks.** The store offers each key's entry block and, for a
//!   value in a box, the box and the value's own buffer (see
//!   `keel_store::defrag`). jemalloc's `experimental.utilization.query` gives a
//!   block's slab (how many of its regions are free, out of how many) and
//!   its size class's slabs together. Redis's rule (its jemalloc patch's
//!   defrag hint), from the same figures: a block moves if its slab is not
//!   the one the size class allocates from now, is not full, and is at most
//!   as used as the size class's slabs on average. keel adds: or is less
//!   than half used. Redis's rule alone stalls after a mass deletion: with
//!   every slab about 10% used, a few near-empty slabs (regions that thread
//!   caches hold count as used) pull the average under every slab that
//!   holds keys, and in a run of 300,000 keys less 90% the walk stopped
//!   with active pages 2.7 times the allocations. New blocks and freed
//!   ones bypass the thread cache (`MALLOCX_TCACHE_NONE`), so a new block
//!   comes from the fullest slabs and a freed region does not come
//!   straight back to the next allocation. Each pass starts by asking the
//!   workers to flush their own thread caches: a quiet worker's cache keeps
//!   the regions of the keys it deleted, each pinning its slab.
//!
//! Redis's Debian package is built against the system's jemalloc, without
//! that patch, and refuses `activedefrag yes`; keel's jemalloc is stock too,
//! but version 5.3 answers the utilisation query, which is all the rule
//! needs.

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use keel_store::defrag::{DefragCursor, Relocate};

use crate::server::Server;
use crate::stats::Work;

/// How often the walk runs while it is active, and how often the settings
/// and fragmentation are looked at.
const TICK: Duration = Duration::from_millis(100);

/// How often the settings are looked at while `activedefrag` is off.
const DISABLED_CHECK: Duration = Duration::from_secs(1);

/// How long a pass that moved nothing keeps the next one from starting.
const REST_AFTER_FRUITLESS_PASS: Duration = Duration::from_secs(10);

/// Slots offered per step: one shard's write lock is held this long.
const SLOTS_PER_STEP: usize = 128;

/// Blocks moved, as INFO `active_defrag_hits` counts them.
static HITS: AtomicU64 = AtomicU64::new(0);
/// Blocks offered and left where they were (`active_defrag_misses`).
static MISSES: AtomicU64 = AtomicU64::new(0);
/// The share of each tick the walk works, in percent; 0 when it does not
/// run (`active_defrag_running`).
static RUNNING: AtomicU64 = AtomicU64::new(0);

/// What INFO reports of active defragmentation.
pub struct Report {
    /// Blocks moved.
    pub hits: u64,
    /// Blocks left where they were.
    pub misses: u64,
    /// The walk's share of each tick, in percent, or 0.
    pub running: u64,
}

/// Active defragmentation's counters.
pub fn report() -> Report {
    Report {
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        running: RUNNING.load(Ordering::Relaxed),
    }
}

/// The settings, read once a tick.
struct Settings {
    enabled: bool,
    ignore_bytes: u64,
    threshold_lower: u64,
    threshold_upper: u64,
    cycle_min: u64,
    cycle_max: u64,
}

impl Settings {
    fn read(server: &Server) -> Settings {
        let config = server.config.read();
        // The directives' own values and defaults (`redis_conf.rs`), which
        // CONFIG SET has checked to be numbers in range.
        let number = |name: &str| config.value(name).parse().unwrap_or_default();
        Settings {
            enabled: config.value("activedefrag") == "yes",
            ignore_bytes: number("active-defrag-ignore-bytes"),
            threshold_lower: number("active-defrag-threshold-lower"),
            threshold_upper: number("active-defrag-threshold-upper"),
            cycle_min: number("active-defrag-cycle-min"),
            cycle_max: number("active-defrag-cycle-max"),
        }
    }

    /// The share of a tick to work, in percent, at `frag_percent`; 0 for
    /// none. Between the thresholds it rises in proportion, as Redis's.
    fn effort(&self, frag_bytes: u64, frag_percent: u64) -> u64 {
        if !self.enabled || frag_bytes <= self.ignore_bytes || frag_percent < self.threshold_lower {
            return 0;
        }
        let span = self
            .threshold_upper
            .saturating_sub(self.threshold_lower)
            .max(1);
        let above = frag_percent.min(self.threshold_upper) - self.threshold_lower;
        let (low, high) = (self.cycle_min, self.cycle_max.max(self.cycle_min));
        low + (high - low) * above / span
    }
}

/// The allocator's fragmentation: bytes, and percent of the allocations.
fn fragmentation() -> (u64, u64) {
    let m = crate::memory::sample();
    let bytes = m.active.saturating_sub(m.allocated);
    (bytes, bytes * 100 / m.allocated.max(1))
}

/// Runs active defragmentation for as long as the server runs (a task of
/// the maintenance thread).
pub async fn run(server: Arc<Server>) {
    let Some(mut mover) = Jemalloc::new() else {
        crate::warning!("Active defragmentation is unavailable: jemalloc has no utilization query");
        return;
    };
    let mut cursor = DefragCursor::default();
    let mut moved_this_pass = 0;
    let mut rest_until = Instant::now();
    loop {
        let settings = Settings::read(&server);
        if !settings.enabled {
            RUNNING.store(0, Ordering::Relaxed);
            crate::clock::sleep_until_next(DISABLED_CHECK).await;
            continue;
        }
        crate::clock::sleep_until_next(TICK).await;
        let mid_pass = cursor != DefragCursor::default();
        let (frag_bytes, frag_percent) = fragmentation();
        let effort = match mid_pass {
            // A pass that started finishes, at the least effort at least.
            true => settings
                .effort(frag_bytes, frag_percent)
                .max(settings.cycle_min),
            false if Instant::now() < rest_until => 0,
            false => settings.effort(frag_bytes, frag_percent),
        };
        RUNNING.store(effort, Ordering::Relaxed);
        if effort == 0 {
            continue;
        }
        if !mid_pass {
            // Regions the workers' thread caches hold pin their slabs: the
            // pass that starts now could empty those slabs but for them.
            server
                .thread_cache_flush
                .send_modify(|flushes| *flushes += 1);
        }
        let budget = TICK * effort as u32 / 100;
        let started = Instant::now();
        // At the workers' priority while it takes their shard locks (see
        // `crate::priority`).
        let _priority = crate::priority::WorkersPriority::begin();
        while started.elapsed() < budget {
            let step_started = Instant::now();
            let step = server
                .store
                .defrag_step(&mut cursor, SLOTS_PER_STEP, &mut mover);
            (server.stats).record_work(Work::DefragStep, step_started.elapsed());
            HITS.fetch_add(step.moved, Ordering::Relaxed);
            MISSES.fetch_add(step.kept, Ordering::Relaxed);
            moved_this_pass += step.moved;
            if step.pass_done {
                // The next tick looks at fragmentation again; after a pass
                // that moved nothing, what is left is not the entry
                // blocks' to fix, and walking again at once would only
                // burn CPU.
                if std::mem::take(&mut moved_this_pass) == 0 {
                    rest_until = Instant::now() + REST_AFTER_FRUITLESS_PASS;
                }
                break;
            }
        }
    }
}

/// jemalloc's answer to `experimental.utilization.query` (its
/// `inspect_extent_util_stats_verbose_t`).
#[repr(C)]
#[derive(Default)]
struct Utilization {
    /// The address of the slab its size class allocates from now.
    slabcur: usize,
    /// Free regions of the block's slab.
    nfree: usize,
    /// Regions of the block's slab; 1 for an allocation of its own.
    nregs: usize,
    /// The slab's size in bytes (the allocation's own, outside a slab).
    size: usize,
    /// Free regions of the size class's slabs together.
    bin_nfree: usize,
    /// Regions of the size class's slabs together.
    bin_nregs: usize,
}

/// Moves blocks as Redis's defrag hint would, with jemalloc's own calls.
struct Jemalloc {
    /// The MIB of `experimental.utilization.query`, looked up once.
    query: Vec<usize>,
}

impl Jemalloc {
    /// `None` if this jemalloc has no utilization query.
    fn new() -> Option<Jemalloc> {
        let name = c"experimental.utilization.query";
        let mut mib = [0usize; 4];
        let mut len = mib.len();
        // SAFETY: a NUL-terminated name, and a MIB buffer of `len` entries.
        let failed = unsafe {
            tikv_jemalloc_sys::mallctlnametomib(name.as_ptr(), mib.as_mut_ptr(), &mut len)
        };
        (failed == 0).then(|| Jemalloc {
            query: mib[..len].to_vec(),
        })
    }

    fn utilization(&self, block: NonNull<u8>) -> Option<Utilization> {
        let mut answer = Utilization::default();
        let mut answer_len = std::mem::size_of::<Utilization>();
        let mut address = block.as_ptr().cast::<c_void>();
        // SAFETY: the query reads one pointer from `address` and writes
        // one `Utilization` (its C layout) to `answer`.
        let failed = unsafe {
            tikv_jemalloc_sys::mallctlbymib(
                self.query.as_ptr(),
                self.query.len(),
                (&mut answer as *mut Utilization).cast(),
                &mut answer_len,
                (&mut address as *mut *mut c_void).cast(),
                std::mem::size_of::<*mut c_void>(),
            )
        };
        (failed == 0 && answer_len == std::mem::size_of::<Utilization>()).then_some(answer)
    }
}

/// A block moves if its slab is not the one being allocated from, is not
/// full, and is at most as used as its size class's slabs on average, or
/// less than half used.
fn should_move(block: usize, u: &Utilization) -> bool {
    if u.nregs <= 1 || u.nfree == 0 || u.bin_nregs == 0 {
        return false;
    }
    if (u.slabcur..u.slabcur + u.size).contains(&block) {
        return false;
    }
    let used = (u.nregs - u.nfree) as u128;
    let bin_used = (u.bin_nregs - u.bin_nfree) as u128;
    let bin_slabs = (u.bin_nregs / u.nregs) as u128;
    used * bin_slabs <= bin_used || 2 * used < u.nregs as u128
}

/// `mallocx`/`sdallocx` flags for `layout` that bypass the thread cache.
fn bypassing_cache(layout: Layout) -> std::ffi::c_int {
    tikv_jemalloc_sys::MALLOCX_ALIGN(layout.align()) | tikv_jemalloc_sys::MALLOCX_TCACHE_NONE
}

// SAFETY: `mallocx` and `sdallocx` are the global allocator's own
// functions (keel-server's global allocator is this jemalloc).
unsafe impl Relocate for Jemalloc {
    fn should_move(&mut self, block: NonNull<u8>) -> bool {
        self.utilization(block)
            .is_some_and(|u| should_move(block.as_ptr() as usize, &u))
    }

    fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: the store never asks for a zero-sized block.
        let block = unsafe { tikv_jemalloc_sys::mallocx(layout.size(), bypassing_cache(layout)) };
        NonNull::new(block.cast())
    }

    unsafe fn free(&mut self, block: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller's contract: allocated with `layout`, by this
        // allocator, and referred to by nothing.
        unsafe {
            tikv_jemalloc_sys::sdallocx(
                block.as_ptr().cast(),
                layout.size(),
                bypassing_cache(layout),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slab(nfree: usize, bin_nfree: usize, bin_slabs: usize) -> Utilization {
        Utilization {
            slabcur: 0x10000,
            nfree,
            nregs: 100,
            size: 100 * 96,
            bin_nfree,
            bin_nregs: 100 * bin_slabs,
        }
    }

    #[test]
    fn blocks_on_emptier_slabs_than_average_move() {
        let elsewhere = 0x100000;
        // Ten slabs, 500 of 1000 regions used: 50 a slab on average.
        assert!(should_move(elsewhere, &slab(90, 500, 10)), "10 used");
        assert!(
            should_move(elsewhere, &slab(50, 500, 10)),
            "as used as average"
        );
        assert!(!should_move(elsewhere, &slab(40, 500, 10)), "60 used");
        assert!(
            should_move(elsewhere, &slab(60, 900, 100)),
            "40 used, over average"
        );
        assert!(!should_move(elsewhere, &slab(0, 500, 10)), "a full slab");
        let current = 0x10000 + 100 * 96 - 1;
        assert!(
            !should_move(current, &slab(90, 500, 10)),
            "the slab allocated from"
        );
        let large = Utilization {
            nregs: 1,
            ..slab(0, 0, 0)
        };
        assert!(!should_move(elsewhere, &large), "an allocation of its own");
    }

    #[test]
    fn effort_rises_from_cycle_min_to_max_between_the_thresholds() {
        let settings = Settings {
            enabled: true,
            ignore_bytes: 1000,
            threshold_lower: 10,
            threshold_upper: 100,
            cycle_min: 1,
            cycle_max: 25,
        };
        assert_eq!(settings.effort(500, 50), 0, "under ignore-bytes");
        assert_eq!(settings.effort(5000, 5), 0, "under the lower threshold");
        assert_eq!(settings.effort(5000, 10), 1);
        assert_eq!(settings.effort(5000, 55), 13);
        assert_eq!(settings.effort(5000, 100), 25);
        assert_eq!(settings.effort(5000, 400), 25);
        let disabled = Settings {
            enabled: false,
            ..settings
        };
        assert_eq!(disabled.effort(5000, 100), 0);
    }

    /// jemalloc answers the query this driver relies on, with figures
    /// that describe a real block.
    #[test]
    fn jemalloc_answers_the_utilization_query() {
        let mover = Jemalloc::new().expect("experimental.utilization.query exists");
        let mut mover = mover;
        let layout = Layout::from_size_align(96, 8).unwrap();
        let block = mover.allocate(layout).expect("allocated");
        let u = mover.utilization(block).expect("answered");
        assert_eq!(u.size % (96 * u.nregs), 0, "a slab of 96-byte regions");
        assert!(
            u.nregs > 1 && u.nfree < u.nregs,
            "a slab holding this block"
        );
        assert!(u.bin_nregs >= u.nregs, "the size class counts this slab");
        // SAFETY: allocated just above with this layout.
        unsafe { mover.free(block, layout) };
    }
}
