//! DEBUG SLEEP seconds | DEBUG HELP — the parts of Redis's DEBUG that tests
//! and tools rely on.
//!
//! DEBUG SLEEP stalls the calling connection for the given time (its
//! pipelined commands wait behind it). Redis stalls its one thread, and so
//! every client; keel has no single thread to stall, which is the point.

use std::time::Duration;

use bytes::Bytes;

use crate::client::AfterReply;

use super::{is, parse_f64, subcommand_syntax_error, Ctx, Error, Spec, BASE};

/// DEBUG.
pub const SPEC: Spec = Spec {
    name: "debug",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "A container for debugging commands.",
    complexity: "Depends on subcommand.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match &args[1..] {
        [sub, seconds] if is(sub, "sleep") => {
            let seconds = parse_f64(seconds)
                .filter(|s| *s >= 0.0 && s.is_finite())
                .unwrap_or(0.0);
            if seconds > 0.0 {
                ctx.client.after_reply = Some(AfterReply::Sleep(Duration::from_secs_f64(seconds)));
            }
            ctx.w().ok();
        }
        [sub] if is(sub, "help") => {
            let lines = [
                "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "SLEEP <seconds>",
                "    Stop the calling connection for <seconds>. A fraction of a second is allowed.",
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
