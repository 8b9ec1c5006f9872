//! Software prefetch: asking the CPU to start loading memory that a
//! coming step will read, so that several loads are in flight at once.

/// Starts loading the cache line holding `at` into every cache level. A
/// hint only: it never faults, whatever the address, and does nothing on
/// targets without the instruction.
#[inline(always)]
pub(crate) fn read<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and cannot fault,
    // whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
