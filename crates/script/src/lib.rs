//! keel-script: Lua scripting as Redis 7 embeds it.
//!
//! Bytes in, replies out: this crate holds the Lua 5.1 state (built from
//! source by `mlua`), its sandbox, the libraries Redis makes visible to
//! scripts, the EVAL script cache and the FUNCTION libraries. It knows
//! nothing of sockets, shards or the keyspace: a script's `redis.call`
//! goes to a [`Host`] the server provides, as RESP in and RESP out.

mod convert;
mod eval;
mod flags;
mod functions;
mod host;
pub mod libs;
mod rand48;
mod vm;

pub use eval::{sha1_hex, Scripts, MAX_EVAL_SCRIPTS};
pub use flags::{shebang_flags, ScriptFlags};
pub use functions::{Functions, RestorePolicy};
pub use host::{Host, LogLevel, Logger};
pub use vm::{Control, Invocation, Vm, REDIS_VERSION};
