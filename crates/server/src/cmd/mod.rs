//! Commands, grouped by family in folders as Redis groups them in source
//! files: `string/` (`t_string.c`), `list/` (`t_list.c`), `hash/`,
//! `set/`, `zset/`, `bitmap/` (`bitops.c`), `geo/` (`geo.c`), `hll/`
//! (`hyperloglog.c`), `sort/` (`sort.c`), `scripting/` (`eval.c`, `functions.c`),
//! `stream/` (`t_stream.c`), `generic/` (`db.c`, `expire.c`), `server/`,
//! `connection/`, `pubsub/`, `transactions/` (`multi.c`), `replication/`
//! (`replication.c`), `cluster/` (`cluster.c`). Each command is
//! one file (or one per small group of twins): a
//! [`Spec`](context::Spec) that says what the command is (name, arity,
//! flags, key positions, docs — what COMMAND INFO/DOCS report and what
//! dispatch checks) and a handler that parses its arguments and applies
//! itself, writing its reply straight into the connection's output buffer.
//! Container commands (CLIENT, CONFIG, OBJECT, ...) list their subcommands
//! as specs of their own, named `container|sub` as Redis names them in INFO
//! commandstats.
//!
//! The layering:
//! - [`context`]: what command files use (`Ctx`: the server, the caller,
//!   the reply writer and store access; `Spec`, errors, argument helpers)
//!   and, in its submodules, what several commands share. Command files
//!   depend on it only, never on each other (EXEC alone runs queued
//!   commands through [`dispatch`], as Redis's `execCommand` calls `call`).
//! - [`registry`]: lists every command's spec and builds the [`Table`].
//! - [`dispatch`]: runs a request, using the registry and the context:
//!   lookup, arity, authentication, maxmemory, MULTI queueing, statistics,
//!   latency, the slow log, serving blocked clients.

pub mod context;
pub mod dispatch;
pub mod registry;

mod bitmap;
mod cluster;
mod connection;
mod generic;
mod geo;
mod hash;
mod hll;
mod list;
mod pubsub;
mod replication;
mod scripting;
mod server;
mod set;
mod sort;
mod stream;
mod string;
mod transactions;
mod zset;

pub use context::transaction::unwatch_all;
pub use context::{parse_f64, Error};
pub use dispatch::{
    call_nested, execute, held_by_pause, is_quick, lookup, lookups_ahead, Execution, Lookup,
};
pub use registry::Table;
