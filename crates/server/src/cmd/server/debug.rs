//! DEBUG SLEEP seconds | DEBUG PANIC | DEBUG HELP — the parts of Redis's
//! DEBUG that tests and tools rely on.
//!
//! DEBUG is refused unless `enable-debug-command` allows it (`yes`, or
//! `local` for loopback clients), as in Redis 7.
//!
//! DEBUG SLEEP stalls the calling connection for the given time (its
//! pipelined commands wait behind it). Redis stalls its one thread, and so
//! every client; keel has no single thread to stall, which is the point. A
//! time too long to represent sleeps for ever, as Redis's would.
//!
//! DEBUG PANIC panics inside the command. Redis crashes; keel closes the
//! calling connection and nothing else (see `crate::connection`), which is
//! what this lets a test check with a real panic.

use std::time::Duration;

use bytes::Bytes;

use crate::client::AfterReply;
use crate::config::DebugCommand;

use crate::cmd::context::{is, parse_f64, subcommand_syntax_error, Ctx, Error, Spec, BASE};

/// Redis 7's refusal when `enable-debug-command` does not allow the client.
const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// DEBUG.
pub const SPEC: Spec = Spec {
    name: "debug",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "A container for debugging commands",
    complexity: "Depends on subcommand.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let allowed = match ctx.server.config.read().enable_debug_command {
        DebugCommand::Yes => true,
        DebugCommand::Local => ctx.client.handle.addr.ip().is_loopback(),
        DebugCommand::No => false,
    };
    if !allowed {
        return Err(NOT_ALLOWED.into());
    }
    match &args[1..] {
        [sub, seconds] if is(sub, "sleep") => {
            let seconds = parse_f64(seconds).filter(|s| *s > 0.0).unwrap_or(0.0);
            if seconds > 0.0 {
                let pause = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
                ctx.client.after_reply = Some(AfterReply::Sleep(pause));
            }
            ctx.w().ok();
        }
        [sub] if is(sub, "panic") => panic!("DEBUG PANIC"),
        [sub] if is(sub, "help") => {
            let lines = [
                "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "SLEEP <seconds>",
                "    Stop the calling connection for <seconds>. A fraction of a second is allowed.",
                "PANIC",
                "    Panic inside the command: keel closes the calling connection only.",
                "HELP",
                "    Print this help.",
            ];
            let mut w = ctx.w();
            w.array(lines.len());
            lines.iter().for_each(|l| w.simple(l));
        }
        [_, ..] => return Err(subcommand_syntax_error(args)),
        [] => unreachable!("arity is checked by dispatch"),
    }
    Ok(())
}
