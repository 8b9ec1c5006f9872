//! What a script needs from the server: running a command for
//! `redis.call` and checking one for `redis.acl_check_cmd`.

use bytes::Bytes;
use keel_resp::{Frame, Protocol};

/// Levels of `redis.log`, as Redis numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug = 0,
    Verbose = 1,
    Notice = 2,
    Warning = 3,
}

/// The server side of a running script.
pub trait Host {
    /// Runs `args` (the command name first) for `redis.call` or
    /// `redis.pcall`, replying in `protocol` (`redis.setresp`). `Err` is a
    /// refusal before the command ran, worded as Redis words it: either
    /// `-CODE message` or a message that takes the code `ERR`.
    fn call(&mut self, args: Vec<Bytes>, protocol: Protocol) -> Result<Frame, String>;

    /// `redis.acl_check_cmd`: whether the caller may run `args`; `None`
    /// when there is no such command.
    fn may_run(&mut self, args: &[Bytes]) -> Option<bool>;
}

/// Where `redis.log` lines go: the server's log, at `level`.
pub type Logger = std::sync::Arc<dyn Fn(LogLevel, &[u8]) + Send + Sync>;
