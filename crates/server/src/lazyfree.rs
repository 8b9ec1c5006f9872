//! Freeing large values off the request path.
//!
//! Dropping a value costs time proportional to its allocations; for a big
//! string that is one `free`, cheap enough inline, but big collections
//! (coming with the other data types) cost one free per element. Values
//! whose drop would take long are handed to a background thread, as Redis's
//! lazyfree does; small ones are dropped in place, where sending them would
//! cost more than freeing them. Each background free is timed into the
//! `keel-lazyfree` latency histogram.

use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use keel_store::Entry;

use crate::server::Server;
use crate::stats::Work;

/// Entries owning more heap than this are freed in the background.
const LAZY_FREE_THRESHOLD_BYTES: usize = 64 * 1024;

static QUEUE: OnceLock<mpsc::Sender<Box<dyn Send>>> = OnceLock::new();

/// Starts the lazyfree thread, which records into `server`'s statistics.
pub fn start(server: Arc<Server>) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<Box<dyn Send>>();
    std::thread::Builder::new()
        .name("keel-lazyfree".into())
        .spawn(move || {
            for value in rx {
                let started = Instant::now();
                drop(value);
                server.stats.record_work(Work::LazyFree, started.elapsed());
            }
        })?;
    // One server runs per process, so it is started once.
    let _ = QUEUE.set(tx);
    Ok(())
}

/// Drops `entry`, in the background if it is large.
pub fn free(entry: Entry) {
    if entry.heap_bytes() > LAZY_FREE_THRESHOLD_BYTES {
        free_in_background(entry);
    }
}

/// Drops anything on the lazyfree thread (FLUSHALL ASYNC's old shards).
/// Without the thread (not started, or gone as the process exits) the
/// value is dropped here, which is correct, only slower.
pub fn free_in_background<T: Send + 'static>(value: T) {
    if let Some(queue) = QUEUE.get() {
        let _ = queue.send(Box::new(value));
    }
}
