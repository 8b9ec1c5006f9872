//! Server commands: Redis's `acl.c` (ACL), `server.c`, `config.c`, `debug.c`, `latency.c`, `slowlog.c`, `object.c` (MEMORY), `replication.c` (WAIT) and `lolwut.c`.

pub mod acl;
pub mod command;
pub mod config;
pub mod dbsize;
pub mod debug;
pub mod flush;
pub mod info;
pub mod latency;
pub mod lolwut;
pub mod memory;
pub mod monitor;
pub mod save;
pub mod shutdown;
pub mod slowlog;
pub mod time;
pub mod wait;
