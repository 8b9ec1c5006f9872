//! Generic keyspace commands (Redis's `generic` group, and SWAPDB): `db.c`, `expire.c`,
//! `object.c`, and DUMP, RESTORE and MIGRATE from `cluster.c`.

pub mod copy;
pub mod del;
pub mod dump;
pub mod exists;
pub mod expire;
pub mod keys;
pub mod migrate;
pub mod move_;
pub mod object;
pub mod persist;
pub mod randomkey;
pub mod rename;
pub mod restore;
pub mod scan;
pub mod swapdb;
pub mod ttl;
pub mod type_;
