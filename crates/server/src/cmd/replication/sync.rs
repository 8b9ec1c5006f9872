//! SYNC and PSYNC replicationid offset — a full synchronisation: the
//! dataset as an RDB payload, diskless (`$EOF:` framing) for a peer that
//! announced `REPLCONF capa eof`, else written to disk first and sent with
//! its length. PSYNC answers `+FULLRESYNC <replid> <offset>` first, as a
//! primary with no backlog to continue from does.
//!
//! This is what `redis-cli --rdb` uses. The command stream that would
//! follow for a replica is not served: the connection closes once the
//! payload is sent, as Redis closes it for an `rdb-only` peer.

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
    run: |ctx, _| full_sync(ctx),
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

fn psync(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let line = format!("FULLRESYNC {} 0", ctx.server.run_id);
    ctx.w().simple(&line);
    full_sync(ctx)
}

fn full_sync(ctx: &mut Ctx) -> Result<(), Error> {
    if !ctx.client.replica_handshake.rdb_only {
        crate::notice!(
            "Replica {} asks for a full synchronisation: keel sends the snapshot and closes, it does not stream commands yet",
            ctx.client.handle.addr
        );
    }
    ctx.client.after_reply = Some(AfterReply::SendSnapshot);
    Ok(())
}
