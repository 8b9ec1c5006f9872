//! HyperLogLog commands: Redis's `hyperloglog.c`. The algorithms and the
//! byte representation are in `keel_store::hll`.

pub mod pfadd;
pub mod pfcount;
pub mod pfdebug;
pub mod pfmerge;
