//! ROLE — this server's place in replication: a primary with its offset
//! and its replicas (address, port, acknowledged offset), or a replica
//! with its primary, the link's state and its offset.

use bytes::Bytes;

use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// ROLE.
pub const SPEC: Spec = Spec {
    name: "role",
    arity: 1,
    flags: &["noscript", "loading", "stale", "fast"],
    acl: &["@admin", "@fast", "@dangerous"],
    group: "server",
    summary: "Return the role of the instance in the context of replication",
    since: "2.8.12",
    complexity: "O(1)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let status = ctx.server.replication.status();
    let replicas = ctx.server.replication.backlog.replicas();
    let mut w = ctx.w();
    match status.primary {
        Some(primary) => {
            w.array(5);
            w.bulk(b"slave");
            w.bulk(primary.host.as_bytes());
            w.integer(primary.port as i64);
            w.bulk(status.link.state.name().as_bytes());
            w.integer(status.offset as i64);
        }
        None => {
            w.array(3);
            w.bulk(b"master");
            w.integer(status.offset as i64);
            w.array(replicas.len());
            for replica in replicas {
                w.array(3);
                w.bulk(replica.ip.as_bytes());
                w.bulk(replica.port.to_string().as_bytes());
                let acked = replica.acked.load(std::sync::atomic::Ordering::Relaxed);
                w.bulk(acked.to_string().as_bytes());
            }
        }
    }
    Ok(())
}
