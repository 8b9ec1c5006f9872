//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Between MULTI and EXEC a connection's commands are checked (name,
//! arity, authentication, memory) and queued, each answered `+QUEUED`; a
//! command refused while queueing dooms the transaction (EXEC answers
//! EXECABORT), as in Redis.
//!
//! EXEC runs the queue atomically across every shard and database with
//! `Store::lock_all`: it takes every shard lock in the store's fixed order
//! and lends those locks to the queued commands' handlers, which run
//! unchanged (see `keel_store::keyspace`). No other client sees a state
//! between two queued commands, and nothing on the normal command path
//! takes a global lock — only EXEC pays, once per transaction.
//!
//! WATCH registers the connection's flag with the shard of each key; the
//! shard sets it when the key is modified as Redis signals it — a write
//! that changes nothing does not count — and when it expires, is evicted
//! or flushed (see `keel_store::shard` and `edit`). EXEC, once it holds
//! every lock, fails with a null reply if the flag is set or a key live at
//! WATCH time has expired since. Watches end with EXEC, DISCARD, UNWATCH,
//! RESET or disconnect.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::client::Client;
use crate::server::Server;

use super::{Ctx, Error, Spec, BASE};

const fn spec(name: &'static str, arity: i32, summary: &'static str, run: super::Handler) -> Spec {
    Spec {
        name,
        arity,
        flags: &["noscript", "loading", "stale", "fast", "allow_busy"],
        acl: &["@fast", "@transaction"],
        group: "transactions",
        summary,
        since: "1.2.0",
        run,
        ..BASE
    }
}

/// MULTI.
pub const MULTI: Spec = spec("multi", 1, "Starts a transaction.", |ctx, _| {
    if ctx.client.tx.queued.is_some() {
        return Err("ERR MULTI calls can not be nested".into());
    }
    ctx.client.tx.queued = Some(Vec::new());
    ctx.client.tx.refused = false;
    ctx.w().ok();
    Ok(())
});

/// EXEC.
pub const EXEC: Spec = Spec {
    flags: &["noscript", "loading", "stale", "skip_slowlog"],
    acl: &["@slow", "@transaction"],
    complexity: "Depends on commands in the transaction",
    ..spec("exec", 1, "Executes all commands in a transaction.", exec)
};

/// DISCARD.
pub const DISCARD: Spec = spec("discard", 1, "Discards a transaction.", |ctx, _| {
    if ctx.client.tx.queued.take().is_none() {
        return Err("ERR DISCARD without MULTI".into());
    }
    unwatch_all(ctx.server, ctx.client, ctx.now_ms);
    ctx.w().ok();
    Ok(())
});

/// WATCH.
pub const WATCH: Spec = Spec {
    arity: -2,
    keys: (1, -1, 1),
    complexity: "O(1) for every key.",
    since: "2.2.0",
    ..spec(
        "watch",
        -2,
        "Monitors changes to keys to determine the execution of a transaction.",
        watch,
    )
};

/// UNWATCH.
pub const UNWATCH: Spec = Spec {
    since: "2.2.0",
    ..spec(
        "unwatch",
        1,
        "Forgets about watched keys of a transaction.",
        |ctx, _| {
            unwatch_all(ctx.server, ctx.client, ctx.now_ms);
            ctx.w().ok();
            Ok(())
        },
    )
};

/// Commands that act on the transaction itself or the connection, and so
/// run at once inside MULTI instead of being queued.
pub fn runs_inside_multi(spec: &Spec) -> bool {
    matches!(
        spec.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

fn watch(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if ctx.client.tx.queued.is_some() {
        return Err("ERR WATCH inside MULTI is not allowed".into());
    }
    let db_index = ctx.client.db;
    let db = ctx.db();
    for key in &args[1..] {
        let tx = &mut ctx.client.tx;
        if tx
            .watched
            .iter()
            .any(|(d, k, _)| *d == db_index && k == key)
        {
            continue;
        }
        let live = db.write(key).watch(key, &tx.dirty);
        tx.watched.push((db_index, key.clone(), live));
    }
    ctx.w().ok();
    Ok(())
}

/// Ends every watch of `client` (EXEC, DISCARD, UNWATCH, RESET, disconnect).
pub fn unwatch_all(server: &Server, client: &mut Client, now_ms: u64) {
    let tx = &mut client.tx;
    for (db_index, key, _) in tx.watched.drain(..) {
        server
            .store
            .db(db_index, now_ms)
            .write(&key)
            .unwatch(&key, &tx.dirty);
    }
    tx.dirty.store(false, Ordering::Relaxed);
}

fn exec(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let Some(queued) = ctx.client.tx.queued.take() else {
        return Err("ERR EXEC without MULTI".into());
    };
    if std::mem::take(&mut ctx.client.tx.refused) {
        unwatch_all(ctx.server, ctx.client, ctx.now_ms);
        return Err("EXECABORT Transaction discarded because of previous errors.".into());
    }
    let all = ctx.server.store.lock_all();
    let tx = &ctx.client.tx;
    let watched_changed = tx.dirty.load(Ordering::Relaxed)
        || tx.watched.iter().any(|(db_index, key, was_live)| {
            *was_live
                && ctx
                    .server
                    .store
                    .db(*db_index, ctx.now_ms)
                    .read(key)
                    .peek(key)
                    .is_none()
        });
    if watched_changed {
        drop(all);
        unwatch_all(ctx.server, ctx.client, ctx.now_ms);
        ctx.w().null_array();
        return Ok(());
    }
    ctx.w().array(queued.len());
    ctx.client.tx.executing = true;
    for args in &queued {
        let id = super::resolve(&ctx.server.commands, args).ok();
        super::call(ctx, id.expect("resolved when queued"), args);
    }
    ctx.client.tx.executing = false;
    drop(all);
    unwatch_all(ctx.server, ctx.client, ctx.now_ms);
    Ok(())
}
