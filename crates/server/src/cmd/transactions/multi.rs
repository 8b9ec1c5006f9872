//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Between MULTI and EXEC a connection's commands are checked (name,
//! arity, authentication, memory) and queued, each answered `+QUEUED`; a
//! command refused while queueing dooms the transaction (EXEC answers
//! EXECABORT), as in Redis. Over maxmemory, as in Redis, every command
//! inside MULTI is refused (a queue grows memory too), and so is EXEC of a
//! queue holding a command that may grow memory: that discards the
//! transaction with an EXECABORT naming the reason.
//!
//! EXEC reserves room for what its queued writes' arguments may add before
//! it takes any lock (see `bytes_a_command_may_add`): a queued write that
//! then finds it adds more (SETRANGE's padding) may take room that is
//! free, but cannot evict while the transaction holds its shards, so it
//! fails with OOM, changing nothing.
//!
//! EXEC runs the queue atomically: before the first queued command it
//! write-locks every shard the transaction reaches, in the store's one
//! global order (by database, then shard: the order every multi-shard lock
//! follows, so it cannot deadlock), and the store lends those locks to the
//! queued commands' handlers, which run unchanged (see
//! `keel_store::keyspace`'s locking). The shards reached are those of the
//! watched keys and of each queued command's keys, in the database
//! selected when it runs (a queued SELECT moves the later commands); the
//! keys are found as COMMAND GETKEYS finds them. A queued command that
//! reaches keys it does not name — FLUSHALL, KEYS, SCAN, DBSIZE, INFO, a
//! COPY into another database, any keyless command not known to leave the
//! keyspace alone — locks every shard, as does one whose keys cannot be
//! told. No other client sees a state between two queued commands on the
//! keys they touch, and clients on other keys are not held up: nothing on
//! the normal command path takes a global lock.
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
use keel_store::ShardSet;

use crate::client::Client;
use crate::server::Server;

use crate::cmd::context::journal::Block;
use crate::cmd::context::transaction::{discard, shards_reached, unwatch_all};
use crate::cmd::context::{acl, Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    arity: i32,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
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
pub const MULTI: Spec = spec(
    "multi",
    1,
    "Mark the start of a transaction block",
    |ctx, _| {
        if ctx.client.tx.queued.is_some() {
            return Err("ERR MULTI calls can not be nested".into());
        }
        ctx.client.tx.queued = Some(Vec::new());
        ctx.w().ok();
        Ok(())
    },
);

/// EXEC.
pub const EXEC: Spec = Spec {
    flags: &["noscript", "loading", "stale", "skip_slowlog"],
    acl: &["@slow", "@transaction"],
    complexity: "Depends on commands in the transaction",
    ..spec("exec", 1, "Execute all commands issued after MULTI", exec)
};

/// DISCARD.
pub const DISCARD: Spec = Spec {
    since: "2.0.0",
    complexity: "O(N), when N is the number of queued commands",
    ..spec(
        "discard",
        1,
        "Discard all commands issued after MULTI",
        |ctx, _| {
            if ctx.client.tx.queued.is_none() {
                return Err("ERR DISCARD without MULTI".into());
            }
            discard(ctx.server, ctx.client, ctx.now_ms);
            ctx.w().ok();
            Ok(())
        },
    )
};

/// WATCH.
pub const WATCH: Spec = Spec {
    arity: -2,
    keys: (1, -1, 1),
    complexity: "O(1) for every key.",
    since: "2.2.0",
    ..spec(
        "watch",
        -2,
        "Watch the given keys to determine execution of the MULTI/EXEC block",
        watch,
    )
};

/// UNWATCH.
pub const UNWATCH: Spec = Spec {
    since: "2.2.0",
    ..spec("unwatch", 1, "Forget about all watched keys", |ctx, _| {
        unwatch_all(ctx.server, ctx.client, ctx.now_ms);
        ctx.w().ok();
        Ok(())
    })
};

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

/// The shards a transaction reaches: those of the keys `client` watches
/// and those its queued commands reach (see `shards_reached`).
fn transaction_shards<'s>(
    server: &'s Server,
    client: &Client,
    queued: &[Vec<Bytes>],
) -> ShardSet<'s> {
    let mut shards = shards_reached(server, client.db, queued);
    for (db, key, _) in &client.tx.watched {
        shards.insert_key(*db, key);
    }
    shards
}

fn exec(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let Some(queued) = ctx.client.tx.queued.take() else {
        return Err("ERR EXEC without MULTI".into());
    };
    ctx.client.tx.queued_bytes = 0;
    if ctx.client.tx.refused {
        discard(ctx.server, ctx.client, ctx.now_ms);
        return Err("EXECABORT Transaction discarded because of previous errors.".into());
    }
    ctx.client.tx.grows_memory = false;
    let locked = transaction_shards(ctx.server, ctx.client, &queued).lock();
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
        drop(locked);
        unwatch_all(ctx.server, ctx.client, ctx.now_ms);
        ctx.w().null_array();
        return Ok(());
    }
    ctx.w().array(queued.len());
    ctx.client.tx.executing = true;
    // The writes reach replicas together, while the shards are held.
    let block = Block::open(&ctx.server.replication.backlog);
    ctx.client.acl.refresh(&ctx.server.acl);
    for args in &queued {
        let id = crate::cmd::dispatch::resolve(&ctx.server.commands, args).ok();
        let id = id.expect("resolved when queued");
        // Rules may have changed since the command was queued.
        if let Err(denial) = acl::check(ctx.server, &ctx.client.acl, id, args) {
            acl::Caller::of(ctx).record_denial(denial, id, args, keel_acl::Context::Multi);
            ctx.w().error(&acl::exec_denial_error(denial).0);
            continue;
        }
        crate::cmd::dispatch::call(ctx, id, args);
    }
    ctx.client.tx.executing = false;
    drop(block);
    drop(locked);
    unwatch_all(ctx.server, ctx.client, ctx.now_ms);
    Ok(())
}
