//! Stream commands: Redis's `t_stream.c`.

pub mod xack;
pub mod xadd;
pub mod xclaim;
pub mod xdel;
pub mod xgroup;
pub mod xinfo;
pub mod xlen;
pub mod xpending;
pub mod xrange;
pub mod xread;
pub mod xsetid;
pub mod xtrim;
