//! SAVE, BGSAVE [SCHEDULE] and LASTSAVE — write the dataset to the RDB
//! file (`dir`/`dbfilename`), now or in the background, and when that last
//! succeeded. How the file is written while clients keep writing is in
//! `crate::persistence`.

use bytes::Bytes;

use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};
use crate::persistence::save::{save_with, start_bgsave, NotStarted};

/// Redis's refusal of a save while a background one runs.
const IN_PROGRESS: &str = "ERR Background save already in progress";

/// SAVE.
pub const SAVE: Spec = Spec {
    name: "save",
    arity: 1,
    flags: &["admin", "noscript", "no_async_loading", "no_multi"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Synchronously save the dataset to disk",
    complexity: "O(N) where N is the total number of keys in all databases",
    run: save,
    ..BASE
};

/// BGSAVE.
pub const BGSAVE: Spec = Spec {
    name: "bgsave",
    arity: -1,
    flags: &["admin", "noscript", "no_async_loading"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Asynchronously save the dataset to disk",
    complexity: "O(1)",
    run: bgsave,
    ..BASE
};

/// LASTSAVE.
pub const LASTSAVE: Spec = Spec {
    name: "lastsave",
    arity: 1,
    flags: &["loading", "stale", "fast"],
    acl: &["@admin", "@fast", "@dangerous"],
    group: "server",
    summary: "Get the UNIX time stamp of the last successful save to disk",
    complexity: "O(1)",
    run: |ctx, _| {
        let last = ctx.server.persistence.last_save();
        ctx.w().integer(last as i64);
        Ok(())
    },
    ..BASE
};

fn save(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let Some(claim) = ctx.server.persistence.try_claim_snapshot() else {
        return Err(IN_PROGRESS.into());
    };
    save_with(ctx.server, claim).map_err(|_| Error::from("ERR"))?;
    ctx.w().ok();
    Ok(())
}

/// Inside EXEC, whose transaction holds its shards, the instant cannot be
/// taken: the save is scheduled, as Redis schedules it there. SCHEDULE
/// matters to Redis only while an AOF rewrite runs, which keel never has;
/// a save running already is refused either way, as in Redis.
fn bgsave(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match args {
        [_] => {}
        [_, option] if is(option, "schedule") => {}
        _ => return Err(errors::SYNTAX.into()),
    }
    if ctx.server.persistence.bgsave_running() {
        return Err(IN_PROGRESS.into());
    }
    if ctx.client.tx.executing {
        ctx.server.persistence.schedule_bgsave();
        ctx.w().simple("Background saving scheduled");
        return Ok(());
    }
    match start_bgsave(ctx.server) {
        Ok(()) => ctx.w().simple("Background saving started"),
        Err(NotStarted::Running) => return Err(IN_PROGRESS.into()),
        Err(NotStarted::NoThread) => return Err("ERR".into()),
    }
    Ok(())
}
