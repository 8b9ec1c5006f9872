//! A connection's transaction state as dispatch, MULTI/EXEC and RESET
//! see it: what runs inside MULTI, queueing, the maxmemory rule, and ending
//! a transaction and its watches (see `cmd::transactions::multi`); and
//! which shards commands reach, which EXEC locks and a running script's
//! gate checks (see `crate::scripting::gate`).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use keel_store::ShardSet;

use super::{is, keys_of, parse_i64, Spec};
use crate::client::Client;
use crate::cmd::registry::Flags;
use crate::server::Server;

/// Commands that act on the transaction itself or the connection, and so
/// run at once inside MULTI instead of being queued.
pub fn runs_inside_multi(spec: &Spec) -> bool {
    matches!(
        spec.name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Queues a command inside MULTI. Once a command was refused the
/// transaction is doomed, so nothing more is kept, as in Redis.
pub fn queue(client: &mut Client, spec: &Spec, args: &[Bytes]) {
    let tx = &mut client.tx;
    if let Some(queued) = tx.queued.as_mut().filter(|_| !tx.refused) {
        // Copied, so a queued command never keeps a read buffer alive.
        queued.push(args.iter().map(|a| Bytes::copy_from_slice(a)).collect());
        tx.queued_bytes += queued_size(args);
        tx.grows_memory |= spec.has_flag("denyoom");
    }
}

/// What a queued command holds: its arguments, their handles and the
/// queue's slot.
fn queued_size(args: &[Bytes]) -> usize {
    let handles = std::mem::size_of_val(args) + std::mem::size_of::<Vec<Bytes>>();
    args.iter().map(Bytes::len).sum::<usize>() + handles
}

/// Whether `spec` (with its `flags`), called by `client`, is refused over
/// maxmemory. As in Redis: commands that may grow memory; inside MULTI
/// every command but those that end the transaction or the connection,
/// since a queue grows memory too; and EXEC if its queue holds a command
/// that may grow it.
pub fn refused_over_maxmemory(spec: &Spec, flags: Flags, client: &Client) -> bool {
    match client.tx.queued {
        None => flags.has(Flags::DENYOOM),
        Some(_) if spec.name == "exec" => client.tx.grows_memory,
        Some(_) => !matches!(spec.name, "discard" | "quit" | "reset"),
    }
}

/// Ends the transaction of `client`, if any, and every watch.
pub fn discard(server: &Server, client: &mut Client, now_ms: u64) {
    client.tx.queued = None;
    client.tx.queued_bytes = 0;
    client.tx.refused = false;
    client.tx.grows_memory = false;
    unwatch_all(server, client, now_ms);
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

/// The keys `args` reaches, when its key positions name them all; `None`
/// when it may reach keys it does not name (FLUSHALL, KEYS, SCAN, a COPY
/// into another database, SORT with patterns, a script, any keyless
/// command not known to leave the keyspace alone) or its keys cannot be
/// told.
pub fn named_keys<'a>(spec: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let keys = keys_of(spec, args)?;
    if (keys.is_empty() && !reaches_no_key(spec)) || reaches_unnamed_keys(spec, args) {
        return None;
    }
    Some(keys)
}

/// The shards `commands` reach when run in order from database `db` (a
/// SELECT among them moves the later ones): those of the keys they name,
/// or every shard if one may reach keys it does not name.
pub fn shards_reached<'s, A: AsRef<[Bytes]>>(
    server: &'s Server,
    db: usize,
    commands: &[A],
) -> ShardSet<'s> {
    let mut shards = server.store.shard_set();
    let mut db = db;
    for args in commands {
        let args = args.as_ref();
        let spec = super::super::dispatch::resolve(&server.commands, args)
            .ok()
            .map(|id| server.commands.specs()[id]);
        let Some((spec, keys)) = spec.and_then(|spec| Some((spec, named_keys(spec, args)?))) else {
            shards.insert_all();
            return shards;
        };
        for key in keys {
            shards.insert_key(db, key);
        }
        if spec.name == "select" {
            db = selected_db(server, args).unwrap_or(db);
        }
    }
    shards
}

/// Keyless commands that reach no key and no whole database: connection,
/// server and pub/sub commands, SCRIPT and FUNCTION (scripts and
/// libraries, not keys), and UNWATCH, which reaches only the watched keys
/// that EXEC locks anyway. Any other keyless command reaches
/// every shard, so a command added later is safe until it is listed here.
fn reaches_no_key(spec: &Spec) -> bool {
    let command = spec.name.split('|').next().unwrap_or(spec.name);
    matches!(
        command,
        "ping"
            | "echo"
            | "select"
            | "time"
            | "config"
            | "client"
            | "command"
            | "hello"
            | "auth"
            | "info"
            | "slowlog"
            | "latency"
            | "publish"
            | "pubsub"
            | "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "unwatch"
            | "script"
            | "function"
            | "shutdown"
    )
}

/// Commands that reach keys their key positions do not name: COPY with a
/// DB option and MOVE write in another database, SORT with BY or GET
/// reads keys its source's elements name, and a script may reach keys it
/// did not declare.
fn reaches_unnamed_keys(spec: &Spec, args: &[Bytes]) -> bool {
    match spec.name {
        "copy" => args[3..].iter().any(|arg| is(arg, "db")),
        "move" => true,
        "sort" | "sort_ro" => args[2..].iter().any(|arg| is(arg, "by") || is(arg, "get")),
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => true,
        _ => false,
    }
}

/// The database a queued SELECT switches to, if it succeeds.
fn selected_db(server: &Server, args: &[Bytes]) -> Option<usize> {
    let index = usize::try_from(parse_i64(&args[1]).ok()?).ok()?;
    (index < server.store.databases()).then_some(index)
}
