//! SYNC and PSYNC replicationid offset — a replica asks for the data, then
//! follows the stream of writes.
//!
//! PSYNC continues where the replica stopped when it can: the id is this
//! data's (or the one before a promotion, up to where that history ended)
//! and the backlog still holds the stream from that offset. The reply is
//! then `+CONTINUE` (with the id, for a replica that announced `capa
//! psync2`) and the stream follows. Otherwise, and for SYNC, a full
//! synchronisation: the connection answers `+FULLRESYNC <replid> <offset>`
//! once the snapshot's instant is taken (see `connection.rs`), sends the
//! snapshot as an RDB payload (diskless, `$EOF:` framing, with
//! `repl-diskless-sync yes` for a peer that announced `capa eof`; else
//! written to disk first and sent with its length), then the stream from
//! that offset.
//!
//! A peer that announced `rdb-only` (`redis-cli --rdb`) gets the snapshot
//! and the connection closes.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::client::{AfterReply, SyncStart};
use crate::cmd::context::{errors, parse_i64, Ctx, Error, Spec, BASE};

/// SYNC.
pub const SYNC: Spec = Spec {
    name: "sync",
    arity: 1,
    flags: &["admin", "noscript", "no_async_loading", "no_multi"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Internal command used for replication",
    complexity: "",
    run: |ctx, _| full_sync(ctx, false),
    ..BASE
};

/// PSYNC.
pub const PSYNC: Spec = Spec {
    name: "psync",
    arity: -3,
    flags: &["admin", "noscript", "no_async_loading", "no_multi"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Internal command used for replication",
    since: "2.8.0",
    complexity: "",
    run: psync,
    ..BASE
};

fn psync(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let replication = &ctx.server.replication;
    let Ok(offset) = parse_i64(&args[2]) else {
        crate::warning!(
            "Replica {} asks for synchronization but with a wrong offset",
            ctx.client.handle.addr
        );
        return Err(errors::NOT_INTEGER.into());
    };
    if &args[1][..] == b"?" {
        return full_sync(ctx, true);
    }
    let replid = String::from_utf8_lossy(&args[1]);
    let follows = !ctx.client.replica_handshake.rdb_only;
    if follows
        && !replication.is_replica()
        && offset > 0
        && replication.can_continue(&replid, offset as u64)
    {
        let ours = replication.status().replid;
        match ctx.client.replica_handshake.capa_psync2 {
            true => ctx.w().simple(&format!("CONTINUE {ours}")),
            false => ctx.w().simple("CONTINUE"),
        }
        replication
            .partial_syncs_served
            .fetch_add(1, Ordering::Relaxed);
        let from = offset as u64 - 1;
        ctx.client.after_reply = Some(AfterReply::Sync(SyncStart::Continue { from }));
        return Ok(());
    }
    replication
        .partial_syncs_refused
        .fetch_add(1, Ordering::Relaxed);
    full_sync(ctx, true)
}

/// A full synchronisation; `psync` answers `+FULLRESYNC` first.
fn full_sync(ctx: &mut Ctx, psync: bool) -> Result<(), Error> {
    let replication = &ctx.server.replication;
    if replication.is_replica() && !ctx.client.replica_handshake.rdb_only {
        // A replica of a replica would need the stream this server
        // receives recorded again; keel records only its own writes.
        return Err(
            "ERR keel serves replicas only as a primary; replicate from its primary instead".into(),
        );
    }
    replication.syncs_served.fetch_add(1, Ordering::Relaxed);
    ctx.client.after_reply = Some(AfterReply::Sync(SyncStart::Full { psync }));
    Ok(())
}
