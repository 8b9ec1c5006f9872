//! Freeing large values off the request path.
//!
//! Dropping a value costs time proportional to its allocations; for a big
//! string that is one `free`, cheap enough inline, but big collections
//! (coming with the other data types) cost one free per element. Values
//! whose drop would take long are handed to a background thread, as Redis's
//! lazyfree does; small ones are dropped in place, where sending them would
//! cost more than freeing them.

use std::sync::mpsc;
use std::sync::OnceLock;

use keel_store::Entry;

/// Entries owning more heap than this are freed in the background.
const LAZY_FREE_THRESHOLD_BYTES: usize = 64 * 1024;

static QUEUE: OnceLock<mpsc::Sender<Box<dyn Send>>> = OnceLock::new();

fn queue() -> &'static mpsc::Sender<Box<dyn Send>> {
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Box<dyn Send>>();
        std::thread::Builder::new()
            .name("keel-lazyfree".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .expect("spawning the lazyfree thread");
        tx
    })
}

/// Drops `entry`, in the background if it is large.
pub fn free(entry: Entry) {
    if entry.heap_bytes() > LAZY_FREE_THRESHOLD_BYTES {
        free_in_background(entry);
    }
}

/// Drops anything on the lazyfree thread (FLUSHALL ASYNC's old shards).
pub fn free_in_background<T: Send + 'static>(value: T) {
    // If the thread is gone (process exiting), dropping here is correct.
    let _ = queue().send(Box::new(value));
}
