//! SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] — stop the server: stop
//! accepting, let connections finish what they have read, exit 0. keel
//! keeps no data on disk, so the save options change nothing; ABORT has no
//! pending shutdown to cancel. While a script runs past
//! `busy-reply-threshold`, only SHUTDOWN NOSAVE stops the server, as in
//! Redis (the script is not waited for).

use bytes::Bytes;

use crate::client::AfterReply;

use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};

/// SHUTDOWN.
pub const SPEC: Spec = Spec {
    name: "shutdown",
    arity: -1,
    flags: &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Synchronously save the dataset to disk and then shut down the server",
    complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (mut abort, mut nosave) = (false, false);
    for opt in &args[1..] {
        if is(opt, "abort") {
            abort = true;
        } else if is(opt, "nosave") {
            nosave = true;
        } else if !["nosave", "save", "now", "force"]
            .iter()
            .any(|o| is(opt, o))
        {
            return Err(errors::SYNTAX.into());
        }
    }
    if abort {
        return Err("ERR No shutdown in progress.".into());
    }
    let running = ctx.server.scripting.gate.running(ctx.now_ms);
    if let Some(running) = running.filter(|r| r.past_threshold && !nosave) {
        return Err(running.kind.busy_reply().into());
    }
    ctx.server.begin_shutdown();
    // Like Redis, a successful SHUTDOWN sends no reply: the connection closes.
    ctx.client.after_reply = Some(AfterReply::Close);
    Ok(())
}
