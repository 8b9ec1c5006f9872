//! Sorted-set commands, the blocking pops included: Redis's `t_zset.c`.

pub mod bzpop;
pub mod zadd;
pub mod zmpop;
pub mod zpop;
pub mod zrandmember;
pub mod zrange;
pub mod zscore;
pub mod zstore;
