//! Active defragmentation: moving live entry blocks out of allocator pages
//! that deletions left sparse, so the pages can go back to the system.
//!
//! keel's entry blocks never move on their own: a key keeps its slot (SCAN's
//! guarantee) and its block while it lives. After a mass deletion at random
//! (a cache whose working set shrank, a FLUSH of most keys by pattern), the
//! survivors are spread over nearly every page the allocator had: a shard
//! that keeps 5% of its keys keeps the resident memory of all of them,
//! because an allocator page (a jemalloc slab) is returned only once every
//! block on it is free.
//!
//! Redis answers this with active defragmentation, and so does keel, in the
//! same way: a background walk offers each live block to a [`Relocate`]
//! policy, which asks the allocator how full the block's slab is. A block
//! on a slab fuller than its size class's average stays; a block on an
//! emptier one is copied to a fresh allocation, which the allocator takes
//! from its fullest slabs, and the old block is freed. Repeated, this
//! empties the sparse slabs and packs the full ones, and the emptied slabs
//! are returned to the system.
//!
//! What moves here is the entry block: the access word, the header, the key
//! and an inline value (a string written whole, an integer). A value held
//! in a box (a collection, a string grown in place) stays where it is.
//! Every structure refers to an entry by slot number (the hash index, the
//! deadline index, the S3-FIFO queues, a snapshot's walk), never by
//! address, so a move changes nothing any of them sees. A move happens
//! under the shard's write lock, so no reader holds the block meanwhile.
//!
//! The store knows nothing of the allocator: the server supplies the
//! [`Relocate`] policy (jemalloc's slab utilisation, allocations that
//! bypass the thread cache), and tests supply their own.

use std::alloc::Layout;
use std::ptr::NonNull;

/// Which blocks move, and where to: what the allocator knows.
///
/// # Safety
///
/// A block from [`Relocate::allocate`] is later freed with
/// `std::alloc::dealloc` (when its key goes), and [`Relocate::free`] is
/// given blocks that `std::alloc::alloc` allocated: both must be the
/// global allocator's.
pub unsafe trait Relocate {
    /// Whether the block at `block` should move.
    fn should_move(&mut self, block: NonNull<u8>) -> bool;
    /// A block for `layout` where it packs best; `None` to leave the block
    /// where it is.
    fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>>;
    /// Frees a block that moved.
    ///
    /// # Safety
    ///
    /// `block` was allocated with `layout` and nothing refers to it.
    unsafe fn free(&mut self, block: NonNull<u8>, layout: Layout);
}

/// Where a walk over the whole keyspace is: the next slot to offer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefragCursor {
    /// The database.
    pub db: usize,
    /// The shard of the database.
    pub shard: usize,
    /// The slot of the shard.
    pub slot: u32,
}

/// What one step of the walk did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefragStep {
    /// Blocks moved (Redis's INFO `active_defrag_hits`).
    pub moved: u64,
    /// Blocks offered and left where they were (`active_defrag_misses`).
    pub kept: u64,
    /// True if the step finished a pass over every database: the cursor is
    /// back at the start.
    pub pass_done: bool,
}
