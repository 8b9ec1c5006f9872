//! Hash commands: Redis's `t_hash.c`.

pub mod hdel;
pub mod hget;
pub mod hgetall;
pub mod hincrby;
pub mod hrandfield;
pub mod hset;
