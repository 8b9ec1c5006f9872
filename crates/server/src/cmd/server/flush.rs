//! FLUSHDB and FLUSHALL [ASYNC|SYNC] — remove every key of one or all
//! databases. Each database is emptied under all its shard locks at once,
//! so no concurrent command sees it half flushed. ASYNC frees the old
//! contents on the lazyfree thread, SYNC in place once the shards are
//! released; without either, `lazyfree-lazy-user-flush` decides.
//!
//! FLUSHALL with save points set then saves the empty dataset, as Redis
//! does, so a restart does not bring the flushed keys back.

use bytes::Bytes;

use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE};
use crate::persistence::save::save_now;
use crate::persistence::Settings;

/// FLUSHDB.
pub const FLUSHDB: Spec = Spec {
    name: "flushdb",
    arity: -1,
    flags: &["write"],
    acl: &["@keyspace", "@write", "@slow", "@dangerous"],
    group: "server",
    summary: "Remove all keys from the current database",
    complexity: "O(N) where N is the number of keys in the selected database",
    run: |ctx, args| flush(ctx, args, false),
    ..BASE
};

/// FLUSHALL.
pub const FLUSHALL: Spec = Spec {
    name: "flushall",
    arity: -1,
    flags: &["write"],
    acl: &["@keyspace", "@write", "@slow", "@dangerous"],
    group: "server",
    summary: "Remove all keys from all databases",
    complexity: "O(N) where N is the total number of keys in all databases",
    run: |ctx, args| flush(ctx, args, true),
    ..BASE
};

fn flush(ctx: &mut Ctx, args: &[Bytes], all: bool) -> Result<(), Error> {
    let background = match args {
        [_] => None,
        [_, mode] if is(mode, "async") => Some(true),
        [_, mode] if is(mode, "sync") => Some(false),
        _ => return Err(errors::SYNTAX.into()),
    };
    let store = &ctx.server.store;
    let dbs = if all {
        0..store.databases()
    } else {
        ctx.client.db..ctx.client.db + 1
    };
    for index in dbs {
        let old = store.db(index, ctx.now_ms).flush();
        crate::lazyfree::free_flushed(old, background);
        // Group readers blocked on a stream that is gone get an error.
        let waited = ctx.server.blocking.waited_keys(index);
        ctx.client.ready.extend(waited);
    }
    let save_points = !Settings::of(&ctx.server.config.read())
        .save_points
        .is_empty();
    if all && save_points {
        // The log says why a save failed; FLUSHALL itself succeeded.
        let _ = save_now(ctx.server);
    }
    ctx.w().ok();
    Ok(())
}
