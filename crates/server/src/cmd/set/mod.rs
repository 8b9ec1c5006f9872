//! Set commands (and SSCAN, whose file serves HSCAN and ZSCAN too): Redis's `t_set.c`.

pub mod sadd;
pub mod setops;
pub mod sismember;
pub mod smove;
pub mod spop;
pub mod srandmember;
pub mod sscan;
