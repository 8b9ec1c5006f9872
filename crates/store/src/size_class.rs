//! What an allocation really takes: the size class the allocator rounds a
//! request up to.
//!
//! keel-server allocates with jemalloc, which serves every request from a
//! size class: multiples of 16 bytes up to 128, then four classes per
//! doubling (160, 192, 224, 256, 320, ...), the same pattern for large
//! allocations. A 16 KB value with its key and header is a request of
//! 16,420 bytes and takes 20,480. Counting requested bytes left up to a
//! fifth of such a dataset out of the accounting, so `maxmemory` did not
//! bound what the keys really held; every size the store accounts goes
//! through [`allocated`]. (Redis counts the same way, with jemalloc's
//! usable size of each allocation.)

/// Bytes the allocator takes to serve a request of `requested` bytes; 0
/// for none, as an empty `Vec` or `Box<[u8]>` allocates nothing.
pub fn allocated(requested: usize) -> usize {
    match requested {
        0 => 0,
        1..=8 => 8,
        9..=128 => requested.next_multiple_of(16),
        _ => {
            // Four classes per doubling: the spacing is an eighth of the
            // power of two at or above the request.
            let spacing = requested.next_power_of_two() >> 3;
            requested.next_multiple_of(spacing)
        }
    }
}

/// Entries a node of std's B-tree holds at most (`CAPACITY` in
/// `alloc::collections::btree::node`: 2B - 1 with B = 6).
const BTREE_NODE_CAPACITY: usize = 11;
/// Entries every node but the root holds at least: a full node splits
/// into halves of 5 and 6, and a removal that leaves a node under 5 merges
/// it or moves an entry into it from a sibling (`MIN_LEN` in std).
const BTREE_NODE_MIN_LEN: usize = 5;

/// An upper bound of what a std `BTreeMap<K, V>` of `len` entries
/// allocates (a `BTreeSet<K>` is one with zero-sized values: pass `()`).
///
/// std does not expose its nodes, so this follows their layout: a leaf
/// holds a parent pointer, two `u16`s and room for 11 keys and 11 values;
/// an internal node is a leaf plus 12 child pointers. Counting every node
/// as an internal one, the root (which may hold a single entry) as a whole
/// node and every other node as shared by at least 5 entries gives
/// `root + len * ceil(node / 5)`: for `BTreeMap<u64, VecDeque<u64>>` a
/// 552-byte node served from the 640-byte class, 640 + 128 per entry. 0
/// for an empty map, which allocates nothing — but std keeps the root leaf
/// of a map emptied by removals, so an owner counting it this way replaces
/// such a map with a new one.
pub fn btree_bound<K, V>(len: usize) -> usize {
    use std::mem::{align_of, size_of};
    if len == 0 {
        return 0;
    }
    let align = align_of::<usize>()
        .max(align_of::<K>())
        .max(align_of::<V>());
    let leaf = size_of::<usize>()
        + 2 * size_of::<u16>()
        + BTREE_NODE_CAPACITY * (size_of::<K>() + size_of::<V>());
    let internal = leaf.next_multiple_of(align) + (BTREE_NODE_CAPACITY + 1) * size_of::<usize>();
    let node = allocated(internal.next_multiple_of(align));
    node + len * node.div_ceil(BTREE_NODE_MIN_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn btree_bound_counts_a_whole_root_and_half_full_nodes() {
        use std::collections::VecDeque;
        assert_eq!(btree_bound::<u64, VecDeque<u64>>(0), 0);
        // Nodes of 11 (u64, VecDeque<u64>) entries: 456-byte leaves,
        // 552-byte internal nodes in the 640-byte class.
        assert_eq!(btree_bound::<u64, VecDeque<u64>>(1), 640 + 128);
        assert_eq!(btree_bound::<u64, VecDeque<u64>>(10), 640 + 10 * 128);
        // A set of (u64, u32): 192-byte leaves, 288-byte internal nodes in
        // the 320-byte class.
        assert_eq!(btree_bound::<(u64, u32), ()>(3), 320 + 3 * 64);
    }

    #[test]
    fn requests_round_up_to_jemallocs_size_classes() {
        let classes = [
            (1, 8),
            (8, 8),
            (9, 16),
            (86, 96),
            (128, 128),
            (129, 160),
            (200, 224),
            (256, 256),
            (257, 320),
            (4097, 5120),
            (16_384, 16_384),
            (16_420, 20_480),
            (1 << 20, 1 << 20),
            ((1 << 20) + 1, (1 << 20) + (1 << 18)),
        ];
        for (requested, class) in classes {
            assert_eq!(allocated(requested), class, "request of {requested}");
        }
        assert_eq!(allocated(0), 0);
    }
}
