//! REPLICAOF host port | REPLICAOF NO ONE (and its old name SLAVEOF) —
//! follow a primary, dropping this server's data for the primary's at the
//! first synchronisation, or stop following and become a primary with the
//! data as it is. See `crate::replication`.

use bytes::Bytes;

use crate::cmd::context::{is, Ctx, Error, Spec, BASE};
use crate::replication::{follow, Primary};

/// REPLICAOF.
pub const REPLICAOF: Spec = Spec {
    name: "replicaof",
    arity: 3,
    flags: &["admin", "noscript", "stale", "no_async_loading"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Make the server a replica of another instance, or promote it as master.",
    since: "5.0.0",
    complexity: "O(1)",
    run,
    ..BASE
};

/// SLAVEOF, REPLICAOF's old name.
pub const SLAVEOF: Spec = Spec {
    name: "slaveof",
    since: "1.0.0",
    ..REPLICAOF
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    // A cluster node's primary comes from the topology (CLUSTER REPLICATE).
    if ctx.server.cluster.is_some() {
        return Err("ERR REPLICAOF not allowed in cluster mode.".into());
    }
    let (host, port) = (&args[1], &args[2]);
    if is(host, "no") && is(port, "one") {
        if follow(ctx.server, None) {
            crate::notice!(
                "MASTER MODE enabled (user request from '{}')",
                ctx.client.handle.addr
            );
        }
        ctx.w().ok();
        return Ok(());
    }
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .ok_or("ERR Invalid master port")?;
    let primary = Primary {
        host: String::from_utf8_lossy(host).into_owned(),
        port,
    };
    if follow(ctx.server, Some(primary.clone())) {
        crate::notice!(
            "REPLICAOF {}:{} enabled (user request from '{}')",
            primary.host,
            primary.port,
            ctx.client.handle.addr
        );
        ctx.w().ok();
    } else {
        ctx.w().simple("OK Already connected to specified master");
    }
    Ok(())
}
