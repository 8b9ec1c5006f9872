//! List commands, the blocking pops included: Redis's `t_list.c`.

pub mod blpop;
pub mod lmove;
pub mod lmpop;
pub mod lpop;
pub mod lpos;
pub mod lpush;
pub mod lrange;
pub mod lset;
