//! String commands: Redis's `t_string.c`.

pub mod append;
pub mod get;
pub mod getdel;
pub mod getex;
pub mod getrange;
pub mod getset;
pub mod incr;
pub mod incrbyfloat;
pub mod lcs;
pub mod mget;
pub mod mset;
pub mod set;
pub mod setrange;
pub mod strlen;
