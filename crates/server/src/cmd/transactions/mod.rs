//! Transactions: Redis's `multi.c`.

pub mod multi;
