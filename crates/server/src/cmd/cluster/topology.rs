//! CLUSTER SETTOPOLOGY epoch nodes — keel's own: the whole topology at
//! once, pushed by a control plane (`keel-cluster`). `nodes` is every
//! node's line in CLUSTER NODES' format (each node's moving slots on its
//! own line); `epoch` is the topology's version. A node takes it only if
//! it is newer than its own view (the same topology again at the same
//! epoch is a no-op, so a push can be retried), finds itself in it by its
//! id, writes it to its config file, and then answers OK; a replica starts
//! following the primary the topology gives it.

use bytes::Bytes;

use super::ADMIN;
use crate::cmd::context::cluster::{apply_view, cluster, refused, Topology};
use crate::cmd::context::{Ctx, Error, Spec};

pub const SETTOPOLOGY: Spec = Spec {
    name: "cluster|settopology",
    arity: 4,
    summary: "Replace this node's view of the cluster with a newer topology (keel)",
    complexity: "O(N) where N is the total number of Cluster nodes",
    run: settopology,
    ..ADMIN
};

fn settopology(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let epoch = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|e| e.parse::<u64>().ok())
        .ok_or("ERR Invalid topology epoch: a non-negative integer is expected")?;
    let text = std::str::from_utf8(&args[3]).map_err(|_| "ERR Invalid topology: not UTF-8")?;
    let mut topology = Topology::parse(text)
        .map_err(|e| format!("ERR Invalid topology: {e}"))?
        .topology;
    topology.current_epoch = epoch;
    cluster.push(topology).map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}
