//! Commands: one file per command (or per small group of twins), each a
//! [`Spec`](context::Spec) that says what the command is (name, arity,
//! flags, key positions, docs — what COMMAND INFO/DOCS report and what
//! dispatch checks) and a handler that parses its arguments and applies
//! itself, writing its reply straight into the connection's output buffer.
//! Container commands (CLIENT, CONFIG, OBJECT, ...) list their subcommands
//! as specs of their own, named `container|sub` as Redis names them in INFO
//! commandstats.
//!
//! The layering:
//! - [`context`]: what command files use (`Ctx`, `Spec`, errors, argument
//!   helpers, the reply writer, store access). Command files depend on it
//!   only, never on each other.
//! - [`registry`]: the list of commands and the [`Table`] built from it.
//! - [`dispatch`]: runs a request, using the registry and the context.

pub mod context;
pub mod dispatch;
pub mod registry;

mod append;
mod auth;
mod blpop;
mod bzpop;
mod client;
mod command;
mod config;
mod copy;
mod dbsize;
mod debug;
mod del;
mod echo;
mod exists;
mod expire;
mod flush;
mod get;
mod getdel;
mod getex;
mod getrange;
mod getset;
mod hdel;
mod hello;
mod hget;
mod hgetall;
mod hincrby;
mod hrandfield;
mod hset;
mod incr;
mod incrbyfloat;
mod info;
mod keys;
mod latency;
mod lmove;
mod lpop;
mod lpos;
mod lpush;
mod lrange;
mod lset;
mod memory;
mod mget;
mod mset;
mod multi;
mod object;
mod persist;
mod ping;
mod publish;
mod quit;
mod randomkey;
mod rename;
mod reset;
mod sadd;
mod scan;
mod select;
mod set;
mod setops;
mod setrange;
mod shutdown;
mod sismember;
mod slowlog;
mod smove;
mod spop;
mod srandmember;
mod sscan;
mod strlen;
mod subscribe;
mod time;
mod ttl;
mod type_;
mod zadd;
pub mod zpop;
mod zrandmember;
mod zrange;
mod zscore;
mod zstore;

pub use context::transaction::unwatch_all;
pub use context::{parse_f64, Error};
pub use dispatch::{execute, is_quick, Execution};
pub use registry::Table;
