//! Process memory and CPU figures for INFO, from jemalloc's statistics and
//! /proc.

use std::sync::atomic::{AtomicU64, Ordering};

/// Allocator figures at one instant.
pub struct MemorySample {
    /// Bytes allocated by the process (INFO used_memory).
    pub allocated: u64,
    /// Bytes in active pages.
    pub active: u64,
    /// Bytes resident (INFO used_memory_rss).
    pub resident: u64,
    /// Highest `allocated` seen.
    pub peak: u64,
    /// `allocated` when first sampled, near start-up.
    pub startup: u64,
    /// Physical memory of the machine.
    pub system: u64,
}

static PEAK: AtomicU64 = AtomicU64::new(0);
static STARTUP: AtomicU64 = AtomicU64::new(0);

/// Reads the allocator's current statistics.
pub fn sample() -> MemorySample {
    use tikv_jemalloc_ctl::{epoch, stats};
    let _ = epoch::advance();
    let allocated = stats::allocated::read().unwrap_or(0) as u64;
    let active = stats::active::read().unwrap_or(0) as u64;
    let resident = stats::resident::read().unwrap_or(0) as u64;
    let peak = PEAK.fetch_max(allocated, Ordering::Relaxed).max(allocated);
    let _ = STARTUP.compare_exchange(0, allocated, Ordering::Relaxed, Ordering::Relaxed);
    MemorySample {
        allocated,
        active,
        resident,
        peak,
        startup: STARTUP.load(Ordering::Relaxed),
        system: system_memory(),
    }
}

/// Asks jemalloc to give the pages it holds free back to the system, in
/// every arena (MEMORY PURGE).
pub fn purge() {
    // "arena.<MALLCTL_ARENAS_ALL>.purge".
    mallctl_action(c"arena.4096.purge");
}

/// Returns the freed regions this thread's allocator cache holds to their
/// slabs (jemalloc's `thread.tcache.flush`). A thread that freed many
/// small blocks and then went quiet keeps up to a few hundred of each size
/// cached, and each pins its slab: after 300,000 keys less 90% and active
/// defragmentation, a worker's cache still held 168 of 232 slabs of the
/// keys' size class.
pub fn flush_thread_cache() {
    mallctl_action(c"thread.tcache.flush");
}

/// Calls a jemalloc control that reads and writes nothing: an action.
fn mallctl_action(name: &std::ffi::CStr) {
    // SAFETY: a NUL-terminated name, and null old/new pointers with zero
    // lengths, as an action takes.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
}

/// jemalloc's own statistics report (MEMORY MALLOC-STATS), between the
/// markers Redis puts around it.
pub fn malloc_stats() -> String {
    unsafe extern "C" fn append(report: *mut std::ffi::c_void, text: *const std::ffi::c_char) {
        // SAFETY: `report` is the String passed below, alive for the whole
        // call; jemalloc passes NUL-terminated text.
        let (report, text) = unsafe {
            (
                &mut *report.cast::<String>(),
                std::ffi::CStr::from_ptr(text),
            )
        };
        report.push_str(&text.to_string_lossy());
    }
    let mut report = String::from("___ Begin jemalloc statistics ___\n");
    // SAFETY: the callback only appends to `report`, which outlives the
    // call; null options mean jemalloc's defaults.
    unsafe {
        tikv_jemalloc_sys::malloc_stats_print(
            Some(append),
            (&mut report as *mut String).cast(),
            std::ptr::null(),
        );
    }
    report.push_str("--- End jemalloc statistics ---\n");
    report
}

/// The machine's memory, read once: it does not change while keel runs.
fn system_memory() -> u64 {
    static SYSTEM: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SYSTEM.get_or_init(read_system_memory)
}

fn read_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0)
}

/// User and system CPU seconds used by the process, from /proc/self/stat.
pub fn cpu_seconds() -> (f64, f64) {
    const TICKS_PER_SECOND: f64 = 100.0;
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after
    // the last ')'; utime and stime are the 12th and 13th of those.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) / TICKS_PER_SECOND, ticks(12) / TICKS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use keel_store::size_class::allocated;

    /// The store counts each allocation by the size class it computes;
    /// this checks those against the allocator keel-server runs with.
    #[test]
    fn the_stores_size_classes_are_jemallocs() {
        let sizes = (1..=4096).chain((4097..=1 << 21).step_by(997));
        for requested in sizes {
            let block = Vec::<u8>::with_capacity(requested);
            // SAFETY: the pointer is a live allocation of jemalloc's, the
            // global allocator of this crate.
            let usable = unsafe { tikv_jemallocator::usable_size(block.as_ptr()) };
            assert_eq!(allocated(requested), usable, "request of {requested}");
        }
    }
}
