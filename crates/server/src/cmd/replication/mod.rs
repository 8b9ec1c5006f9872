//! Replication commands: Redis's `replication.c`.

pub mod replconf;
pub mod sync;
