//! CLUSTER MEET | FORGET | REPLICATE | RESET | FAILOVER — which nodes this
//! node knows and what it is among them. keel has no cluster bus, so MEET
//! (a handshake over the bus) is refused, and FAILOVER takes over at once
//! (TAKEOVER's meaning: no agreement is sought); the control plane tells
//! the other nodes.

use bytes::Bytes;

use super::ADMIN;
use crate::cmd::context::cluster::{apply_view, bump_epoch, cluster, refused, Role};
use crate::cmd::context::{errors, is, Ctx, Error, Spec};

pub const MEET: Spec = Spec {
    name: "cluster|meet",
    arity: -4,
    summary: "Force a node cluster to handshake with another node",
    run: |ctx, _| {
        cluster(ctx)?;
        Err("ERR CLUSTER MEET needs a cluster bus, which keel does not have: push the topology to every node instead (keel-cluster, or CLUSTER SETTOPOLOGY)".into())
    },
    ..ADMIN
};

pub const FORGET: Spec = Spec {
    name: "cluster|forget",
    arity: 3,
    summary: "Remove a node from the nodes table",
    run: forget,
    ..ADMIN
};

pub const REPLICATE: Spec = Spec {
    name: "cluster|replicate",
    arity: 3,
    summary: "Reconfigure a node as a replica of the specified master node",
    run: replicate,
    ..ADMIN
};

pub const RESET: Spec = Spec {
    name: "cluster|reset",
    arity: -2,
    flags: &["admin", "noscript", "stale"],
    summary: "Reset a Redis Cluster node",
    complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
    run: reset,
    ..ADMIN
};

pub const FAILOVER: Spec = Spec {
    name: "cluster|failover",
    arity: -2,
    summary: "Forces a replica to perform a manual failover of its master.",
    run: failover,
    ..ADMIN
};

fn forget(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let id = String::from_utf8_lossy(&args[2]).into_owned();
    cluster
        .change(|topology, myself| {
            let me = topology.node(myself).expect("the view lists this node");
            if topology.node(&id).is_none() {
                return Err(format!("Unknown node {id}"));
            }
            if id == myself {
                return Err("I tried hard but I can't forget myself...".into());
            }
            if me.primary_id() == Some(id.as_str()) {
                return Err("Can't forget my master!".into());
            }
            topology.nodes.retain(|n| n.id != id);
            for node in &mut topology.nodes {
                node.migrating.retain(|_, peer| *peer != id);
                node.importing.retain(|_, peer| *peer != id);
            }
            Ok(())
        })
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

fn replicate(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let id = String::from_utf8_lossy(&args[2]).into_owned();
    let has_keys = ctx.server.store.db(0, ctx.now_ms).stats().keys != 0;
    cluster
        .change(|topology, myself| {
            let Some(primary) = topology.node(&id) else {
                return Err(format!("Unknown node {id}"));
            };
            if id == myself {
                return Err("Can't replicate myself".into());
            }
            if !primary.is_primary() {
                return Err("I can only replicate a master, not a replica.".into());
            }
            let me = topology.node_mut(myself).expect("the view lists this node");
            if me.is_primary() && (!me.slots.is_empty() || has_keys) {
                return Err(
                    "To set a master the node must be empty and without assigned slots.".into(),
                );
            }
            me.role = Role::Replica(id.clone());
            me.migrating.clear();
            me.importing.clear();
            Ok(())
        })
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

fn reset(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let hard = match args.get(2) {
        None => false,
        Some(mode) if is(mode, "soft") => false,
        Some(mode) if is(mode, "hard") => true,
        Some(_) => return Err(errors::SYNTAX.into()),
    };
    if args.len() > 3 {
        return Err(errors::SYNTAX.into());
    }
    let db = ctx.server.store.db(0, ctx.now_ms);
    let is_primary = cluster.view().me().is_primary();
    if is_primary && db.stats().keys != 0 {
        return Err("ERR CLUSTER RESET can't be called with master nodes containing keys".into());
    }
    if !is_primary {
        // A replica becomes an empty primary, as in Redis.
        drop(db.flush());
    }
    cluster.reset(hard).map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

fn failover(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    match args.get(2) {
        None => {}
        Some(mode) if is(mode, "force") || is(mode, "takeover") => {}
        Some(_) => return Err(errors::SYNTAX.into()),
    }
    if args.len() > 3 {
        return Err(errors::SYNTAX.into());
    }
    cluster
        .change(|topology, myself| {
            let me = topology.node(myself).expect("the view lists this node");
            let Some(primary_id) = me.primary_id().map(str::to_string) else {
                return Err("You should send CLUSTER FAILOVER to a replica".into());
            };
            let slots = (topology.node(&primary_id))
                .ok_or("I'm a replica but my master is unknown to me")?
                .slots
                .clone();
            for node in &mut topology.nodes {
                if node.id == primary_id {
                    node.slots.clear();
                    node.role = Role::Replica(myself.to_string());
                } else if node.id == myself {
                    node.slots = slots.clone();
                    node.role = Role::Primary;
                } else if node.primary_id() == Some(primary_id.as_str()) {
                    node.role = Role::Replica(myself.to_string());
                }
            }
            bump_epoch(topology, myself);
            Ok(())
        })
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}
