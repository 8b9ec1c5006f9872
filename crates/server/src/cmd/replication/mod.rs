//! Replication commands: Redis's `replication.c`.

pub mod replconf;
pub mod replicaof;
pub mod role;
pub mod sync;
