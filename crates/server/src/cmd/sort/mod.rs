//! SORT and SORT_RO: Redis's `sort.c`.

pub mod sort_;
