//! Active defragmentation: moving the live blocks of keys out of allocator
//! pages that deletions left sparse, so the pages can go back to the system.
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
//! on a slab that is full enough stays; a block on an emptier one is copied
//! to a fresh allocation, which the allocator takes from its fullest slabs,
//! and the old block is freed (the server's policy and its thresholds are
//! in its own `defrag.rs`). Repeated, this empties the sparse slabs and
//! packs the full ones, and the emptied slabs are returned to the system.
//!
//! What moves here is the entry block (the access word, the header, the key
//! and an inline value: a string written whole, an integer), and for a
//! value held in a box, the box and the value's own buffer where it has one
//! (a string grown in place, a small hash, set, sorted set or list in one
//! listpack or integer array). A large collection's inner structures (its
//! hash table, tree or chunks) stay where they are.
//!
//! Every structure refers to an entry by slot number (the hash index, the
//! deadline index, the S3-FIFO queues, a snapshot's walk), never by
//! address, and a value's box is referred to only by its entry block,
//! which the move rewrites; so a move changes nothing any of them sees. A
//! move happens under the shard's write lock, so no reader holds a block
//! meanwhile.
//!
//! The store knows nothing of the allocator: the server supplies the
//! [`Relocate`] policy (jemalloc's slab utilisation, allocations that
//! bypass the thread cache), and tests supply their own.

use std::alloc::Layout;
use std::ptr::{self, NonNull};

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

/// Moves `block` (`layout.size()` bytes) where `mover` allocates, if
/// `mover` asks for it; the new block, or `None` if it stayed. The caller
/// points its owner at the new block.
///
/// # Safety
///
/// `block` was allocated with `layout` by the global allocator, its owner
/// is borrowed mutably by the caller (nothing reads or writes it
/// meanwhile), and once this returns a new block, the old one must not be
/// used again.
pub(crate) unsafe fn move_block(
    block: NonNull<u8>,
    layout: Layout,
    mover: &mut dyn Relocate,
) -> Option<NonNull<u8>> {
    if layout.size() == 0 || !mover.should_move(block) {
        return None;
    }
    let new = mover.allocate(layout)?;
    // SAFETY: both blocks are `layout.size()` bytes, a fresh allocation
    // overlaps nothing, and the caller's contract covers the old block.
    unsafe {
        ptr::copy_nonoverlapping(block.as_ptr(), new.as_ptr(), layout.size());
        mover.free(block, layout);
    }
    Some(new)
}

/// Moves a box's allocation (see [`Relocate`]); true if it moved.
pub(crate) fn relocate_box<T>(boxed: &mut Box<T>, mover: &mut dyn Relocate) -> bool {
    let layout = Layout::new::<T>();
    let old = NonNull::from(&mut **boxed).cast::<u8>();
    // SAFETY: a box's allocation, with `T`'s layout, owned by `boxed`.
    let Some(new) = (unsafe { move_block(old, layout, mover) }) else {
        return false;
    };
    // SAFETY: the new block holds the box's value, bit for bit; the old
    // box's allocation is freed, so it is forgotten rather than dropped.
    unsafe { ptr::write(boxed, Box::from_raw(new.as_ptr().cast::<T>())) };
    true
}

/// Moves a boxed slice's allocation (see [`Relocate`]); true if it moved.
pub(crate) fn relocate_slice<T: Copy>(slice: &mut Box<[T]>, mover: &mut dyn Relocate) -> bool {
    let (len, layout) = (slice.len(), Layout::for_value::<[T]>(slice));
    let Some(old) = NonNull::new(slice.as_mut_ptr().cast::<u8>()) else {
        return false;
    };
    // SAFETY: the slice's allocation (none for an empty one, which
    // `move_block` leaves), with this layout, owned by `slice`.
    let Some(new) = (unsafe { move_block(old, layout, mover) }) else {
        return false;
    };
    // SAFETY: as in `relocate_box`, for `len` elements.
    unsafe {
        let moved = ptr::slice_from_raw_parts_mut(new.as_ptr().cast::<T>(), len);
        ptr::write(slice, Box::from_raw(moved));
    }
    true
}

/// Moves a vector's allocation, spare capacity included (see
/// [`Relocate`]); true if it moved.
pub(crate) fn relocate_vec(vec: &mut Vec<u8>, mover: &mut dyn Relocate) -> bool {
    let (len, capacity) = (vec.len(), vec.capacity());
    let Ok(layout) = Layout::array::<u8>(capacity) else {
        return false;
    };
    let Some(old) = NonNull::new(vec.as_mut_ptr()) else {
        return false;
    };
    // SAFETY: the vector's allocation (none without capacity, which
    // `move_block` leaves), with this layout, owned by `vec`.
    let Some(new) = (unsafe { move_block(old, layout, mover) }) else {
        return false;
    };
    // SAFETY: as in `relocate_box`; the first `len` bytes were copied.
    unsafe { ptr::write(vec, Vec::from_raw_parts(new.as_ptr(), len, capacity)) };
    true
}
