//! A connection's transaction state as dispatch, MULTI/EXEC and RESET
//! see it: what runs inside MULTI, queueing, the maxmemory rule, and ending
//! a transaction and its watches (see `cmd::transactions::multi`).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::Spec;
use crate::client::Client;
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

/// Whether `spec`, called by `client`, is refused over maxmemory. As in
/// Redis: commands that may grow memory; inside MULTI every command but
/// those that end the transaction or the connection, since a queue grows
/// memory too; and EXEC if its queue holds a command that may grow it.
pub fn refused_over_maxmemory(spec: &Spec, client: &Client) -> bool {
    match client.tx.queued {
        None => spec.has_flag("denyoom"),
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
