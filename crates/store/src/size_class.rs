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

#[cfg(test)]
mod tests {
    use super::*;

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
