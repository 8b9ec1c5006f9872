//! SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] — stop the server: save
//! the dataset if SAVE is given or save points are set (and not NOSAVE),
//! stop accepting, let connections finish what they have read, exit 0.
//! While it saves, writes are held (as CLIENT PAUSE WRITE holds them), so
//! no write is acknowledged after the snapshot's instant and then lost. A
//! failed save stops the shutdown unless FORCE is given, as in Redis.
//! ABORT has no pending shutdown to cancel (keel does not wait for
//! replicas). While a script runs past `busy-reply-threshold`, only
//! SHUTDOWN NOSAVE stops the server, as in Redis (the script is not waited
//! for).

use bytes::Bytes;

use crate::client::AfterReply;
use crate::pause::Mode;
use crate::persistence::save::save_now;
use crate::persistence::Settings;

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
    let (mut abort, mut nosave, mut save, mut force) = (false, false, false, false);
    for opt in &args[1..] {
        if is(opt, "abort") {
            abort = true;
        } else if is(opt, "nosave") {
            nosave = true;
        } else if is(opt, "save") {
            save = true;
        } else if is(opt, "force") {
            force = true;
        } else if !is(opt, "now") {
            return Err(errors::SYNTAX.into());
        }
    }
    if save && nosave {
        return Err(errors::SYNTAX.into());
    }
    if abort {
        return Err("ERR No shutdown in progress.".into());
    }
    let running = ctx.server.scripting.gate.running(ctx.now_ms);
    if let Some(running) = running.filter(|r| r.past_threshold && !nosave) {
        return Err(running.kind.busy_reply().into());
    }
    let save_points = !Settings::of(&ctx.server.config.read())
        .save_points
        .is_empty();
    if (save || save_points) && !nosave {
        let pause = &ctx.server.pause;
        let paused_before = pause.in_force(ctx.now_ms).is_some();
        pause.pause(Mode::Write, u64::MAX, ctx.now_ms);
        if save_now(ctx.server).is_err() && !force {
            if !paused_before {
                pause.unpause();
            }
            return Err("ERR Errors trying to SHUTDOWN. Check logs.".into());
        }
    }
    ctx.server.begin_shutdown();
    // Like Redis, a successful SHUTDOWN sends no reply: the connection closes.
    ctx.client.after_reply = Some(AfterReply::Close);
    Ok(())
}
