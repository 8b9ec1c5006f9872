//! SYNC and PSYNC replicationid offset — a full synchronisation: the
//! dataset as an RDB payload, diskless (`$EOF:` framing) for a peer that
//! announced `REPLCONF capa eof`, else written to disk first and sent with
//! its length. PSYNC answers `+FULLRESYNC <replid> <offset>` first, as a
//! primary with no backlog to continue from does.
//!
//! This is what `redis-cli --rdb` uses. The command stream that would
//! follow for a replica is not served yet: the connection closes once the
//! payload is sent, as Redis closes it for an `rdb-only` peer. A replica
//! (a peer that announced its `listening-port`, and not `rdb-only`) is
//! refused instead: it would take a snapshot, lose the link, and come back
//! for another every second.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::client::AfterReply;
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// SYNC.
pub const SYNC: Spec = Spec {
    name: "sync",
    arity: 1,
    flags: &["admin", "noscript", "no_async_loading", "no_multi"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Internal command used for replication",
    complexity: "",
    run: |ctx, _| full_sync(ctx, None),
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
    run: |ctx, args| full_sync(ctx, Some(&args[1])),
    ..BASE
};

/// A full synchronisation. PSYNC (`psync_id`, the replication id it asks
/// to continue) is answered FULLRESYNC first, and one that asked to
/// continue counts as a partial resync refused.
fn full_sync(ctx: &mut Ctx, psync_id: Option<&Bytes>) -> Result<(), Error> {
    refuse_replicas(ctx)?;
    let replication = &ctx.server.replication;
    if let Some(id) = psync_id {
        if &id[..] != b"?" {
            replication
                .partial_syncs_refused
                .fetch_add(1, Ordering::Relaxed);
        }
        let line = format!("FULLRESYNC {} 0", replication.status().replid);
        ctx.w().simple(&line);
    }
    replication.syncs_served.fetch_add(1, Ordering::Relaxed);
    ctx.client.after_reply = Some(AfterReply::SendSnapshot);
    Ok(())
}

fn refuse_replicas(ctx: &Ctx) -> Result<(), Error> {
    let handshake = &ctx.client.replica_handshake;
    if handshake.listening_port.is_some() && !handshake.rdb_only {
        crate::warning!(
            "Replica {} refused: keel does not stream commands to replicas yet",
            ctx.client.handle.addr
        );
        return Err("ERR keel does not stream commands to replicas yet: a replica can't follow it (REPLCONF rdb-only 1 gets a snapshot)".into());
    }
    Ok(())
}
